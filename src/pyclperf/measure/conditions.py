"""Under which conditions a point was measured: the GPU's clocks, throttle reasons, power,
temperature and energy, read through NVML (``pip install "pyclperf[nvml]"``) before and after a
point's timed launches, and kept in its row.

A figure taken while the GPU throttles, below its maximum clocks, or while another process uses
it, is not the device's figure: such rows carry a ``conditions`` flag saying which, and reports
say so. Devices NVML cannot describe (not NVIDIA, or no pynvml) get no columns and no flag:
nothing is known, nothing is claimed.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from ..device.peak import _nvml_device, _pynvml

# Throttle reasons that say nothing against a figure: the GPU was idle, or an application
# clock setting the user chose (NVML's bit masks, as pynvml names them).
_HARMLESS = ("nvmlClocksEventReasonGpuIdle", "nvmlClocksThrottleReasonGpuIdle",
             "nvmlClocksEventReasonApplicationsClocksSetting",
             "nvmlClocksThrottleReasonApplicationsClocksSetting")
_REASONS = {
    "SwPowerCap": "software power cap", "HwSlowdown": "hardware slowdown",
    "SwThermalSlowdown": "software thermal slowdown", "HwThermalSlowdown": "hardware thermal slowdown",
    "HwPowerBrakeSlowdown": "power brake", "SyncBoost": "sync boost",
    "DisplayClockSetting": "display clock setting",
}
# A point whose SM clock is below this share of the maximum was not taken at full speed.
CLOCK_SHARE = 0.9
# Points shorter than this get no energy reading (begin()): NVML's counter steps too coarsely
# to see them, and reading it costs milliseconds.
ENERGY_MIN_S = 0.05

_initialised: Any = None   # the pynvml module NVML was initialised with


def _reason_bits(pynvml: Any) -> dict[int, str]:
    bits = {}
    for suffix, words in _REASONS.items():
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            value = getattr(pynvml, prefix + suffix, None)
            if isinstance(value, int):
                bits[value] = words
                break
    return bits


class Conditions:
    """NVML readings of one device around each point (see begin() and end())."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self.nvml = pynvml
        self.handle = handle
        self.max_sm_mhz = self._ask(lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
        self.bits = _reason_bits(pynvml)
        self._start: tuple[float, float | None] | None = None
        # False until a point lasts ENERGY_MIN_S: a sweep of short points then never pays for
        # the counter, and a sweep of long ones misses it on its first point only.
        self._points_are_long = ENERGY_MIN_S <= 0

    @classmethod
    def for_device(cls, info: Any) -> "Conditions | None":
        """The readings of ``info``'s GPU, or None where NVML cannot describe it."""
        global _initialised
        if "NVIDIA" not in f"{info.vendor} {info.platform_name}":
            return None
        pynvml = _pynvml()
        if pynvml is None:
            return None
        try:
            if _initialised is not pynvml:
                pynvml.nvmlInit()  # kept initialised: init and shutdown cost tens of ms
                _initialised = pynvml
            handle, _ = _nvml_device(pynvml, info.name)
        except pynvml.NVMLError:
            return None
        return None if handle is None else cls(pynvml, handle)

    def _ask(self, call: Any) -> Any:
        try:
            return call()
        except self.nvml.NVMLError:
            return None

    def _energy_mj(self) -> float | None:
        value = self._ask(lambda: self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))
        return None if value is None else float(value)

    def begin(self) -> None:
        """Just before a point's timed launches. The energy counter is read only while points
        last long enough for it to step (ENERGY_MIN_S): one reading costs milliseconds on
        NVIDIA's driver (3.8 ms on the H200), as much as a short point's whole measurement, and
        a short point's energy would read 0 anyway."""
        self._start = (time.perf_counter(), self._energy_mj() if self._points_are_long else None)

    def end(self) -> dict[str, Any]:
        """Just after them: the row's columns, with ``conditions`` empty or naming what was wrong."""
        nv, h = self.nvml, self.handle
        sm = self._ask(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
        mem = self._ask(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))
        power = self._ask(lambda: nv.nvmlDeviceGetPowerUsage(h))
        temp = self._ask(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        reasons = self._ask(lambda: getter(h)) if getter is not None else None
        out: dict[str, Any] = {"sm_clock_mhz": sm, "mem_clock_mhz": mem,
                               "sm_clock_max_mhz": self.max_sm_mhz,
                               "power_w": None if power is None else power / 1000.0,
                               "temperature_c": temp}
        if self._start is not None:
            t0, e0 = self._start
            seconds = time.perf_counter() - t0
            e1 = self._energy_mj() if e0 is not None else None
            if e0 is not None and e1 is not None:
                out["energy_j"] = (e1 - e0) / 1000.0
                out["mean_power_w"] = out["energy_j"] / seconds if seconds > 0 else None
            self._points_are_long = seconds >= ENERGY_MIN_S  # the next point is likely alike
        flags = []
        if reasons:
            named = [words for bit, words in self.bits.items() if reasons & bit]
            out["throttle"] = ", ".join(named)
            if named:
                flags.append(f"throttled ({out['throttle']})")
        else:
            out["throttle"] = ""
        if sm is not None and self.max_sm_mhz and sm < CLOCK_SHARE * self.max_sm_mhz:
            flags.append(f"SM clock {sm} of {self.max_sm_mhz} MHz")
        others = self._other_processes()
        if others:
            flags.append(f"{len(others)} other process(es) on the GPU (pid {', '.join(map(str, others))})")
        out["conditions"] = "; ".join(flags)
        return out

    def _other_processes(self) -> list[int]:
        """Processes computing on this GPU other than this one, its parent and its own worker
        processes (a supervised sweep's worker, the sweep itself, warm workers kept idle)."""
        mine = {os.getpid(), os.getppid(), *own_processes()}
        found = self._ask(lambda: self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)) or []
        return sorted({int(p.pid) for p in found if int(getattr(p, "pid", -1)) not in mine})


# Where this process keeps helper processes on the GPU (the tuner's workers), a function naming
# them: they are this sweep's own, not "other processes". Registered by their owner, so the
# measuring core needs no knowledge of who starts processes.
_OWN_PROCESS_SOURCES: list[Callable[[], set[int]]] = []


def register_own_processes(source: Callable[[], set[int]]) -> None:
    """Count the process ids ``source()`` returns as this process's own on the GPU."""
    if source not in _OWN_PROCESS_SOURCES:
        _OWN_PROCESS_SOURCES.append(source)


def own_processes() -> set[int]:
    return {pid for source in _OWN_PROCESS_SOURCES for pid in source()}


def energy_columns(columns: dict[str, Any], bytes_moved: float | None,
                   gbps: float | None) -> dict[str, Any]:
    """Joules per GB moved and GB/s per watt, where the point's energy (over its timed launches,
    ``bytes_moved`` in all) and mean power are known. NVML's energy counter advances in steps:
    a point too short to see one step gets neither."""
    out: dict[str, Any] = {}
    energy, power = columns.get("energy_j"), columns.get("mean_power_w")
    if energy and bytes_moved:
        out["j_per_gb"] = energy / (bytes_moved / 1e9)
    if power and gbps:
        out["gbps_per_w"] = gbps / power
    return out
