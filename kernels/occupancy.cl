// A bandwidth-bound copy whose work-groups reserve a dynamic __local buffer, for measuring how
// speed depends on occupancy (Guide 4.5). The host sets the buffer's size (clSetKernelArg with
// a NULL value); a bigger buffer leaves room for fewer work-groups per compute unit, which is
// the point: the kernel's work stays the same while its occupancy falls.
// Each work-item passes its element through its own slot of the buffer, so the buffer is really
// used (a compiler cannot drop it) without a barrier or any traffic between work-items; the
// buffer must hold at least one float per work-item. No defines.
__kernel void staged_copy(__global float* restrict out, __global const float* restrict in,
                          __local float* scratch)
{
    const size_t i = get_global_id(0);
    const size_t lid = get_local_id(0);
    scratch[lid] = in[i];
    out[i] = scratch[lid];
}
