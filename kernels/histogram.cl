// 256-bin histogram of bytes (experiment `histogram`, Quasar 9.2.3.1), two ways:
//   histogram_global  every value is one atomic_inc on the global histogram;
//   histogram_local   each work-group counts into its own __local histogram (local atomics),
//                     then adds each non-empty bin to the global histogram once.
// Both read the input as uchar4 (four values per load, so the read is not byte-by-byte) in a
// grid-stride loop: work-item i handles words i, i + G, i + 2G ... of the n4 words, G being the
// global size, so each pass of the loop reads one contiguous, coalesced stretch, and the number
// of work-groups (hence of merges) is the caller's choice, independent of the input size.
// The global histogram must be zeroed before each launch (the caller fills it with zeros in a
// separate command, outside the kernel's timed event).
// Defines: BINS (256: uchar values index it directly).

#ifndef BINS
#define BINS 256
#endif

__kernel void histogram_global(__global const uchar4* restrict data, const uint n4,
                               volatile __global uint* hist)
{
    const uint stride = get_global_size(0);
    for (uint i = get_global_id(0); i < n4; i += stride) {
        const uchar4 v = data[i];
        atomic_inc(&hist[v.s0]);
        atomic_inc(&hist[v.s1]);
        atomic_inc(&hist[v.s2]);
        atomic_inc(&hist[v.s3]);
    }
}

__kernel void histogram_local(__global const uchar4* restrict data, const uint n4,
                              volatile __global uint* hist)
{
    __local uint counts[BINS];
    const uint lid = get_local_id(0);
    const uint lsize = get_local_size(0);
    for (uint b = lid; b < BINS; b += lsize)
        counts[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    const uint stride = get_global_size(0);
    for (uint i = get_global_id(0); i < n4; i += stride) {
        const uchar4 v = data[i];
        atomic_inc(&counts[v.s0]);
        atomic_inc(&counts[v.s1]);
        atomic_inc(&counts[v.s2]);
        atomic_inc(&counts[v.s3]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // The merge: at most one global atomic per bin per work-group (empty bins add nothing).
    for (uint b = lid; b < BINS; b += lsize) {
        const uint c = counts[b];
        if (c != 0)
            atomic_add(&hist[b], c);
    }
}
