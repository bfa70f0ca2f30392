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
    memset(ws, 0, sizeof *ws);
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
    return RS_OK;
}
