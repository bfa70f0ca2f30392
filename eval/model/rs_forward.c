/* rs_forward.c — per-family block forward over a chunk, R runs stacked (see rs_forward.h).
 *
 * Legend: R runs, n chunk positions, M = R * n stacked rows (row r * n + t), d hidden,
 * V vocab. Every buffer below lives in rs_fwd_ws (sized by the runner); nothing allocates.
 */
#include "model/rs_forward.h"
#include "model/rs_moe.h"
#include "replayssm/quant/rs_mathf.h"
#include "rs_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* plane k of the per-head scalar scratch, [M][H] with row stride H */
static float *plane_(const rs_fwd_ws *ws, int k)
{
    return ws->small + (size_t)k * ws->rows * ws->hmax;
}

static rs_norm_weight norm_kind_(const rs_model *m)
{
    return m->cfg.family == RS_FAMILY_QWEN35 ? RS_NORM_ONE_PLUS : RS_NORM_PLAIN;
}

/* After the head tasks of layer l: mark runs whose heads went non-finite, naming the head with
 * the earliest step (token position) over the layers of this forward (ties: the lower layer,
 * then the lower head), so the mark is where the run's outputs first became non-finite, not
 * merely the first head index that did. The message names neither the run index nor the policy
 * (the caller knows which run it asked about; the runner's indices count the reference as run 0,
 * the evaluator's do not, so an index in the message would mislead one of the two). */
static void mark_nonfinite_(const rs_fwd_args *a, int l, size_t H)
{
    for (size_t r = 0; r < a->R; r++) {
        rs_run *run = &a->runs[r];
        if (run->status != RS_OK && run->status != RS_E_NONFINITE) continue;
        int64_t best = -1;
        size_t best_h = 0;
        for (size_t h = 0; h < H; h++) {
            const int64_t step = rs_head_first_nonfinite(&run->heads[l][h]);
            if (step >= 0 && (best < 0 || step < best)) {
                best = step;
                best_h = h;
            }
        }
        if (best < 0) continue;
        if (run->status == RS_E_NONFINITE && run->nf_step >= 0 && run->nf_step <= best) continue;
        run->status = RS_E_NONFINITE;
        run->nf_layer = l;
        run->nf_head = (int32_t)best_h;
        run->nf_step = best;
        snprintf(run->message, sizeof run->message,
                 "layer %d head %zu: first non-finite SSM value at token %lld (the head's output there, or the "
                 "state it left for the next token)",
                 l, best_h, (long long)best);
    }
}

/* ---- Gated DeltaNet (Qwen3.5 linear_attention) ------------------------------------------ */

typedef struct gdn_ctx {
    const rs_fwd_args *a;
    int l;
} gdn_ctx;

/* row task: q, k L2-normalised per key head (q also scaled by dk^-0.5); per value head
 * beta = sigmoid(b), alpha = exp(-exp(A_log) * softplus(a + dt_bias)). */
static rs_status gdn_prep_row_(void *vctx, size_t row)
{
    const gdn_ctx *c = (const gdn_ctx *)vctx;
    const rs_gdn_config *g = &c->a->m->cfg.gdn;
    const rs_layer_weights *w = &c->a->m->w.layers[c->l];
    const rs_fwd_ws *ws = c->a->ws;
    const size_t dk = (size_t)g->k_head_dim, Hk = (size_t)g->n_k_heads, Hv = (size_t)g->n_v_heads;
    float *q = ws->conv + row * (size_t)g->conv_dim; /* [Hk][dk] | k [Hk][dk] | v [Hv][dv] */
    float *k = q + (size_t)g->key_dim;
    const float scale = (float)(1.0 / sqrt((double)dk));
    for (size_t h = 0; h < Hk; h++) {
        rs_l2norm(q + h * dk, dk, 1e-6f);
        for (size_t i = 0; i < dk; i++) q[h * dk + i] *= scale;
        rs_l2norm(k + h * dk, dk, 1e-6f);
    }
    const float *pa = plane_(ws, 0) + row * Hv, *pb = plane_(ws, 1) + row * Hv;
    float *palpha = plane_(ws, 2) + row * Hv, *pbeta = plane_(ws, 3) + row * Hv;
    for (size_t h = 0; h < Hv; h++) {
        const float A = -rs_expf(w->gdn.A_log[h]);
        const float gl = A * rs_softplus(pa[h] + w->gdn.dt_bias[h]);
        palpha[h] = rs_expf(gl);
        pbeta[h] = rs_sigmoid(pb[h]);
    }
    return RS_OK;
}

/* head task i = r * Hv + h: the chunk's n tokens of value head h of run r, in order. */
static rs_status gdn_head_(void *vctx, size_t i)
{
    const gdn_ctx *c = (const gdn_ctx *)vctx;
    const rs_fwd_args *a = c->a;
    const rs_gdn_config *g = &a->m->cfg.gdn;
    const rs_fwd_ws *ws = a->ws;
    const size_t Hv = (size_t)g->n_v_heads, dk = (size_t)g->k_head_dim, dv = (size_t)g->v_head_dim;
    const size_t r = i / Hv, h = i % Hv, hk = h / (Hv / (size_t)g->n_k_heads);
    rs_head *hd = &a->runs[r].heads[c->l][h];
    for (size_t t = 0; t < a->n; t++) {
        const size_t row = r * a->n + t;
        const float *qrow = ws->conv + row * (size_t)g->conv_dim;
        rs_ssm_token tok;
        tok.alpha = plane_(ws, 2)[row * Hv + h];
        tok.beta = plane_(ws, 3)[row * Hv + h];
        tok.q = qrow + hk * dk;
        tok.k = qrow + (size_t)g->key_dim + hk * dk;
        tok.v = qrow + 2 * (size_t)g->key_dim + h * dv;
        const rs_status st = rs_head_decode(hd, &tok, ws->ssm_o + row * (size_t)g->value_dim + h * dv);
        if (st != RS_OK && st != RS_E_NONFINITE) return st; /* non-finite: marked per run */
    }
    return RS_OK;
}

static rs_status gdn_layer_(const rs_fwd_args *a, int l)
{
    const rs_model *m = a->m;
    const rs_gdn_config *g = &m->cfg.gdn;
    const rs_layer_weights *w = &m->w.layers[l];
    const rs_backend_ops *op = a->be->ops;
    rs_fwd_ws *ws = a->ws;
    const size_t d = (size_t)m->cfg.hidden, M = a->R * a->n, cd = (size_t)g->conv_dim;
    const size_t vd = (size_t)g->value_dim, Hv = (size_t)g->n_v_heads, dv = (size_t)g->v_head_dim;

    RS_TRY(op->rmsnorm(a->be, M, d, ws->x, d, w->norm, m->cfg.rms_eps, RS_NORM_ONE_PLUS, ws->xn, d));
    RS_TRY(op->linear(a->be, M, cd, d, ws->xn, d, w->gdn.in_qkv, 0.0f, ws->proj, cd)); /* [M][cd] */
    RS_TRY(op->linear(a->be, M, vd, d, ws->xn, d, w->gdn.in_z, 0.0f, ws->proj2, vd));  /* z [M][vd] */
    RS_TRY(op->linear(a->be, M, Hv, d, ws->xn, d, w->gdn.in_a, 0.0f, plane_(ws, 0), Hv));
    RS_TRY(op->linear(a->be, M, Hv, d, ws->xn, d, w->gdn.in_b, 0.0f, plane_(ws, 1), Hv));
    for (size_t r = 0; r < a->R; r++) /* conv (no bias) + SiLU, each run with its own state */
        RS_TRY(op->conv1d(a->be, a->n, cd, (size_t)g->conv_kernel, ws->proj + r * a->n * cd, cd,
                          a->runs[r].conv_state[l], w->gdn.conv_w, NULL, 1,
                          ws->conv + r * a->n * cd, cd));
    gdn_ctx c = {a, l};
    RS_TRY(op->parallel_for(a->be, M, gdn_prep_row_, &c));
    RS_TRY(op->parallel_for(a->be, a->R * Hv, gdn_head_, &c));
    mark_nonfinite_(a, l, Hv);
    /* per value head: y = w * rms(o) * silu(z) */
    RS_TRY(op->rmsnorm_gated(a->be, M * Hv, dv, dv, ws->ssm_o, dv, ws->proj2, dv, w->gdn.norm, dv,
                             m->cfg.rms_eps, RS_GATE_AFTER_NORM, ws->ssm_o, dv));
    return op->linear(a->be, M, d, vd, ws->ssm_o, vd, w->gdn.out, 1.0f, ws->x, d); /* x += out */
}

/* ---- Mamba-2 (NemotronH 'M') -------------------------------------------------------------- */

typedef struct mamba_ctx {
    const rs_fwd_args *a;
    int l;
} mamba_ctx;

/* row task: dt = softplus(dt_raw + dt_bias) [clamped], alpha = exp(dt * A), v = dt * x. */
static rs_status mamba_prep_row_(void *vctx, size_t row)
{
    const mamba_ctx *c = (const mamba_ctx *)vctx;
    const rs_mamba2_config *mc = &c->a->m->cfg.mamba;
    const rs_layer_weights *w = &c->a->m->w.layers[c->l];
    const rs_fwd_ws *ws = c->a->ws;
    const size_t H = (size_t)mc->n_heads, P = (size_t)mc->head_dim;
    const float *dt_raw = ws->proj + row * (size_t)mc->in_proj_dim + (size_t)mc->d_inner + (size_t)mc->conv_dim;
    const float *x = ws->conv + row * (size_t)mc->conv_dim; /* x [H][P] | B [G][N] | C [G][N] */
    float *v = ws->ssm_v + row * (size_t)mc->d_inner;
    float *pdt = plane_(ws, 1) + row * H, *palpha = plane_(ws, 2) + row * H;
    const float dt_min = (float)mc->time_step_min;
    for (size_t h = 0; h < H; h++) {
        float dt = rs_softplus(dt_raw[h] + w->mamba.dt_bias[h]);
        if (c->a->dt_mode == RS_DT_CLAMP_MIN && dt < dt_min) dt = dt_min;
        const float A = -rs_expf(w->mamba.A_log[h]);
        pdt[h] = dt;
        palpha[h] = rs_expf(dt * A); /* rs_mathf.h: the GPU computes the same bits */
        for (size_t p = 0; p < P; p++) v[h * P + p] = dt * x[h * P + p];
    }
    return RS_OK;
}

/* head task i = r * H + h: y_h = S_t C_g + D_h x_h for the chunk's n tokens. */
static rs_status mamba_head_(void *vctx, size_t i)
{
    const mamba_ctx *c = (const mamba_ctx *)vctx;
    const rs_fwd_args *a = c->a;
    const rs_mamba2_config *mc = &a->m->cfg.mamba;
    const rs_fwd_ws *ws = a->ws;
    const size_t H = (size_t)mc->n_heads, P = (size_t)mc->head_dim, N = (size_t)mc->d_state;
    const size_t G = (size_t)mc->n_groups, di = (size_t)mc->d_inner;
    const size_t r = i / H, h = i % H, grp = h / (H / G);
    const float Dh = a->m->w.layers[c->l].mamba.D[h];
    rs_head *hd = &a->runs[r].heads[c->l][h];
    for (size_t t = 0; t < a->n; t++) {
        const size_t row = r * a->n + t;
        const float *xrow = ws->conv + row * (size_t)mc->conv_dim;
        float *o = ws->ssm_o + row * di + h * P;
        rs_ssm_token tok;
        tok.alpha = plane_(ws, 2)[row * H + h];
        tok.beta = 0.0f;
        tok.v = ws->ssm_v + row * di + h * P;
        tok.k = xrow + di + grp * N;
        tok.q = xrow + di + G * N + grp * N;
        const rs_status st = rs_head_decode(hd, &tok, o);
        if (st != RS_OK && st != RS_E_NONFINITE) return st;
        for (size_t p = 0; p < P; p++) o[p] = o[p] + xrow[h * P + p] * Dh; /* D skip */
    }
    return RS_OK;
}

static rs_status mamba_layer_(const rs_fwd_args *a, int l)
{
    const rs_model *m = a->m;
    const rs_mamba2_config *mc = &m->cfg.mamba;
    const rs_layer_weights *w = &m->w.layers[l];
    const rs_backend_ops *op = a->be->ops;
    rs_fwd_ws *ws = a->ws;
    const size_t d = (size_t)m->cfg.hidden, M = a->R * a->n, ip = (size_t)mc->in_proj_dim;
    const size_t cd = (size_t)mc->conv_dim, di = (size_t)mc->d_inner, H = (size_t)mc->n_heads;

    RS_TRY(op->rmsnorm(a->be, M, d, ws->x, d, w->norm, m->cfg.rms_eps, RS_NORM_PLAIN, ws->xn, d));
    RS_TRY(op->linear(a->be, M, ip, d, ws->xn, d, w->mamba.in_proj, 0.0f, ws->proj, ip)); /* z | xBC | dt */
    for (size_t r = 0; r < a->R; r++)
        RS_TRY(op->conv1d(a->be, a->n, cd, (size_t)mc->conv_kernel, ws->proj + r * a->n * ip + di, ip,
                          a->runs[r].conv_state[l], w->mamba.conv_w, w->mamba.conv_b, 1,
                          ws->conv + r * a->n * cd, cd));
    mamba_ctx c = {a, l};
    RS_TRY(op->parallel_for(a->be, M, mamba_prep_row_, &c));
    RS_TRY(op->parallel_for(a->be, a->R * H, mamba_head_, &c));
    mark_nonfinite_(a, l, H);
    /* Zamba2RMSNormGated: t = y * silu(z), normalised per group of d_inner / G */
    RS_TRY(op->rmsnorm_gated(a->be, M, di, di / (size_t)mc->n_groups, ws->ssm_o, di, ws->proj, ip,
                             w->mamba.norm, di, m->cfg.rms_eps, RS_GATE_BEFORE_NORM, ws->ssm_o, di));
    return op->linear(a->be, M, d, di, ws->ssm_o, di, w->mamba.out, 1.0f, ws->x, d);
}

/* ---- attention (Qwen3.5 gated + q/k norm + partial RoPE; NemotronH plain NoPE) ------------ */

typedef struct attn_ctx {
    const rs_fwd_args *a;
    size_t qw, q_hstride, kvw;
} attn_ctx;

/* row task: partial RoPE of the row's query and key heads at position pos + t */
static rs_status attn_rope_row_(void *vctx, size_t row)
{
    const attn_ctx *c = (const attn_ctx *)vctx;
    const rs_attn_config *ac = &c->a->m->cfg.attn;
    const rs_fwd_ws *ws = c->a->ws;
    const size_t t = row % c->a->n, rot = (size_t)ac->rotary_dim, hd = (size_t)ac->head_dim;
    const float *cs = ws->rope_cos + t * (rot / 2), *sn = ws->rope_sin + t * (rot / 2);
    float *q = ws->proj + row * c->qw, *k = ws->proj2 + row * c->kvw;
    for (size_t h = 0; h < (size_t)ac->n_heads; h++) rs_rope_apply(q + h * c->q_hstride, rot, cs, sn);
    for (size_t h = 0; h < (size_t)ac->n_kv_heads; h++) rs_rope_apply(k + h * hd, rot, cs, sn);
    return RS_OK;
}

/* row task: attention output times sigmoid(gate) (Qwen3.5 output gate) */
static rs_status attn_gate_row_(void *vctx, size_t row)
{
    const attn_ctx *c = (const attn_ctx *)vctx;
    const rs_attn_config *ac = &c->a->m->cfg.attn;
    const rs_fwd_ws *ws = c->a->ws;
    const size_t hd = (size_t)ac->head_dim, H = (size_t)ac->n_heads;
    float *o = ws->conv + row * H * hd;
    const float *q = ws->proj + row * c->qw;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < hd; i++) o[h * hd + i] *= rs_sigmoid(q[h * c->q_hstride + hd + i]);
    return RS_OK;
}

static rs_status attn_layer_(const rs_fwd_args *a, int l)
{
    const rs_model *m = a->m;
    const rs_attn_config *ac = &m->cfg.attn;
    const rs_layer_weights *w = &m->w.layers[l];
    const rs_backend_ops *op = a->be->ops;
    rs_fwd_ws *ws = a->ws;
    const size_t d = (size_t)m->cfg.hidden, M = a->R * a->n, n = a->n;
    const size_t H = (size_t)ac->n_heads, Hkv = (size_t)ac->n_kv_heads, hd = (size_t)ac->head_dim;
    attn_ctx c;
    c.a = a;
    c.q_hstride = ac->output_gate ? 2 * hd : hd; /* Qwen3.5: per head [q(hd) | gate(hd)] */
    c.qw = H * c.q_hstride;
    c.kvw = Hkv * hd;
    float *q = ws->proj, *k = ws->proj2, *v = ws->proj2 + M * c.kvw; /* q [M][qw], k, v [M][kvw] */

    RS_TRY(op->rmsnorm(a->be, M, d, ws->x, d, w->norm, m->cfg.rms_eps, norm_kind_(m), ws->xn, d));
    RS_TRY(op->linear(a->be, M, c.qw, d, ws->xn, d, w->attn.q, 0.0f, q, c.qw));
    RS_TRY(op->linear(a->be, M, c.kvw, d, ws->xn, d, w->attn.k, 0.0f, k, c.kvw));
    RS_TRY(op->linear(a->be, M, c.kvw, d, ws->xn, d, w->attn.v, 0.0f, v, c.kvw));
    if (ac->qk_norm) { /* RMSNorm(1+w) over head_dim of every head */
        RS_TRY(op->rmsnorm(a->be, M * H, hd, q, c.q_hstride, w->attn.q_norm, m->cfg.rms_eps,
                           RS_NORM_ONE_PLUS, q, c.q_hstride));
        RS_TRY(op->rmsnorm(a->be, M * Hkv, hd, k, hd, w->attn.k_norm, m->cfg.rms_eps,
                           RS_NORM_ONE_PLUS, k, hd));
    }
    if (ac->use_rope && ac->rotary_dim > 0) {
        const size_t rot = (size_t)ac->rotary_dim;
        for (size_t t = 0; t < n; t++)
            rs_rope_cos_sin(ws->rope_inv, rot, a->pos + t, ws->rope_cos + t * (rot / 2),
                            ws->rope_sin + t * (rot / 2));
        RS_TRY(op->parallel_for(a->be, M, attn_rope_row_, &c));
    }
    RS_CHECK(a->pos + n <= ws->cap, RS_E_SHAPE,
             "layer %d: position %zu exceeds the KV cache capacity %zu (runner max_tokens)", l,
             a->pos + n, ws->cap);
    for (size_t r = 0; r < a->R; r++) {
        rs_run *run = &a->runs[r];
        for (size_t t = 0; t < n; t++)
            for (size_t g = 0; g < Hkv; g++) {
                const size_t row = r * n + t, dst = (g * ws->cap + a->pos + t) * hd;
                memcpy(run->k_cache[l] + dst, k + row * c.kvw + g * hd, hd * sizeof(float));
                memcpy(run->v_cache[l] + dst, v + row * c.kvw + g * hd, hd * sizeof(float));
            }
        rs_attn_args aa;
        aa.T = n;
        aa.n_past = a->pos;
        aa.H = H;
        aa.Hkv = Hkv;
        aa.hd = hd;
        aa.Q = q + r * n * c.qw;
        aa.ldq = c.qw;
        aa.q_hstride = c.q_hstride;
        aa.Kc = run->k_cache[l];
        aa.Vc = run->v_cache[l];
        aa.cap = ws->cap;
        aa.scale = (float)(1.0 / sqrt((double)hd));
        aa.O = ws->conv + r * n * H * hd;
        aa.ldo = H * hd;
        aa.scratch = ws->attn_scratch;
        aa.scratch_rows = RS_ATTN_BLOCK_ROWS; /* as allocated by the runner */
        RS_TRY(op->attention(a->be, &aa));
    }
    if (ac->output_gate) RS_TRY(op->parallel_for(a->be, M, attn_gate_row_, &c));
    return op->linear(a->be, M, d, H * hd, ws->conv, H * hd, w->attn.o, 1.0f, ws->x, d);
}

/* ---- MLPs ------------------------------------------------------------------------------------ */

/* x += MLP(norm(x; nw)): SwiGLU down(silu(gate x) * up x) or relu^2 down(relu(up x)^2) */
static rs_status mlp_(const rs_fwd_args *a, int l, const float *nw)
{
    const rs_model *m = a->m;
    const rs_layer_weights *w = &m->w.layers[l];
    const rs_backend_ops *op = a->be->ops;
    rs_fwd_ws *ws = a->ws;
    const size_t d = (size_t)m->cfg.hidden, M = a->R * a->n, I = (size_t)m->cfg.mlp.intermediate;
    RS_TRY(op->rmsnorm(a->be, M, d, ws->x, d, nw, m->cfg.rms_eps, norm_kind_(m), ws->xn, d));
    if (m->cfg.mlp.activation == RS_ACT_SILU) {
        RS_TRY(op->linear(a->be, M, I, d, ws->xn, d, w->mlp.gate, 0.0f, ws->proj, I));
        RS_TRY(op->linear(a->be, M, I, d, ws->xn, d, w->mlp.up, 0.0f, ws->proj2, I));
        RS_TRY(op->swiglu(a->be, M, I, ws->proj, I, ws->proj2, I));
    } else {
        RS_TRY(op->linear(a->be, M, I, d, ws->xn, d, w->mlp.up, 0.0f, ws->proj, I));
        RS_TRY(op->relu2(a->be, M, I, ws->proj, I));
    }
    return op->linear(a->be, M, d, I, ws->proj, I, w->mlp.down, 1.0f, ws->x, d);
}

/* ---- the chunk ---------------------------------------------------------------------------- */

rs_status rs_forward_chunk(const rs_fwd_args *a)
{
    RS_CHECK(a && a->m && a->be && a->runs && a->ws && a->tokens && a->R >= 1, RS_E_INVAL,
             "rs_forward_chunk: NULL argument");
    const rs_model *m = a->m;
    const rs_backend_ops *op = a->be->ops;
    rs_fwd_ws *ws = a->ws;
    const size_t d = (size_t)m->cfg.hidden, V = (size_t)m->cfg.vocab, n = a->n, M = a->R * n;
    RS_CHECK(n >= 1 && M <= ws->rows, RS_E_INVAL,
             "rs_forward_chunk: chunk of %zu positions x %zu runs exceeds the scratch (%zu rows)", n,
             a->R, ws->rows);

    for (size_t r = 0; r < a->R; r++)
        RS_TRY(op->embed(a->be, a->tokens, n, m->w.embed, V, d, ws->x + r * n * d, d));
    if (a->hidden) memcpy(a->hidden, ws->x, M * d * sizeof(float));

    for (int l = 0; l < m->cfg.n_layers; l++) {
        const rs_layer_weights *w = &m->w.layers[l];
        switch (m->cfg.layer_kind[l]) {
        case RS_LAYER_GDN: RS_TRY(gdn_layer_(a, l)); break;
        case RS_LAYER_MAMBA2: RS_TRY(mamba_layer_(a, l)); break;
        case RS_LAYER_ATTENTION: RS_TRY(attn_layer_(a, l)); break;
        case RS_LAYER_MLP: RS_TRY(mlp_(a, l, w->norm)); break;
        case RS_LAYER_MOE: RS_TRY(rs_moe_ffn(a, l, w->norm, RS_NORM_PLAIN)); break;
        default:
            return rs_error_set(RS_E_UNSUPPORTED, "layer %d: kind %d is not supported yet", l,
                                (int)m->cfg.layer_kind[l]);
        }
        if (m->cfg.mlp_is_moe) RS_TRY(rs_moe_ffn(a, l, w->post_norm, RS_NORM_ONE_PLUS)); /* Qwen3.5-MoE */
        else if (m->cfg.layer_has_mlp) RS_TRY(mlp_(a, l, w->post_norm));               /* Qwen3.5: + MLP */
        if (a->hidden) memcpy(a->hidden + (size_t)(l + 1) * M * d, ws->x, M * d * sizeof(float));
    }

    RS_TRY(op->rmsnorm(a->be, M, d, ws->x, d, m->w.final_norm, m->cfg.rms_eps, norm_kind_(m), ws->xn, d));
    return op->linear(a->be, M, V, d, ws->xn, d, m->w.lm_head, 0.0f, ws->logits, V);
}
