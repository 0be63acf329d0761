// A float sum finished in one launch by whichever work-group comes last (experiment `gridsync`,
// Quasar 9.8.2-9.8.3), against the same sum in two launches. Defines: WG (a power of two), and
// NO_FENCE to leave out the memory fences (the variant that is allowed to be wrong).
//
//   partial_sums  each work-group writes its sum to out[group]; run over the input, then once
//                 more as a single work-group over those sums (two launches)
//   last_group    each work-group writes its sum to partial[group], fences that store, and counts
//                 itself in with an atomic increment; the group that sees the count reach the
//                 number of groups knows every other sum is stored, reads them all, writes the
//                 total and sets the counter back to 0 for the next launch. Without the fence the
//                 increment may become visible before the store it is meant to announce.
// The same kernel serves the persistent grid: the host just launches as many work-groups as can be
// resident at once, each striding over many more elements.

#include "group_sum.clh"

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void partial_sums(__global const float* restrict in, const uint n, __global float* restrict out)
{
    __local float part[WG];
    const float s = group_tree(part, private_sum(in, n));
    if (get_local_id(0) == 0)
        out[get_group_id(0)] = s;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void last_group(__global const float* restrict in, const uint n, volatile __global float* partial,
                volatile __global uint* count, __global float* restrict total)
{
    __local float part[WG];
    __local int is_last;
    const uint lid = get_local_id(0);
    const uint groups = get_num_groups(0);
    const float s = group_tree(part, private_sum(in, n));
    if (lid == 0) {
        partial[get_group_id(0)] = s;
#ifndef NO_FENCE
        mem_fence(CLK_GLOBAL_MEM_FENCE);  // the store above before the increment below
#endif
        is_last = atomic_inc(count) == groups - 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!is_last)
        return;
#ifndef NO_FENCE
    mem_fence(CLK_GLOBAL_MEM_FENCE);  // and the reads below after the increment above
#endif
    float t = 0.0f;
    for (uint j = lid; j < groups; j += WG)
        t += partial[j];  // volatile: read from memory, never from an earlier copy
    t = group_tree(part, t);
    if (lid == 0) {
        *total = t;
        *count = 0;
    }
}
