"""benchmarks/overhead.py's figures: the per-call ones from paired rounds (benchmarks/
paired_blocks.py: both sides alive, their blocks alternating), the per-point ones its summary
derives from the rounds, and the time it counts inside pyclperf's timing call."""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("overhead")


@pytest.fixture(scope="module")
def pairs(benchmark_script):
    return benchmark_script("paired_blocks")


def stub_side(name: str, jobs: tuple[str, ...], log: Path, call: str = "") -> list[str]:
    """A side's process serving calls that each append a line "NAME.JOB" to ``log`` (one write
    each, in append mode: the lines of both sides land in the order they were made), or do what
    ``call`` says. It prints to stdout before it serves, which must not be read as an answer."""
    code = f"""
import os, sys, time
sys.path.insert(0, {str(BENCHMARKS)!r})
import paired_blocks
answers = paired_blocks.take_stdout()
print("a stray line on stdout")
log = os.open({str(log)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
def call(line):
    return lambda: {call or 'os.write(log, line)'}
paired_blocks.serve({{job: call(f"{name}.{{job}}\\n".encode()) for job in {jobs!r}}}, answers,
                    {{"who": {name!r}}})
"""
    return [sys.executable, "-c", code]


@pytest.mark.parametrize("order", [("pyopencl", "pyclperf"), ("pyclperf", "pyopencl")])
def test_a_paired_round_alternates_the_sides_blocks_in_time_and_both_answer(pairs, tmp_path, order):
    log = tmp_path / "calls.log"
    commands = {name: (stub_side(name, pairs.JOBS[name], log), None) for name in order}
    result = pairs.paired_round(commands, pairs.JOBS, order)
    assert "error" not in result, result.get("error")
    # What the processes did, in the order they did it: each side's warm-up, one after the
    # other, then BLOCKS times each side's blocks in turn, never two at once (a side working
    # while the other does would mix their lines).
    runs = [(line, len(list(group))) for line, group in
            itertools.groupby(log.read_text().splitlines())]
    warm = [(f"{n}.{job}", pairs.WARM_CALLS) for n in order for job in pairs.JOBS[n]]
    each = [(f"{n}.{job}", pairs.CALLS) for n in order for job in pairs.JOBS[n]]
    assert runs == warm + each * pairs.BLOCKS
    assert result["ran"] == [name for name, _ in each] * pairs.BLOCKS
    assert result["order"] == list(order)
    for name in order:
        assert result[name]["who"] == name  # its ready note
        for job in pairs.JOBS[name]:
            blocks = result["blocks"][f"{name}.{job}"]
            assert len(blocks) == pairs.BLOCKS and all(b > 0 for b in blocks)
            assert result[name][f"{job}_us"] == float(np.median(blocks))


def test_a_side_that_fails_gives_a_one_line_error_not_a_hang(pairs, tmp_path):
    log = tmp_path / "calls.log"
    good = (stub_side("pyclperf", pairs.JOBS["pyclperf"], log), None)
    cases = {"never starts": ([sys.executable, "-c", "raise SystemExit('no device here')"],
                              "pyopencl: exited with status 1: no device here"),
             "dies in a block": (stub_side("pyopencl", ("time",), log, "1 / 0"),
                                 "pyopencl: exited with status 1: ZeroDivisionError"),
             "hangs": (stub_side("pyopencl", ("time",), log, "time.sleep(30)"),
                       "pyopencl: no answer within 1 s")}
    for what, (argv, message) in cases.items():
        t0 = time.monotonic()
        result = pairs.paired_round({"pyclperf": good, "pyopencl": (argv, None)}, pairs.JOBS,
                                    ("pyclperf", "pyopencl"), block_timeout_s=1.0)
        assert time.monotonic() - t0 < 15, what
        assert result["error"].startswith(message), (what, result["error"])
        assert "\n" not in result["error"] and "pyclperf" not in result


def test_the_script_s_pyclperf_side_answers_blocks_of_its_calls(pairs, ctx, tmp_path):
    # The real pyclperf side (its context, the tiny kernel's Kernel.time and Kernel.run) paired
    # with a stand-in for PyOpenCL's, which needs no PyOpenCL here.
    device = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    side = [sys.executable, str(BENCHMARKS / "overhead.py"), "--side", "pyclperf-paired",
            "--device", device, "--cpus", ""]
    commands = {"pyclperf": (side, None),
                "pyopencl": (stub_side("pyopencl", ("time",), tmp_path / "calls.log"), None)}
    result = pairs.paired_round(commands, pairs.JOBS, ("pyclperf", "pyopencl"))
    assert "error" not in result, result.get("error")
    assert result["pyclperf"]["device"] == ctx.info.name
    assert result["pyclperf"]["time_us"] > 0 and result["pyclperf"]["run_us"] > 0
    assert len(result["blocks"]["pyclperf.run"]) == pairs.BLOCKS


def test_the_summary_s_per_call_figures_come_from_the_paired_rounds(script):
    def paired(mine_time: float, mine_run: float, theirs: float) -> dict:
        return {"order": ["pyopencl", "pyclperf"], "pyopencl": {"time_us": theirs},
                "pyclperf": {"time_us": mine_time, "run_us": mine_run}}

    rounds = [paired(10.0, 9.0, 11.0), {"order": ["pyclperf", "pyopencl"], "error": "x: gone"},
              paired(12.0, 10.0, 11.5), paired(14.0, 13.0, 12.0)]
    # Measured alone, the same calls drifted: these must not make the per-call figures.
    alone = {"pyclperf": [{"alone_time_us": 30.0}, {"alone_time_us": 20.0}],
             "pyopencl": [{"alone_time_us": 15.0}, {"alone_time_us": 25.0}]}
    s = script.summarize(dict(alone, paired=rounds))
    assert s["per_call"] == "paired blocks, alternating" and s["paired_rounds"] == 3
    assert s["time_us"] == 12.0 and s["run_us"] == 10.0 and s["pyopencl_time_us"] == 11.5
    assert s["time_us_over_pyopencl"] == pytest.approx(12.0 / 11.5)
    assert s["run_us_over_pyopencl"] == pytest.approx(10.0 / 11.5)
    assert s["time_over_pyopencl_each_round"] == [round(10 / 11, 4), round(12 / 11.5, 4),
                                                  round(14 / 12, 4)]
    assert s["run_over_pyopencl_each_round"] == [round(9 / 11, 4), round(10 / 11.5, 4),
                                                 round(13 / 12, 4)]
    assert s["alone"]["time_over_pyopencl_each_round"] == [2.0, 0.8]


def test_the_per_call_ratio_is_the_median_of_each_round_s_own(script):
    # The H200's rounds of 2026-11-30 (microseconds per call): pyclperf faster in four of five,
    # but its median round (23.5) is not PyOpenCL's (22.4), whose ratio says 1.05x.
    times = [(24.06, 25.14), (20.82, 22.37), (23.51, 24.42), (24.24, 21.52), (19.88, 20.62)]
    rounds = [{"order": ["pyopencl", "pyclperf"], "pyopencl": {"time_us": theirs},
               "pyclperf": {"time_us": mine, "run_us": mine}} for mine, theirs in times]
    s = script.summarize({"paired": rounds})
    assert s["time_us"] == 23.51 and s["pyopencl_time_us"] == 22.37
    assert s["time_us_over_pyopencl"] == pytest.approx(23.51 / 24.42)
    assert s["time_us_over_pyopencl"] < 1.0 < s["time_us"] / s["pyopencl_time_us"]


def test_the_summary_gives_per_point_figures(script):
    points = script.POINTS
    mine = {"unverified_loop_s": 0.10, "unverified_loop_inside_s": 0.099,
            "unverified_loop_timed_s": 0.08,
            "unverified_experiment_s": 0.11, "unverified_inside_s": 0.1, "unverified_timed_s": 0.08,
            "alone_time_us": 20.0, "alone_run_us": 19.0}
    theirs = {"unverified_loop_s": 0.105, "unverified_loop_timed_s": 0.08, "alone_time_us": 21.0,
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
