"""benchmarks/gpu_check.py: its stages run in processes of their own under a time limit, and its
figures and the RESULTS.md block come from what the stages left (no device needed here)."""

from __future__ import annotations

import re

import sys

import pytest


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("gpu_check")


def test_a_stage_streams_its_output_and_one_past_its_limit_is_stopped(script, tmp_path, capsys):
    log = script.Log(tmp_path / "log")
    done = script.stage(log, "echo", [sys.executable, "-c", "print('a'); print('b\\rc')"], 30)
    assert done["rc"] == 0 and not done["stopped"] and done["output"].splitlines() == ["a", "c"]
    slow = script.stage(log, "slow", [sys.executable, "-c",
                                      "import time; print('started', flush=True); time.sleep(60)"], 1)
    assert slow["stopped"] and slow["rc"] != 0 and slow["wall_s"] < 30 and "started" in slow["output"]
    text = (tmp_path / "log").read_text()
    assert re.search(r"\[echo +[0-9.]+s\] a", text) and "slow: past its 1 s: stopped" in text
    missing = script.stage(log, "missing", [str(tmp_path / "no-such-program")], 5)
    assert missing["rc"] is None  # could not start: recorded, nothing raised
    log.close()


def test_pytest_counts_read_the_summary_line(script):
    out = "stuff\n==== 600 passed, 37 skipped, 2 failed, 1 error in 97.12s (0:01:37) ====\n"
    assert script.pytest_counts(out) == {"passed": 600, "skipped": 37, "failed": 2, "error": 1}
    # make gpu-check's two sessions: the timing tests alone, then the rest; both count
    serial = "== 13 passed, 1589 deselected in 19.70s ==\n"
    assert script.pytest_counts(serial + out) == {"passed": 613, "skipped": 37, "failed": 2,
                                                  "error": 1}
    assert script.pytest_counts("no summary") == {}


def doc(verdicts, seconds=1.0, status="passed"):
    return {"experiments": [{"experiment": n, "verdict": v, "status": status, "seconds": seconds}
                            for n, v in verdicts.items()]}


def test_the_figures_and_the_block_say_what_was_met(script):
    stages = {"guide-default": {"wall_s": 80.0, "rc": 0, "stopped": False, "output": ""},
              "guide-quick": {"wall_s": 31.0, "rc": 0, "stopped": False, "output": ""},
              "guide-thorough": {"wall_s": 200.0, "rc": 0, "stopped": False, "output": ""},
              "gpu-check": {"wall_s": 100.0, "rc": 0, "stopped": False,
                            "output": "== 500 passed, 3 skipped in 99.0s =="}}
    docs = {"default": doc({"a": "holds", "b": "changed"}), "quick": doc({"a": "holds", "b": "holds"}),
            "thorough": doc({"a": "holds", "b": "changed"})}
    overhead = {"unverified_experiment_s_over_pyopencl": 1.01, "time_us_over_pyopencl": 0.97,
                "experiment_over_pyopencl_each_round": [1.0, 1.02], "time_over_pyopencl_each_round": [0.9],
                "rounds": 5, "same_launches": True, "run_us_over_pyopencl": 0.9}
    fig, block = script.summarize(stages, docs, overhead, {"name": "GPU", "driver": "1"}, "abc", 500.0)
    assert fig["verdicts_compared"] == 2 and set(fig["verdicts_differing"]) == {"b"}
    text = "\n".join(block)
    assert "| `pyclperf guide` (default) | 80.0 s, exit 0, 2 of 2 passed | <= 90 s, exit 0 | yes |" in text
    assert "| `pyclperf guide --quick` | 31.0 s, exit 0 | <= 30 s | no |" in text
    assert "1 of 2 experiments agree; differ: b" in text
    assert "`make gpu-check` | 100.0 s, 500 passed, 3 skipped | <= 120 s, 0 failed | yes" in text
    assert "1.010x" in text and "0.970x" in text and "commit abc" in text
    # The 600 s target is the check's own stages'; the thorough run (200 s of the 500) is beside.
    assert "the check's stages 300 s (target <= 600 s), 500 s with the thorough run." in text
    # An experiment a stopped thorough run left is compared between the other two modes only,
    # and the block says so: the criterion wants every mode.
    docs["quick"] = doc({"a": "holds", "b": "changed"})
    docs["thorough"] = {"experiments": [{"experiment": "a", "verdict": "holds", "status": "passed",
                                         "seconds": 1.0},
                                        {"experiment": "b", "verdict": "holds", "status": "timed out",
                                         "seconds": 1.0}]}
    fig, block = script.summarize(stages, docs, None, {}, "abc", 1.0)
    assert fig["verdicts_compared"] == 2 and fig["verdicts_in_every_mode"] == 1
    assert "2 of 2 experiments agree (1 of them in every mode) | all 34 | no |" in "\n".join(block)
    # An experiment a stopped run never reached is no disagreement.
    docs["quick"] = doc({"a": "holds", "b": "not run"}, status="not run (interrupted)")
    fig, _ = script.summarize(stages, docs, None, {}, "abc", 1.0)
    assert fig["verdicts_differing"] == {} and fig["guide_quick_unfinished"] == 2
