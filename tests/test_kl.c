/* test_kl.c — per-position measurements and the summary (replayssm/eval/rs_kl.h).
 * References: closed forms derived by hand (3 positions x 4-token vocabulary), and a plain
 * long-double evaluation of sum p log(p/q) (a different formula from the library's Bregman form). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "replayssm/eval/rs_kl.h"
#include "rs_test_util.h"

/* The hand-computed case (closed forms in the comments; e = exp(1)). Tolerance 1e-12: the
 * values are O(1) and double evaluation of exp/log errs by ~1e-16 relative. */
static void test_hand_3x4(void **state)
{
    (void)state;
    const float ref[3][4] = {{0, 0, 0, 0}, {2, 0, 0, 0}, {0, 0, 1, 0}};
    const float run[3][4] = {{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 1, 0, 0}};
    const int32_t y[3] = {0, 3, 2};
    const double e = exp(1.0), e2 = exp(2.0);
    /* pos 0: p uniform, q = (e,1,1,1)/(e+3): KL = log(e+3) - log 4 - 1/4 */
    /* pos 1: p = (e^2,1,1,1)/(e^2+3), q uniform: KL = 2 p0 - log(e^2+3) + log 4 */
    /* pos 2: p, q swap e/(e+3) and 1/(e+3) between tokens 1 and 2: KL = (e-1)/(e+3) */
    const double p0 = e2 / (e2 + 3);
    const double kl[3] = {log(e + 3) - log(4.0) - 0.25, 2 * p0 - log(e2 + 3) + log(4.0), (e - 1) / (e + 3)};
    const double nll_ref[3] = {log(4.0), log(e2 + 3), log(e + 3) - 1};
    const double nll_run[3] = {log(e + 3) - 1, log(4.0), log(e + 3)};
    const double dp[3] = {e / (e + 3) - 0.25, 0.25 - 1 / (e2 + 3), 1 / (e + 3) - e / (e + 3)};
    const int agree[3] = {1, 1, 0};
    double scratch[8];
    double v_kl[3], v_dp[3], v_nr[3], v_nq[3];
    uint8_t v_ag[3];
    for (int t = 0; t < 3; t++) {
        rs_kl_point pt;
        assert_int_equal(rs_kl_compare(ref[t], run[t], 4, y[t], scratch, &pt), RS_OK);
        assert_true(pt.finite);
        assert_true(fabs(pt.kl - kl[t]) <= 1e-12);
        assert_true(fabs(pt.nll_ref - nll_ref[t]) <= 1e-12);
        assert_true(fabs(pt.nll_run - nll_run[t]) <= 1e-12);
        assert_true(fabs(pt.dp - dp[t]) <= 1e-12);
        assert_int_equal(pt.agree, agree[t]);
        v_kl[t] = pt.kl; v_dp[t] = pt.dp; v_nr[t] = pt.nll_ref; v_nq[t] = pt.nll_run; v_ag[t] = (uint8_t)pt.agree;
    }
    /* summary of the three: mean, SE, median (middle value), same-top-1 2/3, RMS dp */
    rs_kl_summary s;
    size_t len = 3;
    assert_int_equal(rs_kl_summary_compute(1, 3, &len, v_kl, v_dp, v_ag, v_nr, v_nq, &s), RS_OK);
    const double mean = (kl[0] + kl[1] + kl[2]) / 3;
    double ss = 0;
    for (int t = 0; t < 3; t++) ss += (kl[t] - mean) * (kl[t] - mean);
    assert_true(fabs(s.mean_kl - mean) <= 1e-12);
    assert_true(fabs(s.mean_kl_se - sqrt(ss / 3 / 2)) <= 1e-12); /* sqrt((E[x^2]-E[x]^2)/(n-1)) */
    double sorted[3] = {kl[0], kl[1], kl[2]};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (sorted[j] < sorted[i]) { double t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t; }
    assert_true(fabs(s.median_kl - sorted[1]) <= 1e-12);
    assert_true(fabs(s.max_kl - sorted[2]) <= 1e-12);
    assert_true(fabs(s.same_top1_pct - 200.0 / 3) <= 1e-9);
    assert_true(fabs(s.rms_dp - sqrt((dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2]) / 3)) <= 1e-12);
    assert_int_equal(s.window_n[0], 3);
    assert_true(isnan(s.window_mean_kl[1]));
}

/* Identical logits: KL exactly 0, agreement, dp exactly 0 — at every scale. */
static void test_identical_exact_zero(void **state)
{
    (void)state;
    uint64_t rng = 7;
    enum { V = 300 };
    float x[V];
    double scratch[2 * V];
    for (int trial = 0; trial < 200; trial++) {
        const double scale = pow(10.0, -3 + 6 * rs_test_uniform(&rng));
        for (int i = 0; i < V; i++) x[i] = (float)(scale * rs_test_normal(&rng));
        rs_kl_point pt;
        const int32_t y = (int32_t)(rs_test_splitmix64(&rng) % V);
        assert_int_equal(rs_kl_compare(x, x, V, y, scratch, &pt), RS_OK);
        assert_true(pt.kl == 0.0);
        assert_true(pt.dp == 0.0);
        assert_true(pt.agree == 1);
        assert_true(pt.nll_ref == pt.nll_run);
    }
}

/* KL >= 0 always (near-identical, far apart, peaked), and equal to the plain long-double
 * sum p log(p/q) to 1e-12 relative + 1e-15 absolute (double rounding of V terms). */
static void test_nonnegative_and_reference(void **state)
{
    (void)state;
    uint64_t rng = 11;
    enum { V = 257 };
    float a[V], b[V];
    double scratch[2 * V];
    for (int trial = 0; trial < 600; trial++) {
        const double scale = pow(10.0, -2 + 4 * rs_test_uniform(&rng));
        const int kind = trial % 3;
        for (int i = 0; i < V; i++) {
            a[i] = (float)(scale * rs_test_normal(&rng));
            if (kind == 0) b[i] = nextafterf(a[i], (rs_test_uniform(&rng) < 0.5) ? -INFINITY : INFINITY);
            else if (kind == 1) b[i] = a[i] + (float)(1e-4 * rs_test_normal(&rng));
            else b[i] = (float)(scale * rs_test_normal(&rng));
        }
        rs_kl_point pt;
        assert_int_equal(rs_kl_compare(a, b, V, 5, scratch, &pt), RS_OK);
        assert_true(pt.kl >= 0.0);
        long double ma = -INFINITY, mb = -INFINITY, sa = 0, sb = 0;
        for (int i = 0; i < V; i++) { if (a[i] > ma) ma = a[i]; if (b[i] > mb) mb = b[i]; }
        for (int i = 0; i < V; i++) { sa += expl(a[i] - ma); sb += expl(b[i] - mb); }
        long double ref = 0;
        for (int i = 0; i < V; i++) {
            const long double lp = a[i] - ma - logl(sa), lq = b[i] - mb - logl(sb);
            ref += expl(lp) * (lp - lq);
        }
        assert_true(fabsl((long double)pt.kl - ref) <= 1e-12L * fabsl(ref) + 1e-15L);
    }
}

static void test_nonfinite_and_errors(void **state)
{
    (void)state;
    float a[4] = {0, 1, 2, 3}, b[4] = {0, NAN, 2, 3};
    double scratch[8];
    rs_kl_point pt;
    assert_int_equal(rs_kl_compare(a, b, 4, 1, scratch, &pt), RS_OK);
    assert_false(pt.finite);
    assert_true(isnan(pt.kl));
    assert_int_equal(pt.agree, 0);
    b[1] = INFINITY;
    assert_int_equal(rs_kl_compare(a, b, 4, 1, scratch, &pt), RS_OK);
    assert_false(pt.finite);
    /* non-finite reference, token out of range */
    assert_int_equal(rs_kl_compare(b, a, 4, 1, scratch, &pt), RS_E_NONFINITE);
    assert_int_equal(rs_kl_compare(a, a, 4, 4, scratch, &pt), RS_E_INVAL);
    assert_int_equal(rs_kl_compare(a, a, 4, -1, scratch, &pt), RS_E_INVAL);
}

/* quantiles: numpy "linear" on 1..5 (hand values), windows, non-finite excluded */
static void test_summary_quantiles_windows(void **state)
{
    (void)state;
    const double s5[5] = {1, 2, 3, 4, 5};
    assert_true(rs_kl_quantile(s5, 5, 0.5) == 3.0);
    assert_true(fabs(rs_kl_quantile(s5, 5, 0.9) - 4.6) <= 1e-12);   /* 0.9*4 = 3.6 -> 4 + 0.6 */
    assert_true(fabs(rs_kl_quantile(s5, 5, 0.99) - 4.96) <= 1e-12);
    assert_true(rs_kl_quantile(s5, 5, 1.0) == 5.0);
    assert_int_equal(rs_kl_window_of(0), 0);
    assert_int_equal(rs_kl_window_of(1023), 0);
    assert_int_equal(rs_kl_window_of(1024), 1);
    assert_int_equal(rs_kl_window_of(2047), 1);
    assert_int_equal(rs_kl_window_of(2048), 2);
    assert_int_equal(rs_kl_window_of(65535), 6);
    assert_int_equal(rs_kl_window_of(65536), 7);
    assert_int_equal(rs_kl_window_of(131071), 7);
    size_t lo, hi;
    rs_kl_window_bounds(7, &lo, &hi);
    assert_int_equal(lo, 65536);
    assert_int_equal(hi, 131072);
    /* two books of 3000 positions: kl = 1 in window 0, 2 in window 1, 3 in window 2 (positions
     * 2048..2999); one NaN that must be excluded */
    enum { N = 3000 };
    double *kl = malloc(2 * N * sizeof(double)), *z = calloc(2 * N, sizeof(double));
    uint8_t *ag = calloc(2 * N, 1);
    for (size_t b = 0; b < 2; b++)
        for (size_t t = 0; t < N; t++) kl[b * N + t] = (double)(rs_kl_window_of(t) + 1);
    kl[N + 5] = NAN;
    size_t len[2] = {N, 2500};
    rs_kl_summary s;
    assert_int_equal(rs_kl_summary_compute(2, N, len, kl, z, ag, z, z, &s), RS_OK);
    assert_int_equal(s.n_nonfinite, 1);
    assert_int_equal(s.n, N + 2500 - 1);
    assert_int_equal(s.window_n[0], 2 * 1024 - 1);
    assert_int_equal(s.window_n[1], 2 * 1024);
    assert_int_equal(s.window_n[2], (N - 2048) + (2500 - 2048));
    assert_true(s.window_mean_kl[0] == 1.0 && s.window_mean_kl[1] == 2.0 && s.window_mean_kl[2] == 3.0);
    assert_true(isnan(s.window_mean_kl[3]));
    assert_true(s.same_top1_pct == 0.0);
    assert_true(s.max_kl == 3.0 && s.min_kl == 1.0 && s.median_kl == 2.0);
    free(kl);
    free(z);
    free(ag);
}

/* The llama.cpp report set on closed forms: KL values 0, 1, ..., n-1 (shuffled), whose linear
 * quantile at level q is exactly q (n-1) (numpy "linear": position q (n-1) between integers i and
 * i+1 interpolates to q (n-1) itself); Δp = -KL / n, whose quantile at q is -(1-q)(n-1)/n;
 * nll_run - nll_ref = 0.25 + 0.5 (-1)^t, so ln PPL ratio = 0.25 (n even) with SE sqrt(0.25/(n-1));
 * SE of mean Δp: the sample variance of an arithmetic sequence, (n^2 - 1)/12 / n^2. Tolerance
 * 1e-12 relative: sums of n = 1000 doubles of O(n) err by ~1e-13 relative. */
static void test_llama_report_set(void **state)
{
    (void)state;
    enum { N = 1000 };
    static double kl[N], dp[N], nr[N], nq[N];
    static uint8_t ag[N];
    uint64_t rng = 7;
    for (int i = 0; i < N; i++) kl[i] = i;
    for (int i = N - 1; i > 0; i--) { /* Fisher-Yates: the order must not matter */
        const int j = (int)(rs_test_splitmix64(&rng) % (uint64_t)(i + 1));
        const double t = kl[i];
        kl[i] = kl[j];
        kl[j] = t;
    }
    for (int i = 0; i < N; i++) {
        dp[i] = -kl[i] / N;
        nr[i] = 2.0;
        nq[i] = 2.0 + 0.25 + ((i % 2) ? -0.5 : 0.5);
        ag[i] = (uint8_t)(i % 4 != 0);
    }
    rs_kl_summary s;
    size_t len = N;
    assert_int_equal(rs_kl_summary_compute(1, N, &len, kl, dp, ag, nr, nq, &s), RS_OK);
#define NEAR_(x, y) assert_true(fabs((x) - (y)) <= 1e-12 * (1.0 + fabs(y)))
    const double levels[RS_KL_N_LEVELS] = {0.001, 0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999};
    for (size_t i = 0; i < RS_KL_N_LEVELS; i++) {
        NEAR_(rs_kl_level(i), levels[i]);
        NEAR_(s.kl_q[i], levels[i] * (N - 1));
        NEAR_(s.dp_q[i], -(1.0 - levels[i]) * (N - 1) / N);
    }
    assert_true(isnan(rs_kl_level(RS_KL_N_LEVELS)));
    NEAR_(s.median_kl, s.kl_q[5]);
    NEAR_(s.p90_kl, s.kl_q[7]);
    NEAR_(s.p99_kl, s.kl_q[9]);
    NEAR_(s.p999_kl, s.kl_q[10]);
    NEAR_(s.min_kl, 0.0);
    NEAR_(s.max_kl, N - 1.0);
    NEAR_(s.min_dp, -(N - 1.0) / N);
    NEAR_(s.max_dp, 0.0);
    NEAR_(s.mean_dp, -(N - 1.0) / 2 / N);
    const double var_dp = ((double)N * N - 1) / 12.0 / ((double)N * N); /* variance of {0..N-1} / N^2 */
    NEAR_(s.mean_dp_se, sqrt(var_dp / (N - 1)));
    NEAR_(s.ln_ppl_ratio, 0.25);
    NEAR_(s.ln_ppl_ratio_se, sqrt(0.25 / (N - 1))); /* d = 0.25 +- 0.5: variance 0.25 */
    NEAR_(s.ln_ppl_ratio, s.mean_nll_run - s.mean_nll_ref);
    /* RMS Δp: sqrt(E[Δp^2]) = sqrt(sum i^2) / N / sqrt(N); its SE by the delta method */
    double m2 = 0, m4 = 0;
    for (int i = 0; i < N; i++) {
        m2 += (double)i * i / ((double)N * N);
        m4 += pow((double)i / N, 4);
    }
    m2 /= N;
    m4 /= N;
    NEAR_(s.rms_dp, sqrt(m2));
    NEAR_(s.rms_dp_se, sqrt((m4 - m2 * m2) / (N - 1)) / (2 * sqrt(m2)));
    NEAR_(s.same_top1_pct, 75.0);
#undef NEAR_
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_3x4),
        cmocka_unit_test(test_llama_report_set),
        cmocka_unit_test(test_identical_exact_zero),
        cmocka_unit_test(test_nonnegative_and_reference),
        cmocka_unit_test(test_nonfinite_and_errors),
        cmocka_unit_test(test_summary_quantiles_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
