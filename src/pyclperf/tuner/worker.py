"""The worker process of a supervised sweep: ``python -m pyclperf.tuner.worker IN OUT
[FAULTS [MEMORY_LIMIT [WHEN]]]``.

It holds the OpenCL context, the programs and the buffers; the sweep's own process only sends
requests through the pipe ``IN`` and reads replies from ``OUT`` (see supervisor.py). Whatever a
configuration does here (a segfault, a heap corrupted by a write far past an array, a driver
error that poisons the process, a kernel that never ends) costs this process, never the
caller's. On a device that works in host memory, ``FAULTS`` is the file where the arguments'
fenced buffers and the address of a fault are recorded (tuner/fences.py); ``MEMORY_LIMIT``, in
bytes, is the most private memory it may hold (tuner/ceiling.py; 0: none), set as the process
starts (``WHEN`` "at-start", the default: a CPU device such as PoCL's sizes its memory by it) or
once the device is open, on top of what its driver mapped (``WHEN`` "after-open": for a driver
that cannot start under it; an "open" refused under the ceiling answers ("refused under the
ceiling", text), and the supervisor starts a worker of that kind).

Requests, each a tuple:
  ("open", device_spec, sys_path)  -> ("ready", device summary)
  ("job", job_fields)              -> ("loaded",)
  ("job_clear",)                   -> ("cleared",)
  ("measure", config)              -> ("row", row, tainted)
  ("run_once", config)             -> ("outputs", values) | ("failed", status, message)
  ("check", config)                -> ("outputs", values) | ("failed", status, message)
  ("extent", config, guard_bytes)  -> ("extent", guard report, escaped) | ("failed", ...)
Any other exception: ("error", text); a KeyboardInterrupt raised by a user callable:
("interrupt",), and the sweep stops as it would in its own process. ``tainted`` says the process may be damaged (a launch
the driver aborted, a write that reached past a guard zone): the supervisor then retires it.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Any

from . import channel
from ..measure.results import INVALID, OUT_OF_MEMORY

# Statuses after which this process is not trusted with another configuration: the driver
# may keep an error for the life of the process (CUDA does after an illegal address), a write
# past a guard zone may have landed in memory the next configuration uses, and a refused
# allocation may have left a library half way.
TAINTING = ("launch failed", "crashed", OUT_OF_MEMORY)


def _die_with_parent() -> None:
    """Ask Linux to end this process when the sweep's process ends, even mid-kernel."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the closed pipe ends it when idle
        pass


def probe_extent(job: Any, config: dict[str, Any], guard_bytes: int) -> tuple[str, bool]:
    """One launch of ``config`` with guard zones of ``guard_bytes``: (what the guards saw,
    whether the write reached past them too). How far a write past an array's end really
    goes is found by a supervisor asking fresh worker processes with ever wider guards: the
    process that saw the write escape its guard may be damaged already."""
    import math

    from .measure import _build, _check_launch, _indices, _launch, launch_geometry

    g, local = launch_geometry(job, config)
    kernel = _build(job, config, {})
    _check_launch(kernel, g, local)
    args = job.arguments
    args.guard_bytes = int(guard_bytes)
    values = job.resolve_args(config)
    args.bind(kernel, values, math.prod(g), _indices(job.inout, [a.name for a in kernel.args],
                                                      "inout"))
    _launch(kernel, g, local)
    return args.guard_problem(), args.escaped


def refusal(exc: BaseException) -> tuple[Any, ...]:
    """The reply for a configuration that could not run as asked, in one line: its status and
    why. An argument the kernel cannot take is the caller's mistake, said as run_kernel says
    it, not a traceback of this process; a refused allocation is ``out of memory``, naming the
    ceiling (ceiling.py)."""
    from .ceiling import out_of_memory
    from .measure import ConfigFailed, KernelRunError

    if isinstance(exc, MemoryError):
        return ("failed", OUT_OF_MEMORY, out_of_memory(f"{type(exc).__name__}: {exc}"))
    if isinstance(exc, KernelRunError):
        return ("failed", exc.status, str(exc).split(": ", 1)[-1])
    if isinstance(exc, ConfigFailed):
        return ("failed", exc.status, str(exc))
    return ("failed", INVALID, str(exc))


class Server:
    """One worker's state: its context and the job it serves."""

    def __init__(self, fault_fd: int = -1, ceiling_after_open: int | None = None) -> None:
        self.ctx: Any = None
        # The memory ceiling to set once the device is open (None: set as the process started,
        # or none).
        self.ceiling_after_open = ceiling_after_open
        self.job: Any = None
        # The supervisor's fault record file (tuner/fences.py); -1 without one. ``fenced``:
        # this device works in host memory, so arguments get fenced buffers.
        self.fault_fd = fault_fd
        self.fenced = False

    def open(self, spec: str, path: list[str]) -> tuple[Any, ...]:
        for p in reversed(path):
            if p not in sys.path:
                sys.path.insert(0, p)
        from ..device.context import Context
        from ..device.devices import device_summary

        from . import ceiling

        try:
            self.ctx = Context(spec or None)
        except Exception as exc:  # noqa: BLE001 - a driver refused: said in the supervisor's terms
            if ceiling.applied is None:
                raise
            return ("refused under the ceiling", ceiling.open_refused(spec, exc))
        if self.ceiling_after_open:
            ceiling.apply(self.ceiling_after_open, on_top_of_mapped=True)
        if self.fault_fd >= 0:
            from .. import _core
            from .fences import works_in_host_memory

            self.fenced = works_in_host_memory(self.ctx)
            if self.fenced:
                _core.record_faults(self.fault_fd)
        summary = device_summary(self.ctx.info)
        summary["preferred_work_group_multiple"] = self.ctx.preferred_work_group_multiple()
        return ("ready", summary)

    def load(self, fields: dict[str, Any]) -> tuple[Any, ...]:
        from .measure import Job

        if self.job is not None:
            self.job.arguments.release()
        self.job = Job(self.ctx, **fields)
        if self.fenced:
            # The record describes this job's buffers only: the old ones are gone.
            os.ftruncate(self.fault_fd, 0)
            os.lseek(self.fault_fd, 0, os.SEEK_SET)
            self.job.arguments.fenced_log = self._record
        return ("loaded",)

    def _record(self, line: str) -> None:
        os.write(self.fault_fd, line.encode())

    def clear(self) -> tuple[Any, ...]:
        """The end of a sweep: its buffers are freed while the process waits for the next."""
        if self.job is not None:
            self.job.arguments.release()
            self.job = None
        return ("cleared",)

    def measure(self, config: dict[str, Any]) -> tuple[Any, ...]:
        from .measure import measure

        row = measure(self.job, config)
        tainted = row.get("status") in TAINTING or bool(self.job.arguments.escaped)
        return ("row", row, tainted)

    def extent(self, config: dict[str, Any], guard_bytes: int) -> tuple[Any, ...]:
        from .measure import ConfigFailed

        try:
            return ("extent", *probe_extent(self.job, config, guard_bytes))
        except (ConfigFailed, MemoryError) as exc:
            return refusal(exc)

    def run_once(self, config: dict[str, Any]) -> tuple[Any, ...]:
        from .measure import KernelRunError, run_once

        try:
            return ("outputs", run_once(self.job, config))
        except (KernelRunError, MemoryError) as exc:
            return refusal(exc)

    def check(self, config: dict[str, Any]) -> tuple[Any, ...]:
        from .. import _core
        from .measure import ConfigFailed, verified_launch

        try:
            judged: list[Any] = []
            verified_launch(self.job, config, {}, judged)
            return ("outputs", judged)
        except (ConfigFailed, MemoryError, TypeError, ValueError,
                _core.InvalidArgumentError) as exc:
            return refusal(exc)

    def handle(self, request: tuple[Any, ...]) -> tuple[Any, ...]:
        kind, *rest = request
        handler = {"open": self.open, "job": self.load, "job_clear": self.clear, "measure": self.measure,
                   "run_once": self.run_once, "check": self.check,
                   "extent": self.extent}.get(kind)
        if handler is None:
            return ("error", f"unknown request {kind!r}")
        return handler(*rest)


def main(argv: list[str]) -> int:
    # Ctrl-C at a terminal, and a SIGTERM sent to the process group (a scheduler's, `timeout`'s),
    # reach this process too; the sweep decides what stops, and records it. This process ends
    # with the sweep's in any case (_die_with_parent).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent()
    from . import ceiling, console

    limit = int(argv[4]) if len(argv) > 4 and int(argv[4]) > 0 else None
    after_open = len(argv) > 5 and argv[5] == "after-open"
    if limit is not None and not after_open:
        ceiling.apply(limit)
    console.CAPTURE = False  # this process's stderr is its log, read per configuration
    fd_in, fd_out = int(argv[1]), int(argv[2])
    server = Server(int(argv[3]) if len(argv) > 3 else -1, limit if after_open else None)
    while True:
        try:
            request = channel.loads(channel.receive(fd_in))
        except channel.ChannelClosed:
            return 0
        try:
            reply = server.handle(request)
        except KeyboardInterrupt:  # raised by a user callable: the sweep stops, as in-process
            reply = ("interrupt",)
        except MemoryError as exc:  # outside any configuration (the job's own arrays): one line
            reply = ("error", ceiling.out_of_memory(f"{type(exc).__name__}: {exc}"))
        except Exception as exc:  # noqa: BLE001 - reported to the sweep, which decides
            reply = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")
        message, path = channel.dumps(reply)
        try:
            channel.send(fd_out, message)
        except BrokenPipeError:
            channel.discard(path)
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
