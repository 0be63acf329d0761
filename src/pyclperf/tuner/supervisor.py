"""Supervised execution: a user's kernel runs in a worker process, never in the caller's.

A sweep sends its job once and then one configuration at a time (see worker.py). What a
configuration can do to a process is then paid for by the worker alone:

* it dies (a segfault, an abort from a corrupted heap, a driver that kills it): the row is
  ``crashed`` with the signal and the worker's last words; a fresh worker takes over. On a
  device that works in host memory, where the arrays are fenced off by inaccessible memory
  (tuner/fences.py), a fault in a fence is ``out of bounds`` instead, naming the argument;
* it runs past its time limit (a kernel that never ends): the worker is killed and the row is
  ``timeout``;
* it allocates past the worker's memory ceiling (ceiling.py): the allocation is refused and
  the row is ``out of memory``; the worker is replaced;
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
import threading
import time
import uuid
from typing import Any, Callable

from ..measure.results import CRASHED, INVALID, OUT_OF_BOUNDS, OUT_OF_MEMORY, TIMEOUT
from . import ceiling, channel
from .worker_process import START_TIMEOUT_S, Worker, WorkerFailed

# Without an explicit timeout, one configuration may take this many times the slowest one so
# far, and never less than the floor: a hung kernel never holds a sweep forever, and a
# configuration that is merely slower than the others is not cut short.
TIMEOUT_FACTOR = 10.0
TIMEOUT_FLOOR_S = 30.0
# Guard zones tried, in fresh workers, to find how far a write past an array's end goes.
EXTENT_FIRST_GUARD = 1 << 16
EXTENT_LAST_GUARD = 1 << 30


class Supervisor:
    """Runs one job's configurations in a worker on one device, replacing the worker whenever
    a configuration kills it, hangs it or leaves it suspect."""

    def __init__(self, device: str, worker: Worker | None = None,
                 memory_limit: int | None = None) -> None:
        self.device = device
        self.memory_limit = memory_limit  # each worker's ceiling (ceiling.py); None: default
        self.worker = worker
        self.job: tuple[str, bytes, str | None] | None = None  # id, message, its buffer file
        self.slowest_s = 0.0
        self.allowance_s = 0.0  # added to every limit (supervise(): check="memory")
        self.restarts = 0

    # --- the worker ---------------------------------------------------------------------
    def _ready(self) -> Worker:
        """A live worker holding this job (started, and sent the job, as needed)."""
        if self.worker is None or not self.worker.usable():
            if self.worker is not None:
                self.worker.kill()
                self.restarts += 1
            self.worker = Worker(self.device, self.memory_limit)
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
        """Seconds one configuration may take: the caller's, or the automatic rule; plus the
        allowance of a job whose configurations run on Oclgrind first (check="memory")."""
        if timeout is not None:
            return float(timeout) + self.allowance_s
        return max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * self.slowest_s) + self.allowance_s

    # --- one configuration --------------------------------------------------------------
    def run(self, kind: str, config: dict[str, Any], timeout: float | None,
            on_crash: Callable[[str, str], tuple[Any, ...]], *extra: Any,
            cap: float | None = None) -> tuple[Any, ...]:
        """One request for ``config``; a dead or hung worker's answer comes from ``on_crash``
        (with the status and the reason) or a TIMEOUT reply. A worker that had run other
        configurations before it died gets the configuration once more, alone in a fresh
        worker, unless its death is explained: a fault in the inaccessible memory fenced off
        around one of this job's arrays (tuner/fences.py) is ``out of bounds``, naming it."""
        for attempt in (1, 2):
            worker = self._ready()
            fresh = worker.ran == 0
            limit = self.limit(timeout) if cap is None else min(self.limit(timeout), cap)
            t0 = time.monotonic()
            try:
                reply = worker.request((kind, config, *extra), limit)
            except channel.ChannelTimeout:
                self.retire()
                return ("timeout", f"ran past its time limit of {limit:g} s (build, verification "
                                   "and timing); its worker process was stopped",
                        time.monotonic() - t0)
            except channel.ChannelClosed:
                why = worker.death()
                fault = worker.fault()
                self.retire()
                if fault:
                    return on_crash(OUT_OF_BOUNDS, f"{fault} ({why})")
                if ceiling.ran_out(why):  # an allocation refused where it could not be caught
                    return on_crash(OUT_OF_MEMORY, ceiling.out_of_memory(
                        f"its worker process {why}", worker.memory_limit))
                if fresh or attempt == 2:
                    return on_crash(CRASHED, f"its worker process {why}")
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

    def measure(self, config: dict[str, Any], timeout: float | None,
                cap: float | None = None) -> dict[str, Any]:
        """The measured part of one configuration's row, as measure.measure() returns it."""
        died = []

        def crashed(status: str, why: str) -> tuple[Any, ...]:
            died.append(status)
            return ("row", {"status": status, "error": why, "verified": False}, True)

        reply = self.run("measure", config, timeout, crashed, cap=cap)
        if reply[0] == "timeout":
            return {"status": TIMEOUT, "error": reply[1], "verified": False, "ran_s": reply[2]}
        if reply[0] == "error":
            return {"status": INVALID, "verified": False,
                    "error": f"the worker process could not run it: {reply[1]}"}
        _, row, tainted = reply
        words = self.worker.request_output() if self.worker is not None else ""
        if tainted:
            self.retire()
        if words and row.get("status") != CRASHED:
            row.setdefault("worker_output", words)
        if tainted and row.get("status") == OUT_OF_BOUNDS and not died:  # a fault says where
            row["error"] = self.extent(config, timeout) or row["error"]
        return row

    def extent(self, config: dict[str, Any], timeout: float | None) -> str:
        """How far a write that ran through a whole guard zone goes: the launch again, each
        time in a fresh worker, over guard zones 16 times wider, until one holds it. Empty
        when no wider guard could be tried."""
        guard = EXTENT_FIRST_GUARD
        found = ""
        while guard <= EXTENT_LAST_GUARD:
            reply = self.run("extent", config, timeout,
                             lambda status, why: ("failed", status, why), guard)
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
# Keyed by device and the memory limit asked for: a worker is reused only under the same one.
_idle: dict[tuple[str, int | None], list[Worker]] = {}
_lock = threading.Lock()


def checkout(device: str, memory_limit: int | None = None) -> Supervisor:
    """A supervisor on ``device``, with a warm worker when one is idle, else one starting;
    its workers may hold ``memory_limit`` bytes (None: the default ceiling, ceiling.py)."""
    with _lock:
        pool = _idle.get((device, memory_limit), [])
        worker = None
        while pool and worker is None:
            candidate = pool.pop()
            if candidate.usable():
                worker = candidate
            else:
                candidate.kill()
    return Supervisor(device, worker if worker is not None else Worker(device, memory_limit),
                      memory_limit)


def prestart(device: str, memory_limit: int | None = None) -> None:
    """Start a worker on ``device`` now, unless one is idle there already, so that its process
    start and device context overlap with the caller's own preparations (checking the
    arguments, computing the reference, serialising the job); checkout() finds it."""
    with _lock:
        pool = _idle.setdefault((device, memory_limit), [])
        if any(w.alive() for w in pool):
            return
        pool.append(Worker(device, memory_limit))


def checkin(supervisor: Supervisor) -> None:
    """Give the supervisor's worker back for the next call (or end it if one is kept already)."""
    worker, supervisor.worker = supervisor.worker, None
    if worker is None:
        return
    if not worker.usable():  # dead, or interrupted while it owed a reply: not reused
        worker.kill()
        return
    worker.job_id = None
    with _lock:
        pool = _idle.setdefault((supervisor.device, supervisor.memory_limit), [])
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
    from ..device.devices import select_device

    info = select_device(None) if ctx is None else ctx.info
    return f"{info.platform_index}:{info.device_index}"


class DeviceView:
    """What a sweep reads from a Context for its metadata, for the worker's device: this
    process opens no context of its own."""

    def __init__(self, supervisor: Supervisor) -> None:
        from ..device.devices import select_device

        self._supervisor = supervisor
        self.info = select_device(supervisor.device)

    def summary(self) -> dict[str, Any]:
        return self._supervisor.summary()
