"""Device listing and selection: by flat index, "platform:device", name substring or type.

PyOpenCL's variables are honoured as fallbacks, with PyOpenCL's own syntax (which differs from
pyclperf's: there a lone number is a platform, not a flat device index):

* ``PYOPENCL_CTX`` (when ``PYCLPERF_DEVICE`` is unset) answers "which platform, which device":
  ``"0:1"`` is platform 0, device 1; ``"0"`` the first device of platform 0; each answer is an
  index or a case-insensitive substring (``"nvi"``, ``"portable:cpu"``).
* ``PYOPENCL_TEST`` (when ``PYCLPERF_TEST_DEVICES`` is unset, for the pytest plugin) lists
  entries separated by ";": ``"platform"`` takes all its devices, ``"platform:dev,dev"`` some.
"""

from __future__ import annotations

import os
import re
from typing import Sequence, TypeVar, Union

from .. import _core

DeviceSpec = Union[None, int, str, _core.DeviceInfo]
T = TypeVar("T")

ENV_VAR = "PYCLPERF_DEVICE"
PYOPENCL_CTX = "PYOPENCL_CTX"

# A kernel with nothing to limit it: its preferred work-group multiple
# (CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE) is the device's natural granularity, the warp
# or wavefront on a GPU. OpenCL only reports it per kernel, so device summaries build this one.
PROBE_SOURCE = "__kernel void probe(__global int* out) { out[get_global_id(0)] = 0; }"


def list_devices() -> list[_core.DeviceInfo]:
    """Every OpenCL device, in platform order; the position in this list is the flat index."""
    from .icd import restore_environment

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


def _pick(candidates: Sequence[tuple[str, T]], answer: str, what: str, var: str) -> T:
    """PyOpenCL's rule for one answer: a number is a position, anything else the first
    candidate whose text holds it (case-insensitive)."""
    answer = answer.strip()
    if answer.isdigit():
        if int(answer) < len(candidates):
            return candidates[int(answer)][1]
    else:
        for text, obj in candidates:
            if answer.lower() in text.lower():
                return obj
    raise _core.InvalidArgumentError(f"{var}: no {what} matches {answer!r}")


def _platforms(devices: list[_core.DeviceInfo]) -> list[tuple[str, list[_core.DeviceInfo]]]:
    """[(platform name and vendor, its devices)] in platform order."""
    by_index: dict[int, list[_core.DeviceInfo]] = {}
    for d in devices:
        by_index.setdefault(d.platform_index, []).append(d)
    return [(f"{devs[0].platform_name} {devs[0].vendor}", devs) for _, devs in sorted(by_index.items())]


def _device_choices(devs: list[_core.DeviceInfo]) -> list[tuple[str, _core.DeviceInfo]]:
    return [(f"{d.name} {d.vendor}", d) for d in devs]


def pyopencl_ctx(spec: str, devices: list[_core.DeviceInfo], var: str = PYOPENCL_CTX) -> _core.DeviceInfo:
    """The device PYOPENCL_CTX names: "platform[:device]", each an index or a substring; with
    no device answer, the platform's first device (what PyOpenCL does when not interactive)."""
    answers = spec.split(":")
    if len(answers) > 2:
        raise _core.InvalidArgumentError(f"{var}={spec!r}: expected 'platform' or 'platform:device'")
    if not answers[0].strip():  # "" or ":1": PyOpenCL takes the first platform
        answers[0] = "0"
    devs = _pick(_platforms(devices), answers[0], "platform", var)
    if len(answers) == 1 or not answers[1].strip():
        return devs[0]
    return _pick(_device_choices(devs), answers[1], "device", var)


def pyopencl_test(spec: str, devices: list[_core.DeviceInfo], var: str = "PYOPENCL_TEST") -> list[_core.DeviceInfo]:
    """The devices PYOPENCL_TEST lists: entries separated by ";", each "platform" (all of its
    devices) or "platform:device,device"; every part an index or a substring."""
    chosen: list[_core.DeviceInfo] = []
    for entry in filter(None, (e.strip() for e in spec.split(";"))):
        plat, sep, devs_spec = entry.partition(":")
        devs = _pick(_platforms(devices), plat, "platform", var)
        if not sep:
            chosen.extend(devs)
            continue
        for answer in devs_spec.split(","):
            chosen.append(_pick(_device_choices(devs), answer, "device", var))
    return chosen


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
    """Resolve a device spec; None means $PYCLPERF_DEVICE if set, else $PYOPENCL_CTX (in
    PyOpenCL's syntax), else default_device().

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
            ctx_spec = os.environ.get(PYOPENCL_CTX)
            if ctx_spec is None:
                return default_device(devices)
            try:
                return pyopencl_ctx(ctx_spec, devices)
            except _core.InvalidArgumentError as exc:
                raise _core.InvalidArgumentError(f"{exc}; {_describe_all(devices)}") from None
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


# --- what OpenCL C a device claims --------------------------------------------------------
# What OpenCL C a device claims: its versions, its optional features and extensions.
#
# A variant that needs a language feature (work-group collectives, sub-groups, shuffles) runs only
# where the device claims it; a driver that compiles such code anyway, on a device that does not
# claim it, may produce wrong results (a work-group reduction that summed 8 lanes was seen), so a
# successful build is not enough. OpenCL 3.0 devices list their versions and features
# (CL_DEVICE_OPENCL_C_ALL_VERSIONS, CL_DEVICE_OPENCL_C_FEATURES); older ones give one version
# string (CL_DEVICE_OPENCL_C_VERSION), and every feature of that version is implied.

_VERSION = re.compile(r"OpenCL C (\d+)\.(\d+)")


def c_versions(info: _core.DeviceInfo) -> set[tuple[int, int]]:
    """Every OpenCL C version the device accepts, as (major, minor)."""
    found = {tuple(int(x) for x in v.split(".")[:2]) for v in getattr(info, "opencl_c_all_versions", [])}
    m = _VERSION.search(info.opencl_c_version or "")
    if m:
        found.add((int(m.group(1)), int(m.group(2))))
    return {v for v in found if len(v) == 2}  # type: ignore[misc]


def claims(info: _core.DeviceInfo, feature: str) -> bool:
    """Whether the device claims an OpenCL C feature (``__opencl_c_...``): listed by a 3.0
    device, or implied by an OpenCL C 2.x version it accepts (2.0 made every one of today's
    optional 3.0 features mandatory, sub-groups aside, which came with 2.1)."""
    if feature in getattr(info, "opencl_c_features", []):
        return True
    versions = c_versions(info)
    if feature == "__opencl_c_subgroups":
        return any((2, 1) <= v < (3, 0) for v in versions)
    return any((2, 0) <= v < (3, 0) for v in versions)


def build_std(info: _core.DeviceInfo) -> list[str]:
    """-cl-std options for code that needs OpenCL C 2.0 or later features, highest first: only
    the versions the device claims."""
    versions = c_versions(info)
    return [f"-cl-std=CL{major}.{minor}" for major, minor in sorted(versions, reverse=True)
            if (major, minor) >= (2, 0)]


def missing(info: _core.DeviceInfo, needs: dict[str, str]) -> str:
    """Why a variant cannot run here ("" when it can): ``needs`` maps a requirement to its
    words; a requirement is a feature (``__opencl_c_...``), an extension (``cl_...``), or
    several alternatives joined by ``|``."""
    why = []
    for requirement, words in needs.items():
        options = requirement.split("|")
        if not any(claims(info, o) if o.startswith("__opencl_c") else info.has_extension(o)
                   for o in options):
            why.append(f"{words} ({' or '.join(options)})")
    if not why:
        return ""
    return (f"the device does not claim {' nor '.join(why)}: "
            f"{info.opencl_c_version}, features {list(getattr(info, 'opencl_c_features', []))}")
