/* rs_h5file.h — write a small HDF5 result file without touching HDF5 (`replayssm theory`,
 * `replayssm bench`, or a program of your own).
 *
 *     rs_h5file *f;
 *     if (rs_h5file_create("curves.h5", force, &f) != RS_OK) { ...rs_last_error()... }
 *     rs_h5file_attr_str(f, "/", "tool", "my-program 1.0");
 *     size_t dims[1] = {n};
 *     rs_h5file_write_f64(f, "/c3/ratio", 1, dims, ratio);   // groups created on the way
 *     rs_h5file_attr_str(f, "/c3/ratio", "units", "M_replay / M_conv");
 *     if (rs_h5file_close(f) != RS_OK) { ...the first failure of any call above... }
 *
 * Atomic, like the KL log: the file is built at "<path>.tmp.<pid>" in the same folder and moved
 * to `path` by rs_h5file_close only if every call succeeded (link(): never over an existing file
 * without force; rename(): an atomic replace with force). An existing file is never truncated or
 * partly written, and a failed or abandoned file leaves nothing behind. Only a regular file is
 * ever replaced: a FIFO, device, directory or symbolic link at `path` is refused by
 * rs_h5file_create before anything is opened (no blocking on a FIFO). Temporaries of killed
 * processes ("<path>.tmp.<pid>", pid gone) are removed by the next create of the same path.
 *
 * Errors are sticky: the first failing call records its status and message; every later call
 * returns that status without touching the file, and rs_h5file_close returns it again (with its
 * message restored), so a writer may check each call or only the close. Strings are written as
 * fixed-length NUL-terminated ASCII (h5py reads them as bytes), numbers in native types.
 * The library never prints.
 */
#ifndef RS_H5FILE_H
#define RS_H5FILE_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An open result file (opaque). */
typedef struct rs_h5file rs_h5file;

/*! rs_h5file_create() : start a new file for `path`. Without force an existing `path` is an
 *  error (RS_E_IO "... exists; pass --force to overwrite it"); anything but a regular file at
 *  `path` is refused with or without force. @return RS_OK, RS_E_IO (exists, not a regular file,
 *  unwritable folder), RS_E_INVAL, RS_E_NOMEM. */
rs_status rs_h5file_create(const char *path, int force, rs_h5file **out);

/*! rs_h5file_group() : create the group at `path` ("/a/b"), with its parents; an existing group
 *  is fine. */
rs_status rs_h5file_group(rs_h5file *f, const char *path);

/*! rs_h5file_attr_*() : set attribute `name` of the object at `obj_path` ("/" for the root; a
 *  missing object is created as a group); an existing attribute of that name is replaced. */
rs_status rs_h5file_attr_str(rs_h5file *f, const char *obj_path, const char *name, const char *value);
rs_status rs_h5file_attr_u64(rs_h5file *f, const char *obj_path, const char *name, uint64_t value);
rs_status rs_h5file_attr_i64(rs_h5file *f, const char *obj_path, const char *name, int64_t value);
rs_status rs_h5file_attr_f64(rs_h5file *f, const char *obj_path, const char *name, double value);

/*! rs_h5file_write_*() : a new dataset at `path` (parents created) of rank 1..8 and extent
 *  dims[rank], written whole from data (row-major, dims[0] * ... * dims[rank-1] values).
 *  An existing object at `path` is an error. */
rs_status rs_h5file_write_f64(rs_h5file *f, const char *path, int rank, const size_t *dims, const double *data);
rs_status rs_h5file_write_f32(rs_h5file *f, const char *path, int rank, const size_t *dims, const float *data);
rs_status rs_h5file_write_i64(rs_h5file *f, const char *path, int rank, const size_t *dims, const int64_t *data);
rs_status rs_h5file_write_i32(rs_h5file *f, const char *path, int rank, const size_t *dims, const int32_t *data);
rs_status rs_h5file_write_u8(rs_h5file *f, const char *path, int rank, const size_t *dims, const uint8_t *data);

/*! rs_h5file_write_str() : a 1-D dataset of n fixed-length strings of `width` bytes each
 *  (NUL-padded; data holds n * width bytes, e.g. an array of char[width]). */
rs_status rs_h5file_write_str(rs_h5file *f, const char *path, size_t n, size_t width, const char *data);

/* ---- tables: an array of C structs as one 1-D dataset per field ------------------------------------
 *
 *     typedef struct { char name[16]; int32_t n; double t; } row;
 *     static const rs_h5file_column cols[] = {
 *         {"name", offsetof(row, name), RS_H5FILE_COL_STR, sizeof(((row *)0)->name), NULL},
 *         {"n", offsetof(row, n), RS_H5FILE_COL_I32, 0, "items"},
 *         {"t", offsetof(row, t), RS_H5FILE_COL_F64, 0, "s"},
 *     };
 *     rs_h5file_write_table(f, "/rows", rows, nrows, sizeof(row), cols, 3);  // /rows/name, /rows/n, /rows/t
 */

/* The type of a column's field, and of its dataset. */
typedef enum rs_h5file_col_kind {
    RS_H5FILE_COL_F64 = 0, /* double: native double (64-bit IEEE), as rs_h5file_write_f64 */
    RS_H5FILE_COL_I32 = 1, /* int32_t: native 32-bit signed integer, as rs_h5file_write_i32 */
    RS_H5FILE_COL_STR = 2  /* char[width]: fixed-length NUL-terminated string of width bytes, as rs_h5file_write_str */
} rs_h5file_col_kind;

/* One column of a table: the field at `offset` of every row. */
typedef struct rs_h5file_column {
    const char *name;        /* the dataset's name in the table's group: non-empty, no '/', unique */
    size_t offset;           /* offsetof(row type, field) */
    rs_h5file_col_kind kind;
    size_t width;            /* RS_H5FILE_COL_STR: the field's size in bytes (>= 1), the string type's size */
    const char *units;       /* the dataset's `units` attribute (a string, as rs_h5file_attr_str); NULL: none */
} rs_h5file_column;

/*! rs_h5file_write_table() : the n rows at `rows` (row i at (const char *)rows + i * row_size) as a new
 *  group `group` (parents created) holding one 1-D dataset of extent n per column, created in the order
 *  of cols, each with its `units` attribute. A string field must hold a NUL within its width (at most
 *  width - 1 characters), so no value is ever cut: an unterminated one is refused before anything is
 *  written (RS_E_INVAL naming the column and the row); the bytes after its first NUL are written as
 *  NULs. The group must not exist yet (a table owns its group: no column of another table beside its
 *  own; "/" always exists). n may be 0 (datasets of extent 0; rows may then be NULL). Errors are
 *  sticky like those of every call above.
 *  @return RS_OK; RS_E_INVAL (a NULL argument, no column, a bad or repeated column name, a bad kind,
 *  a field outside row_size, width 0, an unterminated string); RS_E_IO (the group exists, HDF5
 *  failure); RS_E_NOMEM. */
rs_status rs_h5file_write_table(rs_h5file *f, const char *group, const void *rows, size_t n, size_t row_size,
                                const rs_h5file_column *cols, size_t ncols);

/*! rs_h5file_status() : the first failure so far (RS_OK if none); lets a writer stop early. */
rs_status rs_h5file_status(const rs_h5file *f);

/*! rs_h5file_close() : finish the file and move it to `path` if every call succeeded; otherwise
 *  remove it and return the first failure. Accepts NULL. */
rs_status rs_h5file_close(rs_h5file *f);

/*! rs_h5file_no_atexit() : switch off HDF5's atexit cleanup for this process. HDF5 1.10 crashes
 *  in that handler after a file's close failed (disk full, file-size limit), so a program that
 *  closes every file explicitly calls this once, before any other HDF5 use (the same switch as
 *  rs_h5log_no_atexit). */
void rs_h5file_no_atexit(void);

/*! rs_h5file_discard() : abandon the file (nothing is placed, an existing `path` stays as it
 *  was). Accepts NULL. */
void rs_h5file_discard(rs_h5file *f);

#ifdef __cplusplus
}
#endif
#endif /* RS_H5FILE_H */
