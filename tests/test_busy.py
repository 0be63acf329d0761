"""A sweep finishes each row while the next point's launches run (device/busy.py,
measure.sweep.run_points' finish_row): the work is done between enqueueing and waiting, only by
its own thread, rows stay complete and in order, and a failure or an interrupt in the finishing
keeps what run_points always kept."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pyclperf.device import busy, program
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.offset import OffsetCopy
from pyclperf.measure.sweep import run_points

SOURCE = "__kernel void add1(__global float* a) { a[get_global_id(0)] += 1.0f; }"


@pytest.fixture
def add1(ctx):
    kernel = ctx.program(SOURCE).kernel("add1")
    buf = ctx.buffer(4 * 4096)
    buf.write(np.zeros(4096, np.float32))
    kernel.set_args(buf)
    yield kernel, buf
    busy.do_waiting_work()  # nothing left over for another test's timing


@pytest.fixture
def order(monkeypatch):
    """What happened, in order: each timed call's enqueue ("begin") and wait ("finish")."""
    seen: list[str] = []
    real = program._begin_durations

    class Pending:
        def __init__(self, inner):
            self.inner = inner

        def finish(self):
            seen.append("finish")
            return self.inner.finish()

    def begin(*args):
        seen.append("begin")
        return Pending(real(*args))

    monkeypatch.setattr(program, "_begin_durations", begin)
    return seen


@pytest.mark.device
def test_waiting_work_is_done_between_enqueue_and_wait(add1, order):
    kernel, buf = add1
    busy.when_device_busy(lambda: order.append("work 1"))
    busy.when_device_busy(lambda: order.append("work 2"))
    times = kernel.time(4096, 64, warmup=2, repeats=5)
    assert order == ["begin", "work 1", "work 2", "finish"]
    assert times.shape == (5,) and (times > 0).all()
    got = np.empty(4096, np.float32)
    buf.read(got)
    assert (got == 7.0).all()  # every launch ran once: 2 warm-ups + 5 timed
    kernel.time(4096, 64, warmup=0, repeats=2)  # nothing waiting: the one-call path
    assert order == ["begin", "work 1", "work 2", "finish"]


@pytest.mark.device
def test_another_threads_work_waits_for_that_thread(add1, order):
    kernel, _ = add1
    done: list[str] = []
    handed = threading.Event()
    go = threading.Event()

    def other() -> None:
        busy.when_device_busy(lambda: done.append("other"))
        handed.set()
        go.wait(10)
        busy.do_waiting_work()

    t = threading.Thread(target=other)
    t.start()
    handed.wait(10)
    kernel.time(4096, 64, warmup=0, repeats=3)
    assert done == [] and order == []  # this thread had nothing waiting: one call, no split
    go.set()
    t.join(10)
    assert done == ["other"]


@pytest.mark.device
def test_a_sweep_finishes_every_row_in_order_while_the_next_point_runs(ctx, order):
    exp = OffsetCopy(ctx, items=1 << 14, values=[0, 1, 2, 3, 4])
    res = run_experiment(exp, warmup=1, repeats=3, verify=False, policy="quick")
    assert [r["offset"] for r in res.rows] == [0, 1, 2, 3, 4]
    for r in res.rows:  # the finishing (ceilings, noise, residency) reached every row
        assert {"noisy", "working_set_bytes", "cache_resident"} <= set(r), r
        assert r["status"] in ("timed", "suspect")
    # Points 1-4 each did the last row's finishing inside their first timed call.
    assert order.count("begin") >= 4 and order[:2] == ["begin", "finish"]
    assert not busy.waiting.work


def _measure_with(kernel):
    def measure(point):
        t = kernel.time(4096, 64, warmup=0, repeats=2)
        return {"median_ns": float(np.median(t)), "status": "timed"}
    return measure


@pytest.mark.device
def test_a_point_failure_in_finishing_is_that_row_s_status_and_anything_else_stops_the_sweep(add1):
    kernel, _ = add1

    def finish(row):
        if row["i"] == 1:
            raise ValueError("row 1 cannot be finished")
        row["finished"] = True

    res = run_points([{"i": i} for i in range(4)], _measure_with(kernel), meta={},
                     finish_row=finish)  # as a point's own ValueError: its row says so
    assert [r["i"] for r in res.rows] == [0, 1, 2, 3]
    assert res.rows[1]["status"] != "timed" and "row 1 cannot be finished" in res.rows[1]["error"]
    assert all(r.get("finished") for i, r in enumerate(res.rows) if i != 1)

    def broken(row):
        if row["i"] == 1:
            raise RuntimeError("not a point's failure")

    # Raised in the sweep's own frame, not inside point 2's timing as that point's error.
    with pytest.raises(RuntimeError, match="not a point's failure"):
        run_points([{"i": i} for i in range(4)], _measure_with(kernel), meta={},
                   finish_row=broken)
    assert not busy.waiting.work


@pytest.mark.device
@pytest.mark.parametrize("where", ["measuring", "finishing"])
def test_an_interrupt_keeps_every_row_that_was_measured(add1, where):
    kernel, _ = add1
    measure_one = _measure_with(kernel)

    def measure(point):
        if where == "measuring" and point["i"] == 2:
            raise KeyboardInterrupt
        return measure_one(point)

    def finish(row):
        if where == "finishing" and row["i"] == 1:
            raise KeyboardInterrupt
        row["finished"] = True

    res = run_points([{"i": i} for i in range(4)], measure, meta={}, finish_row=finish)
    assert res.meta["interrupted"]
    # Cut short while measuring point 2: rows 0 and 1, both finished. While finishing row 1:
    # row 0 alone (row 1's checks were not all made, so it is left out, not shown unchecked).
    assert [r["i"] for r in res.rows] == ([0, 1] if where == "measuring" else [0])
    assert all(r["finished"] for r in res.rows)
    assert not busy.waiting.work


@pytest.mark.device
def test_with_a_results_file_each_row_is_written_before_the_next_point(add1, order, tmp_path):
    kernel, _ = add1
    out = tmp_path / "rows.jsonl"
    measure_one = _measure_with(kernel)
    written: list[int] = []

    def measure(point):
        written.append(len(out.read_text().splitlines()) - 1)  # lines past the metadata
        return measure_one(point)

    res = run_points([{"i": i} for i in range(3)], measure, meta={}, out=out,
                     finish_row=lambda row: row.update(finished=True))
    assert written == [0, 1, 2]  # a kill while a point runs loses no row measured before it
    assert "begin" not in order and all(r["finished"] for r in res.rows)
