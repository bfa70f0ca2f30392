/* rs_minifloat.c — scalar codecs for E4M3, E2M1, FP16 and BF16 with RTN and SR.
 *
 * (E5M2 goes through rs_elem_encode / rs_elem_decode only.)
 * The algorithm lives in replayssm/quant/rs_codec.h, which nvcc compiles too (the CUDA
 * quantizers call the same functions): one integer encoder for all four types (the float32
 * input split into sign, significand and the exponent of its last bit; the target quantum of
 * the binade decides how many bits are dropped; RTN or SR from the dropped bits alone), exact
 * decoders, and the FP16/BF16 bit paths. No floating-point arithmetic is involved in encoding,
 * so the result is exact by construction. This file adds the argument checks, the error
 * messages and the names.
 *
 * Typed wrappers: for a finite x (and a valid k) they call the codec with a constant element
 * type, which the compiler specialises (the same function, the same decisions, without the
 * checks, the type switch and the call of rs_elem_encode); non-finite inputs take
 * rs_elem_encode (its codes and errors) or the codec's own special-value branch. The SR wrappers
 * return an rs_status (RS_E_INVAL for k outside 1..32, the code untouched).
 * tests/test_minifloat_fast.c compares them with rs_elem_encode.
 */
#include "replayssm/quant/rs_minifloat.h"

#include <math.h>
#include <stdint.h>

#include "replayssm/quant/rs_codec.h"

static inline int valid_elem(rs_elem t) { return (unsigned)t <= (unsigned)RS_ELEM_E5M2; }

int rs_elem_bits(rs_elem t)
{
    if (!valid_elem(t)) return 0;
    const rs_codec_desc d = rs_codec_desc_of(t);
    return 1 + d.ebits + d.mbits;
}

const char *rs_elem_name(rs_elem t)
{
    static const char *const names[5] = {"e4m3", "e2m1", "fp16", "bf16", "e5m2"};
    return valid_elem(t) ? names[t] : "?";
}

rs_status rs_elem_encode(rs_elem t, float x, rs_rounding mode, uint32_t r, int k, uint32_t *code)
{
    if (!valid_elem(t) || !code) return rs_error_set(RS_E_INVAL, "rs_elem_encode: bad element type or NULL code");
    if (mode == RS_ROUND_SR && (k < 1 || k > 32))
        return rs_error_set(RS_E_INVAL, "rs_elem_encode: SR random bits k=%d outside 1..32", k);
    if (mode != RS_ROUND_RTN && mode != RS_ROUND_SR)
        return rs_error_set(RS_E_INVAL, "rs_elem_encode: unknown rounding mode %d", (int)mode);
    const uint32_t c = rs_codec_encode(t, x, mode == RS_ROUND_SR, r, k);
    if (c == RS_CODEC_INVALID) /* E2M1 of NaN/Inf */
        return rs_error_set(RS_E_NONFINITE, "E2M1 has no NaN/Inf code: cannot encode %s",
                            isnan(x) ? "NaN" : (x < 0 ? "-Inf" : "+Inf"));
    *code = c;
    return RS_OK;
}

float rs_elem_decode(rs_elem t, uint32_t code) { return valid_elem(t) ? rs_codec_decode(t, code) : NAN; }

/* finite float32 bits (sign removed) */
#define RS_FINITE_(ax) ((ax) < 0x7F800000u)
#define RS_K_OK_(k) ((k) >= 1 && (k) <= 32)

uint8_t rs_e4m3_encode_rtn(float x)
{
    const uint32_t u = rs_codec_f2u(x), ax = u & 0x7FFFFFFFu;
    if (RS_FINITE_(ax)) return (uint8_t)rs_codec_encode_finite(rs_codec_desc_of(RS_ELEM_E4M3), u >> 31, ax, 0, 0, 32);
    uint32_t c = 0;
    rs_elem_encode(RS_ELEM_E4M3, x, RS_ROUND_RTN, 0, 32, &c);
    return (uint8_t)c;
}

rs_status rs_e4m3_encode_sr(float x, uint32_t r, int k, uint8_t *code)
{
    if (!RS_K_OK_(k)) return rs_error_set(RS_E_INVAL, "rs_e4m3_encode_sr: SR random bits k=%d outside 1..32", k);
    const uint32_t c = rs_codec_encode(RS_ELEM_E4M3, x, 1, r, k); /* finite or not: E4M3 has a code */
    if (code) *code = (uint8_t)c;
    return RS_OK;
}

float rs_e4m3_decode(uint8_t code) { return rs_codec_e4m3_value(code); }

rs_status rs_e2m1_encode_rtn(float x, uint8_t *code)
{
    const uint32_t u = rs_codec_f2u(x), ax = u & 0x7FFFFFFFu;
    if (RS_FINITE_(ax)) {
        const uint32_t c = rs_codec_encode_finite(rs_codec_desc_of(RS_ELEM_E2M1), u >> 31, ax, 0, 0, 32);
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
    const uint32_t u = rs_codec_f2u(x), ax = u & 0x7FFFFFFFu;
    if (RS_FINITE_(ax) && RS_K_OK_(k)) {
        const uint32_t c = rs_codec_encode_finite(rs_codec_desc_of(RS_ELEM_E2M1), u >> 31, ax, 1, r, k);
        if (code) *code = (uint8_t)c;
        return RS_OK;
    }
    uint32_t c = 0;
    rs_status st = rs_elem_encode(RS_ELEM_E2M1, x, RS_ROUND_SR, r, k, &c);
    if (st == RS_OK && code) *code = (uint8_t)c;
    return st;
}

float rs_e2m1_decode(uint8_t code) { return rs_codec_e2m1_value(code); }

/* FP16 and BF16: the state engine stores states in these formats every step, so the codec's
 * bit paths (rs_codec.h) serve every valid k; a bad k is RS_E_INVAL with the code untouched. */
uint16_t rs_fp16_encode_rtn(float x) { return (uint16_t)rs_codec_fp16_rtn(x); }

rs_status rs_fp16_encode_sr(float x, uint32_t r, int k, uint16_t *code)
{
    if (!RS_K_OK_(k)) return rs_error_set(RS_E_INVAL, "rs_fp16_encode_sr: SR random bits k=%d outside 1..32", k);
    const uint32_t c = rs_codec_fp16_sr(x, r, k);
    if (code) *code = (uint16_t)c;
    return RS_OK;
}

float rs_fp16_decode(uint16_t code) { return rs_codec_fp16_value(code); }

uint16_t rs_bf16_encode_rtn(float x) { return (uint16_t)rs_codec_bf16_rtn(x); }

rs_status rs_bf16_encode_sr(float x, uint32_t r, int k, uint16_t *code)
{
    if (!RS_K_OK_(k)) return rs_error_set(RS_E_INVAL, "rs_bf16_encode_sr: SR random bits k=%d outside 1..32", k);
    const uint32_t c = rs_codec_bf16_sr(x, r, k);
    if (code) *code = (uint16_t)c;
    return RS_OK;
}

float rs_bf16_decode(uint16_t code) { return rs_codec_bf16_value(code); }
