/* rs_quant_config.c — hf_quant_config.json / config.json quantization_config (see rs_quant_config.h). */
#define _POSIX_C_SOURCE 200809L
#include "replayssm/eval/rs_quant_config.h"
#include "input/rs_input.h"
#include "rs_check.h"

#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RS_QCFG_MAX_BYTES ((size_t)256 << 20) /* a quantized_layers map of 512 experts x 88 layers: ~20 MB */

const char *rs_wformat_name(rs_wformat f)
{
    switch (f) {
    case RS_WFMT_DENSE: return "dense";
    case RS_WFMT_NVFP4: return "nvfp4";
    case RS_WFMT_FP8: return "fp8";
    case RS_WFMT_FP8_BLOCK: return "fp8-block";
    }
    return "?";
}

void rs_quant_config_free(rs_quant_config *q)
{
    if (!q) return;
    for (int i = 0; i < q->n_exclude; i++) free(q->exclude[i]);
    free(q->exclude);
    for (int i = 0; i < q->n_layers; i++) free(q->layers[i].module);
    free(q->layers);
    memset(q, 0, sizeof *q);
}

static char *dup_(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = (char *)malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* an algorithm name -> weight format; *w4a16 for the weight-only NVFP4 variant */
static rs_status algo_format_(const char *label, const char *key, const char *algo, rs_wformat *f, int *w4a16)
{
    *w4a16 = 0;
    if (strcmp(algo, "NVFP4") == 0 || strcmp(algo, "W4A16_NVFP4") == 0) {
        *f = RS_WFMT_NVFP4;
        *w4a16 = algo[0] == 'W';
        return RS_OK;
    }
    if (strcmp(algo, "FP8") == 0) {
        *f = RS_WFMT_FP8;
        return RS_OK;
    }
    if (strcmp(algo, "FP8_PB_WO") == 0 || strcmp(algo, "FP8_BLOCK") == 0) {
        *f = RS_WFMT_FP8_BLOCK;
        return RS_OK;
    }
    RS_CHECK(algo[0] != '\0', RS_E_FORMAT, "%s: %s is empty", label, key);
    return rs_error_set(RS_E_UNSUPPORTED, "%s: %s '%s' is not supported (NVFP4, W4A16_NVFP4, FP8, FP8_PB_WO, "
                        "MIXED_PRECISION)", label, key, algo);
}

/* an optional string field into buf ("" when absent or null) */
static rs_status opt_str_(const char *label, const cJSON *obj, const char *key, char *buf, size_t n)
{
    buf[0] = '\0';
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return RS_OK;
    RS_CHECK(cJSON_IsString(v), RS_E_FORMAT, "%s: %s must be a string", label, key);
    RS_CHECK(strlen(v->valuestring) < n, RS_E_FORMAT, "%s: %s '%.40s...' is too long", label, key, v->valuestring);
    snprintf(buf, n, "%s", v->valuestring);
    return RS_OK;
}

/* module with its model prefix removed (the name itself when it has none) */
static const char *key_of_(const char *m)
{
    static const char *const px[] = {"model.language_model.", "model.", "backbone."};
    for (size_t i = 0; i < sizeof px / sizeof *px; i++)
        if (strncmp(m, px[i], strlen(px[i])) == 0) return m + strlen(px[i]);
    return m;
}

/* quantized_layers sorted by prefix-free name: one binary search per weight of a 45K-tensor model */
static int by_key_(const void *a, const void *b)
{
    return strcmp(key_of_(((const rs_quant_layer *)a)->module), key_of_(((const rs_quant_layer *)b)->module));
}

static rs_status parse_body_(const char *label, const cJSON *qo, rs_quant_config *q)
{
    RS_CHECK(cJSON_IsObject(qo), RS_E_FORMAT, "%s: the quantization description is not an object", label);
    RS_TRY(opt_str_(label, qo, "quant_algo", q->quant_algo, sizeof q->quant_algo));
    RS_CHECK(q->quant_algo[0] != '\0', RS_E_FORMAT, "%s: quant_algo is missing", label);
    q->mixed = strcmp(q->quant_algo, "MIXED_PRECISION") == 0;
    if (!q->mixed) RS_TRY(algo_format_(label, "quant_algo", q->quant_algo, &q->fmt, &q->w4a16));
    RS_TRY(opt_str_(label, qo, "kv_cache_quant_algo", q->kv_cache_quant_algo, sizeof q->kv_cache_quant_algo));

    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(qo, "group_size");
    if (gs && !cJSON_IsNull(gs)) {
        RS_CHECK(cJSON_IsNumber(gs) && floor(gs->valuedouble) == gs->valuedouble && gs->valuedouble > 0 &&
                     gs->valuedouble < 65536, RS_E_FORMAT, "%s: group_size must be a positive integer", label);
        q->group_size = (int)gs->valuedouble;
    }
    RS_CHECK(q->fmt != RS_WFMT_NVFP4 || q->mixed || q->group_size == 0 || q->group_size == 16, RS_E_FORMAT,
             "%s: group_size = %d, but NVFP4 scales groups of 16", label, q->group_size);

    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(qo, "weight_block_size");
    if (bs && !cJSON_IsNull(bs)) {
        RS_CHECK(cJSON_IsArray(bs) && cJSON_GetArraySize(bs) == 2, RS_E_FORMAT,
                 "%s: weight_block_size must be a list of two positive integers", label);
        for (int i = 0; i < 2; i++) {
            const cJSON *e = cJSON_GetArrayItem(bs, i);
            RS_CHECK(cJSON_IsNumber(e) && floor(e->valuedouble) == e->valuedouble && e->valuedouble >= 1 &&
                         e->valuedouble <= 65536, RS_E_FORMAT,
                     "%s: weight_block_size must be a list of two positive integers (at most 65536)", label);
            q->block[i] = (int64_t)e->valuedouble;
        }
    }

    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(qo, "exclude_modules");
    if (!ex || cJSON_IsNull(ex)) ex = cJSON_GetObjectItemCaseSensitive(qo, "ignore");
    if (ex && !cJSON_IsNull(ex)) {
        RS_CHECK(cJSON_IsArray(ex), RS_E_FORMAT, "%s: exclude_modules must be a list of strings", label);
        const int n = cJSON_GetArraySize(ex);
        q->exclude = (char **)calloc((size_t)(n > 0 ? n : 1), sizeof *q->exclude);
        RS_CHECK(q->exclude != NULL, RS_E_NOMEM, "%s: out of memory", label);
        for (const cJSON *e = ex->child; e; e = e->next) {
            RS_CHECK(cJSON_IsString(e), RS_E_FORMAT, "%s: exclude_modules[%d] is not a string", label, q->n_exclude);
            q->exclude[q->n_exclude] = dup_(e->valuestring);
            RS_CHECK(q->exclude[q->n_exclude] != NULL, RS_E_NOMEM, "%s: out of memory", label);
            q->n_exclude++;
        }
    }

    const cJSON *ql = cJSON_GetObjectItemCaseSensitive(qo, "quantized_layers");
    if (q->mixed) RS_CHECK(cJSON_IsObject(ql), RS_E_FORMAT, "%s: MIXED_PRECISION needs an object quantized_layers",
                           label);
    if (ql && !cJSON_IsNull(ql)) {
        RS_CHECK(cJSON_IsObject(ql), RS_E_FORMAT, "%s: quantized_layers must be an object", label);
        const int n = cJSON_GetArraySize(ql);
        q->layers = (rs_quant_layer *)calloc((size_t)(n > 0 ? n : 1), sizeof *q->layers);
        RS_CHECK(q->layers != NULL, RS_E_NOMEM, "%s: out of memory", label);
        for (const cJSON *e = ql->child; e; e = e->next) {
            RS_CHECK(cJSON_IsObject(e), RS_E_FORMAT, "%s: quantized_layers['%s'] is not an object", label, e->string);
            char algo[32];
            RS_TRY(opt_str_(label, e, "quant_algo", algo, sizeof algo));
            char key[96];
            snprintf(key, sizeof key, "quantized_layers['%.60s'].quant_algo", e->string);
            int w4;
            rs_quant_layer *L = &q->layers[q->n_layers];
            RS_TRY(algo_format_(label, key, algo, &L->fmt, &w4));
            L->module = dup_(e->string);
            RS_CHECK(L->module != NULL, RS_E_NOMEM, "%s: out of memory", label);
            q->n_layers++;
        }
    }
    if (q->n_layers > 1) qsort(q->layers, (size_t)q->n_layers, sizeof *q->layers, by_key_);
    q->present = 1;
    return RS_OK;
}

rs_status rs_quant_config_parse(const char *text, size_t len, int is_config_json, const char *label,
                                rs_quant_config *q)
{
    RS_CHECK(text && q, RS_E_INVAL, "rs_quant_config_parse: NULL argument");
    if (!label) label = is_config_json ? "config.json" : "hf_quant_config.json";
    memset(q, 0, sizeof *q);
    cJSON *root = cJSON_ParseWithLength(text, len);
    RS_CHECK(root != NULL, RS_E_FORMAT, "%s: not well-formed JSON (error near byte %ld)", label,
             cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
    rs_status st = RS_OK;
    if (!cJSON_IsObject(root)) {
        st = rs_error_set(RS_E_FORMAT, "%s: top level is not a JSON object", label);
    } else if (is_config_json) {
        const cJSON *qc = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
        if (qc && !cJSON_IsNull(qc)) {
            const cJSON *meth = cJSON_GetObjectItemCaseSensitive(qc, "quant_method");
            if (!cJSON_IsObject(qc)) st = rs_error_set(RS_E_FORMAT, "%s: quantization_config is not an object", label);
            else if (!cJSON_IsString(meth))
                st = rs_error_set(RS_E_FORMAT, "%s: quantization_config.quant_method must be a string", label);
            else if (strcmp(meth->valuestring, "modelopt") != 0)
                st = rs_error_set(RS_E_UNSUPPORTED, "%s: quantization_config.quant_method '%s' is not supported "
                                  "(modelopt only)", label, meth->valuestring);
            else {
                snprintf(q->source, sizeof q->source, "config.json quantization_config");
                st = parse_body_(label, qc, q);
            }
        }
    } else {
        snprintf(q->source, sizeof q->source, "hf_quant_config.json");
        const cJSON *qo = cJSON_GetObjectItemCaseSensitive(root, "quantization");
        if (!qo) st = rs_error_set(RS_E_FORMAT, "%s: no object 'quantization'", label);
        else st = parse_body_(label, qo, q);
    }
    cJSON_Delete(root);
    if (st != RS_OK) rs_quant_config_free(q);
    return st;
}

rs_status rs_quant_config_load_dir(const char *dir, rs_quant_config *q)
{
    RS_CHECK(dir && q, RS_E_INVAL, "rs_quant_config_load_dir: NULL argument");
    memset(q, 0, sizeof *q);
    char path[4096];
    int r = snprintf(path, sizeof path, "%s/hf_quant_config.json", dir);
    RS_CHECK(r > 0 && (size_t)r < sizeof path, RS_E_INVAL, "%s: path too long", dir);
    struct stat sb;
    int cfg_json = 0;
    if (stat(path, &sb) != 0) { /* none: config.json's quantization_config, if any */
        snprintf(path, sizeof path, "%s/config.json", dir);
        cfg_json = 1;
        if (stat(path, &sb) != 0) return RS_OK;
    }
    char *buf = NULL;
    size_t n = 0;
    RS_TRY(rs_input_read_all(path, RS_QCFG_MAX_BYTES, 0, &buf, &n, NULL)); /* regular file, bounded */
    const rs_status st = rs_quant_config_parse(buf ? buf : "", n, cfg_json, path, q);
    free(buf);
    return st;
}

rs_wformat rs_quant_config_format_of(const rs_quant_config *q, const char *module)
{
    if (!q || !q->present || !module) return RS_WFMT_DENSE;
    const char *key = key_of_(module);
    if (q->mixed) { /* the map may be written with or without the tensors' prefix: compare without */
        int lo = 0, hi = q->n_layers - 1;
        while (lo <= hi) {
            const int mid = lo + (hi - lo) / 2, c = strcmp(key_of_(q->layers[mid].module), key);
            if (c == 0) return q->layers[mid].fmt;
            if (c < 0) lo = mid + 1;
            else hi = mid - 1;
        }
        return RS_WFMT_DENSE;
    }
    /* the MoE routers (NemotronH mixer.gate, Qwen3.5-MoE mlp.gate) are custom modules holding a weight, not
       nn.Linear: ModelOpt never quantizes them and so never lists them in exclude_modules */
    static const char *const routers[] = {".mixer.gate", ".mlp.gate"};
    const size_t ml = strlen(module);
    for (size_t i = 0; i < sizeof routers / sizeof *routers; i++) {
        const size_t rl = strlen(routers[i]);
        if (ml >= rl && strcmp(module + ml - rl, routers[i]) == 0) return RS_WFMT_DENSE;
    }
    /* a pattern matches the name as written or prefix-free, itself as written or prefix-free: a hub
       checkpoint's "model.language_model.layers.*" covers the same layers named "model.layers.*" */
    for (int i = 0; i < q->n_exclude; i++)
        if (fnmatch(q->exclude[i], module, 0) == 0 || fnmatch(q->exclude[i], key, 0) == 0 ||
            fnmatch(key_of_(q->exclude[i]), key, 0) == 0)
            return RS_WFMT_DENSE;
    return q->fmt;
}
