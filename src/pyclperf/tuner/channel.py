"""Messages between a sweep and its worker process: length-prefixed pickles over a pipe.

A job's arrays can be hundreds of MiB. Pushing them through the pipe inside the pickle would
copy them three times (into the pickle, through the pipe, out of it), so large buffers travel
out of band (pickle protocol 5): the sender writes them once into a file in shared memory
(/dev/shm where there is one), the receiver maps that file copy-on-write and unpickles the arrays
as views of it, then the file is removed. Small messages (a configuration, a row) go in band.

User callables (lambdas, closures, functions of a script) are pickled with cloudpickle, which
sends by value what the worker could not import by name.
"""

from __future__ import annotations

import mmap
import os
import pickle
import select
import struct
import tempfile
import time
from typing import Any

import cloudpickle

# Buffers at least this large travel through shared memory, not the pipe.
OUT_OF_BAND_BYTES = 1 << 20
_HEADER = struct.Struct("<Q")


class ChannelClosed(EOFError):
    """The other end closed its side of the pipe: the process there ended."""


class ChannelTimeout(TimeoutError):
    """No message arrived before the deadline."""


def _shm_dir() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def dumps(obj: Any, keep: bool = False) -> tuple[bytes, str | None]:
    """(pickle, path of the file holding its large buffers or None). The receiver removes the
    file once it has mapped it, unless ``keep`` (a message sent again to each new worker): the
    sender discards it when done, or when the receiver died first."""
    large: list[pickle.PickleBuffer] = []

    def in_band(buffer: pickle.PickleBuffer) -> bool:
        if buffer.raw().nbytes >= OUT_OF_BAND_BYTES:
            large.append(buffer)
            return False      # out of band
        return True           # small: serialised in band after all

    data = cloudpickle.dumps(obj, protocol=5, buffer_callback=in_band)
    if not large:
        return pickle.dumps((data, None, [], False)), None
    fd, path = tempfile.mkstemp(prefix="pyclperf-job-", dir=_shm_dir())
    spans = []
    try:
        with os.fdopen(fd, "wb") as f:
            offset = 0
            for buffer in large:
                raw = buffer.raw()
                f.write(raw)
                spans.append((offset, raw.nbytes))
                offset += raw.nbytes
    except BaseException:
        os.unlink(path)
        raise
    return pickle.dumps((data, path, spans, keep)), path


def loads(message: bytes) -> Any:
    data, path, spans, keep = pickle.loads(message)
    if path is None:
        return pickle.loads(data)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        # Copy-on-write: arrays built on it are writable, and writes stay in this process.
        mapped = mmap.mmap(f.fileno(), size, flags=mmap.MAP_PRIVATE,
                           prot=mmap.PROT_READ | mmap.PROT_WRITE)
    if not keep:
        discard(path)  # the mapping keeps the memory; the name is no longer needed
    view = memoryview(mapped)
    return pickle.loads(data, buffers=[view[o:o + n] for o, n in spans])


def discard(path: str | None) -> None:
    """Remove a message's buffer file (the receiver does once mapped; the sender does when the
    receiver died first)."""
    if path is not None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def send(fd: int, message: bytes) -> None:
    """Write one framed message (blocking)."""
    payload = _HEADER.pack(len(message)) + message
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes:
    chunks = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout()
            # A short wait at a time, so that Ctrl-C in the caller is acted on at once.
            ready, _, _ = select.select([fd], [], [], min(left, 0.25))
            if not ready:
                continue
        chunk = os.read(fd, min(n, 1 << 24))
        if not chunk:
            raise ChannelClosed()
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, deadline: float | None = None) -> bytes:
    """Read one framed message; ChannelTimeout past ``deadline`` (time.monotonic()) with
    nothing read, ChannelClosed when the writer has gone."""
    (n,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    # Once a message has begun, it is read whole: its writer is alive and sending.
    return _read_exactly(fd, n, None)
