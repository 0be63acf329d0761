// Bandwidth and latency against the size of the data a kernel keeps touching (experiment
// `workingset`). The working set is the first n words of each buffer, n a power of two, so an
// index wraps with `& mask` (mask = n - 1) and every kernel can run more reads than the set holds:
// repeated passes over the same words are what lets a cache of that size serve them.
//
//   ws_read   each work-item reads `iters` words at (gid + j G) & mask (G the global size; one
//             contiguous stretch per j across the grid) and writes their 32-bit sum, which depends
//             on every read, so none can be dropped
//   ws_copy   the same walk, copying src to dst at the same index (two sets of n words)
//   ws_chase  one work-item follows `steps` links of a cyclic permutation (next[p] is where to go
//             from p); each load's address is the previous load's value, so nothing overlaps and
//             the time per step is the latency of the level that holds the set. It starts where
//             the previous launch stopped (pos[0]), so consecutive launches walk the whole cycle
//             rather than the same `steps` words again.

__kernel void ws_read(__global const uint* restrict src, const uint mask, const uint iters,
                      __global uint* restrict out)
{
    const uint gid = get_global_id(0);
    const uint grid = get_global_size(0);
    uint sum = 0;
    for (uint j = 0; j < iters; ++j)
        sum += src[(gid + j * grid) & mask];  // uint arithmetic wraps at 2^32, a multiple of n
    out[gid] = sum;
}

__kernel void ws_copy(__global const uint* restrict src, const uint mask, const uint iters,
                      __global uint* restrict dst)
{
    const uint gid = get_global_id(0);
    const uint grid = get_global_size(0);
    for (uint j = 0; j < iters; ++j) {
        const uint i = (gid + j * grid) & mask;
        dst[i] = src[i];
    }
}

__kernel void ws_chase(__global const uint* restrict next, const uint steps,
                       __global uint* restrict pos, __global uint* restrict out)
{
    uint p = pos[0];
    for (uint s = 0; s < steps; ++s)
        p = next[p];
    pos[0] = p;
    out[0] = p;
}
