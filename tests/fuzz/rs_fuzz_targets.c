/* rs_fuzz_targets.c — the parser fuzz targets of rs_fuzz.h. */
#include "rs_fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/engine/rs_policy.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/common/rs_status.h"
#include "replayssm/eval/rs_tokenizer.h"

static char g_scratch[512];

void rs_fuzz_fail(const char *target, const char *what)
{
    fprintf(stderr, "rs_fuzz %s: %s (last library message: %s)\n", target, what, rs_last_error());
    abort();
}

static int mkdir_p_(const char *dir)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return (mkdir(tmp, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

int rs_fuzz_set_scratch(const char *dir)
{
    snprintf(g_scratch, sizeof g_scratch, "%s", dir);
    return mkdir_p_(g_scratch);
}

static const char *scratch_(void)
{
    if (!g_scratch[0]) {
        char d[64];
        snprintf(d, sizeof d, "/tmp/rs_fuzz_%ld", (long)getpid());
        if (rs_fuzz_set_scratch(d) != 0) rs_fuzz_fail("scratch", "cannot create the scratch folder");
    }
    return g_scratch;
}

static void write_file_(const char *target, const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        rs_fuzz_fail(target, "cannot write the scratch file");
}

/* an error must be a code the parser documents, with a message */
static void check_error_(const char *target, rs_status st, unsigned allowed_mask)
{
    if ((unsigned)st >= 32 || !(allowed_mask & (1u << st))) {
        char what[96];
        snprintf(what, sizeof what, "undocumented status %d (%s)", (int)st, rs_strerror(st));
        rs_fuzz_fail(target, what);
    }
    if (!rs_last_error()[0]) rs_fuzz_fail(target, "an error without a message");
}

#define BIT(e) (1u << (e))

/* ---- safetensors ---------------------------------------------------------------------------- */

typedef struct span {
    int file;
    size_t begin, end;
} span;

static int span_cmp_(const void *a, const void *b)
{
    const span *x = (const span *)a, *y = (const span *)b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* what an accepted set must satisfy (rs_safetensors.h): tensors inside their file's data section,
 * sizes consistent with shape and dtype, names sorted and unique, no overlap, all bytes readable */
static void check_set_(const char *T, const rs_st_set *set)
{
    for (int fi = 0; fi < set->n_files; fi++)
        if (set->files[fi].data_off < 8 || set->files[fi].data_off > set->files[fi].size)
            rs_fuzz_fail(T, "file size / data offset");
    span *sp = (span *)calloc((size_t)set->n_tensors + 1, sizeof *sp);
    if (!sp) rs_fuzz_fail(T, "out of memory in the target");
    size_t n_sp = 0;
    for (int i = 0; i < set->n_tensors; i++) {
        const rs_st_tensor *t = &set->tensors[i];
        if (!t->name || t->ndim < 0 || t->ndim > RS_ST_MAX_DIMS) rs_fuzz_fail(T, "name / ndim");
        if (i > 0 && strcmp(set->tensors[i - 1].name, t->name) >= 0) rs_fuzz_fail(T, "names not sorted and unique");
        int64_t numel = 1;
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] < 0) rs_fuzz_fail(T, "negative dimension");
            numel *= t->shape[d]; /* cannot overflow: nbytes (below) is bounded by the file size */
        }
        if (numel != t->numel || (size_t)t->numel * rs_st_dtype_size(t->dtype) != t->nbytes)
            rs_fuzz_fail(T, "numel / nbytes inconsistent with shape and dtype");
        if (t->file < 0 || t->file >= set->n_files) rs_fuzz_fail(T, "tensor in no file");
        const rs_st_file *f = &set->files[t->file];
        if (t->nbytes) {
            const uint8_t *p = (const uint8_t *)t->data, *base = (const uint8_t *)f->map;
            if (p < base + f->data_off || p + t->nbytes > base + f->size) rs_fuzz_fail(T, "tensor outside the data section");
            sp[n_sp].file = t->file;
            sp[n_sp].begin = (size_t)(p - base);
            sp[n_sp].end = sp[n_sp].begin + t->nbytes;
            n_sp++;
            float *dst = (float *)malloc((size_t)t->numel * sizeof(float));
            if (!dst) rs_fuzz_fail(T, "out of memory in the target");
            rs_st_to_f32(t, dst); /* reads every byte: the sanitizer sees any overrun */
            free(dst);
        }
        if (rs_st_find(set, t->name) != t) rs_fuzz_fail(T, "rs_st_find does not find a listed tensor");
    }
    qsort(sp, n_sp, sizeof *sp, span_cmp_);
    for (size_t i = 1; i < n_sp; i++)
        if (sp[i].file == sp[i - 1].file && sp[i].begin < sp[i - 1].end) rs_fuzz_fail(T, "two tensors overlap");
    free(sp);
}

int rs_fuzz_safetensors(const uint8_t *data, size_t size)
{
    static const char *T = "safetensors";
    char path[600];
    snprintf(path, sizeof path, "%s/in.safetensors", scratch_());
    write_file_(T, path, data, size);
    rs_st_set set;
    memset(&set, 0, sizeof set);
    rs_status st = rs_st_open_file(path, &set);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM) | BIT(RS_E_IO));
        rs_st_close(&set); /* must be safe on what a failed open left */
        return 0;
    }
    if (set.n_files != 1 || set.files[0].size != size) rs_fuzz_fail(T, "one file opened, n_files != 1 or wrong size");
    check_set_(T, &set);
    (void)rs_st_metadata(&set, "format");
    rs_st_close(&set);
    return 1;
}

/* ---- sharded checkpoints: model.safetensors.index.json ---------------------------------------- */

/* a valid safetensors file from its JSON header; data bytes 0x3F, 0x40, ... */
static void write_st_(const char *T, const char *path, const char *hdr, size_t data_len)
{
    uint8_t buf[1024];
    size_t h = strlen(hdr), pad = (8 - h % 8) % 8;
    if (8 + h + pad + data_len > sizeof buf) rs_fuzz_fail(T, "seed shard too large");
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)(h + pad) >> (8 * i));
    memcpy(buf + 8, hdr, h);
    memset(buf + 8 + h, ' ', pad);
    for (size_t i = 0; i < data_len; i++) buf[8 + h + pad + i] = (uint8_t)(0x3F + i);
    write_file_(T, path, buf, 8 + h + pad + data_len);
}

/* the model folder of the index target: two fixed shards beside the fuzzed index */
static const char *index_dir_(const char *T)
{
    static char dir[600];
    char p[700];
    snprintf(dir, sizeof dir, "%s/sharded", scratch_());
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    if (access(p, F_OK) != 0) {
        if (mkdir_p_(dir) != 0) rs_fuzz_fail(T, "cannot create the scratch model folder");
        snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
        write_st_(T, p, "{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                        "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}", 32);
        snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
        write_st_(T, p, "{\"c\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[0,2]}}", 2);
    }
    return dir;
}

int rs_fuzz_st_index(const uint8_t *data, size_t size)
{
    static const char *T = "st_index";
    const char *dir = index_dir_(T);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_file_(T, path, data, size);
    rs_st_set set;
    memset(&set, 0, sizeof set);
    rs_status st = rs_st_open_dir(dir, &set);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM) | BIT(RS_E_IO) | BIT(RS_E_INVAL));
        return 0; /* rs_st_open_dir closes what it opened */
    }
    const size_t dl = strlen(dir);
    for (int i = 0; i < set.n_files; i++) { /* shards only from the model folder itself */
        const char *fp = set.files[i].path;
        if (strncmp(fp, dir, dl) != 0 || fp[dl] != '/' || strchr(fp + dl + 1, '/') || fp[dl + 1] == '.')
            rs_fuzz_fail(T, "a shard outside the model folder was opened");
    }
    check_set_(T, &set);
    rs_st_close(&set);
    return 1;
}

/* ---- config.json ----------------------------------------------------------------------------- */

int rs_fuzz_hf_config(const uint8_t *data, size_t size)
{
    static const char *T = "hf_config";
    rs_model_config cfg;
    rs_status st = rs_hf_config_parse((const char *)data, size, "fuzz", &cfg);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM) | BIT(RS_E_INVAL));
        return 0;
    }
    if (cfg.n_layers < 1 || cfg.hidden < 1 || cfg.vocab < 1) rs_fuzz_fail(T, "accepted a config without layers, width or vocabulary");
    if (memchr(cfg.model_type, '\0', sizeof cfg.model_type) == NULL) rs_fuzz_fail(T, "model_type not terminated");
    rs_tokenizer tok;
    st = rs_tokenizer_for_model(&cfg, "fuzz", &tok);
    if (st != RS_OK) check_error_(T, st, BIT(RS_E_UNSUPPORTED) | BIT(RS_E_FORMAT) | BIT(RS_E_INVAL));
    else if (tok.vocab < 1 || tok.vocab > cfg.vocab) rs_fuzz_fail(T, "tokenizer vocabulary larger than the model's");
    return 1;
}

/* ---- PG-19 metadata.csv and books ------------------------------------------------------------ */

int rs_fuzz_pg19_meta(const uint8_t *data, size_t size)
{
    static const char *T = "pg19_meta";
    rs_pg19_meta m;
    memset(&m, 0, sizeof m);
    rs_status st = rs_pg19_meta_parse((const char *)data, size, "fuzz", &m);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_NOMEM));
        rs_pg19_meta_free(&m);
        return 0;
    }
    for (size_t i = 0; i < m.n; i++) {
        const rs_pg19_book *b = &m.books[i];
        if (!rs_pg19_id_valid(b->id)) rs_fuzz_fail(T, "accepted an invalid book id");
        if (!b->title || !b->date || !b->link) rs_fuzz_fail(T, "NULL field");
        const long k = rs_pg19_meta_find(&m, b->id);
        if (k < 0 || (size_t)k > i || strcmp(m.books[k].id, b->id) != 0) rs_fuzz_fail(T, "rs_pg19_meta_find");
    }
    rs_pg19_meta_free(&m);
    if (m.n != 0 || m.books != NULL) rs_fuzz_fail(T, "rs_pg19_meta_free left entries");
    return 1;
}

int rs_fuzz_pg19_book(const uint8_t *data, size_t size)
{
    static const char *T = "pg19_book";
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/pg/test", scratch_());
    if (mkdir_p_(dir) != 0) rs_fuzz_fail(T, "cannot create the scratch split folder");
    snprintf(path, sizeof path, "%s/1.txt.gz", dir);
    write_file_(T, path, data, size);
    snprintf(dir, sizeof dir, "%s/pg", scratch_());
    char *text = NULL;
    size_t len = 0;
    rs_status st = rs_pg19_read_book(dir, "test", "1", &text, &len);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_IO) | BIT(RS_E_NOMEM));
        free(text);
        return 0;
    }
    if (!text || len == 0) rs_fuzz_fail(T, "accepted an empty book");
    unsigned acc = 0;
    for (size_t i = 0; i < len; i++) acc += (unsigned char)text[i]; /* every byte readable */
    (void)acc;
    free(text);
    return 1;
}

/* ---- policy and format strings --------------------------------------------------------------- */

/* s accepted -> its canonical string c parses too, and c is a fixed point of print(parse(.)) */
int rs_fuzz_policy(const uint8_t *data, size_t size)
{
    static const char *T = "policy";
    char s[256];
    const size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = '\0';
    int accepted = 0;
    rs_policy p, q;
    rs_status st = rs_policy_parse(s, &p);
    if (st != RS_OK) check_error_(T, st, BIT(RS_E_INVAL) | BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED));
    else {
        char c[128], c2[128];
        if (rs_policy_print(&p, c, sizeof c) != RS_OK) rs_fuzz_fail(T, "an accepted policy does not print");
        if (rs_policy_parse(c, &q) != RS_OK) rs_fuzz_fail(T, "the canonical policy string does not parse");
        if (!rs_policy_equal(&p, &q)) rs_fuzz_fail(T, "the canonical policy string parses to another policy");
        if (rs_policy_print(&q, c2, sizeof c2) != RS_OK || strcmp(c, c2) != 0) rs_fuzz_fail(T, "policy print not idempotent");
        accepted = 1;
    }
    rs_format f, g;
    st = rs_format_parse(s, &f);
    if (st != RS_OK) check_error_(T, st, BIT(RS_E_INVAL) | BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED));
    else {
        char c[128], c2[128];
        if (rs_format_print(&f, c, sizeof c) != RS_OK) rs_fuzz_fail(T, "an accepted format does not print");
        if (rs_format_parse(c, &g) != RS_OK) rs_fuzz_fail(T, "the canonical format string does not parse");
        if (rs_format_print(&g, c2, sizeof c2) != RS_OK || strcmp(c, c2) != 0) rs_fuzz_fail(T, "format print not idempotent");
        accepted = 1;
    }
    return accepted;
}

const rs_fuzz_target rs_fuzz_targets[] = {
    {"safetensors", rs_fuzz_safetensors, 1},
    {"st_index", rs_fuzz_st_index, 0},
    {"hf_config", rs_fuzz_hf_config, 0},
    {"pg19_meta", rs_fuzz_pg19_meta, 0},
    {"pg19_book", rs_fuzz_pg19_book, 1},
    {"policy", rs_fuzz_policy, 0},
    {NULL, NULL, 0},
};
