// C = A B for n x n row-major float matrices, tiled through local memory: each work-group
// computes a TS x TS tile of C (TS = block_size_x = block_size_y, a tune parameter), stepping
// through the inner dimension one TS-wide strip of A and of B at a time. PAD = 1 offsets the
// rows of the B tile by one float, so a column of it spreads over the banks.
#define TS block_size_x

__kernel void matmul(__global float* C, __global const float* A, __global const float* B, const int n)
{
    __local float a_tile[TS][TS];
    __local float b_tile[TS][TS + PAD];
    const int col = get_global_id(0), row = get_global_id(1);
    const int lc = get_local_id(0), lr = get_local_id(1);
    float acc = 0.0f;
    for (int t = 0; t < n; t += TS) {
        a_tile[lr][lc] = A[row * n + t + lc];
        b_tile[lr][lc] = B[(t + lr) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k)
            acc = fma(a_tile[lr][k], b_tile[k][lc], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * n + col] = acc;
}
