/* test_theory.c — Appendix C closed forms (replayssm/theory/rs_theory.h): the digest's numbers, algebraic
 * identities, FLOP and byte counts against explicitly instrumented implementations, the
 * optimal window against GSL's minimiser, the C.6 forms against explicit summation, and the
 * `replayssm theory` CLI (numbers printed, --out never overwritten without --force).
 *
 * Rounding of the quoted numbers (digest §6): "0.63" is 5/(2*4) = 0.625 rounded half away from
 * zero to 2 decimals (the exact (5 - 1/d_k)/(2b) for d_k = 128 is 0.6240, which prints as
 * 0.62); "1.25" is 5/(2*2) exactly; N = 81,920 is exact; "0.58x" is 609436/1048576 = 0.5812 to
 * 2 decimals; "L* ~ 13 / ~ 24" are 12.92 and 23.73 rounded to the nearest integer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "replayssm/quant/rs_format.h"    /* rs_format_parse, rs_format_bytes_per_element */
#include "rs_test_util.h" /* splitmix64 normals */
#include "replayssm/theory/rs_theory.h"

/* |a - b| <= tol, printing both on failure (this cmocka has no assert_double_equal) */
#define assert_close(a, b, tol) assert_close_((a), (b), (tol), #a, __FILE__, __LINE__)
static void assert_close_(double a, double b, double tol, const char *what, const char *file, int line)
{
    if (!(fabs(a - b) <= tol)) {
        fprintf(stderr, "%s:%d: %s = %.17g, expected %.17g (tol %.3g)\n", file, line, what, a, b, tol);
        fail();
    }
}

static const rs_model_shape *model(const char *name)
{
    const rs_model_shape *m = NULL;
    assert_int_equal(rs_theory_model_find(name, &m), RS_OK);
    assert_non_null(m);
    return m;
}

static double bpe(const char *fmt, size_t extent)
{
    rs_format f;
    assert_int_equal(rs_format_parse(fmt, &f), RS_OK);
    return rs_format_bytes_per_element(&f, extent);
}

/* ---- models ------------------------------------------------------------------------------ */

static void test_models(void **state)
{
    (void)state;
    assert_int_equal(rs_theory_model_count(), 4);
    const rs_model_shape *s = model("nemotron-3-super");
    assert_int_equal(s->ssm_layers, 40);
    assert_int_equal(s->attn_layers, 8);
    assert_int_equal(s->value_heads, 128);
    assert_int_equal(s->d_v, 64);
    assert_int_equal(s->d_k, 128);
    assert_ptr_equal(model("Nemotron-3-Super-120B"), s); /* full-name prefix, any case */
    assert_ptr_equal(model("nemotron-3-super-120b"), s);
    const rs_model_shape *n = model("nemotron-3-nano-4b");
    assert_int_equal(n->d_v, 80);
    assert_int_equal(n->value_heads, 96);
    assert_int_equal(model("qwen3.5-4b")->ssm, RS_SSM_GDN);
    assert_int_equal(model("qwen3.5-122b")->value_heads, 64);
    const rs_model_shape *m = NULL;
    assert_int_equal(rs_theory_model_find("mamba-7b", &m), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "nemotron-3-super"));
    assert_null(rs_theory_model_at(4));
}

/* ---- C.1 --------------------------------------------------------------------------------- */

/* One conventional step, instrumented: every scalar * and + on state-sized data counted. */
static double conv_step_counted(unsigned dv, unsigned dk, double alpha, const double *v, const double *k,
                                const double *q, double *S, double *o)
{
    double flops = 0;
    for (unsigned i = 0; i < dv; ++i)
        for (unsigned j = 0; j < dk; ++j) {
            double decayed = alpha * S[i * dk + j]; /* 1 */
            double outer = v[i] * k[j];             /* 1 */
            S[i * dk + j] = decayed + outer;        /* 1 */
            flops += 3;
        }
    for (unsigned i = 0; i < dv; ++i) {
        double acc = S[i * dk] * q[0]; /* dk multiplies, dk - 1 adds */
        flops += 1;
        for (unsigned j = 1; j < dk; ++j) acc += S[i * dk + j] * q[j], flops += 2;
        o[i] = acc;
    }
    return flops;
}

static void test_c1_intensity(void **state)
{
    (void)state;
    assert_true(rs_theory_intensity_limit(4.0) == 0.625);
    assert_true(rs_test_round_dp(rs_theory_intensity_limit(4.0), 2) == 0.63);
    assert_true(rs_theory_intensity_limit(2.0) == 1.25);
    /* exact: (5*8192 - 64) / 65536 = 40896/65536 = 0.6240234375 (binary exact) */
    assert_true(rs_theory_intensity(64, 128, 4.0) == 0.6240234375);
    assert_true(rs_test_round_dp(rs_theory_intensity(64, 128, 2.0), 2) == 1.25);
    /* the FLOP count is that of an explicit step */
    uint64_t rng = 7;
    unsigned shapes[][2] = {{64, 128}, {80, 128}, {128, 128}, {3, 5}};
    for (size_t s = 0; s < 4; ++s) {
        unsigned dv = shapes[s][0], dk = shapes[s][1];
        double *S = calloc((size_t)dv * dk, sizeof *S), *v = malloc(dv * sizeof *v), *k = malloc(dk * sizeof *k),
               *q = malloc(dk * sizeof *q), *o = malloc(dv * sizeof *o);
        for (unsigned i = 0; i < dv; ++i) v[i] = rs_test_normal(&rng);
        for (unsigned j = 0; j < dk; ++j) k[j] = rs_test_normal(&rng), q[j] = rs_test_normal(&rng);
        double counted = conv_step_counted(dv, dk, 0.9, v, k, q, S, o);
        assert_true(counted == rs_theory_conv_step_flops(dv, dk));
        assert_true(rs_theory_conv_step_bytes(dv, dk, 4.0) == 8.0 * dv * dk);
        free(S), free(v), free(k), free(q), free(o);
    }
    /* every format: intensity = (5 - 1/d_k)/(2b), b from quant/ (fp8: 1 + 4/128 B) */
    assert_true(bpe("fp8-rtn", 8192) == 1.03125);
    const char *fmts[] = {"fp32", "fp16-rtn", "bf16-sr", "fp8-rtn", "nvfp4-rtn"};
    for (size_t i = 0; i < 5; ++i) {
        double b = bpe(fmts[i], 8192);
        assert_close(rs_theory_intensity(64, 128, b), (5.0 - 1.0 / 128) / (2 * b), 1e-15);
    }
}

/* ---- C.2 --------------------------------------------------------------------------------- */

static void test_c2_crossover(void **state)
{
    (void)state;
    rs_crossover c;
    assert_int_equal(rs_theory_crossover(model("nemotron-3-super"), 4.0, &c), RS_OK);
    assert_true(c.ssm_bytes_per_step == 320.0 * 1024 * 1024); /* 40 x (4 MiB read + 4 MiB write) */
    assert_true(c.attn_bytes_per_token == 4096.0);            /* 8 x 0.5 KiB */
    assert_true(c.n_tokens == 81920.0);
    /* per-layer state: 128 x 64 x 128 x 4 B = 4 MiB, "an attention layer's 8K FP8 KV" */
    assert_true(128.0 * 64 * 128 * 4 == 4.0 * 1024 * 1024);
    /* an FP16 state halves the crossover */
    assert_int_equal(rs_theory_crossover(model("nemotron-3-super"), 2.0, &c), RS_OK);
    assert_true(c.n_tokens == 40960.0);
    assert_int_equal(rs_theory_crossover(model("qwen3.5-122b"), 4.0, &c), RS_E_UNSUPPORTED);
    assert_int_equal(rs_theory_crossover(model("qwen3.5-4b"), 0.0, &c), RS_E_INVAL);
}

/* ---- C.3 --------------------------------------------------------------------------------- */

/* Algorithm 1 over one window, counting bytes as a kernel moves them: each step reads the
 * checkpoint and the h-1 earlier records (the current one is on chip); a non-flush step
 * writes its record; the flush step writes the checkpoint. */
static double alg1_window_bytes(unsigned L, double state_bytes, double r)
{
    double bytes = 0;
    for (unsigned h = 1; h <= L; ++h) {
        bytes += state_bytes;        /* read S_ckpt */
        bytes += (double)(h - 1) * r; /* read B[1:h-1] */
        if (h < L) bytes += r;        /* append x to the ring */
        else bytes += state_bytes;    /* flush: write S_ckpt */
    }
    return bytes;
}

static void test_c3_traffic(void **state)
{
    (void)state;
    const rs_model_shape *s = model("nemotron-3-super");
    const double r = rs_theory_record_bytes(s->d_v, s->d_k);
    assert_true(r == 388.0);
    assert_true(rs_theory_mconv(16, 64, 128, 4.0) == 1048576.0);
    assert_true(rs_theory_mreplay(16, 64, 128, 4.0, r) == 609436.0); /* 557056 + 135 x 388 */
    double ratio = rs_theory_mreplay(16, 64, 128, 4.0, r) / rs_theory_mconv(16, 64, 128, 4.0);
    assert_true(rs_test_round_dp(ratio, 2) == 0.58);
    assert_true(rs_test_round_dp(1.0 / ratio, 1) == 1.7);
    assert_true(17.0 / 32.0 == 0.53125); /* checkpoint term (L+1)/(2L) at L = 16: "0.53" */
    const char *fmts[] = {"fp32", "fp16-sr", "bf16-rtn", "fp8-rtn", "nvfp4-rtn"};
    for (size_t mi = 0; mi < rs_theory_model_count(); ++mi) {
        const rs_model_shape *m = rs_theory_model_at(mi);
        double rm = rs_theory_record_bytes(m->d_v, m->d_k);
        for (size_t f = 0; f < 5; ++f) {
            double b = bpe(fmts[f], (size_t)m->d_v * m->d_k), MS = b * m->d_v * m->d_k;
            /* L = 1: ReplaySSM is conventional decode (read + write, no records) */
            assert_true(rs_theory_mreplay(1, m->d_v, m->d_k, b, rm) == rs_theory_mconv(1, m->d_v, m->d_k, b));
            for (unsigned L = 1; L <= 64; ++L) {
                assert_close(rs_theory_mreplay(L, m->d_v, m->d_k, b, rm), alg1_window_bytes(L, MS, rm),
                                    1e-9 * rs_theory_mconv(L, m->d_v, m->d_k, b));
                /* split with equal formats costs exactly one extra checkpoint write */
                assert_close(rs_theory_msplit(L, m->d_v, m->d_k, b, b, rm) -
                                        rs_theory_mreplay(L, m->d_v, m->d_k, b, rm),
                                    MS, 1e-9 * MS);
            }
        }
    }
}

/* ---- C.4 --------------------------------------------------------------------------------- */

typedef struct {
    double main;  /* state- and record-sized work, the terms the paper counts */
    double aux;   /* scalar decay products and per-record scalings (lower order) */
} flop_count;

/* h buffered records + the current one (h+1 in all), decays a[0..h], window gamma products.
 * Dot products and accumulations start from zero: one multiply + one add per term. */
static void materialised(unsigned h, unsigned dv, unsigned dk, const double *Sc, const double *a, const double *V,
                         const double *K, const double *q, double *o, flop_count *c)
{
    double *S = calloc((size_t)dv * dk, sizeof *S);
    double gam = 1;
    for (unsigned j = 0; j <= h; ++j) gam *= a[j], c->aux += 1; /* gamma_{1:h+1} */
    for (size_t e = 0; e < (size_t)dv * dk; ++e) S[e] += gam * Sc[e], c->main += 2;
    for (unsigned j = 0; j <= h; ++j) {
        double w = 1;
        for (unsigned l = j + 1; l <= h; ++l) w *= a[l], c->aux += 1; /* gamma_{j+1:h+1} */
        for (unsigned i = 0; i < dv; ++i) {
            double wv = w * V[j * dv + i];
            c->aux += 1;
            for (unsigned m = 0; m < dk; ++m) S[i * dk + m] += wv * K[j * dk + m], c->main += 2;
        }
    }
    for (unsigned i = 0; i < dv; ++i) {
        double acc = 0;
        for (unsigned m = 0; m < dk; ++m) acc += S[i * dk + m] * q[m], c->main += 2;
        o[i] = acc;
    }
    free(S);
}

static void output_only(unsigned h, unsigned dv, unsigned dk, const double *Sc, const double *a, const double *V,
                        const double *K, const double *q, double *o, flop_count *c)
{
    double gam = 1;
    for (unsigned j = 0; j <= h; ++j) gam *= a[j], c->aux += 1;
    for (unsigned i = 0; i < dv; ++i) {
        double acc = 0;
        for (unsigned m = 0; m < dk; ++m) acc += Sc[i * dk + m] * q[m], c->main += 2;
        o[i] = gam * acc;
        c->aux += 1;
    }
    for (unsigned j = 0; j <= h; ++j) {
        double kq = 0;
        for (unsigned m = 0; m < dk; ++m) kq += K[j * dk + m] * q[m], c->main += 2;
        double w = 1;
        for (unsigned l = j + 1; l <= h; ++l) w *= a[l], c->aux += 1;
        double coef = w * kq;
        c->aux += 1;
        for (unsigned i = 0; i < dv; ++i) o[i] += coef * V[j * dv + i], c->main += 2;
    }
}

static void test_c4_flops(void **state)
{
    (void)state;
    uint64_t rng = 11;
    unsigned dims[][2] = {{64, 128}, {80, 128}, {128, 128}};
    for (size_t d = 0; d < 3; ++d) {
        unsigned dv = dims[d][0], dk = dims[d][1];
        for (unsigned h = 0; h < 16; h += 5) {
            double *Sc = malloc((size_t)dv * dk * sizeof *Sc), *a = malloc((h + 1) * sizeof *a),
                   *V = malloc((size_t)(h + 1) * dv * sizeof *V), *K = malloc((size_t)(h + 1) * dk * sizeof *K),
                   *q = malloc(dk * sizeof *q), *o1 = malloc(dv * sizeof *o1), *o2 = malloc(dv * sizeof *o2);
            for (size_t e = 0; e < (size_t)dv * dk; ++e) Sc[e] = rs_test_normal(&rng);
            for (unsigned j = 0; j <= h; ++j) a[j] = 0.5 + 0.5 * rs_test_uniform(&rng);
            for (size_t e = 0; e < (size_t)(h + 1) * dv; ++e) V[e] = rs_test_normal(&rng);
            for (size_t e = 0; e < (size_t)(h + 1) * dk; ++e) K[e] = rs_test_normal(&rng);
            for (unsigned m = 0; m < dk; ++m) q[m] = rs_test_normal(&rng);
            flop_count cm = {0, 0}, co = {0, 0};
            materialised(h, dv, dk, Sc, a, V, K, q, o1, &cm);
            output_only(h, dv, dk, Sc, a, V, K, q, o2, &co);
            /* both routes compute the same output (reassociation only: 1e-12 relative) */
            double nrm = 0;
            for (unsigned i = 0; i < dv; ++i) nrm = fmax(nrm, fabs(o1[i]));
            for (unsigned i = 0; i < dv; ++i) assert_close(o1[i], o2[i], 1e-12 * nrm);
            assert_true(cm.main == rs_theory_flops_materialised(h, dv, dk));
            assert_true(co.main == rs_theory_flops_output_only(h, dv, dk));
            /* what the paper leaves out is lower order: < 1% of each count */
            assert_true(cm.aux < 0.01 * cm.main && co.aux < 0.01 * co.main);
            free(Sc), free(a), free(V), free(K), free(q), free(o1), free(o2);
        }
    }
    /* "compressed by d_v d_k/(d_v + d_k) ~ 43x" for 64 x 128 */
    assert_true(round(64.0 * 128 / (64 + 128)) == 43.0);
}

/* ---- C.5 --------------------------------------------------------------------------------- */

static void test_c5_window(void **state)
{
    (void)state;
    const double MS = 4.0 * 64 * 128, r = 388.0;
    assert_true(round(MS / r) == 84.0); /* "M_S/r ~ 84" */
    double L1, L4, n1, n4;
    assert_int_equal(rs_theory_optimal_window(MS, r, 1, 1, &L1), RS_OK);
    assert_int_equal(rs_theory_optimal_window(MS, r, 4, 3.5, &L4), RS_OK);
    assert_true(round(L1) == 13.0);
    assert_true(round(L4) == 24.0);
    assert_close(L1, sqrt(2.0 * (MS / r - 1)), 1e-14);
    /* independent check: GSL Brent minimum of f(L) */
    assert_int_equal(rs_theory_optimal_window_numeric(MS, r, 1, 1, 256, &n1), RS_OK);
    assert_int_equal(rs_theory_optimal_window_numeric(MS, r, 4, 3.5, 256, &n4), RS_OK);
    assert_close(n1, L1, 1e-6 * L1);
    assert_close(n4, L4, 1e-6 * L4);
    /* standard decode: f(L) is M_replay(L)/L per token with M_S = 4 d_v d_k */
    for (unsigned L = 1; L <= 64; ++L)
        assert_close(rs_theory_amortised_bytes(L, MS, r, 1, 1), rs_theory_mreplay(L, 64, 128, 4.0, r) / L,
                            1e-12 * MS);
    /* of the swept powers of two the best is 16 (the paper's measured best) */
    double f8 = rs_theory_amortised_bytes(8, MS, r, 1, 1), f16 = rs_theory_amortised_bytes(16, MS, r, 1, 1),
           f32 = rs_theory_amortised_bytes(32, MS, r, 1, 1);
    assert_true(f16 < f8 && f16 < f32);
    double L;
    assert_int_equal(rs_theory_optimal_window(MS, r, 100, 1, &L), RS_E_INVAL); /* M_S/r < T */
    assert_int_equal(rs_theory_optimal_window(MS, r, 4, 5, &L), RS_E_INVAL);   /* a_bar > T */
    assert_int_equal(rs_theory_optimal_window(0, r, 1, 1, &L), RS_E_INVAL);
}

/* ---- C.6 --------------------------------------------------------------------------------- */

static void test_c6_conv(void **state)
{
    (void)state;
    const rs_err_moments q = {-2.5e-3, 4.0e-4};
    const double alphas[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    for (size_t ai = 0; ai < 5; ++ai) {
        double a = alphas[ai];
        rs_err_moments m;
        assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &q, NULL, a, 0, INFINITY, &m), RS_OK);
        assert_close(m.mean, q.mean / (1 - a), 1e-12 * fabs(q.mean / (1 - a)));
        assert_close(m.var, q.var / (1 - a * a), 1e-12 * q.var / (1 - a * a));
        /* finite t: explicit recursion D_t = a D_{t-1} + e in long double */
        long double mu = 0, var = 0;
        for (unsigned t = 1; t <= 3000; ++t) {
            mu = (long double)a * mu + q.mean;
            var = (long double)a * a * var + q.var;
            if (t % 97 == 1 || t == 3000) {
                assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &q, NULL, a, 0, t, &m), RS_OK);
                assert_close(m.mean, (double)mu, 1e-11 * fabs((double)mu));
                assert_close(m.var, (double)var, 1e-11 * (double)var);
            }
        }
    }
    rs_err_moments m;
    assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &q, NULL, 1.0, 0, 1000, &m), RS_OK);
    assert_close(m.mean, 1000 * q.mean, 1e-12);
    assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &q, NULL, 1.0, 0, INFINITY, &m), RS_E_INVAL);
    assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &q, NULL, 0.0, 0, 10, &m), RS_E_INVAL);
    assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &q, NULL, 1.5, 0, 10, &m), RS_E_INVAL);
    assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &q, NULL, 0.9, 0, -1, &m), RS_E_INVAL);
    assert_int_equal(rs_theory_err_accum(RS_STORE_SHARED, &q, NULL, 0.9, 0, 10, &m), RS_E_INVAL);
}

static void test_c6_shared_split(void **state)
{
    (void)state;
    const rs_err_moments lp = {-5.8e-3, 9.0e-3}, hp = {1e-6, 8.6e-8};
    const double alphas[] = {0.9, 0.99, 0.999};
    const unsigned L = 16;
    for (size_t ai = 0; ai < 3; ++ai) {
        double a = alphas[ai], aL = pow(a, L);
        rs_err_moments m, s;
        /* limits after a flush: b/(1-a^L), s2/(1-a^{2L}); split: one rounding */
        assert_int_equal(rs_theory_err_accum(RS_STORE_SHARED, &lp, NULL, a, L, INFINITY, &m), RS_OK);
        assert_close(m.mean, lp.mean / (1 - aL), 1e-12 * fabs(m.mean));
        assert_close(m.var, lp.var / (1 - aL * aL), 1e-12 * m.var);
        assert_int_equal(rs_theory_err_accum(RS_STORE_SPLIT, &lp, NULL, a, L, INFINITY, &s), RS_OK);
        assert_true(s.mean == lp.mean && s.var == lp.var);
        /* step by step: shared and split (with an HP rounding) against explicit recursions */
        long double d_m = 0, d_v = 0, h_m = 0, h_v = 0, o_m = 0, o_v = 0;
        for (unsigned t = 1; t <= 40 * L; ++t) {
            if (t % L) {
                d_m *= a, d_v *= (long double)a * a, o_m *= a, o_v *= (long double)a * a;
            } else {
                d_m = a * d_m + lp.mean, d_v = (long double)a * a * d_v + lp.var;
                o_m = aL * h_m + lp.mean, o_v = (long double)aL * aL * h_v + lp.var;
                h_m = aL * h_m + hp.mean, h_v = (long double)aL * aL * h_v + hp.var;
            }
            assert_int_equal(rs_theory_err_accum(RS_STORE_SHARED, &lp, NULL, a, L, t, &m), RS_OK);
            assert_close(m.mean, (double)d_m, 1e-11 * fabs(lp.mean / (1 - aL)));
            assert_close(m.var, (double)d_v, 1e-11 * lp.var / (1 - aL * aL));
            assert_int_equal(rs_theory_err_accum(RS_STORE_SPLIT, &lp, &hp, a, L, t, &s), RS_OK);
            assert_close(s.mean, (double)o_m, 1e-11 * fabs(lp.mean) + 1e-15);
            assert_close(s.var, (double)o_v, 1e-11 * lp.var);
            /* split with an exact HP: never more than one rounding, whatever t */
            assert_int_equal(rs_theory_err_accum(RS_STORE_SPLIT, &lp, NULL, a, L, t, &s), RS_OK);
            assert_true(fabs(s.mean) <= fabs(lp.mean) && s.var <= lp.var);
        }
        /* shared beats conventional, split beats shared (same per-rounding moments) */
        rs_err_moments c;
        assert_int_equal(rs_theory_err_accum(RS_STORE_CONV, &lp, NULL, a, 0, INFINITY, &c), RS_OK);
        assert_true(fabs(c.mean) > fabs(m.mean) && c.var > m.var);
    }
}

/* ---- CLI ---------------------------------------------------------------------------------- */

static char *run_cli(const char *args, int *rc)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s theory %s 2>&1", RS_CLI_PATH, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

static void test_cli(void **state)
{
    (void)state;
    int rc;
    char *out = run_cli("--help", &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "--window"));
    free(out);
    char path[256];
    snprintf(path, sizeof path, "/tmp/rs_test_theory_%ld.h5", (long)getpid());
    remove(path);
    char args[512];
    snprintf(args, sizeof args, "--model nemotron-3-super --mc-steps 200 --out %s", path);
    out = run_cli(args, &rc);
    if (rc != 0) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "0.63"));
    assert_non_null(strstr(out, "1.25"));
    assert_non_null(strstr(out, "81920"));
    assert_non_null(strstr(out, "0.581"));
    assert_non_null(strstr(out, "12.92"));
    assert_non_null(strstr(out, "23.73"));
    free(out);
    size_t size0 = 0;
    void *before = rs_test_read_file(path, &size0);
    assert_non_null(before);
    /* never overwrite without --force */
    out = run_cli(args, &rc);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "--force"));
    free(out);
    size_t size1 = 0;
    void *after = rs_test_read_file(path, &size1);
    assert_non_null(after);
    assert_true(size0 == size1 && memcmp(before, after, size0) == 0);
    free(before), free(after);
    snprintf(args, sizeof args, "--model nemotron-3-super --mc-steps 200 --out %s --force", path);
    out = run_cli(args, &rc);
    assert_int_equal(rc, 0);
    free(out);
    remove(path);
    out = run_cli("--model nope", &rc);
    assert_int_equal(rc, 2);
    free(out);
    out = run_cli("--window 0", &rc);
    assert_int_equal(rc, 2);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models),      cmocka_unit_test(test_c1_intensity), cmocka_unit_test(test_c2_crossover),
        cmocka_unit_test(test_c3_traffic),  cmocka_unit_test(test_c4_flops),     cmocka_unit_test(test_c5_window),
        cmocka_unit_test(test_c6_conv),     cmocka_unit_test(test_c6_shared_split), cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
