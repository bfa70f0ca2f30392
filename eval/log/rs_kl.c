/* rs_kl.c — per-position KL / NLL / Δp / top-1 and the summary (see rs_kl.h). */
#include "replayssm/eval/rs_kl.h"
#include "rs_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

rs_status rs_kl_log_softmax(const float *x, size_t V, double *out)
{
    RS_CHECK(x && out && V > 0, RS_E_INVAL, "kl: log_softmax of an empty or NULL vector");
    double mx = -INFINITY;
    for (size_t i = 0; i < V; i++) {
        const double v = (double)x[i];
        if (!isfinite(v)) {
            for (size_t j = 0; j < V; j++) out[j] = NAN;
            return rs_error_set(RS_E_NONFINITE, "kl: logit %zu is %s", i, isnan(v) ? "NaN" : "Inf");
        }
        if (v > mx) mx = v;
    }
    double s = 0.0;
    for (size_t i = 0; i < V; i++) s += exp((double)x[i] - mx);
    const double lse = mx + log(s);
    for (size_t i = 0; i < V; i++) out[i] = (double)x[i] - lse;
    return RS_OK;
}

static int32_t argmax_(const double *v, size_t V)
{
    size_t best = 0;
    for (size_t i = 1; i < V; i++)
        if (v[i] > v[best]) best = i;
    return (int32_t)best;
}

rs_status rs_kl_compare_lp(const double *lp, const double *lq, size_t V, int32_t y, rs_kl_point *out)
{
    RS_CHECK(lp && lq && out && V > 0, RS_E_INVAL, "kl: NULL argument");
    RS_CHECK(y >= 0 && (size_t)y < V, RS_E_INVAL, "kl: true token %d outside the vocabulary [0, %zu)",
             (int)y, V);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < V; i++)
        RS_CHECK(!isnan(lp[i]) && lp[i] != INFINITY, RS_E_NONFINITE,
                 "kl: reference log-probability %zu is not finite", i);
    out->top1_ref = argmax_(lp, V);
    out->nll_ref = -lp[y];
    int finite = 1;
    for (size_t i = 0; i < V && finite; i++)
        if (isnan(lq[i]) || lq[i] == INFINITY) finite = 0;
    if (!finite) {
        out->finite = 0;
        out->kl = out->nll_run = out->dp = NAN;
        out->top1_run = -1;
        out->agree = 0;
        return RS_OK;
    }
    out->finite = 1;
    out->top1_run = argmax_(lq, V);
    out->agree = out->top1_run == out->top1_ref;
    out->nll_run = -lq[y];
    out->dp = exp(lq[y]) - exp(lp[y]);
    /* Bregman form: term_i = p r - p + q >= 0 with r = log p - log q (see rs_kl.h). */
    double kl = 0.0;
    for (size_t i = 0; i < V; i++) {
        const double p = exp(lp[i]);
        const double q = exp(lq[i]);
        double term;
        if (p == 0.0) {
            term = q; /* limit p -> 0 of p r - p + q */
        } else {
            const double r = lp[i] - lq[i];
            if (r >= -1.0)
                term = p * (r + expm1(-r)); /* expm1(-r) >= -r: the sum cannot round below 0 */
            else
                term = (q - p) + p * r;     /* q > e p: q - p - p|r| >= p r^2 / 2, no cancellation */
        }
        if (term < 0.0) term = 0.0; /* guard only: each form above is >= 0 by construction */
        kl += term;
    }
    out->kl = kl;
    return RS_OK;
}

rs_status rs_kl_compare(const float *ref_logits, const float *run_logits, size_t V, int32_t y,
                        double *scratch, rs_kl_point *out)
{
    RS_CHECK(ref_logits && run_logits && scratch && out, RS_E_INVAL, "kl: NULL argument");
    double *lp = scratch, *lq = scratch + V;
    rs_status st = rs_kl_log_softmax(ref_logits, V, lp);
    if (st != RS_OK)
        return rs_error_set(st, "kl: reference logits are not finite (%s)", rs_last_error());
    st = rs_kl_log_softmax(run_logits, V, lq);
    if (st != RS_OK && st != RS_E_NONFINITE) return st;
    rs_error_clear();
    return rs_kl_compare_lp(lp, lq, V, y, out);
}

void rs_kl_running_add(rs_kl_running *r, double x)
{
    r->n++;
    const double d = x - r->mean;
    r->mean += d / (double)r->n;
    r->m2 += d * (x - r->mean);
}

size_t rs_kl_window_of(size_t t)
{
    if (t < 1024) return 0;
    size_t w = 1;
    size_t hi = 2048;
    while (t >= hi && w < RS_KL_N_WINDOWS - 1) {
        hi *= 2;
        w++;
    }
    return w;
}

void rs_kl_window_bounds(size_t w, size_t *lo, size_t *hi)
{
    if (w == 0) {
        *lo = 0;
        *hi = 1024;
        return;
    }
    *lo = (size_t)1024 << (w - 1);
    *hi = (size_t)1024 << w;
}

double rs_kl_quantile(const double *sorted, size_t n, double q)
{
    if (n == 0) return NAN;
    if (q <= 0.0) return sorted[0];
    if (q >= 1.0) return sorted[n - 1];
    const double pos = q * (double)(n - 1);
    const size_t lo = (size_t)floor(pos);
    const size_t hi = lo + 1 < n ? lo + 1 : lo;
    const double f = pos - (double)lo;
    return sorted[lo] + f * (sorted[hi] - sorted[lo]);
}

static const double k_levels[RS_KL_N_LEVELS] = {0.001, 0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999};

double rs_kl_level(size_t i) { return i < RS_KL_N_LEVELS ? k_levels[i] : NAN; }

static int cmp_double_(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void rs_kl_acc_free(rs_kl_acc *a)
{
    if (!a) return;
    free(a->vals);
    free(a->dvals);
    memset(a, 0, sizeof *a);
}

rs_status rs_kl_acc_add(rs_kl_acc *a, size_t t0, size_t n, const double *kl, const double *dp,
                        const uint8_t *agree, const double *nll_ref, const double *nll_run)
{
    RS_CHECK(a && (n == 0 || (kl && dp && agree && nll_ref && nll_run)), RS_E_INVAL,
             "kl summary: NULL argument");
    if (a->n + n > a->cap) {
        size_t cap = a->cap ? a->cap : 1024;
        while (cap < a->n + n) cap *= 2;
        double *v = (double *)realloc(a->vals, cap * sizeof(double));
        RS_CHECK(v, RS_E_NOMEM, "kl summary: cannot allocate %zu doubles for the quantiles", cap);
        a->vals = v;
        double *d = (double *)realloc(a->dvals, cap * sizeof(double));
        RS_CHECK(d, RS_E_NOMEM, "kl summary: cannot allocate %zu doubles for the quantiles", cap);
        a->dvals = d;
        a->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        const double x = kl[i];
        if (!isfinite(x)) {
            a->n_nonfinite++;
            continue;
        }
        a->dvals[a->n] = dp[i];
        a->vals[a->n++] = x;
        a->s_kl += x;
        a->s_kl2 += x * x;
        a->s_dp += dp[i];
        a->s_dp2 += dp[i] * dp[i];
        a->s_dp4 += dp[i] * dp[i] * dp[i] * dp[i];
        const double d = nll_run[i] - nll_ref[i];
        a->s_d += d;
        a->s_d2 += d * d;
        a->s_nr += nll_ref[i];
        a->s_nq += nll_run[i];
        a->n_agree += agree[i] != 0;
        const size_t w = rs_kl_window_of(t0 + i);
        a->wsum[w] += x;
        a->wn[w]++;
    }
    return RS_OK;
}

rs_status rs_kl_acc_finish(rs_kl_acc *a, rs_kl_summary *out)
{
    RS_CHECK(a && out, RS_E_INVAL, "kl summary: NULL argument");
    memset(out, 0, sizeof *out);
    const size_t n = a->n;
    out->n = n;
    out->n_nonfinite = a->n_nonfinite;
    for (size_t w = 0; w < RS_KL_N_WINDOWS; w++) {
        out->window_n[w] = a->wn[w];
        out->window_mean_kl[w] = a->wn[w] ? a->wsum[w] / (double)a->wn[w] : NAN;
    }
    if (n == 0) {
        out->mean_kl = out->mean_kl_se = out->median_kl = out->p90_kl = out->p99_kl = NAN;
        out->p999_kl = out->max_kl = out->min_kl = out->rms_dp = out->mean_dp = NAN;
        out->same_top1_pct = out->same_top1_se_pct = out->mean_nll_ref = out->mean_nll_run = NAN;
        for (size_t i = 0; i < RS_KL_N_LEVELS; i++) out->kl_q[i] = out->dp_q[i] = NAN;
        out->min_dp = out->max_dp = out->mean_dp_se = out->rms_dp_se = NAN;
        out->ln_ppl_ratio = out->ln_ppl_ratio_se = NAN;
        rs_kl_acc_free(a);
        return RS_OK;
    }
    const double dn = (double)n;
    out->mean_kl = a->s_kl / dn;
    out->mean_dp = a->s_dp / dn;
    out->rms_dp = sqrt(a->s_dp2 / dn);
    out->mean_nll_ref = a->s_nr / dn;
    out->mean_nll_run = a->s_nq / dn;
    if (n > 1) {
        double var = a->s_kl2 / dn - out->mean_kl * out->mean_kl;
        if (var < 0) var = 0;
        out->mean_kl_se = sqrt(var / (dn - 1));
    } else {
        out->mean_kl_se = NAN;
    }
    out->ln_ppl_ratio = a->s_d / dn;
    /* standard errors of a mean over n positions: sqrt(var / (n - 1)), var = E[x^2] - E[x]^2 */
    if (n > 1) {
        const double vdp = fmax(0.0, a->s_dp2 / dn - out->mean_dp * out->mean_dp);
        out->mean_dp_se = sqrt(vdp / (dn - 1));
        const double vd = fmax(0.0, a->s_d2 / dn - out->ln_ppl_ratio * out->ln_ppl_ratio);
        out->ln_ppl_ratio_se = sqrt(vd / (dn - 1));
        /* RMS = sqrt(m2), m2 = E[Δp^2] with SE sqrt(var(Δp^2) / (n-1)); d RMS = d m2 / (2 RMS) */
        const double m2 = a->s_dp2 / dn, v2 = fmax(0.0, a->s_dp4 / dn - m2 * m2);
        out->rms_dp_se = out->rms_dp > 0 ? sqrt(v2 / (dn - 1)) / (2.0 * out->rms_dp) : 0.0;
    } else {
        out->mean_dp_se = out->ln_ppl_ratio_se = out->rms_dp_se = NAN;
    }
    const double pa = (double)a->n_agree / dn;
    out->same_top1_pct = 100.0 * pa;
    out->same_top1_se_pct = n > 1 ? 100.0 * sqrt(pa * (1 - pa) / (dn - 1)) : NAN;
    qsort(a->vals, n, sizeof(double), cmp_double_);
    out->min_kl = a->vals[0];
    out->max_kl = a->vals[n - 1];
    out->median_kl = rs_kl_quantile(a->vals, n, 0.5);
    out->p90_kl = rs_kl_quantile(a->vals, n, 0.9);
    out->p99_kl = rs_kl_quantile(a->vals, n, 0.99);
    out->p999_kl = rs_kl_quantile(a->vals, n, 0.999);
    for (size_t i = 0; i < RS_KL_N_LEVELS; i++) out->kl_q[i] = rs_kl_quantile(a->vals, n, k_levels[i]);
    qsort(a->dvals, n, sizeof(double), cmp_double_);
    out->min_dp = a->dvals[0];
    out->max_dp = a->dvals[n - 1];
    for (size_t i = 0; i < RS_KL_N_LEVELS; i++) out->dp_q[i] = rs_kl_quantile(a->dvals, n, k_levels[i]);
    rs_kl_acc_free(a);
    return RS_OK;
}

rs_status rs_kl_summary_compute(size_t n_books, size_t stride, const size_t *len, const double *kl,
                                const double *dp, const uint8_t *agree, const double *nll_ref,
                                const double *nll_run, rs_kl_summary *out)
{
    RS_CHECK(out && (n_books == 0 || (len && kl && dp && agree && nll_ref && nll_run)), RS_E_INVAL,
             "kl summary: NULL argument");
    rs_kl_acc a;
    memset(&a, 0, sizeof a);
    for (size_t b = 0; b < n_books; b++) {
        if (len[b] > stride) {
            rs_kl_acc_free(&a);
            return rs_error_set(RS_E_INVAL, "kl summary: row %zu has %zu positions > stride %zu", b,
                                len[b], stride);
        }
        const size_t o = b * stride;
        rs_status st = rs_kl_acc_add(&a, 0, len[b], kl + o, dp + o, agree + o, nll_ref + o, nll_run + o);
        if (st != RS_OK) {
            rs_kl_acc_free(&a);
            return st;
        }
    }
    return rs_kl_acc_finish(&a, out);
}
