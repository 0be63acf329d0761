"""Theoretical bandwidth ceilings: device memory (Guide 2.2.1) and the PCIe link.

DRAM: memory clock (MHz) x 1e6 x 2 (double data rate) x bus width (bits) / 8 / 1e9 GB/s.
PCIe, per direction: transfer rate (GT/s) x lanes x line-code efficiency / 8 GB/s.

The figures come from the user where given, else from NVML (``pip install pyclperf[nvml]``) on
an NVIDIA device, else they are unknown: a clear sentence, never an exception.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import _core

# Generation -> (GT/s per lane, line-code efficiency): 8b/10b up to gen 2, 128b/130b from gen 3.
PCIE_LINKS: dict[int, tuple[float, float]] = {
    1: (2.5, 8 / 10),
    2: (5.0, 8 / 10),
    3: (8.0, 128 / 130),
    4: (16.0, 128 / 130),
    5: (32.0, 128 / 130),
    6: (64.0, 128 / 130),
}

HINT_DRAM = ("install pyclperf[nvml], or give the figure: --peak-gbps on the command line, peak_gbps= "
             "(or memory_clock_mhz= and bus_width_bits=) in Python")
HINT_PCIE = "install pyclperf[nvml] or pass pcie_gbps="


def dram_bandwidth(memory_clock_mhz: float, bus_width_bits: int) -> float:
    """Guide 2.2.1: e.g. 1107 MHz x 2 x 512 bit / 8 = 141.7 GB/s (GTX 280)."""
    _positive(memory_clock_mhz=memory_clock_mhz, bus_width_bits=bus_width_bits)
    return memory_clock_mhz * 1e6 * 2 * bus_width_bits / 8 / 1e9


def pcie_bandwidth(generation: int, lanes: int) -> float:
    """Per-direction PCIe bandwidth, e.g. gen 5 x16: 32 x 16 x 128/130 / 8 = 63.0 GB/s."""
    if generation not in PCIE_LINKS:
        raise _core.InvalidArgumentError(
            f"unknown PCIe generation {generation}; known: {sorted(PCIE_LINKS)}")
    _positive(lanes=lanes)
    rate, efficiency = PCIE_LINKS[generation]
    return rate * lanes * efficiency / 8


@dataclass(frozen=True)
class PeakBandwidth:
    """The two ceilings and where each came from (``None`` with the reason when unknown)."""

    dram_gbps: float | None
    pcie_gbps: float | None
    dram_source: str
    pcie_source: str
    readings: dict[str, Any] = field(default_factory=dict)  # what NVML said, for the record

    def gbps(self, kind: str | None) -> float | None:
        """The ceiling for "dram" or "pcie"; None for anything else or when unknown."""
        return {"dram": self.dram_gbps, "pcie": self.pcie_gbps}.get(kind or "")

    def as_meta(self) -> dict[str, Any]:
        return asdict(self)


# (vendor, platform, device name) -> (the pynvml module asked, its readings). Maximum clocks, bus
# width and link are fixed properties of a board, and nvmlInit + nvmlShutdown cost tens of ms
# per call on a multi-GPU host: pyclperf.run asks once per experiment. The module is kept and
# compared by identity, so a different pynvml (a test's stand-in) is asked afresh.
_NVML_CACHE: dict[tuple[str, str, str], tuple[Any, dict[str, Any]]] = {}


# Set once an import of pynvml found nothing on the path: searching the path again costs a few
# hundred us, on every pyclperf.run. A module put in sys.modules later is still found.
_PYNVML_ABSENT = False


def _pynvml() -> Any:
    global _PYNVML_ABSENT
    if "pynvml" not in sys.modules and _PYNVML_ABSENT:
        return None
    try:
        import pynvml
    except ImportError:
        _PYNVML_ABSENT = _PYNVML_ABSENT or "pynvml" not in sys.modules
        return None
    return pynvml


def nvml_readings(info: Any) -> dict[str, Any] | str:
    """Memory clock, bus width and PCIe link of the NVML device named like ``info``; or a
    sentence saying why there are none."""
    pynvml = _pynvml()
    if pynvml is None:
        return "NVML is not available (pynvml is not installed)"
    if "NVIDIA" not in f"{info.vendor} {info.platform_name}".upper():
        return f"'{info.name}' is not an NVIDIA device, so NVML cannot describe it"
    key = (str(info.vendor), str(info.platform_name), str(info.name))
    cached = _NVML_CACHE.get(key)
    if cached is not None and cached[0] is pynvml:
        return dict(cached[1])
    readings = _ask_nvml(pynvml, info)
    if isinstance(readings, dict):  # a failure (a sentence) is asked again next time
        _NVML_CACHE[key] = (pynvml, dict(readings))
    return readings


def _ask_nvml(pynvml: Any, info: Any) -> dict[str, Any] | str:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML failed to start: {exc}"
    try:
        handle, why = _nvml_device(pynvml, info.name)
        if handle is None:
            return why
        calls = {
            "memory_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "bus_width_bits": lambda: pynvml.nvmlDeviceGetMemoryBusWidth(handle),
            "pcie_generation": lambda: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle),
            "pcie_lanes": lambda: pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle),
        }
        readings: dict[str, Any] = {}
        for key, call in calls.items():
            try:
                readings[key] = int(call())
            except pynvml.NVMLError as exc:  # one query unsupported: the others still count
                readings[key] = None
                readings[f"{key}_error"] = str(exc)
        return readings
    finally:
        pynvml.nvmlShutdown()


def _nvml_device(pynvml: Any, name: str) -> tuple[Any, str]:
    """(handle, "") of the GPU called ``name``, or (None, why not). With several of that name,
    the first: identical boards share memory clock, bus and link."""
    names = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        nvml_name = pynvml.nvmlDeviceGetName(handle)
        nvml_name = nvml_name.decode() if isinstance(nvml_name, bytes) else str(nvml_name)
        if nvml_name.strip() == name.strip():
            return handle, ""
        names.append(nvml_name)
    return None, f"no NVML device is named '{name}' (NVML sees: {', '.join(names) or 'none'})"


def theoretical(
    ctx: Any = None,
    *,
    peak_gbps: float | None = None,
    memory_clock_mhz: float | None = None,
    bus_width_bits: int | None = None,
    pcie_gbps: float | None = None,
) -> PeakBandwidth:
    """The device's theoretical DRAM and PCIe bandwidth (GB/s); user figures win over NVML.

    ``ctx`` is a Context or a DeviceInfo (default: the default device). ``peak_gbps`` gives the
    DRAM ceiling outright; ``memory_clock_mhz`` with ``bus_width_bits`` gives it by the Guide's
    formula; ``pcie_gbps`` gives the per-direction link ceiling.
    """
    _positive(peak_gbps=peak_gbps, memory_clock_mhz=memory_clock_mhz,
              bus_width_bits=bus_width_bits, pcie_gbps=pcie_gbps)
    if (memory_clock_mhz is None) != (bus_width_bits is None):
        raise _core.InvalidArgumentError(
            "give memory_clock_mhz and bus_width_bits together (or peak_gbps alone)")
    info = _device_info(ctx)
    need_nvml = (peak_gbps is None and memory_clock_mhz is None) or pcie_gbps is None
    nvml = nvml_readings(info) if need_nvml else {}
    readings = nvml if isinstance(nvml, dict) else {}
    why = nvml if isinstance(nvml, str) else ""

    dram: float | None
    if peak_gbps is not None:
        dram, dram_source = float(peak_gbps), "user: peak_gbps"
    elif memory_clock_mhz is not None and bus_width_bits is not None:
        dram = dram_bandwidth(memory_clock_mhz, bus_width_bits)
        dram_source = f"user: {memory_clock_mhz:g} MHz x 2 x {bus_width_bits} bit / 8"
    elif readings.get("memory_clock_mhz") and readings.get("bus_width_bits"):
        dram = dram_bandwidth(readings["memory_clock_mhz"], readings["bus_width_bits"])
        dram_source = (f"NVML: {readings['memory_clock_mhz']} MHz x 2 x "
                       f"{readings['bus_width_bits']} bit / 8")
    else:
        dram = None
        dram_source = f"unknown ({why or 'NVML gave no memory clock or bus width'}; {HINT_DRAM})"

    pcie: float | None
    if pcie_gbps is not None:
        pcie, pcie_source = float(pcie_gbps), "user: pcie_gbps"
    elif readings.get("pcie_generation") in PCIE_LINKS and readings.get("pcie_lanes"):
        gen, lanes = readings["pcie_generation"], readings["pcie_lanes"]
        pcie = pcie_bandwidth(gen, lanes)
        pcie_source = f"NVML: PCIe gen {gen} x{lanes}"
    else:
        pcie = None
        pcie_source = f"unknown ({why or 'NVML gave no PCIe link'}; {HINT_PCIE})"
    return PeakBandwidth(dram, pcie, dram_source, pcie_source, readings)


def _device_info(ctx: Any) -> Any:
    if ctx is None:
        from .devices import select_device

        return select_device(None)
    return getattr(ctx, "info", ctx)


def _positive(**values: float | None) -> None:
    for name, v in values.items():
        if v is not None and not v > 0:
            raise _core.InvalidArgumentError(f"{name} must be a positive number, got {v!r}")
