/* rs_cuda_common.cuh — what every CUDA source of the project shares (kernels/, kernels/bench/, eval/gpu/):
 * CUDA results as rs_status with a message (host side), programmatic dependent launch, and the warp and block
 * reductions (device side). Private: included by bare name from kernels/ and eval/gpu/. */
#ifndef RS_CUDA_COMMON_CUH
#define RS_CUDA_COMMON_CUH

#include <cuda_runtime.h>

#include "replayssm/cuda/rs_cuda.h"
#include "rs_check.h"

/* ---- host: CUDA results as rs_status ------------------------------------------------------------ */

/* A CUDA runtime call's result: RS_OK, or RS_E_CUDA with "WHAT: <CUDA's message>". */
static inline rs_status rs_cuda_call_status(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: %s", what, cudaGetErrorString(e));
    return RS_OK;
}

/* RS_CUDA_TRY(call, what): return rs_cuda_call_status's error from the enclosing function (which returns
 * rs_status); the one CUDA-call check of the library sources. */
#define RS_CUDA_TRY(call, what) RS_TRY(rs_cuda_call_status((call), (what)))

/* After a launch: RS_E_CUDA naming the launcher if the launch (or an earlier asynchronous error surfacing
 * now) failed. No synchronisation. */
static inline rs_status rs_cuda_launch_status(const char *who)
{
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: launch failed: %s", who, cudaGetErrorString(e));
    return RS_OK;
}

/* Argument checks of an rs_cuda_ckpt_round (rs_cuda_decode.cu; used by the decode and verify launchers). */
extern "C" rs_status rs_cuda_check_ckpt_round(const rs_cuda_ckpt_round *c, const char *who);
/* The checkpoint rounding pass (rs_cuda_decode.cu: rs_k_ckpt_round) over the heads of the rows with
 * fill + T > lim (decode: T = 1, lim = L - 1, i.e. fill + 1 == L; verify: lim = L); nothing when
 * c->dtype is F32. */
extern "C" rs_status rs_cuda_ckpt_round_launch(const rs_ssm_dims *d, float *S, const int32_t *fill, int lim, int T,
                                               const rs_cuda_ckpt_round *c, cudaStream_t s);

/* Programmatic dependent launch (sm_90; docs/kernels.md). A kernel launched
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

/* ---- device: reductions -------------------------------------------------------------------------
 * Deterministic: a warp reduction is an xor butterfly over groups of W consecutive lanes (W a power of two
 * <= 32), so at every level the two partners compute a + b and b + a (the same bits: IEEE addition
 * commutes) and every lane of a group ends with the same value; the order depends only on W. */
__device__ __forceinline__ float rs_dev_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double rs_dev_add_rn(double a, double b) { return __dadd_rn(a, b); }

/* the sum of x over each group of W lanes, in every lane of the group */
template <int W = 32, typename T> __device__ __forceinline__ T rs_dev_warp_sum(T x)
{
    static_assert(W >= 2 && W <= 32 && (W & (W - 1)) == 0, "W must be a power of two in 2..32");
#pragma unroll
    for (int off = W / 2; off > 0; off >>= 1) x = rs_dev_add_rn(x, __shfl_xor_sync(0xFFFFFFFFu, x, off));
    return x;
}

/* the max of x over each group of W lanes (fmaxf: a NaN loses to a number), in every lane of the group */
template <int W = 32> __device__ __forceinline__ float rs_dev_warp_max(float x)
{
    static_assert(W >= 2 && W <= 32 && (W & (W - 1)) == 0, "W must be a power of two in 2..32");
#pragma unroll
    for (int off = W / 2; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, off));
    return x;
}

/* the min of x over the warp, in every lane */
__device__ __forceinline__ int rs_dev_warp_min(int x)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x = min(x, __shfl_xor_sync(0xFFFFFFFFu, x, off));
    return x;
}

/* Transposed warp reduction of N values a lane (N a power of two <= 32): afterwards x[0] of lane l holds
 * the warp-wide sum (MAX: max) of value index l / (32 / N). N - 1 + (5 - log2 N) shuffles instead of 5 N. */
template <int N, int OFF, bool MAX> struct rs_dev_tred {
    static __device__ __forceinline__ void run(float *x, int lane)
    {
        if constexpr (N > 1) {
            constexpr int H = N / 2;
            const bool up = (lane & OFF) != 0;
#pragma unroll
            for (int i = 0; i < H; ++i) {
                const float send = up ? x[i] : x[i + H];
                const float keep = up ? x[i + H] : x[i];
                const float got = __shfl_xor_sync(0xFFFFFFFFu, send, OFF);
                x[i] = MAX ? fmaxf(keep, got) : __fadd_rn(keep, got);
            }
            rs_dev_tred<H, OFF / 2, MAX>::run(x, lane);
        } else {
            const float got = __shfl_xor_sync(0xFFFFFFFFu, x[0], OFF);
            x[0] = MAX ? fmaxf(x[0], got) : __fadd_rn(x[0], got);
            rs_dev_tred<1, OFF / 2, MAX>::run(x, lane);
        }
    }
};
template <int N, bool MAX> struct rs_dev_tred<N, 0, MAX> {
    static __device__ __forceinline__ void run(float *, int) {}
};
template <int N, bool MAX = false> __device__ __forceinline__ float rs_dev_warp_reduce(float *x, int lane)
{
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "N must be a power of two <= 32");
    rs_dev_tred<N, 16, MAX>::run(x, lane);
    return x[0];
}

/* Sum of v over the block (blockDim.x a multiple of 32, <= 1024): warp sums, then warp 0 sums the per-warp
 * results in lane order; sh: >= 33 doubles of shared memory. Every thread gets the result. Contains two
 * __syncthreads: call from uniform code. */
__device__ __forceinline__ double rs_dev_block_sum(double v, double *sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = rs_dev_warp_sum(v);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double t = lane < nw ? sh[lane] : 0.0;
        t = rs_dev_warp_sum(t);
        if (lane == 0) sh[32] = t;
    }
    __syncthreads();
    return sh[32];
}

#endif /* RS_CUDA_COMMON_CUH */
