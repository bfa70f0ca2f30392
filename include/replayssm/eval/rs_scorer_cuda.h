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

#include "replayssm/eval/rs_scorer.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_scorer_cuda_create() : a GPU scorer for model m on device cfg->device (an rs_scorer_factory).
 *  @return RS_OK, RS_E_INVAL, RS_E_UNSUPPORTED (a shape the kernels do not run), RS_E_CUDA (no
 *  device, out of device memory: the message has the plan), RS_E_NOMEM. */
rs_status rs_scorer_cuda_create(const rs_model *m, const rs_scorer_config *cfg, rs_scorer **out);

#ifdef __cplusplus
}
#endif
#endif /* RS_SCORER_CUDA_H */
