/* rs_h5io.c — small HDF5 reading helpers of the eval layer (see rs_h5io.h). */
#include <stdlib.h>

#include <hdf5.h>

#include "replayssm/eval/rs_h5io.h"
#include "rs_check.h"

rs_status rs_h5_read_floats(const char *path, const char *dataset, float **data, size_t *n,
                            size_t *last_dim)
{
    RS_CHECK(path && dataset && data && n && last_dim, RS_E_INVAL, "rs_h5_read_floats: NULL argument");
    *data = NULL;
    rs_status st = RS_OK;
    hid_t file = -1, dset = -1, space = -1;
    H5E_BEGIN_TRY
    {
        file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (file >= 0) dset = H5Dopen2(file, dataset, H5P_DEFAULT);
    }
    H5E_END_TRY;
    if (file < 0) return rs_error_set(RS_E_IO, "cannot open HDF5 file '%s'", path);
    if (dset < 0) {
        H5Fclose(file);
        return rs_error_set(RS_E_FORMAT, "%s: no dataset '%s'", path, dataset);
    }
    space = H5Dget_space(dset);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK];
    if (rank < 1 || H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        st = rs_error_set(RS_E_FORMAT, "%s:%s: dataset must have rank >= 1", path, dataset);
        goto done;
    }
    hsize_t total = 1;
    for (int d = 0; d < rank; ++d) total *= dims[d];
    if (total == 0) {
        st = rs_error_set(RS_E_SHAPE, "%s:%s: dataset is empty", path, dataset);
        goto done;
    }
    hid_t dtype = H5Dget_type(dset);
    H5T_class_t cls = H5Tget_class(dtype);
    H5Tclose(dtype);
    if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
        st = rs_error_set(RS_E_FORMAT, "%s:%s: dataset is not numeric", path, dataset);
        goto done;
    }
    *data = malloc((size_t)total * sizeof(float));
    if (!*data) {
        st = rs_error_set(RS_E_NOMEM, "%s:%s: cannot allocate %llu floats", path, dataset,
                          (unsigned long long)total);
        goto done;
    }
    if (H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, *data) < 0) {
        free(*data);
        *data = NULL;
        st = rs_error_set(RS_E_IO, "%s:%s: read failed", path, dataset);
        goto done;
    }
    *n = (size_t)total;
    *last_dim = (size_t)dims[rank - 1];
done:
    if (space >= 0) H5Sclose(space);
    H5Dclose(dset);
    H5Fclose(file);
    return st;
}
