/* rs_theory.c — Appendix C closed forms (see rs_theory.h for the formulas and sources,
 * docs/theory.md for the derivations). Pure arithmetic; GSL only for the numeric check of
 * the optimal window. */
#include "replayssm/theory/rs_theory.h"
#include "rs_check.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h> /* gsl_set_error_handler_off, GSL_SUCCESS, GSL_CONTINUE */
#include <gsl/gsl_min.h>   /* Brent minimiser for the optimal-window check */

/* ---- model shapes ------------------------------------------------------------------------ */

/* SSM shapes: digest §7. Attention shapes: Nemotron-3-Super from paper C.2 (2 KV heads x 128,
 * FP8 KV); Nano-4B and Qwen3.5-4B from the published configs summarised in
 * shared/specs/hybrid-models-and-kernels-notes.md §2 (BF16 KV as served); Qwen3.5-122B's
 * attention shape is in neither source, so C.2 is not computed for it. */
static const rs_model_shape k_models[] = {
    {"nemotron-3-nano-4b", "Nemotron-3-Nano-4B (BF16)", RS_SSM_MAMBA2, 21, 4, 8, 96, 128, 80, 8, 128, 2.0,
     "digest §7; attention 8 KV heads x 128 (config.json, specs notes §2)"},
    {"nemotron-3-super", "Nemotron-3-Super-120B-A12B (NVFP4)", RS_SSM_MAMBA2, 40, 8, 8, 128, 128, 64, 2, 128, 1.0,
     "digest §7; attention 2 KV heads x 128, FP8 KV (paper C.2)"},
    {"qwen3.5-4b", "Qwen3.5-4B (BF16)", RS_SSM_GDN, 24, 8, 16, 32, 128, 128, 4, 256, 2.0,
     "digest §7; attention 4 KV heads x 256 (config.json, specs notes §2)"},
    {"qwen3.5-122b", "Qwen3.5-122B-A10B (NVFP4)", RS_SSM_GDN, 36, 12, 16, 64, 128, 128, 0, 0, 0.0,
     "digest §7; attention shape not in our sources"},
};
#define RS_N_MODELS (sizeof k_models / sizeof k_models[0])

size_t rs_theory_model_count(void) { return RS_N_MODELS; }

const rs_model_shape *rs_theory_model_at(size_t i) { return i < RS_N_MODELS ? &k_models[i] : NULL; }

static int prefix_icase(const char *s, const char *full)
{
    size_t n = strlen(s);
    if (n == 0 || n > strlen(full)) return 0;
    for (size_t i = 0; i < n; ++i)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)full[i])) return 0;
    return 1;
}

rs_status rs_theory_model_find(const char *name, const rs_model_shape **out)
{
    RS_CHECK(out != NULL, RS_E_INVAL, "rs_theory_model_find: NULL output");
    RS_CHECK(name != NULL, RS_E_INVAL, "rs_theory_model_find: NULL name");
    for (size_t i = 0; i < RS_N_MODELS; ++i)
        if (!strcmp(name, k_models[i].name) || prefix_icase(name, k_models[i].full_name)) {
            *out = &k_models[i];
            return RS_OK;
        }
    return rs_error_set(RS_E_INVAL,
                        "unknown model '%s'; valid: nemotron-3-nano-4b, nemotron-3-super, qwen3.5-4b, "
                        "qwen3.5-122b (or a prefix of the full name)",
                        name);
}

/* ---- C.1 ---------------------------------------------------------------------------------- */

double rs_theory_conv_step_flops(unsigned d_v, unsigned d_k)
{
    return 5.0 * d_v * d_k - (double)d_v;
}

double rs_theory_conv_step_bytes(unsigned d_v, unsigned d_k, double b) { return 2.0 * b * d_v * d_k; }

double rs_theory_intensity(unsigned d_v, unsigned d_k, double b)
{
    return rs_theory_conv_step_flops(d_v, d_k) / rs_theory_conv_step_bytes(d_v, d_k, b);
}

double rs_theory_intensity_limit(double b) { return 5.0 / (2.0 * b); }

/* ---- C.2 ---------------------------------------------------------------------------------- */

rs_status rs_theory_crossover(const rs_model_shape *m, double b, rs_crossover *out)
{
    RS_CHECK(m && out, RS_E_INVAL, "rs_theory_crossover: NULL argument");
    RS_CHECK(b > 0, RS_E_INVAL, "rs_theory_crossover: bytes per element must be > 0, got %g", b);
    RS_CHECK(m->attn_kv_heads > 0 && m->attn_head_dim > 0 && m->kv_bytes > 0, RS_E_UNSUPPORTED,
             "rs_theory_crossover: the attention KV shape of %s is not known (%s)", m->full_name, m->source);
    out->ssm_bytes_per_step = 2.0 * m->ssm_layers * m->value_heads * (double)m->d_v * m->d_k * b;
    out->attn_bytes_per_token = (double)m->attn_layers * 2.0 * m->attn_kv_heads * m->attn_head_dim * m->kv_bytes;
    out->n_tokens = out->ssm_bytes_per_step / out->attn_bytes_per_token;
    return RS_OK;
}

/* ---- C.3 ---------------------------------------------------------------------------------- */

double rs_theory_record_bytes(unsigned d_v, unsigned d_k) { return 2.0 * d_v + 2.0 * d_k + 4.0; }

double rs_theory_mconv(unsigned L, unsigned d_v, unsigned d_k, double b) { return 2.0 * L * b * d_v * d_k; }

/* Record traffic over one window: sum over steps h = 1..L of (h-1) reads, plus L-1 writes
 * (the flush step folds its record on chip) = (L-1)(L+2)/2 records. */
static double window_records(unsigned L) { return ((double)L - 1.0) * ((double)L + 2.0) / 2.0; }

double rs_theory_mreplay(unsigned L, unsigned d_v, unsigned d_k, double b, double r)
{
    return ((double)L + 1.0) * b * d_v * d_k + window_records(L) * r;
}

double rs_theory_msplit(unsigned L, unsigned d_v, unsigned d_k, double b_lp, double b_hp, double r)
{
    return ((double)L * b_lp + 2.0 * b_hp) * d_v * d_k + window_records(L) * r;
}

/* ---- C.4 ---------------------------------------------------------------------------------- */

double rs_theory_flops_output_only(unsigned h, unsigned d_v, unsigned d_k)
{
    return 2.0 * d_v * d_k + 2.0 * ((double)h + 1.0) * ((double)d_v + d_k);
}

double rs_theory_flops_materialised(unsigned h, unsigned d_v, unsigned d_k)
{
    return 2.0 * ((double)h + 3.0) * d_v * d_k;
}

/* ---- C.5 ---------------------------------------------------------------------------------- */

double rs_theory_amortised_bytes(double L, double M_S, double r, double T, double a)
{
    return M_S / a + M_S / L + r * L / (2.0 * a) - r / 2.0 + r * T / a - r * T / L;
}

static rs_status check_window_args(double M_S, double r, double T, double a)
{
    RS_CHECK(M_S > 0 && r > 0, RS_E_INVAL, "optimal window: M_S (%g) and r (%g) must be > 0", M_S, r);
    RS_CHECK(T >= 1 && a > 0 && a <= T, RS_E_INVAL,
             "optimal window: need T >= 1 and 0 < a_bar <= T (T = %g, a_bar = %g)", T, a);
    RS_CHECK(M_S / r > T, RS_E_INVAL,
             "optimal window: M_S/r = %g must exceed T = %g (else f(L) has no interior minimum)", M_S / r, T);
    return RS_OK;
}

rs_status rs_theory_optimal_window(double M_S, double r, double T, double a, double *L_star)
{
    RS_CHECK(L_star != NULL, RS_E_INVAL, "rs_theory_optimal_window: NULL output");
    RS_TRY(check_window_args(M_S, r, T, a));
    *L_star = sqrt(2.0 * a * (M_S / r - T));
    return RS_OK;
}

typedef struct {
    double M_S, r, T, a;
} window_params;

static double f_window(double L, void *p)
{
    const window_params *w = p;
    return rs_theory_amortised_bytes(L, w->M_S, w->r, w->T, w->a);
}

rs_status rs_theory_optimal_window_numeric(double M_S, double r, double T, double a, double L_max,
                                           double *L_star)
{
    RS_CHECK(L_star != NULL, RS_E_INVAL, "rs_theory_optimal_window_numeric: NULL output");
    RS_TRY(check_window_args(M_S, r, T, a));
    RS_CHECK(L_max > 1, RS_E_INVAL, "rs_theory_optimal_window_numeric: L_max = %g must exceed 1", L_max);
    window_params w = {M_S, r, T, a};
    gsl_function F = {f_window, &w};
    /* Brent needs an interior point below both ends: take the best of a coarse scan. */
    double best = 1.0, fbest = f_window(1.0, &w);
    for (int i = 1; i <= 1000; ++i) {
        double L = 1.0 + (L_max - 1.0) * i / 1000.0, fl = f_window(L, &w);
        if (fl < fbest) best = L, fbest = fl;
    }
    RS_CHECK(best > 1.0 && best < L_max && fbest < f_window(1.0, &w) && fbest < f_window(L_max, &w), RS_E_INVAL,
             "rs_theory_optimal_window_numeric: minimum not inside [1, %g]", L_max);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    gsl_min_fminimizer *s = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
    if (!s) {
        gsl_set_error_handler(old);
        return rs_error_set(RS_E_NOMEM, "rs_theory_optimal_window_numeric: GSL minimiser allocation failed");
    }
    int st = gsl_min_fminimizer_set(s, &F, best, 1.0, L_max);
    for (int it = 0; st == GSL_SUCCESS && it < 200; ++it) {
        st = gsl_min_fminimizer_iterate(s);
        if (st != GSL_SUCCESS) break;
        st = gsl_min_test_interval(gsl_min_fminimizer_x_lower(s), gsl_min_fminimizer_x_upper(s), 0.0, 1e-10);
        if (st == GSL_SUCCESS) break;
        st = GSL_SUCCESS; /* GSL_CONTINUE: keep going */
    }
    double x = gsl_min_fminimizer_x_minimum(s);
    gsl_min_fminimizer_free(s);
    gsl_set_error_handler(old);
    RS_CHECK(st == GSL_SUCCESS, RS_E_INVAL, "rs_theory_optimal_window_numeric: Brent failed (%s)", gsl_strerror(st));
    *L_star = x;
    return RS_OK;
}

/* ---- C.6 ---------------------------------------------------------------------------------- */

const char *rs_storage_name(rs_storage s)
{
    switch (s) {
    case RS_STORE_CONV: return "conv";
    case RS_STORE_SHARED: return "shared";
    case RS_STORE_SPLIT: return "split";
    }
    return "unknown";
}

/* Geometric sums sum_{j<n} rho^j = (1 - rho^n)/(1 - rho) for rho = alpha^p, written with
 * expm1/log so that alpha near 1 keeps its digits; n = INFINITY gives the limit. */
static double geom(double alpha, double p, double n)
{
    if (alpha == 1.0) return n; /* no decay: plain count (INFINITY for the limit) */
    double lr = p * log(alpha);  /* log rho < 0 */
    double num = isinf(n) ? 1.0 : -expm1(n * lr);
    return num / -expm1(lr);
}

rs_status rs_theory_err_accum(rs_storage s, const rs_err_moments *q, const rs_err_moments *hp, double alpha,
                              unsigned L, double t, rs_err_moments *out)
{
    RS_CHECK(q && out, RS_E_INVAL, "rs_theory_err_accum: NULL argument");
    RS_CHECK(alpha > 0 && alpha <= 1, RS_E_INVAL, "rs_theory_err_accum: alpha = %g outside (0, 1]", alpha);
    RS_CHECK(t >= 0, RS_E_INVAL, "rs_theory_err_accum: t = %g < 0", t);
    RS_CHECK(q->var >= 0 && (!hp || hp->var >= 0), RS_E_INVAL, "rs_theory_err_accum: negative variance");
    RS_CHECK(!(alpha == 1.0 && isinf(t)), RS_E_INVAL, "rs_theory_err_accum: alpha = 1 has no finite limit");
    if (s == RS_STORE_CONV) {
        double n = isinf(t) ? t : floor(t);
        out->mean = q->mean * geom(alpha, 1.0, n);
        out->var = q->var * geom(alpha, 2.0, n);
        return RS_OK;
    }
    RS_CHECK(s == RS_STORE_SHARED || s == RS_STORE_SPLIT, RS_E_INVAL, "rs_theory_err_accum: bad storage %d", (int)s);
    RS_CHECK(L > 0, RS_E_INVAL, "rs_theory_err_accum: window L must be >= 1");
    double k, h; /* flushes so far, steps since the last one */
    if (isinf(t)) k = INFINITY, h = 0;
    else k = floor(floor(t) / L), h = floor(t) - k * L;
    double dec = pow(alpha, h), dec2 = dec * dec;
    if (s == RS_STORE_SHARED) {
        out->mean = dec * q->mean * geom(alpha, (double)L, k);
        out->var = dec2 * q->var * geom(alpha, 2.0 * L, k);
        return RS_OK;
    }
    /* split: at flush k >= 1 both copies round the same replayed state S = alpha^L S_HP_(k-1) +
     * records, so the LP deviation is e_LP,k + alpha^L D_HP_(k-1), with D_HP the shared-type
     * accumulation of the HP roundings: alpha^L geom(k-1) = geom(k) - 1. */
    if (k < 1) {
        out->mean = 0, out->var = 0;
        return RS_OK;
    }
    double hm = 0, hv = 0;
    if (hp) hm = hp->mean * (geom(alpha, (double)L, k) - 1.0), hv = hp->var * (geom(alpha, 2.0 * L, k) - 1.0);
    out->mean = dec * (q->mean + hm);
    out->var = dec2 * (q->var + hv);
    return RS_OK;
}
