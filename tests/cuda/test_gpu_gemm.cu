/* test_gpu_gemm.cu — the GPU evaluator's GEMMs (kernels/dense/rs_dense_gemm.h) against a float64
 * reference computed here on the host, and the TF32 split they rest on (rsg_tf32_split,
 * rsg_tf32_exact):
 *   - the split: hi is the nearest TF32 value (ties away from zero), hi and lo TF32-exact,
 *     |x - hi - lo| <= 2^-22 |x|, non-finite values kept in hi, in place = out of place, padding
 *     untouched;
 *   - the exactness scan: bf16-rounded arrays are exact, one stray low bit anywhere is found,
 *     with one thread and with several;
 *   - the bf16x3 split (rsg_bf16x3_split): B0 the nearest bf16 (ties to even), B0 + B1 + B2 == x
 *     exactly (|x| >= 2^-100), inf / NaN in B0 with B1 = B2 = 0; the bf16 exactness scan;
 *   - rsg_linear_bf16x3 (the default `--compute fp32` method for bf16-exact weights) on every
 *     bf16-exact case below, in one column slice and in slices of 24 columns: within SGEMM's bound;
 *   - rsg_linear, every method (sgemm, tf32, tf32x3 with W_lo == 0 and W_lo != 0), odd shapes
 *     (M = 1, K = 13 and 1001: not multiples of 8, strided X / Y, beta 0 and 1), planted inf / NaN
 *     rows: SGEMM's fp32 bound, the split's bound (its representation is fp32-grade, the tensor
 *     cores' accumulation is not: see the bounds below), and that plain TF32 is measurably worse
 *     (the split really runs: its error is many times smaller than one TF32 GEMM's).
 * Exit 0 if all pass, 1 if one fails, 77 without a GPU. Usage: test_gpu_gemm [--quick] (smaller
 * shapes, for compute-sanitizer). RS_GEMM_BENCH=1 (without --quick) also times the methods at the
 * evaluator's shapes (M = 2560 rows: reference + 4 runs x chunk 512), printout only.
 *
 * Error measures, per output y = beta y0 + sum_k x_k w_k, reference y64 in double:
 *   e_max = max over outputs |y - y64| / (|beta y0| + sum_k |x_k w_k|)   (the GEMM error bound's form)
 *   e_fro = ||y - y64||_2 / ||y64||_2                                     (METHOD.md's norm form)
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "dense/rs_dense_gemm.h"
#include "dense/rs_dense_ops.h"
#include "gpu/rs_gpu_weights.h" /* rsg_gemm_method_of */
#include "cuda_test_util.h"


typedef std::vector<float> vf;
static cublasHandle_t g_blas;

static const uint32_t k_pad = 0x7FA5A5A5u; /* a NaN payload no op writes: the padding sentinel */

/* ---- the split ------------------------------------------------------------------------------- */
static void test_split()
{
    const int M = 3, n = ct_quick ? 700 : 5000, ld = n + 5;
    vf x((size_t)M * ld, ct_u2f(k_pad));
    for (int r = 0; r < M; r++)
        for (int i = 0; i < n; i++) {
            float v = (float)(ct_normal() * ldexp(1.0, (int)(ct_unif() * 60.0) - 30));
            const int kind = (int)(ct_rnd64() % 64);
            if (kind == 0) v = ct_u2f((ct_f2u(v) & 0xFFFFE000u) | 0x1000u);    /* a tie: away from zero */
            if (kind == 1) v = ct_u2f(ct_f2u(v) & 0xFFFFE000u);                /* already TF32 */
            if (kind == 2) v = ct_u2f((uint32_t)(ct_rnd64() & 0x807FFFFFu));    /* subnormal or 0 */
            if (kind == 3) v = (ct_rnd64() & 1) ? FLT_MAX : -FLT_MAX;              /* rounds past TF32's largest */
            if (kind == 4) v = (ct_rnd64() & 1) ? INFINITY : -INFINITY;
            if (kind == 5) v = NAN;
            if (kind == 6) v = (ct_rnd64() & 1) ? 0.0f : -0.0f;
            x[(size_t)r * ld + i] = v;
        }
    float *dx = dput(x), *dh = dput(vf((size_t)M * ld, ct_u2f(k_pad))), *dl = dput(vf((size_t)M * ld, ct_u2f(k_pad)));
    RSK(rsg_tf32_split(M, n, dx, ld, dh, ld, dl, ld, 0));
    vf h = dget(dh, (size_t)M * ld), l = dget(dl, (size_t)M * ld);
    RSK(rsg_tf32_split(M, n, dx, ld, dx, ld, dl, ld, 0)); /* in place: hi over x */
    vf hin = dget(dx, (size_t)M * ld), lin = dget(dl, (size_t)M * ld);
    size_t bad_near = 0, bad_bits = 0, bad_err = 0, bad_nf = 0, bad_pad = 0, bad_inplace = 0;
    double worst = 0.0;
    for (int r = 0; r < M; r++)
        for (int i = 0; i < ld; i++) {
            const size_t k = (size_t)r * ld + i;
            if (i >= n) {
                bad_pad += ct_f2u(h[k]) != k_pad || ct_f2u(l[k]) != k_pad;
                continue;
            }
            bad_inplace += ct_f2u(hin[k]) != ct_f2u(h[k]) || ct_f2u(lin[k]) != ct_f2u(l[k]);
            const float v = x[k];
            if (!std::isfinite(v)) {
                bad_nf += !(ct_f2u(h[k]) == ct_f2u(v) || (std::isnan(v) && std::isnan(h[k]))) || ct_f2u(l[k]) != 0;
                continue;
            }
            bad_bits += (ct_f2u(h[k]) & 0x1FFFu) != 0 || (ct_f2u(l[k]) & 0x1FFFu) != 0;
            /* hi is the nearer of the two TF32 neighbours of v (ties: the one of larger magnitude);
               past TF32's largest finite value, the truncated one */
            const uint32_t mag = ct_f2u(v) & 0x7FFFFFFFu, sgn = ct_f2u(v) & 0x80000000u;
            const float dn = ct_u2f(sgn | (mag & 0xFFFFE000u)), up = ct_u2f(sgn | ((mag & 0xFFFFE000u) + 0x2000u));
            const double ddn = fabs((double)v - dn), dup = std::isinf(up) ? INFINITY : fabs((double)up - v);
            const float want = (mag & 0x1FFFu) == 0 ? v : (dup <= ddn ? up : dn);
            bad_near += ct_f2u(h[k]) != ct_f2u(want);
            /* 2^-22 |v|; floor 2^-137: half of TF32's spacing among the subnormals */
            const double err = fabs((double)v - (double)h[k] - (double)l[k]);
            bad_err += err > 0x1.0p-22 * fabs((double)v) + 0x1.0p-137;
            if (fabs((double)v) > 0x1.0p-120) worst = std::max(worst, err / fabs((double)v));
        }
    ct_report("tf32 split: hi = nearest TF32 (ties away), hi and lo TF32-exact", bad_near + bad_bits == 0,
           "%zu not nearest, %zu with low bits set", bad_near, bad_bits);
    ct_report("tf32 split: |x - hi - lo| <= 2^-22 |x|", bad_err == 0, "%zu over, worst %.3g x 2^-22", bad_err,
           worst / 0x1.0p-22);
    ct_report("tf32 split: inf / NaN kept in hi, lo = 0; padding untouched; in place == out of place",
           bad_nf + bad_pad + bad_inplace == 0, "%zu non-finite wrong, %zu padding written, %zu in-place differ", bad_nf,
           bad_pad, bad_inplace);
    dfree(dx), dfree(dh), dfree(dl);
}

/* ---- the exactness scan ---------------------------------------------------------------------- */
static void test_exact()
{
    const size_t n = ct_quick ? ((size_t)9 << 20) : ((size_t)40 << 20); /* > 2 pieces of 4M: threads */
    vf w(n);
    for (size_t i = 0; i < n; i++) w[i] = ct_bf16_exact((float)ct_normal());
    int ok = 1, got[6];
    got[0] = rsg_tf32_exact(w.data(), n, 1);
    got[1] = rsg_tf32_exact(w.data(), n, 8);
    w[n - 1] = ct_u2f(ct_f2u(w[n - 1]) | 1u); /* one stray bit in the last element */
    got[2] = rsg_tf32_exact(w.data(), n, 1);
    got[3] = rsg_tf32_exact(w.data(), n, 8);
    w[n - 1] = ct_bf16_exact(w[n - 1]);
    w[(size_t)5 << 20] = ct_u2f(ct_f2u(w[(size_t)5 << 20]) | 0x1000u); /* bit 12 in a middle piece */
    got[4] = rsg_tf32_exact(w.data(), n, 8);
    w[(size_t)5 << 20] = ct_u2f(ct_f2u(w[(size_t)5 << 20]) & ~0x1000u);
    w[0] = ct_u2f(ct_f2u(w[0]) | 0x2000u); /* bit 13 is TF32's last mantissa bit: still exact */
    got[5] = rsg_tf32_exact(w.data(), n, 8);
    ok = got[0] == 1 && got[1] == 1 && got[2] == 0 && got[3] == 0 && got[4] == 0 && got[5] == 1;
    ct_report("tf32 exactness scan (bf16 values exact; one low bit anywhere found; 1 and 8 threads)", ok,
           "%d %d %d %d %d %d (want 1 1 0 0 0 1), n = %zu", got[0], got[1], got[2], got[3], got[4], got[5], n);
}

/* ---- the bf16x3 split ------------------------------------------------------------------------ */
static float bf16_bits_to_float(uint16_t b) { return ct_u2f((uint32_t)b << 16); }
static uint16_t bf16_rne_bits(float x) /* finite x whose nearest bf16 is finite */
{
    const uint32_t u = ct_f2u(x);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static void test_bf16x3_split()
{
    const int M = 3, K = ct_quick ? 700 : 5000, ldx = K + 3;
    vf x((size_t)M * ldx, 0.0f);
    for (int r = 0; r < M; r++)
        for (int i = 0; i < K; i++) {
            float v = (float)(ct_normal() * ldexp(1.0, (int)(ct_unif() * 120.0) - 60));
            const int kind = (int)(ct_rnd64() % 64);
            if (kind == 0) v = ct_u2f((ct_f2u(v) & 0xFFFF0000u) | 0x8000u); /* a tie: to even */
            if (kind == 1) v = ct_u2f(ct_f2u(v) & 0xFFFF0000u);             /* already bf16 */
            if (kind == 2) v = ct_u2f((uint32_t)(ct_rnd64() & 0x807FFFFFu)); /* subnormal or 0 */
            if (kind == 3) v = (ct_rnd64() & 1) ? FLT_MAX : -FLT_MAX;           /* rounds past bf16's largest */
            if (kind == 4) v = (ct_rnd64() & 1) ? INFINITY : -INFINITY;
            if (kind == 5) v = NAN;
            if (kind == 6) v = (float)ldexp(ct_normal(), -105 - (int)(ct_unif() * 20)); /* tiny: the third plane subnormal */
            x[(size_t)r * ldx + i] = v;
        }
    float *dx = dput(x);
    uint16_t *db = nullptr;
    CK(cudaMalloc((void **)&db, (size_t)3 * M * K * 2));
    RSK(rsg_bf16x3_split(M, K, dx, ldx, db, 0));
    std::vector<uint16_t> b = dget(db, (size_t)3 * M * K);
    const size_t plane = (size_t)M * K;
    size_t bad_near = 0, bad_sum = 0, bad_tiny = 0, bad_nf = 0, n_tiny = 0;
    for (int r = 0; r < M; r++)
        for (int i = 0; i < K; i++) {
            const float v = x[(size_t)r * ldx + i];
            const size_t o = (size_t)r * K + i;
            const float b0 = bf16_bits_to_float(b[o]), b1 = bf16_bits_to_float(b[plane + o]),
                        b2 = bf16_bits_to_float(b[2 * plane + o]);
            if (!std::isfinite(v)) {
                bad_nf += !(ct_f2u(b0) == ct_f2u(v) || (std::isnan(v) && std::isnan(b0))) || b1 != 0.0f || b2 != 0.0f;
                continue;
            }
            const bool past = std::isinf(bf16_bits_to_float(bf16_rne_bits(v)));
            const uint16_t want = past ? (uint16_t)(ct_f2u(v) >> 16) : bf16_rne_bits(v);
            bad_near += b[o] != want && !(v == 0.0f && b0 == 0.0f);
            const double sum = (double)b0 + (double)b1 + (double)b2, err = fabs(sum - (double)v);
            if (fabs((double)v) >= 0x1.0p-100) bad_sum += err != 0.0;
            else n_tiny++, bad_tiny += err > 0x1.0p-133; /* half of bf16's least subnormal, twice */
        }
    ct_report("bf16x3 split: B0 = nearest bf16 (ties to even; truncated past bf16's largest)", bad_near == 0,
           "%zu not nearest", bad_near);
    ct_report("bf16x3 split: B0 + B1 + B2 == x exactly (|x| >= 2^-100); tiny x within 2^-133; inf / NaN in B0, B1 = B2 = 0",
           bad_sum + bad_tiny + bad_nf == 0, "%zu inexact, %zu of %zu tiny over, %zu non-finite wrong", bad_sum, bad_tiny,
           n_tiny, bad_nf);
    dfree(dx), dfree(db);
    size_t n = (size_t)9 << 20;
    vf w(n);
    for (size_t i = 0; i < n; i++) w[i] = ct_bf16_exact((float)ct_normal());
    int got[5];
    got[0] = rsg_bf16_exact(w.data(), n, 8);
    w[n - 1] = ct_u2f(ct_f2u(w[n - 1]) | 1u);
    got[1] = rsg_bf16_exact(w.data(), n, 8);
    w[n - 1] = ct_bf16_exact(w[n - 1]);
    w[(size_t)5 << 20] = ct_u2f(ct_f2u(w[(size_t)5 << 20]) | 0x8000u); /* bit 15: not bf16 */
    got[2] = rsg_bf16_exact(w.data(), n, 1);
    w[(size_t)5 << 20] = ct_bf16_exact(w[(size_t)5 << 20]);
    w[7] = ct_u2f(ct_f2u(w[7]) ^ 0x10000u); /* bit 16 is bf16's last mantissa bit: still exact */
    got[3] = rsg_bf16_exact(w.data(), n, 1);
    got[4] = rsg_tf32_exact(w.data(), n, 8); /* bf16-exact is TF32-exact */
    ct_report("bf16 exactness scan (bf16 values exact; bits 0 / 15 found; 1 and 8 threads)",
           got[0] == 1 && got[1] == 0 && got[2] == 0 && got[3] == 1 && got[4] == 1, "%d %d %d %d %d (want 1 0 0 1 1)",
           got[0], got[1], got[2], got[3], got[4]);
}

/* ---- rsg_linear -------------------------------------------------------------------------------- */
struct GemmCase {
    int M, N, K, ldx, ldy;
    float beta;
    bool w_exact;   /* W bf16-rounded (W_lo == 0) or full fp32 (W_lo != 0) */
    bool nonfinite; /* rows 0 / 1 of X carry an inf / a NaN */
    const char *name;
};

struct Err {
    double emax, efro;
    size_t bad_pad, bad_nf, nonfin; /* padding written; finite outputs in an inf / NaN row; stray non-finite */
};

/* Bounds. SGEMM: e_max and e_fro <= 2e-6 (fp32: each FFMA rounds to nearest, ~u sqrt(K) |y| per
 * output, a few u = 2^-24 of sum |x w|; measured <= 4.5e-7 on the H200).
 * tf32x3: the tensor cores' fp32 sums are not as good as an SGEMM's (H200 at K = 2560: e_fro 6.0e-6,
 * e_max 2.0e-6 against SGEMM's 2e-6 bound, docs/evaluator.md), so the method is not the default and is
 * bounded by what its
 * arithmetic guarantees: e_max <= e_rep + 3u + 4u (ceil(K/8) + 1), e_rep = 2^-22 (W exact) or
 * 3 x 2^-22 (W split), 3u the chain; the last term is the worst case of an accumulation that
 * truncates (2u) both its aligned 8-product sum and its accumulator once per k-step (the tensor
 * cores' behaviour measured on V100 / A100, Fasi et al. 2021). That bound alone would pass plain
 * TF32 at large K, so the split must also beat plain TF32 by >= 8x in e_max (it really runs; the
 * split without W_lo on a W that needs it likewise), and plain TF32 must show its 2^-11 rounding
 * (e_fro >= 3e-5; ~2^-11 / sqrt(3) = 2.8e-4 expected). For M < 32 cuBLAS may pick a CUDA-core
 * kernel even with TF32 allowed: plain TF32 is printed, not checked, there. tf32x3's e_max and e_fro
 * relative to SGEMM's are printed. */
static void test_linear_case(const GemmCase &c)
{
    const size_t nx = (size_t)c.M * c.ldx, nw = (size_t)c.N * c.K, ny = (size_t)c.M * c.ldy;
    vf x(nx, ct_u2f(k_pad)), w(nw), y0(ny, ct_u2f(k_pad));
    for (int i = 0; i < c.M; i++)
        for (int k = 0; k < c.K; k++) /* magnitudes over 2^-6 .. 2^6: many exponents in one sum */
            x[(size_t)i * c.ldx + k] = (float)(ct_normal() * ldexp(1.0, (int)(ct_unif() * 12.0) - 6));
    std::vector<char> nfrow(c.M, 0);
    if (c.nonfinite) {
        x[0] = INFINITY;
        nfrow[0] = 1;
        if (c.M > 1) x[(size_t)c.ldx + 1] = NAN, nfrow[1] = 1;
    }
    const double sw = 1.0 / sqrt((double)c.K);
    for (size_t i = 0; i < nw; i++) {
        float v = (float)(ct_normal() * sw);
        if (c.w_exact) v = ct_bf16_exact(v);
        if (v == 0.0f) v = (float)sw; /* no zero weights: inf * 0 would make a NaN where the reference has an inf */
        w[i] = v;
    }
    for (int i = 0; i < c.M; i++)
        for (int j = 0; j < c.N; j++) y0[(size_t)i * c.ldy + j] = c.beta != 0.0f ? (float)ct_normal() : NAN;
    /* float64 reference and the bound's denominator */
    std::vector<double> Y64(ny, 0.0), dend(ny, 0.0);
    for (int i = 0; i < c.M; i++)
        for (int j = 0; j < c.N; j++) {
            double s = c.beta != 0.0f ? (double)c.beta * y0[(size_t)i * c.ldy + j] : 0.0, a = fabs(s);
            const float *xr = &x[(size_t)i * c.ldx], *wr = &w[(size_t)j * c.K];
            for (int k = 0; k < c.K; k++) {
                const double p = (double)xr[k] * (double)wr[k];
                s += p;
                a += fabs(p);
            }
            Y64[(size_t)i * c.ldy + j] = s;
            dend[(size_t)i * c.ldy + j] = a;
        }
    float *dx = dput(x), *dw = dput(w), *dy = nullptr;
    /* tf32x3 operands of W: as given when exact; else hi (a copy split in place) + lo */
    float *dwh = dput(w), *dwl = nullptr;
    if (!c.w_exact) {
        CK(cudaMalloc((void **)&dwl, nw * 4));
        RSK(rsg_tf32_split(c.N, c.K, dwh, c.K, dwh, c.K, dwl, c.K, 0));
    }
    const size_t wsn = rsg_linear_ws_floats(RSG_GEMM_TF32X3, c.M, c.K);
    float *ws;
    CK(cudaMalloc((void **)&ws, wsn * 4));
    CK(cudaMalloc((void **)&dy, ny * 4));
    struct Run {
        const char *name;
        rsg_gemm_method m;
        const float *W, *Wl;
        Err e;
        vf y;
    } runs[4] = {{"sgemm", RSG_GEMM_SGEMM, dw, nullptr, {}, {}},
                 {"tf32", RSG_GEMM_TF32, dw, nullptr, {}, {}},
                 {"tf32x3", RSG_GEMM_TF32X3, dwh, dwl, {}, {}},
                 {"tf32x3 without W_lo", RSG_GEMM_TF32X3, dwh, nullptr, {}, {}}};
    const int nr = c.w_exact ? 3 : 4;
    for (int r = 0; r < nr; r++) {
        CK(cudaMemcpy(dy, y0.data(), ny * 4, cudaMemcpyHostToDevice));
        RSK(rsg_linear(g_blas, runs[r].m, c.M, c.N, c.K, dx, c.ldx, runs[r].W, runs[r].Wl, c.beta, dy, c.ldy, ws, wsn, 0));
        runs[r].y = dget(dy, ny);
        Err e = {0, 0, 0, 0, 0};
        double num = 0, nrm = 0;
        for (int i = 0; i < c.M; i++)
            for (int j = 0; j < c.ldy; j++) {
                const size_t k = (size_t)i * c.ldy + j;
                const float yv = runs[r].y[k];
                if (j >= c.N) {
                    e.bad_pad += ct_f2u(yv) != k_pad;
                    continue;
                }
                if (nfrow[i]) { /* every output of a row with an inf / NaN input is non-finite */
                    e.bad_nf += std::isfinite(yv) != 0;
                    continue;
                }
                if (!std::isfinite(yv)) {
                    e.nonfin++;
                    continue;
                }
                const double d = fabs((double)yv - Y64[k]);
                e.emax = std::max(e.emax, d / dend[k]);
                num += d * d;
                nrm += Y64[k] * Y64[k];
            }
        e.efro = sqrt(num / std::max(nrm, 1e-300));
        runs[r].e = e;
    }
    /* bf16x3 (bf16-exact W only: the scorer runs sgemm for the others), one slice and 24-column slices */
    Err eb[2] = {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}};
    if (c.w_exact) {
        std::vector<uint16_t> wb(nw);
        for (size_t i = 0; i < nw; i++) wb[i] = (uint16_t)(ct_f2u(w[i]) >> 16);
        uint16_t *dwb = dput(wb);
        const size_t bws = rsg_linear_ws_floats(RSG_GEMM_BF16X3, c.M, c.K);
        const size_t nb = (c.K + RSG_BF16X3_KB - 1) / RSG_BF16X3_KB;
        const size_t parts[2] = {std::max<size_t>(rsg_bf16x3_part_floats(c.M, c.N, c.K), 1), nb * c.M * 24};
        float *bwsd, *dpart;
        CK(cudaMalloc((void **)&bwsd, bws * 4));
        CK(cudaMalloc((void **)&dpart, std::max(parts[0], parts[1]) * 4));
        for (int v = 0; v < 2; v++) {
            CK(cudaMemcpy(dy, y0.data(), ny * 4, cudaMemcpyHostToDevice));
            RSK(rsg_linear_bf16x3(g_blas, c.M, c.N, c.K, dx, c.ldx, dwb, c.beta, dy, c.ldy, bwsd, bws, dpart, parts[v], 0));
            vf yb = dget(dy, ny);
            Err &e = eb[v];
            double num = 0, nrm = 0;
            for (int i = 0; i < c.M; i++)
                for (int j = 0; j < c.ldy; j++) {
                    const size_t k = (size_t)i * c.ldy + j;
                    if (j >= c.N) {
                        e.bad_pad += ct_f2u(yb[k]) != k_pad;
                        continue;
                    }
                    if (nfrow[i]) {
                        e.bad_nf += std::isfinite(yb[k]) != 0;
                        continue;
                    }
                    if (!std::isfinite(yb[k])) {
                        e.nonfin++;
                        continue;
                    }
                    const double d = fabs((double)yb[k] - Y64[k]);
                    e.emax = std::max(e.emax, d / dend[k]);
                    num += d * d;
                    nrm += Y64[k] * Y64[k];
                }
            e.efro = sqrt(num / std::max(nrm, 1e-300));
        }
        dfree(dwb), dfree(bwsd), dfree(dpart);
    }
    const double u = 0x1.0p-24, bound_sgemm = 2e-6;
    const double bound_x3 = (c.w_exact ? 0x1.0p-22 : 3 * 0x1.0p-22) + 3 * u + 4 * u * ((c.K + 7) / 8 + 1);
    char nm[256];
    for (int r = 0; r < nr; r++) {
        const Err &e = runs[r].e;
        const bool clean = e.bad_pad == 0 && e.bad_nf == 0 && e.nonfin == 0;
        snprintf(nm, sizeof nm, "%s: %s", c.name, runs[r].name);
        if (r == 0)
            ct_report(nm, clean && e.emax <= bound_sgemm && e.efro <= bound_sgemm,
                   "e_max %.3g, e_fro %.3g (bound %.0e); padding %zu, inf/NaN rows %zu, stray non-finite %zu", e.emax,
                   e.efro, bound_sgemm, e.bad_pad, e.bad_nf, e.nonfin);
        else if (r == 2)
            ct_report(nm, clean && e.emax <= bound_x3,
                   "e_max %.3g (%.2fx sgemm's; bound %.2g), e_fro %.3g (%.2fx sgemm's); padding %zu, inf/NaN rows %zu, "
                   "stray non-finite %zu",
                   e.emax, e.emax / std::max(runs[0].e.emax, 1e-300), bound_x3, e.efro,
                   e.efro / std::max(runs[0].e.efro, 1e-300), e.bad_pad, e.bad_nf, e.nonfin);
        else if (c.M < 32 && r == 1) /* cuBLAS may run a few rows as a GEMV on the CUDA cores: no TF32 there */
            printf("info %s: e_max %.3g (%.1fx tf32x3's), e_fro %.3g (M < 32: cuBLAS may choose a kernel without "
                   "tensor cores, not checked)\n",
                   nm, e.emax, e.emax / std::max(runs[2].e.emax, 1e-300), e.efro);
        else
            ct_report(nm, clean && e.efro >= 3e-5 && e.emax >= 8.0 * runs[2].e.emax,
                   "e_max %.3g (%.0fx tf32x3's), e_fro %.3g (must be >= 3e-5 and >= 8x: TF32 rounding shows); padding "
                   "%zu, inf/NaN rows %zu, stray non-finite %zu",
                   e.emax, e.emax / std::max(runs[2].e.emax, 1e-300), e.efro, e.bad_pad, e.bad_nf, e.nonfin);
    }
    /* bf16x3 is `--compute fp32`: it must meet SGEMM's bound (its products are exact, its tensor-core
       chains at most RSG_BF16X3_KB long, the blocks summed round to nearest) */
    for (int v = 0; c.w_exact && v < 2; v++) {
        const Err &e = eb[v];
        const bool clean = e.bad_pad == 0 && e.bad_nf == 0 && e.nonfin == 0;
        snprintf(nm, sizeof nm, "%s: bf16x3%s", c.name, v ? " (24-column slices)" : "");
        ct_report(nm, clean && e.emax <= bound_sgemm && e.efro <= bound_sgemm,
               "e_max %.3g (%.2fx sgemm's), e_fro %.3g (%.2fx sgemm's; bound %.0e, sgemm's); padding %zu, inf/NaN rows "
               "%zu, stray non-finite %zu",
               e.emax, e.emax / std::max(runs[0].e.emax, 1e-300), e.efro, e.efro / std::max(runs[0].e.efro, 1e-300),
               bound_sgemm, e.bad_pad, e.bad_nf, e.nonfin);
    }
    dfree(dx), dfree(dw), dfree(dwh), dfree(dy), dfree(ws);
    if (dwl) dfree(dwl);
}

static void test_linear()
{
    const bool q = ct_quick;
    const GemmCase cs[] = {
        {1, 37, 13, 16, 40, 0.0f, true, false, "linear M=1 N=37 K=13, W exact, beta 0, strided"},
        {1, 37, 13, 13, 37, 1.0f, false, false, "linear M=1 N=37 K=13, W split, beta 1"},
        {5, 129, 1001, 1003, 130, 1.0f, true, true, "linear M=5 (step rows) N=129 K=1001, W exact, beta 1, inf/NaN rows"},
        {q ? 40 : 130, 96, q ? 520 : 2560, q ? 520 : 2560, 96, 0.0f, false, true,
         "linear N=96, W split, beta 0, inf/NaN rows"},
        {q ? 64 : 512, q ? 128 : 1024, q ? 640 : 2560, q ? 640 : 2560, q ? 128 : 1024, 1.0f, true, false,
         "linear residual (beta 1), W exact"},
        {q ? 32 : 256, q ? 64 : 512, q ? 1200 : 9216, q ? 1200 : 9216, q ? 64 : 512, 0.0f, true, false,
         "linear MLP down K=9216 (quick 1200), W exact"},
        {q ? 80 : 2560, q ? 16 : 64, q ? 256 : 2560, q ? 256 : 2560, q ? 16 : 64, 0.0f, true, false,
         "linear M=2560 (quick 80) rows, N=64, W exact"},
    };
    for (const GemmCase &c : cs) test_linear_case(c);
    /* argument checks */
    int n = 0, n_ok = 0;
    float *d;
    CK(cudaMalloc((void **)&d, 4096));
    n++, n_ok += rsg_linear(g_blas, RSG_GEMM_TF32X3, 4, 4, 4, d, 4, d, nullptr, 0.0f, d, 4, d, 31, 0) == RS_E_INVAL; /* ws short */
    n++, n_ok += rsg_linear(g_blas, RSG_GEMM_SGEMM, 4, 4, 4, d, 3, d, nullptr, 0.0f, d, 4, nullptr, 0, 0) == RS_E_INVAL; /* ldx < K */
    n++, n_ok += rsg_linear(g_blas, RSG_GEMM_TF32, 0, 4, 4, d, 4, d, nullptr, 0.0f, d, 4, nullptr, 0, 0) == RS_E_INVAL; /* M = 0 */
    n++, n_ok += rsg_tf32_split(2, 4, d, 4, d + 8, 4, d, 4, 0) == RS_E_INVAL; /* lo aliases X */
    n++, n_ok += rsg_tf32_split(2, 4, d, 4, d, 5, d + 16, 4, 0) == RS_E_INVAL; /* in place with another ld */
    rsg_gemm_method m;
    n++, n_ok += rsg_gemm_method_of(RS_COMPUTE_BF16, &m) == RS_E_UNSUPPORTED;
    n++, n_ok += rsg_gemm_method_of(RS_COMPUTE_FP32, &m) == RS_OK && m == RSG_GEMM_BF16X3;
    n++, n_ok += rsg_linear_bf16x3(g_blas, 4, 4, 600, d, 600, d, 0.0f, d, 4, d, 3600, d, 7, 0) == RS_E_INVAL; /* part < nb M (ws enough) */
    n++, n_ok += rsg_linear_bf16x3(g_blas, 4, 4, 8, d, 8, d, 0.0f, d, 4, d, 47, nullptr, 0, 0) == RS_E_INVAL; /* ws short */
    n++, n_ok += rsg_gemm_method_of(RS_COMPUTE_TF32X3, &m) == RS_OK && m == RSG_GEMM_TF32X3;
    n++, n_ok += rsg_gemm_method_of(RS_COMPUTE_TF32, &m) == RS_OK && m == RSG_GEMM_TF32;
    CK(cudaDeviceSynchronize());
    ct_report("argument checks (RS_E_INVAL before launching) and the compute modes' methods", n_ok == n, "%d of %d", n_ok,
           n);
    dfree(d);
}

/* ---- timing at the evaluator's shapes (printout only) ------------------------------------------ */
__global__ void fill_k_(float *x, size_t n, uint64_t seed, int bf16)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        float v = -1.0f + 2.0f * (float)((double)(z >> 11) * 0x1.0p-53);
        if (bf16) v = __uint_as_float(__float_as_uint(v) & 0xFFFF0000u);
        x[i] = v;
    }
}

__global__ void hi16_k_(const float *w, uint16_t *b, size_t n) /* bf16-exact fp32 -> its bf16 bits */
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = (uint16_t)(__float_as_uint(w[i]) >> 16);
}

struct GemmShape {
    int N, K, count; /* a GEMM of N x K weights, `count` of them per chunk */
    const char *name;
};

static double time_ms(int reps, const std::function<void()> &f)
{
    f(); /* warm-up: cuBLAS picks and loads its kernel */
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++) f();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return ms / reps;
}

static void bench_model(const char *model, const GemmShape *sh, int ns, int M)
{
    double tot[5] = {0, 0, 0, 0, 0};
    printf("bench %s, M = %d rows (ms per GEMM; fp32-equivalent TFLOP/s = 2 M N K / time):\n", model, M);
    for (int s = 0; s < ns; s++) {
        const size_t N = sh[s].N, K = sh[s].K;
        float *X, *W, *Y, *ws, *W2, *X2;
        const size_t wsn = rsg_linear_ws_floats(RSG_GEMM_TF32X3, M, K);
        CK(cudaMalloc((void **)&X, (size_t)M * K * 4));
        CK(cudaMalloc((void **)&W, N * K * 4));
        CK(cudaMalloc((void **)&Y, (size_t)M * N * 4));
        CK(cudaMalloc((void **)&ws, wsn * 4));
        CK(cudaMalloc((void **)&W2, N * 2 * K * 4)); /* [W | W]: one GEMM over K concatenated */
        CK(cudaMalloc((void **)&X2, (size_t)M * 2 * K * 4));
        fill_k_<<<1024, 256>>>(X, (size_t)M * K, 11 + s, 0);
        fill_k_<<<1024, 256>>>(W, N * K, 97 + s, 1);
        CK(cudaMemcpy2D(W2, 2 * K * 4, W, K * 4, K * 4, N, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2D(W2 + K, 2 * K * 4, W, K * 4, K * 4, N, cudaMemcpyDeviceToDevice));
        CK(cudaDeviceSynchronize());
        double ms[5];
        uint16_t *Wb;
        float *part, *bws;
        const size_t bwsn = rsg_linear_ws_floats(RSG_GEMM_BF16X3, M, K), partn = std::max<size_t>(1, std::min<size_t>(
                                                                               rsg_bf16x3_part_floats(M, N, K), 1u << 28));
        CK(cudaMalloc((void **)&Wb, N * K * 2));
        CK(cudaMalloc((void **)&part, partn * 4));
        CK(cudaMalloc((void **)&bws, bwsn * 4));
        hi16_k_<<<1024, 256>>>(W, Wb, N * K);
        ms[4] = time_ms(5, [&]() {
            RSK(rsg_linear_bf16x3(g_blas, M, N, K, X, K, Wb, 0.0f, Y, N, bws, bwsn, part, partn, 0));
        });
        dfree(Wb), dfree(part), dfree(bws);
        const rsg_gemm_method ms_m[3] = {RSG_GEMM_SGEMM, RSG_GEMM_TF32, RSG_GEMM_TF32X3};
        for (int v = 0; v < 3; v++)
            ms[v] = time_ms(5, [&]() { RSK(rsg_linear(g_blas, ms_m[v], M, N, K, X, K, W, nullptr, 0.0f, Y, N, ws, wsn, 0)); });
        ms[3] = time_ms(5, [&]() { /* the split into [X_hi | X_lo], then one TF32 GEMM of 2K */
            RSK(rsg_tf32_split(M, (int)K, X, K, X2, 2 * K, X2 + K, 2 * K, 0));
            RSK(rsg_linear(g_blas, RSG_GEMM_TF32, M, N, 2 * K, X2, 2 * K, W2, nullptr, 0.0f, Y, N, nullptr, 0, 0));
        });
        const double fl = 2.0 * M * (double)N * K;
        printf("bench   %-10s N %6zu K %5zu x%-3d sgemm %8.3f (%5.1f)  tf32 %8.3f (%5.1f)  tf32x3 %8.3f (%5.1f)  "
               "K-concat %8.3f (%5.1f)  bf16x3 %8.3f (%5.1f)\n",
               sh[s].name, N, K, sh[s].count, ms[0], fl / ms[0] * 1e-9, ms[1], fl / ms[1] * 1e-9, ms[2],
               fl / ms[2] * 1e-9, ms[3], fl / ms[3] * 1e-9, ms[4], fl / ms[4] * 1e-9);
        for (int v = 0; v < 5; v++) tot[v] += ms[v] * sh[s].count;
        dfree(X), dfree(W), dfree(Y), dfree(ws), dfree(W2), dfree(X2);
    }
    printf("bench %s: GEMMs of one chunk: sgemm %.1f ms, tf32 %.1f ms, tf32x3 %.1f ms (%.2fx faster than sgemm), "
           "K-concat %.1f ms, bf16x3 %.1f ms (%.2fx faster than sgemm); x 256 chunks (131072 positions at 512): "
           "%.1f / %.1f / %.1f / %.1f / %.1f s\n",
           model, tot[0], tot[1], tot[2], tot[0] / tot[2], tot[3], tot[4], tot[0] / tot[4], tot[0] * 0.256,
           tot[1] * 0.256, tot[2] * 0.256, tot[3] * 0.256, tot[4] * 0.256);
}

static void bench()
{
    /* Qwen3.5-4B: 24 GDN + 8 attention layers, an MLP in each; Nemotron-3-Nano-4B: 21 Mamba-2, 4
       attention, 17 MLP blocks */
    const GemmShape qwen[] = {{8192, 2560, 24, "gdn qkv"}, {4096, 2560, 24, "gdn z"},   {32, 2560, 48, "gdn a, b"},
                          {2560, 4096, 24, "gdn out"}, {8192, 2560, 8, "attn q"},  {1024, 2560, 16, "attn k, v"},
                          {2560, 4096, 8, "attn o"},   {9216, 2560, 64, "mlp g, u"}, {2560, 9216, 32, "mlp down"},
                          {248320, 2560, 1, "lm_head"}};
    const GemmShape nemo[] = {{17504, 3136, 21, "mamba in"}, {3136, 7680, 21, "mamba out"}, {5120, 3136, 4, "attn q"},
                          {1024, 3136, 8, "attn k, v"},  {3136, 5120, 4, "attn o"},     {12544, 3136, 17, "mlp up"},
                          {3136, 12544, 17, "mlp down"}, {131072, 3136, 1, "lm_head"}};
    bench_model("Qwen3.5-4B", qwen, (int)(sizeof qwen / sizeof qwen[0]), 2560);
    bench_model("Nemotron-3-Nano-4B", nemo, (int)(sizeof nemo / sizeof nemo[0]), 2560);
}

int main(int argc, char **argv)
{
    const int skip = ct_init(argc, argv, "test_gpu_gemm");
    if (skip) return skip;
    if (cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) {
        ct_report("cublasCreate", false, "no cuBLAS handle");
        return ct_finish("test_gpu_gemm");
    }
    test_split();
    test_exact();
    test_bf16x3_split();
    test_linear();
    const char *b = getenv("RS_GEMM_BENCH");
    if (!ct_quick && b && b[0] == '1') bench();
    cublasDestroy(g_blas);
    return ct_finish("test_gpu_gemm");
}
