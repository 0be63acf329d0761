"""benchmarks/strategies.py, reduced: pyclperf's and Kernel Tuner's strategies replaying the
tests' recordings side by side, its table, scores and figure (the full run, on the benchmark
hub's spaces, is in benchmarks/RESULTS.md)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("optuna", "scipy", "nevergrad")),
    reason='the search strategies need the tune extra (pip install "pyclperf[tune]")')


def test_the_reduced_benchmark_runs_and_reports(tmp_path: Path) -> None:
    kt = importlib.util.find_spec("kernel_tuner") is not None
    out = tmp_path / "strategies"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "strategies.py"), "--hub", str(tmp_path / "none"),
         "--seeds", "2", "--budgets", "5", "10", "--ours", "auto", "random_sample", "pso",
         "--kt", "random_sample", "simulated_annealing", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env={"PYCLPERF_HUB": "", "MPLBACKEND": "Agg",
                                                          "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    ours = [r for r in runs if r["tool"] == "pyclperf"]
    # auto plans by its budget, so it runs at each; the others run once, at the largest, and
    # are read at every budget along the way: spaces x seeds x (2 budgets + 2 strategies).
    assert len(ours) == 2 * 2 * (2 + 2)
    assert sorted({r["budget"] for r in ours if r["strategy"] == "pso"}) == [10]
    for r in runs:
        traj = [t for t in r["traj"] if t is not None]
        assert traj == sorted(traj, reverse=True)  # best so far never gets worse
        assert all(t >= r["optimum"] for t in traj)
        assert len(r["traj"]) <= r["budget"]
    table = (out / "table.md").read_text()
    assert "**pyclperf auto**" in table and "pyclperf pso" in table
    assert ("**Kernel Tuner's best**" in table) == kt
    assert (out / "convergence.png").stat().st_size > 10_000
    assert (out / "spaces").is_dir()


def test_the_seeds_can_start_past_those_a_design_was_chosen_on(tmp_path: Path) -> None:
    out = tmp_path / "fresh"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "strategies.py"), "--hub", str(tmp_path / "none"),
         "--seeds", "2", "--first-seed", "90", "--budgets", "5", "--ours", "random_sample",
         "--kt", "none", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env={"PYCLPERF_HUB": "", "MPLBACKEND": "Agg",
                                                          "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert runs and sorted({r["seed"] for r in runs}) == [90, 91]


def test_replays_in_parallel_give_the_same_runs_and_a_stopped_runs_records_are_taken_back(
        tmp_path: Path) -> None:
    """--jobs 2 replays the same seeded searches as one process; Kernel Tuner's records of a
    run, gzipped, are taken back by --reuse and not replayed again."""
    import gzip

    kt = importlib.util.find_spec("kernel_tuner") is not None
    env = {"PYCLPERF_HUB": "", "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"}

    def bench(out: Path, *extra: str) -> tuple[dict, str]:
        done = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "strategies.py"), "--hub",
             str(tmp_path / "none"), "--seeds", "3", "--budgets", "5", "10", "--ours", "auto",
             "random_sample", "--kt", *(["random_sample", "pso"] if kt else ["none"]),
             "--out", str(out), *extra], capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr
        runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
        return {(r["space"], r["tool"], r["strategy"], r["budget"], r["seed"]): r["traj"]
                for r in runs}, done.stdout

    alone, _ = bench(tmp_path / "one")
    together, _ = bench(tmp_path / "two", "--jobs", "2")
    assert alone == together and len(alone) == 2 * 3 * (2 + 1 + (2 if kt else 0))
    if kt:
        packed = tmp_path / "two.jsonl.gz"
        packed.write_bytes(gzip.compress((tmp_path / "two" / "runs.jsonl").read_bytes()))
        again, printed = bench(tmp_path / "three", "--jobs", "2", "--reuse", str(packed))
        assert again == alone
        assert "pyclperf auto on" in printed and "kernel_tuner" not in printed  # none replayed
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "strategies.py"), "--jobs", "0", "--kt",
         "none", "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=120,
        env=env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("--jobs must be at least 1, got 0")


def test_a_negative_first_seed_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "strategies.py"), "--first-seed", "-1",
         "--kt", "none", "--out", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=120, env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(
        "--first-seed must be at least 0 and --seeds at least 1, got -1 and 30")
    assert not (tmp_path / "x").exists()  # refused before anything ran


def test_latin_hypercubes_built_without_a_generator_follow_the_replays_seed(
        benchmark_script) -> None:
    import numpy as np
    from scipy.stats import qmc

    bench = benchmark_script("strategies")

    def starts(seed: int) -> list:
        with bench.seeded_latin_hypercubes(seed):
            return [qmc.LatinHypercube(d=3).integers(l_bounds=[0] * 3, u_bounds=[8] * 3, n=6)
                    for _ in range(2)]

    a, again, other = starts(5), starts(5), starts(6)
    assert all((x == y).all() for x, y in zip(a, again))      # the same seed, the same starts
    assert not (a[0] == a[1]).all()                           # each one its own stream
    assert not all((x == y).all() for x, y in zip(a, other))
    # a generator the caller gives is kept, and outside the context SciPy's own default returns
    with bench.seeded_latin_hypercubes(5):
        given = qmc.LatinHypercube(d=2, rng=np.random.default_rng(1)).random(4)
    assert (given == qmc.LatinHypercube(d=2, rng=np.random.default_rng(1)).random(4)).all()
    assert not (qmc.LatinHypercube(d=3).random(6) == qmc.LatinHypercube(d=3).random(6)).all()


@pytest.mark.skipif(importlib.util.find_spec("kernel_tuner") is None,
                    reason="needs Kernel Tuner (pip install kernel_tuner==1.5.0)")
def test_kernel_tuners_bayes_opt_replays_the_same_start_for_the_same_seed(
        tmp_path: Path, benchmark_script) -> None:
    """bayes_opt draws its start (20 configurations) from a Latin hypercube without a seed; the
    benchmark's replay seeds it. After the start its path can still part: it refits its model
    sooner when a round of evaluations took five times as long as the last prediction, a matter
    of timing."""
    import numpy as np

    rng = np.random.default_rng(0)
    values = {"a": list(range(1, 9)), "b": list(range(1, 9)), "c": [1, 2, 4, 8]}
    cache = {}
    for a in values["a"]:
        for b in values["b"]:
            for c in values["c"]:
                t = 1.0 + 0.1 * (a - 5) ** 2 + 0.05 * (b - 3) ** 2 + 0.2 * abs(c - 2) \
                    + 0.05 * float(rng.random())
                cache[f"{a},{b},{c}"] = {"a": a, "b": b, "c": c, "time": t, "times": [t] * 3,
                                         "compile_time": 1.0, "verification_time": 0,
                                         "benchmark_time": 3 * t, "strategy_time": 0,
                                         "framework_time": 0, "timestamp": "2026-11-30 00:00:00"}
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps({"device_name": "synthetic", "kernel_name": "k", "problem_size": 1,
                                "tune_params_keys": list(values), "tune_params": values,
                                "objective": "time", "cache": cache}))
    bench = benchmark_script("strategies")
    space = bench.Space("synthetic", path, [])
    assert space.size == 256
    kt_cache = space.kt_cache(tmp_path)
    first, _ = bench.theirs(space, kt_cache, "bayes_opt", 25, 3)
    again, _ = bench.theirs(space, kt_cache, "bayes_opt", 25, 3)
    assert len(first) == 25 and first[:20] == again[:20]


def test_held_out_runs_the_spaces_auto_was_never_tuned_on(tmp_path: Path, benchmark_script) -> None:
    bench = benchmark_script("hub_spaces")
    hub = tmp_path / "hub"
    for table in (bench.HUB_SPACES, bench.HELD_OUT_SPACES):
        for path, _ in table.values():
            (hub / path).parent.mkdir(parents=True, exist_ok=True)
            (hub / path).write_bytes(b"")
    held = bench.spaces(hub, None, held_out=True)
    assert sorted(held) == ["convolution MI250X", "convolution W6600", "convolution W7800"]
    assert not set(held) & set(bench.spaces(hub, None))    # none of them among the six
    assert all(restrictions == bench.CONVOLUTION for _, restrictions in held.values())
    assert list(bench.spaces(hub, ["convolution W7800"], held_out=True)) == ["convolution W7800"]
    with pytest.raises(SystemExit, match="--held-out needs the Hub"):
        bench.spaces(None, None, held_out=True)
