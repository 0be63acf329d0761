"""CUDA C of the reference kernels (pyclperf.reference.cuda): a grid-stride float4 copy, fill
and read (sum), built by cupy.RawModule. The same accesses as kernels/bandwidth.cl and the
vector experiment's float4 copy, so the two sides differ only in the API and compiler."""

SOURCE = r"""
typedef unsigned long long u64;
#define GRID_STRIDE(i, n) for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < (n); \
                               i += (u64)gridDim.x * blockDim.x)
extern "C" __global__ void copy_f4(float4* __restrict__ out, const float4* __restrict__ in, u64 n)
{
    GRID_STRIDE(i, n) out[i] = in[i];
}
extern "C" __global__ void fill_f4(float4* __restrict__ out, float value, u64 n)
{
    const float4 v = make_float4(value, value, value, value);
    GRID_STRIDE(i, n) out[i] = v;
}
// Each thread sums its float4s; the block adds its threads' sums (warp shuffles, one shared slot
// per warp) and writes one float, so the writes are negligible beside the reads.
extern "C" __global__ void read_f4(const float4* __restrict__ in, u64 n, float* __restrict__ partial)
{
    __shared__ float warp_sums[32];
    float s = 0.0f;
    GRID_STRIDE(i, n) { const float4 v = in[i]; s += (v.x + v.y) + (v.z + v.w); }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) partial[blockIdx.x] = s;
    }
}
"""
