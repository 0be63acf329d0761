// Copy with wider accesses and more work per work-item (experiment `vector`). Built once per
// variant with two defines:
//   ELEMENT   the type one access moves: float, float2, float4, float8 or float16
//   PER_ITEM  how many elements each work-item copies
// Work-item i copies elements i, i + N, i + 2N ... where N is the global size: each pass of the
// loop sweeps the whole buffer contiguously, so neighbouring work-items keep touching
// neighbouring addresses however many elements each one handles.
//
// The byte reversals at the end take no defines (built without them, the copies default to one
// float per work-item).

#ifndef ELEMENT
#define ELEMENT float
#endif
#ifndef PER_ITEM
#define PER_ITEM 1
#endif

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


// Reversing a byte buffer (the Reverse document): byte j of the input lands at byte n - 1 - j of
// the output. The three kernels differ only in how many bytes one work-item moves, and so in how
// wide each memory access is: 1, 16 or 64 bytes.

// One byte per work-item: the narrowest access there is.
__kernel void reverse_uchar(__global uchar* restrict out, __global const uchar* restrict in)
{
    const size_t last = get_global_size(0) - 1;
    const size_t j = get_global_id(0);
    out[last - j] = in[j];
}

// 16 bytes per work-item: chunk j goes to the mirrored chunk, its bytes reversed by one swizzle.
__kernel void reverse_uchar16(__global uchar16* restrict out, __global const uchar16* restrict in)
{
    const size_t last = get_global_size(0) - 1;
    const size_t j = get_global_id(0);
    out[last - j] = in[j].sFEDCBA9876543210;
}

// 64 bytes per work-item as 16 uints. Reversing 64 bytes mirrors the four 16-byte quarters and
// reverses the bytes inside each: viewed as uchar16, a quarter's bytes reverse in one swizzle
// (which also swaps its four uints end for end and each uint's bytes).
#define REVERSED_QUARTER(q) as_uint4(as_uchar16(q).sFEDCBA9876543210)

__kernel void reverse_uint16(__global uint16* restrict out, __global const uint16* restrict in)
{
    const size_t last = get_global_size(0) - 1;
    const size_t j = get_global_id(0);
    const uint16 v = in[j];
    uint16 r;
    r.s0123 = REVERSED_QUARTER(v.sCDEF);
    r.s4567 = REVERSED_QUARTER(v.s89AB);
    r.s89AB = REVERSED_QUARTER(v.s4567);
    r.sCDEF = REVERSED_QUARTER(v.s0123);
    out[last - j] = r;
}
