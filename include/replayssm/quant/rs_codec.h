/* rs_codec.h — the bit-level core of quant/, compiled by both the C compiler and nvcc:
 * Philox4x32-10 and the element keying of rs_philox.h, the integer minifloat encoder and the
 * exact decoders of rs_minifloat.h (E4M3, E2M1, FP16, BF16; RTN and SR), and the FP8-block /
 * NVFP4 scale formulas of rs_qtensor.h. quant/rs_minifloat.c and quant/rs_philox.c are thin
 * checked wrappers around these functions; the CUDA quantizers and decode kernels call the
 * same functions on the device. One source, so the CPU and the GPU take the same decisions.
 *
 * Everything here is header-only RS_HD_INLINE (rs_hostdev.h): the callers' constant element
 * types and rounding modes are folded in, so the typed entry points cost what hand-written
 * per-type code would. Preconditions are the callers' (valid rs_elem, k in 1..32 under SR);
 * nothing here reports errors, the wrappers in rs_minifloat.c do.
 *
 * Bit-identity rules (CPU = GPU):
 *  - encoding is integer arithmetic on the float32 bit pattern (no float operation at all);
 *  - the few float operations (decoding subnormals, scale formulas) go through rs_codec_mul /
 *    rs_codec_div: a plain IEEE multiply / divide in C (the build has -ffp-contract=off, no
 *    fast-math), __fmul_rn / __fdiv_rn on the device, so neither --fmad nor --prec-div can
 *    change a result; denormals must be kept (nvcc --ftz=false);
 *  - fminf / fmaxf on non-NaN values are exact and order-independent.
 */
#ifndef RS_CODEC_H
#define RS_CODEC_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "replayssm/quant/rs_hostdev.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"

/* ---- bit casts and explicitly rounded float operations -------------------------------------- */

RS_HD_INLINE uint32_t rs_codec_f2u(float x)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

RS_HD_INLINE float rs_codec_u2f(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

RS_HD_INLINE float rs_codec_mul(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

RS_HD_INLINE float rs_codec_sub(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

RS_HD_INLINE float rs_codec_div(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

/* ---- Philox4x32-10 (Salmon et al., SC'11; Random123 reference constants) -------------------- */

#define RS_PHILOX_M0 0xD2511F53u
#define RS_PHILOX_M1 0xCD9E8D57u
#define RS_PHILOX_W0 0x9E3779B9u /* golden ratio */
#define RS_PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

/* The four output words of one block. */
typedef struct rs_philox_words {
    uint32_t x, y, z, w;
} rs_philox_words;

/* hi:lo = a * b (32 x 32 -> 64 bits): one mul.wide on the device, one 64-bit multiply on x86. */
RS_HD_INLINE void rs_codec_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
#ifdef __CUDA_ARCH__
    *hi = __umulhi(a, b);
    *lo = a * b;
#else
    const uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
#endif
}

/* One Philox4x32 block of 10 rounds: counter (c0..c3), key (k0, k1); the key is bumped by the
 * Weyl constants between rounds. */
RS_HD_INLINE rs_philox_words rs_codec_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                             uint32_t k1)
{
    RS_UNROLL
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += RS_PHILOX_W0;
            k1 += RS_PHILOX_W1;
        }
        uint32_t hi0, lo0, hi1, lo1;
        rs_codec_mulhilo(RS_PHILOX_M0, c0, &hi0, &lo0);
        rs_codec_mulhilo(RS_PHILOX_M1, c2, &hi1, &lo1);
        const uint32_t n0 = hi1 ^ c1 ^ k0;
        const uint32_t n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
    }
    rs_philox_words out;
    out.x = c0;
    out.y = c1;
    out.z = c2;
    out.w = c3;
    return out;
}

/* The words of elements 4 blk .. 4 blk + 3 of (seed, stream): rs_philox.h's keying. */
RS_HD_INLINE rs_philox_words rs_codec_rand_block(uint64_t seed, uint64_t stream, uint64_t blk)
{
    return rs_codec_philox((uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)stream, (uint32_t)(stream >> 32),
                           (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* Word `lane` (0..3) of a block, by selects rather than an array index (a dynamically indexed
 * array would live in local memory on the device). */
RS_HD_INLINE uint32_t rs_codec_word(rs_philox_words b, unsigned lane)
{
    return lane == 0 ? b.x : lane == 1 ? b.y : lane == 2 ? b.z : b.w;
}

/* rs_rand_u32(): the random word of element i. */
RS_HD_INLINE uint32_t rs_codec_rand_u32(uint64_t seed, uint64_t stream, uint64_t i)
{
    return rs_codec_word(rs_codec_rand_block(seed, stream, i >> 2), (unsigned)(i & 3));
}

/* rs_stream_id(): (slot, layer, head, step) packed with the field widths of rs_philox.h. */
RS_HD_INLINE uint64_t rs_codec_stream_id(uint32_t slot, uint32_t layer, uint32_t head, uint64_t step)
{
    const uint64_t slot_m = (1ull << RS_STREAM_SLOT_BITS) - 1;
    const uint64_t layer_m = (1ull << RS_STREAM_LAYER_BITS) - 1;
    const uint64_t head_m = (1ull << RS_STREAM_HEAD_BITS) - 1;
    const uint64_t step_m = (1ull << RS_STREAM_STEP_BITS) - 1;
    return ((uint64_t)slot & slot_m) << (RS_STREAM_LAYER_BITS + RS_STREAM_HEAD_BITS + RS_STREAM_STEP_BITS) |
           ((uint64_t)layer & layer_m) << (RS_STREAM_HEAD_BITS + RS_STREAM_STEP_BITS) |
           ((uint64_t)head & head_m) << RS_STREAM_STEP_BITS | (step & step_m);
}

/* ---- the integer minifloat encoder ---------------------------------------------------------
 * The float32 input is split into sign, integer significand `sig` and the exponent of its last
 * bit; the target quantum of the binade that holds |x| (clamped at the target's smallest normal
 * exponent, which gives subnormals) fixes how many low bits are dropped; RTN or SR decides from
 * the dropped bits alone (SR: up iff floor(d 2^k) + (r >> (32 - k)) >= 2^k, d = dropped / quantum,
 * rs_minifloat.h); the kept bits and the binade give the code. */

typedef struct rs_codec_desc {
    int ebits;        /* exponent field width */
    int mbits;        /* explicit mantissa bits */
    int bias;
    int emax;         /* largest unbiased exponent of a finite value */
    uint32_t maxmant; /* mantissa field of the largest finite value in binade emax */
    int saturate;     /* 1: finite overflow -> max (satfinite); 0: IEEE overflow -> Inf */
} rs_codec_desc;

RS_HD_INLINE rs_codec_desc rs_codec_desc_make(int ebits, int mbits, int bias, int emax, uint32_t maxmant, int sat)
{
    rs_codec_desc d;
    d.ebits = ebits;
    d.mbits = mbits;
    d.bias = bias;
    d.emax = emax;
    d.maxmant = maxmant;
    d.saturate = sat;
    return d;
}

/* The element types' parameters (t must be valid). */
RS_HD_INLINE rs_codec_desc rs_codec_desc_of(rs_elem t)
{
    switch (t) {
    case RS_ELEM_E4M3: return rs_codec_desc_make(4, 3, 7, 8, 6u, 1);      /* 0x7E = 448; 0x7F NaN */
    case RS_ELEM_E2M1: return rs_codec_desc_make(2, 1, 1, 2, 1u, 1);      /* 0x7 = 6 */
    case RS_ELEM_FP16: return rs_codec_desc_make(5, 10, 15, 15, 1023u, 0); /* 65504 */
    case RS_ELEM_E5M2: return rs_codec_desc_make(5, 2, 15, 15, 3u, 1);     /* 0x7B = 57344, satfinite */
    default: return rs_codec_desc_make(8, 7, 127, 127, 127u, 0);          /* BF16: (2 - 2^-7) 2^127 */
    }
}

/* Code of a finite |x| (float32 bits ax, sign removed) with sign bit s. sr: 0 RTN, 1 SR with
 * word r and k bits (1..32). */
RS_HD_INLINE uint32_t rs_codec_encode_finite(rs_codec_desc d, uint32_t s, uint32_t ax, int sr, uint32_t r, int k)
{
    const int nbits = 1 + d.ebits + d.mbits;
    const uint32_t sign = s << (nbits - 1);
    if (ax == 0) return sign; /* signed zero */

    const int fexp = (int)(ax >> 23);
    const uint64_t sig = fexp ? (uint64_t)((ax & 0x7FFFFFu) | 0x800000u) : (uint64_t)(ax & 0x7FFFFFu);
    const int lsb_exp = fexp ? fexp - 150 : -149; /* exponent of sig's last bit */
    /* unbiased exponent of |x| (exact for normals; for float32 subnormals it only needs to be
     * below every target's emin, which -127 is) */
    int e = fexp ? fexp - 127 : -127;
    const int emin = 1 - d.bias;
    if (e < emin) e = emin;
    const int qexp = e - d.mbits;     /* exponent of the target quantum in this binade */
    const int shift = qexp - lsb_exp; /* dropped low bits of sig */

    uint64_t fl, up = 0;
    if (shift <= 0) {
        /* every bit of x is kept: exact (only possible when x's precision fits) */
        fl = sig << (-shift);
    } else if (shift >= 64) {
        /* |x| < 2^-40 quanta: below half a quantum and below 2^-32 of one (k <= 32) */
        fl = 0;
    } else {
        fl = sig >> shift;
        const uint64_t rem = sig & ((1ull << shift) - 1);
        if (!sr) {
            const uint64_t half = 1ull << (shift - 1);
            up = (rem > half || (rem == half && (fl & 1u))) ? 1u : 0u;
        } else {
            /* floor(d * 2^k) + R >= 2^k, with d = rem / 2^shift */
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
        if (m >= (hidden << 1)) { /* carry into the next binade (fl <= 2*hidden-1 here) */
            m >>= 1;
            e += 1;
        }
        if (e > d.emax || (e == d.emax && (uint32_t)(m - hidden) > d.maxmant)) {
            if (d.saturate) return sign | ((uint32_t)(d.emax + d.bias) << d.mbits) | d.maxmant;
            return sign | (((1u << d.ebits) - 1u) << d.mbits); /* IEEE infinity */
        }
        expfield = (uint32_t)(e + d.bias);
        mant = (uint32_t)(m - hidden);
    } else {
        /* subnormal: only reachable with e == emin */
        expfield = 0;
        mant = (uint32_t)m;
    }
    return sign | (expfield << d.mbits) | mant;
}

/* What rs_codec_encode returns where rs_elem_encode fails (E2M1 has no NaN/Inf code). */
#define RS_CODEC_INVALID 0xFFFFFFFFu

/* Code of any float32 x as type t (rs_minifloat.h special values):
 *   E4M3: NaN -> S.1111.111 (sign kept), +-Inf -> +-448 (satfinite);  E2M1: RS_CODEC_INVALID;
 *   E5M2: NaN -> S.11111.11 (sign kept), +-Inf -> +-57344 (satfinite, as E4M3 and cvt.satfinite:
 *         finite values above the largest finite one saturate too, where IEEE rounding gives Inf);
 *   FP16: quiet NaN with the sign and top payload bits, Inf -> Inf;   BF16: NaN quietened. */
RS_HD_INLINE uint32_t rs_codec_encode(rs_elem t, float x, int sr, uint32_t r, int k)
{
    const uint32_t u = rs_codec_f2u(x);
    const uint32_t s = u >> 31;
    const uint32_t ax = u & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) { /* Inf or NaN */
        const int is_nan = ax > 0x7F800000u;
        switch (t) {
        case RS_ELEM_E4M3: return is_nan ? (s << 7) | 0x7Fu : (s << 7) | 0x7Eu;
        case RS_ELEM_E2M1: return RS_CODEC_INVALID;
        case RS_ELEM_E5M2: return is_nan ? (s << 7) | 0x7Fu : (s << 7) | 0x7Bu;
        case RS_ELEM_FP16: return is_nan ? (s << 15) | 0x7E00u | ((ax >> 13) & 0x3FFu) : (s << 15) | 0x7C00u;
        default: return is_nan ? (u >> 16) | 0x0040u : (u >> 16);
        }
    }
    return rs_codec_encode_finite(rs_codec_desc_of(t), s, ax, sr, r, k);
}

/* ---- FP16 / BF16 bit paths ---------------------------------------------------------------------
 * The same decisions as rs_codec_encode, by a branch-light route for the common case: in the FP16
 * normal range exactly 13 low bits are dropped (BF16: 16, subnormals included), and for k >= 13
 * (16) the SR rule floor(d 2^k) + (r >> (32-k)) >= 2^k is equivalent to adding r >> 19 (r >> 16)
 * to the float32 bits and truncating (rem 2^(k-13) + R >= 2^k <=> rem + (r >> 19) >= 2^13, rem
 * being an integer); the carry runs into the exponent, which also gives overflow to Inf.
 * tests/test_minifloat_fast.c checks them against the generic path on every input class. */
#define RS_CODEC_FP16_FAST_LO 0x38800000u /* 2^-14: smallest normal FP16 */
#define RS_CODEC_FP16_FAST_HI 0x477FE000u /* 65504: largest finite FP16 */
#define RS_CODEC_BF16_FAST_HI 0x7F7F0000u /* largest finite BF16 */

RS_HD_INLINE uint32_t rs_codec_fp16_rtn(float x)
{
    const uint32_t b = rs_codec_f2u(x), u = b & 0x7FFFFFFFu;
    if (u >= RS_CODEC_FP16_FAST_LO && u <= RS_CODEC_FP16_FAST_HI) {
        const uint32_t v = u + 0x0FFFu + ((u >> 13) & 1u);
        return ((b >> 16) & 0x8000u) | ((v >> 13) - (112u << 10));
    }
    if (u < 0x7F800000u) return rs_codec_encode_finite(rs_codec_desc_of(RS_ELEM_FP16), b >> 31, u, 0, 0, 32);
    return rs_codec_encode(RS_ELEM_FP16, x, 0, 0, 32);
}

/* k in 1..32 */
RS_HD_INLINE uint32_t rs_codec_fp16_sr(float x, uint32_t r, int k)
{
    const uint32_t b = rs_codec_f2u(x), u = b & 0x7FFFFFFFu;
    if (k >= 13 && u >= RS_CODEC_FP16_FAST_LO && u <= RS_CODEC_FP16_FAST_HI) {
        const uint32_t v = u + (r >> 19);
        return ((b >> 16) & 0x8000u) | ((v >> 13) - (112u << 10));
    }
    if (u < 0x7F800000u) return rs_codec_encode_finite(rs_codec_desc_of(RS_ELEM_FP16), b >> 31, u, 1, r, k);
    return rs_codec_encode(RS_ELEM_FP16, x, 1, r, k);
}

RS_HD_INLINE uint32_t rs_codec_bf16_rtn(float x)
{
    const uint32_t b = rs_codec_f2u(x), u = b & 0x7FFFFFFFu;
    if (u <= RS_CODEC_BF16_FAST_HI) {
        const uint32_t v = u + 0x7FFFu + ((u >> 16) & 1u);
        return ((b >> 16) & 0x8000u) | (v >> 16);
    }
    return rs_codec_encode(RS_ELEM_BF16, x, 0, 0, 32);
}

/* k in 1..32 */
RS_HD_INLINE uint32_t rs_codec_bf16_sr(float x, uint32_t r, int k)
{
    const uint32_t b = rs_codec_f2u(x), u = b & 0x7FFFFFFFu;
    if (k >= 16 && u <= RS_CODEC_BF16_FAST_HI) {
        const uint32_t v = u + (r >> 16);
        return ((b >> 16) & 0x8000u) | (v >> 16);
    }
    return rs_codec_encode(RS_ELEM_BF16, x, 1, r, k);
}

/* ---- TF32 split (the 3xTF32 products of the tensor-core verification, kernels/rs_cuda_verify_tc.cuh)
 * hi = x rounded to TF32 (8-bit exponent, 10 explicit mantissa bits; subnormals keep the float32 field's top
 * 10 bits) to nearest, ties away from zero, by integer ops alone: the same bits as PTX cvt.rna.tf32.f32 for
 * every finite x and for +-Inf, where cvt.rna costs four instructions on sm_90 (FSETP, IADD, SEL, LOP3) and
 * this two. A finite x whose rounding carries out of the largest binade gives +-Inf, as cvt.rna. For a NaN hi
 * may be a NaN or +-0 (the add can carry into the sign), but lo = x - hi is then NaN, so the NaN still
 * reaches every product. lo = x - hi is exact (|lo| <= half a TF32 quantum of x), returned unrounded: a
 * tensor core reads its top 19 bits (truncation), an error <= 2^-21 |x| for |x| >= 2^-115 (< 2^-136 below).
 * tests/test_codec_tf32.c checks all of this on every float32. */
RS_HD_INLINE void rs_codec_tf32_split(float x, uint32_t *hi, uint32_t *lo)
{
    *hi = (rs_codec_f2u(x) + 0x1000u) & 0xFFFFE000u;
    *lo = rs_codec_f2u(rs_codec_sub(x, rs_codec_u2f(*hi)));
}

/* ---- exact decoders ------------------------------------------------------------------------------
 * Normals by building the float32 bit pattern, subnormals as the integer mantissa times an exact
 * power of two: exact, no libm. */

RS_HD_INLINE float rs_codec_e4m3_value(uint32_t code)
{
    const uint32_t c = code & 0xFFu, s = c >> 7, e = (c >> 3) & 0xFu, m = c & 7u;
    if (e == 15 && m == 7) return rs_codec_u2f((s << 31) | 0x7FC00000u); /* NaN, sign kept */
    if (e == 0) {
        const float v = rs_codec_mul((float)m, 0x1.0p-9f);
        return s ? -v : v;
    }
    return rs_codec_u2f((s << 31) | ((e + 120u) << 23) | (m << 20)); /* bias 7 -> 127 */
}

RS_HD_INLINE float rs_codec_e2m1_value(uint32_t code)
{
    const uint32_t c = code & 0xFu, s = c >> 3, e = (c >> 1) & 3u, m = c & 1u;
    if (e == 0) {
        const float v = rs_codec_mul(0.5f, (float)m);
        return s ? -v : v;
    }
    return rs_codec_u2f((s << 31) | ((e + 126u) << 23) | (m << 22)); /* bias 1 -> 127 */
}

RS_HD_INLINE float rs_codec_fp16_value(uint32_t code)
{
    const uint32_t c = code & 0xFFFFu, s = c >> 15, e = (c >> 10) & 0x1Fu, m = c & 0x3FFu;
    /* normals first, re-biased in one add on the exponent+mantissa field (15 -> 127: 112 << 10) */
    if (e - 1u < 30u) return rs_codec_u2f(((c & 0x8000u) << 16) | (((c & 0x7FFFu) + (112u << 10)) << 13));
    if (e == 0x1F) return rs_codec_u2f((s << 31) | 0x7F800000u | (m << 13));          /* Inf / NaN, payload kept */
    const float v = rs_codec_mul((float)m, 0x1.0p-24f);
    return s ? -v : v;
}

RS_HD_INLINE float rs_codec_bf16_value(uint32_t code) { return rs_codec_u2f((code & 0xFFFFu) << 16); }

/* E5M2 is binary16's top byte */
RS_HD_INLINE float rs_codec_e5m2_value(uint32_t code) { return rs_codec_fp16_value((code & 0xFFu) << 8); }

/* t must be valid */
RS_HD_INLINE float rs_codec_decode(rs_elem t, uint32_t code)
{
    switch (t) {
    case RS_ELEM_E4M3: return rs_codec_e4m3_value(code);
    case RS_ELEM_E2M1: return rs_codec_e2m1_value(code);
    case RS_ELEM_FP16: return rs_codec_fp16_value(code);
    case RS_ELEM_E5M2: return rs_codec_e5m2_value(code);
    default: return rs_codec_bf16_value(code);
    }
}

/* ---- block-scale formulas (rs_qtensor.h; TransformerEngine's) --------------------------------- */

/* FP8 block scale: compute_scale_from_amax(amax, fmax, pow2, eps 0, FLT_MAX) for a finite amax, fmax
 * the element type's largest finite value (448 for E4M3, 57344 for E5M2). */
RS_HD_INLINE float rs_codec_fp8_scale_of(float amax, float fmax, int pow2)
{
    if (amax == 0.0f) return 1.0f;
    float scale = rs_codec_div(fmax, amax); /* IEEE division, correctly rounded */
    if ((rs_codec_f2u(scale) & 0x7FFFFFFFu) == 0x7F800000u) scale = FLT_MAX;
    if (pow2) scale = rs_codec_u2f(rs_codec_f2u(scale) & 0xFF800000u); /* round down to a power of two */
    return scale;
}

/* the E4M3 block scale (fp8) */
RS_HD_INLINE float rs_codec_fp8_scale(float amax, int pow2) { return rs_codec_fp8_scale_of(amax, RS_E4M3_MAX, pow2); }

/* NVFP4 tensor encode scale S_enc from the tensor amax (compute_global_encode_scaling_factor_FP4). */
RS_HD_INLINE float rs_codec_nvfp4_senc(float amax)
{
    float se = amax == 0.0f ? 1.0f : fminf(rs_codec_div(RS_E4M3_MAX * RS_E2M1_MAX, amax), FLT_MAX);
    if (se == 0.0f) se = 1.0f; /* unreachable for finite amax; kept to mirror TE */
    return se;
}

/* NVFP4 block scale code from the block amax: block_amax * (S_enc * (1/6)) in TE's association
 * order, RTN to E4M3 (satfinite, never NaN for a finite non-negative input); floor_opt: torchao's
 * floor at the smallest E4M3 normal 2^-6. */
RS_HD_INLINE uint32_t rs_codec_nvfp4_block_scale(float bamax, float s_enc, int floor_opt)
{
    float sbf = fminf(rs_codec_mul(bamax, rs_codec_mul(s_enc, 1.0f / 6.0f)), FLT_MAX);
    if (floor_opt) sbf = fmaxf(sbf, 0x1p-6f);
    const uint32_t u = rs_codec_f2u(sbf);
    return rs_codec_encode_finite(rs_codec_desc_of(RS_ELEM_E4M3), u >> 31, u & 0x7FFFFFFFu, 0, 0, 32);
}

/* NVFP4 element multiplier 1 / (s_b * S_dec), clamped (a zero block scale gives FLT_MAX). */
RS_HD_INLINE float rs_codec_nvfp4_mult(uint32_t sb, float s_dec)
{
    return fminf(rs_codec_div(1.0f, rs_codec_mul(rs_codec_e4m3_value(sb), s_dec)), FLT_MAX);
}

/* E2M1 code of one element given its multiplier: x * mult may overflow to Inf in a block whose
 * scale is 0 (mult = FLT_MAX), so clamp first, which is what cvt.satfinite does with it. */
RS_HD_INLINE uint32_t rs_codec_nvfp4_elem(float x, float mult, int sr, uint32_t r, int k)
{
    const float v = fminf(fmaxf(rs_codec_mul(x, mult), -RS_E2M1_MAX), RS_E2M1_MAX);
    const uint32_t u = rs_codec_f2u(v);
    return rs_codec_encode_finite(rs_codec_desc_of(RS_ELEM_E2M1), u >> 31, u & 0x7FFFFFFFu, sr, r, k);
}

/* ---- OCP Microscaling (MX v1.0): a shared E8M0 scale X = 2^e per 32 elements -------------------
 * e = floor(log2(block amax)) - emax of the element type (E4M3: 8, E2M1: 2), clamped below at
 * -127 (E8M0's smallest value; an all-zero block, or one whose amax is below 2^(emax - 127), gets
 * 2^-127); the largest finite float32 amax gives e <= 127 - 2, so no block needs E8M0's NaN
 * (0xFF), which only non-finite input would take and the quantizers refuse. Elements: V / X
 * (exact: a power-of-two scaling of a float32 that stays normal or exact), saturated to the element
 * type's largest value as the spec's conversion does, then RTN or SR. Decoded value: element * X. */

/* E8M0 code (e + 127) of the MX scale of a block with finite amax; emax the element's (8 or 2) */
RS_HD_INLINE uint32_t rs_codec_mx_scale_code(float amax, int emax)
{
    const uint32_t ua = rs_codec_f2u(amax) & 0x7FFFFFFFu;
    const int fe = (int)(ua >> 23); /* biased exponent; 0 for zero and float32 subnormals (< 2^-126) */
    const int e = (fe ? fe - 127 : -127) - emax;
    return (uint32_t)((e < -127 ? -127 : e) + 127);
}

/* 2^(code - 127) as float32 (code 0 .. 254; 2^-127 is a float32 subnormal); NaN for 0xFF */
RS_HD_INLINE float rs_codec_e8m0_value(uint32_t code)
{
    const uint32_t c = code & 0xFFu;
    if (c == 0xFFu) return rs_codec_u2f(0x7FC00000u);
    if (c == 0) return rs_codec_u2f(0x00400000u); /* 2^-127 */
    return rs_codec_u2f(c << 23);
}

/* 2^(127 - code): the multiplier that divides by the scale exactly (code 0 .. 254: 2^127 .. 2^-127) */
RS_HD_INLINE float rs_codec_e8m0_inverse(uint32_t code) { return rs_codec_e8m0_value(254u - (code & 0xFFu)); }

/* Dequantized NVFP4 element: (e2m1 * s_b) * S_dec. */
RS_HD_INLINE float rs_codec_nvfp4_value(uint32_t q, uint32_t sb, float s_dec)
{
    return rs_codec_mul(rs_codec_mul(rs_codec_e2m1_value(q), rs_codec_e4m3_value(sb)), s_dec);
}

#endif /* RS_CODEC_H */
