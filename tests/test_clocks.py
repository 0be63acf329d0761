"""Every device's event clock is checked against the host clock before it is believed.

A placeholder event clock (queued 0, submit 1, start 2, end 3 for every command; a timer
resolution of 0) is faked by pyclperf's test hook, device/fake_clock.py: in this process by
install()/uninstall(), in a child process by PYCLPERF_FAKE_EVENT_CLOCK=placeholder, which the
package reads at import (tune()'s worker processes inherit it). The kernels still run on the
device; only the timestamps the Python layer receives are replaced, so the check works on what
the core returns. On such a device: the clock is found unusable, "auto" times by the host clock
and every row says so, events asked for anyway make every row suspect (never a plain ok), the
timers experiment concludes that the clock is unusable, adaptive timing stops on wall time, and
a default ``pyclperf run offset`` takes seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import pyclperf
from pyclperf.device import fake_clock as _fake_clock
from pyclperf.device import clocks
from pyclperf.measure.timing import time_adaptively, wall_limit_s
from pyclperf.experiments.base import MAX_REPEATS

# GB/s: far above what any device's copies reach (an H200's caches included), far below what
# 1 ns a launch would mean for these sizes.
PEAK = 50_000.0
QUICK = {"warmup": 1, "repeats": 3}
# The clock's check compares event time with host time: tests beside it on a shared device
# would slow the host's side and fail a sound clock (make gpu-check runs these alone).
pytestmark = pytest.mark.serial


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache directory of the test's own, and no verdict remembered by this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    clocks.forget()
    yield tmp_path / "cache"
    clocks.forget()


@pytest.fixture
def placeholder(cache, monkeypatch):
    monkeypatch.setenv(_fake_clock.ENV, _fake_clock.PLACEHOLDER)  # keys the cache apart
    _fake_clock.install()
    yield
    _fake_clock.uninstall()


def test_a_placeholder_clock_is_found_unusable_and_auto_times_by_host(ctx, placeholder):
    assert ctx.info.profiling_timer_resolution_ns == 0
    clock = clocks.event_clock(ctx)
    assert not clock.usable and not clock.cached
    text = clock.reason
    # The climb went on until the host clock saw the work grow (however slow the first rung was
    # on the host), so the growth of events was judged.
    low, top = clock.rungs[0], clock.rungs[-1]
    assert top["host_median_ns"] >= clocks.GROWTH_HOST * low["host_median_ns"], clock.rungs
    assert "resolution of 0 ns" in text and "do not grow with the work" in text, text
    assert "took" in text and "x less" in text  # the host clock saw far more time than events
    assert all(r["event_median_ns"] == 1.0 for r in clock.rungs)
    timing = clocks.timing_for(ctx, "auto")
    assert timing.method == "host" and "event clock failed its check" in timing.reason
    assert clocks.timing_for(ctx, "events").distrusted
    assert clocks.timing_for(ctx, "host").reason == ""
    with pytest.raises(pyclperf.InvalidArgumentError, match="timing method"):
        clocks.timing_for(ctx, "sundial")


def test_the_real_clock_passes_and_its_verdict_is_cached_per_device(ctx, cache):
    clock = clocks.event_clock(ctx)
    assert clock.usable and clock.problems == () and clock.rungs
    # Events grew with the work, as the host clock saw it.
    assert clock.rungs[-1]["event_median_ns"] > 2 * clock.rungs[0]["event_median_ns"]
    stored = json.loads((cache / "pyclperf" / clocks.FILE_NAME).read_text())
    assert [e["device"] for e in stored.values()] == [ctx.info.name]
    clocks.forget()
    again = clocks.event_clock(ctx)
    assert again.cached and again.usable and again.rungs == clock.rungs
    timing = clocks.timing_for(ctx, "auto")
    assert timing.method == "events" and timing.reason == "" and not timing.distrusted


def test_judge_names_each_kind_of_broken_clock():
    def rung(items, events, host, wall=None):
        return {"items": items, "event_median_ns": events, "event_min_ns": events,
                "event_sum_ns": 5 * events, "wall_ns": wall if wall is not None else 5 * host * 1.1,
                "host_median_ns": host}

    sound = [rung(1024, 2e3, 10e3), rung(1 << 20, 200e3, 210e3)]
    assert clocks.judge(1, sound) == []
    assert clocks.judge(1000, sound) == []  # a coarse resolution is no fault
    assert "resolution of 0 ns" in clocks.judge(0, sound)[0]
    zero = [rung(1024, 0.0, 10e3), rung(1 << 20, 0.0, 210e3)]
    assert any("event duration of 0 ns" in p for p in clocks.judge(1, zero))
    flat = [rung(1024, 5e3, 10e3), rung(1 << 20, 6e3, 210e3)]
    assert any("do not grow" in p for p in clocks.judge(1, flat))
    fast = [rung(1024, 2e3, 10e3), rung(1 << 20, 2e6, 210e3, wall=1.1e6)]  # events > wall
    assert any("add up to" in p and "but took" in p for p in clocks.judge(1, fast))
    slow = [rung(1024, 2e2, 10e3), rung(1 << 20, 2e3, 210e3)]  # events 1/100 of the time
    assert any("x less" in p for p in clocks.judge(1, slow))


def test_run_on_a_placeholder_clock_times_by_host_and_every_row_says_so(ctx, placeholder):
    res = pyclperf.run("offset", ctx, values=[0, 1, 2], peak_gbps=PEAK, **QUICK)
    meta = res.meta
    assert meta["method"] == "host" and meta["method_asked"] == "auto"
    assert "event clock failed its check" in meta["method_reason"]
    assert meta["event_clock"]["usable"] is False and meta["event_clock"]["resolution_ns"] == 0
    for row in res.rows:
        assert row["method"] == "host" and "event clock failed its check" in row["method_reason"]
        assert row["status"] == "ok" and row["median_ns"] > 1000  # real times, not 1 ns
        assert row["gbps"] < PEAK and "suspect" not in row


def test_events_asked_on_a_placeholder_clock_are_never_a_plain_ok(ctx, placeholder):
    start = time.monotonic()
    res = pyclperf.run("offset", ctx, values=[0, 1], method="events", peak_gbps=PEAK, **QUICK)
    took = time.monotonic() - start
    assert res.meta["method"] == "events" and "events asked for" in res.meta["method_reason"]
    for row in res.rows:
        assert row["median_ns"] == 1.0 and row["gbps"] > PEAK  # the fiction a placeholder tells
        assert row["status"] == "suspect" and row["verified"]
        assert "event clock that failed its check" in row["suspect"]
        # The clock never added up to min_time_s: the host's wall time ended the timing.
        assert row["n"] < MAX_REPEATS
    assert took < 2 * (wall_limit_s(0.02) + 2.0)
    assert res.meta["suspect_points"] == 2 and "2 of 2 points suspect" in res.meta["conclusion"]
    with pytest.raises(ValueError, match="no verified row"):
        res.best("gbps")  # a suspect figure never wins


def test_timers_concludes_whether_the_event_clock_can_be_believed(ctx, cache, monkeypatch):
    sizes = [1 << 10, 1 << 16]
    real = pyclperf.run("timers", ctx, values=sizes, local_size=64, **QUICK)
    assert real.meta["event_clock_usable"] is True
    assert real.meta["conclusion"].startswith("The event clock passed its check")
    assert all(r["status"] == "ok" for r in real.rows)
    monkeypatch.setenv(_fake_clock.ENV, _fake_clock.PLACEHOLDER)
    _fake_clock.install()
    try:
        fake = pyclperf.run("timers", ctx, values=sizes, local_size=64, **QUICK)
    finally:
        _fake_clock.uninstall()
    assert fake.meta["event_clock_usable"] is False
    assert fake.meta["conclusion"].startswith("The event clock is unusable on this device")
    assert "times its event time" in fake.meta["conclusion"]
    assert all(r["status"] == "suspect" and r["host_over_events"] > 100 for r in fake.rows)


class _StillClock:
    """A kernel stand-in whose event clock never advances (1 ns a launch) while each launch
    takes 50 us of wall time."""

    def __init__(self) -> None:
        self.launches = 0

    def run(self, g, local):
        self.launches += 1

    def time(self, g, local, *, warmup, repeats, method="events"):
        self.launches += warmup + repeats
        time.sleep(50e-6 * (warmup + repeats))
        return np.ones(repeats)


def test_adaptive_timing_is_bounded_by_wall_time_on_a_clock_that_does_not_advance():
    k = _StillClock()
    start = time.perf_counter()
    times = time_adaptively(k, [64], None, warmup=1, min_time_s=0.02, min_repeats=5,
                            max_repeats=MAX_REPEATS)
    took = time.perf_counter() - start
    assert len(times) < MAX_REPEATS and took < 3 * wall_limit_s(0.02)
    assert times.sum() < 0.02e9  # the clock never added up: the wall time stopped it


def test_the_fake_clock_refuses_what_it_does_not_know(monkeypatch):
    monkeypatch.setenv(_fake_clock.ENV, "sundial")
    with pytest.raises(pyclperf.InvalidArgumentError, match="only fake event clock"):
        _fake_clock.install_if_asked()
    assert not _fake_clock.active()


def _child_env(ctx, cache: Path) -> dict[str, str]:
    src = str(Path(pyclperf.__file__).resolve().parent.parent)
    return {**os.environ, _fake_clock.ENV: _fake_clock.PLACEHOLDER, "XDG_CACHE_HOME": str(cache),
            "PYCLPERF_DEVICE": f"{ctx.info.platform_index}:{ctx.info.device_index}",
            "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
            "MPLBACKEND": "Agg"}


def test_a_default_run_offset_on_a_placeholder_clock_takes_seconds(ctx, tmp_path):
    """End to end, through the environment variable: the defaults, the command line."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pyclperf", "run", "offset", "--out",
                           str(tmp_path), "--no-plot"], env=_child_env(ctx, tmp_path / "cache"),
                          capture_output=True, text=True, timeout=300)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert took < 60, f"{took:.0f} s"  # 45 minutes before the clock was checked
    assert "timing: host clock (includes launch gap) [host clock: the device's event clock" in proc.stdout
    res = pyclperf.Results.load(tmp_path / "offset.jsonl")
    assert res.meta["method"] == "host" and len(res.rows) == 33
    assert all(r["method"] == "host" and r["method_reason"] and r["status"] == "ok" for r in res.rows)
