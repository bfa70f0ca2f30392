/* test_model_load.c — rs_model_load on the committed tiny checkpoints (tests/fixtures/models/) and on
 * variants of them written here.
 *
 * - gdn-tiny-random (qwen3_5_text, BF16 + F32 A_log, tied) and mamba2-tiny-random (nemotron_h, F32,
 *   backbone. prefix, untied): config values as written by make_model_fixtures.py, and every element
 *   of a set of weights equal, bit for bit, to the file bytes decoded independently here (the header
 *   parsed with cJSON, bf16 widened by a 16-bit shift) — not through rs_safetensors.
 * - naming rules: the same weights as a multimodal `qwen3_5` checkpoint (text_config nesting,
 *   model.language_model.* names, model.visual.* / mtp.* / a stored lm_head of a tied model ignored),
 *   sharded over two files with an index, load to a byte-identical slab; NemotronH with `model.` prefix,
 *   the hub's `embedding.weight` spelling and a hybrid_override_pattern config, likewise.
 * - errors: missing tensor, shape mismatch, untied without lm_head, MoE, non-finite weight, unknown type,
 *   malformed config, truncated safetensors, no weights: each a clear message naming the culprit, and
 *   the model left zeroed.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_safetensors.h"
#include "rs_test_util.h"

static char g_dir[64];
static char g_gdn[256], g_m2[256];

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_test_model_XXXXXX");
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    rs_test_fixture_path(g_m2, sizeof g_m2, "models/mamba2-tiny-random");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- independent decoding of a safetensors file (cJSON on the raw bytes) ------------------------- */

typedef struct raw_file {
    unsigned char *bytes;
    size_t size;
    cJSON *hdr;
    size_t data_off;
} raw_file;

static void raw_open(raw_file *r, const char *dir) {
    char p[1024];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    r->bytes = rs_test_read_file(p, &r->size);
    assert_non_null(r->bytes);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | r->bytes[i];
    r->hdr = cJSON_ParseWithLength((const char *)r->bytes + 8, (size_t)n);
    assert_non_null(r->hdr);
    r->data_off = 8 + (size_t)n;
}

static void raw_close(raw_file *r) {
    cJSON_Delete(r->hdr);
    free(r->bytes);
}

/* Compare every element of `name` with the view: F32 copied, BF16 widened (u16 << 16). Also checks
 * the stored shape's element count equals `numel`. */
static void check_tensor(const raw_file *r, const char *name, const float *view, int64_t numel) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(r->hdr, name);
    if (!e) fprintf(stderr, "tensor %s not in file\n", name);
    assert_non_null(e);
    assert_non_null(view);
    const char *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring;
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    size_t b = (size_t)off->child->valuedouble, en = (size_t)off->child->next->valuedouble;
    int64_t n = 1;
    for (const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "shape")->child; d; d = d->next)
        n *= (int64_t)d->valuedouble;
    assert_int_equal(n, numel);
    const unsigned char *p = r->bytes + r->data_off + b;
    if (strcmp(dt, "BF16") == 0) {
        assert_int_equal(en - b, 2 * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)p[2 * i] << 16 | (uint32_t)p[2 * i + 1] << 24;
            assert_int_equal(rs_test_f2u(view[i]), u);
        }
    } else {
        assert_string_equal(dt, "F32");
        assert_int_equal(en - b, 4 * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                         (uint32_t)p[4 * i + 3] << 24;
            assert_int_equal(rs_test_f2u(view[i]), u);
        }
    }
}

static void check_in_slab(const rs_model *m, const float *v) {
    assert_non_null(v);
    assert_true(v >= m->w.slab && v < m->w.slab + m->w.slab_floats);
    assert_int_equal(((uintptr_t)v) % 64, 0); /* views start on 16-float boundaries of a 64-B slab */
}

static void test_gdn_fixture(void **state) {
    (void)state;
    rs_model m;
    rs_status st = rs_model_load(g_gdn, &m);
    if (st) fprintf(stderr, "%s\n", rs_last_error());
    assert_int_equal(st, RS_OK);
    const rs_model_config *c = &m.cfg;
    /* values of make_model_fixtures.py's Qwen3_5TextConfig */
    assert_int_equal(c->family, RS_FAMILY_QWEN35);
    assert_string_equal(c->model_type, "qwen3_5_text");
    assert_int_equal(c->n_layers, 4);
    static const rs_layer_kind kinds[4] = {RS_LAYER_GDN, RS_LAYER_GDN, RS_LAYER_GDN, RS_LAYER_ATTENTION};
    for (int i = 0; i < 4; i++) assert_int_equal(c->layer_kind[i], kinds[i]);
    assert_int_equal(c->hidden, 64);
    assert_int_equal(c->vocab, 256);
    assert_int_equal(c->tokenizer, RS_TOKENIZER_BYTE);
    assert_true(c->rms_eps == 1e-6f);
    assert_int_equal(c->tie_word_embeddings, 1);
    assert_int_equal(c->attn.n_heads, 4);
    assert_int_equal(c->attn.n_kv_heads, 2);
    assert_int_equal(c->attn.head_dim, 64);
    assert_int_equal(c->attn.rotary_dim, 16);
    assert_true(c->attn.rope_theta == 1e7);
    assert_int_equal(c->gdn.n_k_heads, 2);
    assert_int_equal(c->gdn.n_v_heads, 4);
    assert_int_equal(c->gdn.k_head_dim, 128);
    assert_int_equal(c->gdn.v_head_dim, 128);
    assert_int_equal(c->gdn.conv_dim, 1024);
    assert_int_equal(c->mlp.intermediate, 128);
    assert_int_equal(c->mlp.activation, RS_ACT_SILU);
    assert_string_equal(m.prefix, "model.");
    assert_int_equal(m.n_tensors_used, 55);
    assert_int_equal(m.n_tensors_ignored, 0);
    assert_ptr_equal(m.w.lm_head, m.w.embed);
    assert_null(m.w.layers[0].attn.q);
    assert_null(m.w.layers[3].gdn.in_qkv);
    assert_null(m.w.layers[0].mamba.in_proj);

    raw_file r;
    raw_open(&r, g_gdn);
    const rs_layer_weights *L0 = &m.w.layers[0], *L2 = &m.w.layers[2], *L3 = &m.w.layers[3];
    check_tensor(&r, "model.embed_tokens.weight", m.w.embed, 256 * 64);
    check_tensor(&r, "model.norm.weight", m.w.final_norm, 64);
    check_tensor(&r, "model.layers.0.input_layernorm.weight", L0->norm, 64);
    check_tensor(&r, "model.layers.0.post_attention_layernorm.weight", L0->post_norm, 64);
    check_tensor(&r, "model.layers.0.linear_attn.in_proj_qkv.weight", L0->gdn.in_qkv, 1024 * 64);
    check_tensor(&r, "model.layers.0.linear_attn.in_proj_z.weight", L0->gdn.in_z, 512 * 64);
    check_tensor(&r, "model.layers.0.linear_attn.in_proj_b.weight", L0->gdn.in_b, 4 * 64);
    check_tensor(&r, "model.layers.0.linear_attn.in_proj_a.weight", L0->gdn.in_a, 4 * 64);
    check_tensor(&r, "model.layers.0.linear_attn.conv1d.weight", L0->gdn.conv_w, 1024 * 4);
    check_tensor(&r, "model.layers.0.linear_attn.A_log", L0->gdn.A_log, 4); /* stored F32 */
    check_tensor(&r, "model.layers.0.linear_attn.dt_bias", L0->gdn.dt_bias, 4);
    check_tensor(&r, "model.layers.0.linear_attn.norm.weight", L0->gdn.norm, 128);
    check_tensor(&r, "model.layers.0.linear_attn.out_proj.weight", L0->gdn.out, 64 * 512);
    check_tensor(&r, "model.layers.2.linear_attn.A_log", L2->gdn.A_log, 4);
    check_tensor(&r, "model.layers.2.mlp.down_proj.weight", L2->mlp.down, 64 * 128);
    check_tensor(&r, "model.layers.3.self_attn.q_proj.weight", L3->attn.q, 512 * 64);
    check_tensor(&r, "model.layers.3.self_attn.k_proj.weight", L3->attn.k, 128 * 64);
    check_tensor(&r, "model.layers.3.self_attn.v_proj.weight", L3->attn.v, 128 * 64);
    check_tensor(&r, "model.layers.3.self_attn.o_proj.weight", L3->attn.o, 64 * 256);
    check_tensor(&r, "model.layers.3.self_attn.q_norm.weight", L3->attn.q_norm, 64);
    check_tensor(&r, "model.layers.3.self_attn.k_norm.weight", L3->attn.k_norm, 64);
    check_tensor(&r, "model.layers.3.mlp.gate_proj.weight", L3->mlp.gate, 128 * 64);
    check_tensor(&r, "model.layers.3.mlp.up_proj.weight", L3->mlp.up, 128 * 64);
    raw_close(&r);
    check_in_slab(&m, L0->gdn.in_qkv);
    check_in_slab(&m, L3->attn.k_norm);
    /* A = exp(A_log) was drawn from U[1, 16] by the fixture script */
    for (int i = 0; i < 4; i++) assert_true(expf(L0->gdn.A_log[i]) >= 0.99f && expf(L0->gdn.A_log[i]) <= 16.01f);
    rs_model_free(&m);
    assert_null(m.w.slab);
    rs_model_free(&m); /* idempotent */
}

static void test_mamba2_fixture(void **state) {
    (void)state;
    rs_model m;
    rs_status st = rs_model_load(g_m2, &m);
    if (st) fprintf(stderr, "%s\n", rs_last_error());
    assert_int_equal(st, RS_OK);
    const rs_model_config *c = &m.cfg;
    assert_int_equal(c->family, RS_FAMILY_NEMOTRONH);
    assert_int_equal(c->n_layers, 6);
    static const rs_layer_kind kinds[6] = {RS_LAYER_MAMBA2, RS_LAYER_MLP, RS_LAYER_MAMBA2,
                                           RS_LAYER_ATTENTION, RS_LAYER_MAMBA2, RS_LAYER_MLP};
    for (int i = 0; i < 6; i++) assert_int_equal(c->layer_kind[i], kinds[i]);
    assert_int_equal(c->hidden, 64);
    assert_int_equal(c->vocab, 256);
    assert_true(c->rms_eps == 1e-5f);
    assert_int_equal(c->tie_word_embeddings, 0);
    assert_int_equal(c->attn.n_heads, 4);
    assert_int_equal(c->attn.n_kv_heads, 2);
    assert_int_equal(c->attn.head_dim, 32);
    assert_int_equal(c->attn.use_rope, 0);
    assert_int_equal(c->mamba.n_heads, 4);
    assert_int_equal(c->mamba.head_dim, 64);
    assert_int_equal(c->mamba.n_groups, 2);
    assert_int_equal(c->mamba.d_state, 128);
    assert_int_equal(c->mamba.conv_kernel, 4);
    assert_int_equal(c->mamba.d_inner, 256);
    assert_int_equal(c->mamba.conv_dim, 768);
    assert_int_equal(c->mamba.in_proj_dim, 1028);
    assert_int_equal(c->mamba.use_conv_bias, 1);
    assert_true(c->mamba.time_step_min == 0.001);
    assert_true(c->mamba.time_step_limit[0] == 0.0 && isinf(c->mamba.time_step_limit[1]));
    assert_int_equal(c->mlp.intermediate, 128);
    assert_int_equal(c->mlp.activation, RS_ACT_RELU2);
    assert_string_equal(m.prefix, "backbone.");
    assert_int_equal(m.n_tensors_used, 41);
    assert_int_equal(m.n_tensors_ignored, 0);
    assert_true(m.w.lm_head != m.w.embed);
    assert_null(m.w.layers[0].post_norm);
    assert_null(m.w.layers[1].mlp.gate);
    assert_null(m.w.layers[3].attn.q_norm);

    raw_file r;
    raw_open(&r, g_m2);
    const rs_layer_weights *L0 = &m.w.layers[0], *L1 = &m.w.layers[1], *L3 = &m.w.layers[3],
                           *L4 = &m.w.layers[4];
    check_tensor(&r, "backbone.embeddings.weight", m.w.embed, 256 * 64);
    check_tensor(&r, "lm_head.weight", m.w.lm_head, 256 * 64);
    check_tensor(&r, "backbone.norm_f.weight", m.w.final_norm, 64);
    check_tensor(&r, "backbone.layers.0.norm.weight", L0->norm, 64);
    check_tensor(&r, "backbone.layers.0.mixer.in_proj.weight", L0->mamba.in_proj, 1028 * 64);
    check_tensor(&r, "backbone.layers.0.mixer.conv1d.weight", L0->mamba.conv_w, 768 * 4);
    check_tensor(&r, "backbone.layers.0.mixer.conv1d.bias", L0->mamba.conv_b, 768);
    check_tensor(&r, "backbone.layers.0.mixer.dt_bias", L0->mamba.dt_bias, 4);
    check_tensor(&r, "backbone.layers.0.mixer.A_log", L0->mamba.A_log, 4);
    check_tensor(&r, "backbone.layers.0.mixer.D", L0->mamba.D, 4);
    check_tensor(&r, "backbone.layers.0.mixer.norm.weight", L0->mamba.norm, 256);
    check_tensor(&r, "backbone.layers.0.mixer.out_proj.weight", L0->mamba.out, 64 * 256);
    check_tensor(&r, "backbone.layers.4.mixer.D", L4->mamba.D, 4);
    check_tensor(&r, "backbone.layers.1.mixer.up_proj.weight", L1->mlp.up, 128 * 64);
    check_tensor(&r, "backbone.layers.1.mixer.down_proj.weight", L1->mlp.down, 64 * 128);
    check_tensor(&r, "backbone.layers.3.mixer.q_proj.weight", L3->attn.q, 128 * 64);
    check_tensor(&r, "backbone.layers.3.mixer.k_proj.weight", L3->attn.k, 64 * 64);
    check_tensor(&r, "backbone.layers.3.mixer.v_proj.weight", L3->attn.v, 64 * 64);
    check_tensor(&r, "backbone.layers.3.mixer.o_proj.weight", L3->attn.o, 64 * 128);
    raw_close(&r);
    /* dt_bias = softplus^-1(dt) with dt in [1e-3, 1e-1] (fixture script) */
    for (int i = 0; i < 4; i++) {
        double dt = log1p(exp((double)L0->mamba.dt_bias[i]));
        assert_true(dt > 0.99e-3 && dt < 0.101);
    }
    rs_model_free(&m);
}

/* ---- writing variants of the fixtures ------------------------------------------------------------ */

typedef struct out_tensor {
    char name[160];
    const rs_st_tensor *src; /* bytes, dtype and shape come from here unless overridden */
    const void *bytes;       /* override bytes (same size) */
} out_tensor;

/* write tensors [lo, hi) of `ts` as one safetensors file */
static void write_st(const char *path, const out_tensor *ts, int lo, int hi) {
    size_t cap = 1 << 16, len = 0, off = 0;
    char *h = malloc(cap);
    assert_non_null(h);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = lo; i < hi; i++) {
        const rs_st_tensor *t = ts[i].src;
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", ts[i].name,
                                rs_st_dtype_name(t->dtype));
        for (int k = 0; k < t->ndim; k++) len += (size_t)snprintf(h + len, cap - len, k ? ",%lld" : "%lld",
                                                                 (long long)t->shape[k]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + t->nbytes);
        off += t->nbytes;
        assert_true(len < cap - 256);
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char l8[8];
    for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    assert_int_equal(fwrite(l8, 1, 8, f), 8);
    assert_int_equal(fwrite(h, 1, len, f), len);
    for (int i = lo; i < hi; i++) {
        const void *b = ts[i].bytes ? ts[i].bytes : ts[i].src->data;
        assert_int_equal(fwrite(b, 1, ts[i].src->nbytes, f), ts[i].src->nbytes);
    }
    fclose(f);
    free(h);
}

static void write_json(const char *path, const cJSON *j) {
    char *s = cJSON_Print(j);
    assert_non_null(s);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
    free(s);
}

static cJSON *read_json(const char *path) {
    size_t n;
    char *t = rs_test_read_file(path, &n);
    assert_non_null(t);
    cJSON *j = cJSON_ParseWithLength(t, n);
    free(t);
    assert_non_null(j);
    return j;
}

static char *mkdir_in(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_dir, name);
    assert_int_equal(mkdir(buf, 0700), 0);
    return buf;
}

/* replace a name prefix `from` by `to` (or keep the name) */
static void rename_into(char *dst, size_t n, const char *name, const char *from, const char *to) {
    size_t fl = strlen(from);
    if (strncmp(name, from, fl) == 0) snprintf(dst, n, "%s%s", to, name + fl);
    else snprintf(dst, n, "%s", name);
}

/* Two loads of the same weights under different names/layouts: every view at the same slab offset
 * (same tensors in the same order) and the slabs byte-identical (the loader zero-fills padding). */
static void assert_same_slab(const rs_model *a, const rs_model *b) {
    assert_int_equal(a->w.slab_floats, b->w.slab_floats);
    assert_int_equal(a->n_tensors_used, b->n_tensors_used);
    assert_int_equal(a->w.embed - a->w.slab, b->w.embed - b->w.slab);
    assert_int_equal(a->w.final_norm - a->w.slab, b->w.final_norm - b->w.slab);
    assert_int_equal(a->w.lm_head - a->w.slab, b->w.lm_head - b->w.slab);
    for (int l = 0; l < a->cfg.n_layers; l++) {
        /* rs_layer_weights is `kind` followed only by const float * members (nested structs included) */
        const float *const *pa = (const float *const *)&a->w.layers[l].norm;
        const float *const *pb = (const float *const *)&b->w.layers[l].norm;
        size_t nptr = (sizeof(rs_layer_weights) - offsetof(rs_layer_weights, norm)) / sizeof(float *);
        for (size_t k = 0; k < nptr; k++) {
            assert_true((pa[k] == NULL) == (pb[k] == NULL));
            if (pa[k]) assert_int_equal(pa[k] - a->w.slab, pb[k] - b->w.slab);
        }
    }
    assert_memory_equal(a->w.slab, b->w.slab, a->w.slab_floats * sizeof(float));
}

static void test_qwen35_multimodal_sharded(void **state) {
    (void)state;
    rs_model ref;
    assert_int_equal(rs_model_load(g_gdn, &ref), RS_OK);
    char d[256], p[1024];
    mkdir_in(d, sizeof d, "qwen35-mm");

    /* config: {"model_type":"qwen3_5","tie_word_embeddings":true,"vision_config":{..},"text_config":<fixture>} */
    snprintf(p, sizeof p, "%s/config.json", g_gdn);
    cJSON *text = read_json(p);
    cJSON_DeleteItemFromObjectCaseSensitive(text, "tie_word_embeddings"); /* only the top-level flag */
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model_type", "qwen3_5");
    cJSON_AddTrueToObject(root, "tie_word_embeddings");
    cJSON *vis = cJSON_AddObjectToObject(root, "vision_config");
    cJSON_AddNumberToObject(vis, "depth", 2);
    cJSON_AddItemToObject(root, "text_config", text);
    snprintf(p, sizeof p, "%s/config.json", d);
    write_json(p, root);
    cJSON_Delete(root);

    /* weights: model.X -> model.language_model.X, plus vision, mtp and a stale lm_head (tied: ignored) */
    rs_st_set src;
    snprintf(p, sizeof p, "%s/model.safetensors", g_gdn);
    assert_int_equal(rs_st_open_file(p, &src), RS_OK);
    rs_st_set extra;
    snprintf(p, sizeof p, "%s/model.safetensors", g_m2);
    assert_int_equal(rs_st_open_file(p, &extra), RS_OK);
    int n = src.n_tensors + 3;
    out_tensor *ts = calloc((size_t)n, sizeof *ts);
    assert_non_null(ts);
    for (int i = 0; i < src.n_tensors; i++) {
        rename_into(ts[i].name, sizeof ts[i].name, src.tensors[i].name, "model.", "model.language_model.");
        ts[i].src = &src.tensors[i];
    }
    snprintf(ts[n - 3].name, sizeof ts[n - 3].name, "model.visual.blocks.0.attn.qkv.weight");
    ts[n - 3].src = rs_st_find(&extra, "backbone.layers.0.mixer.D");
    snprintf(ts[n - 2].name, sizeof ts[n - 2].name, "mtp.fc.weight");
    ts[n - 2].src = rs_st_find(&extra, "backbone.layers.0.mixer.A_log");
    snprintf(ts[n - 1].name, sizeof ts[n - 1].name, "lm_head.weight");
    ts[n - 1].src = rs_st_find(&extra, "lm_head.weight"); /* different values than the embeddings */
    /* two shards + index */
    int half = n / 2;
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", d);
    write_st(p, ts, 0, half);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", d);
    write_st(p, ts, half, n);
    cJSON *idx = cJSON_CreateObject();
    cJSON *wm = cJSON_AddObjectToObject(idx, "weight_map");
    for (int i = 0; i < n; i++)
        cJSON_AddStringToObject(wm, ts[i].name, i < half ? "model-00001-of-00002.safetensors"
                                                         : "model-00002-of-00002.safetensors");
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", d);
    write_json(p, idx);
    cJSON_Delete(idx);

    rs_model m;
    rs_status st = rs_model_load(d, &m);
    if (st) fprintf(stderr, "%s\n", rs_last_error());
    assert_int_equal(st, RS_OK);
    assert_string_equal(m.cfg.model_type, "qwen3_5");
    assert_int_equal(m.cfg.family, RS_FAMILY_QWEN35);
    assert_string_equal(m.prefix, "model.language_model.");
    assert_int_equal(m.st->n_files, 2);
    assert_int_equal(m.n_tensors_ignored, 3); /* visual, mtp, stored lm_head of a tied model */
    assert_ptr_equal(m.w.lm_head, m.w.embed);
    assert_same_slab(&ref, &m);
    rs_model_free(&m);

    /* untied via the top-level flag: the stored lm_head is now used */
    snprintf(p, sizeof p, "%s/config.json", d);
    root = read_json(p);
    cJSON_ReplaceItemInObjectCaseSensitive(root, "tie_word_embeddings", cJSON_CreateFalse());
    write_json(p, root);
    cJSON_Delete(root);
    assert_int_equal(rs_model_load(d, &m), RS_OK);
    assert_true(m.w.lm_head != m.w.embed);
    {
        const rs_st_tensor *t = rs_st_find(&extra, "lm_head.weight");
        float *full = malloc((size_t)t->numel * sizeof(float));
        assert_non_null(full);
        rs_st_to_f32(t, full);
        assert_memory_equal(full, m.w.lm_head, (size_t)t->numel * sizeof(float));
        free(full);
    }
    assert_int_equal(m.n_tensors_ignored, 2);
    rs_model_free(&m);

    free(ts);
    rs_st_close(&src);
    rs_st_close(&extra);
    rs_model_free(&ref);
}

/* Write a variant of the nemotron fixture into g_dir/name: tensors renamed backbone. -> `prefix`,
 * embeddings -> `embed_spelling`, tensor `drop` omitted, tensor `nan_in` given a NaN; config edited by
 * `edit` (may be NULL). */
typedef void (*config_edit)(cJSON *root);

static void write_m2_variant(char *d, size_t dn, const char *name, const char *prefix, const char *embed_spelling,
                             const char *drop, const char *nan_in, config_edit edit) {
    mkdir_in(d, dn, name);
    char p[1024];
    snprintf(p, sizeof p, "%s/config.json", g_m2);
    cJSON *root = read_json(p);
    if (edit) edit(root);
    snprintf(p, sizeof p, "%s/config.json", d);
    write_json(p, root);
    cJSON_Delete(root);

    rs_st_set src;
    snprintf(p, sizeof p, "%s/model.safetensors", g_m2);
    assert_int_equal(rs_st_open_file(p, &src), RS_OK);
    out_tensor *ts = calloc((size_t)src.n_tensors, sizeof *ts);
    assert_non_null(ts);
    float *nanbuf = NULL;
    int n = 0;
    for (int i = 0; i < src.n_tensors; i++) {
        const rs_st_tensor *t = &src.tensors[i];
        if (drop && strcmp(t->name, drop) == 0) continue;
        char tmp[160];
        rename_into(tmp, sizeof tmp, t->name, "backbone.", prefix);
        if (strstr(tmp, "embeddings.weight")) {
            snprintf(ts[n].name, sizeof ts[n].name, "%s%s", prefix, embed_spelling);
        } else {
            snprintf(ts[n].name, sizeof ts[n].name, "%s", tmp);
        }
        ts[n].src = t;
        if (nan_in && strcmp(t->name, nan_in) == 0) {
            nanbuf = malloc(t->nbytes);
            assert_non_null(nanbuf);
            memcpy(nanbuf, t->data, t->nbytes);
            nanbuf[t->numel - 1] = NAN;
            ts[n].bytes = nanbuf;
        }
        n++;
    }
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    write_st(p, ts, 0, n);
    free(nanbuf);
    free(ts);
    rs_st_close(&src);
}

static void edit_pattern(cJSON *root) {
    cJSON_DeleteItemFromObjectCaseSensitive(root, "layers_block_type");
    cJSON_AddStringToObject(root, "hybrid_override_pattern", "M-M*M-");
}
static void edit_intermediate(cJSON *root) {
    cJSON_ReplaceItemInObjectCaseSensitive(root, "intermediate_size", cJSON_CreateNumber(96));
}
static void edit_moe(cJSON *root) {
    cJSON_DeleteItemFromObjectCaseSensitive(root, "layers_block_type");
    cJSON_AddStringToObject(root, "hybrid_override_pattern", "M-E*M-");
}
static void edit_unknown(cJSON *root) {
    cJSON_ReplaceItemInObjectCaseSensitive(root, "model_type", cJSON_CreateString("mamba2"));
}

static void test_nemotron_prefix_and_pattern(void **state) {
    (void)state;
    rs_model ref, m;
    assert_int_equal(rs_model_load(g_m2, &ref), RS_OK);
    char d[256];
    write_m2_variant(d, sizeof d, "m2-model-prefix", "model.", "embedding.weight", NULL, NULL, edit_pattern);
    rs_status st = rs_model_load(d, &m);
    if (st) fprintf(stderr, "%s\n", rs_last_error());
    assert_int_equal(st, RS_OK);
    assert_string_equal(m.prefix, "model.");
    for (int i = 0; i < 6; i++) assert_int_equal(m.cfg.layer_kind[i], ref.cfg.layer_kind[i]);
    assert_same_slab(&ref, &m);
    rs_model_free(&m);
    rs_model_free(&ref);
}

static void expect_load_fail(const char *dir, rs_status code, const char *n1, const char *n2) {
    rs_model m;
    rs_status st = rs_model_load(dir, &m);
    if (st != code || (n1 && !strstr(rs_last_error(), n1)) || (n2 && !strstr(rs_last_error(), n2)))
        fprintf(stderr, "%s -> %d: %s (want %d, '%s', '%s')\n", dir, st, rs_last_error(), code, n1 ? n1 : "",
                n2 ? n2 : "");
    assert_int_equal(st, code);
    if (n1) assert_non_null(strstr(rs_last_error(), n1));
    if (n2) assert_non_null(strstr(rs_last_error(), n2));
    assert_null(m.w.slab); /* left zeroed */
    assert_null(m.st);
    assert_int_equal(m.cfg.n_layers, 0);
}

static void test_load_errors(void **state) {
    (void)state;
    char d[256], p[1024];
    write_m2_variant(d, sizeof d, "m2-missing", "backbone.", "embeddings.weight", "backbone.layers.2.mixer.D", NULL,
                     NULL);
    expect_load_fail(d, RS_E_FORMAT, "'backbone.layers.2.mixer.D'", "missing");
    expect_load_fail(d, RS_E_FORMAT, "layer 2, mamba2", NULL);

    write_m2_variant(d, sizeof d, "m2-shape", "backbone.", "embeddings.weight", NULL, NULL, edit_intermediate);
    expect_load_fail(d, RS_E_SHAPE, "'backbone.layers.1.mixer.up_proj.weight'", "[128, 64] but config.json implies "
                     "[96, 64]");

    write_m2_variant(d, sizeof d, "m2-nolmhead", "backbone.", "embeddings.weight", "lm_head.weight", NULL, NULL);
    expect_load_fail(d, RS_E_FORMAT, "lm_head.weight", "tie_word_embeddings");

    /* a MoE layer in the pattern: its router, shared and routed experts are required */
    write_m2_variant(d, sizeof d, "m2-moe", "backbone.", "embeddings.weight", NULL, NULL, edit_moe);
    expect_load_fail(d, RS_E_FORMAT, "'backbone.layers.2.mixer.gate.weight'", "layer 2, moe");

    write_m2_variant(d, sizeof d, "m2-unknown", "backbone.", "embeddings.weight", NULL, NULL, edit_unknown);
    expect_load_fail(d, RS_E_UNSUPPORTED, "'mamba2' is not supported yet", NULL);

    write_m2_variant(d, sizeof d, "m2-nan", "backbone.", "embeddings.weight", NULL, "backbone.layers.4.mixer.A_log",
                     NULL);
    expect_load_fail(d, RS_E_NONFINITE, "'backbone.layers.4.mixer.A_log'", "not finite");

    write_m2_variant(d, sizeof d, "m2-noembed", "weird.", "embeddings.weight", NULL, NULL, NULL);
    expect_load_fail(d, RS_E_FORMAT, "embedding", NULL);

    /* malformed config.json */
    write_m2_variant(d, sizeof d, "m2-badjson", "backbone.", "embeddings.weight", NULL, NULL, NULL);
    snprintf(p, sizeof p, "%s/config.json", d);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs("{\"model_type\": \"nemotron_h\", \"hidden_size\": 64,,}", f);
    fclose(f);
    expect_load_fail(d, RS_E_FORMAT, "config.json", "JSON");

    /* truncated model.safetensors */
    write_m2_variant(d, sizeof d, "m2-trunc", "backbone.", "embeddings.weight", NULL, NULL, NULL);
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    assert_int_equal(truncate(p, 100000), 0);
    expect_load_fail(d, RS_E_FORMAT, "model.safetensors", "past the data section");

    /* no weights at all */
    write_m2_variant(d, sizeof d, "m2-noweights", "backbone.", "embeddings.weight", NULL, NULL, NULL);
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    assert_int_equal(remove(p), 0);
    expect_load_fail(d, RS_E_IO, "m2-noweights", NULL);

    /* no config */
    snprintf(p, sizeof p, "%s/does-not-exist", g_dir);
    expect_load_fail(p, RS_E_IO, "config.json", NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gdn_fixture),
        cmocka_unit_test(test_mamba2_fixture),
        cmocka_unit_test(test_qwen35_multimodal_sharded),
        cmocka_unit_test(test_nemotron_prefix_and_pattern),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
