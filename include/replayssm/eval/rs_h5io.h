/* rs_h5io.h — reading plain numeric datasets from any HDF5 file (`replayssm quant-error --input`). */
#ifndef RS_H5IO_H
#define RS_H5IO_H

#include <stddef.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_h5_read_floats() : read a whole numeric dataset of an HDF5 file as float32 into a
 *  malloc'd buffer (caller frees). *n gets the element count, *last_dim the length of the
 *  last (contiguous) dimension. Clear errors for a missing file/dataset or empty data.
 *  The file is untrusted (docs/threat-model.md): a dataset of more than max_elements elements
 *  (0: no limit) is refused with RS_E_SHAPE before anything is allocated or read, and one whose
 *  raw data lies outside the file (external raw-data files, virtual layout) with RS_E_FORMAT. */
rs_status rs_h5_read_floats(const char *path, const char *dataset, size_t max_elements, float **data, size_t *n,
                            size_t *last_dim);

#ifdef __cplusplus
}
#endif
#endif /* RS_H5IO_H */
