/* rs_gpu_weights.cu — the scorer's GEMM weights (rs_gpu_weights.h): the method of a compute mode,
 * the plan and preparation of every weight matrix for its method (splits, bf16 / f64 copies), and
 * rs_gpu_linear, the forward's entry point (rs_gpu_scorer_impl.h). */
#include "rs_gpu_weights.h"

#include <cuda_bf16.h>
#include "dense/rs_dense_ops.h"
#include "rs_gemm_blocks.h"
#include "rs_gpu_scorer_impl.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "rs_check.h"
#include "rs_cuda_common.cuh" /* RS_CUDA_TRY, rs_cuda_launch_status */

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

/* ---- the scorer's weights ------------------------------------------------------------------- */

static void add_mat_(std::vector<rs_gpu_wmat> &v, const float *h, size_t rows, size_t cols, int shared)
{
    if (!h) return; /* a matrix listed twice (a tied lm_head) gets one entry: list_mats_ drops repeats */
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
        if (c->layer_kind[l] == RS_LAYER_MOE || (c->mlp_is_moe && c->layer_has_mlp)) {
            const rs_moe_config *mo = &c->moe;
            const size_t E = (size_t)mo->n_experts, din = (size_t)mo->expert_in, Ie = (size_t)mo->intermediate;
            const size_t Is = (size_t)mo->shared_intermediate;
            add_mat_(v, w->moe.router, E, d, 0);
            add_mat_(v, w->moe.latent_in, din, d, 0);
            add_mat_(v, w->moe.latent_out, d, din, 0);
            for (size_t e = 0; e < E; e++) {
                if (w->moe.gate) add_mat_(v, w->moe.gate[e], Ie, din, 0);
                add_mat_(v, w->moe.up[e], Ie, din, 0);
                add_mat_(v, w->moe.down[e], din, Ie, 0);
            }
            add_mat_(v, w->moe.shared_gate, Is, d, 0);
            add_mat_(v, w->moe.shared_up, Is, d, 0);
            add_mat_(v, w->moe.shared_down, d, Is, 0);
            add_mat_(v, w->moe.shared_scale, 1, d, 0);
            continue;
        }
        if (c->layer_kind[l] == RS_LAYER_MLP || c->layer_has_mlp) {
            add_mat_(v, w->mlp.gate, I, d, 0);
            add_mat_(v, w->mlp.up, I, d, 0);
            add_mat_(v, w->mlp.down, d, I, 0);
        }
    }
    add_mat_(v, m->w.lm_head, (size_t)c->vocab, d, m->w.lm_head == m->w.embed);
    /* one matrix, one entry (the first listed): stable by host address, then the repeats dropped */
    std::stable_sort(v.begin(), v.end(), [](const rs_gpu_wmat &a, const rs_gpu_wmat &b) { return a.h < b.h; });
    v.erase(std::unique(v.begin(), v.end(), [](const rs_gpu_wmat &a, const rs_gpu_wmat &b) { return a.h == b.h; }),
            v.end());
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

/* weights made on the GPU (rs_gpu_devweights.cu): fp32 GEMMs (cuBLAS SGEMM; twin: the CPU's) on each
   matrix's values or its decode; the other methods need weight copies the device model does not make */
static rs_status plan_device_(const rs_scorer *sc, gpu_impl *im, size_t *weight_bytes, size_t *scratch_bytes)
{
    rs_gpu_gemm_state *g = &im->gemm;
    RS_CHECK(g->method == RSG_GEMM_BF16X3 || g->method == RSG_GEMM_TWIN, RS_E_UNSUPPORTED,
             "--compute %s: a model whose weights are made on the GPU runs with --compute fp32 or twin",
             rs_compute_mode_name(sc->cfg.compute));
    if (g->method == RSG_GEMM_BF16X3) g->method = RSG_GEMM_SGEMM;
    g->pad_rows = 0;
    g->dev_mode = 1;
    std::vector<rs_gpu_wmat> v;
    list_mats_(sc->m, v);
    free(g->mats);
    g->mats = (rs_gpu_wmat *)calloc(v.size() + 1, sizeof *g->mats);
    if (!g->mats) return rs_error_set(RS_E_NOMEM, "out of memory");
    std::copy(v.begin(), v.end(), g->mats);
    g->n_mats = (int)v.size();
    g->n_exact = 0;
    RS_TRY(rs_gpu_devw_plan(sc->m, g->mats, g->n_mats, weight_bytes, &g->deq_floats));
    /* the grouped expert GEMMs decode a batch of experts at a time (rs_gpu_moe.cu) */
    g->deq_floats = std::max(g->deq_floats, rs_gpu_moe_deq_floats(sc->m, im));
    *scratch_bytes = g->deq_floats * sizeof(float);
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
        return sc->m->weights_on_device ? plan_device_(sc, im, weight_bytes, scratch_bytes) : RS_OK;
    }
    if (sc->m->weights_on_device) return plan_device_(sc, im, weight_bytes, scratch_bytes);
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
    if (g->dev_mode) {
        for (int i = 0; i < g->n_mats; i++) entry_reset_(im, &g->mats[i]);
        std::sort(g->mats, g->mats + g->n_mats, by_key_);
        return rs_gpu_devw_alloc(im);
    }
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
    cudaFree(g->dev_mem);
    cudaFree(g->deq);
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
    if (g->dev_mode) {
        const size_t u = strlen(buf);
        if (u < n) snprintf(buf + u, n - u, " on weights made on the GPU (quantized ones kept so, decoded per GEMM)");
    }
    if (g->pad_rows > 1) {
        const size_t u = strlen(buf);
        if (u < n) snprintf(buf + u, n - u, ", every GEMM padded to %zu rows (RS_GPU_GEMM_PAD_ROWS)", g->pad_rows);
    }
}

/* one GEMM by the scorer's method; e: the weight matrix's entry (tf32x3, bf16x3), else NULL; twin_rows: the
   rows of one CPU GEMM (twin) */
static rs_status run_(gpu_impl *im, const rs_gpu_wmat *e, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                      const float *W, float beta, float *Y, size_t ldy, size_t twin_rows)
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
        return rsg_linear_twin(M, N, K, X, ldx, W, beta, Y, ldy, twin_rows, g->twin_threads, g->twin_block, im->s);
    default: return rsg_linear(im->blas, g->method, M, N, K, X, ldx, W, NULL, beta, Y, ldy, NULL, 0, im->s);
    }
}

/* the padded GEMM of rs_gpu_linear (see pad_rows): Y's M rows through a pad_rows-row copy */
static rs_status linear_padded_(gpu_impl *im, const rs_gpu_wmat *e, size_t M, size_t N, size_t K, const float *X,
                                size_t ldx, const float *W, float beta, float *Y, size_t ldy, size_t twin_rows)
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
    RS_TRY(run_(im, e, P, N, K, X, ldx, W, beta, g->pad_y, ldy, twin_rows));
    if (cudaMemcpy2DAsync(Y, row, g->pad_y, row, w, M, cudaMemcpyDeviceToDevice, im->s) != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "padded GEMM: copying Y out");
    return RS_OK;
}

const rs_gpu_wmat *rs_gpu_wmat_find(const gpu_impl *im, const float *W)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    rs_gpu_wmat key;
    memset(&key, 0, sizeof key);
    key.key = W;
    const rs_gpu_wmat *e = std::lower_bound(g->mats, g->mats + g->n_mats, key, by_key_);
    return e < g->mats + g->n_mats && e->key == W ? e : NULL;
}

static rs_status linear_(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W,
                         float beta, float *Y, size_t ldy, size_t twin_rows)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    const rs_gpu_wmat *e = NULL;
    if (g->dev_mode || g->method == RSG_GEMM_TF32X3 || g->method == RSG_GEMM_BF16X3 || g->method == RSG_GEMM_F64) {
        e = rs_gpu_wmat_find(im, W);
        RS_CHECK(e && e->rows == N && e->cols == K, RS_E_STATE,
                 "rs_gpu_linear: weight matrix %p (%zu x %zu) was not prepared for the %s GEMM", (const void *)W, N, K,
                 rsg_gemm_method_name(g->method));
    }
    if (e && e->dev) RS_TRY(rs_gpu_devw_view(im, e, &W));
    if (g->pad_rows > M) RS_TRY(linear_padded_(im, e, M, N, K, X, ldx, W, beta, Y, ldy, twin_rows));
    else RS_TRY(run_(im, e, M, N, K, X, ldx, W, beta, Y, ldy, twin_rows));
    if (!im->quiet_marks) rs_gpu_mark(im, GS_GEMM);
    return RS_OK;
}

rs_status rs_gpu_linear(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W,
                        float beta, float *Y, size_t ldy)
{
    return linear_(im, M, N, K, X, ldx, W, beta, Y, ldy, M / (im->b_ns ? im->b_ns : 1)); /* twin: a GEMM per stream */
}

rs_status rs_gpu_linear_rows(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W,
                             float beta, float *Y, size_t ldy)
{
    return linear_(im, M, N, K, X, ldx, W, beta, Y, ldy, M);
}
