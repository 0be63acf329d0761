"""Fleet runs (one experiment on several devices, merged with a device column) and the fleet
comparison's flags."""

from __future__ import annotations

import pytest

from pyclperf.views.fleet import compare_fleet, merge, run_fleet
from pyclperf.measure.results import Results


def _part(gbps: list[float]) -> Results:
    meta = {"experiment": "offset", "x": "offset", "device": {"name": "dev"}}
    return Results(meta, [{"offset": i, "status": "ok", "gbps": g} for i, g in enumerate(gbps)])


def test_compare_flags_the_device_far_from_the_fleet_median(tmp_path):
    merged = merge([_part([100, 100]), _part([101, 99]), _part([100, 60])], ["a", "b", "c"],
                   tmp_path / "m.jsonl")
    assert Results.load(tmp_path / "m.jsonl").df["device"].tolist() == ["a", "a", "b", "b", "c", "c"]
    table = compare_fleet(merged)
    assert table["flagged"].tolist() == ["", "c"]
    assert table["c vs median %"].iloc[1] == pytest.approx(-100 * 39 / 99)
    assert list(table["fleet median"]) == [100, 99]


def test_compare_refuses_results_without_devices():
    with pytest.raises(ValueError, match="not a fleet run"):
        compare_fleet(_part([1.0]))


def test_fleet_run_on_two_processes_merges_rows_by_device(tmp_path):
    res = run_fleet("offset", ["0", "0"], tmp_path, size=4096, repeats=2, warmup=0)
    df = Results.load(tmp_path / "offset.jsonl").df
    assert len(df) == len(res.rows) and len(df) % 2 == 0
    assert set(df["status"]) == {"ok"}
    labels = list(res.meta["devices"])  # one PoCL device twice: still two columns
    assert len(labels) == 2 and labels[1] == labels[0] + " #2"
    table = compare_fleet(res)
    assert len(table) == len(df) // 2 and f"{labels[1]} vs median %" in table
