"""Device buffers and pinned host buffers: round trips, zero-copy, lifetime and misuse."""

import gc

import numpy as np
import pytest

import pyclperf

SCALE_SRC = """
__kernel void scale(__global float* out, __global const float* in, const float k) {
    const size_t i = get_global_id(0);
    out[i] = k * in[i];
}
"""


def test_round_trip_random(ctx, rng):
    a = rng.standard_normal(10_000).astype(np.float32)
    buf = ctx.to_device(a)
    back = np.full_like(a, np.nan)
    buf.read(back)
    np.testing.assert_array_equal(back, a)


def test_offset_write_and_read(ctx, rng):
    buf = ctx.buffer(64)
    buf.fill(np.array([0xDEADBEEF], dtype=np.uint32))
    part = rng.integers(0, 255, size=16, dtype=np.uint8)
    buf.write(part, offset=8)
    back = ctx.from_device(buf, np.uint8)
    assert np.all(back[8:24] == part)
    assert np.all(back[:8].view(np.uint32) == 0xDEADBEEF)


@pytest.mark.parametrize("offset, n", [(60, 8), (65, 0), (0, 65)])
def test_out_of_range_transfers_are_refused(ctx, offset, n):
    buf = ctx.buffer(64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="outside the buffer of 64 bytes"):
        buf.write(np.zeros(n, np.uint8), offset=offset)


def test_zero_and_oversized_allocations(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="positive"):
        ctx.buffer(0)
    # Past the largest allocation: a memory error that names the limit (tests/test_memory_limit.py).
    with pytest.raises(pyclperf.DeviceMemoryError, match="CL_DEVICE_MAX_MEM_ALLOC_SIZE"):
        ctx.buffer(ctx.info.max_alloc_bytes + 1)


def test_non_contiguous_and_read_only_arrays(ctx):
    buf = ctx.buffer(64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="C-contiguous"):
        buf.write(np.zeros(32, np.float32)[::2])
    ro = np.zeros(16, np.float32)
    ro.setflags(write=False)
    with pytest.raises(pyclperf.InvalidArgumentError, match="read-only"):
        buf.read(ro)


def test_fill_pattern_rules(ctx):
    buf = ctx.buffer(64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="1, 2, 4, ... or 128 bytes"):
        buf.fill(np.zeros(3, np.uint8))


def test_released_buffer_raises_instead_of_crashing(ctx):
    buf = ctx.buffer(64)
    buf.release()
    assert buf.released
    buf.release()  # idempotent
    with pytest.raises(pyclperf.ReleasedError, match="released"):
        buf.write(np.zeros(4, np.float32))
    with pytest.raises(pyclperf.ReleasedError):
        buf.read(np.zeros(4, np.float32))


def test_pinned_view_is_zero_copy_both_ways(ctx, rng):
    n = 4096
    kernel = ctx.program(SCALE_SRC).kernel("scale")
    pinned, view = ctx.pinned(n, np.float32)
    assert view.base is not None and view.flags.writeable and pinned.views == 1
    data = rng.standard_normal(n).astype(np.float32)
    view[:] = data  # written through NumPy only: no transfer call anywhere
    out = ctx.buffer(4 * n)
    out.fill(np.array([np.nan], np.float32))
    kernel.set_args(out, pinned, np.float32(3.0))
    kernel.run(n, 64)
    np.testing.assert_array_equal(ctx.from_device(out, np.float32), np.float32(3.0) * data)
    # And the other way: a kernel writes into the pinned buffer, the same view sees it.
    src = ctx.to_device(data)
    kernel.set_args(pinned, src, np.float32(-2.0))
    kernel.run(n, 64)
    np.testing.assert_array_equal(view, np.float32(-2.0) * data)


def test_view_keeps_pinned_memory_alive(ctx, rng):
    pinned, view = ctx.pinned(1000, np.float64)
    data = rng.standard_normal(1000)
    view[:] = data
    del pinned
    gc.collect()
    np.testing.assert_array_equal(view, data)  # still mapped, still ours


def test_release_and_unmap_refused_while_views_live(ctx):
    pinned, view = ctx.pinned(256, np.uint8)
    with pytest.raises(pyclperf.InvalidArgumentError, match="1 view"):
        pinned.release()
    with pytest.raises(pyclperf.InvalidArgumentError, match="view"):
        pinned.unmap()
    del view
    gc.collect()
    assert pinned.views == 0
    pinned.unmap()
    with pytest.raises(pyclperf.ReleasedError, match="not mapped"):
        pinned.unmap()  # unmapping twice
    with pytest.raises(pyclperf.ReleasedError, match="not mapped"):
        pinned.array()
    pinned.map(writable=True)
    pinned.release()
    with pytest.raises(pyclperf.ReleasedError):
        pinned.array()


def test_read_only_mapping_gives_read_only_views(ctx):
    pinned = pyclperf.PinnedBuffer(ctx, 64)
    pinned.unmap()
    pinned.map(writable=False)
    view = pinned.array(np.float32)
    assert not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 1.0
    with pytest.raises(pyclperf.InvalidArgumentError, match="read-only"):
        pinned.write(np.zeros(4, np.float32))


def test_view_shapes(ctx):
    pinned = pyclperf.PinnedBuffer(ctx, 24)
    assert pinned.array(np.float32, (2, 3)).shape == (2, 3)
    with pytest.raises(pyclperf.InvalidArgumentError, match="whole number"):
        pinned.array(np.dtype([("v", np.float32, 4)]))  # 16 bytes (raw "V16" holds no numbers)
    with pytest.raises(pyclperf.InvalidArgumentError, match="needs 32 bytes"):
        pinned.array(np.float32, (8,))
