"""Memory near the limit (Quasar 9.10): a buffer past the device's largest single allocation is
refused with a DeviceMemoryError that names CL_DEVICE_MAX_MEM_ALLOC_SIZE, before any OpenCL call;
nothing crashes, nothing is left behind, and the context keeps working. What a GPU does near its
total memory is benchmarks/memory_limit.py's to record (it needs the real device)."""

from __future__ import annotations

import gc

import numpy as np

import pyclperf
from leakcheck import rss_mib

CL_INVALID_BUFFER_SIZE = -61


def test_past_the_largest_allocation_is_a_clean_memory_error(ctx):
    limit = ctx.info.max_alloc_bytes
    for nbytes in (limit + 1, 2 * limit, ctx.info.global_mem_bytes + 1):
        try:
            ctx.buffer(nbytes)
        except pyclperf.DeviceMemoryError as exc:
            assert isinstance(exc, MemoryError) and isinstance(exc, pyclperf.ClError)
            assert exc.code == CL_INVALID_BUFFER_SIZE and exc.name == "CL_INVALID_BUFFER_SIZE"
            assert exc.call == "clCreateBuffer"
            assert f"CL_DEVICE_MAX_MEM_ALLOC_SIZE = {limit} bytes" in str(exc) and str(nbytes) in str(exc)
        else:
            raise AssertionError(f"a buffer of {nbytes} bytes (limit {limit}) was not refused")


def test_refusals_leave_nothing_behind_and_the_context_works(ctx):
    limit = ctx.info.max_alloc_bytes
    for _ in range(50):  # warm-up: the exception machinery's own first allocations
        try:
            ctx.buffer(limit + 1)
        except pyclperf.DeviceMemoryError:
            pass
    gc.collect()
    before = rss_mib()
    for _ in range(2000):
        try:
            ctx.buffer(limit + 4096)
        except pyclperf.DeviceMemoryError:
            pass
    gc.collect()
    assert rss_mib() - before < 8.0
    # The context still allocates, writes and reads right after the refusals.
    data = np.random.default_rng().integers(0, 2**32, size=1 << 20, dtype=np.uint32)
    buf = ctx.buffer(data.nbytes)
    buf.write(data)
    back = np.empty_like(data)
    buf.read(back)
    assert np.array_equal(back, data)
    buf.release()
