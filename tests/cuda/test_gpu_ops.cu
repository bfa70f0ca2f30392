/* test_gpu_ops.cu — every op of kernels/dense/rs_dense_ops.h against its CPU twin: the CPU backend's
 * ops (rs_backend_cpu_create), rs_layers.c, copies of rs_forward.c's row tasks, rs_kl_compare.
 *
 * Measures: "ulp" = distance between two floats in units in the last place (+0 == -0, NaN ==
 * NaN); "bit-identical" = fraction of elements with distance 0. Every buffer is compared in
 * full: the padding of strided rows (ld > n) and everything an op must not touch must keep its
 * bits. Tolerances, with their reasons, sit next to each check. Exit 0 if all pass, 1 if one
 * fails, 77 without a GPU. Usage: test_gpu_ops [--quick] [--twin] (--quick: smaller shapes, for
 * compute-sanitizer; --twin: only the twin compute mode's cases, bit for bit against the CPU).
 * Attention: every kernel (RSG_ATTN_SIMT, RSG_ATTN_TF32X3, RSG_ATTN_TF32X3_V2) on every case; RS_ATTN_BENCH=1 (without --quick) also times them at the evaluator's shapes
 * (printout only).
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dense/rs_dense_ops.h"
#include "cuda_test_util.h"
#include "replayssm/quant/rs_mathf.h"
#include "rs_gemm_blocks.h"
#include "model/rs_backend.h"
#include "replayssm/eval/rs_kl.h"
#include "model/rs_layers.h"
#include "replayssm/engine/rs_head.h"
#include "replayssm/engine/rs_policy.h"


typedef std::vector<float> vf;
static rs_backend *g_be = nullptr;

/* the kernels' norm enums carry the CPU layer's values (rs_dense_ops.h) */
static_assert((int)RSG_NORM_PLAIN == (int)RS_NORM_PLAIN && (int)RSG_NORM_ONE_PLUS == (int)RS_NORM_ONE_PLUS, "norm kind");
static_assert((int)RSG_GATE_AFTER_NORM == (int)RS_GATE_AFTER_NORM && (int)RSG_GATE_BEFORE_NORM == (int)RS_GATE_BEFORE_NORM,
              "gate order");
static rsg_norm_weight gk_(rs_norm_weight k) { return (rsg_norm_weight)k; }
static rsg_gate_order go_(rs_gate_order o) { return (rsg_gate_order)o; }

static vf randu(size_t n, float lo, float hi)
{
    vf v(n);
    for (auto &x : v) x = lo + (hi - lo) * (float)ct_unif();
    return v;
}
static vf randn(size_t n, float sd)
{
    vf v(n);
    for (auto &x : v) x = (float)(sd * ct_normal());
    return v;
}

/* ---- comparison -------------------------------------------------------------------------------- */
static int64_t ord_(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (u >> 31) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}
static int64_t ulpd(float a, float b)
{
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX / 4;
    return std::llabs(ord_(a) - ord_(b));
}
static bool same_bits(float a, float b) { return memcmp(&a, &b, 4) == 0; }

/* g vs c over M rows of ld: columns < n within max_ulp and >= min_exact of them bit-identical;
 * columns >= n (padding, or what the op must not write) bit-identical. */
static void cmp_mat(const char *name, const vf &g, const vf &c, size_t M, size_t n, size_t ld, int64_t max_ulp,
                    double min_exact)
{
    int64_t mu = 0;
    size_t ex = 0, cnt = 0, pad = 0;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < ld && i * ld + j < g.size(); j++) {
            const float a = g[i * ld + j], b = c[i * ld + j];
            if (j < n) {
                const int64_t d = ulpd(a, b);
                mu = std::max(mu, d);
                ex += d == 0;
                cnt++;
            } else {
                pad += !same_bits(a, b);
            }
        }
    const double fr = cnt ? (double)ex / (double)cnt : 1.0;
    ct_report(name, mu <= max_ulp && fr >= min_exact && pad == 0,
           "max %lld ulp (<= %lld), %.4f%% bit-identical (>= %.1f%%), %zu padding elements changed", (long long)mu,
           (long long)max_ulp, 100.0 * fr, 100.0 * min_exact, pad);
}

/* ---- embedding, norms ------------------------------------------------------------------------ */
static void test_embed()
{
    const int V = 1000, d = 2560, T = 5, R = 3;
    const size_t ldy = d + 7;
    vf E = randn((size_t)V * d, 1.0f), Y0((size_t)R * T * ldy, 777.0f);
    std::vector<int32_t> tok = {0, 17, V - 1, 500, 3};
    for (int bad = 0; bad < 2; bad++) {
        if (bad) tok[2] = V; /* outside the vocabulary: the GPU writes NaN rows */
        float *dE = dput(E), *dY = dput(Y0);
        int32_t *dt = dput(tok);
        RSK(rsg_embed(dt, T, R, dE, V, d, dY, ldy, 0));
        vf g = dget(dY, Y0.size()), c = Y0;
        if (bad) tok[2] = 0; /* the CPU op rejects the token: reference row = NaN by hand */
        for (int r = 0; r < R; r++) RSK(g_be->ops->embed(g_be, tok.data(), T, E.data(), V, d, c.data() + r * T * ldy, ldy));
        if (bad)
            for (int r = 0; r < R; r++)
                for (int j = 0; j < d; j++) c[(size_t)(r * T + 2) * ldy + j] = NAN;
        /* a copy: bit for bit */
        cmp_mat(bad ? "embed: bad token -> NaN row" : "embed: R=3 T=5 d=2560 ld=2567", g, c, R * T, d, ldy, 0, 1.0);
        dfree(dE), dfree(dY), dfree(dt);
    }
}

static void test_rmsnorm()
{
    struct C { int M, n; size_t ldx, ldy; rs_norm_weight kind; bool inplace; const char *name; };
    const C cs[] = {{7, 2560, 2600, 2576, RS_NORM_PLAIN, false, "rmsnorm: d=2560 plain, ldx 2600 ldy 2576"},
                    {16, 2560, 2560, 2560, RS_NORM_ONE_PLUS, true, "rmsnorm: d=2560 1+w in place"},
                    {ct_quick ? 40 : 600, 256, 512, 512, RS_NORM_ONE_PLUS, true, "rmsnorm: q-norm hd=256 ld=512 in place"},
                    {5, 40, 41, 45, RS_NORM_PLAIN, false, "rmsnorm: n=40"}};
    for (const C &k : cs) {
        vf X = randn((size_t)k.M * k.ldx, 1.3f), w = randu(k.n, -1.0f, 1.0f);
        for (int i = 0; i < k.M; i += 3) /* rows of very different scale */
            for (size_t j = 0; j < k.ldx; j++) X[i * k.ldx + j] *= i % 2 ? 1e3f : 1e-3f;
        vf Y0 = k.inplace ? X : vf((size_t)k.M * k.ldy, -5.0f), c = Y0;
        float *dX = dput(X), *dw = dput(w), *dY = k.inplace ? dX : dput(Y0);
        RSK(rsg_rmsnorm(k.M, k.n, dX, k.ldx, dw, 1e-6f, gk_(k.kind), dY, k.ldy, 0));
        vf g = dget(dY, Y0.size());
        RSK(g_be->ops->rmsnorm(g_be, k.M, k.n, k.inplace ? c.data() : X.data(), k.ldx, w.data(), 1e-6f, k.kind, c.data(),
                               k.ldy));
        /* Same fp32 operations as rs_rmsnorm; only the double sum of squares is added in another
         * order, and it rounds to the same float var except near a rounding tie (~1e-5 of the
         * rows), where 1/sqrt moves by 1 ulp and y by <= 2 (x*r, then *w). So: <= 2 ulp, and
         * >= 99 % bit-identical (a different rsqrt formula would fail that). */
        cmp_mat(k.name, g, c, k.M, k.n, k.ldy, 2, 0.99);
        if (!k.inplace) dfree(dY);
        dfree(dX), dfree(dw);
    }
}

static void test_rmsnorm_gated()
{
    struct C { int M, n, gs, w_len; size_t ldx, ldz, ldy; rs_gate_order o; bool inplace; const char *name; };
    const C cs[] = {
        {ct_quick ? 64 : 384, 128, 128, 128, 128, 128, 128, RS_GATE_AFTER_NORM, true, "gated norm: GDN heads dv=128, in place"},
        {6, 4096, 512, 4096, 4096, 10304, 4100, RS_GATE_BEFORE_NORM, false, "gated norm: Mamba d_inner=4096 G=8, ldz 10304"},
        {5, 512, 128, 512, 520, 515, 530, RS_GATE_AFTER_NORM, false, "gated norm: after, w per element, strided"},
        {5, 384, 128, 128, 384, 390, 384, RS_GATE_BEFORE_NORM, true, "gated norm: before, shared w, in place"}};
    for (const C &k : cs) {
        vf X = randn((size_t)k.M * k.ldx, 1.0f), Z = randn((size_t)k.M * k.ldz, 2.0f), w = randu(k.w_len, -1.5f, 1.5f);
        vf Y0 = k.inplace ? X : vf((size_t)k.M * k.ldy, -5.0f), c = Y0;
        float *dX = dput(X), *dZ = dput(Z), *dw = dput(w), *dY = k.inplace ? dX : dput(Y0);
        RSK(rsg_rmsnorm_gated(k.M, k.n, k.gs, dX, k.ldx, dZ, k.ldz, dw, k.w_len, 1e-5f, go_(k.o), dY, k.ldy, 0));
        vf g = dget(dY, Y0.size());
        RSK(g_be->ops->rmsnorm_gated(g_be, k.M, k.n, k.gs, k.inplace ? c.data() : X.data(), k.ldx, Z.data(), k.ldz,
                                     w.data(), k.w_len, 1e-5f, k.o, c.data(), k.ldy));
        /* silu(z) = z * sigmoid(z) uses expf: CUDA's is within 2 ulp, glibc's within 1, so
         * sigmoid differs by <= ~5 ulp, silu and x * silu by <= ~7; the norm adds <= 3 (r may
         * move by 1 ulp, then two products). Bound 16 ulp. */
        cmp_mat(k.name, g, c, k.M, k.n, k.ldy, 16, 0.0);
        if (!k.inplace) dfree(dY);
        dfree(dX), dfree(dZ), dfree(dw);
    }
}

/* ---- conv1d ---------------------------------------------------------------------------------- */
static void test_conv1d()
{
    struct C { int R, T, C, K; size_t ldx, ldy; bool bias, silu; const char *name; };
    const C cs[] = {{3, ct_quick ? 9 : 70, 8192, 4, 10304, 8192, true, true, "conv1d: Mamba conv_dim 8192 K=4 R=3, bias, silu"},
                    {2, 1, 8192, 4, 8192, 8200, false, true, "conv1d: GDN decode T=1 R=2"},
                    {2, 9, 100, 2, 103, 101, true, false, "conv1d: K=2, no silu (bit-exact)"},
                    {1, 3, 77, 8, 80, 77, false, false, "conv1d: K=8, no silu (bit-exact)"},
                    {2, 4, 64, 1, 64, 64, true, true, "conv1d: K=1"}};
    for (const C &k : cs) {
        const size_t ns = (size_t)k.R * k.C * (k.K - 1);
        vf S = randn(ns, 1.0f), w = randn((size_t)k.C * k.K, 0.6f), b = randn(k.C, 0.3f);
        vf Y0((size_t)k.R * k.T * k.ldy, -9.0f);
        float *dS = dput(S), *dw = dput(w), *db = dput(b), *dY = dput(Y0);
        vf Sc = S;
        bool ok = true;
        int64_t mu = 0;
        for (int chunk = 0; chunk < 2; chunk++) { /* two chunks: the carried state continues */
            vf X = randn((size_t)k.R * k.T * k.ldx, 1.5f), c = Y0;
            float *dX = dput(X);
            RSK(rsg_conv1d(k.R, k.T, k.C, k.K, dX, k.ldx, dS, dw, k.bias ? db : nullptr, k.silu, dY, k.ldy, 0));
            vf g = dget(dY, Y0.size());
            for (int r = 0; r < k.R; r++)
                RSK(g_be->ops->conv1d(g_be, k.T, k.C, k.K, X.data() + (size_t)r * k.T * k.ldx, k.ldx,
                                      Sc.data() + (size_t)r * k.C * (k.K - 1), w.data(), k.bias ? b.data() : nullptr,
                                      k.silu, c.data() + (size_t)r * k.T * k.ldy, k.ldy));
            for (size_t i = 0; i < g.size(); i++) {
                const bool valid = i % k.ldy < (size_t)k.C;
                const int64_t d = ulpd(g[i], c[i]);
                mu = std::max(mu, valid ? d : 0);
                if (!valid && !same_bits(g[i], c[i])) ok = false;
            }
            dfree(dX);
        }
        /* the accumulation is rs_conv1d_causal's, operation by operation: bit-exact without silu;
         * silu's expf: <= 8 ulp (see the gated norm). The state is a copy of inputs: exact. */
        const int64_t tol = k.silu ? 8 : 0;
        vf Sg = dget(dS, ns);
        const bool st_ok = ns == 0 || memcmp(Sg.data(), Sc.data(), ns * sizeof(float)) == 0;
        ct_report(k.name, ok && mu <= tol && st_ok, "max %lld ulp (<= %lld) over 2 chunks, state %s, padding %s",
               (long long)mu, (long long)tol, st_ok ? "bit-exact" : "DIFFERS", ok ? "untouched" : "CHANGED");
        dfree(dS), dfree(dw), dfree(db), dfree(dY);
    }
}

/* ---- GDN / Mamba-2 preps (copies of rs_forward.c's row tasks) ---------------------------------- */
static void gdn_row_ref(float *q, int Hk, int dk, int Hv, const float *a, const float *b, const float *A_log,
                        const float *dt_bias, float *alpha, float *beta)
{
    float *k = q + (size_t)Hk * dk;
    const float scale = (float)(1.0 / sqrt((double)dk));
    for (int h = 0; h < Hk; h++) {
        rs_l2norm(q + h * dk, dk, 1e-6f);
        for (int i = 0; i < dk; i++) q[h * dk + i] *= scale;
        rs_l2norm(k + h * dk, dk, 1e-6f);
    }
    for (int h = 0; h < Hv; h++) {
        const float A = -expf(A_log[h]);
        const float gl = A * rs_softplus(a[h] + dt_bias[h]);
        alpha[h] = expf(gl);
        beta[h] = rs_sigmoid(b[h]);
    }
}

/* |g - c| <= (8 + 16 |ln c|) eps |c|: alpha = exp(x), x = -exp(A_log) * softplus(..) (or dt * A),
 * carries <= ~8 ulp of expf / log1pf differences (CUDA expf <= 2 ulp, log1pf <= 1, glibc < 1
 * each), and a relative error d of x becomes |x| d = |ln alpha| d in exp(x); the last expf adds
 * <= 3 ulp. */
static bool alpha_ok(float g, float c, double *worst)
{
    const double tol = (8.0 + 16.0 * fabs(log((double)c))) * FLT_EPSILON * fabs((double)c);
    const double e = fabs((double)g - (double)c);
    *worst = std::max(*worst, e / tol);
    return e <= tol;
}

static void test_gdn_prep()
{
    const int Hk = 16, dk = 128, Hv = 32, dv = 128, M = ct_quick ? 3 : 130;
    const size_t ldq = 2 * Hk * dk + Hv * dv + 8;
    vf Q = randn((size_t)M * ldq, 0.7f), a = randn((size_t)M * Hv, 2.0f), b = randn((size_t)M * Hv, 3.0f);
    vf A_log = randu(Hv, -2.0f, 1.5f), dtb = randu(Hv, -1.0f, 1.0f), al0((size_t)M * Hv, 0.0f);
    float *dQ = dput(Q), *da = dput(a), *db = dput(b), *dA = dput(A_log), *dd = dput(dtb), *dal = dput(al0), *dbe = dput(al0);
    RSK(rsg_gdn_prep(M, Hk, dk, Hv, dQ, ldq, da, db, dA, dd, dal, dbe, 0));
    vf g = dget(dQ, Q.size()), ga = dget(dal, al0.size()), gb = dget(dbe, al0.size());
    vf c = Q, ca(al0.size()), cb(al0.size());
    for (int row = 0; row < M; row++)
        gdn_row_ref(c.data() + row * ldq, Hk, dk, Hv, a.data() + row * Hv, b.data() + row * Hv, A_log.data(), dtb.data(),
                    ca.data() + row * Hv, cb.data() + row * Hv);
    /* q, k: rs_l2norm's operations; the double sum's order only flips (float)ss in rare ties:
     * <= 2 ulp, >= 99 % bit-identical. v and the padding: untouched. */
    cmp_mat("gdn prep: q, k L2 norm + scale (v untouched)", g, c, M, 2 * Hk * dk, ldq, 2, 0.99);
    double worst = 0.0;
    bool ok = true;
    for (size_t i = 0; i < ca.size(); i++) ok &= alpha_ok(ga[i], ca[i], &worst);
    ct_report("gdn prep: alpha", ok, "worst |err| / tol %.3f (tol (8 + 16|ln alpha|) eps alpha)", worst);
    cmp_mat("gdn prep: beta (sigmoid, expf: <= 8 ulp)", gb, cb, 1, cb.size(), cb.size(), 8, 0.0);
    dfree(dQ), dfree(da), dfree(db), dfree(dA), dfree(dd), dfree(dal), dfree(dbe);
}

static void test_mamba_prep()
{
    const int H = 64, P = 64, M = ct_quick ? 3 : 130;
    const size_t ld_dt = 3001, ldx = 6144, ldv = 4100;
    const float dt_min = 1e-3f;
    vf dtr = randu((size_t)M * ld_dt, -10.0f, 4.0f), dtb = randu(H, -1.0f, 1.0f), A_log = randu(H, -1.0f, 2.0f);
    vf X = randn((size_t)M * ldx, 1.0f), V0((size_t)M * ldv, -3.0f), al0((size_t)M * H, 0.0f);
    float *ddt = dput(dtr), *db = dput(dtb), *dA = dput(A_log), *dX = dput(X);
    for (int clamp = 0; clamp < 2; clamp++) {
        float *dV = dput(V0), *dal = dput(al0);
        RSK(rsg_mamba_prep(M, H, P, ddt, ld_dt, db, dA, clamp, dt_min, dX, ldx, dal, dV, ldv, 0));
        vf gv = dget(dV, V0.size()), ga = dget(dal, al0.size()), cv = V0, ca(al0.size());
        size_t n_small = 0, clamped_exact = 0;
        for (int row = 0; row < M; row++) /* mamba_prep_row_ */
            for (int h = 0; h < H; h++) {
                float dt = rs_softplus(dtr[row * ld_dt + h] + dtb[h]);
                const bool small = dt < dt_min;
                n_small += small;
                if (clamp && small) dt = dt_min;
                const float A = -expf(A_log[h]);
                ca[row * H + h] = expf(dt * A);
                for (int p = 0; p < P; p++) cv[row * ldv + h * P + p] = dt * X[row * ldx + h * P + p];
                if (clamp && small)
                    clamped_exact += memcmp(&gv[row * ldv + h * P], &cv[row * ldv + h * P], P * sizeof(float)) == 0;
            }
        double worst = 0.0;
        bool ok = true;
        for (size_t i = 0; i < ca.size(); i++) ok &= alpha_ok(ga[i], ca[i], &worst);
        /* the data must exercise the clamp (softplus(-11) ~ 1.7e-5 < dt_min) */
        ct_report(clamp ? "mamba prep: alpha, clamp_min" : "mamba prep: alpha, no clamp", ok && n_small > 0,
               "worst |err| / tol %.3f, %zu of %d dt below dt_min", worst, n_small, M * H);
        /* V = dt * x: dt carries softplus's ulps (expf + log1pf: <= ~6), the product 1 more */
        cmp_mat(clamp ? "mamba prep: V = dt x, clamp_min" : "mamba prep: V = dt x, no clamp", gv, cv, M, H * P, ldv, 8, 0.0);
        if (clamp) /* clamped heads: dt = dt_min exactly on both sides, so V is bit-identical */
            ct_report("mamba prep: clamped heads bit-exact", clamped_exact == n_small, "%zu of %zu", clamped_exact, n_small);
        dfree(dV), dfree(dal);
    }
    /* D skip: o = o + x * D, elementwise, one rounding each: bit-exact; a NaN row stays NaN */
    vf O = randn((size_t)M * ldv, 1.0f), D = randn(H, 1.0f);
    for (int j = 0; j < H * P; j++) O[ldv + j] = NAN;
    float *dO = dput(O), *dD = dput(D);
    RSK(rsg_mamba_dskip(M, H, P, dO, ldv, dX, ldx, dD, 0));
    vf g = dget(dO, O.size()), c = O;
    for (int row = 0; row < M; row++)
        for (int j = 0; j < H * P; j++) c[row * ldv + j] = c[row * ldv + j] + X[row * ldx + j] * D[j / P];
    cmp_mat("mamba D skip (bit-exact, NaN row kept)", g, c, M, H * P, ldv, 0, 1.0);
    dfree(dO), dfree(dD), dfree(ddt), dfree(db), dfree(dA), dfree(dX);
}

/* ---- RoPE, KV append, output gate ------------------------------------------------------------ */
static void test_rope()
{
    const int H = 16, Hk = 4, hd = 256, rot = 64, qs = 2 * hd; /* Qwen3.5-4B: partial 0.25 */
    const size_t ldq = (size_t)H * qs, ldk = (size_t)Hk * hd + 4;
    std::vector<float> inv(rot / 2);
    rs_rope_inv_freq(1e7, rot, inv.data());
    float *dinv = dput(inv);
    struct C { int R, T; int64_t pos0; const char *name; };
    const C cs[] = {{2, ct_quick ? 5 : 70, 0, "rope: R=2 T=70 pos0=0"}, {2, 1, 131000, "rope: decode T=1 pos0=131000"},
                    {3, 9, 4093, "rope: R=3 T=9 pos0=4093"}};
    for (const C &k : cs) {
        const int M = k.R * k.T;
        vf Q = randn((size_t)M * ldq, 1.0f), K = randn((size_t)M * ldk, 1.0f);
        float *dQ = dput(Q), *dK = dput(K);
        RSK(rsg_rope(M, k.T, k.pos0, dQ, ldq, qs, H, dK, ldk, Hk, hd, rot, dinv, 0));
        vf gq = dget(dQ, Q.size()), gk = dget(dK, K.size()), cq = Q, ck = K;
        std::vector<float> cs_(rot / 2), sn(rot / 2);
        double worst = 0.0;
        size_t other = 0;
        for (int row = 0; row < M; row++) {
            rs_rope_cos_sin(inv.data(), rot, (size_t)(k.pos0 + row % k.T), cs_.data(), sn.data());
            for (int j = 0; j < H + Hk; j++) {
                const size_t off = j < H ? row * ldq + (size_t)j * qs : row * ldk + (size_t)(j - H) * hd;
                float *c = (j < H ? cq.data() : ck.data()) + off;
                const float *g = (j < H ? gq.data() : gk.data()) + off;
                rs_rope_apply(c, rot, cs_.data(), sn.data());
                /* cos / sin are rs_mathf.h's rs_cossinf on both sides (the same double operations,
                 * no contraction) and x' = a c - b s is the same three fp32 roundings: the rotated
                 * dims must be the CPU's bits (worst counts the elements that differ) */
                for (int i = 0; i < rot; i++) worst += !same_bits(g[i], c[i]);
            }
        }
        /* dims >= rot, the gate halves, the key padding: bit-identical (cmp_mat with n = 0) */
        for (size_t i = 0; i < Q.size(); i++) other += (i % qs) >= (size_t)rot && !same_bits(gq[i], cq[i]);
        for (size_t i = 0; i < K.size(); i++)
            other += ((i % ldk) >= (size_t)Hk * hd || (i % ldk) % hd >= (size_t)rot) && !same_bits(gk[i], ck[i]);
        ct_report(k.name, worst == 0.0 && other == 0, "%.0f rotated elements differ from the CPU's bits, %zu untouched elements changed",
               worst, other);
        dfree(dQ), dfree(dK);
    }
    dfree(dinv);
}

static void test_kv_append()
{
    const int Hkv = 4, hd = 256;
    const size_t cap = 64, ldk = (size_t)Hkv * hd + 4, ldv = (size_t)Hkv * hd + 12;
    struct C { int R, T; int64_t pos0; const char *name; };
    const C cs[] = {{3, 5, 37, "kv append: R=3 T=5 pos0=37"}, {2, 1, 63, "kv append: decode at the last slot"},
                    {2, 64, 0, "kv append: T=64 pos0=0 (full cache)"}};
    for (const C &k : cs) {
        vf K = randn((size_t)k.R * k.T * ldk, 1.0f), V = randn((size_t)k.R * k.T * ldv, 1.0f);
        vf Kc = randn((size_t)k.R * Hkv * cap * hd, 1.0f), Vc = randn(Kc.size(), 1.0f);
        float *dK = dput(K), *dV = dput(V), *dKc = dput(Kc), *dVc = dput(Vc);
        RSK(rsg_kv_append(k.R, k.T, Hkv, hd, k.pos0, cap, dK, ldk, dV, ldv, dKc, dVc, 0));
        vf gk = dget(dKc, Kc.size()), gv = dget(dVc, Vc.size());
        for (int r = 0; r < k.R; r++) /* rs_forward.c's append loop (per run: cache + r * Hkv * cap * hd) */
            for (int t = 0; t < k.T; t++)
                for (int g = 0; g < Hkv; g++) {
                    const size_t row = (size_t)r * k.T + t, dst = (((size_t)r * Hkv + g) * cap + k.pos0 + t) * hd;
                    memcpy(Kc.data() + dst, K.data() + row * ldk + g * hd, hd * sizeof(float));
                    memcpy(Vc.data() + dst, V.data() + row * ldv + g * hd, hd * sizeof(float));
                }
        const bool ok = gk == Kc && gv == Vc; /* copies (no NaN in the data): whole caches bit-exact */
        ct_report(k.name, ok, "caches %s", ok ? "bit-exact, other slots untouched" : "DIFFER");
        dfree(dK), dfree(dV), dfree(dKc), dfree(dVc);
    }
}

/* ---- attention ------------------------------------------------------------------------------- */
struct AttnCase { int R, T, H, Hkv, hd; int64_t pos0; size_t cap; bool gated, misalign; float qscale; const char *name; };

static void test_attention_case(const AttnCase &k)
{
    const int rep = k.H / k.Hkv, hd = k.hd, qs = k.gated ? 2 * hd : hd;
    const size_t ldq = (size_t)k.H * qs + 3, ldo = (size_t)k.H * hd + 8, M = (size_t)k.R * k.T;
    const size_t nc = (size_t)k.R * k.Hkv * k.cap * hd;
    const int64_t nvalid = k.pos0 + k.T;
    vf Q = randu(M * ldq, -k.qscale, k.qscale), Kc(nc), Vc(nc), O0(M * ldo, -7.0f);
    for (size_t i = 0; i < nc; i++) { /* positions past the chunk: NaN (must never be read) */
        const bool valid = (int64_t)((i / hd) % k.cap) < nvalid;
        Kc[i] = valid ? (float)(2.0 * ct_unif() - 1.0) : NAN;
        Vc[i] = valid ? (float)ct_normal() : NAN;
    }
    const float scale = (float)(1.0 / sqrt((double)hd));
    float *dQ = dput(Q), *dO = dput(O0), *dK, *dV;
    CK(cudaMalloc((void **)&dK, (nc + 1) * sizeof(float)));
    CK(cudaMalloc((void **)&dV, (nc + 1) * sizeof(float)));
    float *dKc = dK + (k.misalign ? 1 : 0), *dVc = dV + (k.misalign ? 1 : 0); /* misalign: no cp.async */
    CK(cudaMemcpy(dKc, Kc.data(), nc * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dVc, Vc.data(), nc * sizeof(float), cudaMemcpyHostToDevice));
    /* every kernel on the same inputs: g[0] simt (fp32 CUDA cores), g[1] tf32x3 (the default) and
     * g[2] tf32x3-v2 (the same tensor-core kernel, named) */
    constexpr int NK = 3;
    const int kern[NK] = {RSG_ATTN_SIMT, RSG_ATTN_TF32X3, RSG_ATTN_TF32X3_V2};
    vf g[NK];
    for (int ki = 0; ki < NK; ki++) {
        CK(cudaMemcpy(dO, O0.data(), O0.size() * sizeof(float), cudaMemcpyHostToDevice));
        rsg_attn_args a = {k.R, k.T, k.H, k.Hkv, hd, k.pos0, k.cap, dQ, ldq, qs, dKc, dVc, scale, dO, ldo, kern[ki]};
        RSK(rsg_attention(&a, 0));
        g[ki] = dget(dO, O0.size());
    }
    vf c = O0;
    vf scratch((size_t)g_be->n_threads * RS_ATTN_BLOCK_ROWS * k.cap);
    for (int r = 0; r < k.R; r++) {
        rs_attn_args ca;
        ca.T = k.T, ca.n_past = k.pos0, ca.H = k.H, ca.Hkv = k.Hkv, ca.hd = hd;
        ca.Q = Q.data() + (size_t)r * k.T * ldq, ca.ldq = ldq, ca.q_hstride = qs;
        ca.Kc = Kc.data() + (size_t)r * k.Hkv * k.cap * hd, ca.Vc = Vc.data() + (size_t)r * k.Hkv * k.cap * hd;
        ca.cap = k.cap, ca.scale = scale, ca.O = c.data() + (size_t)r * k.T * ldo, ca.ldo = ldo;
        ca.scratch = scratch.data(), ca.scratch_rows = RS_ATTN_BLOCK_ROWS;
        RSK(g_be->ops->attention(g_be, &ca));
    }
    /* float64 reference: o64 and A = sum_j p_j |v_j| per output element (the scale of the sum).
     * Tolerance |gpu - cpu| <= 2e-5 A and |gpu - o64| <= 2e-5 A, for every kernel: the simt kernel
     * differs from the CPU only in summation order (fmaf dot products of hd terms vs dot8_, online
     * rescaling vs one max, O accumulated over n keys either way) and in expf (<= 3 ulp). With these
     * data the score sums have |s| ~ 1 and fp32 random-walk errors ~ sqrt(hd) eps |s| ~ 1e-6; p
     * moves by that relatively, O by that times A; the n-term O sum adds ~ sqrt(n) eps A ~ 2e-6 at
     * n = 1000 (at n = 8224, the long-sum cases, ~6e-6: still 3x inside). 2e-5 leaves ~10x. The
     * tensor-core kernel adds per product <= 2^-21 (K's and V's lo truncated by the tensor cores,
     * zero-mean) relative, the same order as fp32 rounding, so the same bound holds; plain TF32
     * (2^-11 per input) would be ~1e-3 A and fail it by 50x. (Worst-case bounds n eps are far looser
     * and not what a broken kernel would show: a wrong mask, row or scale moves O by O(A).) It adds
     * each tile's P V into O with one rounding to nearest, so the tensor cores' fp32 accumulation
     * never carries O across the key range (the long-sum cases check that). The printout also gives
     * |tf32x3 - simt| / A and the rms of (gpu - f64) / A per kernel (the typical error, where the
     * max is the worst element). */
    double w_cpu[NK] = {}, w_64[NK] = {}, e2[NK] = {}, w_ts = 0.0;
    size_t pad[NK] = {}, ne = 0;
    std::vector<double> s(k.cap), o64(hd), A(hd);
    for (int r = 0; r < k.R; r++)
        for (int t = 0; t < k.T; t++)
            for (int h = 0; h < k.H; h++) {
                const size_t row = (size_t)r * k.T + t, n = (size_t)(k.pos0 + t + 1);
                const float *q = Q.data() + row * ldq + (size_t)h * qs;
                const float *Kh = Kc.data() + ((size_t)r * k.Hkv + h / rep) * k.cap * hd;
                const float *Vh = Vc.data() + ((size_t)r * k.Hkv + h / rep) * k.cap * hd;
                double mx = -INFINITY, sum = 0.0;
                for (size_t j = 0; j < n; j++) {
                    double acc = 0.0;
                    for (int d = 0; d < hd; d++) acc += (double)q[d] * Kh[j * hd + d];
                    s[j] = acc * scale;
                    mx = std::max(mx, s[j]);
                }
                std::fill(o64.begin(), o64.end(), 0.0), std::fill(A.begin(), A.end(), 0.0);
                for (size_t j = 0; j < n; j++) {
                    const double p = exp(s[j] - mx);
                    sum += p;
                    for (int d = 0; d < hd; d++) o64[d] += p * Vh[j * hd + d], A[d] += p * fabs(Vh[j * hd + d]);
                }
                for (int d = 0; d < hd; d++) {
                    const size_t i = row * ldo + (size_t)h * hd + d;
                    const double Ad = A[d] / sum;
                    for (int ki = 0; ki < NK; ki++) {
                        const float gi = g[ki][i];
                        const double e64 = (gi - o64[d] / sum) / Ad;
                        w_cpu[ki] = std::max(w_cpu[ki], std::isnan(gi) ? INFINITY : fabs(gi - c[i]) / Ad);
                        w_64[ki] = std::max(w_64[ki], std::isnan(gi) ? INFINITY : fabs(e64));
                        e2[ki] += e64 * e64;
                    }
                    ne++;
                    w_ts = std::max(w_ts, fabs((double)g[1][i] - g[0][i]) / Ad);
                }
            }
    for (int ki = 0; ki < NK; ki++) {
        for (size_t i = 0; i < g[ki].size(); i++)
            pad[ki] += (i % ldo) >= (size_t)k.H * hd && !same_bits(g[ki][i], c[i]);
        char name[256];
        snprintf(name, sizeof name, "%s [%s]", k.name, rsg_attention_impl_name(kern[ki]));
        ct_report(name, w_cpu[ki] <= 2e-5 && w_64[ki] <= 2e-5 && pad[ki] == 0,
               "max |gpu-cpu|/A %.2e, |gpu-f64|/A %.2e (<= 2e-5; rms %.2e), %zu padding elements changed",
               w_cpu[ki], w_64[ki], sqrt(e2[ki] / (double)std::max<size_t>(ne, 1)), pad[ki]);
    }
    printf("   %s: max |tf32x3 - simt| / A %.2e\n", k.name, w_ts);
    dfree(dQ), dfree(dO), dfree(dK), dfree(dV);
}

/* Timing of both kernels at the evaluator's shapes (reference + 4 runs, a chunk of 256 at a long
 * context): not a pass / fail check, the numbers for docs/evaluator.md. The caches hold random
 * values made on the device; the two outputs are compared (max |diff| / max |o|) as a sanity check. */
__global__ void fill_rand_k_(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((double)(z >> 11) * 0x1.0p-53);
    }
}

static void bench_attention(int R, int T, int H, int Hkv, int hd, int64_t pos0, const char *name)
{
    const size_t cap = (size_t)pos0 + T, nc = (size_t)R * Hkv * cap * hd, nq = (size_t)R * T * H * hd;
    float *dK, *dV, *dQ, *dO[2];
    if (cudaMalloc((void **)&dK, nc * 4) != cudaSuccess || cudaMalloc((void **)&dV, nc * 4) != cudaSuccess) {
        cudaGetLastError();
        printf("bench %s: no memory, skipped\n", name);
        return;
    }
    CK(cudaMalloc((void **)&dQ, nq * 4));
    CK(cudaMalloc((void **)&dO[0], nq * 4));
    CK(cudaMalloc((void **)&dO[1], nq * 4));
    fill_rand_k_<<<1024, 256>>>(dK, nc, 1, -1.0f, 1.0f);
    fill_rand_k_<<<1024, 256>>>(dV, nc, 2, -1.0f, 1.0f);
    fill_rand_k_<<<1024, 256>>>(dQ, nq, 3, -1.0f, 1.0f);
    constexpr int NK = 3;
    const int kern[NK] = {RSG_ATTN_SIMT, RSG_ATTN_TF32X3_V2, RSG_ATTN_TF32X3};
    float ms[NK];
    double dmax[NK] = {}, omax = 0.0;
    vf o0;
    for (int ki = 0; ki < NK; ki++) {
        rsg_attn_args a = {R, T, H, Hkv, hd, pos0, cap, dQ, (size_t)H * hd, hd, dK, dV,
                           (float)(1.0 / sqrt((double)hd)), dO[ki ? 1 : 0], (size_t)H * hd, kern[ki]};
        RSK(rsg_attention(&a, 0)); /* warm-up */
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        const int reps = 3;
        CK(cudaEventRecord(e0));
        for (int it = 0; it < reps; it++) RSK(rsg_attention(&a, 0));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[ki], e0, e1));
        ms[ki] /= reps;
        cudaEventDestroy(e0), cudaEventDestroy(e1);
        if (ki == 0) {
            o0 = dget(dO[0], nq);
            for (size_t i = 0; i < nq; i++) omax = std::max(omax, (double)fabsf(o0[i]));
        } else {
            vf o1 = dget(dO[1], nq);
            for (size_t i = 0; i < nq; i++) dmax[ki] = std::max(dmax[ki], (double)fabsf(o0[i] - o1[i]));
        }
    }
    const double flop = 4.0 * R * H * (double)T * (pos0 + (T + 1) / 2.0) * hd;
    printf("bench %s (fp32-equivalent TFLOP/s = 4 R H T (pos0 + T/2) hd / time):\n", name);
    for (int ki = 0; ki < NK; ki++)
        printf("bench   %-10s %8.3f ms %6.1f TFLOP/s  speed-up vs simt %.2fx  max |o - o_simt| / max |o| %.2e\n",
               rsg_attention_impl_name(kern[ki]), ms[ki], flop / ms[ki] * 1e-9, ms[0] / ms[ki], dmax[ki] / omax);
    dfree(dK), dfree(dV), dfree(dQ), dfree(dO[0]), dfree(dO[1]);
}

static void test_attention()
{
    const bool q = ct_quick;
    const AttnCase cs[] = {
        {2, q ? 16 : 64, 16, 4, 256, q ? 40 : 200, q ? 60u : 300u, true, false, 1.0f, "attention: Qwen3.5-4B heads, hd=256, T=64, pos0=200"},
        {2, q ? 20 : 256, 16, 4, 256, q ? 45 : 301, q ? 70u : 560u, true, false, 1.0f, "attention: Qwen3.5-4B chunk 256, pos0=301 (ragged tiles)"},
        {3, 1, 16, 4, 256, q ? 100 : 1000, q ? 101u : 1001u, true, false, 4.0f, "attention: decode T=1, pos0=1000, peaky scores"},
        {2, q ? 40 : 130, 8, 2, 128, 0, q ? 40u : 130u, false, false, 1.0f, "attention: Nemotron hd=128, prefill T=130"},
        {2, q ? 13 : 200, 40, 8, 128, q ? 19 : 77, q ? 40u : 300u, false, false, 2.0f, "attention: Nemotron-3-Nano-4B heads (40/8, hd=128), T=200, pos0=77"},
        {1, 7, 6, 2, 80, 33, 45, false, false, 1.0f, "attention: hd=80 rep=3 (padded dims, partial tile)"},
        {2, 5, 4, 4, 30, 3, 9, false, false, 1.0f, "attention: hd=30 rep=1 (scalar loads)"},
        {2, 9, 8, 1, 64, 70, 80, false, true, 1.0f, "attention: hd=64 MQA, misaligned caches"},
        /* long key range: the P V sums over ~8K keys, where the accumulation order shows */
        {1, q ? 8 : 32, 16, 4, 256, q ? 300 : 8192, q ? 308u : 8224u, true, false, 1.0f, "attention: Qwen3.5-4B heads, T=32 at pos0=8192 (long sums)"},
        {1, q ? 8 : 32, 8, 2, 128, q ? 300 : 8192, q ? 308u : 8224u, false, false, 2.0f, "attention: hd=128, T=32 at pos0=8192, peakier scores"}};
    for (const AttnCase &k : cs) test_attention_case(k);
    if (!q && getenv("RS_ATTN_BENCH")) {
        bench_attention(5, 256, 16, 4, 256, 8192, "Qwen3.5-4B R=5 T=256 pos0=8192");
        bench_attention(5, 256, 16, 4, 256, 65536, "Qwen3.5-4B R=5 T=256 pos0=65536");
        bench_attention(5, 512, 16, 4, 256, 65536, "Qwen3.5-4B R=5 T=512 pos0=65536");
        bench_attention(5, 256, 40, 8, 128, 65536, "Nemotron-3-Nano-4B R=5 T=256 pos0=65536");
        bench_attention(5, 512, 40, 8, 128, 65536, "Nemotron-3-Nano-4B R=5 T=512 pos0=65536");
    }
}

static void test_gate_mlp()
{
    const int M = ct_quick ? 4 : 130, H = 16, hd = 256, qs = 2 * hd, I = 9216;
    const size_t ldq = (size_t)H * qs + 4, ldo = (size_t)H * hd + 4;
    vf Q = randn(M * ldq, 2.0f), O = randn(M * ldo, 1.0f);
    float *dQ = dput(Q), *dO = dput(O);
    RSK(rsg_attn_gate(M, H, hd, dO, ldo, dQ, ldq, qs, 0));
    vf g = dget(dO, O.size()), c = O;
    for (int row = 0; row < M; row++) /* attn_gate_row_ */
        for (int h = 0; h < H; h++)
            for (int i = 0; i < hd; i++) c[row * ldo + h * hd + i] *= rs_sigmoid(Q[row * ldq + h * qs + hd + i]);
    cmp_mat("attn gate: o * sigmoid(gate) (expf: <= 8 ulp)", g, c, M, H * hd, ldo, 8, 0.0);
    dfree(dQ), dfree(dO);

    const size_t ldg = I + 4, ldu = I + 12;
    vf G = randn(M * ldg, 3.0f), U = randn(M * ldu, 1.0f);
    float *dG = dput(G), *dU = dput(U);
    RSK(rsg_swiglu(M, I, dG, ldg, dU, ldu, 0));
    g = dget(dG, G.size()), c = G;
    RSK(g_be->ops->swiglu(g_be, M, I, c.data(), ldg, U.data(), ldu));
    cmp_mat("swiglu: silu(g) u, I=9216 (silu: <= 8 ulp)", g, c, M, I, ldg, 8, 0.0);
    dfree(dG), dfree(dU);

    vf X = randn(M * ldg, 2.0f);
    const float sp[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-30f, -1e-30f, 3e19f};
    for (int i = 0; i < 9; i++) X[i] = sp[i];
    float *dX = dput(X);
    RSK(rsg_relu2(M, I, dX, ldg, 0));
    g = dget(dX, X.size()), c = X;
    RSK(g_be->ops->relu2(g_be, M, I, c.data(), ldg));
    /* NaN -> 0 as the CPU (x > 0 is false); one product: bit-exact. Compared bitwise, so the
     * NaN -> 0 rule is checked too (cmp_mat's NaN == NaN would hide only NaN vs NaN). */
    cmp_mat("relu2: max(x,0)^2 with NaN/Inf/-0 (bit-exact)", g, c, M, I, ldg, 0, 1.0);
    dfree(dX);

    const size_t n = ct_quick ? 1000 : 3000003;
    vf x = randn(n, 1.0f), y = randn(n, 1.0f);
    float *dx = dput(x), *dy = dput(y);
    RSK(rsg_add(n, dx, dy, 0));
    g = dget(dx, n);
    for (size_t i = 0; i < n; i++) x[i] = x[i] + y[i];
    cmp_mat("add: n = 3000003 (bit-exact)", g, x, 1, n, n, 0, 1.0);
    dfree(dx), dfree(dy);
}

/* ---- scoring --------------------------------------------------------------------------------- */
struct ScoreOut {
    std::vector<double> nll_ref, kl, nll, dp;
    std::vector<int32_t> top1;
    std::vector<uint8_t> bad, agree;
};

static ScoreOut run_score(int R, int T, int V, const vf &L, size_t ldl, const std::vector<int32_t> &y)
{
    const size_t nr = (size_t)(R - 1) * T;
    float *dL = dput(L);
    int32_t *dy = dput(y), *dtop;
    double *dnr, *dkl, *dnll, *ddp;
    uint8_t *dbad, *dag;
    void *work;
    CK(cudaMalloc((void **)&dtop, T * sizeof(int32_t)));
    CK(cudaMalloc((void **)&dnr, T * sizeof(double)));
    CK(cudaMalloc((void **)&dbad, T));
    CK(cudaMalloc((void **)&dkl, nr * sizeof(double)));
    CK(cudaMalloc((void **)&dnll, nr * sizeof(double)));
    CK(cudaMalloc((void **)&ddp, nr * sizeof(double)));
    CK(cudaMalloc((void **)&dag, nr));
    CK(cudaMalloc(&work, rsg_score_work_bytes(R, T)));
    RSK(rsg_score(R, T, V, dL, ldl, dy, dnr, dtop, dbad, dkl, dnll, ddp, dag, work, 0));
    ScoreOut o;
    o.nll_ref = dget(dnr, T), o.top1 = dget(dtop, T), o.bad = dget(dbad, T);
    o.kl = dget(dkl, nr), o.nll = dget(dnll, nr), o.dp = dget(ddp, nr), o.agree = dget(dag, nr);
    dfree(dL), dfree(dy), dfree(dtop), dfree(dnr), dfree(dbad), dfree(dkl), dfree(dnll), dfree(ddp), dfree(dag), dfree(work);
    return o;
}

static bool same_d(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* GPU scores against rs_kl_compare per (run, t). kl: |d| <= 1e-12 + 1e-9 kl: the terms are the
 * same double formulas of the same lp, lq up to the lse and summed in another order (all terms
 * >= 0, so the relative error of the sum is ~sqrt(V) 1e-16); CUDA's exp / expm1 / log are
 * within 1 ulp. nll, dp, nll_ref: 1e-12 absolute: they move with the lse, i.e. with the error of
 * the sum s of V exps. The GPU's (512 strided partials, then a tree) is ~1e-16 relative; the
 * host's single running sum is the larger one: it drops every term below half an ulp of the
 * running sum, so a row with one or two dominant logits and V tiny terms (the tie rows below)
 * loses up to ~V * 1e-16: 2.8e-13 measured on these data (emulated, host libm), ~3x inside.
 * (Not a bound for every row: an adversarial row could reach ~V * 1.1e-16 = 2.7e-11.)
 * top1, agree: exact. */
static void check_score(const char *name, int R, int T, int V, const vf &L, size_t ldl, const std::vector<int32_t> &y,
                        const ScoreOut &o, int *n_bad_ref, int *n_nonfinite)
{
    std::vector<double> scr(2 * (size_t)V);
    double wkl = 0.0, wn = 0.0, wdp = 0.0, wnr = 0.0;
    int bad = 0;
    *n_bad_ref = *n_nonfinite = 0;
    for (int t = 0; t < T; t++) {
        const bool yok = y[t] >= 0 && y[t] < V;
        for (int r = 1; r < R; r++) {
            const size_t oi = (size_t)(r - 1) * T + t;
            rs_kl_point pt;
            const rs_status st = rs_kl_compare(&L[(size_t)t * ldl], &L[((size_t)r * T + t) * ldl], V, yok ? y[t] : 0,
                                               scr.data(), &pt);
            if (st == RS_E_NONFINITE) { /* reference row not finite: the GPU flags it */
                bad += !(o.bad[t] == 1 && std::isnan(o.nll_ref[t]) && o.top1[t] == -1 && std::isnan(o.kl[oi]) &&
                         std::isnan(o.nll[oi]) && std::isnan(o.dp[oi]) && o.agree[oi] == 0);
                *n_bad_ref += r == 1;
                continue;
            }
            RSK(st);
            bad += o.bad[t] != 0 || o.top1[t] != pt.top1_ref;
            if (yok) wnr = std::max(wnr, fabs(o.nll_ref[t] - pt.nll_ref));
            else bad += !std::isnan(o.nll_ref[t]);
            if (!pt.finite) {
                bad += !(std::isnan(o.kl[oi]) && std::isnan(o.nll[oi]) && std::isnan(o.dp[oi]) && o.agree[oi] == 0);
                *n_nonfinite += 1;
                continue;
            }
            bad += o.agree[oi] != (uint8_t)pt.agree;
            if (pt.kl == 0.0) bad += !same_d(o.kl[oi], 0.0); /* identical rows: exactly 0 */
            wkl = std::max(wkl, fabs(o.kl[oi] - pt.kl) / (1e-12 + 1e-9 * pt.kl));
            if (yok) {
                wn = std::max(wn, fabs(o.nll[oi] - pt.nll_run)), wdp = std::max(wdp, fabs(o.dp[oi] - pt.dp));
            } else {
                bad += !(std::isnan(o.nll[oi]) && std::isnan(o.dp[oi]));
            }
        }
    }
    ct_report(name, bad == 0 && wkl <= 1.0 && wn <= 1e-12 && wdp <= 1e-12 && wnr <= 1e-12,
           "kl |d|/(1e-12 + 1e-9 kl) %.3f, nll %.1e, dp %.1e, nll_ref %.1e (<= 1e-12), %d top1/agree/NaN mismatches", wkl,
           wn, wdp, wnr, bad);
}

static void test_score()
{
    /* (a) vocabulary 248320 (Qwen3.5), R = 3, T = 4 */
    const int V = 248320, R = 3, T = 4;
    const size_t ldl = V + 16;
    vf L((size_t)R * T * ldl, 123.0f);
    std::vector<int32_t> y = {5, 100, 77777, 248319};
    float *ref[4], *run[3][4];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) (r ? run[r][t] : ref[t]) = &L[((size_t)r * T + t) * ldl];
    for (int t = 0; t < T; t++)
        for (int i = 0; i < V; i++) {
            ref[t][i] = (float)(2.5 * ct_normal());
            run[1][t][i] = t == 0 ? ref[t][i] : ref[t][i] + (float)(1e-3 * ct_normal()); /* t = 0: identical */
            run[2][t][i] = ref[t][i] + (float)(2.0 * ct_normal());                     /* r < -1 branch */
        }
    /* t = 1: ties for the top-1 (lowest index wins): ref 100 / 5000; run 1 the same tie, agree;
     * run 2 ties 7 / 100, top-1 7, disagrees */
    ref[1][100] = ref[1][5000] = run[1][1][100] = run[1][1][5000] = 30.0f;
    run[2][1][7] = run[2][1][100] = 31.0f;
    /* t = 2: p underflows to 0 in double (the p == 0 branch); run 2 has a NaN */
    for (int i = 0; i < V; i += 3) ref[2][i] = -1000.0f, run[1][2][i] = -990.0f;
    run[2][2][12345] = NAN;
    ref[3][999] = INFINITY; /* t = 3: the reference row is not finite */
    ScoreOut o = run_score(R, T, V, L, ldl, y);
    int nb = 0, nf = 0;
    check_score("score: V=248320 R=3 T=4 (identical, noisy, ties, p=0, NaN run, Inf ref)", R, T, V, L, ldl, y, o, &nb, &nf);
    ct_report("score: special rows exercised", nb == 1 && nf == 1 && o.kl[0] == 0.0 && o.top1[1] == 100 && o.agree[1] == 1 &&
                                                o.agree[T + 1] == 0,
           "%d bad reference, %d non-finite run, kl(identical) %g, top1 %d, agree %d/%d", nb, nf, o.kl[0], o.top1[1],
           o.agree[1], o.agree[T + 1]);
    /* deterministic: a second call gives the same bits */
    ScoreOut o2 = run_score(R, T, V, L, ldl, y);
    const bool det = memcmp(o.kl.data(), o2.kl.data(), o.kl.size() * 8) == 0 &&
                     memcmp(o.nll.data(), o2.nll.data(), o.nll.size() * 8) == 0 &&
                     memcmp(o.dp.data(), o2.dp.data(), o.dp.size() * 8) == 0 &&
                     memcmp(o.nll_ref.data(), o2.nll_ref.data(), o.nll_ref.size() * 8) == 0;
    ct_report("score: repeated call bit-identical", det, "%s", det ? "same bits" : "DIFFERENT");

    /* (b) small vocabulary, many rows, integer logits (many ties at the max), one target
     * outside [0, V) (NaN nll / dp on the GPU; the host rejects it) */
    const int V2 = 1000, R2 = 4, T2 = ct_quick ? 8 : 70;
    const size_t ld2 = V2 + 3;
    vf L2((size_t)R2 * T2 * ld2, 0.0f);
    for (auto &x : L2) x = (float)std::round(3.0 * ct_normal());
    std::vector<int32_t> y2(T2);
    for (int t = 0; t < T2; t++) y2[t] = (int32_t)(ct_rnd64() % V2);
    y2[3] = -1;
    ScoreOut p = run_score(R2, T2, V2, L2, ld2, y2);
    check_score("score: V=1000 R=4 T=70 integer logits (ties), target -1", R2, T2, V2, L2, ld2, y2, p, &nb, &nf);
}

/* ---- argument checks ------------------------------------------------------------------------- */
static void test_invalid()
{
    float *d = nullptr;
    CK(cudaMalloc((void **)&d, 1024 * sizeof(float)));
    int n_ok = 0, n = 0;
    rsg_attn_args a = {1, 1, 4, 2, 257, 0, 4, d, 2000, 257, d, d, 1.0f, d, 2000, 0};
    n++, n_ok += rsg_attention(&a, 0) == RS_E_INVAL; /* hd > 256 */
    a.hd = 64, a.q_hstride = 64, a.H = 3;
    n++, n_ok += rsg_attention(&a, 0) == RS_E_INVAL; /* H % Hkv != 0 */
    a.H = 4, a.pos0 = 4;
    n++, n_ok += rsg_attention(&a, 0) == RS_E_INVAL; /* pos0 + T > cap */
    a.pos0 = 0, a.impl = 7;
    n++, n_ok += rsg_attention(&a, 0) == RS_E_INVAL; /* unknown kernel */
    n++, n_ok += rsg_conv1d(1, 1, 8, 9, d, 8, d, d, nullptr, 1, d + 100, 8, 0) == RS_E_INVAL;            /* K > 8 */
    n++, n_ok += rsg_rmsnorm_gated(1, 100, 30, d, 100, d, 100, d, 30, 1e-6f, RSG_GATE_AFTER_NORM, d, 100, 0) == RS_E_INVAL;
    n++, n_ok += rsg_rmsnorm(1, 100, d, 99, d, 1e-6f, RSG_NORM_PLAIN, d, 100, 0) == RS_E_INVAL;            /* ld < n */
    n++, n_ok += rsg_score(2, 1, 10, d, 10, (const int32_t *)d, (double *)d, (int32_t *)d, (uint8_t *)d, (double *)d,
                           (double *)d, (double *)d, (uint8_t *)d, nullptr, 0) == RS_E_INVAL;          /* no work */
    n++, n_ok += rsg_kv_append(1, 2, 1, 4, 3, 4, d, 4, d, 4, d, d, 0) == RS_E_INVAL;                      /* past cap */
    CK(cudaDeviceSynchronize());
    ct_report("argument checks return RS_E_INVAL before launching", n_ok == n, "%d of %d", n_ok, n);
    dfree(d);
}

/* ---- rs_mathf.h on the device == on the host (the CPU reference's twins, bit for bit) ------------ */
__global__ void mathf_k_(int n, const float *x, float *out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[4 * i] = rs_expf(x[i] * 100.0f);
        out[4 * i + 1] = rs_log1pf(fabsf(x[i]) * 1e4f - 0.5f);
        out[4 * i + 2] = rs_sigmoidf(x[i] * 40.0f);
        out[4 * i + 3] = rs_softplusf(x[i] * 30.0f);
    }
}

static void test_mathf_twins()
{
    const int n = ct_quick ? (1 << 16) : (1 << 22);
    std::vector<float> x(n), got(4 * (size_t)n);
    uint64_t s = 0x5DEECE66Dull;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) * 0x1.0p-53 * 2.0 - 1.0); /* [-1, 1): exp of [-100, 100) etc. */
    }
    float *dx = nullptr, *dout = nullptr;
    CK(cudaMalloc((void **)&dx, n * sizeof(float)));
    CK(cudaMalloc((void **)&dout, 4 * (size_t)n * sizeof(float)));
    CK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    mathf_k_<<<1024, 256>>>(n, dx, dout);
    CK(cudaGetLastError());
    CK(cudaMemcpy(got.data(), dout, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        const float want[4] = {rs_expf(x[i] * 100.0f), rs_log1pf(fabsf(x[i]) * 1e4f - 0.5f), rs_sigmoidf(x[i] * 40.0f),
                               rs_softplusf(x[i] * 30.0f)};
        for (int f = 0; f < 4; f++) bad[f] += memcmp(&want[f], &got[4 * (size_t)i + f], sizeof(float)) != 0;
    }
    ct_report("rs_mathf.h twins: device == host bit for bit (exp, log1p, sigmoid, softplus)",
           bad[0] + bad[1] + bad[2] + bad[3] == 0, "%d arguments: %zu / %zu / %zu / %zu differ", n, bad[0], bad[1], bad[2],
           bad[3]);
    CK(cudaFree(dx));
    CK(cudaFree(dout));
}

/* ---- the twin compute mode (--compute twin): the CPU's arithmetic, bit for bit ----------------- */

/* the norms with sequential double sums (rsg_*_seq) against the CPU backend's ops and rs_l2norm:
 * the same double in the same order, then the same fp32 operations, so every element must be the
 * CPU's bit for bit (0 ulp, 100 %); the strided kernels' tree sums are counted for comparison (they
 * may differ in rare ties, which is why the twin mode does not use them) */
static void gdn_row_twin_ref(float *q, int Hk, int dk, int Hv, const float *a, const float *b, const float *A_log,
                             const float *dt_bias, float *alpha, float *beta)
{
    float *k = q + (size_t)Hk * dk;
    const float scale = (float)(1.0 / sqrt((double)dk));
    for (int h = 0; h < Hk; h++) { /* rs_forward.c gdn_prep_row_ */
        rs_l2norm(q + h * dk, dk, 1e-6f);
        for (int i = 0; i < dk; i++) q[h * dk + i] *= scale;
        rs_l2norm(k + h * dk, dk, 1e-6f);
    }
    for (int h = 0; h < Hv; h++) {
        const float A = -rs_expf(A_log[h]);
        const float gl = A * rs_softplus(a[h] + dt_bias[h]);
        alpha[h] = rs_expf(gl);
        beta[h] = rs_sigmoid(b[h]);
    }
}

static void test_twin_norms()
{
    const int M = ct_quick ? 64 : 2000, n = 2560;
    vf X = randn((size_t)M * n, 1.3f), w = randu(n, -1.0f, 1.0f);
    for (int i = 0; i < M; i += 3)
        for (int j = 0; j < n; j++) X[(size_t)i * n + j] *= i % 2 ? 1e3f : 1e-3f;
    for (int kind = 0; kind < 2; kind++) {
        const rs_norm_weight nk = kind ? RS_NORM_ONE_PLUS : RS_NORM_PLAIN;
        float *dX = dput(X), *dw = dput(w), *dY = dput(vf((size_t)M * n, 0.0f));
        RSK(rsg_rmsnorm_seq(M, n, dX, n, dw, 1e-6f, gk_(nk), dY, n, 0));
        vf g = dget(dY, (size_t)M * n);
        RSK(rsg_rmsnorm(M, n, dX, n, dw, 1e-6f, gk_(nk), dY, n, 0));
        vf gt = dget(dY, (size_t)M * n);
        vf c((size_t)M * n);
        RSK(g_be->ops->rmsnorm(g_be, M, n, X.data(), n, w.data(), 1e-6f, nk, c.data(), n));
        size_t tree = 0;
        for (size_t i = 0; i < c.size(); i++) tree += !same_bits(gt[i], c[i]);
        printf("     (the tree-sum rsg_rmsnorm differs from the CPU in %zu of %zu elements)\n", tree, c.size());
        cmp_mat(kind ? "twin rmsnorm (1+w), d=2560: == CPU bit for bit" : "twin rmsnorm (plain), d=2560: == CPU bit for bit",
                g, c, M, n, n, 0, 1.0);
        dfree(dX), dfree(dw), dfree(dY);
    }
    /* gated, both orders (GDN heads dv 128 in place; Mamba groups 2048 of 4096, ldz strided) */
    struct G { int M, n, gs; size_t ldz; rs_gate_order o; bool inplace; const char *name; };
    const G gc[] = {{ct_quick ? 64 : 1024, 128, 128, 128, RS_GATE_AFTER_NORM, true, "twin gated norm (after, in place): == CPU bit for bit"},
                    {ct_quick ? 16 : 300, 4096, 2048, 4200, RS_GATE_BEFORE_NORM, true, "twin gated norm (before, in place): == CPU bit for bit"},
                    {ct_quick ? 16 : 300, 512, 128, 515, RS_GATE_BEFORE_NORM, false, "twin gated norm (before): == CPU bit for bit"}};
    for (const G &k : gc) {
        vf Xg = randn((size_t)k.M * k.n, 1.0f), Z = randn((size_t)k.M * k.ldz, 2.0f), wg = randu(k.n, -1.5f, 1.5f);
        vf Y0 = k.inplace ? Xg : vf((size_t)k.M * k.n, -5.0f), c = Y0;
        float *dX = dput(Xg), *dZ = dput(Z), *dw = dput(wg), *dY = k.inplace ? dX : dput(Y0);
        RSK(rsg_rmsnorm_gated_seq(k.M, k.n, k.gs, dX, k.n, dZ, k.ldz, dw, k.n, 1e-5f, go_(k.o), dY, k.n, 0));
        vf g = dget(dY, Y0.size());
        RSK(g_be->ops->rmsnorm_gated(g_be, k.M, k.n, k.gs, k.inplace ? c.data() : Xg.data(), k.n, Z.data(), k.ldz,
                                     wg.data(), k.n, 1e-5f, k.o, c.data(), k.n));
        cmp_mat(k.name, g, c, k.M, k.n, k.n, 0, 1.0);
        if (!k.inplace) dfree(dY);
        dfree(dX), dfree(dZ), dfree(dw);
    }
    /* GDN prep: q, k L2 norms (+ scale), alpha, beta: gdn_prep_row_'s bits */
    const int Hk = 16, dk = 128, Hv = 32, dv = 128, Mp = ct_quick ? 8 : 400;
    const size_t ldq = 2 * Hk * dk + Hv * dv + 8;
    vf Q = randn((size_t)Mp * ldq, 0.7f), a = randn((size_t)Mp * Hv, 2.0f), b = randn((size_t)Mp * Hv, 3.0f);
    vf A_log = randu(Hv, -2.0f, 1.5f), dtb = randu(Hv, -1.0f, 1.0f), al0((size_t)Mp * Hv, 0.0f);
    float *dQ = dput(Q), *da = dput(a), *db = dput(b), *dA = dput(A_log), *dd = dput(dtb), *dal = dput(al0), *dbe = dput(al0);
    RSK(rsg_gdn_prep_seq(Mp, Hk, dk, Hv, dQ, ldq, da, db, dA, dd, dal, dbe, 0));
    vf g = dget(dQ, Q.size()), ga = dget(dal, al0.size()), gb = dget(dbe, al0.size());
    vf c = Q, ca(al0.size()), cb(al0.size());
    for (int row = 0; row < Mp; row++)
        gdn_row_twin_ref(c.data() + row * ldq, Hk, dk, Hv, a.data() + row * Hv, b.data() + row * Hv, A_log.data(),
                         dtb.data(), ca.data() + row * Hv, cb.data() + row * Hv);
    cmp_mat("twin gdn prep: q, k L2 norm + scale == CPU bit for bit (v untouched)", g, c, Mp, ldq, ldq, 0, 1.0);
    cmp_mat("twin gdn prep: alpha == CPU bit for bit", ga, ca, 1, ca.size(), ca.size(), 0, 1.0);
    cmp_mat("twin gdn prep: beta == CPU bit for bit", gb, cb, 1, cb.size(), cb.size(), 0, 1.0);
    dfree(dQ), dfree(da), dfree(db), dfree(dA), dfree(dd), dfree(dal), dfree(dbe);
}

/* the double attention against the CPU backend's default (cpu_attention_f64_): the same double
 * operations in the same order, one rounding, so 0 ulp at every element (outputs of other heads'
 * padding untouched); key counts past one 256-key tile and up to 8K exercise the tiled second pass */
static void test_twin_attention()
{
    const AttnCase cs[] = {
        {3, 37, 4, 2, 64, 1000, 1100, false, false, 1.0f, "twin attention: gdn-tiny heads hd 64, R 3, keys 1000-1037"},
        {2, 16, 8, 2, 128, ct_quick ? 300 : 8176, (size_t)(ct_quick ? 320 : 8200), true, false, 3.0f,
         "twin attention: hd 128 gated, peaky scores, up to 8192 keys"},
        {1, 5, 16, 4, 256, 250, 260, true, true, 1.0f, "twin attention: Qwen3.5-4B heads hd 256, misaligned caches"},
        {2, 40, 4, 4, 48, 0, 40, false, false, 2.0f, "twin attention: prefill from position 0, hd 48"}};
    for (const AttnCase &k : cs) {
        const int hd = k.hd, qs = k.gated ? 2 * hd : hd;
        const size_t ldq = (size_t)k.H * qs + 3, ldo = (size_t)k.H * hd + 8, M = (size_t)k.R * k.T;
        const size_t nc = (size_t)k.R * k.Hkv * k.cap * hd;
        const int64_t nvalid = k.pos0 + k.T;
        vf Q = randu(M * ldq, -k.qscale, k.qscale), Kc(nc), Vc(nc), O0(M * ldo, -7.0f);
        for (size_t i = 0; i < nc; i++) {
            const bool valid = (int64_t)((i / hd) % k.cap) < nvalid;
            Kc[i] = valid ? (float)(2.0 * ct_unif() - 1.0) : NAN;
            Vc[i] = valid ? (float)ct_normal() : NAN;
        }
        const float scale = (float)(1.0 / sqrt((double)hd));
        float *dQ = dput(Q), *dO = dput(O0), *dK, *dV;
        CK(cudaMalloc((void **)&dK, (nc + 1) * sizeof(float)));
        CK(cudaMalloc((void **)&dV, (nc + 1) * sizeof(float)));
        float *dKc = dK + (k.misalign ? 1 : 0), *dVc = dV + (k.misalign ? 1 : 0);
        CK(cudaMemcpy(dKc, Kc.data(), nc * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dVc, Vc.data(), nc * sizeof(float), cudaMemcpyHostToDevice));
        rsg_attn_args a = {k.R, k.T, k.H, k.Hkv, hd, k.pos0, k.cap, dQ, ldq, qs, dKc, dVc, scale, dO, ldo, 0};
        RSK(rsg_attention_twin(&a, 0));
        vf g = dget(dO, O0.size()), c = O0;
        vf scratch((size_t)g_be->n_threads * RS_ATTN_BLOCK_ROWS * k.cap);
        for (int r = 0; r < k.R; r++) {
            rs_attn_args ca;
            ca.T = k.T, ca.n_past = k.pos0, ca.H = k.H, ca.Hkv = k.Hkv, ca.hd = hd;
            ca.Q = Q.data() + (size_t)r * k.T * ldq, ca.ldq = ldq, ca.q_hstride = qs;
            ca.Kc = Kc.data() + (size_t)r * k.Hkv * k.cap * hd, ca.Vc = Vc.data() + (size_t)r * k.Hkv * k.cap * hd;
            ca.cap = k.cap, ca.scale = scale, ca.O = c.data() + (size_t)r * k.T * ldo, ca.ldo = ldo;
            ca.scratch = scratch.data(), ca.scratch_rows = RS_ATTN_BLOCK_ROWS;
            RSK(g_be->ops->attention(g_be, &ca)); /* the default: RS_CPU_ATTN unset = f64 */
        }
        cmp_mat(k.name, g, c, M, (size_t)k.H * hd, ldo, 0, 1.0);
        dfree(dQ), dfree(dO), dfree(dK), dfree(dV);
    }
}

/* the engine-order recurrence (rsg_twin_ssm) against the CPU engine itself: one rs_head per (stream,
 * twin run, head) with the reference policy fp32 (rs_head_decode token by token: conv_decode_ ->
 * rs_ssm_gdn_step / rs_ssm_mamba2_step), the GPU fed the same inputs chunk by chunk with the state
 * carried. Demanded: every output at every step and the final states bit for bit (0 ulp), and the
 * rows of the runs that are not twin runs untouched. Inputs in the evaluator's layout (stacked rows
 * g * T + t, strided, k/q shared by rep heads). */
static void twin_ssm_case(int gdn, int H, int rep, int dk, int dv, int steps, int T, const char *name)
{
    const int RS = 3, NS = 2, nt = 2, runs[2] = {0, 2}, G = NS * RS;
    const int Hk = H / rep;
    const size_t ld_a = (size_t)H + 1, ld_k = (size_t)Hk * dk + 5, ld_v = (size_t)H * dv + 3, ld_o = (size_t)H * dv + 7;
    const size_t nstate = (size_t)NS * nt * H * dv * dk;
    std::vector<rs_head> heads((size_t)NS * nt * H);
    for (int j = 0; j < NS; j++)
        for (int i = 0; i < nt; i++)
            for (int h = 0; h < H; h++) {
                rs_head_config hc;
                memset(&hc, 0, sizeof hc);
                hc.kind = gdn ? RS_SSM_GDN : RS_SSM_MAMBA2;
                hc.d_v = (size_t)dv, hc.d_k = (size_t)dk;
                hc.policy = rs_policy_fp32();
                hc.window = 16, hc.max_drafts = 1, hc.seed = 1;
                hc.layer = 0, hc.head = (uint32_t)h;
                rs_head *hd = &heads[((size_t)j * nt + i) * H + h];
                RSK(rs_head_init(hd, &hc));
                RSK(rs_head_reset(hd, NULL));
            }
    float *dS = dput(vf(nstate, 0.0f));
    int *druns = dput(std::vector<int>(runs, runs + nt));
    bool ok = true;
    size_t nout = 0, bad_out = 0, touched = 0;
    for (int t0 = 0; t0 < steps; t0 += T) {
        const int n = std::min(T, steps - t0);
        const size_t rows = (size_t)G * n;
        vf al(rows * ld_a), be(rows * ld_a), K = randn(rows * ld_k, 1.0f), Qv = randn(rows * ld_k, 1.0f),
            Vv = randn(rows * ld_v, gdn ? 1.0f : 0.3f), O0(rows * ld_o, -3.0f);
        for (size_t e = 0; e < al.size(); e++) { /* decays in (0, 1] as the models' (mostly near 1), gates in (0, 1) */
            al[e] = (float)exp(-0.2 * ct_unif() * ct_unif());
            be[e] = (float)ct_unif();
        }
        if (gdn) /* GDN keys L2-normalised (as the prep makes them): the state stays bounded */
            for (size_t r = 0; r < rows; r++)
                for (int hk = 0; hk < Hk; hk++) {
                    float *kk = K.data() + r * ld_k + (size_t)hk * dk;
                    rs_l2norm(kk, (size_t)dk, 1e-6f);
                }
        float *dal = dput(al), *dbe = dput(be), *dK = dput(K), *dQ = dput(Qv), *dV = dput(Vv), *dO = dput(O0);
        rsg_twin_ssm_args a;
        memset(&a, 0, sizeof a);
        a.gdn = gdn, a.T = n, a.H = H, a.rep = rep, a.dk = dk, a.dv = dv, a.RS = RS, a.n_streams = NS;
        a.runs = druns, a.nt = nt, a.alpha = dal, a.beta = dbe, a.ld_a = ld_a;
        a.k = dK, a.ld_k = ld_k, a.q = dQ, a.ld_q = ld_k, a.v = dV, a.ld_v = ld_v, a.o = dO, a.ld_o = ld_o, a.S = dS;
        RSK(rsg_twin_ssm(&a, 0));
        vf g = dget(dO, O0.size());
        std::vector<char> is_twin(G, 0);
        for (int j = 0; j < NS; j++)
            for (int i = 0; i < nt; i++) is_twin[j * RS + runs[i]] = 1;
        for (int j = 0; j < NS; j++)
            for (int i = 0; i < nt; i++) {
                const size_t gg = (size_t)j * RS + runs[i];
                for (int h = 0; h < H; h++) {
                    rs_head *hd = &heads[((size_t)j * nt + i) * H + h];
                    for (int t = 0; t < n; t++) {
                        const size_t rw = gg * n + t;
                        rs_ssm_token tok;
                        tok.alpha = al[rw * ld_a + h];
                        tok.beta = be[rw * ld_a + h];
                        tok.k = K.data() + rw * ld_k + (size_t)(h / rep) * dk;
                        tok.q = Qv.data() + rw * ld_k + (size_t)(h / rep) * dk;
                        tok.v = Vv.data() + rw * ld_v + (size_t)h * dv;
                        vf o(dv);
                        RSK(rs_head_decode(hd, &tok, o.data()));
                        for (int r = 0; r < dv; r++) {
                            nout++;
                            bad_out += !same_bits(o[r], g[rw * ld_o + (size_t)h * dv + r]);
                        }
                    }
                }
            }
        for (size_t rw = 0; rw < rows; rw++) /* non-twin rows and padding keep their bits */
            for (size_t e = 0; e < ld_o; e++)
                if ((!is_twin[rw / n] || e >= (size_t)H * dv) && !same_bits(g[rw * ld_o + e], O0[rw * ld_o + e])) touched++;
        dfree(dal), dfree(dbe), dfree(dK), dfree(dQ), dfree(dV), dfree(dO);
    }
    vf gs = dget(dS, nstate);
    size_t bad_state = 0;
    double smax = 0.0;
    for (int j = 0; j < NS; j++)
        for (int i = 0; i < nt; i++)
            for (int h = 0; h < H; h++) {
                vf S((size_t)dv * dk);
                RSK(rs_head_state(&heads[((size_t)j * nt + i) * H + h], S.data()));
                const float *gp = gs.data() + (((size_t)j * nt + i) * H + h) * dv * dk;
                for (size_t e = 0; e < S.size(); e++) {
                    bad_state += !same_bits(S[e], gp[e]);
                    smax = std::max(smax, (double)fabsf(S[e]));
                }
            }
    ok = bad_out == 0 && bad_state == 0 && touched == 0 && nout > 0 && smax > 0.0;
    ct_report(name, ok, "%d steps in chunks of %d, %zu outputs: %zu differ from the engine; final states: %zu of %zu differ "
                     "(max |S| %.3g); %zu non-twin / padding elements changed",
           steps, T, nout, bad_out, bad_state, (size_t)NS * nt * H * dv * dk, smax, touched);
    for (auto &hd : heads) rs_head_free(&hd);
    dfree(dS);
    CK(cudaFree(druns));
}

/* the GEMM in the CPU's dgemm order (rsg_linear_twin) against the CPU backend's default GEMM (OpenBLAS
 * dgemm on double copies, one rounding), with the CPU backend's thread count (its column slabs): every
 * output bit for bit (0 ulp), and the padding untouched. Shapes: the bundled models' (chunk 64: 5 runs x
 * 64 = 320 rows; N = 2 takes OpenBLAS's small-matrix kernel, K = 768 / 1024 its K blocks), odd sizes
 * for both kernels' tails and both reduction trees, beta = 1 (the residual adds), two streams stacked. */
extern "C" char *openblas_get_config(void);
static void test_twin_gemm()
{
    printf("     (CPU GEMM: %s, %d threads)\n", openblas_get_config(), g_be->n_threads);
    struct G { int M, N, K, Mc; float beta; const char *name; };
    const G gc[] = {{320, 2, 256, 320, 0.0f, "twin GEMM 320 x 2 x 256 (GDN in_a / in_b: the small kernel)"},
                    {128, 2, 256, 128, 0.0f, "twin GEMM 128 x 2 x 256 (--policy fp32)"},
                    {320, 768, 256, 320, 0.0f, "twin GEMM 320 x 768 x 256"},
                    {320, 256, 768, 320, 1.0f, "twin GEMM 320 x 256 x 768, beta 1 (K blocks 384 + 384)"},
                    {320, 256, 1024, 320, 1.0f, "twin GEMM 320 x 256 x 1024, beta 1 (K blocks 384 + 320 + 320)"},
                    {320, 256, 512, 320, 0.0f, "twin GEMM 320 x 256 x 512 (K blocks 256 + 256)"},
                    {65, 37, 300, 65, 0.0f, "twin GEMM 65 x 37 x 300 (odd: both reduction trees)"},
                    {13, 30, 1000, 13, 1.0f, "twin GEMM 13 x 30 x 1000, beta 1"},
                    {64, 256, 256, 64, 0.0f, "twin GEMM 64 x 256 x 256 (narrow slabs with many threads)"},
                    {2 * 70, 5, 64, 70, 0.0f, "twin GEMM 2 streams of 70 rows x 5 x 64"},
                    {40, 100, 20, 40, 0.0f, "twin GEMM 40 x 100 x 20 (K < 32)"}};
    for (const G &k : gc) {
        const size_t ldx = (size_t)k.K + 3, ldy = (size_t)k.N + 5;
        vf X = randn((size_t)k.M * ldx, 1.0f), W = randn((size_t)k.N * k.K, 0.1f), Y0 = randn((size_t)k.M * ldy, 1.0f);
        float *dX = dput(X), *dW = dput(W), *dY = dput(Y0);
        RSK(rsg_linear_twin(k.M, k.N, k.K, dX, ldx, dW, k.beta, dY, ldy, k.Mc, g_be->n_threads, RS_GEMM_F64_BLOCK_DEFAULT, 0));
        vf g = dget(dY, Y0.size()), c = Y0;
        for (int s0 = 0; s0 < k.M; s0 += k.Mc) /* one CPU GEMM per stream, as the CPU scorer runs them */
            RSK(g_be->ops->linear(g_be, k.Mc, k.N, k.K, X.data() + (size_t)s0 * ldx, ldx, W.data(), k.beta,
                                  c.data() + (size_t)s0 * ldy, ldy));
        cmp_mat(k.name, g, c, k.M, k.N, ldy, 0, 1.0);
        dfree(dX), dfree(dW), dfree(dY);
    }
    /* the CPU's column blocks (common/rs_gemm_blocks.h), here at the smallest bound so that a small
     * shape splits: a CPU backend created with RS_CPU_F64_BLOCK = 1024 walks each slab of 40 x 600 x
     * 100 (304 / 296 columns at 2 threads: OpenBLAS's blocked kernel, 40 x 304 > 1200) in blocks of
     * 16 columns (1024 / 100 = 10 -> 16), each a call that takes the small-matrix kernel (40 x 16 x
     * 100 <= 1e6, 40 x 16 <= 1200, K >= 32), whose lane sums round otherwise: the twin with the same
     * bound must give the same bits, i.e. walk the same blocks */
    {
        const int M = 40, N = 600, K = 100;
        const size_t blk = 1024;
        setenv("RS_CPU_F64_BLOCK", "1024", 1);
        rs_backend *be = NULL;
        const rs_status st = rs_backend_cpu_create(g_be->n_threads, &be);
        unsetenv("RS_CPU_F64_BLOCK");
        RSK(st);
        vf X = randn((size_t)M * K, 1.0f), W = randn((size_t)N * K, 0.1f), Y0 = randn((size_t)M * N, 1.0f);
        float *dX = dput(X), *dW = dput(W), *dY = dput(Y0);
        RSK(rsg_linear_twin(M, N, K, dX, K, dW, 0.0f, dY, N, M, be->n_threads, blk, 0));
        vf g = dget(dY, Y0.size()), c = Y0;
        RSK(be->ops->linear(be, M, N, K, X.data(), K, W.data(), 0.0f, c.data(), N));
        cmp_mat("twin GEMM 40 x 600 x 100, CPU column blocks of 16 (RS_CPU_F64_BLOCK 1024: the small kernel per block)", g, c, M, N, N, 0, 1.0);
        rs_backend_destroy(be);
        dfree(dX), dfree(dW), dfree(dY);
    }
}

static void test_twin_ssm()
{
    const int steps = ct_quick ? 40 : 600;
    twin_ssm_case(1, 2, 2, 128, 128, steps, 64, "twin recurrence GDN (gdn-tiny heads: Hv 2, Hk 1, 128 x 128) == engine");
    twin_ssm_case(0, 4, 2, 128, 64, steps, 64, "twin recurrence Mamba-2 (mamba2-tiny heads: H 4, G 2, P 64, N 128) == engine");
    twin_ssm_case(1, 4, 1, 64, 32, ct_quick ? 9 : 301, 7, "twin recurrence GDN (Hv 4 = Hk, 32 x 64, chunks of 7) == engine");
}

int main(int argc, char **argv)
{
    const int skip = ct_init(argc, argv, "test_gpu_ops");
    if (skip) return skip;
    bool twin_only = false; /* --twin: the twin compute mode's cases alone (at full size unless --quick) */
    for (int i = 1; i < argc; i++) twin_only |= strcmp(argv[i], "--twin") == 0;
    if (getenv("RS_ATTN_BENCH_ONLY")) { /* the benchmark alone (for a profiler): printout, exit 0 */
        bench_attention(5, 512, 16, 4, 256, 65536, "Qwen3.5-4B R=5 T=512 pos0=65536");
        return 0;
    }
    RSK(rs_backend_cpu_create(0, &g_be));
    if (!twin_only) {
        test_embed();
        test_rmsnorm();
        test_rmsnorm_gated();
        test_conv1d();
        test_mathf_twins();
        test_gdn_prep();
        test_mamba_prep();
        test_rope();
        test_kv_append();
        test_attention();
        test_gate_mlp();
        test_score();
        test_invalid();
    }
    test_twin_gemm();
    test_twin_norms();
    test_twin_attention();
    test_twin_ssm();
    rs_backend_destroy(g_be);
    return ct_finish(twin_only ? "test_gpu_ops --twin" : "test_gpu_ops");
}
