// Copy with wider accesses and more work per work-item (EXPERIMENTS.md `vector`). Built once per
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
