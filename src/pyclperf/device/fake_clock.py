"""A test hook: make this process's OpenCL event clock a placeholder, as some conformant drivers
report it, so that what pyclperf does on such a device can be tested on any device.

With ``PYCLPERF_FAKE_EVENT_CLOCK=placeholder`` in the environment when pyclperf is imported (a
worker process inherits it), every launch and transfer still runs on the device, but what the
core returns is replaced where the Python layer receives it:

* each command's profiling timestamps read queued 0, submit 1, start 2, end 3, so every event
  duration is 1 ns (``_core.time_durations``, ``_core.time_events``, and ``_core.time_transfer``
  and ``_core.time_copy`` timed by events);
* the device reports a profiling timer resolution of 0 ns (``DeviceInfo``).

Host-clock timings are untouched. ``install()`` and ``uninstall()`` do the same for a test inside
one process. Peer copies (``PeerPair``) are not faked: they need two devices.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from .. import _core

ENV = "PYCLPERF_FAKE_EVENT_CLOCK"
PLACEHOLDER = "placeholder"

_saved: dict[str, Any] = {}


def _stamps(count: int) -> np.ndarray:
    out = np.empty((count, 4), dtype=np.uint64)
    out[:] = (0, 1, 2, 3)
    return out


def _durations(count: int) -> np.ndarray:
    return np.ones(count, dtype=np.float64)  # end 3 - start 2, for every command


def _time_durations(kernel: Any, global_size: Any, local_size: Any, warmup: Any, repeats: Any) -> np.ndarray:
    real = _saved["time_durations"](kernel, global_size, local_size, warmup, repeats)
    return _durations(len(real))


def _time_events(kernel: Any, global_size: Any, local_size: Any, warmup: Any, repeats: Any) -> np.ndarray:
    real = _saved["time_events"](kernel, global_size, local_size, warmup, repeats)
    return _stamps(len(real))


def _by_method(name: str, method_at: int) -> Callable[..., np.ndarray]:
    def timed(*args: Any, **kwargs: Any) -> np.ndarray:
        real = _saved[name](*args, **kwargs)
        method = kwargs.get("method", args[method_at] if len(args) > method_at else "events")
        return _durations(len(real)) if method == "events" else real
    return timed


def active() -> bool:
    return bool(_saved)


def install() -> None:
    """Replace the event clock by the placeholder (idempotent)."""
    if _saved:
        return
    from . import program

    _saved.update(time_durations=_core.time_durations, time_events=_core.time_events,
                  time_transfer=_core.time_transfer, time_copy=_core.time_copy,
                  resolution=_core.DeviceInfo.__dict__["profiling_timer_resolution_ns"],
                  program_durations=program._time_durations)
    _core.time_durations = _time_durations
    _core.time_events = _time_events
    # time_transfer(direction, device, host, nbytes, access, pieces, method, ...);
    # time_copy(src, dst, nbytes, method, ...)
    _core.time_transfer = _by_method("time_transfer", 6)
    _core.time_copy = _by_method("time_copy", 3)
    _core.DeviceInfo.profiling_timer_resolution_ns = property(lambda self: 0)
    program._time_durations = _time_durations


def uninstall() -> None:
    """Give the real event clock back."""
    if not _saved:
        return
    from . import program

    _core.time_durations = _saved["time_durations"]
    _core.time_events = _saved["time_events"]
    _core.time_transfer = _saved["time_transfer"]
    _core.time_copy = _saved["time_copy"]
    _core.DeviceInfo.profiling_timer_resolution_ns = _saved["resolution"]
    program._time_durations = _saved["program_durations"]
    _saved.clear()


def install_if_asked() -> None:
    """At import: install when the environment asks for it; any other value is refused."""
    value = os.environ.get(ENV, "")
    if not value:
        return
    if value != PLACEHOLDER:
        raise _core.InvalidArgumentError(f"{ENV}={value!r}: the only fake event clock is {PLACEHOLDER!r}")
    install()
