// The device profile's own kernels (pyclperf.roofline): compute throughput, local-memory
// bandwidth, launch latency, streams (read, write, copy) at a chosen launch shape, reads over a
// working set of any size, and a copy of a cache-sized set looped inside one launch. Every one
// writes a result the host checks against NumPy (pyclperf/roofline/ceilings.py, streams.py,
// memory.py, levelcopy.py).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#ifdef FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef FP16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif

// ---- compute: ACC independent multiply-add chains per work-item ----------------------------
// T is the element type (float, double, half or uint) and V the vector width (1, 2, 4, 8, 16),
// so one step of one chain is V multiply-adds. Each chain is a = a * m + c, TRIPS x UNROLL steps
// (TRIPS at run time, UNROLL fixed), the ACC chains interleaved so consecutive instructions never
// wait on each other. m and c arrive as arguments, so the compiler cannot fold the arithmetic.
//   floating point: the host passes m = 1 and c = 1, and integer inputs, so every value stays an
//     integer the type holds exactly (for half: below 2048) and chain k ends at x + k + steps;
//     fma() is one rounding, and exact integers make it agree with any other evaluation;
//   uint: m odd and c random, wrapping at 2^32; the host composes the affine step with itself
//     (x -> m x + c, steps times) and checks the result in closed form.
// The output is sum over k of (k + 1) * chain k (in float for the floating types, exact below
// 2^24; in uint, wrapping, for uint), so a chain dropped or an FMA applied twice shows.
#ifdef CHAINS
#if V == 1
#define VT T
#define VF float
#define TO_FLOAT(x) convert_float(x)
#else
#define VT CAT(T, V)
#define VF CAT(float, V)
#define TO_FLOAT(x) CAT(convert_float, V)(x)
#endif

#ifdef INT
#define ARG uint
#define OUT_T VT
#define STEP(a) ((a) * mm + cc)
#else
#define ARG float
#define OUT_T VF
#define STEP(a) fma((a), mm, cc)
#endif

__kernel void chains(__global const VT* restrict in, const ARG m, const ARG c, const uint trips,
                     __global OUT_T* restrict out)
{
    const size_t gid = get_global_id(0);
    const VT mm = (VT)((T)m);
    const VT cc = (VT)((T)c);
    const VT x = in[gid];
    VT acc[ACC];
#pragma unroll
    for (int k = 0; k < ACC; ++k)
        acc[k] = x + (VT)((T)k);
    for (uint t = 0; t < trips; ++t) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int k = 0; k < ACC; ++k)
                acc[k] = STEP(acc[k]);
        }
    }
#ifdef INT
    VT sum = (VT)(0);
#pragma unroll
    for (int k = 0; k < ACC; ++k)
        sum += (VT)((T)(k + 1)) * acc[k];
#else
    VF sum = (VF)(0.0f);
#pragma unroll
    for (int k = 0; k < ACC; ++k)
        sum += (VF)((float)(k + 1)) * TO_FLOAT(acc[k]);
#endif
    out[gid] = sum;
}
#endif  // CHAINS

// ---- local memory: reads of a work-group's tile -------------------------------------------
// LT (uint, uint2 or uint4) per element, WG work-items a group, a power of two. Each work-item
// stores one element of its group's tile, then reads tile[(l + j) mod WG] for j < TRIPS x
// UNROLL: at every j the work-items of a group read consecutive elements, which no bank
// arrangement makes conflict. Four running sums keep the adds from serialising the loads.
// The host checks each work-item's sum (uint, wrapping) in closed form: whole sweeps of the
// tile plus a window of its prefix.
#ifdef LOCAL_READS
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void local_reads(__global const LT* restrict in, const uint trips, __global LT* restrict out)
{
    __local LT tile[WG];
    const uint l = (uint)get_local_id(0);
    tile[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    LT s0 = (LT)(0), s1 = (LT)(0), s2 = (LT)(0), s3 = (LT)(0);
    uint i = l;
    for (uint t = 0; t < trips; ++t) {
#pragma unroll
        for (uint u = 0; u < UNROLL; u += 4) {
            s0 += tile[(i + u) & (WG - 1)];
            s1 += tile[(i + u + 1) & (WG - 1)];
            s2 += tile[(i + u + 2) & (WG - 1)];
            s3 += tile[(i + u + 3) & (WG - 1)];
        }
        i += UNROLL;
    }
    out[get_global_id(0)] = (s0 + s1) + (s2 + s3);
}
#endif  // LOCAL_READS

// ---- launch latency: the least a launch can do ---------------------------------------------
// One work-item stores one word the host chose, so a launch that never ran shows.
__kernel void stamp(__global uint* restrict out, const uint value)
{
    if (get_global_id(0) == 0)
        out[0] = value;
}

// ---- a read over n words, n any size --------------------------------------------------------
// The walk of the workingset experiment's ws_read (work-item g reads (g + j G) mod n, G the
// global size), with the wrap done by a compare instead of a mask, so sizes between powers of
// two can be measured where a knee lies. Each work-item writes its 32-bit sum.
__kernel void read_any(__global const uint* restrict src, const uint n, const uint iters,
                       __global uint* restrict out)
{
    const uint gid = (uint)get_global_id(0);
    const uint step = (uint)get_global_size(0) % n;
    uint i = gid % n;
    uint sum = 0;
    for (uint j = 0; j < iters; ++j) {
        sum += src[i];
        i += step;
        i = i >= n ? i - n : i;
    }
    out[gid] = sum;
}

// ---- streams: read, write and copy at a chosen launch shape ---------------------------------
// VT is uint or uintV (V 2..16), ITEMS the elements each work-item handles, at
//   GRID:    element g + k G for k < ITEMS (G the global size): at each k consecutive
//            work-items touch consecutive elements (what a GPU coalesces);
//   BLOCKED: element g ITEMS + k: each work-item streams a run of its own (what a CPU core's
//            prefetcher follows, the work-items of a group running one after another).
// The host fills the source with words a i + b (fill_affine), so every result has a closed form.
// stream_read writes each work-item's sum (uint lanes wrap, so the adds may be reordered freely);
// stream_write stores value + w at word w; stream_copy copies element by element; stream_add
// adds two sources.
#if defined(STREAM) || defined(COPY_PASSES)
#if V == 1
#define ST uint
#else
#define ST CAT(uint, V)
#endif
#endif

#ifdef STREAM
#ifdef BLOCKED
#define AT(g, G, k) ((size_t)(g) * ITEMS + (size_t)(k))
#else
#define AT(g, G, k) ((size_t)(g) + (size_t)(k) * (G))
#endif

__kernel void stream_read(__global const ST* restrict in, __global ST* restrict out)
{
    const size_t g = get_global_id(0), G = get_global_size(0);
    ST sum = (ST)(0);
    for (uint k = 0; k < ITEMS; ++k)
        sum += in[AT(g, G, k)];
    out[g] = sum;
}

// LANES is (0, 1, ..., V - 1) as an ST, given by the host: lane j of element e is word e V + j.
__kernel void stream_write(__global ST* restrict out, const uint value)
{
    const size_t g = get_global_id(0), G = get_global_size(0);
    for (uint k = 0; k < ITEMS; ++k) {
        const size_t e = AT(g, G, k);
        out[e] = (ST)(value + (uint)e * V) + LANES;
    }
}

__kernel void stream_copy(__global const ST* restrict in, __global ST* restrict out)
{
    const size_t g = get_global_id(0), G = get_global_size(0);
    for (uint k = 0; k < ITEMS; ++k)
        out[AT(g, G, k)] = in[AT(g, G, k)];
}

// Two streams read, one written (a vector addition's traffic, which a cache can serve faster
// than one read and one write): out = in + in2, lane by lane (uint, wrapping).
__kernel void stream_add(__global const ST* restrict in, __global const ST* restrict in2,
                         __global ST* restrict out)
{
    const size_t g = get_global_id(0), G = get_global_size(0);
    for (uint k = 0; k < ITEMS; ++k)
        out[AT(g, G, k)] = in[AT(g, G, k)] + in2[AT(g, G, k)];
}
#endif  // STREAM

// ---- a copy of a set a cache level holds, many passes in one launch -------------------------
// One pass over a set of a few MiB is shorter than a launch costs (an H200's 17 us), so a pass
// per launch measures the launch. This copies the n elements of in to out `passes` times in one
// launch, each work-item the same elements every pass (no two work-items write one element):
//   GRID:    g, g + G, g + 2 G, ... below n (G the global size; what a GPU coalesces);
//   BLOCKED: the run from g m to g m + m - 1 below n, m = ceil(n / G) (what a CPU core streams).
// With BARRIER, a barrier ends each pass for the whole group: a CPU device runs a group's
// work-items one after another, so without it each work-item would copy its own few elements
// `passes` times from its L1, whatever the set; with it the group copies its whole share between
// two copies of one element, and the level that holds the set serves them. Without BARRIER the
// passes are one flat loop whose address changes every trip (nothing for a compiler to hoist out
// of a pass), which a GPU, whose work-items all run at once, needs no barrier for.
#ifdef COPY_PASSES
__kernel void copy_passes(__global const ST* restrict in, __global ST* restrict out,
                          const uint n, const uint passes)
{
    const uint g = (uint)get_global_id(0), G = (uint)get_global_size(0);
#ifdef BLOCKED
    const uint m = (n + G - 1) / G;
    const uint first = min(g * m, n), stop = min(first + m, n), step = 1;
#else
    const uint first = min(g, n), stop = n, step = G;
#endif
#ifdef BARRIER
    for (uint p = 0; p < passes; ++p) {
        for (uint e = first; e < stop; e += step)
            out[e] = in[e];
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
#else
    const uint count = (stop - first + step - 1) / step;  // first <= stop in both layouts
    uint e = first;
    for (uint t = count * passes; t > 0; --t) {
        out[e] = in[e];
        e += step;
        e = e >= stop ? first : e;
    }
#endif
}
#endif  // COPY_PASSES

// ---- the source of streams and sweeps: word i holds a i + b (mod 2^32) ----------------------
__kernel void fill_affine(__global uint* restrict out, const uint a, const uint b)
{
    const size_t i = get_global_id(0);
    out[i] = a * (uint)i + b;
}

// ---- a working set read again and again, a share per work-group (the CPU device's sweep) ----
// Work-group g owns the SHARE consecutive uint16s from g SHARE on, and reads them `passes` times;
// work-item l reads the l-th contiguous slice of the share. The barrier ends a pass for the whole
// group, so a CPU device (which runs a group's work-items one after another on one core) reads
// the whole share between two reads of a word: the reuse distance is the share, the group's
// core's part of the working set. Four sums keep the adds off the loads' critical path.
__kernel void ws_pass(__global const uint16* restrict in, const uint first, const uint slice,
                      const uint passes, __global uint16* restrict out)
{
    const size_t base = first + ((size_t)get_group_id(0) * get_local_size(0) + get_local_id(0)) * slice;
    uint16 s0 = (uint16)(0), s1 = (uint16)(0), s2 = (uint16)(0), s3 = (uint16)(0);
    for (uint p = 0; p < passes; ++p) {
        for (uint k = 0; k < slice; k += 4) {
            s0 += in[base + k];
            s1 += in[base + k + 1];
            s2 += in[base + k + 2];
            s3 += in[base + k + 3];
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    out[get_global_id(0)] = (s0 + s1) + (s2 + s3);
}
