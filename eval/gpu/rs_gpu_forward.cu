/* rs_gpu_forward.cu — the forward of one chunk on the GPU for the reference and every run of a
 * batch of streams (books), the twin of eval/model/rs_forward.c: the same layers, in the same
 * order, on the same stacked rows (row group g = j * (R + 1) + run of the batch's stream j,
 * position t -> row g * n + t), each CPU op replaced by its dense/rs_dense_ops.h twin, every GEMM over
 * all M = G * n rows (rs_gpu_linear, rs_gpu_weights.cu), the SSM recurrence by the chunked state engine
 * (rs_cuda_scan.h, one launch per layer for all runs, streams and heads), the MoE FFN by rs_gpu_moe.cu. --compute twin (im->twin,
 * docs/evaluator.md "The twin compute mode") swaps in the CPU's arithmetic: the norms' sequential sums,
 * the double attention (rsg_attention_twin) and, for the reference and conventional fp32 runs, the
 * engine's recurrence (rsg_twin_ssm after the scan); the GEMM method is f64 (rs_gpu_weights.cu). The batch is the
 * streams b_s0 .. b_s0 + b_ns - 1, all at position b_pos with n new tokens each (the scorer
 * groups them, rs_scorer_cuda.cu); their per-run state (conv states, KV caches, scan states)
 * starts at row group b_r0 = b_s0 * (R + 1). */
#include "rs_gpu_scorer_impl.h"
#include "dense/rs_dense_ops.h"

#include <math.h>
#include <string.h>

#include "rs_check.h"

void rs_gpu_mark(gpu_impl *im, int stage)
{
    if (im->n_marks >= RS_GPU_MAX_MARKS) return; /* past the pool: counted to the next stage */
    cudaEventRecord(im->ev[im->n_marks], im->s);
    im->ev_stage[im->n_marks++] = stage;
}

static rsg_norm_weight norm_kind_(const rs_model *m)
{
    return m->cfg.family == RS_FAMILY_QWEN35 ? RSG_NORM_ONE_PLUS : RSG_NORM_PLAIN;
}

static float *plane_(const gpu_impl *im, int k, size_t M) { return im->small + (size_t)k * M * im->hmax; }

/* --compute twin (docs/evaluator.md "The twin compute mode"): the norms with their sums in the CPU's order */
static rs_status rmsnorm_(const gpu_impl *im, int M, int n, const float *X, size_t ldx, const float *w, float eps,
                          rsg_norm_weight kind, float *Y, size_t ldy)
{
    return (im->twin ? rsg_rmsnorm_seq : rsg_rmsnorm)(M, n, X, ldx, w, eps, kind, Y, ldy, im->s);
}

static rs_status rmsnorm_gated_(const gpu_impl *im, int M, int n, int gs, const float *X, size_t ldx, const float *Z,
                                size_t ldz, const float *w, int w_len, float eps, rsg_gate_order order, float *Y,
                                size_t ldy)
{
    return (im->twin ? rsg_rmsnorm_gated_seq : rsg_rmsnorm_gated)(M, n, gs, X, ldx, Z, ldz, w, w_len, eps, order, Y,
                                                                  ldy, im->s);
}

/* twin: the recurrence of the twin runs (the reference, conventional fp32 runs) as the engine computes it,
   overwriting the scan's outputs of those runs (the scan has just run for every run of the batch: its
   non-finite marks and the other runs' outputs stay) */
static rs_status twin_ssm_(gpu_impl *im, int kind, int lo, const rs_cuda_scan_io *io, rsg_twin_ssm_args *ta)
{
    if (!im->twin || im->nt == 0) return RS_OK;
    ta->q = io->q, ta->ld_q = io->ld_q; /* the scan's inputs and outputs, read and written in its layout */
    ta->k = io->k, ta->ld_k = io->ld_k;
    ta->v = io->v, ta->ld_v = io->ld_v;
    ta->o = io->o, ta->ld_o = io->ld_o;
    ta->RS = im->RS;
    ta->n_streams = (int)im->b_ns;
    ta->runs = im->d_twin_runs;
    ta->nt = im->nt;
    ta->S = im->twin_state[kind] + (size_t)lo * im->twin_layer[kind] + im->b_s0 * (im->twin_layer[kind] / im->S);
    return rsg_twin_ssm(ta, im->s);
}

static rs_status gdn_layer_(const rs_scorer *sc, gpu_impl *im, int l, size_t n)
{
    const rs_model *m = sc->m;
    const rs_gdn_config *g = &m->cfg.gdn;
    const rs_layer_weights *w = &m->w.layers[l];
    const size_t d = (size_t)m->cfg.hidden, M = (size_t)im->G * n, cd = (size_t)g->conv_dim;
    const size_t vd = (size_t)g->value_dim, Hv = (size_t)g->n_v_heads, dv = (size_t)g->v_head_dim;
    const float eps = m->cfg.rms_eps;
    RS_TRY(rmsnorm_(im, (int)M, (int)d, im->x, d, RS_GPU_W(im, w->norm), eps, RSG_NORM_ONE_PLUS, im->xn, d));
    rs_gpu_mark(im, GS_OTHER);
    RS_TRY(rs_gpu_linear(im, M, cd, d, im->xn, d, RS_GPU_W(im, w->gdn.in_qkv), 0.0f, im->proj, cd));
    RS_TRY(rs_gpu_linear(im, M, vd, d, im->xn, d, RS_GPU_W(im, w->gdn.in_z), 0.0f, im->proj2, vd));
    float *pa = plane_(im, 0, M), *pb = plane_(im, 1, M), *palpha = plane_(im, 2, M), *pbeta = plane_(im, 3, M);
    RS_TRY(rs_gpu_linear(im, M, Hv, d, im->xn, d, RS_GPU_W(im, w->gdn.in_a), 0.0f, pa, Hv));
    RS_TRY(rs_gpu_linear(im, M, Hv, d, im->xn, d, RS_GPU_W(im, w->gdn.in_b), 0.0f, pb, Hv));
    RS_TRY(rsg_conv1d(im->G, (int)n, (int)cd, g->conv_kernel, im->proj, cd,
                    im->layers[l].conv_state + im->b_r0 * cd * (size_t)(g->conv_kernel - 1),
                    RS_GPU_W(im, w->gdn.conv_w), NULL, 1, im->conv, cd, im->s));
    RS_TRY((im->twin ? rsg_gdn_prep_seq : rsg_gdn_prep)((int)M, g->n_k_heads, g->k_head_dim, (int)Hv, im->conv, cd, pa,
                                                       pb, RS_GPU_W(im, w->gdn.A_log), RS_GPU_W(im, w->gdn.dt_bias),
                                                       palpha, pbeta, im->s));
    rs_gpu_mark(im, GS_OTHER);
    rs_cuda_scan_io io;
    memset(&io, 0, sizeof io);
    io.T = (int)n;
    io.alpha = palpha;
    io.beta = pbeta;
    io.ld_a = Hv;
    io.q = im->conv;
    io.ld_q = cd;
    io.k = im->conv + g->key_dim;
    io.ld_k = cd;
    io.v = im->conv + 2 * (size_t)g->key_dim;
    io.ld_v = cd;
    io.o = im->ssm_o;
    io.ld_o = vd;
    RS_TRY(rs_cuda_scan_chunk_runs(im->scan_gdn, im->layers[l].ssm, (int)im->b_r0, im->G, im->b_pos, &io, im->s));
    rsg_twin_ssm_args ta;
    memset(&ta, 0, sizeof ta);
    ta.gdn = 1;
    ta.T = (int)n;
    ta.H = (int)Hv;
    ta.rep = (int)Hv / g->n_k_heads;
    ta.dk = g->k_head_dim;
    ta.dv = (int)dv;
    ta.alpha = palpha;
    ta.beta = pbeta;
    ta.ld_a = Hv;
    RS_TRY(twin_ssm_(im, 0, im->layers[l].ssm, &io, &ta));
    rs_gpu_mark(im, GS_REC);
    /* per value head: y = w * rms(o) * silu(z) */
    RS_TRY(rmsnorm_gated_(im, (int)(M * Hv), (int)dv, (int)dv, im->ssm_o, dv, im->proj2, dv, RS_GPU_W(im, w->gdn.norm),
                        (int)dv, eps, RSG_GATE_AFTER_NORM, im->ssm_o, dv));
    rs_gpu_mark(im, GS_OTHER);
    return rs_gpu_linear(im, M, d, vd, im->ssm_o, vd, RS_GPU_W(im, w->gdn.out), 1.0f, im->x, d);
}

static rs_status mamba_layer_(const rs_scorer *sc, gpu_impl *im, int l, size_t n)
{
    const rs_model *m = sc->m;
    const rs_mamba2_config *mc = &m->cfg.mamba;
    const rs_layer_weights *w = &m->w.layers[l];
    const size_t d = (size_t)m->cfg.hidden, M = (size_t)im->G * n, ip = (size_t)mc->in_proj_dim;
    const size_t cd = (size_t)mc->conv_dim, di = (size_t)mc->d_inner, H = (size_t)mc->n_heads;
    const size_t P = (size_t)mc->head_dim, N = (size_t)mc->d_state, G = (size_t)mc->n_groups;
    RS_TRY(rmsnorm_(im, (int)M, (int)d, im->x, d, RS_GPU_W(im, w->norm), m->cfg.rms_eps, RSG_NORM_PLAIN, im->xn, d));
    rs_gpu_mark(im, GS_OTHER);
    RS_TRY(rs_gpu_linear(im, M, ip, d, im->xn, d, RS_GPU_W(im, w->mamba.in_proj), 0.0f, im->proj, ip)); /* z|xBC|dt */
    RS_TRY(rsg_conv1d(im->G, (int)n, (int)cd, mc->conv_kernel, im->proj + di, ip,
                    im->layers[l].conv_state + im->b_r0 * cd * (size_t)(mc->conv_kernel - 1),
                    RS_GPU_W(im, w->mamba.conv_w), w->mamba.conv_b ? RS_GPU_W(im, w->mamba.conv_b) : NULL, 1,
                    im->conv, cd, im->s));
    float *palpha = plane_(im, 2, M);
    RS_TRY(rsg_mamba_prep((int)M, (int)H, (int)P, im->proj + di + cd, ip, RS_GPU_W(im, w->mamba.dt_bias),
                        RS_GPU_W(im, w->mamba.A_log), sc->cfg.dt_mode == RS_DT_CLAMP_MIN,
                        (float)mc->time_step_min, im->conv, cd, palpha, im->ssm_v, di, im->s));
    rs_gpu_mark(im, GS_OTHER);
    rs_cuda_scan_io io;
    memset(&io, 0, sizeof io);
    io.T = (int)n;
    io.alpha = palpha;
    io.ld_a = H;
    io.v = im->ssm_v;
    io.ld_v = di;
    io.k = im->conv + di; /* B [G][N] */
    io.ld_k = cd;
    io.q = im->conv + di + G * N; /* C [G][N] */
    io.ld_q = cd;
    io.o = im->ssm_o;
    io.ld_o = di;
    RS_TRY(rs_cuda_scan_chunk_runs(im->scan_mamba, im->layers[l].ssm, (int)im->b_r0, im->G, im->b_pos, &io, im->s));
    rsg_twin_ssm_args ta;
    memset(&ta, 0, sizeof ta);
    ta.gdn = 0;
    ta.T = (int)n;
    ta.H = (int)H;
    ta.rep = (int)(H / G);
    ta.dk = (int)N;
    ta.dv = (int)P;
    ta.alpha = palpha;
    ta.ld_a = H;
    RS_TRY(twin_ssm_(im, 1, im->layers[l].ssm, &io, &ta));
    rs_gpu_mark(im, GS_REC);
    RS_TRY(rsg_mamba_dskip((int)M, (int)H, (int)P, im->ssm_o, di, im->conv, cd, RS_GPU_W(im, w->mamba.D), im->s));
    /* Zamba2RMSNormGated: t = y * silu(z), normalised per group of d_inner / G */
    RS_TRY(rmsnorm_gated_(im, (int)M, (int)di, (int)(di / G), im->ssm_o, di, im->proj, ip, RS_GPU_W(im, w->mamba.norm),
                        (int)di, m->cfg.rms_eps, RSG_GATE_BEFORE_NORM, im->ssm_o, di));
    rs_gpu_mark(im, GS_OTHER);
    return rs_gpu_linear(im, M, d, di, im->ssm_o, di, RS_GPU_W(im, w->mamba.out), 1.0f, im->x, d);
}

static rs_status attn_layer_(const rs_scorer *sc, gpu_impl *im, int l, size_t n)
{
    const rs_model *m = sc->m;
    const rs_attn_config *ac = &m->cfg.attn;
    const rs_layer_weights *w = &m->w.layers[l];
    const size_t d = (size_t)m->cfg.hidden, M = (size_t)im->G * n;
    const size_t H = (size_t)ac->n_heads, Hkv = (size_t)ac->n_kv_heads, hd = (size_t)ac->head_dim;
    const size_t q_hstride = ac->output_gate ? 2 * hd : hd, qw = H * q_hstride, kvw = Hkv * hd;
    float *q = im->proj, *k = im->proj2, *v = im->proj2 + M * kvw;
    RS_CHECK(im->b_pos + n <= im->cap, RS_E_SHAPE, "layer %d: position %zu exceeds the KV cache capacity %zu", l,
             im->b_pos + n, im->cap);
    RS_TRY(rmsnorm_(im, (int)M, (int)d, im->x, d, RS_GPU_W(im, w->norm), m->cfg.rms_eps, norm_kind_(m), im->xn, d));
    rs_gpu_mark(im, GS_OTHER);
    RS_TRY(rs_gpu_linear(im, M, qw, d, im->xn, d, RS_GPU_W(im, w->attn.q), 0.0f, q, qw));
    RS_TRY(rs_gpu_linear(im, M, kvw, d, im->xn, d, RS_GPU_W(im, w->attn.k), 0.0f, k, kvw));
    RS_TRY(rs_gpu_linear(im, M, kvw, d, im->xn, d, RS_GPU_W(im, w->attn.v), 0.0f, v, kvw));
    if (ac->qk_norm) { /* RMSNorm(1+w) over head_dim of every head */
        RS_TRY(rmsnorm_(im, (int)(M * H), (int)hd, q, q_hstride, RS_GPU_W(im, w->attn.q_norm), m->cfg.rms_eps,
                      RSG_NORM_ONE_PLUS, q, q_hstride));
        RS_TRY(rmsnorm_(im, (int)(M * Hkv), (int)hd, k, hd, RS_GPU_W(im, w->attn.k_norm), m->cfg.rms_eps,
                      RSG_NORM_ONE_PLUS, k, hd));
    }
    if (ac->use_rope && ac->rotary_dim > 0)
        RS_TRY(rsg_rope((int)M, (int)n, (int64_t)im->b_pos, q, qw, (int)q_hstride, (int)H, k, kvw, (int)Hkv, (int)hd,
                      ac->rotary_dim, im->inv_freq, im->s));
    /* the caches of the batch's runs: [RR][Hkv][cap][hd] from row group b_r0 on */
    float *Kc = im->kv + (size_t)im->layers[l].attn * 2 * im->kv_layer + im->b_r0 * Hkv * im->cap * hd;
    float *Vc = Kc + im->kv_layer;
    RS_TRY(rsg_kv_append(im->G, (int)n, (int)Hkv, (int)hd, (int64_t)im->b_pos, im->cap, k, kvw, v, kvw, Kc, Vc, im->s));
    rs_gpu_mark(im, GS_OTHER);
    rsg_attn_args aa;
    aa.R = im->G;
    aa.T = (int)n;
    aa.H = (int)H;
    aa.Hkv = (int)Hkv;
    aa.hd = (int)hd;
    aa.pos0 = (int64_t)im->b_pos;
    aa.cap = im->cap;
    aa.Q = q;
    aa.ldq = qw;
    aa.q_hstride = (int)q_hstride;
    aa.Kc = Kc;
    aa.Vc = Vc;
    aa.scale = (float)(1.0 / sqrt((double)hd));
    aa.O = im->conv;
    aa.ldo = H * hd;
    aa.impl = RSG_ATTN_DEFAULT; /* tf32x3, or RS_GPU_ATTN=simt */
    RS_TRY(im->twin ? rsg_attention_twin(&aa, im->s) : rsg_attention(&aa, im->s)); /* twin: the CPU's double attention */
    rs_gpu_mark(im, GS_ATTN);
    if (ac->output_gate) {
        RS_TRY(rsg_attn_gate((int)M, (int)H, (int)hd, im->conv, H * hd, q, qw, (int)q_hstride, im->s));
        rs_gpu_mark(im, GS_OTHER);
    }
    return rs_gpu_linear(im, M, d, H * hd, im->conv, H * hd, RS_GPU_W(im, w->attn.o), 1.0f, im->x, d);
}

/* x += MLP(norm(x; nw)) */
static rs_status mlp_(const rs_scorer *sc, gpu_impl *im, int l, const float *nw, size_t n)
{
    const rs_model *m = sc->m;
    const rs_layer_weights *w = &m->w.layers[l];
    const size_t d = (size_t)m->cfg.hidden, M = (size_t)im->G * n, I = (size_t)m->cfg.mlp.intermediate;
    RS_TRY(rmsnorm_(im, (int)M, (int)d, im->x, d, RS_GPU_W(im, nw), m->cfg.rms_eps, norm_kind_(m), im->xn, d));
    rs_gpu_mark(im, GS_OTHER);
    if (m->cfg.mlp.activation == RS_ACT_SILU) {
        RS_TRY(rs_gpu_linear(im, M, I, d, im->xn, d, RS_GPU_W(im, w->mlp.gate), 0.0f, im->proj, I));
        RS_TRY(rs_gpu_linear(im, M, I, d, im->xn, d, RS_GPU_W(im, w->mlp.up), 0.0f, im->proj2, I));
        RS_TRY(rsg_swiglu((int)M, (int)I, im->proj, I, im->proj2, I, im->s));
    } else {
        RS_TRY(rs_gpu_linear(im, M, I, d, im->xn, d, RS_GPU_W(im, w->mlp.up), 0.0f, im->proj, I));
        RS_TRY(rsg_relu2((int)M, (int)I, im->proj, I, im->s));
    }
    rs_gpu_mark(im, GS_OTHER);
    return rs_gpu_linear(im, M, d, I, im->proj, I, RS_GPU_W(im, w->mlp.down), 1.0f, im->x, d);
}

rs_status rs_gpu_forward_chunk(const rs_scorer *sc, gpu_impl *im, size_t n)
{
    const rs_model *m = sc->m;
    const size_t d = (size_t)m->cfg.hidden, V = (size_t)m->cfg.vocab, M = (size_t)im->G * n;
    for (size_t j = 0; j < im->b_ns; j++) /* each stream's runs embed that stream's tokens */
        RS_TRY(rsg_embed(im->d_tok + (im->b_s0 + j) * im->C, (int)n, im->RS, RS_GPU_W(im, m->w.embed), (int)V, (int)d,
                       im->x + j * (size_t)im->RS * n * d, d, im->s));
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const rs_layer_weights *w = &m->w.layers[l];
        switch (m->cfg.layer_kind[l]) {
        case RS_LAYER_GDN: RS_TRY(gdn_layer_(sc, im, l, n)); break;
        case RS_LAYER_MAMBA2: RS_TRY(mamba_layer_(sc, im, l, n)); break;
        case RS_LAYER_ATTENTION: RS_TRY(attn_layer_(sc, im, l, n)); break;
        case RS_LAYER_MLP: RS_TRY(mlp_(sc, im, l, w->norm, n)); break;
        case RS_LAYER_MOE: RS_TRY(rs_gpu_moe_ffn(sc, im, l, w->norm, RSG_NORM_PLAIN, n)); break;
        default:
            return rs_error_set(RS_E_UNSUPPORTED, "layer %d: kind %d is not supported yet", l, (int)m->cfg.layer_kind[l]);
        }
        if (m->cfg.mlp_is_moe) RS_TRY(rs_gpu_moe_ffn(sc, im, l, w->post_norm, RSG_NORM_ONE_PLUS, n)); /* Qwen3.5-MoE */
        else if (m->cfg.layer_has_mlp) RS_TRY(mlp_(sc, im, l, w->post_norm, n)); /* Qwen3.5: + MLP */
    }
    RS_TRY(rmsnorm_(im, (int)M, (int)d, im->x, d, RS_GPU_W(im, m->w.final_norm), m->cfg.rms_eps, norm_kind_(m), im->xn,
                  d));
    rs_gpu_mark(im, GS_OTHER);
    return rs_gpu_linear(im, M, V, d, im->xn, d, RS_GPU_W(im, m->w.lm_head), 0.0f, im->logits, V);
}
