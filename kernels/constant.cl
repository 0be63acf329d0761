// 1-D convolution along the rows of a 2-D float image, with the filter taps and the input read
// from different memories (experiment `constant`, after Quasar 9.1 and Guide 3.2.4-3.2.5):
//
//   y[r][c] = sum_{k < TAPS} x[r][min(c + k, width - 1)] * f[k]
//
// Define: TAPS, the number of filter taps (32 in Quasar's test). Every work-item reads the same
// tap at the same time, the pattern constant memory is built for (one broadcast per warp), while
// its neighbours read neighbouring x: one row of x is reused TAPS times from the caches.
// The kernels differ only in where x and f come from:
//   conv_global      plain __global pointers: nothing tells the compiler the data is read-only
//   conv_constant    f in __constant memory (the constant cache)
//   conv_readonly_f  f as const restrict __global (the read-only / non-coherent cache path)
//   conv_readonly    x and f as const restrict __global (Quasar's 'hwtex_const' on both)
//   conv_image_f     f in a 1-channel image of TAPS x 1 texels, read through a sampler
//   conv_image_x     x in an image (the sampler clamps at the right edge), f in __constant
//   conv_image_xf    both x and f in images
// The images are read with a non-normalized, nearest, clamp_to_edge sampler, so integer
// coordinates give exact texels and the clamp at the right edge is the sampler's.
// The NDRange is (width rounded up to the work-group size, height); extra columns return early.
// One body serves every kernel: ROW_CONV(X, F) with X the input at column c + k of row r and F
// tap k, each written in the kernel's own memory.

#ifndef TAPS
#define TAPS 32
#endif

#define ROW_CONV(X, F)                                   \
    const int c = get_global_id(0), r = get_global_id(1); \
    if (c >= width || r >= height) return;               \
    float sum = 0.0f;                                    \
    for (int k = 0; k < TAPS; ++k)                       \
        sum += (X) * (F);                                \
    y[(size_t)r * width + c] = sum;

// x[r][min(c + k, width - 1)] from a global pointer; read_imagef clamps by itself.
#define ROW_X(x) x[(size_t)r * width + min(c + k, width - 1)]
#define IMAGE_X(x) read_imagef(x, s, (int2)(c + k, r)).x
#define IMAGE_F(f) read_imagef(f, s, (int2)(k, 0)).x

__kernel void conv_global(__global float* y, __global float* x, __global float* f,
                          const int width, const int height)
{
    ROW_CONV(ROW_X(x), f[k])
}

__kernel void conv_constant(__global float* y, __global float* x, __constant float* f,
                            const int width, const int height)
{
    ROW_CONV(ROW_X(x), f[k])
}

__kernel void conv_readonly_f(__global float* y, __global float* x,
                              const __global float* restrict f, const int width, const int height)
{
    ROW_CONV(ROW_X(x), f[k])
}

__kernel void conv_readonly(__global float* restrict y, const __global float* restrict x,
                            const __global float* restrict f, const int width, const int height)
{
    ROW_CONV(ROW_X(x), f[k])
}

__kernel void conv_image_f(__global float* y, __global float* x, __read_only image2d_t f,
                           sampler_t s, const int width, const int height)
{
    ROW_CONV(ROW_X(x), IMAGE_F(f))
}

__kernel void conv_image_x(__global float* y, __read_only image2d_t x, __constant float* f,
                           sampler_t s, const int width, const int height)
{
    ROW_CONV(IMAGE_X(x), f[k])
}

__kernel void conv_image_xf(__global float* y, __read_only image2d_t x, __read_only image2d_t f,
                            sampler_t s, const int width, const int height)
{
    ROW_CONV(IMAGE_X(x), IMAGE_F(f))
}
