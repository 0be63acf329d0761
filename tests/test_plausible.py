"""Physical plausibility: a figure beyond what the device can do is never a plain ok. A launch
whose fastest time is shorter than its working set (less what a cache may hold) needs at the
theoretical ceiling is ``suspect``, whichever clock timed it, with the reason in the row."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import pyclperf
from pyclperf.measure import plausible
from pyclperf.experiments.workingset import WorkingSet
from pyclperf.measure.results import OK, SUSPECT, TIMED, WRONG
from pyclperf.measure.stats import MiB

QUICK = {"warmup": 1, "repeats": 3, "min_time_s": 0.0}


def test_the_ceiling_bound_counts_only_what_no_cache_can_hold():
    row = {"min_ns": 1000.0}
    allowance = 256 * MiB
    # 1 GiB in 1 us at a 1000 GB/s ceiling: (1 GiB - 256 MiB) needs 805 us.
    why = plausible.ceiling_problem(row, kind="dram", ceiling_gbps=1000.0, source="user",
                                    footprint=1024 * MiB, allowance=allowance)
    assert "shorter than the 805306 ns" in why and "768.0 MiB beyond the 256 MiB" in why
    assert "theoretical DRAM peak of 1000 GB/s (user)" in why
    # A working set a cache could hold: no bound at all.
    assert plausible.ceiling_problem(row, kind="dram", ceiling_gbps=1000.0, source="user",
                                     footprint=allowance, allowance=allowance) == ""
    # PCIe: no cache in the way; 1 MiB in 1 us is 1049 GB/s, over a 64 GB/s link.
    assert "PCIe peak of 64 GB/s" in plausible.ceiling_problem(
        row, kind="pcie", ceiling_gbps=64.0, source="NVML", footprint=MiB, allowance=allowance)
    # Within PEAK_SLACK of the bound, and with no ceiling or no kind: nothing said.
    exact = {"min_ns": MiB / 64.0 / (1 + plausible.PEAK_SLACK / 2)}
    assert plausible.ceiling_problem(exact, kind="pcie", ceiling_gbps=64.0, source="",
                                     footprint=MiB, allowance=0) == ""
    for kind, ceiling in (("dram", None), (None, 1.0)):
        assert plausible.ceiling_problem(row, kind=kind, ceiling_gbps=ceiling, source="",
                                         footprint=1 << 40, allowance=0) == ""


def test_the_cache_allowance_is_never_below_the_largest_caches_built():
    assert plausible.cache_allowance(SimpleNamespace(global_mem_cache_bytes=4 * MiB)) == 256 * MiB
    assert plausible.cache_allowance(SimpleNamespace(global_mem_cache_bytes=96 * MiB)) == 384 * MiB


def test_flag_makes_ok_and_timed_rows_suspect_and_leaves_failures_alone():
    for status in (OK, TIMED):
        row = {"status": status, "verified": status == OK}
        plausible.flag(row, ["", "too fast"])
        assert row["status"] == SUSPECT and row["suspect"] == "too fast"
        assert row["verified"] == (status == OK)
        plausible.flag(row, ["and on a broken clock"])
        assert row["suspect"] == "too fast; and on a broken clock"
    wrong = {"status": WRONG}
    plausible.flag(wrong, ["too fast"])
    assert wrong == {"status": WRONG}
    ok = {"status": OK}
    plausible.flag(ok, ["", ""])
    assert ok == {"status": OK}


@pytest.fixture
def no_cache_allowance(monkeypatch):
    """As if the device had no cache: every byte of a launch's working set counts."""
    monkeypatch.setattr(plausible, "CACHE_ALLOWANCE_MIN", 0)
    monkeypatch.setattr(plausible, "CACHE_ALLOWANCE_FACTOR", 0)


@pytest.mark.parametrize("method", ["events", "host"])
def test_a_figure_above_the_ceiling_is_suspect_whichever_clock_timed_it(ctx, no_cache_allowance,
                                                                        method):
    # A copy of 2 x 1 MiB cannot take less than 2 ms at 0.001 GB/s; it takes far less here.
    slow = pyclperf.run("offset", ctx, size=1 << 18, values=[0, 1], peak_gbps=0.001,
                        method=method, **QUICK)
    assert slow.meta["cache_allowance_bytes"] == 0
    for row in slow.rows:
        assert row["status"] == SUSPECT and row["verified"] and row["method"] == method
        assert "is shorter than the" in row["suspect"] and "DRAM peak of 0.001 GB/s" in row["suspect"]
        assert row["fraction_of_peak"] > 1
    assert slow.meta["suspect_points"] == 2 and "points suspect" in slow.meta["conclusion"]
    # A ceiling the device cannot reach leaves every row ok.
    fast = pyclperf.run("offset", ctx, size=1 << 18, values=[0, 1], peak_gbps=1e6,
                        method=method, **QUICK)
    assert all(r["status"] == OK and "suspect" not in r for r in fast.rows)
    assert fast.meta["suspect_points"] == 0


def test_a_working_set_read_again_counts_once(ctx):
    exp = WorkingSet(ctx, sizes=[4096], kinds=["read"])
    assert exp.footprint_bytes({"kind": "read", "size": 4096, "bytes": 8 << 20}) == 4096
    plain = pyclperf.experiments.get("offset").configure(ctx, size=1024, values=[0])
    assert plain.footprint_bytes({"bytes": 8192}) == 8192
