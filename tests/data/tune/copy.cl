// A vectorised copy tuned by tests/data/tune/copy_spec.json: VEC elements per work-item.
#ifndef VEC
#define VEC 1
#endif

__kernel void copy(__global float *dst, __global const float *src, const int n)
{
    const int base = get_global_id(0) * VEC;
    for (int k = 0; k < VEC; ++k) {
        if (base + k < n)
            dst[base + k] = src[base + k];
    }
}
