/* rs_backend_cpu.c — the CPU backend: OpenBLAS dgemm for the projections (fp32 operands converted
 * to double, one rounding to float: cpu_linear_f64_), attention with every sum in double
 * (cpu_attention_f64_), OpenMP threads over rows / channels / (query, head) pairs / tasks for
 * everything else; the per-row math is rs_layers.c. OpenBLAS is set to one thread and the GEMMs
 * are split over output columns by OpenMP, so there is a single thread pool (a pthread OpenBLAS
 * pool spinning next to the OpenMP one halves throughput on a loaded 2-core machine).
 *
 * Why double sums by default (docs/gpu-evaluator.md "Measured performance"): the CPU evaluator is the reference
 * the GPU evaluator is checked against, per position to 1e-5 relative in NLL. fp32 sums round
 * by their order: two fp32 evaluations that differ only in the GEMMs' blocking drift apart by
 * ~1.3e-5 over 8K positions, and the fp32 default itself is 1.3e-5 / 1.8e-5 (gdn-tiny /
 * mamba2-tiny) from the same evaluation with double sums. With double sums every GEMM output and
 * attention output is (nearly always) the correctly rounded fp32 value, so the reference carries
 * no rounding-order noise of its own in these ops; the GPU's errors alone remain. Cost: about
 * 2x the fp32 kernels' time on the bundled models. The fp32 kernels stay selectable for
 * yardsticks: RS_CPU_GEMM=sgemm (OpenBLAS sgemm) or loop
 * (sequential fp32 dot products), RS_CPU_ATTN=fp32 (cpu_attention_). */
#include "model/rs_backend.h"
#include "engine/rs_dot.h" /* rs_v4f */
#include "rs_check.h"
#include "replayssm/quant/rs_mathf.h"
#include "rs_gemm_blocks.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_impl {
    char msg[512]; /* message of the first failing task of a parallel_for */
    int gemm_loop; /* RS_CPU_GEMM=loop: the projections as plain sequential fp32 dot products */
    int gemm_f64;  /* the default (RS_CPU_GEMM unset or f64): the projections summed in double, rounded once
                      (cpu_linear_f64_); 0 with RS_CPU_GEMM=sgemm or loop */
    int attn_f64;  /* the default (RS_CPU_ATTN unset or f64): scores, softmax and P V in double, rounded once
                      (cpu_attention_f64_); 0 with RS_CPU_ATTN=fp32 */
    size_t f64_block; /* doubles per column-block buffer of cpu_linear_f64_ (rs_gemm_blocks.h;
                         RS_CPU_F64_BLOCK for tests) */
} cpu_impl;

static void cpu_destroy_(rs_backend *be)
{
    if (!be) return;
    free(be->impl);
    free(be);
}

/* the default GEMM (RS_CPU_GEMM=f64): Y = fl(beta Y + X W^T) with X and W converted to double (exact), the sums by
 * OpenBLAS dgemm (every product exact in double, K <= 2^20 adds lose <= K 2^-53 of sum |x w|) and
 * one rounding to float at the end, so every output is (nearly always) the correctly rounded fp32
 * value of the exact sum, where sgemm's fp32 sums err by ~sqrt(K) 2^-24. Two evaluations that
 * both compute it (the GPU's RS_GPU_GEMM=f64: cuBLAS dgemm) round to the same float except where
 * the exact sum lies within ~K 2^-53 of a float rounding boundary. Output slabs as below, each
 * walked in column blocks (quant/rs_gemm_blocks.h: double copies of at most 2^25 doubles each)
 * with their own double copies of those W rows and of the Y block (per call): the transient memory
 * stays <= 2 x 256 MB per thread instead of (N K + M N) doubles (~10 GB at a 4B model's LM head:
 * N = 248320, K = 2560, M = 2560). The bound is high enough that the bundled models' GEMMs (N <=
 * 2048, K <= 1024, M <= 9 x 1024 rows) are never split; `--compute twin` on the GPU walks the same
 * partition (OpenBLAS picks its kernel, and each output's summation order, by the call's shape). */
static rs_status cpu_linear_f64_(rs_backend *be, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                                 const float *W, float beta, float *Y, size_t ldy)
{
    double *xd = (double *)malloc(M * K * sizeof(double));
    RS_CHECK(xd != NULL, RS_E_NOMEM, "linear (RS_CPU_GEMM=f64): out of memory for %zu x %zu doubles", M, K);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < K; k++) xd[i * K + k] = (double)X[i * ldx + k];
    const size_t nt = (size_t)be->n_threads;
    const size_t slab = rs_gemm_slab_cols(N, nt);
    const long nslab = (long)((N + slab - 1) / slab);
    int oom = 0;
#pragma omp parallel for schedule(static) num_threads(be->n_threads) if (nslab > 1 && M * N * K >= 65536)
    for (long b = 0; b < nslab; b++) {
        const size_t s0 = (size_t)b * slab, sn = s0 + slab <= N ? slab : N - s0;
        const size_t nb = rs_gemm_f64_block_cols(M, K, sn, ((const cpu_impl *)be->impl)->f64_block);
        double *wd = (double *)malloc(nb * K * sizeof(double)), *yd = (double *)malloc(M * nb * sizeof(double));
        if (!wd || !yd) {
#pragma omp atomic write
            oom = 1;
        } else {
            for (size_t n0 = s0; n0 < s0 + sn; n0 += nb) {
                const size_t nn = n0 + nb <= s0 + sn ? nb : s0 + sn - n0;
                for (size_t e = 0; e < nn * K; e++) wd[e] = (double)W[n0 * K + e];
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)nn, (int)K, 1.0, xd, (int)K, wd,
                            (int)K, 0.0, yd, (int)nn);
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < nn; j++) {
                        float *y = Y + i * ldy + n0 + j;
                        const double acc = yd[i * nn + j];
                        *y = beta == 0.0f ? (float)acc : (float)((double)beta * (double)*y + acc); /* one rounding */
                    }
            }
        }
        free(wd);
        free(yd);
    }
    free(xd);
    RS_CHECK(!oom, RS_E_NOMEM, "linear (RS_CPU_GEMM=f64): out of memory for a %zu x %zu slab", M, slab);
    return RS_OK;
}

static rs_status cpu_linear_(rs_backend *be, size_t M, size_t N, size_t K, const float *X,
                             size_t ldx, const float *W, float beta, float *Y, size_t ldy)
{
    if (M == 0 || N == 0) return RS_OK;
    RS_CHECK(X && W && Y && K > 0, RS_E_INVAL, "linear: NULL operand or K = 0");
    if (((const cpu_impl *)be->impl)->gemm_f64) return cpu_linear_f64_(be, M, N, K, X, ldx, W, beta, Y, ldy);
    if (((const cpu_impl *)be->impl)->gemm_loop) {
        /* RS_CPU_GEMM=loop (yardstick, docs/evaluator.md "GPU vs CPU"): every output one fp32
         * dot product in k order, each product rounded before its add (-ffp-contract=off), where
         * OpenBLAS blocks k and fuses multiply-adds: the same math in another rounding order,
         * to measure how far two correct fp32 evaluations drift apart */
        const long MN = (long)(M * N);
#pragma omp parallel for schedule(static) num_threads(be->n_threads)
        for (long e = 0; e < MN; e++) {
            const size_t i = (size_t)e / N, j = (size_t)e % N;
            const float *x = X + i * ldx, *w = W + j * K;
            float acc = 0.0f;
            for (size_t k = 0; k < K; k++) acc += x[k] * w[k];
            float *y = Y + i * ldy + j;
            *y = beta == 0.0f ? acc : acc + beta * *y;
        }
        return RS_OK;
    }
    /* RS_CPU_GEMM=sgemm (yardstick):
     * Y = X W^T: X [M][K] row-major, W [N][K] row-major -> op(W) = W^T. The output columns
     * are split into one slab per OpenMP thread, each a single-threaded sgemm (OpenBLAS runs
     * with 1 thread: one thread pool, no oversubscription with the OpenMP regions). */
    const size_t nt = (size_t)be->n_threads;
    const size_t slab = rs_gemm_slab_cols(N, nt); /* whole 16-column panels */
    const long nslab = (long)((N + slab - 1) / slab);
#pragma omp parallel for schedule(static) num_threads(be->n_threads) if (nslab > 1 && M * N * K >= 65536)
    for (long b = 0; b < nslab; b++) {
        const size_t n0 = (size_t)b * slab, nn = n0 + slab <= N ? slab : N - n0;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)nn, (int)K, 1.0f, X,
                    (int)ldx, W + n0 * K, (int)K, beta, Y + n0, (int)ldy);
    }
    return RS_OK;
}

static rs_status cpu_embed_(rs_backend *be, const int32_t *tokens, size_t T, const float *E,
                            size_t vocab, size_t d, float *Y, size_t ldy)
{
    (void)be;
    for (size_t t = 0; t < T; t++) {
        RS_CHECK(tokens[t] >= 0 && (size_t)tokens[t] < vocab, RS_E_INVAL,
                 "token %ld at chunk position %zu is outside the vocabulary [0, %zu)",
                 (long)tokens[t], t, vocab);
        memcpy(Y + t * ldy, E + (size_t)tokens[t] * d, d * sizeof(float));
    }
    return RS_OK;
}

static rs_status cpu_rmsnorm_(rs_backend *be, size_t M, size_t n, const float *X, size_t ldx,
                              const float *w, float eps, rs_norm_weight kind, float *Y,
                              size_t ldy)
{
    long m = (long)M;
#pragma omp parallel for schedule(static) num_threads(be->n_threads)
    for (long i = 0; i < m; i++) rs_rmsnorm(X + (size_t)i * ldx, n, w, eps, kind, Y + (size_t)i * ldy);
    return RS_OK;
}

static rs_status cpu_rmsnorm_gated_(rs_backend *be, size_t M, size_t n, size_t gs,
                                    const float *X, size_t ldx, const float *Z, size_t ldz,
                                    const float *w, size_t w_len, float eps, rs_gate_order order,
                                    float *Y, size_t ldy)
{
    RS_CHECK(gs > 0 && n % gs == 0 && (w_len == gs || w_len == n), RS_E_SHAPE,
             "gated RMSNorm: group %zu does not divide %zu or weight length %zu fits neither",
             gs, n, w_len);
    long m = (long)M;
#pragma omp parallel for schedule(static) num_threads(be->n_threads)
    for (long i = 0; i < m; i++)
        rs_rmsnorm_gated(X + (size_t)i * ldx, Z + (size_t)i * ldz, n, gs, w, w_len, eps, order,
                         Y + (size_t)i * ldy);
    return RS_OK;
}

static rs_status cpu_conv1d_(rs_backend *be, size_t T, size_t C, size_t K, const float *X,
                             size_t ldx, float *state, const float *w, const float *bias,
                             int silu, float *Y, size_t ldy)
{
    RS_CHECK(K >= 1, RS_E_INVAL, "conv1d: kernel size 0");
    /* channel blocks of 64: each thread owns whole channels, so the state is race-free */
    const size_t blk = 64, nblk = (C + blk - 1) / blk;
    long nb = (long)nblk;
#pragma omp parallel for schedule(static) num_threads(be->n_threads)
    for (long b = 0; b < nb; b++) {
        const size_t c0 = (size_t)b * blk, c1 = c0 + blk < C ? c0 + blk : C;
        rs_conv1d_causal(X, ldx, T, state, w, bias, K, c0, c1, silu, Y, ldy);
    }
    return RS_OK;
}

/* dot product with 8 independent partial sums (vectorisable without reassociation) */
static float dot8_(const float *a, const float *b, size_t n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* rs_v4f (lib/engine/rs_dot.h): its + and * are the lane-wise IEEE operations of the scalar code
 * (no contraction: -ffp-contract=off), so vectorising a loop over independent elements d
 * changes no bit. */

static inline rs_v4f ld4_(const float *p)
{
    rs_v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st4_(float *p, rs_v4f v) { memcpy(p, &v, sizeof v); }

/* o[d] = o[d] + p[j] * V[j][d] for j = j0, j0 + 1, ..., j1 - 1 in this order, for every
 * d < hd: per element exactly the scalar loop `for j: for d: o[d] += p[j] * v[d]`; the
 * accumulators stay in registers over the j loop (32 dims = 8 vectors at a time). */
static void pv_accum_(float *o, const float *p, const float *V, size_t hd, size_t j0, size_t j1)
{
    size_t d0 = 0;
    for (; d0 + 32 <= hd; d0 += 32) {
        rs_v4f a0 = ld4_(o + d0), a1 = ld4_(o + d0 + 4), a2 = ld4_(o + d0 + 8),
                a3 = ld4_(o + d0 + 12), a4 = ld4_(o + d0 + 16), a5 = ld4_(o + d0 + 20),
                a6 = ld4_(o + d0 + 24), a7 = ld4_(o + d0 + 28);
        for (size_t j = j0; j < j1; j++) {
            const float pj = p[j];
            const float *v = V + j * hd + d0;
            a0 = a0 + pj * ld4_(v);
            a1 = a1 + pj * ld4_(v + 4);
            a2 = a2 + pj * ld4_(v + 8);
            a3 = a3 + pj * ld4_(v + 12);
            a4 = a4 + pj * ld4_(v + 16);
            a5 = a5 + pj * ld4_(v + 20);
            a6 = a6 + pj * ld4_(v + 24);
            a7 = a7 + pj * ld4_(v + 28);
        }
        st4_(o + d0, a0);
        st4_(o + d0 + 4, a1);
        st4_(o + d0 + 8, a2);
        st4_(o + d0 + 12, a3);
        st4_(o + d0 + 16, a4);
        st4_(o + d0 + 20, a5);
        st4_(o + d0 + 24, a6);
        st4_(o + d0 + 28, a7);
    }
    for (; d0 + 4 <= hd; d0 += 4) {
        rs_v4f a0 = ld4_(o + d0);
        for (size_t j = j0; j < j1; j++) a0 = a0 + p[j] * ld4_(V + j * hd + d0);
        st4_(o + d0, a0);
    }
    for (; d0 < hd; d0++) {
        float a0 = o[d0];
        for (size_t j = j0; j < j1; j++) a0 = a0 + p[j] * V[j * hd + d0];
        o[d0] = a0;
    }
}

/* Causal GQA attention, organised for cache reuse without changing the arithmetic.
 *
 * A task is (KV head g, block of query rows); the rows of g are i = t * rep + (h - g * rep)
 * (chunk position t, query head h of the group), so a block shares every key and value
 * tile among its rows. Per row (n = n_past + t + 1 keys) the operations are exactly those
 * of the reference loop (rs_attention_row_ref with dot8_ scores):
 *   s[j] = dot8_(q, k_j) * scale for j < n;  rs_softmax_inplace(s, n);
 *   o = 0;  o[d] += s[j] * v_j[d] for j = 0 .. n-1 in order;
 * only the interleaving of independent rows changes (scores tile by tile for all rows of
 * the block, then the softmax of each row, then o tile by tile). Every output element is
 * therefore bit-identical for any block size, chunk size and thread count.
 *
 * Block size: at most the scratch rows per thread (a->scratch_rows, 0 counts as 1), and
 * small enough that there are >= 4 tasks per thread when the rows allow it (decode steps
 * with T = 1 get one row per task, so the threads still share the work). */
/* the default attention (RS_CPU_ATTN=f64): every sum in double and one rounding to float at the end:
 *   s_j = (q . k_j) scale   in double (every product exact, hd <= 1024 adds);
 *   e_j = exp(s_j - max_j s_j) in double (rs_mathf.h's double exp; below -700: 0);
 *   o[d] = fl( sum_j e_j v_j[d] / sum_j e_j )   (sums in double in key order).
 * Every step errs by a few 2^-53, so o is (nearly always) the fp32 rounding of the exact attention,
 * where the default's fp32 scores, fp32 p_j = fl(fl(exp) fl(1 / sum)) and fp32 sums over n keys err
 * ~sqrt(n) 2^-25 (a few 1e-6 over 8K keys: 1e-5 relative in the reference NLL over 8K positions,
 * docs/gpu-evaluator.md "Measured performance"). One
 * (query row, head) per task, keys in order: bit-identical for any thread count and chunk size.
 * The scratch row holds the scores as doubles in the float scratch's memory (cap floats per row
 * give cap / 2 doubles: the scores are computed in two halves when n > cap / 2). */
static double dotd_(const float *a, const float *b, size_t n)
{
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) acc += (double)a[i] * (double)b[i];
    return acc;
}

static double expd_(double x) { return x < -700.0 ? 0.0 : rs_mathf_exp_d_(x); }

static rs_status cpu_attention_f64_(rs_backend *be, const rs_attn_args *a)
{
    const size_t rep = a->H / a->Hkv, hd = a->hd, cap = a->cap, rows = a->T * a->H;
    RS_CHECK(hd <= 1024, RS_E_SHAPE, "attention (RS_CPU_ATTN=f64): head_dim %zu > 1024", hd);
#pragma omp parallel for schedule(dynamic, 1) num_threads(be->n_threads)
    for (long r = 0; r < (long)rows; r++) {
        const size_t t = (size_t)r / a->H, h = (size_t)r % a->H, g = h / rep, n = a->n_past + t + 1;
        const float *q = a->Q + t * a->ldq + h * a->q_hstride, *Kh = a->Kc + g * cap * hd, *Vh = a->Vc + g * cap * hd;
        const double scale = (double)a->scale;
        double mx = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            const double sj = dotd_(q, Kh + j * hd, hd) * scale;
            if (sj > mx) mx = sj;
        }
        double acc[1024], sum = 0.0;
        for (size_t d = 0; d < hd; d++) acc[d] = 0.0;
        for (size_t j = 0; j < n; j++) { /* the scores again (the same bits): no double scratch needed */
            const double e = expd_(dotd_(q, Kh + j * hd, hd) * scale - mx);
            const float *v = Vh + j * hd;
            sum += e;
            for (size_t d = 0; d < hd; d++) acc[d] += e * (double)v[d];
        }
        float *o = a->O + t * a->ldo + h * hd;
        for (size_t d = 0; d < hd; d++) o[d] = (float)(acc[d] / sum);
    }
    return RS_OK;
}

static rs_status cpu_attention_(rs_backend *be, const rs_attn_args *a)
{
    RS_CHECK(a->Hkv > 0 && a->H % a->Hkv == 0, RS_E_SHAPE,
             "attention: %zu query heads not a multiple of %zu KV heads", a->H, a->Hkv);
    RS_CHECK(a->n_past + a->T <= a->cap, RS_E_SHAPE,
             "attention: %zu positions exceed the KV cache capacity %zu", a->n_past + a->T, a->cap);
    if (a->T == 0) return RS_OK;
    if (((const cpu_impl *)be->impl)->attn_f64) return cpu_attention_f64_(be, a);
    const size_t rep = a->H / a->Hkv, hd = a->hd, cap = a->cap, rows_g = a->T * rep;
    const size_t srows = a->scratch_rows ? a->scratch_rows : 1; /* allocated rows per thread */
    const size_t want_per_g = (4 * (size_t)be->n_threads + a->Hkv - 1) / a->Hkv;
    size_t rb = (rows_g + want_per_g - 1) / want_per_g;
    if (rb > srows) rb = srows;
    if (rb < 1) rb = 1;
    const size_t nb = (rows_g + rb - 1) / rb;
    /* key tile: ~16 KiB of keys (and as much of values) stays in L1 while all rows use it */
    size_t kt = hd ? 4096 / hd : 64;
    if (kt < 16) kt = 16;
    long ntask = (long)(a->Hkv * nb);
#pragma omp parallel for schedule(dynamic, 1) num_threads(be->n_threads)
    for (long task = 0; task < ntask; task++) {
        const size_t g = (size_t)task / nb, b = (size_t)task % nb;
        const size_t i0 = b * rb, i1 = i0 + rb < rows_g ? i0 + rb : rows_g;
        const float *Kh = a->Kc + g * cap * hd, *Vh = a->Vc + g * cap * hd;
        float *S = a->scratch + (size_t)omp_get_thread_num() * srows * cap; /* [rb][cap] */
        const size_t nmax = a->n_past + (i1 - 1) / rep + 1; /* keys of the block's last row */
        for (size_t j0 = 0; j0 < nmax; j0 += kt) {
            const size_t j1 = j0 + kt < nmax ? j0 + kt : nmax;
            for (size_t i = i0; i < i1; i++) {
                const size_t t = i / rep, h = g * rep + i % rep, n = a->n_past + t + 1;
                const float *q = a->Q + t * a->ldq + h * a->q_hstride;
                float *s = S + (i - i0) * cap;
                const size_t je = j1 < n ? j1 : n;
                for (size_t j = j0; j < je; j++) s[j] = dot8_(q, Kh + j * hd, hd) * a->scale;
            }
        }
        for (size_t i = i0; i < i1; i++) {
            const size_t t = i / rep, h = g * rep + i % rep;
            rs_softmax_inplace(S + (i - i0) * cap, a->n_past + t + 1);
            float *o = a->O + t * a->ldo + h * hd;
            for (size_t d = 0; d < hd; d++) o[d] = 0.0f;
        }
        for (size_t j0 = 0; j0 < nmax; j0 += kt) {
            const size_t j1 = j0 + kt < nmax ? j0 + kt : nmax;
            for (size_t i = i0; i < i1; i++) {
                const size_t t = i / rep, h = g * rep + i % rep, n = a->n_past + t + 1;
                const size_t je = j1 < n ? j1 : n;
                if (je > j0) pv_accum_(a->O + t * a->ldo + h * hd, S + (i - i0) * cap, Vh, hd, j0, je);
            }
        }
    }
    return RS_OK;
}

static rs_status cpu_swiglu_(rs_backend *be, size_t M, size_t n, float *G, size_t ldg,
                             const float *U, size_t ldu)
{
    long m = (long)M;
#pragma omp parallel for schedule(static) num_threads(be->n_threads)
    for (long i = 0; i < m; i++) {
        float *g = G + (size_t)i * ldg;
        const float *u = U + (size_t)i * ldu;
        for (size_t j = 0; j < n; j++) g[j] = rs_silu(g[j]) * u[j];
    }
    return RS_OK;
}

static rs_status cpu_relu2_(rs_backend *be, size_t M, size_t n, float *X, size_t ldx)
{
    long m = (long)M;
#pragma omp parallel for schedule(static) num_threads(be->n_threads)
    for (long i = 0; i < m; i++) {
        float *x = X + (size_t)i * ldx;
        for (size_t j = 0; j < n; j++) {
            const float r = x[j] > 0.0f ? x[j] : 0.0f;
            x[j] = r * r;
        }
    }
    return RS_OK;
}

static rs_status cpu_parallel_for_(rs_backend *be, size_t n, rs_task_fn fn, void *ctx)
{
    cpu_impl *im = (cpu_impl *)be->impl;
    rs_status first = RS_OK;
    long nt = (long)n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(be->n_threads)
    for (long i = 0; i < nt; i++) {
        rs_status st;
#pragma omp atomic read
        st = first;
        if (st != RS_OK) continue; /* fail fast: skip the remaining tasks */
        st = fn(ctx, (size_t)i);
        if (st != RS_OK) {
#pragma omp critical(rs_backend_cpu_err)
            {
                if (first == RS_OK) {
                    snprintf(im->msg, sizeof im->msg, "%s", rs_last_error());
#pragma omp atomic write
                    first = st;
                }
            }
        }
    }
    if (first != RS_OK) return rs_error_set(first, "%s", im->msg);
    return RS_OK;
}

static const rs_backend_ops cpu_ops_ = {
    .name = "cpu",
    .destroy = cpu_destroy_,
    .linear = cpu_linear_,
    .embed = cpu_embed_,
    .rmsnorm = cpu_rmsnorm_,
    .rmsnorm_gated = cpu_rmsnorm_gated_,
    .conv1d = cpu_conv1d_,
    .attention = cpu_attention_,
    .swiglu = cpu_swiglu_,
    .relu2 = cpu_relu2_,
    .parallel_for = cpu_parallel_for_,
};

/* a diagnostic switch of the environment: unset, empty or `dflt` -> *on = 0, `alt` -> 1, anything
 * else refused (RS_E_INVAL naming both values) */
static rs_status env_switch_(const char *name, const char *dflt, const char *alt, int *on)
{
    const char *v = getenv(name);
    RS_CHECK(!v || !*v || !strcmp(v, dflt) || !strcmp(v, alt), RS_E_INVAL, "%s=%s: unknown (%s, the default, or %s)",
             name, v, dflt, alt);
    *on = v && !strcmp(v, alt);
    return RS_OK;
}

rs_status rs_backend_cpu_create(int n_threads, rs_backend **out)
{
    RS_CHECK(out != NULL, RS_E_INVAL, "rs_backend_cpu_create: NULL out");
    *out = NULL;
    rs_backend *be = (rs_backend *)calloc(1, sizeof *be);
    cpu_impl *im = (cpu_impl *)calloc(1, sizeof *im);
    if (!be || !im) {
        free(be);
        free(im);
        return rs_error_set(RS_E_NOMEM, "rs_backend_cpu_create: out of memory");
    }
    be->ops = &cpu_ops_;
    be->n_threads = n_threads > 0 ? n_threads : omp_get_max_threads();
    be->impl = im;
    rs_status st = RS_OK;
    const char *g = getenv("RS_CPU_GEMM");
    if (!g || !*g || !strcmp(g, "f64")) im->gemm_f64 = 1;
    else if (!strcmp(g, "loop")) im->gemm_loop = 1;
    else if (strcmp(g, "sgemm") && strcmp(g, "openblas"))
        st = rs_error_set(RS_E_INVAL, "RS_CPU_GEMM=%s: unknown (f64, the default, sgemm or loop)", g);
    if (st == RS_OK) {
        int fp32 = 0;
        st = env_switch_("RS_CPU_ATTN", "f64", "fp32", &fp32);
        im->attn_f64 = !fp32;
    }
    const char *fb = getenv("RS_CPU_F64_BLOCK"); /* tests: small blocks on small shapes */
    if (st == RS_OK && !rs_gemm_f64_block_parse(fb, &im->f64_block))
        st = rs_error_set(RS_E_INVAL, "RS_CPU_F64_BLOCK=%s: not a power of two in [1024, 2^30]", fb);
    if (st != RS_OK) {
        free(be);
        free(im);
        return st;
    }
    openblas_set_num_threads(1); /* threads come from OpenMP (see cpu_linear_) */
    *out = be;
    return RS_OK;
}

void rs_backend_destroy(rs_backend *be)
{
    if (be && be->ops && be->ops->destroy) be->ops->destroy(be);
}
