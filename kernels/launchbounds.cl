// Arithmetic-heavy kernel for comparing a build that promises its work-group size
// (reqd_work_group_size, OpenCL's counterpart of CUDA's __launch_bounds__, Quasar 9.9) with one
// that does not. Knowing the block size lets the compiler budget registers per work-item for
// exactly that many work-items instead of for the device maximum.
// Each work-item keeps LANES independent accumulators live across the loop (register pressure
// grows with LANES) and adds, for STEPS values of t, a cubic p(t + lane * LANE_GAP) per lane.
// Every term is a polynomial in the input x, so the host's reference is a closed form.
// Defines: LANES (accumulators per work-item), REQD (if set: the required work-group size in
// dimension 0); the cubic's coefficients and the gaps come as defines with defaults below.
#ifndef LANES
#define LANES 16
#endif
#ifndef STEP_GAP
#define STEP_GAP 0.001953125f
#endif
#ifndef LANE_GAP
#define LANE_GAP 0.0078125f
#endif
#define C0 0.5f
#define C1 0.25f
#define C2 0.125f
#define C3 0.0625f

#ifdef REQD
#define BOUNDS __attribute__((reqd_work_group_size(REQD, 1, 1)))
#else
#define BOUNDS
#endif

__kernel BOUNDS void poly(__global float* restrict out, __global const float* restrict in,
                          const int steps)
{
    const size_t i = get_global_id(0);
    const float x = in[i];
    float acc[LANES];
#pragma unroll
    for (int l = 0; l < LANES; ++l) acc[l] = 0.0f;
    for (int s = 0; s < steps; ++s) {
        const float t = x + (float)s * STEP_GAP;
#pragma unroll
        for (int l = 0; l < LANES; ++l) {
            const float y = t + (float)l * LANE_GAP;
            acc[l] += ((C3 * y + C2) * y + C1) * y + C0;
        }
    }
    float total = 0.0f;
#pragma unroll
    for (int l = 0; l < LANES; ++l) total += acc[l];
    out[i] = total;
}
