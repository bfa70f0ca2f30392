/* rs_cuda_scan_dev.cuh — private to rs_cuda_scan.cu (rs_cuda_scan.h): the per-run descriptor the
 * host writes for the kernel, warp reductions, and the on-chip store of a head state in a format
 * (the twin of rs_quantize_roundtrip over one d_v x 128 tensor, with the non-finite check of the
 * engine's store_).
 *
 * Thread mapping (rs_cuda_scan_kernel.cuh): warp w of a CTA owns the RPW consecutive state rows
 * w*RPW .. w*RPW+RPW-1 of one head; lane l holds columns 4l .. 4l+3 of each (a float4; d_k = 128).
 * So the four elements a thread holds in one row, e = row*128 + 4l + j, are exactly the four words
 * of Philox block e >> 2 = row*32 + l (rs_philox.h keying), an FP8 block (128 elements) is one row
 * of one warp, and an NVFP4 block (16 elements) is 4 consecutive lanes of one row.
 */
#ifndef RS_CUDA_SCAN_DEV_CUH
#define RS_CUDA_SCAN_DEV_CUH

#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cstdint>

#include "replayssm/engine/rs_head.h" /* RS_SLOT_* */
#include "replayssm/engine/rs_policy.h"
#include "replayssm/quant/rs_codec.h"
#include "replayssm/quant/rs_format.h"
#include "rs_cuda_common.cuh" /* the warp reductions */

#define RS_SCAN_FULL 0xFFFFFFFFu
#define RS_SCAN_DK 128        /* the one supported d_k */
#define RS_SCAN_MAX_WARPS 16  /* d_v / RPW <= 16 for every supported d_v (host picks RPW) */

/* A storage format as the kernel needs it (rs_format by value, ints only). */
struct rs_scan_fmt {
    int kind;   /* rs_format_kind */
    int sr;     /* 1: stochastic rounding */
    int k;      /* SR random bits */
    int pow2;   /* fp8 +pow2 */
    int floor_; /* nvfp4 +floor */
};

/* One run (device memory, written at create). */
struct rs_scan_run {
    uint64_t seed;
    uint64_t L;         /* window; 1 for conv (every step stores) */
    uint64_t state_off; /* float offset of the run's states in the state region */
    int mode;           /* rs_policy_mode */
    int ns;             /* running states per head: 1 (conv, shared) or 2 (split) */
    rs_scan_fmt hp, lp;
};

/* Kernel arguments (by value). */
struct rs_scan_kargs {
    const float *alpha, *beta, *v, *k, *q;
    float *o;
    size_t ld_a, ld_v, ld_k, ld_q, ld_o;
    const rs_scan_run *runs; /* [R] */
    const int *list;         /* run of blockIdx.y */
    float *states;
    int64_t *marks; /* [R][n_layers][H] */
    uint64_t pos0;  /* the position of the launch's runs before this chunk */
    int run0;       /* the first run of the launch: io rows (r - run0) * T + t */
    int T, H, hpg, d_v, n_layers, layer;
    uint32_t layer_id;
};

/* Launch the chunk kernel for `nruns` runs of `ns` running states each (a.list names them):
 * grid (H, nruns), 32 d_v / rpw threads (rs_cuda_scan_gdn.cu, rs_cuda_scan_mamba2.cu: one
 * translation unit per SSM kind, so the twelve kernels compile in parallel). */
void rs_scan_launch_gdn(int rpw, int ns, const rs_scan_kargs &a, int nruns, cudaStream_t st);
void rs_scan_launch_mamba2(int rpw, int ns, const rs_scan_kargs &a, int nruns, cudaStream_t st);

/* Non-finite flags of one step (see the kernel for how they become the engine's step). */
enum { RS_SCAN_F_IN = 1, RS_SCAN_F_OUT = 2, RS_SCAN_F_ST = 4 };

/* ---- arithmetic -------------------------------------------------------------------------------- */

__device__ __forceinline__ float rs_scan_dot4(float4 a, float4 b)
{
    return __fmaf_rn(a.w, b.w, __fmaf_rn(a.z, b.z, __fmaf_rn(a.y, b.y, __fmul_rn(a.x, b.x))));
}

/* al * s + c * k, elementwise (one product rounded, then a fused multiply-add) */
__device__ __forceinline__ float4 rs_scan_upd4(float4 s, float al, float c, float4 k)
{
    return make_float4(__fmaf_rn(c, k.x, __fmul_rn(al, s.x)), __fmaf_rn(c, k.y, __fmul_rn(al, s.y)),
                       __fmaf_rn(c, k.z, __fmul_rn(al, s.z)), __fmaf_rn(c, k.w, __fmul_rn(al, s.w)));
}

__device__ __forceinline__ float rs_scan_amax4(float4 x)
{
    return fmaxf(fmaxf(fabsf(x.x), fabsf(x.y)), fmaxf(fabsf(x.z), fabsf(x.w)));
}

/* chk stays finite (0) unless an element is NaN or Inf: x * 0 is NaN exactly for those. One
 * instruction per element; the caller tests isnan(chk). */
__device__ __forceinline__ void rs_scan_chk4(float4 x, float &chk)
{
    chk = __fmaf_rn(x.x, 0.0f, chk);
    chk = __fmaf_rn(x.y, 0.0f, chk);
    chk = __fmaf_rn(x.z, 0.0f, chk);
    chk = __fmaf_rn(x.w, 0.0f, chk);
}

/* ---- the store of one head state in a format -----------------------------------------------------
 * dst[RPW] = Q_f(src[RPW]) for the thread's RPW row fragments, the whole CTA holding the head's
 * d_v x 128 state (src may alias dst). Bit-identical to rs_quantize_roundtrip(f, S, n, n, seed,
 * stream, S) with n = d_v * 128: the same codec calls (rs_codec.h) in the order of the GPU twins of
 * kernels/rs_cuda_quant.cu, the same element keying. NaN/Inf never reach a decision the engine
 * would take (it stops at the first non-finite value; the kernel only flags it).
 * chk: the engine's store_ check (the quantizer's input check, or the scan of the stored copy
 * where a finite input can overflow: fp16/bf16; for those a non-finite input gives a non-finite
 * output, so checking the output covers both). Every thread of the CTA must call this with the
 * same f (NVFP4 takes a CTA-wide amax: one __syncthreads, red_ctr picks the s_red half). */
/* FP16 / BF16 element (rounded and back to float32), split so that the store's loop body stays
 * small: the per-step conv store runs it on 4 RPW elements per lane, and with the whole codec
 * inlined 4 RPW times the loop outgrew the instruction cache (ncu, H200, conv:fp16-sr alone: 64% of
 * the warps' cycles stalled on instruction fetch, 0.93 instructions per SM cycle).
 *   rs_scan_half_fast   the bit paths of rs_codec.h's fp16/bf16 coders (their first branch: the
 *                       FP16 normal range, BF16 finite; SR with k >= 13 / 16), branch-free, plus a
 *                       flag saying whether x is in that case;
 *   rs_scan_half_slow   otherwise (subnormal / zero / non-finite x, fewer SR bits): the full coder,
 *                       out of line (rare: one call site per element, not 4 RPW inlined copies);
 *   rs_scan_fp16_value  rs_codec_fp16_value with selects instead of branches (same three cases).
 * The same decisions and bits as rs_codec_{fp16,bf16}_{rtn,sr}: the fast formulas are theirs, and
 * every other input goes to them (test_cuda_scan checks them on the CPU against those coders). */
template <bool BF, bool SR> __host__ __device__ __noinline__ uint32_t rs_scan_half_slow(float x, uint32_t r, int k)
{
    if (BF) return SR ? rs_codec_bf16_sr(x, r, k) : rs_codec_bf16_rtn(x);
    return SR ? rs_codec_fp16_sr(x, r, k) : rs_codec_fp16_rtn(x);
}
template <bool BF, bool SR> __host__ __device__ __forceinline__ uint32_t rs_scan_half_fast(float x, uint32_t r, int k, bool &fast)
{
    const uint32_t b = rs_codec_f2u(x), u = b & 0x7FFFFFFFu;
    if (BF) {
        fast = u <= RS_CODEC_BF16_FAST_HI && (!SR || k >= 16);
        const uint32_t v = SR ? u + (r >> 16) : u + 0x7FFFu + ((u >> 16) & 1u);
        return ((b >> 16) & 0x8000u) | (v >> 16);
    }
    fast = u >= RS_CODEC_FP16_FAST_LO && u <= RS_CODEC_FP16_FAST_HI && (!SR || k >= 13);
    const uint32_t v = SR ? u + (r >> 19) : u + 0x0FFFu + ((u >> 13) & 1u);
    return ((b >> 16) & 0x8000u) | ((v >> 13) - (112u << 10));
}
__host__ __device__ __forceinline__ float rs_scan_fp16_value(uint32_t code)
{
    const uint32_t c = code & 0xFFFFu, s = c >> 15, e = (c >> 10) & 0x1Fu, m = c & 0x3FFu;
    const float nrm = rs_codec_u2f(((c & 0x8000u) << 16) | (((c & 0x7FFFu) + (112u << 10)) << 13));
    const float inf = rs_codec_u2f((s << 31) | 0x7F800000u | (m << 13));
    const float v = rs_codec_mul((float)m, 0x1.0p-24f), sub = s ? -v : v;
    return e - 1u < 30u ? nrm : e == 0x1Fu ? inf : sub;
}
template <bool BF, bool SR> __host__ __device__ __forceinline__ float rs_scan_half_rt(float x, uint32_t r, int k)
{
    bool fast;
    uint32_t c = rs_scan_half_fast<BF, SR>(x, r, k, fast);
    if (!fast) c = rs_scan_half_slow<BF, SR>(x, r, k);
    return BF ? rs_codec_bf16_value(c) : rs_scan_fp16_value(c);
}
/* the FP16 / BF16 store of the thread's RPW row fragments (rs_scan_store) */
template <int RPW, bool BF, bool SR>
__device__ __forceinline__ void rs_scan_store_half(const float4 *src, float4 *dst, uint64_t seed, uint64_t stream,
                                                   int k, int row0, int lane, float &chk)
{
#pragma unroll
    for (int i = 0; i < RPW; ++i) {
        rs_philox_words w = {0u, 0u, 0u, 0u};
        if (SR) w = rs_codec_rand_block(seed, stream, (uint64_t)(row0 + i) * 32u + (uint64_t)lane);
        const float4 x = src[i];
        float4 y;
        y.x = rs_scan_half_rt<BF, SR>(x.x, w.x, k);
        y.y = rs_scan_half_rt<BF, SR>(x.y, w.y, k);
        y.z = rs_scan_half_rt<BF, SR>(x.z, w.z, k);
        y.w = rs_scan_half_rt<BF, SR>(x.w, w.w, k);
        rs_scan_chk4(y, chk);
        dst[i] = y;
    }
}

/* rs_codec_nvfp4_elem by float arithmetic (host and device, so that test_cuda_scan can check it on
 * the CPU against the codec): the same clamp, then rs_codec_encode_finite's E2M1 decisions with
 * the binade from the exponent field, the quantum q = 2^(e-1) (e = max(unbiased exponent, 0) <= 2
 * since |v| <= 6), y = |v| / q, fl = floor(y) and the dropped fraction fr = y - fl, all exact in
 * float32 (power-of-two scalings of a value below 2^24; fr * 2^k <= 2^32 too): RTN up iff fr > 1/2
 * or fr = 1/2 with fl odd; SR up iff floor(fr 2^k) + (r >> (32 - k)) >= 2^k (the codec's dk is
 * rem >> (shift - k) or rem << (k - shift) = floor(fr 2^k); its shift >= 64 case has fr < 2^-40,
 * so dk = 0 and no rounding up here either). About a third of the codec path's instructions (no
 * 64-bit shifts), which the NVFP4 stores run on every element. */
template <bool SR>
__host__ __device__ __forceinline__ uint32_t rs_scan_e2m1(float x, float mult, uint32_t r, int k)
{
    const float v = fminf(fmaxf(rs_codec_mul(x, mult), -RS_E2M1_MAX), RS_E2M1_MAX);
    const uint32_t u = rs_codec_f2u(v), sign = (u >> 31) << 3, ax = u & 0x7FFFFFFFu;
    int e = (int)(ax >> 23) - 127;
    e = e < 0 ? 0 : e;
    const float y = rs_codec_mul(rs_codec_u2f(ax), e == 0 ? 2.0f : e == 1 ? 1.0f : 0.5f);
    const float fl = floorf(y), fr = y - fl;
    uint32_t m = (uint32_t)fl;
    if (SR) {
        const uint64_t dk = (uint64_t)floorf(rs_codec_mul(fr, rs_codec_u2f((uint32_t)(127 + k) << 23)));
        const uint64_t R = k == 32 ? (uint64_t)r : (uint64_t)(r >> (32 - k));
        m += dk + R >= (1ull << k) ? 1u : 0u;
    } else {
        m += (fr > 0.5f || (fr == 0.5f && (m & 1u))) ? 1u : 0u;
    }
    if (m == 0) return sign;
    if (m < 2) return sign | m; /* subnormal (e == 0) */
    if (m >= 4) m >>= 1, ++e;   /* carry into the next binade */
    if (e > 2 || (e == 2 && m - 2 > 1)) return sign | 7u; /* satfinite: 6 */
    return sign | ((uint32_t)(e + 1) << 1) | (m - 2);
}

template <int RPW>
__device__ __forceinline__ void rs_scan_store(const rs_scan_fmt &f, const float4 *src, float4 *dst, uint64_t seed,
                                              uint64_t stream, int row0, int lane, int warp, int nwarps,
                                              float *s_red, int &red_ctr, float &chk)
{
    constexpr int GS1 = 32 / RPW;
    switch (f.kind) {
    case RS_FMT_FP32:
#pragma unroll
        for (int i = 0; i < RPW; ++i) {
            rs_scan_chk4(src[i], chk);
            dst[i] = src[i];
        }
        return;
    case RS_FMT_FP16:
    case RS_FMT_BF16: /* one copy of the loop per (format, rounding): uniform per CTA */
        if (f.kind == RS_FMT_BF16) {
            if (f.sr) rs_scan_store_half<RPW, true, true>(src, dst, seed, stream, f.k, row0, lane, chk);
            else rs_scan_store_half<RPW, true, false>(src, dst, seed, stream, f.k, row0, lane, chk);
        } else {
            if (f.sr) rs_scan_store_half<RPW, false, true>(src, dst, seed, stream, f.k, row0, lane, chk);
            else rs_scan_store_half<RPW, false, false>(src, dst, seed, stream, f.k, row0, lane, chk);
        }
        return;
    case RS_FMT_FP8: {
        float am[RPW];
#pragma unroll
        for (int i = 0; i < RPW; ++i) {
            rs_scan_chk4(src[i], chk);
            am[i] = rs_scan_amax4(src[i]);
        }
        const float red = rs_dev_warp_reduce<RPW, true>(am, lane); /* row lane / GS1's amax */
#pragma unroll
        for (int i = 0; i < RPW; ++i) {
            const float a = __shfl_sync(RS_SCAN_FULL, red, i * GS1);
            const float scale = rs_codec_fp8_scale(a, f.pow2);
            const float sinv = rs_codec_div(1.0f, scale);
            rs_philox_words w = {0u, 0u, 0u, 0u};
            if (f.sr) w = rs_codec_rand_block(seed, stream, (uint64_t)(row0 + i) * 32u + (uint64_t)lane);
            const float4 x = src[i];
            float4 y;
            y.x = rs_codec_mul(rs_codec_e4m3_value(rs_codec_encode(RS_ELEM_E4M3, rs_codec_mul(x.x, scale), f.sr, w.x, f.k)), sinv);
            y.y = rs_codec_mul(rs_codec_e4m3_value(rs_codec_encode(RS_ELEM_E4M3, rs_codec_mul(x.y, scale), f.sr, w.y, f.k)), sinv);
            y.z = rs_codec_mul(rs_codec_e4m3_value(rs_codec_encode(RS_ELEM_E4M3, rs_codec_mul(x.z, scale), f.sr, w.z, f.k)), sinv);
            y.w = rs_codec_mul(rs_codec_e4m3_value(rs_codec_encode(RS_ELEM_E4M3, rs_codec_mul(x.w, scale), f.sr, w.w, f.k)), sinv);
            dst[i] = y;
        }
        return;
    }
    case RS_FMT_NVFP4: {
        float a = 0.0f;
#pragma unroll
        for (int i = 0; i < RPW; ++i) {
            rs_scan_chk4(src[i], chk);
            a = fmaxf(a, rs_scan_amax4(src[i]));
        }
        a = rs_dev_warp_max(a);
        float *buf = s_red + (red_ctr & 1) * RS_SCAN_MAX_WARPS; /* the half the previous store did not use */
        ++red_ctr;
        if (lane == 0) buf[warp] = a;
        __syncthreads();
        a = 0.0f;
        for (int w = 0; w < nwarps; ++w) a = fmaxf(a, buf[w]);
        const float s_enc = rs_codec_nvfp4_senc(a);
        const float s_dec = rs_codec_div(1.0f, s_enc);
#pragma unroll
        for (int i = 0; i < RPW; ++i) {
            const float4 x = src[i];
            float ba = rs_scan_amax4(x); /* 16-block = lanes 4m .. 4m+3 of this row */
            ba = fmaxf(ba, __shfl_xor_sync(RS_SCAN_FULL, ba, 1));
            ba = fmaxf(ba, __shfl_xor_sync(RS_SCAN_FULL, ba, 2));
            const uint32_t sb = rs_codec_nvfp4_block_scale(ba, s_enc, f.floor_) & 0xFFu;
            const float mult = rs_codec_nvfp4_mult(sb, s_dec);
            float4 y;
            if (f.sr) {
                const rs_philox_words w =
                    rs_codec_rand_block(seed, stream, (uint64_t)(row0 + i) * 32u + (uint64_t)lane);
                y.x = rs_codec_nvfp4_value(rs_scan_e2m1<true>(x.x, mult, w.x, f.k), sb, s_dec);
                y.y = rs_codec_nvfp4_value(rs_scan_e2m1<true>(x.y, mult, w.y, f.k), sb, s_dec);
                y.z = rs_codec_nvfp4_value(rs_scan_e2m1<true>(x.z, mult, w.z, f.k), sb, s_dec);
                y.w = rs_codec_nvfp4_value(rs_scan_e2m1<true>(x.w, mult, w.w, f.k), sb, s_dec);
            } else {
                y.x = rs_codec_nvfp4_value(rs_scan_e2m1<false>(x.x, mult, 0u, 32), sb, s_dec);
                y.y = rs_codec_nvfp4_value(rs_scan_e2m1<false>(x.y, mult, 0u, 32), sb, s_dec);
                y.z = rs_codec_nvfp4_value(rs_scan_e2m1<false>(x.z, mult, 0u, 32), sb, s_dec);
                y.w = rs_codec_nvfp4_value(rs_scan_e2m1<false>(x.w, mult, 0u, 32), sb, s_dec);
            }
            dst[i] = y;
        }
        return;
    }
    default: return;
    }
}

#endif /* RS_CUDA_SCAN_DEV_CUH */
