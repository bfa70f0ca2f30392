/* test_elem_fast.c — the E4M3 / E2M1 encoders (NVFP4 elements and block scales), the FP16
 * encoders outside the FP16 normal range and the FP16 decoder take fast paths
 * (quant/rs_minifloat.c); they must make exactly the decisions of the generic encoder
 * rs_elem_encode (the reference the CUDA twin mirrors) and decode exactly like
 * rs_elem_decode. Input classes: exhaustive over every float32 bit pattern of the binades
 * where E2M1 decides (2^-3 .. 2^3, both signs) under RTN; every E4M3 decision point (each
 * combination of sign, exponent and kept mantissa bits with dropped bits at 0, 1, tie - 1,
 * tie, tie + 1 and all ones) under RTN and SR with several k; 2^24 random bit patterns over
 * the whole float32 range (random r and k) for all wrappers; ±0, subnormals, the largest
 * finite values, ±Inf, NaN (codes or error statuses equal); all 65536 FP16 codes decoded. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/quant/rs_minifloat.h"
#include "rs_test_util.h"

/* generic reference: code, or 0xDEAD0000 | status when it refuses */
static uint32_t gen_(rs_elem t, float x, rs_rounding mode, uint32_t r, int k, uint32_t init)
{
    uint32_t c = init;
    const rs_status st = rs_elem_encode(t, x, mode, r, k, &c);
    return st == RS_OK ? c : 0xDEAD0000u | (uint32_t)st;
}

/* generic reference of the code-returning (RTN) wrappers: the code the generic encoder leaves */
static uint32_t genc_(rs_elem t, float x, rs_rounding mode, uint32_t r, int k, uint32_t init)
{
    uint32_t c = init;
    (void)rs_elem_encode(t, x, mode, r, k, &c);
    return c;
}

/* the status-returning SR wrappers: code, or 0xDEAD0000 | status (the code untouched) */
static uint32_t e4m3_sr_(float x, uint32_t r, int k)
{
    uint8_t c = 0x5A;
    const rs_status st = rs_e4m3_encode_sr(x, r, k, &c);
    if (st != RS_OK && c != 0x5A) fail_msg("e4m3 sr: code written on a failure (k = %d)", k);
    return st == RS_OK ? c : 0xDEAD0000u | (uint32_t)st;
}

static uint32_t fp16_sr_(float x, uint32_t r, int k)
{
    uint16_t c = 0x5A5A;
    const rs_status st = rs_fp16_encode_sr(x, r, k, &c);
    if (st != RS_OK && c != 0x5A5A) fail_msg("fp16 sr: code written on a failure (k = %d)", k);
    return st == RS_OK ? c : 0xDEAD0000u | (uint32_t)st;
}

static uint32_t e2m1_fast_(float x, rs_rounding mode, uint32_t r, int k)
{
    uint8_t c = 0;
    const rs_status st = mode == RS_ROUND_RTN ? rs_e2m1_encode_rtn(x, &c) : rs_e2m1_encode_sr(x, r, k, &c);
    return st == RS_OK ? c : 0xDEAD0000u | (uint32_t)st;
}

static long n_checked;

/* every fast wrapper against the generic encoder, RTN and SR(r, k) */
static void check_all_(uint32_t bits, uint32_t r, int k)
{
    const float x = rs_test_u2f(bits);
    n_checked++;
    uint32_t f, g;
#define CMP_(what, fast, gen)                                                                       \
    do {                                                                                           \
        f = (fast);                                                                                \
        g = (gen);                                                                                 \
        if (f != g)                                                                                \
            fail_msg("%s: x = %a (0x%08x), r = 0x%08x, k = %d: fast 0x%x, generic 0x%x", what, (double)x, \
                     bits, r, k, f, g);                                                            \
    } while (0)
    CMP_("e4m3 rtn", rs_e4m3_encode_rtn(x), genc_(RS_ELEM_E4M3, x, RS_ROUND_RTN, 0, 32, 0) & 0xFFu);
    CMP_("e4m3 sr", e4m3_sr_(x, r, k), gen_(RS_ELEM_E4M3, x, RS_ROUND_SR, r, k, 0));
    CMP_("e2m1 rtn", e2m1_fast_(x, RS_ROUND_RTN, 0, 32), gen_(RS_ELEM_E2M1, x, RS_ROUND_RTN, 0, 32, 0));
    CMP_("e2m1 sr", e2m1_fast_(x, RS_ROUND_SR, r, k), gen_(RS_ELEM_E2M1, x, RS_ROUND_SR, r, k, 0));
    if (!isnan(x)) { /* FP16 NaN payloads: the generic path's (the wrapper falls back to it) */
        CMP_("fp16 rtn", rs_fp16_encode_rtn(x), genc_(RS_ELEM_FP16, x, RS_ROUND_RTN, 0, 32, 0x7E00));
        CMP_("fp16 sr", fp16_sr_(x, r, k), gen_(RS_ELEM_FP16, x, RS_ROUND_SR, r, k, 0));
    }
#undef CMP_
}

/* exhaustive RTN over [2^-3, 2^3) both signs: every E2M1 decision (and E4M3's there) */
static void test_e2m1_rtn_exhaustive(void **state)
{
    (void)state;
    for (uint32_t u = 0x3E000000u; u < 0x41000000u; u++)
        for (uint32_t s = 0; s < 2; s++) {
            const uint32_t bits = u | (s << 31);
            const float x = rs_test_u2f(bits);
            const uint32_t f = e2m1_fast_(x, RS_ROUND_RTN, 0, 32), g = gen_(RS_ELEM_E2M1, x, RS_ROUND_RTN, 0, 32, 0);
            if (f != g) fail_msg("e2m1 rtn: 0x%08x fast 0x%x generic 0x%x", bits, f, g);
            const uint32_t f8 = rs_e4m3_encode_rtn(x), g8 = genc_(RS_ELEM_E4M3, x, RS_ROUND_RTN, 0, 32, 0);
            if (f8 != g8) fail_msg("e4m3 rtn: 0x%08x fast 0x%x generic 0x%x", bits, f8, g8);
        }
}

/* every decision point: sign x exponent x top mantissa bits, dropped bits at the ties */
static void test_decision_points(void **state)
{
    (void)state;
    static const uint32_t lows[] = {0u, 1u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
    static const int ks[] = {1, 2, 3, 8, 13, 16, 23, 24, 31, 32};
    uint64_t rs = 0xE4E2u;
    n_checked = 0;
    /* high 16 bits of the pattern (sign, exponent, 7 mantissa bits) x low 16 bits at the ties */
    for (uint32_t hi = 0; hi < 0x10000u; hi++)
        for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++) {
            const uint32_t bits = (hi << 16) | lows[l];
            const uint64_t z = rs_test_splitmix64(&rs);
            check_all_(bits, (uint32_t)z, ks[(z >> 32) % (sizeof ks / sizeof ks[0])]);
            check_all_(bits, 0u, 32);          /* r = 0: never rounds up unless exact */
            check_all_(bits, 0xFFFFFFFFu, 32); /* r = max: rounds up whenever inexact */
        }
    assert_true(n_checked == 3L * 0x10000L * 6L);
}

static void test_random_bits(void **state)
{
    (void)state;
    uint64_t s = 0xFA5701u;
    for (long i = 0; i < (1L << 24); ++i) {
        const uint64_t z = rs_test_splitmix64(&s);
        check_all_((uint32_t)z, (uint32_t)(z >> 32), 1 + (int)((z >> 27) % 32));
    }
}

/* specials, k edge cases (bad k: the generic path's refusal, RS_E_INVAL), FP16 subnormals */
static void test_specials_and_k(void **state)
{
    (void)state;
    static const uint32_t sp[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u,
                                  0x33000000u, 0x33000001u, 0x337FFFFFu, 0x387FFFFFu, 0x38800000u,
                                  0x3A800000u, 0x43E00000u, 0x43E00001u, 0x43F00000u, 0x40C00000u,
                                  0x40C00001u, 0x40E00000u, 0x477FE000u, 0x477FF000u, 0x7F7FFFFFu,
                                  0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
        for (int k = -1; k <= 34; k++)
            for (uint32_t rr = 0; rr < 32; rr++) {
                const uint32_t r = rr * 0x08000001u + (rr << 27);
                check_all_(sp[i], r, k);
                check_all_(sp[i] ^ 0x80000000u, ~r, k);
            }
    /* FP16 subnormal range (|x| < 2^-14), dense: SR with every k, RTN */
    uint64_t s = 0x5AB0u;
    for (long i = 0; i < 2000000; i++) {
        const uint64_t z = rs_test_splitmix64(&s);
        const uint32_t bits = (uint32_t)(z % 0x38800000u) | (uint32_t)(z >> 63) << 31;
        const float x = rs_test_u2f(bits);
        const int k = 1 + (int)((z >> 40) % 32);
        const uint32_t r = (uint32_t)(z >> 17);
        const uint32_t f = fp16_sr_(x, r, k), g = gen_(RS_ELEM_FP16, x, RS_ROUND_SR, r, k, 0);
        if (f != g) fail_msg("fp16 sr subnormal: 0x%08x r 0x%08x k %d: fast 0x%x generic 0x%x", bits, r, k, f, g);
        const uint32_t fr = rs_fp16_encode_rtn(x), gr = genc_(RS_ELEM_FP16, x, RS_ROUND_RTN, 0, 32, 0x7E00);
        if (fr != gr) fail_msg("fp16 rtn subnormal: 0x%08x fast 0x%x generic 0x%x", bits, fr, gr);
    }
}

/* every FP16 code decodes to the generic decoder's bits (NaN payloads included) */
static void test_fp16_decode_all(void **state)
{
    (void)state;
    for (uint32_t c = 0; c < 0x10000u; c++) {
        const uint32_t f = rs_test_f2u(rs_fp16_decode((uint16_t)c)), g = rs_test_f2u(rs_elem_decode(RS_ELEM_FP16, c));
        if (f != g) fail_msg("fp16 decode 0x%04x: fast 0x%08x generic 0x%08x", c, f, g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e2m1_rtn_exhaustive), cmocka_unit_test(test_decision_points),
        cmocka_unit_test(test_random_bits),         cmocka_unit_test(test_specials_and_k),
        cmocka_unit_test(test_fp16_decode_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
