"""A CPU device's cache levels: knees of both curves, held against the caches the OS reports.

A GPU's levels come from the knees and the device's own query (levels.py). A CPU device's
curves are noisier (other processes share the cores and the last cache), so both are measured on
one compute unit (passes.py's reads by one work-group, chase.py's one work-item): their knees lie
at one instance's size, as the OS reports it, whatever the other units do. So here:

1. The read curve's knees (knees.py) count only where they stand out of the spread: the step
   between the two plateaus is at least ``knees.MIN_STEP`` and larger than the two plateaus'
   own spreads together, or the plateaus do not overlap (``separate``). The read knee sizes
   the level: a stream leaves a cache all at once.
   Knees within ``MERGE`` of each other are one level's end (``merged``): the largest step of
   them stands for it, since a dip inside a level must not become a level of its own.
2. The chase must step there too (``latency_step``): its points inside the level (up to
   ``INSIDE`` x the knee) against its points past it (from ``PAST`` x the knee), each side up to
   the neighbouring read knees, by ``CHASE_STEP`` at least, and either out of their spread the
   same way or with every point inside faster than every point past (``apart``: sides that
   slope). A random walk leaves a cache gradually, and on a busy machine its plateaus slope, so
   the generic knee search finds its steps poorly; held where the read curve says the level
   ends, the step shows or not. A read knee the chase does not confirm is no level; it is noted.
3. Where the OS lists its caches (oscaches.py), each level is assigned to the OS cache whose
   instance size its read knee lies nearest to, within ``ASSIGN``; its size for the device is
   that times the instances its compute units span (a private cache per unit, a shared one
   once). It is named after the OS cache (``L1`` for L1d, ``L2``, ``L3``) only when the size per
   instance lies from 1 / ``NAMED`` to ``ABOVE`` x the OS's; otherwise it is ``level N`` (or
   ``LLC`` for the last), set beside the nearest OS cache no other level took, and the record
   says how far the OS's figure is.

Pure arithmetic on knees and OS figures: tests drive it with synthetic curves.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Sequence

from . import knees as K
from .levels import LAST_LABEL, MIDDLE_LABEL, PER_UNIT_MAX, SMALL_LABEL, Boundary
from .oscaches import OsCache

ASSIGN = 2.0   # a read knee this close to an OS cache's size belongs to that cache
# The chase is compared on either side of a read knee, leaving out the points next to it: a
# random walk leaves a cache gradually (a set 1.5x the cache still hits it a third of the time).
INSIDE, PAST = 0.75, 1.5
# A level is named after the OS cache only where its size per instance lies from 1 / NAMED to
# ABOVE x the OS's. Past the capacity the window is wider: a cache that is not strict LRU keeps
# part of a set larger than itself, so the read curve's midpoint lies past the capacity: a 2-core
# AMD EPYC guest's 32 KiB L1d ends at 34.8-38 KiB (1.09-1.19x) with its sets on huge pages, and
# ended at 41-45 KiB (1.29-1.39x) before, where 38 KiB still read at 0.9x 32 KiB's rate. The next
# cache is 4x or more larger.
NAMED, ABOVE = 1.25, 1.5
# The chase must step at least this much: inside one level its latency climbs by up to 1.5x
# (a 2 MiB L2's 3.6 to 5.3 ns, the walk's page-table and replacement misses), while a level's
# end steps 1.8x (a last level to DRAM) to 5x and more.
CHASE_STEP = 1.6
OUTLIER = 1.5  # a chase point this far from its side's median is left out of that side's spread
# Two read knees closer than this are one level's end, not two: the chase is compared from PAST x
# the first to INSIDE x the second, and at 2x apart that leaves one or two points, where a random
# walk still leaves the first level gradually. A 2-core guest's read curve dipped at 1 MiB inside
# its 2 MiB L2 (141 to 108 GB/s, a knee at 1,148 KiB beside the L2's at 2,320 KiB), and the one
# chase point between (10.6 ns against 6.1) made a level that does not exist. No CPU's levels lie
# this close: each is at least 4x the last.
MERGE = 2.5


def stands_out(knee: K.Knee, min_step: float = K.MIN_STEP,
               curve: tuple[Sequence[float], Sequence[float]] | None = None) -> bool:
    """Whether the step between the knee's plateaus exceeds ``min_step`` and both plateaus'
    spreads together (a step no larger than the noise on either side is no step), or, given the
    curve the knee is of (sorted sizes and values), exceeds ``min_step`` with every point of the
    better plateau better than every point of the worse one (``separate``)."""
    if knee.ratio < min_step:
        return False
    return knee.ratio > knee.before.spread * knee.after.spread or (
        curve is not None and separate(knee, curve[1]))


def separate(knee: K.Knee, values: Sequence[float]) -> bool:
    """Whether the knee's two plateaus (points of ``values``, the curve it is of, sorted by
    size) do not overlap, each without its outliers (``_near``): the spreads' product overstates
    the noise where one plateau spreads by its own slope or holds a transition point. An AMD EPYC
    guest's L2 read stepped 1.34x (98 to 73 GB/s) between plateaus spreading 1.07x and 1.26x
    (its after-plateau began at a 430 KiB point at 83), every point before faster than every
    point after."""
    if not 0 <= knee.before.first <= knee.before.last < knee.after.first <= knee.after.last < len(values):
        return False
    _, before = _near(values, range(knee.before.first, knee.before.last + 1))
    _, after = _near(values, range(knee.after.first, knee.after.last + 1))
    low, high = (before, after) if knee.before.value > knee.after.value else (after, before)
    return low[0] > high[-1]


@dataclass(frozen=True)
class CpuLevel:
    """One level: its boundary (both knees), the OS cache it was assigned to (if any), the
    capacity per instance, and its name and label."""

    name: str
    label: str
    last: bool
    end: Boundary
    unit_bytes: float
    os: OsCache | None
    named: bool
    units: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def size(self) -> float:
        """The capacity for the device: per instance, times the instances its units span."""
        return self.unit_bytes * (self.os.spanned(self.units) if self.os else 1)


def _distance(size: float, want: float) -> float:
    return abs(math.log(size / want))


def _assign(knees: Sequence[K.Knee], expected: dict[str, float], within: float) -> dict[str, K.Knee]:
    """Each OS cache's nearest knee within ``within`` of its size (a knee serves one cache)."""
    out: dict[str, K.Knee] = {}
    pairs = sorted((_distance(k.size, want), name, i) for name, want in expected.items()
                   for i, k in enumerate(knees) if _distance(k.size, want) <= math.log(within))
    used: set[int] = set()
    for _, name, i in pairs:
        if name not in out and i not in used:
            out[name] = knees[i]
            used.add(i)
    return out


def _near(values: Sequence[float], index: Sequence[int]) -> tuple[float, list[float]]:
    """The median of points ``index`` of a curve, and those points within OUTLIER of it,
    sorted."""
    part = sorted(values[i] for i in index)
    median = statistics.median(part)
    return median, [v for v in part if 1 / OUTLIER <= v / median <= OUTLIER] or [median]


def _flat(sizes: Sequence[float], values: Sequence[float],
          index: Sequence[int]) -> tuple[K.Plateau, list[float]]:
    """Points ``index`` of a curve as a plateau: their median, and the spread (largest /
    smallest) of those within OUTLIER of it (one point that another process's work slowed, a
    36 KiB chase at 2.9 ns among 1.6s, is not the level's spread); and those points, sorted."""
    median, near = _near(values, index)
    return K.Plateau(index[0], index[-1], median, sizes[index[0]], sizes[index[-1]], near[-1] / near[0]), near


def _sides(knee: K.Knee, sizes: Sequence[float], lower: float,
           upper: float) -> tuple[list[int], list[int]]:
    """The chase's points inside a read knee's level and past it (``latency_step``)."""
    inside = [i for i, s in enumerate(sizes) if lower <= s <= INSIDE * knee.size]
    past = [i for i, s in enumerate(sizes) if PAST * knee.size <= s <= upper]
    return inside, past


def _step(knee: K.Knee, sizes: Sequence[float], values: Sequence[float], lower: float,
          upper: float) -> tuple[K.Knee, bool] | None:
    """``latency_step`` and ``apart`` from one pass over the two sides."""
    inside, past = _sides(knee, sizes, lower, upper)
    if not inside or not past:
        return None
    (before, near_in), (after, near_past) = _flat(sizes, values, inside), _flat(sizes, values, past)
    middle = math.sqrt(before.value * after.value)
    j = next((i for i in range(inside[-1], past[0]) if values[i + 1] >= middle), past[0] - 1)
    a, b = values[j], values[j + 1]
    t = min(1.0, max(0.0, math.log(middle / a) / math.log(b / a))) if b > a > 0 else 0.5
    where = 2.0 ** (math.log2(sizes[j]) + t * (math.log2(sizes[j + 1]) - math.log2(sizes[j])))
    return K.Knee(where, sizes[j], sizes[j + 1], before, after), near_in[-1] < near_past[0]


def apart(knee: K.Knee, sizes: Sequence[float], values: Sequence[float], lower: float,
          upper: float) -> bool:
    """Whether every chase point inside the level (outliers left out, as in its spread) is
    faster than every one past it: a step that clears both sides even where they slope. The
    spreads' product overstates the noise there: a 2 MiB L2's chase climbs from 4.5 to 8.3 ns
    (a 1.8x spread that is a trend) and a step of 2.7x out of an L1 at 2.1-3.2 ns fell short
    of it."""
    found = _step(knee, sizes, values, lower, upper)
    return found is not None and found[1]


def latency_step(knee: K.Knee, sizes: Sequence[float], values: Sequence[float], lower: float,
                 upper: float) -> K.Knee | None:
    """The chase's step where a read knee lies: its points inside the level (from ``lower`` to
    ``INSIDE`` x the knee) against its points past it (from ``PAST`` x the knee to ``upper``),
    as a knee of the chase curve (crossing the middle of the two, in log size); None where
    either side has no point. A random walk leaves a cache gradually, so the points next to the
    knee are left out on both sides."""
    found = _step(knee, sizes, values, lower, upper)
    return None if found is None else found[0]


def merged(knees: Sequence[K.Knee]) -> tuple[list[K.Knee], list[str]]:
    """The read knees (smallest first) with each run of knees within ``MERGE`` of the last
    kept one reduced to its largest step, and a note on each knee left out."""
    kept: list[K.Knee] = []
    notes = []
    for k in sorted(knees, key=lambda k: k.size):
        if kept and k.size / kept[-1].size < MERGE:
            drop, keep = (k, kept[-1]) if k.ratio <= kept[-1].ratio else (kept[-1], k)
            kept[-1] = keep
            notes.append(f"a step of {drop.ratio:.2f}x in the read curve at {drop.size / 1024:.0f} KiB "
                         f"lies within {MERGE}x of a larger one at {keep.size / 1024:.0f} KiB: one "
                         "level's end, not two")
        else:
            kept.append(k)
    return kept, notes


def cpu_levels(bandwidth: Sequence[K.Knee], chase: tuple[Sequence[float], Sequence[float]],
               os: Sequence[OsCache], units: int, min_step: float = K.MIN_STEP,
               read: tuple[Sequence[float], Sequence[float]] | None = None
               ) -> tuple[list[CpuLevel], list[str]]:
    """The levels (smallest first) and notes on the read knees that made none: each read knee
    that stands out (judged against ``read``, the curve the knees are of, where given), where
    the chase (sizes, ns per load) steps too (module docstring)."""
    out = [k for k in bandwidth if stands_out(k, min_step, read)]
    notes = [f"a step of {k.ratio:.2f}x in the read curve at {k.size / 1024:.0f} KiB does not "
             "stand out of its plateaus' spread" for k in bandwidth if k not in out]
    bw, close = merged(out)
    notes += close
    sizes, values = list(chase[0]), list(chase[1])
    bounds = []
    for i, b in enumerate(bw):
        lower = bw[i - 1].size * PAST if i else 0.0
        upper = bw[i + 1].size * INSIDE if i + 1 < len(bw) else math.inf
        step, sides_apart = _step(b, sizes, values, lower, upper) or (None, False)
        least = max(min_step, CHASE_STEP)
        if step is not None and (stands_out(step, least) or (step.ratio >= least and sides_apart)):
            bounds.append(Boundary(b, step))
        else:
            why = ("the chase has no points on both sides" if step is None else
                   f"the chase steps {step.ratio:.2f}x there, within its spread")
            notes.append(f"a step in the read curve at {b.size / 1024:.0f} KiB, {why}: no level")
    got = _assign([bd.bandwidth for bd in bounds], {c.name: float(c.size_bytes) for c in os}, ASSIGN)  # type: ignore[misc]
    found = [(bd, next((c for c in os if got.get(c.name) is bd.bandwidth), None)) for bd in bounds]
    return _named(found, os, units), notes


def _named(found: list[tuple[Boundary, OsCache | None]], os: Sequence[OsCache],
           units: int) -> list[CpuLevel]:
    """Names and labels; a level no OS cache was assigned to is set beside the nearest OS cache
    that no other level took (its record says how far that one is), never named after it."""
    taken = {c.name for _, c in found if c is not None}
    out = []
    for i, (bound, assigned) in enumerate(found):
        last = i == len(found) - 1
        free = [c for c in os if c.name not in taken]
        cache = assigned or (min(free, key=lambda c: _distance(bound.size, c.size_bytes)) if free else None)
        unit = bound.size
        named = assigned is not None and 1 / NAMED <= unit / assigned.size_bytes <= ABOVE
        name = f"L{assigned.level}" if named and assigned else "LLC" if last else f"level {i + 1}"
        label = LAST_LABEL if last else SMALL_LABEL if unit <= PER_UNIT_MAX else MIDDLE_LABEL
        notes = () if named or cache is None else (
            f"the OS's {cache.name} is {cache.size_bytes / unit:.2f}x this level's size per "
            "instance: not named after it",)
        out.append(CpuLevel(name, label, last, bound, unit, cache, named, units, notes))
    return out


def os_record(level: CpuLevel, units: int) -> dict[str, Any] | None:
    """What the profile stores of the OS cache beside a level."""
    c = level.os
    if c is None:
        return None
    return {"name": c.name, "size_bytes": c.size_bytes, "instances": c.instances,
            "cpus_per_instance": c.cpus_per_instance, "spanned": c.spanned(units),
            "source": c.source, "ratio": level.unit_bytes / c.size_bytes, "named": level.named}


__all__ = ["ABOVE", "ASSIGN", "CHASE_STEP", "INSIDE", "MERGE", "PAST", "CpuLevel", "NAMED", "apart",
           "cpu_levels", "latency_step", "merged", "os_record", "separate", "stands_out"]
