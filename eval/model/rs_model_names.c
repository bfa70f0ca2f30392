/* rs_model_names.c — the tensors a config implies, by family (see rs_model_names.h). */
#define _POSIX_C_SOURCE 200809L
#include "model/rs_model_names.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rs_check.h"

rs_status rs_mn_add(want_list *wl, const float **dst, int ndim, int64_t d0, int64_t d1, int64_t d2,
                     const char *fmt, ...) {
    if (wl->n == wl->cap) {
        int cap = wl->cap ? 2 * wl->cap : 64;
        want *g = realloc(wl->v, (size_t)cap * sizeof *g);
        RS_CHECK(g != NULL, RS_E_NOMEM, "%s: out of memory", wl->dir);
        wl->v = g;
        wl->cap = cap;
    }
    want *w = &wl->v[wl->n];
    memset(w, 0, sizeof *w);
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(w->name, sizeof w->name, fmt, ap);
    va_end(ap);
    RS_CHECK(r > 0 && (size_t)r < sizeof w->name, RS_E_INVAL, "%s: tensor name too long", wl->dir);
    w->ndim = ndim;
    w->shape[0] = d0;
    w->shape[1] = d1;
    w->shape[2] = d2;
    w->dst = dst;
    wl->n++;
    return RS_OK;
}

void rs_mn_shape_str(char *buf, size_t n, int ndim, const int64_t *s) {
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && o < n; i++) o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld", (long long)s[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* which layer a name belongs to, for messages */
const char *rs_mn_layer_note(const rs_model_config *cfg, const char *name, char *buf, size_t n) {
    const char *p = strstr(name, "layers.");
    if (!p) return "";
    int i = atoi(p + 7);
    if (i < 0 || i >= cfg->n_layers) return "";
    snprintf(buf, n, " (layer %d, %s)", i, rs_layer_kind_name(cfg->layer_kind[i]));
    return buf;
}

/* The MoE FFN of layer i under `blk` ("mlp" / "mixer"): router, latent projections, shared expert, and
 * the routed experts one tensor each (the hub layout) or packed [E, ...] (transformers' in-memory
 * layout), whichever the checkpoint holds for expert 0. views: this layer's 3E pointers. */
static rs_status list_moe(want_list *wl, const rs_model_config *c, rs_layer_weights *L, const char *px, int i,
                          const char *blk, const float **views) {
    const rs_moe_config *mo = &c->moe;
    const int64_t d = c->hidden, E = mo->n_experts, I = mo->intermediate, Is = mo->shared_intermediate;
    const int64_t din = mo->expert_in;
    const int qwen = c->family == RS_FAMILY_QWEN35;
    const char *sh = qwen ? "shared_expert" : "shared_experts";
    const float **vg = views, **vu = views + E, **vd = views + 2 * E;
    RS_TRY(rs_mn_add(wl, &L->moe.router, 2, E, d, 0, "%slayers.%d.%s.gate.weight", px, i, blk));
    if (!qwen)
        RS_TRY(rs_mn_add(wl, &L->moe.router_bias, 1, E, 0, 0, "%slayers.%d.%s.gate.e_score_correction_bias", px, i, blk));
    if (mo->latent > 0) {
        RS_TRY(rs_mn_add(wl, &L->moe.latent_in, 2, mo->latent, d, 0, "%slayers.%d.%s.fc1_latent_proj.weight", px, i, blk));
        RS_TRY(rs_mn_add(wl, &L->moe.latent_out, 2, d, mo->latent, 0, "%slayers.%d.%s.fc2_latent_proj.weight", px, i, blk));
    }
    if (qwen) {
        RS_TRY(rs_mn_add(wl, &L->moe.shared_gate, 2, Is, d, 0, "%slayers.%d.%s.%s.gate_proj.weight", px, i, blk, sh));
        RS_TRY(rs_mn_add(wl, &L->moe.shared_scale, 2, 1, d, 0, "%slayers.%d.%s.shared_expert_gate.weight", px, i, blk));
    }
    RS_TRY(rs_mn_add(wl, &L->moe.shared_up, 2, Is, d, 0, "%slayers.%d.%s.%s.up_proj.weight", px, i, blk, sh));
    RS_TRY(rs_mn_add(wl, &L->moe.shared_down, 2, d, Is, 0, "%slayers.%d.%s.%s.down_proj.weight", px, i, blk, sh));
    L->moe.gate = qwen ? vg : NULL;
    L->moe.up = vu;
    L->moe.down = vd;

    char probe[192];
    snprintf(probe, sizeof probe, "%slayers.%d.%s.experts.0.up_proj.weight", px, i, blk);
    if (!wl->st || rs_st_find(wl->st, probe)) { /* one tensor per expert (and without a checkpoint) */
        for (int64_t e = 0; e < E; e++) {
            if (qwen)
                RS_TRY(rs_mn_add(wl, &vg[e], 2, I, din, 0, "%slayers.%d.%s.experts.%lld.gate_proj.weight", px, i, blk,
                           (long long)e));
            RS_TRY(rs_mn_add(wl, &vu[e], 2, I, din, 0, "%slayers.%d.%s.experts.%lld.up_proj.weight", px, i, blk,
                       (long long)e));
            RS_TRY(rs_mn_add(wl, &vd[e], 2, din, I, 0, "%slayers.%d.%s.experts.%lld.down_proj.weight", px, i, blk,
                       (long long)e));
        }
        return RS_OK;
    }
    /* packed: Qwen gate_up_proj [E, 2I, d] (gate rows, then up rows), down_proj [E, d, I];
     * NemotronH up_proj [E, I, din], down_proj [E, din, I] */
    expert_fixup *f = &wl->fix[wl->n_fix];
    if (qwen) {
        f[0] = (expert_fixup){NULL, vg, (int)E, (size_t)(2 * I * din), 0};
        f[1] = (expert_fixup){NULL, vu, (int)E, (size_t)(2 * I * din), (size_t)(I * din)};
        f[2] = (expert_fixup){NULL, vd, (int)E, (size_t)(din * I), 0};
        RS_TRY(rs_mn_add(wl, &f[0].base, 3, E, 2 * I, din, "%slayers.%d.%s.experts.gate_up_proj", px, i, blk));
        f[1].base = NULL; /* set from f[0] after conversion */
        RS_TRY(rs_mn_add(wl, &f[2].base, 3, E, din, I, "%slayers.%d.%s.experts.down_proj", px, i, blk));
        wl->n_fix += 3;
    } else {
        f[0] = (expert_fixup){NULL, vu, (int)E, (size_t)(I * din), 0};
        f[1] = (expert_fixup){NULL, vd, (int)E, (size_t)(din * I), 0};
        RS_TRY(rs_mn_add(wl, &f[0].base, 3, E, I, din, "%slayers.%d.%s.experts.up_proj", px, i, blk));
        RS_TRY(rs_mn_add(wl, &f[1].base, 3, E, din, I, "%slayers.%d.%s.experts.down_proj", px, i, blk));
        wl->n_fix += 2;
    }
    return RS_OK;
}

rs_status rs_mn_list_qwen35(want_list *wl, const rs_model_config *c, rs_model_weights *w, const char *px) {
    const int64_t d = c->hidden, V = c->vocab, I = c->mlp.intermediate;
    const rs_gdn_config *g = &c->gdn;
    const rs_attn_config *a = &c->attn;
    RS_TRY(rs_mn_add(wl, &w->embed, 2, V, d, 0, "%sembed_tokens.weight", px));
    RS_TRY(rs_mn_add(wl, &w->final_norm, 1, d, 0, 0, "%snorm.weight", px));
    for (int i = 0; i < c->n_layers; i++) {
        rs_layer_weights *L = &w->layers[i];
        L->kind = c->layer_kind[i];
        RS_TRY(rs_mn_add(wl, &L->norm, 1, d, 0, 0, "%slayers.%d.input_layernorm.weight", px, i));
        RS_TRY(rs_mn_add(wl, &L->post_norm, 1, d, 0, 0, "%slayers.%d.post_attention_layernorm.weight", px, i));
        if (L->kind == RS_LAYER_GDN) {
            const char *m = "linear_attn";
            RS_TRY(rs_mn_add(wl, &L->gdn.in_qkv, 2, g->conv_dim, d, 0, "%slayers.%d.%s.in_proj_qkv.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->gdn.in_z, 2, g->value_dim, d, 0, "%slayers.%d.%s.in_proj_z.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->gdn.in_b, 2, g->n_v_heads, d, 0, "%slayers.%d.%s.in_proj_b.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->gdn.in_a, 2, g->n_v_heads, d, 0, "%slayers.%d.%s.in_proj_a.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->gdn.conv_w, 3, g->conv_dim, 1, g->conv_kernel, "%slayers.%d.%s.conv1d.weight", px, i,
                       m));
            RS_TRY(rs_mn_add(wl, &L->gdn.dt_bias, 1, g->n_v_heads, 0, 0, "%slayers.%d.%s.dt_bias", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->gdn.A_log, 1, g->n_v_heads, 0, 0, "%slayers.%d.%s.A_log", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->gdn.norm, 1, g->v_head_dim, 0, 0, "%slayers.%d.%s.norm.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->gdn.out, 2, d, g->value_dim, 0, "%slayers.%d.%s.out_proj.weight", px, i, m));
        } else {
            const int64_t qd = (int64_t)a->n_heads * a->head_dim, kd = (int64_t)a->n_kv_heads * a->head_dim;
            const char *m = "self_attn";
            RS_TRY(rs_mn_add(wl, &L->attn.q, 2, qd * 2, d, 0, "%slayers.%d.%s.q_proj.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->attn.k, 2, kd, d, 0, "%slayers.%d.%s.k_proj.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->attn.v, 2, kd, d, 0, "%slayers.%d.%s.v_proj.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->attn.o, 2, d, qd, 0, "%slayers.%d.%s.o_proj.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->attn.q_norm, 1, a->head_dim, 0, 0, "%slayers.%d.%s.q_norm.weight", px, i, m));
            RS_TRY(rs_mn_add(wl, &L->attn.k_norm, 1, a->head_dim, 0, 0, "%slayers.%d.%s.k_norm.weight", px, i, m));
        }
        if (c->mlp_is_moe) {
            RS_TRY(list_moe(wl, c, L, px, i, "mlp", w->expert_views + (size_t)i * 3 * (size_t)c->moe.n_experts));
            continue;
        }
        RS_TRY(rs_mn_add(wl, &L->mlp.gate, 2, I, d, 0, "%slayers.%d.mlp.gate_proj.weight", px, i));
        RS_TRY(rs_mn_add(wl, &L->mlp.up, 2, I, d, 0, "%slayers.%d.mlp.up_proj.weight", px, i));
        RS_TRY(rs_mn_add(wl, &L->mlp.down, 2, d, I, 0, "%slayers.%d.mlp.down_proj.weight", px, i));
    }
    return RS_OK;
}

rs_status rs_mn_list_nemotronh(want_list *wl, const rs_model_config *c, rs_model_weights *w, const char *px,
                                const char *embed_name) {
    const int64_t d = c->hidden, V = c->vocab, I = c->mlp.intermediate;
    const rs_mamba2_config *mc = &c->mamba;
    const rs_attn_config *a = &c->attn;
    RS_TRY(rs_mn_add(wl, &w->embed, 2, V, d, 0, "%s%s", px, embed_name));
    RS_TRY(rs_mn_add(wl, &w->final_norm, 1, d, 0, 0, "%snorm_f.weight", px));
    for (int i = 0; i < c->n_layers; i++) {
        rs_layer_weights *L = &w->layers[i];
        L->kind = c->layer_kind[i];
        RS_TRY(rs_mn_add(wl, &L->norm, 1, d, 0, 0, "%slayers.%d.norm.weight", px, i));
        if (L->kind == RS_LAYER_MAMBA2) {
            RS_TRY(rs_mn_add(wl, &L->mamba.in_proj, 2, mc->in_proj_dim, d, 0, "%slayers.%d.mixer.in_proj.weight", px, i));
            RS_TRY(rs_mn_add(wl, &L->mamba.conv_w, 3, mc->conv_dim, 1, mc->conv_kernel, "%slayers.%d.mixer.conv1d.weight",
                       px, i));
            if (mc->use_conv_bias)
                RS_TRY(rs_mn_add(wl, &L->mamba.conv_b, 1, mc->conv_dim, 0, 0, "%slayers.%d.mixer.conv1d.bias", px, i));
            RS_TRY(rs_mn_add(wl, &L->mamba.dt_bias, 1, mc->n_heads, 0, 0, "%slayers.%d.mixer.dt_bias", px, i));
            RS_TRY(rs_mn_add(wl, &L->mamba.A_log, 1, mc->n_heads, 0, 0, "%slayers.%d.mixer.A_log", px, i));
            RS_TRY(rs_mn_add(wl, &L->mamba.D, 1, mc->n_heads, 0, 0, "%slayers.%d.mixer.D", px, i));
            RS_TRY(rs_mn_add(wl, &L->mamba.norm, 1, mc->d_inner, 0, 0, "%slayers.%d.mixer.norm.weight", px, i));
            RS_TRY(rs_mn_add(wl, &L->mamba.out, 2, d, mc->d_inner, 0, "%slayers.%d.mixer.out_proj.weight", px, i));
        } else if (L->kind == RS_LAYER_ATTENTION) {
            const int64_t qd = (int64_t)a->n_heads * a->head_dim, kd = (int64_t)a->n_kv_heads * a->head_dim;
            RS_TRY(rs_mn_add(wl, &L->attn.q, 2, qd, d, 0, "%slayers.%d.mixer.q_proj.weight", px, i));
            RS_TRY(rs_mn_add(wl, &L->attn.k, 2, kd, d, 0, "%slayers.%d.mixer.k_proj.weight", px, i));
            RS_TRY(rs_mn_add(wl, &L->attn.v, 2, kd, d, 0, "%slayers.%d.mixer.v_proj.weight", px, i));
            RS_TRY(rs_mn_add(wl, &L->attn.o, 2, d, qd, 0, "%slayers.%d.mixer.o_proj.weight", px, i));
        } else if (L->kind == RS_LAYER_MOE) {
            RS_TRY(list_moe(wl, c, L, px, i, "mixer", w->expert_views + (size_t)i * 3 * (size_t)c->moe.n_experts));
        } else {
            RS_TRY(rs_mn_add(wl, &L->mlp.up, 2, I, d, 0, "%slayers.%d.mixer.up_proj.weight", px, i));
            RS_TRY(rs_mn_add(wl, &L->mlp.down, 2, d, I, 0, "%slayers.%d.mixer.down_proj.weight", px, i));
        }
    }
    return RS_OK;
}

uint64_t rs_mn_physical_memory(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

rs_status rs_mn_check_memory(const char *dir, const char *what, uint64_t need) {
    const uint64_t have = rs_mn_physical_memory();
    RS_CHECK(have == 0 || need <= have, RS_E_NOMEM, "%s: %s need %.2f GB, more than this machine's %.2f GB of memory",
             dir, what, (double)need / 1e9, (double)have / 1e9);
    return RS_OK;
}

rs_status rs_mn_begin(rs_model *m, want_list *wl) {
    const rs_model_config *c = &m->cfg;
    if (!c->is_moe) return RS_OK;
    /* E pointers per expert matrix (gate, up, down) per layer, indexed by layer; packed tensors need up
     * to 3 fixups per layer */
    const size_t nv = (size_t)c->n_layers * 3 * (size_t)c->moe.n_experts;
    m->w.expert_views = calloc(nv, sizeof *m->w.expert_views);
    wl->fix = calloc((size_t)c->n_layers * 3, sizeof *wl->fix);
    RS_CHECK(m->w.expert_views && wl->fix, RS_E_NOMEM, "%s: out of memory (%zu expert views)", wl->dir, nv);
    return RS_OK;
}

void rs_mn_finish(want_list *wl) {
    for (int i = 0; i < wl->n_fix; i++) { /* packed experts -> per-expert views */
        expert_fixup *f = &wl->fix[i];
        if (!f->base && i > 0 && f->offset) f->base = wl->fix[i - 1].base; /* Qwen up rows of gate_up_proj */
        for (int e = 0; e < f->E; e++) f->views[e] = f->base + (size_t)e * f->stride + f->offset;
    }
}

rs_status rs_model_plan_cpu(const rs_model_config *c, size_t runs, size_t tokens, size_t chunk, rs_model_plan *p) {
    RS_CHECK(c && p && runs >= 1 && tokens >= 1 && chunk >= 1, RS_E_INVAL, "rs_model_plan_cpu: bad arguments");
    memset(p, 0, sizeof *p);
    /* the loader's tensor list, without a checkpoint: the slab's floats, padded as the loader pads */
    rs_model *m = (rs_model *)calloc(1, sizeof *m);
    RS_CHECK(m != NULL, RS_E_NOMEM, "rs_model_plan_cpu: out of memory");
    m->cfg = *c;
    want_list wl;
    memset(&wl, 0, sizeof wl);
    wl.dir = "plan";
    rs_status st = rs_mn_begin(m, &wl);
    if (st == RS_OK)
        st = c->family == RS_FAMILY_QWEN35 ? rs_mn_list_qwen35(&wl, c, &m->w, "model.")
                                           : rs_mn_list_nemotronh(&wl, c, &m->w, "backbone.", "embeddings.weight");
    if (st == RS_OK && !c->tie_word_embeddings)
        st = rs_mn_add(&wl, &m->w.lm_head, 2, c->vocab, c->hidden, 0, "lm_head.weight");
    double floats = 0;
    for (int i = 0; st == RS_OK && i < wl.n; i++) {
        double n = 1;
        for (int k = 0; k < wl.v[i].ndim; k++) n *= (double)wl.v[i].shape[k];
        floats += 16.0 * ceil(n / 16.0);
    }
    free(wl.v);
    free(wl.fix);
    free(m->w.expert_views);
    free(m);
    RS_TRY(st);
    p->weights = 4.0 * floats;
    p->kv_per_run = 4.0 * c->n_attn * 2.0 * c->attn.n_kv_heads * c->attn.head_dim * (double)tokens;
    if (c->n_gdn)
        p->state_per_run += 4.0 * c->n_gdn * ((double)c->gdn.n_v_heads * c->gdn.v_head_dim * c->gdn.k_head_dim +
                                              (double)c->gdn.conv_dim * (c->gdn.conv_kernel - 1));
    if (c->n_mamba)
        p->state_per_run += 4.0 * c->n_mamba * ((double)c->mamba.n_heads * c->mamba.head_dim * c->mamba.d_state +
                                                (double)c->mamba.conv_dim * (c->mamba.conv_kernel - 1));
    p->logits = 4.0 * (double)runs * (double)chunk * c->vocab;
    p->total = p->weights + (double)runs * (p->kv_per_run + p->state_per_run) + p->logits;
    p->have = (double)rs_mn_physical_memory();
    return RS_OK;
}
