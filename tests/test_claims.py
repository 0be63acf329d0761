"""Every experiment states its claim on its own class; the guide's verdict record is never blank,
carries this device's figure with an interval from the rows' spread, and says "not run" where
the experiment could not run here. No device needed: the Results are synthetic."""

from __future__ import annotations

import math

import pytest

from pyclperf.guide import run as guide
from pyclperf.guide import figures as guide_figures
from pyclperf.experiments import catalogue, get, matmul
from pyclperf.experiments.claims import Figure, claim_of, row_se
from pyclperf.guide.report import render_guide
from pyclperf.measure.results import Results

VERDICTS = set(guide_figures.VERDICTS)


def row(median_ns: float, spread: float = 0.02, n: int = 50, **columns) -> dict:
    """A verified row: its median, an IQR of ``spread`` of it, n launches, and a bandwidth
    of 1 GB at that median."""
    return {**columns, "status": "ok", "n": n, "median_ns": median_ns,
            "iqr_ns": spread * median_ns, "gbps": 1e9 / median_ns}


def matmul_results(simple_ns: float, tiles_ns: float, spread: float = 0.02,
                   tiles_label: str | None = None) -> Results:
    return Results({"experiment": "matmul"}, [
        row(simple_ns, spread, variant=matmul.SIMPLE),
        row(tiles_ns, spread, variant=tiles_label or matmul.LOCAL_AB)])


def test_every_experiment_states_a_claim_with_words_source_and_criterion():
    ids = [cls.id for cls in catalogue()]
    assert len(ids) == 34
    for cls in catalogue():
        claim = claim_of(cls)
        assert claim is not None, cls.id
        assert claim.claim and claim.source and claim.criterion, cls.id
        assert claim.kind in ("claim", "property"), cls.id
    kinds = {cls.id: claim_of(cls).kind for cls in catalogue()}
    assert {i for i, k in kinds.items() if k == "property"} == {"timers", "peak", "bandwidth", "p2p"}


@pytest.mark.parametrize("cls", catalogue(), ids=lambda c: c.id)
def test_the_verdict_is_never_blank(cls):
    for results in (None, Results({"experiment": cls.id}, []),
                    Results({"experiment": cls.id}, [{"status": "wrong", "variant": "x", "error": "bad"}])):
        for status in ("passed", "crashed", "timed out"):
            rec = guide_figures.experiment_verdict(cls, results, status)
            assert rec["verdict"] in VERDICTS and rec["reason"], (cls.id, rec)
            assert rec["experiment"] == cls.id and rec["criterion"]


def test_a_renamed_matmul_variant_is_followed_by_the_figure_lookup(monkeypatch):
    cls = get("matmul")
    results = matmul_results(1000.0, 250.0, tiles_label="A and B tiles")
    before = guide_figures.experiment_verdict(cls, results, "passed")
    assert before["verdict"] == "not measured" and "local A+B" in before["reason"]
    monkeypatch.setattr(matmul, "LOCAL_AB", "A and B tiles")
    after = guide_figures.experiment_verdict(cls, results, "passed")
    assert after["verdict"] == "holds" and after["device_ratio"] == pytest.approx(4.0)
    assert guide_figures.compare_to_source(results, "matmul")["device_ratio"] == pytest.approx(4.0)


def test_synthetic_rows_give_the_ratio_its_interval_and_the_rule():
    cls = get("matmul")  # the source: 29.7 / 8.8 = 3.4x; holds from sqrt(3.4) = 1.84x
    rec = guide_figures.experiment_verdict(cls, matmul_results(1000.0, 250.0), "passed")
    assert rec["verdict"] == "holds" and rec["device_ratio"] == pytest.approx(4.0)
    # Each median's relative error: 1.2533 * (0.02 / 1.349) / sqrt(50); the ratio's adds both.
    se = math.hypot(*[1.2533141 * 0.02 / 1.349 / math.sqrt(50)] * 2)
    assert rec["ratio_lo"] == pytest.approx(4.0 * math.exp(-1.96 * se), rel=1e-4)
    assert rec["ratio_hi"] == pytest.approx(4.0 * math.exp(1.96 * se), rel=1e-4)
    assert "95% interval" in rec["reason"] and "straddles" not in rec["reason"]
    assert guide_figures.experiment_verdict(cls, matmul_results(1000.0, 800.0), "passed")["verdict"] == "changed"
    assert guide_figures.experiment_verdict(cls, matmul_results(1000.0, 2000.0), "passed")["verdict"] == "reversed"


def test_an_interval_across_a_boundary_is_said():
    cls = get("matmul")  # 1.25x: 'changed' (below 1.84x) but 'holds' is within a wide interval
    rec = guide_figures.experiment_verdict(cls, matmul_results(1000.0, 550.0, spread=1.5), "passed")
    assert rec["verdict"] == "holds" or rec["verdict"] == "changed"
    assert rec["ratio_lo"] < 1.84 < rec["ratio_hi"]
    assert "straddles the boundary" in rec["reason"]
    narrow = guide_figures.experiment_verdict(cls, matmul_results(1000.0, 550.0, spread=0.001), "passed")
    assert "straddles" not in narrow["reason"]


def test_rows_without_a_spread_give_no_interval_and_say_so():
    results = Results({"experiment": "matmul"}, [
        {"status": "ok", "variant": matmul.SIMPLE, "gbps": 1.0},
        {"status": "ok", "variant": matmul.LOCAL_AB, "gbps": 4.0}])
    rec = guide_figures.experiment_verdict(get("matmul"), results, "passed")
    assert rec["verdict"] == "holds" and rec["ratio_lo"] is None and "no interval" in rec["reason"]


def test_pooled_rows_count_their_spread_between_them():
    one = Figure.of(1.0, row_se(row(100.0)))
    results = Results({"experiment": "transfer"}, [
        row(100.0, mode="h2d pinned direct", size_bytes=1), row(140.0, mode="h2d pinned direct", size_bytes=2),
        row(200.0, mode="h2d pageable direct", size_bytes=1)])
    rec = guide_figures.experiment_verdict(get("transfer"), results, "passed")
    assert rec["ratio_hi"] / rec["ratio_lo"] > math.exp(2 * 1.96 * one.se * 2)  # wider than two rows'


def test_a_run_that_skipped_every_point_is_not_run_with_its_reason():
    why = "p2p needs two devices of one platform; 'NVIDIA CUDA' has only 'H100' here"
    results = Results({"experiment": "p2p"}, [
        {"mode": f"opencl copy {d}", "path": "opencl copy", "direction": d, "size_bytes": 4096,
         "status": "skipped", "error": why, "verified": False} for d in ("A->B", "B->A")])
    assert guide.outcome_status(guide.PASSED, results) == guide.CANNOT_RUN + why
    outcome = guide.Outcome("p2p", guide.outcome_status(guide.PASSED, results), 0.1, 0, "", results)
    assert not guide.failed(outcome)
    rec = guide_figures.experiment_verdict(get("p2p"), results, outcome.status)
    assert rec["verdict"] == "not run" and rec["reason"] == why
    page = render_guide([outcome])
    assert "passed" not in page.split("<h2>Summary</h2>")[1].split("</table>")[0]
    assert "not run" in page and why.replace("'", "&#x27;") in page


def test_a_skipped_variant_the_claim_needs_is_not_run_the_others_still_pass():
    why = "no sub-groups: the device claims neither cl_khr_subgroups nor __opencl_c_subgroups"
    results = Results({"experiment": "reduction"}, [
        row(1000.0, variant="tree"), row(900.0, variant="atomic"),
        {"variant": "subgroup", "status": "skipped", "error": why}])
    assert guide.outcome_status(guide.PASSED, results) == guide.PASSED
    rec = guide_figures.experiment_verdict(get("reduction"), results, guide.PASSED)
    assert rec["verdict"] == "not run" and why in rec["reason"]


def test_a_budget_or_a_crash_without_rows_still_gets_a_verdict():
    cls = get("offset")
    assert guide_figures.experiment_verdict(cls, None, guide.NOT_RUN)["verdict"] == "not run"
    crashed = guide_figures.experiment_verdict(cls, None, guide.CRASHED)
    assert crashed["verdict"] == "not measured" and "crashed" in crashed["reason"]


def test_a_property_is_shown_not_judged():
    results = Results({"experiment": "peak", "peak_gbps": 4800.0}, [
        {"ceiling": "dram", "gbps": 4800.0, "status": "ok"}])
    rec = guide_figures.experiment_verdict(get("peak"), results, "passed")
    assert rec["verdict"] == "device property" and rec["device_ratio"] == pytest.approx(4800 / 141.6)


def test_a_claim_of_no_effect_holds_near_one_and_changes_away_from_it():
    cls = get("workingset")  # the Guide: uncached, the same latency whatever the working set
    def chase(top_ns):
        return Results({"experiment": "workingset"}, [
            row(1000.0, kind="chase", size=4096, steps=10), row(top_ns, kind="chase", size=1 << 30, steps=10)])
    assert guide_figures.experiment_verdict(cls, chase(1050.0), "passed")["verdict"] == "holds"
    assert guide_figures.experiment_verdict(cls, chase(5000.0), "passed")["verdict"] == "changed"


def test_the_summary_shows_every_experiment_s_verdict():
    outcomes = [guide.Outcome(cls.id, guide.PASSED, 0.1, 0, "", None) for cls in catalogue()]
    table = render_guide(outcomes).split("<h2>Summary</h2>")[1].split("</table>")[0]
    for cls in catalogue():
        cell = table.split(f"href='#{cls.id}'")[1].split("</tr>")[0]
        assert "class='verdict " in cell and "not measured" in cell, cls.id
