"""The source documents' claims, each beside the same figure on this device, and the guide's
verdict on whether the claim holds here. Each experiment states its claim on its own class
(pyclperf.experiments.claims): the words, the source, the criterion and how its rows give the
figure; this module judges it.

Every figure is a ratio of two measurements the source gives (a speed-up, a slowdown), because
a 2009 GPU's absolute GB/s says nothing about today's; the same ratio is computed from this
device's verified rows. Figures of the device itself (a peak, a timer resolution: claims of
kind "property") are shown as a ratio but get no verdict: they describe hardware, not an
effect. Sources: each experiment's ``guide`` attribute names its section of the documents it
reproduces.

The verdict rule, the same for every experiment. Let e = ln(ratio), so 2x faster and 2x
slower are equally large effects, and let the source's effect be e_s, this device's e_d:

* "holds": e_d has the sign of e_s and at least half its size (|e_d| >= |e_s| / 2);
* "changed": the same sign but smaller than that, or within 10% of no effect (|e_d| < ln 1.1);
* "reversed": the opposite sign, beyond 10%.

Where a source states only a direction ("bandwidth falls as stride grows"), e_s is that sign and
the size test is dropped: "holds" beyond 10% that way, "changed" within 10%, "reversed" beyond
10% the other way.

Where a source says there is no effect ("beyond 50% occupancy little is gained", "global memory
is uncached, so the working set does not matter"), the claim's direction is 0: "holds" within
10% of no effect, "changed" beyond it either way.

The uncertainty: each figure carries a 95% interval from the spread of the rows' launches
(pyclperf.experiments.claims says how). The verdict is the rule's at the figure itself; where
the rule gives another verdict somewhere in the interval, the interval straddles a boundary and
the reason says which, so a verdict that a rerun could flip is never stated bare.

A finding (the claim's ``finding``: a point the device refused where the claim predicts it, such
as a launch only the build that declares its work-group size can make) is an answer no ratio
carries: where the rows hold one, the verdict is "holds", its reason the finding and the ratio
where both sides ran.
"""

from __future__ import annotations

import math
from typing import Any

from ..experiments.claims import Claim, Figure, Unmeasured, claim_of, finding_of
from ..measure.results import SKIPPED, Results

NO_EFFECT = math.log(1.1)
HOLDS, CHANGED, REVERSED = "holds", "changed", "reversed"
PROPERTY, NOT_RUN, NOT_MEASURED = "device property", "not run", "not measured"
VERDICTS = (HOLDS, CHANGED, REVERSED, PROPERTY, NOT_RUN, NOT_MEASURED)


def verdict(claim: Claim, device_ratio: float | None) -> str:
    """"holds", "changed" or "reversed" by the rule in the module docstring; "" where there is no
    verdict to give (a property of the device, or no ratio from this device)."""
    if claim.kind == "property" or device_ratio is None or not device_ratio > 0:
        return ""
    e_d = math.log(device_ratio)
    if claim.direction == 0:
        return HOLDS if abs(e_d) < NO_EFFECT else CHANGED
    if abs(e_d) < NO_EFFECT:
        return CHANGED
    if (e_d > 0) != (claim.direction > 0):
        return REVERSED
    if claim.source_ratio is not None and abs(e_d) < abs(math.log(claim.source_ratio)) / 2:
        return CHANGED
    return HOLDS


def _why(claim: Claim, ratio: float, said: str) -> str:
    """Which part of the rule gave ``said`` for ``ratio``."""
    e_d = math.log(ratio)
    if claim.direction == 0:
        return ("within 10% of no effect, as the source says" if said == HOLDS else
                "an effect beyond 10% where the source expects none")
    if said == REVERSED:
        return "beyond 10% the opposite way to the source's"
    if said == CHANGED and abs(e_d) < NO_EFFECT:
        return "within 10% of no effect"
    if said == CHANGED:
        return "the source's way, but less than half its effect"
    return ("at least half the source's effect, its way" if claim.source_ratio is not None
            else "beyond 10% the way the source says")


def judge(claim: Claim, fig: Figure) -> tuple[str, str]:
    """The verdict on ``fig`` and its reason: the effect, its interval, the source's, which part
    of the rule decided, and whether the interval straddles a boundary of the rule."""
    said = verdict(claim, fig.value)
    text = f"{fig.value:.3g}x"
    lo, hi = fig.lo, fig.hi
    text += f" (95% interval {lo:.3g}-{hi:.3g})" if lo is not None and hi is not None else ""
    if claim.source_ratio is not None:
        text += f" against the source's {claim.source_ratio:.3g}x"
    text += f": {_why(claim, fig.value, said)}"
    if lo is None or hi is None:
        return said, text + "; the rows keep no spread, so no interval"
    ends = [verdict(claim, lo), verdict(claim, hi)]
    others = [v for v in dict.fromkeys(ends) if v != said]
    if others:
        text += (f"; the interval straddles the boundary with {' and '.join(others)}, so a rerun "
                 f"could say {' or '.join(others)}")
    return said, text


def _skip_reason(results: Results) -> str | None:
    """Why nothing ran, where every row was skipped (p2p with one device, a missing feature)."""
    rows = results.rows
    if rows and all(r.get("status") == SKIPPED for r in rows):
        reasons = list(dict.fromkeys(str(r.get("error") or "no reason given") for r in rows))
        return "; ".join(reasons[:2])
    return None


def cannot_run(results: Results | None) -> str | None:
    """The reason the experiment could not run on this device, or None where it ran."""
    return _skip_reason(results) if results is not None else None


def experiment_verdict(cls: Any, results: Results | None, status: str) -> dict[str, Any]:
    """The experiment's verdict record (GUIDE-INTERFACE): its claim, this device's figure with
    its interval, and a verdict that is never empty. ``status`` is the guide Outcome's."""
    claim = claim_of(cls)
    record: dict[str, Any] = {
        "experiment": cls.id, "kind": claim.kind if claim else "claim",
        "claim": claim.claim if claim else "", "source": claim.source if claim else "",
        "criterion": claim.criterion if claim else "",
        "source_ratio": claim.source_ratio if claim else None,
        "device_ratio": None, "ratio_lo": None, "ratio_hi": None}
    if claim is not None and claim.source_key and results is not None and results.meta.get(claim.source_key):
        record["source"] = str(results.meta[claim.source_key])

    def done(said: str, reason: str) -> dict[str, Any]:
        return {**record, "verdict": said, "reason": reason}

    if claim is None:
        return done(NOT_MEASURED, f"{cls.id} states no claim to test")
    if status.startswith("not run"):
        return done(NOT_RUN, status.split(":", 1)[1].strip() if ":" in status
                    else status[len("not run"):].strip(" ()") or "not run")
    if results is None:
        return done(NOT_MEASURED, f"the run {status} and left no rows")
    skipped = _skip_reason(results)
    if skipped:
        return done(NOT_RUN, skipped)
    note = "" if status == "passed" else f" (from the rows left by a run that {status})"
    found = finding_of(claim, results)
    try:
        fig = claim.measure(results)
    except Unmeasured as exc:
        if found:
            return done(HOLDS, f"{found}; no ratio where both sides ran ({exc}){note}")
        note = "" if status == "passed" else f" (the run {status})"
        return done(NOT_RUN if exc.not_run else NOT_MEASURED, f"{exc}{note}")
    record.update(device_ratio=fig.value, ratio_lo=fig.lo, ratio_hi=fig.hi)
    if claim.kind == "property":
        shown = f"{fig.value:.3g}x" + (f" (95% interval {fig.lo:.3g}-{fig.hi:.3g})"
                                      if fig.lo is not None and fig.hi is not None else "")
        return done(PROPERTY, f"{shown}: a figure of this device, shown beside the source's, "
                              "not an effect to judge")
    said, reason = judge(claim, fig)
    if found:  # the finding decides; the ratio where both sides ran is told beside it
        said, reason = HOLDS, f"{found}; where both sides ran, {reason}"
    return done(said, reason + note)


def compare_to_source(results: Results | None, experiment: str) -> dict[str, Any] | None:
    """The source's figure, this device's with its interval, their ratio and the verdict ("" for
    none); None where the experiment states no claim."""
    from ..experiments import REGISTRY

    cls = REGISTRY.get(experiment)
    claim = claim_of(cls) if cls is not None else None
    if claim is None:
        return None
    fig: Figure | None = None
    if results is not None:
        try:
            fig = claim.measure(results)
        except Unmeasured:
            fig = None
    mine = fig.value if fig is not None else None
    source = claim.source
    if claim.source_key and results is not None and results.meta.get(claim.source_key):
        source = str(results.meta[claim.source_key])
    return {"source": source, "what": claim.criterion, "source_ratio": claim.source_ratio,
            "device_ratio": mine, "ratio_lo": fig.lo if fig else None,
            "ratio_hi": fig.hi if fig else None,
            "device_over_source": (mine / claim.source_ratio
                                   if mine is not None and claim.source_ratio else None),
            "verdict": HOLDS if finding_of(claim, results) else verdict(claim, mine),
            "absolute": claim.kind == "property"}


__all__ = ["CHANGED", "HOLDS", "NOT_MEASURED", "NOT_RUN", "PROPERTY", "REVERSED", "VERDICTS",
           "cannot_run", "compare_to_source", "experiment_verdict", "judge", "verdict"]
