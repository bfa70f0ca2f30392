/* rs_quant_error.c — error statistics of a storage format, synthetic matrices, HDF5 input. */
#include "replayssm/theory/rs_quant_error.h"

#include <gsl/gsl_cdf.h> /* inverse CDFs for the synthetic distributions */
#include <math.h>
#include <stdlib.h>

#include "replayssm/quant/rs_philox.h"  /* rs_rand_fill: counter-based uniforms */
#include "replayssm/quant/rs_qtensor.h" /* rs_quantize_roundtrip */
#include "rs_check.h"

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
