// Built-in math functions: precise, native_ and half_ flavours (experiment `math`, Guide 5.1.4).
// Built once per function with two defines:
//   FUNC    the single-argument float function under test: sin, native_sin, half_sin, exp ...
//   ITERS   how many evaluations each work-item of math_loop performs
//
// math_eval applies FUNC once per element: the host compares it with a float64 NumPy reference to
// measure the error in ULPs on fresh random inputs.
//
// math_loop measures throughput. Memory traffic is one float in and one out per work-item, so with
// ITERS evaluations in between the arithmetic dominates. The k-th argument is the float whose bit
// pattern is k above the input's (k ULPs further from zero): every argument stays in the input's
// range, the host can reproduce it exactly, and no two evaluations are the same, so none can be
// hoisted or merged. The evaluations do not depend on each other (the device may overlap them);
// their sum, written out, depends on every one of them, so the compiler cannot delete any.

__kernel void math_eval(__global float* restrict out, __global const float* restrict in)
{
    const size_t i = get_global_id(0);
    out[i] = FUNC(in[i]);
}

__kernel void math_loop(__global float* restrict out, __global const float* restrict in)
{
    const size_t i = get_global_id(0);
    const uint bits = as_uint(in[i]);
    float sum = 0.0f;
    for (uint k = 0; k < ITERS; ++k)
        sum += FUNC(as_float(bits + k));
    out[i] = sum;
}
