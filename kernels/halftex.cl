// The same gather of a width x height float grid from three places (experiment `halftex`,
// Quasar 9.4): global floats, a CL_FLOAT image and a CL_HALF_FLOAT image. read_imagef returns
// float whatever the image holds, so the kernels differ only in where the data lives and how many
// bytes a texel takes (4 or 2). Each work-item reads the texel at (x, y) of a grid shifted by
// (dx, dy), clamped at the edges, and writes it as a float: a resampling by a whole-texel offset,
// so the only error left is the storage format's.

__kernel void gather_global(__global const float* restrict in, const int width, const int height,
                            const int dx, const int dy, __global float* restrict out)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int sx = clamp(x + dx, 0, width - 1), sy = clamp(y + dy, 0, height - 1);
    out[y * width + x] = in[sy * width + sx];
}

__kernel void gather_image(__read_only image2d_t in, const int width, const int height,
                           const int dx, const int dy, __global float* restrict out)
{
    const sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;
    const int x = get_global_id(0), y = get_global_id(1);
    out[y * width + x] = read_imagef(in, s, (int2)(x + dx, y + dy)).x;
}
