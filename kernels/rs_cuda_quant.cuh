/* rs_cuda_quant.cuh — device twins of quant/: Philox4x32-10 keying (rs_philox.c), the integer
 * minifloat encoder (rs_minifloat.c encode_finite, line for line), exact decoders, and the
 * FP8-block / NVFP4 scale formulas of rs_qtensor.h. Device code only; included by the .cu files.
 *
 * Bit-identity rules: encoding is integer arithmetic; every float operation is an explicit
 * round-to-nearest intrinsic (__fmul_rn, __fdiv_rn, __fadd_rn), so neither --fmad nor
 * --prec-div can change a result; denormals are kept (build with --ftz=false). fmaxf/fminf
 * on non-NaN values are exact and order-independent, so parallel amax equals the CPU's loop.
 */
#ifndef RS_CUDA_QUANT_CUH
#define RS_CUDA_QUANT_CUH

#include <cfloat>
#include <cstdint>

#include "replayssm/cuda/rs_cuda.h"
#include "replayssm/quant/rs_philox.h"

/* ---- Philox4x32-10 (constants of rs_philox.c: Random123's) ---------------------------- */

#define RS_DEV_PHILOX_M0 0xD2511F53u
#define RS_DEV_PHILOX_M1 0xCD9E8D57u
#define RS_DEV_PHILOX_W0 0x9E3779B9u
#define RS_DEV_PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ uint4 rs_dev_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                               uint32_t k1)
{
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += RS_DEV_PHILOX_W0;
            k1 += RS_DEV_PHILOX_W1;
        }
        const uint32_t lo0 = RS_DEV_PHILOX_M0 * c0, hi0 = __umulhi(RS_DEV_PHILOX_M0, c0);
        const uint32_t lo1 = RS_DEV_PHILOX_M1 * c2, hi1 = __umulhi(RS_DEV_PHILOX_M1, c2);
        const uint32_t n0 = hi1 ^ c1 ^ k0;
        const uint32_t n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
    }
    return make_uint4(c0, c1, c2, c3);
}

/* The four words of elements 4*blk .. 4*blk+3 (rs_philox.h keying). */
__device__ __forceinline__ uint4 rs_dev_rand_block(uint64_t seed, uint64_t stream, uint64_t blk)
{
    return rs_dev_philox((uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)stream, (uint32_t)(stream >> 32),
                         (uint32_t)seed, (uint32_t)(seed >> 32));
}

__device__ __forceinline__ uint32_t rs_dev_rand_u32(uint64_t seed, uint64_t stream, uint64_t i)
{
    const uint4 w = rs_dev_rand_block(seed, stream, i >> 2);
    switch ((unsigned)(i & 3)) {
    case 0: return w.x;
    case 1: return w.y;
    case 2: return w.z;
    default: return w.w;
    }
}

/* rs_stream_id() of rs_philox.c (field widths from rs_philox.h). */
__host__ __device__ __forceinline__ uint64_t rs_dev_stream_id(uint32_t slot, uint32_t layer, uint32_t head,
                                                              uint64_t step)
{
    const uint64_t slot_m = (1ull << RS_STREAM_SLOT_BITS) - 1;
    const uint64_t layer_m = (1ull << RS_STREAM_LAYER_BITS) - 1;
    const uint64_t head_m = (1ull << RS_STREAM_HEAD_BITS) - 1;
    const uint64_t step_m = (1ull << RS_STREAM_STEP_BITS) - 1;
    return ((uint64_t)slot & slot_m) << (RS_STREAM_LAYER_BITS + RS_STREAM_HEAD_BITS + RS_STREAM_STEP_BITS) |
           ((uint64_t)layer & layer_m) << (RS_STREAM_HEAD_BITS + RS_STREAM_STEP_BITS) |
           ((uint64_t)head & head_m) << RS_STREAM_STEP_BITS | (step & step_m);
}

/* ---- minifloat encoder (rs_minifloat.c) --------------------------------------------------- */

struct rs_dev_elem_desc {
    int ebits, mbits, bias, emax;
    uint32_t maxmant;
    int saturate;
};

/* The k_desc table of rs_minifloat.c, indexed by rs_elem. */
__device__ __forceinline__ rs_dev_elem_desc rs_dev_desc(rs_elem t)
{
    switch (t) {
    case RS_ELEM_E4M3: return {4, 3, 7, 8, 6u, 1};
    case RS_ELEM_E2M1: return {2, 1, 1, 2, 1u, 1};
    case RS_ELEM_FP16: return {5, 10, 15, 15, 1023u, 0};
    default: return {8, 7, 127, 127, 127u, 0}; /* RS_ELEM_BF16 */
    }
}

/* encode_finite() of rs_minifloat.c: finite |x| bits ax, sign s. */
__device__ __forceinline__ uint32_t rs_dev_encode_finite(const rs_dev_elem_desc d, uint32_t s, uint32_t ax,
                                                         int sr, uint32_t r, int k)
{
    const int nbits = 1 + d.ebits + d.mbits;
    const uint32_t sign = s << (nbits - 1);
    if (ax == 0) return sign;

    const int fexp = (int)(ax >> 23);
    const uint64_t sig = fexp ? (uint64_t)((ax & 0x7FFFFFu) | 0x800000u) : (uint64_t)(ax & 0x7FFFFFu);
    const int lsb_exp = fexp ? fexp - 150 : -149;
    int e = fexp ? fexp - 127 : -127;
    const int emin = 1 - d.bias;
    if (e < emin) e = emin;
    const int qexp = e - d.mbits;
    const int shift = qexp - lsb_exp;

    uint64_t fl, up = 0;
    if (shift <= 0) {
        fl = sig << (-shift);
    } else if (shift >= 64) {
        fl = 0;
    } else {
        fl = sig >> shift;
        const uint64_t rem = sig & ((1ull << shift) - 1);
        if (!sr) {
            const uint64_t half = 1ull << (shift - 1);
            up = (rem > half || (rem == half && (fl & 1u))) ? 1u : 0u;
        } else {
            const uint64_t dk = shift >= k ? rem >> (shift - k) : rem << (k - shift);
            const uint64_t R = k == 32 ? (uint64_t)r : (uint64_t)(r >> (32 - k));
            up = (dk + R >= (1ull << k)) ? 1u : 0u;
        }
    }
    uint64_t m = fl + up;
    if (m == 0) return sign;

    const uint64_t hidden = 1ull << d.mbits;
    uint32_t expfield, mant;
    if (m >= hidden) {
        if (m >= (hidden << 1)) {
            m >>= 1;
            e += 1;
        }
        if (e > d.emax || (e == d.emax && (uint32_t)(m - hidden) > d.maxmant)) {
            if (d.saturate) return sign | ((uint32_t)(d.emax + d.bias) << d.mbits) | d.maxmant;
            return sign | (((1u << d.ebits) - 1u) << d.mbits);
        }
        expfield = (uint32_t)(e + d.bias);
        mant = (uint32_t)(m - hidden);
    } else {
        expfield = 0;
        mant = (uint32_t)m;
    }
    return sign | (expfield << d.mbits) | mant;
}

/* rs_elem_encode(): returns RS_CUDA_CODE_INVALID where the CPU returns RS_E_NONFINITE. */
__device__ __forceinline__ uint32_t rs_dev_elem_encode(rs_elem t, float x, int sr, uint32_t r, int k)
{
    const uint32_t u = __float_as_uint(x);
    const uint32_t s = u >> 31;
    const uint32_t ax = u & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) {
        const int is_nan = ax > 0x7F800000u;
        switch (t) {
        case RS_ELEM_E4M3: return is_nan ? (s << 7) | 0x7Fu : (s << 7) | 0x7Eu;
        case RS_ELEM_E2M1: return RS_CUDA_CODE_INVALID;
        case RS_ELEM_FP16: return is_nan ? (s << 15) | 0x7E00u | ((ax >> 13) & 0x3FFu) : (s << 15) | 0x7C00u;
        default: return is_nan ? (u >> 16) | 0x0040u : (u >> 16);
        }
    }
    return rs_dev_encode_finite(rs_dev_desc(t), s, ax, sr, r, k);
}

/* Typed shorthands (finite inputs where the type needs it). */
__device__ __forceinline__ uint8_t rs_dev_e4m3_rtn(float x) { return (uint8_t)rs_dev_elem_encode(RS_ELEM_E4M3, x, 0, 0, 32); }

__device__ __forceinline__ uint16_t rs_dev_bf16_rtn(float x) { return (uint16_t)rs_dev_elem_encode(RS_ELEM_BF16, x, 0, 0, 32); }

/* ---- exact decoders (rs_elem_decode / rs_qtensor.c e4m3_value) ---------------------------- */

__device__ __forceinline__ float rs_dev_e4m3_value(uint32_t c)
{
    c &= 0xFFu;
    const uint32_t s = c >> 7, e = (c >> 3) & 15u, m = c & 7u;
    float v;
    if (e == 0) v = __fmul_rn((float)m, 1.953125e-3f); /* m * 2^-9, exact */
    else if (e == 15 && m == 7) v = __int_as_float(0x7FC00000);
    else v = __uint_as_float(((e + 120u) << 23) | (m << 20));
    return s ? -v : v;
}

__device__ __forceinline__ float rs_dev_e2m1_value(uint32_t c)
{
    c &= 0xFu;
    const uint32_t s = c >> 3, e = (c >> 1) & 3u, m = c & 1u;
    const float v = e == 0 ? 0.5f * (float)m : __uint_as_float(((e + 127u - 1u) << 23) | (m << 22));
    return s ? -v : v;
}

__device__ __forceinline__ float rs_dev_fp16_value(uint32_t c)
{
    c &= 0xFFFFu;
    const uint32_t s = c >> 15, e = (c >> 10) & 0x1Fu, m = c & 0x3FFu;
    if (e == 0) {
        const float v = __fmul_rn((float)m, 5.9604644775390625e-8f); /* m * 2^-24, exact */
        return s ? -v : v;
    }
    if (e == 0x1F) return __uint_as_float((s << 31) | 0x7F800000u | (m << 13));
    return __uint_as_float((s << 31) | ((e + 112u) << 23) | (m << 13));
}

__device__ __forceinline__ float rs_dev_bf16_value(uint32_t c) { return __uint_as_float((c & 0xFFFFu) << 16); }

__device__ __forceinline__ float rs_dev_elem_decode(rs_elem t, uint32_t c)
{
    switch (t) {
    case RS_ELEM_E4M3: return rs_dev_e4m3_value(c);
    case RS_ELEM_E2M1: return rs_dev_e2m1_value(c);
    case RS_ELEM_FP16: return rs_dev_fp16_value(c);
    default: return rs_dev_bf16_value(c);
    }
}

/* ---- block-scale formulas (rs_qtensor.h) --------------------------------------------------- */

/* TE compute_scale_from_amax(amax, 448, pow2, eps 0, FLT_MAX), amax finite. */
__device__ __forceinline__ float rs_dev_fp8_scale(float amax, int pow2)
{
    if (amax == 0.0f) return 1.0f;
    float scale = __fdiv_rn(RS_E4M3_MAX, amax);
    if (isinf(scale)) scale = FLT_MAX;
    if (pow2) scale = __uint_as_float(__float_as_uint(scale) & 0xFF800000u);
    return scale;
}

/* NVFP4 S_enc from the tensor amax. */
__device__ __forceinline__ float rs_dev_nvfp4_senc(float amax)
{
    float se = amax == 0.0f ? 1.0f : fminf(__fdiv_rn(RS_E4M3_MAX * RS_E2M1_MAX, amax), FLT_MAX);
    if (se == 0.0f) se = 1.0f;
    return se;
}

/* NVFP4 block scale code from the block amax (RTN, satfinite; floor option). */
__device__ __forceinline__ uint8_t rs_dev_nvfp4_block_scale(float bamax, float s_enc, int floor_opt)
{
    float sbf = fminf(__fmul_rn(bamax, __fmul_rn(s_enc, 1.0f / 6.0f)), FLT_MAX);
    if (floor_opt) sbf = fmaxf(sbf, 0.015625f); /* 2^-6 */
    return rs_dev_e4m3_rtn(sbf);
}

/* NVFP4 element multiplier from the block scale code and S_dec. */
__device__ __forceinline__ float rs_dev_nvfp4_mult(uint8_t sb, float s_dec)
{
    return fminf(__fdiv_rn(1.0f, __fmul_rn(rs_dev_e4m3_value(sb), s_dec)), FLT_MAX);
}

/* E2M1 code of one element given its multiplier (clamp first, as rs_qtensor.c does). */
__device__ __forceinline__ uint8_t rs_dev_nvfp4_elem(float x, float mult, int sr, uint32_t r, int k)
{
    const float v = fminf(fmaxf(__fmul_rn(x, mult), -RS_E2M1_MAX), RS_E2M1_MAX);
    return (uint8_t)rs_dev_elem_encode(RS_ELEM_E2M1, v, sr, r, k);
}

/* Dequantized NVFP4 element: (e2m1 * s_b) * S_dec. */
__device__ __forceinline__ float rs_dev_nvfp4_value(uint32_t q, uint8_t sb, float s_dec)
{
    return __fmul_rn(__fmul_rn(rs_dev_e2m1_value(q), rs_dev_e4m3_value(sb)), s_dec);
}

#endif /* RS_CUDA_QUANT_CUH */
