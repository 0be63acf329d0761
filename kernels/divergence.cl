// Branch divergence (Guide 6.1): work-items choose one of two paths by
// (local id / granularity) % 2, so neighbouring runs of `granularity` work-items alternate.
// When a run is shorter than a warp, both paths fall inside one warp and run one after the
// other; from the warp size up, every warp takes a single path.
// The two paths do the same amount of work (a loop of `iters` steps of an affine recurrence,
// each step one multiply-add and one add) with different constants and sign, and accumulate
// every step, so the result depends on the input and on which path ran: the host checks both
// with a closed form. `no_branch` runs path A everywhere: the baseline without any branch.
// No defines.
#define RA 0.75f
#define KA 0.125f
#define RB 0.5f
#define KB 0.375f

static float path_a(float x, int iters)
{
    float s = 0.0f;
    for (int k = 0; k < iters; ++k) {
        x = x * RA + KA;
        s += x;
    }
    return s;
}

static float path_b(float x, int iters)
{
    float s = 0.0f;
    for (int k = 0; k < iters; ++k) {
        x = KB - x * RB;
        s += x;
    }
    return s;
}

__kernel void branch(__global float* restrict out, __global const float* restrict in,
                     const int iters, const uint granularity)
{
    const size_t i = get_global_id(0);
    const float x = in[i];
    if ((get_local_id(0) / granularity) % 2)
        out[i] = path_b(x, iters);
    else
        out[i] = path_a(x, iters);
}

__kernel void no_branch(__global float* restrict out, __global const float* restrict in,
                        const int iters)
{
    const size_t i = get_global_id(0);
    out[i] = path_a(in[i], iters);
}

// Branch predication (Guide 6.2): the same two recurrences chosen per step instead of per
// work-item, with the choice written three ways. The condition alternates between neighbouring
// work-items (granularity 1, the worst case for divergence), and does not change along the loop,
// so each kernel writes what `branch` writes at granularity 1.
//   pred_ifelse  a short if/else in the loop body: few enough instructions that the compiler may
//                predicate it instead of branching
//   pred_select  both results computed, select() picks one: no branch to take at all
//   pred_loop    the choice as a loop of 0 or 1 trips that swaps in path B's constants: a control
//                statement whose trip count depends on the work-item
__kernel void pred_ifelse(__global float* restrict out, __global const float* restrict in,
                          const int iters)
{
    const size_t i = get_global_id(0);
    const int odd = get_local_id(0) & 1;
    float x = in[i], s = 0.0f;
    for (int k = 0; k < iters; ++k) {
        if (odd)
            x = KB - x * RB;
        else
            x = x * RA + KA;
        s += x;
    }
    out[i] = s;
}

__kernel void pred_select(__global float* restrict out, __global const float* restrict in,
                          const int iters)
{
    const size_t i = get_global_id(0);
    const int odd = get_local_id(0) & 1;
    float x = in[i], s = 0.0f;
    for (int k = 0; k < iters; ++k) {
        x = select(x * RA + KA, KB - x * RB, odd);  // odd ? second : first
        s += x;
    }
    out[i] = s;
}

__kernel void pred_loop(__global float* restrict out, __global const float* restrict in,
                        const int iters)
{
    const size_t i = get_global_id(0);
    const uint odd = get_local_id(0) & 1;
    float x = in[i], s = 0.0f;
    for (int k = 0; k < iters; ++k) {
        float r = RA, c = KA;
        for (uint j = 0; j < odd; ++j) {  // path B: x -> KB - RB x
            r = -RB;
            c = KB;
        }
        x = x * r + c;
        s += x;
    }
    out[i] = s;
}
