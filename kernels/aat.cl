// C = A A^T through local memory: the Guide's section 3.2.2.3 set-up (experiment `aat`),
// written afresh.
//
// Shapes. A is M x TILE_DIM, row-major floats; C = A A^T is M x M. Each work-item computes one
// element of C, a dot product of length TILE_DIM; work-groups are TILE_DIM x TILE_DIM over a 2-D
// NDRange (dimension 0 = column of C, dimension 1 = row of C).
//
// Defines:
//   TILE_DIM  tile width = the inner dimension (16 in the Guide)
//   PAD       extra floats per row of the transposed tile in aat_local (0 or 1)
//
// Why the kernels differ:
//   aat_simple    the second operand is row `col` of A, so neighbouring work-items read
//                 addresses TILE_DIM floats apart (a strided global access).
//   aat_local     reads the rows of A that the tile's columns need contiguously and writes them
//                 transposed into local memory; with PAD = 0 that transposed write makes lanes
//                 TILE_DIM words apart collide in the same bank, PAD = 1 spreads them out.

#ifndef TILE_DIM
#define TILE_DIM 16
#endif
#ifndef PAD
#define PAD 0
#endif

__kernel void aat_simple(__global const float* restrict a, __global float* restrict c, const int m)
{
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    float sum = 0.0f;
    for (int k = 0; k < TILE_DIM; ++k)
        sum += a[row * TILE_DIM + k] * a[col * TILE_DIM + k];   // second term: stride TILE_DIM
    c[row * m + col] = sum;
}

__kernel void aat_local(__global const float* restrict a, __global float* restrict c, const int m)
{
    __local float a_tile[TILE_DIM][TILE_DIM];
    __local float at_tile[TILE_DIM][TILE_DIM + PAD];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    // The tile's columns are rows first_col .. first_col + TILE_DIM - 1 of A. (The Guide's
    // Listing 3.11 scales the group index by the number of groups; the tile width is meant.)
    const int first_col = get_group_id(0) * TILE_DIM;
    a_tile[ty][tx] = a[row * TILE_DIM + tx];
    at_tile[tx][ty] = a[(first_col + ty) * TILE_DIM + tx];   // contiguous read, transposed write
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (int k = 0; k < TILE_DIM; ++k)
        sum += a_tile[ty][k] * at_tile[k][tx];
    c[row * m + col] = sum;
}
