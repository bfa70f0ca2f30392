/* gpu_test_check.h — the evaluator's GPU tests' call checks (test_gpu_ops, test_gpu_gemm, gemm_emul_probe): a failing
 * CUDA or library call prints where and why and ends the test with exit 1. (kernels/tests has the
 * same two macros in cuda_test_util.h, with its kernel-test helpers.) */
#ifndef GPU_TEST_CHECK_H
#define GPU_TEST_CHECK_H

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "replayssm/common/rs_status.h"

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define RSK(call)                                                                                  \
    do {                                                                                           \
        rs_status s_ = (call);                                                                     \
        if (s_ != RS_OK) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, rs_last_error());        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif /* GPU_TEST_CHECK_H */
