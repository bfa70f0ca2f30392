/* rs_cuda_ssm.cuh — device helpers shared by the ReplaySSM decode and verification kernels:
 * the warp mapping (a warp owns RPW consecutive state rows of one head; lane l holds columns
 * 4l .. 4l+3), ring record loads/stores, decay products, and the
 * checkpoint loaders that dequantise fp16 / bf16 / fp8 / nvfp4 in registers.
 * Device code only; included by rs_cuda_decode.cu and rs_cuda_verify.cu.
 */
#ifndef RS_CUDA_SSM_CUH
#define RS_CUDA_SSM_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "replayssm/cuda/rs_cuda.h"
#include "replayssm/quant/rs_codec.h"
#include "rs_cuda_common.cuh" /* rs_dev_warp_reduce, the transposed warp reduction */

#define RS_FULL_MASK 0xFFFFFFFFu

__device__ __forceinline__ float4 rs_ld4(const float *p) { return *reinterpret_cast<const float4 *>(p); }
__device__ __forceinline__ float rs_dot4(float4 a, float4 b)
{
    return __fmaf_rn(a.w, b.w, __fmaf_rn(a.z, b.z, __fmaf_rn(a.y, b.y, __fmul_rn(a.x, b.x))));
}
/* s + c * k, elementwise, fused */
__device__ __forceinline__ float4 rs_fma4(float c, float4 k, float4 s)
{
    return make_float4(__fmaf_rn(c, k.x, s.x), __fmaf_rn(c, k.y, s.y), __fmaf_rn(c, k.z, s.z), __fmaf_rn(c, k.w, s.w));
}
__device__ __forceinline__ float4 rs_scale4(float c, float4 s)
{
    return make_float4(__fmul_rn(c, s.x), __fmul_rn(c, s.y), __fmul_rn(c, s.z), __fmul_rn(c, s.w));
}

/* ---- the lane's columns of a state row, per d_k (d_k in {64, 128, 256}) ---------------------------
 * A warp owns whole state rows at every d_k; lane l holds DK / 32 columns of a row:
 *   d_k = 128: columns 4l .. 4l+3                          (a float4: one 512-byte warp access a row)
 *   d_k =  64: columns 2l, 2l+1                            (a float2: one 256-byte warp access)
 *   d_k = 256: columns 4l .. 4l+3 and 128+4l .. 128+4l+3   (two float4: two 512-byte warp accesses)
 * Why this and not half-warps owning d_k = 64 rows (16 lanes x 4 columns) or 8 contiguous columns a
 * lane at 256: the row <-> warp and record <-> lane mappings, and so every warp reduction, shuffle and
 * ring-record layout of the d_k = 128 kernels, stay exactly as they are; only the lane's vector
 * changes, so one template serves the three d_k and the d_k = 128 instantiations compile to the code of
 * before. Every warp access stays fully coalesced (256 at d_k = 256 is split at column 128 rather than
 * 8 contiguous columns a lane, whose two 16-byte loads would each touch every other 16 bytes).
 * rs_loff<DK>(lane) is the lane's first element in a row; the vector rs_lv<DK> covers elements
 * [off, off + 4) (128), [off, off + 2) (64), or [off, off + 4) and [off + 128, off + 132) (256): each
 * float4 is 4-aligned, i.e. one Philox block of the SR keying (e / 4); at d_k = 64 a lane's pair is
 * half a block. */
struct rs_f8 {
    float4 a, b; /* d_k = 256: columns 4l.. and 128 + 4l.. */
};
template <int DK> struct rs_lv_t;
template <> struct rs_lv_t<64> {
    using type = float2;
};
template <> struct rs_lv_t<128> {
    using type = float4;
};
template <> struct rs_lv_t<256> {
    using type = rs_f8;
};
template <int DK> using rs_lv = typename rs_lv_t<DK>::type;
template <int DK> __device__ __forceinline__ int rs_loff(int lane) { return (DK == 64 ? 2 : 4) * lane; }

template <int DK> __device__ __forceinline__ rs_lv<DK> rs_ldv(const float *p) /* p: row + rs_loff */
{
    if constexpr (DK == 128) return rs_ld4(p);
    else if constexpr (DK == 64) return *reinterpret_cast<const float2 *>(p);
    else return rs_f8{rs_ld4(p), rs_ld4(p + 128)};
}
__device__ __forceinline__ void rs_stv(float *p, float4 v) { *reinterpret_cast<float4 *>(p) = v; }
__device__ __forceinline__ void rs_stv(float *p, float2 v) { *reinterpret_cast<float2 *>(p) = v; }
__device__ __forceinline__ void rs_stv(float *p, rs_f8 v) { rs_stv(p, v.a), rs_stv(p + 128, v.b); }
template <int DK> __device__ __forceinline__ rs_lv<DK> rs_zerov()
{
    if constexpr (DK == 128) return make_float4(0.f, 0.f, 0.f, 0.f);
    else if constexpr (DK == 64) return make_float2(0.f, 0.f);
    else return rs_f8{make_float4(0.f, 0.f, 0.f, 0.f), make_float4(0.f, 0.f, 0.f, 0.f)};
}
__device__ __forceinline__ float rs_dotv(float4 a, float4 b) { return rs_dot4(a, b); }
__device__ __forceinline__ float rs_dotv(float2 a, float2 b) { return __fmaf_rn(a.y, b.y, __fmul_rn(a.x, b.x)); }
__device__ __forceinline__ float rs_dotv(rs_f8 a, rs_f8 b)
{
    return __fmaf_rn(a.b.w, b.b.w, __fmaf_rn(a.b.z, b.b.z, __fmaf_rn(a.b.y, b.b.y, __fmaf_rn(a.b.x, b.b.x, rs_dot4(a.a, b.a)))));
}
__device__ __forceinline__ float4 rs_fmav(float c, float4 k, float4 s) { return rs_fma4(c, k, s); }
__device__ __forceinline__ float2 rs_fmav(float c, float2 k, float2 s)
{
    return make_float2(__fmaf_rn(c, k.x, s.x), __fmaf_rn(c, k.y, s.y));
}
__device__ __forceinline__ rs_f8 rs_fmav(float c, rs_f8 k, rs_f8 s) { return rs_f8{rs_fma4(c, k.a, s.a), rs_fma4(c, k.b, s.b)}; }
__device__ __forceinline__ float4 rs_scalev(float c, float4 s) { return rs_scale4(c, s); }
__device__ __forceinline__ float2 rs_scalev(float c, float2 s) { return make_float2(__fmul_rn(c, s.x), __fmul_rn(c, s.y)); }
__device__ __forceinline__ rs_f8 rs_scalev(float c, rs_f8 s) { return rs_f8{rs_scale4(c, s.a), rs_scale4(c, s.b)}; }

/* ---- decay products (engine/rs_gamma.h convention: float64, rounded once per coefficient) ----------
 * Lane j holds a_j (1.0 past the last record). rs_warp_suffix_prod returns the inclusive suffix
 * product prod_{l >= lane} a_l over the warp, by a log-step scan. The products are formed in
 * float64 as rs_gamma_suffix does, in a tree order instead of its sequential order: the float64
 * results differ by a few 1e-16 relative, so the fp32 coefficient is the same rounding of
 * (almost always) the same value. */
__device__ __forceinline__ double rs_warp_suffix_prod(double x, int lane)
{
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const double y = __shfl_down_sync(RS_FULL_MASK, x, off);
        if (lane + off < 32) x *= y;
    }
    return x;
}
/* exclusive suffix products over 64 records held as (lo: record lane, hi: record lane + 32):
 * e_lo = prod_{l > lane} a_l, e_hi = prod_{l > lane + 32} a_l, all = prod over every record */
__device__ __forceinline__ void rs_suffix64(double alo, double ahi, bool two, int lane, double &e_lo, double &e_hi,
                                            double &all)
{
    double shi = 1.0, thi = 1.0;
    if (two) { /* warp-uniform */
        shi = rs_warp_suffix_prod(ahi, lane);
        thi = __shfl_sync(RS_FULL_MASK, shi, 0);
    }
    const double slo = rs_warp_suffix_prod(alo, lane) * thi;
    e_lo = __shfl_down_sync(RS_FULL_MASK, slo, 1);
    e_hi = __shfl_down_sync(RS_FULL_MASK, shi, 1);
    if (lane == 31) e_lo = thi, e_hi = 1.0;
    all = __shfl_sync(RS_FULL_MASK, slo, 0);
}

/* ---- ring records -------------------------------------------------------------------------- */

/* Round to the ring's storage type (the value every later step will see). bf16 RTN through
 * the hardware cvt.rn: bit-identical to rs_bf16_encode_rtn for non-NaN input. */
template <int RDT> __device__ __forceinline__ float rs_ring_round(float x)
{
    return RDT == RS_CUDA_F32 ? x : __bfloat162float(__float2bfloat16_rn(x));
}
__device__ __forceinline__ float rs_bf16lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float rs_bf16hi(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }
/* four bf16 values (a lane's 4 columns of a bf16 ring key, as loaded) as float4 */
__device__ __forceinline__ float4 rs_bf16x4(uint2 w)
{
    return make_float4(rs_bf16lo(w.x), rs_bf16hi(w.x), rs_bf16lo(w.y), rs_bf16hi(w.y));
}
__device__ __forceinline__ uint32_t rs_bf16bits(float x) /* x already bf16-exact */
{
    return __float_as_uint(x) >> 16;
}

/* N consecutive ring elements (N = 1, 2, 4 or 8) at element offset e (a multiple of N). */
template <int RDT, int N> __device__ __forceinline__ void rs_ring_ld(const void *p, size_t e, float *x)
{
    static_assert(N == 1 || N == 2 || N % 4 == 0, "rs_ring_ld: N = 1, 2 or a multiple of 4");
    if constexpr (N == 1) { /* GDN verification at T > 8 (one row per warp) */
        if (RDT == RS_CUDA_F32) x[0] = static_cast<const float *>(p)[e];
        else x[0] = __uint_as_float((uint32_t)static_cast<const uint16_t *>(p)[e] << 16);
    } else if (RDT == RS_CUDA_F32) {
        const float *f = static_cast<const float *>(p) + e;
        if (N == 2) {
            const float2 a = *reinterpret_cast<const float2 *>(f);
            x[0] = a.x, x[1] = a.y;
        } else {
#pragma unroll
            for (int i = 0; i < N; i += 4) {
                const float4 a = rs_ld4(f + i);
                x[i] = a.x, x[i + 1] = a.y, x[i + 2] = a.z, x[i + 3] = a.w;
            }
        }
    } else {
        const uint16_t *h = static_cast<const uint16_t *>(p) + e;
        if (N == 2) {
            const uint32_t w = *reinterpret_cast<const uint32_t *>(h);
            x[0] = rs_bf16lo(w), x[1] = rs_bf16hi(w);
        } else {
#pragma unroll
            for (int i = 0; i < N; i += 4) {
                const uint2 w = *reinterpret_cast<const uint2 *>(h + i);
                x[i] = rs_bf16lo(w.x), x[i + 1] = rs_bf16hi(w.x), x[i + 2] = rs_bf16lo(w.y), x[i + 3] = rs_bf16hi(w.y);
            }
        }
    }
}
/* store N ring elements (already rounded to the ring type); N = 1, 2 or a multiple of 4 */
template <int RDT, int N> __device__ __forceinline__ void rs_ring_st(void *p, size_t e, const float *x)
{
    static_assert(N == 1 || N == 2 || N % 4 == 0, "rs_ring_st: N = 1, 2 or a multiple of 4");
    if constexpr (N == 1) {
        if (RDT == RS_CUDA_F32) static_cast<float *>(p)[e] = x[0];
        else static_cast<uint16_t *>(p)[e] = (uint16_t)(__float_as_uint(x[0]) >> 16);
    } else if (RDT == RS_CUDA_F32) {
        float *f = static_cast<float *>(p) + e;
        if (N == 2) {
            *reinterpret_cast<float2 *>(f) = make_float2(x[0], x[1]);
        } else {
#pragma unroll
            for (int i = 0; i < N; i += 4) *reinterpret_cast<float4 *>(f + i) = make_float4(x[i], x[i + 1], x[i + 2], x[i + 3]);
        }
    } else {
        uint16_t *h = static_cast<uint16_t *>(p) + e;
        if (N == 2) {
            *reinterpret_cast<uint32_t *>(h) = rs_bf16bits(x[0]) | (rs_bf16bits(x[1]) << 16);
        } else {
#pragma unroll
            for (int i = 0; i < N; i += 4)
                *reinterpret_cast<uint2 *>(h + i) = make_uint2(rs_bf16bits(x[i]) | (rs_bf16bits(x[i + 1]) << 16),
                                                               rs_bf16bits(x[i + 2]) | (rs_bf16bits(x[i + 3]) << 16));
        }
    }
}
/* store one ring element (already rounded to the ring type) */
template <int RDT> __device__ __forceinline__ void rs_ring_st1(void *p, size_t e, float x)
{
    if (RDT == RS_CUDA_F32) static_cast<float *>(p)[e] = x;
    else static_cast<uint16_t *>(p)[e] = (uint16_t)rs_bf16bits(x);
}
/* the lane's 4 columns of ring key record at element offset e (row start) */
template <int RDT> __device__ __forceinline__ float4 rs_ring_k4(const void *p, size_t e, int lane)
{
    float x[4];
    rs_ring_ld<RDT, 4>(p, e + 4 * (size_t)lane, x);
    return make_float4(x[0], x[1], x[2], x[3]);
}

/* the lane's columns of ring key record at element offset e (row start), d_k = DK */
template <int RDT, int DK> __device__ __forceinline__ rs_lv<DK> rs_ring_kv(const void *p, size_t e, int lane)
{
    if constexpr (DK == 128) {
        return rs_ring_k4<RDT>(p, e, lane);
    } else if constexpr (DK == 64) {
        float x[2];
        rs_ring_ld<RDT, 2>(p, e + 2 * (size_t)lane, x);
        return make_float2(x[0], x[1]);
    } else {
        return rs_f8{rs_ring_k4<RDT>(p, e, lane), rs_ring_k4<RDT>(p, e + 128, lane)};
    }
}
/* store the lane's columns (already rounded to the ring type) at element offset e (row start + rs_loff) */
template <int RDT> __device__ __forceinline__ void rs_ring_stv(void *p, size_t e, float4 v)
{
    const float kx[4] = {v.x, v.y, v.z, v.w};
    rs_ring_st<RDT, 4>(p, e, kx);
}
template <int RDT> __device__ __forceinline__ void rs_ring_stv(void *p, size_t e, float2 v)
{
    const float kx[2] = {v.x, v.y};
    rs_ring_st<RDT, 2>(p, e, kx);
}
template <int RDT> __device__ __forceinline__ void rs_ring_stv(void *p, size_t e, rs_f8 v)
{
    rs_ring_stv<RDT>(p, e, v.a), rs_ring_stv<RDT>(p, e + 128, v.b);
}
/* every element rounded to the ring type */
template <int RDT> __device__ __forceinline__ float4 rs_ring_roundv(float4 k)
{
    return make_float4(rs_ring_round<RDT>(k.x), rs_ring_round<RDT>(k.y), rs_ring_round<RDT>(k.z), rs_ring_round<RDT>(k.w));
}
template <int RDT> __device__ __forceinline__ float2 rs_ring_roundv(float2 k)
{
    return make_float2(rs_ring_round<RDT>(k.x), rs_ring_round<RDT>(k.y));
}
template <int RDT> __device__ __forceinline__ rs_f8 rs_ring_roundv(rs_f8 k)
{
    return rs_f8{rs_ring_roundv<RDT>(k.a), rs_ring_roundv<RDT>(k.b)};
}

/* ---- fp16 / bf16 stores --------------------------------------------------------------------------
 * One fp16/bf16 code, bit-identical to rs_elem_encode. RTN of a non-NaN value is the hardware
 * cvt.rn (IEEE round-to-nearest-even, no flush, overflow to Inf: the CPU codec's rules); SR and
 * NaN take the shared codec's bit paths (rs_codec.h: what rs_fp16_encode_sr / rs_bf16_encode_sr
 * run on the CPU). */
template <int DT> __device__ __forceinline__ uint32_t rs_half_code(float x, int sr, uint32_t r, int k)
{
    const uint32_t ax = __float_as_uint(x) & 0x7FFFFFFFu;
    if (!sr && ax <= 0x7F800000u) {
        if (DT == RS_CUDA_F16) return __half_as_ushort(__float2half_rn(x));
        return __bfloat16_as_ushort(__float2bfloat16_rn(x));
    }
    if (DT == RS_CUDA_F16) return sr ? rs_codec_fp16_sr(x, r, k) : rs_codec_fp16_rtn(x);
    return sr ? rs_codec_bf16_sr(x, r, k) : rs_codec_bf16_rtn(x);
}

/* Checkpoint rounding at a flush (rs_cuda_ckpt_round), resolved once per (row b, head h): dt F32
 * = none; else the Philox stream of this flush (the engine's store_: rs_stream_id(slot, layer,
 * head, flush index) under the row's seed). */
struct rs_flush_round {
    int dt, sr, k;
    uint64_t seed, stream;
};
__device__ __forceinline__ rs_flush_round rs_flush_round_of(const rs_cuda_ckpt_round &c, size_t b, unsigned h)
{
    rs_flush_round f = {(int)c.dtype, 0, 32, 0, 0};
    if (f.dt != RS_CUDA_F32 && c.rounding == RS_ROUND_SR) {
        f.sr = 1, f.k = c.sr_bits;
        f.seed = c.seeds[b];
        f.stream = rs_codec_stream_id(c.slot, c.layer, h, (uint64_t)c.flushes[b]);
    }
    return f;
}
/* The lane's 4 columns 4l..4l+3 of head row `row` as the checkpoint stores them: element
 * e = row * d_k + 4l + i takes word i of Philox block e / 4 = row * 32 + l (rs_rand_u32's keying). */
__device__ __forceinline__ float4 rs_flush_round4(const rs_flush_round &f, float4 v, int row, int lane)
{
    if (f.dt == RS_CUDA_F32) return v;
    rs_philox_words w = {0, 0, 0, 0};
    if (f.sr) w = rs_codec_rand_block(f.seed, f.stream, (uint64_t)row * (RS_CUDA_DK / 4) + (uint64_t)lane);
    if (f.dt == RS_CUDA_F16)
        return make_float4(rs_codec_fp16_value(rs_half_code<RS_CUDA_F16>(v.x, f.sr, w.x, f.k)),
                           rs_codec_fp16_value(rs_half_code<RS_CUDA_F16>(v.y, f.sr, w.y, f.k)),
                           rs_codec_fp16_value(rs_half_code<RS_CUDA_F16>(v.z, f.sr, w.z, f.k)),
                           rs_codec_fp16_value(rs_half_code<RS_CUDA_F16>(v.w, f.sr, w.w, f.k)));
    return make_float4(rs_codec_bf16_value(rs_half_code<RS_CUDA_BF16>(v.x, f.sr, w.x, f.k)),
                       rs_codec_bf16_value(rs_half_code<RS_CUDA_BF16>(v.y, f.sr, w.y, f.k)),
                       rs_codec_bf16_value(rs_half_code<RS_CUDA_BF16>(v.z, f.sr, w.z, f.k)),
                       rs_codec_bf16_value(rs_half_code<RS_CUDA_BF16>(v.w, f.sr, w.w, f.k)));
}

/* The lane's columns of head row `row` at d_k = DK (rs_lv<DK>), rounded as the checkpoint stores them:
 * element e = row * DK + col takes word e % 4 of Philox block e / 4. d_k = 128: rs_flush_round4;
 * 256: blocks row * 64 + l (columns 4l..) and row * 64 + 32 + l (128 + 4l..); 64: columns 2l, 2l+1 are
 * words 2 (l & 1), 2 (l & 1) + 1 of block row * 16 + l / 2. */
__device__ __forceinline__ float rs_flush_round1(const rs_flush_round &f, float v, uint32_t w)
{
    return f.dt == RS_CUDA_F16 ? rs_codec_fp16_value(rs_half_code<RS_CUDA_F16>(v, f.sr, w, f.k))
                               : rs_codec_bf16_value(rs_half_code<RS_CUDA_BF16>(v, f.sr, w, f.k));
}
template <int DK> __device__ __forceinline__ rs_lv<DK> rs_flush_roundv(const rs_flush_round &f, rs_lv<DK> v, int row, int lane)
{
    if constexpr (DK == 128) {
        return rs_flush_round4(f, v, row, lane);
    } else if constexpr (DK == 256) {
        if (f.dt == RS_CUDA_F32) return v;
        return rs_f8{rs_flush_round4(f, v.a, 2 * row, lane), rs_flush_round4(f, v.b, 2 * row + 1, lane)};
    } else {
        if (f.dt == RS_CUDA_F32) return v;
        rs_philox_words w = {0, 0, 0, 0};
        if (f.sr) w = rs_codec_rand_block(f.seed, f.stream, (uint64_t)row * (64 / 4) + (uint64_t)(lane >> 1));
        const bool odd = (lane & 1) != 0;
        return make_float2(rs_flush_round1(f, v.x, odd ? w.z : w.x), rs_flush_round1(f, v.y, odd ? w.w : w.y));
    }
}

/* ---- checkpoint loaders -----------------------------------------------------------------------
 * A lane holds columns 4l .. 4l+3 of a state row. rs_raw<CKF> is what one lane loads for one row
 * in the checkpoint's own format (kept compact so a warp can prefetch many rows); rs_raw_dec
 * turns it into a float4 `raw` and a multiplier: value = raw * mult (mult = 1 except fp8's
 * scale_inv and nvfp4's s_b * S_dec). Decoders are exact: fp16 and fp8 by the hardware converts,
 * bf16 by a shift, E2M1 by placing the code's 3 magnitude bits in a binary16 (the value times
 * 2^-14, the factor folded into mult). CKF is an rs_format_kind. grow = global row over
 * [B][H][d_v]. */
struct rs_ckpt_src {
    const float *f32;       /* fp32 S_ckpt */
    const uint8_t *codes;   /* rs_qtensor codes */
    const float *scale_inv; /* fp8 */
    const uint8_t *bscale;  /* nvfp4 block scales */
    const float *sdec;      /* nvfp4 tensor scales (per head) */
    int d_v;
};

/* DK: the fp32 read at d_k = 64 / 128 / 256 (rs_lv<DK>); the low-precision formats at d_k = 128 only */
template <int CKF, int DK = 128> struct rs_raw {
    rs_lv<DK> v;
};
template <int DK> struct rs_raw<RS_FMT_FP16, DK> {
    uint2 v;
};
template <int DK> struct rs_raw<RS_FMT_BF16, DK> {
    uint2 v;
};
template <int DK> struct rs_raw<RS_FMT_FP8, DK> {
    uint32_t v;
    float s;
};
template <int DK> struct rs_raw<RS_FMT_NVFP4, DK> {
    uint32_t v; /* 16 code bits | block scale byte << 16 */
};

template <int CKF, int DK = 128>
__device__ __forceinline__ rs_raw<CKF, DK> rs_raw_load(const rs_ckpt_src &c, size_t grow, int lane)
{
    static_assert(CKF == RS_FMT_FP32 || DK == 128, "low-precision checkpoint reads: d_k = 128 only");
    rs_raw<CKF, DK> r;
    const size_t e = grow * DK + (DK == 64 ? 2 : 4) * (size_t)lane;
    if constexpr (CKF == RS_FMT_FP32) {
        r.v = rs_ldv<DK>(c.f32 + e);
    } else if constexpr (CKF == RS_FMT_FP16 || CKF == RS_FMT_BF16) {
        r.v = *reinterpret_cast<const uint2 *>(c.codes + 2 * e);
    } else if constexpr (CKF == RS_FMT_FP8) {
        r.v = *reinterpret_cast<const uint32_t *>(c.codes + e);
        r.s = c.scale_inv[grow]; /* d_k = 128: one fp8 block per row */
    } else {
        r.v = (uint32_t)*reinterpret_cast<const uint16_t *>(c.codes + e / 2) | ((uint32_t)c.bscale[e / RS_NVFP4_BLOCK] << 16);
    }
    return r;
}

__device__ __forceinline__ float2 rs_h2f2(uint32_t w)
{
    __half2 h;
    memcpy(&h, &w, 4);
    return __half22float2(h);
}
/* two E4M3 codes (the low 16 bits of `two`, element 0 in the low byte) as binary16 bits, exact: the packed
 * cvt.rn.f16x2.e4m3x2 (one instruction); v3, v4 and v7 all decode fp8 through it */
__device__ __forceinline__ uint32_t rs_e4m3x2_h2(uint32_t two)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(two & 0xFFFFu), __NV_E4M3);
    uint32_t r;
    memcpy(&r, &h, 4);
    return r;
}
/* E2M1 pair w (0..3) of a code word x (nibble k = element k) as binary16 bits, value * 2^-14: elements w (low
 * half) and w + 4 (high half), by word-wide bit moves: the 3 magnitude bits of each nibble to binary16 bits 9..11,
 * the sign to bit 15 (v4's and v7's decoders) */
__device__ __forceinline__ uint32_t rs_e2m1w_h2(uint32_t x, int w)
{
    const uint32_t y = w == 0 ? x << 9 : w == 1 ? x << 5 : w == 2 ? x << 1 : x >> 3;
    const uint32_t s = w == 0 ? x << 12 : w == 1 ? x << 8 : w == 2 ? x << 4 : x;
    return (y & 0x0E000E00u) | (s & 0x80008000u);
}
/* two E2M1 codes (low byte: element 2i low nibble) as binary16 bits (value * 2^-14) */
__device__ __forceinline__ uint32_t rs_e2m1x2_h2(uint32_t byte)
{
    const uint32_t lo = ((byte & 7u) << 9) | ((byte & 8u) << 12);
    const uint32_t hi = (((byte >> 4) & 7u) << 9) | (((byte >> 4) & 8u) << 12);
    return lo | (hi << 16);
}

/* decode; sdec = the head's nvfp4 S_dec (unused otherwise) */
template <int CKF, int DK = 128>
__device__ __forceinline__ rs_lv<DK> rs_raw_dec(const rs_raw<CKF, DK> &r, float sdec, float &mult)
{
    static_assert(CKF == RS_FMT_FP32 || DK == 128, "low-precision checkpoint reads: d_k = 128 only");
    if constexpr (CKF == RS_FMT_FP32) {
        mult = 1.0f;
        return r.v;
    } else if constexpr (CKF == RS_FMT_FP16) {
        mult = 1.0f;
        const float2 a = rs_h2f2(r.v.x), b = rs_h2f2(r.v.y);
        return make_float4(a.x, a.y, b.x, b.y);
    } else if constexpr (CKF == RS_FMT_BF16) {
        mult = 1.0f;
        return make_float4(rs_bf16lo(r.v.x), rs_bf16hi(r.v.x), rs_bf16lo(r.v.y), rs_bf16hi(r.v.y));
    } else if constexpr (CKF == RS_FMT_FP8) {
        mult = r.s;
        const float2 a = rs_h2f2(rs_e4m3x2_h2(r.v)), b = rs_h2f2(rs_e4m3x2_h2(r.v >> 16));
        return make_float4(a.x, a.y, b.x, b.y);
    } else {
        const __half_raw sb = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(r.v >> 16), __NV_E4M3);
        mult = __fmul_rn(__fmul_rn(__half2float(*reinterpret_cast<const __half *>(&sb)), sdec), 16384.0f); /* 2^14 */
        const float2 a = rs_h2f2(rs_e2m1x2_h2(r.v & 0xFFu)), b = rs_h2f2(rs_e2m1x2_h2((r.v >> 8) & 0xFFu));
        return make_float4(a.x, a.y, b.x, b.y);
    }
}

/* Launch geometry of the main kernels: a warp owns `rows` consecutive rows of one head (all
 * d_v rows when the grid is large; a slice when B * H warps would not fill the GPU) and walks
 * them in chunks, prefetching chunk i+1 while it computes chunk i. */
struct rs_geom {
    unsigned BH, H, G, grp, wph; /* warps per head */
    int rows;                    /* rows per warp = d_v / wph */
};

static inline int rs_sm_count(void)
{
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = 132;
    }
    return sms;
}

/* The launch options (rs_cuda_launch_opts) resolved: warps a head (0: automatic), heads a warp of the v4
 * read (0: automatic), the early-load level (0 off, 1 values, 2 values and keys), the L2-prefetch level (0 off,
 * 1 grids of more than one wave, 2 every launch) and the verification's table sharing (0 a warp, 1 a block,
 * 2 a block after widening) */
struct rs_knobs {
    unsigned wph, hpw;
    int spec, l2pf, gshare;
};
static inline bool rs_opts_valid(const rs_cuda_launch_opts *o)
{
    return !o || (o->warps_per_head >= 0 && o->lp_heads_per_warp >= 0 && o->replay_spec >= 0 &&
                  o->replay_spec <= RS_CUDA_SPEC_KEYS && o->replay_l2pf >= 0 && o->replay_l2pf <= RS_CUDA_L2PF_ALWAYS &&
                  o->verify_gshare >= 0 && o->verify_gshare <= RS_CUDA_GSHARE_WIDEN);
}
/* the launchers' check: RS_E_INVAL naming the fields unless every one is in range (NULL: the defaults) */
static inline rs_status rs_opts_check(const rs_cuda_launch_opts *o, const char *who)
{
    if (rs_opts_valid(o)) return RS_OK;
    return rs_error_set(RS_E_INVAL,
                        "%s: launch options out of range (warps_per_head %d, lp_heads_per_warp %d, replay_spec %d, "
                        "replay_l2pf %d, verify_gshare %d)",
                        who, o->warps_per_head, o->lp_heads_per_warp, o->replay_spec, o->replay_l2pf, o->verify_gshare);
}
/* the options resolved (NULL or out of range: the defaults; the launchers refuse the latter first). A field's 0
 * is its default level, a named value v its level v - 1. */
static inline rs_knobs rs_knobs_of(const rs_cuda_launch_opts *o)
{
    static const rs_cuda_launch_opts dflt = {0, 0, 0, 0, 0};
    if (!rs_opts_valid(o) || !o) o = &dflt;
    rs_knobs k;
    k.wph = (unsigned)o->warps_per_head, k.hpw = (unsigned)o->lp_heads_per_warp;
    k.spec = o->replay_spec ? o->replay_spec - 1 : 1;
    k.l2pf = o->replay_l2pf ? o->replay_l2pf - 1 : 1;
    k.gshare = o->verify_gshare ? o->verify_gshare - 1 : 2;
    return k;
}

/* warps per head: split heads into power-of-two slices until the grid has ~128 warps per SM
 * (about 8 waves at the main kernels' occupancy, so warps that flush, which take 2-3x longer,
 * do not leave a long tail); forced > 0 (rs_cuda_launch_opts.warps_per_head): the largest power of two
 * <= forced dividing the chunk count */
static inline rs_geom rs_replay_geom(const rs_ssm_dims *d, int rpw, unsigned forced)
{
    rs_geom g;
    g.BH = (unsigned)d->batch * (unsigned)d->heads, g.H = (unsigned)d->heads, g.G = (unsigned)d->key_heads;
    g.grp = g.H / g.G;
    const unsigned nch = (unsigned)(d->d_v / rpw), target = 128u * (unsigned)rs_sm_count();
    g.wph = 1;
    if (forced) {
        while (2 * g.wph <= forced && nch % (2 * g.wph) == 0) g.wph *= 2;
    } else {
        while (g.BH * g.wph < target && nch % (2 * g.wph) == 0) g.wph *= 2;
    }
    g.rows = d->d_v / (int)g.wph;
    return g;
}

/* the grid fits one wave: at most 16 warps an SM (the fp32 main kernels' occupancy at 96-128 registers) */
static inline bool rs_one_wave(const rs_geom &g) { return (size_t)g.BH * g.wph <= 16u * (size_t)rs_sm_count(); }

/* The fp32 main kernel's geometry (rs_k_replay_main divides by wph, so it need not be a power of two): as
 * rs_replay_geom, and where its grid is one wave (<= 16 warps an SM), the largest divisor of the chunk count that
 * keeps it one wave. Changes only heads whose chunk count is not a power of two: Nemotron-3-Nano's 80-row heads
 * (20 chunks of 4 rows) at B = 1 get 20 slices instead of 4 (5 chunks a warp, a dependent chain each; faster on
 * the H200, docs/kernels.md). Not past one wave: at B = 8 (~6 waves) 20 slices were slower than 4. */
static inline rs_geom rs_replay_geom_any(const rs_ssm_dims *d, int rpw, unsigned forced)
{
    rs_geom g = rs_replay_geom(d, rpw, forced);
    const unsigned nch = (unsigned)(d->d_v / rpw);
    if (forced || !rs_one_wave(g)) return g;
    rs_geom c = g;
    for (c.wph = g.wph + 1; c.wph <= nch && rs_one_wave(c); ++c.wph)
        if (nch % c.wph == 0) g.wph = c.wph;
    g.rows = d->d_v / (int)g.wph;
    return g;
}

#endif /* RS_CUDA_SSM_CUH */
