"""Verification that fits real kernels: 'ok' means verified; elements a kernel never writes keep
their input, as the answer may say; an argument the kernel reads as well as writes is found and
verified with its input; a result that depends on the configuration can be checked."""

import numpy as np
import pytest

from pyclperf import LocalMemory, tune
from pyclperf.tuner.options import from_flat

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


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.complex128,
                                   np.int8, np.uint32, np.int64,
                                   np.dtype([("a", "<f4"), ("b", "<i4"), ("c", "<f4")])])
def test_two_poisons_tell_themselves_apart(dtype):
    from pyclperf.measure.poison import poison_element, typed_poison_fill as poison_pattern
    from pyclperf.tuner.arguments import holds_poison, same_bits

    first, second = poison_element(np.dtype(dtype), 0), poison_element(np.dtype(dtype), 1)
    values = np.concatenate([first, second, np.zeros(1, dtype)])
    assert holds_poison(values, 0).tolist() == [True, False, False]
    assert holds_poison(values, 1).tolist() == [False, True, False]
    assert same_bits(values, values[[0, 0, 2]]).tolist() == [True, False, True]
    if np.dtype(dtype).kind in "fc":
        assert np.isnan(first).all() and np.isnan(second).all()
    for which in (0, 1):  # a fill pattern tiles whole elements of its poison
        pattern = poison_pattern(np.dtype(dtype), which)
        assert pattern.size & (pattern.size - 1) == 0 and pattern.size <= 128
        tiled = np.resize(pattern, 8 * np.dtype(dtype).itemsize).view(dtype)
        assert holds_poison(tiled, which).all()


def test_unverified_rows_are_timed_not_ok(ctx, rng):
    x = rng.standard_normal(256).astype(np.float32)
    res = tune(
        INTERIOR,
        "smooth",
        256,
        [np.empty_like(x), x, 256],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, **FAST)),
    )
    assert res.rows[0]["status"] == "timed" and res.rows[0]["verified"] is False
    with pytest.raises(ValueError, match="no verified row"):
        res.best()


def test_elements_never_written_keep_their_input(ctx, rng):
    """The border of 'y' is never written: it keeps its input (x), which is what the answer
    says there, so the row is ok with the defaults, its note naming the elements."""
    x = rng.standard_normal(256).astype(np.float32)
    res = tune(
        INTERIOR,
        "smooth",
        256,
        [x.copy(), x, 256],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[_smooth(x), None, None], **FAST)),
    )
    assert res.rows[0]["status"] == "ok", res.rows[0]["error"]
    assert res.rows[0]["notes"] == ("argument 0 ('y'): the kernel never writes 2 of its 256 "
                                    "elements (0, 255); they keep their input, which the answer "
                                    "expects there")


def test_never_written_elements_the_answer_expects_changed(ctx, rng):
    """Given zeros as 'y', the border keeps zeros, and the answer wants x there: a wrong result
    saying which elements the kernel never writes, with the input they keep as 'got'."""
    x = rng.standard_normal(256).astype(np.float32)
    res = tune(
        INTERIOR,
        "smooth",
        256,
        [np.zeros_like(x), x, 256],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[_smooth(x), None, None], **FAST)),
    )
    row = res.rows[0]
    assert row["status"] == "wrong result" and "notes" not in row
    assert row["error"].startswith("argument 0 ('y'): 2 of 256 elements differ by more than the "
                                   f"tolerance; first at 0: got 0.0, want {float(x[0])!r}")
    assert row["error"].endswith(
        "The kernel never writes 2 of the 256 elements of 'y' (they kept pyclperf's poison "
        "through two launches with two different poisons), so they keep their input; at 2 of "
        "them the answer expects another value: 0, 255")


@pytest.mark.parametrize("isolate", [True, False])
def test_assert_kernel_returns_the_outputs_it_judged(ctx, rng, isolate):
    """assert_kernel passes the border kernel too, and returns what it verified: the border
    holds its input, not a relaunch's poison."""
    from pyclperf.testing import assert_kernel

    x = rng.standard_normal(256).astype(np.float32)
    out = assert_kernel(ctx, INTERIOR, "smooth", [x.copy(), x, 256], [_smooth(x), None, None], 256,
                       isolate=isolate)
    assert out[0][0] == x[0] and out[0][-1] == x[-1]
    np.testing.assert_allclose(out[0], _smooth(x), rtol=1e-5, atol=1e-6)


def test_integer_outputs_never_written(ctx, rng):
    x = rng.integers(-1000, 1000, 300).astype(np.int32)
    want = x.copy()
    want[1:-1] = x[:-2] + x[2:]
    src = """__kernel void pairs(__global int* y, __global const int* x, const int n) {
        const int i = get_global_id(0); if (i > 0 && i < n - 1) y[i] = x[i - 1] + x[i + 1]; }"""
    res = tune(
        src,
        "pairs",
        300,
        [x.copy(), x, 300],
        {"block_size_x": [32]},
        **from_flat(dict(ctx=ctx, answer=[want, None, None], **FAST)),
    )
    assert res.rows[0]["status"] == "ok", res.rows[0]["error"]
    assert "never writes 2 of its 300 elements (0, 299)" in res.rows[0]["notes"]


def test_wrong_values_are_not_blamed_on_the_poison(ctx, rng):
    """Only the written interior is wrong: the error counts those elements and says nothing of
    poison; the border, never written, keeps its input as the answer says."""
    x = rng.standard_normal(256).astype(np.float32)
    want = _smooth(x)
    want[1:-1] += 1
    for poison in (False, True):
        res = tune(
            INTERIOR,
            "smooth",
            256,
            [x.copy(), x, 256],
            {"block_size_x": [64]},
            **from_flat(dict(ctx=ctx, answer=[want, None, None], poison=poison, **FAST)),
        )
        assert res.rows[0]["status"] == "wrong result"
        assert res.rows[0]["error"].startswith("argument 0 ('y'): 254 of 256 elements differ")
        assert "poison" not in res.rows[0]["error"] and "never" not in res.rows[0]["error"]
        assert ("never writes 2 of its 256 elements" in res.rows[0].get("notes", "")) == poison


INOUT_NOTE = ("argument 0 ('a') is read and written by the kernel (in/out): the outputs changed "
              "with what 'a' held before the launch, so it was verified with its input, not "
              "poisoned, and its input is restored before every timed launch")


def test_inout_argument_is_found_and_restored_before_every_launch(ctx, rng, monkeypatch):
    """Without inout=, the poison in 'a' is what the kernel adds to; pyclperf finds that the
    outputs depend on what 'a' held, verifies 'a' with its input and times it as declared
    in/out: restored before every timed launch."""
    from pyclperf.tuner import measure

    resets = []
    timing = measure.collect

    def spy(*args, **kwargs):
        resets.append(getattr(kwargs["reset"], "__name__", None))
        return timing(*args, **kwargs)

    monkeypatch.setattr(measure, "collect", spy)
    a = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    want = a + np.float32(2) * b
    for inout in (["a"], []):
        res = tune(
            ACCUMULATE,
            "acc",
            4096,
            [a, b],
            {"block_size_x": [64, 128]},
            **from_flat(dict(ctx=ctx, answer=[want, None], inout=inout, isolate=False, **FAST)),
        )
        assert [r["status"] for r in res.rows] == ["ok", "ok"], [r["error"] for r in res.rows]
        assert [r.get("notes") for r in res.rows] == [None if inout else INOUT_NOTE] * 2
    assert resets == ["restore_inout"] * 4
    # A wrong in/out kernel: the mismatch, and how 'a' was verified.
    bad = tune(
        ACCUMULATE,
        "acc",
        4096,
        [a, b],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[want + 1, None], **FAST)),
    )
    assert bad.rows[0]["status"] == "wrong result"
    assert bad.rows[0]["error"].startswith("argument 0 ('a'): 4096 of 4096 elements differ")
    assert bad.rows[0]["error"].endswith("; " + INOUT_NOTE)


def test_integer_inout_argument(ctx, rng):
    a = rng.integers(-10**6, 10**6, 1000).astype(np.int32)
    b = rng.integers(-10**6, 10**6, 1000).astype(np.int32)
    src = """__kernel void acc(__global int* a, __global const int* b) {
        const int i = get_global_id(0); if (i < 1000) a[i] += 2 * b[i]; }"""
    res = tune(
        src,
        "acc",
        1000,
        [a, b],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[a + 2 * b, None], **FAST)),
    )
    assert res.rows[0]["status"] == "ok", res.rows[0]["error"]
    assert res.rows[0]["notes"] == INOUT_NOTE


def test_inout_and_never_written_outputs_together(ctx, rng):
    """'a' is in/out; 'y' is written only where 'a' starts positive, so its poisoned result
    also depends on 'a' at first: the in/out argument named is 'a' alone, and 'y' keeps its
    input where it is never written."""
    src = """__kernel void both(__global float* y, __global float* a, __global const float* x) {
        const int i = get_global_id(0);
        if (a[i] > 0.0f) y[i] = 2.0f * x[i];
        a[i] += x[i]; }"""
    n = 2048
    y, a, x = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    want_y = np.where(a > 0, np.float32(2) * x, y)
    res = tune(
        src,
        "both",
        n,
        [y, a, x],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[want_y, a + x, None], **FAST)),
    )
    row = res.rows[0]
    assert row["status"] == "ok", row["error"]
    never = int((a <= 0).sum())
    first = ", ".join(str(i) for i in np.flatnonzero(a <= 0)[:6])
    assert row["notes"] == (INOUT_NOTE.replace("argument 0", "argument 1") + "; argument 0 ('y'): "
                            f"the kernel never writes {never} of its {n} elements ({first}, ... "
                            f"({never} in all)); they keep their input, which the answer expects there")


def test_an_argument_read_only_where_another_says(ctx, rng):
    """'y' is read and written only where 'a' starts positive: poisoned 'a' hides that (NaN is
    never positive), so 'y' is found in/out once 'a' has its input."""
    src = """__kernel void both(__global float* y, __global float* a, __global const float* x) {
        const int i = get_global_id(0);
        if (a[i] > 0.0f) y[i] += x[i];
        a[i] += x[i]; }"""
    n = 2048
    y, a, x = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    res = tune(
        src,
        "both",
        n,
        [y, a, x],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[np.where(a > 0, y + x, y), a + x, None], **FAST)),
    )
    assert res.rows[0]["status"] == "ok", res.rows[0]["error"]
    assert res.rows[0]["notes"] == "; ".join([INOUT_NOTE.replace("argument 0", "argument 1"),
                                              INOUT_NOTE.replace("'a'", "'y'")])


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
    res = tune(
        PARTIAL,
        "partial",
        n,
        args,
        params,
        **from_flat(dict(verify=verify, poison=["sums"], **common)),
    )
    assert [r["status"] for r in res.rows] == ["ok"] * 4, [r["error"] for r in res.rows]
    # A reference of the configuration checks each partial sum, not just the total.
    ref = tune(
        PARTIAL,
        "partial",
        n,
        args,
        params,
        **from_flat(dict(reference=reference, rtol=1e-4, atol=1e-4, poison=False, **common)),
    )
    # Where GROUPS < 16 the tail of 'sums' is never written: it keeps its input (0), not NaN.
    assert [(r["GROUPS"], r["status"]) for r in ref.rows] == [
        (4, "wrong result"), (16, "ok"), (4, "wrong result"), (16, "ok")]
    ref = tune(
        PARTIAL,
        "partial",
        n,
        args,
        params,
        **from_flat(
            dict(
                reference=lambda c, *a: [
                    np.where(np.isnan(w := reference(c, *a)[0]), 0, w).astype(np.float32),
                    None,
                    None,
                    None,
                ],
                rtol=1e-4,
                atol=1e-4,
                poison=False,
                **common,
            )
        ),
    )
    assert [r["status"] for r in ref.rows] == ["ok"] * 4, [r["error"] for r in ref.rows]


def test_verify_returning_false_with_a_message(ctx, rng):
    x = rng.standard_normal(64).astype(np.float32)
    res = tune(
        INTERIOR,
        "smooth",
        64,
        [x.copy(), x, 64],
        {"block_size_x": [32]},
        **from_flat(dict(ctx=ctx, verify=lambda c, out: (False, "because I said so"), **FAST)),
    )
    assert res.rows[0]["status"] == "wrong result" and "because I said so" in res.rows[0]["error"]
    odd = tune(
        INTERIOR,
        "smooth",
        64,
        [x.copy(), x, 64],
        {"block_size_x": [32]},
        **from_flat(dict(ctx=ctx, verify=lambda c, out: "yes", **FAST)),
    )
    assert odd.rows[0]["status"] == "invalid" and "must return a bool" in odd.rows[0]["error"]
