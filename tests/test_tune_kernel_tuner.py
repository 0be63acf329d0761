"""A Kernel Tuner user's script, run for real: tune_kernel's call maps one-for-one onto
pyclperf, string restrictions prune, the cache file is Kernel Tuner's format, T4 exports, and
every strategy writes to the same resumable file within its budget."""

import json
from pathlib import Path

import numpy as np
import pytest
from pyclperf.tuner.options import from_flat

jsonschema = pytest.importorskip("jsonschema", reason="validating against Kernel Tuner's schemas needs jsonschema")

import pyclperf
from pyclperf import tune, tune_kernel
from pyclperf.tuner.ktcache import read_cache
from pyclperf.tuner.t4 import write_t4

DATA = Path(__file__).parent / "data" / "kernel_tuner"
# Kernel Tuner's vector_add example (examples/opencl/vector_add.py, Apache-2.0), as its script
# calls it: problem size n, block_size_x tuned, answer checked.
VECTOR_ADD = """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n) {
    int i = get_global_id(0);
    if (i<n) {
        c[i] = a[i] + b[i];
    }
}
"""
N = 10_000
FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=0, progress=False)


@pytest.fixture
def vadd(rng):
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    return [np.zeros_like(a), a, b, np.int32(N)], [a + b, None, None, None]


def test_kernel_tuner_script_runs_unchanged(ctx, vadd, tmp_path):
    args, answer = vadd
    tune_params = {"block_size_x": [16, 32, 64, 128, 256], "tile": [1, 2]}
    cache = tmp_path / "vector_add_cache.json"
    platform, device = ctx.info.platform_index, ctx.info.device_index
    results, env = tune_kernel("vector_add", VECTOR_ADD, N, args, tune_params, answer=answer,
                               restrictions=["block_size_x*tile<=256"], iterations=3, cache=str(cache),
                               platform=platform, device=device, quiet=True,
                               metrics={"GB/s": lambda p: 3 * 4 * N / (p["time"] / 1e3) / 1e9})
    assert len(results) == 9  # (256, 2) pruned by the string restriction, as Kernel Tuner does
    assert all(isinstance(r["time"], float) and r["GB/s"] > 0 for r in results)
    assert env["device_name"] == ctx.info.name
    header, entries = read_cache(cache)
    assert header["tune_params_keys"] == ["block_size_x", "tile"] and len(entries) == 9
    jsonschema.validate(json.loads(cache.read_text() if cache.read_text().rstrip().endswith("}")
                                   else cache.read_text() + "}}"),
                        json.loads((DATA / "cache-schema-1.0.0.json").read_text()))
    # Run again: every configuration comes from the cache, nothing is launched.
    again, _ = tune_kernel("vector_add", VECTOR_ADD, N, args, tune_params, answer=answer,
                           restrictions=["block_size_x*tile<=256"], iterations=3, cache=str(cache),
                           platform=platform, device=device, quiet=True)
    assert sorted(r["block_size_x"] * 10 + r["tile"] for r in again) == sorted(
        r["block_size_x"] * 10 + r["tile"] for r in results)


def test_grid_divisor_expressions_and_t4_export(ctx, vadd, tmp_path):
    args, answer = vadd
    src = VECTOR_ADD.replace("int i = get_global_id(0);\n    if (i<n) {\n        c[i] = a[i] + b[i];\n    }",
                             "for (int k = 0; k < tile; ++k) { int i = get_group_id(0) * block_size_x * tile"
                             " + k * block_size_x + get_local_id(0); if (i < n) c[i] = a[i] + b[i]; }")
    res = tune(
        src,
        "vector_add",
        N,
        args,
        **from_flat(
            dict(
                tune_params={"block_size_x": [32, 64], "tile": [1, 4]},
                ctx=ctx,
                grid_div_x=["block_size_x*tile"],
                answer=answer,
                **FAST,
            )
        ),
    )
    assert [r["status"] for r in res.rows] == ["ok"] * 4
    assert {r["global_size"] for r in res.rows if r["tile"] == 4} == {"(2528,)", "(2560,)"}
    path = write_t4(res, tmp_path / "t4.json")
    jsonschema.validate(json.loads(path.read_text()),
                        json.loads((DATA / "T4-results-schema-1.0.0.json").read_text()))
    with pytest.raises(ValueError, match="grid divisor.*nope"):
        tune(
            src,
            "vector_add",
            N,
            args,
            {"block_size_x": [32], "tile": [1]},
            **from_flat(dict(ctx=ctx, grid_div_x=["nope*2"], **FAST)),
        )


@pytest.mark.parametrize("strategy", ["random_sample", "bayes_opt"])
def test_strategies_share_the_resumable_file_and_respect_the_budget(ctx, vadd, tmp_path, strategy):
    pytest.importorskip("optuna") if strategy == "bayes_opt" else None
    args, answer = vadd
    params = {"block_size_x": [16, 32, 64, 128], "tile": [1, 2, 3, 4]}
    out = tmp_path / "s.jsonl"
    common = dict(ctx=ctx, answer=answer, restrictions=["tile != 3"], strategy=strategy, seed=1,
                  out=out, **FAST)
    first = tune(
        VECTOR_ADD, "vector_add", N, args, params, **from_flat(dict(max_fevals=4, **common))
    )
    assert len(first.rows) == 4 and all(r["tile"] != 3 for r in first.rows)
    second = tune(
        VECTOR_ADD, "vector_add", N, args, params, **from_flat(dict(max_fevals=7, **common))
    )
    keys = [r["config"] for r in pyclperf.Results.load(out).rows]
    assert len(second.rows) == 7 and len(keys) == len(set(keys)) == 7  # nothing ran twice
    assert all(r["status"] == "ok" for r in second.rows)
    timed = tune(
        VECTOR_ADD,
        "vector_add",
        N,
        args,
        params,
        **from_flat(dict(time_limit=0.0, **{**common, "out": tmp_path / "t.jsonl"})),
    )
    assert len(timed.rows) <= 1
