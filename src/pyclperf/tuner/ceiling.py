"""The memory ceiling of a worker process: how much private memory a supervised worker may
hold, so that no configuration (a launch far past its arrays, a reference that allocates
without end, a compiler that runs away) can exhaust the machine and wake its out-of-memory
killer, which may end anyone's process.

The ceiling is a data-segment limit (RLIMIT_DATA) the worker sets on itself as it starts. Linux
counts every private writable mapping against it (the heap, NumPy's arrays, a CPU device's
buffers, thread stacks) and refuses the one that would pass it, so the worker cannot pass it;
reserved address space that holds nothing (the fences around arrays, fences.py; PoCL's and the
drivers' reservations) is not counted, which an address-space limit (RLIMIT_AS) would refuse
at once: a PoCL worker reserves about 100 GiB of it. PoCL sizes its device memory by the limit
too (a quarter of it is its largest allocation), so a buffer past it is refused as a device
limit. A refusal becomes the configuration's ``out of memory`` status (OUT_OF_MEMORY), and the
worker that ran it is replaced.

Under AddressSanitizer (make sanitize) the shadow memory the sanitizer maps as the process starts
counts as data too, tens of TiB of it with nothing behind it, so there the ceiling is taken on
top of what is mapped when the worker sets it. Some GPU drivers (NVIDIA's OpenCL) map much private
memory as they start, so that under a ceiling set as the worker starts they find no device at
all: the ceiling bounds what a configuration allocates, not the driver, so where opening the
device fails under it the worker is started again to open the device first and set the ceiling
on top of what is then mapped (tuner/worker_process.py).

By default the ceiling is DEFAULT_SHARE of the memory this machine has available when the worker
starts (MemAvailable), at least FLOOR; ``memory_limit=`` sets it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

# The default ceiling: this share of the memory available when the worker starts, at least FLOOR.
DEFAULT_SHARE = 0.75
FLOOR = 1 << 30
# What a worker that died of the ceiling printed last: Python's, the C++ library's, LLVM's and
# OpenCL's words for a refused allocation.
RAN_OUT_WORDS = ("MemoryError", "bad_alloc", "out of memory", "Cannot allocate memory",
                 "CL_OUT_OF_HOST_MEMORY", "CL_MEM_OBJECT_ALLOCATION_FAILURE")
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# The ceiling this process runs under, once apply() set it (a worker process); None elsewhere.
applied: int | None = None


def available_memory() -> int | None:
    """Bytes this machine can give without swapping: MemAvailable, else the physical memory."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def parse_limit(value: Any, what: str = "memory_limit") -> int | None:
    """``memory_limit`` as bytes: None (the default ceiling), a number of bytes, or text such
    as "512M", "2G" or "1.5GiB". ValueError, in one line that starts with ``what`` (where
    given), for anything else."""
    if value is None:
        return None
    given = f"{what}={value!r}" if what else repr(value)
    found = None if isinstance(value, (bool, int, float)) else re.fullmatch(
        r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?B)?\s*", str(value), re.I)
    if isinstance(value, bool) or not (isinstance(value, (int, float)) or found):
        raise ValueError(f"{given}: give bytes (a number) or text such as '512M', '2G' or "
                         "'1.5GiB'")
    nbytes = float(value) if found is None else float(found.group(1)) * _UNITS[found.group(2).upper()]
    if not nbytes >= 64 << 20 or nbytes > 1 << 60:  # NaN fails the first test
        raise ValueError(f"{given}: a worker needs at least 64 MiB to start")
    return int(nbytes)


def resolve(requested: int | None) -> int | None:
    """The ceiling a worker starts with: ``requested``, else DEFAULT_SHARE of the memory
    available now (at least FLOOR); None where the available memory cannot be known."""
    if requested is not None:
        return int(requested)
    available = available_memory()
    if available is None:
        return None
    return max(FLOOR, int(available * DEFAULT_SHARE))


def apply(limit: int | None, on_top_of_mapped: bool = False) -> None:
    """Set the ceiling on this process (a worker, as it starts, or once its device is open:
    ``on_top_of_mapped``, above the data mapped by then); nothing where ``limit`` is None or the
    platform has no such limit. A hard limit set from outside already lower is kept."""
    global applied
    if limit is None:
        return
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        total = limit + (mapped_data() if on_top_of_mapped else sanitizer_shadow())
        if hard != resource.RLIM_INFINITY:
            total = min(total, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (total, total))
    except (ImportError, AttributeError, OSError, ValueError):
        return
    applied = int(min(limit, total))


def mapped_data() -> int:
    """The private writable memory this process has mapped so far (what RLIMIT_DATA counts:
    VmData), 0 where it cannot be read."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def sanitizer_shadow() -> int:
    """The data mapped so far by this process where AddressSanitizer runs in it (its shadow
    memory counts against RLIMIT_DATA), else 0."""
    try:
        if "libasan" not in Path("/proc/self/maps").read_text():
            return 0
    except OSError:
        return 0
    return mapped_data()


def open_refused(spec: str, exc: BaseException) -> str:
    """Why the worker could not open ``spec`` under its ceiling, naming the ceiling as the likely
    cause (the driver's own words are often about a missing driver)."""
    said = str(exc).split("; ")[0]
    return (f"device {spec or 'default'!r} could not be opened under the worker's memory ceiling "
            f"of {human_bytes(applied or 0)} (memory_limit=), the likely cause: the driver maps "
            f"memory as it starts ({type(exc).__name__}: {said})")


def ran_out(text: str) -> bool:
    """Whether a dead worker's last words say an allocation was refused."""
    return any(word.lower() in text.lower() for word in RAN_OUT_WORDS)


def limit_note(limit: int | None = None) -> str:
    """The clause that names the ceiling, for an ``out of memory`` row's error."""
    limit = applied if limit is None else limit
    if limit is None:
        return ""
    return (f"the worker process may hold {human_bytes(limit)} (memory_limit=; by default "
            f"{DEFAULT_SHARE:.0%} of the memory available when it starts)")


def out_of_memory(cause: str, limit: int | None = None) -> str:
    """An ``out of memory`` row's error: what was refused, and the ceiling it ran into."""
    note = limit_note(limit)
    return f"{cause}; {note}" if note else cause
