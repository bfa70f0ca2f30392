/* rs_cuda_cpasync.cuh — cp.async helpers (sm_80+): copies global -> shared that bypass registers, used by the
 * low-precision read pipeline (rs_cuda_lpread.cuh) and the tensor-core verification's tile staging
 * (rs_cuda_verify_tc.cuh). A lane's own copies are visible to it after rs_cp_wait; another lane's only after a
 * __syncwarp / __syncthreads as well. */
#ifndef RS_CUDA_CPASYNC_CUH
#define RS_CUDA_CPASYNC_CUH

__device__ __forceinline__ unsigned rs_smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void rs_cp16(void *dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(rs_smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void rs_cp8(void *dst, const void *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(rs_smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void rs_cp4(void *dst, const void *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(rs_smem_u32(dst)), "l"(src) : "memory");
}
/* 4 bytes, or 4 zero bytes without reading src where !on (src-size 0: the copy's zero fill) */
__device__ __forceinline__ void rs_cp4z(void *dst, const void *src, bool on)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(rs_smem_u32(dst)), "l"(src), "r"(on ? 4 : 0)
                 : "memory");
}
__device__ __forceinline__ void rs_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void rs_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

/* Hopper's bulk L2 prefetch (cp.async.bulk.prefetch.L2, sm_90): `bytes` (a multiple of 16, 16-byte aligned) from
 * global memory into the L2 by one thread, no registers held: the fp32 read's chunks ahead (rs_cuda_launch_opts.replay_l2pf) */
__device__ __forceinline__ void rs_l2_prefetch(const void *src, unsigned bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}

#endif /* RS_CUDA_CPASYNC_CUH */
