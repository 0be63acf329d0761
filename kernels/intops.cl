// Integer and literal-type instruction costs (experiment `intops`, Guide 5.1, 5.1.1, 5.1.3).
// Defines:
//   ITERS     loop iterations per work-item (one tested operation each)
//   DIVISOR   the power-of-two divisor as a literal, for the *_lit kernels (the same value the
//             host passes as the argument d, so every variant computes the same thing)
//   SCALE_D   a floating literal without suffix (a double), e.g. 0.999
//   SCALE_F   the same literal with the f suffix, e.g. 0.999f
//   FP64      1 where the device supports double precision (cl_khr_fp64), else 0
//
// Integer kernels: each work-item runs a 32-bit linear congruential generator (x = x * A + C, one
// multiply-add, arithmetic modulo 2^32) seeded from its input, applies the tested operation to
// every value and adds the results (modulo 2^32). The generator makes each operand new and
// unpredictable, so nothing can be hoisted; the sum depends on every operation. The generator and
// the sum are the same in every variant: `int_baseline` runs them alone, so the difference to it is
// what the tested operation costs. Signed variants reinterpret the generator's bits with as_int
// (half the operands are negative) and sum in uint, since signed overflow is undefined in C.
//
// Division by d = 2^s written three ways: by the argument d (the compiler cannot know it is a
// power of two), by the literal DIVISOR (it can, and should emit a shift), and by hand with a
// shift/mask. C division truncates toward zero, so for a negative int a plain arithmetic shift
// rounds the wrong way (-7 >> 1 = -4, but -7 / 2 = -3): the signed shift variants first add
// d - 1 to negative operands, which makes the shift truncate toward zero, and the signed mask
// variant derives the remainder from that quotient, so both match / and % for every int.

#define LCG_A 1664525u
#define LCG_C 1013904223u

#define INT_KERNEL(name, expr)                                                                   \
__kernel void name(__global uint* restrict out, __global const uint* restrict in,               \
                   const uint d, const uint s)                                                   \
{                                                                                                \
    const size_t i = get_global_id(0);                                                           \
    const uint m = d - 1u;                                                                       \
    uint x = in[i];                                                                              \
    const uint b = x >> 8;                                                                       \
    uint sum = 0u;                                                                               \
    for (int k = 0; k < ITERS; ++k) {                                                            \
        x = x * LCG_A + LCG_C;                                                                   \
        const int v = as_int(x);                                                                 \
        sum += (uint)(expr);                                                                     \
    }                                                                                            \
    out[i] = sum;                                                                                \
}

// For negative v, the bias d - 1 (else 0): (v + bias) >> s then truncates toward zero.
#define BIAS(v) (((v) >> 31) & (int)m)

INT_KERNEL(int_baseline, x)
INT_KERNEL(u32_div_var, x / d)
INT_KERNEL(u32_div_lit, x / DIVISOR)
INT_KERNEL(u32_div_shift, x >> s)
INT_KERNEL(u32_mod_var, x % d)
INT_KERNEL(u32_mod_lit, x % DIVISOR)
INT_KERNEL(u32_mod_mask, x & m)
INT_KERNEL(i32_div_var, v / (int)d)
INT_KERNEL(i32_div_lit, v / DIVISOR)
INT_KERNEL(i32_div_shift, (v + BIAS(v)) >> s)
INT_KERNEL(i32_mod_var, v % (int)d)
INT_KERNEL(i32_mod_lit, v % DIVISOR)
INT_KERNEL(i32_mod_mask, v - ((v + BIAS(v)) & ~(int)m))

// 24-bit multiply: mul24 is only defined for operands that fit in 24 bits, so both are made so:
// b is the seed's top 24 bits (once per work-item), a the generator's top 24 bits (each iteration).
// Their product modulo 2^32 is then the same from mul24 and from a 32-bit multiply.
INT_KERNEL(u32_mul_shift24, x >> 8)
INT_KERNEL(u32_mul32, (x >> 8) * b)
INT_KERNEL(u32_mul24, mul24(x >> 8, b))

// Float literals: x = x * SCALE repeated ITERS times (a chain of dependent multiplies; the
// factor is below 1, so x shrinks slowly and never reaches denormals for the iteration counts
// used). With the f suffix it is one float multiply per step; without, x is converted to double,
// multiplied in double and rounded back to float, which only a device with fp64 can compile.
#define LITERAL_KERNEL(name, scale)                                                              \
__kernel void name(__global float* restrict out, __global const float* restrict in)             \
{                                                                                                \
    const size_t i = get_global_id(0);                                                           \
    float x = in[i];                                                                             \
    for (int k = 0; k < ITERS; ++k)                                                              \
        x = x * scale;                                                                           \
    out[i] = x;                                                                                  \
}

LITERAL_KERNEL(float_literal_f, SCALE_F)

#if FP64  // the host sets FP64=1 where the device reports cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
LITERAL_KERNEL(float_literal_double, SCALE_D)
#endif
