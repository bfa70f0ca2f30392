/* rs_cuda_common.cuh — host-side helpers shared by the kernel launchers: turning CUDA errors
 * into rs_status with a message, and warp reductions. */
#ifndef RS_CUDA_COMMON_CUH
#define RS_CUDA_COMMON_CUH

#include <cuda_runtime.h>

#include "replayssm/cuda/rs_cuda.h"

/* After a launch: RS_E_CUDA naming the kernel if the launch failed (no sync). */
static inline rs_status rs_cuda_launch_status(const char *who)
{
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: launch failed: %s", who, cudaGetErrorString(e));
    return RS_OK;
}

static inline rs_status rs_cuda_call_status(cudaError_t e, const char *who, const char *what)
{
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: %s failed: %s", who, what, cudaGetErrorString(e));
    return RS_OK;
}

/* Argument checks of an rs_cuda_ckpt_round (rs_cuda_decode.cu; used by the decode and verify launchers). */
extern "C" rs_status rs_cuda_check_ckpt_round(const rs_cuda_ckpt_round *c, const char *who);
/* The checkpoint rounding pass (rs_cuda_decode.cu: rs_k_ckpt_round) over the heads of the rows with
 * fill + T > lim (decode: T = 1, lim = L - 1, i.e. fill + 1 == L; verify: lim = L); nothing when
 * c->dtype is F32. */
extern "C" rs_status rs_cuda_ckpt_round_launch(const rs_ssm_dims *d, float *S, const int32_t *fill, int lim, int T,
                                               const rs_cuda_ckpt_round *c, cudaStream_t s);

/* Programmatic dependent launch (sm_90; issue 18, tenth session, docs/kernels-notes.md "v4d"). A kernel launched
 * by rs_launch_pdl may start while the kernel before it in the stream (its primary) still runs, once every
 * block of that primary has called rs_pdl_trigger (or exited); it must call rs_pdl_wait before it reads
 * anything the primary writes (and before it writes anything the primary reads): the wait returns when the
 * primary has completed and its memory is visible. Launched normally, the wait returns at once and the
 * trigger does nothing, so one kernel serves both launches. Work after the secondary in the stream waits
 * for both, as for any launch. */
__device__ __forceinline__ void rs_pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void rs_pdl_trigger()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
/* `k<<<grid, block, smem, s>>>(args...)` with the programmatic-serialization attribute; a failure is left for
 * rs_cuda_launch_status (cudaGetLastError), as with <<<>>> */
template <typename... KP, typename... A>
static inline void rs_launch_pdl(void (*k)(KP...), unsigned grid, unsigned block, size_t smem, cudaStream_t s,
                                 A &&...args)
{
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid), cfg.blockDim = dim3(block), cfg.dynamicSmemBytes = smem, cfg.stream = s;
    cfg.attrs = at, cfg.numAttrs = 1;
    (void)cudaLaunchKernelEx(&cfg, k, static_cast<A &&>(args)...);
}

__device__ __forceinline__ float rs_dev_warp_sum(float x)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x = __fadd_rn(x, __shfl_xor_sync(0xFFFFFFFFu, x, off));
    return x;
}

__device__ __forceinline__ float rs_dev_warp_max(float x)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, off));
    return x;
}

#endif /* RS_CUDA_COMMON_CUH */
