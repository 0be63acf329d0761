// Writing through an image (write_imagef, CUDA's surface writes) against plain global stores
// (experiment `surface`, Quasar 9.6, Guide 3.2.4). Each work-item reads one float of a
// width x height input from global memory, computes v = 2 x + 1 and stores it at (x, y):
//   store_global  into a float buffer, row-major
//   store_image   into a CL_R float image with write_imagef
//   load_image    copies such an image into a buffer with read_imagef: run as a second launch
//                 after store_image, it shows that an image written by one launch reads back in
//                 the next (within a launch, a read of a texel written there is undefined).

__kernel void store_global(__global const float* restrict in, const int width,
                           __global float* restrict out)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int i = y * width + x;
    out[i] = 2.0f * in[i] + 1.0f;
}

__kernel void store_image(__global const float* restrict in, const int width,
                          __write_only image2d_t out)
{
    const int x = get_global_id(0), y = get_global_id(1);
    write_imagef(out, (int2)(x, y), (float4)(2.0f * in[y * width + x] + 1.0f, 0.0f, 0.0f, 1.0f));
}

__kernel void load_image(__read_only image2d_t img, const int width, __global float* restrict out)
{
    const int x = get_global_id(0), y = get_global_id(1);
    // Integer coordinates without a sampler: texel (x, y) exactly, no filtering.
    out[y * width + x] = read_imagef(img, (int2)(x, y)).x;
}
