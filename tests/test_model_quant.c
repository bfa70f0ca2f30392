/* test_model_quant.c — checkpoints with quantized weights (NVFP4 / FP8 in ModelOpt's layouts):
 *   1. tests/fixtures/models/mamba2-moe-quant (make_quant_fixtures.py: NVFP4 experts, shared experts
 *      and attention; FP8 per-tensor latent projections and MLP; FP8 32 x 32 blocks for Mamba-2
 *      in_proj / out_proj) loads into exactly the slab of its dequantised twin (twin/: the values
 *      ml_dtypes computes, one rounding each, in BF16 where exact, F32 otherwise): every decoded weight
 *      is bit-identical to the independent decoder, so the logits are too; they differ from the
 *      unquantized source model's (the quantization is real);
 *   2. lying checkpoints and descriptions are refused with one-line errors naming the tensor or key,
 *      and nothing is left loaded: shapes, scale counts and dtypes of weights and scales, missing
 *      companions, a module stored in another format than hf_quant_config.json declares, malformed
 *      hf_quant_config.json;
 *   3. rs_quant_config: the algorithms, exclude patterns (with and without the model prefix),
 *      MIXED_PRECISION lookups, config.json's quantization_config, and the refusals. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/rs_backend.h"
#include "model/rs_runner.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_quant_config.h"
#include "replayssm/eval/rs_safetensors.h"
#include "rs_test_util.h"

static char g_q[512], g_twin[600], g_src[512], g_tmp[64];

static int setup(void **state) {
    (void)state;
    rs_test_fixture_path(g_q, sizeof g_q, "models/mamba2-moe-quant");
    snprintf(g_twin, sizeof g_twin, "%s/twin", g_q);
    rs_test_fixture_path(g_src, sizeof g_src, "models/mamba2-moe-tiny-random");
    snprintf(g_tmp, sizeof g_tmp, "/tmp/rs_test_quant_XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return rs_test_rmdir(g_tmp);
}

/* fp32 logits of the first T fixture tokens (one chunk) */
static float *logits_of_(const rs_model *m, const int32_t *ids, size_t T) {
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_OK);
    rs_runner_config rc = rs_runner_config_default();
    rc.chunk = T;
    rc.max_tokens = T;
    rs_runner *r = NULL;
    assert_int_equal(rs_runner_create(m, be, &rc, &r), RS_OK);
    assert_int_equal(rs_runner_step(r, ids, T), RS_OK);
    const size_t n = T * (size_t)m->cfg.vocab;
    float *y = (float *)malloc(n * sizeof(float));
    assert_non_null(y);
    memcpy(y, rs_runner_logits(r, 0), n * sizeof(float));
    rs_runner_free(r);
    rs_backend_destroy(be);
    return y;
}

static void test_quantized_equals_twin(void **state) {
    (void)state;
    rs_model q, t, s;
    rs_status st = rs_model_load(g_q, &q);
    if (st != RS_OK) fail_msg("load %s: %s", g_q, rs_last_error());
    assert_int_equal(rs_model_load(g_twin, &t), RS_OK);
    assert_int_equal(rs_model_load(g_src, &s), RS_OK);
    assert_true(q.quant.present && q.quant.mixed);
    assert_string_equal(q.quant.source, "hf_quant_config.json");
    assert_false(t.quant.present);
    assert_int_equal(q.n_weights_fmt[RS_WFMT_NVFP4], 72);
    assert_int_equal(q.n_weights_fmt[RS_WFMT_FP8], 6);
    assert_int_equal(q.n_weights_fmt[RS_WFMT_FP8_BLOCK], 4);
    assert_int_equal(t.n_weights_fmt[RS_WFMT_NVFP4] + t.n_weights_fmt[RS_WFMT_FP8], 0);
    /* companions: 2 per NVFP4 weight, 1 per FP8 weight */
    assert_int_equal(q.n_tensors_used, t.n_tensors_used + 2 * 72 + 6 + 4);
    assert_int_equal(q.n_tensors_ignored, 0);
    /* the same tensors in the same order: equal slabs mean every decoded value equals ml_dtypes' */
    assert_int_equal(q.w.slab_floats, t.w.slab_floats);
    size_t differ = 0;
    for (size_t i = 0; i < q.w.slab_floats; i++) differ += rs_test_f2u(q.w.slab[i]) != rs_test_f2u(t.w.slab[i]);
    assert_int_equal(differ, 0);
    size_t changed = 0; /* and the source's weights are not what was decoded */
    for (size_t i = 0; i < q.w.slab_floats; i++) changed += q.w.slab[i] != s.w.slab[i];
    printf("  %zu of %zu slab floats differ from the unquantized source\n", changed, q.w.slab_floats);
    assert_true(changed > q.w.slab_floats / 4);

    int32_t ids[48];
    for (int i = 0; i < 48; i++) ids[i] = (int32_t)((i * 37 + 11) % 256);
    float *yq = logits_of_(&q, ids, 48), *yt = logits_of_(&t, ids, 48), *ys = logits_of_(&s, ids, 48);
    double dq = 0, ds = 0, mx = 0;
    for (size_t i = 0; i < 48 * 256; i++) {
        assert_true(isfinite(yq[i]));
        dq = fmax(dq, fabs((double)yq[i] - yt[i]));
        ds = fmax(ds, fabs((double)yq[i] - ys[i]));
        mx = fmax(mx, fabs(ys[i]));
    }
    printf("  logits: quantized vs dequantised twin max|diff| %.3e; vs unquantized source %.3e (max|logit| %.3f)\n",
           dq, ds, mx);
    assert_true(dq == 0.0);
    assert_true(ds > 0.0);
    free(yq);
    free(yt);
    free(ys);
    rs_model_free(&q);
    rs_model_free(&t);
    rs_model_free(&s);
}

/* ---- variants of the quantized fixture ----------------------------------------------------------- */

/* One tensor edit: rename / drop it, or give it another dtype and shape (zero bytes of the new size). */
typedef struct edit {
    const char *name;
    const char *new_dtype; /* NULL: keep */
    int ndim;              /* -1: keep the shape */
    int64_t shape[3];
    int drop;
} edit;

static void write_variant_(char *dir, size_t dn, const char *tag, const edit *e, const char *hqc) {
    static int seq;
    snprintf(dir, dn, "%s/v%02d-%s", g_tmp, seq++, tag);
    assert_int_equal(mkdir(dir, 0700), 0);
    char p[1024], cmd[2200];
    snprintf(cmd, sizeof cmd, "cp '%s/config.json' '%s/'", g_q, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(p, sizeof p, "%s/hf_quant_config.json", dir);
    if (hqc) {
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        fputs(hqc, f);
        fclose(f);
    } else {
        snprintf(cmd, sizeof cmd, "cp '%s/hf_quant_config.json' '%s/'", g_q, dir);
        assert_int_equal(system(cmd), 0);
    }
    rs_st_set src;
    snprintf(p, sizeof p, "%s/model.safetensors", g_q);
    assert_int_equal(rs_st_open_file(p, &src), RS_OK);
    size_t cap = 1 << 20, len = 0, off = 0;
    char *h = (char *)malloc(cap);
    const void **bytes = (const void **)calloc((size_t)src.n_tensors, sizeof *bytes);
    size_t *nb = (size_t *)calloc((size_t)src.n_tensors, sizeof *nb);
    unsigned char *zeros = (unsigned char *)calloc(1, 1 << 20);
    assert_true(h && bytes && nb && zeros);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < src.n_tensors; i++) {
        const rs_st_tensor *t = &src.tensors[i];
        const char *dt = rs_st_dtype_name(t->dtype);
        int nd = t->ndim;
        int64_t sh[8];
        for (int k = 0; k < nd; k++) sh[k] = t->shape[k];
        bytes[i] = t->data;
        nb[i] = t->nbytes;
        if (e && strcmp(e->name, t->name) == 0) {
            if (e->drop) continue;
            if (e->new_dtype) dt = e->new_dtype;
            if (e->ndim >= 0) {
                nd = e->ndim;
                for (int k = 0; k < nd; k++) sh[k] = e->shape[k];
            }
            size_t numel = 1;
            for (int k = 0; k < nd; k++) numel *= (size_t)sh[k];
            const size_t es = strcmp(dt, "F32") == 0 ? 4 : strcmp(dt, "BF16") == 0 || strcmp(dt, "F16") == 0 ? 2 : 1;
            nb[i] = numel * es;
            assert_true(nb[i] <= (1u << 20));
            bytes[i] = zeros;
            if (nb[i] == t->nbytes) bytes[i] = t->data; /* same size: keep the bytes (a pure dtype lie) */
        }
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, dt);
        for (int k = 0; k < nd; k++) len += (size_t)snprintf(h + len, cap - len, k ? ",%lld" : "%lld", (long long)sh[k]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + nb[i]);
        off += nb[i];
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    unsigned char l8[8];
    for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    assert_int_equal(fwrite(l8, 1, 8, f), 8);
    assert_int_equal(fwrite(h, 1, len, f), len);
    for (int i = 0; i < src.n_tensors; i++) {
        if (e && e->drop && strcmp(e->name, src.tensors[i].name) == 0) continue;
        assert_int_equal(fwrite(bytes[i], 1, nb[i], f), nb[i]);
    }
    fclose(f);
    free(h);
    free(bytes);
    free(nb);
    free(zeros);
    rs_st_close(&src);
}

static void expect_fail_(const char *tag, const edit *e, const char *hqc, rs_status code, const char *n1,
                         const char *n2) {
    char d[256];
    write_variant_(d, sizeof d, tag, e, hqc);
    rs_model m;
    const rs_status st = rs_model_load(d, &m);
    printf("  %-14s -> %s\n", tag, rs_last_error());
    assert_int_equal(st, code);
    assert_null(strchr(rs_last_error(), '\n')); /* one line */
    if (n1) assert_non_null(strstr(rs_last_error(), n1));
    if (n2) assert_non_null(strstr(rs_last_error(), n2));
    assert_null(m.w.slab); /* nothing left loaded */
    assert_null(m.st);
    assert_false(m.quant.present);
}

#define EXP "backbone.layers.1.mixer.experts.3.up_proj" /* NVFP4 [48, 32] */
#define LAT "backbone.layers.1.mixer.fc1_latent_proj"   /* FP8 per tensor [32, 64] */
#define INP "backbone.layers.0.mixer.in_proj"           /* FP8 blocks [516, 64], grid [17, 2] */

static void test_lying_tensors(void **state) {
    (void)state;
    char d[256];
    write_variant_(d, sizeof d, "unchanged", NULL, NULL); /* the writer itself keeps a loadable model */
    rs_model m;
    assert_int_equal(rs_model_load(d, &m), RS_OK);
    rs_model_free(&m);

    const edit e1 = {EXP ".weight", NULL, 2, {48, 15}, 0};
    expect_fail_("nvfp4-shape", &e1, NULL, RS_E_SHAPE, "'" EXP ".weight'", "NVFP4 bytes must be [48, 16]");
    const edit e2 = {EXP ".weight_scale", NULL, 2, {48, 4}, 0};
    expect_fail_("scale-count", &e2, NULL, RS_E_SHAPE, EXP ".weight_scale", "F8_E4M3 [48, 2]");
    const edit e3 = {EXP ".weight_scale", "F32", -1, {0}, 0};
    expect_fail_("scale-dtype", &e3, NULL, RS_E_SHAPE, EXP ".weight_scale", "F8_E4M3");
    const edit e4 = {EXP ".weight_scale_2", NULL, 1, {2}, 0};
    expect_fail_("scale2-count", &e4, NULL, RS_E_FORMAT, EXP ".weight_scale_2", "one F32 value");
    const edit e5 = {EXP ".weight_scale_2", NULL, 0, {0}, 1};
    expect_fail_("scale2-missing", &e5, NULL, RS_E_FORMAT, EXP ".weight_scale_2", "missing");
    const edit e6 = {EXP ".weight_scale", NULL, 0, {0}, 1};
    expect_fail_("scale-missing", &e6, NULL, RS_E_FORMAT, EXP ".weight_scale' is missing", NULL);
    const edit e7 = {EXP ".weight", "F8_E4M3", -1, {0}, 0}; /* declared NVFP4, stored as FP8 bytes */
    expect_fail_("dtype-lie", &e7, NULL, RS_E_FORMAT, "'" EXP ".weight'", "stored as FP8 (F8_E4M3) but "
                 "hf_quant_config.json declares module '" EXP "' nvfp4");
    const edit e8 = {EXP ".weight", "BF16", 2, {48, 32}, 0}; /* dense where the config says NVFP4 */
    expect_fail_("dense-lie", &e8, NULL, RS_E_FORMAT, "stored as BF16 but hf_quant_config.json declares", "nvfp4");
    const edit e9 = {EXP ".weight", "I8", -1, {0}, 0};
    expect_fail_("dtype-i8", &e9, NULL, RS_E_UNSUPPORTED, "dtype 'I8'", NULL);
    const edit e10 = {LAT ".weight", "U8", 2, {32, 32}, 0}; /* FP8 module stored as NVFP4 bytes */
    expect_fail_("fmt-mismatch", &e10, NULL, RS_E_FORMAT, "stored as NVFP4 (U8)", "declares module '" LAT "' fp8");
    const edit e11 = {LAT ".weight_scale", "F8_E4M3", 0, {0}, 0};
    expect_fail_("fp8-scale-dtype", &e11, NULL, RS_E_FORMAT, LAT ".weight_scale", "must be F32");
    const edit e12 = {INP ".weight_scale", NULL, 2, {16, 2}, 0}; /* grid one row short for 32-row blocks */
    expect_fail_("block-grid", &e12, NULL, RS_E_SHAPE, "'" INP ".weight'", NULL);
    const edit e13 = {INP ".weight", NULL, 2, {516, 63}, 0};
    expect_fail_("fp8-shape", &e13, NULL, RS_E_SHAPE, "'" INP ".weight'", "FP8 weight must be [516, 64]");
    const edit e14 = {"backbone.layers.0.mixer.D", "U8", 1, {4}, 0}; /* a vector stored as bytes */
    expect_fail_("vector-u8", &e14, NULL, RS_E_FORMAT, "'backbone.layers.0.mixer.D'", "2-D linear weights only");
    /* a NaN E4M3 block scale byte is caught by the decoder, named with the tensor */
    char dn[256];
    write_variant_(dn, sizeof dn, "nan-scale", NULL, NULL);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dn);
    rs_st_set s;
    assert_int_equal(rs_st_open_file(p, &s), RS_OK);
    const rs_st_tensor *t = rs_st_find(&s, EXP ".weight_scale");
    assert_non_null(t);
    const long at = (long)((const unsigned char *)t->data - (const unsigned char *)s.files[0].map);
    rs_st_close(&s);
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at + 5, SEEK_SET), 0);
    fputc(0x7f, f);
    fclose(f);
    assert_int_equal(rs_model_load(dn, &m), RS_E_FORMAT);
    printf("  %-14s -> %s\n", "nan-scale", rs_last_error());
    assert_non_null(strstr(rs_last_error(), "'" EXP ".weight'"));
    assert_null(m.w.slab);
}

static void test_bad_quant_config(void **state) {
    (void)state;
    expect_fail_("hqc-json", NULL, "{\"quantization\": {\"quant_algo\": ", RS_E_FORMAT, "hf_quant_config.json",
                 "not well-formed JSON");
    expect_fail_("hqc-noquant", NULL, "{\"producer\": {}}", RS_E_FORMAT, "no object 'quantization'", NULL);
    expect_fail_("hqc-algo", NULL, "{\"quantization\": {\"quant_algo\": \"INT4_AWQ\"}}", RS_E_UNSUPPORTED,
                 "quant_algo 'INT4_AWQ' is not supported", NULL);
    expect_fail_("hqc-noalgo", NULL, "{\"quantization\": {\"group_size\": 16}}", RS_E_FORMAT, "quant_algo is missing",
                 NULL);
    expect_fail_("hqc-group", NULL, "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"group_size\": 32}}", RS_E_FORMAT,
                 "group_size = 32", NULL);
    expect_fail_("hqc-mixed", NULL, "{\"quantization\": {\"quant_algo\": \"MIXED_PRECISION\"}}", RS_E_FORMAT,
                 "needs an object quantized_layers", NULL);
    expect_fail_("hqc-layer", NULL,
                 "{\"quantization\": {\"quant_algo\": \"MIXED_PRECISION\", \"quantized_layers\": "
                 "{\"x\": {\"quant_algo\": \"W8A8\"}}}}", RS_E_UNSUPPORTED, "quantized_layers['x'].quant_algo", NULL);
    expect_fail_("hqc-exclude", NULL, "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"exclude_modules\": \"lm_head\"}}",
                 RS_E_FORMAT, "exclude_modules must be a list", NULL);
    expect_fail_("hqc-block", NULL, "{\"quantization\": {\"quant_algo\": \"FP8\", \"weight_block_size\": [128]}}",
                 RS_E_FORMAT, "weight_block_size", NULL);
    /* NVFP4 for every linear layer but lm_head and routers: the dense Mamba-2 in_proj is then a lie */
    expect_fail_("hqc-nvfp4-all", NULL, "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"group_size\": 16, "
                 "\"exclude_modules\": [\"lm_head\", \"*.gate\"]}}", RS_E_FORMAT, "declares module", NULL);
}

static void test_quant_config_rules(void **state) {
    (void)state;
    rs_quant_config q;
    const char *nv = "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"group_size\": 16, \"kv_cache_quant_algo\": "
                     "\"FP8\", \"exclude_modules\": [\"lm_head\", \"*.mixer.gate\", \"layers.0.*\"]}}";
    assert_int_equal(rs_quant_config_parse(nv, strlen(nv), 0, NULL, &q), RS_OK);
    assert_true(q.present && !q.mixed && !q.w4a16);
    assert_int_equal(q.fmt, RS_WFMT_NVFP4);
    assert_int_equal(q.group_size, 16);
    assert_string_equal(q.kv_cache_quant_algo, "FP8");
    assert_int_equal(q.n_exclude, 3);
    assert_int_equal(rs_quant_config_format_of(&q, "lm_head"), RS_WFMT_DENSE);
    assert_int_equal(rs_quant_config_format_of(&q, "backbone.layers.3.mixer.gate"), RS_WFMT_DENSE);
    assert_int_equal(rs_quant_config_format_of(&q, "backbone.layers.3.mixer.up_proj"), RS_WFMT_NVFP4);
    assert_int_equal(rs_quant_config_format_of(&q, "backbone.layers.0.mixer.in_proj"), RS_WFMT_DENSE); /* prefix-free */
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.0.mlp.up_proj"), RS_WFMT_DENSE);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.10.mlp.up_proj"), RS_WFMT_NVFP4);
    assert_int_equal(rs_quant_config_format_of(NULL, "x"), RS_WFMT_DENSE);
    rs_quant_config_free(&q);
    assert_false(q.present);
    /* a hub-prefixed pattern covers the layer under any prefix (a random-weight model's "model.") */
    const char *hub = "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"exclude_modules\": "
                      "[\"model.language_model.layers.*.linear_attn*\"]}}";
    assert_int_equal(rs_quant_config_parse(hub, strlen(hub), 0, NULL, &q), RS_OK);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.0.linear_attn.in_proj_qkv"), RS_WFMT_DENSE);
    assert_int_equal(rs_quant_config_format_of(&q, "model.language_model.layers.3.linear_attn.out_proj"),
                     RS_WFMT_DENSE);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.0.mlp.experts.1.up_proj"), RS_WFMT_NVFP4);
    /* the MoE routers are dense without being excluded (ModelOpt quantizes nn.Linear modules only) */
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.0.mlp.gate"), RS_WFMT_DENSE);
    assert_int_equal(rs_quant_config_format_of(&q, "backbone.layers.1.mixer.gate"), RS_WFMT_DENSE);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.0.mlp.gate_proj"), RS_WFMT_NVFP4);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.0.mlp.shared_expert.gate_proj"), RS_WFMT_NVFP4);
    rs_quant_config_free(&q);
    rs_quant_config_free(&q); /* idempotent */

    const char *w4 = "{\"quantization\": {\"quant_algo\": \"W4A16_NVFP4\"}}";
    assert_int_equal(rs_quant_config_parse(w4, strlen(w4), 0, NULL, &q), RS_OK);
    assert_true(q.w4a16 && q.fmt == RS_WFMT_NVFP4);
    rs_quant_config_free(&q);

    const char *mx = "{\"quantization\": {\"quant_algo\": \"MIXED_PRECISION\", \"quantized_layers\": {"
                     "\"model.layers.2.mlp.experts.0.up_proj\": {\"quant_algo\": \"NVFP4\", \"group_size\": 16},"
                     "\"layers.1.self_attn.q_proj\": {\"quant_algo\": \"FP8\"},"
                     "\"model.layers.0.mlp.experts.1.down_proj\": {\"quant_algo\": \"FP8_PB_WO\"}}}}";
    assert_int_equal(rs_quant_config_parse(mx, strlen(mx), 0, NULL, &q), RS_OK);
    assert_true(q.mixed);
    assert_int_equal(q.n_layers, 3);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.2.mlp.experts.0.up_proj"), RS_WFMT_NVFP4);
    assert_int_equal(rs_quant_config_format_of(&q, "model.language_model.layers.2.mlp.experts.0.up_proj"),
                     RS_WFMT_NVFP4); /* the map's prefix differs from the tensors' */
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.1.self_attn.q_proj"), RS_WFMT_FP8);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.0.mlp.experts.1.down_proj"), RS_WFMT_FP8_BLOCK);
    assert_int_equal(rs_quant_config_format_of(&q, "model.layers.2.mlp.experts.0.down_proj"), RS_WFMT_DENSE);
    rs_quant_config_free(&q);

    const char *cj = "{\"model_type\": \"nemotron_h\", \"quantization_config\": {\"quant_method\": \"modelopt\", "
                     "\"quant_algo\": \"FP8\", \"weight_block_size\": [128, 128], \"ignore\": [\"lm_head\"]}}";
    assert_int_equal(rs_quant_config_parse(cj, strlen(cj), 1, NULL, &q), RS_OK);
    assert_true(q.present);
    assert_string_equal(q.source, "config.json quantization_config");
    assert_true(q.block[0] == 128 && q.block[1] == 128);
    assert_int_equal(rs_quant_config_format_of(&q, "lm_head"), RS_WFMT_DENSE);
    rs_quant_config_free(&q);
    const char *plain = "{\"model_type\": \"nemotron_h\"}";
    assert_int_equal(rs_quant_config_parse(plain, strlen(plain), 1, NULL, &q), RS_OK);
    assert_false(q.present);
    const char *gptq = "{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4}}";
    assert_int_equal(rs_quant_config_parse(gptq, strlen(gptq), 1, NULL, &q), RS_E_UNSUPPORTED);
    assert_non_null(strstr(rs_last_error(), "'gptq'"));
    assert_false(q.present);
    const char *bad = "{\"quantization_config\": [1]}";
    assert_int_equal(rs_quant_config_parse(bad, strlen(bad), 1, NULL, &q), RS_E_FORMAT);
    assert_int_equal(rs_quant_config_parse("[]", 2, 0, NULL, &q), RS_E_FORMAT);
    assert_string_equal(rs_wformat_name(RS_WFMT_FP8_BLOCK), "fp8-block");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantized_equals_twin),
        cmocka_unit_test(test_lying_tensors),
        cmocka_unit_test(test_bad_quant_config),
        cmocka_unit_test(test_quant_config_rules),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
