"""Cache levels from the knees of a curve measured against working-set size.

A cache shows as a plateau: bandwidth stays high (or load latency low) while the working set
fits, then falls (or rises) to the next level's plateau once it does not. This module finds
those plateaus and the sizes where the curve leaves one for the next, from measurements alone:

1. The values are taken on a log scale (a step from 10 to 5 GB/s is as large as one from 1 to
   0.5), oriented so that "better" is up (latency is negated), on the log-size axis the sweep
   samples (powers of two and anything between).
2. Binary segmentation: the segment is split where the split removes the most squared error,
   as long as the two sides' means differ by at least ``log(min_step)``; each side is split
   again the same way. Adjacent segments whose means then differ by less are merged.
3. A plateau is a segment of at least ``min_points`` points. Single points left between two
   plateaus are the transition (they still count in step 4); a first plateau *below* the next
   one is the small-size end of a sweep where launch overhead weighs (dropped); a later rise
   is noise, merged into the plateau before it.
4. The knee between two plateaus is where the curve crosses the midpoint of their levels (the
   geometric mean of the two values), interpolated linearly in log size between the two
   measured points that straddle it. For a cache whose hit rate falls off sharply once the set
   exceeds it, that is the capacity, to within the spacing of the sizes measured around it.

Everything here is pure arithmetic on lists of numbers: tests drive it with synthetic curves of
known steps, the profile with the device's own curves (pyclperf.roofline.memory).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

MIN_STEP = 1.3  # a level differs from the next by at least this factor
MIN_POINTS = 2  # points on a plateau


@dataclass(frozen=True)
class Plateau:
    """Points ``first``..``last`` (indices into the sorted curve) at one level: ``value`` is the
    median of their values (in the curve's unit)."""

    first: int
    last: int
    value: float
    low_size: float
    high_size: float
    spread: float  # largest / smallest value on the plateau


@dataclass(frozen=True)
class Knee:
    """Where the curve leaves plateau ``before`` for plateau ``after``: ``size`` is the estimated
    capacity in bytes; ``below`` and ``above`` the measured sizes on either side of the crossing
    (the last point above the midpoint and the first below it)."""

    size: float
    below: float
    above: float
    before: Plateau
    after: Plateau

    @property
    def ratio(self) -> float:
        """How far apart the two levels are (>= 1, whichever way the curve goes)."""
        a, b = self.before.value, self.after.value
        return max(a, b) / min(a, b)


def _oriented(sizes: Sequence[float], values: Sequence[float],
              lower_is_better: bool) -> tuple[list[float], list[float], list[float]]:
    """(sizes, values, y) sorted by size, positive values only; y = +-log(value)."""
    if len(sizes) != len(values):
        raise ValueError(f"{len(sizes)} sizes but {len(values)} values")
    pairs = sorted((float(s), float(v)) for s, v in zip(sizes, values)
                   if v is not None and math.isfinite(float(v)) and float(v) > 0 and float(s) > 0)
    xs = [s for s, _ in pairs]
    if len(set(xs)) != len(xs):
        raise ValueError("each size may appear once in a curve")
    vs = [v for _, v in pairs]
    sign = -1.0 if lower_is_better else 1.0
    return xs, vs, [sign * math.log(v) for v in vs]


def _sse(y: Sequence[float], lo: int, hi: int) -> float:
    part = y[lo:hi]
    mean = sum(part) / len(part)
    return sum((v - mean) ** 2 for v in part)


def _mean(y: Sequence[float], lo: int, hi: int) -> float:
    return sum(y[lo:hi]) / (hi - lo)


def segments(y: Sequence[float], delta: float) -> list[tuple[int, int]]:
    """Half-open index ranges of a piecewise-constant fit of ``y`` (steps 2 of the module
    docstring): binary segmentation, then adjacent segments closer than ``delta`` merged."""
    found: list[tuple[int, int]] = []
    todo = [(0, len(y))] if y else []
    while todo:
        lo, hi = todo.pop()
        best, gain = None, 0.0
        if hi - lo >= 2:
            whole = _sse(y, lo, hi)
            for k in range(lo + 1, hi):
                if abs(_mean(y, lo, k) - _mean(y, k, hi)) < delta:
                    continue
                g = whole - _sse(y, lo, k) - _sse(y, k, hi)
                if g > gain:
                    best, gain = k, g
        if best is None:
            found.append((lo, hi))
        else:
            todo += [(lo, best), (best, hi)]
    found.sort()
    merged = True
    while merged and len(found) > 1:
        merged = False
        for i in range(len(found) - 1):
            (a, b), (c, d) = found[i], found[i + 1]
            if abs(_mean(y, a, b) - _mean(y, c, d)) < delta:
                found[i: i + 2] = [(a, d)]
                merged = True
                break
    return found


def _plateau(xs: Sequence[float], vs: Sequence[float], lo: int, hi: int,
             tolerance: float = math.inf) -> Plateau:
    """Points lo..hi-1 as a plateau: the median of their values, and the spread of those within
    ``tolerance`` (log) of it (a lone outlier inside a plateau does not make it a slope)."""
    part = sorted(vs[lo:hi])
    mid = len(part) // 2
    median = part[mid] if len(part) % 2 else (part[mid - 1] + part[mid]) / 2
    near = [v for v in part if abs(math.log(v / median)) <= tolerance] or [median]
    return Plateau(lo, hi - 1, median, xs[lo], xs[hi - 1], near[-1] / near[0])


def plateaus(sizes: Sequence[float], values: Sequence[float], *, lower_is_better: bool = False,
             min_step: float = MIN_STEP, min_points: int = MIN_POINTS) -> list[Plateau]:
    """The curve's plateaus, smallest sizes first, each better than the next by at least
    ``min_step`` (step 3 of the module docstring)."""
    if min_step <= 1:
        raise ValueError(f"min_step must exceed 1, got {min_step}")
    xs, vs, y = _oriented(sizes, values, lower_is_better)
    delta = math.log(min_step)

    def trimmed(found: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out = [_trim(vs, lo, hi, delta / 2, min_points) for lo, hi in found]
        return [(lo, hi) for lo, hi in out if hi - lo >= min_points]

    spans = trimmed(segments(y, delta))
    changed = True
    while changed and len(spans) > 1:
        changed = False
        for i in range(len(spans) - 1):
            (a, b), (c, d) = spans[i], spans[i + 1]
            step = _mean(y, c, d) - _mean(y, a, b)  # > 0: the later plateau is better
            if step > -delta:
                # The small-size end below its successor is overhead, not a level: drop it.
                # A later rise (or a step too small once transitions are left out) is noise.
                spans[i: i + 2] = [(c, d)] if i == 0 and step >= delta else [(a, d)]
                changed = True
                break
        if not changed:
            changed = _drop_sloped(spans, vs, delta)
        spans = trimmed(spans)
    return [_plateau(xs, vs, lo, hi, delta / 2) for lo, hi in spans]


def _trim(vs: Sequence[float], lo: int, hi: int, tolerance: float, min_points: int) -> tuple[int, int]:
    """A segment without the edge points farther than ``tolerance`` (log) from its median: the
    segmentation hands a transition's first or last point to one side or the other."""
    while hi - lo > min_points:
        mid = math.log(_plateau([0.0] * len(vs), vs, lo, hi).value)
        first, last = abs(math.log(vs[lo]) - mid), abs(math.log(vs[hi - 1]) - mid)
        if max(first, last) <= tolerance:
            break
        if first >= last:
            lo += 1
        else:
            hi -= 1
    return lo, hi


def _trend(vs: Sequence[float], lo: int, hi: int, tolerance: float) -> float:
    """How far a segment's values move from its small end to its large end (log, >= 0): the
    median of its first half against the median of its second half (the middle point of an odd
    count in neither), spikes left out first (an inner point beyond ``tolerance``, in log, of
    both its neighbours on the same side: one quick or slow round, which a ramp never has). A
    ramp moves by most of its spread; a plateau whose points scatter around one level moves by
    little, however wide the scatter."""
    logs = [math.log(v) for v in vs[lo:hi]]
    kept = [logs[0]] + [b for a, b, c in zip(logs, logs[1:], logs[2:])
                        if not (min(abs(b - a), abs(b - c)) > tolerance and (b - a) * (b - c) > 0)]
    kept += logs[-1:] if len(logs) > 1 else []
    half = len(kept) // 2
    return abs(statistics.median(kept[:half]) - statistics.median(kept[-half:])) if half else 0.0


def _drop_sloped(spans: list[tuple[int, int]], vs: Sequence[float], delta: float) -> bool:
    """Remove the plateau that is least flat beside its steps: one whose values trend from its
    small end to its large end (_trend) by more than the square root of the smaller step to a
    neighbour is a stretch of a gradual slope, not a level (a ramp cut into two-point
    "plateaus"). Scatter without a trend is noise, not slope: a loaded CPU's L2 read plateau
    scatters by 20% around one level beside a 1.4x step to its L1, and judging it by its spread
    dropped it, and the L1 knee with it. Its points become transition. True when one was
    removed."""
    xs = [0.0] * len(vs)
    flat = [_plateau(xs, vs, lo, hi, delta / 2) for lo, hi in spans]
    worst, excess = None, 0.0
    for i, p in enumerate(flat):
        steps = [abs(math.log(flat[j].value / p.value)) for j in (i - 1, i + 1) if 0 <= j < len(flat)]
        trend = _trend(vs, *spans[i], delta / 2)
        if steps and trend - min(steps) / 2 > excess and trend > delta / 2:
            worst, excess = i, trend - min(steps) / 2
    if worst is None:
        return False
    del spans[worst]
    return True


def _crossing(xs: Sequence[float], y: Sequence[float], first: int, last: int,
              level: float) -> tuple[float, int] | None:
    """(log2 size, index before it) where y falls through ``level`` between indices
    first..last, interpolated linearly in log size; None where it does not."""
    for i in range(first, last):
        a, b = y[i], y[i + 1]
        if a >= level > b:
            t = (a - level) / (a - b)
            la, lb = math.log2(xs[i]), math.log2(xs[i + 1])
            return la + t * (lb - la), i
    return None


def knees(sizes: Sequence[float], values: Sequence[float], *, lower_is_better: bool = False,
          min_step: float = MIN_STEP, min_points: int = MIN_POINTS) -> list[Knee]:
    """Where the curve leaves each plateau for the next (step 4 of the module docstring):
    bandwidth curves fall (the default), latency curves rise (``lower_is_better``)."""
    xs, _, y = _oriented(sizes, values, lower_is_better)
    found = plateaus(sizes, values, lower_is_better=lower_is_better, min_step=min_step,
                     min_points=min_points)
    sign = -1.0 if lower_is_better else 1.0
    out = []
    for a, b in zip(found, found[1:]):
        mid = sign * (math.log(a.value) + math.log(b.value)) / 2
        found_at = _crossing(xs, y, a.last, b.first, mid)
        if found_at is None:  # no single crossing (noise inside the gap): the gap's middle
            where, i, j = (math.log2(xs[a.last]) + math.log2(xs[b.first])) / 2, a.last, b.first
        else:
            where, i = found_at
            j = i + 1
        out.append(Knee(2.0 ** where, xs[i], xs[j], a, b))
    return out


def bracket_sizes(knee: Knee, steps: int = 4, align: int = 64) -> list[int]:
    """Sizes between a knee's two bracketing measurements, ``steps`` to the octave (rounded to
    multiples of ``align`` bytes): where measuring more pins the knee down."""
    lo, hi = math.log2(knee.below), math.log2(knee.above)
    count = max(1, round((hi - lo) * steps) - 1)
    out = []
    for i in range(1, count + 1):
        size = int(round(2.0 ** (lo + (hi - lo) * i / (count + 1)) / align)) * align
        if knee.below < size < knee.above and size not in out:
            out.append(size)
    return out


def spans(centres: Sequence[float], near: float, within: float) -> list[tuple[float, float]]:
    """Size ranges to measure again around candidate knees (of either curve), smallest first:
    centres within a factor ``within`` of the one before are one candidate (a bandwidth knee
    and a latency knee of one level), its range from ``near`` below its smallest centre to
    ``near`` above its largest (both plateaus' near ends and the transition between)."""
    if near < 1 or within < 1:
        raise ValueError(f"near and within must be at least 1, got {near} and {within}")
    groups: list[list[float]] = []
    for c in sorted(float(c) for c in centres if c > 0):
        if groups and c <= groups[-1][-1] * within:
            groups[-1].append(c)
        else:
            groups.append([c])
    return [(g[0] / near, g[-1] * near) for g in groups]


def match(first: Sequence[Knee], second: Sequence[Knee], within: float = 2.5) -> list[tuple[Knee | None, Knee | None]]:
    """Pairs of knees of two curves of the same sweep (bandwidth and latency) that are one
    level: each knee of ``first`` with the nearest unused knee of ``second`` within a factor of
    ``within`` in size; the rest alone. Sorted by size."""
    pairs: list[tuple[Knee | None, Knee | None]] = []
    used: set[int] = set()
    for k in first:
        near = [(abs(math.log(j.size / k.size)), i) for i, j in enumerate(second)
                if i not in used and max(j.size / k.size, k.size / j.size) <= within]
        if near:
            i = min(near)[1]
            used.add(i)
            pairs.append((k, second[i]))
        else:
            pairs.append((k, None))
    pairs += [(None, j) for i, j in enumerate(second) if i not in used]
    return sorted(pairs, key=lambda p: (p[0] or p[1]).size)  # type: ignore[union-attr]


__all__ = ["Knee", "MIN_POINTS", "MIN_STEP", "Plateau", "bracket_sizes", "knees", "match",
           "plateaus", "segments", "spans"]
