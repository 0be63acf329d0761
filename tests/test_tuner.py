"""tune() and run_kernel(): every status reached by a real kernel, resume, metrics, statistics."""

import json

import numpy as np
import pytest

import pyclperf
from pyclperf import stats
from pyclperf.tuner import configurations, run_kernel, tune

VADD = """
__kernel void vadd(__global float* c, __global const float* a, __global const float* b, const int n) {
    const int i = get_global_id(0) * ITEMS;
    for (int k = 0; k < ITEMS; ++k)
        if (i + k < n) c[i + k] = a[i + k] + b[i + k] WRONG_TERM;
}
"""
N = 4096


@pytest.fixture
def vadd_args(rng):
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    return [np.zeros(N, np.float32), a, b, np.int32(N)], a + b


def _items_grid(config):
    return [int(np.ceil(N / config["ITEMS"] / config["block_size_x"])) * config["block_size_x"]]


def test_every_status_in_one_sweep(ctx, vadd_args):
    args, want = vadd_args
    too_big = ctx.info.max_work_group_size * 2
    params = {"block_size_x": [64, too_big], "ITEMS": [1, 2, 3], "WRONG_TERM": ["", "+1.0f", "+)"]}
    res = tune(VADD, "vadd", N, args, params, ctx=ctx, answer=[want, None, None, None],
               restrictions=[lambda c: c["ITEMS"] != 3], global_size=_items_grid,
               min_time=0.0, min_repeats=3, max_repeats=3, warmup=1)
    df = res.df
    assert len(df) == 18
    get = lambda **kv: df[np.logical_and.reduce([df[k] == v for k, v in kv.items()])]  # noqa: E731
    ok = get(block_size_x=64, ITEMS=1, WRONG_TERM="")
    assert ok.status.item() == "ok" and ok.verified.item()
    assert get(block_size_x=64, ITEMS=2, WRONG_TERM="+1.0f").status.item() == "wrong result"
    built = get(block_size_x=64, ITEMS=1, WRONG_TERM="+)")
    assert built.status.item() == "build failed" and "error" in built.error.item().lower()
    assert (get(ITEMS=3).status == "skipped").all()
    assert get(ITEMS=3).error.str.contains("restriction").all()
    over = get(block_size_x=too_big, ITEMS=1, WRONG_TERM="")
    assert over.status.item() == "skipped" and "device limit" in over.error.item()


def test_launch_failure_is_a_status(ctx, vadd_args):
    args, want = vadd_args
    # global size 100 is not a multiple of the 64-wide work-group: refused as invalid, not a crash
    res = tune(VADD, "vadd", N, args, {"block_size_x": [64], "ITEMS": [1], "WRONG_TERM": [""]},
               ctx=ctx, global_size=lambda c: [100], min_time=0.0, min_repeats=2, max_repeats=2)
    assert res.rows[0]["status"] == "invalid" and "does not divide" in res.rows[0]["error"]


def test_reference_function_and_metrics(ctx, vadd_args):
    args, _ = vadd_args
    res = tune(VADD, "vadd", N, args, {"block_size_x": [32, 128], "ITEMS": [1], "WRONG_TERM": [""]},
               ctx=ctx, reference=lambda c, a, b, n: [a + b, None, None, None],
               metrics={"GB/s": lambda cfg, s: 3 * 4 * N / s / 1e9},
               min_time=0.0, min_repeats=4, max_repeats=4)
    df = res.df
    assert (df.status == "ok").all()
    np.testing.assert_allclose(df["GB/s"], 3 * 4 * N / (df["median_ns"] * 1e-9) / 1e9)
    assert (df["n"] == 4).all()


def test_repeat_count_reaches_minimum_time(ctx, vadd_args):
    args, want = vadd_args
    res = tune(VADD, "vadd", N, args, {"block_size_x": [64], "ITEMS": [1], "WRONG_TERM": [""]},
               ctx=ctx, min_time=0.02, min_repeats=2, max_repeats=5000)
    row = res.rows[0]
    # The launches' kernel time adds up to the minimum unless the repeat cap stops it first.
    assert row["n"] * row["mean_ns"] >= 0.02e9 * (1 - 1e-9) or row["n"] == 5000
    assert row["n"] >= 2


def test_reset_outputs_between_launches(ctx, rng):
    src = "__kernel void acc(__global int* x) { x[get_global_id(0)] += 1; }"
    x = rng.integers(0, 100, 256, dtype=np.int32)
    res = tune(src, "acc", 256, [x], {"block_size_x": [64]}, ctx=ctx, answer=[x + 1],
               reset_outputs=True, poison=False, min_time=0.0, min_repeats=3, max_repeats=3)
    assert res.rows[0]["status"] == "ok"


def test_resume_runs_only_missing_configurations(ctx, vadd_args, tmp_path):
    args, want = vadd_args
    path = tmp_path / "vadd.jsonl"
    common = dict(ctx=ctx, answer=[want, None, None, None], min_time=0.0, min_repeats=2, max_repeats=2)
    tune(VADD, "vadd", N, args, {"block_size_x": [32, 64], "ITEMS": [1], "WRONG_TERM": [""]},
         out=path, **common)
    res = tune(VADD, "vadd", N, args, {"block_size_x": [32, 64, 128], "ITEMS": [1], "WRONG_TERM": [""]},
               out=path, **common)
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert [r["block_size_x"] for r in rows] == [32, 64, 128]  # 128 alone was run the second time
    assert len(res.rows) == 3
    with pytest.raises(ValueError, match="another source sha256"):
        tune(VADD + "\n", "vadd", N, args, {"block_size_x": [32]}, out=path, **common)
    with pytest.raises(ValueError, match="another problem size"):
        tune(VADD, "vadd", N // 2, args, {"block_size_x": [32]}, out=path, **common)


def test_resume_refuses_another_device(ctx, vadd_args, tmp_path):
    args, want = vadd_args
    path = tmp_path / "r.jsonl"
    common = dict(ctx=ctx, min_time=0.0, min_repeats=2, max_repeats=2)
    params = {"block_size_x": [32], "ITEMS": [1], "WRONG_TERM": [""]}
    tune(VADD, "vadd", N, args, params, out=path, **common)
    lines = path.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["device"]["name"] = "Some Other GPU"
    path.write_text("\n".join([json.dumps(meta)] + lines[1:]) + "\n")
    with pytest.raises(ValueError, match="another device"):
        tune(VADD, "vadd", N, args, params, out=path, **common)


def test_answer_shape_and_dtype_checked(ctx, vadd_args):
    args, want = vadd_args
    common = dict(ctx=ctx, min_time=0.0, min_repeats=2, max_repeats=2)
    params = {"block_size_x": [64], "ITEMS": [1], "WRONG_TERM": [""]}
    res = tune(VADD, "vadd", N, args, params, answer=[want.astype(np.float64), None, None, None], **common)
    assert res.rows[0]["status"] == "wrong result" and "dtype" in res.rows[0]["error"]
    res = tune(VADD, "vadd", N, args, params, answer=[want[:10], None, None, None], **common)
    assert "shape" in res.rows[0]["error"]
    with pytest.raises(ValueError, match="answer has 1 entries"):
        tune(VADD, "vadd", N, args, params, answer=[want], **common)


def test_nan_never_passes(ctx, rng):
    src = "__kernel void k(__global float* x) { x[get_global_id(0)] = NAN; }"
    res = tune(src, "k", 64, [np.zeros(64, np.float32)], {"block_size_x": [64]}, ctx=ctx,
               answer=[np.zeros(64, np.float32)], atol=1e30, min_time=0.0, min_repeats=2, max_repeats=2)
    assert res.rows[0]["status"] == "wrong result"


def test_run_kernel_returns_outputs(ctx, vadd_args):
    args, want = vadd_args
    c, a, b, n = run_kernel(VADD, "vadd", N, args, {"block_size_x": 64, "ITEMS": 1, "WRONG_TERM": ""},
                            ctx=ctx)
    np.testing.assert_allclose(c, want, rtol=1e-6)


def test_configurations_and_bad_params():
    configs = configurations({"a": [1, 2], "b": ["x"]}, [lambda c: c["a"] == 1])
    assert configs == [({"a": 1, "b": "x"}, True), ({"a": 2, "b": "x"}, False)]
    with pytest.raises(ValueError, match="non-empty list"):
        configurations({"a": []})
    with pytest.raises(ValueError, match="non-empty list"):
        configurations({"a": "abc"})


def test_statistics_against_hand_computed_values():
    s = stats.summarize([10, 20, 30, 40, 1000])
    assert s["median_ns"] == 30 and s["min_ns"] == 10 and s["max_ns"] == 1000
    assert s["q1_ns"] == 20 and s["q3_ns"] == 40 and s["iqr_ns"] == 20
    assert s["mean_ns"] == 220 and s["spread_pct"] == pytest.approx(100 * 20 / 30)
    assert stats.bandwidth_gbps(2e9, 1e9) == 2.0
    with pytest.raises(ValueError):
        stats.summarize([])
    with pytest.raises(ValueError):
        stats.summarize([1.0, float("nan")])


def test_a_shipped_kernel_file_is_found_by_name(ctx, rng):
    src = rng.standard_normal(1024).astype(np.float32)
    res = tune("vector.cl", "vector_copy_staged", 256, [np.empty_like(src), src],
               {"ELEMENT": ["float4"], "PER_ITEM": [1], "block_size_x": [64]}, ctx=ctx,
               answer=[src, None], min_time=0.0, min_repeats=1, max_repeats=1)
    assert res.rows[0]["status"] == "ok", res.rows[0]["error"]
    # The grid-stride copy: a fixed 2 groups of 64 walk all 256 float4 elements.
    grid = tune("vector.cl", "vector_copy_grid", 128, [np.empty_like(src), src, np.uint64(256)],
                {"ELEMENT": ["float4"], "PER_ITEM": [1], "block_size_x": [64]}, ctx=ctx,
                answer=[src, None, None], min_time=0.0, min_repeats=1, max_repeats=1)
    assert grid.rows[0]["status"] == "ok", grid.rows[0]["error"]
    with pytest.raises(pyclperf.InvalidArgumentError, match="no_such.cl.*available"):
        tune("no_such.cl", "k", 1, [], {"X": [1]}, ctx=ctx)
