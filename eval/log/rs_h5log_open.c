/* rs_h5log_open.c — opening an existing log: read-only (info, summaries) or writable (--resume:
 * rebuilt from its committed positions). A log is input like any other: every count the handle
 * will index with is checked against the file's real datasets and the RS_H5LOG_MAX_* bounds
 * before anything is allocated or read (docs/hdf5-layout.md "Reading untrusted logs"). */
#include "rs_h5log_impl.h"
#include "rs_check.h"
#include "rs_h5attr.h"
#include "rs_h5place.h"
#include "input/rs_input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- configuration comparison for --resume ------------------------------------------------ */

static rs_status expect_str_(hid_t o, const char *name, const char *want, const char *path)
{
    char have[1024];
    RS_TRY(rs_h5_attr_get_str(o, name, have, sizeof have));
    RS_CHECK(!strcmp(have, want ? want : ""), RS_E_INVAL, "--resume: %s was written with %s = '%s', this command has '%s'",
             path, name, have, want ? want : "");
    return RS_OK;
}

static rs_status expect_u64_(hid_t o, const char *name, uint64_t want, const char *path)
{
    uint64_t have = 0;
    RS_TRY(rs_h5_attr_get_u64(o, name, &have));
    RS_CHECK(have == want, RS_E_INVAL, "--resume: %s was written with %s = %llu, this command has %llu", path, name,
             (unsigned long long)have, (unsigned long long)want);
    return RS_OK;
}

static rs_status expect_root_(hid_t f, const rs_h5log_meta *e, const char *path)
{
    RS_TRY(rs_h5log_check_meta_(e));
    /* a version 1 log hashed config.json alone (fnv1a64): compared with that digest */
    char have_hash[128] = "";
    RS_TRY(rs_h5_attr_get_str(f, "model_config_hash", have_hash, sizeof have_hash));
    if (!strncmp(have_hash, "fnv1a64:", 8) && e->model_config_hash_v1)
        RS_TRY(expect_str_(f, "model_config_hash", e->model_config_hash_v1, path));
    else
        RS_CHECK(!strcmp(have_hash, e->model_config_hash ? e->model_config_hash : ""), RS_E_INVAL,
                 "--resume: %s was written with model_config_hash = '%s', this command has '%s' (the model's "
                 "config.json or weights changed)", path, have_hash, e->model_config_hash ? e->model_config_hash : "");
    RS_TRY(expect_str_(f, "model_type", e->model_type, path));
    RS_TRY(expect_str_(f, "tokenizer", e->tokenizer, path));
    /* the tokenizer file's digest where the log records one (logs written before it do not) */
    if (H5Aexists(f, "tokenizer_sha256") > 0) RS_TRY(expect_str_(f, "tokenizer_sha256", e->tokenizer_sha256, path));
    RS_TRY(expect_str_(f, "split", e->split, path));
    RS_TRY(expect_str_(f, "short_books", e->short_books, path));
    RS_TRY(expect_u64_(f, "tokens", e->tokens, path));
    RS_TRY(expect_u64_(f, "chunk", e->chunk, path));
    RS_TRY(expect_u64_(f, "n_books", e->n_books, path));
    for (size_t i = 0; i < e->n_extra; i++) /* where the log has them (older logs may not) */
        if (e->extra[i].compare && H5Aexists(f, e->extra[i].key) > 0)
            RS_TRY(expect_str_(f, e->extra[i].key, e->extra[i].value ? e->extra[i].value : "", path));
    return expect_u64_(f, "n_runs", e->n_runs, path);
}

/* ---- validation --------------------------------------------------------------------------- */

/* a u64 root attribute within [lo, hi] */
static rs_status count_(hid_t f, const char *name, uint64_t lo, uint64_t hi, uint64_t *v, const char *path)
{
    RS_TRY(rs_h5_attr_get_u64(f, name, v));
    RS_CHECK(*v >= lo && *v <= hi, RS_E_FORMAT, "%s: root attribute %s = %llu outside [%llu, %llu]", path, name,
             (unsigned long long)*v, (unsigned long long)lo, (unsigned long long)hi);
    return RS_OK;
}

/* Deflate compresses at most 1032:1 (a 258-byte match in 2 bits), so every committed byte of a
 * log costs at least 1/1032 byte of the file; the storage check below keeps every other way of
 * reading more than the file holds out (without it a tiny log could declare 2^44 committed
 * positions, read as fill values from unallocated chunks, and keep info / --resume busy for hours). */
#define RS_H5LOG_MAX_RATIO 1032u

/* what a per-position dataset may be stored as: rs_h5_ds_check (compact, contiguous or chunked in
 * this file, filters shuffle / deflate / fletcher32 only, the type, the chunk dimensions) and, as
 * rs_h5log_create writes them, chunks of one book row and at most `chunk` positions; external
 * raw-data files name arbitrary paths (a FIFO among them), a virtual layout maps one source many
 * times, scale-offset / n-bit / szip / plugin filters store a constant chunk in a few bytes; *elem
 * gets the element size in bytes */
static rs_status storage_(hid_t d, const char *ds, int rank, uint64_t chunk, size_t *elem)
{
    RS_TRY(rs_h5_ds_check(d, ds));
    const hid_t dcpl = H5Dget_create_plist(d), t = H5Dget_type(d);
    rs_status st = dcpl < 0 || t < 0 ? rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its storage", ds) : RS_OK;
    hsize_t ch[H5S_MAX_RANK];
    if (st == RS_OK && rank == 2 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
        (H5Pget_chunk(dcpl, H5S_MAX_RANK, ch) != 2 || ch[0] != 1 || ch[1] < 1 || ch[1] > chunk))
        st = rs_error_set(RS_E_FORMAT, "dataset %s: chunks of (%llu, %llu) positions; a log stores (1, at most chunk = "
                          "%llu)", ds, (unsigned long long)ch[0], (unsigned long long)ch[1], (unsigned long long)chunk);
    if (st == RS_OK) {
        *elem = H5Tget_size(t);
        if (*elem == 0) st = rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its element size", ds);
    }
    if (t >= 0) H5Tclose(t);
    if (dcpl >= 0) H5Pclose(dcpl);
    return st;
}

/* a numeric dataset's extent: rank `rank`, first dimension n_books, and (rank 2) at least
 * min_width positions; returns the width; *elem (not NULL) gets its element size, its storage
 * checked by storage_ */
static rs_status extent_(hid_t f, const char *ds, int rank, size_t n_books, uint64_t min_width, uint64_t chunk,
                         hsize_t *width, size_t *elem)
{
    hid_t d = rs_h5_ds_open(f, ds);
    if (d < 0) return RS_E_FORMAT;
    hsize_t dims[H5S_MAX_RANK];
    rs_status st = rs_h5_ds_shape(d, ds, rank, dims, NULL);
    /* numbers: a string dataset here would make every later read fail (found by fuzzing) */
    if (st == RS_OK && rs_h5_ds_class(d, ds, H5T_FLOAT) != RS_OK) st = rs_h5_ds_class(d, ds, H5T_INTEGER);
    size_t es = 0;
    if (st == RS_OK) st = storage_(d, ds, rank, chunk, &es);
    H5Dclose(d);
    RS_TRY(st);
    if (elem) *elem = es;
    RS_CHECK(dims[0] == n_books, RS_E_FORMAT, "dataset %s has %llu rows, n_books is %zu", ds, (unsigned long long)dims[0],
             n_books);
    if (rank == 2) {
        RS_CHECK(dims[1] >= min_width, RS_E_FORMAT, "dataset %s holds %llu positions, %llu are committed", ds,
                 (unsigned long long)dims[1], (unsigned long long)min_width);
        if (width) *width = dims[1];
    }
    return RS_OK;
}

/* an integer [n_books] dataset, read whole */
static rs_status books_int_(hid_t f, const char *ds, hid_t type, size_t n, void *buf)
{
    hid_t d = rs_h5_ds_open(f, ds);
    if (d < 0) return RS_E_FORMAT;
    rs_status st = rs_h5_ds_class(d, ds, H5T_INTEGER);
    H5Dclose(d);
    RS_TRY(st);
    const hsize_t dims[1] = {n};
    return rs_h5_ds_read_all(f, ds, type, 1, dims, buf);
}

/* MoE routing counts (optional: dense models and logs written before them have none): run00's
 * coordinate moe_layer [n] (1 <= n <= RS_H5LOG_MAX_MOE_LAYERS, ascending layer indices >= 0) and, in
 * every run group, the same coordinate and moe_route_positions / moe_route_experts [n_books][n] */
static rs_status read_moe_(hid_t f, const char *path, rs_h5log *lg)
{
    if (lg->n_runs == 0 || H5Lexists(f, "/runs/run00/moe_layer", H5P_DEFAULT) <= 0) return RS_OK;
    hsize_t n = 0;
    for (size_t r = 0; r < lg->n_runs; r++) {
        char p[96];
        snprintf(p, sizeof p, "/runs/run%02zu/moe_layer", r);
        hid_t d = rs_h5_ds_open(f, p);
        if (d < 0) return rs_error_set(RS_E_FORMAT, "%s: %s missing (run00 has it)", path, p);
        hsize_t dims[H5S_MAX_RANK];
        rs_status st = rs_h5_ds_shape(d, p, 1, dims, NULL);
        if (st == RS_OK) st = rs_h5_ds_class(d, p, H5T_INTEGER);
        if (st == RS_OK) st = rs_h5_ds_check(d, p);
        H5Dclose(d);
        RS_TRY(st);
        if (r == 0) {
            n = dims[0];
            RS_CHECK(n >= 1 && n <= RS_H5LOG_MAX_MOE_LAYERS, RS_E_FORMAT, "%s: %s holds %llu MoE layers (1 to %u)", path,
                     p, (unsigned long long)n, RS_H5LOG_MAX_MOE_LAYERS);
            lg->moe_layers = (int32_t *)malloc((size_t)n * sizeof(int32_t));
            RS_CHECK(lg->moe_layers, RS_E_NOMEM, "h5log: out of memory");
            RS_TRY(rs_h5_ds_read_all(f, p, H5T_NATIVE_INT32, 1, &n, lg->moe_layers));
            for (hsize_t i = 0; i < n; i++)
                RS_CHECK(lg->moe_layers[i] >= 0 && (i == 0 || lg->moe_layers[i] > lg->moe_layers[i - 1]), RS_E_FORMAT,
                         "%s: %s: layer indices must ascend from 0 (entry %llu is %d)", path, p, (unsigned long long)i,
                         (int)lg->moe_layers[i]);
            lg->n_moe = (size_t)n;
        }
        RS_CHECK(dims[0] == n, RS_E_FORMAT, "%s: %s holds %llu MoE layers, run00 %llu", path, p,
                 (unsigned long long)dims[0], (unsigned long long)n);
        static const char *const cnt[2] = {"moe_route_positions", "moe_route_experts"};
        for (int i = 0; i < 2; i++) {
            hsize_t w = 0;
            snprintf(p, sizeof p, "/runs/run%02zu/%s", r, cnt[i]);
            RS_TRY(extent_(f, p, 2, lg->n_books, n, lg->chunk, &w, NULL));
            RS_CHECK(w == n, RS_E_FORMAT, "%s: %s holds %llu MoE layers, moe_layer %llu", path, p, (unsigned long long)w,
                     (unsigned long long)n);
        }
    }
    return RS_OK;
}

/* the counts, then the books against them, then every dataset's shape against both, then the
 * committed data against the file's size */
static rs_status read_layout_(hid_t f, const char *path, long long file_size, rs_h5log *lg)
{
    const size_t nb = lg->n_books, nr = lg->n_runs;
    RS_TRY(rs_h5_ds_read_vlen_strings(f, "/books/id", nb, lg->book_ids));
    RS_TRY(books_int_(f, "/books/length", H5T_NATIVE_UINT64, nb, lg->book_len));
    RS_TRY(books_int_(f, "/books/completed_positions", H5T_NATIVE_INT64, nb, lg->completed));
    uint64_t maxc = 0, total = 0;
    for (size_t b = 0; b < nb; b++) {
        RS_CHECK(lg->book_len[b] <= lg->tokens, RS_E_FORMAT, "%s: book %zu: length %llu > tokens %llu", path, b,
                 (unsigned long long)lg->book_len[b], (unsigned long long)lg->tokens);
        RS_CHECK(lg->completed[b] >= 0 && (uint64_t)lg->completed[b] <= lg->book_len[b], RS_E_FORMAT,
                 "%s: book %zu: completed_positions %lld outside [0, length %llu]", path, b, (long long)lg->completed[b],
                 (unsigned long long)lg->book_len[b]);
        if ((uint64_t)lg->completed[b] > maxc) maxc = (uint64_t)lg->completed[b];
        total += (uint64_t)lg->completed[b]; /* <= 2^20 books x 2^24 */
    }
    hsize_t width = 0;
    size_t es = 0;
    uint64_t per_pos = 0; /* bytes one committed position holds over every per-position dataset */
    RS_TRY(extent_(f, "/reference/nll", 2, nb, maxc, lg->chunk, &width, &es));
    per_pos += es;
    lg->width = width;
    RS_TRY(extent_(f, rs_h5log_ref_ds_[0], 2, nb, maxc, lg->chunk, NULL, &es));
    per_pos += es;
    RS_TRY(extent_(f, rs_h5log_ref_ds_[2], 2, nb, maxc, lg->chunk, NULL, &es));
    per_pos += es;
    /* /runs holds exactly the n_runs groups run00 .. */
    hid_t rg = H5Gopen2(f, "/runs", H5P_DEFAULT);
    if (rg < 0) return rs_h5_fail(RS_E_FORMAT, "%s: group /runs missing", path);
    H5G_info_t gi;
    const herr_t e = H5Gget_info(rg, &gi);
    H5Gclose(rg);
    if (e < 0) return rs_h5_fail(RS_E_FORMAT, "%s: cannot list /runs", path);
    RS_CHECK(gi.nlinks == nr, RS_E_FORMAT, "%s: /runs holds %llu groups, n_runs is %zu", path,
             (unsigned long long)gi.nlinks, nr);
    for (size_t r = 0; r < nr; r++) {
        char p[96], pol[256];
        for (int i = 0; i < 4; i++) {
            snprintf(p, sizeof p, "/runs/run%02zu/%s", r, rs_h5log_run_ds_[i]);
            RS_TRY(extent_(f, p, 2, nb, maxc, lg->chunk, NULL, &es));
            per_pos += es;
        }
        static const char *nf[3] = {"position", "layer", "head"};
        for (int i = 0; i < 3; i++) {
            snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_%s", r, nf[i]);
            RS_TRY(extent_(f, p, 1, nb, 0, lg->chunk, NULL, NULL));
        }
        snprintf(p, sizeof p, "/runs/run%02zu", r);
        hid_t g = H5Gopen2(f, p, H5P_DEFAULT);
        if (g < 0) return rs_h5_fail(RS_E_FORMAT, "%s: group %s missing", path, p);
        rs_status st = rs_h5_attr_get_str(g, "policy", pol, sizeof pol);
        if (st == RS_OK) st = rs_h5_attr_get_u64(g, "window", &lg->windows[r]);
        H5Gclose(g);
        RS_TRY(st);
        lg->policies[r] = strdup(pol);
        RS_CHECK(lg->policies[r], RS_E_NOMEM, "h5log: out of memory");
    }
    RS_TRY(read_moe_(f, path, lg));
    /* the work info / --resume will do is reading the committed positions: they must fit the file
     * (compared in long double: no product can wrap) */
    const long double need = (long double)total * (long double)per_pos;
    const long double have = (long double)(file_size > 0 ? file_size : 0) * RS_H5LOG_MAX_RATIO;
    RS_CHECK(need <= have, RS_E_FORMAT,
             "%s: %llu committed positions of %llu bytes each cannot be stored in a file of %lld bytes (deflate "
             "compresses at most %u:1): a corrupted or forged commit record", path, (unsigned long long)total,
             (unsigned long long)per_pos, file_size, RS_H5LOG_MAX_RATIO);
    return RS_OK;
}

/* the run groups and books of a log against what --resume expects */
static rs_status expect_runs_books_(hid_t f, const rs_h5log *lg, const rs_h5log_meta *e, const char *path)
{
    for (size_t r = 0; r < lg->n_runs; r++) {
        const rs_h5log_run_info *ri = &e->runs[r];
        RS_CHECK(!strcmp(lg->policies[r], ri->policy), RS_E_INVAL, "--resume: %s run %zu has policy '%s', this command has '%s'",
                 path, r, lg->policies[r], ri->policy);
        char grp[64];
        snprintf(grp, sizeof grp, "/runs/run%02zu", r);
        hid_t g = H5Gopen2(f, grp, H5P_DEFAULT);
        if (g < 0) return rs_h5_fail(RS_E_FORMAT, "%s: group %s missing", path, grp);
        rs_status st = expect_u64_(g, "window", ri->window, grp);
        if (st == RS_OK) st = expect_u64_(g, "seed", ri->seed, grp);
        H5Gclose(g);
        RS_TRY(st);
    }
    if (lg->n_moe > 0 && e->n_moe_layers > 0) {
        int same = lg->n_moe == e->n_moe_layers;
        for (size_t i = 0; same && i < lg->n_moe; i++) same = lg->moe_layers[i] == e->moe_layers[i];
        RS_CHECK(same, RS_E_INVAL, "--resume: %s records routing for %zu MoE layers, this model has %zu (or others)",
                 path, lg->n_moe, e->n_moe_layers);
    }
    for (size_t b = 0; b < lg->n_books; b++) {
        RS_CHECK(!strcmp(lg->book_ids[b], e->book_ids[b]), RS_E_INVAL, "--resume: %s book %zu is '%s', this command has '%s'",
                 path, b, lg->book_ids[b], e->book_ids[b]);
        RS_CHECK(lg->book_len[b] == e->book_len[b], RS_E_INVAL, "--resume: %s book %s has %llu positions, this command %llu",
                 path, lg->book_ids[b], (unsigned long long)lg->book_len[b], (unsigned long long)e->book_len[b]);
    }
    return RS_OK;
}

static rs_status open_checked_(hid_t f, const char *path, long long file_size, const rs_h5log_meta *expect,
                                rs_h5log **out)
{
    char fmt[64] = "";
    if (rs_h5_attr_get_str(f, "format", fmt, sizeof fmt) != RS_OK || strcmp(fmt, RS_H5LOG_FORMAT) != 0)
        return rs_error_set(RS_E_FORMAT, "%s is not a replayssm KL log (root attribute format != '%s')", path,
                            RS_H5LOG_FORMAT);
    uint64_t ver = 0, nb = 0, nr = 0, tokens = 0, chunk = 0;
    RS_TRY(rs_h5_attr_get_u64(f, "format_version", &ver));
    RS_CHECK(ver >= RS_H5LOG_FORMAT_VERSION_MIN && ver <= RS_H5LOG_FORMAT_VERSION, RS_E_FORMAT,
             "%s: log format version %llu, this build reads versions %d to %d", path, (unsigned long long)ver,
             RS_H5LOG_FORMAT_VERSION_MIN, RS_H5LOG_FORMAT_VERSION);
    RS_TRY(count_(f, "n_books", 1, RS_H5LOG_MAX_BOOKS, &nb, path));
    RS_TRY(count_(f, "n_runs", 0, RS_H5LOG_MAX_RUNS, &nr, path));
    RS_TRY(count_(f, "tokens", 1, RS_H5LOG_MAX_TOKENS, &tokens, path));
    RS_TRY(count_(f, "chunk", 1, RS_H5LOG_MAX_TOKENS, &chunk, path));
    if (expect) RS_TRY(expect_root_(f, expect, path));
    rs_h5log *lg = NULL;
    RS_TRY(rs_h5log_alloc_((size_t)nb, (size_t)nr, &lg));
    lg->tokens = tokens;
    lg->chunk = chunk;
    lg->file = f; /* for rs_h5log_load_prov_; cleared again on failure (the caller closes f) */
    rs_status st = read_layout_(f, path, file_size, lg);
    if (st == RS_OK) st = rs_h5log_load_prov_(lg, ver);
    lg->file = -1;
    if (st == RS_OK && expect) st = expect_runs_books_(f, lg, expect, path);
    if (st == RS_OK) st = rs_h5log_set_path_(lg, 0, path);
    if (st != RS_OK) {
        rs_h5log_free_(lg);
        return st;
    }
    lg->file = f;
    *out = lg;
    return RS_OK;
}

rs_status rs_h5log_open_valid_(const char *path, const rs_h5log_meta *expect, rs_h5log **out)
{
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) return rs_error_set(RS_E_IO, "%s does not exist", path);
    /* the input room's bounded open before libhdf5 sees the name: a FIFO or device would block or
     * stream in H5Fis_hdf5, and an unreadable log is "Permission denied", not "not an HDF5 file" */
    uint64_t size = 0;
    RS_TRY(rs_input_check(path, RS_H5LOG_MAX_FILE_BYTES, &size));
    if (H5Fis_hdf5(path) <= 0) return rs_h5_fail(RS_E_FORMAT, "%s is not an HDF5 file", path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return rs_h5_fail(RS_E_IO, "cannot open %s", path);
    rs_status st = open_checked_(f, path, (long long)size, expect, out);
    if (st != RS_OK) {
        H5Fclose(f);
        H5Eclear2(H5E_DEFAULT);
    }
    return st;
}

/* "<out>.partial" is continued only by the command that left it: its root `command` (a log that
 * predates the attribute: the command word of its command_line) against this invocation's. An
 * interrupted `merge --force` leaves a partial of a merged log; `kl --resume` must not take it
 * for an interrupted kl run and persist it as <out>. */
static rs_status partial_of_this_command_(const char *partial, const char *path, const rs_h5log_meta *expect)
{
    char want[32], have[32] = "", line[4096] = "";
    rs_h5log_command_of_(expect->command_line, want, sizeof want);
    if (rs_input_check(partial, RS_H5LOG_MAX_FILE_BYTES, NULL) != RS_OK || H5Fis_hdf5(partial) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        rs_error_clear();
        return RS_OK; /* not a log at all: the full open below says what is wrong with it */
    }
    const hid_t f = H5Fopen(partial, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0) {
        if (rs_h5_attr_get_str(f, "command", have, sizeof have) != RS_OK || !have[0]) {
            have[0] = '\0';
            if (rs_h5_attr_get_str(f, "command_line", line, sizeof line) == RS_OK)
                rs_h5log_command_of_(line, have, sizeof have);
        }
        H5Fclose(f);
    }
    H5Eclear2(H5E_DEFAULT);
    rs_error_clear();
    RS_CHECK(!have[0] || !want[0] || !strcmp(have, want), RS_E_INVAL,
             "--resume: %s was left by an interrupted `replayssm %s`, not by `replayssm %s`: it is not this command's "
             "log to continue (remove it to resume %s, or run `replayssm %s` again to finish it)",
             partial, have, want, path, have);
    return RS_OK;
}

/* ---- the entry point ---------------------------------------------------------------------- */

rs_status rs_h5log_open(const char *path, int writable, const rs_h5log_meta *expect, rs_h5log **out)
{
    rs_h5_quiet();
    RS_CHECK(path && path[0] && out, RS_E_INVAL, "h5log: NULL argument");
    *out = NULL;
    if (!writable) return rs_h5log_open_valid_(path, NULL, out);
    RS_CHECK(expect, RS_E_INVAL, "h5log: resume needs the expected configuration");
    /* --resume continues "<out>.partial" (an interrupted --force run) when there is one, <out>
     * otherwise; both must be regular files (never a link that points elsewhere) */
    char partial[4096], tmp[4096];
    RS_TRY(rs_h5log_partial_path(path, partial, sizeof partial));
    RS_TRY(rs_h5_temp_name(path, tmp, sizeof tmp));
    int exists = 0, partial_exists = 0;
    RS_TRY(rs_h5_target_state(path, &exists));
    RS_TRY(rs_h5_target_state(partial, &partial_exists));
    const char *src = partial_exists ? partial : path;
    RS_CHECK(exists || partial_exists, RS_E_IO, "%s does not exist", path);
    RS_CHECK(!rs_h5_in_use(src), RS_E_IO, "%s is being written by another process", src);
    rs_h5_clean_stale(path);
    if (partial_exists) RS_TRY(partial_of_this_command_(partial, path, expect));
    rs_h5log *old = NULL;
    RS_TRY(rs_h5log_open_valid_(src, expect, &old));
    /* The rebuild: the committed positions are copied into a new file, which then replaces the
     * old one atomically. Whatever an interrupted writer left past the commit record (chunks
     * indexed but not committed, index nodes newer than the end-of-allocation mark) is dropped,
     * and the old file stays intact until the rename. */
    char first_start[64] = "";
    if (old->n_hist > 0 && old->hist[0][1]) /* the first invocation's start (not the last resume's) */
        snprintf(first_start, sizeof first_start, "%s", old->hist[0][1]);
    else if (rs_h5_attr_get_str(old->file, "start_time", first_start, sizeof first_start) != RS_OK)
        first_start[0] = '\0';
    /* the history: the old log's invocations, then this one (rs_h5log_write_prov_ appends it) */
    rs_h5log_meta e2 = *expect;
    size_t nh = old->n_hist < RS_H5LOG_MAX_HISTORY ? old->n_hist : RS_H5LOG_MAX_HISTORY - 1;
    rs_h5log_history *hist = (rs_h5log_history *)calloc(nh + 1, sizeof *hist);
    if (!hist) {
        rs_h5log_close(old);
        return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    }
    for (size_t i = 0; i < nh; i++) { /* the newest ones where there are too many */
        char *const *h = old->hist[old->n_hist - nh + i];
        hist[i] = (rs_h5log_history){h[0], h[1], h[2], h[3], h[4]};
    }
    e2.n_history = nh;
    e2.history = hist;
    rs_h5log *lg = NULL;
    rs_status st = rs_h5log_build_(tmp, &e2, &lg);
    free(hist);
    if (st == RS_OK) st = rs_h5_attr_set_str(lg->file, "first_start_time", first_start);
    if (st == RS_OK) st = rs_h5log_copy_committed_(old, lg);
    if (st == RS_OK && rename(tmp, src) != 0)
        st = rs_error_set(RS_E_IO, "cannot move the rebuilt log %s to %s: %s", tmp, src, strerror(errno));
    if (st == RS_OK) st = rs_h5log_set_path_(lg, 0, src);
    if (st == RS_OK && partial_exists) st = rs_h5log_set_path_(lg, 1, path);
    rs_h5log_close(old);
    if (st != RS_OK) {
        rs_h5log_discard_(lg); /* still at tmp unless the rename succeeded */
        return st;
    }
    *out = lg;
    return RS_OK;
}

/* ---- --resume's copy ---------------------------------------------------------------------- */

/* one run's routing counts of one book (the layers checked equal by expect_runs_books_) */
static rs_status copy_route_diff_(const rs_h5log *src, rs_h5log *dst, size_t r, size_t b)
{
    int64_t *c = (int64_t *)malloc(2 * src->n_moe * sizeof(int64_t));
    if (!c) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    rs_status st = rs_h5log_get_route_diff(src, r, b, c, c + src->n_moe);
    if (st == RS_OK) st = rs_h5log_set_route_diff(dst, r, b, c, c + src->n_moe);
    free(c);
    return st;
}

rs_status rs_h5log_copy_committed_(const rs_h5log *src, rs_h5log *dst)
{
    const size_t R = src->n_runs;
    size_t maxn = 1;
    for (size_t b = 0; b < src->n_books; b++)
        if ((size_t)src->completed[b] > maxn) maxn = (size_t)src->completed[b];
    int32_t *tok = (int32_t *)malloc(maxn * sizeof(int32_t)), *top = (int32_t *)malloc(maxn * sizeof(int32_t));
    double *nref = (double *)malloc(maxn * sizeof(double));
    /* + 1: a reference-only log has R == 0, and malloc(0) may return NULL */
    double *d = (double *)malloc((3 * R * maxn + 1) * sizeof(double));
    uint8_t *ag = (uint8_t *)malloc(R * maxn + 1);
    rs_h5log_run_chunk *rc = (rs_h5log_run_chunk *)calloc(R + 1, sizeof *rc);
    rs_status st = (tok && top && nref && d && ag && rc) ? RS_OK : rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    for (size_t b = 0; st == RS_OK && b < src->n_books; b++) {
        const size_t n = (size_t)src->completed[b];
        for (size_t r = 0; st == RS_OK && r < R; r++) {
            int64_t p;
            int32_t L, H;
            st = rs_h5log_get_nonfinite(src, r, b, &p, &L, &H);
            if (st == RS_OK && p >= 0) st = rs_h5log_set_nonfinite(dst, r, b, p, L, H);
            if (st == RS_OK && n > 0 && src->n_moe > 0 && src->n_moe == dst->n_moe) st = copy_route_diff_(src, dst, r, b);
        }
        if (n == 0 || st != RS_OK) continue;
        st = rs_h5log_read_row(src, -1, "next_token", b, n, tok);
        if (st == RS_OK) st = rs_h5log_read_row(src, -1, "top1", b, n, top);
        if (st == RS_OK) st = rs_h5log_read_row(src, -1, "nll", b, n, nref);
        for (size_t r = 0; st == RS_OK && r < R; r++) {
            st = rs_h5log_read_row(src, (long)r, "kl", b, n, d + (3 * r) * maxn);
            if (st == RS_OK) st = rs_h5log_read_row(src, (long)r, "nll", b, n, d + (3 * r + 1) * maxn);
            if (st == RS_OK) st = rs_h5log_read_row(src, (long)r, "dp", b, n, d + (3 * r + 2) * maxn);
            if (st == RS_OK) st = rs_h5log_read_row(src, (long)r, "top1_agree", b, n, ag + r * maxn);
        }
        for (size_t pos = 0; st == RS_OK && pos < n; pos += dst->chunk) {
            const size_t k = n - pos < dst->chunk ? n - pos : (size_t)dst->chunk;
            for (size_t r = 0; r < R; r++) {
                rc[r].kl = d + (3 * r) * maxn + pos;
                rc[r].nll = d + (3 * r + 1) * maxn + pos;
                rc[r].dp = d + (3 * r + 2) * maxn + pos;
                rc[r].agree = ag + r * maxn + pos;
            }
            st = rs_h5log_write_chunk(dst, b, pos, k, tok + pos, nref + pos, top + pos, rc);
        }
    }
    free(tok);
    free(top);
    free(nref);
    free(d);
    free(ag);
    free(rc);
    return st;
}
