"""Verification that fits real kernels: 'ok' means verified, the poison names itself, in/out
arguments keep their input, and a result that depends on the configuration can be checked."""

import numpy as np
import pytest

from pyclperf import LocalMemory, tune

FAST = dict(min_time=0.0, min_repeats=3, max_repeats=3, warmup=1)

# Writes the interior only, as a stencil leaves its border alone.
INTERIOR = """__kernel void smooth(__global float* y, __global const float* x, const int n) {
    const int i = get_global_id(0);
    if (i > 0 && i < n - 1) y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0f; }"""
# Reads and writes its first argument.
ACCUMULATE = """__kernel void acc(__global float* a, __global const float* b) {
    const int i = get_global_id(0); a[i] += 2.0f * b[i]; }"""
PARTIAL = """__kernel void partial(__global float* sums, __global const float* x, const int n,
                                   __local float* s) {
    float acc = 0.0f;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) acc += x[i];
    s[get_local_id(0)] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = get_local_size(0) / 2; o > 0; o /= 2) {
        if (get_local_id(0) < o) s[get_local_id(0)] += s[get_local_id(0) + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (get_local_id(0) == 0) sums[get_group_id(0)] = s[0]; }"""


def _smooth(x):
    y = x.copy()
    y[1:-1] = ((x[:-2].astype(np.float64) + x[1:-1] + x[2:]) / 3).astype(np.float32)
    return y


def test_unverified_rows_are_timed_not_ok(ctx, rng):
    x = rng.standard_normal(256).astype(np.float32)
    res = tune(INTERIOR, "smooth", 256, [np.empty_like(x), x, 256], {"block_size_x": [64]}, ctx=ctx, **FAST)
    assert res.rows[0]["status"] == "timed" and res.rows[0]["verified"] is False
    with pytest.raises(ValueError, match="no verified row"):
        res.best()


def test_partly_written_output_names_the_poison_and_the_fix(ctx, rng):
    x = rng.standard_normal(256).astype(np.float32)
    want = _smooth(x)
    res = tune(INTERIOR, "smooth", 256, [x.copy(), x, 256], {"block_size_x": [64]}, ctx=ctx,
               answer=[want, None, None], rtol=1e-5, atol=1e-6, **FAST)
    err = res.rows[0]["error"]
    assert res.rows[0]["status"] == "wrong result"
    assert "2 of 256 elements differ" in err and "2 of the differing elements still hold pyclperf's poison" in err
    assert "poison=[...]" in err and "inout=['y']" in err
    # The fix the message names: keep 'y' out of poisoning, so its border keeps the input.
    fixed = tune(INTERIOR, "smooth", 256, [x.copy(), x, 256], {"block_size_x": [64]}, ctx=ctx,
                 answer=[want, None, None], rtol=1e-5, atol=1e-6, poison=[], **FAST)
    assert fixed.rows[0]["status"] == "ok", fixed.rows[0]["error"]


def test_wrong_values_are_not_blamed_on_the_poison(ctx, rng):
    x = rng.standard_normal(256).astype(np.float32)
    res = tune(INTERIOR, "smooth", 256, [x.copy(), x, 256], {"block_size_x": [64]}, ctx=ctx,
               answer=[_smooth(x) + 1, None, None], poison=False, **FAST)
    assert res.rows[0]["status"] == "wrong result" and "poison" not in res.rows[0]["error"]


def test_inout_argument_is_restored_before_every_launch(ctx, rng):
    a = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    want = a + np.float32(2) * b
    ok = tune(ACCUMULATE, "acc", 4096, [a, b], {"block_size_x": [64, 128]}, ctx=ctx,
              answer=[want, None], inout=["a"], **FAST)
    assert [r["status"] for r in ok.rows] == ["ok", "ok"], [r["error"] for r in ok.rows]
    # Without inout, the poisoned input is what the kernel adds to: the message says so.
    bad = tune(ACCUMULATE, "acc", 4096, [a, b], {"block_size_x": [64]}, ctx=ctx, answer=[want, None], **FAST)
    assert bad.rows[0]["status"] == "wrong result" and "inout=['a']" in bad.rows[0]["error"]


def test_config_dependent_verification(ctx, rng):
    n = 10_000
    x = rng.standard_normal(n).astype(np.float32)
    params = {"block_size_x": [32, 64], "GROUPS": [4, 16]}

    def reference(config, sums, x, n, local):
        g, b = config["GROUPS"], config["block_size_x"]
        stride = g * b
        per_item = np.zeros(stride)
        np.add.at(per_item, np.arange(n) % stride, x.astype(np.float64))
        want = np.full_like(sums, np.nan)  # groups past GROUPS are never written
        want[:g] = per_item.reshape(g, b).sum(axis=1)
        return [want.astype(np.float32), None, None, None]

    def verify(config, outputs):
        g = config["GROUPS"]
        total = float(outputs[0][:g].astype(np.float64).sum())
        return bool(np.isclose(total, x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)), f"total {total}"

    args = [np.zeros(16, np.float32), x, n, lambda c: LocalMemory(4 * c["block_size_x"])]
    common = dict(ctx=ctx, global_size=lambda c: [c["GROUPS"] * c["block_size_x"]], **FAST)
    res = tune(PARTIAL, "partial", n, args, params, verify=verify, poison=["sums"], **common)
    assert [r["status"] for r in res.rows] == ["ok"] * 4, [r["error"] for r in res.rows]
    # A reference of the configuration checks each partial sum, not just the total.
    ref = tune(PARTIAL, "partial", n, args, params, reference=reference, rtol=1e-4, atol=1e-4,
               poison=False, **common)
    # Where GROUPS < 16 the tail of 'sums' is never written: it keeps its input (0), not NaN.
    assert [(r["GROUPS"], r["status"]) for r in ref.rows] == [
        (4, "wrong result"), (16, "ok"), (4, "wrong result"), (16, "ok")]
    ref = tune(PARTIAL, "partial", n, args, params,
               reference=lambda c, *a: [np.where(np.isnan(w := reference(c, *a)[0]), 0, w).astype(np.float32),
                                        None, None, None], rtol=1e-4, atol=1e-4, poison=False, **common)
    assert [r["status"] for r in ref.rows] == ["ok"] * 4, [r["error"] for r in ref.rows]


def test_verify_returning_false_with_a_message(ctx, rng):
    x = rng.standard_normal(64).astype(np.float32)
    res = tune(INTERIOR, "smooth", 64, [x.copy(), x, 64], {"block_size_x": [32]}, ctx=ctx,
               verify=lambda c, out: (False, "because I said so"), **FAST)
    assert res.rows[0]["status"] == "wrong result" and "because I said so" in res.rows[0]["error"]
    odd = tune(INTERIOR, "smooth", 64, [x.copy(), x, 64], {"block_size_x": [32]}, ctx=ctx,
               verify=lambda c, out: "yes", **FAST)
    assert odd.rows[0]["status"] == "invalid" and "must return a bool" in odd.rows[0]["error"]
