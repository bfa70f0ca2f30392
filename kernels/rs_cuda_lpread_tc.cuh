/* rs_cuda_lpread_tc.cuh — v7 of the low-precision read (docs/kernels.md "Low-precision reads"): the
 * checkpoint dot products of rs_k_replay_lpw on tensor cores.
 * Included by rs_cuda_lpread.cuh; the kernel's pipeline (stages, pieces, tables, flush rows) is v4's.
 *
 * Why: v4's fp8 read issues ~658 instructions per 16-row chunk and warp (decode, one FFMA per element
 * and column pair, the per-row reductions), so at 16 warps per SM it is issue-bound near 60% of the
 * copy ceiling, and nvfp4 more so (docs/kernels.md). Here a chunk's 16 rows x
 * 128 columns are the A operand of eight mma.sync.m16n8k16 (f16, or bf16 for a bf16 copy) with fp32
 * accumulation, and the B operand's eight columns hold q split into three parts (hi, mid, lo) and, for
 * GDN, k likewise:
 *   - A is exact: fp16 / bf16 codes as stored; E4M3 codes through the packed cvt to binary16 (exact);
 *     E2M1 codes as binary16 value * 2^-14 (v4's bit moves) times their E4M3 block scale in binary16
 *     (HMUL2; every such product is a multiple of 2^-24 with <= 6 significant bits, so exact);
 *   - B: q (k) times a power of two that puts max|q| in [2^14, 2^15) (fp16; bf16 needs none), split
 *     x = hi + mid + lo by round-to-nearest, each residual exact in fp32, so the parts hold q to about
 *     33 bits (fp16; 24 for bf16) relative to max|q|, more than fp32's 24;
 *   - every product A x B part is exact in fp32 (<= 11 x 11 significant bits); the tensor core sums
 *     them in fp32 (its internal alignment and truncation make the sum differ from a sequential fp32
 *     sum by a few ulp of the partial sums: the same order of error as v4's, which the tests bound).
 * A lane (g = lane / 4, c = lane % 4) reads rows g and g + 8 of the chunk, columns 32c .. 32c + 31
 * (16-byte shared loads: 4 / 2 / 1 per row for fp16-bf16 / fp8 / nvfp4); k slot s of mma m maps to
 * column 32c + rs_lpt_col(m, s), for A and B alike, so no code is moved between lanes. The results
 * come back in the accumulator layout (rows g and g + 8, B columns 2c, 2c + 1); two shuffles add the
 * parts and the ring-record sums (records j = c, c + 4, ...) over the 4 lanes of a row.
 * Instructions per chunk and warp (fp8): 4 LDS.128, 32 F2FP, 8 HMMA against v4's ~250 for the same
 * work. */
#ifndef RS_CUDA_LPREAD_TC_CUH
#define RS_CUDA_LPREAD_TC_CUH

/* d (+)= a . b: mma.sync m16n8k16, row-major A, column-major B, fp32 accumulators */
template <bool BF>
__device__ __forceinline__ void rs_mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    if constexpr (BF)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* the column (within a lane group's 32) of k slot s of mma m: s = 0, 1 the halves of A registers 0 / 1
 * (B register 0), s = 2, 3 those of A registers 2 / 3 (B register 1). nvfp4 follows v4's decoder,
 * whose four half2 words of a code word hold columns (0, 4), (1, 5), (2, 6), (3, 7). */
template <int CKF> __host__ __device__ constexpr int rs_lpt_col(int m, int s)
{
    return CKF == RS_FMT_NVFP4 ? 8 * (m >> 1) + 2 * (m & 1) + 4 * (s & 1) + (s >> 1) : 4 * m + s;
}

/* x rounded to binary16 / bfloat16 (bits), and that value back as fp32 */
template <bool BF> __device__ __forceinline__ uint32_t rs_lpt_round(float x, float &back)
{
    if constexpr (BF) {
        const __nv_bfloat16 h = __float2bfloat16_rn(x);
        back = __bfloat162float(h);
        return __bfloat16_as_ushort(h);
    } else {
        const __half h = __float2half_rn(x);
        back = __half2float(h);
        return __half_as_ushort(h);
    }
}
/* part p of x (0 hi, 1 mid, 2 lo; 3: none): x = hi + mid + lo + a remainder below lo's last bit */
template <bool BF> __device__ __forceinline__ uint32_t rs_lpt_part(float x, int p)
{
    float b0, b1, b2;
    const uint32_t h0 = rs_lpt_round<BF>(x, b0);
    const float r1 = x - b0; /* exact: b0 is x rounded */
    const uint32_t h1 = rs_lpt_round<BF>(r1, b1);
    const uint32_t h2 = rs_lpt_round<BF>(r1 - b1, b2);
    return p == 0 ? h0 : p == 1 ? h1 : p == 2 ? h2 : 0u;
}

/* The B fragments of the lane's role (column n = lane / 4 of B: part n of x, n < 3; none for n = 3)
 * from x[0..31] = the role's vector at the lane group's 32 columns; the 4 lanes of a role hold the
 * whole vector. fp16: x is scaled by 2^sh so that max|x| lies in [2^14, 2^15) (no part overflows,
 * lo keeps its bits); returns 2^-sh (1 for bf16), the factor that undoes it. */
template <int CKF> __device__ __forceinline__ float rs_lpt_bfrag(float (&x)[32], int lane, bool none, uint32_t (&b)[16])
{
    constexpr bool BF = CKF == RS_FMT_BF16;
    float inv = 1.f;
    if constexpr (!BF) {
        float mx = 0.f;
#pragma unroll
        for (int i = 0; i < 32; ++i) mx = fmaxf(mx, fabsf(x[i]));
        mx = fmaxf(mx, __shfl_xor_sync(RS_FULL_MASK, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(RS_FULL_MASK, mx, 2));
        const int ex = (int)((__float_as_uint(mx) >> 23) & 255u); /* 0 for zero / subnormal: treated as 2^-126 */
        int sh = 14 - ((ex ? ex : 1) - 127);
        sh = sh < -126 ? -126 : sh > 126 ? 126 : sh; /* both 2^sh and 2^-sh normal floats */
        const float sc = __uint_as_float((uint32_t)(sh + 127) << 23);
        inv = __uint_as_float((uint32_t)(127 - sh) << 23);
#pragma unroll
        for (int i = 0; i < 32; ++i) x[i] = __fmul_rn(x[i], sc); /* exact (a power of two, no overflow) */
    }
    const int p = none ? 3 : (lane >> 2) & 3;
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        b[2 * m] = rs_lpt_part<BF>(x[rs_lpt_col<CKF>(m, 0)], p) | rs_lpt_part<BF>(x[rs_lpt_col<CKF>(m, 1)], p) << 16;
        b[2 * m + 1] = rs_lpt_part<BF>(x[rs_lpt_col<CKF>(m, 2)], p) | rs_lpt_part<BF>(x[rs_lpt_col<CKF>(m, 3)], p) << 16;
    }
    return inv;
}

__device__ __forceinline__ uint32_t rs_lpt_hmul2(uint32_t a, __half2 s)
{
    __half2 h;
    memcpy(&h, &a, 4);
    h = __hmul2(h, s);
    uint32_t r;
    memcpy(&r, &h, 4);
    return r;
}

/* acc (+)= the chunk's rows (g, g + 8) . B for the lane's 32 columns: ra, rb = the lane's bytes of rows g
 * and g + 8 in the stage; nvfp4: s2a, s2b = the two E4M3 block scales of the lane's columns in those rows */
template <int CKF>
__device__ __forceinline__ void rs_lpt_dot(const unsigned char *ra, const unsigned char *rb, uint32_t s2a, uint32_t s2b,
                                           const uint32_t (&b)[16], float (&acc)[4])
{
    constexpr int NU = CKF == RS_FMT_NVFP4 ? 1 : CKF == RS_FMT_FP8 ? 2 : 4; /* 16-byte words a row */
    uint32_t wa[4 * NU], wb[4 * NU];
#pragma unroll
    for (int u = 0; u < NU; ++u) {
        const uint4 x = reinterpret_cast<const uint4 *>(ra)[u], y = reinterpret_cast<const uint4 *>(rb)[u];
        wa[4 * u] = x.x, wa[4 * u + 1] = x.y, wa[4 * u + 2] = x.z, wa[4 * u + 3] = x.w;
        wb[4 * u] = y.x, wb[4 * u + 1] = y.y, wb[4 * u + 2] = y.z, wb[4 * u + 3] = y.w;
    }
    __half2 sa[2], sb[2];
    if constexpr (CKF == RS_FMT_NVFP4) {
        uint32_t ha = rs_e4m3x2_h2(s2a), hb = rs_e4m3x2_h2(s2b);
        __half2 a2, b2;
        memcpy(&a2, &ha, 4);
        memcpy(&b2, &hb, 4);
        sa[0] = __low2half2(a2), sa[1] = __high2half2(a2), sb[0] = __low2half2(b2), sb[1] = __high2half2(b2);
    }
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        uint32_t a[4];
        if constexpr (CKF == RS_FMT_FP16 || CKF == RS_FMT_BF16) {
            a[0] = wa[2 * m], a[2] = wa[2 * m + 1], a[1] = wb[2 * m], a[3] = wb[2 * m + 1];
        } else if constexpr (CKF == RS_FMT_FP8) {
            a[0] = rs_e4m3x2_h2(wa[m]), a[2] = rs_e4m3x2_h2(wa[m] >> 16);
            a[1] = rs_e4m3x2_h2(wb[m]), a[3] = rs_e4m3x2_h2(wb[m] >> 16);
        } else {
            const int i = m >> 1, w0 = 2 * (m & 1); /* code word i; pairs w0, w0 + 1 */
            a[0] = rs_lpt_hmul2(rs_e2m1w_h2(wa[i], w0), sa[i >> 1]);
            a[2] = rs_lpt_hmul2(rs_e2m1w_h2(wa[i], w0 + 1), sa[i >> 1]);
            a[1] = rs_lpt_hmul2(rs_e2m1w_h2(wb[i], w0), sb[i >> 1]);
            a[3] = rs_lpt_hmul2(rs_e2m1w_h2(wb[i], w0 + 1), sb[i >> 1]);
        }
        rs_mma_16816<CKF == RS_FMT_BF16>(acc, a, b[2 * m], b[2 * m + 1]);
    }
}

#endif /* RS_CUDA_LPREAD_TC_CUH */
