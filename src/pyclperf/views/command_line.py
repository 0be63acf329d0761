"""What every ``pyclperf`` command shares: the exit codes, a parser that states a usage error in
one line, the ``--device`` and ``--method`` options, and the rule that turns an exception into
one line on stderr and an exit code.

The top-level command (cli.py), the packages' own command lines (tuner/cli.py, roofline/cli.py,
guide/cli.py) and the guide's shared worker take these from here, so that none of them needs
to import another.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

# Exit codes, the same for every command (the --help epilog and the documentation list them).
EXIT_OK = 0
EXIT_FAILED = 1        # ran, but some point (or guide experiment) did not pass
EXIT_ERROR = 2         # bad input (nothing ran), or a results file that cannot be read or written
                       # (argparse's usage errors use 2 as well)
EXIT_SLOWER = 3        # compare --fail-if-slower: B is slower than A beyond the threshold
EXIT_INTERRUPTED = 130  # Ctrl-C: finished points are saved
EXIT_CODES = f"""exit codes:
  {EXIT_OK}    success
  {EXIT_FAILED}    some point did not pass (wrong result, launch failed, ...) or a guide experiment failed
  {EXIT_ERROR}    bad input or usage (nothing ran), or a results file that cannot be read or
       written: a full disk stops the run with the finished points saved (one line on stderr says why)
  {EXIT_SLOWER}    compare --fail-if-slower: B slower than A beyond the threshold
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C; for tune, SIGTERM too); finished points are saved, the file
       marked interrupted"""


class UsageParser(argparse.ArgumentParser):
    """argparse, with a usage error told in the one line every other refusal takes."""

    def error(self, message: str) -> None:  # type: ignore[override]
        text = " ".join(message.split())
        self.exit(EXIT_ERROR, f"pyclperf: error: {self.prog}: {text} (see {self.prog} --help)\n")


def device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default=None,
                        help="index, 'platform:device', 'gpu'/'cpu' or a name substring "
                             "(default: $PYCLPERF_DEVICE, else first GPU, else CPU)")


def method_option(parser: argparse.ArgumentParser, default: str | None = "auto") -> None:
    parser.add_argument("--method", choices=("auto", "events", "host"), default=default,
                        help="auto (default): event profiling where the device's event clock "
                             "passes its check against the host clock, else the host clock; "
                             "events; or host, a steady clock around enqueue+finish, which "
                             "includes the launch gap")


def call(command: Callable[[argparse.Namespace], Any], args: argparse.Namespace) -> int:
    """Run one parsed command and give its exit code: Ctrl-C is EXIT_INTERRUPTED, and an error
    of the input, the device or a file is one line on stderr and EXIT_ERROR, never a traceback.
    Anything else (a bug) is raised."""
    try:
        return int(command(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        from .._core import PyclperfError
        from ..measure.results import LockedError, ResultsWriteError

        # OSError: a file that cannot be read or written (ResultsWriteError: a full disk
        # stopped the sweep; the message says what the file keeps).
        if isinstance(exc, (PyclperfError, ValueError, OSError, MemoryError, LockedError)):
            text = _write_failure(exc) if isinstance(exc, ResultsWriteError) else str(exc)
            print(f"pyclperf: error: {' '.join(text.split()) or type(exc).__name__}",
                  file=sys.stderr)
            if "unknown target CPU" in str(exc):  # clang's words: the way out is not in them
                from ..device.pocl_cpu import BUILD_FAILURE_HINT

                print(f"pyclperf: {BUILD_FAILURE_HINT}", file=sys.stderr)
            return EXIT_ERROR
        raise


def _write_failure(exc: Any) -> str:
    """A results file that could not be written, told to a person: the file, why, what is
    safe, and (a full disk) what to do."""
    import errno

    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return exc.told + ("; free space there (or choose another --out) and run it again"
                       if full else "")


__all__ = ["EXIT_CODES", "EXIT_ERROR", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_SLOWER",
           "UsageParser", "call", "device_option", "method_option"]
