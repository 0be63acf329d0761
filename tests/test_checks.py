"""The one set of comparisons (pyclperf.measure.checks) and the experiments' kit (experiments/_kit.py):
each comparison says how many elements differ and the first, and NaN never passes."""

import numpy as np
import pytest

import pyclperf
from pyclperf.measure import checks
from pyclperf.measure.checks import (POISON_U32, check_product, compare, compare_close, compare_ulp,
                             gamma, max_abs_error, outside, ulp32)
from pyclperf.experiments._kit import (DEFAULT_LOCAL_SIZE, check_launch, conclude_variants,
                                      floats_to_sum, pick, tree_local_size)


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


def test_every_comparison_reports_in_one_wording():
    """checks.first_mismatch words them all, tune()'s verification included (N-d index there)."""
    from pyclperf.measure.checks import first_mismatch
    from pyclperf.tuner.verification import mismatch

    got, want = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
    got[1, 2] = 5.0
    # Written as a person writes them: no np.int64(...) or np.float32(...) wrappers.
    # Floats as compare_close words them, with the first element's tolerance; integers plain.
    assert mismatch(got, want, 0.0, 0.0) == ("1 of 6 elements differ by more than the tolerance; "
                                             "first at (1, 2): got 5.0, want 0.0 (tolerance 0)")
    assert mismatch(want, want, 0.0, 0.0) == ""
    ints = got.astype(np.int32)
    assert (mismatch(ints, want.astype(np.int32))
            == "1 of 6 elements differ; first at (1, 2): got 5, want 0")
    flat = first_mismatch(got != want, got, want, "values", " somehow", lambda i: f" [{i}]")
    assert flat == "1 of 6 values differ somehow; first at 5: got 5.0, want 0.0 [5]"
    assert compare(got, want, "values")[1] == first_mismatch(got != want, got, want, "values")


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


# --- verification at device speed (kernels/verify.cl) --------------------------------------------

def test_the_device_generator_is_the_numpy_one(ctx):
    from pyclperf.measure.device_check import DeviceCheck, random_words

    dev = DeviceCheck(ctx)
    for seed, n in ((0, 1), (1, 1000), (2**63 + 12345, 4099), (2**64 - 1, 300)):
        buf = ctx.buffer(4 * n)
        dev.fill(buf, n, seed)
        got = np.empty(n, np.uint32)
        buf.read(got)
        assert np.array_equal(got, random_words(seed, n)), seed
    # counter-based: any stretch is computable on its own, and seeds give unrelated words
    assert np.array_equal(random_words(7, 10, offset=90), random_words(7, 100)[90:])
    a, b = random_words(1, 1 << 16), random_words(2, 1 << 16)
    assert np.mean(a == b) < 1e-3 and abs(np.mean(a.astype(np.float64)) / 2**32 - 0.5) < 0.01
    # a known value of splitmix64 (seed 0, first output 0xE220A8397B1DCDAF): its high word
    assert random_words(0, 1)[0] == 0xE220A839


def test_the_device_compare_counts_and_names_the_first(ctx):
    from pyclperf.measure.device_check import DeviceCheck, random_words

    dev = DeviceCheck(ctx)
    n, seed = 5000, 99
    want = np.full(n, POISON_U32, np.uint32)
    written = slice(3, 4003, 2)
    want[written] = random_words(seed, n)[written]
    buf = ctx.to_device(want)
    assert dev.compare_copy(buf, n, seed, written) == (True, "")
    bad = want.copy()
    bad[[10, 4001, 4500]] ^= 1  # two written elements and one guard element
    buf = ctx.to_device(bad)
    ok, detail = dev.compare_copy(buf, n, seed, written)
    assert not ok and detail.startswith("3 of 5000 checked elements differ (device-side compare); first at 10")
    assert "found at [10, 4001, 4500]" in detail


def test_offset_and_stride_verify_on_the_device_past_the_threshold(ctx):
    from pyclperf.experiments.offset import OffsetCopy
    from pyclperf.experiments.stride import StrideCopy

    broken = ctx.program("""
__kernel void offset_copy(__global float* out, __global const float* in, const int offset) {
    const size_t i = get_global_id(0) + (size_t)offset;
    if (i % 997 != 5) out[i] = in[i];
}""").kernel("offset_copy")
    for exp, value in ((OffsetCopy(ctx, items=4096, local_size=64, values=[0, 3]), 3),
                       (StrideCopy(ctx, items=4096, local_size=64, values=[1, 5]), 5)):
        exp.copy_check.device_elements = 0  # force the device path on a small buffer
        check = exp.verify({exp.x: value})
        assert check.passed and check.columns == {"checked_on": "device"}, check.detail
    exp = OffsetCopy(ctx, items=4096, local_size=64, values=[3])
    exp.copy_check.device_elements = 0
    exp.kernel = broken
    check = exp.verify({"offset": 3})
    assert not check.passed and "device-side compare" in check.detail
    exp.copy_check.device_elements = 1 << 30  # and the host reference finds the same elements
    host = exp.verify({"offset": 3})
    assert not host.passed and host.detail.split(";")[0].split(" differ")[0] == \
        check.detail.split(" differ")[0]


def test_kit_sizes_and_variant_conclusions(ctx):
    assert tree_local_size("x", 128) == 128
    with pytest.raises(pyclperf.InvalidArgumentError,
                       match="x: work-group size 96 must be a power of two"):
        tree_local_size("x", 96)
    with pytest.raises(pyclperf.InvalidArgumentError, match="must be positive"):
        tree_local_size("x", 0)
    assert floats_to_sum("x", ctx.info, 1000) == 1000
    assert floats_to_sum("x", ctx.info, None) == (1 << 26 if ctx.info.is_gpu else 1 << 20)
    res = pyclperf.Results({}, [{"variant": "a", "status": "ok"},
                                {"variant": "b", "status": "skipped", "error": "no images"}])
    conclude_variants(res, ["a 1.0 GB/s"], "Source 1.2: so.")
    assert res.meta["conclusion"] == "a 1.0 GB/s; b skipped (no images). Source 1.2: so."
    res.rows = []
    conclude_variants(res, [], "Source.")
    assert res.meta["conclusion"] == "no variant verified. Source."


@pytest.mark.parametrize("start, length", [(0, 4096), (3, 1001), (8, 8)])
def test_compare_by_words_finds_every_differing_byte(start, length):
    # compare works on 64-bit words where the arrays allow it: a single flipped byte anywhere,
    # at an aligned or unaligned start, is still found and named.
    data = checks.random_bytes(np.random.default_rng(1), 8192)[start:start + length]
    for at in (0, length // 2, length - 1):
        got = data.copy()
        got[at] ^= 0x01
        ok, detail = checks.compare(got, data)
        assert not ok and detail.startswith(f"1 of {length} bytes differ; first at {at}:")
    assert checks.compare(data.copy(), data) == (True, "")
    # Floats keep their own equality: a NaN never equals itself, bit for bit or not.
    nan = np.full(4, np.nan, np.float64)
    assert not checks.compare(nan, nan.copy())[0]


def test_random_bytes_are_fresh_and_of_any_length():
    rng = np.random.default_rng()
    a, b = checks.random_bytes(rng, 1001), checks.random_bytes(rng, 1001)
    assert a.size == 1001 and a.dtype == np.uint8 and a.flags.writeable
    assert not np.array_equal(a, b) and 100 < np.unique(a).size <= 256


def test_occupancy_and_blocksize_copies_verify_on_the_device_past_the_threshold(ctx):
    from pyclperf.experiments.blocksize import BlockSize
    from pyclperf.experiments.occupancy import Occupancy

    occupancy = Occupancy(ctx, items=4096, targets=[1], work_group_sizes=[64])
    blocks = BlockSize(ctx, items=4096, sizes=[64], kernels=["copy"])
    for exp in (occupancy, blocks):
        exp.copy_check.device_elements = 0  # force the device path on a small buffer
        check = exp.verify(exp.points()[0])
        assert check.passed and check.columns == {"checked_on": "device"}, check.detail
    # A copy that skips elements is caught there, as on the host.
    occupancy.kernel = ctx.program("""
__kernel void staged_copy(__global float* out, __global const float* in, __local float* s) {
    const size_t i = get_global_id(0);
    if (i % 1000 != 7) out[i] = in[i];
}""").kernel("staged_copy")
    check = occupancy.verify(occupancy.points()[0])
    assert not check.passed and "device-side compare" in check.detail and "first at 7" in check.detail
