"""benchmarks/guide_profile.py on the test device: each experiment run as the guide's worker runs
it, under cProfile, with its wall time split between the core's calls, builds, NumPy and the rest."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("guide_profile")


def test_an_experiment_s_time_is_split_and_its_hot_functions_listed(script, ctx, tmp_path):
    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    rec = script.profile_one("offset", tmp_path, spec, "quick", top=5)
    assert rec["experiment"] == "offset" and rec["code"] == 0
    parts = rec["split_s"]
    assert set(parts) == {"core", "build", "numpy", "plot", "other"}
    assert parts["core"] > 0 and parts["plot"] == 0  # kernels ran; the guide's runs draw nothing
    assert 0 < sum(parts.values()) <= rec["wall_s"] + 0.05
    assert rec["builds"] >= 1 and parts["build"] > 0  # its kernel, built in this process
    assert len(rec["top"]) == 6 and "tottime" in rec["top"][0]
    assert (tmp_path / "offset.jsonl").is_file() and not (tmp_path / "offset.png").exists()
