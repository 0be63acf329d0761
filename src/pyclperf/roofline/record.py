"""One measured figure of the device profile, as stored in its JSON: the value, its unit, how it
was measured, and its spread; or why there is none.

Every rate is a ceiling: what the device can do, at the fastest of verified, event-timed launches
(``value``; other work on the machine only ever slows a launch down, so the fastest is the
device's own figure, and a roof below a kernel's median would be no roof), beside the rate at
the median launch (``median``). "Fastest" sets one launch aside: PoCL's event times now and then
report a launch far shorter than it ran (one in 60 chases of 128 MiB at a tenth of its time,
where the host's clock saw none under 0.9x the median), so of three launches or more the
figure is the second fastest's; the spread of the times (IQR / median, %), how many launches were
timed (``n``) and a sentence saying what ran (``how``). ``best`` repeats ``value``. A figure that could not be
had says why (``status`` "skipped" for a device that lacks the feature, "failed" for a result
that did not verify or a launch the driver refused, with ``reason``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from ..measure.results import OK
from ..measure.stats import summarize

UNITS = ("GB/s", "GFLOP/s", "Gop/s", "ns")
FINAL_TIME = 5  # the chosen shape's figure is timed this many times longer than a search's point
SKIPPED, FAILED = "skipped", "failed"

Figure = dict  # the JSON object described above (schema: profile.schema.json, "figure")


@dataclass(frozen=True)
class Effort:
    """How hard each figure is measured: untimed warm-up launches, the least number of timed
    ones, and the least total time they must add up to (adaptive timing)."""

    warmup: int
    repeats: int
    min_time_s: float
    quick: bool

    @classmethod
    def of(cls, quick: bool) -> "Effort":
        # --quick: enough launches for a median and a spread (minutes on a CPU device).
        return cls(1, 3, 0.0, True) if quick else cls(3, 10, 0.02, False)

    def longer(self) -> "Effort":
        """The effort of a ceiling's final figure: FINAL_TIME x the launches and the time (the
        fastest launch of more is nearer the device's own figure on a busy machine)."""
        return replace(self, repeats=self.repeats * FINAL_TIME, min_time_s=self.min_time_s * FINAL_TIME)


def fastest(times_ns: Any) -> float:
    """The fastest launch's time, one outlier on the fast side set aside (the second fastest
    of three or more: module docstring)."""
    t = np.sort(np.asarray(times_ns, dtype=np.float64).ravel())
    return float(t[1] if t.size >= 3 else t[0])


def rate(times_ns: Any, amount: float, unit: str, how: str, **extra: Any) -> Figure:
    """``amount`` (bytes, FLOPs, operations) per launch over the launches' times: a rate in G
    units per second (amount per ns), at the fastest launch (the ceiling) and at the median."""
    s = summarize(times_ns)
    top = fastest(times_ns)
    best = amount / top if top > 0 else None
    return {"value": best, "best": best,
            "median": amount / s["median_ns"] if s["median_ns"] > 0 else None,
            "unit": unit, "how": how, "status": OK, "spread_pct": s["spread_pct"],
            "n": int(s["n"]), "median_ns": s["median_ns"], **extra}


def latency(times_ns: Any, per: float, how: str, **extra: Any) -> Figure:
    """Nanoseconds per event: launch times over ``per`` events each (median and fastest)."""
    s = summarize(times_ns)
    return {"value": s["median_ns"] / per, "best": fastest(times_ns) / per, "unit": "ns", "how": how,
            "status": OK, "spread_pct": s["spread_pct"], "n": int(s["n"]),
            "median_ns": s["median_ns"], **extra}


def from_row(row: dict[str, Any], unit: str, how: str, value: str = "gbps", best: str = "gbps_best",
             **extra: Any) -> Figure:
    """A figure from an experiment's row (pyclperf.experiments): its rate at the fastest launch
    (the ceiling; the median where the row has no fastest) and at the median; a row that did
    not verify is a failed figure with the row's error."""
    if row.get("status") != OK:
        return missing(unit, how, f"{row.get('status')}: {row.get('error') or 'no detail'}", FAILED)
    top = float(row[best]) if row.get(best) is not None else float(row[value])
    return {"value": top, "best": top, "median": float(row[value]),
            "unit": unit, "how": how, "status": OK, "spread_pct": float(row["spread_pct"]),
            "n": int(row["n"]), "median_ns": float(row["median_ns"]), **extra}


def missing(unit: str, how: str, reason: str, status: str = SKIPPED) -> Figure:
    """No figure: ``status`` says whether the device lacks what it needs (skipped) or the
    measurement did not verify or was refused (failed), ``reason`` how."""
    return {"value": None, "unit": unit, "how": how, "status": status, "reason": reason}


def usable(figure: Figure | None) -> bool:
    """Whether a figure holds a verified value."""
    return bool(figure) and figure.get("status") == OK and figure.get("value") is not None


def best_of(figures: list[Figure], unit: str, how: str) -> Figure:
    """The verified figure with the highest value (ties: the first), or the first failure."""
    good = [f for f in figures if usable(f)]
    if good:
        return max(good, key=lambda f: f["value"])
    return figures[0] if figures else missing(unit, how, "nothing was measured", FAILED)


def guarded(unit: str, how: str, measure: Callable[[], Figure]) -> Figure:
    """``measure()``, or a failed figure naming the OpenCL error that stopped it: one refused
    launch or failed build costs its own figure, never the profile."""
    from .. import _core

    try:
        return measure()
    except (_core.ClError, _core.InvalidArgumentError, MemoryError) as exc:
        return missing(unit, how, f"{type(exc).__name__}: {exc}", FAILED)


def timings(kernel: Any, global_size: Any, local_size: Any, effort: Effort) -> np.ndarray:
    """Event times (ns) of a kernel whose arguments are set, adaptively (tuner.timing)."""
    from ..measure.timing import time_adaptively

    return time_adaptively(kernel, global_size, local_size, warmup=effort.warmup,
                           min_time_s=effort.min_time_s, min_repeats=effort.repeats,
                           max_repeats=max(effort.repeats, 100_000))


__all__ = ["Effort", "FAILED", "FINAL_TIME", "Figure", "fastest", "SKIPPED", "UNITS", "best_of", "from_row", "guarded",
           "latency", "missing", "rate", "timings", "usable"]
