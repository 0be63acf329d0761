"""What a driver's compiler prints on the process's stderr while it builds, caught for the row.

PoCL runs clang inside clBuildProgram, and clang writes "N warnings generated." straight to file
descriptor 2: a sweep would scatter one such line per configuration over the console, apart
from the configuration it belongs to. In this process (Execution(isolate=False)) the descriptor
is pointed at a temporary file for the length of the build and what arrives is handed back. A
worker process does not do this: its whole output already goes to a file its supervisor reads
per configuration (tuner/supervisor.py), which also keeps a crashing compiler's last words.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterator

# Off in worker processes (tuner/worker.py), whose stderr is already their log.
CAPTURE = True
# Kept of one build's console output; a compiler stuck in a loop of messages cannot fill memory.
MAX_CHARS = 4000


@contextmanager
def stderr_text(into: list[str]) -> Iterator[None]:
    """Run the block with file descriptor 2 going to a temporary file, then append what was
    written there (decoded, at most MAX_CHARS) to ``into``. Anything another thread writes to
    stderr meanwhile is caught too; nothing is lost, it lands in the row instead."""
    if not CAPTURE:
        yield
        return
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # no stderr, or a closed one
        pass
    with tempfile.TemporaryFile(prefix="pyclperf-build-") as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except (AttributeError, OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            size = tmp.seek(0, os.SEEK_END)
            tmp.seek(max(0, size - 4 * MAX_CHARS))
            text = tmp.read().decode("utf-8", "replace").strip()
            if text:
                into.append(text[-MAX_CHARS:])
