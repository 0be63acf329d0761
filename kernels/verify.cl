// Verification at device speed, shared by the experiments (not an experiment of its own): a
// counter-based random generator and a compare that counts mismatches on the device, so a
// multi-GiB output need not cross PCIe to be checked. pyclperf.checks.random_words is the same
// generator in NumPy; the tests hold the two to each other.
//
// random_word(seed, i): the splitmix64 finaliser (Steele, Lea, Flood 2014) of
// seed + (i + 1) * 0x9E3779B97F4A7C15, high 32 bits. Any element is computable on its own from
// (seed, index): no state, no sequence, the same bits on every device.

#ifndef FIRST
#define FIRST 8
#endif

inline uint random_word(const ulong seed, const ulong i)
{
    ulong z = seed + (i + 1UL) * 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    z ^= z >> 31;
    return (uint)(z >> 32);
}

// out[i] = random_word(seed, i) for i < n.
__kernel void fill_random(__global uint* restrict out, const ulong seed, const uint n)
{
    const uint i = (uint)get_global_id(0);
    if (i < n) out[i] = random_word(seed, i);
}

// The output of a copy of fill_random's words: element i (i < n) must be random_word(seed, i)
// where start <= i < stop and (i - start) % step == 0 (the elements the copy writes), and still
// the poison everywhere else. result[0] counts the mismatches, result[1] keeps the lowest index
// (the host sets it to 0xFFFFFFFF), result[2 ..] the first FIRST indices found (in any order).
__kernel void compare_copy(__global const uint* restrict out, const ulong seed, const uint n,
                           const uint start, const uint stop, const uint step, const uint poison,
                           volatile __global uint* result)
{
    const uint i = (uint)get_global_id(0);
    if (i >= n) return;
    const int written = i >= start && i < stop && (i - start) % step == 0;
    const uint want = written ? random_word(seed, i) : poison;
    if (out[i] != want) {
        const uint k = atomic_inc(&result[0]);
        atomic_min(&result[1], i);
        if (k < FIRST) result[2 + k] = i;
    }
}
