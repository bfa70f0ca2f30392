/* rs_quant_error.h — measure what storing a tensor in a format does to it (the library side
 * of `replayssm quant-error`), and counter-based synthetic test matrices.
 *
 * Legend: n = elements, E = tensor extent (elements per tensor scale, e.g. rows*cols). */
#ifndef RS_QUANT_ERROR_H
#define RS_QUANT_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_status.h"

typedef struct rs_quant_error_stats {
    double rel_fro;        /* ||Q(x) - x||_F / ||x||_F */
    double max_abs;        /* max |Q(x) - x| */
    double max_rel;        /* max |Q(x) - x| / max |x| */
    double mean_signed;    /* mean (Q(x) - x): the bias */
    double bias_rel;       /* mean (Q(x) - x) / mean |x| */
    double bytes_per_elem; /* storage incl. scales */
    size_t n;
} rs_quant_error_stats;

typedef enum rs_synth_kind {
    RS_SYNTH_GAUSSIAN = 0, /* N(0, 1) */
    RS_SYNTH_STUDENT3 = 1, /* Student t, 3 degrees of freedom (heavy tails, rare outliers) */
    RS_SYNTH_POSITIVE = 2  /* |N(0,1)| + 0.5: one-signed (exposes RTN bias) */
} rs_synth_kind;

/*! rs_synth_matrix() : x[n] drawn from `kind`, element i from the Philox word
 *  (seed, stream = 2^63 + kind, i) through the inverse CDF, so any element is reproducible
 *  alone and the data never shares random words with the SR streams used on it. */
rs_status rs_synth_matrix(rs_synth_kind kind, uint64_t seed, size_t n, float *x);

/*! rs_synth_name() : "gaussian", "student-t3", "positive". */
const char *rs_synth_name(rs_synth_kind kind);

/*! rs_quant_error_measure() : statistics of Q(x) - x for x[n] stored in f with tensor
 *  extent E; `work` is caller scratch of n floats. SR uses (seed, stream 0). */
rs_status rs_quant_error_measure(const rs_format *f, const float *x, size_t n, size_t tensor_extent,
                                 uint64_t seed, float *work, rs_quant_error_stats *out);

#endif
