"""tune() and run_kernel(): every status reached by a real kernel, resume, metrics, statistics."""

import json

import numpy as np
import pytest

import pyclperf
from pyclperf import Execution, Launch, Timing, Verify, run_kernel, tune
from pyclperf.measure import stats
from pyclperf.tuner.rows import best_table
from pyclperf.tuner.space import configurations
from pyclperf.tuner.options import from_flat

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
    res = tune(
        VADD,
        "vadd",
        N,
        args,
        params,
        ctx=ctx,
        restrictions=[lambda c: c["ITEMS"] != 3],
        launch=Launch(global_size=_items_grid),
        verify=Verify(answer=[want, None, None, None]),
        timing=Timing(min_time=0.0, min_repeats=3, max_repeats=3, warmup=1),
    )
    df = res.df
    # Restrictions prune the space before anything runs: 2 x 2 x 3 configurations remain.
    assert len(df) == 12 and res.meta["pruned"] == 6 and (df.ITEMS != 3).all()
    get = lambda **kv: df[np.logical_and.reduce([df[k] == v for k, v in kv.items()])]  # noqa: E731
    ok = get(block_size_x=64, ITEMS=1, WRONG_TERM="")
    assert ok.status.item() == "ok" and ok.verified.item()
    assert get(block_size_x=64, ITEMS=2, WRONG_TERM="+1.0f").status.item() == "wrong result"
    built = get(block_size_x=64, ITEMS=1, WRONG_TERM="+)")
    assert built.status.item() == "build failed" and "error" in built.error.item().lower()
    over = get(block_size_x=too_big, ITEMS=1, WRONG_TERM="")
    assert over.status.item() == "skipped" and "device limit" in over.error.item()
    assert (df[df.status == "ok"].kernel_work_group_size > 0).all()
    # Restricted configurations have no rows (as in Kernel Tuner); the summary counts them.
    summary = best_table(res).splitlines()[-1]
    assert summary.startswith("12 configs: ") and summary.endswith("; 6 more ruled out by the restrictions")
    assert "skipped (a device limit)" in tune.__doc__ and "has no row" in tune.__doc__


def test_launch_failure_is_a_status(ctx, vadd_args):
    args, want = vadd_args
    # global size 100 is not a multiple of the 64-wide work-group: refused as invalid, not a crash
    res = tune(
        VADD,
        "vadd",
        N,
        args,
        {"block_size_x": [64], "ITEMS": [1], "WRONG_TERM": [""]},
        ctx=ctx,
        launch=Launch(global_size=lambda c: [100]),
        timing=Timing(min_time=0.0, min_repeats=2, max_repeats=2),
    )
    assert res.rows[0]["status"] == "invalid" and "does not divide" in res.rows[0]["error"]


def test_reference_function_and_metrics(ctx, vadd_args):
    args, _ = vadd_args
    seen = []

    def reference(config, c, a, b, n):
        seen.append(config["block_size_x"])
        return [a + b, None, None, None]

    res = tune(
        VADD,
        "vadd",
        N,
        args,
        {"block_size_x": [32, 128], "ITEMS": [1], "WRONG_TERM": [""]},
        ctx=ctx,
        metrics={"GB/s": lambda cfg, s: 3 * 4 * N / s / 1e9},
        verify=Verify(reference=reference),
        timing=Timing(min_time=0.0, min_repeats=4, max_repeats=4),
        execution=Execution(isolate=False),
    )  # `seen` fills where the reference runs: in this process
    df = res.df
    assert (df.status == "ok").all() and 128 in seen  # the reference sees each configuration
    np.testing.assert_allclose(df["GB/s"], 3 * 4 * N / (df["median_ns"] * 1e-9) / 1e9)
    assert (df["n"] == 4).all() and all(len(t) == 4 for t in df["times_ns"])


def test_repeat_count_reaches_minimum_time(ctx, vadd_args):
    args, want = vadd_args
    res = tune(
        VADD,
        "vadd",
        N,
        args,
        {"block_size_x": [64], "ITEMS": [1], "WRONG_TERM": [""]},
        ctx=ctx,
        timing=Timing(min_time=0.02, min_repeats=2, max_repeats=5000),
    )
    row = res.rows[0]
    # The launches' kernel time adds up to the minimum unless the repeat cap stops it first.
    assert row["n"] * row["mean_ns"] >= 0.02e9 * (1 - 1e-9) or row["n"] == 5000
    assert row["n"] >= 2


def test_reset_outputs_between_launches(ctx, rng):
    src = "__kernel void acc(__global int* x) { x[get_global_id(0)] += 1; }"
    x = rng.integers(0, 100, 256, dtype=np.int32)
    res = tune(
        src,
        "acc",
        256,
        [x],
        {"block_size_x": [64]},
        ctx=ctx,
        verify=Verify(answer=[x + 1], poison=False),
        timing=Timing(reset_outputs=True, min_time=0.0, min_repeats=3, max_repeats=3),
    )
    assert res.rows[0]["status"] == "ok"


def test_resume_runs_only_missing_configurations(ctx, vadd_args, tmp_path):
    args, want = vadd_args
    path = tmp_path / "vadd.jsonl"
    common = dict(ctx=ctx, answer=[want, None, None, None], min_time=0.0, min_repeats=2, max_repeats=2)
    tune(
        VADD,
        "vadd",
        N,
        args,
        {"block_size_x": [32, 64], "ITEMS": [1], "WRONG_TERM": [""]},
        **from_flat(dict(out=path, **common)),
    )
    # New values of the same parameters extend the sweep: each row stands on its own config.
    res = tune(
        VADD,
        "vadd",
        N,
        args,
        {"block_size_x": [32, 64, 128], "ITEMS": [1], "WRONG_TERM": [""]},
        **from_flat(dict(out=path, **common)),
    )
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert [r["block_size_x"] for r in rows] == [32, 64, 128]  # 128 alone was run the second time
    assert len(res.rows) == 3 and (res.df.status == "ok").all()


def test_answer_shape_and_dtype_are_harness_errors(ctx, vadd_args, tmp_path):
    """Mistakes in the harness raise before the first configuration, and write nothing."""
    args, want = vadd_args
    common = dict(ctx=ctx, min_time=0.0, min_repeats=2, max_repeats=2, out=tmp_path / "x.jsonl")
    params = {"block_size_x": [64], "ITEMS": [1], "WRONG_TERM": [""]}
    with pytest.raises(TypeError, match="float64.*argument is float32.*double precision"):
        tune(
            VADD,
            "vadd",
            N,
            args,
            params,
            **from_flat(dict(answer=[want.astype(np.float64), None, None, None], **common)),
        )
    with pytest.raises(ValueError, match="has 10 elements, the argument has 4096"):
        tune(
            VADD,
            "vadd",
            N,
            args,
            params,
            **from_flat(dict(answer=[want[:10], None, None, None], **common)),
        )
    with pytest.raises(ValueError, match="answer has 1 entries for 4 kernel arguments"):
        tune(VADD, "vadd", N, args, params, **from_flat(dict(answer=[want], **common)))
    with pytest.raises(TypeError, match="float64"):
        tune(
            VADD,
            "vadd",
            N,
            args,
            params,
            **from_flat(
                dict(
                    reference=lambda c, *a: [a[1] + a[2].astype(np.float64), None, None, None],
                    **common,
                )
            ),
        )
    with pytest.raises(TypeError, match="argument 3.*not an array"):
        tune(
            VADD, "vadd", N, args, params, **from_flat(dict(answer=[want, None, None, 5], **common))
        )
    assert not (tmp_path / "x.jsonl").exists()


def test_nan_never_passes(ctx, rng):
    src = "__kernel void k(__global float* x) { x[get_global_id(0)] = NAN; }"
    res = tune(
        src,
        "k",
        64,
        [np.zeros(64, np.float32)],
        {"block_size_x": [64]},
        ctx=ctx,
        verify=Verify(answer=[np.zeros(64, np.float32)], atol=1e30),
        timing=Timing(min_time=0.0, min_repeats=2, max_repeats=2),
    )
    assert res.rows[0]["status"] == "wrong result"


def test_run_kernel_returns_outputs(ctx, vadd_args):
    args, want = vadd_args
    c, a, b, n = run_kernel(VADD, "vadd", N, args, {"block_size_x": 64, "ITEMS": 1, "WRONG_TERM": ""},
                            ctx=ctx)
    np.testing.assert_allclose(c, want, rtol=1e-6)


def test_configurations_and_bad_params():
    assert configurations({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
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
    res = tune(
        "vector.cl",
        "vector_copy_staged",
        256,
        [np.empty_like(src), src],
        {"ELEMENT": ["float4"], "PER_ITEM": [1], "block_size_x": [64]},
        ctx=ctx,
        verify=Verify(answer=[src, None]),
        timing=Timing(min_time=0.0, min_repeats=1, max_repeats=1),
    )
    assert res.rows[0]["status"] == "ok", res.rows[0]["error"]
    # The grid-stride copy: a fixed 2 groups of 64 walk all 256 float4 elements.
    grid = tune(
        "vector.cl",
        "vector_copy_grid",
        128,
        [np.empty_like(src), src, np.uint64(256)],
        {"ELEMENT": ["float4"], "PER_ITEM": [1], "block_size_x": [64]},
        ctx=ctx,
        verify=Verify(answer=[src, None, None]),
        timing=Timing(min_time=0.0, min_repeats=1, max_repeats=1),
    )
    assert grid.rows[0]["status"] == "ok", grid.rows[0]["error"]
    with pytest.raises(pyclperf.InvalidArgumentError, match="no_such.cl.*available"):
        tune("no_such.cl", "k", 1, [], {"X": [1]}, ctx=ctx)
