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
