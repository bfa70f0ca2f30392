/* rs_head.c — the state engine of one head (see rs_head.h for policies and rounding). */
#include "replayssm/engine/rs_head.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/quant/rs_philox.h"
#include "replayssm/quant/rs_qtensor.h"
#include "rs_check.h"
#include "rs_replay.h"
#include "rs_ring.h"

/* The private part of an rs_head: every buffer, the ring and the replay workspace (one
 * allocation each, made by rs_head_init; decode / verify / commit never allocate). */
struct rs_head_impl {
    float *rec;      /* [d_v][d_k] recurrent copy: conv S_t | shared ckpt | split HP */
    float *read;     /* [d_v][d_k] split LP checkpoint; NULL otherwise */
    float *work;     /* [d_v][d_k] the "on-chip" state */
    float *snap;     /* conv: [T_max][d_v][d_k] stored state after each draft; NULL otherwise */
    float *qbuf;     /* [T_max][d_k] draft queries */
    float *ubuf;     /* [d_v] */
    rs_ring ring;    /* replay policies: capacity max(L, T_max) + T_max; zeroed for conv */
    rs_replay_ws ws; /* replay policies; zeroed for conv */
};

/* ---- helpers ------------------------------------------------------------------------ */

static const char *policy_str_(const rs_head *hd, char *buf, size_t n)
{
    if (rs_policy_print(&hd->cfg.policy, buf, n) != RS_OK) snprintf(buf, n, "?");
    return buf;
}

/* Record the first non-finite step and return RS_E_NONFINITE with a message naming it. */
static rs_status nonfinite_(rs_head *hd, uint64_t step, const char *what)
{
    char pol[96];
    if (hd->first_nonfinite < 0) hd->first_nonfinite = (int64_t)step;
    return rs_error_set(RS_E_NONFINITE,
                        "%s layer %u head %u (policy %s): non-finite %s at step %llu",
                        rs_ssm_kind_name(hd->cfg.kind), hd->cfg.layer, hd->cfg.head,
                        policy_str_(hd, pol, sizeof pol), what, (unsigned long long)step);
}

/* Store src in format f into dst (may alias src). The quantizer reports non-finite input;
 * the stored values are checked too (fp16 RTN overflows to Inf). */
static rs_status store_(rs_head *hd, const rs_format *f, uint32_t slot, uint64_t index,
                        const float *src, float *dst, uint64_t step, const char *what)
{
    if (f->kind == RS_FMT_FP32) {
        if (dst != src) memcpy(dst, src, hd->n * sizeof(float));
    } else {
        const uint64_t stream = rs_stream_id(slot, hd->cfg.layer, hd->cfg.head, index);
        rs_status st = rs_quantize_roundtrip(f, src, hd->n, hd->n, hd->cfg.seed, stream, dst);
        if (st == RS_E_NONFINITE) return nonfinite_(hd, step, what);
        if (st != RS_OK) return st;
        /* The quantizer has rejected non-finite input, and FP8, E5M2, NVFP4 and MX saturate (finite
         * scales, satfinite elements): their output is finite by construction, so the scan
         * below is only needed where a finite input can overflow (FP16/BF16 RTN and SR to
         * Inf) or was never checked (fp32 copies). */
        if (f->kind == RS_FMT_FP8 || f->kind == RS_FMT_E5M2 || f->kind == RS_FMT_NVFP4 || f->kind == RS_FMT_MXFP8 ||
            f->kind == RS_FMT_MXFP4)
            return RS_OK;
    }
    if (rs_ssm_first_nonfinite(dst, hd->n) < hd->n) return nonfinite_(hd, step, what);
    return RS_OK;
}

static rs_status check_out_(rs_head *hd, const float *o, size_t T, uint64_t step0)
{
    const size_t d_v = hd->cfg.d_v;
    for (size_t s = 0; s < T; s++)
        if (rs_ssm_first_nonfinite(o + s * d_v, d_v) < d_v) return nonfinite_(hd, step0 + s, "output");
    return RS_OK;
}

static rs_status sticky_(rs_head *hd, float *o, size_t T)
{
    if (hd->first_nonfinite < 0) return RS_OK;
    for (size_t i = 0; i < T * hd->cfg.d_v; i++) o[i] = NAN;
    char pol[96];
    return rs_error_set(RS_E_NONFINITE,
                        "%s layer %u head %u (policy %s): state went non-finite at step %lld; "
                        "reset the head",
                        rs_ssm_kind_name(hd->cfg.kind), hd->cfg.layer, hd->cfg.head,
                        policy_str_(hd, pol, sizeof pol), (long long)hd->first_nonfinite);
}

static rs_status check_tokens_(const rs_head *hd, const rs_ssm_token *x, size_t T)
{
    for (size_t s = 0; s < T; s++) {
        RS_CHECK(x[s].v && x[s].k && x[s].q, RS_E_INVAL, "head %u: token %zu has a NULL vector",
                 hd->cfg.head, s);
        RS_CHECK(x[s].alpha >= 0.0f && x[s].alpha <= 1.0f, RS_E_INVAL,
                 "layer %u head %u: decay alpha = %g of token %zu outside [0, 1]", hd->cfg.layer,
                 hd->cfg.head, (double)x[s].alpha, s);
        RS_CHECK(hd->cfg.kind != RS_SSM_GDN || (x[s].beta >= 0.0f && x[s].beta <= 1.0f),
                 RS_E_INVAL, "layer %u head %u: beta = %g of token %zu outside [0, 1]",
                 hd->cfg.layer, hd->cfg.head, (double)x[s].beta, s);
    }
    return RS_OK;
}

static rs_status check_block_(const rs_format *f, size_t n, const char *what)
{
    const size_t b = rs_format_block(f);
    RS_CHECK(b == 0 || n % b == 0, RS_E_SHAPE,
             "state of %zu elements is not a multiple of the %s format's block of %zu", n, what, b);
    return RS_OK;
}

/* ---- lifetime ----------------------------------------------------------------------- */

rs_status rs_head_init(rs_head *hd, const rs_head_config *cfg)
{
    RS_CHECK(hd != NULL && cfg != NULL, RS_E_INVAL, "rs_head_init: NULL argument");
    memset(hd, 0, sizeof *hd);
    hd->first_nonfinite = -1;
    RS_CHECK(cfg->kind == RS_SSM_MAMBA2 || cfg->kind == RS_SSM_GDN, RS_E_INVAL,
             "rs_head_init: unknown SSM kind %d", (int)cfg->kind);
    RS_CHECK(cfg->d_v > 0 && cfg->d_k > 0, RS_E_INVAL, "rs_head_init: d_v %zu, d_k %zu",
             cfg->d_v, cfg->d_k);
    RS_CHECK(cfg->max_drafts >= 1, RS_E_INVAL, "rs_head_init: max drafts T must be >= 1");
    const int replay = rs_policy_is_replay(&cfg->policy);
    RS_CHECK(!replay || cfg->window >= 1, RS_E_INVAL, "rs_head_init: window L must be >= 1");
    const size_t n = cfg->d_v * cfg->d_k;
    RS_TRY(check_block_(&cfg->policy.hp, n, "recurrent (HP)"));
    RS_TRY(check_block_(&cfg->policy.lp, n, "read (LP)"));
    hd->cfg = *cfg;
    hd->n = n;
    const size_t T = cfg->max_drafts;
    struct rs_head_impl *im = calloc(1, sizeof *im);
    if (!im) return rs_error_set(RS_E_NOMEM, "rs_head_init: out of memory");
    hd->impl = im;
    im->rec = calloc(n, sizeof(float));
    im->work = calloc(n, sizeof(float));
    im->qbuf = calloc(T * cfg->d_k, sizeof(float));
    im->ubuf = calloc(cfg->d_v, sizeof(float));
    int ok = im->rec && im->work && im->qbuf && im->ubuf;
    if (ok && rs_policy_is_split(&cfg->policy)) ok = (im->read = calloc(n, sizeof(float))) != NULL;
    if (ok && !replay) ok = (im->snap = calloc(T * n, sizeof(float))) != NULL;
    if (!ok) {
        rs_head_free(hd);
        return rs_error_set(RS_E_NOMEM, "rs_head_init: out of memory (d_v %zu, d_k %zu)",
                            cfg->d_v, cfg->d_k);
    }
    if (replay) {
        /* committed-unfolded records reach L, or T when T > L (a flush keeps up to T
         * drafts, all of which may be accepted); drafts need T more slots */
        const size_t cap = (cfg->window > T ? cfg->window : T) + T;
        rs_status st = rs_ring_init(&im->ring, cap, cfg->d_v, cfg->d_k, cfg->kind == RS_SSM_GDN);
        if (st == RS_OK) st = rs_replay_ws_init(&im->ws, cap, T, cfg->d_v);
        if (st != RS_OK) {
            rs_head_free(hd);
            return st;
        }
    }
    return RS_OK;
}

void rs_head_free(rs_head *hd)
{
    if (!hd) return;
    struct rs_head_impl *im = hd->impl;
    if (im) {
        free(im->rec);
        free(im->read);
        free(im->work);
        free(im->snap);
        free(im->qbuf);
        free(im->ubuf);
        rs_ring_free(&im->ring);
        rs_replay_ws_free(&im->ws);
        free(im);
    }
    memset(hd, 0, sizeof *hd);
    hd->first_nonfinite = -1;
}

rs_status rs_head_reset(rs_head *hd, const float *S0)
{
    RS_CHECK(hd != NULL && hd->impl != NULL, RS_E_STATE, "rs_head_reset: head not initialised");
    hd->pos = hd->folded = hd->flushes = 0;
    hd->pending = 0;
    hd->first_nonfinite = -1;
    if (hd->impl->ring.cap) rs_ring_reset(&hd->impl->ring);
    if (S0) memcpy(hd->impl->work, S0, hd->n * sizeof(float));
    else memset(hd->impl->work, 0, hd->n * sizeof(float));
    if (hd->impl->read) RS_TRY(store_(hd, &hd->cfg.policy.lp, RS_SLOT_INIT, 1, hd->impl->work, hd->impl->read, 0, "initial state"));
    return store_(hd, &hd->cfg.policy.hp, RS_SLOT_INIT, 0, hd->impl->work, hd->impl->rec, 0, "initial state");
}

/* ---- conventional ------------------------------------------------------------------- */

static void conv_step_(rs_head *hd, float *S, const rs_ssm_token *x, float *o)
{
    const size_t d_v = hd->cfg.d_v, d_k = hd->cfg.d_k;
    if (hd->cfg.kind == RS_SSM_MAMBA2) rs_ssm_mamba2_step(S, d_v, d_k, x->alpha, x->v, x->k, x->q, o);
    else rs_ssm_gdn_step(S, d_v, d_k, x->alpha, x->beta, x->v, x->k, x->q, hd->impl->ubuf, o);
}

static rs_status conv_decode_(rs_head *hd, const rs_ssm_token *x, float *o)
{
    conv_step_(hd, hd->impl->rec, x, o);
    RS_TRY(check_out_(hd, o, 1, hd->pos));
    RS_TRY(store_(hd, &hd->cfg.policy.hp, RS_SLOT_CONV, hd->pos, hd->impl->rec, hd->impl->rec, hd->pos, "state"));
    hd->pos++;
    hd->folded = hd->pos;
    return RS_OK;
}

static rs_status conv_verify_(rs_head *hd, const rs_ssm_token *x, size_t T, float *O)
{
    const float *src = hd->impl->rec;
    for (size_t s = 0; s < T; s++) {
        float *dst = hd->impl->snap + s * hd->n;
        memcpy(dst, src, hd->n * sizeof(float));
        conv_step_(hd, dst, &x[s], O + s * hd->cfg.d_v);
        RS_TRY(check_out_(hd, O + s * hd->cfg.d_v, 1, hd->pos + s));
        RS_TRY(store_(hd, &hd->cfg.policy.hp, RS_SLOT_CONV, hd->pos + s, dst, dst, hd->pos + s, "state"));
        src = dst;
    }
    return RS_OK;
}

/* ---- replay ------------------------------------------------------------------------- */

/* Write drafts x[T] as records h .. h+T-1 (Mamba-2 records are sealed at once; GDN after
 * the solve) and their queries into qbuf. */
static rs_status put_drafts_(rs_head *hd, const rs_ssm_token *x, size_t T)
{
    const size_t h = hd->impl->ring.h;
    for (size_t s = 0; s < T; s++) {
        RS_TRY(rs_ring_put(&hd->impl->ring, h + s, hd->pos + s, x[s].alpha, x[s].beta, x[s].v, x[s].k));
        if (hd->cfg.kind == RS_SSM_MAMBA2) rs_ring_seal(&hd->impl->ring, h + s);
        memcpy(hd->impl->qbuf + s * hd->cfg.d_k, x[s].q, hd->cfg.d_k * sizeof(float));
    }
    return RS_OK;
}

static void gdn_solve_(rs_head *hd, const float *ckpt, size_t h, size_t T)
{
    rs_replay_gdn_solve(ckpt, &hd->impl->ring, h, T, &hd->impl->ws);
    for (size_t s = 0; s < T; s++) rs_ring_seal(&hd->impl->ring, h + s);
}

/* After a fold of the h committed records into work: store the checkpoint(s), drop. */
static rs_status flush_store_(rs_head *hd, size_t h)
{
    const uint64_t last = hd->pos - 1; /* the newest folded token */
    if (rs_policy_is_split(&hd->cfg.policy)) {
        RS_TRY(store_(hd, &hd->cfg.policy.hp, RS_SLOT_HP, hd->flushes, hd->impl->work, hd->impl->rec, last,
                      "HP checkpoint"));
        RS_TRY(store_(hd, &hd->cfg.policy.lp, RS_SLOT_LP, hd->flushes, hd->impl->work, hd->impl->read, last,
                      "LP checkpoint"));
    } else {
        RS_TRY(store_(hd, &hd->cfg.policy.hp, RS_SLOT_SHARED, hd->flushes, hd->impl->work, hd->impl->rec, last,
                      "checkpoint"));
    }
    hd->flushes++;
    hd->folded = hd->pos;
    rs_ring_drop(&hd->impl->ring, h);
    return RS_OK;
}

/* shared: Algorithm 1 (Mamba-2) / Algorithm 4 (GDN). */
static rs_status shared_decode_(rs_head *hd, const rs_ssm_token *x, float *o)
{
    const size_t h = hd->impl->ring.h;
    RS_TRY(put_drafts_(hd, x, 1));
    rs_ring_set_pending(&hd->impl->ring, 1);
    if (h + 1 >= hd->cfg.window) { /* flush step: materialise S, fold the window */
        memcpy(hd->impl->work, hd->impl->rec, hd->n * sizeof(float));
        if (hd->cfg.kind == RS_SSM_MAMBA2) {
            rs_replay_materialise(hd->impl->work, &hd->impl->ring, h + 1, &hd->impl->ws);
            rs_ssm_output(hd->impl->work, hd->cfg.d_v, hd->cfg.d_k, x->q, o);
        } else {
            rs_replay_materialise(hd->impl->work, &hd->impl->ring, h, &hd->impl->ws); /* S_{t-1} */
            rs_ssm_gdn_step(hd->impl->work, hd->cfg.d_v, hd->cfg.d_k, x->alpha, x->beta, x->v, x->k,
                            x->q, rs_ring_u(&hd->impl->ring, h), o);
            rs_ring_seal(&hd->impl->ring, h);
        }
        RS_TRY(rs_ring_commit(&hd->impl->ring, 1));
        RS_TRY(check_out_(hd, o, 1, hd->pos));
        hd->pos++;
        return flush_store_(hd, h + 1);
    }
    if (hd->cfg.kind == RS_SSM_GDN) gdn_solve_(hd, hd->impl->rec, h, 1);
    rs_replay_outputonly(hd->impl->rec, &hd->impl->ring, h, 1, hd->impl->qbuf, o, &hd->impl->ws);
    RS_TRY(rs_ring_commit(&hd->impl->ring, 1));
    RS_TRY(check_out_(hd, o, 1, hd->pos));
    hd->pos++;
    return RS_OK;
}

/* shared: Algorithm 2 (GDN via the UT solve). */
static rs_status shared_verify_(rs_head *hd, const rs_ssm_token *x, size_t T, float *O)
{
    const size_t h = hd->impl->ring.h;
    RS_TRY(put_drafts_(hd, x, T));
    rs_ring_set_pending(&hd->impl->ring, T);
    if (hd->cfg.kind == RS_SSM_GDN) gdn_solve_(hd, hd->impl->rec, h, T);
    rs_replay_outputonly(hd->impl->rec, &hd->impl->ring, h, T, hd->impl->qbuf, O, &hd->impl->ws);
    RS_TRY(check_out_(hd, O, T, hd->pos));
    if (h + T > hd->cfg.window && h > 0) { /* flush rule: fold the committed records */
        memcpy(hd->impl->work, hd->impl->rec, hd->n * sizeof(float));
        rs_replay_materialise(hd->impl->work, &hd->impl->ring, h, &hd->impl->ws);
        return flush_store_(hd, h);
    }
    return RS_OK;
}

/* split, split-naive: Algorithm 3. */
static rs_status split_verify_(rs_head *hd, const rs_ssm_token *x, size_t T, float *O)
{
    const size_t h = hd->impl->ring.h;
    RS_TRY(put_drafts_(hd, x, T));
    rs_ring_set_pending(&hd->impl->ring, T);
    const int gdn = hd->cfg.kind == RS_SSM_GDN;
    if (!(h + T > hd->cfg.window)) { /* non-flush: read the LP checkpoint */
        if (gdn) gdn_solve_(hd, hd->impl->read, h, T);
        rs_replay_outputonly(hd->impl->read, &hd->impl->ring, h, T, hd->impl->qbuf, O, &hd->impl->ws);
        return check_out_(hd, O, T, hd->pos);
    }
    memcpy(hd->impl->work, hd->impl->rec, hd->n * sizeof(float)); /* flush: read HP */
    if (gdn && hd->cfg.policy.mode == RS_POLICY_SPLIT) {
        /* discard the cached u, recompute along the HP path, then solve the drafts */
        if (h > 0) {
            rs_replay_gdn_fold_recompute(hd->impl->work, &hd->impl->ring, h, &hd->impl->ws);
            RS_TRY(flush_store_(hd, h));
        }
        gdn_solve_(hd, hd->impl->work, 0, T);
        rs_replay_outputonly(hd->impl->work, &hd->impl->ring, 0, T, hd->impl->qbuf, O, &hd->impl->ws);
        return check_out_(hd, O, T, hd->pos);
    }
    if (gdn) gdn_solve_(hd, hd->impl->work, h, T);
    rs_replay_outputonly(hd->impl->work, &hd->impl->ring, h, T, hd->impl->qbuf, O, &hd->impl->ws);
    RS_TRY(check_out_(hd, O, T, hd->pos));
    if (h > 0) {
        rs_replay_materialise(hd->impl->work, &hd->impl->ring, h, &hd->impl->ws);
        RS_TRY(flush_store_(hd, h));
    }
    return RS_OK;
}

/* ---- public entry points ------------------------------------------------------------ */

static rs_status ready_(rs_head *hd, const rs_ssm_token *x, size_t T, float *o)
{
    RS_CHECK(hd != NULL && hd->impl != NULL, RS_E_STATE, "head used before rs_head_init");
    RS_CHECK(x != NULL && o != NULL, RS_E_INVAL, "head %u: NULL tokens or outputs", hd->cfg.head);
    RS_CHECK(hd->pending == 0, RS_E_STATE,
             "layer %u head %u: %zu drafts await rs_head_commit before the next step",
             hd->cfg.layer, hd->cfg.head, hd->pending);
    RS_CHECK(T >= 1 && T <= hd->cfg.max_drafts, RS_E_INVAL,
             "layer %u head %u: %zu drafts, this head takes 1..%zu", hd->cfg.layer, hd->cfg.head,
             T, hd->cfg.max_drafts);
    RS_TRY(sticky_(hd, o, T));
    /* A NaN decay or gate is a non-finite input (it comes from upstream activations that
     * already overflowed), not a caller error: mark the head non-finite like any other
     * non-finite value so the evaluator records where it happened and the other runs go on. */
    for (size_t s = 0; s < T; s++) {
        if (isnan(x[s].alpha) || (hd->cfg.kind == RS_SSM_GDN && isnan(x[s].beta))) {
            for (size_t i = 0; i < T * hd->cfg.d_v; i++) o[i] = NAN;
            return nonfinite_(hd, hd->pos + s, "decay/gate input");
        }
    }
    return check_tokens_(hd, x, T);
}

rs_status rs_head_decode(rs_head *hd, const rs_ssm_token *x, float *o)
{
    RS_TRY(ready_(hd, x, 1, o));
    switch (hd->cfg.policy.mode) {
    case RS_POLICY_CONV: return conv_decode_(hd, x, o);
    case RS_POLICY_SHARED: return shared_decode_(hd, x, o);
    default:
        /* two precisions: Algorithm 3 with T = 1, a = 1 */
        RS_TRY(split_verify_(hd, x, 1, o));
        RS_TRY(rs_ring_commit(&hd->impl->ring, 1));
        hd->pos++;
        return RS_OK;
    }
}

rs_status rs_head_verify(rs_head *hd, const rs_ssm_token *x, size_t T, float *O)
{
    RS_TRY(ready_(hd, x, T, O));
    rs_status st;
    switch (hd->cfg.policy.mode) {
    case RS_POLICY_CONV: st = conv_verify_(hd, x, T, O); break;
    case RS_POLICY_SHARED: st = shared_verify_(hd, x, T, O); break;
    default: st = split_verify_(hd, x, T, O); break;
    }
    hd->pending = T; /* even on failure: the caller must commit or reset */
    return st;
}

rs_status rs_head_commit(rs_head *hd, size_t a)
{
    RS_CHECK(hd != NULL && hd->impl != NULL, RS_E_STATE, "head used before rs_head_init");
    RS_CHECK(hd->pending > 0, RS_E_STATE, "layer %u head %u: commit without a pending verify",
             hd->cfg.layer, hd->cfg.head);
    RS_CHECK(a >= 1 && a <= hd->pending, RS_E_INVAL,
             "layer %u head %u: accepted length %zu outside 1..%zu", hd->cfg.layer, hd->cfg.head,
             a, hd->pending);
    if (hd->cfg.policy.mode == RS_POLICY_CONV) {
        memcpy(hd->impl->rec, hd->impl->snap + (a - 1) * hd->n, hd->n * sizeof(float));
        hd->folded = hd->pos + a;
    } else {
        RS_TRY(rs_ring_commit(&hd->impl->ring, a));
    }
    hd->pos += a;
    hd->pending = 0;
    return RS_OK;
}


rs_status rs_head_state(rs_head *hd, float *S)
{
    RS_CHECK(hd != NULL && hd->impl != NULL && S != NULL, RS_E_STATE, "rs_head_state: bad head");
    memcpy(S, hd->impl->rec, hd->n * sizeof(float));
    if (hd->cfg.policy.mode == RS_POLICY_CONV) return RS_OK;
    if (hd->cfg.kind == RS_SSM_GDN && hd->cfg.policy.mode == RS_POLICY_SPLIT)
        rs_replay_gdn_fold_recompute(S, &hd->impl->ring, hd->impl->ring.h, &hd->impl->ws);
    else
        rs_replay_materialise(S, &hd->impl->ring, hd->impl->ring.h, &hd->impl->ws);
    return RS_OK;
}

rs_status rs_head_checkpoint(const rs_head *hd, int read_copy, float *S, uint64_t *folded)
{
    RS_CHECK(hd != NULL && hd->impl != NULL && S != NULL, RS_E_STATE, "rs_head_checkpoint: bad head");
    memcpy(S, (read_copy && hd->impl->read) ? hd->impl->read : hd->impl->rec, hd->n * sizeof(float));
    if (folded) *folded = hd->folded;
    return RS_OK;
}

int64_t rs_head_first_nonfinite(const rs_head *hd)
{
    return hd && hd->impl ? hd->first_nonfinite : -1; /* a zeroed head has seen nothing */
}

size_t rs_head_unfolded(const rs_head *hd) { return hd && hd->impl ? hd->impl->ring.h : 0; }

rs_status rs_head_ring_check(const rs_head *hd)
{
    if (!hd || !hd->impl || hd->impl->ring.cap == 0) return RS_OK;
    return rs_ring_check(&hd->impl->ring, hd->pos - hd->impl->ring.h);
}
