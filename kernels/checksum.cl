// A position-dependent checksum of a buffer's 32-bit words, summed per work-group: how a sweep
// sees that a launch changed an input it must not touch (a write that landed far past another
// argument's end) without reading the input back over PCIe. Each word is weighted by an odd
// multiplier that depends on its index, so a changed word, or two words swapped, change the sum.
// The host adds the work-groups' partial sums (modulo 2^64).

__kernel void checksum_words(__global const uint* restrict buffer, const ulong first,
                             const ulong n, __global ulong* restrict partial,
                             __local ulong* scratch)
{
    __global const uint* data = buffer + first;
    const size_t lid = get_local_id(0);
    const size_t size = get_local_size(0);
    ulong h = 0;
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
        ulong w = (ulong)data[i] + 1UL;
        h += w * (2UL * i * 0x9E3779B97F4A7C15UL + 1UL);
    }
    scratch[lid] = h;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = size / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
