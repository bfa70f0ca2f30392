/* rs_h5attr_ds.c — the dataset helpers of rs_h5attr.h: open without chunk cache, shape and type
 * checks, create + write, whole and hyperslab reads and writes, string datasets. */
#include "rs_h5attr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- datasets ----------------------------------------------------------------------------- */

hid_t rs_h5_ds_open(hid_t loc, const char *path)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    /* no chunk cache: a chunk goes to the file at H5Dwrite (the log's crash-safety notes) */
    if (dapl >= 0) H5Pset_chunk_cache(dapl, 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT);
    const htri_t ex = H5Lexists(loc, path, H5P_DEFAULT);
    hid_t d = ex > 0 ? H5Dopen2(loc, path, dapl >= 0 ? dapl : H5P_DEFAULT) : -1;
    if (dapl >= 0) H5Pclose(dapl);
    if (d < 0) rs_h5_fail(RS_E_FORMAT, "dataset %s missing", path);
    return d;
}

rs_status rs_h5_ds_shape(hid_t d, const char *path, int rank, hsize_t *dims, int *got_rank)
{
    hid_t s = H5Dget_space(d);
    const int r = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    const int ok = r >= 0 && r <= H5S_MAX_RANK && H5Sget_simple_extent_dims(s, dims, NULL) >= 0;
    if (s >= 0) H5Sclose(s);
    if (!ok) return rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its shape", path);
    if (rank > 0 && r != rank) return rs_error_set(RS_E_FORMAT, "dataset %s has rank %d, not %d", path, r, rank);
    if (got_rank) *got_rank = r;
    return RS_OK;
}

rs_status rs_h5_ds_class(hid_t d, const char *path, H5T_class_t cls)
{
    hid_t t = H5Dget_type(d);
    const H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    if (t >= 0) H5Tclose(t);
    if (c != cls) return rs_error_set(RS_E_FORMAT, "dataset %s has the wrong type class", path);
    return RS_OK;
}

rs_status rs_h5_ds_create_write(hid_t loc, const char *path, hid_t lcpl, hid_t mem_type, int rank,
                                const hsize_t *dims, const void *data)
{
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = sp >= 0 ? H5Dcreate2(loc, path, mem_type, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (sp >= 0) H5Sclose(sp);
    if (d < 0) return rs_h5_fail(RS_E_IO, "cannot create dataset %s", path);
    const herr_t e = H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    const herr_t c = H5Dclose(d);
    if (e < 0 || c < 0) return rs_h5_fail(RS_E_IO, "cannot write dataset %s", path);
    return RS_OK;
}

/* numeric data of chunked datasets are read by our chunk reader, never H5Dread (rs_h5check.c) */
static int own_reader_(hid_t d, hid_t mem_type)
{
    const H5T_class_t c = H5Tget_class(mem_type);
    return (c == H5T_INTEGER || c == H5T_FLOAT) && rs_h5_ds_is_chunked(d);
}

rs_status rs_h5_ds_read_all(hid_t loc, const char *path, hid_t mem_type, int rank, const hsize_t *dims, void *buf)
{
    hid_t d = rs_h5_ds_open(loc, path);
    if (d < 0) return RS_E_FORMAT;
    hsize_t have[H5S_MAX_RANK];
    rs_status st = rs_h5_ds_shape(d, path, rank, have, NULL);
    for (int i = 0; st == RS_OK && i < rank; i++)
        if (have[i] != dims[i])
            st = rs_error_set(RS_E_FORMAT, "dataset %s: dimension %d is %llu, expected %llu", path, i,
                              (unsigned long long)have[i], (unsigned long long)dims[i]);
    if (st == RS_OK) st = rs_h5_ds_check_read(d, path, NULL, NULL); /* before libhdf5 reads it */
    if (st == RS_OK && own_reader_(d, mem_type)) st = rs_h5_ds_read_chunked(d, path, mem_type, NULL, NULL, buf);
    else if (st == RS_OK && H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
        st = rs_h5_fail(RS_E_FORMAT, "cannot read dataset %s", path);
    H5Dclose(d);
    return st;
}

/* select [row, pos .. pos + n) (rank 2) or [pos .. pos + n) (rank 1) in the file space fs */
static herr_t select_(hid_t fs, int rank, size_t row, uint64_t pos, size_t n)
{
    hsize_t start[2] = {row, pos}, count[2] = {1, n};
    if (rank == 1) start[0] = pos, count[0] = n;
    return H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
}

/* write (or read) n values at [row, pos) of d ([pos] for rank 1) from (into) buf; < 0 on failure */
static herr_t xfer_(hid_t d, hid_t mem_type, int rank, size_t row, uint64_t pos, size_t n, void *buf, int write)
{
    hid_t fs = H5Dget_space(d);
    hsize_t mn = n;
    hid_t ms = H5Screate_simple(1, &mn, NULL);
    herr_t e = fs >= 0 && ms >= 0 ? select_(fs, rank, row, pos, n) : -1;
    if (e >= 0)
        e = write ? H5Dwrite(d, mem_type, ms, fs, H5P_DEFAULT, buf) : H5Dread(d, mem_type, ms, fs, H5P_DEFAULT, buf);
    /* keep the failure's error stack across the closes (every API call clears it), so the
     * message quotes its cause (e.g. the log driver's "File too large") */
    const hid_t es = e < 0 ? H5Eget_current_stack() : -1;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (es >= 0) H5Eset_current_stack(es);
    return e;
}

rs_status rs_h5_ds_write_at(hid_t loc, const char *path, hid_t mem_type, int rank, size_t row, uint64_t pos,
                            size_t n, const void *buf)
{
    hid_t d = rs_h5_ds_open(loc, path);
    if (d < 0) return RS_E_FORMAT;
    hsize_t dims[H5S_MAX_RANK];
    rs_status st = rs_h5_ds_shape(d, path, rank, dims, NULL);
    if (st == RS_OK && rank == 2 && dims[1] < pos + n) {
        /* each dataset is extended on its own: after a crash in the middle of a flush the
         * extents of different datasets may differ */
        dims[1] = pos + n;
        if (H5Dset_extent(d, dims) < 0)
            st = rs_h5_fail(RS_E_IO, "cannot extend %s to %llu positions", path, (unsigned long long)(pos + n));
    }
    if (st == RS_OK && xfer_(d, mem_type, rank, row, pos, n, (void *)buf, 1) < 0)
        st = rs_h5_fail(RS_E_IO, "cannot write %s (row %zu, position %llu, %zu values)", path, row,
                        (unsigned long long)pos, n);
    H5Dclose(d);
    return st;
}

rs_status rs_h5_ds_read_at(hid_t loc, const char *path, hid_t mem_type, int rank, size_t row, uint64_t pos,
                           size_t n, void *buf)
{
    if (n == 0) return RS_OK;
    hid_t d = rs_h5_ds_open(loc, path);
    if (d < 0) return RS_E_FORMAT;
    hsize_t dims[H5S_MAX_RANK];
    rs_status st = rs_h5_ds_shape(d, path, rank, dims, NULL);
    const hsize_t extent = rank == 2 ? dims[1] : dims[0];
    if (st == RS_OK && ((rank == 2 && row >= dims[0]) || pos > extent || n > extent - pos))
        st = rs_error_set(RS_E_FORMAT, "dataset %s: [row %zu, %llu + %zu) is outside its extent", path, row,
                          (unsigned long long)pos, n);
    const hsize_t start[2] = {rank == 2 ? row : pos, pos}, count[2] = {rank == 2 ? 1 : n, n};
    if (st == RS_OK && own_reader_(d, mem_type)) {
        st = rs_h5_ds_read_chunked(d, path, mem_type, start, count, buf);
    } else if (st == RS_OK) {
        st = rs_h5_ds_check_read(d, path, start, count); /* the chunks this read touches, before libhdf5 reads them */
        if (st == RS_OK && xfer_(d, mem_type, rank, row, pos, n, buf, 0) < 0)
            st = rs_h5_fail(RS_E_FORMAT, "cannot read %s (row %zu, position %llu, %zu values)", path, row,
                            (unsigned long long)pos, n);
    }
    H5Dclose(d);
    return st;
}

rs_status rs_h5_ds_read_vlen_strings(hid_t loc, const char *path, size_t n, char **out)
{
    hid_t d = rs_h5_ds_open(loc, path);
    if (d < 0) return RS_E_FORMAT;
    hsize_t dims[H5S_MAX_RANK];
    rs_status st = rs_h5_ds_shape(d, path, 1, dims, NULL);
    if (st == RS_OK && dims[0] != n)
        st = rs_error_set(RS_E_FORMAT, "dataset %s holds %llu strings, expected %zu", path,
                          (unsigned long long)dims[0], n);
    hid_t ft = st == RS_OK ? H5Dget_type(d) : -1;
    const H5T_cset_t cset = ft >= 0 ? H5Tget_cset(ft) : H5T_CSET_ERROR;
    if (st == RS_OK && (ft < 0 || H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) <= 0 || cset < 0))
        st = rs_error_set(RS_E_FORMAT, "dataset %s is not a variable-length string dataset", path);
    if (ft >= 0) H5Tclose(ft);
    if (st == RS_OK) st = rs_h5_ds_check_read(d, path, NULL, NULL);
    char **tmp = st == RS_OK ? (char **)calloc(n ? n : 1, sizeof(char *)) : NULL;
    if (st == RS_OK && !tmp) st = rs_error_set(RS_E_NOMEM, "dataset %s: out of memory", path);
    hid_t t = -1;
    if (st == RS_OK) {
        t = H5Tcopy(H5T_C_S1);
        if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, cset) < 0 ||
            H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, tmp) < 0)
            st = rs_h5_fail(RS_E_FORMAT, "cannot read %s", path);
    }
    for (size_t i = 0; st == RS_OK && i < n; i++) {
        out[i] = strdup(tmp[i] ? tmp[i] : "");
        if (!out[i]) st = rs_error_set(RS_E_NOMEM, "dataset %s: out of memory", path);
    }
    for (size_t i = 0; tmp && i < n; i++)
        if (tmp[i]) H5free_memory(tmp[i]);
    free(tmp);
    if (t >= 0) H5Tclose(t);
    H5Dclose(d);
    return st;
}
