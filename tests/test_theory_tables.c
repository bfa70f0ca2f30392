/* test_theory_tables.c — the rows and curves of the Appendix C tables
 * (replayssm/theory/rs_theory_tables.h) against independent references: the closed forms of
 * rs_theory.h written out here, a byte count of Algorithm 1, the numbers docs/theory.md quotes
 * (5/(2b) -> 0.63, N = 81,920, 0.58x, L* ~ 13 / ~ 24, ...), the C.6 Monte Carlo within its own
 * standard errors of the closed form, and the bad-argument errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/theory/rs_theory.h"
#include "replayssm/theory/rs_theory_tables.h"
#include "rs_test_util.h" /* rs_test_round_dp */

/* |a - b| <= tol, printing both on failure (this cmocka has no assert_double_equal) */
#define assert_close(a, b, tol) assert_close_((a), (b), (tol), #a, __FILE__, __LINE__)
static void assert_close_(double a, double b, double tol, const char *what, const char *file, int line)
{
    if (!(fabs(a - b) <= tol)) {
        fprintf(stderr, "%s:%d: %s = %.17g, expected %.17g (tol %.3g)\n", file, line, what, a, b, tol);
        fail();
    }
}
/* relative: |a - b| <= rel |b| */
#define assert_rel(a, b, rel) assert_close_((a), (b), (rel) * fabs(b), #a, __FILE__, __LINE__)

static const rs_model_shape *model(const char *name)
{
    const rs_model_shape *m = NULL;
    assert_int_equal(rs_theory_model_find(name, &m), RS_OK);
    return m;
}

/* bytes per element of the table formats, by the storage layout (docs/theory.md legend):
 * fp32 4, fp16/bf16 2, fp8 one byte + an fp32 scale per 128, nvfp4 half a byte + an e4m3 scale
 * per 16 + one fp32 scale per tensor of E elements */
static double ref_bpe(size_t f, size_t E)
{
    const double b[] = {4.0, 2.0, 2.0, 1.0 + 4.0 / 128, 0.5 + 1.0 / 16 + 4.0 / (double)E};
    return b[f];
}

/* Algorithm 1 over one window, as a kernel moves bytes: each step reads the checkpoint and the
 * h-1 earlier records, a non-flush step writes its record, the flush writes the checkpoint */
static double alg1_window_bytes(unsigned L, double state_bytes, double r)
{
    double bytes = 0;
    for (unsigned h = 1; h <= L; ++h) bytes += state_bytes + (h - 1) * r + (h < L ? r : state_bytes);
    return bytes;
}

static void test_names(void **state)
{
    (void)state;
    const char *fmts[] = {"fp32", "fp16-rtn", "bf16-rtn", "fp8-rtn", "nvfp4-rtn"};
    const char *labels[] = {"fp32", "fp16", "bf16", "fp8", "nvfp4"};
    assert_int_equal(RS_THEORY_TAB_NFMT, 5);
    for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f) {
        assert_string_equal(rs_theory_tab_format(f), fmts[f]);
        assert_string_equal(rs_theory_tab_label(f), labels[f]);
    }
    assert_null(rs_theory_tab_format(RS_THEORY_TAB_NFMT));
    assert_null(rs_theory_tab_label(RS_THEORY_TAB_NFMT));
    assert_string_equal(rs_theory_c6_format(0), "fp16-sr");
    assert_string_equal(rs_theory_c6_format(RS_THEORY_C6_NFMT - 1), "nvfp4-sr");
    assert_null(rs_theory_c6_format(RS_THEORY_C6_NFMT));
    assert_string_equal(rs_theory_c6_state_format(1), "nvfp4-rtn");
    assert_null(rs_theory_c6_state_format(RS_THEORY_C6_STATE_NFMT));
    assert_true(rs_theory_c6_alpha(0) == 0.9 && rs_theory_c6_alpha(2) == 0.999);
    assert_true(isnan(rs_theory_c6_alpha(RS_THEORY_C6_NALPHA)));
}

static void test_c1(void **state)
{
    (void)state;
    for (size_t i = 0; i < rs_theory_model_count(); ++i) {
        const rs_model_shape *m = rs_theory_model_at(i);
        const double dv = m->d_v, dk = m->d_k;
        rs_theory_c1 c;
        assert_int_equal(rs_theory_table_c1(m, &c), RS_OK);
        for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f) {
            const double b = ref_bpe(f, (size_t)m->d_v * m->d_k);
            assert_close(c.b[f], b, 1e-15);
            assert_close(c.limit[f], 5.0 / (2.0 * b), 1e-14);
            assert_rel(c.intensity[f], (5.0 * dv * dk - dv) / (2.0 * b * dv * dk), 1e-14);
        }
        /* the paper's numbers (digest §6): 0.63 (the limit 0.625 half-up) and 1.25; the exact
           count at d_k = 128 prints as 0.62 */
        assert_true(c.limit[0] == 0.625 && rs_test_round_dp(c.limit[0], 2) == 0.63);
        assert_true(c.limit[1] == 1.25 && c.limit[2] == 1.25);
        assert_true(rs_test_round_dp(c.intensity[0], 2) == 0.62);
        assert_true(rs_test_round_dp(c.intensity[0], 3) == 0.624 && rs_test_round_dp(c.intensity[1], 3) == 1.248);
        assert_true(rs_test_round_dp(c.intensity[3], 2) == 2.42);
    }
    /* docs/theory.md C.1 (Super): fp32 0.624, fp16/bf16 1.248, fp8 2.42, nvfp4 4.43 FLOP/B */
    rs_theory_c1 c;
    assert_int_equal(rs_theory_table_c1(model("nemotron-3-super"), &c), RS_OK);
    assert_true(rs_test_round_dp(c.intensity[4], 2) == 4.43);
    assert_int_equal(rs_theory_table_c1(NULL, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c1(model("qwen3.5-4b"), NULL), RS_E_INVAL);
}

static void test_c2(void **state)
{
    (void)state;
    rs_theory_c2 c;
    assert_int_equal(rs_theory_table_c2(model("nemotron-3-super"), &c), RS_OK);
    assert_int_equal(c.known, 1);
    /* 40 layers x 128 heads x 64 x 128 x 4 B x (read + write) = 320 MiB; 8 x 2 x 2 x 128 x 1 B = 4 KiB */
    assert_true(c.x.ssm_bytes_per_step == 335544320.0);
    assert_true(c.x.attn_bytes_per_token == 4096.0);
    assert_true(c.x.n_tokens == 81920.0); /* digest §6 */
    const rs_model_shape *n = model("nemotron-3-nano-4b");
    assert_int_equal(rs_theory_table_c2(n, &c), RS_OK);
    const double ssm = 2.0 * n->ssm_layers * n->value_heads * n->d_v * n->d_k * 4.0;
    const double attn = 2.0 * n->attn_layers * n->attn_kv_heads * n->attn_head_dim * n->kv_bytes;
    assert_true(c.known && c.x.ssm_bytes_per_step == ssm && c.x.attn_bytes_per_token == attn);
    assert_rel(c.x.n_tokens, ssm / attn, 1e-15);
    /* an unknown attention shape is a row: the SSM side, NaN for the rest, the reason kept */
    const rs_model_shape *q = model("qwen3.5-122b");
    assert_int_equal(rs_theory_table_c2(q, &c), RS_OK);
    assert_int_equal(c.known, 0);
    assert_true(c.x.ssm_bytes_per_step == 2.0 * 36 * 64 * 128 * 128 * 4);
    assert_true(isnan(c.x.attn_bytes_per_token) && isnan(c.x.n_tokens));
    assert_non_null(strstr(rs_last_error(), "not known"));
    assert_int_equal(rs_theory_table_c2(NULL, &c), RS_E_INVAL);
}

static void test_c3(void **state)
{
    (void)state;
    const unsigned Ls[] = {1, 2, 4, 8, 16, 32, 64};
    for (size_t i = 0; i < rs_theory_model_count(); ++i) {
        const rs_model_shape *m = rs_theory_model_at(i);
        const double E = (double)m->d_v * m->d_k, r = 2.0 * m->d_v + 2.0 * m->d_k + 4.0;
        const unsigned window = 5 + 7 * (unsigned)i; /* any window */
        rs_theory_c3 c;
        assert_int_equal(rs_theory_table_c3(m, window, &c), RS_OK);
        assert_true(c.r == r && c.window == window);
        for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f) {
            const rs_theory_c3_fmt *o = &c.fmt[f];
            const double b = ref_bpe(f, (size_t)E);
            assert_close(o->b, b, 1e-15);
            for (size_t k = 0; k < RS_THEORY_C3_NL; ++k) {
                assert_int_equal(c.L[k], Ls[k]);
                assert_rel(o->ratio[k], alg1_window_bytes(Ls[k], b * E, r) / (2.0 * Ls[k] * b * E), 1e-13);
            }
            assert_close(o->ratio[0], 1.0, 1e-15); /* a window of one is conventional decode */
            assert_rel(o->ratio_vs_fp32, alg1_window_bytes(window, b * E, r) / (2.0 * window * 4.0 * E), 1e-13);
            for (unsigned L = 1; L <= RS_THEORY_TAB_CURVE_L; ++L) {
                assert_true(o->L[L - 1] == L);
                assert_rel(o->m_conv[L - 1], 2.0 * L * b * E, 1e-15);
                assert_rel(o->m_replay[L - 1], alg1_window_bytes(L, b * E, r), 1e-13);
                assert_true(o->m_ratio[L - 1] == o->m_replay[L - 1] / o->m_conv[L - 1]);
            }
        }
        /* split nvfp4/fp32: L-1 nvfp4 reads, one fp32 read, fp32 + nvfp4 writes, the same records */
        const double b4 = ref_bpe(4, (size_t)E);
        for (size_t k = 0; k < RS_THEORY_C3_NL; ++k) {
            const unsigned L = Ls[k];
            const double rec = alg1_window_bytes(L, 0.0, r);
            assert_rel(c.split_ratio[k], ((L - 1) * b4 * E + 4.0 * E + 4.0 * E + b4 * E + rec) / (2.0 * L * 4.0 * E),
                       1e-13);
        }
    }
    /* docs/theory.md C.3: Super at L = 16, M_replay/M_conv 609,436 / 1,048,576 = 0.58 (fp32), 0.63
       (fp16), 0.73 (fp8), 0.89 (nvfp4); split nvfp4/fp32 0.18 of fp32 conventional */
    rs_theory_c3 c;
    assert_int_equal(rs_theory_table_c3(model("nemotron-3-super"), 16, &c), RS_OK);
    assert_true(c.fmt[0].ratio[4] == 609436.0 / 1048576.0);
    assert_true(rs_test_round_dp(c.fmt[0].ratio[4], 2) == 0.58 && rs_test_round_dp(c.fmt[1].ratio[4], 2) == 0.63);
    assert_true(rs_test_round_dp(c.fmt[3].ratio[4], 2) == 0.73 && rs_test_round_dp(c.fmt[4].ratio[4], 2) == 0.89);
    assert_true(rs_test_round_dp(c.split_vs_fp32, 2) == 0.18 && c.split_vs_fp32 == c.split_ratio[4]);
    assert_true(c.fmt[0].ratio_vs_fp32 == c.fmt[0].ratio[4]);
    /* bad arguments */
    assert_int_equal(rs_theory_table_c3(model("nemotron-3-super"), 0, &c), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "window"));
    assert_int_equal(rs_theory_table_c3(NULL, 16, &c), RS_E_INVAL);
}

static void test_c4(void **state)
{
    (void)state;
    for (size_t i = 0; i < rs_theory_model_count(); ++i) {
        const rs_model_shape *m = rs_theory_model_at(i);
        const double dv = m->d_v, dk = m->d_k;
        rs_theory_c4_row rows[RS_THEORY_C4_NH];
        assert_int_equal(rs_theory_table_c4(m, rows), RS_OK);
        const unsigned hs[] = {0, 7, 15};
        for (size_t k = 0; k < RS_THEORY_C4_NH; ++k) {
            const double h = hs[k];
            assert_int_equal(rows[k].h, hs[k]);
            assert_true(rows[k].output_only == 2 * dv * dk + 2 * (h + 1) * (dv + dk));
            assert_true(rows[k].materialised == 2 * (h + 3) * dv * dk);
            assert_rel(rows[k].ratio, (2 * (h + 3) * dv * dk) / (2 * dv * dk + 2 * (h + 1) * (dv + dk)), 1e-15);
        }
    }
    assert_int_equal(rs_theory_table_c4(NULL, NULL), RS_E_INVAL);
}

/* f(L) = M_S/a + M_S/L + r L/(2a) - r/2 + r T/a - r T/L (paper C.5) */
static double ref_f(double L, double MS, double r, double T, double a)
{
    return MS / a + MS / L + r * L / (2 * a) - r / 2 + r * T / a - r * T / L;
}

static void test_c5(void **state)
{
    (void)state;
    const double T = 4, A = 3.5;
    for (size_t i = 0; i < rs_theory_model_count(); ++i) {
        const rs_model_shape *m = rs_theory_model_at(i);
        const double E = (double)m->d_v * m->d_k, r = 2.0 * m->d_v + 2.0 * m->d_k + 4.0;
        rs_theory_c5 c;
        assert_int_equal(rs_theory_table_c5(m, T, A, &c), RS_OK);
        assert_true(c.r == r);
        for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f) {
            const rs_theory_c5_fmt *o = &c.fmt[f];
            const double MS = ref_bpe(f, (size_t)E) * E;
            assert_rel(o->M_S, MS, 1e-15);
            assert_rel(o->ms_over_r, MS / r, 1e-15);
            assert_int_equal(o->standard_ok, MS / r > 1);
            assert_int_equal(o->speculative_ok, MS / r > T);
            if (o->standard_ok) assert_rel(o->L_standard, sqrt(2 * (MS / r - 1)), 1e-14);
            else assert_true(isnan(o->L_standard));
            if (o->speculative_ok) assert_rel(o->L_speculative, sqrt(2 * A * (MS / r - T)), 1e-14);
            else assert_true(isnan(o->L_speculative));
        }
        const double MS = 4.0 * E; /* the curves are fp32's */
        for (unsigned L = 1; L <= RS_THEORY_TAB_CURVE_L; ++L) {
            assert_rel(c.f_standard[L - 1], ref_f(L, MS, r, 1, 1), 1e-13);
            /* T = a = 1: bytes per token are one window's traffic over its L tokens (C.3) */
            assert_rel(c.f_standard[L - 1], alg1_window_bytes(L, MS, r) / L, 1e-13);
            assert_rel(c.f_speculative[L - 1], ref_f(L, MS, r, T, A), 1e-13);
        }
    }
    /* docs/theory.md C.5: Super M_S/r = 84.45, L* = 12.92 (~13) and 23.73 (~24), nvfp4 4.7;
       Nano-4B 13.9 / 25.6, Qwen3.5 15.9 / 29.3 (fp32) */
    rs_theory_c5 c;
    assert_int_equal(rs_theory_table_c5(model("nemotron-3-super"), T, A, &c), RS_OK);
    assert_true(rs_test_round_dp(c.fmt[0].ms_over_r, 2) == 84.45);
    assert_true(rs_test_round_dp(c.fmt[0].L_standard, 2) == 12.92 && round(c.fmt[0].L_standard) == 13);
    assert_true(rs_test_round_dp(c.fmt[0].L_speculative, 2) == 23.73 && round(c.fmt[0].L_speculative) == 24);
    assert_true(rs_test_round_dp(c.fmt[4].L_standard, 1) == 4.7);
    assert_int_equal(rs_theory_table_c5(model("nemotron-3-nano-4b"), T, A, &c), RS_OK);
    assert_true(rs_test_round_dp(c.fmt[0].L_standard, 1) == 13.9 && rs_test_round_dp(c.fmt[0].L_speculative, 1) == 25.6);
    assert_int_equal(rs_theory_table_c5(model("qwen3.5-4b"), T, A, &c), RS_OK);
    assert_true(rs_test_round_dp(c.fmt[0].L_standard, 1) == 15.9 && rs_test_round_dp(c.fmt[0].L_speculative, 1) == 29.3);
    /* more drafts than M_S/r: no speculative L*, a row all the same */
    assert_int_equal(rs_theory_table_c5(model("nemotron-3-super"), 200, 150, &c), RS_OK);
    for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f)
        assert_true(!c.fmt[f].speculative_ok && isnan(c.fmt[f].L_speculative));
    assert_true(c.fmt[0].standard_ok);
    /* bad arguments: T < 1, a_bar <= 0, a_bar > T, non-finite, NULL */
    const rs_model_shape *s = model("nemotron-3-super");
    assert_int_equal(rs_theory_table_c5(s, 0.5, 0.5, &c), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "a_bar"));
    assert_int_equal(rs_theory_table_c5(s, 4, 0, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c5(s, 4, 5, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c5(s, INFINITY, 1, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c5(s, 4, NAN, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c5(NULL, 4, 3.5, &c), RS_E_INVAL);
}

/* C.6 cell: the limits are the closed forms' t -> infinity, with made-up moments */
static void test_c6_cell(void **state)
{
    (void)state;
    rs_theory_c6_cal cal = {"made-up", rs_format_fp32(), {0.01, 0.04}, {0, 0}};
    for (size_t ai = 0; ai < RS_THEORY_C6_NALPHA; ++ai) {
        const double a = rs_theory_c6_alpha(ai);
        rs_theory_c6_cell cell;
        assert_int_equal(rs_theory_table_c6_cell(&cal, ai, 16, 1000000, &cell), RS_OK);
        assert_true(cell.alpha == a && cell.window == 16);
        assert_rel(cell.conv_limit.mean, 0.01 / (1 - a), 1e-12);
        assert_rel(cell.conv_limit.var, 0.04 / (1 - a * a), 1e-12);
        assert_rel(cell.shared_limit.mean, 0.01 / (1 - pow(a, 16)), 1e-12);
        assert_rel(cell.shared_limit.var, 0.04 / (1 - pow(a, 32)), 1e-12);
        /* the run reaches 5/(1 - alpha) steps, or the cap */
        assert_true((double)cell.t_max >= 5 / (1 - a) && (double)cell.t_max < 5 / (1 - a) + 1);
        assert_int_equal(rs_theory_table_c6_cell(&cal, ai, 16, 30, &cell), RS_OK);
        assert_int_equal(cell.t_max, 30);
    }
    rs_theory_c6_cell cell;
    assert_int_equal(rs_theory_table_c6_cell(&cal, RS_THEORY_C6_NALPHA, 16, 100, &cell), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_cell(&cal, 0, 0, 100, &cell), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_cell(&cal, 0, 16, 0, &cell), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "at least one step"));
    assert_int_equal(rs_theory_table_c6_cell(NULL, 0, 16, 100, &cell), RS_E_INVAL);
}

/* C.6 curves: calibrated moments, the closed form at the observed steps, and the Monte Carlo
 * within 5 combined standard errors of it (ensemble and calibration) */
static void test_c6_curve(void **state)
{
    (void)state;
    rs_theory_c6_cal cal;
    assert_int_equal(rs_theory_table_c6_calibrate(4, 11, &cal), RS_OK); /* nvfp4-rtn: a clear bias */
    assert_string_equal(cal.name, "nvfp4-rtn");
    assert_true(cal.q.mean < 0 && cal.q.var > 0 && cal.q_se.mean > 0 && cal.q_se.mean < 0.05 * fabs(cal.q.mean));
    const unsigned L = 4;
    rs_theory_c6_cell cell;
    assert_int_equal(rs_theory_table_c6_cell(&cal, 0, L, 40, &cell), RS_OK);
    const double a = cell.alpha, b = cal.q.mean, s2 = cal.q.var;
    for (int s = 0; s < 3; ++s) {
        rs_theory_c6_curve c;
        assert_int_equal(rs_theory_table_c6_curve(&cal, &cell, (rs_storage)s, 5, &c), RS_OK);
        assert_int_equal(c.storage, s);
        assert_true(c.n >= 2 && c.n <= RS_THEORY_C6_MAX_OBS);
        assert_true(c.t[c.n - 1] == 40); /* the last step, a flush (40 = 10 L) */
        for (size_t i = 0; i < c.n; ++i) {
            const double t = c.t[i];
            assert_true(t >= 1 && (i == 0 || t > c.t[i - 1]));
            double mean, var, g = 1; /* the closed forms of rs_theory.h, written out */
            if (s == RS_STORE_CONV) {
                mean = b * (1 - pow(a, t)) / (1 - a), var = s2 * (1 - pow(a, 2 * t)) / (1 - a * a);
                g = (1 - pow(a, t)) / (1 - a);
            } else {
                assert_true(fmod(t, L) == 0); /* observed at flushes */
                if (s == RS_STORE_SHARED) {
                    mean = b * (1 - pow(a, t)) / (1 - pow(a, L)), var = s2 * (1 - pow(a, 2 * t)) / (1 - pow(a, 2 * L));
                    g = (1 - pow(a, t)) / (1 - pow(a, L));
                } else {
                    mean = b, var = s2; /* one LP rounding; the fp32 checkpoint is exact */
                }
            }
            assert_rel(c.closed_mean[i], mean, 1e-12);
            assert_rel(c.closed_var[i], var, 1e-12);
            /* the ensemble of 8192 chains against the closed form */
            const double se = sqrt(c.mc_mean_se[i] * c.mc_mean_se[i] + pow(g * cal.q_se.mean, 2));
            assert_true(c.mc_mean_se[i] > 0 && c.mc_var_se[i] > 0);
            assert_close(c.mc_mean[i], mean, 5 * se);
        }
        assert_true(c.mean_ratio == c.mc_mean[c.n - 1] / c.closed_mean[c.n - 1]);
        assert_true(c.var_ratio == c.mc_var[c.n - 1] / c.closed_var[c.n - 1]);
    }
    /* shared and split observe at flushes only: a run shorter than L has none */
    rs_theory_c6_curve c;
    assert_int_equal(rs_theory_table_c6_cell(&cal, 0, 64, 40, &cell), RS_OK);
    assert_int_equal(rs_theory_table_c6_curve(&cal, &cell, RS_STORE_SHARED, 5, &c), RS_OK);
    assert_int_equal(c.n, 0);
    assert_true(isnan(c.mean_ratio) && isnan(c.var_ratio));
    /* bad arguments */
    assert_int_equal(rs_theory_table_c6_curve(&cal, &cell, (rs_storage)7, 5, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_curve(NULL, &cell, RS_STORE_CONV, 5, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_calibrate(RS_THEORY_C6_NFMT, 5, &cal), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_calibrate(0, 5, NULL), RS_E_INVAL);
}

/* C.6 state Monte Carlo: SR replicas have uncorrelated steps (var_meas ~ var_pred); RTN replicas
 * are identical (no variance to compare) */
static void test_c6_state(void **state)
{
    (void)state;
    rs_theory_c6_state c;
    assert_int_equal(rs_theory_table_c6_state(0, 0, 12, 3, &c), RS_OK); /* fp16-sr, alpha 0.9 */
    assert_string_equal(c.name, "fp16-sr");
    assert_true(c.alpha == 0.9 && c.n >= 2 && c.t[c.n - 1] == 12 && !c.deterministic);
    for (size_t i = 1; i < c.n; ++i) assert_true(c.t[i] > c.t[i - 1]);
    const size_t e = c.n - 1;
    assert_true(c.var_ratio_pred == c.var_meas[e] / c.var_pred[e]);
    assert_true(c.var_ratio_closed == c.var_meas[e] / c.var_closed[e]);
    assert_true(c.msd_ratio_pred == c.msd_meas[e] / c.msd_pred[e]);
    /* 2048 elements x 8 replicas: the variance sum is known to a few percent */
    assert_close(c.var_ratio_pred, 1.0, 5 * c.var_meas_se[e] / c.var_pred[e] + 0.02);
    assert_true(c.msd_rel_state > 0 && c.msd_rel_state < 1e-3); /* fp16: errors far below the state */
    assert_int_equal(rs_theory_table_c6_state(1, 0, 12, 3, &c), RS_OK); /* nvfp4-rtn */
    assert_true(c.deterministic && isnan(c.var_ratio_pred) && isnan(c.var_ratio_closed));
    assert_true(c.msd_ratio_pred > 0 && c.msd_rel_state > 0);
    /* bad arguments */
    assert_int_equal(rs_theory_table_c6_state(RS_THEORY_C6_STATE_NFMT, 0, 12, 3, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_state(0, RS_THEORY_C6_NALPHA, 12, 3, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_state(0, 0, 0, 3, &c), RS_E_INVAL);
    assert_int_equal(rs_theory_table_c6_state(0, 0, 12, 3, NULL), RS_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names), cmocka_unit_test(test_c1),      cmocka_unit_test(test_c2),
        cmocka_unit_test(test_c3),    cmocka_unit_test(test_c4),      cmocka_unit_test(test_c5),
        cmocka_unit_test(test_c6_cell), cmocka_unit_test(test_c6_curve), cmocka_unit_test(test_c6_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
