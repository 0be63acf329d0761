// The README's vector addition: c = a + b, one element per work-item.
__kernel void vadd(__global float* c, __global const float* a, __global const float* b, const int n) {
    const int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
