"""One worker process of a supervised sweep, as its supervisor sees it: the process, its two
pipes, its log (what it printed, kept for the row of a configuration that killed it), and how it
ended. tuner/worker.py is the other side; tuner/supervisor.py decides when to start, use and
retire one."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from typing import Any

from . import ceiling, channel
from ..measure.conditions import register_own_processes

# Opening a device (process start, import, context) may take this long before it is an error.
START_TIMEOUT_S = 120.0
# What the row keeps of a dead worker's last output.
LAST_WORDS = 2000


class WorkerFailed(RuntimeError):
    """The worker could not be started or answered with an error of pyclperf's own."""


class Worker:
    """One worker process and its two pipes."""

    def __init__(self, device: str, memory_limit: int | None = None) -> None:
        self.device = device
        # What the caller asked for (None: the default), and the ceiling that gives now.
        self.memory_request = memory_limit
        self.memory_limit = ceiling.resolve(memory_limit)
        # Whether the ceiling is set after the device is open (on top of what its driver mapped)
        # rather than as the process starts: for a device whose driver cannot start under it.
        self.ceiling_after_open = device in _OPENED_BEFORE_CEILING
        self._start()

    def _start(self) -> None:
        self.log = tempfile.TemporaryFile(prefix="pyclperf-worker-")
        # Where the worker records its fenced buffers and the address of a fault that ends it
        # (tuner/fences.py); shared with it, so it outlives the worker.
        self.faults = tempfile.TemporaryFile(prefix="pyclperf-faults-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        # Where device memory is host memory (CPU devices), every buffer of 64 KiB or more gets
        # a mapping of its own rather than a piece of the heap, so a stray write into one of
        # the worker's own buffers does not corrupt the heap; the arguments' arrays have fences
        # of inaccessible memory around them besides (tuner/fences.py).
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 16))
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pyclperf.tuner.worker", str(to_child_r), str(from_child_w),
                 str(self.faults.fileno()), str(self.memory_limit or 0),
                 "after-open" if self.ceiling_after_open else "at-start"],
                pass_fds=(to_child_r, from_child_w, self.faults.fileno()), stdin=subprocess.DEVNULL, stdout=self.log,
                stderr=subprocess.STDOUT, env=env, cwd=os.getcwd())
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        _live.add(self)
        self.ran = 0              # configurations run since it started
        self._mark = 0            # where in the log the last request's output begins
        self.job_id: str | None = None
        self._summary: dict[str, Any] | None = None
        # The device is opened while the caller goes on (serialising the job, say): the reply
        # is read when first needed.
        message, _ = channel.dumps(("open", self.device, [p or os.getcwd() for p in sys.path]))
        channel.send(self.to_child, message)
        self._opening = True      # the "open" reply is still to be read (_opened)
        # True while a reply is being waited for, until it is read whole. A worker left so
        # (Ctrl-C while it worked) still owes that reply, which the next request would read as
        # its own: it is never given another request (usable()).
        self.awaiting = False

    @property
    def summary(self) -> dict[str, Any]:
        self._opened()
        return dict(self._summary or {})

    def _opened(self) -> None:
        """Wait for the device to be open in the worker; WorkerFailed if it could not be."""
        if not self._opening:
            return
        self._opening = False
        self.awaiting = True
        try:
            reply = channel.loads(channel.receive(self.from_child, time.monotonic() + START_TIMEOUT_S))
        except (channel.ChannelClosed, channel.ChannelTimeout) as exc:
            if self.memory_limit and not self.ceiling_after_open:
                # A driver may end the process, not refuse, when it cannot map what it needs
                # under a ceiling set as the worker starts (NVIDIA's OpenCL did, once in a GPU
                # check): that too is met by opening the device first.
                self.kill()
                self._open_before_ceiling()
                return
            # a closed channel is a worker that ended (or is ending: its pipe closes before it
            # can be reaped, so it is waited for, not polled)
            ended = isinstance(exc, channel.ChannelClosed) or not self.alive()
            why = self.death() if ended else "did not answer"
            self.kill()
            note = (f", within its memory limit of {ceiling.human_bytes(self.memory_limit)} "
                    "(memory_limit=)" if self.memory_limit and ceiling.ran_out(why) else "")
            raise WorkerFailed(f"the worker process could not open device {self.device!r}"
                               f"{note}: it {why}") from None
        if reply[0] == "refused under the ceiling" and not self.ceiling_after_open:
            # The driver could not start within the ceiling (it maps much as it opens).
            self.kill()
            self._open_before_ceiling()
            return
        if reply[0] != "ready":
            self.kill()
            raise WorkerFailed(f"the worker process could not open device {self.device!r}: "
                               f"{reply[1]}")
        self.awaiting = False
        self._summary = reply[1]

    def _open_before_ceiling(self) -> None:
        """Start a new worker that opens the device first and takes the ceiling on top of what
        its driver then holds, as every worker for this device does from now on."""
        _OPENED_BEFORE_CEILING.add(self.device)
        self.ceiling_after_open = True
        self._start()
        self._opened()

    def request(self, request: tuple[Any, ...] | bytes, timeout: float) -> tuple[Any, ...]:
        """Send one request (a tuple, or one channel.dumps made already) and wait for its reply.
        ChannelTimeout past ``timeout`` seconds; ChannelClosed when the worker died."""
        self._opened()
        path = None
        if isinstance(request, bytes):
            message = request
        else:
            message, path = channel.dumps(request)
        self._mark = self._log_end()
        self.awaiting = True
        try:
            channel.send(self.to_child, message)
            deadline = None if math.isinf(timeout) else time.monotonic() + timeout
            reply = channel.loads(channel.receive(self.from_child, deadline))
        except BrokenPipeError:
            raise channel.ChannelClosed() from None
        finally:
            channel.discard(path)  # the worker removes it once mapped; not if it died first
        self.awaiting = False
        if reply[0] == "error":
            raise WorkerFailed(reply[1])
        if reply[0] == "interrupt":
            raise KeyboardInterrupt
        return reply

    def alive(self) -> bool:
        return self.process.poll() is None

    def usable(self) -> bool:
        """Alive, and owing no reply: fit for the next request."""
        return not self.awaiting and self.alive()

    def _log_end(self) -> int:
        try:
            self.log.flush()
            return self.log.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return 0

    def request_output(self) -> str:
        """What the worker printed while answering the last request (its end, at most
        LAST_WORDS characters): one configuration's build chatter, not the ones before."""
        try:
            end = self._log_end()
            self.log.seek(max(self._mark, end - LAST_WORDS))
            return self.log.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def last_words(self) -> str:
        """The end of what the worker printed (the C library's abort message, a driver's)."""
        try:
            self.log.flush()
            size = self.log.seek(0, os.SEEK_END)
            self.log.seek(max(0, size - LAST_WORDS))
            return self.log.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def death(self) -> str:
        """How the worker ended, in words."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            how = f"was killed by {name}"
        else:
            how = f"exited with code {code}"
        words = self.last_words()
        return how + (f"; its last output: {words}" if words else "")

    def fault(self) -> str:
        """Which argument a fault that ended the worker hit, and where (tuner/fences.py);
        empty when it died otherwise, or the fault lies in no argument's fence."""
        from .fences import explain

        try:
            size = os.fstat(self.faults.fileno()).st_size
            record = os.pread(self.faults.fileno(), min(size, 1 << 20), 0)
        except (OSError, ValueError):
            return ""
        return explain(record.decode("utf-8", "replace"))

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.to_child = self.from_child = -1
        self.log.close()
        self.faults.close()


_live: "weakref.WeakSet[Worker]" = weakref.WeakSet()
# The devices whose driver could not start under a worker's memory ceiling: their workers open
# the device before they set it.
_OPENED_BEFORE_CEILING: set[str] = set()


def worker_pids() -> set[int]:
    """The process ids of this process's live workers (measure.conditions leaves them out of
    'other processes on the GPU')."""
    return {w.process.pid for w in list(_live) if w.alive()}


register_own_processes(worker_pids)
