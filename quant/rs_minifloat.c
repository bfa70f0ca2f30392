/* rs_minifloat.c — scalar codecs for E4M3, E2M1, FP16 and BF16 with RTN and SR.
 *
 * One integer algorithm serves all four types (and is what the CUDA twin mirrors):
 * the float32 input is split into sign, integer significand `sig` and the exponent of its
 * last bit; the target quantum of the binade that holds |x| (clamped at the target's smallest
 * normal exponent, which gives subnormals) fixes how many low bits are dropped; RTN or SR
 * decides from the dropped bits alone; the kept bits and the binade give the code. No
 * floating-point arithmetic is involved in encoding, so the result is exact by construction.
 */
#include "replayssm/quant/rs_minifloat.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int ebits;     /* exponent field width */
    int mbits;     /* explicit mantissa bits */
    int bias;
    int emax;      /* largest unbiased exponent of a finite value */
    uint32_t maxmant; /* mantissa field of the largest finite value in binade emax */
    int saturate;  /* 1: finite overflow -> max (satfinite); 0: IEEE overflow -> Inf */
    const char *name;
} elem_desc;

static const elem_desc k_desc[4] = {
    /* E4M3fn: 0x7E = 1.75 * 2^8 = 448; 0x7F is NaN */
    [RS_ELEM_E4M3] = {4, 3, 7, 8, 6, 1, "e4m3"},
    /* E2M1: 0x7 = 1.5 * 2^2 = 6 */
    [RS_ELEM_E2M1] = {2, 1, 1, 2, 1, 1, "e2m1"},
    /* binary16: 65504 = (2 - 2^-10) * 2^15 */
    [RS_ELEM_FP16] = {5, 10, 15, 15, 1023, 0, "fp16"},
    /* bfloat16: (2 - 2^-7) * 2^127 */
    [RS_ELEM_BF16] = {8, 7, 127, 127, 127, 0, "bf16"},
};

static inline int valid_elem(rs_elem t) { return (unsigned)t <= (unsigned)RS_ELEM_BF16; }

int rs_elem_bits(rs_elem t)
{
    if (!valid_elem(t)) return 0;
    return 1 + k_desc[t].ebits + k_desc[t].mbits;
}

const char *rs_elem_name(rs_elem t) { return valid_elem(t) ? k_desc[t].name : "?"; }

static inline uint32_t f2u(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float u2f(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Encode a finite float32 |x| (given by its bits, sign removed) with sign bit s.
 * mode/r/k as in the header. Returns the code. */
#if defined(__GNUC__)
#define RS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define RS_ALWAYS_INLINE inline
#endif

static RS_ALWAYS_INLINE uint32_t encode_finite(const elem_desc *d, uint32_t s, uint32_t ax, rs_rounding mode,
                              uint32_t r, int k)
{
    const int nbits = 1 + d->ebits + d->mbits;
    const uint32_t sign = s << (nbits - 1);
    if (ax == 0) return sign; /* signed zero */

    const int fexp = (int)(ax >> 23);
    const uint64_t sig = fexp ? (uint64_t)((ax & 0x7FFFFFu) | 0x800000u) : (uint64_t)(ax & 0x7FFFFFu);
    const int lsb_exp = fexp ? fexp - 150 : -149; /* exponent of sig's last bit */
    /* unbiased exponent of |x| (exact for normals; for float32 subnormals it only needs to
     * be below every target's emin, which -127 is) */
    int e = fexp ? fexp - 127 : -127;
    const int emin = 1 - d->bias;
    if (e < emin) e = emin;
    const int qexp = e - d->mbits; /* exponent of the target quantum in this binade */
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
        if (mode == RS_ROUND_RTN) {
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

    const uint64_t hidden = 1ull << d->mbits;
    uint32_t expfield, mant;
    if (m >= hidden) {
        if (m >= (hidden << 1)) { /* carry into the next binade (fl <= 2*hidden-1 here) */
            m >>= 1;
            e += 1;
        }
        if (e > d->emax || (e == d->emax && (uint32_t)(m - hidden) > d->maxmant)) {
            if (d->saturate) return sign | ((uint32_t)(d->emax + d->bias) << d->mbits) | d->maxmant;
            return sign | (((1u << d->ebits) - 1u) << d->mbits); /* IEEE infinity */
        }
        expfield = (uint32_t)(e + d->bias);
        mant = (uint32_t)(m - hidden);
    } else {
        /* subnormal: only reachable with e == emin */
        expfield = 0;
        mant = (uint32_t)m;
    }
    return sign | (expfield << d->mbits) | mant;
}

rs_status rs_elem_encode(rs_elem t, float x, rs_rounding mode, uint32_t r, int k, uint32_t *code)
{
    if (!valid_elem(t) || !code) return rs_error_set(RS_E_INVAL, "rs_elem_encode: bad element type or NULL code");
    if (mode == RS_ROUND_SR && (k < 1 || k > 32))
        return rs_error_set(RS_E_INVAL, "rs_elem_encode: SR random bits k=%d outside 1..32", k);
    if (mode != RS_ROUND_RTN && mode != RS_ROUND_SR)
        return rs_error_set(RS_E_INVAL, "rs_elem_encode: unknown rounding mode %d", (int)mode);
    const elem_desc *d = &k_desc[t];
    const uint32_t u = f2u(x);
    const uint32_t s = u >> 31;
    const uint32_t ax = u & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) { /* Inf or NaN */
        const int is_nan = ax > 0x7F800000u;
        switch (t) {
        case RS_ELEM_E4M3:
            /* NaN keeps its sign (S.1111.111); Inf saturates like PTX satfinite. */
            *code = is_nan ? (s << 7) | 0x7Fu : (s << 7) | 0x7Eu;
            return RS_OK;
        case RS_ELEM_E2M1:
            return rs_error_set(RS_E_NONFINITE, "E2M1 has no NaN/Inf code: cannot encode %s",
                                is_nan ? "NaN" : (s ? "-Inf" : "+Inf"));
        case RS_ELEM_FP16:
            /* quiet NaN keeping the sign and the top payload bits; Inf stays Inf */
            *code = is_nan ? (s << 15) | 0x7E00u | ((ax >> 13) & 0x3FFu) : (s << 15) | 0x7C00u;
            return RS_OK;
        case RS_ELEM_BF16:
            *code = is_nan ? (u >> 16) | 0x0040u : (u >> 16);
            return RS_OK;
        }
    }
    *code = encode_finite(d, s, ax, mode, r, k);
    return RS_OK;
}

/* Decoding builds the float32 bit pattern directly (normals) or multiplies the integer
 * mantissa by an exact power of two (subnormals): exact, and no libm calls on hot paths. */
float rs_elem_decode(rs_elem t, uint32_t code)
{
    switch (t) {
    case RS_ELEM_E4M3: {
        const uint32_t c = code & 0xFFu, s = c >> 7, e = (c >> 3) & 0xFu, m = c & 7u;
        if (e == 15 && m == 7) return s ? -NAN : NAN;
        if (e == 0) return s ? -(float)m * 0x1.0p-9f : (float)m * 0x1.0p-9f;
        return u2f((s << 31) | ((e + 120u) << 23) | (m << 20)); /* bias 7 -> 127 */
    }
    case RS_ELEM_E2M1: {
        const uint32_t c = code & 0xFu, s = c >> 3, e = (c >> 1) & 3u, m = c & 1u;
        if (e == 0) return s ? -0.5f * (float)m : 0.5f * (float)m;
        return u2f((s << 31) | ((e + 126u) << 23) | (m << 22)); /* bias 1 -> 127 */
    }
    case RS_ELEM_FP16: {
        const uint32_t c = code & 0xFFFFu, s = c >> 15, e = (c >> 10) & 0x1Fu, m = c & 0x3FFu;
        if (e == 0x1F) return u2f((s << 31) | 0x7F800000u | (m << 13)); /* Inf / NaN, payload kept */
        if (e == 0) return s ? -(float)m * 0x1.0p-24f : (float)m * 0x1.0p-24f;
        return u2f((s << 31) | ((e + 112u) << 23) | (m << 13));
    }
    case RS_ELEM_BF16:
        return u2f((code & 0xFFFFu) << 16);
    }
    return NAN;
}

/* E4M3 / E2M1 / FP16-subnormal fast paths: for a finite x (and a valid k) the wrappers call
 * encode_finite() directly with a constant descriptor, so the compiler specialises that one
 * algorithm for the type: the same function, the same decisions, without the argument checks,
 * the type switch and the call of rs_elem_encode. Non-finite inputs and bad k take the generic
 * path (its codes and errors). tests/test_minifloat_fast.c compares them with rs_elem_encode. */
#define RS_FINITE_(ax) ((ax) < 0x7F800000u)

uint8_t rs_e4m3_encode_rtn(float x)
{
    const uint32_t u = f2u(x), ax = u & 0x7FFFFFFFu;
    if (RS_FINITE_(ax)) return (uint8_t)encode_finite(&k_desc[RS_ELEM_E4M3], u >> 31, ax, RS_ROUND_RTN, 0, 32);
    uint32_t c = 0;
    rs_elem_encode(RS_ELEM_E4M3, x, RS_ROUND_RTN, 0, 32, &c);
    return (uint8_t)c;
}

uint8_t rs_e4m3_encode_sr(float x, uint32_t r, int k)
{
    const uint32_t u = f2u(x), ax = u & 0x7FFFFFFFu;
    if (RS_FINITE_(ax) && k >= 1 && k <= 32)
        return (uint8_t)encode_finite(&k_desc[RS_ELEM_E4M3], u >> 31, ax, RS_ROUND_SR, r, k);
    uint32_t c = 0x7F;
    rs_elem_encode(RS_ELEM_E4M3, x, RS_ROUND_SR, r, k, &c);
    return (uint8_t)c;
}

float rs_e4m3_decode(uint8_t code) { return rs_elem_decode(RS_ELEM_E4M3, code); }

rs_status rs_e2m1_encode_rtn(float x, uint8_t *code)
{
    const uint32_t u = f2u(x), ax = u & 0x7FFFFFFFu;
    if (RS_FINITE_(ax)) {
        const uint32_t c = encode_finite(&k_desc[RS_ELEM_E2M1], u >> 31, ax, RS_ROUND_RTN, 0, 32);
        if (code) *code = (uint8_t)c;
        return RS_OK;
    }
    uint32_t c = 0;
    rs_status st = rs_elem_encode(RS_ELEM_E2M1, x, RS_ROUND_RTN, 0, 32, &c);
    if (st == RS_OK && code) *code = (uint8_t)c;
    return st;
}

rs_status rs_e2m1_encode_sr(float x, uint32_t r, int k, uint8_t *code)
{
    const uint32_t u = f2u(x), ax = u & 0x7FFFFFFFu;
    if (RS_FINITE_(ax) && k >= 1 && k <= 32) {
        const uint32_t c = encode_finite(&k_desc[RS_ELEM_E2M1], u >> 31, ax, RS_ROUND_SR, r, k);
        if (code) *code = (uint8_t)c;
        return RS_OK;
    }
    uint32_t c = 0;
    rs_status st = rs_elem_encode(RS_ELEM_E2M1, x, RS_ROUND_SR, r, k, &c);
    if (st == RS_OK && code) *code = (uint8_t)c;
    return st;
}

float rs_e2m1_decode(uint8_t code) { return rs_elem_decode(RS_ELEM_E2M1, code); }

/* FP16 and BF16 fast paths. The state engine stores states in these formats every step, so
 * the wrappers take a branch-light bit path for the common case and fall back to the generic
 * encoder for everything else. They are the same decisions, not approximations: in the FP16
 * normal range exactly 13 low bits are dropped (BF16: 16, subnormals included), and for
 * k >= 13 (16) the SR rule floor(d*2^k) + (r >> (32-k)) >= 2^k is equivalent to adding
 * r >> 19 (r >> 16) to the float32 bits and truncating (rem*2^(k-13) + R >= 2^k  <=>
 * rem + (r >> 19) >= 2^13, as rem is an integer). tests/test_minifloat_fast.c checks the
 * wrappers against rs_elem_encode on every input class. */
#define FP16_FAST_LO 0x38800000u /* 2^-14: smallest normal FP16 */
#define FP16_FAST_HI 0x477FE000u /* 65504: largest finite FP16 */
#define BF16_FAST_HI 0x7F7F0000u /* largest finite BF16 */

static inline uint32_t f2u_(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

uint16_t rs_fp16_encode_rtn(float x)
{
    const uint32_t b = f2u_(x), u = b & 0x7FFFFFFFu;
    if (u >= FP16_FAST_LO && u <= FP16_FAST_HI) {
        const uint32_t v = u + 0x0FFFu + ((u >> 13) & 1u);
        return (uint16_t)(((b >> 16) & 0x8000u) | ((v >> 13) - (112u << 10)));
    }
    if (RS_FINITE_(u)) return (uint16_t)encode_finite(&k_desc[RS_ELEM_FP16], b >> 31, u, RS_ROUND_RTN, 0, 32);
    uint32_t c = 0x7E00;
    rs_elem_encode(RS_ELEM_FP16, x, RS_ROUND_RTN, 0, 32, &c);
    return (uint16_t)c;
}

uint16_t rs_fp16_encode_sr(float x, uint32_t r, int k)
{
    const uint32_t b = f2u_(x), u = b & 0x7FFFFFFFu;
    if (k >= 13 && k <= 32 && u >= FP16_FAST_LO && u <= FP16_FAST_HI) {
        const uint32_t v = u + (r >> 19);
        return (uint16_t)(((b >> 16) & 0x8000u) | ((v >> 13) - (112u << 10)));
    }
    if (k >= 1 && k <= 32 && RS_FINITE_(u)) /* below 2^-14 or short k: the generic algorithm, inlined */
        return (uint16_t)encode_finite(&k_desc[RS_ELEM_FP16], b >> 31, u, RS_ROUND_SR, r, k);
    uint32_t c = 0x7E00;
    rs_elem_encode(RS_ELEM_FP16, x, RS_ROUND_SR, r, k, &c);
    return (uint16_t)c;
}

/* normal codes (exponent field 1..30) by bit arithmetic; subnormals, Inf and NaN generic */
float rs_fp16_decode(uint16_t code)
{
    const uint32_t c = code, e = (c >> 10) & 0x1Fu;
    if (e - 1u < 30u) return u2f(((c & 0x8000u) << 16) | (((c & 0x7FFFu) + (112u << 10)) << 13));
    return rs_elem_decode(RS_ELEM_FP16, code);
}

uint16_t rs_bf16_encode_rtn(float x)
{
    const uint32_t b = f2u_(x), u = b & 0x7FFFFFFFu;
    if (u <= BF16_FAST_HI) {
        const uint32_t v = u + 0x7FFFu + ((u >> 16) & 1u);
        return (uint16_t)(((b >> 16) & 0x8000u) | (v >> 16));
    }
    uint32_t c = 0x7FC0;
    rs_elem_encode(RS_ELEM_BF16, x, RS_ROUND_RTN, 0, 32, &c);
    return (uint16_t)c;
}

uint16_t rs_bf16_encode_sr(float x, uint32_t r, int k)
{
    const uint32_t b = f2u_(x), u = b & 0x7FFFFFFFu;
    if (k >= 16 && k <= 32 && u <= BF16_FAST_HI) {
        const uint32_t v = u + (r >> 16);
        return (uint16_t)(((b >> 16) & 0x8000u) | (v >> 16));
    }
    uint32_t c = 0x7FC0;
    rs_elem_encode(RS_ELEM_BF16, x, RS_ROUND_SR, r, k, &c);
    return (uint16_t)c;
}

float rs_bf16_decode(uint16_t code) { return rs_elem_decode(RS_ELEM_BF16, code); }
