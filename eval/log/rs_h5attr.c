/* rs_h5attr.c — hid_t-level HDF5 helpers of the eval layer (see rs_h5attr.h): errors, types,
 * attributes. The dataset helpers are rs_h5attr_ds.c. */
#include "rs_h5attr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------------------------- */

void rs_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static herr_t walk_cb_(unsigned n, const H5E_error2_t *e, void *data)
{
    char *buf = (char *)data;
    (void)n;
    if (!buf[0] && e && e->desc && e->desc[0]) { /* the first one walking upward: the innermost */
        snprintf(buf, 200, "%s", e->desc);
        for (char *p = buf; *p; p++)
            if (*p == '\n') *p = ' ';
    }
    return 0;
}

rs_status rs_h5_fail(rs_status code, const char *fmt, ...)
{
    char what[768], desc[200] = "";
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

/* ---- types -------------------------------------------------------------------------------- */

hid_t rs_h5_vlen_str_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    if (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

/* ---- attributes: writing ------------------------------------------------------------------ */

static rs_status attr_write_(hid_t obj, const char *name, hid_t type, hid_t space, const void *buf)
{
    if (type < 0 || space < 0) return rs_h5_fail(RS_E_IO, "cannot make the type of attribute %s", name);
    const htri_t ex = H5Aexists(obj, name);
    if (ex < 0) return rs_h5_fail(RS_E_IO, "cannot look up attribute %s", name);
    if (ex > 0 && H5Adelete(obj, name) < 0) return rs_h5_fail(RS_E_IO, "cannot replace attribute %s", name);
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) return rs_h5_fail(RS_E_IO, "cannot create attribute %s", name);
    if (H5Awrite(a, type, buf) < 0) { /* the cause before H5Aclose clears HDF5's error stack */
        const rs_status st = rs_h5_fail(RS_E_IO, "cannot write attribute %s", name);
        H5Aclose(a);
        return st;
    }
    if (H5Aclose(a) < 0) return rs_h5_fail(RS_E_IO, "cannot write attribute %s", name);
    return RS_OK;
}

static rs_status attr_scalar_(hid_t obj, const char *name, hid_t type, const void *buf)
{
    hid_t s = H5Screate(H5S_SCALAR);
    rs_status st = attr_write_(obj, name, type, s, buf);
    if (s >= 0) H5Sclose(s);
    return st;
}

rs_status rs_h5_attr_set_str(hid_t obj, const char *name, const char *val)
{
    hid_t t = rs_h5_vlen_str_type();
    const char *v = val ? val : "";
    rs_status st = attr_scalar_(obj, name, t, &v);
    if (t >= 0) H5Tclose(t);
    return st;
}

rs_status rs_h5_attr_set_fixed_str(hid_t obj, const char *name, const char *val)
{
    const char *v = val ? val : "";
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && H5Tset_size(t, strlen(v) + 1) < 0) {
        H5Tclose(t);
        t = -1;
    }
    rs_status st = attr_scalar_(obj, name, t, v);
    if (t >= 0) H5Tclose(t);
    return st;
}

rs_status rs_h5_attr_set_u64(hid_t obj, const char *name, uint64_t v) { return attr_scalar_(obj, name, H5T_NATIVE_UINT64, &v); }
rs_status rs_h5_attr_set_i64(hid_t obj, const char *name, int64_t v) { return attr_scalar_(obj, name, H5T_NATIVE_INT64, &v); }
rs_status rs_h5_attr_set_f64(hid_t obj, const char *name, double v) { return attr_scalar_(obj, name, H5T_NATIVE_DOUBLE, &v); }

rs_status rs_h5_attr_set_f64v(hid_t obj, const char *name, const double *v, size_t n)
{
    if (n == 1) return rs_h5_attr_set_f64(obj, name, v[0]);
    hsize_t d = n;
    hid_t s = H5Screate_simple(1, &d, NULL);
    rs_status st = attr_write_(obj, name, H5T_NATIVE_DOUBLE, s, v);
    if (s >= 0) H5Sclose(s);
    return st;
}

/* ---- attributes: reading ------------------------------------------------------------------ */

/* open `name` and its file type; refuse anything but one element */
static rs_status attr_open_one_(hid_t obj, const char *name, hid_t *a, hid_t *ft)
{
    *a = *ft = -1;
    const htri_t ex = H5Aexists(obj, name);
    if (ex <= 0) return rs_h5_fail(RS_E_FORMAT, "attribute %s missing", name);
    *a = H5Aopen(obj, name, H5P_DEFAULT);
    if (*a < 0) return rs_h5_fail(RS_E_FORMAT, "attribute %s cannot be opened", name);
    hid_t sp = H5Aget_space(*a);
    const hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (sp >= 0) H5Sclose(sp);
    *ft = H5Aget_type(*a);
    if (np != 1 || *ft < 0) {
        if (*ft >= 0) H5Tclose(*ft);
        H5Aclose(*a);
        *a = *ft = -1;
        H5Eclear2(H5E_DEFAULT);
        return rs_error_set(RS_E_FORMAT, "attribute %s must hold one value, not %lld", name, (long long)np);
    }
    return RS_OK;
}

static void attr_close_(hid_t a, hid_t ft)
{
    if (ft >= 0) H5Tclose(ft);
    if (a >= 0) H5Aclose(a);
}

rs_status rs_h5_attr_get_str(hid_t obj, const char *name, char *buf, size_t bufsize)
{
    if (!buf || !bufsize) return rs_error_set(RS_E_INVAL, "attribute %s: no buffer", name);
    buf[0] = '\0';
    hid_t a, ft;
    rs_status st = attr_open_one_(obj, name, &a, &ft);
    if (st != RS_OK) return st;
    const H5T_cset_t cset = H5Tget_cset(ft);
    if (H5Tget_class(ft) != H5T_STRING || cset < 0) {
        st = rs_error_set(RS_E_FORMAT, "attribute %s is not a string", name);
    } else if (H5Tis_variable_str(ft) > 0) {
        hid_t t = H5Tcopy(H5T_C_S1);
        char *v = NULL;
        if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, cset) < 0 || H5Aread(a, t, &v) < 0)
            st = rs_h5_fail(RS_E_FORMAT, "cannot read attribute %s", name);
        else snprintf(buf, bufsize, "%s", v ? v : "");
        if (v) H5free_memory(v);
        if (t >= 0) H5Tclose(t);
    } else {
        const size_t sz = H5Tget_size(ft);
        if (sz == 0 || sz > RS_H5_MAX_STRING) {
            st = rs_error_set(RS_E_FORMAT, "attribute %s: string size %zu outside [1, %u]", name, sz, RS_H5_MAX_STRING);
        } else {
            char *tmp = (char *)calloc(sz + 1, 1);
            hid_t t = H5Tcopy(H5T_C_S1);
            if (!tmp) st = rs_error_set(RS_E_NOMEM, "attribute %s: out of memory", name);
            else if (t < 0 || H5Tset_size(t, sz + 1) < 0 || H5Tset_cset(t, cset) < 0 || H5Aread(a, t, tmp) < 0)
                st = rs_h5_fail(RS_E_FORMAT, "cannot read attribute %s", name);
            else snprintf(buf, bufsize, "%s", tmp);
            free(tmp);
            if (t >= 0) H5Tclose(t);
        }
    }
    attr_close_(a, ft);
    return st;
}

/* an integer attribute: *is_signed tells which of *u / *s holds it */
static rs_status attr_get_int_(hid_t obj, const char *name, uint64_t *u, int64_t *s, int *is_signed)
{
    hid_t a, ft;
    rs_status st = attr_open_one_(obj, name, &a, &ft);
    if (st != RS_OK) return st;
    const size_t sz = H5Tget_size(ft);
    const H5T_sign_t sign = H5Tget_sign(ft);
    if (H5Tget_class(ft) != H5T_INTEGER || sz == 0 || sz > 8 || sign < 0) {
        st = rs_error_set(RS_E_FORMAT, "attribute %s is not an integer of at most 64 bits", name);
    } else {
        *is_signed = sign == H5T_SGN_2;
        if (H5Aread(a, *is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64, *is_signed ? (void *)s : (void *)u) < 0)
            st = rs_h5_fail(RS_E_FORMAT, "cannot read attribute %s", name);
    }
    attr_close_(a, ft);
    return st;
}

rs_status rs_h5_attr_get_u64(hid_t obj, const char *name, uint64_t *v)
{
    uint64_t u = 0;
    int64_t s = 0;
    int sg = 0;
    rs_status st = attr_get_int_(obj, name, &u, &s, &sg);
    if (st != RS_OK) return st;
    if (sg && s < 0) return rs_error_set(RS_E_FORMAT, "attribute %s is negative (%lld)", name, (long long)s);
    *v = sg ? (uint64_t)s : u;
    return RS_OK;
}

rs_status rs_h5_attr_get_i64(hid_t obj, const char *name, int64_t *v)
{
    uint64_t u = 0;
    int64_t s = 0;
    int sg = 0;
    rs_status st = attr_get_int_(obj, name, &u, &s, &sg);
    if (st != RS_OK) return st;
    if (!sg && u > (uint64_t)INT64_MAX)
        return rs_error_set(RS_E_FORMAT, "attribute %s (%llu) does not fit int64", name, (unsigned long long)u);
    *v = sg ? s : (int64_t)u;
    return RS_OK;
}

rs_status rs_h5_attr_get_f64(hid_t obj, const char *name, double *v)
{
    hid_t a, ft;
    rs_status st = attr_open_one_(obj, name, &a, &ft);
    if (st != RS_OK) return st;
    const H5T_class_t c = H5Tget_class(ft);
    if ((c != H5T_FLOAT && c != H5T_INTEGER) || H5Tget_size(ft) > 16) st = rs_error_set(RS_E_FORMAT, "attribute %s is not a number", name);
    else if (H5Aread(a, H5T_NATIVE_DOUBLE, v) < 0) st = rs_h5_fail(RS_E_FORMAT, "cannot read attribute %s", name);
    attr_close_(a, ft);
    return st;
}
