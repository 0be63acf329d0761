"""What each experiment tests: the source documents' claim, stated on the experiment's own class
(``claim = Claim(...)``), and the figure of this device's rows that tests it.

A claim's ``measure`` takes the experiment's Results and returns a ``Figure``: a ratio of two
measurements (a speed-up, a slowdown) with its uncertainty. Where the rows cannot give it,
``measure`` raises ``NotRun`` (the rows it needs were skipped: a feature this device lacks) or
``NotMeasured`` (they ran but none verified), each with the reason. Measure functions name their
rows through the experiment module's own label constants, looked up when they run, so renaming a
variant touches that module alone.

The uncertainty. A row keeps the summary of its launches, not the launches (pyclperf.measure.stats):
median, interquartile range and count. The sample median of n draws has a standard error of
about sqrt(pi / 2) sigma / sqrt(n), and sigma is about IQR / 1.349 for a bell-shaped spread, so
the relative error of a row's median is taken as

    se = 1.2533 (IQR / 1.349) / (sqrt(n) median)

on the log scale. Every metric the claims use is the median time or an amount over it (GB/s,
GFLOP/s, a latency), so they share it. A ratio of two figures adds the squares; a figure pooled
from k rows (their median) takes sqrt((pi / 2) var(ln v) / k + mean(se^2) / k), the spread
between the rows included; a geometric mean of k ratios sqrt(sum se^2) / k. The interval is
exp(ln ratio +- 1.96 se): about 95% where the launches were independent draws. It covers the
launches of this run only, not what changes between runs (clocks, another process): a narrow
interval says the figure was measured precisely, not that another run would repeat it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from ..measure.results import OK, SKIPPED, Results

Z95 = 1.96
# The standard error of a sample median over that of a mean (normal draws), and the IQR of a
# normal distribution in standard deviations.
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)
IQR_SIGMAS = 1.349
KINDS = ("claim", "property")


class Unmeasured(Exception):
    """This device's figure cannot be had from the rows; the message says why."""

    not_run = False


class NotRun(Unmeasured):
    """The rows the figure needs did not run here (skipped: a feature the device lacks)."""

    not_run = True


class NotMeasured(Unmeasured):
    """The rows ran, but none that the figure needs verified (or none exist)."""


@dataclass(frozen=True)
class Figure:
    """A positive ratio on the log scale: ``log`` its natural log, ``se`` that log's standard
    error (None where no spread was recorded)."""

    log: float
    se: float | None = None

    @classmethod
    def of(cls, value: float, se: float | None = None) -> "Figure":
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise NotMeasured(f"the figure is not a positive number ({value!r})")
        return cls(math.log(value), se)

    @property
    def value(self) -> float:
        return math.exp(self.log)

    @property
    def lo(self) -> float | None:
        return math.exp(self.log - Z95 * self.se) if self.se is not None else None

    @property
    def hi(self) -> float | None:
        return math.exp(self.log + Z95 * self.se) if self.se is not None else None

    def __truediv__(self, other: "Figure") -> "Figure":
        se = (math.hypot(self.se, other.se) if self.se is not None and other.se is not None
              else None)
        return Figure(self.log - other.log, se)

    def scaled(self, reference: float) -> "Figure":
        """This figure over a fixed ``reference`` (a document's number: no uncertainty)."""
        return Figure(self.log - math.log(reference), self.se)


@dataclass(frozen=True)
class Claim:
    """The source's claim, where it is made, and how this device's rows test it.

    ``direction``: +1 the source expects the ratio above 1, -1 below 1, 0 about 1 (no effect).
    ``source_ratio``: the source's own number where it gives one (None: a direction only).
    ``kind``: "claim", or "property" where the figure describes the device (no verdict).
    ``source_key``: a metadata key whose text replaces ``source`` where the record has it.
    ``finding``: where the rows can hold an answer that no ratio carries (a point the device
    refused that the claim predicts: launchbounds' build without reqd_work_group_size that
    cannot launch 1,024 work-items while the build with it runs), the function that finds it and
    says it in words, else None; a finding makes the verdict "holds" whatever the ratio where
    both sides ran.
    """

    claim: str
    source: str
    criterion: str
    measure: Callable[[Results], Figure]
    direction: int = +1
    source_ratio: float | None = None
    kind: str = "claim"
    source_key: str | None = None
    finding: Callable[[Results], str | None] | None = None

    def __post_init__(self) -> None:
        if self.direction not in (-1, 0, 1):
            raise ValueError(f"direction must be -1, 0 or +1, got {self.direction!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not (self.claim and self.source and self.criterion):
            raise ValueError("a claim needs its words, its source and its criterion")


def finding_of(claim: Claim, results: Results | None) -> str | None:
    """The claim's finding in ``results`` (Claim.finding), or None where it has none."""
    if claim.finding is None or claim.kind != "claim" or results is None:
        return None
    return claim.finding(results)


def claim_of(cls: Any) -> Claim | None:
    """The claim an experiment class declares (its ``claim`` attribute), or None."""
    claim = getattr(cls, "claim", None)
    return claim if isinstance(claim, Claim) else None


# --- rows -> figures ------------------------------------------------------------------------

def _matches(row: dict[str, Any], match: dict[str, Any]) -> bool:
    return all(str(row.get(k)) == str(v) for k, v in match.items())


def _describe(match: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in match.items()) or "any row"


def rows_for(results: Results, **match: Any) -> list[dict[str, Any]]:
    """The verified rows whose columns equal ``match`` (compared as text); raises NotRun where
    the matching rows were all skipped, NotMeasured where none verified or none exist."""
    hits = [r for r in results.rows if _matches(r, match)]
    ok = [r for r in hits if r.get("status") == OK]
    if ok:
        return ok
    if not hits:
        raise NotMeasured(f"no row with {_describe(match)}")
    skipped = [r for r in hits if r.get("status") == SKIPPED]
    if len(skipped) == len(hits):
        raise NotRun(f"{_describe(match)} skipped: {skipped[0].get('error') or 'no reason given'}")
    worst = next(r for r in hits if r.get("status") != SKIPPED)
    detail = f" ({worst['error']})" if worst.get("error") else ""
    what = f"{_describe(match)} did not verify" if match else "no row verified"
    raise NotMeasured(f"{what}: {worst.get('status')}{detail}")


def row_se(row: dict[str, Any]) -> float | None:
    """The relative standard error of a row's median (see the module docstring); None where the
    row keeps no spread."""
    n, iqr, median = row.get("n"), row.get("iqr_ns"), row.get("median_ns")
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (n, iqr, median)):
        return None
    if n < 1 or median <= 0 or iqr < 0:
        return None
    return MEDIAN_EFFICIENCY * (iqr / IQR_SIGMAS) / (math.sqrt(n) * median)


def pooled(rows: Sequence[dict[str, Any]], metric: str) -> Figure:
    """The median of ``metric`` over ``rows`` with its uncertainty."""
    values = [(float(r[metric]), row_se(r)) for r in rows
              if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric]) and r[metric] > 0]
    if not values:
        raise NotMeasured(f"no positive {metric} in the verified rows")
    logs = sorted(math.log(v) for v, _ in values)
    k = len(logs)
    mid = (logs[(k - 1) // 2] + logs[k // 2]) / 2
    ses = [s for _, s in values]
    if any(s is None for s in ses):
        return Figure(mid, None)
    within = sum(s * s for s in ses if s is not None) / k
    if k == 1:
        return Figure(mid, math.sqrt(within))
    mean = sum(logs) / k
    between = sum((x - mean) ** 2 for x in logs) / (k - 1)
    return Figure(mid, math.sqrt((MEDIAN_EFFICIENCY ** 2 * between + within) / k))


def figure(results: Results, metric: str, **match: Any) -> Figure:
    """``metric`` of the verified rows matching ``match`` (their median), with its uncertainty."""
    return pooled(rows_for(results, **match), metric)


def ratio(results: Results, metric: str, top: dict[str, Any], bottom: dict[str, Any]) -> Figure:
    """``metric`` of the rows matching ``top`` over that of the rows matching ``bottom``."""
    return figure(results, metric, **top) / figure(results, metric, **bottom)


def geometric_mean(figures: Iterable[Figure]) -> Figure:
    """The geometric mean of independent ratios (e.g. one per size)."""
    items = list(figures)
    if not items:
        raise NotMeasured("no pair of verified rows to compare")
    k = len(items)
    log = sum(f.log for f in items) / k
    if any(f.se is None for f in items):
        return Figure(log, None)
    return Figure(log, math.sqrt(sum((f.se or 0.0) ** 2 for f in items)) / k)


def paired(results: Results, metric: str, key: str, top: dict[str, Any],
           bottom: dict[str, Any]) -> Figure:
    """The geometric mean over every value of column ``key`` at which both ``top`` and
    ``bottom`` rows verified of their ``metric`` ratio; the reason of the last failure where
    none did."""
    keys = sorted({r[key] for r in results.rows if key in r}, key=str)
    found, last = [], None
    for value in keys:
        try:
            found.append(ratio(results, metric, {**top, key: value}, {**bottom, key: value}))
        except Unmeasured as exc:
            last = exc
    if found:
        return geometric_mean(found)
    raise last if last is not None else NotMeasured(f"no row has a {key} column")


def meta_number(results: Results, *path: str) -> float:
    """The positive number at ``path`` in the record's metadata (NotMeasured where absent)."""
    v: Any = results.meta
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise NotMeasured(f"the record has no {'.'.join(path)}")
    return float(v)


def largest(results: Results, column: str, **match: Any) -> Any:
    """The largest value of ``column`` among the verified rows matching ``match``."""
    values = [r[column] for r in rows_for(results, **match) if r.get(column) is not None]
    if not values:
        raise NotMeasured(f"no verified row with a {column}")
    return max(values)


__all__ = ["Claim", "Figure", "NotMeasured", "NotRun", "Unmeasured", "claim_of", "figure", "finding_of",
           "geometric_mean", "largest", "meta_number", "paired", "pooled", "ratio", "row_se",
           "rows_for"]
