/* rs_model_load.c — HF checkpoint directory -> rs_model (config + one fp32 slab of named views).
 *
 * Steps: parse config.json (rs_hf_config), open and validate the safetensors (rs_safetensors), find
 * the weight-name prefix, list every tensor the config implies with its expected shape, check them
 * all (missing tensor / shape mismatch -> error naming it), then convert each once to fp32 into one
 * 64-byte-aligned slab (each view starts on a 16-float boundary) and reject non-finite values.
 * Tensors not needed (vision tower, mtp.*, a stored lm_head of a tied model) are counted as ignored.
 * MoE experts load from either storage layout (rs_model.h) into per-expert views.
 */
#define _POSIX_C_SOURCE 200809L
#include "replayssm/eval/rs_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/quant/rs_wdecode.h"
#include "model/rs_model_names.h"
#include "rs_check.h"

const char *rs_layer_kind_name(rs_layer_kind k) {
    switch (k) {
    case RS_LAYER_GDN: return "gdn";
    case RS_LAYER_MAMBA2: return "mamba2";
    case RS_LAYER_ATTENTION: return "attention";
    case RS_LAYER_MLP: return "mlp";
    case RS_LAYER_MOE: return "moe";
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

/* ---- quantized weights ----------------------------------------------------------------------- */

static int is_scalar_f32_(const rs_st_tensor *t) {
    return t && t->dtype == RS_ST_F32 && t->numel == 1 && t->ndim <= 1;
}

/* A 2-D `<module>.weight` the config implies: find how it is stored, check the stored shapes and the
 * companions against the logical [out, in] and the quantization description. Dense tensors keep the
 * plain shape check of the caller (return with w->fmt = DENSE). */
static rs_status resolve_q_(const rs_st_set *st, const rs_quant_config *q, want *w, const char *path,
                            const char *note) {
    w->fmt = RS_WFMT_DENSE;
    const size_t nl = strlen(w->name);
    if (w->ndim != 2 || nl < 8 || strcmp(w->name + nl - 7, ".weight") != 0) {
        RS_CHECK(w->t->dtype != RS_ST_U8 && w->t->dtype != RS_ST_F8_E4M3, RS_E_FORMAT,
                 "%s: tensor '%s'%s has dtype %s: quantized storage is read for 2-D linear weights only (packed "
                 "[experts, ...] tensors and vectors must be F32, BF16 or F16)", path, w->name, note,
                 rs_st_dtype_name(w->t->dtype));
        return RS_OK;
    }
    char module[192], sn[224];
    snprintf(module, sizeof module, "%.*s", (int)(nl - 7), w->name);
    const int embedding = strstr(module, "embed") != NULL; /* a lookup table, never a quantized Linear */
    const rs_wformat expect = embedding ? RS_WFMT_DENSE : rs_quant_config_format_of(q, module);
    const rs_st_tensor *t = w->t;
    const int64_t out = w->shape[0], in = w->shape[1];
    if (t->dtype == RS_ST_F32 || t->dtype == RS_ST_BF16 || t->dtype == RS_ST_F16) {
        RS_CHECK(expect == RS_WFMT_DENSE, RS_E_FORMAT,
                 "%s: tensor '%s'%s is stored as %s but %s declares module '%s' %s", path, w->name, note,
                 rs_st_dtype_name(t->dtype), q->source, module, rs_wformat_name(expect));
        return RS_OK;
    }
    RS_CHECK(!embedding && (t->dtype == RS_ST_U8 || t->dtype == RS_ST_F8_E4M3), RS_E_FORMAT,
             "%s: tensor '%s'%s has dtype %s: not a weight format (F32, BF16, F16, or NVFP4 / FP8 for linear "
             "layers)", path, w->name, note, rs_st_dtype_name(t->dtype));
    snprintf(sn, sizeof sn, "%s.weight_scale", module);
    w->scale = rs_st_find(st, sn);
    if (t->dtype == RS_ST_U8) { /* NVFP4 */
        RS_CHECK(!q->present || expect == RS_WFMT_NVFP4, RS_E_FORMAT,
                 "%s: tensor '%s'%s is stored as NVFP4 (U8) but %s declares module '%s' %s", path, w->name, note,
                 q->source, module, rs_wformat_name(expect));
        RS_CHECK(in % 16 == 0, RS_E_SHAPE, "%s: tensor '%s'%s: NVFP4 needs in_features (%lld) to be a multiple of 16",
                 path, w->name, note, (long long)in);
        RS_CHECK(t->ndim == 2 && t->shape[0] == out && t->shape[1] == in / 2, RS_E_SHAPE,
                 "%s: tensor '%s'%s: NVFP4 bytes must be [%lld, %lld] for the [%lld, %lld] weight config.json implies",
                 path, w->name, note, (long long)out, (long long)(in / 2), (long long)out, (long long)in);
        RS_CHECK(w->scale != NULL, RS_E_FORMAT, "%s: tensor '%s'%s is NVFP4 (U8) but '%s' is missing", path, w->name,
                 note, sn);
        RS_CHECK(w->scale->dtype == RS_ST_F8_E4M3 && w->scale->ndim == 2 && w->scale->shape[0] == out &&
                     w->scale->shape[1] == in / 16, RS_E_SHAPE,
                 "%s: tensor '%s': NVFP4 block scales must be F8_E4M3 [%lld, %lld] (one per 16 inputs)", path, sn,
                 (long long)out, (long long)(in / 16));
        snprintf(sn, sizeof sn, "%s.weight_scale_2", module);
        w->scale2 = rs_st_find(st, sn);
        RS_CHECK(is_scalar_f32_(w->scale2), RS_E_FORMAT, "%s: tensor '%s' (NVFP4 per-tensor scale) must be one F32 "
                 "value%s", path, sn, w->scale2 ? "" : ", and is missing");
        w->fmt = RS_WFMT_NVFP4;
        return RS_OK;
    }
    /* F8_E4M3 weight: one fp32 scale per tensor, or a grid of block scales (weight_scale / weight_scale_inv) */
    RS_CHECK(!q->present || expect == RS_WFMT_FP8 || expect == RS_WFMT_FP8_BLOCK, RS_E_FORMAT,
             "%s: tensor '%s'%s is stored as FP8 (F8_E4M3) but %s declares module '%s' %s", path, w->name, note,
             q->source, module, rs_wformat_name(expect));
    RS_CHECK(t->ndim == 2 && t->shape[0] == out && t->shape[1] == in, RS_E_SHAPE,
             "%s: tensor '%s'%s: FP8 weight must be [%lld, %lld]", path, w->name, note, (long long)out, (long long)in);
    if (!w->scale) {
        snprintf(sn, sizeof sn, "%s.weight_scale_inv", module);
        w->scale = rs_st_find(st, sn);
    }
    RS_CHECK(w->scale != NULL, RS_E_FORMAT, "%s: tensor '%s'%s is FP8 but neither %s.weight_scale nor "
             "%s.weight_scale_inv exists", path, w->name, note, module, module);
    RS_CHECK(w->scale->dtype == RS_ST_F32, RS_E_FORMAT, "%s: tensor '%s': FP8 scales must be F32, not %s", path,
             w->scale->name, rs_st_dtype_name(w->scale->dtype));
    if (is_scalar_f32_(w->scale)) {
        w->fmt = RS_WFMT_FP8;
    } else {
        RS_CHECK(w->scale->ndim == 2, RS_E_SHAPE, "%s: tensor '%s': FP8 scales must be one value or a 2-D block grid",
                 path, w->scale->name);
        const int64_t s0 = w->scale->shape[0], s1 = w->scale->shape[1];
        if (q->block[0] > 0) {
            w->block[0] = q->block[0];
            w->block[1] = q->block[1];
        } else {
            RS_CHECK(s0 > 0 && s1 > 0 && out % s0 == 0 && in % s1 == 0, RS_E_SHAPE,
                     "%s: tensor '%s': a [%lld, %lld] scale grid does not tile the [%lld, %lld] weight evenly, and no "
                     "weight_block_size is given", path, w->scale->name, (long long)s0, (long long)s1,
                     (long long)out, (long long)in);
            w->block[0] = out / s0;
            w->block[1] = in / s1;
        }
        w->fmt = RS_WFMT_FP8_BLOCK; /* the grid shape itself is checked by rs_wdecode_fp8 */
    }
    return RS_OK; /* per tensor or per block: the stored scales decide (ModelOpt's FP8 names both "FP8") */
}

/* decode a quantized want into dst ([out, in] floats); errors name the tensor */
static rs_status decode_q_(const want *w, const char *path, float *dst) {
    rs_status st;
    const size_t n = (size_t)(w->shape[0] * w->shape[1]);
    if (w->fmt == RS_WFMT_NVFP4) {
        rs_wq_nvfp4 q;
        q.weight = (const uint8_t *)w->t->data;
        q.weight_shape[0] = w->t->shape[0];
        q.weight_shape[1] = w->t->shape[1];
        q.scale = (const uint8_t *)w->scale->data;
        q.scale_shape[0] = w->scale->shape[0];
        q.scale_shape[1] = w->scale->shape[1];
        memcpy(&q.scale_2, w->scale2->data, sizeof(float));
        st = rs_wdecode_nvfp4(&q, dst, n);
    } else {
        rs_wq_fp8 q;
        q.weight = (const uint8_t *)w->t->data;
        q.weight_shape[0] = w->t->shape[0];
        q.weight_shape[1] = w->t->shape[1];
        q.scale = (const float *)w->scale->data; /* mapped at an offset of the data section: copy if unaligned */
        q.scale_shape[0] = q.scale_shape[1] = 1;
        q.block[0] = q.block[1] = 0;
        if (w->fmt == RS_WFMT_FP8_BLOCK) {
            q.scale_shape[0] = w->scale->shape[0];
            q.scale_shape[1] = w->scale->shape[1];
            q.block[0] = w->block[0];
            q.block[1] = w->block[1];
        }
        float *aligned = NULL;
        if (((uintptr_t)q.scale) % sizeof(float) != 0) {
            aligned = (float *)malloc(w->scale->nbytes);
            RS_CHECK(aligned != NULL, RS_E_NOMEM, "%s: out of memory", path);
            memcpy(aligned, w->scale->data, w->scale->nbytes);
            q.scale = aligned;
        }
        st = rs_wdecode_fp8(&q, dst, n);
        free(aligned);
    }
    if (st != RS_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", rs_last_error());
        return rs_error_set(st, "%s: tensor '%s': %s", path, w->name, why);
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
    free(m->w.expert_views);
    free(m->dev_mats);
    if (m->dev_reserve) munmap(m->dev_reserve, m->dev_reserve_bytes);
    rs_quant_config_free(&m->quant);
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
    RS_TRY(rs_quant_config_load_dir(dir, &m->quant));
    const rs_model_config *c = &m->cfg;

    m->st = calloc(1, sizeof *m->st);
    RS_CHECK(m->st != NULL, RS_E_NOMEM, "%s: out of memory", dir);
    RS_TRY(rs_st_open_dir(dir, m->st));
    const rs_st_set *st = m->st;
    wl->st = st;

    RS_TRY(rs_mn_begin(m, wl));

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
        RS_TRY(rs_mn_list_qwen35(wl, c, &m->w, m->prefix));
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
        RS_TRY(rs_mn_list_nemotronh(wl, c, &m->w, m->prefix, embed_name));
    }
    /* tied head: Qwen3.5 follows tie_word_embeddings (a stored lm_head is then ignored); transformers 5.17
     * never ties NemotronH's head (_tied_weights_keys = {}), so a stored lm_head.weight is used whatever
     * the flag says, and the embeddings only stand in for a missing one when the flag asks (as vLLM does) */
    const int tied = c->tie_word_embeddings &&
                     !(c->family == RS_FAMILY_NEMOTRONH && rs_st_find(st, "lm_head.weight") != NULL);
    if (!tied) RS_TRY(rs_mn_add(wl, &m->w.lm_head, 2, c->vocab, c->hidden, 0, "lm_head.weight"));

    /* presence and shapes (stored and, for quantized weights, their scales), all checked before any
     * conversion */
    size_t total = 0;
    int n_companions = 0;
    for (int i = 0; i < wl->n; i++) {
        want *w = &wl->v[i];
        char note[64] = "";
        w->t = rs_st_find(st, w->name);
        if (!w->t) {
            if (strcmp(w->name, "lm_head.weight") == 0)
                return rs_error_set(RS_E_FORMAT, "%s: tensor 'lm_head.weight' is missing (tie_word_embeddings is "
                                    "false)", dir);
            return rs_error_set(RS_E_FORMAT, "%s: tensor '%s'%s is missing from the checkpoint", dir, w->name,
                                rs_mn_layer_note(c, w->name, note, sizeof note));
        }
        RS_TRY(resolve_q_(st, &m->quant, w, st->files[w->t->file].path, rs_mn_layer_note(c, w->name, note, sizeof note)));
        int ok = w->fmt != RS_WFMT_DENSE || w->t->ndim == w->ndim;
        for (int k = 0; ok && w->fmt == RS_WFMT_DENSE && k < w->ndim; k++) ok = w->t->shape[k] == w->shape[k];
        if (!ok) {
            char got[96], exp[96];
            rs_mn_shape_str(got, sizeof got, w->t->ndim, w->t->shape);
            rs_mn_shape_str(exp, sizeof exp, w->ndim, w->shape);
            return rs_error_set(RS_E_SHAPE, "%s: tensor '%s'%s has shape %s but config.json implies %s",
                                st->files[w->t->file].path, w->name, rs_mn_layer_note(c, w->name, note, sizeof note),
                                got, exp);
        }
        size_t numel = 1;
        for (int k = 0; k < w->ndim; k++) numel *= (size_t)w->shape[k];
        total += (numel + 15u) & ~(size_t)15u;
        if (w->ndim == 2 && strstr(w->name, ".weight")) m->n_weights_fmt[w->fmt]++;
        if (w->scale) n_companions++;
        if (w->scale2) n_companions++;
    }

    RS_TRY(rs_mn_check_memory(dir, "the fp32 weights", (uint64_t)total * sizeof(float)));
    void *slab = NULL;
    RS_CHECK(posix_memalign(&slab, 64, (total ? total : 1) * sizeof(float)) == 0, RS_E_NOMEM,
             "%s: cannot allocate %zu floats for the weights", dir, total);
    m->w.slab = slab;
    m->w.slab_floats = total;
    size_t off = 0;
    for (int i = 0; i < wl->n; i++) {
        want *w = &wl->v[i];
        float *dst = m->w.slab + off;
        size_t numel = 1;
        for (int k = 0; k < w->ndim; k++) numel *= (size_t)w->shape[k];
        const size_t padded = (numel + 15u) & ~(size_t)15u;
        if (w->fmt == RS_WFMT_DENSE) rs_st_to_f32(w->t, dst);
        else RS_TRY(decode_q_(w, st->files[w->t->file].path, dst));
        memset(dst + numel, 0, (padded - numel) * sizeof(float)); /* deterministic slab */
        for (size_t k = 0; k < numel; k++)
            RS_CHECK(isfinite(dst[k]), RS_E_NONFINITE, "%s: tensor '%s' element %lld is not finite",
                     st->files[w->t->file].path, w->name, (long long)k);
        *w->dst = dst;
        off += padded;
    }
    rs_mn_finish(wl);
    if (tied) m->w.lm_head = m->w.embed;
    m->n_tensors_used = wl->n + n_companions;
    m->n_tensors_ignored = st->n_tensors - m->n_tensors_used;
    return RS_OK;
}

rs_status rs_model_load(const char *dir, rs_model *m) {
    RS_CHECK(dir && m, RS_E_INVAL, "rs_model_load: NULL argument");
    memset(m, 0, sizeof *m);
    want_list wl = {NULL, 0, 0, NULL, dir, NULL, 0};
    rs_status s = load(dir, m, &wl);
    free(wl.v);
    free(wl.fix);
    if (s != RS_OK) rs_model_free(m);
    return s;
}
