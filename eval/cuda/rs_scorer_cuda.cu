/* rs_scorer_cuda.cu — the GPU scorer (rs_scorer_cuda.h): the memory plan, allocation and weight
 * upload at create, then per step: tokens up, the forward of every run (rs_gpu_forward.cu),
 * scoring on the device (rsg_score), the [R][n] results down. */
#include "replayssm/evalcuda/rs_scorer_cuda.h"
#include "rs_gpu_ops.h"
#include "rs_gpu_scorer_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rs_check.h"


static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static rs_status cuda_err_(cudaError_t e, const char *what)
{
    return rs_error_set(RS_E_CUDA, "%s: %s", what, cudaGetErrorString(e));
}
#define CTRY(x, what)                                                                             \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) return cuda_err_(e_, what);                                        \
    } while (0)

/* ---- the ops ---------------------------------------------------------------------------------- */

static rs_status reset_(rs_scorer *sc)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    const rs_model_config *c = &sc->m->cfg;
    for (int l = 0; l < c->n_layers; l++) {
        const gpu_layer *g = &im->layers[l];
        if (!g->conv_state) continue;
        const int gdn = g->kind == RS_LAYER_GDN;
        const size_t cd = gdn ? (size_t)c->gdn.conv_dim : (size_t)c->mamba.conv_dim;
        const size_t K = gdn ? (size_t)c->gdn.conv_kernel : (size_t)c->mamba.conv_kernel;
        CTRY(cudaMemsetAsync(g->conv_state, 0, (size_t)im->RR * cd * (K - 1) * sizeof(float), im->s), "reset");
    }
    if (im->scan_gdn) RS_TRY(rs_cuda_scan_reset(im->scan_gdn, im->s));
    if (im->scan_mamba) RS_TRY(rs_cuda_scan_reset(im->scan_mamba, im->s));
    /* the KV caches need no clearing: a query never reads past its own position */
    im->pos = 0;
    im->last_n = 0;
    CTRY(cudaStreamSynchronize(im->s), "reset");
    return RS_OK;
}

static void stage_times_(gpu_impl *im)
{
    for (int i = 1; i < im->n_marks; i++) {
        float ms = 0.0f;
        if (cudaEventElapsedTime(&ms, im->ev[i - 1], im->ev[i]) == cudaSuccess) im->stage_s[im->ev_stage[i]] += 1e-3 * ms;
    }
    im->n_marks = 0;
}

static rs_status step_(rs_scorer *sc, const int32_t *tokens, const int32_t *targets, size_t n, const rs_scorer_out *out)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    RS_CHECK(tokens && targets && out && n >= 1 && n <= im->C, RS_E_INVAL,
             "scorer step: %zu positions (1..%zu) or NULL arguments", n, im->C);
    const int V = sc->m->cfg.vocab;
    const size_t R = (size_t)im->RR - 1, C = im->C;
    for (size_t t = 0; t < n; t++) {
        RS_CHECK(tokens[t] >= 0 && tokens[t] < V, RS_E_INVAL, "token %d at chunk offset %zu outside [0, %d)",
                 (int)tokens[t], t, V);
        RS_CHECK(targets[t] >= 0 && targets[t] < V, RS_E_INVAL, "target %d at chunk offset %zu outside [0, %d)",
                 (int)targets[t], t, V);
    }
    RS_CHECK(im->pos + n <= im->cap, RS_E_SHAPE, "position %zu exceeds the planned %zu (max_tokens)", im->pos + n,
             im->cap);
    const double t0 = now_();
    memcpy(im->h_tok, tokens, n * sizeof(int32_t));
    memcpy(im->h_tok + C, targets, n * sizeof(int32_t));
    im->n_marks = 0;
    rs_gpu_mark(im, GS_COPY);
    CTRY(cudaMemcpyAsync(im->d_tok, im->h_tok, 2 * C * sizeof(int32_t), cudaMemcpyHostToDevice, im->s), "tokens");
    rs_gpu_mark(im, GS_COPY);
    RS_TRY(rs_gpu_forward_chunk(sc, im, n));
    double *kl = im->d_res, *nll = kl + R * C, *dp = nll + R * C, *nll_ref = dp + R * C;
    uint8_t *agree = im->d_flags, *ref_bad = agree + R * C;
    /* rsg_score writes run r's values at (r - 1) * n + t: packed with the actual n */
    RS_TRY(rsg_score(im->RR, (int)n, V, im->logits, (size_t)V, im->d_tgt, nll_ref, im->d_top, ref_bad, kl, nll, dp,
                     agree, im->score_work, im->s));
    rs_gpu_mark(im, GS_SCORE);
    CTRY(cudaMemcpyAsync(im->h_res, im->d_res, (3 * R + 1) * C * sizeof(double), cudaMemcpyDeviceToHost, im->s),
         "results");
    CTRY(cudaMemcpyAsync(im->h_flags, im->d_flags, (R + 1) * C, cudaMemcpyDeviceToHost, im->s), "results");
    CTRY(cudaMemcpyAsync(im->h_top, im->d_top, C * sizeof(int32_t), cudaMemcpyDeviceToHost, im->s), "results");
    rs_gpu_mark(im, GS_COPY);
    CTRY(cudaStreamSynchronize(im->s), "the chunk's kernels");
    stage_times_(im);
    im->pos += n;
    im->last_n = n;
    const double *hkl = im->h_res, *hnll = hkl + R * C, *hdp = hnll + R * C, *hnr = hdp + R * C;
    const uint8_t *hag = im->h_flags, *hbad = hag + R * C;
    for (size_t t = 0; t < n; t++)
        if (hbad[t]) return rs_error_set(RS_E_NONFINITE, "chunk offset %zu: the fp32 reference logits are not finite", t);
    memcpy(out->nll_ref, hnr, n * sizeof(double));
    memcpy(out->top1_ref, im->h_top, n * sizeof(int32_t));
    for (size_t r = 0; r < R; r++) {
        memcpy(out->kl[r], hkl + r * n, n * sizeof(double));
        memcpy(out->nll[r], hnll + r * n, n * sizeof(double));
        memcpy(out->dp[r], hdp + r * n, n * sizeof(double));
        memcpy(out->agree[r], hag + r * n, n);
    }
    im->st.total_s += now_() - t0;
    im->st.steps++;
    im->st.positions += n;
    return RS_OK;
}

static rs_status run_nonfinite_(const rs_scorer *sc, size_t r, rs_scorer_nonfinite *nf, const char **msg)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    RS_CHECK(r + 1 < (size_t)im->RR && nf, RS_E_INVAL, "scorer: run %zu of %d", r, im->RR - 1);
    nf->layer = nf->head = -1;
    nf->step = -1;
    im->msg[0] = '\0';
    rs_cuda_scan *scans[2] = {im->scan_gdn, im->scan_mamba};
    const rs_model_config *c = &sc->m->cfg;
    for (int k = 0; k < 2; k++) {
        if (!scans[k]) continue;
        RS_TRY(rs_cuda_scan_first_nonfinite(scans[k], im->nf, im->s));
        const int H = k == 0 ? c->gdn.n_v_heads : c->mamba.n_heads;
        int nl = 0;
        for (int l = 0; l < c->n_layers; l++)
            if (im->layers[l].kind == (k == 0 ? RS_LAYER_GDN : RS_LAYER_MAMBA2)) nl++;
        /* the earliest step over the run's layers and heads (the CPU reports its first head too) */
        for (int lo = 0; lo < nl; lo++)
            for (int h = 0; h < H; h++) {
                const int64_t s = im->nf[((r + 1) * (size_t)nl + (size_t)lo) * (size_t)H + (size_t)h];
                if (s < 0 || (nf->step >= 0 && s >= nf->step)) continue;
                int layer = -1;
                for (int l = 0, o = 0; l < c->n_layers; l++)
                    if (im->layers[l].kind == (k == 0 ? RS_LAYER_GDN : RS_LAYER_MAMBA2) && o++ == lo) layer = l;
                nf->step = s;
                nf->layer = layer;
                nf->head = h;
            }
    }
    if (nf->step >= 0) /* the CPU runner's wording (eval/model/rs_forward.c): no run index, the caller has it */
        snprintf(im->msg, sizeof im->msg,
                 "layer %d head %d: first non-finite SSM value at token %lld (the head's output there, or the state "
                 "it left for the next token)",
                 nf->layer, nf->head, (long long)nf->step);
    if (msg) *msg = im->msg;
    return RS_OK;
}

static const char *describe_(const rs_scorer *sc) { return ((const gpu_impl *)sc->impl)->describe; }

static void stats_(const rs_scorer *sc, rs_scorer_stats *out)
{
    const gpu_impl *im = (const gpu_impl *)sc->impl;
    *out = im->st;
    out->gemm_s = im->stage_s[GS_GEMM];
    out->attention_s = im->stage_s[GS_ATTN];
    out->recurrence_s = im->stage_s[GS_REC];
    out->other_s = im->stage_s[GS_OTHER];
    out->score_s = im->stage_s[GS_SCORE];
    out->copy_s = im->stage_s[GS_COPY];
    size_t fr = 0, tot = 0;
    out->peak_bytes = im->device_bytes;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot - fr > out->peak_bytes) out->peak_bytes = tot - fr;
}

static rs_status logits_(const rs_scorer *sc, long r, float *out)
{
    const gpu_impl *im = (const gpu_impl *)sc->impl;
    RS_CHECK(out && r >= -1 && r + 1 < (long)im->RR, RS_E_INVAL, "scorer logits: run %ld of %d", r, im->RR - 1);
    RS_CHECK(im->last_n > 0, RS_E_STATE, "scorer logits: no step taken yet");
    const size_t V = (size_t)sc->m->cfg.vocab, n = im->last_n;
    CTRY(cudaMemcpy(out, im->logits + (size_t)(r + 1) * n * V, n * V * sizeof(float), cudaMemcpyDeviceToHost),
         "copying logits");
    return RS_OK;
}

static void destroy_(rs_scorer *sc)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    if (im) {
        if (im->s) cudaStreamSynchronize(im->s);
        cudaFree(im->d_slab);
        cudaFree(im->kv);
        for (int l = 0; l < 256; l++) cudaFree(im->layers[l].conv_state);
        rs_cuda_scan_free(im->scan_gdn);
        rs_cuda_scan_free(im->scan_mamba);
        cudaFree(im->inv_freq);
        float *bufs[] = {im->x, im->xn, im->proj, im->proj2, im->conv, im->small, im->ssm_v, im->ssm_o, im->logits};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
        cudaFree(im->d_tok);
        cudaFree(im->d_res);
        cudaFree(im->d_flags);
        cudaFree(im->d_top);
        cudaFree(im->score_work);
        rs_gpu_gemm_free(im);
        cudaFreeHost(im->h_tok);
        cudaFreeHost(im->h_res);
        cudaFreeHost(im->h_flags);
        cudaFreeHost(im->h_top);
        for (int i = 0; i < RS_GPU_MAX_MARKS; i++)
            if (im->ev[i]) cudaEventDestroy(im->ev[i]);
        if (im->blas) cublasDestroy(im->blas);
        if (im->s) cudaStreamDestroy(im->s);
        free(im->nf);
        free(im->cfg_mem);
        free(im);
    }
    free(sc);
}

static const rs_scorer_ops gpu_ops_ = {"cuda", reset_, step_, run_nonfinite_, describe_, stats_, logits_, destroy_};

static rs_status setup_(rs_scorer *sc, gpu_impl *im, const rs_scorer_config *cfg)
{
    RS_TRY(rs_scorer_config_copy(sc, cfg, &im->cfg_mem));
    RS_TRY(rs_gpu_info_query(cfg->device, &im->info));
    CTRY(cudaSetDevice(cfg->device), "cudaSetDevice");
    CTRY(cudaStreamCreateWithFlags(&im->s, cudaStreamNonBlocking), "cudaStreamCreate");
    if (cublasCreate(&im->blas) != CUBLAS_STATUS_SUCCESS) return rs_error_set(RS_E_CUDA, "cublasCreate failed");
    cublasSetStream(im->blas, im->s);
    /* the GEMM method of the compute mode (rs_gpu_gemm.h): fp32 -> cuBLAS SGEMM, tf32x3 -> the
       split-TF32 GEMM, tf32 -> one TF32 GEMM; bf16 is refused here */
    RS_TRY(rsg_gemm_method_of(cfg->compute, &im->gemm.method));
    cublasSetMathMode(im->blas, CUBLAS_DEFAULT_MATH); /* the TF32 methods ask for it per call */
    im->RR = (int)cfg->n_runs + 1;
    im->C = cfg->chunk;
    im->cap = cfg->max_tokens;
    rs_gpu_plan p;
    rs_status st = rs_gpu_plan_make(sc, im, &p);
    if (st == RS_OK) st = rs_gpu_alloc(sc, im, &p);
    rs_gpu_plan_free(&p);
    RS_TRY(st);
    char gemm[160];
    rs_gpu_gemm_describe(im, gemm, sizeof gemm);
    snprintf(im->describe, sizeof im->describe,
             "cuda: %s (device %d, %d SMs, %.0f GiB), driver %s, runtime %s, cuBLAS %s, compute %s, %s, attention %s, "
             "plan %.2f GiB",
             im->info.name, im->info.ordinal, im->info.sm_count, im->info.total_gib, im->info.driver, im->info.runtime,
             im->info.cublas, rs_compute_mode_name(cfg->compute), gemm, rsg_attention_impl_name(RSG_ATTN_DEFAULT),
             (double)im->device_bytes / 1073741824.0);
    return reset_(sc);
}

rs_status rs_scorer_cuda_create(const rs_model *m, const rs_scorer_config *cfg, rs_scorer **out)
{
    RS_CHECK(m && cfg && out, RS_E_INVAL, "rs_scorer_cuda_create: NULL argument");
    *out = NULL;
    rs_scorer *sc = (rs_scorer *)calloc(1, sizeof *sc);
    gpu_impl *im = (gpu_impl *)calloc(1, sizeof *im);
    if (!sc || !im) {
        free(sc);
        free(im);
        return rs_error_set(RS_E_NOMEM, "out of memory");
    }
    sc->ops = &gpu_ops_;
    sc->m = m;
    sc->impl = im;
    const rs_status st = setup_(sc, im, cfg);
    if (st != RS_OK) {
        char keep[1024];
        snprintf(keep, sizeof keep, "%s", rs_last_error());
        destroy_(sc);
        return rs_error_set(st, "%s", keep);
    }
    *out = sc;
    return RS_OK;
}
