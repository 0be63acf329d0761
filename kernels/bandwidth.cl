// Read-only, write-only and float-to-half bandwidth: the `bandwidth` experiment's kernels, and
// the OpenCL side of the CUDA reference's read and fill kernels (benchmarks/honest_reference.py).
// float4 accesses in a grid-stride loop, so one kernel serves any number of work-groups (a few
// per compute unit, or one float4 per work-item when the grid covers all): the experiment sweeps
// those shapes to find the fast one.
//   WG  the work-group size, a power of two (the local reduction halves it), fixed at build.

// Each work-item sums its float4s; the work-group adds its work-items' sums in local memory and
// writes one float, so the writes are negligible beside the reads (and the loads cannot be
// optimised away: every value reaches the result, which the host checks against NumPy).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void read_sum(__global const float4* restrict in, const ulong count, __global float* restrict partial)
{
    __local float sums[WG];
    float s = 0.0f;
    for (size_t i = get_global_id(0); i < count; i += get_global_size(0)) {
        const float4 v = in[i];
        s += (v.x + v.y) + (v.z + v.w);
    }
    const size_t l = get_local_id(0);
    sums[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t step = WG / 2; step > 0; step >>= 1) {
        if (l < step)
            sums[l] += sums[l + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        partial[get_group_id(0)] = sums[0];
}

// Writes only: every float of `count` float4s set to `value`.
__kernel void fill(__global float4* restrict out, const float value, const ulong count)
{
    const float4 v = (float4)(value);
    for (size_t i = get_global_id(0); i < count; i += get_global_size(0))
        out[i] = v;
}

// Float to float16: each float4 read and stored as four halves (4 + 2 bytes per element), the
// conversion bandwidth of BabelStream-style mixed-precision kernels. vstore_half4 needs no
// cl_khr_fp16 (a half pointer may be declared, only not dereferenced) and rounds by the current
// rounding mode, which OpenCL C fixes at round to nearest even, so the host can demand NumPy's
// float16 rounding bit for bit.
__kernel void to_half(__global const float4* restrict in, const ulong count, __global half* restrict out)
{
    for (size_t i = get_global_id(0); i < count; i += get_global_size(0))
        vstore_half4(in[i], i, out);
}
