// Resampling a 2-D float image at fractional coordinates, through the texture hardware (an
// image and a sampler) or by hand from global memory (experiment `texture`, after Quasar
// 9.3 and Guide 3.2.4). Output pixel (i, j) samples the input at
//
//   u = i * xf.s0 + xf.s1,  v = j * xf.s2 + xf.s3      (texel units; texel k spans [k, k+1))
//
// given to the sampler as normalized coordinates (u / width, v / height): OpenCL allows repeat
// addressing only with normalized coordinates, so every variant uses them.
//
//   resample_image   read_imagef through the sampler argument (its filter and addressing decide)
//   resample_manual  the OpenCL specification's sampling rules written out from global memory,
//                    built per variant with two defines:
//                      LINEAR  0 = nearest, 1 = linear (bilinear) filtering
//                      REPEAT  0 = clamp_to_edge, 1 = repeat addressing
//
// The host picks scales and offsets that are multiples of 1/512 and power-of-two sizes, so u,
// u / width and every step below are exact in float32: nearest sampling must then match the
// NumPy reference exactly, and linear filtering differs only by rounding (or by the hardware's
// reduced-precision weights; see experiments/texture.py).

__kernel void resample_image(__global float* out, __read_only image2d_t src, sampler_t smp,
                             const int ow, const int oh, const float4 xf, const float2 inv_size)
{
    const int i = get_global_id(0), j = get_global_id(1);
    if (i >= ow || j >= oh) return;
    const float u = i * xf.s0 + xf.s1, v = j * xf.s2 + xf.s3;
    out[(size_t)j * ow + i] = read_imagef(src, smp, (float2)(u * inv_size.s0, v * inv_size.s1)).x;
}

#ifdef LINEAR

// One axis of the specification's address computation for a normalized coordinate s over n
// texels: the two texel indices and the weight of the second (linear), or one index (nearest).
static inline int2 texels(const float s, const int n, float* weight)
{
#if REPEAT
    const float x = (s - floor(s)) * n;
#else
    const float x = s * n;
#endif
#if LINEAR
    const float below = floor(x - 0.5f);
    *weight = (x - 0.5f) - below;
    int a = (int)below, b = a + 1;
#if REPEAT
    if (a < 0) a += n;
    if (b > n - 1) b -= n;
#else
    a = clamp(a, 0, n - 1);
    b = clamp(b, 0, n - 1);
#endif
    return (int2)(a, b);
#else
    *weight = 0.0f;
    int a = (int)floor(x);
#if REPEAT
    if (a > n - 1) a -= n;
#else
    a = clamp(a, 0, n - 1);
#endif
    return (int2)(a, a);
#endif
}

__kernel void resample_manual(__global float* restrict out, const __global float* restrict src,
                              const int w, const int h, const int ow, const int oh,
                              const float4 xf, const float2 inv_size)
{
    const int i = get_global_id(0), j = get_global_id(1);
    if (i >= ow || j >= oh) return;
    const float u = i * xf.s0 + xf.s1, v = j * xf.s2 + xf.s3;
    float a, b;
    const int2 cx = texels(u * inv_size.s0, w, &a);
    const int2 cy = texels(v * inv_size.s1, h, &b);
    const __global float* r0 = src + (size_t)cy.s0 * w;
#if LINEAR
    const __global float* r1 = src + (size_t)cy.s1 * w;
    const float top = mix(r0[cx.s0], r0[cx.s1], a);
    const float bottom = mix(r1[cx.s0], r1[cx.s1], a);
    out[(size_t)j * ow + i] = mix(top, bottom, b);
#else
    out[(size_t)j * ow + i] = r0[cx.s0];
#endif
}

#endif
