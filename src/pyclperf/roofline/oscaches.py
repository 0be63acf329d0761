"""The caches the operating system says a CPU has, to hold a CPU device's measured levels against.

On Linux every logical CPU lists its caches under ``/sys/devices/system/cpu/cpuN/cache/indexM``
(level, type, size, and the CPUs that share that instance); where that folder is missing,
``lscpu --json --caches`` says the same per cache (one instance's size and all instances'). Data
and unified caches count; instruction caches hold no working set.

A CPU device spreads a kernel's work-groups over its compute units (one thread per CPU), so a
working set read by all of them fills one instance of a private cache per CPU and one of a shared
cache per group of CPUs: ``spanned`` is how many instances a device of ``units`` compute units
reaches, and ``device_bytes`` the capacity they add up to, which is where the device-wide read
curve leaves that level. One work-item's dependent-load chase sees one instance.

The OS's figures are what the hardware claims. A virtual machine's CPU (its flags say
``hypervisor``) is told the host's caches, and the last level is shared with the host's other
guests; ``virtual`` says so, and the profile reports what it measured beside what the OS says.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

SYSFS = Path("/sys/devices/system/cpu")
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@dataclass(frozen=True)
class OsCache:
    """One cache level as the OS reports it."""

    name: str               # "L1d", "L2", "L3"
    level: int
    size_bytes: int         # one instance
    instances: int          # instances over all the CPUs the OS lists
    cpus_per_instance: int  # CPUs sharing one instance
    source: str             # "sysfs" or "lscpu"

    def spanned(self, units: int) -> int:
        """Instances a CPU device of ``units`` compute units (one thread each) reaches."""
        return max(1, min(self.instances, -(-int(units) // max(1, self.cpus_per_instance))))

    def device_bytes(self, units: int) -> int:
        """The capacity of the instances a device of ``units`` compute units reaches."""
        return self.size_bytes * self.spanned(units)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_size(text: str) -> int:
    """"48K", "2048K", "480 MiB", "32768" (bytes) as bytes; ValueError otherwise."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMG]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"not a cache size: {text!r}")
    return int(float(m.group(1)) * UNITS[m.group(2).upper()])


def cpu_count_of(listing: str) -> int:
    """CPUs in a list such as "0-3,8,10-11"."""
    count = 0
    for part in listing.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1
    return count


def _name(level: int, kind: str) -> str:
    return f"L{level}d" if kind == "Data" else f"L{level}"


def from_sysfs(root: Path = SYSFS) -> list[OsCache]:
    """Data and unified caches from sysfs, one entry per level (instances counted by their
    distinct CPU lists); [] where the folder is missing or unreadable."""
    seen: dict[tuple[int, str], set[str]] = {}
    sizes: dict[tuple[int, str], int] = {}
    for index in sorted(root.glob("cpu[0-9]*/cache/index[0-9]*")):
        try:
            kind = (index / "type").read_text().strip()
            if kind not in ("Data", "Unified"):
                continue
            level = int((index / "level").read_text())
            size = parse_size((index / "size").read_text())
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        seen.setdefault((level, kind), set()).add(shared)
        sizes[(level, kind)] = size
    out = []
    for (level, kind), lists in sorted(seen.items()):
        per = max(cpu_count_of(s) for s in lists)
        out.append(OsCache(_name(level, kind), level, sizes[(level, kind)], len(lists), per, "sysfs"))
    return out


def from_lscpu(text: str | None = None) -> list[OsCache]:
    """Data and unified caches from ``lscpu --json --caches`` (run here unless ``text`` is
    given); [] where lscpu is missing or says nothing usable."""
    if text is None:
        try:
            text = subprocess.run(["lscpu", "--json", "--caches"], capture_output=True, text=True,
                                  timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return []
    try:
        rows = json.loads(text).get("caches", [])
    except (ValueError, AttributeError):
        return []
    out = []
    for row in rows:
        try:
            kind, level = str(row["type"]), int(row["level"])
            one, total = parse_size(str(row["one-size"])), parse_size(str(row["all-size"]))
        except (KeyError, TypeError, ValueError):
            continue
        if kind not in ("Data", "Unified") or one <= 0:
            continue
        instances = max(1, total // one)
        out.append(OsCache(_name(level, kind), level, one, instances, 0, "lscpu"))
    return sorted(out, key=lambda c: c.level)


def with_cpus(caches: Sequence[OsCache], cpus: int) -> list[OsCache]:
    """lscpu's entries with the CPUs per instance its totals imply (sysfs says it directly)."""
    return [c if c.cpus_per_instance else
            OsCache(c.name, c.level, c.size_bytes, c.instances, max(1, cpus // c.instances), c.source)
            for c in caches]


def os_caches(root: Path = SYSFS) -> list[OsCache]:
    """The data and unified caches the OS reports, smallest level first ([] where it says none)."""
    found = from_sysfs(root)
    if found:
        return found
    import os

    return with_cpus(from_lscpu(), os.cpu_count() or 1)


def is_virtual(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU flags say the OS runs under a hypervisor."""
    try:
        return bool(re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo.read_text(), re.MULTILINE))
    except OSError:
        return False


__all__ = ["OsCache", "cpu_count_of", "from_lscpu", "from_sysfs", "is_virtual", "os_caches",
           "parse_size", "with_cpus"]
