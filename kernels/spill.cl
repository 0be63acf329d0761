// A private array of N floats, indexed at run time or only at compile time (experiment `spill`,
// Guide 3.2.3): the same updates either way, so the two kernels compute the same result.
//
//   spill_dynamic   ROUNDS * N updates at index i, i stepping by a run-time `stride` (the host
//                   passes 1): the compiler cannot know which element an update touches, so the
//                   array must live in addressable memory (CUDA "local memory", off-chip),
//                   not in registers
//   spill_unrolled  ROUNDS rounds over all N elements with loops unrolled: every index is a
//                   constant, so the array can be N registers (until there are too many of them
//                   and the compiler spills)
//
// Each update is a[i] = fma(a[i], m, c) with m = 1 and an integer c from the host, so the result is
// exact: element k ends at in + k + ROUNDS c, and out is the sum of (k + 1) times element k (the
// weights make an update that lands on the wrong element show).
// Defines: N (a power of two), ROUNDS.

__kernel void spill_dynamic(__global const float* restrict in, const float m, const float c,
                            const uint stride, __global float* restrict out)
{
    const size_t gid = get_global_id(0);
    const float x = in[gid];
    float a[N];
    for (uint k = 0; k < N; ++k)
        a[k] = x + (float)k;
    uint i = 0;
    for (uint r = 0; r < ROUNDS * N; ++r) {
        a[i] = fma(a[i], m, c);
        i = (i + stride) & (N - 1);
    }
    float s = 0.0f;
    for (uint k = 0; k < N; ++k)
        s += (float)(k + 1) * a[k];
    out[gid] = s;
}

__kernel void spill_unrolled(__global const float* restrict in, const float m, const float c,
                             const uint stride, __global float* restrict out)
{
    const size_t gid = get_global_id(0);
    const float x = in[gid];
    float a[N];
#pragma unroll
    for (uint k = 0; k < N; ++k)
        a[k] = x + (float)k;
    for (uint r = 0; r < ROUNDS; ++r) {
#pragma unroll
        for (uint k = 0; k < N; ++k)
            a[k] = fma(a[k], m, c);
    }
    float s = 0.0f;
#pragma unroll
    for (uint k = 0; k < N; ++k)
        s += (float)(k + 1) * a[k];
    out[gid] = s;  // (stride unused: the same arguments as spill_dynamic)
}
