"""Cache levels from the knees of the read-bandwidth and load-latency curves.

A knee is where a curve leaves one plateau for the next (knees.py); it is not always a cache
level of its own. An H200's L2 is two partitions of 30 MB: the read curve falls once at 32 MiB
(reads start reaching the far partition, still 1.5x DRAM's rate) and again at 52 MiB (the L2's
capacity, down to DRAM). Calling the two knees L3 and L4 would misname both. So:

1. Knees of the two curves within ``MATCH`` of each other in size are one boundary
   (knees.match), sized by the bandwidth knee where there is one.
2. The last boundary is where the curves finally reach their DRAM plateau: the last-level
   cache's size. Every earlier boundary leads to a plateau still above DRAM's.
3. A boundary whose next one lies within ``SUBSTEP`` in size is a step inside the level that
   the next one ends (a partition, a slice), not a level: real hierarchies grow by 4x or more
   per level (a CPU's 48 KiB, 2 MiB, 32 MiB; a GPU's 256 KiB and 50 MiB), while a cache split
   in two shows its first step at about half its capacity. The read bandwidth after it must
   stay well above the DRAM plateau (``knees.MIN_STEP``), or it is the level's end after all.
4. Names say what the measurement supports: levels are numbered from the smallest (``L1``,
   ``L2``, ...), the last is ``LLC`` (also when it is the only one); each carries a ``label``: "L1/local-cache-sized" for a
   level no larger than ``PER_UNIT_MAX`` (the size class of a compute unit's own cache) before
   the last, "intermediate cache level" for a larger one, "last-level cache" for the last; its
   steps are listed as "step inside the ...".

Pure arithmetic on knees: tests drive it with synthetic curves shaped like a device's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from . import knees as K

MATCH = 2.5  # a bandwidth knee and a latency knee this close in size are one boundary
SUBSTEP = 2.0  # a boundary this close below the next is a step inside that level
PER_UNIT_MAX = 1 << 20  # at most this: the size class of a compute unit's own cache

LAST_LABEL = "last-level cache"
SMALL_LABEL = "L1/local-cache-sized"
MIDDLE_LABEL = "intermediate cache level"


@dataclass(frozen=True)
class Boundary:
    """A bandwidth knee and a latency knee that are one boundary between levels (either may be
    missing)."""

    bandwidth: K.Knee | None
    latency: K.Knee | None

    @property
    def knee(self) -> K.Knee:
        """The knee that sizes the boundary: the bandwidth one where there is one."""
        used = self.bandwidth or self.latency
        assert used is not None
        return used

    @property
    def size(self) -> float:
        return self.knee.size

    @property
    def found_from(self) -> list[str]:
        return [k for k, v in (("bandwidth", self.bandwidth), ("latency", self.latency)) if v]


@dataclass(frozen=True)
class Level:
    """One cache level: ``end`` is the boundary where it ends (its capacity), ``steps`` the
    boundaries inside it, smallest first; ``first`` the boundary whose plateau before it is the
    level's best (the first step, else the end)."""

    name: str
    label: str
    last: bool
    end: Boundary
    steps: tuple[Boundary, ...] = field(default_factory=tuple)

    @property
    def first(self) -> Boundary:
        return self.steps[0] if self.steps else self.end


def boundaries(bandwidth: Sequence[K.Knee], latency: Sequence[K.Knee],
               within: float = MATCH) -> list[Boundary]:
    """The knees of both curves as boundaries, smallest first (step 1 of the docstring)."""
    return [Boundary(b, l) for b, l in K.match(bandwidth, latency, within=within)]


def _above_dram(boundary: Boundary, dram_read: float | None, dram_latency: float | None,
                min_step: float) -> bool:
    """Whether the plateau after a boundary is still well above DRAM's (by ``min_step``): the
    read bandwidth's where the boundary shows in it, else the load latency's (lower). An H200's
    dependent loads from the far L2 partition take about as long as DRAM's, while its reads
    still run 1.5x faster: the bandwidth tells the capacity. Unknown DRAM figures count as
    above."""
    b, l = boundary.bandwidth, boundary.latency
    if b is not None:
        return dram_read is None or b.after.value >= min_step * dram_read
    assert l is not None
    return dram_latency is None or l.after.value * min_step <= dram_latency


def levels(bandwidth: Sequence[K.Knee], latency: Sequence[K.Knee], *,
           dram_read: float | None = None, dram_latency: float | None = None,
           substep: float = SUBSTEP, min_step: float = K.MIN_STEP,
           per_unit_max: float = PER_UNIT_MAX) -> list[Level]:
    """The cache levels, smallest first (steps 2 to 4 of the docstring). ``dram_read`` and
    ``dram_latency`` are the curves' DRAM plateaus (default: the plateau after the last knee of
    each curve)."""
    if substep < 1:
        raise ValueError(f"substep must be at least 1, got {substep}")
    if dram_read is None and bandwidth:
        dram_read = max(bandwidth, key=lambda k: k.size).after.value
    if dram_latency is None and latency:
        dram_latency = max(latency, key=lambda k: k.size).after.value
    found = boundaries(bandwidth, latency)
    groups: list[list[Boundary]] = []
    pending: list[Boundary] = []
    for i, bound in enumerate(found):
        pending.append(bound)
        nxt = found[i + 1] if i + 1 < len(found) else None
        inside = (nxt is not None and nxt.size <= substep * bound.size
                  and _above_dram(bound, dram_read, dram_latency, min_step))
        if not inside:
            groups.append(pending)
            pending = []
    out = []
    for i, group in enumerate(groups):
        last = i == len(groups) - 1
        end = group[-1]
        label = LAST_LABEL if last else SMALL_LABEL if end.size <= per_unit_max else MIDDLE_LABEL
        name = "LLC" if last else f"L{i + 1}"
        out.append(Level(name, label, last, end, tuple(group[:-1])))
    return out


__all__ = ["Boundary", "LAST_LABEL", "Level", "MATCH", "MIDDLE_LABEL", "PER_UNIT_MAX",
           "SMALL_LABEL", "SUBSTEP", "boundaries", "levels"]
