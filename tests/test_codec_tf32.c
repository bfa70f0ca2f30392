/* test_codec_tf32.c — rs_codec_tf32_split (rs_codec.h), the hi / lo split of the tensor-core verification's
 * 3xTF32 products (kernels/rs_cuda_verify_tc.cuh, RS_VTC_SPLIT; docs/kernels.md), on every
 * float32 bit pattern. The kernel compiles the same header function, so what holds here holds there. Checked
 * against double arithmetic (an independent reference: no bit tricks), for every x:
 *   - finite x: hi is x rounded to TF32 (10 explicit mantissa bits; quantum 2^(e-10) in binade 2^e, 2^-136 for
 *     float32 subnormals) to nearest with ties away from zero, +-Inf where that rounding leaves the float range:
 *     what PTX cvt.rna.tf32.f32 returns; hi's low 13 bits are zero;
 *   - finite x with finite hi: lo = x - hi exactly (double x - double hi == double lo), |lo| <= half a quantum,
 *     and the tensor core's truncation of lo (its top 19 bits) is off by <= 2^-21 |x| for |x| >= 2^-115 and by
 *     < 2^-136 below;
 *   - +-Inf: hi = x, lo NaN (as cvt.rna: Inf - Inf);
 *   - NaN: hi or lo is a NaN, so the NaN reaches the products.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/quant/rs_codec.h"

/* cvt.rna.tf32 in double arithmetic: |x| = m 2^e with m in [1, 2); quantum q = 2^(max(e, -126) - 10) */
static double tf32_rna_ref(double ax, double q)
{
    const double v = ax / q + 0.5; /* exact: q a power of two, ax / q < 2^24 */
    return (double)(int64_t)v * q; /* truncation == floor for v > 0: ties away from zero */
}

/* the failures of one exponent field (both signs, every mantissa); the first one described in msg */
static uint64_t check_binade(uint32_t ef, char *msg, size_t msz)
{
    uint64_t bad = 0;
    /* the quantum and the truncation bound of this binade (subnormals: ef == 0, binade 2^-126 in quantum terms) */
    const int e = ef == 0 ? -126 : (int)ef - 127;
    const double q = ldexp(1.0, e - 10);
    /* lo's own TF32 quantum is <= 2^(e-21) (|lo| <= 2^(e-11)), or 2^-136 where lo is a float32 subnormal, which
     * for e >= -115 is <= 2^(e-21) too: the truncation is off by <= 2^(e-21) <= 2^-21 |x| there, < 2^-136 below */
    const int rel = e >= -115;
    const double tbound = rel ? ldexp(1.0, e - 21) : ldexp(1.0, -136);
    for (uint32_t s = 0; s < 2; ++s)
        for (uint32_t m = 0; m < (1u << 23); ++m) {
            const uint32_t bits = (s << 31) | (ef << 23) | m;
            const float x = rs_codec_u2f(bits);
            uint32_t hi, lo;
            rs_codec_tf32_split(x, &hi, &lo);
            const float hf = rs_codec_u2f(hi), lf = rs_codec_u2f(lo);
            int ok;
            if (isnan(x)) {
                ok = isnan(hf) || isnan(lf);
            } else if (isinf(x)) {
                ok = hi == bits && isnan(lf);
            } else {
                const double ax = fabs((double)x);
                double r = tf32_rna_ref(ax, q);
                float rf = r >= 0x1p128 ? INFINITY : (float)r; /* (float)r is exact: r has <= 11 bits */
                if (s) rf = -rf;
                const uint32_t rb = rs_codec_f2u(rf);
                ok = hi == rb && (hi & 0x1FFFu) == 0;
                if (ok && !isinf(hf)) {
                    const double dl = (double)lf, tl = (double)rs_codec_u2f(lo & 0xFFFFE000u);
                    const double te = fabs(dl - tl);
                    ok = (double)x - (double)hf == dl && fabs(dl) <= q / 2 &&
                         (rel ? te <= tbound && te <= ax * 0x1p-21 : te < tbound);
                }
            }
            if (!ok) {
                if (!bad)
                    snprintf(msg, msz, "x bits 0x%08x (%.9g): hi 0x%08x lo 0x%08x (%.9g)", (unsigned)bits, (double)x,
                             (unsigned)hi, (unsigned)lo, (double)lf);
                ++bad;
            }
        }
    return bad;
}

static void test_every_float32(void **state)
{
    (void)state;
    uint64_t bad = 0;
    char first[160] = "";
    for (uint32_t ef = 0; ef < 256; ++ef) {
        char msg[160] = "";
        const uint64_t b = check_binade(ef, msg, sizeof msg);
        if (b && !bad) memcpy(first, msg, sizeof first);
        bad += b;
    }
    if (bad) fprintf(stderr, "tf32 split: %llu of 2^32 bit patterns wrong; first: %s\n", (unsigned long long)bad, first);
    assert_int_equal(bad, 0);
}

/* hand-checked cases: a tie rounds away from zero, the carry into the exponent, overflow to Inf, a canonical NaN
 * whose hi wraps to -0 (lo keeps the NaN) */
static void test_known_cases(void **state)
{
    (void)state;
    uint32_t hi, lo;
    rs_codec_tf32_split(rs_codec_u2f(0x3F801000u), &hi, &lo); /* 1 + 2^-11: half a TF32 quantum above 1 */
    assert_int_equal(hi, 0x3F802000u);               /* -> 1 + 2^-10 (away from zero) */
    assert_true(rs_codec_u2f(lo) == -0x1p-11f);
    rs_codec_tf32_split(rs_codec_u2f(0xBF801000u), &hi, &lo); /* the negative tie */
    assert_int_equal(hi, 0xBF802000u);
    rs_codec_tf32_split(rs_codec_u2f(0x3FFFF000u), &hi, &lo); /* 2 - 2^-11: a tie, up into the next binade */
    assert_int_equal(hi, 0x40000000u);
    rs_codec_tf32_split(rs_codec_u2f(0x7F7FFFFFu), &hi, &lo); /* FLT_MAX -> +Inf */
    assert_int_equal(hi, 0x7F800000u);
    rs_codec_tf32_split(rs_codec_u2f(0x7FFFFFFFu), &hi, &lo); /* NaN: hi wraps to -0, lo is NaN */
    assert_int_equal(hi, 0x80000000u);
    assert_true(isnan(rs_codec_u2f(lo)));
    rs_codec_tf32_split(rs_codec_u2f(0x00000001u), &hi, &lo); /* the smallest subnormal: below half of 2^-136 */
    assert_int_equal(hi, 0u);
    assert_int_equal(lo, 1u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_cases),
        cmocka_unit_test(test_every_float32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
