/* rs_fuzz_npy.c — the fuzz target of the strict .npy reader (eval/input/rs_npy.h, private to eval/:
 * this file is compiled with eval/ on the include path), the header of `kl --token-ids FILE.npy`.
 * The bytes are a whole file. The target calls the reader as the evaluator does
 * (rs_kleval_input.c: rs_npy_header_size on the first 12 bytes, then rs_npy_parse on exactly the
 * announced header, in a buffer of that size so that a read past it is caught by ASan) and checks:
 *  - a refusal is RS_E_FORMAT with a message, and the two entry points agree (parse refuses what
 *    the size step refused, and every file whose announced header does not fit);
 *  - an accepted file is what rs_npy.h documents: version 1.0 / 2.0 / 3.0, rank 1 or 2, every
 *    dimension >= 1 (a 1-D array is one row), one of the five dtypes with its size and
 *    signedness, data_bytes = rows x cols x itemsize without overflow, and header + data exactly
 *    the file (no truncation, no trailing bytes); every element is read (ASan checks the bounds);
 *  - parsing the whole file instead of the header alone gives the same result, and the header
 *    numpy would write for the same array (canonical dict, padding) parses to the same array. */
#include "rs_fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/quant/rs_status.h"
#include "input/rs_npy.h"

static const char *T = "npy";

static void refused_(rs_status st)
{
    if (st != RS_E_FORMAT) rs_fuzz_fail(T, "a refusal other than RS_E_FORMAT");
    if (!rs_last_error()[0]) rs_fuzz_fail(T, "an error without a message");
}

static int same_(const rs_npy_header *a, const rs_npy_header *b)
{
    return a->dtype == b->dtype && a->itemsize == b->itemsize && a->is_signed == b->is_signed && a->ndim == b->ndim &&
           a->rows == b->rows && a->cols == b->cols && a->data_bytes == b->data_bytes;
}

/* the file numpy.save would write for h's array (format 1.0, the dict padded with spaces to a
 * multiple of 64 bytes with the preamble, ending in '\n'), with the data bytes `data`; NULL on
 * allocation failure */
static unsigned char *canonical_(const rs_npy_header *h, const unsigned char *data, size_t *len)
{
    char dict[256];
    int n = h->ndim == 1 ? snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%llu,), }",
                                    rs_npy_dtype_name(h->dtype), (unsigned long long)h->cols)
                         : snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%llu, %llu), }",
                                    rs_npy_dtype_name(h->dtype), (unsigned long long)h->rows, (unsigned long long)h->cols);
    if (n <= 0 || (size_t)n + 70 > sizeof dict) rs_fuzz_fail(T, "canonical header does not fit");
    while ((10 + (size_t)n + 1) % 64) dict[n++] = ' ';
    dict[n++] = '\n';
    const size_t total = 10 + (size_t)n + (size_t)h->data_bytes;
    unsigned char *f = (unsigned char *)malloc(total);
    if (!f) return NULL;
    memcpy(f, RS_NPY_MAGIC, RS_NPY_MAGIC_LEN);
    f[6] = 1;
    f[7] = 0;
    f[8] = (unsigned char)(n & 0xff);
    f[9] = (unsigned char)(n >> 8);
    memcpy(f + 10, dict, (size_t)n);
    if (h->data_bytes) memcpy(f + 10 + n, data, (size_t)h->data_bytes);
    *len = total;
    return f;
}

int rs_fuzz_npy(const uint8_t *data, size_t size)
{
    rs_npy_header h;
    uint64_t total = 0;
    /* the evaluator's first read: at most 12 bytes */
    rs_status st = rs_npy_header_size(data, size < 12 ? size : 12, "fuzz.npy", &total);
    if (st != RS_OK) {
        refused_(st);
        if (rs_npy_parse(data, size, size, "fuzz.npy", &h) == RS_OK) rs_fuzz_fail(T, "parse accepted a refused preamble");
        return 0;
    }
    const uint64_t pre = data[6] == 1 ? 10 : 12;
    if (total < pre || total - pre > RS_NPY_MAX_HEADER) rs_fuzz_fail(T, "header size out of its documented range");
    if (total > size) { /* the evaluator refuses this itself; parse must too */
        st = rs_npy_parse(data, size, size, "fuzz.npy", &h);
        if (st == RS_OK) rs_fuzz_fail(T, "accepted a header longer than the file");
        refused_(st);
        return 0;
    }
    /* exactly the header, in a buffer of its size */
    unsigned char *hdr = (unsigned char *)malloc(total ? (size_t)total : 1);
    if (!hdr) rs_fuzz_fail(T, "out of memory");
    memcpy(hdr, data, (size_t)total);
    st = rs_npy_parse(hdr, (size_t)total, size, "fuzz.npy", &h);
    free(hdr);
    rs_npy_header whole;
    const rs_status st2 = rs_npy_parse(data, size, size, "fuzz.npy", &whole);
    if ((st == RS_OK) != (st2 == RS_OK)) rs_fuzz_fail(T, "the header alone and the whole file parse differently");
    if (st != RS_OK) {
        refused_(st);
        refused_(st2);
        return 0;
    }
    if (!same_(&h, &whole) || whole.data_offset != h.data_offset) rs_fuzz_fail(T, "whole-file parse differs");
    /* the documented invariants */
    if (h.major < 1 || h.major > 3 || h.minor != 0) rs_fuzz_fail(T, "accepted another version");
    if (h.data_offset != total) rs_fuzz_fail(T, "data offset is not the announced header size");
    if (h.ndim < 1 || h.ndim > 2 || h.rows < 1 || h.cols < 1 || (h.ndim == 1 && h.rows != 1))
        rs_fuzz_fail(T, "accepted a shape outside [T] / [S, T] with dimensions >= 1");
    static const size_t sizes[] = {2, 4, 4, 8, 8};
    static const int signs[] = {0, 0, 1, 1, 0};
    if ((unsigned)h.dtype > RS_NPY_U8 || h.itemsize != sizes[h.dtype] || h.is_signed != signs[h.dtype] ||
        !strcmp(rs_npy_dtype_name(h.dtype), "?"))
        rs_fuzz_fail(T, "dtype, item size and signedness disagree");
    uint64_t count = 0, bytes = 0;
    if (__builtin_mul_overflow(h.rows, h.cols, &count) || __builtin_mul_overflow(count, (uint64_t)h.itemsize, &bytes) ||
        bytes != h.data_bytes)
        rs_fuzz_fail(T, "data_bytes is not rows x cols x itemsize");
    if (h.data_offset > size || size - h.data_offset != h.data_bytes)
        rs_fuzz_fail(T, "header + data is not exactly the file");
    /* every element, as the evaluator reads them (little-endian) */
    volatile uint64_t sum = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t v = 0;
        for (size_t b = 0; b < h.itemsize; b++) v |= (uint64_t)data[h.data_offset + i * h.itemsize + b] << (8 * b);
        sum += v;
    }
    (void)sum;
    /* what numpy would write for this array parses to the same array */
    size_t clen = 0;
    unsigned char *c = canonical_(&h, data + h.data_offset, &clen);
    if (!c) rs_fuzz_fail(T, "out of memory");
    rs_npy_header back;
    st = rs_npy_parse(c, clen, clen, "canonical.npy", &back);
    free(c);
    if (st != RS_OK || !same_(&h, &back)) rs_fuzz_fail(T, "the canonical header of an accepted array is refused or differs");
    return 1;
}
