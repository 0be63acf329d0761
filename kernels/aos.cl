// One particle update in five memory layouts (experiment `aos`, after Tradeoffs' "AoS vs
// SoA" and "SoAoS" slides). A particle has six floats, position (x, y, z) and velocity
// (vx, vy, vz); each step damps the velocity, applies gravity and moves the particle:
//
//   v *= damp;  vz -= g * dt;  p += v * dt
//
// Every kernel reads all six floats of particle i from src and writes all six to dst (same
// layout), so each needs 48 bytes per particle whatever the layout; what changes is how the
// accesses of neighbouring work-items line up:
//   update_aos      struct of six floats (24 bytes): six scalar accesses 24 bytes apart
//   update_aos8     the same 24 bytes as three float2 (8-byte aligned): three 64-bit accesses
//   update_aos16    float4 + float2 in a 16-byte aligned struct (32 bytes with padding): one
//                   128-bit and one 64-bit access, 32 bytes apart; the padding is never written
//   update_soa      six arrays of n floats: six contiguous 32-bit streams
//   update_soaos    Tradeoffs' structure of arrays of structures: an array of n float4
//                   (x, y, z, vx) followed by an array of n float2 (vy, vz): one contiguous
//                   128-bit and one contiguous 64-bit stream
//   update_aosoa    blocks of BLOCK particles, each block six arrays of BLOCK floats (AoSoA)
// Define: BLOCK, particles per AoSoA block (32: one warp's worth). n is a multiple of BLOCK.

#ifndef BLOCK
#define BLOCK 32
#endif

typedef struct { float x, y, z, vx, vy, vz; } particle;
typedef struct { float2 a, b, c; } particle8;                               // (x,y) (z,vx) (vy,vz)
typedef struct __attribute__((aligned(16))) { float4 a; float2 b; } particle16;  // (x,y,z,vx) (vy,vz)

// The update on (x, y, z, vx) and (vy, vz), shared by every layout.
static inline void step(float4* a, float2* b, const float dt, const float damp, const float g)
{
    const float vx = a->s3 * damp, vy = b->s0 * damp, vz = b->s1 * damp - g * dt;
    *a = (float4)(a->s0 + vx * dt, a->s1 + vy * dt, a->s2 + vz * dt, vx);
    *b = (float2)(vy, vz);
}

__kernel void update_aos(__global particle* restrict dst, const __global particle* restrict src,
                         const int n, const float dt, const float damp, const float g)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const particle p = src[i];
    float4 a = (float4)(p.x, p.y, p.z, p.vx);
    float2 b = (float2)(p.vy, p.vz);
    step(&a, &b, dt, damp, g);
    particle q = {a.s0, a.s1, a.s2, a.s3, b.s0, b.s1};
    dst[i] = q;
}

__kernel void update_aos8(__global particle8* restrict dst, const __global particle8* restrict src,
                          const int n, const float dt, const float damp, const float g)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const particle8 p = src[i];
    float4 a = (float4)(p.a, p.b);
    float2 b = p.c;
    step(&a, &b, dt, damp, g);
    particle8 q = {a.s01, a.s23, b};
    dst[i] = q;
}

__kernel void update_aos16(__global particle16* restrict dst,
                           const __global particle16* restrict src,
                           const int n, const float dt, const float damp, const float g)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    float4 a = src[i].a;
    float2 b = src[i].b;
    step(&a, &b, dt, damp, g);
    dst[i].a = a;   // member stores: the 8 padding bytes keep whatever they held
    dst[i].b = b;
}

__kernel void update_soa(__global float* restrict dst, const __global float* restrict src,
                         const int n, const float dt, const float damp, const float g)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    float4 a = (float4)(src[i], src[n + i], src[2 * n + i], src[3 * n + i]);
    float2 b = (float2)(src[4 * n + i], src[5 * n + i]);
    step(&a, &b, dt, damp, g);
    dst[i] = a.s0; dst[n + i] = a.s1; dst[2 * n + i] = a.s2; dst[3 * n + i] = a.s3;
    dst[4 * n + i] = b.s0; dst[5 * n + i] = b.s1;
}

__kernel void update_soaos(__global float* restrict dst, const __global float* restrict src,
                           const int n, const float dt, const float damp, const float g)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    // The float2 array starts 16n bytes in: 8-byte aligned for any n.
    const __global float4* sa = (const __global float4*)src;
    const __global float2* sb = (const __global float2*)(src + 4 * (size_t)n);
    float4 a = sa[i];
    float2 b = sb[i];
    step(&a, &b, dt, damp, g);
    ((__global float4*)dst)[i] = a;
    ((__global float2*)(dst + 4 * (size_t)n))[i] = b;
}

__kernel void update_aosoa(__global float* restrict dst, const __global float* restrict src,
                           const int n, const float dt, const float damp, const float g)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const size_t base = (size_t)(i / BLOCK) * 6 * BLOCK + i % BLOCK;
    const __global float* s = src + base;
    float4 a = (float4)(s[0], s[BLOCK], s[2 * BLOCK], s[3 * BLOCK]);
    float2 b = (float2)(s[4 * BLOCK], s[5 * BLOCK]);
    step(&a, &b, dt, damp, g);
    __global float* d = dst + base;
    d[0] = a.s0; d[BLOCK] = a.s1; d[2 * BLOCK] = a.s2; d[3 * BLOCK] = a.s3;
    d[4 * BLOCK] = b.s0; d[5 * BLOCK] = b.s1;
}
