// Tiled square matrix product C = A B (n x n, row-major floats, n a multiple of the tile) and
// the optimisations the Tradeoffs slides weigh against each other (experiment `tiling`).
//
// Defines:
//   TILE    tile width; work-groups are TILE x TILE work-items over a 2-D NDRange
//           (dimension 0 = column of C, dimension 1 = row of C)
//   UNROLL  how the inner product over one tile is compiled: 1 = fully unrolled
//           (#pragma unroll), 0 = kept as a loop (#pragma unroll 1), anything else (default)
//           = the compiler's own choice
//
// Kernels:
//   tiled        the baseline: every step stages one TILE x TILE tile of A and of B in local
//                memory, waits, accumulates TILE products, waits again.
//   two_outputs  work redistribution: each work-item computes two elements of C, TILE columns
//                apart, so every A value read from local memory feeds two products; a
//                work-group covers a TILE x 2*TILE block of C and the NDRange is (n/2, n).
//   prefetch_next  software pipelining: the next step's A and B elements are loaded from global
//                memory into registers before the current tile is multiplied, so their latency
//                overlaps the arithmetic instead of preceding it.

#ifndef TILE
#define TILE 16
#endif
#ifndef UNROLL
#define UNROLL -1
#endif

__kernel void tiled(__global const float* restrict a, __global const float* restrict b,
                    __global float* restrict c, const int n)
{
    __local float a_tile[TILE][TILE];
    __local float b_tile[TILE][TILE];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    float sum = 0.0f;
    for (int step = 0; step < n; step += TILE) {
        a_tile[ty][tx] = a[row * n + step + tx];
        b_tile[ty][tx] = b[(step + ty) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
#if UNROLL == 1
#pragma unroll
#elif UNROLL == 0
#pragma unroll 1
#endif
        for (int k = 0; k < TILE; ++k)
            sum += a_tile[ty][k] * b_tile[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);   // nobody overwrites a tile another work-item still reads
    }
    c[row * n + col] = sum;
}

__kernel void two_outputs(__global const float* restrict a, __global const float* restrict b,
                          __global float* restrict c, const int n)
{
    __local float a_tile[TILE][TILE];
    __local float b_tile[TILE][2 * TILE];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = get_group_id(0) * 2 * TILE + tx;   // and col + TILE
    const int row = get_global_id(1);
    float left = 0.0f, right = 0.0f;
    for (int step = 0; step < n; step += TILE) {
        a_tile[ty][tx] = a[row * n + step + tx];
        b_tile[ty][tx] = b[(step + ty) * n + col];
        b_tile[ty][tx + TILE] = b[(step + ty) * n + col + TILE];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k) {
            const float x = a_tile[ty][k];
            left += x * b_tile[k][tx];
            right += x * b_tile[k][tx + TILE];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    c[row * n + col] = left;
    c[row * n + col + TILE] = right;
}

__kernel void prefetch_next(__global const float* restrict a, __global const float* restrict b,
                       __global float* restrict c, const int n)
{
    __local float a_tile[TILE][TILE];
    __local float b_tile[TILE][TILE];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    float a_next = a[row * n + tx];
    float b_next = b[ty * n + col];
    float sum = 0.0f;
    for (int step = 0; step < n; step += TILE) {
        a_tile[ty][tx] = a_next;
        b_tile[ty][tx] = b_next;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (step + TILE < n) {   // in flight while the tile below is multiplied
            a_next = a[row * n + step + TILE + tx];
            b_next = b[(step + TILE + ty) * n + col];
        }
        for (int k = 0; k < TILE; ++k)
            sum += a_tile[ty][k] * b_tile[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    c[row * n + col] = sum;
}
