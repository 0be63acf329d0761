"""The one set of comparisons (pyclperf.checks) and the experiments' kit (experiments/_kit.py):
each comparison says how many elements differ and the first, and NaN never passes."""

import numpy as np
import pytest

import pyclperf
from pyclperf.checks import (POISON_U32, check_product, compare, compare_close, compare_ulp,
                             gamma, max_abs_error, outside, ulp32)
from pyclperf.experiments._kit import DEFAULT_LOCAL_SIZE, check_launch, pick


def test_exact_compare_counts_and_names_the_first():
    assert compare(np.arange(5), np.arange(5)) == (True, "")
    ok, detail = compare(np.array([0, 1, 9, 3, 8]), np.arange(5), "words")
    assert not ok and detail.startswith("2 of 5 words differ; first at 2: got")
    ok, detail = compare(np.arange(4), np.arange(5))
    assert not ok and "shape" in detail


def test_close_compare_with_atol_and_rtol():
    want = np.array([1.0, 100.0, 1e4])
    assert compare_close(want + [1e-3, 1e-1, 10.0], want, 0.0, rtol=1e-3)[0]
    ok, detail = compare_close(want + [1e-3, 1e-1, 10.0], want, 1e-3)
    assert not ok and "2 of 3 values differ by more than the tolerance; first at 1" in detail
    # a per-element tolerance, and NaN (the poison left in an unwritten output) never passes
    assert compare_close(want + 0.5, want, np.array([1.0, 1.0, 1.0]))[0]
    poisoned = np.array([1.0, 0.0, 1e4], np.float32)
    poisoned.view(np.uint32)[1] = POISON_U32  # a signalling NaN, as poison_device leaves it
    ok, detail = compare_close(poisoned, want, np.inf)
    assert not ok and "1 of 3" in detail and "first at 1" in detail
    assert outside(poisoned, want, np.inf).tolist() == [False, True, False]
    assert max_abs_error(poisoned, want) == 0.0


def test_ulp_compare():
    ref = np.array([1.0, 2.0, 3.0])
    got = (ref + ulp32(ref) * [0, 2, 5]).astype(np.float32)
    assert compare_ulp(got, ref, 5.0) == (True, "")
    ok, detail = compare_ulp(got, ref, 4.0, "results")
    assert not ok and "1 of 3 results differ by more than 4 ulp; first at 2" in detail
    assert not compare_ulp(np.array([np.nan], np.float32), np.array([1.0]), 1e9)[0]


def test_product_check_and_rounding_bounds(rng):
    a, b = rng.random((8, 16), dtype=np.float32), rng.random((16, 4), dtype=np.float32)
    assert check_product((a @ b).astype(np.float32), a, b) == (True, "")
    off = (a @ b).astype(np.float32)
    off[3, 2] += 1.0
    ok, detail = check_product(off, a, b)
    assert not ok and "1 of 32" in detail and "row 3, column 2" in detail
    assert gamma(1) == pytest.approx(2.0**-24, rel=1e-6)


def test_one_picker_for_every_experiment():
    table = {"a": 1, "b": 2}
    assert pick("x", table, None) == [1, 2] and pick("x", table, ["b"]) == [2]
    assert pick("x", ("p", "q"), ["q"], "kernels") == ["q"]
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"x: unknown or no kernels \['r'\]; known: p, q"):
        pick("x", ("p", "q"), ["r"], "kernels")
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no variants"):
        pick("x", table, [])


def test_the_launch_check_is_the_cores(ctx):
    kernel = ctx.program(file="copy.cl").kernel("offset_copy")
    check_launch("offset", kernel, 1024, DEFAULT_LOCAL_SIZE)
    too_big = ctx.info.max_work_group_size * 2
    with pytest.raises(pyclperf.InvalidArgumentError, match="offset: .*exceeds the device's limit"):
        check_launch("offset", kernel, too_big, too_big)
    with pytest.raises(pyclperf.InvalidArgumentError, match="does not divide"):
        check_launch("offset", kernel, 1000, 64)
