/* rs_gpu_common.cuh — private helpers of the dense ops (rs_gpu_ops.cu, rs_gpu_attn.cu,
 * rs_gpu_score.cu): host-side argument checks and launch status, the device twins of
 * rs_layers.c's activations, and deterministic warp / block reductions.
 *
 * Determinism of the reductions: a warp sum is an xor butterfly, so at every level the two
 * partners compute a + b and b + a (the same bits: IEEE addition commutes) and every lane ends
 * with the same value; the block reduction is warp sums, then warp 0 sums the per-warp results
 * in lane order. The order depends only on blockDim, never on timing. */
#ifndef RS_GPU_COMMON_CUH
#define RS_GPU_COMMON_CUH

#include "replayssm/common/rs_mathf.h"
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rs_gpu_ops.h"

/* Return RS_E_INVAL with a message from the launcher when cond fails (before any launch). */
#define RSG_REQUIRE(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) return rs_error_set(RS_E_INVAL, __VA_ARGS__);                                 \
    } while (0)

/* After a launch: RS_E_CUDA naming the op if the launch (or an earlier asynchronous error
 * surfacing now) failed. No synchronisation. */
static inline rs_status rsg_launched(const char *who)
{
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: launch failed: %s", who, cudaGetErrorString(e));
    return RS_OK;
}

static inline cudaStream_t rsg_stream(rs_cuda_stream s) { return (cudaStream_t)s; }

/* ---- activations: rs_layers.c's formulas on rs_mathf.h's exp / log1p (the CPU's twins, bit for bit)
 * instead of CUDA's expf / log1pf, which round differently from glibc's ------------------------------ */
__device__ __forceinline__ float rsg_sigmoid(float x) { return rs_sigmoidf(x); }

__device__ __forceinline__ float rsg_silu(float x) { return rs_siluf(x); }

__device__ __forceinline__ float rsg_softplus(float x) { return rs_softplusf(x); }

/* ---- reductions ----------------------------------------------------------------------------- */
__device__ __forceinline__ double rsg_warp_sum_d(double x)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x = x + __shfl_xor_sync(0xFFFFFFFFu, x, off);
    return x;
}

/* Sum of v over the block (blockDim.x a multiple of 32, <= 1024); sh: >= 33 doubles of shared
 * memory. Every thread gets the result. Contains two __syncthreads: call from uniform code. */
__device__ __forceinline__ double rsg_block_sum_d(double v, double *sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = rsg_warp_sum_d(v);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double t = lane < nw ? sh[lane] : 0.0;
        t = rsg_warp_sum_d(t);
        if (lane == 0) sh[32] = t;
    }
    __syncthreads();
    return sh[32];
}

#endif /* RS_GPU_COMMON_CUH */
