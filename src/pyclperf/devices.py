"""Device listing and selection: by flat index, "platform:device", name substring or type."""

from __future__ import annotations

import os
from typing import Union

from . import _core

DeviceSpec = Union[None, int, str, _core.DeviceInfo]

ENV_VAR = "PYCLPERF_DEVICE"

# A kernel with nothing to limit it: its preferred work-group multiple
# (CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE) is the device's natural granularity, the warp
# or wavefront on a GPU. OpenCL only reports it per kernel, so device summaries build this one.
PROBE_SOURCE = "__kernel void probe(__global int* out) { out[get_global_id(0)] = 0; }"


def list_devices() -> list[_core.DeviceInfo]:
    """Every OpenCL device, in platform order; the position in this list is the flat index."""
    from ._icd import restore_environment

    devices = list(_core.list_devices())
    restore_environment()
    return devices


def _describe_all(devices: list[_core.DeviceInfo]) -> str:
    if not devices:
        return "no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)"
    return "available: " + "; ".join(
        f"[{i}] {d.platform_index}:{d.device_index} {d.type} '{d.name}'"
        for i, d in enumerate(devices)
    )


def _match(spec: str, devices: list[_core.DeviceInfo]) -> _core.DeviceInfo | None:
    text = spec.strip()
    if text.isdigit():
        i = int(text)
        return devices[i] if i < len(devices) else None
    if ":" in text:
        p, _, d = text.partition(":")
        if p.strip().isdigit() and d.strip().isdigit():
            for dev in devices:
                if (dev.platform_index, dev.device_index) == (int(p), int(d)):
                    return dev
            return None
    low = text.lower()
    if low in ("gpu", "cpu", "accelerator"):
        return next((d for d in devices if low.upper() in d.type), None)
    for dev in devices:
        haystack = f"{dev.name} {dev.platform_name} {dev.vendor}".lower()
        if low in haystack:
            return dev
    return None


def default_device(devices: list[_core.DeviceInfo] | None = None) -> _core.DeviceInfo:
    """The first GPU, else the first CPU (PoCL), else the first device."""
    devices = list_devices() if devices is None else devices
    if not devices:
        raise _core.InvalidArgumentError(_describe_all(devices))
    for kind in ("GPU", "CPU"):
        for d in devices:
            if kind in d.type:
                return d
    return devices[0]


def select_device(spec: DeviceSpec = None) -> _core.DeviceInfo:
    """Resolve a device spec; None means $PYCLPERF_DEVICE if set, else default_device().

    A spec is a flat index (int or digits), "platform:device", "gpu"/"cpu", or a
    case-insensitive substring of the device, platform or vendor name.
    """
    if isinstance(spec, _core.DeviceInfo):
        return spec
    devices = list_devices()
    source = "device"
    if spec is None:
        spec = os.environ.get(ENV_VAR) or None
        source = ENV_VAR
        if spec is None:
            return default_device(devices)
    if isinstance(spec, bool) or not isinstance(spec, (int, str)):
        raise TypeError(f"device must be an index, a string or a DeviceInfo, not {type(spec).__name__}")
    if isinstance(spec, int):
        if 0 <= spec < len(devices):
            return devices[spec]
        found = None
    else:
        found = _match(spec, devices)
    if found is None:
        raise _core.InvalidArgumentError(
            f"{source} {spec!r} matches no OpenCL device; {_describe_all(devices)}"
        )
    return found


def device_summary(d: _core.DeviceInfo) -> dict[str, object]:
    """The device's properties as a plain dict (for tables, results metadata and JSON)."""
    keys = [
        "platform_index", "device_index", "platform_name", "platform_version", "name", "vendor",
        "type", "version", "driver_version", "opencl_c_version", "compute_units", "max_clock_mhz",
        "address_bits", "global_mem_bytes", "global_mem_cache_bytes", "global_mem_cacheline_bytes",
        "max_alloc_bytes", "local_mem_bytes", "local_mem_is_dedicated", "constant_mem_bytes",
        "max_work_group_size", "max_work_item_sizes", "profiling_timer_resolution_ns",
        "mem_base_addr_align_bits", "image_support", "host_unified_memory",
    ]
    out: dict[str, object] = {k: getattr(d, k) for k in keys}
    out["max_work_item_sizes"] = list(d.max_work_item_sizes)
    if d.nv_compute_capability_major >= 0:
        out["nv_compute_capability"] = f"{d.nv_compute_capability_major}.{d.nv_compute_capability_minor}"
        out["nv_registers_per_block"] = d.nv_registers_per_block
        out["nv_warp_size"] = d.nv_warp_size
    return out
