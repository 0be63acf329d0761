// A horizontal Gaussian of radius R on RGB pixels, the pixels read from four layouts (experiment
// `rgba`, Quasar 9.5): interleaved floats (r g b r g b ...), three planes (all r, then g, then b),
// one CL_RGBA float image fetch per tap, and the same from a CL_RGBA half image. Every kernel
// writes interleaved RGB floats, clamps at the left and right edges, and takes its 2R + 1 weights
// from `w`. Defines: R (the Gaussian kernels are built only where it is given).

#ifdef R
#define TAP(k) clamp(x + (k) - R, 0, width - 1)

__kernel void gauss_interleaved(__global const float* restrict in, const int width,
                                __global const float* restrict w, __global float* restrict out)
{
    const int x = get_global_id(0), y = get_global_id(1);
    float3 s = (float3)(0.0f);
    for (int k = 0; k <= 2 * R; ++k)
        s += w[k] * vload3(y * width + TAP(k), in);
    vstore3(s, y * width + x, out);
}

__kernel void gauss_planar(__global const float* restrict in, const int width,
                           __global const float* restrict w, __global float* restrict out)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int plane = width * get_global_size(1);
    float3 s = (float3)(0.0f);
    for (int k = 0; k <= 2 * R; ++k) {
        const int i = y * width + TAP(k);
        s += w[k] * (float3)(in[i], in[plane + i], in[2 * plane + i]);
    }
    vstore3(s, y * width + x, out);
}

__kernel void gauss_image(__read_only image2d_t in, const int width,
                          __global const float* restrict w, __global float* restrict out)
{
    const sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;
    const int x = get_global_id(0), y = get_global_id(1);
    float4 s = (float4)(0.0f);
    for (int k = 0; k <= 2 * R; ++k)
        s += w[k] * read_imagef(in, smp, (int2)(x + k - R, y));  // the edge clamps itself
    vstore3(s.xyz, y * width + x, out);
}
#endif  // R

// One stage of a vertical wavelet transform on RGBA float pixels (experiment `rgba`, Quasar 9.6):
// the same filter bank over three storages, so that the time difference is the storage's.
//   wavelet_interleaved  float4 per pixel in a row-major buffer (r g b a r g b a ...)
//   wavelet_planar       four planes (all r, then g, then b, then a)
//   wavelet_image        CL_RGBA/CL_FLOAT images: one read_imagef per tap, write_imagef out
// Work-item (x, i), i < height / 2, filters column x with the TAPS-tap low-pass lo and high-pass
// hi starting at row 2 i + SHIFT, wrapping at the bottom (periodic extension), and writes the
// low-pass result to row i and the high-pass one to row height / 2 + i.
// The filter pair comes from constant memory, as the document's coefficients do ('hwconst).
// Defines: TAPS (filter length), SHIFT (where the filter starts, 0 <= SHIFT < height); the
// wavelet kernels are built only where TAPS is given, so each program holds one workload's.

#ifdef TAPS
// The first row a work-item reads: the wrap is done once here and then by a compare per tap,
// the same arithmetic for all three storages.
#define FIRST_ROW(i, height) ((2 * (i) + SHIFT) % (height))
#define NEXT_ROW(j, height) ((j) + 1 == (height) ? 0 : (j) + 1)

__kernel void wavelet_interleaved(__global const float4* restrict in, const int height,
                                  __constant float* lo,
                                  __constant float* hi,
                                  __global float4* restrict out)
{
    const int x = get_global_id(0), i = get_global_id(1), width = get_global_size(0);
    float4 a = (float4)(0.0f), b = (float4)(0.0f);
    int j = FIRST_ROW(i, height);
    for (int k = 0; k < TAPS; ++k) {
        const float4 u = in[j * width + x];
        a += lo[k] * u;
        b += hi[k] * u;
        j = NEXT_ROW(j, height);
    }
    out[i * width + x] = a;
    out[(height / 2 + i) * width + x] = b;
}

__kernel void wavelet_planar(__global const float* restrict in, const int height,
                             __constant float* lo, __constant float* hi,
                             __global float* restrict out)
{
    const int x = get_global_id(0), i = get_global_id(1), width = get_global_size(0);
    const int plane = width * height;
    float4 a = (float4)(0.0f), b = (float4)(0.0f);
    int j = FIRST_ROW(i, height);
    for (int k = 0; k < TAPS; ++k) {
        const int p = j * width + x;
        const float4 u = (float4)(in[p], in[plane + p], in[2 * plane + p], in[3 * plane + p]);
        a += lo[k] * u;
        b += hi[k] * u;
        j = NEXT_ROW(j, height);
    }
    const int pa = i * width + x, pb = (height / 2 + i) * width + x;
    out[pa] = a.x; out[plane + pa] = a.y; out[2 * plane + pa] = a.z; out[3 * plane + pa] = a.w;
    out[pb] = b.x; out[plane + pb] = b.y; out[2 * plane + pb] = b.z; out[3 * plane + pb] = b.w;
}

__kernel void wavelet_image(__read_only image2d_t in, const int height,
                            __constant float* lo, __constant float* hi,
                            __write_only image2d_t out)
{
    const int x = get_global_id(0), i = get_global_id(1);
    float4 a = (float4)(0.0f), b = (float4)(0.0f);
    int j = FIRST_ROW(i, height);
    for (int k = 0; k < TAPS; ++k) {
        // Integer coordinates without a sampler: texel (x, j) exactly, all four channels.
        const float4 u = read_imagef(in, (int2)(x, j));
        a += lo[k] * u;
        b += hi[k] * u;
        j = NEXT_ROW(j, height);
    }
    write_imagef(out, (int2)(x, i), a);
    write_imagef(out, (int2)(x, height / 2 + i), b);
}
#endif  // TAPS
