/* rs_gpu_gemm.cu — the GPU evaluator's GEMMs (rs_gpu_gemm.h): rsg_linear's three methods on cuBLAS,
 * the scorer's weight preparation for the split-TF32 method, and rs_gpu_linear, the forward's
 * entry point (rs_gpu_scorer_impl.h). */
#include "rs_gpu_gemm.h"
#include "rs_gpu_ops.h"
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

const char *rsg_gemm_method_name(rsg_gemm_method m)
{
    switch (m) {
    case RSG_GEMM_SGEMM: return "sgemm";
    case RSG_GEMM_TF32: return "tf32";
    case RSG_GEMM_TF32X3: return "tf32x3";
    }
    return "?";
}

rs_status rsg_gemm_method_of(rs_compute_mode c, rsg_gemm_method *out)
{
    switch (c) {
    case RS_COMPUTE_FP32: *out = RSG_GEMM_SGEMM; return RS_OK;
    case RS_COMPUTE_TF32X3: *out = RSG_GEMM_TF32X3; return RS_OK;
    case RS_COMPUTE_TF32: *out = RSG_GEMM_TF32; return RS_OK;
    default: break;
    }
    return rs_error_set(RS_E_UNSUPPORTED, "--compute %s is not implemented on the GPU (fp32, tf32x3 and tf32 are)",
                        rs_compute_mode_name(c));
}

/* ---- exactness (host) ----------------------------------------------------------------------- */

static int exact_range_(const uint32_t *u, size_t n)
{
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= u[i];
    return (acc & 0x1FFFu) == 0;
}

int rsg_tf32_exact(const float *w, size_t n, int threads)
{
    const uint32_t *u = (const uint32_t *)(const void *)w;
    const size_t blk = (size_t)1 << 22; /* 16 MiB a piece */
    if (threads <= 1 || n <= blk) {
        for (size_t o = 0; o < n; o += blk)
            if (!exact_range_(u + o, std::min(blk, n - o))) return 0;
        return 1;
    }
    std::atomic<size_t> next(0);
    std::atomic<int> bad(0);
    const size_t pieces = (n + blk - 1) / blk;
    auto work = [&]() {
        for (size_t p; !bad.load(std::memory_order_relaxed) && (p = next.fetch_add(1)) < pieces;)
            if (!exact_range_(u + p * blk, std::min(blk, n - p * blk))) bad.store(1);
    };
    std::vector<std::thread> pool;
    const int nt = (int)std::min<size_t>((size_t)threads, pieces);
    for (int t = 1; t < nt; t++) pool.emplace_back(work);
    work();
    for (auto &t : pool) t.join();
    return !bad.load();
}

/* ---- rsg_linear ---------------------------------------------------------------------------- */

size_t rsg_linear_ws_floats(rsg_gemm_method m, size_t M, size_t K) { return m == RSG_GEMM_TF32X3 ? 2 * M * K : 0; }

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

rs_status rs_gpu_gemm_alloc(const rs_scorer *sc, gpu_impl *im)
{
    (void)sc;
    rs_gpu_gemm_state *g = &im->gemm;
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
        float *key = (float *)RS_GPU_W(im, w->h);
        w->key = w->hi = key;
        w->lo = NULL;
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
    e = cudaStreamSynchronize(im->s);
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "splitting the weights: %s", cudaGetErrorString(e));
    return RS_OK;
}

void rs_gpu_gemm_free(gpu_impl *im)
{
    rs_gpu_gemm_state *g = &im->gemm;
    cudaFree(g->ws);
    cudaFree(g->split_mem);
    cudaFree(g->pad_y);
    free(g->mats);
    memset(g, 0, sizeof *g);
}

void rs_gpu_gemm_describe(const gpu_impl *im, char *buf, size_t n)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    if (g->method == RSG_GEMM_TF32X3)
        snprintf(buf, n, "gemm tf32x3 (%d of %d weight matrices TF32-exact: 2 products, others 3)", g->n_exact,
                 g->n_mats);
    else
        snprintf(buf, n, "gemm %s", rsg_gemm_method_name(g->method));
    if (g->pad_rows > 1) {
        const size_t u = strlen(buf);
        if (u < n) snprintf(buf + u, n - u, ", every GEMM padded to %zu rows (RS_GPU_GEMM_PAD_ROWS)", g->pad_rows);
    }
}

/* the padded GEMM of rs_gpu_linear (see pad_rows): Y's M rows through a pad_rows-row copy */
static rs_status linear_padded_(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *hi,
                                const float *lo, float beta, float *Y, size_t ldy)
{
    rs_gpu_gemm_state *g = &im->gemm;
    const size_t P = g->pad_rows, need = P * ldy;
    if (need > g->pad_y_floats) {
        cudaFree(g->pad_y);
        g->pad_y = NULL;
        g->pad_y_floats = 0;
        const cudaError_t e = cudaMalloc((void **)&g->pad_y, need * sizeof(float));
        if (e != cudaSuccess)
            return rs_error_set(RS_E_CUDA, "cudaMalloc of the padded GEMM output (%zu x %zu floats): %s", P, ldy,
                                cudaGetErrorString(e));
        g->pad_y_floats = need;
    }
    const size_t row = ldy * sizeof(float), w = N * sizeof(float);
    if (beta != 0.0f && cudaMemcpy2DAsync(g->pad_y, row, Y, row, w, M, cudaMemcpyDeviceToDevice, im->s) != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "padded GEMM: copying Y in");
    /* rows M .. P-1 of X are whatever the buffers (sized for RR x chunk rows) hold: a GEMM's rows
       are independent, so they reach only the rows of pad_y that are not copied out */
    RS_TRY(rsg_linear(im->blas, g->method, P, N, K, X, ldx, hi, lo, beta, g->pad_y, ldy, g->ws, g->ws_floats, im->s));
    if (cudaMemcpy2DAsync(Y, row, g->pad_y, row, w, M, cudaMemcpyDeviceToDevice, im->s) != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "padded GEMM: copying Y out");
    return RS_OK;
}

rs_status rs_gpu_linear(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W,
                        float beta, float *Y, size_t ldy)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    const float *hi = W, *lo = NULL;
    if (g->method == RSG_GEMM_TF32X3) {
        rs_gpu_wmat key;
        memset(&key, 0, sizeof key);
        key.key = W;
        const rs_gpu_wmat *e = std::lower_bound(g->mats, g->mats + g->n_mats, key, by_key_);
        RS_CHECK(e < g->mats + g->n_mats && e->key == W && e->rows == N && e->cols == K, RS_E_STATE,
                 "rs_gpu_linear: weight matrix %p (%zu x %zu) was not prepared for the split-TF32 GEMM", (const void *)W,
                 N, K);
        hi = e->hi;
        lo = e->lo;
    }
    if (g->pad_rows > M) RS_TRY(linear_padded_(im, M, N, K, X, ldx, hi, lo, beta, Y, ldy));
    else RS_TRY(rsg_linear(im->blas, g->method, M, N, K, X, ldx, hi, lo, beta, Y, ldy, g->ws, g->ws_floats, im->s));
    rs_gpu_mark(im, GS_GEMM);
    return RS_OK;
}
