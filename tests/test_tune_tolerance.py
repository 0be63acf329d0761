"""tune()'s default float comparison follows the answer's scale: a subnormal answer written as
zero, or one step off, is wrong; a fused multiply-add's rounding, even where it cancels to a
small result, is not; a given atol is NumPy's absolute tolerance."""

import numpy as np
import pytest

from pyclperf import tune
from pyclperf.tuner.verification import Verification, typical_magnitude
from pyclperf.tuner.options import from_flat

FAST = dict(min_time=0.0, min_repeats=1, max_repeats=1, warmup=0)
WRITE = """__kernel void write(__global float* y, __global const float* x) {
    const int i = get_global_id(0); y[i] = %s; }"""
FMA = """__kernel void madd(__global float* y, __global const float* a, __global const float* b,
                        __global const float* c) {
    const int i = get_global_id(0); y[i] = fma(a[i], b[i], c[i]); }"""


def _subnormals(rng, n):
    """Subnormal float32s of either sign, k * 2**-149 for k below 2**15: one step is more than
    the default rtol of any of them."""
    k = rng.integers(1, 1 << 15, n, dtype=np.uint32) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
    return k.view(np.float32)


def _run(ctx, body, x, **kw):
    res = tune(
        WRITE % body,
        "write",
        x.size,
        [np.zeros_like(x), x],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[x, None], **kw, **FAST)),
    )
    return res.rows[0]


@pytest.mark.parametrize("body, status", [
    ("x[i]", "ok"),                       # copies the pattern
    ("0.0f", "wrong result"),             # flushes it to zero
    ("nextafter(x[i], 1.0f)", "wrong result"),  # one step off
])
def test_a_subnormal_pattern_must_be_written_as_it_is(ctx, rng, body, status):
    x = _subnormals(rng, 1 << 14)
    row = _run(ctx, body, x)
    assert row["status"] == status, row["error"]
    if status != "ok":
        assert row["error"].startswith(f"argument 0 ('y'): {x.size} of {x.size} elements differ "
                                       "by more than the tolerance; first at 0: got ")


def test_a_given_atol_is_numpys_absolute_tolerance(ctx, rng):
    """atol=1e-8 (NumPy's isclose default, and what Kernel Tuner passes) accepts any error
    smaller than that: a subnormal answer written as zero passes; atol=0 is a relative
    tolerance alone."""
    x = _subnormals(rng, 1 << 12)
    assert _run(ctx, "0.0f", x, atol=1e-8)["status"] == "ok"
    assert _run(ctx, "0.0f", x, atol=0.0)["status"] == "wrong result"
    scaled = rng.standard_normal(1 << 12).astype(np.float32)
    assert _run(ctx, "x[i] * 1.000002f", scaled, atol=0.0)["status"] == "ok"  # 2e-6 < rtol
    assert _run(ctx, "x[i] * 1.00002f", scaled, atol=0.0)["status"] == "wrong result"


def test_fused_multiply_add_rounding_passes(ctx, rng):
    """fma(a, b, c) rounds once, NumPy's a * b + c twice: they differ in the last place of
    a * b, which is many places of a result that cancels to near zero. The default tolerance
    judges those on the answer's scale and passes them; NumPy's fixed atol=1e-8, or a relative
    tolerance alone (atol=0), fails them."""
    n = 1 << 16
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    want = a * b + c
    args = [np.zeros_like(a), a, b, c]
    exact = (a.astype(np.float64) * b + c).astype(np.float32)  # one rounding, as fma does
    assert (exact != want).sum() > 1000  # the two really differ
    rows = [
        tune(
            FMA,
            "madd",
            n,
            args,
            {"block_size_x": [64]},
            **from_flat(dict(ctx=ctx, answer=[want, None, None, None], atol=atol, **FAST)),
        ).rows[0]
        for atol in (None, 1e-8, 0.0)
    ]
    assert [r["status"] for r in rows] == ["ok", "wrong result", "wrong result"], rows[0]["error"]


@pytest.mark.parametrize("scale", [1.0, 1e-30, 1e30])
def test_the_default_tolerance_is_relative_at_every_scale(ctx, rng, scale):
    """The same relative error is judged the same whatever the answer's magnitude (NumPy's
    atol=1e-8 would pass anything at 1e-30)."""
    x = (rng.standard_normal(1 << 12) * scale).astype(np.float32)
    assert _run(ctx, "x[i] * 1.000002f", x)["status"] == "ok"
    assert _run(ctx, "x[i] * 1.0001f", x)["status"] == "wrong result"


def test_typical_magnitude_is_the_median_of_the_nonzero_finite_elements():
    want = np.array([0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 1e30, np.nan, np.inf], np.float32)
    assert typical_magnitude(want) == pytest.approx(2.5)  # one huge element counts once
    assert typical_magnitude(np.zeros(5, np.float32)) == 0.0
    v = Verification(rtol=1e-5)
    assert v.tolerance(want) == pytest.approx(2.5e-5)
    assert Verification(rtol=1e-5, atol=0.5).tolerance(want) == 0.5
    # The median of up to SAMPLE evenly spaced elements: a large answer costs little.
    big = np.arange(1, 10_000_001, dtype=np.float64)
    assert typical_magnitude(big) == pytest.approx(5e6, rel=1e-3)


def test_complex_and_integer_answers(rng):
    v = Verification()
    z = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64)
    assert v.bad(z * np.complex64(1 + 1e-7), z) is None
    off = z.copy()
    off[3] += np.complex64(1e-3j) * abs(z[3])
    assert np.flatnonzero(v.bad(off, z)).tolist() == [3]
    i = rng.integers(-5, 5, 64).astype(np.int16)
    j = i.copy()
    j[7] += 1
    assert v.bad(i, i) is None and np.flatnonzero(v.bad(j, i)).tolist() == [7]


def _mixed(rng, n, every=7):
    """Data near 1 with a subnormal at every ``every``-th element, some of them large ones
    (k * 2**-149 with k up to 2**23, far above the old catch-all of small ones)."""
    x = rng.standard_normal(n).astype(np.float32)
    k = rng.integers(1, 1 << 23, n // every + 1, dtype=np.uint32)
    x[::every] = k[: x[::every].size].view(np.float32) * np.where(rng.random(x[::every].size) < 0.5, -1, 1).astype(np.float32)
    return x


def test_subnormals_written_as_zero_are_wrong_among_data_near_one(rng):
    """The data's scale (rtol times a median of about 0.7) is far above every subnormal: the
    default tolerance alone passed a flush to zero there. Judged relatively, each flushed
    element is a mismatch, and only those; a given atol still accepts them."""
    want = _mixed(rng, 4096)
    sub = (want != 0) & (np.abs(want) < np.finfo(np.float32).tiny)
    assert sub.sum() > 500 and (np.abs(want[sub]) > 2.0**-134).any()
    got = np.where(sub, np.float32(0), want)
    v = Verification()
    assert np.array_equal(v.bad(got, want), sub)
    detail = v._report(v.bad(got, want), got, want)
    assert f"{int(sub.sum())} of them are subnormal expected values written as zero" in detail
    assert Verification(atol=1e-30).bad(got, want) is None
    doubled = np.where(sub, want * np.float32(2), want)  # another subnormal: wrong too
    assert np.array_equal(v.bad(doubled, want), sub)


def test_a_one_ulp_difference_passes_at_every_scale(rng):
    """An FMA's single rounding against NumPy's two: ulps of a * b, on a result that may
    cancel; and one step on a large subnormal (relative 1e-6, under rtol)."""
    n = 1 << 16
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    want = a * b + c
    got = (a.astype(np.float64) * b + c).astype(np.float32)
    assert (got != want).sum() > 1000
    assert Verification().bad(got, want) is None
    big_sub = np.full(64, 2.0**-127, np.float32)  # 2**22 steps of 2**-149
    assert Verification().bad(np.nextafter(big_sub, np.float32(1)), big_sub) is None
    assert Verification().bad(np.zeros_like(big_sub), big_sub) is not None


def test_a_kernel_that_flushes_subnormals_is_a_wrong_result(ctx, rng):
    x = _mixed(rng, 1 << 12)
    flush = "(fabs(x[i]) < FLT_MIN ? 0.0f : x[i])"
    row = _run(ctx, flush, x)
    assert row["status"] == "wrong result", row
    assert "subnormal expected values written as zero" in row["error"]
    assert _run(ctx, "x[i]", x)["status"] == "ok"
    assert _run(ctx, flush, x, atol=1e-30)["status"] == "ok"
