"""Supervised execution: a user's kernel runs in a worker process, never in the caller's.

A sweep sends its job once and then one configuration at a time (see worker.py). What a
configuration can do to a process is then paid for by the worker alone:

* it dies (a segfault, an abort from a corrupted heap, a driver that kills it): the row is
  ``crashed`` with the signal and the worker's last words; a fresh worker takes over;
* it runs past its time limit (a kernel that never ends): the worker is killed and the row is
  ``timeout``;
* it leaves the process suspect (a launch the driver aborted: CUDA keeps such an error for the
  life of the process; a write that reached past a guard zone): the worker is retired after
  its row, so the next configuration starts in a clean one.

A configuration that crashes a worker which had already run others is run once more in a
fresh worker before it is called ``crashed``: the damage may have been done by an earlier one.

Workers are kept warm between sweeps on the same device (one per device, reused by the next
tune() or run_kernel() call), so supervision costs one process start per session, not per call.
"""

from __future__ import annotations

import atexit
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from typing import Any, Callable

from ..results import CRASHED, INVALID, OUT_OF_BOUNDS, TIMEOUT
from . import channel

# Opening a device (process start, import, context) may take this long before it is an error.
START_TIMEOUT_S = 120.0
# Without an explicit timeout, one configuration may take this many times the slowest one so
# far, and never less than the floor: a hung kernel never holds a sweep forever, and a
# configuration that is merely slower than the others is not cut short.
TIMEOUT_FACTOR = 10.0
TIMEOUT_FLOOR_S = 30.0
# Guard zones tried, in fresh workers, to find how far a write past an array's end goes.
EXTENT_FIRST_GUARD = 1 << 16
EXTENT_LAST_GUARD = 1 << 30
# What the row keeps of a dead worker's last output.
LAST_WORDS = 2000


class WorkerFailed(RuntimeError):
    """The worker could not be started or answered with an error of pyclperf's own."""


class Worker:
    """One worker process and its two pipes."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.log = tempfile.TemporaryFile(prefix="pyclperf-worker-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        # Where device memory is host memory (CPU devices), every buffer of 64 KiB or more gets
        # a mapping of its own rather than a piece of the heap: a write far past one then
        # faults, or lands in the moats (engine/intact.py), instead of corrupting the heap.
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 16))
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pyclperf.engine.worker", str(to_child_r), str(from_child_w)],
                pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, stdout=self.log,
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
        message, _ = channel.dumps(("open", device, [p or os.getcwd() for p in sys.path]))
        channel.send(self.to_child, message)
        self._opening = True

    @property
    def summary(self) -> dict[str, Any]:
        self._opened()
        return dict(self._summary or {})

    def _opened(self) -> None:
        """Wait for the device to be open in the worker; WorkerFailed if it could not be."""
        if not self._opening:
            return
        self._opening = False
        try:
            reply = channel.loads(channel.receive(self.from_child, time.monotonic() + START_TIMEOUT_S))
        except (channel.ChannelClosed, channel.ChannelTimeout):
            why = self.death() if not self.alive() else "did not answer"
            self.kill()
            raise WorkerFailed(f"the worker process could not open device {self.device!r}: "
                               f"it {why}") from None
        if reply[0] != "ready":
            self.kill()
            raise WorkerFailed(f"the worker process could not open device {self.device!r}: "
                               f"{reply[1]}")
        self._summary = reply[1]

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
        try:
            channel.send(self.to_child, message)
            deadline = None if math.isinf(timeout) else time.monotonic() + timeout
            reply = channel.loads(channel.receive(self.from_child, deadline))
        except BrokenPipeError:
            raise channel.ChannelClosed() from None
        finally:
            channel.discard(path)  # the worker removes it once mapped; not if it died first
        if reply[0] == "error":
            raise WorkerFailed(reply[1])
        if reply[0] == "interrupt":
            raise KeyboardInterrupt
        return reply

    def alive(self) -> bool:
        return self.process.poll() is None

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


class Supervisor:
    """Runs one job's configurations in a worker on one device, replacing the worker whenever
    a configuration kills it, hangs it or leaves it suspect."""

    def __init__(self, device: str, worker: Worker | None = None) -> None:
        self.device = device
        self.worker = worker
        self.job: tuple[str, bytes, str | None] | None = None  # id, message, its buffer file
        self.slowest_s = 0.0
        self.restarts = 0

    # --- the worker ---------------------------------------------------------------------
    def _ready(self) -> Worker:
        """A live worker holding this job (started, and sent the job, as needed)."""
        if self.worker is None or not self.worker.alive():
            if self.worker is not None:
                self.worker.kill()
                self.restarts += 1
            self.worker = Worker(self.device)
        if self.job is not None and self.worker.job_id != self.job[0]:
            self.worker.request(self.job[1], START_TIMEOUT_S)
            self.worker.job_id = self.job[0]
        return self.worker

    def summary(self) -> dict[str, Any]:
        return self._ready().summary

    def retire(self) -> None:
        """Stop the current worker; the next request starts a fresh one."""
        if self.worker is not None:
            self.worker.kill()
            self.worker = None
            self.restarts += 1

    def load(self, fields: dict[str, Any]) -> None:
        """The job every later request is about, serialised once here (so what cannot be sent
        is refused before the sweep begins) and sent to each worker that serves it."""
        self.close()
        try:
            message, path = channel.dumps(("job", fields), keep=True)
        except Exception as exc:  # noqa: BLE001 - cloudpickle raises many kinds
            raise TypeError(
                "the kernel runs in a worker process (isolate=True, the default), which could "
                f"not be sent the job: {type(exc).__name__}: {exc}. Arguments, the reference and "
                "user callables must be picklable (cloudpickle); isolate=False runs in this "
                "process, unprotected") from None
        self.job = (uuid.uuid4().hex, message, path)

    def limit(self, timeout: float | None) -> float:
        """Seconds one configuration may take: the caller's, or the automatic rule."""
        if timeout is not None:
            return float(timeout)
        return max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * self.slowest_s)

    # --- one configuration --------------------------------------------------------------
    def run(self, kind: str, config: dict[str, Any], timeout: float | None,
            on_crash: Callable[[str], tuple[Any, ...]], *extra: Any) -> tuple[Any, ...]:
        """One request for ``config``; a dead or hung worker's answer comes from ``on_crash``
        (with the reason) or a TIMEOUT reply. A worker that had run other configurations
        before it died gets the configuration once more, alone in a fresh worker."""
        for attempt in (1, 2):
            worker = self._ready()
            fresh = worker.ran == 0
            limit = self.limit(timeout)
            t0 = time.monotonic()
            try:
                reply = worker.request((kind, config, *extra), limit)
            except channel.ChannelTimeout:
                self.retire()
                return ("timeout", f"ran past its time limit of {limit:g} s (build, verification "
                                   "and timing); its worker process was stopped")
            except channel.ChannelClosed:
                why = worker.death()
                self.retire()
                if fresh or attempt == 2:
                    return on_crash(f"its worker process {why}")
                continue
            except WorkerFailed as exc:  # pyclperf's own fault there: reported, not hidden
                self.retire()
                return ("error", str(exc))
            except BaseException:  # Ctrl-C: the configuration in flight is abandoned
                self.retire()
                raise
            worker.ran += 1
            self.slowest_s = max(self.slowest_s, time.monotonic() - t0)
            return reply
        raise AssertionError("unreachable")

    def measure(self, config: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """The measured part of one configuration's row, as measure.measure() returns it."""
        def crashed(why: str) -> tuple[Any, ...]:
            return ("row", {"status": CRASHED, "error": why, "verified": False}, True)

        reply = self.run("measure", config, timeout, crashed)
        if reply[0] == "timeout":
            return {"status": TIMEOUT, "error": reply[1], "verified": False}
        if reply[0] == "error":
            return {"status": INVALID, "verified": False,
                    "error": f"the worker process could not run it: {reply[1]}"}
        _, row, tainted = reply
        words = self.worker.request_output() if self.worker is not None else ""
        if tainted:
            self.retire()
        if words and row.get("status") != CRASHED:
            row.setdefault("worker_output", words)
        if tainted and row.get("status") == OUT_OF_BOUNDS:
            row["error"] = self.extent(config, timeout) or row["error"]
        return row

    def extent(self, config: dict[str, Any], timeout: float | None) -> str:
        """How far a write that ran through a whole guard zone goes: the launch again, each
        time in a fresh worker, over guard zones 16 times wider, until one holds it. Empty
        when no wider guard could be tried."""
        guard = EXTENT_FIRST_GUARD
        found = ""
        while guard <= EXTENT_LAST_GUARD:
            reply = self.run("extent", config, timeout, lambda why: ("failed", CRASHED, why),
                             guard)
            self.retire()  # whatever it saw, the write may have damaged that process
            if reply[0] != "extent":
                break
            found = reply[1]
            if not reply[2]:
                break
            guard *= 16
        return found

    def close(self) -> None:
        """Forget the job (its buffer file is removed); the worker stays for checkin()."""
        if self.job is not None:
            channel.discard(self.job[2])
            self.job = None


# --- warm workers, one per device, reused across calls ------------------------------------
_idle: dict[str, list[Worker]] = {}
_lock = threading.Lock()


def checkout(device: str) -> Supervisor:
    """A supervisor on ``device``, with a warm worker when one is idle, else one starting."""
    with _lock:
        pool = _idle.get(device, [])
        worker = None
        while pool and worker is None:
            candidate = pool.pop()
            if candidate.alive():
                worker = candidate
            else:
                candidate.kill()
    return Supervisor(device, worker if worker is not None else Worker(device))


def prestart(device: str) -> None:
    """Start a worker on ``device`` now, unless one is idle there already, so that its process
    start and device context overlap with the caller's own preparations (checking the
    arguments, computing the reference, serialising the job); checkout() finds it."""
    with _lock:
        pool = _idle.setdefault(device, [])
        if any(w.alive() for w in pool):
            return
        pool.append(Worker(device))


def checkin(supervisor: Supervisor) -> None:
    """Give the supervisor's worker back for the next call (or end it if one is kept already)."""
    worker, supervisor.worker = supervisor.worker, None
    if worker is None or not worker.alive():
        return
    worker.job_id = None
    with _lock:
        pool = _idle.setdefault(supervisor.device, [])
        if not pool:
            # Drop the job's device buffers now: the next call ships its own job.
            try:
                worker.request(("job_clear",), 10.0)
            except (channel.ChannelClosed, channel.ChannelTimeout, WorkerFailed):
                worker.kill()
                return
            pool.append(worker)
            return
    worker.kill()


_live: "weakref.WeakSet[Worker]" = weakref.WeakSet()


def worker_pids() -> set[int]:
    """The process ids of this process's live workers (engine.conditions leaves them out of
    'other processes on the GPU')."""
    return {w.process.pid for w in list(_live) if w.alive()}


@atexit.register
def _shutdown() -> None:
    with _lock:
        for pool in _idle.values():
            for worker in pool:
                worker.kill()
        _idle.clear()


def device_spec(ctx: Any) -> str:
    """The "platform:device" spec a worker opens for ``ctx``'s device (the default device when
    ``ctx`` is None, without opening a context here)."""
    from ..devices import select_device

    info = select_device(None) if ctx is None else ctx.info
    return f"{info.platform_index}:{info.device_index}"


class DeviceView:
    """What a sweep reads from a Context for its metadata, for the worker's device: this
    process opens no context of its own."""

    def __init__(self, supervisor: Supervisor) -> None:
        from ..devices import select_device

        self._supervisor = supervisor
        self.info = select_device(supervisor.device)

    def summary(self) -> dict[str, Any]:
        return self._supervisor.summary()
