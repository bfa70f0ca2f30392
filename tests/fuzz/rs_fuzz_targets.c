/* rs_fuzz_targets.c — the parser fuzz targets of rs_fuzz.h. */
#define _XOPEN_SOURCE 700 /* nftw (the scratch folder clean-up) */
#include "rs_fuzz.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h> /* the log-reader target edits logs through HDF5 */

#include "replayssm/quant/rs_format.h"
#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/engine/rs_policy.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/quant/rs_status.h"
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

static int rm_entry_(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* the scratch folder this process made (nftw depth-first: files before their folders) */
static void scratch_remove_(void)
{
    if (g_scratch[0]) nftw(g_scratch, rm_entry_, 16, FTW_DEPTH | FTW_PHYS);
}

const char *rs_fuzz_scratch(void)
{
    if (!g_scratch[0]) {
        /* the file-based targets (books, logs, tokenizer files) write an input per execution: in
         * memory where the machine has /dev/shm (on the 2-core VM pg19_book ran ~50x faster there,
         * h5log ~1.3x), else /tmp; RS_FUZZ_SCRATCH=DIR picks another folder */
        const char *base = getenv("RS_FUZZ_SCRATCH");
        if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        char d[sizeof g_scratch];
        if (snprintf(d, sizeof d, "%s/rs_fuzz_%ld", base, (long)getpid()) >= (int)sizeof d)
            rs_fuzz_fail("scratch", "RS_FUZZ_SCRATCH is too long");
        if (rs_fuzz_set_scratch(d) != 0) rs_fuzz_fail("scratch", "cannot create the scratch folder");
        atexit(scratch_remove_); /* /dev/shm is memory: leave nothing behind */
    }
    return g_scratch;
}

static void write_file_(const char *target, const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        rs_fuzz_fail(target, "cannot write the scratch file");
}

void rs_fuzz_write_file(const char *target, const char *path, const uint8_t *data, size_t size)
{
    write_file_(target, path, data, size);
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

void rs_fuzz_check_error(const char *target, int status, unsigned allowed_mask)
{
    check_error_(target, (rs_status)status, allowed_mask);
}

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
    snprintf(path, sizeof path, "%s/in.safetensors", rs_fuzz_scratch());
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
    snprintf(dir, sizeof dir, "%s/sharded", rs_fuzz_scratch());
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
    st = rs_tokenizer_for_model(cfg.tokenizer, cfg.vocab, "fuzz", &tok);
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
    snprintf(dir, sizeof dir, "%s/pg/test", rs_fuzz_scratch());
    if (mkdir_p_(dir) != 0) rs_fuzz_fail(T, "cannot create the scratch split folder");
    snprintf(path, sizeof path, "%s/1.txt.gz", dir);
    write_file_(T, path, data, size);
    snprintf(dir, sizeof dir, "%s/pg", rs_fuzz_scratch());
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

/* ---- the KL log reader ------------------------------------------------------------------------ */

/* Structure-aware: the bytes are a program of edits, 10 bytes each (op, selector, a little-endian
 * u64 value), applied through HDF5 to a copy of a valid log made once per process: numeric and
 * wrongly-typed attributes, deleted objects, rewritten commit records and lengths, datasets
 * replaced by others of any rank / extent / type, shrunk or grown extents, truncation. Then the
 * reader must refuse (documented code, message) or keep its promises: counts within bounds,
 * completed <= length <= tokens, every committed row and every summary readable, and --resume
 * rebuilding the same committed positions. Byte-level corruption of the HDF5 metadata is left
 * out on purpose: libhdf5 1.10's own global-heap reader can crash on it before our code runs
 * (docs/hdf5-layout.md "Reading untrusted logs"). */

#define FZ_NB 2
#define FZ_NR 2
static const char *fz_ids[FZ_NB] = {"1023", "105"}, *fz_titles[FZ_NB] = {"A", "B"};
static uint64_t fz_len[FZ_NB] = {24, 13};
static rs_h5log_run_info fz_runs[FZ_NR] = {
    {.policy = "fp32", .mode = "conv", .hp_format = "fp32", .lp_format = "fp32", .window = 16, .seed = 0},
    {.policy = "shared:nvfp4-sr", .mode = "shared", .hp_format = "nvfp4-sr", .lp_format = "nvfp4-sr", .window = 16, .seed = 7}};

static const int32_t fz_moe[2] = {1, 3}; /* MoE layers: every run records routing counts */

static rs_h5log_meta fz_meta_(void)
{
    rs_h5log_meta m;
    memset(&m, 0, sizeof m);
    m.tool_version = m.git_commit = m.command_line = m.start_time = m.model_path = m.data_path = "fuzz";
    m.model_config_hash = "fnv1a64:1";
    m.model_type = "qwen3_5_text";
    m.tokenizer = "byte";
    m.split = "test";
    m.short_books = "skip";
    m.tokens = 24;
    m.chunk = 8;
    m.n_books = FZ_NB;
    m.book_ids = fz_ids;
    m.book_titles = fz_titles;
    m.book_len = fz_len;
    m.n_runs = FZ_NR;
    m.runs = fz_runs;
    m.n_moe_layers = 2;
    m.moe_layers = fz_moe;
    return m;
}

/* the valid log's bytes, made once */
static uint8_t *fz_tpl;
static size_t fz_tpl_n;

static void fz_template_(const char *T)
{
    if (fz_tpl) return;
    char p[600];
    snprintf(p, sizeof p, "%s/h5log_template.h5", rs_fuzz_scratch());
    unlink(p);
    rs_h5log_meta m = fz_meta_();
    rs_h5log *lg = NULL;
    if (rs_h5log_create(p, &m, 0, &lg) != RS_OK) rs_fuzz_fail(T, "cannot create the template log");
    for (size_t b = 0; b < FZ_NB; b++)
        for (uint64_t pos = 0; pos < fz_len[b]; pos += 8) {
            const size_t n = fz_len[b] - pos < 8 ? (size_t)(fz_len[b] - pos) : 8;
            double d[8];
            int32_t t[8];
            uint8_t a[8];
            for (size_t i = 0; i < n; i++) d[i] = 0.25 * (double)(pos + i + b), t[i] = (int32_t)i, a[i] = (uint8_t)(i & 1);
            rs_h5log_run_chunk rc[FZ_NR] = {{d, d, d, a}, {d, d, d, a}};
            if (rs_h5log_write_chunk(lg, b, pos, n, t, d, t, rc) != RS_OK) rs_fuzz_fail(T, "cannot write the template");
        }
    const int64_t rp[2] = {3, 0}, re[2] = {4, 0};
    if (rs_h5log_set_route_diff(lg, 1, 0, rp, re) != RS_OK) rs_fuzz_fail(T, "cannot write the routing counts");
    if (rs_h5log_set_nonfinite(lg, 1, 1, 5, 0, 1) != RS_OK || rs_h5log_close(lg) != RS_OK)
        rs_fuzz_fail(T, "cannot finish the template");
    FILE *f = fopen(p, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) rs_fuzz_fail(T, "cannot read the template");
    fz_tpl_n = (size_t)ftell(f);
    rewind(f);
    fz_tpl = (uint8_t *)malloc(fz_tpl_n);
    if (!fz_tpl || fread(fz_tpl, 1, fz_tpl_n, f) != fz_tpl_n) rs_fuzz_fail(T, "cannot read the template");
    fclose(f);
}

static void fz_attr_(hid_t f, const char *obj, const char *name, hid_t type, hsize_t n, const void *v)
{
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
    if (o < 0) return;
    if (H5Aexists(o, name) > 0) H5Adelete(o, name);
    hid_t sp = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, NULL);
    hid_t a = H5Acreate2(o, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, type, v), H5Aclose(a);
    H5Sclose(sp);
    H5Oclose(o);
}

static const char *fz_ds[] = {"/books/id", "/books/length", "/books/completed_positions", "/reference/nll",
                              "/reference/next_token", "/reference/top1", "/runs/run00/kl", "/runs/run01/nll",
                              "/runs/run01/top1_agree", "/runs/run00/first_nonfinite_position",
                              "/runs/run01/first_nonfinite_head", "/runs/run00/moe_layer",
                              "/runs/run01/moe_route_positions", "/runs/run00/moe_route_experts"};
static const char *fz_groups[] = {"/runs/run00", "/runs/run01", "/runs", "/books", "/reference", "/windows"};
static const char *fz_root_attrs[] = {"n_books", "n_runs", "tokens", "chunk", "format_version", "format", "status"};
#define FZ_COUNT(a) (sizeof(a) / sizeof(a)[0])

/* one edit; returns a truncation length (or SIZE_MAX) */
static size_t fz_edit_(hid_t f, unsigned op, unsigned sel, uint64_t v)
{
    const char *ra = fz_root_attrs[sel % FZ_COUNT(fz_root_attrs)];
    const char *ds = fz_ds[sel % FZ_COUNT(fz_ds)];
    char run[32];
    snprintf(run, sizeof run, "/runs/run%02u", sel % 3);
    switch (op % 9) {
    case 0: fz_attr_(f, "/", ra, H5T_NATIVE_UINT64, 1, &v); break;
    case 1: { /* a wrong type or shape */
        const double d = (double)v;
        const int64_t i = (int64_t)v;
        const uint64_t arr[4] = {v, v, v, v};
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        const char *str[4] = {"2", RS_H5LOG_FORMAT, "", "x"};
        switch (v & 3) {
        case 0: fz_attr_(f, "/", ra, t, 1 + (v >> 8) % 4, str); break;
        case 1: fz_attr_(f, "/", ra, H5T_NATIVE_DOUBLE, 1, &d); break;
        case 2: fz_attr_(f, "/", ra, H5T_NATIVE_INT64, 1, &i); break;
        default: fz_attr_(f, "/", ra, H5T_NATIVE_UINT64, 2 + (v >> 8) % 3, arr); break;
        }
        H5Tclose(t);
        break;
    }
    case 2: fz_attr_(f, run, (sel >> 4) & 1 ? "window" : "seed", H5T_NATIVE_UINT64, 1, &v); break;
    case 3: /* delete a dataset, a group or an attribute */
        if ((sel >> 4) % 3 == 0) H5Ldelete(f, ds, H5P_DEFAULT);
        else if ((sel >> 4) % 3 == 1) H5Ldelete(f, fz_groups[sel % FZ_COUNT(fz_groups)], H5P_DEFAULT);
        else H5Adelete_by_name(f, (sel >> 6) & 1 ? run : "/", (sel >> 6) & 1 ? "policy" : ra, H5P_DEFAULT);
        break;
    case 4:
    case 5: { /* one value of a commit record or a length */
        hid_t d = H5Dopen2(f, op % 9 == 4 ? "/books/completed_positions" : "/books/length", H5P_DEFAULT);
        hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
        hsize_t start = sel % 2, one = 1;
        if (fs >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &one, NULL) >= 0) {
            hid_t ms = H5Screate_simple(1, &one, NULL);
            H5Dwrite(d, H5T_NATIVE_UINT64, ms, fs, H5P_DEFAULT, &v);
            H5Sclose(ms);
        }
        if (fs >= 0) H5Sclose(fs);
        if (d >= 0) H5Dclose(d);
        break;
    }
    case 6: { /* a dataset replaced by one of another rank, extent or type */
        H5Ldelete(f, ds, H5P_DEFAULT);
        const int rank = (v >> 16) & 1 ? 1 : 2;
        hsize_t dims[2] = {v % 4, (v >> 8) % 64};
        hid_t t = -1;
        switch ((v >> 24) % 4) {
        case 0: t = H5Tcopy(H5T_NATIVE_DOUBLE); break;
        case 1: t = H5Tcopy(H5T_NATIVE_INT64); break;
        case 2: t = H5Tcopy(H5T_NATIVE_UINT8); break;
        default: t = H5Tcopy(H5T_C_S1), H5Tset_size(t, H5T_VARIABLE); break;
        }
        hid_t sp = H5Screate_simple(rank, dims, NULL);
        hid_t d = H5Dcreate2(f, ds, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d >= 0) H5Dclose(d);
        H5Sclose(sp);
        H5Tclose(t);
        break;
    }
    case 7: { /* a per-position extent shrunk or grown */
        hid_t d = H5Dopen2(f, ds, H5P_DEFAULT);
        hsize_t dims[2] = {FZ_NB, v % 200};
        if (d >= 0) H5Dset_extent(d, dims), H5Dclose(d);
        break;
    }
    default: return (size_t)v;
    }
    return SIZE_MAX;
}

/* format 2's /provenance (history, model files), edited by the records after the first 160 bytes
 * (so the committed corpus, all shorter, keeps its meaning) */
static const char *fz_prov_ds[] = {"/provenance/history_command_line", "/provenance/history_status",
                                   "/provenance/history_end_time", "/provenance/file_name",
                                   "/provenance/file_sha256", "/provenance/file_size", "/provenance/file_mtime_ns"};

static void fz_prov_edit_(hid_t f, unsigned op, unsigned sel, uint64_t v)
{
    const char *ds = fz_prov_ds[sel % FZ_COUNT(fz_prov_ds)];
    switch (op % 3) {
    case 0: H5Ldelete(f, (sel >> 4) & 1 ? "/provenance" : ds, H5P_DEFAULT); break;
    case 1: { /* another rank, extent (up to past the readers' bounds) or type */
        H5Ldelete(f, ds, H5P_DEFAULT);
        const int rank = (v >> 20) & 1 ? 2 : 1;
        hsize_t dims[2] = {v % 5000, 1 + (v >> 13) % 3};
        hid_t t = -1;
        switch ((v >> 24) % 3) {
        case 0: t = H5Tcopy(H5T_NATIVE_UINT8); break;
        case 1: t = H5Tcopy(H5T_NATIVE_INT64); break;
        default: t = H5Tcopy(H5T_C_S1), H5Tset_size(t, H5T_VARIABLE); break;
        }
        hid_t sp = H5Screate_simple(rank, dims, NULL);
        hid_t d = H5Dcreate2(f, ds, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d >= 0) H5Dclose(d);
        H5Sclose(sp);
        H5Tclose(t);
        break;
    }
    default: fz_attr_(f, "/provenance", (sel >> 4) & 1 ? "host" : "blas", H5T_NATIVE_UINT64, 1, &v); break;
    }
}

/* what an opened (accepted) log must satisfy; closes lg. raw: the file's bytes were fuzzed
 * directly, so the stored data themselves may be corrupt (a chunk that does not inflate to its
 * size, a wrong checksum): a later read may then refuse them, with RS_E_FORMAT and a message
 * (eval/log/rs_h5check.c checks each chunk when a read touches it); the edit programs of the
 * h5log target never touch stored data, so there every read of an accepted log must succeed */
static void fz_check_accepted_(const char *T, rs_h5log *lg, int64_t *completed, int raw)
{
    rs_status st;
    const size_t nb = rs_h5log_n_books(lg), nr = rs_h5log_n_runs(lg);
    if (nb < 1 || nb > RS_H5LOG_MAX_BOOKS || nr > RS_H5LOG_MAX_RUNS || rs_h5log_tokens(lg) > RS_H5LOG_MAX_TOKENS)
        rs_fuzz_fail(T, "counts outside the bounds");
    for (size_t b = 0; b < nb; b++) {
        const int64_t c = rs_h5log_completed(lg, b);
        if (c < 0 || (uint64_t)c > rs_h5log_book_len(lg, b) || rs_h5log_book_len(lg, b) > rs_h5log_tokens(lg))
            rs_fuzz_fail(T, "completed <= length <= tokens broken");
        if (b < FZ_NB) completed[b] = c;
        if (!rs_h5log_book_id(lg, b)) rs_fuzz_fail(T, "a book without an id");
    }
    rs_h5log_ref_summary rs;
    st = rs_h5log_reference_summary(lg, &rs);
    if (st != RS_OK && st != RS_E_NOMEM && (!raw || st != RS_E_FORMAT || !rs_last_error()[0]))
        rs_fuzz_fail(T, "an accepted log's reference is unreadable");
    for (size_t r = 0; r < nr; r++) {
        rs_kl_summary s;
        st = rs_h5log_summarize(lg, r, &s);
        if (st != RS_OK && st != RS_E_NOMEM && (!raw || st != RS_E_FORMAT || !rs_last_error()[0]))
            rs_fuzz_fail(T, "an accepted log's run does not summarise");
        for (size_t b = 0; b < nb; b++) {
            int64_t p;
            int32_t L, H;
            st = rs_h5log_get_nonfinite(lg, r, b, &p, &L, &H);
            if (st != RS_OK && (!raw || st != RS_E_FORMAT || !rs_last_error()[0]))
                rs_fuzz_fail(T, "non-finite record unreadable");
            const size_t nm = rs_h5log_n_moe_layers(lg);
            if (nm > RS_H5LOG_MAX_MOE_LAYERS) rs_fuzz_fail(T, "MoE layers outside the bound");
            if (nm == 0) continue;
            int64_t c[2 * RS_H5LOG_MAX_MOE_LAYERS];
            st = rs_h5log_get_route_diff(lg, r, b, c, c + nm);
            if (st != RS_OK && (!raw || st != RS_E_FORMAT || !rs_last_error()[0]))
                rs_fuzz_fail(T, "routing counts unreadable");
        }
    }
    char buf[128];
    st = rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf);
    if (st != RS_OK) check_error_(T, st, BIT(RS_E_FORMAT));
    rs_h5log_close(lg);
}

/* the log at path opened read-only and checked (a log that does not open leaves completed as is) */
static void fz_accepted_(const char *T, const char *path, int64_t *completed, int raw)
{
    rs_h5log *lg = NULL;
    if (rs_h5log_open(path, 0, NULL, &lg) == RS_OK) fz_check_accepted_(T, lg, completed, raw);
}

int rs_fuzz_h5log(const uint8_t *data, size_t size)
{
    static const char *T = "h5log";
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    static int limits_set;
    if (!limits_set) {
        /* speed (docs/fuzzing.md, "Speed"): no limit on HDF5's internal free lists, so that the
         * ~0.5 MB metadata-cache structure of every file open is recycled by HDF5 instead of
         * going back to ASan's allocator (mmap, page faults, munmap: ~2x executions per second).
         * HDF5 is not instrumented and none of these blocks reach our code. */
        H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
        limits_set = 1;
    }
    fz_template_(T);
    char path[600];
    snprintf(path, sizeof path, "%s/h5log.h5", rs_fuzz_scratch());
    write_file_(T, path, fz_tpl, fz_tpl_n);
    size_t cut = SIZE_MAX;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) rs_fuzz_fail(T, "cannot open the copy");
    for (size_t i = 0; i + 10 <= size && i < 160; i += 10) {
        uint64_t v = 0;
        for (int k = 0; k < 8; k++) v |= (uint64_t)data[i + 2 + k] << (8 * k);
        const size_t c = fz_edit_(f, data[i], data[i + 1], v);
        if (c != SIZE_MAX) cut = c;
    }
    for (size_t i = 160; i + 10 <= size && i < 240; i += 10) {
        uint64_t v = 0;
        for (int k = 0; k < 8; k++) v |= (uint64_t)data[i + 2 + k] << (8 * k);
        fz_prov_edit_(f, data[i], data[i + 1], v);
    }
    H5Eclear2(H5E_DEFAULT);
    if (H5Fclose(f) < 0) rs_fuzz_fail(T, "cannot close the copy");
    if (cut != SIZE_MAX && truncate(path, (off_t)(cut % (fz_tpl_n + 1))) != 0) rs_fuzz_fail(T, "cannot truncate");
    rs_h5log *lg = NULL;
    rs_status st = rs_h5log_open(path, 0, NULL, &lg);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_IO) | BIT(RS_E_NOMEM));
        return 0;
    }
    int64_t before[FZ_NB] = {-1, -1}, after[FZ_NB] = {-1, -1};
    fz_check_accepted_(T, lg, before, 0); /* the same handle, not a second open */
    /* --resume with the template's configuration: refused with a documented code, or a rebuilt
     * log holding the same committed positions */
    rs_h5log_meta m = fz_meta_();
    st = rs_h5log_open(path, 1, &m, &lg);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_INVAL) | BIT(RS_E_FORMAT) | BIT(RS_E_IO) | BIT(RS_E_NOMEM));
        return 1;
    }
    if (rs_h5log_close(lg) != RS_OK) rs_fuzz_fail(T, "cannot close a resumed log");
    fz_accepted_(T, path, after, 0);
    if (memcmp(before, after, sizeof before) != 0) rs_fuzz_fail(T, "--resume changed the committed positions");
    return 1;
}

/* ---- the KL log reader on raw file bytes -------------------------------------------------------- */

/* The bytes are the log file itself (seeds: valid logs, tests/fuzz/corpus/h5raw/valid-*): every
 * byte of HDF5's own metadata can change, not only what the edit programs above reach. The
 * reader must refuse (a documented code with a message) or keep the promises of an accepted log,
 * reading every committed row through the checked readers (eval/log/rs_h5check.c), and --resume
 * with the template's configuration must refuse or keep the committed positions. A crash inside
 * libhdf5 itself on hostile metadata is recorded as such (docs/threat-model.md, "Out of scope"). */
int rs_fuzz_h5raw(const uint8_t *data, size_t size)
{
    static const char *T = "h5raw";
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    static int limits_set;
    if (!limits_set) { /* as rs_fuzz_h5log: HDF5 recycles its own blocks (docs/fuzzing.md, "Speed") */
        H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
        limits_set = 1;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/h5raw.h5", rs_fuzz_scratch());
    write_file_(T, path, data, size);
    rs_h5log *lg = NULL;
    rs_status st = rs_h5log_open(path, 0, NULL, &lg);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_IO) | BIT(RS_E_NOMEM));
        return 0;
    }
    int64_t before[FZ_NB] = {-1, -1}, after[FZ_NB] = {-1, -1};
    fz_check_accepted_(T, lg, before, 1);
    rs_h5log_meta m = fz_meta_();
    st = rs_h5log_open(path, 1, &m, &lg);
    if (st != RS_OK) {
        check_error_(T, st, BIT(RS_E_INVAL) | BIT(RS_E_FORMAT) | BIT(RS_E_IO) | BIT(RS_E_NOMEM));
        return 1;
    }
    if (rs_h5log_close(lg) != RS_OK) rs_fuzz_fail(T, "cannot close a resumed log");
    fz_accepted_(T, path, after, 1);
    if (memcmp(before, after, sizeof before) != 0) rs_fuzz_fail(T, "--resume changed the committed positions");
    return 1;
}

const rs_fuzz_target rs_fuzz_targets[] = {
    {"safetensors", rs_fuzz_safetensors, 1},
    {"st_index", rs_fuzz_st_index, 0},
    {"hf_config", rs_fuzz_hf_config, 0},
    {"pg19_meta", rs_fuzz_pg19_meta, 0},
    {"pg19_book", rs_fuzz_pg19_book, 1},
    {"policy", rs_fuzz_policy, 0},
    {"h5log", rs_fuzz_h5log, 1},
    {"npy", rs_fuzz_npy, 1},
    {"h5raw", rs_fuzz_h5raw, 1},
    {"h5floats", rs_fuzz_h5floats, 1},
    {"quant_config", rs_fuzz_quant_config, 0},
    {"qmodel", rs_fuzz_qmodel, 1},
#ifdef RS_HAVE_PCRE2 /* without PCRE2 the BPE loaders refuse every seed */
    {"tok_json", rs_fuzz_tok_json, 0},
    {"tok_tiktoken", rs_fuzz_tok_tiktoken, 0},
    {"tok_encode", rs_fuzz_tok_encode, 1},
#endif
    {NULL, NULL, 0},
};
