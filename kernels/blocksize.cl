// A deliberately naive general matrix multiply for the work-group size sweep (Guide 4.4).
// C = A B for row-major n x n float matrices; one work-item computes one element of C, reading
// a row of A and a column of B straight from global memory (no local-memory tiling), so the
// only thing that changes between sweep points is the shape and size of the work-group.
// Dimension 0 runs along a row of C (neighbouring work-items read neighbouring B and C
// elements: coalesced), dimension 1 down a column. The global size is rounded up to whole
// work-groups, so work-items past the edge return at once: any work-group shape works.
// No defines.
__kernel void matmul(__global float* restrict c, __global const float* restrict a,
                     __global const float* restrict b, const int n)
{
    const int col = (int)get_global_id(0);
    const int row = (int)get_global_id(1);
    if (row >= n || col >= n) return;
    const __global float* arow = a + (size_t)row * n;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += arow[k] * b[(size_t)k * n + col];
    c[(size_t)row * n + col] = sum;
}
