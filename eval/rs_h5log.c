/* rs_h5log.c — the HDF5 log of a KL evaluation (see rs_h5log.h, docs/hdf5-layout.md). */
#include "rs_h5log_impl.h"
#include "rs_check.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors ------------------------------------------------------------------------------ */

static void h5quiet_(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static herr_t walk_cb_(unsigned n, const H5E_error2_t *e, void *data)
{
    char *buf = (char *)data;
    (void)n;
    if (!buf[0] && e && e->desc && e->desc[0]) {
        snprintf(buf, 200, "%s", e->desc);
        for (char *p = buf; *p; p++)
            if (*p == '\n') *p = ' ';
    }
    return 0;
}

/* rs_error_set with the innermost HDF5 error description appended */
static rs_status h5fail_(rs_status code, const char *fmt, ...)
{
    char what[512], desc[200] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb_, desc);
    if (getenv("RS_H5LOG_DEBUG")) H5Eprint2(H5E_DEFAULT, stderr);
    H5Eclear2(H5E_DEFAULT);
    if (desc[0]) return rs_error_set(code, "%s (HDF5: %s)", what, desc);
    return rs_error_set(code, "%s", what);
}

/* ---- attributes ---------------------------------------------------------------------------- */

static hid_t vlen_str_type_(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

static rs_status attr_write_(hid_t obj, const char *name, hid_t type, hid_t space, const void *buf)
{
    if (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0)
        return h5fail_(RS_E_IO, "cannot replace attribute %s", name);
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) return h5fail_(RS_E_IO, "cannot create attribute %s", name);
    herr_t e = H5Awrite(a, type, buf);
    H5Aclose(a);
    if (e < 0) return h5fail_(RS_E_IO, "cannot write attribute %s", name);
    return RS_OK;
}

static rs_status set_str_(hid_t obj, const char *name, const char *val)
{
    hid_t t = vlen_str_type_(), s = H5Screate(H5S_SCALAR);
    const char *v = val ? val : "";
    rs_status st = attr_write_(obj, name, t, s, &v);
    H5Sclose(s);
    H5Tclose(t);
    return st;
}

static rs_status set_u64_(hid_t obj, const char *name, uint64_t v)
{
    hid_t s = H5Screate(H5S_SCALAR);
    rs_status st = attr_write_(obj, name, H5T_NATIVE_UINT64, s, &v);
    H5Sclose(s);
    return st;
}

static rs_status set_f64v_(hid_t obj, const char *name, const double *v, size_t n)
{
    hsize_t d = n;
    hid_t s = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &d, NULL);
    rs_status st = attr_write_(obj, name, H5T_NATIVE_DOUBLE, s, v);
    H5Sclose(s);
    return st;
}

static rs_status get_str_(hid_t obj, const char *name, char *buf, size_t bufsize)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return h5fail_(RS_E_FORMAT, "attribute %s missing", name);
    hid_t ft = H5Aget_type(a);
    rs_status st = RS_OK;
    if (H5Tget_class(ft) != H5T_STRING) {
        st = rs_error_set(RS_E_FORMAT, "attribute %s is not a string", name);
    } else if (H5Tis_variable_str(ft) > 0) {
        hid_t t = vlen_str_type_();
        char *v = NULL;
        if (H5Aread(a, t, &v) < 0) st = h5fail_(RS_E_FORMAT, "cannot read attribute %s", name);
        else snprintf(buf, bufsize, "%s", v ? v : "");
        if (v) H5free_memory(v);
        H5Tclose(t);
    } else {
        size_t sz = H5Tget_size(ft);
        char *tmp = (char *)calloc(sz + 1, 1);
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, sz + 1);
        if (!tmp) st = rs_error_set(RS_E_NOMEM, "out of memory");
        else if (H5Aread(a, t, tmp) < 0) st = h5fail_(RS_E_FORMAT, "cannot read attribute %s", name);
        else snprintf(buf, bufsize, "%s", tmp);
        free(tmp);
        H5Tclose(t);
    }
    H5Tclose(ft);
    H5Aclose(a);
    return st;
}

static rs_status get_u64_(hid_t obj, const char *name, uint64_t *v)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return h5fail_(RS_E_FORMAT, "attribute %s missing", name);
    herr_t e = H5Aread(a, H5T_NATIVE_UINT64, v);
    H5Aclose(a);
    if (e < 0) return h5fail_(RS_E_FORMAT, "cannot read attribute %s", name);
    return RS_OK;
}

/* ---- datasets ------------------------------------------------------------------------------- */

/* [n_books, 0 .. unlimited] per-position dataset, chunk (1, chunk), shuffle + deflate. */
static rs_status make_pos_ds_(hid_t g, const char *name, hid_t type, const void *fill, size_t n_books,
                              uint64_t chunk, const char *desc, const char *units)
{
    hsize_t dims[2] = {n_books, 0}, maxd[2] = {n_books, H5S_UNLIMITED}, ch[2] = {1, chunk};
    hid_t sp = H5Screate_simple(2, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, ch);
    H5Pset_fill_value(dcpl, type, fill);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_IFSET);
    if (H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0) H5Pset_shuffle(dcpl);
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) H5Pset_deflate(dcpl, 4);
    hid_t d = H5Dcreate2(g, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(sp);
    if (d < 0) return h5fail_(RS_E_IO, "cannot create dataset %s", name);
    rs_status st = set_str_(d, "dims", "book,position");
    if (st == RS_OK) st = set_str_(d, "description", desc);
    if (st == RS_OK && units) st = set_str_(d, "units", units);
    H5Dclose(d);
    return st;
}

/* [n] contiguous dataset allocated at creation (updated in place), filled with *fill. */
static rs_status make_small_ds_(hid_t g, const char *name, hid_t type, const void *fill, size_t n,
                                const char *desc)
{
    hsize_t d1 = n ? n : 1;
    hid_t sp = H5Screate_simple(1, &d1, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
    H5Pset_fill_value(dcpl, type, fill);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC);
    hid_t d = H5Dcreate2(g, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(sp);
    if (d < 0) return h5fail_(RS_E_IO, "cannot create dataset %s", name);
    rs_status st = set_str_(d, "dims", "book");
    if (st == RS_OK) st = set_str_(d, "description", desc);
    H5Dclose(d);
    return st;
}

static hid_t dopen_(hid_t file, const char *path)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    /* no chunk cache: a chunk goes to the file at H5Dwrite (see the crash-safety notes) */
    H5Pset_chunk_cache(dapl, 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT);
    hid_t d = H5Dopen2(file, path, dapl);
    H5Pclose(dapl);
    return d;
}

/* write n values of type at [book, pos .. pos+n) (2-D) or [book] (1-D, n == 1) */
static rs_status write_at_(hid_t file, const char *path, hid_t type, int rank, size_t book, uint64_t pos,
                           size_t n, const void *buf)
{
    hid_t d = dopen_(file, path);
    if (d < 0) return h5fail_(RS_E_FORMAT, "dataset %s missing", path);
    hid_t fs = H5Dget_space(d);
    if (rank == 2) {
        /* each dataset is extended on its own: after a crash in the middle of a flush the
         * extents of different datasets may differ */
        hsize_t dims[2] = {0, 0};
        H5Sget_simple_extent_dims(fs, dims, NULL);
        if (dims[1] < pos + n) {
            dims[1] = pos + n;
            H5Sclose(fs);
            if (H5Dset_extent(d, dims) < 0) {
                H5Dclose(d);
                return h5fail_(RS_E_IO, "cannot extend %s to %llu positions", path, (unsigned long long)(pos + n));
            }
            fs = H5Dget_space(d);
        }
    }
    hsize_t start[2] = {book, pos}, count[2] = {1, n}, mn = n;
    if (rank == 1) count[0] = n;
    herr_t e = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(1, &mn, NULL);
    if (e >= 0) e = H5Dwrite(d, type, ms, fs, H5P_DEFAULT, buf);
    char desc[200] = "";
    if (e < 0) {
        H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb_, desc);
        if (getenv("RS_H5LOG_DEBUG")) H5Eprint2(H5E_DEFAULT, stderr);
    }
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    if (e < 0) return rs_error_set(RS_E_IO, "cannot write %s (book %zu, position %llu, %zu values)%s%s%s", path, book,
                                   (unsigned long long)pos, n, desc[0] ? " (HDF5: " : "", desc, desc[0] ? ")" : "");
    return RS_OK;
}

static rs_status read_at_(hid_t file, const char *path, hid_t type, int rank, size_t book, uint64_t pos,
                          size_t n, void *buf)
{
    if (n == 0) return RS_OK;
    hid_t d = dopen_(file, path);
    if (d < 0) return h5fail_(RS_E_FORMAT, "dataset %s missing", path);
    hid_t fs = H5Dget_space(d);
    hsize_t start[2] = {book, pos}, count[2] = {1, n}, mn = n;
    if (rank == 1) count[0] = n;
    herr_t e = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(1, &mn, NULL);
    if (e >= 0) e = H5Dread(d, type, ms, fs, H5P_DEFAULT, buf);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    if (e < 0) return h5fail_(RS_E_FORMAT, "cannot read %s (book %zu, position %llu, %zu values)", path, book,
                              (unsigned long long)pos, n);
    return RS_OK;
}

/* ---- the object ----------------------------------------------------------------------------- */

static void lg_free_(rs_h5log *lg)
{
    if (!lg) return;
    for (size_t i = 0; lg->book_ids && i < lg->n_books; i++) free(lg->book_ids[i]);
    for (size_t i = 0; lg->policies && i < lg->n_runs; i++) free(lg->policies[i]);
    free(lg->book_ids);
    free(lg->policies);
    free(lg->windows);
    free(lg->book_len);
    free(lg->completed);
    free(lg);
}

static rs_status lg_alloc_(size_t n_books, size_t n_runs, rs_h5log **out)
{
    rs_h5log *lg = (rs_h5log *)calloc(1, sizeof *lg);
    if (lg) {
        lg->file = -1;
        lg->n_books = n_books;
        lg->n_runs = n_runs;
        lg->book_len = (uint64_t *)calloc(n_books + 1, sizeof(uint64_t));
        lg->completed = (int64_t *)calloc(n_books + 1, sizeof(int64_t));
        lg->book_ids = (char **)calloc(n_books + 1, sizeof(char *));
        lg->policies = (char **)calloc(n_runs + 1, sizeof(char *));
        lg->windows = (uint64_t *)calloc(n_runs + 1, sizeof(uint64_t));
    }
    if (!lg || !lg->book_len || !lg->completed || !lg->book_ids || !lg->policies || !lg->windows) {
        lg_free_(lg);
        return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    }
    *out = lg;
    return RS_OK;
}

static const char *k_ref_ds[3] = {"/reference/next_token", "/reference/nll", "/reference/top1"};
static const char *k_run_ds[4] = {"kl", "nll", "dp", "top1_agree"};

static int file_exists_(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static rs_status write_skeleton_(hid_t f, const rs_h5log_meta *m)
{
    rs_status st = RS_OK;
#define TRY_(x) do { if (st == RS_OK) st = (x); } while (0)
    TRY_(set_str_(f, "format", RS_H5LOG_FORMAT));
    TRY_(set_u64_(f, "format_version", RS_H5LOG_FORMAT_VERSION));
    TRY_(set_str_(f, "tool_version", m->tool_version));
    TRY_(set_str_(f, "git_commit", m->git_commit));
    TRY_(set_str_(f, "command_line", m->command_line));
    TRY_(set_str_(f, "model_path", m->model_path));
    TRY_(set_str_(f, "model_config_hash", m->model_config_hash));
    TRY_(set_str_(f, "model_type", m->model_type));
    TRY_(set_str_(f, "tokenizer", m->tokenizer));
    TRY_(set_str_(f, "data_path", m->data_path));
    TRY_(set_str_(f, "split", m->split));
    TRY_(set_str_(f, "short_books", m->short_books));
    TRY_(set_u64_(f, "tokens", m->tokens));
    TRY_(set_u64_(f, "chunk", m->chunk));
    TRY_(set_u64_(f, "n_books", m->n_books));
    TRY_(set_u64_(f, "n_runs", m->n_runs));
    TRY_(set_str_(f, "start_time", m->start_time));
    TRY_(set_str_(f, "end_time", ""));
    TRY_(set_str_(f, "status", "running"));
    TRY_(set_str_(f, "kl_definition", "KL(p_ref || p_run) = sum_i p_ref,i (log p_ref,i - log p_run,i), nats, double precision"));
    if (st != RS_OK) return st;
    {   /* book_ids as one comma-separated string too, for quick reading */
        size_t len = 1;
        for (size_t b = 0; b < m->n_books; b++) len += strlen(m->book_ids[b]) + 1;
        char *s = (char *)calloc(len, 1);
        if (!s) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
        for (size_t b = 0; b < m->n_books; b++) {
            if (b) strcat(s, ",");
            strcat(s, m->book_ids[b]);
        }
        st = set_str_(f, "book_ids", s);
        free(s);
        if (st != RS_OK) return st;
    }
    /* /windows */
    hid_t g = H5Gcreate2(f, "windows", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return h5fail_(RS_E_IO, "cannot create group /windows");
    {
        uint64_t lo[RS_KL_N_WINDOWS], hi[RS_KL_N_WINDOWS];
        for (size_t w = 0; w < RS_KL_N_WINDOWS; w++) {
            size_t a, b;
            rs_kl_window_bounds(w, &a, &b);
            lo[w] = a;
            hi[w] = b;
        }
        hsize_t d = RS_KL_N_WINDOWS;
        hid_t sp = H5Screate_simple(1, &d, NULL);
        hid_t d1 = H5Dcreate2(g, "start", H5T_NATIVE_UINT64, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t d2 = H5Dcreate2(g, "end", H5T_NATIVE_UINT64, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d1 < 0 || d2 < 0 || H5Dwrite(d1, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, lo) < 0 ||
            H5Dwrite(d2, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, hi) < 0)
            st = h5fail_(RS_E_IO, "cannot write /windows");
        if (st == RS_OK) st = set_str_(d1, "description", "first position of each summary window");
        if (st == RS_OK) st = set_str_(d2, "description", "end (exclusive) of each summary window");
        if (d1 >= 0) H5Dclose(d1);
        if (d2 >= 0) H5Dclose(d2);
        H5Sclose(sp);
    }
    H5Gclose(g);
    if (st != RS_OK) return st;
    /* /books */
    g = H5Gcreate2(f, "books", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return h5fail_(RS_E_IO, "cannot create group /books");
    {
        hsize_t d = m->n_books;
        hid_t sp = H5Screate_simple(1, &d, NULL);
        hid_t t = vlen_str_type_();
        hid_t di = H5Dcreate2(g, "id", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t dt = H5Dcreate2(g, "title", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t dl = H5Dcreate2(g, "length", H5T_NATIVE_UINT64, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (di < 0 || dt < 0 || dl < 0 ||
            H5Dwrite(di, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, m->book_ids) < 0 ||
            H5Dwrite(dt, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, m->book_titles) < 0 ||
            H5Dwrite(dl, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, m->book_len) < 0)
            st = h5fail_(RS_E_IO, "cannot write /books");
        if (st == RS_OK) st = set_str_(dl, "description", "positions evaluated in this book (<= tokens)");
        if (di >= 0) H5Dclose(di);
        if (dt >= 0) H5Dclose(dt);
        if (dl >= 0) H5Dclose(dl);
        H5Tclose(t);
        H5Sclose(sp);
        const int64_t zero = 0;
        if (st == RS_OK)
            st = make_small_ds_(g, "completed_positions", H5T_NATIVE_INT64, &zero, m->n_books,
                                "positions of this book written and committed; values past it are not valid");
    }
    H5Gclose(g);
    if (st != RS_OK) return st;
    /* /reference */
    const double nan = NAN;
    const int32_t m1 = -1;
    g = H5Gcreate2(f, "reference", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return h5fail_(RS_E_IO, "cannot create group /reference");
    TRY_(make_pos_ds_(g, "next_token", H5T_NATIVE_INT32, &m1, m->n_books, m->chunk,
                      "true next token y_t (the input at position t+1)", NULL));
    TRY_(make_pos_ds_(g, "nll", H5T_NATIVE_DOUBLE, &nan, m->n_books, m->chunk,
                      "-log p_ref(y_t) of the fp32 reference", "nats"));
    TRY_(make_pos_ds_(g, "top1", H5T_NATIVE_INT32, &m1, m->n_books, m->chunk,
                      "argmax of the reference distribution", NULL));
    TRY_(set_str_(g, "policy", "fp32"));
    H5Gclose(g);
    if (st != RS_OK) return st;
    /* /runs */
    g = H5Gcreate2(f, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return h5fail_(RS_E_IO, "cannot create group /runs");
    for (size_t r = 0; r < m->n_runs && st == RS_OK; r++) {
        char name[32];
        snprintf(name, sizeof name, "run%02zu", r);
        hid_t rg = H5Gcreate2(g, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (rg < 0) { st = h5fail_(RS_E_IO, "cannot create group /runs/%s", name); break; }
        const rs_h5log_run_info *ri = &m->runs[r];
        const uint8_t z = 0;
        const int64_t mone = -1;
        TRY_(set_str_(rg, "policy", ri->policy));
        TRY_(set_str_(rg, "mode", ri->mode));
        TRY_(set_str_(rg, "hp_format", ri->hp_format));
        TRY_(set_str_(rg, "lp_format", ri->lp_format));
        TRY_(set_u64_(rg, "window", ri->window));
        TRY_(set_u64_(rg, "seed", ri->seed));
        TRY_(set_u64_(rg, "index", r));
        TRY_(make_pos_ds_(rg, "kl", H5T_NATIVE_DOUBLE, &nan, m->n_books, m->chunk,
                          "KL(p_ref || p_run) at each position", "nats"));
        TRY_(make_pos_ds_(rg, "nll", H5T_NATIVE_DOUBLE, &nan, m->n_books, m->chunk,
                          "-log p_run(y_t)", "nats"));
        TRY_(make_pos_ds_(rg, "dp", H5T_NATIVE_DOUBLE, &nan, m->n_books, m->chunk,
                          "p_run(y_t) - p_ref(y_t)", NULL));
        TRY_(make_pos_ds_(rg, "top1_agree", H5T_NATIVE_UINT8, &z, m->n_books, m->chunk,
                          "1 if argmax p_run == argmax p_ref", NULL));
        TRY_(make_small_ds_(rg, "first_nonfinite_position", H5T_NATIVE_INT64, &mone, m->n_books,
                            "first position whose run logits were NaN/Inf (-1: none)"));
        TRY_(make_small_ds_(rg, "first_nonfinite_layer", H5T_NATIVE_INT32, &m1, m->n_books,
                            "model layer of the first non-finite SSM value (-1: none/unknown)"));
        TRY_(make_small_ds_(rg, "first_nonfinite_head", H5T_NATIVE_INT32, &m1, m->n_books,
                            "head of the first non-finite SSM value (-1: none/unknown)"));
        H5Gclose(rg);
    }
    H5Gclose(g);
#undef TRY_
    return st;
}

static rs_status lg_fill_from_meta_(rs_h5log *lg, const rs_h5log_meta *m)
{
    lg->tokens = m->tokens;
    lg->chunk = m->chunk;
    for (size_t b = 0; b < m->n_books; b++) {
        lg->book_len[b] = m->book_len[b];
        lg->book_ids[b] = strdup(m->book_ids[b]);
        if (!lg->book_ids[b]) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    }
    for (size_t r = 0; r < m->n_runs; r++) {
        lg->policies[r] = strdup(m->runs[r].policy);
        lg->windows[r] = m->runs[r].window;
        if (!lg->policies[r]) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    }
    return RS_OK;
}

static rs_status check_meta_(const rs_h5log_meta *m)
{
    /* n_runs == 0: a reference-only log (`kl --policy none`): /reference alone, /runs empty */
    RS_CHECK(m && m->n_books > 0 && m->book_ids && m->book_titles && m->book_len && (m->runs || m->n_runs == 0) &&
                 m->chunk > 0 && m->tokens > 0,
             RS_E_INVAL, "h5log: incomplete description (need books, run descriptions, chunk > 0, tokens > 0)");
    for (size_t b = 0; b < m->n_books; b++)
        RS_CHECK(m->book_ids[b] && m->book_titles[b] && m->book_len[b] <= m->tokens, RS_E_INVAL,
                 "h5log: book %zu: missing id/title or length %llu > tokens", b,
                 (unsigned long long)m->book_len[b]);
    for (size_t r = 0; r < m->n_runs; r++)
        RS_CHECK(m->runs[r].policy && m->runs[r].mode && m->runs[r].hp_format && m->runs[r].lp_format,
                 RS_E_INVAL, "h5log: run %zu: missing policy/mode/format", r);
    return RS_OK;
}

/* place: 0 = link (never replace), 1 = rename (replace), 2 = leave at the temporary path */
static rs_status create_(const char *path, const rs_h5log_meta *meta, int place, rs_h5log **out, char *tmp,
                         size_t tmpsize)
{
    RS_CHECK((size_t)snprintf(tmp, tmpsize, "%s.tmp.%ld", path, (long)getpid()) < tmpsize, RS_E_INVAL,
             "h5log: path too long");
    unlink(tmp); /* a leftover of this very pid can only be ours */
    rs_h5log *lg = NULL;
    RS_TRY(lg_alloc_(meta->n_books, meta->n_runs, &lg));
    rs_status st = lg_fill_from_meta_(lg, meta);
    if (st != RS_OK) { lg_free_(lg); return st; }
    /* larger chunk B-tree nodes (512 entries): fewer node splits while the log grows */
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_istore_k(fcpl, 256);
    errno = 0;
    hid_t f = H5Fcreate(tmp, H5F_ACC_EXCL, fcpl, H5P_DEFAULT);
    H5Pclose(fcpl);
    if (f < 0) {
        int err = errno;
        lg_free_(lg);
        return h5fail_(RS_E_IO, "cannot create %s (for %s): %s", tmp, path, err ? strerror(err) : "HDF5 error");
    }
    st = write_skeleton_(f, meta);
    if (st == RS_OK && H5Fflush(f, H5F_SCOPE_LOCAL) < 0) st = h5fail_(RS_E_IO, "cannot flush %s", tmp);
    if (st == RS_OK) {
        if (place == 1) {
            if (rename(tmp, path) != 0)
                st = rs_error_set(RS_E_IO, "cannot move %s to %s: %s", tmp, path, strerror(errno));
        } else if (place == 0) {
            if (link(tmp, path) != 0)
                st = rs_error_set(RS_E_IO, "cannot create %s: %s%s", path, strerror(errno),
                                  errno == EEXIST ? " (use --force to replace it or --resume to continue it)" : "");
            else
                unlink(tmp);
        }
    }
    if (st != RS_OK) {
        H5Fclose(f);
        unlink(tmp);
        lg_free_(lg);
        return st;
    }
    lg->file = f;
    lg->writable = 1;
    lg->width = 0;
    *out = lg;
    return RS_OK;
}

rs_status rs_h5log_create(const char *path, const rs_h5log_meta *meta, int force, rs_h5log **out)
{
    h5quiet_();
    RS_CHECK(path && path[0] && out, RS_E_INVAL, "h5log: NULL argument");
    *out = NULL;
    RS_TRY(check_meta_(meta));
    if (!force && file_exists_(path))
        return rs_error_set(RS_E_IO, "%s exists: use --force to replace it or --resume to continue it", path);
    char tmp[4096];
    return create_(path, meta, force ? 1 : 0, out, tmp, sizeof tmp);
}

/* configuration comparison for --resume */
static rs_status expect_str_(hid_t f, const char *name, const char *want, const char *path)
{
    char have[1024];
    RS_TRY(get_str_(f, name, have, sizeof have));
    RS_CHECK(!strcmp(have, want ? want : ""), RS_E_INVAL,
             "--resume: %s was written with %s = '%s', this command has '%s'", path, name, have,
             want ? want : "");
    return RS_OK;
}

static rs_status expect_u64_(hid_t f, const char *name, uint64_t want, const char *path)
{
    uint64_t have = 0;
    RS_TRY(get_u64_(f, name, &have));
    RS_CHECK(have == want, RS_E_INVAL, "--resume: %s was written with %s = %llu, this command has %llu", path,
             name, (unsigned long long)have, (unsigned long long)want);
    return RS_OK;
}

static rs_status read_vlen_strings_(hid_t file, const char *path, size_t n, char **out)
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d < 0) return h5fail_(RS_E_FORMAT, "dataset %s missing", path);
    hid_t t = vlen_str_type_();
    char **tmp = (char **)calloc(n ? n : 1, sizeof(char *));
    rs_status st = tmp ? RS_OK : rs_error_set(RS_E_NOMEM, "out of memory");
    if (st == RS_OK && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, tmp) < 0)
        st = h5fail_(RS_E_FORMAT, "cannot read %s", path);
    for (size_t i = 0; st == RS_OK && i < n; i++) {
        out[i] = strdup(tmp[i] ? tmp[i] : "");
        if (!out[i]) st = rs_error_set(RS_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; tmp && i < n; i++)
        if (tmp[i]) H5free_memory(tmp[i]);
    free(tmp);
    H5Tclose(t);
    H5Dclose(d);
    return st;
}

static rs_status open_(const char *path, int writable, const rs_h5log_meta *expect, rs_h5log **out)
{
    h5quiet_();
    RS_CHECK(path && out, RS_E_INVAL, "h5log: NULL argument");
    *out = NULL;
    if (!file_exists_(path)) return rs_error_set(RS_E_IO, "%s does not exist", path);
    if (H5Fis_hdf5(path) <= 0) return h5fail_(RS_E_FORMAT, "%s is not an HDF5 file", path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return h5fail_(RS_E_IO, "cannot open %s", path);
    char fmt[64] = "";
    uint64_t ver = 0, nb = 0, nr = 0, tokens = 0, chunk = 0;
    rs_status st = get_str_(f, "format", fmt, sizeof fmt);
    if (st != RS_OK || strcmp(fmt, RS_H5LOG_FORMAT) != 0)
        st = rs_error_set(RS_E_FORMAT, "%s is not a replayssm KL log (root attribute format != '%s')", path,
                          RS_H5LOG_FORMAT);
    if (st == RS_OK) st = get_u64_(f, "format_version", &ver);
    if (st == RS_OK && ver != RS_H5LOG_FORMAT_VERSION)
        st = rs_error_set(RS_E_FORMAT, "%s: log format version %llu, this build reads version %d", path,
                          (unsigned long long)ver, RS_H5LOG_FORMAT_VERSION);
    if (st == RS_OK) st = get_u64_(f, "n_books", &nb);
    if (st == RS_OK) st = get_u64_(f, "n_runs", &nr);
    if (st == RS_OK) st = get_u64_(f, "tokens", &tokens);
    if (st == RS_OK) st = get_u64_(f, "chunk", &chunk);
    if (st == RS_OK && (nb == 0 || chunk == 0))
        st = rs_error_set(RS_E_FORMAT, "%s: n_books and chunk must be positive", path);
    if (st == RS_OK && writable) {
        if (!expect) st = rs_error_set(RS_E_INVAL, "h5log: resume needs the expected configuration");
        if (st == RS_OK) st = check_meta_(expect);
        if (st == RS_OK) st = expect_str_(f, "model_config_hash", expect->model_config_hash, path);
        if (st == RS_OK) st = expect_str_(f, "model_type", expect->model_type, path);
        if (st == RS_OK) st = expect_str_(f, "tokenizer", expect->tokenizer, path);
        if (st == RS_OK) st = expect_str_(f, "split", expect->split, path);
        if (st == RS_OK) st = expect_str_(f, "short_books", expect->short_books, path);
        if (st == RS_OK) st = expect_u64_(f, "tokens", expect->tokens, path);
        if (st == RS_OK) st = expect_u64_(f, "chunk", expect->chunk, path);
        if (st == RS_OK) st = expect_u64_(f, "n_books", expect->n_books, path);
        if (st == RS_OK) st = expect_u64_(f, "n_runs", expect->n_runs, path);
    }
    rs_h5log *lg = NULL;
    if (st == RS_OK) st = lg_alloc_((size_t)nb, (size_t)nr, &lg);
    if (st == RS_OK) {
        lg->file = f;
        lg->writable = 0;
        lg->tokens = tokens;
        lg->chunk = chunk;
        st = read_vlen_strings_(f, "/books/id", lg->n_books, lg->book_ids);
    }
    if (st == RS_OK) {
        hid_t d = H5Dopen2(f, "/books/length", H5P_DEFAULT);
        if (d < 0 || H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, lg->book_len) < 0)
            st = h5fail_(RS_E_FORMAT, "%s: cannot read /books/length", path);
        if (d >= 0) H5Dclose(d);
    }
    if (st == RS_OK) {
        hid_t d = H5Dopen2(f, "/books/completed_positions", H5P_DEFAULT);
        if (d < 0 || H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, lg->completed) < 0)
            st = h5fail_(RS_E_FORMAT, "%s: cannot read /books/completed_positions", path);
        if (d >= 0) H5Dclose(d);
    }
    if (st == RS_OK) {
        hid_t d = H5Dopen2(f, "/reference/nll", H5P_DEFAULT);
        if (d < 0) st = h5fail_(RS_E_FORMAT, "%s: /reference/nll missing", path);
        else {
            hid_t s = H5Dget_space(d);
            hsize_t dims[2] = {0, 0};
            if (H5Sget_simple_extent_ndims(s) != 2 || H5Sget_simple_extent_dims(s, dims, NULL) < 0 || dims[0] != nb)
                st = rs_error_set(RS_E_FORMAT, "%s: /reference/nll is not [n_books, positions]", path);
            lg->width = dims[1];
            H5Sclose(s);
            H5Dclose(d);
        }
    }
    for (size_t b = 0; st == RS_OK && b < lg->n_books; b++)
        if (lg->completed[b] < 0 || (uint64_t)lg->completed[b] > lg->book_len[b] || lg->book_len[b] > tokens)
            st = rs_error_set(RS_E_FORMAT, "%s: book %zu: completed_positions %lld outside [0, length %llu]", path,
                              b, (long long)lg->completed[b], (unsigned long long)lg->book_len[b]);
    for (size_t r = 0; st == RS_OK && r < lg->n_runs; r++) {
        char grp[64], pol[256];
        snprintf(grp, sizeof grp, "/runs/run%02zu", r);
        hid_t g = H5Gopen2(f, grp, H5P_DEFAULT);
        if (g < 0) { st = h5fail_(RS_E_FORMAT, "%s: group %s missing", path, grp); break; }
        st = get_str_(g, "policy", pol, sizeof pol);
        if (st == RS_OK) st = get_u64_(g, "window", &lg->windows[r]);
        if (st == RS_OK) {
            lg->policies[r] = strdup(pol);
            if (!lg->policies[r]) st = rs_error_set(RS_E_NOMEM, "out of memory");
        }
        if (st == RS_OK && writable) {
            const rs_h5log_run_info *ri = &expect->runs[r];
            if (strcmp(pol, ri->policy) != 0)
                st = rs_error_set(RS_E_INVAL, "--resume: %s run %zu has policy '%s', this command has '%s'", path, r,
                                  pol, ri->policy);
            if (st == RS_OK) st = expect_u64_(g, "window", ri->window, grp);
            if (st == RS_OK) st = expect_u64_(g, "seed", ri->seed, grp);
        }
        H5Gclose(g);
    }
    for (size_t b = 0; st == RS_OK && writable && b < lg->n_books; b++) {
        if (strcmp(lg->book_ids[b], expect->book_ids[b]) != 0)
            st = rs_error_set(RS_E_INVAL, "--resume: %s book %zu is '%s', this command has '%s'", path, b,
                              lg->book_ids[b], expect->book_ids[b]);
        else if (lg->book_len[b] != expect->book_len[b])
            st = rs_error_set(RS_E_INVAL, "--resume: %s book %s has %llu positions, this command %llu", path,
                              lg->book_ids[b], (unsigned long long)lg->book_len[b],
                              (unsigned long long)expect->book_len[b]);
    }
    if (st != RS_OK) {
        if (lg) lg->file = -1;
        lg_free_(lg);
        H5Fclose(f);
        return st;
    }
    *out = lg;
    return RS_OK;
}

static rs_status copy_committed_(const rs_h5log *src, rs_h5log *dst);

rs_status rs_h5log_open(const char *path, int writable, const rs_h5log_meta *expect, rs_h5log **out)
{
    h5quiet_();
    RS_CHECK(path && out, RS_E_INVAL, "h5log: NULL argument");
    *out = NULL;
    rs_h5log *old = NULL;
    RS_TRY(open_(path, writable, expect, &old));
    if (!writable) {
        *out = old;
        return RS_OK;
    }
    /* --resume rebuilds the log: the committed positions are copied into a new file, which then
     * replaces the old one atomically. Whatever an interrupted writer left past the commit record
     * (chunks indexed but not committed, index nodes newer than the end-of-allocation mark) is
     * dropped, and the old file stays intact until the rename. */
    char first_start[64] = "", tmp[4096];
    get_str_(old->file, "start_time", first_start, sizeof first_start);
    rs_h5log *lg = NULL;
    rs_status st = create_(path, expect, 2, &lg, tmp, sizeof tmp);
    if (st == RS_OK) st = set_str_(lg->file, "first_start_time", first_start);
    if (st == RS_OK) st = copy_committed_(old, lg);
    if (st == RS_OK && rename(tmp, path) != 0)
        st = rs_error_set(RS_E_IO, "cannot move the rebuilt log %s to %s: %s", tmp, path, strerror(errno));
    rs_h5log_close(old);
    if (st != RS_OK) {
        if (lg) {
            H5Fclose(lg->file);
            lg->file = -1;
            lg_free_(lg);
            unlink(tmp);
        }
        return st;
    }
    *out = lg;
    return RS_OK;
}

static rs_status flush_(rs_h5log *lg)
{
    if (H5Fflush(lg->file, H5F_SCOPE_LOCAL) < 0) return h5fail_(RS_E_IO, "cannot flush the log");
    return RS_OK;
}

rs_status rs_h5log_write_chunk(rs_h5log *lg, size_t book, uint64_t pos, size_t n,
                               const int32_t *next_token, const double *nll_ref,
                               const int32_t *top1_ref, const rs_h5log_run_chunk *runs)
{
    h5quiet_();
    RS_CHECK(lg && lg->writable && next_token && nll_ref && top1_ref && (runs || lg->n_runs == 0), RS_E_INVAL,
             "h5log: NULL argument or read-only log");
    RS_CHECK(book < lg->n_books, RS_E_INVAL, "h5log: book %zu of %zu", book, lg->n_books);
    RS_CHECK(n >= 1 && n <= lg->chunk && pos % lg->chunk == 0 && pos + n <= lg->book_len[book] &&
                 (n == lg->chunk || pos + n == lg->book_len[book]) && pos <= (uint64_t)lg->completed[book],
             RS_E_INVAL,
             "h5log: book %zu: write of positions [%llu, %llu) breaks the chunk rule (chunk %llu, length %llu, "
             "completed %lld)",
             book, (unsigned long long)pos, (unsigned long long)(pos + n), (unsigned long long)lg->chunk,
             (unsigned long long)lg->book_len[book], (long long)lg->completed[book]);
    for (size_t r = 0; r < lg->n_runs; r++)
        RS_CHECK(runs[r].kl && runs[r].nll && runs[r].dp && runs[r].agree, RS_E_INVAL,
                 "h5log: run %zu: NULL values", r);
    /* 1. extents: per dataset, in write_at_ */
    if (pos + n > lg->width) lg->width = pos + n;
    /* 2. raw data, each HDF5 chunk whole */
    RS_TRY(write_at_(lg->file, k_ref_ds[0], H5T_NATIVE_INT32, 2, book, pos, n, next_token));
    RS_TRY(write_at_(lg->file, k_ref_ds[1], H5T_NATIVE_DOUBLE, 2, book, pos, n, nll_ref));
    RS_TRY(write_at_(lg->file, k_ref_ds[2], H5T_NATIVE_INT32, 2, book, pos, n, top1_ref));
    for (size_t r = 0; r < lg->n_runs; r++) {
        char p[64];
        const void *bufs[4] = {runs[r].kl, runs[r].nll, runs[r].dp, runs[r].agree};
        const hid_t types[4] = {H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, H5T_NATIVE_UINT8};
        for (int i = 0; i < 4; i++) {
            snprintf(p, sizeof p, "/runs/run%02zu/%s", r, k_run_ds[i]);
            RS_TRY(write_at_(lg->file, p, types[i], 2, book, pos, n, bufs[i]));
        }
    }
    /* 3. chunk index and extents on disk */
    RS_TRY(flush_(lg));
    /* 4. the commit record, then 5. flush it */
    const int64_t done = (int64_t)(pos + n);
    if (done > lg->completed[book]) {
        RS_TRY(write_at_(lg->file, "/books/completed_positions", H5T_NATIVE_INT64, 1, book, book, 1, &done));
        RS_TRY(flush_(lg));
        lg->completed[book] = done;
    }
    return RS_OK;
}

rs_status rs_h5log_set_nonfinite(rs_h5log *lg, size_t run, size_t book, int64_t pos, int32_t layer,
                                 int32_t head)
{
    h5quiet_();
    RS_CHECK(lg && lg->writable && run < lg->n_runs && book < lg->n_books, RS_E_INVAL,
             "h5log: bad run/book or read-only log");
    char p[80];
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_layer", run);
    RS_TRY(write_at_(lg->file, p, H5T_NATIVE_INT32, 1, book, book, 1, &layer));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_head", run);
    RS_TRY(write_at_(lg->file, p, H5T_NATIVE_INT32, 1, book, book, 1, &head));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_position", run);
    RS_TRY(write_at_(lg->file, p, H5T_NATIVE_INT64, 1, book, book, 1, &pos));
    return flush_(lg);
}

rs_status rs_h5log_get_nonfinite(const rs_h5log *lg, size_t run, size_t book, int64_t *pos,
                                 int32_t *layer, int32_t *head)
{
    h5quiet_();
    RS_CHECK(lg && pos && layer && head && run < lg->n_runs && book < lg->n_books, RS_E_INVAL,
             "h5log: bad argument");
    char p[80];
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_position", run);
    RS_TRY(read_at_(lg->file, p, H5T_NATIVE_INT64, 1, book, book, 1, pos));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_layer", run);
    RS_TRY(read_at_(lg->file, p, H5T_NATIVE_INT32, 1, book, book, 1, layer));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_head", run);
    return read_at_(lg->file, p, H5T_NATIVE_INT32, 1, book, book, 1, head);
}

rs_status rs_h5log_read_row(const rs_h5log *lg, long run, const char *name, size_t book, size_t n,
                            void *buf)
{
    h5quiet_();
    RS_CHECK(lg && name && (buf || n == 0) && book < lg->n_books, RS_E_INVAL, "h5log: bad argument");
    RS_CHECK(n <= (uint64_t)lg->completed[book], RS_E_INVAL,
             "h5log: book %zu has %lld committed positions, %zu asked", book, (long long)lg->completed[book], n);
    char p[80];
    hid_t type;
    if (run < 0) {
        RS_CHECK(!strcmp(name, "next_token") || !strcmp(name, "top1") || !strcmp(name, "nll"), RS_E_INVAL,
                 "h5log: no reference dataset '%s'", name);
        snprintf(p, sizeof p, "/reference/%s", name);
        type = strcmp(name, "nll") ? H5T_NATIVE_INT32 : H5T_NATIVE_DOUBLE;
    } else {
        RS_CHECK((size_t)run < lg->n_runs, RS_E_INVAL, "h5log: run %ld of %zu", run, lg->n_runs);
        RS_CHECK(!strcmp(name, "kl") || !strcmp(name, "nll") || !strcmp(name, "dp") || !strcmp(name, "top1_agree"),
                 RS_E_INVAL, "h5log: no run dataset '%s'", name);
        snprintf(p, sizeof p, "/runs/run%02ld/%s", run, name);
        type = strcmp(name, "top1_agree") ? H5T_NATIVE_DOUBLE : H5T_NATIVE_UINT8;
    }
    return read_at_(lg->file, p, type, 2, book, 0, n, buf);
}

rs_status rs_h5log_summarize(const rs_h5log *lg, size_t run, rs_kl_summary *out)
{
    RS_CHECK(lg && out && run < lg->n_runs, RS_E_INVAL, "h5log: bad argument");
    size_t maxn = 1;
    for (size_t b = 0; b < lg->n_books; b++)
        if ((size_t)lg->completed[b] > maxn) maxn = (size_t)lg->completed[b];
    double *kl = (double *)malloc(maxn * sizeof(double)), *dp = (double *)malloc(maxn * sizeof(double));
    double *nr = (double *)malloc(maxn * sizeof(double)), *nq = (double *)malloc(maxn * sizeof(double));
    uint8_t *ag = (uint8_t *)malloc(maxn);
    rs_kl_acc acc;
    memset(&acc, 0, sizeof acc);
    rs_status st = (kl && dp && nr && nq && ag) ? RS_OK : rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    for (size_t b = 0; st == RS_OK && b < lg->n_books; b++) {
        const size_t n = (size_t)lg->completed[b];
        if (n == 0) continue;
        st = rs_h5log_read_row(lg, (long)run, "kl", b, n, kl);
        if (st == RS_OK) st = rs_h5log_read_row(lg, (long)run, "dp", b, n, dp);
        if (st == RS_OK) st = rs_h5log_read_row(lg, (long)run, "nll", b, n, nq);
        if (st == RS_OK) st = rs_h5log_read_row(lg, (long)run, "top1_agree", b, n, ag);
        if (st == RS_OK) st = rs_h5log_read_row(lg, -1, "nll", b, n, nr);
        if (st == RS_OK) st = rs_kl_acc_add(&acc, 0, n, kl, dp, ag, nr, nq);
    }
    if (st == RS_OK) st = rs_kl_acc_finish(&acc, out);
    rs_kl_acc_free(&acc);
    free(kl);
    free(dp);
    free(nr);
    free(nq);
    free(ag);
    return st;
}

rs_status rs_h5log_reference_summary(const rs_h5log *lg, rs_h5log_ref_summary *out)
{
    h5quiet_();
    RS_CHECK(lg && out, RS_E_INVAL, "h5log: bad argument");
    memset(out, 0, sizeof *out);
    double sum = 0, wsum[RS_KL_N_WINDOWS] = {0};
    for (size_t b = 0; b < lg->n_books; b++) {
        const size_t n = (size_t)lg->completed[b];
        if (n == 0) continue;
        double *v = (double *)malloc(n * sizeof(double));
        if (!v) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
        const rs_status st = rs_h5log_read_row(lg, -1, "nll", b, n, v);
        if (st != RS_OK) {
            free(v);
            return st;
        }
        for (size_t t = 0; t < n; t++) {
            const size_t w = rs_kl_window_of(t);
            sum += v[t];
            wsum[w] += v[t];
            out->window_n[w]++;
        }
        out->n += n;
        free(v);
    }
    out->mean_nll = out->n ? sum / (double)out->n : NAN;
    for (size_t w = 0; w < RS_KL_N_WINDOWS; w++)
        out->window_mean_nll[w] = out->window_n[w] ? wsum[w] / (double)out->window_n[w] : NAN;
    return RS_OK;
}

rs_status rs_h5log_finish(rs_h5log *lg, const char *end_time, const rs_kl_summary *s)
{
    h5quiet_();
    RS_CHECK(lg && lg->writable && (s || lg->n_runs == 0), RS_E_INVAL, "h5log: bad argument");
    rs_status st = RS_OK;
    for (size_t r = 0; r < lg->n_runs && st == RS_OK; r++) {
        char grp[64];
        snprintf(grp, sizeof grp, "/runs/run%02zu", r);
        hid_t g = H5Gopen2(lg->file, grp, H5P_DEFAULT);
        if (g < 0) return h5fail_(RS_E_FORMAT, "group %s missing", grp);
        const rs_kl_summary *x = &s[r];
        const double vals[] = {x->mean_kl, x->mean_kl_se, x->median_kl, x->p90_kl, x->p99_kl, x->p999_kl,
                               x->max_kl, x->min_kl, x->rms_dp, x->mean_dp, x->same_top1_pct,
                               x->same_top1_se_pct, x->mean_nll_ref, x->mean_nll_run};
        const char *names[] = {"mean_kl", "mean_kl_se", "median_kl", "p90_kl", "p99_kl", "p999_kl", "max_kl",
                               "min_kl", "rms_dp", "mean_dp", "same_top1_pct", "same_top1_se_pct",
                               "mean_nll_ref", "mean_nll_run"};
        for (size_t i = 0; i < sizeof vals / sizeof vals[0] && st == RS_OK; i++) {
            char an[64];
            snprintf(an, sizeof an, "summary_%s", names[i]);
            st = set_f64v_(g, an, &vals[i], 1);
        }
        if (st == RS_OK) st = set_u64_(g, "summary_n", x->n);
        if (st == RS_OK) st = set_u64_(g, "summary_n_nonfinite", x->n_nonfinite);
        if (st == RS_OK) st = set_f64v_(g, "summary_window_mean_kl", x->window_mean_kl, RS_KL_N_WINDOWS);
        H5Gclose(g);
    }
    if (st == RS_OK) st = set_str_(lg->file, "end_time", end_time);
    if (st == RS_OK) st = set_str_(lg->file, "status", "complete");
    if (st == RS_OK) st = flush_(lg);
    return st;
}

rs_status rs_h5log_get_attr_string(const rs_h5log *lg, const char *obj, const char *name, char *buf,
                                   size_t bufsize)
{
    h5quiet_();
    RS_CHECK(lg && obj && name && buf && bufsize, RS_E_INVAL, "h5log: bad argument");
    hid_t o = H5Oopen(lg->file, obj, H5P_DEFAULT);
    if (o < 0) return h5fail_(RS_E_FORMAT, "object %s missing", obj);
    rs_status st = get_str_(o, name, buf, bufsize);
    H5Oclose(o);
    return st;
}

static rs_status copy_committed_(const rs_h5log *src, rs_h5log *dst)
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

rs_status rs_h5log_close(rs_h5log *lg)
{
    h5quiet_();
    if (!lg) return RS_OK;
    rs_status st = RS_OK;
    if (lg->file >= 0 && H5Fclose(lg->file) < 0) st = h5fail_(RS_E_IO, "cannot close the log");
    lg->file = -1;
    lg_free_(lg);
    return st;
}

size_t rs_h5log_n_books(const rs_h5log *lg) { return lg->n_books; }
size_t rs_h5log_n_runs(const rs_h5log *lg) { return lg->n_runs; }
uint64_t rs_h5log_tokens(const rs_h5log *lg) { return lg->tokens; }
uint64_t rs_h5log_chunk(const rs_h5log *lg) { return lg->chunk; }
const char *rs_h5log_book_id(const rs_h5log *lg, size_t book) { return lg->book_ids[book]; }
uint64_t rs_h5log_book_len(const rs_h5log *lg, size_t book) { return lg->book_len[book]; }
int64_t rs_h5log_completed(const rs_h5log *lg, size_t book) { return lg->completed[book]; }
const char *rs_h5log_policy(const rs_h5log *lg, size_t run) { return lg->policies[run]; }
uint64_t rs_h5log_window(const rs_h5log *lg, size_t run) { return lg->windows[run]; }

void rs_h5log_no_atexit(void) { H5dont_atexit(); }
