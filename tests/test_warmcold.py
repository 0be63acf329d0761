"""Warm and cold experiment figures (pyclperf.experiments._warmcold): rows record their working set
and residency, ``cold`` flushes before every timed launch, and the guide's figure resting on
cache-resident points is measured again cold, those points only, with a note on the page."""

from __future__ import annotations

import pytest

from pyclperf.experiments import _warmcold as warmcold
from pyclperf.experiments import run
from pyclperf.guide.run import Outcome
from pyclperf.experiments.claims import Unmeasured, claim_of
from pyclperf.experiments.offset import OffsetCopy as Offset
from pyclperf.measure.results import Results

# A working set every device's last-level cache allowance holds (the default sizes of a GPU
# run do not fit it: they are chosen to be DRAM-sized).
SMALL = 1 << 16
FAST = dict(warmup=1, repeats=2, min_time_s=0.0, progress=False)


def _offset_rows(gbps):
    return [{"offset": o, "status": "ok", "gbps": g, "cache_resident": True, "working_set_bytes": 1 << 20}
            for o, g in zip(range(len(gbps)), gbps)]


def _offset_figure(res):
    try:
        return claim_of(Offset).measure(res).value
    except Unmeasured:
        return None


def test_the_rows_a_figure_uses_are_those_it_changes_without():
    res = Results({"experiment": "offset"}, _offset_rows([100.0, 50.0, 60.0, 70.0]))
    assert warmcold.figure_rows(res, _offset_figure) == [0, 1]
    res.rows[2]["status"] = "wrong result"
    assert warmcold.figure_rows(res, _offset_figure) == [0, 1]
    assert warmcold.figure_rows(Results({}, []), _offset_figure) == []


def test_the_note_says_warm_and_by_how_much_cold_changes_it():
    meta = {"warm_cold": {"working_set_bytes": 2 << 20, "cache_bytes": 256 << 20,
                          "warm_ratio": 0.9, "cold_ratio": 1.15, "change": 0.278, "changes": True}}
    text = warmcold.note(meta)
    assert text.startswith("taken warm: working set 2 MiB fits the 256 MiB")
    assert "a cold run changes it by +28%" in text
    meta["warm_cold"].update(cold_ratio=0.92, change=0.022, changes=False)
    assert "within 10% (+2.2%)" in warmcold.note(meta) and "changes it" not in warmcold.note(meta)
    assert warmcold.note({}) == ""


def test_cold_flushes_before_every_timed_launch_and_rows_say_so(ctx, monkeypatch):
    flushes = []
    monkeypatch.setattr(warmcold, "cache_flush", lambda c: lambda: flushes.append(1))
    warm = run("offset", ctx, size=SMALL, values=[0], **FAST)
    assert not flushes
    row = warm.rows[0]
    assert row["cache_resident"] is True and row["cold"] is False and row["working_set_bytes"] > 0
    cold = run("offset", ctx, size=SMALL, values=[0], **FAST)  # warm again: no flush
    assert not flushes and cold.meta["cold"] is False
    cold = run("offset", ctx, size=SMALL, values=[0], cold=True, **FAST)
    assert cold.meta["cold"] is True
    assert cold.rows[0]["cold"] is True and cold.rows[0]["cache_resident"] is False
    assert len(flushes) >= 1 + 2  # the verified launch, then at least every timed one


def test_cold_check_measures_the_figures_points_again_cold(ctx, monkeypatch):
    measured = []
    real = warmcold.cold_check

    def spy(experiment, results, **kw):
        original = experiment.measure

        def measure(point, **k):
            measured.append((dict(point), experiment.cold))
            return original(point, **k)

        experiment.measure = measure
        return real(experiment, results, **kw)

    monkeypatch.setattr(warmcold, "cold_check", spy)
    res = run("offset", ctx, size=SMALL, values=[0, 1, 2, 4], cold_check=True, **FAST)
    wc = res.meta["warm_cold"]
    assert measured == [({"offset": 0}, True), ({"offset": 1}, True)]  # those two only, cold
    assert wc["rows"] == [0, 1] and [p["point"] for p in wc["points"]] == [{"offset": 0}, {"offset": 1}]
    assert wc["warm_ratio"] == pytest.approx(_offset_figure(res))
    assert wc["cold_ratio"] > 0 and wc["change"] == pytest.approx(wc["cold_ratio"] / wc["warm_ratio"] - 1)
    assert wc["changes"] == (abs(wc["change"]) > warmcold.CHANGE)
    assert all(r["cold"] is False for r in res.rows)  # the rows themselves stay the warm run's


def test_the_guide_page_shows_the_note():
    from pyclperf.guide.report import _source_block

    res = Results({"experiment": "offset", "warm_cold": {
        "working_set_bytes": 2 << 20, "cache_bytes": 256 << 20, "warm_ratio": 0.9,
        "cold_ratio": 1.15, "change": 0.278, "changes": True}}, _offset_rows([100.0, 90.0]))
    html = _source_block(Outcome("offset", "passed", 1.0, 0, results=res), "GPU")
    assert "taken warm: working set 2 MiB" in html and "a cold run changes it by +28%" in html
