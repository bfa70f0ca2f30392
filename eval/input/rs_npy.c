/* rs_npy.c — strict .npy header parsing (rs_npy.h). */
#include "rs_npy.h"
#include "rs_check.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    rs_npy_dtype t;
    size_t size;
    int is_signed;
} k_dtypes_[] = {{"<u2", RS_NPY_U2, 2, 0}, {"<u4", RS_NPY_U4, 4, 0}, {"<i4", RS_NPY_I4, 4, 1},
                 {"<i8", RS_NPY_I8, 8, 1}, {"<u8", RS_NPY_U8, 8, 0}};

const char *rs_npy_dtype_name(rs_npy_dtype t)
{
    for (size_t i = 0; i < sizeof k_dtypes_ / sizeof k_dtypes_[0]; i++)
        if (k_dtypes_[i].t == t) return k_dtypes_[i].name;
    return "?";
}

rs_status rs_npy_header_size(const unsigned char *buf, size_t n, const char *label, uint64_t *total)
{
    if (n < RS_NPY_MAGIC_LEN || memcmp(buf, RS_NPY_MAGIC, RS_NPY_MAGIC_LEN) != 0)
        return rs_error_set(RS_E_FORMAT, "%s: not a .npy file (it does not start with the magic \\x93NUMPY)", label);
    if (n < 8) return rs_error_set(RS_E_FORMAT, "%s: truncated .npy header (%zu bytes)", label, n);
    const int major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return rs_error_set(RS_E_FORMAT, "%s: .npy version %d.%d is not supported (1.0, 2.0 or 3.0)", label, major, minor);
    const size_t pre = major == 1 ? 10 : 12;
    if (n < pre) return rs_error_set(RS_E_FORMAT, "%s: truncated .npy header (%zu bytes)", label, n);
    const uint64_t hl = major == 1 ? (uint64_t)buf[8] | (uint64_t)buf[9] << 8
                                   : (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 |
                                         (uint64_t)buf[11] << 24;
    if (hl > RS_NPY_MAX_HEADER)
        return rs_error_set(RS_E_FORMAT, "%s: .npy header of %llu bytes, more than the limit of %u", label,
                            (unsigned long long)hl, RS_NPY_MAX_HEADER);
    *total = pre + hl;
    return RS_OK;
}

/* ---- the dict literal -------------------------------------------------------------------- */

typedef struct cursor {
    const char *p, *end;
    const char *label;
} cursor;

static void ws_(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int eat_(cursor *c, char ch)
{
    ws_(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* a quoted string without escapes into out[cap] */
static rs_status string_(cursor *c, const char *start, char *out, size_t cap)
{
    ws_(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: expected a quoted string at byte %zu", c->label,
                            (size_t)(c->p - start));
    const char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p == '\n')
            return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: escape or newline in a string at byte %zu",
                                c->label, (size_t)(c->p - start));
        if (n + 1 >= cap)
            return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: string too long at byte %zu", c->label,
                                (size_t)(c->p - start));
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: unterminated string", c->label);
    c->p++;
    out[n] = '\0';
    return RS_OK;
}

/* a Python int literal >= 0 (decimal, no sign, no leading zeros, no suffix) */
static rs_status uint_(cursor *c, const char *start, uint64_t *v)
{
    ws_(c);
    const char *s = c->p;
    uint64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        const uint64_t d = (uint64_t)(*c->p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return rs_error_set(RS_E_FORMAT, "%s: .npy shape: dimension at byte %zu does not fit in 64 bits", c->label,
                                (size_t)(s - start));
        x = 10 * x + d;
        c->p++;
    }
    if (c->p == s)
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: expected a non-negative integer in the shape at byte %zu",
                            c->label, (size_t)(s - start));
    if (c->p - s > 1 && *s == '0')
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: integer with a leading zero at byte %zu", c->label,
                            (size_t)(s - start));
    if (c->p < c->end && ((*c->p >= 'a' && *c->p <= 'z') || (*c->p >= 'A' && *c->p <= 'Z') || *c->p == '_' || *c->p == '.'))
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: not a plain integer at byte %zu", c->label,
                            (size_t)(s - start));
    *v = x;
    return RS_OK;
}

/* ( [int (, int)* [,]] ) into dims (at most 3 kept: rank > 2 is refused by the caller) */
static rs_status shape_(cursor *c, const char *start, uint64_t *dims, int *ndim)
{
    if (!eat_(c, '('))
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: shape is not a tuple (at byte %zu)", c->label,
                            (size_t)(c->p - start));
    int n = 0, trailing_comma = 0;
    if (!eat_(c, ')')) {
        for (;;) {
            uint64_t v = 0;
            RS_TRY(uint_(c, start, &v));
            if (n < 3) dims[n] = v;
            n++;
            trailing_comma = 0;
            if (eat_(c, ',')) {
                trailing_comma = 1;
                if (eat_(c, ')')) break;
                continue;
            }
            if (eat_(c, ')')) break;
            return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: expected ',' or ')' in the shape at byte %zu",
                                c->label, (size_t)(c->p - start));
        }
        if (n == 1 && !trailing_comma) /* (5) is the integer 5 in Python, not a tuple */
            return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: shape (%llu) is not a tuple (a 1-D shape is (%llu,))",
                                c->label, (unsigned long long)dims[0], (unsigned long long)dims[0]);
    }
    *ndim = n;
    return RS_OK;
}

rs_status rs_npy_parse(const unsigned char *buf, size_t n, uint64_t file_size, const char *label, rs_npy_header *h)
{
    memset(h, 0, sizeof *h);
    uint64_t total = 0;
    RS_TRY(rs_npy_header_size(buf, n, label, &total));
    if (total > n || total > file_size)
        return rs_error_set(RS_E_FORMAT, "%s: truncated .npy header (%llu bytes announced, the file has %llu)", label,
                            (unsigned long long)total, (unsigned long long)(file_size < n ? file_size : n));
    h->major = buf[6];
    h->minor = buf[7];
    const size_t pre = h->major == 1 ? 10 : 12;
    const char *start = (const char *)buf + pre;
    cursor c = {start, (const char *)buf + total, label};
    if (!eat_(&c, '{')) return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: it does not start with '{'", label);
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    char descr[16] = "";
    int fortran = 0;
    uint64_t dims[3] = {0, 0, 0};
    int ndim = 0;
    if (!eat_(&c, '}')) {
        for (;;) {
            char key[32];
            RS_TRY(string_(&c, start, key, sizeof key));
            if (!eat_(&c, ':'))
                return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: expected ':' after '%s'", label, key);
            if (!strcmp(key, "descr")) {
                if (have_descr++) return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: 'descr' given twice", label);
                ws_(&c);
                if (c.p < c.end && (*c.p == '[' || *c.p == '{'))
                    return rs_error_set(RS_E_FORMAT, "%s: .npy dtype is a structured type: need one of <u4, <i4, <u2, <i8, <u8",
                                        label);
                RS_TRY(string_(&c, start, descr, sizeof descr));
            } else if (!strcmp(key, "fortran_order")) {
                if (have_fortran++)
                    return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: 'fortran_order' given twice", label);
                ws_(&c);
                if (c.end - c.p >= 4 && !memcmp(c.p, "True", 4)) fortran = 1, c.p += 4;
                else if (c.end - c.p >= 5 && !memcmp(c.p, "False", 5)) fortran = 0, c.p += 5;
                else
                    return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: fortran_order must be True or False", label);
            } else if (!strcmp(key, "shape")) {
                if (have_shape++) return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: 'shape' given twice", label);
                RS_TRY(shape_(&c, start, dims, &ndim));
            } else {
                return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: unknown key '%s' (expected descr, fortran_order, shape)",
                                    label, key);
            }
            if (eat_(&c, ',')) {
                if (eat_(&c, '}')) break;
                continue;
            }
            if (eat_(&c, '}')) break;
            return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: expected ',' or '}' at byte %zu", label,
                                (size_t)(c.p - start));
        }
    }
    ws_(&c);
    if (c.p != c.end)
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: unexpected text after the dict at byte %zu", label,
                            (size_t)(c.p - start));
    if (!have_descr || !have_fortran || !have_shape)
        return rs_error_set(RS_E_FORMAT, "%s: malformed .npy header: missing '%s'", label,
                            !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
    int found = 0;
    for (size_t i = 0; i < sizeof k_dtypes_ / sizeof k_dtypes_[0]; i++)
        if (!strcmp(descr, k_dtypes_[i].name)) {
            h->dtype = k_dtypes_[i].t;
            h->itemsize = k_dtypes_[i].size;
            h->is_signed = k_dtypes_[i].is_signed;
            found = 1;
        }
    if (!found)
        return rs_error_set(RS_E_FORMAT, "%s: .npy dtype '%s' is not supported for token ids (need <u4, <i4, <u2, <i8 or <u8)",
                            label, descr);
    if (fortran)
        return rs_error_set(RS_E_FORMAT, "%s: .npy array in Fortran order (fortran_order True) is not supported: save it in C "
                            "order (numpy.ascontiguousarray)", label);
    if (ndim < 1 || ndim > 2)
        return rs_error_set(RS_E_FORMAT, "%s: .npy shape of rank %d: need [tokens] or [streams, tokens]", label, ndim);
    char shp[64];
    if (ndim == 1) snprintf(shp, sizeof shp, "(%llu,)", (unsigned long long)dims[0]);
    else snprintf(shp, sizeof shp, "(%llu, %llu)", (unsigned long long)dims[0], (unsigned long long)dims[1]);
    h->ndim = ndim;
    h->rows = ndim == 2 ? dims[0] : 1;
    h->cols = ndim == 2 ? dims[1] : dims[0];
    if (h->rows == 0 || h->cols == 0)
        return rs_error_set(RS_E_FORMAT, "%s: .npy shape %s: no tokens", label, shp);
    uint64_t count = 0, bytes = 0;
    if (__builtin_mul_overflow(h->rows, h->cols, &count) || __builtin_mul_overflow(count, (uint64_t)h->itemsize, &bytes))
        return rs_error_set(RS_E_FORMAT, "%s: .npy shape %s of %s: its size overflows 64 bits", label, shp, descr);
    h->data_offset = total;
    h->data_bytes = bytes;
    const uint64_t have = file_size - total;
    if (have < bytes)
        return rs_error_set(RS_E_FORMAT, "%s: truncated .npy data: shape %s of %s needs %llu bytes after the "
                            "%llu-byte header, the file has %llu", label, shp, descr, (unsigned long long)bytes,
                            (unsigned long long)total, (unsigned long long)have);
    if (have > bytes)
        return rs_error_set(RS_E_FORMAT, "%s: %llu bytes of trailing garbage after the .npy data (shape %s of %s)",
                            label, (unsigned long long)(have - bytes), shp, descr);
    return RS_OK;
}
