"""The Guide's Appendix A as a scorecard: each of its 16 prioritised recommendations, the
experiments that test it, and what they found on this device.

The recommendations are the NVIDIA OpenCL Best Practices Guide's (2009), Appendix A.2 (high
priority, 7), A.3 (medium, 5) and A.4 (low, 4), restated here in our own words with the section
that argues each one. A recommendation that no benchmark can test (a way of working, or a
choice the OpenCL programmer cannot make) lists no experiments and says why.

A recommendation's verdict combines the verdict records of its experiments (the shape is
``pyclperf.guide.figures``'s per-experiment record: experiment, kind, claim, source, criterion,
source_ratio, device_ratio, ratio_lo, ratio_hi, verdict, reason):

* no experiments: "not measurable", with the reason;
* of the experiments that gave a verdict (holds / changed / reversed): all the same -> that
  verdict; any two different -> "mixed". Experiments without one are named in the reason;
* none gave a verdict: "not run" where none of them ran, else "not measured".

The effect lists every experiment's figure that was measured, against the source's, whatever
its verdict.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from .run import Outcome
    from ..measure.results import Results

HIGH, MEDIUM, LOW = "high", "medium", "low"
JUDGED = ("holds", "changed", "reversed")  # an experiment verdict that judges the claim
NOT_RUN, NOT_MEASURED, NOT_MEASURABLE, MIXED = "not run", "not measured", "not measurable", "mixed"


@dataclass(frozen=True)
class Recommendation:
    id: str                 # its place in Appendix A: "A.<priority list>.<position>"
    priority: str           # high / medium / low (A.2 / A.3 / A.4)
    recommendation: str     # our words
    source: str             # the Guide section that argues it
    experiments: tuple[str, ...] = ()  # the experiments whose verdicts test it
    unmeasurable: str = ""  # where no experiment can: why


RECOMMENDATIONS: tuple[Recommendation, ...] = (
    Recommendation(
        "A.2.1", HIGH, "Look first for ways to make the sequential parts of the program parallel",
        "Guide 1.3", unmeasurable="a matter of the application's algorithm: how much of a program "
        "can run in parallel is not a property of the device, so no fixed kernel can show it"),
    Recommendation(
        "A.2.2", HIGH, "Judge performance and every optimisation by the effective bandwidth "
        "achieved", "Guide 2.2", unmeasurable="a way of measuring, not an effect to measure: every "
        "bandwidth in this guide is already effective bandwidth (the bytes a kernel needs over "
        "its time), so the recommendation is followed throughout rather than tested"),
    Recommendation(
        "A.2.3", HIGH, "Move as little data between host and device as possible, even if some "
        "kernels then run on the device without gaining anything there", "Guide 3.1",
        ("transfer", "batching")),
    Recommendation(
        "A.2.4", HIGH, "Arrange global-memory accesses so that they coalesce", "Guide 3.2.1",
        ("offset", "stride", "aat")),
    Recommendation(
        "A.2.5", HIGH, "Touch global memory as little as possible; serve repeated accesses from "
        "local memory instead", "Guide 5.2", ("histogram", "separable")),
    Recommendation(
        "A.2.6", HIGH, "Keep the work-items of one warp on a single execution path", "Guide 6.1",
        ("divergence",)),
    Recommendation(
        "A.2.7", HIGH, "Build kernels with -cl-mad-enable", "Guide chapter 5", ("buildopts",)),
    Recommendation(
        "A.3.1", MEDIUM, "Lay out local-memory accesses so that bank conflicts do not serialise "
        "them", "Guide 3.2.2.1", ("banks",)),
    Recommendation(
        "A.3.2", MEDIUM, "Stage data in local memory so that global memory is not read more than "
        "once for it", "Guide 3.2.2.2", ("matmul", "aat")),
    Recommendation(
        "A.3.3", MEDIUM, "Keep enough warps resident (25% occupancy up to compute capability 1.1, "
        "18.75% after) to hide the latency of dependent register operations", "Guide 4.3",
        ("occupancy", "ilp")),
    Recommendation(
        "A.3.4", MEDIUM, "Choose a work-group size that is a multiple of 32", "Guide 4.4",
        ("blocksize",)),
    Recommendation(
        "A.3.5", MEDIUM, "Use the native_ math functions where speed matters more than accuracy",
        "Guide 5.1.4", ("math",)),
    Recommendation(
        "A.4.1", LOW, "Pass long kernel argument lists through constant memory to spare shared "
        "memory", "Guide 3.2.2.4", unmeasurable="OpenCL leaves where kernel arguments are kept to "
        "the implementation (NVIDIA has kept them in constant memory, not shared memory, since "
        "compute capability 2.0), so no OpenCL kernel can choose to spare local memory this way; "
        "the constant experiment measures constant memory for data, a different use"),
    Recommendation(
        "A.4.2", LOW, "Replace division and modulo by powers of two with shifts and masks",
        "Guide 5.1.1", ("intops",)),
    Recommendation(
        "A.4.3", LOW, "Avoid silent conversions between double and float (write float literals "
        "with the f suffix)", "Guide 5.1.3", ("intops",)),
    Recommendation(
        "A.4.4", LOW, "Write branches the compiler can predicate rather than loops or control "
        "statements", "Guide 6.2", ("divergence",)),
)


def verdict_record(experiment: str, results: "Results | None", status: str) -> dict[str, Any]:
    """One experiment's verdict record: its class's claim judged on its results
    (``figures.experiment_verdict``), with figures that JSON can hold."""
    from ..experiments import REGISTRY
    from . import figures as guide_figures

    cls = REGISTRY.get(experiment)
    if cls is None:
        return {"experiment": experiment, "kind": "claim", "claim": "", "source": "", "criterion": "",
                "source_ratio": None, "device_ratio": None, "ratio_lo": None, "ratio_hi": None,
                "verdict": NOT_MEASURED, "reason": f"no experiment {experiment!r} in this pyclperf"}
    record = dict(guide_figures.experiment_verdict(cls, results, status))
    for key in ("source_ratio", "device_ratio", "ratio_lo", "ratio_hi"):
        record[key] = _finite(record.get(key))
    return record


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def experiment_records(outcomes: Sequence["Outcome"]) -> dict[str, dict[str, Any]]:
    """Every outcome's verdict record, by experiment id."""
    return {o.experiment: verdict_record(o.experiment, o.results, o.status) for o in outcomes}


def _effect(record: Mapping[str, Any]) -> str:
    name, device = record["experiment"], record["device_ratio"]
    text = f"{name}: {record.get('criterion') or 'ratio'} = {device:.3g}"
    lo, hi = record.get("ratio_lo"), record.get("ratio_hi")
    if lo is not None and hi is not None:
        text += f" [{lo:.3g}, {hi:.3g}]"
    if record.get("source_ratio") is not None:
        text += f" (source {record['source_ratio']:.3g})"
    return f"{text}, {record['verdict']}"


def recommendation_record(rec: Recommendation,
                          records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``rec``'s scorecard record from the experiments' verdict records (the module docstring's
    rule). An experiment absent from ``records`` counts as not run."""
    out: dict[str, Any] = {"id": rec.id, "priority": rec.priority,
                           "recommendation": rec.recommendation, "source": rec.source,
                           "experiments": list(rec.experiments)}
    if not rec.experiments:
        return {**out, "verdict": NOT_MEASURABLE, "effect": "", "reason": rec.unmeasurable}
    found = [records.get(e) or {"experiment": e, "verdict": NOT_RUN, "reason": "not in this run"}
             for e in rec.experiments]
    judged = {str(r["verdict"]) for r in found if r["verdict"] in JUDGED}
    unjudged = [f"{r['experiment']}: {r['verdict']}" + (f" ({r['reason']})" if r.get("reason") else "")
                for r in found if r["verdict"] not in JUDGED]
    if judged:
        verdict = judged.pop() if len(judged) == 1 else MIXED
    else:
        verdict = NOT_RUN if all(r["verdict"] == NOT_RUN for r in found) else NOT_MEASURED
    effect = "; ".join(_effect(r) for r in found if r.get("device_ratio") is not None)
    return {**out, "verdict": verdict, "effect": effect,
            "reason": "; ".join(unjudged)}


def scorecard(records: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The 16 recommendation records, in Appendix A's order."""
    return [recommendation_record(rec, records) for rec in RECOMMENDATIONS]


def scorecard_html(outcomes: Sequence["Outcome"]) -> str:
    """The scorecard as the guide page's opening table; experiments link to their sections."""
    present = {o.experiment for o in outcomes}
    rows = []
    for r in scorecard(experiment_records(outcomes)):
        links = ", ".join(f"<a href='#{_e(x)}'>{_e(x)}</a>" if x in present else _e(x)
                          for x in r["experiments"]) or "none"
        why = f"<br><span class='meta'>{_e(r['reason'])}</span>" if r["reason"] else ""
        verdict_class = _e(r["verdict"]).replace(" ", "-")
        rows.append(
            f"<tr class='scorecard-row'><td class='left'>{_e(r['priority'])}</td>"
            f"<td class='left'>{_e(r['id'])}</td>"
            f"<td class='left'>{_e(r['recommendation'])} <span class='meta'>({_e(r['source'])})</span></td>"
            f"<td class='left'>{links}</td><td class='verdict {verdict_class}'>{_e(r['verdict'])}</td>"
            f"<td class='left'>{_e(r['effect'])}{why}</td></tr>")
    head = ("<tr><th class='left'>priority</th><th class='left'>Appendix A</th>"
            "<th class='left'>recommendation</th><th class='left'>experiments</th>"
            "<th>verdict</th><th class='left'>effect</th></tr>")
    return ("<h2 id='scorecard'>Scorecard: the Guide's Appendix A recommendations</h2>"
            "<style>.mixed { color: #a60; } .scorecard-row .meta { font-size: 0.8em; }</style>"
            f"<div class='scroll'><table>{head}{''.join(rows)}</table></div>"
            "<details><summary>How a recommendation's verdict is decided</summary><pre>"
            f"{_e(__doc__ or '')}</pre></details>")


def _e(v: Any) -> str:
    return html.escape(str(v))


__all__: Sequence[str] = ["RECOMMENDATIONS", "Recommendation", "experiment_records",
                          "recommendation_record", "scorecard", "scorecard_html", "verdict_record"]
