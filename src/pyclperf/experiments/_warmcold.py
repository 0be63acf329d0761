"""Warm and cold figures of the experiments: which rows were timed with their working set in
the cache, launches that flush it first, and whether a guide figure taken warm changes cold.

* Each experiment row held against DRAM records its working set (footprint_bytes: the distinct
  bytes a launch touches), ``cache_resident`` (it fits what the caches in front of memory may
  hold, plausible.cache_allowance, and was not timed cold) and ``cold``.
* ``cold=True`` (``pyclperf run --cold``) flushes the last-level cache before every timed
  launch, outside the timed events, as tune's ``cold`` does (measure.residency.cache_flush).
* cold_check (``pyclperf run --cold-check``, which the guide passes): where the guide's source
  figure (the experiment's claim) rests on cache-resident rows, those points alone are measured
  again cold, in the same process with the same kernels, and the figure is computed from them;
  the record's ``meta["warm_cold"]`` holds both, and note() is the sentence the guide shows.
  Only the figure's own points (two, for most figures) are measured again: the guide's time
  stays what it was.

Which rows a figure uses is found from the figure itself: a row is one of them when leaving it
out changes the figure (the figures are medians and ratios of a few selected rows).
"""

from __future__ import annotations

from typing import Any, Callable

from ..measure.residency import cache_flush, chained
from ..measure.results import OK, Results
from .claims import Unmeasured, claim_of

CHANGE = 0.10  # a cold run that moves the figure by more than this is said to change it


def residency(footprint: int | None, allowance: int, cold: bool) -> dict[str, Any]:
    """A row's working set and whether it was timed from the cache."""
    if footprint is None:
        return {"cold": bool(cold)}
    return {"working_set_bytes": int(footprint), "cold": bool(cold),
            "cache_resident": bool(footprint <= allowance and not cold)}


def cold_reset(ctx: Any, reset: Callable[[], None] | None) -> Callable[[], None] | None:
    """The launch's own reset, then the cache flush."""
    return chained(reset, cache_flush(ctx))


def figure_rows(results: Results, measure: Callable[[Results], float | None]) -> list[int]:
    """Indices of the verified rows the figure depends on: leaving one out changes it."""
    whole = measure(results)
    if whole is None:
        return []
    used = []
    for i, row in enumerate(results.rows):
        if row.get("status") != OK:
            continue
        without = measure(Results(results.meta, results.rows[:i] + results.rows[i + 1:]))
        if without is None or abs(without - whole) > 1e-12 * abs(whole):
            used.append(i)
    return used


def _point_of(row: dict[str, Any], points: list[dict[str, Any]]) -> dict[str, Any] | None:
    for point in points:
        if all(str(row.get(k)) == str(v) for k, v in point.items()):
            return point
    return None


def cold_check(experiment: Any, results: Results, *, warmup: int, repeats: int,
               method: str) -> dict[str, Any] | None:
    """Measure cold again the cache-resident points the guide's figure uses, and the figure
    from them (the module's docstring); None where the figure uses no such point. The
    experiment is a base.Experiment: one with kernel launches of its own to time cold."""
    claim = claim_of(type(experiment))
    if claim is None or claim.kind == "property":
        return None  # no figure to check

    def measure(res: Results) -> float | None:
        try:
            return claim.measure(res).value
        except Unmeasured:
            return None

    warm_ratio = measure(results)
    rows = [i for i in figure_rows(results, measure) if results.rows[i].get("cache_resident")]
    if warm_ratio is None or not rows:
        return None
    points = experiment.points()
    replaced = list(results.rows)
    measured = []
    experiment.cold = True
    try:
        for i in rows:
            point = _point_of(results.rows[i], points)
            if point is None:
                continue
            cold = {**point, **experiment.measure(point, warmup=warmup, repeats=repeats,
                                                  method=method, verify=True)}
            replaced[i] = {**results.rows[i], **cold}
            measured.append({"row": i, "point": point, "status": cold.get("status"),
                             "warm_median_ns": results.rows[i].get("median_ns"),
                             "cold_median_ns": cold.get("median_ns")})
    finally:
        experiment.cold = False
    cold_ratio = measure(Results(results.meta, replaced)) if measured else None
    change = cold_ratio / warm_ratio - 1 if cold_ratio is not None and warm_ratio else None
    return {"rows": rows, "working_set_bytes": max(int(results.rows[i].get("working_set_bytes") or 0)
                                                   for i in rows),
            "cache_bytes": int(results.meta.get("cache_allowance_bytes") or 0),
            "warm_ratio": warm_ratio, "cold_ratio": cold_ratio, "change": change,
            "changes": change is not None and abs(change) > CHANGE, "points": measured}


def _size(nbytes: float) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.3g} {unit}"
    return f"{nbytes:.0f} B"


def note(meta: dict[str, Any]) -> str:
    """The guide's sentence on a figure taken warm ("" where it was not)."""
    wc = meta.get("warm_cold")
    if not wc:
        return ""
    text = (f"taken warm: working set {_size(wc['working_set_bytes'])} fits the "
            f"{_size(wc['cache_bytes'])} the caches in front of memory may hold")
    if wc.get("cold_ratio") is None:
        return text + "; no cold figure could be had"
    text += f"; cold, the figure is {wc['cold_ratio']:.3g} (warm {wc['warm_ratio']:.3g})"
    if wc.get("changes"):
        text += f": a cold run changes it by {100 * wc['change']:+.0f}%"
    else:
        text += f", within {100 * CHANGE:.0f}% ({100 * wc['change']:+.1f}%)"
    return text


__all__ = ["CHANGE", "cold_check", "cold_reset", "figure_rows", "note", "residency"]
