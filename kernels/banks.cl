// Local-memory bank conflicts (experiment `banks`; Guide 3.2.2.1, Slides "Bank conflicts").
//
// Each work-item sums words of a local table at logical index (lid * stride + 32 k) mod WORDS
// for k = 0 .. 8 * STEPS - 1 and writes the sum (uint, wrapping: exact and checkable on the
// host). Adding 32 k moves every lane of a warp by the same number of banks, so the warp's
// conflict degree is the one of k = 0 throughout, while the changing addresses stop the
// compiler from hoisting the loads out of the loop. The loads are independent of each other, so
// the loop is limited by local-memory throughput, not by latency.
//
// Defines:
//   WORDS   logical table length in 32-bit words (a power of two, a multiple of 32)
//   STEPS   outer iterations; each issues 8 loads from one base pointer with constant offsets
//           (one load instruction each, a little address arithmetic per 8 loads)
//   PADDED  0: logical word i lives at i; 1: at i + i / 32 (one spare word after every 32,
//           which shifts each successive row of 32 words by one bank)
//
// The table holds WORDS + 8 * 32 logical words: the tail repeats the head, so the 8 loads of one
// step never wrap around; the host's reference uses (index mod WORDS).

#ifndef WORDS
#define WORDS 4096
#endif
#ifndef STEPS
#define STEPS 16
#endif
#ifndef PADDED
#define PADDED 0
#endif

#define SPAN (WORDS + 8 * 32)
#if PADDED
#define SLOT(i) ((i) + ((i) >> 5))
#define ROW 33
#else
#define SLOT(i) (i)
#define ROW 32
#endif

__kernel void strided_sum(__global const uint* restrict table, __global uint* restrict out,
                          const uint stride)
{
    __local uint words[SLOT(SPAN)];
    const uint lid = get_local_id(0);
    for (uint i = lid; i < SPAN; i += get_local_size(0))
        words[SLOT(i)] = table[i & (WORDS - 1)];
    barrier(CLK_LOCAL_MEM_FENCE);

    const uint base = lid * stride;
    uint sum = 0u;
    for (uint step = 0; step < STEPS; ++step) {
        // Logical index base + 256 step (+ 32 j below), wrapped once per step.
        __local const uint* p = words + SLOT((base + 256u * step) & (WORDS - 1));
        sum += p[0] + p[ROW] + p[2 * ROW] + p[3 * ROW]
             + p[4 * ROW] + p[5 * ROW] + p[6 * ROW] + p[7 * ROW];
    }
    out[get_global_id(0)] = sum;
}
