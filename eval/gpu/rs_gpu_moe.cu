/* rs_gpu_moe.cu — the mixture-of-experts FFN of a chunk on the GPU, the twin of eval/model/rs_moe.c
 * (same order of work, same sums):
 *   xn = RMSNorm(x); logits = router xn (rs_gpu_linear); every row routed on the device by
 *   rs_moe_route_row (eval/model/rs_moe_route.h, the CPU's own lines); the choices copied to the host
 *   and grouped by expert there (a counting sort in row order: the CPU's order); xin = fc1_latent_proj xn
 *   or xn; acc = 0; for each expert e with rows, in index order: gather its rows, up (gate) down GEMMs
 *   on them alone, acc[row] += w * y; out = fc2_latent_proj acc (or acc); the shared expert on xn
 *   (Qwen: times sigmoid(shared_expert_gate xn)); x += out + shared.
 * A row is routed by its own activations, so a policy run may use other experts than the reference.
 * The host round trip (one copy of M x k indices per MoE layer) gives the expert GEMMs their row
 * counts; --compute twin runs each stream's rows apart, as the CPU scorer does book by book.
 *
 * Grouped experts (the default where every expert matrix runs SGEMM: weights made on the GPU, fp32
 * checkpoints; never twin; RS_GPU_MOE=loop forces the per-expert loop): every entry (row, slot) is gathered at once to its
 * place in the expert order; cuBLAS grouped SGEMMs (one group per expert with rows) run up (gate),
 * then one activation over all entries, then down; quantized experts are decoded a batch at a time
 * (one launch, rs_gpu_devw_decode_jobs) into a scratch of at most MOE_DEQ_CAP floats; finally each
 * row adds its experts' w * y in expert index order, t = y * w rounded then added: the per-expert
 * loop's sums, in the same order. Launches per layer drop from ~7 per expert to ~10 per batch; each
 * expert's GEMM is still an SGEMM of its own rows (true fp32 products and sums), so only cuBLAS's
 * choice of kernel, and with it the reduction order within a dot product, may differ from the loop.
 * Timing: routing, grouping and the weighted adds count to the MoE stage, the expert GEMMs and their
 * decodes (one mark for all) to the GEMM stage. */
#include "model/rs_moe_route.h"
#include "rs_gpu_scorer_impl.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>

#include "rs_check.h"
#include "rs_cuda_common.cuh" /* RS_CUDA_TRY, rs_cuda_launch_status */

/* ---- kernels ----------------------------------------------------------------------------------- */

/* one thread per row: the row's experts and weights (rs_moe_route_row, the host's code) */
static __global__ void route_k_(rs_moe_config mo, int M, const float *logits, const float *bias, int32_t *idx,
                                float *w, float *scratch)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const size_t E = (size_t)mo.n_experts, k = (size_t)mo.top_k;
    rs_moe_route_row(&mo, logits + row * E, bias, idx + row * k, w + row * k,
                     scratch + row * RS_MOE_ROUTE_SCRATCH(E, mo.n_group));
}

/* Y[i] = X[order[i] / k] for the n entries of one expert (block i, threads over the width) */
static __global__ void gather_k_(int din, const int32_t *order, int k, const float *X, float *Y)
{
    const size_t row = (size_t)(order[blockIdx.x] / k);
    const float *x = X + row * din;
    float *y = Y + (size_t)blockIdx.x * din;
    for (int j = threadIdx.x; j < din; j += blockDim.x) y[j] = x[j];
}

/* acc[row] += w * y for the n entries of one expert (distinct rows: no two blocks write one row);
   t = y * w rounded, then added: index_add_ of (y * w), as the CPU */
static __global__ void scatter_add_k_(int din, const int32_t *order, int k, const float *wts, const float *Y,
                                      float *acc)
{
    const int32_t ent = order[blockIdx.x];
    const float wt = wts[ent];
    float *dst = acc + (size_t)(ent / k) * din;
    const float *y = Y + (size_t)blockIdx.x * din;
    for (int j = threadIdx.x; j < din; j += blockDim.x) {
        const float t = y[j] * wt;
        dst[j] = dst[j] + t;
    }
}

/* grouped: acc[row] += w * y over the row's k entries in expert order (rowpos), t = y * w rounded, then
   added: scatter_add_k_'s sums in the loop's order */
static __global__ void combine_k_(int din, int k, const int32_t *rowpos, const int32_t *order, const float *wts,
                                  const float *Y, float *acc)
{
    const size_t row = blockIdx.x;
    const int32_t *pos = rowpos + row * (size_t)k;
    float *dst = acc + row * din;
    for (int j = threadIdx.x; j < din; j += blockDim.x) {
        float a = dst[j];
        for (int s = 0; s < k; s++) {
            const int32_t p = pos[s];
            a = __fadd_rn(a, __fmul_rn(Y[(size_t)p * din + j], wts[order[p]]));
        }
        dst[j] = a;
    }
}

/* x += out + shared (Qwen: out + sigmoid(sg) * shared), in transformers' order (rs_moe.c sum_row_) */
static __global__ void sum_k_(int d, float *x, const float *out, const float *sh, const float *sg)
{
    const size_t row = blockIdx.x;
    float *xr = x + row * d;
    const float *o = out + row * d, *s = sh + row * d;
    const float g = sg ? rs_sigmoidf(sg[row]) : 1.0f;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        const float t = sg ? g * s[j] : s[j];
        const float y = o[j] + t;
        xr[j] = xr[j] + y;
    }
}

static unsigned threads_of_(size_t width) { return width >= 256 ? 256u : width >= 128 ? 128u : 64u; }

/* ---- scratch ----------------------------------------------------------------------------------- */

enum { MOE_BUFS = 17 };
#define MOE_DEQ_CAP ((size_t)1 << 28) /* floats of decode scratch for one batch of grouped experts (1 GiB) */

/* the device buffers of the MoE scratch and, for M rows, their bytes (0: not needed): one table for the
   plan, the allocation and the release */
static void moe_ptrs_(gpu_moe *g, void **p[MOE_BUFS])
{
    void **ptr[MOE_BUFS] = {(void **)&g->logits, (void **)&g->route, (void **)&g->idx, (void **)&g->w,
                            (void **)&g->order, (void **)&g->lat, (void **)&g->xe, (void **)&g->ye,
                            (void **)&g->acc, (void **)&g->h, (void **)&g->g, (void **)&g->out,
                            (void **)&g->sh, (void **)&g->sg, (void **)&g->rowpos, (void **)&g->ptrs,
                            (void **)&g->jobs};
    for (int i = 0; i < MOE_BUFS; i++) p[i] = ptr[i];
}

static void moe_sizes_(const rs_model_config *c, size_t M, int grouped, size_t b[MOE_BUFS])
{
    const rs_moe_config *mo = &c->moe;
    const size_t E = (size_t)mo->n_experts, k = (size_t)mo->top_k, din = (size_t)mo->expert_in;
    const size_t I = (size_t)mo->intermediate, d = (size_t)c->hidden, f = sizeof(float), i32 = sizeof(int32_t);
    const size_t Mx = grouped ? M * k : M, G = grouped ? 1 : 0;
    const size_t bytes[MOE_BUFS] = {M * E * f, M * RS_MOE_ROUTE_SCRATCH(E, mo->n_group) * f, M * k * i32, M * k * f,
                                    M * k * i32, mo->latent > 0 ? M * din * f : 0, Mx * din * f, Mx * din * f,
                                    M * din * f, Mx * I * f, Mx * I * f, M * d * f, M * d * f, M * f,
                                    G * M * k * i32, G * 9 * E * sizeof(float *), G * 3 * E * sizeof(rs_gpu_devw_job)};
    for (int i = 0; i < MOE_BUFS; i++) b[i] = bytes[i];
}

void rs_gpu_moe_bytes(const rs_model_config *c, size_t M, int grouped, size_t *dev, size_t *host)
{
    *dev = *host = 0;
    if (!c->is_moe) return;
    size_t b[MOE_BUFS];
    moe_sizes_(c, M, grouped, b);
    for (int i = 0; i < MOE_BUFS; i++) *dev += b[i];
    const size_t E = (size_t)c->moe.n_experts, k = (size_t)c->moe.top_k;
    *host = 2 * M * k * sizeof(int32_t) + (E + 1) * sizeof(int32_t) + (size_t)c->n_layers * M * k * sizeof(int32_t);
    if (grouped)
        *host += M * k * sizeof(int32_t) + M * sizeof(int32_t) + 9 * E * sizeof(float *) +
                 3 * E * sizeof(rs_gpu_devw_job) + 9 * E * sizeof(int) + 2 * E * sizeof(cublasOperation_t);
}

int rs_gpu_moe_may_group(const gpu_impl *im)
{
    const char *v = getenv("RS_GPU_MOE");
    return !im->twin && !(v && !strcmp(v, "loop"));
}

/* the first MoE layer's first expert's up matrix: its description when made on the GPU */
static const rs_model_matrix *expert_desc_(const rs_model *m)
{
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const rs_layer_weights *w = &m->w.layers[l];
        if (!(m->cfg.mlp_is_moe || m->cfg.layer_kind[l] == RS_LAYER_MOE) || !w->moe.up) continue;
        for (int i = 0; i < m->n_dev_mats; i++)
            if (m->dev_mats[i].view == w->moe.up[0]) return &m->dev_mats[i];
        return NULL;
    }
    return NULL;
}

size_t rs_gpu_moe_deq_floats(const rs_model *m, const gpu_impl *im)
{
    const rs_model_config *c = &m->cfg;
    if (!c->is_moe || !m->weights_on_device || !rs_gpu_moe_may_group(im)) return 0;
    const rs_model_matrix *x = expert_desc_(m);
    if (!x || x->fmt == RS_WFMT_DENSE) return 0;
    const size_t per = (size_t)c->moe.intermediate * (size_t)c->moe.expert_in; /* up, gate and down alike */
    return std::min((size_t)c->moe.n_experts, std::max((size_t)1, MOE_DEQ_CAP / per)) * per;
}

/* grouped iff allowed and every expert matrix runs SGEMM (no bf16x3 copy, the method SGEMM or bf16x3) */
static int grouped_(const rs_scorer *sc, const gpu_impl *im)
{
    const rs_model *m = sc->m;
    const rs_gpu_gemm_state *gs = &im->gemm;
    if (!rs_gpu_moe_may_group(im) || (gs->method != RSG_GEMM_SGEMM && gs->method != RSG_GEMM_BF16X3)) return 0;
    const int swiglu = m->cfg.moe.activation == RS_ACT_SILU;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const rs_layer_weights *w = &m->w.layers[l];
        if (!(m->cfg.mlp_is_moe || m->cfg.layer_kind[l] == RS_LAYER_MOE)) continue;
        for (int e = 0; e < m->cfg.moe.n_experts; e++) {
            const float *v[3] = {w->moe.up[e], w->moe.down[e], swiglu ? w->moe.gate[e] : NULL};
            for (int i = 0; i < 3; i++) {
                if (!v[i]) continue;
                const rs_gpu_wmat *x = rs_gpu_wmat_find(im, RS_GPU_W(im, v[i]));
                if (gs->method == RSG_GEMM_BF16X3 && (!x || x->bf)) return 0;
                if (gs->dev_mode && !x) return 0;
            }
        }
    }
    return 1;
}

rs_status rs_gpu_moe_alloc(const rs_scorer *sc, gpu_impl *im)
{
    const rs_model_config *c = &sc->m->cfg;
    if (!c->is_moe) return RS_OK;
    gpu_moe *g = &im->moe;
    const size_t M = (size_t)im->RR * im->C, E = (size_t)c->moe.n_experts, k = (size_t)c->moe.top_k;
    void **p[MOE_BUFS];
    size_t b[MOE_BUFS];
    /* the plan sized for grouping whenever allowed: the choice below can only shrink what is used */
    g->grouped = grouped_(sc, im);
    moe_ptrs_(g, p);
    moe_sizes_(c, M, rs_gpu_moe_may_group(im), b);
    for (int i = 0; i < MOE_BUFS; i++) {
        if (b[i] == 0) continue;
        const cudaError_t e = cudaMalloc(p[i], b[i]);
        if (e != cudaSuccess)
            return rs_error_set(RS_E_CUDA, "cudaMalloc of the MoE scratch (%.3f GiB): %s", (double)b[i] / 1073741824.0,
                                cudaGetErrorString(e));
        im->device_bytes += b[i];
    }
    RS_CUDA_TRY(cudaMallocHost((void **)&g->h_idx, M * k * sizeof(int32_t)), "cudaMallocHost (the MoE routes)");
    RS_CUDA_TRY(cudaMallocHost((void **)&g->h_order, M * k * sizeof(int32_t)), "cudaMallocHost (the MoE order)");
    g->count = (int32_t *)calloc(E + 1, sizeof(int32_t));
    g->routes = (int32_t *)calloc((size_t)c->n_layers * M * k, sizeof(int32_t));
    g->diff = (int64_t *)calloc((size_t)im->RR * (size_t)c->n_layers * 2, sizeof(int64_t));
    if (!g->count || !g->routes || !g->diff) return rs_error_set(RS_E_NOMEM, "out of memory (the MoE routes)");
    if (!g->grouped) return RS_OK;
    RS_CUDA_TRY(cudaMallocHost((void **)&g->h_rowpos, M * k * sizeof(int32_t)), "cudaMallocHost (the MoE row order)");
    RS_CUDA_TRY(cudaMallocHost((void **)&g->h_ptrs, 9 * E * sizeof(float *)), "cudaMallocHost (the MoE GEMM pointers)");
    RS_CUDA_TRY(cudaMallocHost((void **)&g->h_jobs, 3 * E * sizeof(rs_gpu_devw_job)), "cudaMallocHost (the MoE decodes)");
    g->h_cur = (int32_t *)malloc(M * sizeof(int32_t));
    g->h_dims = (int *)malloc(6 * E * sizeof(int));
    g->h_ops = (cublasOperation_t *)malloc(2 * E * sizeof(cublasOperation_t));
    g->h_ab = (float *)malloc(2 * E * sizeof(float));
    g->h_gs = (int *)malloc(E * sizeof(int));
    if (!g->h_cur || !g->h_dims || !g->h_ops || !g->h_ab || !g->h_gs) return rs_error_set(RS_E_NOMEM, "out of memory (the MoE GEMMs)");
    for (size_t e = 0; e < E; e++) {
        g->h_ops[e] = CUBLAS_OP_T;     /* W [N][K] row-major is column-major K x N: op T */
        g->h_ops[E + e] = CUBLAS_OP_N; /* X rows [n][K]: column-major K x n */
        g->h_ab[e] = 1.0f;
        g->h_ab[E + e] = 0.0f;
        g->h_gs[e] = 1;
    }
    return RS_OK;
}

void rs_gpu_moe_free(gpu_impl *im)
{
    gpu_moe *g = &im->moe;
    void **p[MOE_BUFS];
    moe_ptrs_(g, p);
    for (int i = 0; i < MOE_BUFS; i++) cudaFree(*p[i]);
    cudaFreeHost(g->h_idx);
    cudaFreeHost(g->h_order);
    cudaFreeHost(g->h_rowpos);
    cudaFreeHost(g->h_ptrs);
    cudaFreeHost(g->h_jobs);
    free(g->h_cur);
    free(g->h_dims);
    free(g->h_ops);
    free(g->h_ab);
    free(g->h_gs);
    free(g->count);
    free(g->routes);
    free(g->diff);
    memset(g, 0, sizeof *g);
}

/* ---- the FFN ----------------------------------------------------------------------------------- */

/* counting sort of the entries (row * k + slot) of rows [r0, r1) by expert into h_order[r0 * k ..]:
   count[e] .. count[e+1] (offsets from r0 * k) are expert e's, rows ascending (rs_moe.c group_by_expert_) */
static void group_by_expert_(gpu_moe *g, size_t r0, size_t r1, size_t E, size_t k)
{
    int32_t *cnt = g->count, *order = g->h_order + r0 * k;
    memset(cnt, 0, (E + 1) * sizeof *cnt);
    for (size_t i = r0 * k; i < r1 * k; i++) cnt[g->h_idx[i] + 1]++;
    for (size_t e = 0; e < E; e++) cnt[e + 1] += cnt[e];
    for (size_t i = r0 * k; i < r1 * k; i++) order[cnt[g->h_idx[i]]++] = (int32_t)i;
    for (size_t e = E; e > 0; e--) cnt[e] = cnt[e - 1];
    cnt[0] = 0;
}

/* each batch stream's runs against its reference: positions and experts routed otherwise (rs_moe.c
   count_route_diff_), added to the stream's counts */
static void count_route_diff_(gpu_impl *im, int l, size_t n, size_t k, int L)
{
    gpu_moe *g = &im->moe;
    for (size_t j = 0; j < im->b_ns; j++) {
        const int32_t *ref = g->h_idx + j * (size_t)im->RS * n * k;
        for (int r = 1; r < im->RS; r++) {
            int64_t *d = g->diff + (((im->b_s0 + j) * (size_t)im->RS + (size_t)r) * (size_t)L + (size_t)l) * 2;
            for (size_t t = 0; t < n; t++) {
                const int x = rs_moe_route_diff(ref + ((size_t)r * n + t) * k, ref + t * k, (int)k);
                d[0] += x > 0;
                d[1] += x;
            }
        }
    }
}

/* the routed experts of rows [r0, r1): acc[row] = sum over the row's experts, experts in index order */
static rs_status experts_(const rs_model *m, gpu_impl *im, int l, size_t r0, size_t r1, const float *xin)
{
    const rs_moe_config *mo = &m->cfg.moe;
    const rs_layer_weights *w = &m->w.layers[l];
    gpu_moe *g = &im->moe;
    const size_t E = (size_t)mo->n_experts, k = (size_t)mo->top_k, din = (size_t)mo->expert_in;
    const size_t I = (size_t)mo->intermediate;
    const int swiglu = mo->activation == RS_ACT_SILU;
    group_by_expert_(g, r0, r1, E, k);
    RS_CUDA_TRY(cudaMemcpyAsync(g->order + r0 * k, g->h_order + r0 * k, (r1 - r0) * k * sizeof(int32_t),
                                cudaMemcpyHostToDevice, im->s),
                "uploading the MoE order");
    const unsigned tw = threads_of_(din);
    for (size_t e = 0; e < E; e++) {
        const int32_t b = g->count[e], n = g->count[e + 1] - b;
        if (n == 0) continue;
        const int32_t *ord = g->order + r0 * k + b;
        gather_k_<<<(unsigned)n, tw, 0, im->s>>>((int)din, ord, (int)k, xin, g->xe);
        RS_TRY(rs_cuda_launch_status("MoE gather"));
        const float *act = g->h;
        RS_TRY(rs_gpu_linear_rows(im, (size_t)n, I, din, g->xe, din, RS_GPU_W(im, w->moe.up[e]), 0.0f, g->h, I));
        if (swiglu) {
            RS_TRY(rs_gpu_linear_rows(im, (size_t)n, I, din, g->xe, din, RS_GPU_W(im, w->moe.gate[e]), 0.0f, g->g, I));
            RS_TRY(rsg_swiglu(n, (int)I, g->g, I, g->h, I, im->s));
            act = g->g;
        } else {
            RS_TRY(rsg_relu2(n, (int)I, g->h, I, im->s));
        }
        RS_TRY(rs_gpu_linear_rows(im, (size_t)n, din, I, act, I, RS_GPU_W(im, w->moe.down[e]), 0.0f, g->ye, din));
        scatter_add_k_<<<(unsigned)n, tw, 0, im->s>>>((int)din, ord, (int)k, g->w, g->ye, g->acc);
        RS_TRY(rs_cuda_launch_status("MoE weighted add"));
    }
    return RS_OK;
}

/* ---- grouped experts --------------------------------------------------------------------------- */

/* one matrix kind (0 up, 1 gate, 2 down) of every expert with entries: Y[p] = X[p] W_e^T for the entries
   p in [count[e], count[e+1]), X [M k][K], Y [M k][N]; quantized matrices decoded a batch at a time */
static rs_status grouped_gemms_(gpu_impl *im, int kind, const float *const *views, size_t E, size_t N, size_t K,
                                const float *X, float *Y)
{
    gpu_moe *g = &im->moe;
    const rs_gpu_gemm_state *gs = &im->gemm;
    const float **A = g->h_ptrs + (size_t)kind * 3 * E, **B = A + E, **C = B + E;
    const float **dA = g->ptrs + (size_t)kind * 3 * E;
    rs_gpu_devw_job *jobs = g->h_jobs + (size_t)kind * E, *djobs = g->jobs + (size_t)kind * E;
    int *m_ = g->h_dims, *n_ = m_ + E, *k_ = n_ + E, *lda = k_ + E, *ldb = lda + E, *ldc = ldb + E;
    const size_t per = N * K, cap = gs->deq_floats / (per ? per : 1);
    /* the batches: [first, first + count) of the hit list, and the jobs they decode */
    enum { MAXB = 4096 };
    int bstart[MAXB + 1], bjobs[MAXB + 1], nb = 0, nh = 0, nj = 0, inb = 0;
    bstart[0] = bjobs[0] = 0;
    for (size_t e = 0; e < E; e++) {
        const int32_t c0 = g->count[e], rows = g->count[e + 1] - c0;
        if (rows == 0) continue;
        const float *W = RS_GPU_W(im, views[e]);
        const rs_gpu_wmat *x = rs_gpu_wmat_find(im, W); /* NULL under plain SGEMM: no table, W as uploaded */
        RS_CHECK(!x || (x->rows == N && x->cols == K), RS_E_STATE, "MoE: expert %zu's matrix is not %zu x %zu", e, N, K);
        RS_CHECK(x || !gs->dev_mode, RS_E_STATE, "MoE: expert %zu's matrix was not made on the GPU", e);
        if (x && x->dev && !x->f32) { /* quantized, made on the GPU: decoded into the batch's scratch */
            RS_CHECK(cap > 0, RS_E_STATE, "MoE: no decode scratch for the grouped expert GEMMs");
            if ((size_t)inb == cap) { /* close the batch */
                RS_CHECK(nb < MAXB, RS_E_STATE, "MoE: more than %d expert batches", MAXB);
                bstart[++nb] = nh;
                bjobs[nb] = nj;
                inb = 0;
            }
            float *out = gs->deq + (size_t)inb++ * per;
            jobs[nj++] = rs_gpu_devw_job_of(x, out);
            W = out;
        } else if (x && x->dev) {
            W = x->f32;
        }
        A[nh] = W;
        B[nh] = X + (size_t)c0 * K;
        C[nh] = Y + (size_t)c0 * N;
        m_[nh] = (int)N;
        n_[nh] = rows;
        k_[nh] = (int)K;
        lda[nh] = (int)K;
        ldb[nh] = (int)K;
        ldc[nh] = (int)N;
        nh++;
    }
    bstart[++nb] = nh;
    bjobs[nb] = nj;
    if (nh == 0) return RS_OK;
    RS_CUDA_TRY(cudaMemcpyAsync(dA, A, 3 * E * sizeof(float *), cudaMemcpyHostToDevice, im->s), "uploading the MoE GEMMs");
    if (nj) RS_CUDA_TRY(cudaMemcpyAsync(djobs, jobs, (size_t)nj * sizeof *jobs, cudaMemcpyHostToDevice, im->s),
                        "uploading the MoE decodes");
    cublasSetMathMode(im->blas, CUBLAS_DEFAULT_MATH); /* true fp32: TF32 is opt-in */
    for (int b = 0; b < nb; b++) {
        const int h0 = bstart[b], hn = bstart[b + 1] - h0;
        if (hn == 0) continue;
        const int cols = bjobs[b + 1] - bjobs[b];
        if (cols) RS_TRY(rs_gpu_devw_decode_jobs(im, djobs + bjobs[b], cols, per));
        const cublasStatus_t st = cublasSgemmGroupedBatched(
            im->blas, g->h_ops + h0, g->h_ops + E + h0,
            m_ + h0, n_ + h0, k_ + h0, g->h_ab + h0, dA + h0, lda + h0, dA + E + h0, ldb + h0, g->h_ab + E + h0,
            (float *const *)(dA + 2 * E) + h0, ldc + h0, hn, g->h_gs + h0);
        if (st != CUBLAS_STATUS_SUCCESS)
            return rs_error_set(RS_E_CUDA, "cublasSgemmGroupedBatched (%d experts, N %zu, K %zu): status %d", hn, N, K,
                                (int)st);
    }
    return RS_OK;
}

/* every row's entries in expert order: rowpos[r k + j] = the place in order of row r's j-th entry */
static void rows_in_expert_order_(gpu_moe *g, size_t M, size_t k)
{
    memset(g->h_cur, 0, M * sizeof *g->h_cur);
    for (size_t p = 0; p < M * k; p++) {
        const size_t r = (size_t)g->h_order[p] / k;
        g->h_rowpos[r * k + (size_t)g->h_cur[r]++] = (int32_t)p;
    }
}

/* the routed experts of all M rows, grouped (header) */
static rs_status experts_grouped_(const rs_model *m, gpu_impl *im, int l, size_t M, const float *xin)
{
    const rs_moe_config *mo = &m->cfg.moe;
    const rs_layer_weights *w = &m->w.layers[l];
    gpu_moe *g = &im->moe;
    const size_t E = (size_t)mo->n_experts, k = (size_t)mo->top_k, din = (size_t)mo->expert_in;
    const size_t I = (size_t)mo->intermediate, Mk = M * k;
    group_by_expert_(g, 0, M, E, k);
    rows_in_expert_order_(g, M, k);
    RS_CUDA_TRY(cudaMemcpyAsync(g->order, g->h_order, Mk * sizeof(int32_t), cudaMemcpyHostToDevice, im->s),
                "uploading the MoE order");
    RS_CUDA_TRY(cudaMemcpyAsync(g->rowpos, g->h_rowpos, Mk * sizeof(int32_t), cudaMemcpyHostToDevice, im->s),
                "uploading the MoE row order");
    const unsigned tw = threads_of_(din);
    gather_k_<<<(unsigned)Mk, tw, 0, im->s>>>((int)din, g->order, (int)k, xin, g->xe);
    RS_TRY(rs_cuda_launch_status("MoE gather"));
    const float *act = g->h;
    RS_TRY(grouped_gemms_(im, 0, w->moe.up, E, I, din, g->xe, g->h));
    if (mo->activation == RS_ACT_SILU) {
        RS_TRY(grouped_gemms_(im, 1, w->moe.gate, E, I, din, g->xe, g->g));
        RS_TRY(rsg_swiglu((int)Mk, (int)I, g->g, I, g->h, I, im->s));
        act = g->g;
    } else {
        RS_TRY(rsg_relu2((int)Mk, (int)I, g->h, I, im->s));
    }
    RS_TRY(grouped_gemms_(im, 2, w->moe.down, E, din, I, act, g->ye));
    combine_k_<<<(unsigned)M, tw, 0, im->s>>>((int)din, (int)k, g->rowpos, g->order, g->w, g->ye, g->acc);
    return rs_cuda_launch_status("MoE weighted sums");
}

rs_status rs_gpu_moe_ffn(const rs_scorer *sc, gpu_impl *im, int l, const float *nw, rsg_norm_weight kind, size_t n)
{
    const rs_model *m = sc->m;
    const rs_moe_config *mo = &m->cfg.moe;
    const rs_layer_weights *w = &m->w.layers[l];
    gpu_moe *g = &im->moe;
    const size_t d = (size_t)m->cfg.hidden, M = (size_t)im->G * n, E = (size_t)mo->n_experts, k = (size_t)mo->top_k;
    const size_t din = (size_t)mo->expert_in, Is = (size_t)mo->shared_intermediate;
    const int swiglu = mo->activation == RS_ACT_SILU;
    RS_TRY((im->twin ? rsg_rmsnorm_seq : rsg_rmsnorm)((int)M, (int)d, im->x, d, RS_GPU_W(im, nw), m->cfg.rms_eps, kind,
                                                      im->xn, d, im->s));
    rs_gpu_mark(im, GS_OTHER);
    RS_TRY(rs_gpu_linear(im, M, E, d, im->xn, d, RS_GPU_W(im, w->moe.router), 0.0f, g->logits, E));
    route_k_<<<(unsigned)((M + 127) / 128), 128, 0, im->s>>>(
        *mo, (int)M, g->logits, w->moe.router_bias ? RS_GPU_W(im, w->moe.router_bias) : NULL, g->idx, g->w, g->route);
    RS_TRY(rs_cuda_launch_status("MoE routing"));
    RS_CUDA_TRY(cudaMemcpyAsync(g->h_idx, g->idx, M * k * sizeof(int32_t), cudaMemcpyDeviceToHost, im->s),
                "copying the MoE routes");
    rs_gpu_mark(im, GS_MOE);
    const float *xin = im->xn;
    if (mo->latent > 0) { /* queued before the wait: the GPU projects while the host groups */
        RS_TRY(rs_gpu_linear(im, M, din, d, im->xn, d, RS_GPU_W(im, w->moe.latent_in), 0.0f, g->lat, din));
        xin = g->lat;
    }
    RS_CUDA_TRY(cudaMemsetAsync(g->acc, 0, M * din * sizeof(float), im->s), "clearing the MoE sums");
    RS_CUDA_TRY(cudaStreamSynchronize(im->s), "routing the MoE rows");
    rs_gpu_mark(im, GS_MOE);
    memcpy(g->routes + (size_t)l * M * k, g->h_idx, M * k * sizeof(int32_t));
    count_route_diff_(im, l, n, k, m->cfg.n_layers);
    im->quiet_marks++;
    rs_status st = RS_OK;
    if (im->twin) { /* the CPU scorer's GEMMs: one stream's rows at a time */
        const size_t per = M / im->b_ns;
        for (size_t j = 0; j < im->b_ns && st == RS_OK; j++) st = experts_(m, im, l, j * per, (j + 1) * per, xin);
    } else if (g->grouped) {
        st = experts_grouped_(m, im, l, M, xin);
    } else {
        st = experts_(m, im, l, 0, M, xin);
    }
    im->quiet_marks--;
    RS_TRY(st);
    rs_gpu_mark(im, GS_GEMM);
    if (mo->latent > 0) RS_TRY(rs_gpu_linear(im, M, d, din, g->acc, din, RS_GPU_W(im, w->moe.latent_out), 0.0f, g->out, d));
    else RS_CUDA_TRY(cudaMemcpyAsync(g->out, g->acc, M * d * sizeof(float), cudaMemcpyDeviceToDevice, im->s),
                     "copying the MoE output");
    /* the shared expert on the block input (before any latent projection) */
    if (swiglu) {
        RS_TRY(rs_gpu_linear(im, M, Is, d, im->xn, d, RS_GPU_W(im, w->moe.shared_gate), 0.0f, im->proj, Is));
        RS_TRY(rs_gpu_linear(im, M, Is, d, im->xn, d, RS_GPU_W(im, w->moe.shared_up), 0.0f, im->proj2, Is));
        RS_TRY(rsg_swiglu((int)M, (int)Is, im->proj, Is, im->proj2, Is, im->s));
    } else {
        RS_TRY(rs_gpu_linear(im, M, Is, d, im->xn, d, RS_GPU_W(im, w->moe.shared_up), 0.0f, im->proj, Is));
        RS_TRY(rsg_relu2((int)M, (int)Is, im->proj, Is, im->s));
    }
    rs_gpu_mark(im, GS_OTHER);
    RS_TRY(rs_gpu_linear(im, M, d, Is, im->proj, Is, RS_GPU_W(im, w->moe.shared_down), 0.0f, g->sh, d));
    if (mo->shared_gate) RS_TRY(rs_gpu_linear(im, M, 1, d, im->xn, d, RS_GPU_W(im, w->moe.shared_scale), 0.0f, g->sg, 1));
    sum_k_<<<(unsigned)M, threads_of_(d), 0, im->s>>>((int)d, im->x, g->out, g->sh, mo->shared_gate ? g->sg : NULL);
    RS_TRY(rs_cuda_launch_status("MoE sum"));
    rs_gpu_mark(im, GS_MOE);
    return RS_OK;
}
