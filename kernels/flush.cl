// Reads a buffer whole so that the caches in front of device memory hold nothing of what the
// next kernel will touch (tune(cold=True), run --cold). Each work-group walks a contiguous
// stretch of its own, its work-items side by side (coalesced on a GPU, vectorised on a CPU
// device, where a grid-wide stride would send every work-item's next load a long way off), and
// folds what it read into one word so that no load can be dropped as unused. The folds are
// written per work-group; the host reads them only to check the kernel (residency.read_through).

__kernel void flush_read(__global const uint4* restrict data, const ulong n4, const ulong per_group,
                         __global uint* restrict folds, __local uint* scratch)
{
    const size_t lid = get_local_id(0);
    const size_t size = get_local_size(0);
    const ulong start = (ulong)get_group_id(0) * per_group;
    const ulong end = min(start + per_group, n4);
    uint4 acc = (uint4)(0u);
    for (ulong i = start + lid; i < end; i += size)
        acc ^= data[i];
    scratch[lid] = acc.x ^ acc.y ^ acc.z ^ acc.w;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = size / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] ^= scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) folds[get_group_id(0)] = scratch[0];
}
