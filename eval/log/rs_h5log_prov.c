/* rs_h5log_prov.c — /provenance of a log (format version 2; docs/hdf5-layout.md "Provenance"):
 * attributes describing where and with what it ran (host, CPU, GPU, BLAS, compiler), the model
 * folder's files with size, mtime and SHA-256 (the digest cache of --resume), and the history of
 * invocations (each one's command line, start and end time, status, host; --resume appends). */
#include "rs_h5log_impl.h"
#include "rs_check.h"
#include "rs_h5attr.h"
#include "rs_h5dims.h"
#include "rs_h5place.h"
#include "input/rs_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const hist_names_[5] = {"command_line", "start_time", "end_time", "status", "host"};

#define TRY_(x)                                                                                            \
    do {                                                                                                   \
        if (st == RS_OK) st = (x);                                                                         \
    } while (0)

static rs_status strings_(hid_t g, const char *name, hsize_t n, const char *const *v, const char *dim)
{
    hid_t t = rs_h5_vlen_str_type();
    if (t < 0) return rs_h5_fail(RS_E_IO, "cannot make a string type");
    rs_status st = rs_h5_ds_create_write(g, name, H5P_DEFAULT, t, 1, &n, v);
    H5Tclose(t);
    const char *const d1[1] = {dim};
    TRY_(rs_h5_attach_dims(g, name, 1, d1));
    return st;
}

static rs_status files_(hid_t g, const rs_h5log_meta *m)
{
    const hsize_t n = m->n_files;
    const char **names = (const char **)calloc(n + 1, sizeof(char *)), **sha = (const char **)calloc(n + 1, sizeof(char *));
    uint64_t *size = (uint64_t *)calloc(n + 1, sizeof(uint64_t));
    int64_t *mt = (int64_t *)calloc(n + 1, sizeof(int64_t));
    rs_status st = names && sha && size && mt ? RS_OK : rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    for (size_t i = 0; st == RS_OK && i < n; i++) {
        names[i] = m->files[i].name ? m->files[i].name : "";
        sha[i] = m->files[i].sha256 ? m->files[i].sha256 : "";
        size[i] = m->files[i].size;
        mt[i] = m->files[i].mtime_ns;
    }
    static const char *const d1[1] = {"file"};
    TRY_(rs_h5_dim_only(g, "file", n));
    TRY_(strings_(g, "file_name", n, names, "file"));
    TRY_(strings_(g, "file_sha256", n, sha, "file"));
    TRY_(rs_h5_ds_create_write(g, "file_size", H5P_DEFAULT, H5T_NATIVE_UINT64, 1, &n, size));
    TRY_(rs_h5_attach_dims(g, "file_size", 1, d1));
    TRY_(rs_h5_ds_create_write(g, "file_mtime_ns", H5P_DEFAULT, H5T_NATIVE_INT64, 1, &n, mt));
    TRY_(rs_h5_attach_dims(g, "file_mtime_ns", 1, d1));
    free(names);
    free(sha);
    free(size);
    free(mt);
    return st;
}

static rs_status history_(hid_t g, const rs_h5log_meta *m)
{
    const size_t n = m->n_history + 1;
    const char **col = (const char **)calloc(n, sizeof(char *));
    if (!col) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    rs_status st = rs_h5_dim_only(g, "invocation", n);
    for (int k = 0; k < 5 && st == RS_OK; k++) {
        for (size_t i = 0; i < m->n_history; i++) {
            const rs_h5log_history *h = &m->history[i];
            const char *v[5] = {h->command_line, h->start_time, h->end_time, h->status, h->host};
            col[i] = v[k] ? v[k] : "";
        }
        const char *now[5] = {m->command_line, m->start_time, "", "running", m->host};
        col[n - 1] = now[k] ? now[k] : "";
        char name[32];
        snprintf(name, sizeof name, "history_%s", hist_names_[k]);
        st = strings_(g, name, n, col, "invocation");
    }
    free(col);
    return st;
}

rs_status rs_h5log_write_prov_(hid_t f, const rs_h5log_meta *m)
{
    RS_CHECK(m->n_files <= RS_H5LOG_MAX_FILES && m->n_history < RS_H5LOG_MAX_HISTORY, RS_E_INVAL,
             "h5log: %zu model files / %zu earlier invocations: at most %u / %u", m->n_files, m->n_history,
             RS_H5LOG_MAX_FILES, RS_H5LOG_MAX_HISTORY - 1);
    hid_t g = H5Gcreate2(f, "provenance", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return rs_h5_fail(RS_E_IO, "cannot create group /provenance");
    rs_status st = RS_OK;
    for (size_t i = 0; i < m->n_provenance && st == RS_OK; i++)
        st = rs_h5_attr_set_str(g, m->provenance[i].key, m->provenance[i].value ? m->provenance[i].value : "");
    TRY_(files_(g, m));
    TRY_(history_(g, m));
    H5Gclose(g);
    return st;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* the length of the 1-D dataset `path`, bounded by max */
static rs_status length_(hid_t f, const char *path, hsize_t max, hsize_t *n)
{
    hid_t d = rs_h5_ds_open(f, path);
    if (d < 0) return RS_E_FORMAT;
    rs_status st = rs_h5_ds_shape(d, path, 1, n, NULL);
    H5Dclose(d);
    RS_TRY(st);
    RS_CHECK(*n <= max, RS_E_FORMAT, "dataset %s holds %llu entries, at most %llu", path, (unsigned long long)*n,
             (unsigned long long)max);
    return RS_OK;
}

static void files_free_(rs_h5log_file_hash *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free((char *)v[i].name);
        free((char *)v[i].sha256);
    }
    free(v);
}

/* /provenance/file_* of f into a new array */
static rs_status read_files_(hid_t f, rs_h5log_file_hash **out, size_t *nout)
{
    hsize_t n = 0;
    RS_TRY(length_(f, "/provenance/file_name", RS_H5LOG_MAX_FILES, &n));
    char **names = (char **)calloc(n + 1, sizeof(char *)), **sha = (char **)calloc(n + 1, sizeof(char *));
    uint64_t *size = (uint64_t *)calloc(n + 1, sizeof(uint64_t));
    int64_t *mt = (int64_t *)calloc(n + 1, sizeof(int64_t));
    rs_h5log_file_hash *v = (rs_h5log_file_hash *)calloc(n + 1, sizeof *v);
    rs_status st = names && sha && size && mt && v ? RS_OK : rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    if (n > 0) {
        TRY_(rs_h5_ds_read_vlen_strings(f, "/provenance/file_name", n, names));
        TRY_(rs_h5_ds_read_vlen_strings(f, "/provenance/file_sha256", n, sha));
        TRY_(rs_h5_ds_read_all(f, "/provenance/file_size", H5T_NATIVE_UINT64, 1, &n, size));
        TRY_(rs_h5_ds_read_all(f, "/provenance/file_mtime_ns", H5T_NATIVE_INT64, 1, &n, mt));
    }
    for (size_t i = 0; v && i < n; i++) { /* ownership of the strings moves to v */
        v[i].name = names[i];
        v[i].sha256 = sha[i];
        v[i].size = size[i];
        v[i].mtime_ns = mt[i];
    }
    free(names);
    free(sha);
    free(size);
    free(mt);
    if (st != RS_OK) {
        files_free_(v, v ? (size_t)n : 0);
        return st;
    }
    *out = v;
    *nout = (size_t)n;
    return RS_OK;
}

rs_status rs_h5log_load_prov_(rs_h5log *lg, uint64_t version)
{
    if (version < 2) { /* version 1: the one invocation its root attributes describe */
        lg->hist = calloc(1, sizeof *lg->hist);
        RS_CHECK(lg->hist, RS_E_NOMEM, "h5log: out of memory");
        lg->n_hist = 1;
        static const char *const root[5] = {"command_line", "start_time", "end_time", "status", NULL};
        for (int k = 0; k < 5; k++) {
            char buf[8192] = "";
            if (root[k] && rs_h5_attr_get_str(lg->file, root[k], buf, sizeof buf) != RS_OK) buf[0] = '\0';
            lg->hist[0][k] = strdup(buf);
            RS_CHECK(lg->hist[0][k], RS_E_NOMEM, "h5log: out of memory");
        }
        return RS_OK;
    }
    hsize_t n = 0;
    RS_TRY(length_(lg->file, "/provenance/history_command_line", RS_H5LOG_MAX_HISTORY, &n));
    lg->hist = calloc(n + 1, sizeof *lg->hist);
    RS_CHECK(lg->hist, RS_E_NOMEM, "h5log: out of memory");
    lg->n_hist = (size_t)n;
    char **col = (char **)calloc(n + 1, sizeof(char *));
    RS_CHECK(col, RS_E_NOMEM, "h5log: out of memory");
    rs_status st = RS_OK;
    for (int k = 0; k < 5 && st == RS_OK; k++) {
        char p[64];
        snprintf(p, sizeof p, "/provenance/history_%s", hist_names_[k]);
        memset(col, 0, (n + 1) * sizeof(char *));
        st = n ? rs_h5_ds_read_vlen_strings(lg->file, p, n, col) : RS_OK;
        for (size_t i = 0; i < n; i++) lg->hist[i][k] = col[i]; /* owned by the handle (NULL if unread) */
    }
    free(col);
    for (size_t i = 0; st == RS_OK && i < n; i++)
        for (int k = 0; k < 5; k++)
            if (!lg->hist[i][k]) st = rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    TRY_(read_files_(lg->file, &lg->files, &lg->n_files));
    return st;
}

void rs_h5log_free_prov_(rs_h5log *lg)
{
    for (size_t i = 0; lg->hist && i < lg->n_hist; i++)
        for (int k = 0; k < 5; k++) free(lg->hist[i][k]);
    free(lg->hist);
    files_free_(lg->files, lg->n_files);
}

rs_status rs_h5log_end_history_(rs_h5log *lg, const char *end_time, const char *status)
{
    if (H5Lexists(lg->file, "/provenance", H5P_DEFAULT) <= 0) return RS_OK; /* cannot happen for a log we write */
    hsize_t n = 0;
    RS_TRY(length_(lg->file, "/provenance/history_end_time", RS_H5LOG_MAX_HISTORY, &n));
    RS_CHECK(n > 0, RS_E_FORMAT, "h5log: empty history");
    hid_t t = rs_h5_vlen_str_type();
    if (t < 0) return rs_h5_fail(RS_E_IO, "cannot make a string type");
    rs_status st = rs_h5_ds_write_at(lg->file, "/provenance/history_end_time", t, 1, 0, n - 1, 1, &end_time);
    TRY_(rs_h5_ds_write_at(lg->file, "/provenance/history_status", t, 1, 0, n - 1, 1, &status));
    H5Tclose(t);
    return st;
}

rs_status rs_h5log_interrupt(rs_h5log *lg, const char *end_time)
{
    rs_h5_quiet();
    RS_CHECK(lg && lg->writable && end_time, RS_E_INVAL, "h5log: bad argument or read-only log");
    RS_TRY(rs_h5_attr_set_str(lg->file, "end_time", end_time));
    RS_TRY(rs_h5_attr_set_str(lg->file, "status", "interrupted"));
    RS_TRY(rs_h5log_end_history_(lg, end_time, "interrupted"));
    return rs_h5log_flush_(lg);
}

/* ---- accessors ---------------------------------------------------------------------------- */

size_t rs_h5log_history_count(const rs_h5log *lg) { return lg ? lg->n_hist : 0; }

rs_status rs_h5log_get_history(const rs_h5log *lg, size_t i, const char *field, char *buf, size_t bufsize)
{
    RS_CHECK(lg && field && buf && bufsize > 0 && i < lg->n_hist, RS_E_INVAL, "h5log: history entry %zu of %zu", i,
             lg ? lg->n_hist : 0);
    for (int k = 0; k < 5; k++)
        if (!strcmp(field, hist_names_[k])) {
            snprintf(buf, bufsize, "%s", lg->hist[i][k] ? lg->hist[i][k] : "");
            return RS_OK;
        }
    return rs_error_set(RS_E_INVAL, "h5log: unknown history field '%s'", field);
}

size_t rs_h5log_file_count(const rs_h5log *lg) { return lg ? lg->n_files : 0; }

rs_status rs_h5log_get_file(const rs_h5log *lg, size_t i, rs_h5log_file_hash *out)
{
    RS_CHECK(lg && out && i < lg->n_files, RS_E_INVAL, "h5log: file %zu of %zu", i, lg ? lg->n_files : 0);
    *out = lg->files[i];
    return RS_OK;
}

rs_status rs_h5log_read_files(const char *path, rs_h5log_file_hash **out, size_t *n)
{
    rs_h5_quiet();
    RS_CHECK(path && out && n, RS_E_INVAL, "h5log: NULL argument");
    *out = NULL;
    *n = 0;
    char partial[4096];
    struct stat sb;
    const char *src = path;
    if (rs_h5log_partial_path(path, partial, sizeof partial) == RS_OK && lstat(partial, &sb) == 0 && S_ISREG(sb.st_mode))
        src = partial;
    /* only a regular file (never block on a FIFO); anything unreadable: no cache */
    if (lstat(src, &sb) != 0 || !S_ISREG(sb.st_mode) || rs_input_check(src, RS_H5LOG_MAX_FILE_BYTES, NULL) != RS_OK ||
        H5Fis_hdf5(src) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return RS_OK;
    }
    hid_t f = H5Fopen(src, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        H5Eclear2(H5E_DEFAULT);
        return RS_OK;
    }
    if (H5Lexists(f, "/provenance", H5P_DEFAULT) > 0 && read_files_(f, out, n) != RS_OK) {
        *out = NULL;
        *n = 0;
    }
    H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
    rs_error_clear();
    return RS_OK;
}

void rs_h5log_files_free(rs_h5log_file_hash *files, size_t n) { files_free_(files, n); }

#undef TRY_
