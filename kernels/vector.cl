// Copy with wider accesses and more work per work-item (experiment `vector`). Built once per
// variant with two defines:
//   ELEMENT   the type one access moves: float, float2, float4, float8 or float16
//   PER_ITEM  how many elements each work-item copies
// Work-item i copies elements i, i + N, i + 2N ... where N is the global size: each pass of the
// loop sweeps the whole buffer contiguously, so neighbouring work-items keep touching
// neighbouring addresses however many elements each one handles.

__kernel void vector_copy(__global ELEMENT* restrict out, __global const ELEMENT* restrict in)
{
    const size_t n = get_global_size(0);
    size_t i = get_global_id(0);
    for (int k = 0; k < PER_ITEM; ++k, i += n)
        out[i] = in[i];
}

// The same copy with the loads issued before any store: PER_ITEM independent loads are in
// flight at once per work-item, which is what hides DRAM latency when few work-items are
// resident. Loop-for-loop it is vector_copy; the order of the memory operations is the point.
__kernel void vector_copy_staged(__global ELEMENT* restrict out, __global const ELEMENT* restrict in)
{
    const size_t n = get_global_size(0);
    const size_t i = get_global_id(0);
    ELEMENT v[PER_ITEM];
#pragma unroll
    for (int k = 0; k < PER_ITEM; ++k)
        v[k] = in[i + k * n];
#pragma unroll
    for (int k = 0; k < PER_ITEM; ++k)
        out[i + k * n] = v[k];
}

// A fixed grid (a few work-groups per compute unit) walking the whole buffer of `count`
// elements: fewer, longer-lived work-items than vector_copy, the persistent-thread shape.
__kernel void vector_copy_grid(__global ELEMENT* restrict out, __global const ELEMENT* restrict in,
                               const ulong count)
{
    const size_t n = get_global_size(0);
    for (size_t i = get_global_id(0); i < count; i += n)
        out[i] = in[i];
}
