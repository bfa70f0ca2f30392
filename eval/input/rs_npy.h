/* rs_npy.h — a strict reader of NumPy .npy headers for token-id inputs (private to eval/).
 *
 * Format (numpy.lib.format): the magic "\x93NUMPY", a version byte pair (1.0, 2.0 or 3.0), the
 * header length (little-endian uint16 for 1.0, uint32 for 2.0 / 3.0), then a Python dict literal
 * padded with spaces and ending in '\n':  {'descr': '<u4', 'fortran_order': False, 'shape': (3, 100), }
 * and the array's bytes in C order.
 *
 * Accepted: exactly the keys descr, fortran_order, shape (each once, quoted with ' or ", any
 * order, optional trailing comma, blanks between tokens); descr one of <u4 <i4 <u2 <i8 <u8;
 * fortran_order False; shape (T,) or (S, T) of decimal integers >= 1. Refused with a one-line
 * RS_E_FORMAT naming the file: another magic or version, a truncated header, any other key,
 * value or syntax (escapes, Python 2 "3L" integers, leading zeros), fortran_order True, another
 * dtype, rank 0 or > 2, a zero dimension, a shape whose element count or byte size overflows 64
 * bits, data shorter than the shape says (truncated) or longer (trailing bytes).
 */
#ifndef RS_NPY_H
#define RS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#define RS_NPY_MAGIC "\x93NUMPY"
#define RS_NPY_MAGIC_LEN 6
#define RS_NPY_MAX_HEADER (1u << 20) /* header bytes accepted (numpy writes < 256) */

typedef enum rs_npy_dtype { RS_NPY_U2 = 0, RS_NPY_U4, RS_NPY_I4, RS_NPY_I8, RS_NPY_U8 } rs_npy_dtype;

typedef struct rs_npy_header {
    int major, minor;     /* version */
    rs_npy_dtype dtype;
    size_t itemsize;      /* bytes per element: 2, 4 or 8 */
    int is_signed;
    int ndim;             /* 1 or 2 */
    uint64_t rows, cols;  /* [rows, cols]; a 1-D [T] array is rows 1, cols T */
    uint64_t data_offset; /* bytes before the data: magic + version + length + header */
    uint64_t data_bytes;  /* rows * cols * itemsize */
} rs_npy_header;

/*! rs_npy_header_size() : from the first `n` bytes of a file (at least 12, or the whole file
 *  when shorter), the total size of the preamble + header (the data offset) into *total.
 *  @return RS_OK, RS_E_FORMAT (no magic, unknown version, truncated, header too long). */
rs_status rs_npy_header_size(const unsigned char *buf, size_t n, const char *label, uint64_t *total);

/*! rs_npy_parse() : parse the preamble and header in buf[n] (n >= the header size) of a file of
 *  file_size bytes, and check the data size against it. @return RS_OK or RS_E_FORMAT. */
rs_status rs_npy_parse(const unsigned char *buf, size_t n, uint64_t file_size, const char *label, rs_npy_header *h);

/*! rs_npy_dtype_name() : "<u4", ... */
const char *rs_npy_dtype_name(rs_npy_dtype t);

#endif /* RS_NPY_H */
