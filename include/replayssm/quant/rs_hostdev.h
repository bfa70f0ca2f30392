/* rs_hostdev.h — one spelling for code that both the C compiler and nvcc compile.
 *
 *   RS_HD         __host__ __device__ under nvcc, nothing in C: a function callable from a kernel
 *                 and from host code (the same source, so the same integer decisions on both).
 *   RS_HD_INLINE  a header-only helper: static, inlined into every caller (always_inline in
 *                 C, __forceinline__ under nvcc), so a constant argument (an element type, a
 *                 rounding mode) is folded into the caller as if the code were written there.
 *   RS_UNROLL     `#pragma unroll` in nvcc's device pass (register-resident loop state); nothing
 *                 on the host (gcc -O2 decides, and an unknown pragma would warn under -Wall).
 *
 * Only plain C11 that is also valid C++17 belongs in RS_HD code: no compound literals, no
 * designated initialisers, no VLAs; bit casts by memcpy on the host (intrinsics on the device).
 */
#ifndef RS_HOSTDEV_H
#define RS_HOSTDEV_H

#ifdef __CUDACC__
#define RS_HD __host__ __device__
#define RS_HD_INLINE static __host__ __device__ __forceinline__
#ifdef __CUDA_ARCH__ /* the device pass; nvcc's host pass hands pragmas to gcc, which warns */
#define RS_UNROLL _Pragma("unroll")
#else
#define RS_UNROLL
#endif
#else
#define RS_HD
#if defined(__GNUC__)
#define RS_HD_INLINE static inline __attribute__((always_inline))
#else
#define RS_HD_INLINE static inline
#endif
#define RS_UNROLL
#endif

#endif /* RS_HOSTDEV_H */
