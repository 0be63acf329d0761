"""Kernels written the way users write them, swept with tune() and verified against NumPy."""

import numpy as np
import pytest

from pyclperf import Launch, Timing, Verify, LocalMemory, tune
from pyclperf.tuner.options import from_flat

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
    res = tune(
        CONV2D,
        "conv2d",
        (w - f + 1, h - f + 1),
        [out, img, filt, w, h],
        {"block_size_x": [8, 16, 32], "block_size_y": [1, 4, 8], "FW": [f], "FH": [f]},
        ctx=ctx,
        metrics={"GFLOP/s": lambda c, s: 2 * f * f * want.size / s / 1e9},
        verify=Verify(answer=[want.ravel(), None, None, None, None], rtol=1e-4, atol=1e-4),
        timing=Timing(min_time=0.0, min_repeats=3, max_repeats=3),
    )
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
        res = tune(
            REDUCE,
            "partial_sums",
            n,
            [np.empty(groups, np.float32), x, n, LocalMemory(4 * wg)],
            {"block_size_x": [wg]},
            ctx=ctx,
            verify=Verify(answer=[want, None, None, None], rtol=1e-4, atol=1e-4),
            timing=Timing(min_time=0.0, min_repeats=3, max_repeats=3),
        )
        assert res.rows[0]["status"] == "ok", res.rows[0].get("error")
        assert np.isclose(want.astype(np.float64).sum(), x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


# --- Kernels from public projects, launched the way those projects launch them ---------------

# BabelStream's OpenCL kernels, from src/ocl/OCLStream.cpp of UoB-HPC/BabelStream
# (Copyright (c) 2015-16 Tom Deakin, Simon McIntosh-Smith, University of Bristol HPC;
# BSD 3-clause licence: redistribution of source must retain this notice). Unchanged, as text.
BABELSTREAM = r"""
  constant TYPE scalar = startScalar;

  kernel void copy(
    global const TYPE * restrict a,
    global TYPE * restrict c)
  {
    const size_t i = get_global_id(0);
    c[i] = a[i];
  }

  kernel void mul(
    global TYPE * restrict b,
    global const TYPE * restrict c)
  {
    const size_t i = get_global_id(0);
    b[i] = scalar * c[i];
  }

  kernel void add(
    global const TYPE * restrict a,
    global const TYPE * restrict b,
    global TYPE * restrict c)
  {
    const size_t i = get_global_id(0);
    c[i] = a[i] + b[i];
  }

  kernel void triad(
    global TYPE * restrict a,
    global const TYPE * restrict b,
    global const TYPE * restrict c)
  {
    const size_t i = get_global_id(0);
    a[i] = b[i] + scalar * c[i];
  }
  kernel void nstream(
    global TYPE * restrict a,
    global const TYPE * restrict b,
    global const TYPE * restrict c)
  {
    const size_t i = get_global_id(0);
    a[i] += b[i] + scalar * c[i];
  }

  kernel void stream_dot(
    global const TYPE * restrict a,
    global const TYPE * restrict b,
    global TYPE * restrict sum,
    local TYPE * restrict wg_sum,
    long array_size)
  {
    size_t i = get_global_id(0);
    const size_t local_i = get_local_id(0);
    wg_sum[local_i] = 0.0;
    for (; i < array_size; i += get_global_size(0))
      wg_sum[local_i] += a[i] * b[i];

    for (int offset = get_local_size(0) / 2; offset > 0; offset /= 2)
    {
      barrier(CLK_LOCAL_MEM_FENCE);
      if (local_i < offset)
      {
        wg_sum[local_i] += wg_sum[local_i+offset];
      }
    }

    if (local_i == 0)
      sum[get_group_id(0)] = wg_sum[local_i];
  }
"""
STREAM_N = 1 << 16
DTYPES = {"float": np.float32, "double": np.float64}
STREAM_PARAMS = {"TYPE": ["float", "double"], "startScalar": ["0.4"]}  # BabelStream's -D options


@pytest.fixture
def stream_arrays(rng):
    """BabelStream's three arrays, as float64 masters; each configuration takes its TYPE."""
    return {k: rng.standard_normal(STREAM_N) for k in "abc"}


def _typed(master):
    return lambda c: master.astype(DTYPES[c["TYPE"]])


@pytest.mark.parametrize("name, args, expect", [
    ("copy", "ac", lambda a, b, c, s: [None, a]),
    ("mul", "bc", lambda a, b, c, s: [s * c, None]),
    ("add", "abc", lambda a, b, c, s: [None, None, a + b]),
    ("triad", "abc", lambda a, b, c, s: [b + s * c, None, None]),
])
def test_babelstream_kernels_as_babelstream_launches_them(ctx, stream_arrays, name, args, expect):
    """global = array_size, local = NullRange (the driver picks), both element types."""
    arrays = [_typed(stream_arrays[k]) for k in args]

    def reference(config, *values):
        t = DTYPES[config["TYPE"]]
        a, b, c = (stream_arrays[k].astype(t) for k in "abc")
        return [None if e is None else np.asarray(e, dtype=t) for e in expect(a, b, c, t(0.4))]

    res = tune(
        BABELSTREAM,
        name,
        STREAM_N,
        arrays,
        STREAM_PARAMS,
        ctx=ctx,
        verify=Verify(reference=reference, rtol=1e-6, atol=1e-6),
        timing=Timing(min_time=0.0, min_repeats=3, max_repeats=3),
    )
    assert [r["status"] for r in res.rows] == ["ok", "ok"], [r["error"] for r in res.rows]
    assert all(r["local_size"] == "auto" and r["global_size"] == f"({STREAM_N},)" for r in res.rows)


@pytest.mark.parametrize("inout", [[], ["a"]])
def test_babelstream_nstream_is_an_inout_kernel(ctx, stream_arrays, inout):
    """a[i] += b[i] + scalar * c[i] reads its output: with the defaults (no inout=), the poison
    in 'a' makes a NaN of every element; pyclperf finds 'a' read and verifies it with its input,
    as BabelStream runs it, and says so in the row. Declared inout, it is never poisoned."""
    a, b, c = (_typed(stream_arrays[k]) for k in "abc")

    def reference(config, a, b, c):
        return [a + b + a.dtype.type(0.4) * c, None, None]

    res = tune(
        BABELSTREAM,
        "nstream",
        STREAM_N,
        [a, b, c],
        STREAM_PARAMS,
        ctx=ctx,
        verify=Verify(inout=inout, reference=reference),
        timing=Timing(min_time=0.0, min_repeats=5, max_repeats=5),
    )
    assert [r["status"] for r in res.rows] == ["ok", "ok"], [r["error"] for r in res.rows]
    note = ("argument 0 ('a') is read and written by the kernel (in/out): the outputs changed "
            "with what 'a' held before the launch, so it was verified with its input")
    assert all((note in r.get("notes", "")) == (not inout) for r in res.rows), res.rows[0].get("notes")


def test_babelstream_dot_needs_a_reference_of_the_configuration(ctx, stream_arrays):
    """BabelStream launches dot_num_groups x dot_wgsize work-items and sums the groups' partial
    sums on the host: the expected partials depend on both."""
    params = {**STREAM_PARAMS, "dot_num_groups": [4, 16], "block_size_x": [32, 64]}
    wgsum = lambda c: LocalMemory(np.dtype(DTYPES[c["TYPE"]]).itemsize * c["block_size_x"])  # noqa: E731
    sums = lambda c: np.zeros(c["dot_num_groups"], DTYPES[c["TYPE"]])  # noqa: E731

    def reference(config, a, b, s, wg, n):
        stride = config["dot_num_groups"] * config["block_size_x"]
        per_item = np.zeros(stride)
        np.add.at(per_item, np.arange(n) % stride, a.astype(np.float64) * b)
        partial = per_item.reshape(config["dot_num_groups"], -1).sum(axis=1)
        return [None, None, partial.astype(a.dtype), None, None]

    res = tune(
        BABELSTREAM,
        "stream_dot",
        "dot_num_groups",
        [_typed(stream_arrays["a"]), _typed(stream_arrays["b"]), sums, wgsum, STREAM_N],
        params,
        ctx=ctx,
        launch=Launch(grid_div_x=[]),
        verify=Verify(reference=reference, rtol=1e-3, atol=1e-3),
        timing=Timing(min_time=0.0, min_repeats=3, max_repeats=3),
    )
    assert [r["status"] for r in res.rows] == ["ok"] * 8, [r["error"] for r in res.rows]
    assert {r["global_size"] for r in res.rows} == {"(128,)", "(256,)", "(512,)", "(1024,)"}


# Kernel Tuner's OpenCL examples (KernelTuner/kernel_tuner, examples/opencl/reduction.cl and
# stencil.cl; Apache License 2.0), unchanged, launched with the tune_params, problem sizes and
# grid divisors of the examples' own scripts (reduction.py, stencil.py), sizes made small.
KT_REDUCTION = r"""#ifndef vector
#define vector 1
#endif 

#if (vector==1)
#define floatvector float
#elif (vector == 2)
#define floatvector float2
#elif (vector == 4)
#define floatvector float4
#endif

__kernel void sum_floats(__global float *sum_global, __global floatvector *array, int n) {
    int ti = get_local_id(0);
    int x = get_group_id(0) * block_size_x + get_local_id(0);
    int step_size = num_blocks * block_size_x;
    float sum = 0.0f;

    //cooperatively iterate over input array with all thread blocks
    for (int i=x; i<n/vector; i+=step_size) {
        floatvector v = array[i];
        #if vector == 1
        sum += v;
        #elif vector == 2
        sum += v.x + v.y;
        #elif vector == 4
        sum += v.x + v.y + v.z + v.w;
        #endif
    }
    
    //reduce sum to single value (or last 32 in case of use_shuffle)
    __local float sh_mem[block_size_x];

    sh_mem[ti] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (unsigned int s=block_size_x/2; s>0; s>>=1) {
        if (ti < s) {
            sh_mem[ti] += sh_mem[ti + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    //write back one value per thread block, run kernel again with one tread block
    if (ti == 0) {
        sum_global[get_group_id(0)] = sh_mem[0];
    }
}
"""
KT_STENCIL = r"""
#define domain_width    4096
#define domain_height   2048

__kernel void stencil_kernel(__global float *x_new, __global float *x_old) {
    int x = get_group_id(0) * block_size_x + get_local_id(0);
    int y = get_group_id(1) * block_size_y + get_local_id(1);

    if (y>0 && y<domain_height-1 && x>0 && x<domain_width-1) {

    x_new[y*domain_width+x] = ( x_old[ (y  ) * domain_width + (x  ) ] +
                                x_old[ (y  ) * domain_width + (x-1) ] +
                                x_old[ (y  ) * domain_width + (x+1) ] +
                                x_old[ (y+1) * domain_width + (x  ) ] +
                                x_old[ (y-1) * domain_width + (x  ) ] ) / 5.0f;

    }
}
"""


def test_kernel_tuner_reduction_example(ctx, rng):
    """problem_size "num_blocks" with grid_div_x=[]: num_blocks groups; the example's own
    verify sums the partial sums. Every group's partial must have been written: the output
    is poisoned, and the groups past num_blocks must still hold the poison."""
    size = 1 << 16
    x = rng.random(size).astype(np.float32)
    params = {"block_size_x": [32, 128], "vector": [1, 2, 4], "num_blocks": [8, 32]}
    total = x.astype(np.float64).sum()

    def verify(config, outputs):
        nb = config["num_blocks"]
        written, rest = outputs[0][:nb], outputs[0][nb:]
        if not np.isnan(rest).all():
            return False, "a group past num_blocks wrote a partial sum"
        return bool(np.isclose(written.astype(np.float64).sum(), total, rtol=1e-4)), "sum differs"

    res = tune(
        KT_REDUCTION,
        "sum_floats",
        "num_blocks",
        [np.zeros(32, np.float32), x, np.int32(size)],
        params,
        ctx=ctx,
        launch=Launch(grid_div_x=[]),
        verify=Verify(verify=verify, poison=["sum_global"]),
        timing=Timing(min_time=0.0, min_repeats=2, max_repeats=2),
    )
    assert len(res.rows) == 12
    assert all(r["status"] == "ok" for r in res.rows), [r["error"] for r in res.rows]


@pytest.mark.slow
def test_kernel_tuner_stencil_example_writes_only_the_interior(ctx, rng):
    """The example passes x_new = copy of x_old, and the kernel leaves the border alone: it
    keeps its input, which is what the answer says there. With the defaults the border is found
    never written (it keeps two different poisons through two launches) and the row is ok, its
    note naming the border; an answer that expects something else there is a wrong result
    naming the elements."""
    w, h = 4096, 2048
    # Inputs of magnitude 0.5..1.5 with either sign: none within the comparison's tolerance of
    # the zeroed border below, so the count of border elements that differ is exact.
    x_old = (rng.uniform(0.5, 1.5, w * h) * rng.choice([-1.0, 1.0], w * h)).astype(np.float32)
    grid = x_old.reshape(h, w).astype(np.float64)
    want = grid.copy()
    want[1:-1, 1:-1] = (grid[1:-1, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:] + grid[2:, 1:-1]
                        + grid[:-2, 1:-1]) / 5
    params = {"block_size_x": [32, 64], "block_size_y": [1, 4]}
    common = dict(ctx=ctx, grid_div_x=["block_size_x"], grid_div_y=["block_size_y"],
                  min_time=0.0, min_repeats=1, max_repeats=1, warmup=0)
    res = tune(
        KT_STENCIL,
        "stencil_kernel",
        (w, h),
        [x_old.copy(), x_old],
        params,
        **from_flat(dict(answer=[want.astype(np.float32).ravel(), None], **common)),
    )
    assert [r["status"] for r in res.rows] == ["ok"] * 4, [r["error"] for r in res.rows]
    border = 2 * w + 2 * (h - 2)
    assert all(f"the kernel never writes {border} of its {w * h} elements (0, 1, 2, 3, 4, 5, ..."
               in r["notes"] for r in res.rows), res.rows[0]["notes"]
    zeroed = want.copy()
    zeroed[0, :] = zeroed[-1, :] = zeroed[:, 0] = zeroed[:, -1] = 0.0
    bad = tune(
        KT_STENCIL,
        "stencil_kernel",
        (w, h),
        [x_old.copy(), x_old],
        {"block_size_x": [32], "block_size_y": [4]},
        **from_flat(dict(answer=[zeroed.astype(np.float32).ravel(), None], **common)),
    )
    assert bad.rows[0]["status"] == "wrong result"
    assert (f"The kernel never writes {border} of the {w * h} elements of 'x_new'"
            in bad.rows[0]["error"]), bad.rows[0]["error"]
    assert f"at {border} of them the answer expects another value: 0, 1, 2" in bad.rows[0]["error"]


# GPUBench's L2-cache bandwidth kernel, kernels/opencl/cachebw_l2.cl of Soddentrough/GPUBench
# (Copyright (c) 2025-2026 GPUBench Contributors; MIT licence: this notice must be kept with
# copies), unchanged: an in-place read benchmark. Each work-item reads its float4 500 times and
# writes the sum back over it, so the array is read and written.
GPUBENCH_L2 = r"""__kernel void run_benchmark(__global float4* data, __global uint* pc) {
    uint stride = pc[0];
    uint mask = pc[1];
    uint iterations = pc[2];

    uint workgroupOffset = get_group_id(0) * 256;
    uint localId = get_local_id(0);
    
    uint baseIndex = workgroupOffset + localId;
    
    float4 sum = (float4)(0.0f);
    
    for (int iter = 0; iter < 500; iter++) {
        float4 v0 = data[baseIndex];
        sum += v0;
    }
    
    data[baseIndex] = sum;
}
"""


def test_gpubench_in_place_read_benchmark(ctx, rng):
    """Launched as GPUBench's CacheBench does for L2: 256-item work-groups, one per 256
    float4s of the buffer, and (stride, mask, iterations) in the second buffer."""
    vec4s = 1 << 14
    data = rng.standard_normal((vec4s, 4)).astype(np.float32)
    want = np.zeros_like(data)
    for _ in range(500):  # the kernel's own order of float32 additions
        want += data
    pc = np.array([32, vec4s - 1, 1_000_000], np.uint32)
    res = tune(
        GPUBENCH_L2,
        "run_benchmark",
        vec4s,
        [data, pc],
        {"block_size_x": [256]},
        ctx=ctx,
        verify=Verify(answer=[want, None]),
        timing=Timing(min_time=0.0, min_repeats=3, max_repeats=3),
    )
    assert res.rows[0]["status"] == "ok", res.rows[0]["error"]
    assert "argument 0 ('data') is read and written by the kernel (in/out)" in res.rows[0]["notes"]


def test_kernel_tuner_stencil_script_with_an_answer(rng):
    """The example's script as Kernel Tuner runs it, with an answer added: x_new starts as a
    copy of x_old, so the border the kernel never writes is already right, as Kernel Tuner
    (which never poisons) finds it. Every configuration verifies."""
    from pyclperf import tune_kernel

    w, h = 4096, 2048
    x_old = rng.standard_normal(w * h).astype(np.float32)
    x_new = np.copy(x_old)
    grid = x_old.reshape(h, w)
    want = grid.copy()
    want[1:-1, 1:-1] = (grid[1:-1, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:] + grid[2:, 1:-1]
                        + grid[:-2, 1:-1]) / np.float32(5)
    results, env = tune_kernel("stencil_kernel", KT_STENCIL, (w, h), [x_new, x_old],
                               {"block_size_x": [32, 64], "block_size_y": [2]},
                               grid_div_x=["block_size_x"], grid_div_y=["block_size_y"],
                               answer=[want.ravel(), None], iterations=1, quiet=True)
    rows = env["pyclperf_results"].rows
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["error"] for r in rows]
    assert len(results) == 2 and "best_config" in env
