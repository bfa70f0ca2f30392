/* rs_h5dims.h — netCDF-4 dimensions for the log (private to eval/): HDF5 dimension scales written
 * with the core HDF5 API, in the layout of HDF5's H5DS high-level library (attributes CLASS,
 * NAME, REFERENCE_LIST on the scale, DIMENSION_LIST on the dataset), which is what netCDF-4,
 * h5netcdf / xarray and h5py's `dims` read. Written by hand so the eval library needs no
 * libhdf5_hl. docs/hdf5-layout.md "Dimensions (netCDF-4 / xarray)". */
#ifndef RS_H5DIMS_H
#define RS_H5DIMS_H

#include <hdf5.h>

#include "replayssm/quant/rs_status.h"

/* rs_h5_dim_only() : a netCDF "dimension that is not a variable" `name` of length n in group g:
 * a dataset with no stored values (nothing allocated), CLASS = DIMENSION_SCALE and netCDF's NAME
 * "This is a netCDF dimension but not a netCDF variable. <n>". */
rs_status rs_h5_dim_only(hid_t g, const char *name, hsize_t n);

/* rs_h5_make_scale() : make the existing 1-D dataset `path` below loc a dimension scale named
 * after itself (a netCDF coordinate variable: its values label the dimension). */
rs_status rs_h5_make_scale(hid_t loc, const char *path);

/* rs_h5_attach_dims() : dataset `path` below loc gets dimension i = the scale scales[i]
 * (paths below loc, rank of them): DIMENSION_LIST on the dataset, one REFERENCE_LIST entry
 * appended on each scale. */
rs_status rs_h5_attach_dims(hid_t loc, const char *path, int rank, const char *const *scales);

#endif /* RS_H5DIMS_H */
