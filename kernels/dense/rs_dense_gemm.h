/* rs_dense_gemm.h — the dense GEMMs of the GPU evaluator: Y = beta Y + X W^T on cuBLAS by one of
 * four methods (plus a float64 diagnostic); eval/gpu/rs_gpu_weights.h prepares a model's weight
 * matrices for them.
 *
 *   bf16x3  `--compute fp32`, the default, for every weight matrix whose values are bf16-exact (a
 *           bf16 checkpoint's, i.e. every model of the paper; the others run as sgemm): X =
 *           X1 + X2 + X3 exactly (rsg_bf16x3_split: three bf16 planes of 8 significant bits each
 *           cover fp32's 24), W in a bf16 copy (exact), so every product X_i w is exact in fp32;
 *           K is cut into blocks of RSG_BF16X3_KB = 512 and each block's three products run as
 *           bf16 tensor-core GEMMs with fp32 accumulation, chained with beta = 1 (the small parts
 *           first) into a partial sum per block (cuBLAS strided-batched GEMMs over the blocks);
 *           the blocks' partial sums are then added in fp32 on the CUDA cores, round to nearest,
 *           in block order (rsg_linear_bf16x3). Why: the tensor cores' fp32 accumulation errs more
 *           than an SGEMM's FFMAs and more with the chain length (tf32x3 below); cutting the chain
 *           at 512 keeps that error below SGEMM's. On the H200 (gemm_emul_probe, M =
 *           2560): max |err| / max |y64| 5.0e-7 - 6.0e-7 against SGEMM's 9.3e-7 - 2.5e-6 at
 *           K = 2560 .. 9216, mean 8e-9 against 1.7e-8, at 2.0-2.1x SGEMM's speed (full-K chains:
 *           4-5x faster but 1.3-12x SGEMM's error). The blocks' partial sums cost device
 *           traffic (nb x M x N floats written and read), bounded by a scratch of at most 1 GiB:
 *           wide matrices (the LM head) run in column slices. RS_GPU_GEMM=sgemm at create makes
 *           `--compute fp32` run cuBLAS SGEMM instead (for comparisons).
 *   sgemm   cuBLAS SGEMM on the CUDA cores (CUBLAS_DEFAULT_MATH: true fp32 products and sums);
 *           `--compute fp32` for matrices that are not bf16-exact (f32 checkpoints)
 *   tf32    one TF32 tensor-core GEMM (CUBLAS_COMPUTE_32F_FAST_TF32: X and W enter with 10
 *           mantissa bits, fp32 accumulation); `--compute tf32`
 *   tf32x3  the split-TF32 GEMM, `--compute tf32x3`: X = X_hi + X_lo (rsg_tf32_split: both
 *           TF32-exact, |X - X_hi - X_lo| <= 2^-22 |X|) and, likewise, W = W_hi + W_lo;
 *           Y = beta Y + X_lo W_hi^T [+ X_hi W_lo^T] + X_hi W_hi^T as two or three TF32 tensor-core
 *           GEMMs chained with beta = 1 (the small terms first). The dropped X_lo W_lo^T is
 *           <= 2^-22 |X||W| per product. Error per output y = sum_k x_k w_k, relative to
 *           sum_k |x_k w_k|:
 *             e_rep + 3u + (the tensor cores' fp32 accumulation),
 *           u = 2^-24, e_rep = 2^-22 when W is TF32-exact (W_lo == 0, two products: X represented
 *           to ~22 bits, W exactly, every TF32 x TF32 product exact) and ~3 * 2^-22 otherwise; 3u:
 *           the chain's additions. The representation is fp32-grade; the accumulation is not: the
 *           tensor cores' fp32 sums lose more than an SGEMM's round-to-nearest FFMAs (truncation,
 *           once per k-step of 8 products, was measured on V100 / A100, Fasi et al. 2021), and the
 *           error grows with the accumulation chain: on the H200 (test_gpu_gemm) e_fro
 *           1e-6 – 6e-6 at K = 2560 .. 9216 against SGEMM's 3e-7 – 5e-7 (3-13x), while plain TF32 is
 *           2.1e-4. End to end (docs/evaluator.md) that moved the Qwen3.5-4B-shape logits 1.5e-4
 *           from SGEMM's (transformers parity 1.6e-4 against SGEMM's 3.3e-5): not at fp32-noise
 *           level, so it is an option, not the default. bf16 and f16 checkpoints (every model of
 *           the paper) convert to TF32-exact fp32 (8 / 11 significant bits <= TF32's 11), so the
 *           scorer checks each weight matrix bit by bit at create and keeps W_lo only for the
 *           others (f32 checkpoints), counted in the memory plan. tests/cuda/test_gpu_gemm.cu
 *           measures all three methods against a float64 reference.
 *
 * Every function checks its arguments on the host and returns an rs_status (RS_E_INVAL before
 * any launch, RS_E_CUDA with cuBLAS' status); nothing synchronises or allocates except
 * the weight preparation of eval/gpu/rs_gpu_weights.h. */
#ifndef RS_DENSE_GEMM_H
#define RS_DENSE_GEMM_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>

#include "replayssm/quant/rs_status.h"

typedef enum rsg_gemm_method {
    RSG_GEMM_SGEMM = 0,
    RSG_GEMM_TF32 = 1,
    RSG_GEMM_TF32X3 = 2,
    RSG_GEMM_BF16X3 = 3,
    RSG_GEMM_F64 = 4, /* diagnostic (RS_GPU_GEMM=f64 with --compute fp32): rsg_linear_f64 */
    RSG_GEMM_TWIN = 5 /* --compute twin: rsg_linear_twin (rs_dense_ops.h), the CPU's dgemm sums in its order */
} rsg_gemm_method;

#define RSG_BF16X3_KB 512 /* bf16x3's K block: the tensor cores' accumulation chain */

/* "sgemm", "tf32", "tf32x3", "bf16x3", "f64", "twin" ("?" otherwise) */
const char *rsg_gemm_method_name(rsg_gemm_method m);

/* 1 if every one of w[0 .. n) (host memory) is TF32-exact (its low 13 mantissa bits are 0), else
 * 0. Scans with up to `threads` threads (<= 1: the calling thread alone). */
int rsg_tf32_exact(const float *w, size_t n, int threads);

/* 1 if every one of w[0 .. n) (host memory) is bf16-exact (its low 16 bits are 0), else 0; as
 * rsg_tf32_exact */
int rsg_bf16_exact(const float *w, size_t n, int threads);

/* floats of workspace rsg_linear / rsg_linear_bf16x3 need for M rows of K: 2 M K for tf32x3
 * (X_hi, X_lo), ceil(3 M K / 2) for bf16x3 (three bf16 planes), 0 else */
size_t rsg_linear_ws_floats(rsg_gemm_method m, size_t M, size_t K);

/* X [M][K] (ld ldx) -> three bf16 planes B[p][M][K] (ld K, plane stride M K) with X = B0 + B1 + B2
 * exactly for finite X (|X| >= 2^-101: below, the third plane's bits reach bf16's subnormals);
 * B0 = X's nearest bf16 (ties to even; past bf16's largest finite value, X truncated), B1, B2 the
 * same of the remainders. inf / NaN: B0 = X, B1 = B2 = 0. */
rs_status rsg_bf16x3_split(int M, int K, const float *X, size_t ldx, void *B, cudaStream_t s);

/* floats of partial-sum scratch that lets rsg_linear_bf16x3 run M x N x K in one column slice:
 * nb M N with nb = ceil(K / RSG_BF16X3_KB) (nb = 1: none needed) */
size_t rsg_bf16x3_part_floats(size_t M, size_t N, size_t K);

/* bf16x3 (above): Y [M][N] (ld ldy) = beta Y + X W^T with W_bf16 [N][K] the bf16 copy of a
 * bf16-exact W (row-major, ld K); ws: >= rsg_linear_ws_floats(RSG_GEMM_BF16X3, M, K) floats;
 * part: partial sums, part_floats >= nb M (one column per slice; fewer slices the more there
 * is; unused when K <= RSG_BF16X3_KB). Deterministic: fixed GEMM shapes and summation order. */
rs_status rsg_linear_bf16x3(cublasHandle_t h, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                            const void *W_bf16, float beta, float *Y, size_t ldy, void *ws, size_t ws_floats,
                            float *part, size_t part_floats, cudaStream_t s);

/* Y[M][N] (row-major, ldy) = beta Y + X[M][K] (ldx) W[N][K]^T (packed rows, ld K) by method m on
 * handle h, which must be bound to the stream the caller orders this on (cublasSetStream).
 * tf32x3: W is W_hi (TF32-exact, e.g. after rsg_tf32_split in place), W_lo [N][K] its low part
 * or NULL when W is TF32-exact as given; ws: rsg_linear_ws_floats floats of device memory (X's
 * split lands there), ws_floats its size. sgemm / tf32: W_lo and ws are unused (NULL, 0).
 * 1 <= M, N, K < 2^31. The sgemm path sets h's math mode to CUBLAS_DEFAULT_MATH. */
rs_status rsg_linear(cublasHandle_t h, rsg_gemm_method m, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                     const float *W, const float *W_lo, float beta, float *Y, size_t ldy, float *ws, size_t ws_floats,
                     cudaStream_t s);

/* f64 (diagnostic, RS_GPU_GEMM=f64 at create): Y [M][N] (ld ldy) = fl(beta Y + X W^T) with X converted
 * to double into xd [M][K] (exact), W_f64 [N][K] the double copy of W (exact), the sums by cuBLAS
 * dgemm into yd [M][N] (every product exact in double; the sums lose <= ~K 2^-53 of sum |x w|) and
 * one rounding to float: the correctly rounded fp32 result except within ~K 2^-53 of a rounding
 * boundary, the twin of the CPU backend's RS_CPU_GEMM=f64 (OpenBLAS dgemm): the two round to the
 * same float nearly always. For measuring how much of the GPU-vs-CPU drift the fp32 GEMMs' rounding
 * is (docs/gpu-evaluator.md); 8 bytes per weight on the device, never the default. */
rs_status rsg_linear_f64(cublasHandle_t h, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                         const double *W_f64, float beta, float *Y, size_t ldy, double *xd, double *yd, cudaStream_t s);

#endif /* RS_DENSE_GEMM_H */
