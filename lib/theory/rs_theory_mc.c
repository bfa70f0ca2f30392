/* rs_theory_mc.c — Monte Carlo of the C.6 error accumulation through the real quantizers.
 * Design in rs_theory_mc.h and docs/theory.md. All accumulation in double; the quantizers
 * see float32 tensors exactly as the state engine stores them. */
#include "replayssm/theory/rs_theory_mc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/quant/rs_philox.h"  /* rs_rand_fill, rs_stream_id: every random number of the MC */
#include "replayssm/quant/rs_qtensor.h" /* rs_quantize_roundtrip: the quantizers under test */
#include "rs_check.h"

#define SLOT_SR 1u    /* SR of the stored / LP copy */
#define SLOT_DATA 2u  /* pre-rounding values of experiment 1 */
#define SLOT_SR_HP 3u /* SR of the HP copy (split) */
#define SLOT_INPUT 5u /* synthetic v, k of experiment 2 */

#define TWO_PI 6.283185307179586476925286766559

/* z[j] ~ N(0,1) for j < n: value i = i0 + j is the cosine (i even) or sine (i odd) output of
 * Box-Muller on the word pair (2p, 2p+1), p = i/2, of (seed, stream): both outputs of a pair
 * are used, and any value can be recomputed alone. */
static void normal_fill(uint64_t seed, uint64_t stream, uint64_t i0, size_t n, double *z)
{
    uint32_t w[256];
    uint64_t p = i0 >> 1;
    const uint64_t p_end = (i0 + n + 1) >> 1;
    while (p < p_end) {
        size_t m = p_end - p < 128 ? (size_t)(p_end - p) : 128;
        rs_rand_fill(seed, stream, 2 * p, 2 * m, w);
        for (size_t q = 0; q < m; ++q) {
            double u1 = ((double)w[2 * q] + 0.5) * 0x1p-32; /* (0, 1): log is finite */
            double u2 = (double)w[2 * q + 1] * 0x1p-32;
            double rad = sqrt(-2.0 * log(u1)), th = TWO_PI * u2;
            uint64_t i = 2 * (p + q); /* value index of the cosine output */
            if (i >= i0 && i < i0 + n) z[i - i0] = rad * cos(th);
            if (i + 1 >= i0 && i + 1 < i0 + n) z[i + 1 - i0] = rad * sin(th);
        }
        p += m;
    }
}

void rs_theory_mc_draw(uint64_t seed, uint64_t stream, size_t n, float *x)
{
    double z[128];
    for (size_t j = 0; j < n; j += 128) {
        size_t m = n - j < 128 ? n - j : 128;
        normal_fill(seed, stream, j, m, z);
        for (size_t i = 0; i < m; ++i) x[j + i] = (float)fabs(z[i]);
    }
}

static rs_status check_sizes(const rs_format *f, size_t n, size_t extent, const char *who)
{
    RS_CHECK(f != NULL, RS_E_INVAL, "%s: NULL format", who);
    size_t blk = rs_format_block(f);
    RS_CHECK(extent > 0 && n > 0 && n % extent == 0, RS_E_SHAPE,
             "%s: %zu elements are not a positive whole number of tensors of %zu", who, n, extent);
    RS_CHECK(blk == 0 || extent % blk == 0, RS_E_SHAPE, "%s: extent %zu is not a multiple of the block %zu", who,
             extent, blk);
    RS_CHECK(n % RS_MC_BATCH == 0, RS_E_SHAPE, "%s: %zu elements are not a multiple of the batch %d", who, n,
             RS_MC_BATCH);
    return RS_OK;
}

/* Mean and variance of v[n] with batch-means standard errors (batches of RS_MC_BATCH). */
static void moments_batched(const double *v, size_t n, double *mean, double *var, double *mean_se, double *var_se)
{
    const size_t nb = n / RS_MC_BATCH;
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += v[i];
    const double mu = s / (double)n;
    double ss = 0, bm1 = 0, bm2 = 0, bv1 = 0, bv2 = 0;
    for (size_t b = 0; b < nb; ++b) {
        double s1 = 0, s2 = 0;
        for (size_t i = b * RS_MC_BATCH; i < (b + 1) * RS_MC_BATCH; ++i) {
            double d = v[i] - mu;
            s1 += d;
            s2 += d * d;
        }
        ss += s2;
        double m = s1 / RS_MC_BATCH, w = s2 / RS_MC_BATCH;
        bm1 += m, bm2 += m * m, bv1 += w, bv2 += w * w;
    }
    *mean = mu;
    *var = ss / (double)(n - 1);
    const double nbd = (double)nb;
    double vm = (bm2 - bm1 * bm1 / nbd) / (nbd - 1), vv = (bv2 - bv1 * bv1 / nbd) / (nbd - 1);
    *mean_se = sqrt(fmax(vm, 0) / nbd);
    *var_se = sqrt(fmax(vv, 0) / nbd);
}

rs_status rs_theory_mc_calibrate(const rs_format *f, size_t n, size_t extent, uint64_t seed, rs_err_moments *m,
                                 rs_err_moments *se)
{
    static const char who[] = "rs_theory_mc_calibrate";
    RS_CHECK(m && se, RS_E_INVAL, "%s: NULL output", who);
    RS_TRY(check_sizes(f, n, extent, who));
    /* Streamed: per batch of RS_MC_BATCH errors keep sum e and sum e^2 (n/64 doubles), so n can
     * be ~10^8. Raw moments are safe here: |b| << sigma for every format (no cancellation). */
    size_t chunk = extent * (extent >= 65536 ? 1 : 65536 / extent);
    if (chunk > n) chunk = n;
    const size_t nb = n / RS_MC_BATCH;
    float *x = malloc(chunk * sizeof *x), *y = malloc(chunk * sizeof *y);
    double *s1 = calloc(nb, sizeof *s1), *s2 = calloc(nb, sizeof *s2);
    if (!x || !y || !s1 || !s2) {
        free(x), free(y), free(s1), free(s2);
        return rs_error_set(RS_E_NOMEM, "%s: no memory for %zu elements", who, n);
    }
    rs_status st = RS_OK;
    for (size_t c = 0, i0 = 0; i0 < n; ++c, i0 += chunk) {
        size_t k = n - i0 < chunk ? n - i0 : chunk;
        rs_theory_mc_draw(seed, rs_stream_id(SLOT_DATA, 0, 0, c), k, x);
        st = rs_quantize_roundtrip(f, x, k, extent, seed, rs_stream_id(SLOT_SR, 0, 0, c), y);
        if (st != RS_OK) break;
        for (size_t i = 0; i < k; ++i) {
            double e = (double)y[i] - (double)x[i];
            s1[(i0 + i) / RS_MC_BATCH] += e;
            s2[(i0 + i) / RS_MC_BATCH] += e * e;
        }
    }
    if (st == RS_OK) {
        double t1 = 0, t2 = 0;
        for (size_t b = 0; b < nb; ++b) t1 += s1[b], t2 += s2[b];
        const double mu = t1 / (double)n, var = (t2 - t1 * mu) / (double)(n - 1), B = RS_MC_BATCH;
        double bm1 = 0, bm2 = 0, bv1 = 0, bv2 = 0;
        for (size_t b = 0; b < nb; ++b) {
            double mb = s1[b] / B, vb = s2[b] / B - 2.0 * mu * mb + mu * mu; /* mean (e - mu)^2 */
            bm1 += mb, bm2 += mb * mb, bv1 += vb, bv2 += vb * vb;
        }
        const double nbd = (double)nb;
        m->mean = mu;
        m->var = var;
        se->mean = sqrt(fmax((bm2 - bm1 * bm1 / nbd) / (nbd - 1), 0) / nbd);
        se->var = sqrt(fmax((bv2 - bv1 * bv1 / nbd) / (nbd - 1), 0) / nbd);
    }
    free(x), free(y), free(s1), free(s2);
    return st;
}

rs_status rs_theory_mc_accum(const rs_mc_config *c, const size_t *obs, size_t n_obs, rs_mc_point *out)
{
    static const char who[] = "rs_theory_mc_accum";
    RS_CHECK(c && obs && out && n_obs > 0, RS_E_INVAL, "%s: NULL argument or no observations", who);
    RS_TRY(check_sizes(&c->fmt, c->chains, c->extent, who));
    if (c->storage == RS_STORE_SPLIT) RS_TRY(check_sizes(&c->hp, c->chains, c->extent, who));
    RS_CHECK(c->alpha > 0 && c->alpha <= 1, RS_E_INVAL, "%s: alpha = %g outside (0, 1]", who, c->alpha);
    RS_CHECK(c->storage == RS_STORE_CONV || c->window > 0, RS_E_INVAL, "%s: window must be >= 1", who);
    RS_CHECK(c->storage >= RS_STORE_CONV && c->storage <= RS_STORE_SPLIT, RS_E_INVAL, "%s: bad storage", who);
    for (size_t i = 0; i < n_obs; ++i)
        RS_CHECK(obs[i] >= 1 && (i == 0 || obs[i] > obs[i - 1]), RS_E_INVAL,
                 "%s: observation steps must be >= 1 and increasing (obs[%zu] = %zu)", who, i, obs[i]);
    const size_t M = c->chains, t_max = obs[n_obs - 1];
    const double a = c->alpha;
    float *x = malloc(M * sizeof *x), *y = malloc(M * sizeof *y);
    double *D = calloc(M, sizeof *D);   /* conv, shared: the stored copy; split: the LP copy */
    double *H = calloc(M, sizeof *H);   /* split: the HP copy */
    if (!x || !y || !D || !H) {
        free(x), free(y), free(D), free(H);
        return rs_error_set(RS_E_NOMEM, "%s: no memory for %zu chains", who, M);
    }
    const double aL = pow(a, (double)(c->window ? c->window : 1));
    rs_status st = RS_OK;
    size_t next = 0;
    for (size_t t = 1; t <= t_max && st == RS_OK; ++t) {
        int round_now = c->storage == RS_STORE_CONV || t % c->window == 0;
        if (!round_now) {
            /* between flushes the copy the outputs read decays; H (split) keeps its flush value */
            for (size_t i = 0; i < M; ++i) D[i] *= a;
        } else {
            /* the value rounded at this site; its index (step or flush) keys data and SR */
            rs_theory_mc_draw(c->seed, rs_stream_id(SLOT_DATA, 0, 0, t), M, x);
            st = rs_quantize_roundtrip(&c->fmt, x, M, c->extent, c->seed, rs_stream_id(SLOT_SR, 0, 0, t), y);
            if (st != RS_OK) break;
            if (c->storage == RS_STORE_CONV) {
                for (size_t i = 0; i < M; ++i) D[i] = a * D[i] + ((double)y[i] - (double)x[i]);
            } else if (c->storage == RS_STORE_SHARED) {
                /* D[i] already holds alpha^{L-1} D_(k-1) after the in-window decays */
                for (size_t i = 0; i < M; ++i) D[i] = a * D[i] + ((double)y[i] - (double)x[i]);
            } else {
                /* split: both copies round the same replayed state x; LP gets alpha^L D_HP(prev) */
                for (size_t i = 0; i < M; ++i) D[i] = aL * H[i] + ((double)y[i] - (double)x[i]);
                st = rs_quantize_roundtrip(&c->hp, x, M, c->extent, c->seed, rs_stream_id(SLOT_SR_HP, 0, 0, t), y);
                if (st != RS_OK) break;
                for (size_t i = 0; i < M; ++i) H[i] = aL * H[i] + ((double)y[i] - (double)x[i]);
            }
        }
        while (next < n_obs && obs[next] == t) {
            rs_mc_point *p = &out[next++];
            p->t = t;
            moments_batched(D, M, &p->mean, &p->var, &p->mean_se, &p->var_se);
        }
    }
    free(x), free(y), free(D), free(H);
    return st;
}

/* ---- experiment 2: a Mamba-2 head stored conventionally ---------------------------------- */

/* v (d_v) and k (d_k, unit norm) of global step s. */
static void state_inputs(uint64_t seed, size_t s, unsigned d_v, unsigned d_k, double alpha, double *v, double *k)
{
    uint64_t stream = rs_stream_id(SLOT_INPUT, 0, 0, s);
    normal_fill(seed, stream, 0, d_v, v);
    normal_fill(seed, stream, d_v, d_k, k);
    double sv = sqrt(1.0 - alpha * alpha), nk = 0;
    for (unsigned i = 0; i < d_v; ++i) v[i] *= sv;
    for (unsigned j = 0; j < d_k; ++j) nk += k[j] * k[j];
    nk = 1.0 / sqrt(nk);
    for (unsigned j = 0; j < d_k; ++j) k[j] *= nk;
}

rs_status rs_theory_mc_state(const rs_mc_state_config *c, const size_t *obs, size_t n_obs, rs_mc_state_point *out)
{
    static const char who[] = "rs_theory_mc_state";
    RS_CHECK(c && obs && out && n_obs > 0, RS_E_INVAL, "%s: NULL argument or no observations", who);
    RS_CHECK(c->d_v > 0 && c->d_k > 0 && c->replicas >= 2, RS_E_INVAL, "%s: need d_v, d_k >= 1 and >= 2 replicas",
             who);
    RS_CHECK(c->alpha > 0 && c->alpha < 1, RS_E_INVAL, "%s: alpha = %g outside (0, 1)", who, c->alpha);
    const size_t E = (size_t)c->d_v * c->d_k, R = c->replicas;
    size_t blk = rs_format_block(&c->fmt);
    RS_CHECK(blk == 0 || E % blk == 0, RS_E_SHAPE, "%s: d_v d_k = %zu is not a multiple of the block %zu", who, E,
             blk);
    for (size_t i = 0; i < n_obs; ++i)
        RS_CHECK(obs[i] >= 1 && (i == 0 || obs[i] > obs[i - 1]), RS_E_INVAL,
                 "%s: observation steps must be >= 1 and increasing (obs[%zu] = %zu)", who, i, obs[i]);
    const size_t t_max = obs[n_obs - 1];
    const double a = c->alpha, a2 = a * a;
    double *S = calloc(E, sizeof *S), *e = malloc(R * E * sizeof *e), *Pv = calloc(E, sizeof *Pv),
           *Pm = calloc(E, sizeof *Pm), *v = malloc(c->d_v * sizeof *v), *k = malloc(c->d_k * sizeof *k),
           *xd = malloc(E * sizeof *xd);
    float *Sh = malloc(R * E * sizeof *Sh), *x = malloc(E * sizeof *x);
    if (!S || !e || !Pv || !Pm || !v || !k || !xd || !Sh || !x) {
        free(S), free(e), free(Pv), free(Pm), free(v), free(k), free(xd), free(Sh), free(x);
        return rs_error_set(RS_E_NOMEM, "%s: no memory for %zu replicas of %zu elements", who, R, E);
    }
    for (size_t s = 0; s < c->burn_in; ++s) {
        state_inputs(c->seed, s, c->d_v, c->d_k, a, v, k);
        for (unsigned i = 0; i < c->d_v; ++i)
            for (unsigned j = 0; j < c->d_k; ++j) S[(size_t)i * c->d_k + j] = a * S[(size_t)i * c->d_k + j] + v[i] * k[j];
    }
    for (size_t i = 0; i < E; ++i) {
        float f0 = (float)S[i];
        double d0 = (double)f0 - S[i];
        for (size_t r = 0; r < R; ++r) Sh[r * E + i] = f0;
        Pm[i] = d0 * d0; /* E[D_0^2]: the common float rounding of the start state */
    }
    rs_status st = RS_OK;
    double sum_var_e = 0; /* sum over steps of sum_i Var_r(e_j[i]) */
    size_t next = 0;
    for (size_t t = 1; t <= t_max && st == RS_OK; ++t) {
        state_inputs(c->seed, c->burn_in + t - 1, c->d_v, c->d_k, a, v, k);
        for (size_t r = 0; r < R && st == RS_OK; ++r) {
            float *sr = Sh + r * E;
            for (unsigned i = 0; i < c->d_v; ++i)
                for (unsigned j = 0; j < c->d_k; ++j) {
                    size_t q = (size_t)i * c->d_k + j;
                    xd[q] = a * (double)sr[q] + v[i] * k[j];
                    x[q] = (float)xd[q];
                }
            st = rs_quantize_roundtrip(&c->fmt, x, E, E, c->seed + 1 + r, rs_stream_id(SLOT_SR, 0, 0, t), sr);
            if (st != RS_OK) {
                st = rs_error_set(st, "%s: step %zu, replica %zu: %s", who, t, r, rs_last_error());
                break;
            }
            for (size_t q = 0; q < E; ++q) e[r * E + q] = (double)sr[q] - xd[q];
        }
        if (st != RS_OK) break;
        for (unsigned i = 0; i < c->d_v; ++i)
            for (unsigned j = 0; j < c->d_k; ++j) S[(size_t)i * c->d_k + j] = a * S[(size_t)i * c->d_k + j] + v[i] * k[j];
        for (size_t q = 0; q < E; ++q) {
            double s1 = 0, s2 = 0;
            for (size_t r = 0; r < R; ++r) s1 += e[r * E + q], s2 += e[r * E + q] * e[r * E + q];
            double mu = s1 / (double)R, ve = 0;
            for (size_t r = 0; r < R; ++r) ve += (e[r * E + q] - mu) * (e[r * E + q] - mu);
            ve /= (double)(R - 1);
            Pv[q] = a2 * Pv[q] + ve;
            Pm[q] = a2 * Pm[q] + s2 / (double)R;
            sum_var_e += ve;
        }
        while (next < n_obs && obs[next] == t) {
            rs_mc_state_point *p = &out[next++];
            memset(p, 0, sizeof *p);
            p->t = t;
            double se2 = 0;
            for (size_t q = 0; q < E; ++q) {
                double s1 = 0, s2 = 0;
                for (size_t r = 0; r < R; ++r) {
                    double d = (double)Sh[r * E + q] - S[q];
                    s1 += d, s2 += d * d;
                }
                double mu = s1 / (double)R, vd = 0;
                for (size_t r = 0; r < R; ++r) {
                    double d = (double)Sh[r * E + q] - S[q] - mu;
                    vd += d * d;
                }
                vd /= (double)(R - 1);
                p->var_meas += vd;
                se2 += 2.0 * vd * vd / (double)(R - 1);
                p->var_pred += Pv[q];
                p->msd_meas += s2 / (double)R;
                p->msd_pred += Pm[q];
                p->state_ms += S[q] * S[q];
            }
            p->var_meas_se = sqrt(se2);
            double sig2 = sum_var_e / (double)t;
            p->var_closed = sig2 * -expm1(2.0 * (double)t * log(a)) / -expm1(2.0 * log(a));
        }
    }
    free(S), free(e), free(Pv), free(Pm), free(v), free(k), free(xd), free(Sh), free(x);
    return st;
}
