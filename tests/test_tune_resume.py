"""A results file resumes only when everything that defines its rows still holds; changing any
defining input is refused with a message naming it."""

import json

import numpy as np
import pytest

from pyclperf import tune
from pyclperf.tuner.options import from_flat

N = 1024
SRC = """__kernel void axpy(__global float* y, __global const float* x, const float a, const int n) {
    const int i = get_global_id(0); if (i < n) y[i] = a * x[i] + 1.0f; }"""
FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=0)


@pytest.fixture
def job(ctx, rng):
    x = rng.standard_normal(N).astype(np.float32)
    return dict(source=SRC, kernel_name="axpy", problem_size=N,
                args=[np.zeros(N, np.float32), x, 2.0, N], params={"block_size_x": [32, 64]},
                ctx=ctx, answer=[np.float32(2) * x + np.float32(1), None, None, None], **FAST)


def _changed(job, key, value):
    return {**job, key: value}


def test_resume_continues_when_nothing_changed(job, tmp_path):
    out = tmp_path / "r.jsonl"
    first = tune(**from_flat(dict(**job, out=out)))
    again = tune(**from_flat(dict(**job, out=out)))
    assert len(again.rows) == 2 and [r["status"] for r in first.rows] == ["ok", "ok"]
    assert len(out.read_text().splitlines()) == 3  # nothing ran twice


@pytest.mark.parametrize("what", ["source", "options", "params", "arguments", "answer", "global_size",
                                  "grid_div", "restrictions", "problem_size"])
def test_each_defining_input_refuses_resume(job, tmp_path, what):
    out = tmp_path / "r.jsonl"
    tune(**from_flat(dict(**job, out=out)))
    x2 = job["args"][1] + 1
    change = {
        "source": ("source", SRC + "\n// edited\n", "kernel source"),
        "options": ("options", "-cl-fast-relaxed-math", "build options"),
        "params": ("params", {"block_size_x": [32], "EXTRA": [1]}, "parameters' names"),
        "arguments": ("args", [job["args"][0], x2, 2.0, N], "argument arrays"),
        "answer": ("answer", [job["answer"][0] + 1, None, None, None], "answer"),
        "global_size": ("global_size", lambda c: [N], "launch geometry"),
        "grid_div": ("grid_div_x", ["block_size_x"], "launch geometry"),
        "restrictions": ("restrictions", [lambda c: c["block_size_x"] > 16], "restrictions"),
        "problem_size": ("problem_size", N // 2, "launch geometry"),
    }[what]
    key, value, label = change
    with pytest.raises(ValueError, match=f"cannot resume .*{label}.* changed.*new file.*resume=False"):
        tune(**from_flat(dict(**_changed(job, key, value), out=out)))
    # resume=False starts the file again.
    res = tune(**from_flat(dict(**_changed(job, key, value), out=out, resume=False)))
    assert res.rows


@pytest.mark.parametrize("field, label", [(("device", "driver_version"), "device or its driver"),
                                          (("version",), "pyclperf's version")])
def test_device_driver_and_version_refuse_resume(job, tmp_path, field, label):
    out = tmp_path / "r.jsonl"
    tune(**from_flat(dict(**job, out=out)))
    lines = out.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["defining"][field[0]] = "0000000000000000"
    out.write_text("\n".join([json.dumps(meta)] + lines[1:]) + "\n")
    with pytest.raises(ValueError, match=label):
        tune(**from_flat(dict(**job, out=out)))


def test_a_lambda_over_another_value_is_another_input(job, tmp_path):
    out = tmp_path / "r.jsonl"
    n = N
    tune(**from_flat(dict(**job, out=out, global_size=lambda c: [n])))
    n = N * 2  # the same code, closing over another value  # noqa: F841
    with pytest.raises(ValueError, match="launch geometry"):
        tune(**from_flat(dict(**job, out=out, global_size=lambda c: [N * 2])))


def test_a_file_without_defining_inputs_is_refused(job, tmp_path):
    out = tmp_path / "r.jsonl"
    tune(**from_flat(dict(**job, out=out)))
    lines = out.read_text().splitlines()
    meta = json.loads(lines[0])
    del meta["defining"]
    out.write_text("\n".join([json.dumps(meta)] + lines[1:]) + "\n")
    with pytest.raises(ValueError, match="records no defining inputs"):
        tune(**from_flat(dict(**job, out=out)))
