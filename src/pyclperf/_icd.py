"""Make NVIDIA's OpenCL platform visible when its driver is installed but not registered.

Some machines (containers with the NVIDIA driver mounted in) have libnvidia-opencl but no
/etc/OpenCL/vendors/nvidia.icd, so the ICD loader never sees the GPU. ocl-icd also loads the
libraries named in OCL_ICD_FILENAMES, so pointing it at the driver's library before the first
OpenCL call makes the platform appear beside the registered ones. This must run before
``pyclperf._core`` is imported. ``PYCLPERF_NO_ICD_DISCOVERY=1`` turns it off.
"""

from __future__ import annotations

import glob
import os

_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1",
    "/usr/lib/libnvidia-opencl.so.1",
    "/usr/lib/libnvidia-opencl.so",
    "/usr/lib64/libnvidia-opencl.so.1",
    "/usr/local/nvidia/lib64/libnvidia-opencl.so.1",
    "/usr/local/nvidia/lib/libnvidia-opencl.so.1",
)


def _registered_libraries(vendors_dir: str) -> list[str]:
    names = []
    for icd in sorted(glob.glob(os.path.join(vendors_dir, "*.icd"))):
        try:
            with open(icd, encoding="utf-8") as f:
                names.append(f.readline().strip())
        except OSError:
            continue
    return names


def configure(environ: dict[str, str] | None = None, vendors_dir: str | None = None) -> str:
    """Set OCL_ICD_FILENAMES where useful; return a sentence saying what was done."""
    env = os.environ if environ is None else environ
    if env.get("PYCLPERF_NO_ICD_DISCOVERY"):
        return "ICD discovery disabled (PYCLPERF_NO_ICD_DISCOVERY)"
    if env.get("OCL_ICD_FILENAMES"):
        return f"OCL_ICD_FILENAMES set by the user: {env['OCL_ICD_FILENAMES']}"
    vendors = vendors_dir or env.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors"
    registered = _registered_libraries(vendors)
    if any("nvidia" in lib.lower() for lib in registered):
        return f"NVIDIA registered in {vendors}"
    for lib in _CANDIDATES:
        if os.path.exists(lib):
            env["OCL_ICD_FILENAMES"] = lib
            return f"added unregistered NVIDIA driver {lib} through OCL_ICD_FILENAMES"
    return f"ICDs from {vendors}: " + (", ".join(registered) or "none")


def restore_environment() -> None:
    """Put OCL_ICD_FILENAMES back as it was before OpenCL loaded.

    NVIDIA's OpenCL library removes itself from OCL_ICD_FILENAMES in the process environment
    once loaded (seen with driver 580 on an H200), so child processes, a second sweep or a
    notebook kernel started from this process would no longer see the GPU.
    """
    if _ORIGINAL is not None:
        # Assigning calls putenv even when os.environ (a copy) already holds the value: the
        # driver changed the C environment, not Python's copy.
        os.environ["OCL_ICD_FILENAMES"] = _ORIGINAL


NOTE = configure()
_ORIGINAL = os.environ.get("OCL_ICD_FILENAMES")
