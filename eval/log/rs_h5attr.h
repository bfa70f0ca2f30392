/* rs_h5attr.h — the eval layer's one set of hid_t-level HDF5 helpers (private; never installed).
 *
 * Used by the KL log (rs_h5log*.c), the result-file writer (rs_h5file.c, behind the opaque public
 * rs_h5file.h that `replayssm theory` and `replayssm bench` write through) and the dataset reader
 * (rs_h5io.c); attributes in rs_h5attr.c, datasets in rs_h5attr_ds.c. Every function returns an
 * rs_status and, on failure, records a message that names the object and quotes HDF5's innermost
 * error description; nothing here prints (HDF5's own automatic error printing is switched off by
 * rs_h5_quiet, which every public entry point calls).
 *
 * Readers validate before they trust: an attribute read as one value must hold exactly one
 * element of the expected class, a string's stored size is bounded, a dataset read whole must
 * have the rank and extent the caller expects. A file is input like any other (docs/hdf5-layout.md
 * "Reading untrusted logs").
 */
#ifndef RS_H5ATTR_H
#define RS_H5ATTR_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "replayssm/quant/rs_status.h"

/* The longest string attribute a reader accepts (a command line or a book title is far shorter;
 * a corrupted size field must not become a 4 GiB allocation). */
#define RS_H5_MAX_STRING (1u << 20)

/* ---- errors ------------------------------------------------------------------------------- */

/* rs_h5_quiet() : switch HDF5's automatic error printing off (the library never prints). */
void rs_h5_quiet(void);

/* rs_h5_fail() : rs_error_set(code, fmt, ...) with " (HDF5: <innermost description>)" appended
 * when HDF5 recorded one; clears HDF5's error stack. RS_H5LOG_DEBUG=1 in the environment prints
 * the whole stack to stderr (a debugging aid, off by default). */
rs_status rs_h5_fail(rs_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- types -------------------------------------------------------------------------------- */

/* rs_h5_vlen_str_type() : a variable-length UTF-8 string type (caller closes), or -1. */
hid_t rs_h5_vlen_str_type(void);

/* ---- attributes: writing (an existing attribute of the same name is replaced) -------------- */

rs_status rs_h5_attr_set_str(hid_t obj, const char *name, const char *val);       /* vlen UTF-8 (the log) */
rs_status rs_h5_attr_set_fixed_str(hid_t obj, const char *name, const char *val); /* fixed size strlen + 1, NUL-terminated */
rs_status rs_h5_attr_set_u64(hid_t obj, const char *name, uint64_t v);
rs_status rs_h5_attr_set_i64(hid_t obj, const char *name, int64_t v);
rs_status rs_h5_attr_set_f64(hid_t obj, const char *name, double v);
/* n values; n == 1 writes a scalar attribute, n > 1 a 1-D one */
rs_status rs_h5_attr_set_f64v(hid_t obj, const char *name, const double *v, size_t n);

/* ---- attributes: reading (exactly one element, the right class; RS_E_FORMAT otherwise) ----- */

/* a string (variable or fixed length) into buf (truncated to bufsize - 1 bytes) */
rs_status rs_h5_attr_get_str(hid_t obj, const char *name, char *buf, size_t bufsize);
/* an integer attribute of any integer type; negative values are refused for u64 */
rs_status rs_h5_attr_get_u64(hid_t obj, const char *name, uint64_t *v);
rs_status rs_h5_attr_get_i64(hid_t obj, const char *name, int64_t *v);
/* a floating-point or integer attribute as a double */
rs_status rs_h5_attr_get_f64(hid_t obj, const char *name, double *v);

/* ---- datasets ----------------------------------------------------------------------------- */

/* The largest HDF5 chunk a reader accepts: a log's largest, (1, 2^24) doubles. */
#define RS_H5_MAX_CHUNK_BYTES ((uint64_t)1 << 27)

/* rs_h5_ds_check() : what a dataset of an untrusted file must be before libhdf5 reads it
 * (docs/hdf5-layout.md "Reading untrusted logs"; libhdf5 1.10.8 reads past its own heap buffers
 * when a chunk's dimensions and its stored bytes disagree): compact, contiguous or chunked storage
 * in this file (no external raw data, no virtual layout); an integer (1, 2, 4 or 8 bytes, every bit
 * used), IEEE float (4 or 8 bytes) or string (variable length, or fixed of at most
 * RS_H5_MAX_STRING) type; filters shuffle, deflate and fletcher32 only, each once, in the order
 * writers apply them; chunk dimensions of the dataset's rank, each > 0, at most the extent (the
 * maximum extent of an unlimited dimension: 2^24), their bytes at most RS_H5_MAX_CHUNK_BYTES;
 * contiguous or compact data of exactly the extent's bytes, inside the file. RS_E_FORMAT naming
 * the dataset and the first thing wrong. */
rs_status rs_h5_ds_check(hid_t d, const char *path);

/* rs_h5_ds_check_read() : rs_h5_ds_check, then every allocated chunk the hyperslab start[rank],
 * count[rank] touches (NULL: the whole dataset) read raw and its filters undone here, bounded:
 * unfiltered, its stored bytes must be the chunk's bytes; deflated, it must inflate to exactly
 * the chunk's bytes (fletcher32's 4 bytes apart). Only then may H5Dread touch it. */
rs_status rs_h5_ds_check_read(hid_t d, const char *path, const hsize_t *start, const hsize_t *count);

/* rs_h5_ds_read_chunked() : the hyperslab start[rank], count[rank] (NULL: the whole dataset) of a chunked
 * numeric dataset into buf (row-major [count], elements of mem_type), without H5Dread: every chunk it
 * touches read raw, checked as rs_h5_ds_check_read does, its Fletcher-32 checksum verified, inflated
 * and unshuffled by our code, converted with H5Tconvert; unallocated chunks give the fill value.
 * RS_E_FORMAT naming the dataset on any inconsistency; buf may be partly written then. */
rs_status rs_h5_ds_read_chunked(hid_t d, const char *path, hid_t mem_type, const hsize_t *start, const hsize_t *count,
                                void *buf);

/* rs_h5_ds_is_chunked() : 1 for a dataset with chunked storage */
int rs_h5_ds_is_chunked(hid_t d);

/* rs_h5_ds_open() : open dataset `path` with the chunk cache off (a chunk reaches the file at
 * H5Dwrite; the log's crash safety relies on it). Returns the id or -1 with the message set. */
hid_t rs_h5_ds_open(hid_t loc, const char *path);

/* rs_h5_ds_shape() : rank and extent of an open dataset; RS_E_FORMAT unless the rank is `rank`
 * (rank 0 accepts any rank <= max_rank, written to *got_rank when not NULL). dims has room for
 * H5S_MAX_RANK values. */
rs_status rs_h5_ds_shape(hid_t d, const char *path, int rank, hsize_t *dims, int *got_rank);

/* rs_h5_ds_class() : RS_E_FORMAT unless the dataset's type is of class `cls` (H5T_INTEGER, ...). */
rs_status rs_h5_ds_class(hid_t d, const char *path, H5T_class_t cls);

/* rs_h5_ds_create_write() : create dataset `path` (file type = mem_type, contiguous; lcpl may
 * create intermediate groups, H5P_DEFAULT otherwise) with dims[rank] and write data whole. */
rs_status rs_h5_ds_create_write(hid_t loc, const char *path, hid_t lcpl, hid_t mem_type, int rank,
                                const hsize_t *dims, const void *data);

/* rs_h5_ds_read_all() : read a whole dataset whose extent must be exactly dims[rank] (checked
 * first, so a file cannot make the read overflow buf). */
rs_status rs_h5_ds_read_all(hid_t loc, const char *path, hid_t mem_type, int rank, const hsize_t *dims,
                            void *buf);

/* rs_h5_ds_write_at() : n values at [row, pos .. pos + n) of a 2-D dataset (extended along the
 * second dimension when needed: each dataset on its own), or at [pos .. pos + n) of a 1-D one
 * (row ignored). */
rs_status rs_h5_ds_write_at(hid_t loc, const char *path, hid_t mem_type, int rank, size_t row, uint64_t pos,
                            size_t n, const void *buf);

/* rs_h5_ds_read_at() : the reverse; the selection must lie inside the dataset's extent. */
rs_status rs_h5_ds_read_at(hid_t loc, const char *path, hid_t mem_type, int rank, size_t row, uint64_t pos,
                           size_t n, void *buf);

/* rs_h5_ds_read_vlen_strings() : a 1-D variable-length string dataset of exactly n elements
 * (n >= 1) into out[n] (strdup'd; the caller frees each). */
rs_status rs_h5_ds_read_vlen_strings(hid_t loc, const char *path, size_t n, char **out);

#endif /* RS_H5ATTR_H */
