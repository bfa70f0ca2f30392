/* rs_model_load.c — HF checkpoint directory -> rs_model (config + one fp32 slab of named views).
 *
 * Steps: parse config.json (rs_hf_config), open and validate the safetensors (rs_safetensors), find
 * the weight-name prefix, list every tensor the config implies with its expected shape, check them
 * all (missing tensor / shape mismatch -> error naming it), then convert each once to fp32 into one
 * 64-byte-aligned slab (each view starts on a 16-float boundary) and reject non-finite values.
 * Tensors not needed (vision tower, mtp.*, a stored lm_head of a tied model) are counted as ignored.
 */
#define _POSIX_C_SOURCE 200809L
#include "replayssm/eval/rs_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_safetensors.h"
#include "rs_check.h"

const char *rs_layer_kind_name(rs_layer_kind k) {
    switch (k) {
    case RS_LAYER_GDN: return "gdn";
    case RS_LAYER_MAMBA2: return "mamba2";
    case RS_LAYER_ATTENTION: return "attention";
    case RS_LAYER_MLP: return "mlp";
    }
    return "?";
}

const char *rs_model_family_name(rs_model_family f) {
    switch (f) {
    case RS_FAMILY_QWEN35: return "qwen3_5";
    case RS_FAMILY_NEMOTRONH: return "nemotron_h";
    case RS_FAMILY_UNKNOWN: break;
    }
    return "?";
}

/* one expected tensor */
typedef struct want {
    char name[192];
    int ndim;
    int64_t shape[3];
    const float **dst;
    const rs_st_tensor *t;
} want;

typedef struct want_list {
    want *v;
    int n, cap;
    const rs_st_set *st;
    const char *dir;
} want_list;

static rs_status add(want_list *wl, const float **dst, int ndim, int64_t d0, int64_t d1, int64_t d2,
                     const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;

static rs_status add(want_list *wl, const float **dst, int ndim, int64_t d0, int64_t d1, int64_t d2,
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

static void shape_str(char *buf, size_t n, int ndim, const int64_t *s) {
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && o < n; i++) o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld", (long long)s[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* which layer a name belongs to, for messages */
static const char *layer_note(const rs_model_config *cfg, const char *name, char *buf, size_t n) {
    const char *p = strstr(name, "layers.");
    if (!p) return "";
    int i = atoi(p + 7);
    if (i < 0 || i >= cfg->n_layers) return "";
    snprintf(buf, n, " (layer %d, %s)", i, rs_layer_kind_name(cfg->layer_kind[i]));
    return buf;
}

static rs_status list_qwen35(want_list *wl, const rs_model_config *c, rs_model_weights *w, const char *px) {
    const int64_t d = c->hidden, V = c->vocab, I = c->mlp.intermediate;
    const rs_gdn_config *g = &c->gdn;
    const rs_attn_config *a = &c->attn;
    RS_TRY(add(wl, &w->embed, 2, V, d, 0, "%sembed_tokens.weight", px));
    RS_TRY(add(wl, &w->final_norm, 1, d, 0, 0, "%snorm.weight", px));
    for (int i = 0; i < c->n_layers; i++) {
        rs_layer_weights *L = &w->layers[i];
        L->kind = c->layer_kind[i];
        RS_TRY(add(wl, &L->norm, 1, d, 0, 0, "%slayers.%d.input_layernorm.weight", px, i));
        RS_TRY(add(wl, &L->post_norm, 1, d, 0, 0, "%slayers.%d.post_attention_layernorm.weight", px, i));
        if (L->kind == RS_LAYER_GDN) {
            const char *m = "linear_attn";
            RS_TRY(add(wl, &L->gdn.in_qkv, 2, g->conv_dim, d, 0, "%slayers.%d.%s.in_proj_qkv.weight", px, i, m));
            RS_TRY(add(wl, &L->gdn.in_z, 2, g->value_dim, d, 0, "%slayers.%d.%s.in_proj_z.weight", px, i, m));
            RS_TRY(add(wl, &L->gdn.in_b, 2, g->n_v_heads, d, 0, "%slayers.%d.%s.in_proj_b.weight", px, i, m));
            RS_TRY(add(wl, &L->gdn.in_a, 2, g->n_v_heads, d, 0, "%slayers.%d.%s.in_proj_a.weight", px, i, m));
            RS_TRY(add(wl, &L->gdn.conv_w, 3, g->conv_dim, 1, g->conv_kernel, "%slayers.%d.%s.conv1d.weight", px, i,
                       m));
            RS_TRY(add(wl, &L->gdn.dt_bias, 1, g->n_v_heads, 0, 0, "%slayers.%d.%s.dt_bias", px, i, m));
            RS_TRY(add(wl, &L->gdn.A_log, 1, g->n_v_heads, 0, 0, "%slayers.%d.%s.A_log", px, i, m));
            RS_TRY(add(wl, &L->gdn.norm, 1, g->v_head_dim, 0, 0, "%slayers.%d.%s.norm.weight", px, i, m));
            RS_TRY(add(wl, &L->gdn.out, 2, d, g->value_dim, 0, "%slayers.%d.%s.out_proj.weight", px, i, m));
        } else {
            const int64_t qd = (int64_t)a->n_heads * a->head_dim, kd = (int64_t)a->n_kv_heads * a->head_dim;
            const char *m = "self_attn";
            RS_TRY(add(wl, &L->attn.q, 2, qd * 2, d, 0, "%slayers.%d.%s.q_proj.weight", px, i, m));
            RS_TRY(add(wl, &L->attn.k, 2, kd, d, 0, "%slayers.%d.%s.k_proj.weight", px, i, m));
            RS_TRY(add(wl, &L->attn.v, 2, kd, d, 0, "%slayers.%d.%s.v_proj.weight", px, i, m));
            RS_TRY(add(wl, &L->attn.o, 2, d, qd, 0, "%slayers.%d.%s.o_proj.weight", px, i, m));
            RS_TRY(add(wl, &L->attn.q_norm, 1, a->head_dim, 0, 0, "%slayers.%d.%s.q_norm.weight", px, i, m));
            RS_TRY(add(wl, &L->attn.k_norm, 1, a->head_dim, 0, 0, "%slayers.%d.%s.k_norm.weight", px, i, m));
        }
        RS_TRY(add(wl, &L->mlp.gate, 2, I, d, 0, "%slayers.%d.mlp.gate_proj.weight", px, i));
        RS_TRY(add(wl, &L->mlp.up, 2, I, d, 0, "%slayers.%d.mlp.up_proj.weight", px, i));
        RS_TRY(add(wl, &L->mlp.down, 2, d, I, 0, "%slayers.%d.mlp.down_proj.weight", px, i));
    }
    return RS_OK;
}

static rs_status list_nemotronh(want_list *wl, const rs_model_config *c, rs_model_weights *w, const char *px,
                                const char *embed_name) {
    const int64_t d = c->hidden, V = c->vocab, I = c->mlp.intermediate;
    const rs_mamba2_config *mc = &c->mamba;
    const rs_attn_config *a = &c->attn;
    RS_TRY(add(wl, &w->embed, 2, V, d, 0, "%s%s", px, embed_name));
    RS_TRY(add(wl, &w->final_norm, 1, d, 0, 0, "%snorm_f.weight", px));
    for (int i = 0; i < c->n_layers; i++) {
        rs_layer_weights *L = &w->layers[i];
        L->kind = c->layer_kind[i];
        RS_TRY(add(wl, &L->norm, 1, d, 0, 0, "%slayers.%d.norm.weight", px, i));
        if (L->kind == RS_LAYER_MAMBA2) {
            RS_TRY(add(wl, &L->mamba.in_proj, 2, mc->in_proj_dim, d, 0, "%slayers.%d.mixer.in_proj.weight", px, i));
            RS_TRY(add(wl, &L->mamba.conv_w, 3, mc->conv_dim, 1, mc->conv_kernel, "%slayers.%d.mixer.conv1d.weight",
                       px, i));
            if (mc->use_conv_bias)
                RS_TRY(add(wl, &L->mamba.conv_b, 1, mc->conv_dim, 0, 0, "%slayers.%d.mixer.conv1d.bias", px, i));
            RS_TRY(add(wl, &L->mamba.dt_bias, 1, mc->n_heads, 0, 0, "%slayers.%d.mixer.dt_bias", px, i));
            RS_TRY(add(wl, &L->mamba.A_log, 1, mc->n_heads, 0, 0, "%slayers.%d.mixer.A_log", px, i));
            RS_TRY(add(wl, &L->mamba.D, 1, mc->n_heads, 0, 0, "%slayers.%d.mixer.D", px, i));
            RS_TRY(add(wl, &L->mamba.norm, 1, mc->d_inner, 0, 0, "%slayers.%d.mixer.norm.weight", px, i));
            RS_TRY(add(wl, &L->mamba.out, 2, d, mc->d_inner, 0, "%slayers.%d.mixer.out_proj.weight", px, i));
        } else if (L->kind == RS_LAYER_ATTENTION) {
            const int64_t qd = (int64_t)a->n_heads * a->head_dim, kd = (int64_t)a->n_kv_heads * a->head_dim;
            RS_TRY(add(wl, &L->attn.q, 2, qd, d, 0, "%slayers.%d.mixer.q_proj.weight", px, i));
            RS_TRY(add(wl, &L->attn.k, 2, kd, d, 0, "%slayers.%d.mixer.k_proj.weight", px, i));
            RS_TRY(add(wl, &L->attn.v, 2, kd, d, 0, "%slayers.%d.mixer.v_proj.weight", px, i));
            RS_TRY(add(wl, &L->attn.o, 2, d, qd, 0, "%slayers.%d.mixer.o_proj.weight", px, i));
        } else {
            RS_TRY(add(wl, &L->mlp.up, 2, I, d, 0, "%slayers.%d.mixer.up_proj.weight", px, i));
            RS_TRY(add(wl, &L->mlp.down, 2, d, I, 0, "%slayers.%d.mixer.down_proj.weight", px, i));
        }
    }
    return RS_OK;
}

static int has(const rs_st_set *st, const char *a, const char *b) {
    char n[256];
    snprintf(n, sizeof n, "%s%s", a, b);
    return rs_st_find(st, n) != NULL;
}

void rs_model_free(rs_model *m) {
    if (!m) return;
    free(m->w.slab);
    if (m->st) {
        rs_st_close(m->st);
        free(m->st);
    }
    memset(m, 0, sizeof *m);
}

static rs_status load(const char *dir, rs_model *m, want_list *wl) {
    char path[4096];
    int r = snprintf(path, sizeof path, "%s/config.json", dir);
    RS_CHECK(r > 0 && (size_t)r < sizeof path, RS_E_INVAL, "%s: path too long", dir);
    RS_TRY(rs_hf_config_load(path, &m->cfg));
    const rs_model_config *c = &m->cfg;

    m->st = calloc(1, sizeof *m->st);
    RS_CHECK(m->st != NULL, RS_E_NOMEM, "%s: out of memory", dir);
    RS_TRY(rs_st_open_dir(dir, m->st));
    const rs_st_set *st = m->st;
    wl->st = st;

    /* weight-name prefix and embedding spelling */
    const char *embed_name = NULL;
    if (c->family == RS_FAMILY_QWEN35) {
        static const char *const px[] = {"model.language_model.", "model.", "language_model.model."};
        for (size_t i = 0; i < sizeof px / sizeof *px && !embed_name; i++)
            if (has(st, px[i], "embed_tokens.weight")) {
                snprintf(m->prefix, sizeof m->prefix, "%s", px[i]);
                embed_name = "embed_tokens.weight";
            }
        RS_CHECK(embed_name, RS_E_FORMAT, "%s: no text embedding tensor found (looked for model.language_model."
                 "embed_tokens.weight and model.embed_tokens.weight)", dir);
        RS_TRY(list_qwen35(wl, c, &m->w, m->prefix));
    } else {
        static const char *const px[] = {"backbone.", "model."};
        static const char *const en[] = {"embeddings.weight", "embedding.weight"};
        for (size_t i = 0; i < 2 && !embed_name; i++)
            for (size_t j = 0; j < 2 && !embed_name; j++)
                if (has(st, px[i], en[j])) {
                    snprintf(m->prefix, sizeof m->prefix, "%s", px[i]);
                    embed_name = en[j];
                }
        RS_CHECK(embed_name, RS_E_FORMAT, "%s: no embedding tensor found (looked for backbone./model. + "
                 "embeddings.weight / embedding.weight)", dir);
        RS_TRY(list_nemotronh(wl, c, &m->w, m->prefix, embed_name));
    }
    const int tied = c->tie_word_embeddings;
    if (!tied) RS_TRY(add(wl, &m->w.lm_head, 2, c->vocab, c->hidden, 0, "lm_head.weight"));

    /* presence and shapes, all checked before any conversion */
    size_t total = 0;
    for (int i = 0; i < wl->n; i++) {
        want *w = &wl->v[i];
        char note[64] = "";
        w->t = rs_st_find(st, w->name);
        if (!w->t) {
            if (strcmp(w->name, "lm_head.weight") == 0)
                return rs_error_set(RS_E_FORMAT, "%s: tensor 'lm_head.weight' is missing (tie_word_embeddings is "
                                    "false)", dir);
            return rs_error_set(RS_E_FORMAT, "%s: tensor '%s'%s is missing from the checkpoint", dir, w->name,
                                layer_note(c, w->name, note, sizeof note));
        }
        int ok = w->t->ndim == w->ndim;
        for (int k = 0; ok && k < w->ndim; k++) ok = w->t->shape[k] == w->shape[k];
        if (!ok) {
            char got[96], exp[96];
            shape_str(got, sizeof got, w->t->ndim, w->t->shape);
            shape_str(exp, sizeof exp, w->ndim, w->shape);
            return rs_error_set(RS_E_SHAPE, "%s: tensor '%s'%s has shape %s but config.json implies %s",
                                st->files[w->t->file].path, w->name, layer_note(c, w->name, note, sizeof note),
                                got, exp);
        }
        total += ((size_t)w->t->numel + 15u) & ~(size_t)15u;
    }

    void *slab = NULL;
    RS_CHECK(posix_memalign(&slab, 64, (total ? total : 1) * sizeof(float)) == 0, RS_E_NOMEM,
             "%s: cannot allocate %zu floats for the weights", dir, total);
    m->w.slab = slab;
    m->w.slab_floats = total;
    size_t off = 0;
    for (int i = 0; i < wl->n; i++) {
        want *w = &wl->v[i];
        float *dst = m->w.slab + off;
        const size_t padded = ((size_t)w->t->numel + 15u) & ~(size_t)15u;
        rs_st_to_f32(w->t, dst);
        memset(dst + w->t->numel, 0, (padded - (size_t)w->t->numel) * sizeof(float)); /* deterministic slab */
        for (int64_t k = 0; k < w->t->numel; k++)
            RS_CHECK(isfinite(dst[k]), RS_E_NONFINITE, "%s: tensor '%s' element %lld is not finite",
                     st->files[w->t->file].path, w->name, (long long)k);
        *w->dst = dst;
        off += padded;
    }
    if (tied) m->w.lm_head = m->w.embed;
    m->n_tensors_used = wl->n;
    m->n_tensors_ignored = st->n_tensors - wl->n;
    return RS_OK;
}

rs_status rs_model_load(const char *dir, rs_model *m) {
    RS_CHECK(dir && m, RS_E_INVAL, "rs_model_load: NULL argument");
    memset(m, 0, sizeof *m);
    want_list wl = {NULL, 0, 0, NULL, dir};
    rs_status s = load(dir, m, &wl);
    free(wl.v);
    if (s != RS_OK) rs_model_free(m);
    return s;
}
