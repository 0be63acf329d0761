// Float sum, three ways of combining the work-items' partial sums (experiment `reduction`,
// Quasar 9.2.3.3 and 9.8):
//   reduce_tree      a halving tree in local memory; work-item 0 writes the group's sum to
//                    out[group]. Run once over the input and once more, as a single work-group,
//                    over the per-group sums (the second pass).
//   reduce_atomic    the same tree, then work-item 0 adds the group's sum straight into a single
//                    global float with a compare-and-swap loop (OpenCL 1.2 has no float atomic
//                    add): one launch, no second pass; the total must be zeroed before it. The
//                    total is only ever touched by atomics (no plain load beside them: that
//                    would race with other groups' swaps), so it is data-race free in OpenCL 1.2.
//   reduce_subgroup  (only with SUBGROUPS defined, on devices with cl_khr_subgroups or OpenCL C
//                    3.0's __opencl_c_subgroups) sub_group_reduce_add, then the first sub-group
//                    combines the sub-groups' sums; per-group sums and a second pass as reduce_tree.
// Every kernel starts the same way: each work-item sums the elements gid, gid + G, gid + 2G ...
// (G the global size) in a private float, so each pass of the loop reads one contiguous stretch
// and the combining step handles G values, not n.
// Defines: WG, the work-group size (a power of two), sizing the local arrays.

#ifdef SUBGROUPS
#ifdef cl_khr_subgroups
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#endif

#include "group_sum.clh"

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce_tree(__global const float* restrict in, const uint n, __global float* restrict out)
{
    __local float part[WG];
    const float s = group_tree(part, private_sum(in, n));
    if (get_local_id(0) == 0)
        out[get_group_id(0)] = s;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce_atomic(__global const float* restrict in, const uint n, volatile __global uint* total)
{
    __local float part[WG];
    const float s = group_tree(part, private_sum(in, n));
    if (get_local_id(0) == 0) {
        // Float add as a loop of 32-bit compare-and-swap on the float's bits: retry until no other
        // group changed the total between our read and our swap. The first guess is the zeroed
        // total; a failed swap returns the value actually there, so every read is atomic.
        uint seen = 0u;
        for (;;) {
            const uint want = as_uint(as_float(seen) + s);
            const uint was = atomic_cmpxchg(total, seen, want);
            if (was == seen)
                break;
            seen = was;
        }
    }
}

#ifdef SUBGROUPS
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce_subgroup(__global const float* restrict in, const uint n, __global float* restrict out)
{
    __local float part[WG];  // one slot per sub-group: at most WG of them
    const float s = sub_group_reduce_add(private_sum(in, n));
    if (get_sub_group_local_id() == 0)
        part[get_sub_group_id()] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {
        float t = 0.0f;
        for (uint j = get_sub_group_local_id(); j < get_num_sub_groups(); j += get_sub_group_size())
            t += part[j];
        t = sub_group_reduce_add(t);
        if (get_sub_group_local_id() == 0)
            out[get_group_id(0)] = t;
    }
}
#endif
