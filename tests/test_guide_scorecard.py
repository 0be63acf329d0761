"""The Appendix A scorecard: the Guide's 16 prioritised recommendations, the experiments that
test each, and a recommendation's verdict combined from its experiments' verdict records."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from pyclperf.guide import scorecard as sc
from pyclperf.experiments import names
from pyclperf.guide.run import Outcome
from pyclperf.measure.results import Results


def _record(experiment: str, verdict: str, device_ratio: float | None = None,
            source_ratio: float | None = None, reason: str = "") -> dict:
    """A per-experiment verdict record of the shape guide_figures produces."""
    return {"experiment": experiment, "kind": "claim", "claim": f"{experiment}'s claim",
            "source": "Guide", "criterion": f"{experiment} ratio", "source_ratio": source_ratio,
            "device_ratio": device_ratio, "ratio_lo": None, "ratio_hi": None,
            "verdict": verdict, "reason": reason}


def _rec(experiments: tuple[str, ...], unmeasurable: str = "") -> sc.Recommendation:
    return sc.Recommendation("A.9.9", sc.HIGH, "a test recommendation", "Guide 0", experiments,
                             unmeasurable)


def test_all_sixteen_recommendations_with_the_appendix_priorities():
    # Appendix A of the Guide (2009): A.2 lists 7 high-priority recommendations, A.3 five
    # medium, A.4 four low.
    recs = sc.RECOMMENDATIONS
    assert len(recs) == 16 and len({r.id for r in recs}) == 16
    assert Counter(r.priority for r in recs) == {"high": 7, "medium": 5, "low": 4}
    for r in recs:
        section = {"high": "2", "medium": "3", "low": "4"}[r.priority]
        assert re.fullmatch(rf"A\.{section}\.\d+", r.id), r.id
        assert r.recommendation and r.source.startswith("Guide")
        # Each is either tested by experiments of the catalogue or says why it cannot be.
        assert bool(r.experiments) != bool(r.unmeasurable), r.id
        assert set(r.experiments) <= set(names()), r.id
    numbers = [tuple(int(p) for p in r.id.split(".")[1:]) for r in recs]
    assert numbers == sorted(numbers)


def test_the_mapping_of_recommendations_to_experiments():
    by_id = {r.id: r for r in sc.RECOMMENDATIONS}
    assert set(by_id["A.2.4"].experiments) >= {"offset", "stride"}   # coalescing
    assert by_id["A.3.1"].experiments == ("banks",)
    assert by_id["A.2.7"].experiments == ("buildopts",)              # -cl-mad-enable
    assert by_id["A.3.5"].experiments == ("math",)                   # native math
    assert "transfer" in by_id["A.2.3"].experiments
    assert not by_id["A.2.1"].experiments and not by_id["A.2.2"].experiments


def test_all_experiments_holding_make_the_recommendation_hold():
    records = {"offset": _record("offset", "holds", 0.2, 0.095),
               "stride": _record("stride", "holds", 0.1)}
    out = sc.recommendation_record(_rec(("offset", "stride")), records)
    assert out["verdict"] == "holds" and out["reason"] == ""
    assert out["effect"] == ("offset: offset ratio = 0.2 (source 0.095), holds; "
                             "stride: stride ratio = 0.1, holds")
    assert out["experiments"] == ["offset", "stride"] and out["priority"] == "high"


def test_disagreeing_experiments_make_it_mixed_with_both_effects():
    records = {"offset": _record("offset", "holds", 0.2, 0.095),
               "stride": _record("stride", "reversed", 1.5)}
    out = sc.recommendation_record(_rec(("offset", "stride")), records)
    assert out["verdict"] == "mixed"
    assert "offset ratio = 0.2" in out["effect"] and "stride ratio = 1.5" in out["effect"]
    assert "holds" in out["effect"] and "reversed" in out["effect"]


def test_unjudged_experiments_are_named_beside_the_verdict_of_the_others():
    records = {"offset": _record("offset", "changed", 0.9, 0.095),
               "stride": _record("stride", "not measured", reason="no verified rows")}
    out = sc.recommendation_record(_rec(("offset", "stride", "aat")), records)
    assert out["verdict"] == "changed"
    assert out["reason"] == ("stride: not measured (no verified rows); "
                             "aat: not run (not in this run)")


@pytest.mark.parametrize("verdicts, want", [
    (("not run", "not run"), "not run"),
    (("not run", "not measured"), "not measured"),
    (("device property", "not run"), "not measured"),
])
def test_no_judged_experiment(verdicts, want):
    records = {f"e{i}": _record(f"e{i}", v, reason="why") for i, v in enumerate(verdicts)}
    out = sc.recommendation_record(_rec(tuple(records)), records)
    assert out["verdict"] == want and out["reason"] and out["effect"] == ""


def test_a_recommendation_without_experiments_is_not_measurable_and_says_why():
    out = sc.recommendation_record(_rec((), "a matter of the algorithm"), {})
    assert out["verdict"] == "not measurable" and out["reason"] == "a matter of the algorithm"
    assert out["experiments"] == [] and out["effect"] == ""


def test_the_scorecard_of_no_run_still_lists_every_recommendation():
    cards = sc.scorecard({})
    assert [c["id"] for c in cards] == [r.id for r in sc.RECOMMENDATIONS]
    assert all(c["verdict"] in ("not run", "not measurable") and c["reason"] for c in cards)


def _offset_results(misaligned_gbps: float) -> Results:
    rows = [{"offset": 0, "gbps": 100.0, "status": "ok"},
            {"offset": 1, "gbps": misaligned_gbps, "status": "ok"}]
    return Results({"experiment": "offset", "device": {"name": "Test GPU"}}, rows)


def test_verdict_records_come_from_the_experiments_claims():
    held = sc.verdict_record("offset", _offset_results(9.0), "passed")
    assert held["verdict"] == "holds" and held["device_ratio"] == pytest.approx(0.09)
    assert held["criterion"] and held["source_ratio"] == pytest.approx(7 / 74)
    crashed = sc.verdict_record("offset", None, "crashed")
    assert crashed["verdict"] == "not measured" and "crashed" in crashed["reason"]
    none = sc.verdict_record("offset", Results({}, [{"offset": 0, "gbps": 1.0, "status": "ok"}]),
                             "passed")
    assert none["verdict"] == "not measured" and none["reason"]
    assert sc.verdict_record("intops", Results({}, []), "passed")["verdict"] == "not measured"
    peak = sc.verdict_record("peak", Results({"peak_gbps": 283.2}, []), "passed")
    assert peak["kind"] == "property" and peak["verdict"] == "device property"


def test_scorecard_html_has_sixteen_rows_and_links_only_to_sections_present():
    outcomes = [Outcome("offset", "passed", 1.0, 0, "", _offset_results(9.0)),
                Outcome("stride", "crashed", 0.1, -11, "Segmentation fault", None)]
    text = sc.scorecard_html(outcomes)
    assert text.count("<tr class='scorecard-row'>") == 16
    assert "<a href='#offset'>offset</a>" in text and "<a href='#stride'>stride</a>" in text
    assert "href='#aat'" not in text  # not in this run: named, not linked
    row = re.search(r"<tr class='scorecard-row'><td class='left'>high</td><td class='left'>A\.2\.4"
                    r"</td>.*?</tr>", text)
    assert row and "class='verdict holds'" in row.group(0)
