/* rs_quant_error.c — error statistics of a storage format, synthetic matrices, HDF5 input. */
#include "rs_quant_error.h"

#include <gsl/gsl_cdf.h> /* inverse CDFs for the synthetic distributions */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>

#include "rs_philox.h"  /* rs_rand_fill: counter-based uniforms */
#include "rs_qtensor.h" /* rs_quantize_roundtrip */

/* Synthetic data must never share random words with the SR it is measured under (stream 0
 * in rs_quant_error_measure): correlated data and rounding bits make SR look biased. The
 * data streams live in the top half of the stream space, which rs_stream_id() never uses
 * for slots 0..7. */
#define RS_SYNTH_STREAM_BASE (1ull << 63)

const char *rs_synth_name(rs_synth_kind kind)
{
    switch (kind) {
    case RS_SYNTH_GAUSSIAN: return "gaussian";
    case RS_SYNTH_STUDENT3: return "student-t3";
    case RS_SYNTH_POSITIVE: return "positive";
    }
    return "?";
}

rs_status rs_synth_matrix(rs_synth_kind kind, uint64_t seed, size_t n, float *x)
{
    RS_CHECK(x || n == 0, RS_E_INVAL, "rs_synth_matrix: NULL output");
    RS_CHECK(kind <= RS_SYNTH_POSITIVE, RS_E_INVAL, "rs_synth_matrix: unknown kind %d", (int)kind);
    uint32_t buf[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        size_t m = n - i0 < 256 ? n - i0 : 256;
        rs_rand_fill(seed, RS_SYNTH_STREAM_BASE | (uint64_t)kind, i0, m, buf);
        for (size_t j = 0; j < m; ++j) {
            /* uniform in (0, 1), never 0 or 1: (u + 0.5) / 2^32 */
            double p = ((double)buf[j] + 0.5) * 0x1.0p-32;
            double v;
            switch (kind) {
            case RS_SYNTH_GAUSSIAN: v = gsl_cdf_ugaussian_Pinv(p); break;
            case RS_SYNTH_STUDENT3: v = gsl_cdf_tdist_Pinv(p, 3.0); break;
            default: v = fabs(gsl_cdf_ugaussian_Pinv(p)) + 0.5; break;
            }
            x[i0 + j] = (float)v;
        }
    }
    return RS_OK;
}

rs_status rs_quant_error_measure(const rs_format *f, const float *x, size_t n, size_t tensor_extent,
                                 uint64_t seed, float *work, rs_quant_error_stats *out)
{
    RS_CHECK(f && x && work && out, RS_E_INVAL, "rs_quant_error_measure: NULL argument");
    RS_CHECK(n > 0, RS_E_SHAPE, "rs_quant_error_measure: empty tensor");
    RS_TRY(rs_quantize_roundtrip(f, x, n, tensor_extent, seed, 0, work));
    double se = 0, sx = 0, sabs = 0, ssigned = 0, maxe = 0, maxx = 0;
    for (size_t i = 0; i < n; ++i) {
        double e = (double)work[i] - (double)x[i];
        RS_CHECK(isfinite(e), RS_E_NONFINITE,
                 "element %zu: stored value %g of input %g is not finite (format overflow)", i,
                 (double)work[i], (double)x[i]);
        se += e * e;
        sx += (double)x[i] * x[i];
        sabs += fabs((double)x[i]);
        ssigned += e;
        if (fabs(e) > maxe) maxe = fabs(e);
        if (fabs((double)x[i]) > maxx) maxx = fabs((double)x[i]);
    }
    out->rel_fro = sx > 0 ? sqrt(se / sx) : sqrt(se);
    out->max_abs = maxe;
    out->max_rel = maxx > 0 ? maxe / maxx : maxe;
    out->mean_signed = ssigned / (double)n;
    out->bias_rel = sabs > 0 ? ssigned / sabs : 0.0;
    out->bytes_per_elem = rs_format_bytes_per_element(f, tensor_extent);
    out->n = n;
    return RS_OK;
}

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
