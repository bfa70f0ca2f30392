/* rs_scorer_cuda.cu — the GPU scorer (rs_scorer_cuda.h): the memory plan, allocation and weight
 * upload at create, then per step: tokens up (every stream's), the forward of every run of each
 * batch of streams at one position (rs_gpu_forward.cu), scoring on the device per stream
 * (rsg_score), the [S][R][n] results down. */
#include "replayssm/eval/rs_scorer_cuda.h"
#include "dense/rs_dense_ops.h"
#include "rs_gpu_scorer_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rs_check.h"
#include "rs_cuda_common.cuh" /* RS_CUDA_TRY */


static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


/* ---- the ops ---------------------------------------------------------------------------------- */

/* the conv states of row groups g0 .. g0 + ng - 1 of every SSM layer to zero */
static rs_status clear_conv_(rs_scorer *sc, gpu_impl *im, size_t g0, size_t ng)
{
    const rs_model_config *c = &sc->m->cfg;
    for (int l = 0; l < c->n_layers; l++) {
        const gpu_layer *g = &im->layers[l];
        if (!g->conv_state) continue;
        const int gdn = g->kind == RS_LAYER_GDN;
        const size_t cd = gdn ? (size_t)c->gdn.conv_dim : (size_t)c->mamba.conv_dim;
        const size_t K = gdn ? (size_t)c->gdn.conv_kernel : (size_t)c->mamba.conv_kernel;
        RS_CUDA_TRY(cudaMemsetAsync(g->conv_state + g0 * cd * (K - 1), 0, ng * cd * (K - 1) * sizeof(float), im->s), "reset");
    }
    return RS_OK;
}

/* twin: the engine-order recurrence states of streams s0 .. s0 + ns - 1 to zero */
static rs_status clear_twin_(gpu_impl *im, size_t s0, size_t ns)
{
    if (!im->twin) return RS_OK;
    for (int k = 0; k < 2; k++) {
        if (!im->twin_state[k]) continue;
        const size_t per = im->twin_layer[k] / im->S, nl = (size_t)im->n_twin_layers[k];
        for (size_t lo = 0; lo < nl; lo++)
            RS_CUDA_TRY(cudaMemsetAsync(im->twin_state[k] + lo * im->twin_layer[k] + s0 * per, 0, ns * per * sizeof(float), im->s),
                        "reset");
    }
    return RS_OK;
}

static rs_status reset_(rs_scorer *sc)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    RS_TRY(clear_conv_(sc, im, 0, (size_t)im->RR));
    RS_TRY(clear_twin_(im, 0, im->S));
    if (im->scan_gdn) RS_TRY(rs_cuda_scan_reset(im->scan_gdn, im->s));
    if (im->scan_mamba) RS_TRY(rs_cuda_scan_reset(im->scan_mamba, im->s));
    /* the KV caches need no clearing: a query never reads past its own position */
    for (size_t s = 0; s < im->S; s++) im->spos[s] = 0;
    im->last_n = 0;
    if (im->moe.diff)
        memset(im->moe.diff, 0, (size_t)im->RR * (size_t)sc->m->cfg.n_layers * 2 * sizeof(int64_t));
    RS_CUDA_TRY(cudaStreamSynchronize(im->s), "reset");
    return RS_OK;
}

static rs_status reset_stream_(rs_scorer *sc, size_t s)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    RS_CHECK(s < im->S, RS_E_INVAL, "scorer: stream %zu of %zu", s, im->S);
    const size_t g0 = s * (size_t)im->RS;
    RS_TRY(clear_conv_(sc, im, g0, (size_t)im->RS));
    RS_TRY(clear_twin_(im, s, 1));
    if (im->scan_gdn) RS_TRY(rs_cuda_scan_reset_runs(im->scan_gdn, (int)g0, im->RS, im->s));
    if (im->scan_mamba) RS_TRY(rs_cuda_scan_reset_runs(im->scan_mamba, (int)g0, im->RS, im->s));
    im->spos[s] = 0;
    if (s == 0) im->last_n = 0;
    if (im->moe.diff) {
        const size_t per = (size_t)im->RS * (size_t)sc->m->cfg.n_layers * 2;
        memset(im->moe.diff + s * per, 0, per * sizeof(int64_t));
    }
    RS_CUDA_TRY(cudaStreamSynchronize(im->s), "reset");
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

/* twin: score the batch's logits on the host as the CPU scorer does (rs_scorer_score: rs_kl.c's
 * log-softmax and comparison), into the pinned result blocks in the layout rsg_score writes on the
 * device (run r's values at (r - 1) * n + t); the device's double exp / log are not glibc's, so
 * scoring on the GPU would not give the CPU's bits */
static rs_status twin_score_(rs_scorer *sc, gpu_impl *im, size_t s0, size_t ns, size_t n)
{
    const size_t V = (size_t)sc->m->cfg.vocab, R = (size_t)im->RS - 1, C = im->C, RS = (size_t)im->RS;
    RS_CUDA_TRY(cudaMemcpyAsync(im->h_logits, im->logits, ns * RS * n * V * sizeof(float), cudaMemcpyDeviceToHost, im->s),
                "the twin logits");
    RS_CUDA_TRY(cudaStreamSynchronize(im->s), "the chunk's kernels");
    const double t0 = now_(); /* the host's scoring alone (the forward's GPU time is in its own stages) */
    double **rows = (double **)malloc((3 * R + 1) * sizeof(double *)); /* each run's kl, nll, dp rows */
    uint8_t **agree_rows = (uint8_t **)malloc((R + 1) * sizeof(uint8_t *));
    rs_status st = rows && agree_rows ? RS_OK : rs_error_set(RS_E_NOMEM, "twin scoring: out of memory");
    for (size_t j = 0; st == RS_OK && j < ns; j++) {
        const size_t s = s0 + j;
        double *kl = im->h_res + s * (3 * R + 1) * C, *nll = kl + R * C, *dp = nll + R * C, *nll_ref = dp + R * C;
        uint8_t *agree = im->h_flags + s * (R + 1) * C, *ref_bad = agree + R * C;
        for (size_t r = 0; r < R; r++) {
            rows[r] = kl + r * n, rows[R + r] = nll + r * n, rows[2 * R + r] = dp + r * n;
            agree_rows[r] = agree + r * n;
        }
        const rs_scorer_out out = {nll_ref, im->h_top + s * C, rows, rows + R, rows + 2 * R, agree_rows};
        /* stream j's logits: run g, position t at row g * n + t; a non-finite reference sets ref_bad */
        st = rs_scorer_score(im->h_logits + j * RS * n * V, R, n, V, im->h_tok + (im->S + s) * C, im->h_lp,
                             im->h_lp + V, &out, ref_bad);
    }
    free(rows);
    free(agree_rows);
    im->stage_s[GS_SCORE] += now_() - t0;
    return st;
}

/* forward the batch of streams s0 .. s0 + ns - 1 (all at position pos, n new tokens each) and
 * score each stream against its own reference into its result block (twin: on the host) */
static rs_status batch_(rs_scorer *sc, gpu_impl *im, size_t s0, size_t ns, size_t n, size_t pos)
{
    const int V = sc->m->cfg.vocab;
    const size_t R = (size_t)im->RS - 1, C = im->C;
    im->b_s0 = s0;
    im->b_ns = ns;
    im->b_pos = pos;
    im->b_r0 = s0 * (size_t)im->RS;
    im->G = (int)(ns * (size_t)im->RS);
    RS_TRY(rs_gpu_forward_chunk(sc, im, n));
    if (im->twin) {
        rs_gpu_mark(im, GS_COPY);
        return twin_score_(sc, im, s0, ns, n);
    }
    for (size_t j = 0; j < ns; j++) {
        const size_t s = s0 + j;
        double *kl = im->d_res + s * (3 * R + 1) * C, *nll = kl + R * C, *dp = nll + R * C, *nll_ref = dp + R * C;
        uint8_t *agree = im->d_flags + s * (R + 1) * C, *ref_bad = agree + R * C;
        /* rsg_score writes run r's values at (r - 1) * n + t: packed with the actual n */
        RS_TRY(rsg_score(im->RS, (int)n, V, im->logits + j * (size_t)im->RS * n * (size_t)V, (size_t)V,
                         im->d_tgt + s * C, nll_ref, im->d_top + s * C, ref_bad, kl, nll, dp, agree, im->score_work,
                         im->s));
    }
    rs_gpu_mark(im, GS_SCORE);
    return RS_OK;
}

/* every stream with in[s].n > 0: its n tokens forward, scored into out[s]. Streams next to each
 * other at the same position with the same n are one batch (one forward); in the evaluator's
 * lockstep that is all of them but those in their last, shorter chunk. */
static rs_status step_streams_(rs_scorer *sc, rs_scorer_stream *in, const rs_scorer_out *out)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    RS_CHECK(in && out, RS_E_INVAL, "scorer step_streams: NULL arguments");
    const int V = sc->m->cfg.vocab;
    const size_t R = (size_t)im->RS - 1, C = im->C, S = im->S;
    size_t total = 0;
    for (size_t s = 0; s < S; s++) {
        in[s].ref_nonfinite = 0;
        const size_t n = in[s].n;
        if (n == 0) continue;
        RS_CHECK(in[s].tokens && in[s].targets && n <= C, RS_E_INVAL,
                 "scorer step: stream %zu: %zu positions (1..%zu) or NULL arguments", s, n, C);
        for (size_t t = 0; t < n; t++) {
            RS_CHECK(in[s].tokens[t] >= 0 && in[s].tokens[t] < V, RS_E_INVAL,
                     "stream %zu: token %d at chunk offset %zu outside [0, %d)", s, (int)in[s].tokens[t], t, V);
            RS_CHECK(in[s].targets[t] >= 0 && in[s].targets[t] < V, RS_E_INVAL,
                     "stream %zu: target %d at chunk offset %zu outside [0, %d)", s, (int)in[s].targets[t], t, V);
        }
        RS_CHECK(im->spos[s] + n <= im->cap, RS_E_SHAPE, "stream %zu: position %zu exceeds the planned %zu (max_tokens)",
                 s, im->spos[s] + n, im->cap);
        total += n;
    }
    RS_CHECK(total > 0, RS_E_INVAL, "scorer step: no stream has positions");
    const double t0 = now_();
    for (size_t s = 0; s < S; s++)
        if (in[s].n) {
            memcpy(im->h_tok + s * C, in[s].tokens, in[s].n * sizeof(int32_t));
            memcpy(im->h_tok + (S + s) * C, in[s].targets, in[s].n * sizeof(int32_t));
        }
    im->n_marks = 0;
    rs_gpu_mark(im, GS_COPY);
    RS_CUDA_TRY(cudaMemcpyAsync(im->d_tok, im->h_tok, 2 * S * C * sizeof(int32_t), cudaMemcpyHostToDevice, im->s), "tokens");
    rs_gpu_mark(im, GS_COPY);
    for (size_t s = 0; s < S;) { /* maximal runs of streams sharing (position, n) */
        if (in[s].n == 0) {
            s++;
            continue;
        }
        size_t e = s + 1;
        while (e < S && in[e].n == in[s].n && im->spos[e] == im->spos[s]) e++;
        RS_TRY(batch_(sc, im, s, e - s, in[s].n, im->spos[s]));
        s = e;
    }
    if (!im->twin) { /* twin: the host scored each batch into h_res, h_flags, h_top already */
        RS_CUDA_TRY(cudaMemcpyAsync(im->h_res, im->d_res, S * (3 * R + 1) * C * sizeof(double), cudaMemcpyDeviceToHost, im->s),
                    "results");
        RS_CUDA_TRY(cudaMemcpyAsync(im->h_flags, im->d_flags, S * (R + 1) * C, cudaMemcpyDeviceToHost, im->s), "results");
        RS_CUDA_TRY(cudaMemcpyAsync(im->h_top, im->d_top, S * C * sizeof(int32_t), cudaMemcpyDeviceToHost, im->s), "results");
    }
    rs_gpu_mark(im, GS_COPY);
    RS_CUDA_TRY(cudaStreamSynchronize(im->s), "the chunk's kernels");
    stage_times_(im);
    rs_status bad = RS_OK;
    char msg[256] = "";
    for (size_t s = 0; s < S; s++) {
        const size_t n = in[s].n;
        if (n == 0) continue;
        im->spos[s] += n;
        if (s == 0) im->last_n = n;
        const double *hkl = im->h_res + s * (3 * R + 1) * C, *hnll = hkl + R * C, *hdp = hnll + R * C,
                     *hnr = hdp + R * C;
        const uint8_t *hag = im->h_flags + s * (R + 1) * C, *hbad = hag + R * C;
        size_t tbad = n;
        for (size_t t = 0; t < n && tbad == n; t++)
            if (hbad[t]) tbad = t;
        if (tbad < n) { /* the other streams' outputs are still written */
            in[s].ref_nonfinite = 1;
            if (bad == RS_OK && S == 1) /* the single-stream wording of before */
                snprintf(msg, sizeof msg, "chunk offset %zu: the fp32 reference logits are not finite", tbad);
            else if (bad == RS_OK)
                snprintf(msg, sizeof msg, "stream %zu: chunk offset %zu: the fp32 reference logits are not finite", s,
                         tbad);
            bad = RS_E_NONFINITE;
            continue;
        }
        const rs_scorer_out *o = &out[s];
        memcpy(o->nll_ref, hnr, n * sizeof(double));
        memcpy(o->top1_ref, im->h_top + s * C, n * sizeof(int32_t));
        for (size_t r = 0; r < R; r++) {
            memcpy(o->kl[r], hkl + r * n, n * sizeof(double));
            memcpy(o->nll[r], hnll + r * n, n * sizeof(double));
            memcpy(o->dp[r], hdp + r * n, n * sizeof(double));
            memcpy(o->agree[r], hag + r * n, n);
        }
    }
    im->st.total_s += now_() - t0;
    im->st.steps++;
    im->st.positions += total;
    return bad == RS_OK ? RS_OK : rs_error_set(bad, "%s", msg);
}

/* the single-stream step: stream 0, the others sit it out */
static rs_status step_(rs_scorer *sc, const int32_t *tokens, const int32_t *targets, size_t n, const rs_scorer_out *out)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    RS_CHECK(tokens && targets && out && n >= 1 && n <= im->C, RS_E_INVAL,
             "scorer step: %zu positions (1..%zu) or NULL arguments", n, im->C);
    memset(im->one, 0, im->S * sizeof *im->one);
    im->one[0].tokens = tokens;
    im->one[0].targets = targets;
    im->one[0].n = n;
    return step_streams_(sc, im->one, out); /* out[0] only: the other streams are idle */
}

static rs_status stream_nonfinite_(const rs_scorer *sc, size_t si, size_t r, rs_scorer_nonfinite *nf, const char **msg)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    RS_CHECK(si < im->S && r + 1 < (size_t)im->RS && nf, RS_E_INVAL, "scorer: stream %zu of %zu, run %zu of %d", si,
             im->S, r, im->RS - 1);
    const size_t g = si * (size_t)im->RS + r + 1; /* the run's row group */
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
                const int64_t s = im->nf[(g * (size_t)nl + (size_t)lo) * (size_t)H + (size_t)h];
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

static rs_status run_nonfinite_(const rs_scorer *sc, size_t r, rs_scorer_nonfinite *nf, const char **msg)
{
    return stream_nonfinite_(sc, 0, r, nf, msg);
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
    out->moe_s = im->stage_s[GS_MOE];
    size_t fr = 0, tot = 0;
    out->peak_bytes = im->device_bytes;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot - fr > out->peak_bytes) out->peak_bytes = tot - fr;
}

static rs_status logits_(const rs_scorer *sc, long r, float *out)
{
    const gpu_impl *im = (const gpu_impl *)sc->impl;
    RS_CHECK(out && r >= -1 && r + 1 < (long)im->RS, RS_E_INVAL, "scorer logits: run %ld of %d", r, im->RS - 1);
    RS_CHECK(im->S == 1, RS_E_UNSUPPORTED, "scorer logits: a single-stream GPU scorer only (this one has %zu)", im->S);
    RS_CHECK(im->last_n > 0, RS_E_STATE, "scorer logits: no step taken yet");
    const size_t V = (size_t)sc->m->cfg.vocab, n = im->last_n;
    RS_CUDA_TRY(cudaMemcpy(out, im->logits + (size_t)(r + 1) * n * V, n * V * sizeof(float), cudaMemcpyDeviceToHost),
         "copying logits");
    return RS_OK;
}

static rs_status routes_(const rs_scorer *sc, long r, int layer, int32_t *out)
{
    const gpu_impl *im = (const gpu_impl *)sc->impl;
    const rs_model_config *c = &sc->m->cfg;
    RS_CHECK(out && r >= -1 && r + 1 < (long)im->RS && layer >= 0 && layer < c->n_layers, RS_E_INVAL,
             "scorer routes: run %ld of %d, layer %d of %d", r, im->RS - 1, layer, c->n_layers);
    RS_CHECK(c->is_moe && (c->mlp_is_moe || c->layer_kind[layer] == RS_LAYER_MOE), RS_E_INVAL,
             "scorer routes: layer %d has no experts", layer);
    RS_CHECK(im->S == 1, RS_E_UNSUPPORTED, "scorer routes: a single-stream GPU scorer only (this one has %zu)", im->S);
    RS_CHECK(im->last_n > 0, RS_E_STATE, "scorer routes: no step taken yet");
    const size_t n = im->last_n, k = (size_t)c->moe.top_k, M = (size_t)im->RS * n;
    memcpy(out, im->moe.routes + (size_t)layer * M * k + (size_t)(r + 1) * n * k, n * k * sizeof(int32_t));
    return RS_OK;
}

static rs_status route_diff_(const rs_scorer *sc, size_t s, size_t r, int layer, int64_t *positions,
                             int64_t *experts)
{
    const gpu_impl *im = (const gpu_impl *)sc->impl;
    const int L = sc->m->cfg.n_layers;
    RS_CHECK(s < im->S && r + 1 < (size_t)im->RS && layer >= 0 && layer < L && positions && experts, RS_E_INVAL,
             "scorer route_diff: stream %zu of %zu, run %zu of %d, layer %d of %d", s, im->S, r, im->RS - 1, layer, L);
    const int64_t *d = im->moe.diff ? im->moe.diff + ((s * (size_t)im->RS + r + 1) * (size_t)L + (size_t)layer) * 2 : NULL;
    *positions = d ? d[0] : 0;
    *experts = d ? d[1] : 0;
    return RS_OK;
}

static void destroy_(rs_scorer *sc)
{
    gpu_impl *im = (gpu_impl *)sc->impl;
    if (im) {
        if (im->s) cudaStreamSynchronize(im->s);
        cudaFree(im->d_slab);
        rs_gpu_moe_free(im);
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
        cudaFree(im->d_twin_runs);
        cudaFree(im->twin_state[0]);
        cudaFree(im->twin_state[1]);
        cudaFreeHost(im->h_logits);
        free(im->h_lp);
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
        free(im->spos);
        free(im->one);
        free(im->cfg_mem);
        free(im);
    }
    free(sc);
}

static const rs_scorer_ops gpu_ops_ = {"cuda",   reset_,         step_,          run_nonfinite_,   describe_, stats_,
                                       logits_,  destroy_,       reset_stream_,  step_streams_,    stream_nonfinite_,
                                       routes_,  route_diff_};

static rs_status setup_(rs_scorer *sc, gpu_impl *im, const rs_scorer_config *cfg)
{
    RS_TRY(rs_scorer_config_copy(sc, cfg, &im->cfg_mem));
    RS_TRY(rs_gpu_info_query(cfg->device, &im->info));
    RS_CUDA_TRY(cudaSetDevice(cfg->device), "cudaSetDevice");
    RS_CUDA_TRY(cudaStreamCreateWithFlags(&im->s, cudaStreamNonBlocking), "cudaStreamCreate");
    if (cublasCreate(&im->blas) != CUBLAS_STATUS_SUCCESS) return rs_error_set(RS_E_CUDA, "cublasCreate failed");
    cublasSetStream(im->blas, im->s);
    /* the GEMM method of the compute mode (rs_gpu_weights.h): fp32 -> cuBLAS SGEMM, tf32x3 -> the
       split-TF32 GEMM, tf32 -> one TF32 GEMM; bf16 is refused here */
    RS_TRY(rsg_gemm_method_of(cfg->compute, &im->gemm.method));
    im->twin = cfg->compute == RS_COMPUTE_TWIN;
    cublasSetMathMode(im->blas, CUBLAS_DEFAULT_MATH); /* the TF32 methods ask for it per call */
    im->RS = (int)cfg->n_runs + 1;
    im->S = rs_scorer_n_streams(sc);
    RS_CHECK((size_t)im->RS * im->S <= 65535, RS_E_UNSUPPORTED, "%zu streams x %d runs: at most 65535 on the GPU",
             im->S, im->RS);
    im->RR = (int)(im->S * (size_t)im->RS);
    im->C = cfg->chunk;
    im->cap = cfg->max_tokens;
    im->spos = (size_t *)calloc(im->S, sizeof *im->spos);
    im->one = (rs_scorer_stream *)calloc(im->S, sizeof *im->one);
    if (!im->spos || !im->one) return rs_error_set(RS_E_NOMEM, "out of memory");
    rs_gpu_plan p;
    rs_status st = rs_gpu_plan_make(sc, im, &p);
    if (st == RS_OK) st = rs_gpu_alloc(sc, im, &p);
    rs_gpu_plan_free(&p);
    RS_TRY(st);
    char gemm[256]; /* the longest: bf16x3 with RS_GPU_GEMM_PAD_ROWS, ~200 characters */
    rs_gpu_gemm_describe(im, gemm, sizeof gemm);
    char streams[48] = ""; /* books batched: the streams (one stream: the description of before) */
    if (im->S > 1) snprintf(streams, sizeof streams, ", %zu streams", im->S);
    char attn[160];
    if (im->twin)
        snprintf(attn, sizeof attn, "twin (double, the CPU's), recurrence of %d of %d runs in the engine's order, "
                 "norm sums sequential, scoring on the host", im->nt, im->RS);
    else
        snprintf(attn, sizeof attn, "%s", rsg_attention_impl_name(RSG_ATTN_DEFAULT));
    snprintf(im->describe, sizeof im->describe,
             "cuda: %s (device %d, %d SMs, %.0f GiB), driver %s, runtime %s, cuBLAS %s, compute %s, %s, attention %s, "
             "plan %.2f GiB%s",
             im->info.name, im->info.ordinal, im->info.sm_count, im->info.total_gib, im->info.driver, im->info.runtime,
             im->info.cublas, rs_compute_mode_name(cfg->compute), gemm, attn,
             (double)im->device_bytes / 1073741824.0, streams);
    return reset_(sc);
}

rs_status rs_scorer_cuda_plan(const rs_model *m, size_t n_runs, const rs_run_spec *runs, size_t chunk,
                              size_t max_tokens, rs_compute_mode compute, int device, rs_gpu_plan_report *out)
{
    RS_CHECK(m && out && (runs || n_runs == 0) && chunk >= 1 && max_tokens >= 1, RS_E_INVAL,
             "rs_scorer_cuda_plan: NULL argument or zero chunk / positions");
    memset(out, 0, sizeof *out);
    rs_scorer_config cf;
    memset(&cf, 0, sizeof cf);
    cf.n_runs = n_runs;
    cf.runs = runs;
    cf.chunk = chunk;
    cf.max_tokens = max_tokens;
    cf.compute = compute;
    cf.device = device;
    const rs_scorer_config *cfg = &cf;
    rs_scorer sc;
    memset(&sc, 0, sizeof sc);
    sc.m = m;
    gpu_impl *im = (gpu_impl *)calloc(1, sizeof *im);
    RS_CHECK(im, RS_E_NOMEM, "out of memory");
    sc.impl = im;
    im->plan_only = 1;
    rs_status st = rs_scorer_config_copy(&sc, cfg, &im->cfg_mem);
    if (st == RS_OK) st = rsg_gemm_method_of(cfg->compute, &im->gemm.method);
    rs_gpu_plan p;
    memset(&p, 0, sizeof p);
    if (st == RS_OK) {
        im->twin = cfg->compute == RS_COMPUTE_TWIN;
        im->RS = (int)cfg->n_runs + 1;
        im->S = rs_scorer_n_streams(&sc);
        im->RR = (int)(im->S * (size_t)im->RS);
        im->C = cfg->chunk;
        im->cap = cfg->max_tokens;
        st = rs_gpu_plan_make(&sc, im, &p);
    }
    if (st == RS_OK) {
        const double b[MP_N] = {(double)p.bytes[MP_WEIGHTS], (double)p.bytes[MP_KV], (double)p.bytes[MP_STATE],
                                (double)p.bytes[MP_ACT], (double)p.bytes[MP_LOGITS]};
        out->weights = b[MP_WEIGHTS], out->kv = b[MP_KV], out->state = b[MP_STATE], out->act = b[MP_ACT];
        out->logits = b[MP_LOGITS];
        out->total = (double)p.total;
        int n = 0;
        size_t fr = 0, tot = 0;
        if (cudaGetDeviceCount(&n) == cudaSuccess && n > cfg->device && cudaSetDevice(cfg->device) == cudaSuccess &&
            cudaMemGetInfo(&fr, &tot) == cudaSuccess)
            out->device_free = (double)fr;
        cudaGetLastError(); /* no device: not an error here */
        rs_gpu_gemm_describe(im, out->gemm, sizeof out->gemm);
    }
    rs_gpu_plan_free(&p);
    rs_cuda_scan_free(im->scan_gdn); /* set only when a scan config was invalid */
    rs_cuda_scan_free(im->scan_mamba);
    rs_gpu_gemm_free(im);
    free(im->cfg_mem);
    free(im);
    return st;
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
