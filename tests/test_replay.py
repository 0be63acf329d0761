"""tune(replay=...), `pyclperf tune --replay` and tune_kernel(simulation_mode=True): searches
over the times a recorded run holds, with no device and nothing built.

The recordings are Kernel Tuner's own test files (tests/data/kernel_tuner, README there)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import pyclperf
from pyclperf import Execution, Replay, Search, cli, tune, tune_kernel
from pyclperf.tuner import replay as replay_module
from pyclperf.tuner.t4 import write_t4

DATA = Path(__file__).parent / "data" / "kernel_tuner"
VECTOR_ADD = DATA / "test_cache_file.json"              # block_size_x 128..1024, 15 entries
ENERGY = DATA / "test_cache_time_energy.json"           # time and energy, 15 entries
MIXED = DATA / "strategies_test_cache_file.json"        # string, bool and mixed parameters
SIZES = [128 + 64 * i for i in range(15)]
# Strategies beyond brute_force and random_sample need the tune extra.
NEEDS_TUNE = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("optuna", "scipy", "nevergrad")),
    reason='the search strategies need the tune extra (pip install "pyclperf[tune]")')


def recorded_best(path: Path) -> tuple[str, float]:
    entries = json.loads(path.read_text())["cache"]
    return min(((k, v["time"]) for k, v in entries.items() if isinstance(v["time"], (int, float))),
               key=lambda kv: kv[1])


@pytest.fixture(autouse=True)
def no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay opens no device, builds nothing and starts no worker: all three would fail."""
    def refuse(*a, **k):
        raise AssertionError("a replay touched the device")
    monkeypatch.setattr(pyclperf, "Context", refuse)
    monkeypatch.setattr("pyclperf.tuner.supervisor.prestart", refuse)
    monkeypatch.setattr("pyclperf.device.context.Context", refuse)


def test_brute_force_replay_finds_the_files_best_configuration() -> None:
    res = tune(
        "never built",
        "vector_add",
        100,
        [],
        {"block_size_x": SIZES},
        search="brute_force",
        execution=Execution(progress=False),
        replay=VECTOR_ADD,
    )
    key, ms = recorded_best(VECTOR_ADD)
    best = res.best()
    assert str(best["block_size_x"]) == key and best["time_ms"] == pytest.approx(ms)
    assert len(res.rows) == 15 and all(r["replayed"] and not r["verified"] for r in res.rows)
    assert {r["status"] for r in res.rows} == {"replayed"}       # never "ok", never measured
    entries = json.loads(VECTOR_ADD.read_text())["cache"]
    spent = sum(e["compile_time"] + e["verification_time"] + e["benchmark_time"]
                for e in entries.values()) / 1e3
    assert res.meta["simulated_time_s"] == pytest.approx(spent, rel=1e-6)
    assert res.meta["replay"]["device_name"] == "NVIDIA RTX A4000"
    assert "replayed" in res.meta["device"]["name"]


def test_a_gzipped_file_and_a_t4_file_replay_the_same(tmp_path: Path) -> None:
    gz = tmp_path / "cache.json.gz"
    gz.write_bytes(gzip.compress(VECTOR_ADD.read_bytes()))
    plain = tune(
        "",
        "vector_add",
        100,
        [],
        {"block_size_x": SIZES},
        search=Search(strategy="random_sample", options={"fraction": 1.0}, seed=3),
        execution=Execution(progress=False),
        replay=VECTOR_ADD,
    )
    zipped = tune(
        "",
        "vector_add",
        100,
        [],
        {"block_size_x": SIZES},
        search=Search(strategy="random_sample", options={"fraction": 1.0}, seed=3),
        execution=Execution(progress=False),
        replay=gz,
    )
    assert [r["config"] for r in plain.rows] == [r["config"] for r in zipped.rows]
    assert [r["time_ms"] for r in plain.rows] == [r["time_ms"] for r in zipped.rows]
    t4 = write_t4(plain, tmp_path / "t4.json")
    again = tune(
        "",
        "vector_add",
        100,
        [],
        {"block_size_x": SIZES},
        search="brute_force",
        execution=Execution(progress=False),
        replay=t4,
    )
    assert again.meta["replay"]["format"] == "T4 results"
    assert again.best()["block_size_x"] == plain.best()["block_size_x"]


def test_a_missing_configuration_is_named_or_skipped_for_free() -> None:
    wider = {"block_size_x": SIZES + [2048]}
    with pytest.raises(KeyError, match=r"has no entry for \{'block_size_x': 2048\}"):
        tune(
            "",
            "vector_add",
            100,
            [],
            wider,
            search="brute_force",
            execution=Execution(progress=False),
            replay=VECTOR_ADD,
        )
    res = tune(
        "",
        "vector_add",
        100,
        [],
        wider,
        search=Search(strategy="brute_force", max_fevals=16),
        execution=Execution(progress=False),
        replay=Replay(VECTOR_ADD, missing="skip"),
    )
    skipped = [r for r in res.rows if r["status"] == "skipped"]
    assert len(skipped) == 1 and "not in the replayed file" in skipped[0]["error"]
    assert res.meta["fevals"] == 15                       # the missing one cost nothing
    with pytest.raises(ValueError, match="records other parameters than this run tunes: the "
                                         "file has no tile"):
        tune(
            "",
            "vector_add",
            100,
            [],
            {"block_size_x": SIZES, "tile": [1]},
            execution=Execution(progress=False),
            replay=VECTOR_ADD,
        )
    with pytest.raises(ValueError, match="Replay.missing must be one of 'error', 'skip'"):
        tune(
            "",
            "vector_add",
            100,
            [],
            {"block_size_x": SIZES},
            execution=Execution(progress=False),
            replay=Replay(VECTOR_ADD, missing="ignore"),
        )


def test_unreadable_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="replay: no file"):
        tune(
            "",
            "k",
            1,
            [],
            {"x": [1]},
            execution=Execution(progress=False),
            replay=tmp_path / "nope.json",
        )
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="neither a Kernel Tuner cache nor a T4 results file"):
        tune("", "k", 1, [], {"x": [1]}, execution=Execution(progress=False), replay=junk)
    junk.write_bytes(b"\x00\xff garbage")
    with pytest.raises(ValueError, match="neither a Kernel Tuner cache nor a T4"):
        tune("", "k", 1, [], {"x": [1]}, execution=Execution(progress=False), replay=junk)


def test_the_budget_counts_evaluations_and_recorded_time() -> None:
    res = tune(
        "",
        "vector_add",
        100,
        [],
        {"block_size_x": SIZES},
        search=Search(strategy="random_sample", max_fevals=5, seed=1),
        execution=Execution(progress=False),
        replay=VECTOR_ADD,
    )
    assert len(res.rows) == 5
    per_config = json.loads(VECTOR_ADD.read_text())["cache"]["128"]["compile_time"] / 1e3
    # A time limit shorter than three configurations' recorded compile times stops the replay
    # after the evaluation that spends it, whatever the wall clock says.
    res = tune(
        "",
        "vector_add",
        100,
        [],
        {"block_size_x": SIZES},
        search=Search(
            strategy="random_sample", options={"fraction": 1.0}, time_limit=2.5 * per_config, seed=1
        ),
        execution=Execution(progress=False),
        replay=VECTOR_ADD,
    )
    assert 2 <= len(res.rows) <= 4
    assert res.meta["simulated_time_s"] >= 2.5 * per_config


@NEEDS_TUNE
def test_restrictions_and_mixed_parameter_types_replay() -> None:
    """Kernel Tuner's own strategy-test scenario: string, boolean, single and mixed-type
    parameters, the file holding only what three restrictions allow."""
    params = {"block_size_x": SIZES, "test_string": ["alg_1", "alg_2"], "test_single": [15],
              "test_bool": [True, False], "test_mixed": ["test", 1, True, 2.45]}
    restrictions = ["test_string == 'alg_2'", "test_bool == True", "test_mixed == 2.45"]
    for strategy in ("brute_force", "pso", "greedy_mls", "genetic_algorithm", "diff_evo", "auto"):
        res = tune(
            "",
            "vector_add",
            100,
            [],
            params,
            restrictions=restrictions,
            search=Search(strategy=strategy, max_fevals=10, seed=2),
            execution=Execution(progress=False),
            replay=MIXED,
        )
        assert len(res.rows) == 10, strategy
        assert all(r["test_bool"] is True and r["test_mixed"] == 2.45 for r in res.rows)


@NEEDS_TUNE
def test_two_objectives_give_a_pareto_front() -> None:
    res = tune(
        "",
        "vector_add",
        80000000,
        [],
        {"block_size_x": SIZES, "nvml_gr_clock": [1080]},
        search=Search(strategy="nsga2", objective=["time", "energy"], max_fevals=15, seed=1),
        execution=Execution(progress=False),
        replay=ENERGY,
    )
    points = [(r["time_ms"], r["energy"]) for r in res.rows]
    front = {r["config"] for r in res.rows if r["pareto"]}
    assert front == set(res.meta["pareto"]) and front
    for r in res.rows:                          # on the front exactly when nothing dominates it
        t, e = r["time_ms"], r["energy"]
        dominated = any(a <= t and b <= e and (a < t or b < e) for a, b in points)
        assert r["pareto"] is (not dominated)
    with pytest.raises(ValueError, match="records no 'watts'"):
        tune(
            "",
            "vector_add",
            1,
            [],
            {"block_size_x": SIZES, "nvml_gr_clock": [1080]},
            search=Search(objective=["time", "watts"]),
            execution=Execution(progress=False),
            replay=ENERGY,
        )


@NEEDS_TUNE
def test_a_kernel_tuner_simulation_script_runs_unchanged() -> None:
    """A script written for CUDA, with constant memory and KT's metrics, as the benchmark hub's
    tuning scripts are: every Kernel Tuner strategy name replays it."""
    from pyclperf.tuner.strategies import NAMES

    size = 100
    args = [np.zeros(size, np.float32), np.random.randn(size).astype(np.float32),
            np.random.randn(size).astype(np.float32), np.int32(size)]
    for strategy in NAMES:
        results, env = tune_kernel(
            "vector_add", "__global__ void vector_add(float *c, float *a, float *b, int n) {}",
            size, args, {"block_size_x": SIZES}, lang="CUDA", cmem_args={"d_x": np.zeros(4)},
            metrics={"GB/s": lambda p: 3 * 4 * size / 1e9 / (p["time"] / 1e3)},
            cache=str(VECTOR_ADD), simulation_mode=True, strategy=strategy,
            strategy_options={"max_fevals": 6} if strategy != "brute_force" else None,
            quiet=True)
        assert env["simulation"] and env["simulated_time"] > 0
        assert len(results) == (15 if strategy == "brute_force" else 6), strategy
        assert all("GB/s" in r and isinstance(r["time"], float) for r in results)
    with pytest.raises(ValueError, match="simulation_mode=True replays a cache file"):
        tune_kernel("vector_add", "", size, args, {"block_size_x": SIZES}, simulation_mode=True)


@NEEDS_TUNE
def test_the_command_line_replays_a_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "k.cl").write_text("__kernel void vector_add(__global float* c) {}")
    spec = {"kernel_source": "k.cl", "kernel_name": "vector_add", "problem_size": 100,
            "arguments": [{"name": "c", "dtype": "float32", "size": 1 << 30}],
            "tune_params": {"block_size_x": SIZES}, "strategy": "dual_annealing",
            "max_fevals": 8, "seed": 4, "out": "replayed.jsonl"}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    rc = cli.main(["tune", str(tmp_path / "spec.json"), "--replay", str(VECTOR_ADD)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "no device is used" in out and "8 configurations replayed by scipy.optimize.dual_annealing" in out
    assert "not measured here" in out
    rows = pyclperf.Results.load(tmp_path / "replayed.jsonl").rows
    assert len(rows) == 8 and all(r["status"] == "replayed" for r in rows)


def test_a_recording_is_read_once_per_process(tmp_path: Path) -> None:
    copy = tmp_path / "c.json"
    shutil.copy(VECTOR_ADD, copy)
    a = replay_module.load(copy)
    assert replay_module.load(copy) is a
    copy.write_text(copy.read_text().replace('"NVIDIA RTX A4000"', '"another"'))
    assert replay_module.load(copy).device_name == "another"   # a changed file is read again
