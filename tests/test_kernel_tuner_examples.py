"""Kernel Tuner's own example scripts, run unchanged through pyclperf. Each script's imports
(`from kernel_tuner import tune_kernel`, `from kernel_tuner.file_utils import ...`) are
answered by pyclperf's tune_kernel and its T4 file writers: the one line a user changes. The
scripts are copied unchanged from Kernel Tuner (Apache License 2.0; tests/data/kernel_tuner/
README.md cites the files and commit)."""

from __future__ import annotations

import importlib.util
import json
import runpy
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyclperf
from pyclperf.tuner import t4

DATA = Path(__file__).parent / "data" / "kernel_tuner"
EXAMPLES = DATA / "examples"
SIZES = [128 + 64 * i for i in range(15)]      # both scripts' block_size_x


CALLS: list[tuple[list, dict]] = []


def recorded_tune_kernel(*args: Any, **kwargs: Any) -> Any:
    """pyclperf.tune_kernel, its answers kept for the test to read."""
    results, env = pyclperf.tune_kernel(*args, **kwargs)
    CALLS.append((results, env))
    return results, env


@pytest.fixture
def as_kernel_tuner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`kernel_tuner` and `kernel_tuner.file_utils` answered by pyclperf, in a fresh folder."""
    CALLS.clear()
    kt = types.ModuleType("kernel_tuner")
    files = types.ModuleType("kernel_tuner.file_utils")
    kt.tune_kernel = recorded_tune_kernel  # type: ignore[attr-defined]
    files.store_output_file = t4.store_output_file  # type: ignore[attr-defined]
    files.store_metadata_file = t4.store_metadata_file  # type: ignore[attr-defined]
    kt.file_utils = files  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kernel_tuner", kt)
    monkeypatch.setitem(sys.modules, "kernel_tuner.file_utils", files)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_example(path: Path) -> Any:
    """The script's tune(), as its `if __name__ == "__main__"` calls it."""
    return runpy.run_path(str(path))["tune"]()


@pytest.mark.slow
def test_the_opencl_vector_add_example_runs_and_stores_t4_files(as_kernel_tuner: Path,
                                                               ctx: pyclperf.Context) -> None:
    results = run_example(EXAMPLES / "opencl" / "vector_add.py")
    assert sorted(r["block_size_x"] for r in results) == SIZES
    assert all(isinstance(r["time"], float) and r["time"] > 0 for r in results)
    doc = json.loads((as_kernel_tuner / "vector_add.json").read_text())
    meta = json.loads((as_kernel_tuner / "vector_add-metadata.json").read_text())
    assert sorted(r["configuration"]["block_size_x"] for r in doc["results"]) == SIZES
    for r, row in zip(doc["results"], results):
        time = next(m["value"] for m in r["measurements"] if m["name"] == "time")
        assert time == pytest.approx(row["time"])
    assert meta["metadata"]["environment"]["requirements"]
    if importlib.util.find_spec("jsonschema") is not None:
        import jsonschema

        jsonschema.validate(doc, json.loads((DATA / "T4-results-schema-1.0.0.json").read_text()))
        jsonschema.validate(meta, json.loads((DATA / "T4-metadata-schema-1.0.0.json").read_text()))


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("optuna", "scipy")),
                    reason='the strategies need the tune extra (pip install "pyclperf[tune]")')
@pytest.mark.slow
def test_the_hip_simulation_example_replays_a_cache_pyclperf_measured(
        as_kernel_tuner: Path, ctx: pyclperf.Context) -> None:
    """Kernel Tuner's HIP script replays the cache its vector_add.py would have written; here
    pyclperf measures the same kernel in OpenCL and writes that cache, and the HIP script (its
    `lang="HIP"` ignored, as simulation mode does) replays 10 of its 15 configurations."""
    size = 10_000_000
    a, b = (np.random.default_rng(s).random(size, dtype=np.float32) for s in (1, 2))
    source = (EXAMPLES / "opencl" / "vector_add.py").read_text()
    kernel = source.split('kernel_string = """')[1].split('"""')[0]
    measured, _ = pyclperf.tune_kernel(
        "vector_add", kernel, size, [np.zeros(size, np.float32), a, b, np.int32(size)],
        {"block_size_x": SIZES}, answer=[a + b, None, None, None],
        cache="vector_add_cache.json", quiet=True)
    assert len(measured) == 15 and all(isinstance(r["time"], float) for r in measured)
    recorded = {r["block_size_x"]: r["time"] for r in measured}
    run_example(EXAMPLES / "hip" / "vector_add_simulation_mode.py")
    assert len(CALLS) == 1                       # the script returns nothing: its call, kept
    results, env = CALLS[0]
    assert env["simulation"] and env["simulated_time"] > 0 and len(results) == 10
    assert all(r["time"] == pytest.approx(recorded[r["block_size_x"]]) for r in results)
