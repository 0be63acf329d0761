"""A GPU's clocks held at their maximum for the length of a run, where the driver allows it.

Boost clocks move with temperature and power, so two runs minutes apart can differ by the
clock alone. Through NVML (``pip install pyclperf[nvml]``) the SM and memory clocks are locked
at their maxima (nvmlDeviceSetGpuLockedClocks / SetMemoryLockedClocks, which need the right to
change the board's settings, usually root) and reset when the run ends, however it ends: the
context manager resets them on return and on any exception, and an ``atexit`` hook resets them
if the interpreter exits inside the run. A process killed outright (SIGKILL) cannot reset
them: ``nvidia-smi -rgc -rmc`` does.

Where the clocks cannot be locked (no NVML, not an NVIDIA device, no permission) the run goes
on unlocked and the record says why: locking is a request, not a condition of measuring.
"""

from __future__ import annotations

import atexit
import contextlib
from typing import Any, Callable, Iterator

from .peak import _nvml_device, _pynvml


def _unlocked(why: str) -> dict[str, Any]:
    return {"clock_lock": f"not locked: {why}", "clocks_locked": False}


@contextlib.contextmanager
def locked_clocks(info: Any, enabled: bool = True) -> Iterator[dict[str, Any]]:
    """Hold the device's clocks at their maxima inside the block; yields what the results'
    metadata records ({} when not ``enabled``): ``clock_lock`` in words, ``clocks_locked``."""
    if not enabled:
        yield {}
        return
    pynvml = _pynvml()
    if pynvml is None:
        yield _unlocked("NVML is not available (pynvml is not installed)")
        return
    if info is None or "NVIDIA" not in f"{info.vendor} {info.platform_name}".upper():
        yield _unlocked(f"'{getattr(info, 'name', info)}' is not an NVIDIA device")
        return
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        yield _unlocked(f"NVML failed to start: {exc}")
        return
    resets: list[Callable[[], None]] = []

    def restore() -> None:
        while resets:
            with contextlib.suppress(pynvml.NVMLError):
                resets.pop()()

    try:
        handle, why = _nvml_device(pynvml, info.name)
        if handle is None:
            yield _unlocked(why)
            return
        try:
            sm = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
            pynvml.nvmlDeviceSetGpuLockedClocks(handle, sm, sm)
        except pynvml.NVMLError as exc:
            yield _unlocked(f"the driver refused to lock the SM clock ({exc})")
            return
        resets.append(lambda: pynvml.nvmlDeviceResetGpuLockedClocks(handle))
        atexit.register(restore)
        said = f"locked: SM clock at its maximum, {sm} MHz"
        try:
            mem = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM))
            pynvml.nvmlDeviceSetMemoryLockedClocks(handle, mem, mem)
            resets.append(lambda: pynvml.nvmlDeviceResetMemoryLockedClocks(handle))
            said += f"; memory clock at {mem} MHz"
        except pynvml.NVMLError as exc:
            said += f"; memory clock not locked ({exc})"
        try:
            yield {"clock_lock": said, "clocks_locked": True}
        finally:
            restore()
            atexit.unregister(restore)
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


__all__ = ["locked_clocks"]
