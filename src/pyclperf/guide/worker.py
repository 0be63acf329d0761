"""One long-lived process that runs several of the guide's experiments in turn.

Starting a process per experiment costs an interpreter, NumPy, the package and an OpenCL
context each time (about a second on a GPU host, times the catalogue). The experiments that
cannot hurt the next one (shipped kernels, nothing that spins on the device or loads another
runtime: those set ``isolate = True`` and keep a process of their own) share this one.

The guide writes one JSON line per experiment to the worker's stdin: the options of
``pyclperf run`` and a log file; the worker points its stdout and stderr (the file descriptors,
so the OpenCL driver's own messages go there too) at that log, parses the options and runs the
experiment as ``pyclperf run`` does (views/run_command.py, with the command line's exit codes
and one-line errors), and answers one JSON line with the exit code on a descriptor of its own. A hang is the guide's to stop (it kills the worker's process group after the
experiment's timeout), a crash ends the worker: either way the next experiment starts a new one.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import IO, Any, Sequence


def _run(argv: Sequence[str], log: str) -> int:
    """``pyclperf run *argv`` in this process, its output into ``log``; its exit code."""
    from ..views.command_line import call
    from ..views.run_command import cmd_run, parser

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        code: Any = call(cmd_run, parser().parse_args(list(argv)))
    except SystemExit as exc:  # argparse's refusals, and anything that exits on purpose
        code = exc.code
    except BaseException:  # what the process would have died of, printed as it would be
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        _tidy()
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _tidy() -> None:
    """Leave nothing of one experiment to the next: its figures, its buffers."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    gc.collect()


def serve(requests: IO[str], replies: IO[str]) -> None:
    """Answer each request line with ``{"rc": exit code}`` until ``requests`` ends."""
    for line in requests:
        if not line.strip():
            continue
        job = json.loads(line)
        replies.write(json.dumps({"rc": _run(job["argv"], job["log"])}) + "\n")
        replies.flush()


class SharedWorker:
    """The guide's side: starts the worker when needed, sends it one experiment at a time, and
    stops it (its whole process group) on a timeout or Ctrl-C."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = dict(env or {})  # set in the worker's environment (the device's turns)
        self.stopped = False  # stopped for good (Ctrl-C): it starts no process again

    def start(self) -> None:
        """Start the worker now (it loads the package while nothing is asked of it yet)."""
        self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        if self.stopped:  # a lane that was about to ask when the run stopped
            raise KeyboardInterrupt("the guide was stopped")
        if self.proc is None or self.proc.poll() is not None:
            # Its own session: Ctrl-C reaches the guide alone, and a stop kills the group.
            self.proc = subprocess.Popen([sys.executable, "-m", "pyclperf.guide.worker"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, start_new_session=True,
                                         env={**os.environ, "MPLBACKEND": "Agg", **self.env})
        return self.proc

    def run(self, argv: Sequence[str], log: Path, timeout_s: float) -> tuple[int | None, bool]:
        """Run ``pyclperf run *argv`` in the worker; (exit code, timed out). The exit code is the
        worker's own (a negative signal number) where it died on the way."""
        try:
            return self._ask(argv, log, timeout_s)
        except KeyboardInterrupt:  # its own session: Ctrl-C did not reach it
            self.stop()
            raise

    def _ask(self, argv: Sequence[str], log: Path, timeout_s: float) -> tuple[int | None, bool]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps({"argv": list(argv), "log": os.fspath(log)}) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died before reading: its exit code below says how
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=timeout_s)
        if not ready:
            self.stop()
            return None, True
        line = proc.stdout.readline()  # one reply per request: nothing else is buffered
        if not line:
            proc.wait()
            self._release()
            return proc.returncode, False
        return int(json.loads(line)["rc"]), False

    def stop(self, for_good: bool = False) -> None:
        """Kill the worker and anything it started; ``for_good``: and start none again.

        For good, it runs beside the lane that may be waiting on this worker's reply (Ctrl-C in
        the guide's main thread): the pipes are left to that lane, which sees the end of the
        reply pipe and lets go of them (or to ``close``). Closed here under its feet, the pipe
        would drop out of the lane's wait, which would then never end."""
        self.stopped = self.stopped or for_good
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        if not for_good:
            self._release()

    def _release(self) -> None:
        """Close the pipes to a worker that has ended, and forget it."""
        proc, self.proc = self.proc, None
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:  # a write still buffered to a worker that is gone
                        pass

    def end_input(self) -> None:
        """Tell the worker no more is coming (its stdin ends): it starts to exit, and ``close``
        then waits for it. Several workers told first end side by side."""
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):  # it is gone already: close() below says how
                pass

    def close(self) -> None:
        """Let the worker finish (its stdin ends), or stop it if it does not within seconds."""
        if self.proc is None:
            return
        try:
            self.end_input()
            self.proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            self.stop()
        self._release()


def main() -> None:
    # Replies go on a descriptor of their own: fds 1 and 2 belong to each experiment's log.
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.close(quiet)
    os.environ.setdefault("MPLBACKEND", "Agg")
    _preload()
    serve(sys.stdin, replies)


def _preload() -> None:
    """Import what every experiment's run needs before the first request comes, so a worker
    started ahead of its experiment (the guide's spare) has its second or two of imports done."""
    import pandas  # noqa: F401  (the results' tables)

    from .. import experiments  # noqa: F401  (every experiment's module, registered)
    from ..views import run_command  # noqa: F401  (what each request runs through)
    from ..device.devices import list_devices

    # The OpenCL drivers start here (a fraction of a second to a second on a GPU host, once a
    # process), not inside the first experiment's run.
    try:
        list_devices()
    except Exception:  # noqa: BLE001 - the first request says what is wrong, in its own log
        pass


if __name__ == "__main__":
    main()


__all__: Sequence[str] = ["SharedWorker", "serve"]
