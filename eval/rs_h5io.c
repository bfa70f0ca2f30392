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

/* The raw data must lie in this file: no external raw-data files (they name arbitrary paths, a FIFO
 * among them, on which the read would block) and no virtual layout (other files' datasets). The
 * log reader's storage_ (eval/rs_h5log_open.c) checks the same and more (filters); it is not
 * shared so that the fuzzed log reader stays the code its campaigns counted (docs/fuzzing.md). */
static rs_status in_file_(hid_t d, const char *path, const char *dataset)
{
    const hid_t dcpl = H5Dget_create_plist(d);
    if (dcpl < 0) return rs_h5_fail(RS_E_FORMAT, "%s:%s: cannot read its storage", path, dataset);
    rs_status st = RS_OK;
    const H5D_layout_t lay = H5Pget_layout(dcpl);
    if (lay != H5D_COMPACT && lay != H5D_CONTIGUOUS && lay != H5D_CHUNKED)
        st = rs_error_set(RS_E_FORMAT, "%s:%s: storage layout %d (virtual or unknown) is not supported", path, dataset,
                          (int)lay);
    else if (H5Pget_external_count(dcpl) != 0)
        st = rs_error_set(RS_E_FORMAT, "%s:%s: raw data in external files is not supported", path, dataset);
    H5Pclose(dcpl);
    return st;
}

rs_status rs_h5_read_floats(const char *path, const char *dataset, size_t max_elements, float **data, size_t *n,
                            size_t *last_dim)
{
    RS_CHECK(path && dataset && data && n && last_dim, RS_E_INVAL, "rs_h5_read_floats: NULL argument");
    *data = NULL;
    rs_h5_quiet();
    struct stat sb;
    /* a FIFO or device would block or stream inside HDF5: regular files only */
    if (stat(path, &sb) != 0) return rs_error_set(RS_E_IO, "cannot open HDF5 file '%s': %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return rs_error_set(RS_E_IO, "cannot open HDF5 file '%s': not a regular file", path);
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
    if (st == RS_OK) st = in_file_(dset, path, dataset);
    if (st == RS_OK) {
        *data = (float *)malloc((size_t)total * sizeof(float));
        if (!*data)
            st = rs_error_set(RS_E_NOMEM, "%s:%s: cannot allocate %llu floats", path, dataset, (unsigned long long)total);
    }
    if (st == RS_OK && H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, *data) < 0)
        st = rs_h5_fail(RS_E_IO, "%s:%s: read failed", path, dataset);
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
