/* test_mathf.c — rs_mathf.h, the transcendental functions the CPU reference and the GPU evaluator
 * share, against glibc's double functions (correctly rounded to within ~1 double ulp, so their float
 * rounding is the correctly rounded float except within ~2^-52 of a boundary) and long double:
 *   rs_expf over every 97th float of [-104, 89] and the edges: no result more than 1 ulp from
 *     (float) exp((double) x), and where the two differ, rs_expf is the one nearer to expl (so every
 *     difference is a boundary case of the reference's own double rounding, not an error of ours);
 *     special values (NaN, +-inf, overflow to inf, underflow to 0 and the subnormal results);
 *   rs_log1pf over every 89th float of (-1, FLT_MAX] likewise against log1p / log1pl, and its edges
 *     (-1, below -1, tiny x, huge x);
 *   rs_sigmoidf / rs_softplusf: the formulas of rs_layers.c on these, within 2 ulp of the long double
 *     functions over a sweep (two float roundings inside).
 *   rs_cossinf (RoPE's cos / sin) over every 613th float of [-2^20, 2^20] (the RoPE angles
 *     fl(inv_freq * position) of positions up to ~1M) likewise against cos / sin / cosl / sinl, and
 *     the angles of a RoPE table at positions 0 .. 131071.
 * Also: how often glibc's own expf / log1pf / cosf / sinf differ from the correctly rounded result
 * (printed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "replayssm/quant/rs_mathf.h"
#include "replayssm/quant/rs_codec.h" /* rs_codec_f2u / rs_codec_u2f: the float <-> bits casts */
/* distance in ulps between two finite floats of the same sign (or zeros) */
static long ulps_(float a, float b)
{
    const long x = (long)rs_codec_f2u(a), y = (long)rs_codec_f2u(b);
    return x > y ? x - y : y - x;
}

typedef float (*f1_)(float);
typedef double (*d1_)(double);
typedef long double (*l1_)(long double);

/* over the floats of [lo, hi] in steps of `step` bit patterns (both signs walked separately) */
static void sweep_(const char *name, f1_ ours, f1_ libf, d1_ ref, l1_ refl, float lo, float hi, uint32_t step)
{
    size_t n = 0, diff = 0, ours_worse = 0, lib_diff = 0, over1 = 0;
    for (int sign = 0; sign < 2; sign++) {
        const float a = sign ? (lo < 0 ? 0.0f : lo) : (hi > 0 ? 0.0f : hi);
        const float b = sign ? hi : lo;
        if ((sign && hi < 0) || (!sign && lo >= 0)) continue;
        const uint32_t ua = rs_codec_f2u(a), ub = rs_codec_f2u(b);
        for (uint64_t u = ua; u <= ub; u += step) {
            const float x = rs_codec_u2f((uint32_t)u);
            if (x < lo || x > hi) continue;
            const float got = ours(x), want = (float)ref((double)x), lib = libf(x);
            n++;
            lib_diff += rs_codec_f2u(lib) != rs_codec_f2u(want);
            if (rs_codec_f2u(got) == rs_codec_f2u(want)) continue;
            diff++;
            if (ulps_(got, want) > 1) over1++;
            const long double t = refl((long double)x);
            if (fabsl((long double)got - t) > fabsl((long double)want - t)) ours_worse++;
        }
    }
    print_message("%s: %zu arguments, %zu differ from the double function's rounding (%zu by more than 1 ulp, "
                  "%zu of them farther from long double than it); glibc's float function differs on %zu\n",
                  name, n, diff, over1, ours_worse, lib_diff);
    assert_true(n > 100000);
    assert_int_equal(over1, 0);
    assert_int_equal(ours_worse, 0);
}

static void test_expf(void **st)
{
    (void)st;
    sweep_("rs_expf", rs_expf, expf, exp, expl, -104.0f, 89.0f, 131);
    sweep_("rs_expf near 0", rs_expf, expf, exp, expl, -1e-3f, 1e-3f, 1021);
    assert_true(isnan(rs_expf(NAN)));
    assert_true(rs_expf(INFINITY) == INFINITY && rs_expf(-INFINITY) == 0.0f);
    assert_true(rs_expf(88.8f) == INFINITY && rs_expf(88.72f) < INFINITY && rs_expf(88.72f) == (float)exp((double)88.72f));
    assert_true(rs_expf(-103.9f) == (float)exp((double)-103.9f) && rs_expf(-110.0f) == 0.0f);
    assert_true(rs_expf(-100.0f) > 0.0f && rs_expf(-100.0f) < FLT_MIN); /* a subnormal result */
    assert_true(rs_expf(0.0f) == 1.0f && rs_expf(-0.0f) == 1.0f);
}

static void test_log1pf(void **st)
{
    (void)st;
    sweep_("rs_log1pf", rs_log1pf, log1pf, log1p, log1pl, -0.99999994f, FLT_MAX, 331);
    sweep_("rs_log1pf near 0", rs_log1pf, log1pf, log1p, log1pl, -1e-6f, 1e-6f, 1021);
    assert_true(isnan(rs_log1pf(NAN)) && isnan(rs_log1pf(-1.5f)));
    assert_true(rs_log1pf(-1.0f) == -INFINITY && rs_log1pf(INFINITY) == INFINITY);
    assert_true(rs_log1pf(0.0f) == 0.0f && rs_log1pf(1e-30f) == 1e-30f);
}

static void test_sigmoid_softplus(void **st)
{
    (void)st;
    long worst_s = 0, worst_p = 0;
    for (float x = -60.0f; x <= 60.0f; x += 0.0137f) {
        const float s = rs_sigmoidf(x), p = rs_softplusf(x);
        const float ts = (float)(1.0L / (1.0L + expl(-(long double)x)));
        const float tp = x > 20.0f ? x : (float)log1pl(expl((long double)x));
        if (ulps_(s, ts) > worst_s) worst_s = ulps_(s, ts);
        if (ulps_(p, tp) > worst_p) worst_p = ulps_(p, tp);
    }
    print_message("sigmoid worst %ld ulp, softplus worst %ld ulp (two float roundings inside each)\n", worst_s, worst_p);
    assert_true(worst_s <= 2 && worst_p <= 2);
    assert_true(rs_siluf(3.0f) == 3.0f * rs_sigmoidf(3.0f));
    assert_true(rs_softplusf(25.0f) == 25.0f);
}

static float cos_of_(float a)
{
    float c, s;
    rs_cossinf(a, &c, &s);
    return c;
}
static float sin_of_(float a)
{
    float c, s;
    rs_cossinf(a, &c, &s);
    return s;
}

static void test_cossinf(void **st)
{
    (void)st;
    /* near 0 sin a ~ a is tiny: the ulp distance is still the right yardstick (same binade walk) */
    sweep_("rs_cossinf cos", cos_of_, cosf, cos, cosl, -1048576.0f, 1048576.0f, 613);
    sweep_("rs_cossinf sin", sin_of_, sinf, sin, sinl, -1048576.0f, 1048576.0f, 613);
    sweep_("rs_cossinf cos near 0", cos_of_, cosf, cos, cosl, -1e-3f, 1e-3f, 1021);
    sweep_("rs_cossinf sin near 0", sin_of_, sinf, sin, sinl, -1e-3f, 1e-3f, 1021);
    /* a RoPE table (theta 1e7, rot 64): every angle within 1 ulp of the double functions' rounding */
    long worst = 0;
    for (int i = 0; i < 32; i++) {
        const float inv = 1.0f / powf(1e7f, (float)(2 * i) / 64.0f);
        for (int p = 0; p < 131072; p += 7) {
            const float a = inv * (float)p;
            float c, s;
            rs_cossinf(a, &c, &s);
            const long e = ulps_(c, (float)cos((double)a)) > ulps_(s, (float)sin((double)a))
                               ? ulps_(c, (float)cos((double)a))
                               : ulps_(s, (float)sin((double)a));
            if (e > worst) worst = e;
        }
    }
    print_message("RoPE table (positions 0 .. 131071): worst %ld ulp from the double functions' rounding\n", worst);
    assert_true(worst <= 1);
    float c, s;
    rs_cossinf(0.0f, &c, &s);
    assert_true(c == 1.0f && s == 0.0f);
    rs_cossinf(NAN, &c, &s);
    assert_true(isnan(c) && isnan(s));
    rs_cossinf(INFINITY, &c, &s);
    assert_true(isnan(c) && isnan(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expf),
        cmocka_unit_test(test_log1pf),
        cmocka_unit_test(test_sigmoid_softplus),
        cmocka_unit_test(test_cossinf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
