/* rs_minifloat.h — scalar codecs: FP8 E4M3 ("fn"), FP4 E2M1, FP16 (binary16), BF16,
 * each with round-to-nearest-even (RTN) and stochastic rounding (SR).
 *
 * All encoders take a float32 input and return the target's bit pattern. The arithmetic is
 * exact (scaling by powers of two in double, no FMA contraction), so results are bit-exact
 * and reproducible by the CUDA twin.
 *
 * Stochastic rounding works on magnitudes (sign-magnitude formats): for |x| between adjacent
 * representable magnitudes a < b, let d = (|x| - a)/(b - a) (exact). With k random bits
 * R = r >> (32 - k) (the top k bits of the 32-bit word r):
 *
 *     round |x| up to b  <=>  floor(d * 2^k) + R >= 2^k        (the sign is kept)
 *
 * so x rounds away from zero with probability d (= toward the far neighbour, which is the
 * usual SR definition for either sign).
 * ("add k random bits and truncate"). Over all 2^k values of R exactly floor(d * 2^k) round
 * up, so SR is exactly unbiased whenever d is a multiple of 2^-k and otherwise biased
 * toward zero by less than 2^-k of a step. Because only the top k bits are used, k = 32
 * gives the same decisions as any smaller k for which d is exact (16 for BF16, 13 for
 * normal FP16, 20 for normal E4M3, 22 for normal E2M1 from float32 input): k = 32
 * (RS_SR_BITS_DEFAULT) is unbiased for every float32 input whose d fits in 32 bits, which is
 * every input except those far below the target's smallest subnormal. k = 8 emulates the
 * hardware FP4 SR (cvt.rs on sm_100). Representable x is returned unchanged for every r.
 *
 * Special values (see docs/formats.md):
 *   E4M3  finite overflow saturates to +-448 (PTX satfinite) under RTN and SR; +-Inf -> +-448;
 *         NaN -> NaN with its sign (0x7F / 0xFF).
 *   E2M1  saturates to +-6; it has no NaN or Inf code, so a non-finite input returns
 *         RS_E_NONFINITE and is never encoded.
 *   FP16, BF16  IEEE: RTN overflows to +-Inf (FP16 at |x| >= 65520); under SR a value past
 *         the largest finite f_max rounds up to +-Inf with probability d computed as if the
 *         grid continued one step (f_max + ulp); |x| >= f_max + ulp is +-Inf. NaN stays NaN
 *         (quiet, sign kept); Inf stays Inf.
 */
#ifndef RS_MINIFLOAT_H
#define RS_MINIFLOAT_H

#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rs_rounding { RS_ROUND_RTN = 0, RS_ROUND_SR = 1 } rs_rounding;

/* Element types of the scalar codecs. */
typedef enum rs_elem {
    RS_ELEM_E4M3 = 0, /* FP8 E4M3fn: bias 7, max 448, min subnormal 2^-9, NaN = S.1111.111 */
    RS_ELEM_E2M1 = 1, /* FP4 E2M1: +-{0, .5, 1, 1.5, 2, 3, 4, 6}, code in the low nibble */
    RS_ELEM_FP16 = 2, /* IEEE binary16 */
    RS_ELEM_BF16 = 3, /* bfloat16 (top half of float32) */
    RS_ELEM_E5M2 = 4  /* FP8 E5M2: bias 15, max 57344, min subnormal 2^-16, Inf S.11111.00, NaN
                         S.11111.xx (xx != 0): the top byte of an IEEE binary16 */
} rs_elem;

#define RS_SR_BITS_DEFAULT 32
#define RS_E4M3_MAX 448.0f
#define RS_E2M1_MAX 6.0f
#define RS_E5M2_MAX 57344.0f

/*! rs_elem_encode() : encode x as type t.
 *  mode RS_ROUND_SR uses random word r and k in [1, 32] bits (ignored under RTN).
 *  @return RS_OK; RS_E_NONFINITE for a non-finite x with E2M1 (code untouched);
 *          RS_E_INVAL for a bad t or k. */
rs_status rs_elem_encode(rs_elem t, float x, rs_rounding mode, uint32_t r, int k, uint32_t *code);

/*! rs_elem_decode() : exact value of a code (E4M3 0x7F/0xFF decode to NaN; E5M2 as binary16). */
float rs_elem_decode(rs_elem t, uint32_t code);

/*! rs_elem_bits() : storage bits per element (8, 4, 16, 16, 8). */
int rs_elem_bits(rs_elem t);

/*! rs_elem_name() : "e4m3", "e2m1", "fp16", "bf16", "e5m2". */
const char *rs_elem_name(rs_elem t);

/* A status the caller must look at (GCC / Clang warn when it is dropped). */
#if defined(__GNUC__)
#define RS_MINIFLOAT_CHECK_ __attribute__((warn_unused_result))
#else
#define RS_MINIFLOAT_CHECK_
#endif

/* Convenience wrappers with the semantics above.
 *
 * RTN wrappers cannot fail for E4M3, FP16 and BF16 (every float32 has a code), so they return
 * the code. Every SR wrapper, and E2M1 under either rounding, returns an rs_status and writes the
 * code through `code` (when it is not NULL):
 *   RS_OK           code written;
 *   RS_E_INVAL      k outside [1, 32] (message names k); *code is left untouched;
 *   RS_E_NONFINITE  E2M1 only: NaN / Inf input; *code is left untouched.
 * rs_e4m3_encode_sr, rs_fp16_encode_sr and rs_bf16_encode_sr return a status, not the code, so
 * that a bad k cannot come back as a NaN code a caller could mistake for data. For a valid k they
 * cost the inline codec plus the range test of k; quantizers that check k once per tensor call
 * the codec directly. */
uint8_t rs_e4m3_encode_rtn(float x);
RS_MINIFLOAT_CHECK_ rs_status rs_e4m3_encode_sr(float x, uint32_t r, int k, uint8_t *code);
float rs_e4m3_decode(uint8_t code);
rs_status rs_e2m1_encode_rtn(float x, uint8_t *code);
RS_MINIFLOAT_CHECK_ rs_status rs_e2m1_encode_sr(float x, uint32_t r, int k, uint8_t *code);
float rs_e2m1_decode(uint8_t code);
uint16_t rs_fp16_encode_rtn(float x);
RS_MINIFLOAT_CHECK_ rs_status rs_fp16_encode_sr(float x, uint32_t r, int k, uint16_t *code);
float rs_fp16_decode(uint16_t code);
uint16_t rs_bf16_encode_rtn(float x);
RS_MINIFLOAT_CHECK_ rs_status rs_bf16_encode_sr(float x, uint32_t r, int k, uint16_t *code);
float rs_bf16_decode(uint16_t code);

#ifdef __cplusplus
}
#endif
#endif /* RS_MINIFLOAT_H */
