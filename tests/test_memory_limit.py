"""Memory near the limit (Quasar 9.10): a buffer or an image past the device's largest single
allocation is refused with a DeviceMemoryError that names CL_DEVICE_MAX_MEM_ALLOC_SIZE, before any
OpenCL call; an image side past CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT stays an InvalidArgumentError.
Nothing crashes, nothing is left behind, and the context keeps working. What a GPU does near its
total memory is benchmarks/memory_limit.py's to record (it needs the real device)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import pyclperf
from leakcheck import heap_mib

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
    before = heap_mib()  # live bytes, not RSS: a sanitizer's quarantine keeps freed blocks resident
    for _ in range(2000):
        try:
            ctx.buffer(limit + 4096)
        except pyclperf.DeviceMemoryError:
            pass
    gc.collect()
    assert heap_mib() - before < 1.0  # 2000 refusals: a 600-byte leak each shows (1.15 MiB)
    # The context still allocates, writes and reads right after the refusals.
    data = np.random.default_rng().integers(0, 2**32, size=1 << 20, dtype=np.uint32)
    buf = ctx.buffer(data.nbytes)
    buf.write(data)
    back = np.empty_like(data)
    buf.read(back)
    assert np.array_equal(back, data)
    buf.release()


# Images: too many bytes is a memory error, like a buffer; too long a side is a shape error.
CL_MEM_OBJECT_ALLOCATION_FAILURE = -4
_OVERSIZED_IMAGE = """
import sys, pyclperf
ctx = pyclperf.Context()
i = ctx.info
w, h = i.image2d_max_width, i.image2d_max_height
if w * h * 16 <= i.max_alloc_bytes:
    sys.exit(f"no image of at most {w} x {h} exceeds {i.max_alloc_bytes} bytes")
try:
    ctx.image(w, h, 4)
except pyclperf.DeviceMemoryError as exc:
    print(type(exc).__name__, exc.code, exc.call, i.max_alloc_bytes, w * h * 16, exc, sep="\\n")
"""


def _oversized_image_report(ctx) -> list[str]:
    """Try a CL_RGBA float image of the largest sides; where those sides hold no more bytes than
    the largest allocation (PoCL: 16384^2 x 16 bytes = exactly its 4 GiB) do it in a child whose
    PoCL is told POCL_MEMORY_LIMIT=1 (GiB): 8192^2 sides, 256 MiB largest allocation."""
    i = ctx.info
    w, h = i.image2d_max_width, i.image2d_max_height
    if w * h * 16 > i.max_alloc_bytes:
        with pytest.raises(pyclperf.DeviceMemoryError) as caught:
            ctx.image(w, h, 4)
        exc = caught.value
        return [type(exc).__name__, str(exc.code), exc.call, str(i.max_alloc_bytes), str(w * h * 16), str(exc)]
    if "portable computing language" not in i.platform_name.lower():
        pytest.skip(f"no image within {w} x {h} exceeds {i.max_alloc_bytes} bytes, and only PoCL's limit can be lowered")
    env = {**os.environ, "POCL_MEMORY_LIMIT": "1"}
    proc = subprocess.run([sys.executable, "-c", _OVERSIZED_IMAGE], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split("\n", 5)


def test_an_image_past_the_largest_allocation_is_a_memory_error(ctx):
    if not ctx.info.image_support:
        pytest.skip("no image support")
    report = _oversized_image_report(ctx)
    assert len(report) == 6, f"the oversized image was not refused: {report}"
    kind, code, call, limit, nbytes, message = report
    assert kind == "DeviceMemoryError" and call == "clCreateImage"
    assert int(code) == CL_MEM_OBJECT_ALLOCATION_FAILURE
    assert f"CL_DEVICE_MAX_MEM_ALLOC_SIZE = {limit} bytes" in message and f"({nbytes} bytes)" in message


def test_an_image_side_past_the_limit_stays_a_shape_error(ctx):
    i = ctx.info
    if not i.image_support:
        pytest.skip("no image support")
    # One texel row too wide: a few bytes, still refused, and as an argument error, not memory.
    for width, height, side in ((i.image2d_max_width + 1, 1, "width"), (1, i.image2d_max_height + 1, "height")):
        with pytest.raises(pyclperf.InvalidArgumentError, match=f"image {side} .*CL_DEVICE_IMAGE2D_MAX_{side.upper()}") as caught:
            ctx.image(width, height, 4)
        assert not isinstance(caught.value, MemoryError)
    # A small image in between still works after both refusals.
    img = ctx.to_image(np.arange(64, dtype=np.float32).reshape(4, 4, 4))
    assert np.array_equal(ctx.from_image(img), np.arange(64, dtype=np.float32).reshape(4, 4, 4))
