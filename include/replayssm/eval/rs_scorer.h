/* rs_scorer.h — the evaluator's compute engine, as a program sees it: a scorer forwards the fp32
 * reference and R policy runs over teacher-forced tokens and scores every run against the
 * reference (rs_kl.h's definitions). A program picks one through rs_kleval_config.scorer:
 *   rs_scorer_cpu_create   the CPU engine (this library)
 *   rs_scorer_cuda_create  one GPU (libreplayssm-evalcuda, rs_scorer_cuda.h), built with CUDA only
 * The interface a scorer implements is private to the library (eval/kleval/rs_scorer_impl.h). */
#ifndef RS_SCORER_H
#define RS_SCORER_H

#include <stddef.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Precision of the GEMMs (activations and accumulation stay fp32 in every mode). */
typedef enum rs_compute_mode {
    RS_COMPUTE_FP32 = 0,   /* fp32 inputs, fp32 accumulation (OpenBLAS / cuBLAS SGEMM) */
    RS_COMPUTE_TF32 = 1,   /* GEMM inputs rounded to TF32 (GPU tensor cores), fp32 accumulation */
    RS_COMPUTE_BF16 = 2,   /* GEMM inputs in bf16 (weights and activations), fp32 accumulation */
    RS_COMPUTE_TF32X3 = 3, /* GPU: the split-TF32 GEMM on the tensor cores (X = X_hi + X_lo, bf16 / f16
                              weights exact): inputs to ~22 bits, but the tensor cores' fp32 sums
                              err 3-13x more than an SGEMM's at the 4B shapes (kernels/dense/rs_dense_gemm.h;
                              docs/evaluator.md); 3.3x faster GEMMs */
    RS_COMPUTE_TWIN = 4    /* GPU: the CPU evaluator's twin, for checking (docs/evaluator.md "The twin
                              compute mode"): every GEMM and the attention summed in double and
                              rounded once, the fp32-state recurrences in the CPU engine's operation
                              order, the norms' sums in the CPU's order, scoring on the host by
                              rs_kl.c; several times slower than fp32 */
} rs_compute_mode;

/*! rs_compute_mode_name() : "fp32", "tf32", "bf16", "tf32x3", "twin" ("?" otherwise). */
const char *rs_compute_mode_name(rs_compute_mode m);

/*! rs_compute_mode_parse() : the inverse. @return RS_OK or RS_E_INVAL naming the choices. */
rs_status rs_compute_mode_parse(const char *s, rs_compute_mode *out);

/* Cost counters, cumulative since create (seconds of the stages; a scorer fills what it can
 * measure, 0 otherwise). */
typedef struct rs_scorer_stats {
    double gemm_s, attention_s, recurrence_s, other_s, score_s, copy_s, total_s;
    double moe_s;               /* GPU: MoE routing, grouping on the host, gathers and weighted sums */
    size_t peak_bytes;          /* device (GPU) or planned host bytes (CPU) */
    size_t steps, positions;    /* steps taken, positions forwarded */
} rs_scorer_stats;

typedef struct rs_scorer rs_scorer;               /* opaque */
typedef struct rs_scorer_config rs_scorer_config; /* what the evaluator hands a constructor */

/* A scorer constructor (rs_scorer_cpu_create, rs_scorer_cuda_create). The model must outlive
 * the scorer. @return RS_OK, RS_E_INVAL, RS_E_NOMEM / RS_E_CUDA (the message names the largest
 * consumer of memory), RS_E_UNSUPPORTED (a shape or mode this scorer does not run). */
typedef rs_status (*rs_scorer_factory)(const rs_model *m, const rs_scorer_config *cfg, rs_scorer **out);

/*! rs_scorer_cpu_create() : the CPU scorer (rs_runner + rs_kl). */
rs_status rs_scorer_cpu_create(const rs_model *m, const rs_scorer_config *cfg, rs_scorer **out);

/*! rs_scorer_free() : destroy; accepts NULL. */
void rs_scorer_free(rs_scorer *sc);

#ifdef __cplusplus
}
#endif
#endif /* RS_SCORER_H */
