/* rs_runner_ws.c — the chunk scratch of a runner (rs_fwd_ws): every buffer sized once at create
 * time for M = R * C rows, so that no step allocates. */
#include "model/rs_runner.h"
#include "rs_check.h"
#include "rs_runner_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXZ(a, b) ((a) > (b) ? (a) : (b))

/* calloc of count floats with an overflow check and a message naming the buffer */
rs_status rs_runner_falloc(float **p, size_t count, const char *what)
{
    *p = NULL;
    if (count == 0) count = 1;
    if (count > SIZE_MAX / sizeof(float))
        return rs_error_set(RS_E_NOMEM, "runner: %s of %zu floats overflows", what, count);
    *p = (float *)calloc(count, sizeof(float));
    if (!*p)
        return rs_error_set(RS_E_NOMEM, "runner: cannot allocate %s (%zu bytes)", what,
                            count * sizeof(float));
    return RS_OK;
}

void rs_runner_ws_free(rs_fwd_ws *ws)
{
    free(ws->x);
    free(ws->xn);
    free(ws->proj);
    free(ws->proj2);
    free(ws->conv);
    free(ws->small);
    free(ws->ssm_v);
    free(ws->ssm_o);
    free(ws->rope_cos);
    free(ws->rope_sin);
    free(ws->rope_inv);
    free(ws->attn_scratch);
    free(ws->logits);
    rs_moe_ws *mw = &ws->moe;
    free(mw->logits);
    free(mw->idx);
    free(mw->w);
    free(mw->route);
    free(mw->order);
    free(mw->count);
    free(mw->lat);
    free(mw->xe);
    free(mw->h);
    free(mw->g);
    free(mw->ye);
    free(mw->acc);
    free(mw->out);
    free(mw->sh);
    free(mw->sg);
    memset(ws, 0, sizeof *ws);
}

/* calloc of count int32 with an overflow check */
static rs_status ialloc_(int32_t **p, size_t count, const char *what)
{
    *p = NULL;
    if (count == 0) count = 1;
    if (count > SIZE_MAX / sizeof(int32_t))
        return rs_error_set(RS_E_NOMEM, "runner: %s of %zu integers overflows", what, count);
    *p = (int32_t *)calloc(count, sizeof(int32_t));
    if (!*p)
        return rs_error_set(RS_E_NOMEM, "runner: cannot allocate %s (%zu bytes)", what, count * sizeof(int32_t));
    return RS_OK;
}

/* the MoE scratch for M rows (rs_moe_ws) */
static rs_status moe_ws_init_(rs_moe_ws *mw, const rs_moe_config *mo, size_t M, size_t d)
{
    const size_t E = (size_t)mo->n_experts, k = (size_t)mo->top_k, din = (size_t)mo->expert_in;
    const size_t I = (size_t)mo->intermediate;
    RS_TRY(rs_runner_falloc(&mw->logits, M * E, "the router logits"));
    RS_TRY(ialloc_(&mw->idx, M * k, "the expert choices"));
    RS_TRY(rs_runner_falloc(&mw->w, M * k, "the expert weights"));
    RS_TRY(rs_runner_falloc(&mw->route, M * RS_MOE_ROUTE_SCRATCH(E, mo->n_group), "the router scratch"));
    RS_TRY(ialloc_(&mw->order, M * k, "the rows by expert"));
    RS_TRY(ialloc_(&mw->count, E + 1, "the rows per expert"));
    RS_TRY(rs_runner_falloc(&mw->lat, mo->latent > 0 ? M * din : 1, "the latent MoE input"));
    RS_TRY(rs_runner_falloc(&mw->xe, M * din, "the rows of an expert"));
    RS_TRY(rs_runner_falloc(&mw->h, M * I, "the expert activations"));
    RS_TRY(rs_runner_falloc(&mw->g, mo->activation == RS_ACT_SILU ? M * I : 1, "the expert gates"));
    RS_TRY(rs_runner_falloc(&mw->ye, M * din, "the expert outputs"));
    RS_TRY(rs_runner_falloc(&mw->acc, M * din, "the routed sum"));
    RS_TRY(rs_runner_falloc(&mw->out, M * d, "the routed output"));
    RS_TRY(rs_runner_falloc(&mw->sh, M * d, "the shared expert output"));
    RS_TRY(rs_runner_falloc(&mw->sg, M, "the shared expert gate"));
    return RS_OK;
}

rs_fwd_widths rs_fwd_widths_of(const rs_model_config *c)
{
    rs_fwd_widths w = {0, 0, 0, 1, 0, 0, 0};
    const size_t I = (size_t)c->mlp.intermediate;
    if (c->layer_has_mlp || c->n_mlp > 0) {
        w.P1 = MAXZ(w.P1, I);
        if (c->mlp.activation == RS_ACT_SILU) w.P2 = MAXZ(w.P2, I);
    }
    if (c->n_gdn > 0) {
        w.P1 = MAXZ(w.P1, (size_t)c->gdn.conv_dim);
        w.P2 = MAXZ(w.P2, (size_t)c->gdn.value_dim);
        w.cw = MAXZ(w.cw, (size_t)c->gdn.conv_dim);
        w.hmax = MAXZ(w.hmax, (size_t)c->gdn.n_v_heads);
        w.so = MAXZ(w.so, (size_t)c->gdn.value_dim);
    }
    if (c->n_mamba > 0) {
        w.P1 = MAXZ(w.P1, (size_t)c->mamba.in_proj_dim);
        w.cw = MAXZ(w.cw, (size_t)c->mamba.conv_dim);
        w.hmax = MAXZ(w.hmax, (size_t)c->mamba.n_heads);
        w.sv = (size_t)c->mamba.d_inner;
        w.so = MAXZ(w.so, (size_t)c->mamba.d_inner);
    }
    if (c->is_moe) { /* the shared expert runs in the projection buffers */
        const size_t Is = (size_t)c->moe.shared_intermediate;
        w.P1 = MAXZ(w.P1, Is);
        if (c->moe.activation == RS_ACT_SILU) w.P2 = MAXZ(w.P2, Is);
    }
    if (c->n_attn > 0) {
        const size_t H = (size_t)c->attn.n_heads, hd = (size_t)c->attn.head_dim;
        w.P1 = MAXZ(w.P1, H * hd * (c->attn.output_gate ? 2 : 1));
        w.P2 = MAXZ(w.P2, 2 * (size_t)c->attn.n_kv_heads * hd);
        w.cw = MAXZ(w.cw, H * hd);
        if (c->attn.use_rope) w.rot = (size_t)c->attn.rotary_dim;
    }
    return w;
}

rs_status rs_runner_ws_init(rs_fwd_ws *ws, const rs_model_config *c, const rs_runner_config *rc,
                          int n_threads)
{
    const size_t M = rc->n_runs * rc->chunk, d = (size_t)c->hidden, V = (size_t)c->vocab;
    const rs_fwd_widths w = rs_fwd_widths_of(c);
    const size_t P1 = w.P1, P2 = w.P2, cw = w.cw, hmax = w.hmax, sv = w.sv, so = w.so, rot = w.rot;
    ws->rows = M;
    ws->P1 = P1;
    ws->P2 = P2;
    ws->hmax = hmax;
    ws->cap = rc->max_tokens;
    RS_TRY(rs_runner_falloc(&ws->x, M * d, "the residual stream"));
    RS_TRY(rs_runner_falloc(&ws->xn, M * d, "the normed stream"));
    RS_TRY(rs_runner_falloc(&ws->proj, M * P1, "the projection scratch"));
    RS_TRY(rs_runner_falloc(&ws->proj2, M * P2, "the second projection scratch"));
    RS_TRY(rs_runner_falloc(&ws->conv, M * cw, "the conv / attention output scratch"));
    RS_TRY(rs_runner_falloc(&ws->small, 4 * M * hmax, "the per-head scalars"));
    RS_TRY(rs_runner_falloc(&ws->ssm_v, M * sv, "the Mamba-2 inputs"));
    RS_TRY(rs_runner_falloc(&ws->ssm_o, M * so, "the SSM outputs"));
    RS_TRY(rs_runner_falloc(&ws->rope_cos, rc->chunk * (rot / 2), "the RoPE table"));
    RS_TRY(rs_runner_falloc(&ws->rope_sin, rc->chunk * (rot / 2), "the RoPE table"));
    RS_TRY(rs_runner_falloc(&ws->rope_inv, rot / 2, "the RoPE frequencies"));
    if (rot > 0) rs_rope_inv_freq(c->attn.rope_theta, rot, ws->rope_inv);
    /* attention score rows: RS_ATTN_BLOCK_ROWS per thread (rs_attn_args.scratch_rows) */
    RS_TRY(rs_runner_falloc(&ws->attn_scratch,
                   c->n_attn > 0 ? (size_t)n_threads * RS_ATTN_BLOCK_ROWS * rc->max_tokens : 1,
                   "the attention scores"));
    RS_TRY(rs_runner_falloc(&ws->logits, M * V, "the logits of a chunk"));
    if (c->is_moe) RS_TRY(moe_ws_init_(&ws->moe, &c->moe, M, d));
    return RS_OK;
}
