// Three arithmetic loops whose speed and results may change with the build options
// (experiment `buildopts`, Guide chapter 5 and A.2: -cl-mad-enable, -cl-fast-relaxed-math).
// Defines:
//   ITERS   loop iterations per work-item
//
// Each work-item reads one float x and iterates y = f(y, x) ITERS times from y = 1 (poly: y = 0),
// writing the final y. Every step depends on the previous one and on x, so nothing can be hoisted
// or deleted; the maps are contractions (|df/dy| < 1 on the input ranges the host uses), so
// rounding errors stay bounded instead of growing with ITERS, and the host can give a tolerance.

// Multiply and add, as Horner's rule for 0.5 * (1 + x + x^2 + ...), |x| <= 0.9. The multiply
// and the add are separate statements on purpose: the language lets a compiler fuse a*b+c within
// one expression (FP_CONTRACT), but not across statements; -cl-mad-enable allows it anywhere.
__kernel void poly(__global float* restrict out, __global const float* restrict in)
{
    const size_t i = get_global_id(0);
    const float x = in[i];
    float y = 0.0f;
    for (int k = 0; k < ITERS; ++k) {
        y = y * x;
        y = y + 0.5f;
    }
    out[i] = y;
}

// Square root and division: y = x / (sqrt(y) + 1) + 0.5, x in [1, 4]. Relaxed math may replace
// both by faster approximations (reciprocal and reciprocal square root estimates).
__kernel void divsqrt(__global float* restrict out, __global const float* restrict in)
{
    const size_t i = get_global_id(0);
    const float x = in[i];
    float y = 1.0f;
    for (int k = 0; k < ITERS; ++k)
        y = x / (sqrt(y) + 1.0f) + 0.5f;
    out[i] = y;
}

// Transcendentals: y = x * sin(y) + exp(-y), x in [0.25, 0.5]. Relaxed math may use the
// hardware's approximate sine and exponential.
__kernel void transcendental(__global float* restrict out, __global const float* restrict in)
{
    const size_t i = get_global_id(0);
    const float x = in[i];
    float y = 1.0f;
    for (int k = 0; k < ITERS; ++k)
        y = x * sin(y) + exp(-y);
    out[i] = y;
}
