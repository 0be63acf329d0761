"""benchmarks/overhead.py's figures: the per-point ones its summary derives from the rounds,
and the time it counts inside pyclperf's timing call."""

from __future__ import annotations

import time

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("overhead")


def test_the_summary_gives_per_point_figures(script):
    points = script.POINTS
    mine = {"unverified_loop_s": 0.10, "unverified_loop_inside_s": 0.099,
            "unverified_loop_timed_s": 0.08,
            "unverified_experiment_s": 0.11, "unverified_inside_s": 0.1, "unverified_timed_s": 0.08,
            "time_us": 20.0, "run_us": 19.0}
    theirs = {"unverified_loop_s": 0.105, "unverified_loop_timed_s": 0.08, "time_us": 21.0,
              "script_s": 0.106}
    s = script.summarize({"pyclperf": [mine, dict(mine, unverified_experiment_s=0.13)],
                          "pyopencl": [theirs, theirs]})
    assert s["python_us_per_point"]["pyclperf_loop"] == pytest.approx(0.001 / points * 1e6)
    # The two rounds' experiments: 10 and 30 ms past their time inside the timing calls.
    assert s["python_us_per_point"]["unverified_experiment"] == pytest.approx(0.02 / points * 1e6)
    assert s["experiment_extra_us_per_point"] == pytest.approx((0.12 - 0.105) / points * 1e6)
    warm = (script.WARMUP + script.REPEATS) / script.REPEATS
    assert s["host_us_per_point"]["pyopencl_loop"] == pytest.approx(
        (0.105 - 0.08 * warm) / points * 1e6)
    assert s["unverified_experiment_s_over_pyopencl"] == pytest.approx(0.12 / 0.105)


def test_inside_timing_counts_the_timing_calls_alone_and_restores_them(script, ctx):
    from pyclperf.device import program

    real = program._time_durations
    kernel = ctx.program("__kernel void k(__global float* x) { x[get_global_id(0)] = 1.0f; }"
                         ).kernel("k").set_args(ctx.buffer(4096))
    with script.InsideTiming() as inside:
        t0 = time.perf_counter()
        times = kernel.time(1024, None, warmup=1, repeats=5)
        time.sleep(0.05)  # Python outside the timing call
        wall = time.perf_counter() - t0
    assert times.shape == (5,) and np.all(times > 0)
    assert 0 < inside.seconds < wall - 0.05
    assert program._time_durations is real
