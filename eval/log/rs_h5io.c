/* rs_h5io.c — reading a plain numeric dataset of any HDF5 file (see rs_h5io.h), on the eval
 * layer's HDF5 helpers (rs_h5attr.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "replayssm/eval/rs_h5io.h"
#include "rs_check.h"
#include "rs_h5attr.h"
#include "input/rs_input.h"

#define RS_H5IO_MAX_FILE_BYTES ((uint64_t)1 << 40) /* no real bound: the element limit is the caller's */

rs_status rs_h5_read_floats(const char *path, const char *dataset, size_t max_elements, float **data, size_t *n,
                            size_t *last_dim)
{
    RS_CHECK(path && dataset && data && n && last_dim, RS_E_INVAL, "rs_h5_read_floats: NULL argument");
    *data = NULL;
    rs_h5_quiet();
    /* the input room's bounded open first: a FIFO or device would block or stream inside HDF5,
     * and an unreadable file is "Permission denied", not an HDF5 error */
    rs_status cst = rs_input_check(path, RS_H5IO_MAX_FILE_BYTES, NULL);
    if (cst != RS_OK) return rs_error_set(cst, "cannot open HDF5 file: %s", rs_last_error());
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return rs_h5_fail(RS_E_IO, "cannot open HDF5 file '%s'", path);
    rs_status st = RS_OK;
    hid_t dset = H5Lexists(file, dataset, H5P_DEFAULT) > 0 ? H5Dopen2(file, dataset, H5P_DEFAULT) : -1;
    if (dset < 0) {
        H5Eclear2(H5E_DEFAULT);
        H5Fclose(file);
        return rs_error_set(RS_E_FORMAT, "%s: no dataset '%s'", path, dataset);
    }
    hsize_t dims[H5S_MAX_RANK];
    int rank = 0;
    st = rs_h5_ds_shape(dset, dataset, 0, dims, &rank);
    if (st == RS_OK && rank < 1) st = rs_error_set(RS_E_FORMAT, "%s:%s: dataset must have rank >= 1", path, dataset);
    hsize_t total = 1;
    for (int d = 0; st == RS_OK && d < rank; ++d) {
        /* a product past SIZE_MAX / sizeof(float) cannot be allocated: refuse before multiplying on */
        if (dims[d] && total > (hsize_t)(SIZE_MAX / sizeof(float)) / dims[d])
            st = rs_error_set(RS_E_SHAPE, "%s:%s: dataset too large", path, dataset);
        total *= dims[d];
    }
    if (st == RS_OK && total == 0) st = rs_error_set(RS_E_SHAPE, "%s:%s: dataset is empty", path, dataset);
    /* before allocating or reading: a small file can declare a huge dataset over unallocated chunks */
    if (st == RS_OK && max_elements && total > (hsize_t)max_elements)
        st = rs_error_set(RS_E_SHAPE, "%s:%s: dataset has %llu elements, more than the limit %zu", path, dataset,
                          (unsigned long long)total, max_elements);
    if (st == RS_OK && rs_h5_ds_class(dset, dataset, H5T_FLOAT) != RS_OK &&
        rs_h5_ds_class(dset, dataset, H5T_INTEGER) != RS_OK)
        st = rs_error_set(RS_E_FORMAT, "%s:%s: dataset is not numeric", path, dataset);
    /* storage, type, filters and every chunk checked before libhdf5 reads them (rs_h5attr.h): an
     * edited chunk dimension or a chunk larger than the extent makes libhdf5 1.10.8 read past its
     * own buffers; external and virtual storage name other files */
    if (st == RS_OK) st = rs_h5_ds_check_read(dset, dataset, NULL, NULL);
    if (st != RS_OK && st != RS_E_NOMEM)
        st = rs_error_set(st, "%s: %s", path, rs_last_error());
    if (st == RS_OK) {
        *data = (float *)malloc((size_t)total * sizeof(float));
        if (!*data)
            st = rs_error_set(RS_E_NOMEM, "%s:%s: cannot allocate %llu floats", path, dataset, (unsigned long long)total);
    }
    /* chunked data by our own chunk reader (rs_h5_ds_read_chunked), the rest by H5Dread */
    if (st == RS_OK && rs_h5_ds_is_chunked(dset)) {
        st = rs_h5_ds_read_chunked(dset, dataset, H5T_NATIVE_FLOAT, NULL, NULL, *data);
        if (st != RS_OK && st != RS_E_NOMEM) st = rs_error_set(st, "%s: %s", path, rs_last_error());
    } else if (st == RS_OK && H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, *data) < 0) {
        st = rs_h5_fail(RS_E_IO, "%s:%s: read failed", path, dataset);
    }
    if (st == RS_OK) {
        *n = (size_t)total;
        *last_dim = (size_t)dims[rank - 1];
    } else {
        free(*data);
        *data = NULL;
    }
    H5Dclose(dset);
    H5Fclose(file);
    return st;
}
