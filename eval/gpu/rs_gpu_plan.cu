/* rs_gpu_plan.cu — the GPU scorer's memory plan (every device byte counted before anything is
 * allocated; a plan that does not fit is refused naming the largest consumer) and the allocation
 * and weight upload that follow it. */
#include "dense/rs_dense_ops.h"
#include "rs_gpu_scorer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_check.h"
#include "rs_cuda_common.cuh" /* RS_CUDA_TRY */

#define MAXZ(a, b) ((a) > (b) ? (a) : (b))

/* ---- the memory plan ------------------------------------------------------------------------ */

static const char *const mp_names_[MP_N] = {"weights", "KV caches of every run and book in flight",
                                            "SSM and conv states of every run and book in flight",
                                            "chunk activations of every run and book in flight",
                                            "logits of a chunk of every run and book in flight"};

void rs_gpu_plan_free(rs_gpu_plan *p)
{
    free(p->pol);
    free(p->win);
    free(p->seed);
}

rs_status rs_gpu_plan_make(const rs_scorer *sc, gpu_impl *im, rs_gpu_plan *p)
{
    const rs_model_config *c = &sc->m->cfg;
    const size_t RR = (size_t)im->RR, RS = (size_t)im->RS, C = im->C, M = RR * C, d = (size_t)c->hidden,
                 V = (size_t)c->vocab, S = im->S;
    memset(p, 0, sizeof *p);
    p->pol = (rs_policy *)calloc(RR, sizeof *p->pol);
    p->win = (size_t *)calloc(RR, sizeof *p->win);
    p->seed = (uint64_t *)calloc(RR, sizeof *p->seed);
    if (!p->pol || !p->win || !p->seed) return rs_error_set(RS_E_NOMEM, "out of memory");
    const rs_run_spec ref = rs_run_spec_reference();
    for (size_t s = 0; s < S; s++) /* every stream: the reference, then the runs */
        for (size_t g = 0; g < RS; g++) {
            const rs_run_spec *run = g == 0 ? &ref : &sc->cfg.runs[g - 1];
            p->pol[s * RS + g] = run->policy;
            p->win[s * RS + g] = run->window;
            p->seed[s * RS + g] = run->seed;
        }
    /* scratch widths: the CPU runner's (rs_fwd_widths_of) */
    const rs_fwd_widths w = rs_fwd_widths_of(c);
    const size_t P1 = w.P1, P2 = w.P2, cw = w.cw, hmax = w.hmax, sv = w.sv, so = w.so, rot = w.rot;
    size_t state = 0; /* conv states [RR][conv_dim][K-1] of every SSM layer, then the scans' bytes */
    if (c->n_gdn > 0)
        state += (size_t)c->n_gdn * RR * (size_t)c->gdn.conv_dim * (size_t)(c->gdn.conv_kernel - 1) * sizeof(float);
    if (c->n_mamba > 0)
        state += (size_t)c->n_mamba * RR * (size_t)c->mamba.conv_dim * (size_t)(c->mamba.conv_kernel - 1) *
                 sizeof(float);
    if (c->n_attn > 0) im->kv_layer = RR * (size_t)c->attn.n_kv_heads * im->cap * (size_t)c->attn.head_dim;
    im->P1 = P1, im->P2 = P2, im->cw = cw, im->hmax = hmax, im->sv = sv, im->so = so;
    /* the state engine: one scan object per SSM kind */
    for (int kind = 0; kind < 2; kind++) {
        const rs_layer_kind lk = kind == 0 ? RS_LAYER_GDN : RS_LAYER_MAMBA2;
        rs_cuda_scan_config *s = &p->scfg[kind];
        int nl = 0;
        for (int l = 0; l < c->n_layers; l++)
            if (c->layer_kind[l] == lk) p->layer_ids[kind][nl++] = (uint32_t)l;
        if (nl == 0) continue;
        p->has_scan[kind] = 1;
        s->kind = kind == 0 ? RS_SSM_GDN : RS_SSM_MAMBA2;
        s->n_runs = (int)RR;
        s->n_layers = nl;
        s->layer_ids = p->layer_ids[kind];
        if (kind == 0) {
            s->heads = c->gdn.n_v_heads, s->key_heads = c->gdn.n_k_heads;
            s->d_v = c->gdn.v_head_dim, s->d_k = c->gdn.k_head_dim;
        } else {
            s->heads = c->mamba.n_heads, s->key_heads = c->mamba.n_groups;
            s->d_v = c->mamba.head_dim, s->d_k = c->mamba.d_state;
        }
        s->policies = p->pol;
        s->windows = p->win;
        s->seeds = p->seed;
        s->max_chunk = (int)C;
        const size_t b = rs_cuda_scan_bytes(s);
        if (b == 0) /* invalid: let create say why */
            RS_TRY(rs_cuda_scan_create(s, kind == 0 ? &im->scan_gdn : &im->scan_mamba));
        state += b;
    }
    /* twin (docs/evaluator.md "The twin compute mode"): the runs whose recurrence is the engine's, one
       fp32 state per (layer, stream, run, head) beside the scan's; the host logits count as none */
    im->nt = 0;
    if (im->twin)
        for (size_t r = 0; r < RS; r++)
            if (p->pol[r].mode == RS_POLICY_CONV && p->pol[r].hp.kind == RS_FMT_FP32) im->nt++;
    for (int kind = 0; kind < 2 && im->twin; kind++)
        if (p->has_scan[kind]) {
            const rs_cuda_scan_config *s = &p->scfg[kind];
            im->twin_layer[kind] = S * (size_t)im->nt * (size_t)s->heads * (size_t)s->d_v * (size_t)s->d_k;
            im->n_twin_layers[kind] = s->n_layers;
            state += (size_t)s->n_layers * im->twin_layer[kind] * sizeof(float);
        }
    /* tf32x3 (rs_gpu_weights.h): the TF32 low parts of fp32-only weights count as weights, X's split
       scratch as activations; 0 for the other GEMM methods */
    size_t split_w = 0, split_x = 0;
    RS_TRY(rs_gpu_gemm_plan(sc, im, &split_w, &split_x));
    p->bytes[MP_WEIGHTS] = sc->m->w.slab_floats * sizeof(float) + split_w;
    p->bytes[MP_KV] = (size_t)c->n_attn * 2 * im->kv_layer * sizeof(float);
    p->bytes[MP_STATE] = state;
    p->bytes[MP_ACT] = (M * (2 * d + P1 + P2 + cw + 4 * hmax + sv + so) + rot / 2 + 4 * S * C) * sizeof(float) +
                       S * (3 * (RS - 1) + 1) * C * sizeof(double) + S * RS * C + S * C * sizeof(int32_t) +
                       rsg_score_work_bytes((int)RS, (int)C) + split_x;
    size_t moe_dev = 0, moe_host = 0;
    rs_gpu_moe_bytes(c, M, rs_gpu_moe_may_group(im), &moe_dev, &moe_host);
    p->bytes[MP_ACT] += moe_dev;
    p->bytes[MP_LOGITS] = M * V * sizeof(float);
    for (int i = 0; i < MP_N; i++) p->total += p->bytes[i];
    size_t free_b = 0, total_b = 0;
    if (im->plan_only) return RS_OK;
    RS_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const size_t margin = (size_t)512 << 20; /* cuBLAS workspace, the CUDA context's growth */
    if (p->total + margin > free_b) {
        int big = 0;
        for (int i = 1; i < MP_N; i++)
            if (p->bytes[i] > p->bytes[big]) big = i;
        char tab[512];
        size_t o = 0;
        for (int i = 0; i < MP_N && o < sizeof tab; i++)
            o += (size_t)snprintf(tab + o, sizeof tab - o, "%s%s %.2f GiB", i ? ", " : "", mp_names_[i],
                                  (double)p->bytes[i] / 1073741824.0);
        return rs_error_set(RS_E_CUDA,
                            "the GPU evaluation needs %.2f GiB (+0.5 GiB margin) but %s has %.2f GiB free; the "
                            "largest consumer is %s (%.2f GiB): %s. Fewer runs, fewer books in flight (--batch), a "
                            "shorter --tokens or a smaller --chunk reduce it",
                            (double)p->total / 1073741824.0, im->info.name, (double)free_b / 1073741824.0,
                            mp_names_[big], (double)p->bytes[big] / 1073741824.0, tab);
    }
    return RS_OK;
}

/* ---- allocation ------------------------------------------------------------------------------ */

static rs_status dalloc_(gpu_impl *im, void **p, size_t bytes, const char *what)
{
    *p = NULL;
    if (bytes == 0) bytes = 16;
    const cudaError_t e = cudaMalloc(p, bytes);
    if (e != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "cudaMalloc of %s (%.3f GiB, %.3f GiB allocated before): %s", what,
                            (double)bytes / 1073741824.0, (double)im->device_bytes / 1073741824.0,
                            cudaGetErrorString(e));
    im->device_bytes += bytes;
    return RS_OK;
}
#define DALLOC(ptr, bytes, what) RS_TRY(dalloc_(im, (void **)&(ptr), (bytes), (what)))

rs_status rs_gpu_alloc(const rs_scorer *sc, gpu_impl *im, rs_gpu_plan *p)
{
    const rs_model *m = sc->m;
    const rs_model_config *c = &m->cfg;
    const size_t RR = (size_t)im->RR, C = im->C, M = RR * C, d = (size_t)c->hidden, V = (size_t)c->vocab;
    const size_t R = (size_t)im->RS - 1, S = im->S;
    RS_CHECK(m->w.slab || m->w.slab_floats == 0, RS_E_INVAL,
             "%s: a shapes-only model (rs_model_init_shapes) is for memory plans; no scorer runs it", c->model_type);
    DALLOC(im->d_slab, m->w.slab_floats * sizeof(float), "the weights"); /* all, or all but GPU-made matrices */
    im->h_slab = m->w.slab;
    RS_CUDA_TRY(cudaMemcpy(im->d_slab, m->w.slab, m->w.slab_floats * sizeof(float), cudaMemcpyHostToDevice),
                "uploading the weights");
    RS_TRY(rs_gpu_gemm_alloc(sc, im)); /* the split-TF32 GEMMs' weights and scratch */
    if (c->n_attn > 0) DALLOC(im->kv, p->bytes[MP_KV], "the KV caches");
    int ia = 0, ig = 0, imb = 0;
    for (int l = 0; l < c->n_layers; l++) {
        gpu_layer *g = &im->layers[l];
        g->kind = (int)c->layer_kind[l];
        g->ssm = g->attn = -1;
        if (g->kind == RS_LAYER_ATTENTION) g->attn = ia++;
        if (g->kind == RS_LAYER_GDN || g->kind == RS_LAYER_MAMBA2) {
            const int gdn = g->kind == RS_LAYER_GDN;
            g->ssm = gdn ? ig++ : imb++;
            const size_t cd = gdn ? (size_t)c->gdn.conv_dim : (size_t)c->mamba.conv_dim;
            const size_t K = gdn ? (size_t)c->gdn.conv_kernel : (size_t)c->mamba.conv_kernel;
            DALLOC(g->conv_state, RR * cd * (K - 1) * sizeof(float), "the conv states");
        }
    }
    if (p->has_scan[0]) RS_TRY(rs_cuda_scan_create(&p->scfg[0], &im->scan_gdn));
    if (p->has_scan[1]) RS_TRY(rs_cuda_scan_create(&p->scfg[1], &im->scan_mamba));
    if (im->twin) {
        int *runs = (int *)malloc((size_t)im->RS * sizeof(int)), n = 0;
        if (!runs) return rs_error_set(RS_E_NOMEM, "out of memory");
        for (int r = 0; r < im->RS; r++)
            if (p->pol[r].mode == RS_POLICY_CONV && p->pol[r].hp.kind == RS_FMT_FP32) runs[n++] = r;
        rs_status st = dalloc_(im, (void **)&im->d_twin_runs, (size_t)n * sizeof(int), "the twin runs");
        if (st == RS_OK && n &&
            cudaMemcpy(im->d_twin_runs, runs, (size_t)n * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess)
            st = rs_error_set(RS_E_CUDA, "uploading the twin runs");
        free(runs);
        RS_TRY(st);
        for (int k = 0; k < 2; k++)
            if (p->has_scan[k])
                DALLOC(im->twin_state[k], (size_t)p->scfg[k].n_layers * im->twin_layer[k] * sizeof(float),
                       "the twin recurrence states");
        RS_CUDA_TRY(cudaMallocHost((void **)&im->h_logits, M * V * sizeof(float)), "cudaMallocHost (the twin logits)");
        im->h_lp = (double *)malloc(2 * V * sizeof(double));
        if (!im->h_lp) return rs_error_set(RS_E_NOMEM, "out of memory");
    }
    DALLOC(im->x, M * d * sizeof(float), "the residual stream");
    DALLOC(im->xn, M * d * sizeof(float), "the normed stream");
    DALLOC(im->proj, M * im->P1 * sizeof(float), "the projection scratch");
    DALLOC(im->proj2, M * im->P2 * sizeof(float), "the second projection scratch");
    DALLOC(im->conv, M * im->cw * sizeof(float), "the conv / attention output scratch");
    DALLOC(im->small, 4 * M * im->hmax * sizeof(float), "the per-head scalars");
    DALLOC(im->ssm_v, M * im->sv * sizeof(float), "the Mamba-2 inputs");
    DALLOC(im->ssm_o, M * im->so * sizeof(float), "the SSM outputs");
    DALLOC(im->logits, M * V * sizeof(float), "the logits of a chunk");
    RS_TRY(rs_gpu_moe_alloc(sc, im));
    DALLOC(im->d_tok, 2 * S * C * sizeof(int32_t), "the tokens");
    im->d_tgt = im->d_tok + S * C;
    DALLOC(im->d_res, S * (3 * R + 1) * C * sizeof(double), "the scores");
    DALLOC(im->d_flags, S * (R + 1) * C, "the score flags");
    DALLOC(im->d_top, S * C * sizeof(int32_t), "the reference top-1");
    DALLOC(im->score_work, rsg_score_work_bytes(im->RS, (int)C), "the scoring scratch");
    if (c->n_attn > 0 && c->attn.use_rope && c->attn.rotary_dim > 0) {
        const size_t half = (size_t)c->attn.rotary_dim / 2;
        float *h = (float *)malloc(half * sizeof(float));
        if (!h) return rs_error_set(RS_E_NOMEM, "out of memory");
        rs_rope_inv_freq(c->attn.rope_theta, (size_t)c->attn.rotary_dim, h);
        rs_status st = dalloc_(im, (void **)&im->inv_freq, half * sizeof(float), "the RoPE frequencies");
        if (st == RS_OK && cudaMemcpy(im->inv_freq, h, half * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
            st = rs_error_set(RS_E_CUDA, "uploading the RoPE frequencies");
        free(h);
        RS_TRY(st);
    }
    RS_CUDA_TRY(cudaMallocHost((void **)&im->h_tok, 2 * S * C * sizeof(int32_t)), "cudaMallocHost");
    RS_CUDA_TRY(cudaMallocHost((void **)&im->h_res, S * (3 * R + 1) * C * sizeof(double)), "cudaMallocHost");
    RS_CUDA_TRY(cudaMallocHost((void **)&im->h_flags, S * (R + 1) * C), "cudaMallocHost");
    RS_CUDA_TRY(cudaMallocHost((void **)&im->h_top, S * C * sizeof(int32_t)), "cudaMallocHost");
    memset(im->h_tok, 0, 2 * S * C * sizeof(int32_t)); /* idle streams' tokens are uploaded too */
    size_t nf = 0;
    for (int k = 0; k < 2; k++)
        if (p->has_scan[k]) nf = MAXZ(nf, RR * (size_t)p->scfg[k].n_layers * (size_t)p->scfg[k].heads);
    im->nf = (int64_t *)calloc(nf + 1, sizeof(int64_t));
    if (!im->nf) return rs_error_set(RS_E_NOMEM, "out of memory");
    for (int i = 0; i < RS_GPU_MAX_MARKS; i++) RS_CUDA_TRY(cudaEventCreate(&im->ev[i]), "cudaEventCreate");
    return RS_OK;
}

