/* rs_theory_tables.c — the rows and curves of the Appendix C tables (rs_theory_tables.h) out of
 * the closed forms (rs_theory.h) and the Monte Carlo (rs_theory_mc.h). Pure computation into the
 * caller's structs; derivations in docs/theory.md. */
#include "replayssm/theory/rs_theory_tables.h"

#include <math.h>
#include <string.h>

#include "replayssm/theory/rs_theory_mc.h"
#include "rs_check.h"

static const char *const k_state_formats[RS_THEORY_TAB_NFMT] = {"fp32", "fp16-rtn", "bf16-rtn", "fp8-rtn",
                                                                 "nvfp4-rtn"};
static const char *const k_state_labels[RS_THEORY_TAB_NFMT] = {"fp32", "fp16", "bf16", "fp8", "nvfp4"};
static const unsigned k_c3_L[RS_THEORY_C3_NL] = {1, 2, 4, 8, 16, 32, 64};
static const unsigned k_c4_h[RS_THEORY_C4_NH] = {0, 7, 15};
static const char *const k_mc_formats[RS_THEORY_C6_NFMT] = {"fp16-sr", "bf16-rtn", "fp8-rtn",
                                                            "fp8-sr",  "nvfp4-rtn", "nvfp4-sr"};
static const char *const k_state_mc_formats[RS_THEORY_C6_STATE_NFMT] = {"fp16-sr", "nvfp4-rtn", "nvfp4-sr"};
static const double k_alphas[RS_THEORY_C6_NALPHA] = {0.9, 0.99, 0.999};

const char *rs_theory_tab_format(size_t f) { return f < RS_THEORY_TAB_NFMT ? k_state_formats[f] : NULL; }

const char *rs_theory_tab_label(size_t f) { return f < RS_THEORY_TAB_NFMT ? k_state_labels[f] : NULL; }

const char *rs_theory_c6_format(size_t i) { return i < RS_THEORY_C6_NFMT ? k_mc_formats[i] : NULL; }

const char *rs_theory_c6_state_format(size_t i) { return i < RS_THEORY_C6_STATE_NFMT ? k_state_mc_formats[i] : NULL; }

double rs_theory_c6_alpha(size_t i) { return i < RS_THEORY_C6_NALPHA ? k_alphas[i] : NAN; }

/* bytes per element of a format string at tensor extent E (scales included) */
static rs_status fmt_bpe(const char *s, size_t extent, double *b)
{
    rs_format f;
    RS_TRY(rs_format_parse(s, &f));
    *b = rs_format_bytes_per_element(&f, extent);
    return RS_OK;
}

/* ---- C.1 ---------------------------------------------------------------------------------- */

rs_status rs_theory_table_c1(const rs_model_shape *m, rs_theory_c1 *out)
{
    RS_CHECK(m && out, RS_E_INVAL, "rs_theory_table_c1: NULL argument");
    const size_t E = (size_t)m->d_v * m->d_k;
    for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f) {
        RS_TRY(fmt_bpe(k_state_formats[f], E, &out->b[f]));
        out->limit[f] = rs_theory_intensity_limit(out->b[f]);
        out->intensity[f] = rs_theory_intensity(m->d_v, m->d_k, out->b[f]);
    }
    return RS_OK;
}

/* ---- C.2 ---------------------------------------------------------------------------------- */

rs_status rs_theory_table_c2(const rs_model_shape *m, rs_theory_c2 *out)
{
    RS_CHECK(m && out, RS_E_INVAL, "rs_theory_table_c2: NULL argument");
    const double b = 4.0; /* FP32 state */
    const rs_status st = rs_theory_crossover(m, b, &out->x);
    if (st == RS_OK) {
        out->known = 1;
        return RS_OK;
    }
    if (st != RS_E_UNSUPPORTED) return st; /* its message is set */
    /* the SSM side needs no attention shape: the same product as rs_theory_crossover's */
    out->known = 0;
    out->x.ssm_bytes_per_step = 2.0 * m->ssm_layers * m->value_heads * m->d_v * m->d_k * b;
    out->x.attn_bytes_per_token = NAN;
    out->x.n_tokens = NAN;
    return RS_OK;
}

/* ---- C.3 ---------------------------------------------------------------------------------- */

rs_status rs_theory_table_c3(const rs_model_shape *m, unsigned window, rs_theory_c3 *out)
{
    RS_CHECK(m && out, RS_E_INVAL, "rs_theory_table_c3: NULL argument");
    RS_CHECK(window >= 1, RS_E_INVAL, "rs_theory_table_c3: window L must be >= 1, got %u", window);
    const unsigned dv = m->d_v, dk = m->d_k;
    const size_t E = (size_t)dv * dk;
    const double r = rs_theory_record_bytes(dv, dk);
    memcpy(out->L, k_c3_L, sizeof out->L);
    out->window = window;
    out->r = r;
    for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f) {
        rs_theory_c3_fmt *o = &out->fmt[f];
        RS_TRY(fmt_bpe(k_state_formats[f], E, &o->b));
        const double b = o->b;
        for (size_t i = 0; i < RS_THEORY_C3_NL; ++i)
            o->ratio[i] = rs_theory_mreplay(k_c3_L[i], dv, dk, b, r) / rs_theory_mconv(k_c3_L[i], dv, dk, b);
        o->ratio_vs_fp32 = rs_theory_mreplay(window, dv, dk, b, r) / rs_theory_mconv(window, dv, dk, 4.0);
        for (unsigned L = 1; L <= RS_THEORY_TAB_CURVE_L; ++L) {
            o->L[L - 1] = L;
            o->m_conv[L - 1] = rs_theory_mconv(L, dv, dk, b);
            o->m_replay[L - 1] = rs_theory_mreplay(L, dv, dk, b, r);
            o->m_ratio[L - 1] = o->m_replay[L - 1] / o->m_conv[L - 1];
        }
    }
    double b4;
    RS_TRY(fmt_bpe("nvfp4-rtn", E, &b4));
    for (size_t i = 0; i < RS_THEORY_C3_NL; ++i)
        out->split_ratio[i] = rs_theory_msplit(k_c3_L[i], dv, dk, b4, 4.0, r) / rs_theory_mconv(k_c3_L[i], dv, dk, 4.0);
    out->split_vs_fp32 = rs_theory_msplit(window, dv, dk, b4, 4.0, r) / rs_theory_mconv(window, dv, dk, 4.0);
    return RS_OK;
}

/* ---- C.4 ---------------------------------------------------------------------------------- */

rs_status rs_theory_table_c4(const rs_model_shape *m, rs_theory_c4_row out[RS_THEORY_C4_NH])
{
    RS_CHECK(m && out, RS_E_INVAL, "rs_theory_table_c4: NULL argument");
    for (size_t i = 0; i < RS_THEORY_C4_NH; ++i) {
        out[i].h = k_c4_h[i];
        out[i].output_only = rs_theory_flops_output_only(k_c4_h[i], m->d_v, m->d_k);
        out[i].materialised = rs_theory_flops_materialised(k_c4_h[i], m->d_v, m->d_k);
        out[i].ratio = out[i].materialised / out[i].output_only;
    }
    return RS_OK;
}

/* ---- C.5 ---------------------------------------------------------------------------------- */

rs_status rs_theory_table_c5(const rs_model_shape *m, double T, double a_bar, rs_theory_c5 *out)
{
    RS_CHECK(m && out, RS_E_INVAL, "rs_theory_table_c5: NULL argument");
    RS_CHECK(isfinite(T) && isfinite(a_bar) && T >= 1 && a_bar > 0 && a_bar <= T, RS_E_INVAL,
             "rs_theory_table_c5: need T >= 1 and 0 < a_bar <= T, got T = %g, a_bar = %g", T, a_bar);
    const size_t E = (size_t)m->d_v * m->d_k;
    const double r = rs_theory_record_bytes(m->d_v, m->d_k);
    out->r = r;
    for (size_t f = 0; f < RS_THEORY_TAB_NFMT; ++f) {
        rs_theory_c5_fmt *o = &out->fmt[f];
        double b;
        RS_TRY(fmt_bpe(k_state_formats[f], E, &b));
        o->M_S = b * (double)E;
        o->ms_over_r = o->M_S / r;
        /* no L* (M_S/r at most T) is a row of the table, not a failure */
        o->standard_ok = rs_theory_optimal_window(o->M_S, r, 1, 1, &o->L_standard) == RS_OK;
        if (!o->standard_ok) o->L_standard = NAN;
        o->speculative_ok = rs_theory_optimal_window(o->M_S, r, T, a_bar, &o->L_speculative) == RS_OK;
        if (!o->speculative_ok) o->L_speculative = NAN;
    }
    const double MS = out->fmt[0].M_S; /* fp32 */
    for (unsigned L = 1; L <= RS_THEORY_TAB_CURVE_L; ++L) {
        out->f_standard[L - 1] = rs_theory_amortised_bytes(L, MS, r, 1, 1);
        out->f_speculative[L - 1] = rs_theory_amortised_bytes(L, MS, r, T, a_bar);
    }
    return RS_OK;
}

/* ---- C.6 ---------------------------------------------------------------------------------- */

/* ~log-spaced steps 1..t_max, multiples of `every` (flush steps for shared/split); returns n */
static size_t obs_steps(size_t t_max, unsigned every, size_t *obs)
{
    size_t n = 0, last = 0;
    for (int i = 0; i < RS_THEORY_C6_MAX_OBS; ++i) {
        double x = exp(log((double)t_max) * (i + 1) / RS_THEORY_C6_MAX_OBS);
        size_t t = (size_t)ceil(x / every) * every;
        if (t > t_max) t = t_max / every * every;
        if (t > last && t >= 1) obs[n++] = last = t;
    }
    return n;
}

/* the calibration's own stream: the curves' ensemble and the moments share no random numbers */
#define C6_CAL_SEED_XOR 0xCA11B8A7Eull

rs_status rs_theory_table_c6_calibrate(size_t i, uint64_t seed, rs_theory_c6_cal *out)
{
    RS_CHECK(out != NULL, RS_E_INVAL, "rs_theory_table_c6_calibrate: NULL output");
    RS_CHECK(i < RS_THEORY_C6_NFMT, RS_E_INVAL, "rs_theory_table_c6_calibrate: format %zu of %d", i,
             RS_THEORY_C6_NFMT);
    out->name = k_mc_formats[i];
    RS_TRY(rs_format_parse(out->name, &out->fmt));
    return rs_theory_mc_calibrate(&out->fmt, RS_THEORY_C6_CAL, RS_THEORY_C6_EXTENT, seed ^ C6_CAL_SEED_XOR, &out->q,
                                  &out->q_se);
}

rs_status rs_theory_table_c6_cell(const rs_theory_c6_cal *cal, size_t ai, unsigned window, size_t mc_steps,
                                  rs_theory_c6_cell *out)
{
    RS_CHECK(cal && out, RS_E_INVAL, "rs_theory_table_c6_cell: NULL argument");
    RS_CHECK(ai < RS_THEORY_C6_NALPHA, RS_E_INVAL, "rs_theory_table_c6_cell: decay %zu of %d", ai,
             RS_THEORY_C6_NALPHA);
    RS_CHECK(window >= 1, RS_E_INVAL, "rs_theory_table_c6_cell: window L must be >= 1, got %u", window);
    RS_CHECK(mc_steps >= 1, RS_E_INVAL, "rs_theory_table_c6_cell: the Monte Carlo needs at least one step");
    const double a = k_alphas[ai];
    out->alpha = a;
    out->window = window;
    RS_TRY(rs_theory_err_accum(RS_STORE_CONV, &cal->q, NULL, a, window, INFINITY, &out->conv_limit));
    RS_TRY(rs_theory_err_accum(RS_STORE_SHARED, &cal->q, NULL, a, window, INFINITY, &out->shared_limit));
    size_t t_max = (size_t)ceil(5.0 / (1.0 - a));
    out->t_max = t_max > mc_steps ? mc_steps : t_max;
    return RS_OK;
}

rs_status rs_theory_table_c6_curve(const rs_theory_c6_cal *cal, const rs_theory_c6_cell *cell, rs_storage s,
                                   uint64_t seed, rs_theory_c6_curve *out)
{
    RS_CHECK(cal && cell && out, RS_E_INVAL, "rs_theory_table_c6_curve: NULL argument");
    RS_CHECK(s == RS_STORE_CONV || s == RS_STORE_SHARED || s == RS_STORE_SPLIT, RS_E_INVAL,
             "rs_theory_table_c6_curve: unknown storage %d", (int)s);
    RS_CHECK(cell->window >= 1, RS_E_INVAL, "rs_theory_table_c6_curve: window L must be >= 1");
    const unsigned every = s == RS_STORE_CONV ? 1 : cell->window;
    size_t obs[RS_THEORY_C6_MAX_OBS];
    const size_t n = cell->t_max >= every ? obs_steps(cell->t_max, every, obs) : 0;
    out->storage = s;
    out->n = n;
    out->mean_ratio = out->var_ratio = NAN;
    if (n == 0) return RS_OK;
    rs_mc_point pts[RS_THEORY_C6_MAX_OBS];
    const rs_mc_config c = {cal->fmt, rs_format_fp32(), s, cell->alpha, cell->window, RS_THEORY_C6_CHAINS,
                            RS_THEORY_C6_EXTENT, seed};
    RS_TRY(rs_theory_mc_accum(&c, obs, n, pts));
    for (size_t i = 0; i < n; ++i) {
        rs_err_moments m;
        RS_TRY(rs_theory_err_accum(s, &cal->q, NULL, cell->alpha, cell->window, (double)obs[i], &m));
        out->t[i] = (double)obs[i];
        out->closed_mean[i] = m.mean, out->closed_var[i] = m.var;
        out->mc_mean[i] = pts[i].mean, out->mc_var[i] = pts[i].var;
        out->mc_mean_se[i] = pts[i].mean_se, out->mc_var_se[i] = pts[i].var_se;
    }
    out->mean_ratio = out->mc_mean[n - 1] / out->closed_mean[n - 1];
    out->var_ratio = out->mc_var[n - 1] / out->closed_var[n - 1];
    return RS_OK;
}

rs_status rs_theory_table_c6_state(size_t i, size_t ai, size_t mc_steps, uint64_t seed, rs_theory_c6_state *out)
{
    RS_CHECK(out != NULL, RS_E_INVAL, "rs_theory_table_c6_state: NULL output");
    RS_CHECK(i < RS_THEORY_C6_STATE_NFMT && ai < RS_THEORY_C6_NALPHA, RS_E_INVAL,
             "rs_theory_table_c6_state: format %zu of %d, decay %zu of %d", i, RS_THEORY_C6_STATE_NFMT, ai,
             RS_THEORY_C6_NALPHA);
    RS_CHECK(mc_steps >= 1, RS_E_INVAL, "rs_theory_table_c6_state: the Monte Carlo needs at least one step");
    const double a = k_alphas[ai];
    out->name = k_state_mc_formats[i];
    out->alpha = a;
    rs_format f;
    RS_TRY(rs_format_parse(out->name, &f));
    size_t t_max = (size_t)ceil(3.0 / (1.0 - a));
    if (t_max > mc_steps) t_max = mc_steps;
    size_t obs[RS_THEORY_C6_MAX_OBS];
    const size_t n = obs_steps(t_max, 1, obs);
    rs_mc_state_point pts[RS_THEORY_C6_MAX_OBS];
    const rs_mc_state_config c = {f, a, RS_THEORY_C6_STATE_DV, RS_THEORY_C6_STATE_DK, RS_THEORY_C6_STATE_R,
                                  (size_t)ceil(5.0 / (1.0 - a)), seed};
    RS_TRY(rs_theory_mc_state(&c, obs, n, pts));
    out->n = n;
    for (size_t k = 0; k < n; ++k) {
        out->t[k] = (double)pts[k].t, out->var_meas[k] = pts[k].var_meas, out->var_meas_se[k] = pts[k].var_meas_se;
        out->var_pred[k] = pts[k].var_pred, out->var_closed[k] = pts[k].var_closed;
        out->msd_meas[k] = pts[k].msd_meas, out->msd_pred[k] = pts[k].msd_pred;
    }
    const rs_mc_state_point *e = &pts[n - 1];
    /* RTN: the replicas are identical, the replica variance is rounding noise */
    out->deterministic = !(e->var_pred > 1e-12 * e->msd_pred);
    out->var_ratio_pred = out->deterministic ? NAN : e->var_meas / e->var_pred;
    out->var_ratio_closed = out->deterministic ? NAN : e->var_meas / e->var_closed;
    out->msd_ratio_pred = e->msd_meas / e->msd_pred;
    out->msd_rel_state = e->msd_meas / e->state_ms;
    return RS_OK;
}
