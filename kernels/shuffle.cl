// One sum per work-group of WG floats, one float per work-item, four ways of combining them
// (experiment `shuffle`, Quasar 9.8). Built once per variant, with exactly one of these defined:
//
//   TREE           a halving tree in local memory, a barrier per level
//   SHUFFLE_KHR    a butterfly of sub_group_shuffle_xor (cl_khr_subgroup_shuffle) inside each
//                  sub-group: after log2(size) exchanges every lane holds its sub-group's sum
//   SHUFFLE_INTEL  the same butterfly with intel_sub_group_shuffle_xor (cl_intel_subgroups)
//   SUBGROUP       sub_group_reduce_add (cl_khr_subgroups, or OpenCL C 3.0 __opencl_c_subgroups)
//   WORKGROUP      work_group_reduce_add (OpenCL C 2.0, or 3.0 with
//                  __opencl_c_work_group_collective_functions): the whole group in one call
//
// The sub-group variants leave one sum per sub-group, which work-item 0 adds up from local memory.
// A variant the device cannot build stops here with #error, and the host skips it with the reason.
// Defines: WG, the work-group size (a power of two).

#if defined(SHUFFLE_KHR) || defined(SUBGROUP)
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#elif !defined(__opencl_c_subgroups)
#error "no sub-groups: neither cl_khr_subgroups nor __opencl_c_subgroups"
#endif
#endif

#ifdef SHUFFLE_KHR
#ifndef cl_khr_subgroup_shuffle
#error "no cl_khr_subgroup_shuffle"
#endif
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#define SHUFFLE_XOR(v, m) sub_group_shuffle_xor((v), (m))
#endif

#ifdef SHUFFLE_INTEL
#ifndef cl_intel_subgroups
#error "no cl_intel_subgroups"
#endif
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#define SHUFFLE_XOR(v, m) intel_sub_group_shuffle_xor((v), (m))
#endif

#ifdef WORKGROUP
#if __OPENCL_C_VERSION__ < 200 || (__OPENCL_C_VERSION__ >= 300 && !defined(__opencl_c_work_group_collective_functions))
#error "no work-group collective functions in this OpenCL C"
#endif
#endif

// Adds the per-sub-group sums that lane 0 of each sub-group left in part[], in work-item 0.
#if defined(SHUFFLE_KHR) || defined(SHUFFLE_INTEL) || defined(SUBGROUP)
static float combine(__local float* part, const float mine)
{
    if (get_sub_group_local_id() == 0)
        part[get_sub_group_id()] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = 0.0f;
    if (get_local_id(0) == 0)
        for (uint j = 0; j < get_num_sub_groups(); ++j)
            s += part[j];
    return s;
}
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void group_sum(__global const float* restrict in, __global float* restrict out)
{
    __local float part[WG];
    const uint lid = get_local_id(0);
    float v = in[get_global_id(0)];
#if defined(TREE)
    part[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = WG / 2; step > 0; step >>= 1) {
        if (lid < step)
            part[lid] += part[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    v = part[0];
#elif defined(SHUFFLE_KHR) || defined(SHUFFLE_INTEL)
    for (uint m = get_max_sub_group_size() / 2; m > 0; m >>= 1)
        v += SHUFFLE_XOR(v, m);
    v = combine(part, v);
#elif defined(SUBGROUP)
    v = combine(part, sub_group_reduce_add(v));
#elif defined(WORKGROUP)
    v = work_group_reduce_add(v);
#else
#error "define one of TREE, SHUFFLE_KHR, SHUFFLE_INTEL, SUBGROUP, WORKGROUP"
#endif
    if (lid == 0)
        out[get_group_id(0)] = v;
}
