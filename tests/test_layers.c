/* test_layers.c — the scalar layers (eval/model/rs_layers.c) and the CPU backend ops
 * (rs_backend_cpu.c) against float64 references written out here independently, plus a few
 * hand-computed values (L2-norm eps on the sum, RoPE rotation, softplus threshold).
 * Tolerances: a handful of fp32 roundings relative to the row's scale (stated per check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/rs_backend.h"
#include "model/rs_layers.h"
#include "rs_test_util.h"

static void fill_(float *x, size_t n, uint64_t *s, double scale)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * rs_test_normal(s));
}

static double silu_d_(double x)
{
    return x / (1.0 + exp(-x));
}

static double maxabs_(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* ---- activations ------------------------------------------------------------------------ */

static void test_activations(void **st)
{
    (void)st;
    const float xs[] = {-100.0f, -30.0f, -5.0f, -0.5f, 0.0f, 1e-3f, 0.7f, 5.0f, 19.9f, 20.5f, 80.0f};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        const double x = xs[i];
        const double sp = x > 20.0 ? x : log1p(exp(x)); /* torch threshold 20 */
        assert_true(fabs(rs_softplus(xs[i]) - sp) <= 2e-7 * fmax(sp, 1e-30) + 1e-45);
        const double sg = 1.0 / (1.0 + exp(-x));
        assert_true(fabs(rs_sigmoid(xs[i]) - sg) <= 2e-7 * sg + 1e-37);
        /* absolute 1e-37: silu(-100) ~ -4e-42 is an fp32 subnormal with few significant bits */
        assert_true(fabs(rs_silu(xs[i]) - x * sg) <= 3e-7 * fabs(x * sg) + 1e-37);
    }
    assert_true(rs_softplus(25.0f) == 25.0f); /* above the threshold: identity, exactly */
    assert_true(isfinite(rs_sigmoid(-200.0f)) && rs_sigmoid(-200.0f) >= 0.0f);
}

/* ---- norms ------------------------------------------------------------------------------ */

static void test_rmsnorm(void **st)
{
    (void)st;
    uint64_t s = 11;
    enum { n = 96 };
    float x[n], w[n], y[n];
    double ref[n];
    fill_(x, n, &s, 3.0);
    fill_(w, n, &s, 0.2);
    const float eps = 1e-6f;
    for (int kind = 0; kind < 2; kind++) {
        double ss = 0;
        for (size_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
        const double r = 1.0 / sqrt(ss / n + eps);
        for (size_t i = 0; i < n; i++) ref[i] = x[i] * r * (kind ? 1.0 + w[i] : (double)w[i]);
        rs_rmsnorm(x, n, w, eps, kind ? RS_NORM_ONE_PLUS : RS_NORM_PLAIN, y);
        const double m = maxabs_(ref, n);
        for (size_t i = 0; i < n; i++) assert_true(fabs(y[i] - ref[i]) <= 1e-6 * m); /* ~4 roundings */
    }
    /* in place */
    float xc[n];
    memcpy(xc, x, sizeof xc);
    rs_rmsnorm(xc, n, w, eps, RS_NORM_PLAIN, xc);
    rs_rmsnorm(x, n, w, eps, RS_NORM_PLAIN, y);
    assert_memory_equal(xc, y, sizeof y);
}

static void test_rmsnorm_gated(void **st)
{
    (void)st;
    uint64_t s = 12;
    enum { n = 64, gs = 16 };
    float x[n], z[n], w[n], y[n];
    double ref[n];
    fill_(x, n, &s, 2.0);
    fill_(z, n, &s, 1.5);
    fill_(w, n, &s, 1.0);
    const float eps = 1e-5f;
    /* gate before norm (Zamba2 / Mamba-2): per-element weight w[n], groups of gs */
    for (size_t g0 = 0; g0 < n; g0 += gs) {
        double t[gs], ss = 0;
        for (size_t i = 0; i < gs; i++) {
            t[i] = x[g0 + i] * silu_d_(z[g0 + i]);
            ss += t[i] * t[i];
        }
        const double r = 1.0 / sqrt(ss / gs + eps);
        for (size_t i = 0; i < gs; i++) ref[g0 + i] = w[g0 + i] * t[i] * r;
    }
    rs_rmsnorm_gated(x, z, n, gs, w, n, eps, RS_GATE_BEFORE_NORM, y);
    double m = maxabs_(ref, n);
    for (size_t i = 0; i < n; i++) assert_true(fabs(y[i] - ref[i]) <= 2e-6 * m);
    /* norm before gate (Qwen3.5 GDN): one weight w[gs] shared by all groups (per head) */
    for (size_t g0 = 0; g0 < n; g0 += gs) {
        double ss = 0;
        for (size_t i = 0; i < gs; i++) ss += (double)x[g0 + i] * x[g0 + i];
        const double r = 1.0 / sqrt(ss / gs + eps);
        for (size_t i = 0; i < gs; i++) ref[g0 + i] = w[i] * x[g0 + i] * r * silu_d_(z[g0 + i]);
    }
    rs_rmsnorm_gated(x, z, n, gs, w, gs, eps, RS_GATE_AFTER_NORM, y);
    m = maxabs_(ref, n);
    for (size_t i = 0; i < n; i++) assert_true(fabs(y[i] - ref[i]) <= 2e-6 * m);
}

static void test_l2norm_eps_on_sum(void **st)
{
    (void)st;
    /* sum of squares 1e-8: eps 1e-6 on the SUM gives 1e-4 / sqrt(1.01e-6) = 0.0995037...;
     * eps on the mean (n = 2) would give 1e-4 / sqrt(1.005e-6) = 0.0997509... */
    float x[2] = {1e-4f, 0.0f};
    rs_l2norm(x, 2, 1e-6f);
    const double want = 1e-4 / sqrt(1e-8 + 1e-6);
    assert_true(fabs(x[0] - want) <= 1e-6 * want);
    assert_true(x[1] == 0.0f);
    /* a large vector becomes unit-norm */
    uint64_t s = 3;
    float v[128];
    fill_(v, 128, &s, 5.0);
    rs_l2norm(v, 128, 1e-6f);
    double nn = 0;
    for (int i = 0; i < 128; i++) nn += (double)v[i] * v[i];
    assert_true(fabs(sqrt(nn) - 1.0) <= 1e-6);
}

/* ---- causal conv1d with carried state ------------------------------------------------- */

static void test_conv1d_chunks(void **st)
{
    (void)st;
    enum { C = 70, K = 4, T = 23 };
    uint64_t s = 21;
    float x[T * C], w[C * K], b[C], out[T * C], state[C * (K - 1)];
    fill_(x, T * C, &s, 1.0);
    fill_(w, C * K, &s, 0.5);
    fill_(b, C, &s, 0.1);
    for (int silu = 0; silu < 2; silu++) {
        memset(state, 0, sizeof state);
        /* chunks of 1, 3, 7 and the rest: the carried state must make them one sequence */
        const size_t cuts[] = {0, 1, 4, 11, T};
        for (int c = 0; c + 1 < 5; c++) {
            const size_t t0 = cuts[c], nt = cuts[c + 1] - cuts[c];
            rs_conv1d_causal(x + t0 * C, C, nt, state, w, silu ? b : NULL, K, 0, C, silu,
                             out + t0 * C, C);
        }
        for (size_t t = 0; t < T; t++)
            for (size_t ch = 0; ch < C; ch++) {
                double acc = silu ? b[ch] : 0.0;
                for (size_t i = 0; i < K; i++) {
                    const long src = (long)t - (long)(K - 1) + (long)i; /* zero left padding */
                    if (src >= 0) acc += (double)w[ch * K + i] * x[(size_t)src * C + ch];
                }
                const double ref = silu ? silu_d_(acc) : acc;
                assert_true(fabs(out[t * C + ch] - ref) <= 1e-6 * (1.0 + fabs(ref)));
            }
        /* the state holds the last K-1 inputs, oldest first */
        for (size_t ch = 0; ch < C; ch++)
            for (size_t i = 0; i < K - 1; i++)
                assert_true(state[ch * (K - 1) + i] == x[(T - (K - 1) + i) * C + ch]);
    }
}

/* ---- RoPE --------------------------------------------------------------------------------- */

static void test_rope(void **st)
{
    (void)st;
    float inv[2], cs[2], sn[2];
    rs_rope_inv_freq(10000.0, 4, inv); /* 1, 10000^-0.5 = 0.01 */
    assert_true(inv[0] == 1.0f && fabs(inv[1] - 0.01) <= 1e-9);
    rs_rope_cos_sin(inv, 4, 3, cs, sn);
    float x[6] = {1, 2, 3, 4, 5, 6};
    rs_rope_apply(x, 4, cs, sn);
    /* pairs (0, 2) at angle 3, (1, 3) at angle 0.03; dims 4, 5 untouched */
    assert_true(fabs(x[0] - (1 * cos(3.0) - 3 * sin(3.0))) <= 1e-6);
    assert_true(fabs(x[2] - (3 * cos(3.0) + 1 * sin(3.0))) <= 1e-6);
    assert_true(fabs(x[1] - (2 * cos(0.03) - 4 * sin(0.03))) <= 1e-6);
    assert_true(fabs(x[3] - (4 * cos(0.03) + 2 * sin(0.03))) <= 1e-6);
    assert_true(x[4] == 5.0f && x[5] == 6.0f);
    /* partial factor 0.25 of head 256 at theta 1e7 (Qwen3.5): 32 frequencies 1e7^(-2i/64) */
    float inv2[32];
    rs_rope_inv_freq(1e7, 64, inv2);
    for (int i = 0; i < 32; i++) assert_true(fabs(inv2[i] - pow(1e7, -2.0 * i / 64)) <= 1e-6 * inv2[i]);
}

/* ---- backend ops --------------------------------------------------------------------------- */

static void test_backend_linear(void **st)
{
    (void)st;
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_OK);
    enum { M = 9, N = 13, K = 37 };
    uint64_t s = 5;
    float X[M * K], W[N * K], Y[M * N], Y0[M * N];
    fill_(X, M * K, &s, 1.0);
    fill_(W, N * K, &s, 1.0);
    fill_(Y0, M * N, &s, 1.0);
    for (int acc = 0; acc < 2; acc++) {
        memcpy(Y, Y0, sizeof Y);
        assert_int_equal(be->ops->linear(be, M, N, K, X, K, W, (float)acc, Y, N), RS_OK);
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                double r = acc ? Y0[i * N + j] : 0.0, a = acc ? fabs(Y0[i * N + j]) : 0.0;
                for (size_t k = 0; k < K; k++) {
                    r += (double)X[i * K + k] * W[j * K + k];
                    a += fabs((double)X[i * K + k] * W[j * K + k]);
                }
                assert_true(fabs(Y[i * N + j] - r) <= K * 1.2e-7 * a); /* K roundings */
            }
    }
    rs_backend_destroy(be);
}

/* RS_CPU_GEMM=loop (the rounding-order yardstick of docs/evaluator.md): within the same bound of
 * the double result, bit for bit the sequential fp32 dot product it documents (products rounded,
 * k ascending, beta * Y added last), and another value is refused at create */
static void test_backend_linear_loop(void **st)
{
    (void)st;
    rs_backend *be = NULL;
    assert_int_equal(setenv("RS_CPU_GEMM", "bogus", 1), 0);
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_E_INVAL);
    assert_null(be);
    assert_int_equal(setenv("RS_CPU_GEMM", "loop", 1), 0);
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_OK);
    unsetenv("RS_CPU_GEMM");
    enum { M = 7, N = 11, K = 300 };
    uint64_t s = 9;
    static float X[M * K], W[N * K], Y[M * N], Y0[M * N];
    fill_(X, M * K, &s, 1.0);
    fill_(W, N * K, &s, 1.0);
    fill_(Y0, M * N, &s, 1.0);
    for (int acc = 0; acc < 2; acc++) {
        memcpy(Y, Y0, sizeof Y);
        assert_int_equal(be->ops->linear(be, M, N, K, X, K, W, (float)acc, Y, N), RS_OK);
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                volatile float f = 0.0f; /* volatile: every product and sum rounded to fp32 */
                double r = 0.0, a = 0.0;
                for (size_t k = 0; k < K; k++) {
                    volatile float p = X[i * K + k] * W[j * K + k];
                    f = f + p;
                    r += (double)X[i * K + k] * W[j * K + k];
                    a += fabs((double)X[i * K + k] * W[j * K + k]);
                }
                volatile float want = acc ? f + 1.0f * Y0[i * N + j] : f;
                assert_true(Y[i * N + j] == want);
                if (acc) r += Y0[i * N + j], a += fabs(Y0[i * N + j]);
                assert_true(fabs(Y[i * N + j] - r) <= (K + 1) * 1.2e-7 * a); /* K + 1 roundings */
            }
    }
    rs_backend_destroy(be);
}

static void test_backend_attention(void **st)
{
    (void)st;
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_OK);
    enum { H = 4, Hkv = 2, hd = 16, cap = 40, n_past = 11, T = 5 };
    const size_t qh = 2 * hd; /* queries with a gate half between heads (Qwen3.5 layout) */
    uint64_t s = 8;
    float Q[T * H * 2 * hd], Kc[Hkv * cap * hd], Vc[Hkv * cap * hd], O[T * H * hd];
    float scratch[2 * cap];
    fill_(Q, T * H * qh, &s, 1.0);
    fill_(Kc, Hkv * cap * hd, &s, 1.0);
    fill_(Vc, Hkv * cap * hd, &s, 1.0);
    rs_attn_args a = {T, n_past, H, Hkv, hd, Q, H * qh, qh, Kc, Vc, cap, 0.25f, O, H * hd, scratch, 1};
    assert_int_equal(be->ops->attention(be, &a), RS_OK);
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++) {
            const size_t g = h / (H / Hkv), n = n_past + t + 1; /* causal */
            const float *q = Q + t * H * qh + h * qh;
            double p[cap], mx = -1e300, sum = 0;
            for (size_t j = 0; j < n; j++) {
                double d = 0;
                for (size_t i = 0; i < hd; i++) d += (double)q[i] * Kc[(g * cap + j) * hd + i];
                p[j] = 0.25 * d;
                mx = fmax(mx, p[j]);
            }
            for (size_t j = 0; j < n; j++) sum += (p[j] = exp(p[j] - mx));
            for (size_t i = 0; i < hd; i++) {
                double o = 0;
                for (size_t j = 0; j < n; j++) o += p[j] / sum * Vc[(g * cap + j) * hd + i];
                assert_true(fabs(O[t * H * hd + h * hd + i] - o) <= 2e-6 * (1.0 + fabs(o)));
            }
        }
    /* the scalar reference agrees too */
    float ref[hd];
    rs_attention_row_ref(Q, Kc, Vc, n_past + 1, hd, 0.25f, scratch, ref);
    for (size_t i = 0; i < hd; i++) assert_true(fabs(O[i] - ref[i]) <= 2e-6 * (1.0 + fabs(ref[i])));
    /* capacity exceeded: an error, not a read past the cache */
    a.n_past = cap - 2;
    assert_int_equal(be->ops->attention(be, &a), RS_E_SHAPE);
    rs_backend_destroy(be);
}

/* RS_CPU_ATTN=f64 (the attention-rounding yardstick of docs/evaluator.md): scores, softmax and P V
 * in double, rounded once, so over 8K keys its output is the float64 attention's rounding: bound
 * 2^-23 of sum_j p_j |v_j| (the final rounding <= 2^-24 |o| <= 2^-24 sum p|v|, twice for slack; the
 * double steps add ~1e-15), and closer than the default fp32 sums (what it is for); bit-identical
 * for 1 and 2 threads; another value is refused at create. */
static void test_backend_attention_f64(void **st)
{
    (void)st;
    enum { H = 2, Hkv = 1, hd = 32, cap = 8192, T = 3, n_past = cap - T };
    static float Q[T * H * hd], Kc[cap * hd], Vc[cap * hd], O32[T * H * hd], O64[T * H * hd], O64b[T * H * hd];
    static float scratch[2 * cap];
    static double p[cap];
    uint64_t s = 21;
    fill_(Q, T * H * hd, &s, 1.0);
    fill_(Kc, cap * hd, &s, 1.0);
    fill_(Vc, cap * hd, &s, 1.0);
    for (size_t i = 0; i < cap * hd; i++) Vc[i] += 0.5f; /* a mean: the sums grow, their rounding shows */
    rs_backend *be = NULL;
    assert_int_equal(setenv("RS_CPU_ATTN", "bogus", 1), 0);
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_E_INVAL);
    assert_null(be);
    float *outs[3] = {O32, O64, O64b};
    const char *modes[3] = {"fp32", "f64", "f64"};
    const int threads[3] = {2, 2, 1};
    for (int m = 0; m < 3; m++) {
        assert_int_equal(setenv("RS_CPU_ATTN", modes[m], 1), 0);
        assert_int_equal(rs_backend_cpu_create(threads[m], &be), RS_OK);
        unsetenv("RS_CPU_ATTN");
        rs_attn_args a = {T, n_past, H, Hkv, hd, Q, H * hd, hd, Kc, Vc, cap, 0.25f, outs[m], H * hd, scratch, 1};
        assert_int_equal(be->ops->attention(be, &a), RS_OK);
        rs_backend_destroy(be);
        be = NULL;
    }
    assert_memory_equal(O64, O64b, sizeof O64); /* threads do not change a bit */
    double e32 = 0, e64 = 0;
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++) {
            const size_t n = n_past + t + 1;
            const float *q = Q + t * H * hd + h * hd;
            double mx = -1e300, sum = 0;
            for (size_t j = 0; j < n; j++) {
                double d = 0;
                for (size_t i = 0; i < hd; i++) d += (double)q[i] * Kc[j * hd + i];
                p[j] = 0.25 * d;
                mx = fmax(mx, p[j]);
            }
            for (size_t j = 0; j < n; j++) sum += (p[j] = exp(p[j] - mx));
            for (size_t i = 0; i < hd; i++) {
                double o = 0, mag = 0;
                for (size_t j = 0; j < n; j++) o += p[j] / sum * Vc[j * hd + i], mag += p[j] / sum * fabs(Vc[j * hd + i]);
                const size_t k = t * H * hd + h * hd + i;
                e32 = fmax(e32, fabs(O32[k] - o) / mag);
                e64 = fmax(e64, fabs(O64[k] - o) / mag);
            }
        }
    print_message("attention over %d keys, max |o - o64| / sum p|v|: fp32 sums %.3g, RS_CPU_ATTN=f64 %.3g\n", cap, e32,
                  e64);
    assert_true(e64 <= 0x1.0p-23);
    assert_true(e64 < 0.5 * e32);
}

static void linear_f64_case_(size_t M, size_t N, size_t K)
{
    float *X = malloc(M * K * sizeof(float)), *W = malloc(N * K * sizeof(float)), *Y0 = malloc(M * N * sizeof(float));
    float *Y[3] = {malloc(M * N * sizeof(float)), malloc(M * N * sizeof(float)), malloc(M * N * sizeof(float))};
    assert_true(X && W && Y0 && Y[0] && Y[1] && Y[2]);
    const size_t ysz = M * N * sizeof(float);
    uint64_t s = 77;
    fill_(X, M * K, &s, 1.0);
    fill_(W, N * K, &s, 1.0);
    fill_(Y0, M * N, &s, 10.0);
    for (size_t i = 0; i < M * K; i++) X[i] += 0.25f; /* a mean: the fp32 sums' rounding shows */
    rs_backend *be = NULL;
    for (int beta = 0; beta < 2; beta++) {
        const char *modes[3] = {"f64", "f64", "openblas"};
        const int threads[3] = {2, 1, 2};
        for (int m = 0; m < 3; m++) {
            memcpy(Y[m], Y0, ysz);
            assert_int_equal(setenv("RS_CPU_GEMM", modes[m], 1), 0);
            assert_int_equal(rs_backend_cpu_create(threads[m], &be), RS_OK);
            unsetenv("RS_CPU_GEMM");
            assert_int_equal(be->ops->linear(be, M, N, K, X, K, W, (float)beta, Y[m], N), RS_OK);
            rs_backend_destroy(be);
            be = NULL;
        }
        assert_memory_equal(Y[0], Y[1], ysz);
        double worst64 = 0, worst32 = 0;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                long double r = beta ? (long double)Y0[i * N + j] : 0.0L, mag = fabsl(r);
                for (size_t k = 0; k < K; k++) {
                    r += (long double)X[i * K + k] * (long double)W[j * K + k];
                    mag += fabsl((long double)X[i * K + k] * (long double)W[j * K + k]);
                }
                const float y = Y[0][i * N + j];
                const double half_ulp = 0.5 * (double)(nextafterf(fabsf(y), INFINITY) - fabsf(y));
                const double e = (double)fabsl((long double)y - r);
                worst64 = fmax(worst64, e / (half_ulp + 1e-12 * (double)mag));
                worst32 = fmax(worst32, (double)fabsl((long double)Y[2][i * N + j] - r) / (half_ulp + 1e-12 * (double)mag));
            }
        print_message("linear %zu x %zu x %zu, beta %d: worst |y - exact| / (ulp / 2 + 1e-12 sum|xw|): f64 %.3f, "
                      "sgemm %.3f\n", M, N, K, beta, worst64, worst32);
        assert_true(worst64 <= 1.0);
        assert_true(worst32 > 1.0);
    }
    free(X);
    free(W);
    free(Y0);
    for (int m = 0; m < 3; m++) free(Y[m]);
}

/* RS_CPU_GEMM=f64: Y = fl(beta Y + X W^T) summed in double and rounded once, so every output is
 * within half an ulp (plus ~K 2^-53 of sum |x w|: bound 1e-12 relative of it) of the long double
 * result, for beta 0 and 1 and 1 / 2 threads (bit-identical); the default sgemm errs more (it is
 * compared, so the bound is not vacuous); a bad value is refused at create. The second shape
 * walks each thread's output slab in several column blocks (RS_CPU_F64_BLOCK=2^16 doubles: 65536 /
 * 4000 = 16 -> 16 columns, so slabs of 608 and 592 columns at 2 threads and 1200 at 1 thread are 38,
 * 37 and 75 blocks, the last ones partial), as the default 2^25 does at a 4B model's LM head. */
static void test_backend_linear_f64(void **st)
{
    (void)st;
    rs_backend *be = NULL;
    assert_int_equal(setenv("RS_CPU_GEMM", "f65", 1), 0);
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_E_INVAL);
    assert_null(be);
    unsetenv("RS_CPU_GEMM");
    linear_f64_case_(7, 45, 1500);
    assert_int_equal(setenv("RS_CPU_F64_BLOCK", "65535", 1), 0); /* not a power of two */
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_E_INVAL);
    assert_null(be);
    assert_int_equal(setenv("RS_CPU_F64_BLOCK", "65536", 1), 0);
    linear_f64_case_(5, 1200, 4000);
    unsetenv("RS_CPU_F64_BLOCK");
}

static rs_status fail_at_5_(void *ctx, size_t i)
{
    int *hits = (int *)ctx;
    (void)hits;
    if (i == 5) return rs_error_set(RS_E_NONFINITE, "task %zu went non-finite", i);
    return RS_OK;
}

static void test_backend_misc(void **st)
{
    (void)st;
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_OK);
    int dummy = 0;
    assert_int_equal(be->ops->parallel_for(be, 40, fail_at_5_, &dummy), RS_E_NONFINITE);
    assert_non_null(strstr(rs_last_error(), "task 5 went non-finite"));
    float g[4] = {-1.0f, 0.0f, 2.0f, 3.0f}, u[4] = {2.0f, 5.0f, 0.5f, -1.0f};
    assert_int_equal(be->ops->swiglu(be, 2, 2, g, 2, u, 2), RS_OK);
    assert_true(fabs(g[0] - silu_d_(-1.0) * 2.0) <= 1e-6 && g[1] == 0.0f);
    assert_true(fabs(g[3] - silu_d_(3.0) * -1.0) <= 1e-6);
    float r[4] = {-2.0f, 0.5f, 3.0f, -0.0f};
    assert_int_equal(be->ops->relu2(be, 1, 4, r, 4), RS_OK);
    assert_true(r[0] == 0.0f && r[1] == 0.25f && r[2] == 9.0f && r[3] == 0.0f);
    float E[3 * 2] = {1, 2, 3, 4, 5, 6}, Y[2 * 2];
    int32_t tok[2] = {2, 0};
    assert_int_equal(be->ops->embed(be, tok, 2, E, 3, 2, Y, 2), RS_OK);
    assert_true(Y[0] == 5 && Y[1] == 6 && Y[2] == 1 && Y[3] == 2);
    tok[1] = 3;
    assert_int_equal(be->ops->embed(be, tok, 2, E, 3, 2, Y, 2), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "outside the vocabulary"));
    rs_backend_destroy(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_activations),    cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rmsnorm_gated),  cmocka_unit_test(test_l2norm_eps_on_sum),
        cmocka_unit_test(test_conv1d_chunks),  cmocka_unit_test(test_rope),
        cmocka_unit_test(test_backend_linear), cmocka_unit_test(test_backend_linear_loop),
        cmocka_unit_test(test_backend_attention),
        cmocka_unit_test(test_backend_attention_f64),
        cmocka_unit_test(test_backend_linear_f64),
        cmocka_unit_test(test_backend_misc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
