/* rs_moe.c — the mixture-of-experts FFN over a chunk, R runs stacked (see rs_moe.h).
 *
 * Order of work, mirroring transformers' eager expert loop so that fp32 sums round alike:
 *   xn = RMSNorm(x); logits = router xn; route every row (rs_moe_route_row);
 *   xin = fc1_latent_proj xn (NemotronH with a latent) or xn;
 *   acc = 0; for expert e = 0 .. E-1 with rows: Y = down(act(up(xin rows)[, gate])); acc[row] += w Y;
 *   out = fc2_latent_proj acc (or acc); shared = shared expert(xn) [x sigmoid(shared_expert_gate xn)];
 *   x += out + shared.
 * Every row is routed by its own activations: a policy run may choose other experts than the
 * reference at the same position; rs_run.moe_pos_diff / moe_slot_diff count it per layer.
 * Each expert's GEMM sees only its gathered rows; a row's result does not depend on which other
 * rows share the GEMM (rs_runner.h), so a run's logits do not depend on the other runs' routing.
 */
#include "model/rs_moe.h"
#include "rs_check.h"

#include <string.h>

typedef struct route_ctx {
    const rs_fwd_args *a;
    int l;
} route_ctx;

/* row task: the experts and weights of one stacked row */
static rs_status route_row_(void *vctx, size_t row)
{
    const route_ctx *c = (const route_ctx *)vctx;
    const rs_moe_config *mo = &c->a->m->cfg.moe;
    const rs_moe_ws *mw = &c->a->ws->moe;
    const size_t E = (size_t)mo->n_experts, k = (size_t)mo->top_k;
    /* scratch per row (no per-thread index in a task): the router buffer holds one slot per row */
    float *scratch = mw->route + row * RS_MOE_ROUTE_SCRATCH(E, mo->n_group);
    rs_moe_route_row(mo, mw->logits + row * E, c->a->m->w.layers[c->l].moe.router_bias, mw->idx + row * k,
                     mw->w + row * k, scratch);
    return RS_OK;
}

/* counting sort of the (row, slot) entries by expert: order[count[e] .. count[e+1]) are expert e's,
 * rows ascending */
static void group_by_expert_(const rs_moe_ws *mw, size_t M, size_t E, size_t k)
{
    int32_t *cnt = mw->count;
    memset(cnt, 0, (E + 1) * sizeof *cnt);
    for (size_t i = 0; i < M * k; i++) cnt[mw->idx[i] + 1]++;
    for (size_t e = 0; e < E; e++) cnt[e + 1] += cnt[e];
    /* fill with a moving cursor per expert, then restore the starts */
    for (size_t i = 0; i < M * k; i++) mw->order[cnt[mw->idx[i]]++] = (int32_t)i;
    for (size_t e = E; e > 0; e--) cnt[e] = cnt[e - 1];
    cnt[0] = 0;
}

/* count, per run r >= 1, the positions whose expert set differs from run 0's and the experts that do */
static void count_route_diff_(const rs_fwd_args *a, int l, size_t k)
{
    const rs_moe_ws *mw = &a->ws->moe;
    for (size_t r = 1; r < a->R; r++) {
        rs_run *run = &a->runs[r];
        if (!run->moe_pos_diff) continue;
        for (size_t t = 0; t < a->n; t++) {
            const int d = rs_moe_route_diff(mw->idx + (r * a->n + t) * k, mw->idx + t * k, (int)k);
            run->moe_pos_diff[l] += d > 0;
            run->moe_slot_diff[l] += d;
        }
    }
}

typedef struct sum_ctx {
    const rs_fwd_args *a;
    size_t d;
    int gated; /* Qwen: shared * sigmoid(sg) */
} sum_ctx;

/* row task: x += out + shared  (Qwen: out + sigmoid(sg) * shared), in transformers' order */
static rs_status sum_row_(void *vctx, size_t row)
{
    const sum_ctx *c = (const sum_ctx *)vctx;
    const rs_moe_ws *mw = &c->a->ws->moe;
    float *x = c->a->ws->x + row * c->d;
    const float *o = mw->out + row * c->d, *sh = mw->sh + row * c->d;
    if (c->gated) {
        const float g = rs_sigmoidf(mw->sg[row]);
        for (size_t j = 0; j < c->d; j++) {
            const float s = g * sh[j];
            const float y = o[j] + s;
            x[j] = x[j] + y;
        }
    } else {
        for (size_t j = 0; j < c->d; j++) {
            const float y = o[j] + sh[j];
            x[j] = x[j] + y;
        }
    }
    return RS_OK;
}

rs_status rs_moe_ffn(const rs_fwd_args *a, int l, const float *nw, rs_norm_weight kind)
{
    const rs_model *m = a->m;
    const rs_moe_config *mo = &m->cfg.moe;
    const rs_layer_weights *w = &m->w.layers[l];
    const rs_backend_ops *op = a->be->ops;
    rs_fwd_ws *ws = a->ws;
    const rs_moe_ws *mw = &ws->moe;
    const size_t d = (size_t)m->cfg.hidden, M = a->R * a->n, E = (size_t)mo->n_experts, k = (size_t)mo->top_k;
    const size_t din = (size_t)mo->expert_in, I = (size_t)mo->intermediate, Is = (size_t)mo->shared_intermediate;
    const int swiglu = mo->activation == RS_ACT_SILU;

    RS_TRY(op->rmsnorm(a->be, M, d, ws->x, d, nw, m->cfg.rms_eps, kind, ws->xn, d));
    RS_TRY(op->linear(a->be, M, E, d, ws->xn, d, w->moe.router, 0.0f, mw->logits, E));
    route_ctx rc = {a, l};
    RS_TRY(op->parallel_for(a->be, M, route_row_, &rc));
    count_route_diff_(a, l, k);
    if (a->routes) memcpy(a->routes + (size_t)l * M * k, mw->idx, M * k * sizeof(int32_t));

    const float *xin = ws->xn;
    if (mo->latent > 0) {
        RS_TRY(op->linear(a->be, M, din, d, ws->xn, d, w->moe.latent_in, 0.0f, mw->lat, din));
        xin = mw->lat;
    }
    group_by_expert_(mw, M, E, k);
    memset(mw->acc, 0, M * din * sizeof(float));
    for (size_t e = 0; e < E; e++) {
        const int32_t b = mw->count[e], n = mw->count[e + 1] - b;
        if (n == 0) continue;
        for (int32_t i = 0; i < n; i++) {
            const size_t row = (size_t)mw->order[b + i] / k;
            memcpy(mw->xe + (size_t)i * din, xin + row * din, din * sizeof(float));
        }
        const float *act = mw->h;
        RS_TRY(op->linear(a->be, (size_t)n, I, din, mw->xe, din, w->moe.up[e], 0.0f, mw->h, I));
        if (swiglu) {
            RS_TRY(op->linear(a->be, (size_t)n, I, din, mw->xe, din, w->moe.gate[e], 0.0f, mw->g, I));
            RS_TRY(op->swiglu(a->be, (size_t)n, I, mw->g, I, mw->h, I));
            act = mw->g;
        } else {
            RS_TRY(op->relu2(a->be, (size_t)n, I, mw->h, I));
        }
        RS_TRY(op->linear(a->be, (size_t)n, din, I, act, I, w->moe.down[e], 0.0f, mw->ye, din));
        for (int32_t i = 0; i < n; i++) { /* acc[row] += w * y, as index_add_ of (y * w) */
            const size_t ent = (size_t)mw->order[b + i], row = ent / k;
            const float wt = mw->w[ent];
            float *dst = mw->acc + row * din;
            const float *y = mw->ye + (size_t)i * din;
            for (size_t j = 0; j < din; j++) {
                const float t = y[j] * wt;
                dst[j] = dst[j] + t;
            }
        }
    }
    if (mo->latent > 0) RS_TRY(op->linear(a->be, M, d, din, mw->acc, din, w->moe.latent_out, 0.0f, mw->out, d));
    else memcpy(mw->out, mw->acc, M * d * sizeof(float));

    /* shared expert on the block input (before any latent projection) */
    if (swiglu) {
        RS_TRY(op->linear(a->be, M, Is, d, ws->xn, d, w->moe.shared_gate, 0.0f, ws->proj, Is));
        RS_TRY(op->linear(a->be, M, Is, d, ws->xn, d, w->moe.shared_up, 0.0f, ws->proj2, Is));
        RS_TRY(op->swiglu(a->be, M, Is, ws->proj, Is, ws->proj2, Is));
    } else {
        RS_TRY(op->linear(a->be, M, Is, d, ws->xn, d, w->moe.shared_up, 0.0f, ws->proj, Is));
        RS_TRY(op->relu2(a->be, M, Is, ws->proj, Is));
    }
    RS_TRY(op->linear(a->be, M, d, Is, ws->proj, Is, w->moe.shared_down, 0.0f, mw->sh, d));
    if (mo->shared_gate) RS_TRY(op->linear(a->be, M, 1, d, ws->xn, d, w->moe.shared_scale, 0.0f, mw->sg, 1));
    sum_ctx sc = {a, d, mo->shared_gate};
    return op->parallel_for(a->be, M, sum_row_, &sc);
}
