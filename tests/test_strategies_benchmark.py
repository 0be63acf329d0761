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


def test_a_negative_first_seed_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "strategies.py"), "--first-seed", "-1",
         "--kt", "none", "--out", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=120, env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(
        "--first-seed must be at least 0 and --seeds at least 1, got -1 and 30")
    assert not (tmp_path / "x").exists()  # refused before anything ran
