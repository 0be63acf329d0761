// The p2p experiment's kernel path: a kernel on one device copying a buffer whose contents live
// on the other device of the same context. A grid-stride loop, so the experiment chooses the grid
// (a few work-groups per compute unit) independently of the buffer's size.
__kernel void copy_words(__global const uint4* restrict src, __global uint4* restrict dst,
                         const ulong count)
{
    for (size_t i = get_global_id(0); i < count; i += get_global_size(0))
        dst[i] = src[i];
}
