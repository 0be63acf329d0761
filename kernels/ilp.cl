// Instruction-level parallelism (experiment `ilp`, Guide 3.2.6 and 4.3): every work-item runs
// TOTAL fused multiply-adds split over ACC independent accumulators (ACC = 1, 2, 4, 8, a define),
// TOTAL / ACC per accumulator. With one accumulator each FMA waits for the one before it (a
// read-after-write dependency: the pipeline's latency); with several, the device can issue the
// next accumulator's FMA while the previous ones are in flight. The host launches this at low
// occupancy (one small work-group per compute unit) and at full occupancy: there, other warps
// cover the latency and more accumulators should buy nothing.
//
// m and c come in as arguments so the compiler cannot fold the arithmetic; the host passes
// m = 1 and an integer c, so every value stays an integer below 2^24 and the result is exact:
// accumulator k ends at in + k + (TOTAL / ACC) c, and out is the sum over k of (k + 1) times it
// (weighted, so an FMA applied to the wrong accumulator shows).

__kernel void ilp(__global const float* restrict in, const float m, const float c,
                  __global float* restrict out)
{
    const size_t gid = get_global_id(0);
    const float x = in[gid];
    float acc[ACC];
#pragma unroll
    for (int k = 0; k < ACC; ++k)
        acc[k] = x + (float)k;
    for (int t = 0; t < TOTAL / ACC; ++t) {
#pragma unroll
        for (int k = 0; k < ACC; ++k)
            acc[k] = fma(acc[k], m, c);
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < ACC; ++k)
        sum += (float)(k + 1) * acc[k];
    out[gid] = sum;
}
