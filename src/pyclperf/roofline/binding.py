"""The memory roof that binds a kernel: the smallest cache level that holds its working set and
has a roof for its traffic, else DRAM's read, write or copy figure (explain and the audit of
results files both place kernels by it)."""

from __future__ import annotations

from .memory import size_text
from .profiling import Profile, Roof

SPILL = 1.1  # past the last cache level, a read curve this far above its DRAM end is the cache's


def level_roof(roofs: list[Roof], writes: bool) -> Roof | None:
    """The roof of one cache level (its roofs: read, and copy where measured) for a kernel that
    reads, or writes too: a read alone is held against the level's read figure; reads and
    writes against the higher of its read and copy figures (a level may serve both together
    faster than reads alone, or the copy may run slower than a read: either way no kernel of
    that traffic should beat the higher one). None where the level has no roof for it."""
    fit = [r for r in roofs if r.traffic == "read" or (writes and r.traffic == "copy")]
    return max(fit, key=lambda r: r.value, default=None)


def memory_roof(profile: Profile, working_set: int, reads: bool, writes: bool) -> tuple[Roof, str]:
    """The memory roof for a working set: the smallest cache level that holds it and has a roof
    for the kernel's traffic (level_roof: read, or the higher of read and copy where it
    writes); past the last, that level still while the profile's read curve at the working
    set's size runs above the curve's own end, where it reads from DRAM (a cache keeps part of a
    set somewhat larger than itself, the more so a CPU's last level shared with other cores);
    else DRAM read, write or copy by what the kernel does."""
    roofs = profile.memory_roofs()
    by_size: dict[int, list[Roof]] = {}
    for r in roofs:
        if r.kind == "cache" and r.size_bytes:
            by_size.setdefault(r.size_bytes, []).append(r)
    caches = [r for r in (level_roof(found, writes) for _, found in sorted(by_size.items())) if r is not None]
    for r in caches:
        if r.size_bytes and working_set <= r.size_bytes:
            return r, f"the working set, {size_text(working_set)}, fits {_level_name(r)} ({size_text(r.size_bytes)})" + _copy_note(r)
    want = "DRAM copy" if reads and writes else "DRAM write" if writes else "DRAM read"
    dram = {r.name: r for r in roofs if r.kind == "dram"}
    roof = dram.get(want) or next(iter(dram.values()), None)
    if roof is None:
        raise ValueError(f"the profile of {profile.device} has no verified DRAM figure: "
                         "measure it again (pyclperf profile --refresh)")
    if caches:
        last = caches[-1]
        size, rate, tail = profile.read_curve_at(working_set)
        if rate is not None and tail and rate > SPILL * tail:
            return last, (f"the working set, {size_text(working_set)}, is larger than {_level_name(last)} "
                          f"({size_text(last.size_bytes or 0)}), which still serves part of it: the "
                          f"read curve ran at {rate:,.1f} GB/s at {size_text(size)}, {rate / tail:.2f}x "
                          "its rate from DRAM" + _copy_note(last))
    beyond = f"larger than {_level_name(caches[-1])} ({size_text(caches[-1].size_bytes or 0)})" if caches else \
        "no cache level was found"
    return roof, f"the working set, {size_text(working_set)}, is {beyond}: {roof.name} binds"


def _level_name(roof: Roof) -> str:
    return roof.name.removesuffix(" copy")


def _copy_note(roof: Roof) -> str:
    return ("; it reads and writes, and the level's copy runs faster than its read" if roof.traffic == "copy"
            else "")


__all__ = ["SPILL", "level_roof", "memory_roof"]
