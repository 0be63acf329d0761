// A horizontal Gaussian of radius R on RGB pixels, the pixels read from four layouts (experiment
// `rgba`, Quasar 9.5): interleaved floats (r g b r g b ...), three planes (all r, then g, then b),
// one CL_RGBA float image fetch per tap, and the same from a CL_RGBA half image. Every kernel
// writes interleaved RGB floats, clamps at the left and right edges, and takes its 2R + 1 weights
// from `w`. Defines: R.

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
