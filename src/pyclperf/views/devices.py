"""``pyclperf devices``: the devices OpenCL offers, the default one, how the ICD loader was set
up (what pyclperf added: PoCL from PyPI, NVIDIA's library) and where Oclgrind is."""

from __future__ import annotations

import sys
from typing import Any


def _human_bytes(nbytes: int) -> str:
    n = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _details(d: Any) -> dict[str, object]:
    """Every property of a device, with those that need a context (a kernel build) where one
    can be made."""
    from .._core import PyclperfError
    from ..device.context import Context
    from ..device.devices import device_summary

    try:
        return Context(d).summary()
    except PyclperfError as exc:
        return {**device_summary(d), "preferred_work_group_multiple": f"unknown ({exc})"}


def print_devices(details: bool = False) -> bool:
    """Print every device (the default one starred, with ``details`` every property), how the
    ICD loader was set up and where Oclgrind is; False where there is no device at all."""
    from .._core import InvalidArgumentError
    from ..device.devices import list_devices, select_device

    devices = list_devices()
    if not devices:
        return False
    try:
        chosen = select_device(None)
    except InvalidArgumentError as exc:
        print(f"warning: {exc}", file=sys.stderr)
        chosen = None
    for i, d in enumerate(devices):
        mark = "*" if chosen is not None and (d.platform_index, d.device_index) == (
            chosen.platform_index, chosen.device_index) else " "
        print(f"{mark}[{i}] {d.platform_index}:{d.device_index} {d.type:<4} {d.name} "
              f"({d.platform_name}; {d.compute_units} CUs, {_human_bytes(d.global_mem_bytes)})")
        if details:
            for key, value in _details(d).items():
                print(f"        {key:<32} {value}")
    from ..device.icd import NOTE

    print("(* = default device)")
    # Which .icd files the loader read, and what pyclperf added (PoCL from PyPI, NVIDIA).
    print("ICD loader set-up:")
    for part in NOTE.split("; "):
        print(f"  {part}")
    _print_oclgrind()
    return True


def _print_oclgrind() -> None:
    """Where Oclgrind is, for memory checks. It is never listed as a device above: it reports
    itself as GPU|CPU|ACCELERATOR and would become the default; memcheck runs it in a child
    process whose loader sees it alone."""
    from ..device.icd import find_oclgrind

    lib = find_oclgrind()
    print("Oclgrind for memory checks (pyclperf.tuner.memcheck, in a process of its own):")
    print(f"  {lib}" if lib else "  not found: apt-get install oclgrind, or pip install "
          "'pyclperf[memcheck]', or set PYCLPERF_OCLGRIND to liboclgrind-rt-icd.so")
