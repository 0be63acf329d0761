// C = A B for row-major M x K and K x N float matrices: the kernel benchmarks/record_space.py
// brute-forces to record a search space that any machine can replay.
//
// A work-group of block_size_x x block_size_y work-items computes a tile of C of
// (block_size_y * WPY) rows by (block_size_x * WPX) columns, each work-item WPY x WPX outputs
// kept in registers. K is walked in steps of TK. With USE_LOCAL the group first stages the
// step's slices of A and B in local memory (every work-item loading its share in turn), so each
// value read from global memory serves a whole row or column of work-items; without it every
// work-item reads its operands from global memory itself and relies on the caches.
#define TILE_M (block_size_y * WPY)
#define TILE_N (block_size_x * WPX)
#define GROUP (block_size_x * block_size_y)

__kernel void sgemm(__global const float* restrict A, __global const float* restrict B,
                    __global float* restrict C, const int M, const int N, const int K) {
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int row0 = get_group_id(1) * TILE_M, col0 = get_group_id(0) * TILE_N;
    float acc[WPY][WPX];
    for (int i = 0; i < WPY; ++i)
        for (int j = 0; j < WPX; ++j)
            acc[i][j] = 0.0f;
#if USE_LOCAL
    __local float As[TILE_M][TK];
    __local float Bs[TK][TILE_N];
    const int me = ty * block_size_x + tx;
    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int e = me; e < TILE_M * TK; e += GROUP)
            As[e / TK][e % TK] = A[(row0 + e / TK) * K + k0 + e % TK];
        for (int e = me; e < TK * TILE_N; e += GROUP)
            Bs[e / TILE_N][e % TILE_N] = B[(k0 + e / TILE_N) * N + col0 + e % TILE_N];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TK; ++k)
            for (int i = 0; i < WPY; ++i) {
                const float a = As[ty + i * block_size_y][k];
                for (int j = 0; j < WPX; ++j)
                    acc[i][j] += a * Bs[k][tx + j * block_size_x];
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    for (int k0 = 0; k0 < K; k0 += TK)
        for (int k = k0; k < k0 + TK; ++k)
            for (int i = 0; i < WPY; ++i) {
                const float a = A[(row0 + ty + i * block_size_y) * K + k];
                for (int j = 0; j < WPX; ++j)
                    acc[i][j] += a * B[k * N + col0 + tx + j * block_size_x];
            }
#endif
    for (int i = 0; i < WPY; ++i)
        for (int j = 0; j < WPX; ++j)
            C[(row0 + ty + i * block_size_y) * N + col0 + tx + j * block_size_x] = acc[i][j];
}
