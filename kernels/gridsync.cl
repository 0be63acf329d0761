// A float sum finished in one launch by whichever work-group comes last (experiment `gridsync`,
// Quasar 9.8.2-9.8.3), against the same sum in two launches. Defines: WG (a power of two);
// NO_FENCE to leave out the ordering (the variant that is allowed to be wrong); ATOMICS20 where
// the program is built with -cl-std=CL2.0 or CL3.0 and the device has acquire/release atomics
// at device scope.
//
//   partial_sums  each work-group writes its sum to out[group]; run over the input, then once
//                 more as a single work-group over those sums (two launches)
//   last_group    each work-group stores its sum to partial[group] and counts itself in with an
//                 atomic increment; the group that sees the count reach the number of groups
//                 reads every sum, writes the total and sets the counter back to 0 for the next
//                 launch. Every access that another work-group may make at the same time
//                 (partial, count) is atomic, so the kernel has no data race.
//     ATOMICS20   the increment is acq_rel at device scope: a group's store of its sum happens
//                 before its increment (release), the last group's increment acquires every
//                 other's, and its barrier with a global fence hands that on to its work-items.
//     otherwise   (OpenCL 1.2) the sum is stored with atomic_xchg and read with atomic_or(p, 0)
//                 on its bits, with mem_fence before the increment and after it. OpenCL 1.2
//                 promises atomicity but no ordering across work-groups: that the fences order
//                 the store before the increment as another work-group sees them is relied on
//                 (it holds on the GPUs this was run on), not promised.
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

#ifdef ATOMICS20
typedef volatile __global atomic_float shared_float;
typedef volatile __global atomic_uint shared_uint;
#define STORE_SUM(p, v) atomic_store_explicit(p, v, memory_order_relaxed, memory_scope_device)
#define LOAD_SUM(p) atomic_load_explicit(p, memory_order_relaxed, memory_scope_device)
#define RESET(c) atomic_store_explicit(c, 0u, memory_order_relaxed, memory_scope_device)
#ifdef NO_FENCE
#define COUNT_IN(c) atomic_fetch_add_explicit(c, 1u, memory_order_relaxed, memory_scope_device)
#define HAND_ON CLK_LOCAL_MEM_FENCE
#else
#define COUNT_IN(c) atomic_fetch_add_explicit(c, 1u, memory_order_acq_rel, memory_scope_device)
#define HAND_ON (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#endif
#else
typedef volatile __global uint shared_float;  // a float's bits: 1.2 has no atomic float load
typedef volatile __global uint shared_uint;
#define STORE_SUM(p, v) atomic_xchg(p, as_uint(v))
#define LOAD_SUM(p) as_float(atomic_or(p, 0u))
#define RESET(c) atomic_xchg(c, 0u)
#ifdef NO_FENCE
#define COUNT_IN(c) atomic_inc(c)
#define HAND_ON CLK_LOCAL_MEM_FENCE
#else
#define COUNT_IN(c) (mem_fence(CLK_GLOBAL_MEM_FENCE), atomic_inc(c))
#define HAND_ON (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#endif
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void last_group(__global const float* restrict in, const uint n, shared_float* partial,
                shared_uint* count, __global float* restrict total)
{
    __local float part[WG];
    __local int is_last;
    const uint lid = get_local_id(0);
    const uint groups = get_num_groups(0);
    const float s = group_tree(part, private_sum(in, n));
    if (lid == 0) {
        STORE_SUM(&partial[get_group_id(0)], s);
        is_last = COUNT_IN(count) == groups - 1;
    }
    barrier(HAND_ON);  // is_last, and (with the fences) what work-item 0 acquired
    if (!is_last)
        return;
    float t = 0.0f;
    for (uint j = lid; j < groups; j += WG)
        t += LOAD_SUM(&partial[j]);
    t = group_tree(part, t);
    if (lid == 0) {
        *total = t;
        RESET(count);
    }
}
