/* rs_test_ssm.h — header-only helpers for the state-engine tests: synthetic head inputs
 * shaped like trained models, float64 reference recurrences, relative-error metrics.
 * Independent of the library's arithmetic (double precision, own loops, own RNG). */
#ifndef RS_TEST_SSM_H
#define RS_TEST_SSM_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/engine/rs_ssm.h"
#include "rs_test_util.h"

/* One synthetic head. Decays alpha_t = median^(exp(0.5 z)), z ~ N(0,1): spread like a
 * trained head around its median (median 0.9999: alpha in about [0.9997, 0.99996]).
 * Mamba-2: v = dt x with dt = 0.02 exp(0.5 z') and x, k = B, q = C ~ N(0, 1).
 * GDN: v ~ N(0,1), k = l2norm(N(0,I)), q = l2norm(N(0,I)) / sqrt(d_k), beta = sigmoid(N). */
typedef struct rs_tgen {
    rs_ssm_kind kind;
    size_t d_v, d_k;
    double median_alpha;
    uint64_t rng;
} rs_tgen;

/* Storage for one token. */
typedef struct rs_ttok {
    float alpha, beta;
    float *v, *k, *q; /* [d_v], [d_k], [d_k] */
} rs_ttok;

static inline void rs_ttok_alloc(rs_ttok *t, size_t d_v, size_t d_k)
{
    t->v = malloc(d_v * sizeof(float));
    t->k = malloc(d_k * sizeof(float));
    t->q = malloc(d_k * sizeof(float));
}
static inline void rs_ttok_free(rs_ttok *t)
{
    free(t->v);
    free(t->k);
    free(t->q);
}
static inline rs_ssm_token rs_ttok_view(const rs_ttok *t)
{
    rs_ssm_token x = {t->alpha, t->beta, t->v, t->k, t->q};
    return x;
}

static inline void rs_tgen_l2norm_(float *x, size_t n, double scale)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    const double f = scale / sqrt(s);
    for (size_t i = 0; i < n; i++) x[i] = (float)(x[i] * f);
}

static inline void rs_tgen_next(rs_tgen *g, rs_ttok *t)
{
    const double z = rs_test_normal(&g->rng);
    t->alpha = (float)pow(g->median_alpha, exp(0.5 * z));
    if (g->kind == RS_SSM_MAMBA2) {
        const double dt = 0.02 * exp(0.5 * rs_test_normal(&g->rng));
        for (size_t r = 0; r < g->d_v; r++) t->v[r] = (float)(dt * rs_test_normal(&g->rng));
        for (size_t c = 0; c < g->d_k; c++) t->k[c] = (float)rs_test_normal(&g->rng);
        for (size_t c = 0; c < g->d_k; c++) t->q[c] = (float)rs_test_normal(&g->rng);
        t->beta = 0.0f;
    } else {
        for (size_t r = 0; r < g->d_v; r++) t->v[r] = (float)rs_test_normal(&g->rng);
        for (size_t c = 0; c < g->d_k; c++) t->k[c] = (float)rs_test_normal(&g->rng);
        for (size_t c = 0; c < g->d_k; c++) t->q[c] = (float)rs_test_normal(&g->rng);
        rs_tgen_l2norm_(t->k, g->d_k, 1.0);
        rs_tgen_l2norm_(t->q, g->d_k, 1.0 / sqrt((double)g->d_k));
        t->beta = (float)(1.0 / (1.0 + exp(-rs_test_normal(&g->rng))));
    }
}

/* float64 reference step of the same recurrence (inputs as the engine sees them). */
static inline void rs_tref_step(rs_ssm_kind kind, double *S, size_t d_v, size_t d_k,
                                const rs_ttok *t, double *o)
{
    const double a = t->alpha;
    for (size_t r = 0; r < d_v; r++) {
        double *row = S + r * d_k;
        double ur = t->v[r];
        if (kind == RS_SSM_GDN) {
            double w = 0;
            for (size_t c = 0; c < d_k; c++) w += row[c] * t->k[c];
            ur = (double)t->beta * ((double)t->v[r] - a * w);
        }
        double acc = 0;
        for (size_t c = 0; c < d_k; c++) {
            row[c] = a * row[c] + ur * t->k[c];
            acc += row[c] * t->q[c];
        }
        if (o) o[r] = acc;
    }
}

/* ||x - ref||_2 / ||ref||_2 (norm-wise: elementwise ratios blow up near zeros). */
static inline double rs_trel_f(const float *x, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)x[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
static inline double rs_trel_ff(const float *x, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)x[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif
