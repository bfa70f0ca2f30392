/* rs_gpu_gemm.cu — the GPU evaluator's GEMMs (rs_gpu_gemm.h): rsg_linear's three methods on cuBLAS,
 * the scorer's weight preparation for the split-TF32 method, and rs_gpu_linear, the forward's
 * entry point (rs_gpu_scorer_impl.h). */
#include "rs_gpu_gemm.h"

#include <cuda_bf16.h>
#include "rs_gpu_ops.h"
#include "rs_gemm_blocks.h"
#include "rs_gpu_scorer_impl.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "rs_check.h"
#include "rs_cuda_common.cuh" /* rs_cuda_call_status, rs_cuda_launch_status */

const char *rsg_gemm_method_name(rsg_gemm_method m)
{
    switch (m) {
    case RSG_GEMM_SGEMM: return "sgemm";
    case RSG_GEMM_TF32: return "tf32";
    case RSG_GEMM_TF32X3: return "tf32x3";
    case RSG_GEMM_BF16X3: return "bf16x3";
    case RSG_GEMM_F64: return "f64";
    case RSG_GEMM_TWIN: return "twin";
    }
    return "?";
}

rs_status rsg_gemm_method_of(rs_compute_mode c, rsg_gemm_method *out)
{
    switch (c) {
    case RS_COMPUTE_FP32: *out = RSG_GEMM_BF16X3; return RS_OK;
    case RS_COMPUTE_TF32X3: *out = RSG_GEMM_TF32X3; return RS_OK;
    case RS_COMPUTE_TF32: *out = RSG_GEMM_TF32; return RS_OK;
    case RS_COMPUTE_TWIN: *out = RSG_GEMM_TWIN; return RS_OK; /* the CPU backend's GEMM (cpu_linear_f64_) */
    default: break;
    }
    return rs_error_set(RS_E_UNSUPPORTED, "--compute %s is not implemented on the GPU (fp32, tf32x3, tf32 and twin are)",
                        rs_compute_mode_name(c));
}

/* ---- exactness (host) ----------------------------------------------------------------------- */

static int exact_range_(const uint32_t *u, size_t n, uint32_t mask)
{
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= u[i];
    return (acc & mask) == 0;
}

/* 1 if no element of w has a bit of `mask` set */
static int exact_(const float *w, size_t n, int threads, uint32_t mask)
{
    const uint32_t *u = (const uint32_t *)(const void *)w;
    const size_t blk = (size_t)1 << 22; /* 16 MiB a piece */
    if (threads <= 1 || n <= blk) {
        for (size_t o = 0; o < n; o += blk)
            if (!exact_range_(u + o, std::min(blk, n - o), mask)) return 0;
        return 1;
    }
    std::atomic<size_t> next(0);
    std::atomic<int> bad(0);
    const size_t pieces = (n + blk - 1) / blk;
    auto work = [&]() {
        for (size_t p; !bad.load(std::memory_order_relaxed) && (p = next.fetch_add(1)) < pieces;)
            if (!exact_range_(u + p * blk, std::min(blk, n - p * blk), mask)) bad.store(1);
    };
    std::vector<std::thread> pool;
    const int nt = (int)std::min<size_t>((size_t)threads, pieces);
    for (int t = 1; t < nt; t++) pool.emplace_back(work);
    work();
    for (auto &t : pool) t.join();
    return !bad.load();
}

int rsg_tf32_exact(const float *w, size_t n, int threads) { return exact_(w, n, threads, 0x1FFFu); }
int rsg_bf16_exact(const float *w, size_t n, int threads) { return exact_(w, n, threads, 0xFFFFu); }

/* ---- rsg_linear ---------------------------------------------------------------------------- */

size_t rsg_linear_ws_floats(rsg_gemm_method m, size_t M, size_t K)
{
    return m == RSG_GEMM_TF32X3 ? 2 * M * K : m == RSG_GEMM_BF16X3 ? (3 * M * K + 1) / 2 : 0;
}

/* row-major Y[M][N] = beta Y + X W^T is column-major Y^T (N x M) = W^T(K x N col-major)^T X^T */
static rs_status gemm_(cublasHandle_t h, cublasComputeType_t ct, int M, int N, int K, const float *X, size_t ldx,
                       const float *W, float beta, float *Y, size_t ldy)
{
    const float one = 1.0f;
    const cublasStatus_t e = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, X, CUDA_R_32F,
                                          (int)ldx, &beta, Y, CUDA_R_32F, (int)ldy, ct, CUBLAS_GEMM_DEFAULT);
    if (e != CUBLAS_STATUS_SUCCESS)
        return rs_error_set(RS_E_CUDA, "cublasGemmEx (M %d, N %d, K %d, compute %d): status %d", M, N, K, (int)ct,
                            (int)e);
    return RS_OK;
}

rs_status rsg_linear(cublasHandle_t h, rsg_gemm_method m, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                     const float *W, const float *W_lo, float beta, float *Y, size_t ldy, float *ws, size_t ws_floats,
                     cudaStream_t s)
{
    RS_CHECK(h && X && W && Y && M >= 1 && N >= 1 && K >= 1 && M < INT_MAX && N < INT_MAX && K < INT_MAX &&
                 ldx >= K && ldy >= N && ldx < INT_MAX && ldy < INT_MAX,
             RS_E_INVAL, "rsg_linear: bad arguments (M %zu, N %zu, K %zu, ldx %zu, ldy %zu)", M, N, K, ldx, ldy);
    const int m_ = (int)M, n_ = (int)N, k_ = (int)K;
    if (m == RSG_GEMM_SGEMM) {
        const float one = 1.0f;
        cublasSetMathMode(h, CUBLAS_DEFAULT_MATH); /* true fp32: TF32 is opt-in */
        const cublasStatus_t e =
            cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n_, m_, k_, &one, W, k_, X, (int)ldx, &beta, Y, (int)ldy);
        if (e != CUBLAS_STATUS_SUCCESS)
            return rs_error_set(RS_E_CUDA, "cublasSgemm (M %zu, N %zu, K %zu): status %d", M, N, K, (int)e);
        return RS_OK;
    }
    if (m == RSG_GEMM_TF32) return gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, X, ldx, W, beta, Y, ldy);
    RS_CHECK(m == RSG_GEMM_TF32X3, RS_E_INVAL, "rsg_linear: unknown method %d", (int)m);
    RS_CHECK(ws && ws_floats >= 2 * M * K, RS_E_INVAL, "rsg_linear: tf32x3 needs %zu floats of workspace (%zu given)",
             2 * M * K, ws_floats);
    float *xh = ws, *xl = ws + M * K;
    RS_TRY(rsg_tf32_split(m_, k_, X, ldx, xh, K, xl, K, (rs_cuda_stream)s));
    /* the small terms first, into Y (with beta Y), then the large one: every product of two TF32
       values is exact in the tensor cores' fp32 accumulator */
    RS_TRY(gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, xl, K, W, beta, Y, ldy));
    if (W_lo) RS_TRY(gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, xh, K, W_lo, 1.0f, Y, ldy));
    return gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, xh, K, W, 1.0f, Y, ldy);
}

/* ---- bf16x3 ---------------------------------------------------------------------------------- */

static __global__ void bf16x3_split_k_(int K, const float *X, size_t ldx, __nv_bfloat16 *B, size_t plane)
{
    const int i = blockIdx.y * 256 + threadIdx.x;
    if (i >= K) return;
    const size_t r = blockIdx.x, o = r * (size_t)K + i;
    const float x = X[r * ldx + i];
    __nv_bfloat16 b0 = __float2bfloat16_rn(x), b1 = __float2bfloat16_rn(0.0f), b2 = b1;
    if (isfinite(x)) {
        if (isinf(__bfloat162float(b0))) /* past bf16's largest finite value: truncate */
            b0 = __ushort_as_bfloat16((unsigned short)(__float_as_uint(x) >> 16));
        const float r1 = x - __bfloat162float(b0); /* exact: within half a bf16 ulp of x, same binade */
        b1 = __float2bfloat16_rn(r1);
        b2 = __float2bfloat16_rn(r1 - __bfloat162float(b1)); /* <= 8 significant bits left: exact */
    }
    B[o] = b0;
    B[plane + o] = b1;
    B[2 * plane + o] = b2;
}

rs_status rsg_bf16x3_split(int M, int K, const float *X, size_t ldx, void *B, cudaStream_t s)
{
    RS_CHECK(X && B && M >= 1 && K >= 1 && ldx >= (size_t)K && K <= 65535 * 256, RS_E_INVAL,
             "rsg_bf16x3_split: bad arguments (M %d, K %d, ldx %zu)", M, K, ldx);
    const dim3 g((unsigned)M, (unsigned)((K + 255) / 256));
    bf16x3_split_k_<<<g, 256, 0, s>>>(K, X, ldx, (__nv_bfloat16 *)B, (size_t)M * K);
    return rs_cuda_launch_status("rsg_bf16x3_split");
}

/* Y[r][j] = beta Y[r][j] + sum_b P[b][r][j], b ascending, each add rounded to nearest */
static __global__ void bf16x3_reduce_k_(size_t n, int ns, int nb, const float *P, float beta, float *Y, size_t ldy)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float a = P[i];
        for (int b = 1; b < nb; b++) a = __fadd_rn(a, P[(size_t)b * n + i]);
        float *y = Y + (i / (size_t)ns) * ldy + i % (size_t)ns;
        *y = beta == 0.0f ? a : __fmaf_rn(beta, *y, a); /* beta 0: Y is not read (it may hold NaN) */
    }
}

size_t rsg_bf16x3_part_floats(size_t M, size_t N, size_t K)
{
    const size_t nb = (K + RSG_BF16X3_KB - 1) / RSG_BF16X3_KB;
    return nb > 1 ? nb * M * N : 0;
}

static rs_status bf_gemm_(cublasHandle_t h, int N, int M, int k, const __nv_bfloat16 *W, int K, const __nv_bfloat16 *X,
                          float beta, float *C, int ldc, long long strideC, int batch)
{
    const float one = 1.0f;
    const cublasStatus_t e =
        batch > 1 ? cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, k, &one, W, CUDA_R_16BF, K,
                                               RSG_BF16X3_KB, X, CUDA_R_16BF, K, RSG_BF16X3_KB, &beta, C, CUDA_R_32F,
                                               ldc, strideC, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                  : cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, k, &one, W, CUDA_R_16BF, K, X, CUDA_R_16BF, K, &beta,
                                 C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (e != CUBLAS_STATUS_SUCCESS)
        return rs_error_set(RS_E_CUDA, "bf16x3 GEMM (M %d, N %d, k %d, batch %d): cuBLAS status %d", M, N, k, batch,
                            (int)e);
    return RS_OK;
}

rs_status rsg_linear_bf16x3(cublasHandle_t h, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                            const void *W_bf16, float beta, float *Y, size_t ldy, void *ws, size_t ws_floats,
                            float *part, size_t part_floats, cudaStream_t s)
{
    const size_t KB = RSG_BF16X3_KB, nf = K / KB, kr = K % KB, nb = nf + (kr > 0);
    RS_CHECK(h && X && W_bf16 && Y && ws && M >= 1 && N >= 1 && K >= 1 && M < INT_MAX && N < INT_MAX &&
                 K < INT_MAX && ldx >= K && ldy >= N && ldx < INT_MAX && ldy < INT_MAX,
             RS_E_INVAL, "rsg_linear_bf16x3: bad arguments (M %zu, N %zu, K %zu, ldx %zu, ldy %zu)", M, N, K, ldx, ldy);
    RS_CHECK(ws_floats >= rsg_linear_ws_floats(RSG_GEMM_BF16X3, M, K), RS_E_INVAL,
             "rsg_linear_bf16x3: needs %zu floats of workspace (%zu given)",
             rsg_linear_ws_floats(RSG_GEMM_BF16X3, M, K), ws_floats);
    RS_CHECK(nb == 1 || (part && part_floats >= nb * M), RS_E_INVAL,
             "rsg_linear_bf16x3: K %zu in %zu blocks needs >= %zu floats of partial sums (%zu given)", K, nb, nb * M,
             part_floats);
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    RS_TRY(rsg_bf16x3_split((int)M, (int)K, X, ldx, ws, s));
    const __nv_bfloat16 *B = (const __nv_bfloat16 *)ws, *W = (const __nv_bfloat16 *)W_bf16;
    const size_t plane = M * K;
    const int m_ = (int)M, k_ = (int)K;
    if (nb == 1) { /* one block: the three products straight into Y, the smallest first */
        for (int p = 2; p >= 0; p--)
            RS_TRY(bf_gemm_(h, (int)N, m_, k_, W, k_, B + p * plane, p == 2 ? beta : 1.0f, Y, (int)ldy, 0, 1));
        return RS_OK;
    }
    size_t ns = std::min(N, part_floats / (nb * M)); /* columns per slice */
    if (ns < N && ns >= 8) ns &= ~(size_t)7;
    for (size_t n0 = 0; n0 < N; n0 += ns) {
        const size_t w = std::min(ns, N - n0);
        const long long stride = (long long)(M * w); /* partial sums [nb][M][w] */
        for (int p = 2; p >= 0; p--) {
            const __nv_bfloat16 *Xp = B + p * plane, *Wn = W + n0 * K;
            const float bp = p == 2 ? 0.0f : 1.0f;
            if (nf) RS_TRY(bf_gemm_(h, (int)w, m_, (int)KB, Wn, k_, Xp, bp, part, (int)w, stride, (int)nf));
            if (kr) RS_TRY(bf_gemm_(h, (int)w, m_, (int)kr, Wn + nf * KB, k_, Xp + nf * KB, bp, part + nf * M * w,
                                    (int)w, 0, 1));
        }
        const size_t n = M * w;
        const unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, 8192);
        bf16x3_reduce_k_<<<blocks, 256, 0, s>>>(n, (int)w, (int)nb, part, beta, Y + n0, ldy);
        RS_TRY(rs_cuda_launch_status("bf16x3 partial sums"));
    }
    return RS_OK;
}

/* ---- f64 (diagnostic) ------------------------------------------------------------------------ */

static __global__ void f64_in_k_(int M, int K, const float *X, size_t ldx, double *xd)
{
    const int k = blockIdx.y * 256 + threadIdx.x;
    if (k < K) xd[(size_t)blockIdx.x * K + k] = (double)X[(size_t)blockIdx.x * ldx + k];
}

/* y = fl(beta y + acc): one rounding (beta 0: Y is not read) */
static __global__ void f64_out_k_(size_t n, int N, const double *yd, float beta, float *Y, size_t ldy)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float *y = Y + (i / (size_t)N) * ldy + i % (size_t)N;
        *y = beta == 0.0f ? (float)yd[i] : (float)__dadd_rn(__dmul_rn((double)beta, (double)*y), yd[i]);
    }
}

rs_status rsg_linear_f64(cublasHandle_t h, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                         const double *W_f64, float beta, float *Y, size_t ldy, double *xd, double *yd, cudaStream_t s)
{
    RS_CHECK(h && X && W_f64 && Y && xd && yd && M >= 1 && N >= 1 && K >= 1 && M < INT_MAX && N < INT_MAX &&
                 K < INT_MAX && ldx >= K && ldy >= N,
             RS_E_INVAL, "rsg_linear_f64: bad arguments (M %zu, N %zu, K %zu, ldx %zu, ldy %zu)", M, N, K, ldx, ldy);
    RS_CHECK((K + 255) / 256 <= 65535, RS_E_INVAL, "rsg_linear_f64: K %zu too large", K);
    f64_in_k_<<<dim3((unsigned)M, (unsigned)((K + 255) / 256)), 256, 0, s>>>((int)M, (int)K, X, ldx, xd);
    RS_TRY(rs_cuda_launch_status("rsg_linear_f64"));
    const double one = 1.0, zero = 0.0;
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    const cublasStatus_t b =
        cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, W_f64, (int)K, xd, (int)K, &zero, yd, (int)N);
    if (b != CUBLAS_STATUS_SUCCESS)
        return rs_error_set(RS_E_CUDA, "cublasDgemm (M %zu, N %zu, K %zu): status %d", M, N, K, (int)b);
    const size_t n = M * N;
    f64_out_k_<<<(unsigned)std::min<size_t>((n + 255) / 256, 8192), 256, 0, s>>>(n, (int)N, yd, beta, Y, ldy);
    return rs_cuda_launch_status("rsg_linear_f64");
}

/* ---- the scorer's weights ------------------------------------------------------------------- */

static void add_mat_(std::vector<rs_gpu_wmat> &v, const float *h, size_t rows, size_t cols, int shared)
{
    if (!h) return;
    for (const rs_gpu_wmat &e : v)
        if (e.h == h) return; /* one matrix, one entry */
    rs_gpu_wmat e;
    memset(&e, 0, sizeof e);
    e.h = h;
    e.rows = rows;
    e.cols = cols;
    e.shared = shared;
    v.push_back(e);
}

/* every weight matrix the forward (rs_gpu_forward.cu) hands to rs_gpu_linear, with its shape */
static void list_mats_(const rs_model *m, std::vector<rs_gpu_wmat> &v)
{
    const rs_model_config *c = &m->cfg;
    const size_t d = (size_t)c->hidden, I = (size_t)c->mlp.intermediate;
    for (int l = 0; l < c->n_layers; l++) {
        const rs_layer_weights *w = &m->w.layers[l];
        switch (c->layer_kind[l]) {
        case RS_LAYER_GDN: {
            const rs_gdn_config *g = &c->gdn;
            add_mat_(v, w->gdn.in_qkv, (size_t)g->conv_dim, d, 0);
            add_mat_(v, w->gdn.in_z, (size_t)g->value_dim, d, 0);
            add_mat_(v, w->gdn.in_a, (size_t)g->n_v_heads, d, 0);
            add_mat_(v, w->gdn.in_b, (size_t)g->n_v_heads, d, 0);
            add_mat_(v, w->gdn.out, d, (size_t)g->value_dim, 0);
            break;
        }
        case RS_LAYER_MAMBA2:
            add_mat_(v, w->mamba.in_proj, (size_t)c->mamba.in_proj_dim, d, 0);
            add_mat_(v, w->mamba.out, d, (size_t)c->mamba.d_inner, 0);
            break;
        case RS_LAYER_ATTENTION: {
            const rs_attn_config *a = &c->attn;
            const size_t hd = (size_t)a->head_dim, qw = (size_t)a->n_heads * hd * (a->output_gate ? 2 : 1);
            add_mat_(v, w->attn.q, qw, d, 0);
            add_mat_(v, w->attn.k, (size_t)a->n_kv_heads * hd, d, 0);
            add_mat_(v, w->attn.v, (size_t)a->n_kv_heads * hd, d, 0);
            add_mat_(v, w->attn.o, d, (size_t)a->n_heads * hd, 0);
            break;
        }
        default: break;
        }
        if (c->layer_kind[l] == RS_LAYER_MLP || c->layer_has_mlp) {
            add_mat_(v, w->mlp.gate, I, d, 0);
            add_mat_(v, w->mlp.up, I, d, 0);
            add_mat_(v, w->mlp.down, d, I, 0);
        }
    }
    add_mat_(v, m->w.lm_head, (size_t)c->vocab, d, m->w.lm_head == m->w.embed);
}

/* bf16x3: which matrices are bf16-exact (their bf16 copies: weights), X's three planes and the
 * partial sums (scratch; at most 1 GiB unless the widest block count needs more for 256 columns) */
static rs_status plan_bf16x3_(const rs_scorer *sc, gpu_impl *im, size_t *weight_bytes, size_t *scratch_bytes)
{
    rs_gpu_gemm_state *g = &im->gemm;
    std::vector<rs_gpu_wmat> v;
    list_mats_(sc->m, v);
    free(g->mats);
    g->mats = (rs_gpu_wmat *)calloc(v.size() + 1, sizeof *g->mats);
    if (!g->mats) return rs_error_set(RS_E_NOMEM, "out of memory");
    const unsigned hw = std::thread::hardware_concurrency();
    const int threads = (int)std::min(hw ? hw : 1u, 32u);
    const size_t Mc = (size_t)im->RR * im->C;
    size_t kmax = 0, bf = 0, need = 0, nbmax = 1;
    g->n_mats = (int)v.size();
    g->n_exact = 0;
    for (size_t i = 0; i < v.size(); i++) {
        rs_gpu_wmat &e = v[i];
        e.exact = rsg_bf16_exact(e.h, e.rows * e.cols, threads);
        g->mats[i] = e;
        if (!e.exact) continue; /* sgemm */
        g->n_exact++;
        bf += e.rows * e.cols;
        kmax = std::max(kmax, e.cols);
        need = std::max(need, rsg_bf16x3_part_floats(Mc, e.rows, e.cols));
        nbmax = std::max(nbmax, (e.cols + RSG_BF16X3_KB - 1) / RSG_BF16X3_KB);
    }
    g->bf_elems = bf;
    g->ws_floats = rsg_linear_ws_floats(RSG_GEMM_BF16X3, Mc, kmax);
    g->part_floats = need ? std::max(std::min(need, (size_t)1 << 28), std::min(need, nbmax * Mc * 256)) : 0;
    *weight_bytes = bf * 2;
    *scratch_bytes = (g->ws_floats + g->part_floats) * sizeof(float);
    return RS_OK;
}

/* f64: a double copy of every weight matrix (bf_mem), X in double (ws) and the double outputs (part) */
static rs_status plan_f64_(const rs_scorer *sc, gpu_impl *im, size_t *weight_bytes, size_t *scratch_bytes)
{
    rs_gpu_gemm_state *g = &im->gemm;
    std::vector<rs_gpu_wmat> v;
    list_mats_(sc->m, v);
    free(g->mats);
    g->mats = (rs_gpu_wmat *)calloc(v.size() + 1, sizeof *g->mats);
    if (!g->mats) return rs_error_set(RS_E_NOMEM, "out of memory");
    const size_t Mc = (size_t)im->RR * im->C;
    size_t kmax = 0, nmax = 0, el = 0;
    g->n_mats = (int)v.size();
    g->n_exact = 0;
    for (size_t i = 0; i < v.size(); i++) {
        g->mats[i] = v[i];
        el += v[i].rows * v[i].cols;
        kmax = std::max(kmax, v[i].cols);
        nmax = std::max(nmax, v[i].rows);
    }
    g->bf_elems = el;
    g->ws_floats = 2 * Mc * kmax;   /* doubles of X */
    g->part_floats = 2 * Mc * nmax; /* doubles of Y */
    *weight_bytes = el * sizeof(double);
    *scratch_bytes = (g->ws_floats + g->part_floats) * sizeof(float);
    return RS_OK;
}

rs_status rs_gpu_gemm_plan(const rs_scorer *sc, gpu_impl *im, size_t *weight_bytes, size_t *scratch_bytes)
{
    rs_gpu_gemm_state *g = &im->gemm;
    *weight_bytes = *scratch_bytes = 0;
    RS_TRY(rsg_gemm_method_of(sc->cfg.compute, &g->method));
    g->pad_rows = 0;
    const char *pad = getenv("RS_GPU_GEMM_PAD_ROWS");
    if (pad && *pad) {
        char *end = NULL;
        const unsigned long long v = strtoull(pad, &end, 10);
        RS_CHECK(end && *end == '\0' && v >= 1, RS_E_INVAL, "RS_GPU_GEMM_PAD_ROWS=%s: a positive row count expected",
                 pad);
        const size_t cap = (size_t)im->RR * im->C;
        g->pad_rows = v < cap ? (size_t)v : cap;
    }
    if (g->method == RSG_GEMM_TWIN) { /* no weight copies, no scratch: the kernels read the fp32 weights */
        g->pad_rows = 0;
        const char *t = getenv("RS_TWIN_CPU_THREADS");
        g->twin_threads = 2; /* the acceptance measurement's CPU logs: --threads 2 */
        if (t && *t) {
            char *end = NULL;
            const long v = strtol(t, &end, 10);
            RS_CHECK(end && *end == '\0' && v >= 1 && v <= 4096, RS_E_INVAL,
                     "RS_TWIN_CPU_THREADS=%s: the CPU evaluator's thread count (1 .. 4096) expected", t);
            g->twin_threads = (int)v;
        }
        const char *fb = getenv("RS_CPU_F64_BLOCK"); /* the CPU backend's column blocks (rs_gemm_blocks.h) */
        RS_CHECK(rs_gemm_f64_block_parse(fb, &g->twin_block), RS_E_INVAL,
                 "RS_CPU_F64_BLOCK=%s: not a power of two in [1024, 2^30]", fb);
        return RS_OK;
    }
    const char *force = getenv("RS_GPU_GEMM"); /* comparisons: `--compute fp32` on cuBLAS SGEMM */
    if (g->method == RSG_GEMM_BF16X3 && force && !strcmp(force, "sgemm")) g->method = RSG_GEMM_SGEMM;
    if (g->method == RSG_GEMM_BF16X3 && force && !strcmp(force, "f64")) g->method = RSG_GEMM_F64; /* diagnostic */
    if (g->method == RSG_GEMM_BF16X3) return plan_bf16x3_(sc, im, weight_bytes, scratch_bytes);
    if (g->method == RSG_GEMM_F64) return plan_f64_(sc, im, weight_bytes, scratch_bytes);
    if (g->method != RSG_GEMM_TF32X3) return RS_OK;
    const rs_model *m = sc->m;
    std::vector<rs_gpu_wmat> v;
    list_mats_(m, v);
    free(g->mats);
    g->mats = (rs_gpu_wmat *)calloc(v.size() + 1, sizeof *g->mats);
    if (!g->mats) return rs_error_set(RS_E_NOMEM, "out of memory");
    const unsigned hw = std::thread::hardware_concurrency();
    const int threads = (int)std::min(hw ? hw : 1u, 32u);
    size_t kmax = 0, split = 0;
    g->n_mats = (int)v.size();
    g->n_exact = 0;
    for (size_t i = 0; i < v.size(); i++) {
        rs_gpu_wmat &e = v[i];
        e.exact = rsg_tf32_exact(e.h, e.rows * e.cols, threads);
        g->n_exact += e.exact;
        if (!e.exact) split += e.rows * e.cols * (e.shared ? 2 : 1); /* lo (+ hi's own copy) */
        kmax = std::max(kmax, e.cols);
        g->mats[i] = e;
    }
    g->split_floats = split;
    g->ws_floats = rsg_linear_ws_floats(RSG_GEMM_TF32X3, (size_t)im->RR * im->C, kmax);
    *weight_bytes = split * sizeof(float);
    *scratch_bytes = g->ws_floats * sizeof(float);
    return RS_OK;
}

static bool by_key_(const rs_gpu_wmat &a, const rs_gpu_wmat &b) { return a.key < b.key; }

/* an entry's device view before its method's operands: the key (the matrix's fp32 copy on the
 * device, what rs_gpu_linear is called with) and, until set, the key itself as the only operand */
static float *entry_reset_(gpu_impl *im, rs_gpu_wmat *w)
{
    float *key = (float *)RS_GPU_W(im, w->h);
    w->key = w->hi = key;
    w->lo = NULL;
    w->bf = NULL;
    return key;
}

static __global__ void to_bf16_k_(size_t n, const float *w, __nv_bfloat16 *b)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = __float2bfloat16_rn(w[i]); /* exact: the matrix was checked bf16-exact */
}

static rs_status alloc_bf16x3_(gpu_impl *im)
{
    rs_gpu_gemm_state *g = &im->gemm;
    cudaError_t e = cudaMalloc((void **)&g->ws, (g->ws_floats ? g->ws_floats : 4) * sizeof(float));
    if (e == cudaSuccess && g->part_floats) e = cudaMalloc((void **)&g->part, g->part_floats * sizeof(float));
    if (e == cudaSuccess && g->bf_elems) e = cudaMalloc(&g->bf_mem, g->bf_elems * 2);
    if (e != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "cudaMalloc of the bf16x3 GEMM buffers (%.3f GiB): %s",
                            ((double)(g->ws_floats + g->part_floats) * 4.0 + (double)g->bf_elems * 2.0) / 1073741824.0,
                            cudaGetErrorString(e));
    im->device_bytes += (g->ws_floats + g->part_floats) * sizeof(float) + g->bf_elems * 2;
    size_t o = 0;
    for (int i = 0; i < g->n_mats; i++) {
        rs_gpu_wmat *w = &g->mats[i];
        float *key = entry_reset_(im, w);
        if (!w->exact) continue;
        __nv_bfloat16 *b = (__nv_bfloat16 *)g->bf_mem + o;
        const size_t n = w->rows * w->cols;
        o += n;
        to_bf16_k_<<<(unsigned)std::min<size_t>((n + 255) / 256, 16384), 256, 0, im->s>>>(n, key, b);
        w->bf = b;
    }
    std::sort(g->mats, g->mats + g->n_mats, by_key_);
    return rs_cuda_call_status(cudaStreamSynchronize(im->s), "the bf16 weight copies");
}

static __global__ void to_f64_k_(size_t n, const float *w, double *d)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = (double)w[i];
}

static rs_status alloc_f64_(gpu_impl *im)
{
    rs_gpu_gemm_state *g = &im->gemm;
    cudaError_t e = cudaMalloc((void **)&g->ws, (g->ws_floats ? g->ws_floats : 4) * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc((void **)&g->part, (g->part_floats ? g->part_floats : 4) * sizeof(float));
    if (e == cudaSuccess && g->bf_elems) e = cudaMalloc(&g->bf_mem, g->bf_elems * sizeof(double));
    if (e != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "cudaMalloc of the f64 GEMM buffers (%.3f GiB): %s",
                            ((double)(g->ws_floats + g->part_floats) * 4.0 + (double)g->bf_elems * 8.0) / 1073741824.0,
                            cudaGetErrorString(e));
    im->device_bytes += (g->ws_floats + g->part_floats) * sizeof(float) + g->bf_elems * sizeof(double);
    size_t o = 0;
    for (int i = 0; i < g->n_mats; i++) {
        rs_gpu_wmat *w = &g->mats[i];
        float *key = entry_reset_(im, w);
        double *d = (double *)g->bf_mem + o;
        const size_t n = w->rows * w->cols;
        o += n;
        to_f64_k_<<<(unsigned)std::min<size_t>((n + 255) / 256, 16384), 256, 0, im->s>>>(n, key, d);
        w->bf = d;
    }
    std::sort(g->mats, g->mats + g->n_mats, by_key_);
    return rs_cuda_call_status(cudaStreamSynchronize(im->s), "the f64 weight copies");
}

rs_status rs_gpu_gemm_alloc(const rs_scorer *sc, gpu_impl *im)
{
    (void)sc;
    rs_gpu_gemm_state *g = &im->gemm;
    if (g->method == RSG_GEMM_BF16X3) return alloc_bf16x3_(im);
    if (g->method == RSG_GEMM_F64) return alloc_f64_(im);
    if (g->method != RSG_GEMM_TF32X3) return RS_OK;
    cudaError_t e = cudaMalloc((void **)&g->ws, (g->ws_floats ? g->ws_floats : 4) * sizeof(float));
    if (e == cudaSuccess && g->split_floats) e = cudaMalloc((void **)&g->split_mem, g->split_floats * sizeof(float));
    if (e != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "cudaMalloc of the split-TF32 GEMM buffers (%.3f GiB): %s",
                            (double)(g->ws_floats + g->split_floats) * 4.0 / 1073741824.0, cudaGetErrorString(e));
    im->device_bytes += (g->ws_floats + g->split_floats) * sizeof(float);
    size_t o = 0;
    for (int i = 0; i < g->n_mats; i++) {
        rs_gpu_wmat *w = &g->mats[i];
        float *key = entry_reset_(im, w);
        if (w->exact) continue;
        float *lo = g->split_mem + o, *hi = key;
        o += w->rows * w->cols;
        if (w->shared) { /* the embedding table stays fp32: hi in a copy of its own */
            hi = g->split_mem + o;
            o += w->rows * w->cols;
        }
        RS_TRY(rsg_tf32_split((int)w->rows, (int)w->cols, key, w->cols, hi, w->cols, lo, w->cols, (rs_cuda_stream)im->s));
        w->hi = hi;
        w->lo = lo;
    }
    std::sort(g->mats, g->mats + g->n_mats, by_key_);
    return rs_cuda_call_status(cudaStreamSynchronize(im->s), "splitting the weights");
}

void rs_gpu_gemm_free(gpu_impl *im)
{
    rs_gpu_gemm_state *g = &im->gemm;
    cudaFree(g->ws);
    cudaFree(g->split_mem);
    cudaFree(g->pad_y);
    cudaFree(g->part);
    cudaFree(g->bf_mem);
    free(g->mats);
    memset(g, 0, sizeof *g);
}

void rs_gpu_gemm_describe(const gpu_impl *im, char *buf, size_t n)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    if (g->method == RSG_GEMM_TF32X3)
        snprintf(buf, n, "gemm tf32x3 (%d of %d weight matrices TF32-exact: 2 products, others 3)", g->n_exact,
                 g->n_mats);
    else if (g->method == RSG_GEMM_BF16X3)
        snprintf(buf, n, "gemm bf16x3 (exact bf16 products, fp32 sums of K blocks of %d; %d of %d weight matrices "
                         "bf16-exact, others sgemm)",
                 RSG_BF16X3_KB, g->n_exact, g->n_mats);
    else if (g->method == RSG_GEMM_F64)
        snprintf(buf, n, "gemm f64 (RS_GPU_GEMM=f64: double operands, cuBLAS dgemm, one rounding to float; diagnostic)");
    else if (g->method == RSG_GEMM_TWIN)
        snprintf(buf, n, "gemm twin (double sums in OpenBLAS 0.3.21 SkylakeX dgemm's order, the slabs of %d CPU threads, "
                         "one rounding)", g->twin_threads);
    else
        snprintf(buf, n, "gemm %s", rsg_gemm_method_name(g->method));
    if (g->pad_rows > 1) {
        const size_t u = strlen(buf);
        if (u < n) snprintf(buf + u, n - u, ", every GEMM padded to %zu rows (RS_GPU_GEMM_PAD_ROWS)", g->pad_rows);
    }
}

/* one GEMM by the scorer's method; e: the weight matrix's entry (tf32x3, bf16x3), else NULL */
static rs_status run_(gpu_impl *im, const rs_gpu_wmat *e, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                      const float *W, float beta, float *Y, size_t ldy)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    switch (g->method) {
    case RSG_GEMM_TF32X3:
        return rsg_linear(im->blas, g->method, M, N, K, X, ldx, e->hi, e->lo, beta, Y, ldy, g->ws, g->ws_floats, im->s);
    case RSG_GEMM_BF16X3:
        if (e->bf)
            return rsg_linear_bf16x3(im->blas, M, N, K, X, ldx, e->bf, beta, Y, ldy, g->ws, g->ws_floats, g->part,
                                     g->part_floats, im->s);
        return rsg_linear(im->blas, RSG_GEMM_SGEMM, M, N, K, X, ldx, W, NULL, beta, Y, ldy, NULL, 0, im->s);
    case RSG_GEMM_F64:
        return rsg_linear_f64(im->blas, M, N, K, X, ldx, (const double *)e->bf, beta, Y, ldy, (double *)g->ws,
                              (double *)g->part, im->s);
    case RSG_GEMM_TWIN: /* the batch's streams are M / b_ns rows each: one CPU GEMM per stream */
        return rsg_linear_twin(M, N, K, X, ldx, W, beta, Y, ldy, M / (im->b_ns ? im->b_ns : 1), g->twin_threads,
                               g->twin_block, im->s);
    default: return rsg_linear(im->blas, g->method, M, N, K, X, ldx, W, NULL, beta, Y, ldy, NULL, 0, im->s);
    }
}

/* the padded GEMM of rs_gpu_linear (see pad_rows): Y's M rows through a pad_rows-row copy */
static rs_status linear_padded_(gpu_impl *im, const rs_gpu_wmat *e, size_t M, size_t N, size_t K, const float *X,
                                size_t ldx, const float *W, float beta, float *Y, size_t ldy)
{
    rs_gpu_gemm_state *g = &im->gemm;
    const size_t P = g->pad_rows, need = P * ldy;
    if (need > g->pad_y_floats) {
        cudaFree(g->pad_y);
        g->pad_y = NULL;
        g->pad_y_floats = 0;
        const cudaError_t ce = cudaMalloc((void **)&g->pad_y, need * sizeof(float));
        if (ce != cudaSuccess)
            return rs_error_set(RS_E_CUDA, "cudaMalloc of the padded GEMM output (%zu x %zu floats): %s", P, ldy,
                                cudaGetErrorString(ce));
        g->pad_y_floats = need;
    }
    const size_t row = ldy * sizeof(float), w = N * sizeof(float);
    if (beta != 0.0f && cudaMemcpy2DAsync(g->pad_y, row, Y, row, w, M, cudaMemcpyDeviceToDevice, im->s) != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "padded GEMM: copying Y in");
    /* rows M .. P-1 of X are whatever the buffers (sized for RR x chunk rows) hold: a GEMM's rows
       are independent, so they reach only the rows of pad_y that are not copied out */
    RS_TRY(run_(im, e, P, N, K, X, ldx, W, beta, g->pad_y, ldy));
    if (cudaMemcpy2DAsync(Y, row, g->pad_y, row, w, M, cudaMemcpyDeviceToDevice, im->s) != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "padded GEMM: copying Y out");
    return RS_OK;
}

rs_status rs_gpu_linear(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W,
                        float beta, float *Y, size_t ldy)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    const rs_gpu_wmat *e = NULL;
    if (g->method == RSG_GEMM_TF32X3 || g->method == RSG_GEMM_BF16X3 || g->method == RSG_GEMM_F64) {
        rs_gpu_wmat key;
        memset(&key, 0, sizeof key);
        key.key = W;
        e = std::lower_bound(g->mats, g->mats + g->n_mats, key, by_key_);
        RS_CHECK(e < g->mats + g->n_mats && e->key == W && e->rows == N && e->cols == K, RS_E_STATE,
                 "rs_gpu_linear: weight matrix %p (%zu x %zu) was not prepared for the %s GEMM", (const void *)W, N, K,
                 rsg_gemm_method_name(g->method));
    }
    if (g->pad_rows > M) RS_TRY(linear_padded_(im, e, M, N, K, X, ldx, W, beta, Y, ldy));
    else RS_TRY(run_(im, e, M, N, K, X, ldx, W, beta, Y, ldy));
    rs_gpu_mark(im, GS_GEMM);
    return RS_OK;
}
