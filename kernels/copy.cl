// Copy kernels for the coalescing experiments (Guide 3.2.1.3 and 3.2.1.4).
// One float per work-item; the index pattern is the only thing that varies, so any change in
// bandwidth comes from how the work-items' addresses fall into memory transactions.

// Work-item i copies element i + offset: offset 0 is aligned to the start of the buffer, any
// other offset shifts every warp's window across a transaction boundary.
__kernel void offset_copy(__global float* restrict out, __global const float* restrict in,
                          const int offset)
{
    const size_t i = get_global_id(0) + (size_t)offset;
    out[i] = in[i];
}

// Work-item i copies element i * stride: neighbours are `stride` floats apart, so a warp's
// accesses spread over more transactions as the stride grows.
__kernel void stride_copy(__global float* restrict out, __global const float* restrict in,
                          const int stride)
{
    const size_t i = get_global_id(0) * (size_t)stride;
    out[i] = in[i];
}
