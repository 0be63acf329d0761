// C = A B through local memory: the Guide's section 3.2.2.2 set-up (experiment `matmul`),
// written afresh.
//
// Shapes. A is M x TILE_DIM, B is TILE_DIM x N, C is M x N, all row-major floats. Each work-item
// computes one element of C, a dot product of length TILE_DIM; work-groups are
// TILE_DIM x TILE_DIM over a 2-D NDRange (dimension 0 = column of C, dimension 1 = row of C), so
// one work-group fills one TILE_DIM x TILE_DIM tile of C.
//
// Defines:
//   TILE_DIM  tile width = the inner dimension (16 in the Guide)
//
// Why the kernels differ:
//   ab_simple     reads its row of A and a column of B straight from global memory. Along a
//                 warp the A address is the same for every work-item of a row (wasted bytes on
//                 old hardware), and every work-group of a tile row reads the same B tile again.
//   ab_local_a    stages the work-group's A tile in local memory with one coalesced read.
//   ab_local_ab   stages the B tile too, so the inner loop touches only local memory.
//
// Unlike the Guide's Listing 3.8 the A-tile kernels keep a barrier after filling the tile: the
// Guide relies on a half-warp executing in lockstep, which OpenCL does not promise (PoCL, for
// one, runs the work-items of a group one after another and would read an unfilled tile).

#ifndef TILE_DIM
#define TILE_DIM 16
#endif

__kernel void ab_simple(__global const float* restrict a, __global const float* restrict b,
                        __global float* restrict c, const int n)
{
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    float sum = 0.0f;
    for (int k = 0; k < TILE_DIM; ++k)
        sum += a[row * TILE_DIM + k] * b[k * n + col];
    c[row * n + col] = sum;
}

__kernel void ab_local_a(__global const float* restrict a, __global const float* restrict b,
                         __global float* restrict c, const int n)
{
    __local float a_tile[TILE_DIM][TILE_DIM];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    a_tile[ty][tx] = a[row * TILE_DIM + tx];   // one contiguous row of A per row of work-items
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (int k = 0; k < TILE_DIM; ++k)
        sum += a_tile[ty][k] * b[k * n + col];   // a_tile[ty][k]: one word broadcast to the row
    c[row * n + col] = sum;
}

__kernel void ab_local_ab(__global const float* restrict a, __global const float* restrict b,
                          __global float* restrict c, const int n)
{
    __local float a_tile[TILE_DIM][TILE_DIM];
    __local float b_tile[TILE_DIM][TILE_DIM];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    a_tile[ty][tx] = a[row * TILE_DIM + tx];
    b_tile[ty][tx] = b[ty * n + col];           // B is only TILE_DIM rows tall: row ty of it
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (int k = 0; k < TILE_DIM; ++k)
        sum += a_tile[ty][k] * b_tile[k][tx];
    c[row * n + col] = sum;
}
