"""A CPU device's cache levels: knees of both curves, held against the caches the OS reports.

A GPU's levels come from the knees and the device's own query (levels.py). A CPU device's
curves are noisier (other processes share the cores and the last cache), so both are measured on
one compute unit (passes.py's reads by one work-group, chase.py's one work-item): their knees lie
at one instance's size, as the OS reports it, whatever the other units do. So here:

1. A knee counts only where it stands out of the spread: the step between its two plateaus is
   at least ``knees.MIN_STEP`` and larger than the two plateaus' own spreads together.
2. Where the OS lists its caches (oscaches.py), each knee is assigned to the OS cache whose
   instance size it lies nearest to, within ``ASSIGN`` (``ASSIGN_LATENCY`` for a chase's). A level is an OS cache that got a knee
   from both curves; its size per instance is the read knee's (sharp: a stream leaves a cache
   all at once, where a random chase leaves it gradually and its midpoint lies past the
   capacity), and its size for the device that times the instances its compute units span (a
   private cache per unit, a shared one once). It is named after the OS cache (``L1`` for L1d,
   ``L2``, ``L3``) only when the size per instance lies within ``NAMED`` of the OS's;
   otherwise it is ``level N`` (or ``LLC`` for the last) and the record says how far the OS's
   figure is.
3. Knees left over pair up as in levels.py (a read knee and a chase knee within ``MATCH``):
   levels the OS does not list, named ``level N`` or ``LLC``, set beside the nearest OS cache
   no other level took. A knee in one curve only is no level; it is noted.

Pure arithmetic on knees and OS figures: tests drive it with synthetic curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from . import knees as K
from .levels import LAST_LABEL, MATCH, MIDDLE_LABEL, PER_UNIT_MAX, SMALL_LABEL, Boundary
from .oscaches import OsCache

ASSIGN = 2.0   # a read knee this close to an OS cache's size belongs to that cache
# A chase knee may lie further past it: a random walk leaves a cache gradually (a set 1.5x the
# cache still hits it a third of the time), so the midpoint between two plateaus lies past
# the capacity (a 48 KiB L1d's chase knee measured at 105 KiB).
ASSIGN_LATENCY = MATCH
NAMED = 1.25   # a level is named after the OS cache only this close to its size


def stands_out(knee: K.Knee, min_step: float = K.MIN_STEP) -> bool:
    """Whether the step between the knee's plateaus exceeds ``min_step`` and both plateaus'
    spreads together (a step no larger than the noise on either side is no step)."""
    return knee.ratio >= min_step and knee.ratio > knee.before.spread * knee.after.spread


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


def cpu_levels(bandwidth: Sequence[K.Knee], latency: Sequence[K.Knee], os: Sequence[OsCache],
               units: int, min_step: float = K.MIN_STEP) -> tuple[list[CpuLevel], list[str]]:
    """The levels (smallest first) and notes on the knees that made none (module docstring)."""
    bw = [k for k in bandwidth if stands_out(k, min_step)]
    lat = [k for k in latency if stands_out(k, min_step)]
    notes = [f"a step of {k.ratio:.2f}x in the {what} curve at {k.size / 1024:.0f} KiB does not "
             "stand out of its plateaus' spread" for what, given, kept in
             (("read", bandwidth, bw), ("latency", latency, lat)) for k in given if k not in kept]
    got_bw = _assign(bw, {c.name: float(c.size_bytes) for c in os}, ASSIGN)
    got_lat = _assign(lat, {c.name: float(c.size_bytes) for c in os}, ASSIGN_LATENCY)
    found: list[tuple[Boundary, OsCache | None]] = [
        (Boundary(got_bw[c.name], got_lat[c.name]), c) for c in os if c.name in got_bw and c.name in got_lat]
    used = {id(k) for bound, _ in found for k in (bound.bandwidth, bound.latency)}
    spare_bw = [k for k in bw if id(k) not in used]
    spare_lat = [k for k in lat if id(k) not in used]
    for b in spare_bw:  # knees no OS cache explains: a level where both curves show it
        near = [l for l in spare_lat if 1 / MATCH <= b.size / l.size <= MATCH]
        if near:
            l = min(near, key=lambda k: _distance(b.size, k.size))
            spare_lat.remove(l)
            found.append((Boundary(b, l), None))
        else:
            notes.append(f"a step in the read curve alone at {b.size / 1024:.0f} KiB: no level")
    notes += [f"a step in the latency curve alone at {l.size / 1024:.0f} KiB: no level" for l in spare_lat]
    found.sort(key=lambda f: f[0].size)
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
        named = assigned is not None and 1 / NAMED <= unit / assigned.size_bytes <= NAMED
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


__all__ = ["ASSIGN", "ASSIGN_LATENCY", "CpuLevel", "NAMED", "cpu_levels", "os_record", "stands_out"]
