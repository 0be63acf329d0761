// A separable 2-D filter (2R+1 taps, e.g. a Gaussian) on a row-major float image with
// clamp-to-edge borders (experiment `separable`, Quasar 9.2.3.2), two ways:
//   sep_rows, sep_columns  two passes through global memory: rows into an intermediate image,
//                          then columns of that into the output (one work-item per pixel each);
//   sep_tile               one fused kernel per TX x TY tile of outputs: the work-group copies
//                          the tile plus an R-pixel halo on every side into local memory once,
//                          filters the rows of the (TY + 2R) x TX middle into a second local
//                          array, then filters its columns into the output. Each input pixel
//                          is read from global memory about once per tile that needs it, and
//                          the intermediate never leaves the work-group.
// All kernels add the taps in the same order (k = -R .. R) with weights from `w`.
// Defines: R (radius), TX and TY (the work-group's and the tile's width and height). The image
// width and height must be multiples of TX and TY (the host checks).

#define TAPS (2 * R + 1)
#define SPAN_X (TX + 2 * R)
#define SPAN_Y (TY + 2 * R)

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void sep_rows(__global float* restrict out, __global const float* restrict in,
              __constant float* w, const int width, const int height)
{
    const int x = get_global_id(0), y = get_global_id(1);
    __global const float* row = in + (size_t)y * width;
    float acc = 0.0f;
    for (int k = 0; k < TAPS; ++k)
        acc += w[k] * row[clamp(x + k - R, 0, width - 1)];
    out[(size_t)y * width + x] = acc;
}

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void sep_columns(__global float* restrict out, __global const float* restrict in,
                 __constant float* w, const int width, const int height)
{
    const int x = get_global_id(0), y = get_global_id(1);
    float acc = 0.0f;
    for (int k = 0; k < TAPS; ++k)
        acc += w[k] * in[(size_t)clamp(y + k - R, 0, height - 1) * width + x];
    out[(size_t)y * width + x] = acc;
}

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void sep_tile(__global float* restrict out, __global const float* restrict in,
              __constant float* w, const int width, const int height)
{
    __local float tile[SPAN_Y][SPAN_X];  // input tile with its halo
    __local float mid[SPAN_Y][TX];       // rows filtered, halo rows kept for the column pass
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int x0 = (int)get_group_id(0) * TX - R;  // image coordinates of tile[0][0]
    const int y0 = (int)get_group_id(1) * TY - R;

    for (int j = ly; j < SPAN_Y; j += TY) {
        __global const float* row = in + (size_t)clamp(y0 + j, 0, height - 1) * width;
        for (int i = lx; i < SPAN_X; i += TX)
            tile[j][i] = row[clamp(x0 + i, 0, width - 1)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int j = ly; j < SPAN_Y; j += TY) {
        float acc = 0.0f;
        for (int k = 0; k < TAPS; ++k)
            acc += w[k] * tile[j][lx + k];
        mid[j][lx] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    float acc = 0.0f;
    for (int k = 0; k < TAPS; ++k)
        acc += w[k] * mid[ly + k][lx];
    out[(size_t)(y0 + R + ly) * width + (x0 + R + lx)] = acc;
}
