/* rs_h5file.c — the opaque result-file writer (see rs_h5file.h), on the eval layer's HDF5
 * helpers (rs_h5attr.h) and output placement rules (rs_h5place.h). */
#include "replayssm/eval/rs_h5file.h"
#include "rs_check.h"
#include "rs_h5attr.h"
#include "rs_h5place.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rs_h5file {
    hid_t file, lcpl;
    int force;
    char *path, *tmp;
    rs_status err;   /* the first failure (sticky) */
    char msg[1024];  /* its message, restored by rs_h5file_close */
};

static const char *k_exists = "; pass --force to overwrite it";

/* record a failure (the first one wins) and return the sticky status */
static rs_status keep_(rs_h5file *f, rs_status st)
{
    if (st != RS_OK && f->err == RS_OK) {
        f->err = st;
        snprintf(f->msg, sizeof f->msg, "%s", rs_last_error());
    }
    return f->err;
}

static rs_status usable_(rs_h5file *f)
{
    if (!f) return rs_error_set(RS_E_INVAL, "h5file: NULL handle");
    rs_h5_quiet();
    if (f->err != RS_OK) rs_error_set(f->err, "%s", f->msg);
    return f->err;
}

rs_status rs_h5file_create(const char *path, int force, rs_h5file **out)
{
    rs_h5_quiet();
    RS_CHECK(path && path[0] && out, RS_E_INVAL, "h5file: NULL argument");
    *out = NULL;
    int exists = 0;
    RS_TRY(rs_h5_target_state(path, &exists));
    RS_CHECK(!exists || force, RS_E_IO, "%s exists%s", path, k_exists);
    char tmp[4096];
    RS_TRY(rs_h5_temp_name(path, tmp, sizeof tmp));
    rs_h5_clean_stale(path);
    rs_h5file *f = (rs_h5file *)calloc(1, sizeof *f);
    if (f) {
        f->file = f->lcpl = -1;
        f->force = force;
        f->path = strdup(path);
        f->tmp = strdup(tmp);
    }
    if (!f || !f->path || !f->tmp) {
        if (f) free(f->path), free(f->tmp);
        free(f);
        return rs_error_set(RS_E_NOMEM, "h5file: out of memory");
    }
    unlink(tmp); /* a leftover of this very pid can only be ours */
    errno = 0;
    f->file = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    const int err = errno;
    f->lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (f->file < 0 || f->lcpl < 0 || H5Pset_create_intermediate_group(f->lcpl, 1) < 0) {
        rs_status st = rs_h5_fail(RS_E_IO, "cannot create %s (for %s): %s", tmp, path, err ? strerror(err) : "HDF5 error");
        rs_h5file_discard(f);
        return st;
    }
    *out = f;
    return RS_OK;
}

/* the object at path, opened; a missing one created as a group when make_group */
static hid_t open_obj_(rs_h5file *f, const char *path, int make_group)
{
    hid_t o = H5Oopen(f->file, path, H5P_DEFAULT);
    if (o < 0 && make_group) {
        H5Eclear2(H5E_DEFAULT);
        o = H5Gcreate2(f->file, path, f->lcpl, H5P_DEFAULT, H5P_DEFAULT);
    }
    if (o < 0) rs_h5_fail(RS_E_IO, "cannot open or create %s in %s", path, f->path);
    return o;
}

rs_status rs_h5file_group(rs_h5file *f, const char *path)
{
    RS_TRY(usable_(f));
    if (!path) return keep_(f, rs_error_set(RS_E_INVAL, "h5file: NULL group path"));
    hid_t o = open_obj_(f, path, 1);
    if (o < 0) return keep_(f, RS_E_IO);
    return keep_(f, H5Oclose(o) < 0 ? rs_h5_fail(RS_E_IO, "cannot close %s", path) : RS_OK);
}

typedef enum { A_STR, A_U64, A_I64, A_F64 } attr_kind;

static rs_status attr_(rs_h5file *f, const char *obj, const char *name, attr_kind k, const char *s, uint64_t u,
                       int64_t i, double d)
{
    RS_TRY(usable_(f));
    if (!obj || !name || (k == A_STR && !s)) return keep_(f, rs_error_set(RS_E_INVAL, "h5file: NULL attribute argument"));
    hid_t o = open_obj_(f, obj, 1);
    if (o < 0) return keep_(f, RS_E_IO);
    rs_status st = k == A_STR   ? rs_h5_attr_set_fixed_str(o, name, s)
                   : k == A_U64 ? rs_h5_attr_set_u64(o, name, u)
                   : k == A_I64 ? rs_h5_attr_set_i64(o, name, i)
                                : rs_h5_attr_set_f64(o, name, d);
    if (H5Oclose(o) < 0 && st == RS_OK) st = rs_h5_fail(RS_E_IO, "cannot close %s", obj);
    if (st != RS_OK) rs_error_set(st, "%s: %s: %s", f->path, obj, rs_last_error());
    return keep_(f, st);
}

rs_status rs_h5file_attr_str(rs_h5file *f, const char *obj, const char *name, const char *v) { return attr_(f, obj, name, A_STR, v, 0, 0, 0); }
rs_status rs_h5file_attr_u64(rs_h5file *f, const char *obj, const char *name, uint64_t v) { return attr_(f, obj, name, A_U64, NULL, v, 0, 0); }
rs_status rs_h5file_attr_i64(rs_h5file *f, const char *obj, const char *name, int64_t v) { return attr_(f, obj, name, A_I64, NULL, 0, v, 0); }
rs_status rs_h5file_attr_f64(rs_h5file *f, const char *obj, const char *name, double v) { return attr_(f, obj, name, A_F64, NULL, 0, 0, v); }

static rs_status write_(rs_h5file *f, const char *path, int rank, const size_t *dims, hid_t type, const void *data)
{
    RS_TRY(usable_(f));
    if (!path || !dims || !data || rank < 1 || rank > 8)
        return keep_(f, rs_error_set(RS_E_INVAL, "h5file: dataset %s: bad argument (rank %d)", path ? path : "(null)", rank));
    hsize_t hd[8];
    for (int r = 0; r < rank; r++) hd[r] = dims[r];
    rs_status st = rs_h5_ds_create_write(f->file, path, f->lcpl, type, rank, hd, data);
    if (st != RS_OK) rs_error_set(st, "%s: %s", f->path, rs_last_error());
    return keep_(f, st);
}

rs_status rs_h5file_write_f64(rs_h5file *f, const char *p, int rank, const size_t *d, const double *v) { return write_(f, p, rank, d, H5T_NATIVE_DOUBLE, v); }
rs_status rs_h5file_write_f32(rs_h5file *f, const char *p, int rank, const size_t *d, const float *v) { return write_(f, p, rank, d, H5T_NATIVE_FLOAT, v); }
rs_status rs_h5file_write_i64(rs_h5file *f, const char *p, int rank, const size_t *d, const int64_t *v) { return write_(f, p, rank, d, H5T_NATIVE_INT64, v); }
rs_status rs_h5file_write_i32(rs_h5file *f, const char *p, int rank, const size_t *d, const int32_t *v) { return write_(f, p, rank, d, H5T_NATIVE_INT32, v); }
rs_status rs_h5file_write_u8(rs_h5file *f, const char *p, int rank, const size_t *d, const uint8_t *v) { return write_(f, p, rank, d, H5T_NATIVE_UINT8, v); }

rs_status rs_h5file_write_str(rs_h5file *f, const char *path, size_t n, size_t width, const char *data)
{
    RS_TRY(usable_(f));
    if (width == 0) return keep_(f, rs_error_set(RS_E_INVAL, "h5file: dataset %s: string width 0", path ? path : "(null)"));
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0 || H5Tset_size(t, width) < 0) {
        if (t >= 0) H5Tclose(t);
        return keep_(f, rs_h5_fail(RS_E_IO, "h5file: cannot make a %zu-byte string type", width));
    }
    const size_t dims[1] = {n};
    rs_status st = write_(f, path, 1, dims, t, data);
    H5Tclose(t);
    return st;
}

/* ---- tables ---- */

static size_t col_bytes_(const rs_h5file_column *c)
{
    return c->kind == RS_H5FILE_COL_F64 ? sizeof(double) : c->kind == RS_H5FILE_COL_I32 ? sizeof(int32_t) : c->width;
}

/* every argument, column and string checked before anything is written */
static rs_status table_check_(const char *group, const void *rows, size_t n, size_t row_size,
                              const rs_h5file_column *cols, size_t ncols)
{
    RS_CHECK(group && group[0] && cols && ncols > 0 && row_size > 0 && (rows || n == 0), RS_E_INVAL,
             "h5file: table %s: NULL or empty argument", group ? group : "(null)");
    for (size_t j = 0; j < ncols; j++) {
        const rs_h5file_column *c = &cols[j];
        RS_CHECK(c->name && c->name[0] && !strchr(c->name, '/'), RS_E_INVAL,
                 "h5file: table %s: column %zu: the name must be non-empty and without '/'", group, j);
        for (size_t k = 0; k < j; k++)
            RS_CHECK(strcmp(cols[k].name, c->name), RS_E_INVAL, "h5file: table %s: column %s twice", group, c->name);
        RS_CHECK(c->kind == RS_H5FILE_COL_F64 || c->kind == RS_H5FILE_COL_I32 || c->kind == RS_H5FILE_COL_STR,
                 RS_E_INVAL, "h5file: table %s: column %s: unknown kind %d", group, c->name, (int)c->kind);
        RS_CHECK(c->kind != RS_H5FILE_COL_STR || c->width > 0, RS_E_INVAL, "h5file: table %s: column %s: string width 0",
                 group, c->name);
        RS_CHECK(c->offset <= row_size && col_bytes_(c) <= row_size - c->offset, RS_E_INVAL,
                 "h5file: table %s: column %s: %zu bytes at offset %zu lie outside a %zu-byte row", group, c->name,
                 col_bytes_(c), c->offset, row_size);
        if (c->kind != RS_H5FILE_COL_STR) continue;
        for (size_t i = 0; i < n; i++)
            RS_CHECK(memchr((const char *)rows + i * row_size + c->offset, 0, c->width), RS_E_INVAL,
                     "h5file: table %s: column %s, row %zu: the string fills its %zu bytes (at most %zu characters "
                     "and a NUL)", group, c->name, i, c->width, c->width - 1);
    }
    return RS_OK;
}

/* one column: the field of every row gathered into a contiguous array, written, its units set */
static rs_status table_column_(rs_h5file *f, const char *path, const rs_h5file_column *c, const char *rows, size_t n,
                               size_t row_size)
{
    const size_t esz = col_bytes_(c);
    char *buf = (char *)calloc(n ? n : 1, esz);
    if (!buf) return keep_(f, rs_error_set(RS_E_NOMEM, "h5file: out of memory for column %s (%zu rows)", path, n));
    for (size_t i = 0; i < n; i++) {
        const char *src = rows + i * row_size + c->offset;
        /* a string up to its NUL, the rest of the field left zero (no stray bytes in the file) */
        memcpy(buf + i * esz, src, c->kind == RS_H5FILE_COL_STR ? strnlen(src, esz) : esz);
    }
    const size_t dims[1] = {n};
    rs_status st = c->kind == RS_H5FILE_COL_STR   ? rs_h5file_write_str(f, path, n, c->width, buf)
                   : c->kind == RS_H5FILE_COL_I32 ? rs_h5file_write_i32(f, path, 1, dims, (const int32_t *)(const void *)buf)
                                                  : rs_h5file_write_f64(f, path, 1, dims, (const double *)(const void *)buf);
    free(buf);
    if (st == RS_OK && c->units) st = rs_h5file_attr_str(f, path, "units", c->units);
    return st;
}

rs_status rs_h5file_write_table(rs_h5file *f, const char *group, const void *rows, size_t n, size_t row_size,
                                const rs_h5file_column *cols, size_t ncols)
{
    RS_TRY(usable_(f));
    rs_status st = table_check_(group, rows, n, row_size, cols, ncols);
    if (st != RS_OK) return keep_(f, st);
    hid_t g = H5Oopen(f->file, group, H5P_DEFAULT);
    if (g >= 0) {
        H5Oclose(g);
        return keep_(f, rs_error_set(RS_E_IO, "%s: %s exists (a table is written into a new group)", f->path, group));
    }
    H5Eclear2(H5E_DEFAULT);
    g = H5Gcreate2(f->file, group, f->lcpl, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return keep_(f, rs_h5_fail(RS_E_IO, "%s: cannot create group %s", f->path, group));
    if (H5Gclose(g) < 0) return keep_(f, rs_h5_fail(RS_E_IO, "%s: cannot close group %s", f->path, group));
    size_t longest = 0;
    for (size_t j = 0; j < ncols; j++) longest = strlen(cols[j].name) > longest ? strlen(cols[j].name) : longest;
    const size_t glen = strlen(group), cap = glen + longest + 2;
    char *path = (char *)malloc(cap);
    if (!path) return keep_(f, rs_error_set(RS_E_NOMEM, "h5file: out of memory for table %s", group));
    const char *sep = group[glen - 1] == '/' ? "" : "/";
    for (size_t j = 0; st == RS_OK && j < ncols; j++) {
        snprintf(path, cap, "%s%s%s", group, sep, cols[j].name);
        st = table_column_(f, path, &cols[j], (const char *)rows, n, row_size);
    }
    free(path);
    return st;
}

rs_status rs_h5file_status(const rs_h5file *f) { return f ? f->err : RS_E_INVAL; }

static void free_(rs_h5file *f)
{
    free(f->path);
    free(f->tmp);
    free(f);
}

rs_status rs_h5file_close(rs_h5file *f)
{
    if (!f) return RS_OK;
    rs_h5_quiet();
    if (f->lcpl >= 0) H5Pclose(f->lcpl);
    f->lcpl = -1;
    if (f->file >= 0 && H5Fclose(f->file) < 0) keep_(f, rs_h5_fail(RS_E_IO, "cannot close %s", f->tmp));
    f->file = -1;
    if (f->err == RS_OK) keep_(f, rs_h5_place(f->tmp, f->path, f->force, k_exists));
    const rs_status st = f->err;
    if (st != RS_OK) {
        unlink(f->tmp); /* nothing half-written is ever left, at either name */
        rs_error_set(st, "%s", f->msg);
    }
    free_(f);
    return st;
}

void rs_h5file_discard(rs_h5file *f)
{
    if (!f) return;
    rs_h5_quiet();
    if (f->lcpl >= 0) H5Pclose(f->lcpl);
    if (f->file >= 0) H5Fclose(f->file);
    if (f->tmp) unlink(f->tmp);
    free_(f);
}

void rs_h5file_no_atexit(void) { H5dont_atexit(); }
