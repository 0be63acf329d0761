"""Kernels written the way users write them, swept with tune() and verified against NumPy."""

import numpy as np
import pytest

from pyclperf.tuner import tune

CONV2D = """
// Naive 2-D convolution, 'valid' region, filter FW x FH held in global memory.
__kernel void conv2d(__global float* out, __global const float* img, __global const float* filt,
                     const int w, const int h) {
    const int x = get_global_id(0), y = get_global_id(1);
    const int ow = w - FW + 1, oh = h - FH + 1;
    if (x >= ow || y >= oh) return;
    float acc = 0.0f;
    for (int j = 0; j < FH; ++j)
        for (int i = 0; i < FW; ++i)
            acc += img[(y + j) * w + x + i] * filt[j * FW + i];
    out[y * ow + x] = acc;
}
"""

REDUCE = """
// Each work-group sums its slice in local memory (tree), writing one partial sum.
__kernel void partial_sums(__global float* partial, __global const float* x, const int n,
                           __local float* scratch) {
    const int lid = get_local_id(0), gid = get_global_id(0);
    scratch[lid] = gid < n ? x[gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
"""


def _conv_reference(img, filt):
    fh, fw = filt.shape
    oh, ow = img.shape[0] - fh + 1, img.shape[1] - fw + 1
    out = np.zeros((oh, ow), np.float64)
    for j in range(fh):
        for i in range(fw):
            out += img[j:j + oh, i:i + ow].astype(np.float64) * filt[j, i]
    return out.astype(np.float32)


def test_conv2d_sweep(ctx, rng):
    h, w, f = 64, 96, 5
    img = rng.standard_normal((h, w)).astype(np.float32)
    filt = rng.standard_normal((f, f)).astype(np.float32)
    want = _conv_reference(img, filt)
    out = np.empty((h - f + 1) * (w - f + 1), np.float32)
    res = tune(CONV2D, "conv2d", (w - f + 1, h - f + 1), [out, img, filt, w, h],
               {"block_size_x": [8, 16, 32], "block_size_y": [1, 4, 8], "FW": [f], "FH": [f]},
               ctx=ctx, answer=[want.ravel(), None, None, None, None], rtol=1e-4, atol=1e-4,
               metrics={"GFLOP/s": lambda c, s: 2 * f * f * want.size / s / 1e9},
               min_time=0.0, min_repeats=3, max_repeats=3)
    assert len(res.rows) == 9
    assert all(r["status"] == "ok" for r in res.rows), [r.get("error") for r in res.rows]
    assert all(r["GFLOP/s"] > 0 for r in res.rows)


@pytest.mark.parametrize("n", [4096, 5000])
def test_reduction_sweep(ctx, rng, n):
    from pyclperf import LocalMemory

    x = rng.standard_normal(n).astype(np.float32)
    for wg in (32, 64, 128):
        groups = -(-n // wg)
        padded = np.concatenate([x, np.zeros(groups * wg - n, np.float32)])
        want = padded.reshape(groups, wg).astype(np.float64).sum(axis=1).astype(np.float32)
        res = tune(REDUCE, "partial_sums", n, [np.empty(groups, np.float32), x, n, LocalMemory(4 * wg)],
                   {"block_size_x": [wg]}, ctx=ctx, answer=[want, None, None, None],
                   rtol=1e-4, atol=1e-4, min_time=0.0, min_repeats=3, max_repeats=3)
        assert res.rows[0]["status"] == "ok", res.rows[0].get("error")
        assert np.isclose(want.astype(np.float64).sum(), x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
