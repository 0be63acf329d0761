"""Under which conditions a point was measured: the GPU's clocks, throttle reasons, power,
temperature and energy, read through NVML (``pip install "pyclperf[nvml]"``) while a point's timed
launches run, and kept in its row.

A figure taken while the GPU throttles, below its maximum clocks, or while another process uses
it, is not the device's figure: such rows carry a ``conditions`` flag saying which, and reports
say so. Devices NVML cannot describe (not NVIDIA, or no pynvml) get no columns and no flag:
nothing is known, nothing is claimed.

The readings are taken by a thread of their own (one per device, gone after IDLE_S without a
point), asked for as a point's timed launches begin: the launches and the readings run side by
side, and the point waits for NVML only where NVML is slower than the point's launches. A row's
``conditions_during`` says whether its readings were done by the time its launches were
(False: NVML took longer than the point, so part of them was read just after it).
"""

from __future__ import annotations

import os
import queue
import threading
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
# The reading thread ends after this long without a point to read for (a new one starts with the
# next point): a device no longer measured keeps no thread.
IDLE_S = 5.0

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
    """NVML readings of one device during each point (see begin() and end())."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self.nvml = pynvml
        self.handle = handle
        self.max_sm_mhz = self._ask(lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
        self.bits = _reason_bits(pynvml)
        self._start: tuple[float, _Reading] | None = None  # the point in progress
        # False until a point lasts ENERGY_MIN_S: a sweep of short points then never pays for
        # the counter, and a sweep of long ones misses it on its first point only.
        self._points_are_long = ENERGY_MIN_S <= 0
        self._inbox: "queue.SimpleQueue[_Reading]" = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._reader: threading.Thread | None = None

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

    def new_sweep(self) -> None:
        """A sweep begins: its first point reads no energy, whatever the last sweep's points
        lasted (a long point of another run would make a short sweep's first point pay for the
        counter)."""
        self._points_are_long = ENERGY_MIN_S <= 0

    def begin(self) -> None:
        """Just before a point's timed launches: the reading thread is asked for the point's
        readings, which it takes while the launches run. The energy counter is read only while
        points last long enough for it to step (ENERGY_MIN_S): one reading costs milliseconds on
        NVIDIA's driver (3.8 ms on the H200), as much as a short point's whole measurement, and
        a short point's energy would read 0 anyway."""
        reading = _Reading(self._points_are_long)
        self._start = (time.perf_counter(), reading)
        self._post(reading)

    def end(self) -> dict[str, Any]:
        """Just after them: the row's columns, with ``conditions`` empty or naming what was
        wrong. Waits for the point's readings where NVML has not finished them (then
        ``conditions_during`` is False); the energy counter's second reading, where the point
        lasted ENERGY_MIN_S and its first was taken, is read here, after the launches."""
        if self._start is None:  # no begin(): read now
            reading = _Reading(False)
            self._take(reading)
            return self._columns(reading, during=False)
        t0, reading = self._start
        seconds = time.perf_counter() - t0
        during = reading.quick_done.acquire(blocking=False)
        if not during:
            reading.quick_done.acquire()
        self._start = None
        out = self._columns(reading, during)
        if reading.want_energy and seconds >= ENERGY_MIN_S:
            reading.energy_done.acquire()
            e0, e1 = reading.energy_mj, self._energy_mj()
            if e0 is not None and e1 is not None:
                out["energy_j"] = (e1 - e0) / 1000.0
                out["mean_power_w"] = out["energy_j"] / seconds if seconds > 0 else None
        self._points_are_long = seconds >= ENERGY_MIN_S  # the next point is likely alike
        return out

    def _columns(self, reading: "_Reading", during: bool) -> dict[str, Any]:
        if reading.error is not None:
            raise reading.error
        sm, mem, power, temp, reasons, others = reading.values
        out: dict[str, Any] = {"sm_clock_mhz": sm, "mem_clock_mhz": mem,
                               "sm_clock_max_mhz": self.max_sm_mhz,
                               "power_w": None if power is None else power / 1000.0,
                               "temperature_c": temp, "conditions_during": during}
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
        if others:
            flags.append(f"{len(others)} other process(es) on the GPU (pid {', '.join(map(str, others))})")
        out["conditions"] = "; ".join(flags)
        return out

    def _take(self, reading: "_Reading") -> None:
        """Take ``reading`` (on the reading thread): the energy counter first where it is
        wanted (the start of the point's energy), then clocks, power, temperature, throttle
        reasons and the processes on the GPU. Whatever goes wrong is handed to end()."""
        nv, h = self.nvml, self.handle
        try:
            try:
                if reading.want_energy:
                    reading.energy_mj = self._energy_mj()
            finally:
                reading.energy_done.release()
            getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
            reading.values = (
                self._ask(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                self._ask(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                self._ask(lambda: nv.nvmlDeviceGetPowerUsage(h)),
                self._ask(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                self._ask(lambda: getter(h)) if getter is not None else None,
                self._other_processes())
        except Exception as exc:  # not NVML declining a query (_ask keeps those): end() raises it
            reading.error = exc
        finally:
            reading.quick_done.release()

    def _post(self, reading: "_Reading") -> None:
        """Hand ``reading`` to the reading thread, starting one where none is running."""
        with self._guard:
            self._inbox.put(reading)
            if self._reader is None:
                self._reader = threading.Thread(target=self._serve, name="pyclperf-nvml",
                                                daemon=True)
                self._reader.start()

    def _serve(self) -> None:
        """The reading thread: readings in the order asked for, skipping any whose point has
        ended already (a point that raised before end()); gone after IDLE_S without one."""
        while True:
            try:
                reading = self._inbox.get(timeout=IDLE_S)
            except queue.Empty:
                with self._guard:
                    if self._inbox.empty():
                        self._reader = None
                        return
                continue
            current = self._start
            if current is None or current[1] is not reading:
                reading.skip()  # its point raised, and the next one has begun
                continue
            self._take(reading)

    def _other_processes(self) -> list[int]:
        """Processes computing on this GPU other than this one, its parent and its own worker
        processes (a supervised sweep's worker, the sweep itself, warm workers kept idle)."""
        mine = {os.getpid(), os.getppid(), *own_processes()}
        found = self._ask(lambda: self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)) or []
        return sorted({int(p.pid) for p in found if int(getattr(p, "pid", -1)) not in mine})


def _latch() -> threading.Lock:
    """A lock held from the start: released once, by the thread that has done the thing."""
    lock = threading.Lock()
    lock.acquire()
    return lock


class _Reading:
    """One point's NVML readings, taken on the reading thread; end() waits on its latches."""

    __slots__ = ("want_energy", "energy_mj", "values", "error", "energy_done", "quick_done")

    def __init__(self, want_energy: bool) -> None:
        self.want_energy = want_energy
        self.energy_mj: float | None = None
        # SM clock, memory clock, power (mW), temperature, throttle reasons, other processes.
        self.values: tuple[Any, ...] = (None, None, None, None, None, [])
        self.error: Exception | None = None
        self.energy_done = _latch()
        self.quick_done = _latch()

    def skip(self) -> None:
        """Nothing will be read: whoever waits goes on."""
        self.energy_done.release()
        self.quick_done.release()


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
