/* rs_scorer_cuda.h — the GPU scorer (rs_scorer.h) of libreplayssm-evalcuda: the whole forward of
 * the fp32 reference and every policy run on one GPU, runs stacked as batch rows of every GEMM
 * (cuBLAS), the state engine on the device (kernels/ rs_cuda_scan.h: every policy, format and
 * window of the CPU engine), attention over device KV caches, and the per-position scoring on
 * the device (only the [R][chunk] results come back). Memory is planned up front: weights,
 * KV caches of every run, SSM states, activations and logits of one chunk; a plan that does not
 * fit is refused before anything is allocated, naming the largest consumer. docs/evaluator.md
 * ("The GPU evaluator") has the design and the measured numbers. */
#ifndef RS_SCORER_CUDA_H
#define RS_SCORER_CUDA_H

#include "replayssm/engine/rs_policy.h"
#include "replayssm/eval/rs_scorer.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_scorer_cuda_create() : a GPU scorer for model m on device cfg->device (an rs_scorer_factory).
 *  @return RS_OK, RS_E_INVAL, RS_E_UNSUPPORTED (a shape the kernels do not run), RS_E_CUDA (no
 *  device, out of device memory: the message has the plan), RS_E_NOMEM. */
rs_status rs_scorer_cuda_create(const rs_model *m, const rs_scorer_config *cfg, rs_scorer **out);

/* What a GPU evaluation needs in device memory (rs_scorer_cuda_plan), in bytes, by consumer. */
typedef struct rs_gpu_plan_report {
    double weights;      /* the model's weights as the GPU keeps them (+ GEMM weight copies / splits)   */
    double kv;           /* KV caches of every run (and book in flight) at max_tokens positions          */
    double state;        /* SSM states, replay rings and checkpoints, conv states                       */
    double act;          /* a chunk's activations, the MoE and decode scratch, scoring                   */
    double logits;       /* a chunk's logits of every run                                                */
    double total;        /* their sum; creating the scorer also needs ~0.5 GiB of margin (cuBLAS, context) */
    double device_free;  /* free memory of cfg->device now; 0 when no GPU is visible                     */
    char gemm[256];      /* the GEMM method the scorer would use                                         */
} rs_gpu_plan_report;

/*! rs_scorer_cuda_plan() : the device-memory plan rs_scorer_cuda_create would make for m with the fp32
 *  reference and runs[n_runs] over max_tokens positions in chunks of `chunk`, one book in flight, computed
 *  on the host without allocating (and without a GPU: device_free is then 0). m may be a shapes-only model
 *  (rs_model_init_shapes): its plan is that of the same config with weights made on the GPU in the formats
 *  of its quantization description. @return RS_OK, RS_E_INVAL, RS_E_UNSUPPORTED. */
rs_status rs_scorer_cuda_plan(const rs_model *m, size_t n_runs, const rs_run_spec *runs, size_t chunk,
                              size_t max_tokens, rs_compute_mode compute, int device, rs_gpu_plan_report *out);

#ifdef __cplusplus
}
#endif
#endif /* RS_SCORER_CUDA_H */
