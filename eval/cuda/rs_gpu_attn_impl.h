/* rs_gpu_attn_impl.h — private: the attention kernels behind rsg_attention (rs_gpu_attn.cu, the
 * CUDA-core fp32 kernel and the dispatch; rs_gpu_attn_tc.cu and rs_gpu_attn_tc_v1.cu, the two
 * 3xTF32 tensor-core kernels). */
#ifndef RS_GPU_ATTN_IMPL_H
#define RS_GPU_ATTN_IMPL_H

#include <cuda_runtime.h>

#include "rs_gpu_ops.h"

/* The 3xTF32 kernels; arguments already checked by rsg_attention (rows = T * rep, vec: cp.async /
 * float4 loads allowed). rsg_attention_tc: RSG_ATTN_TF32X3_V2 (rs_gpu_attn_tc.cu);
 * rsg_attention_tc_v1: RSG_ATTN_TF32X3_V1 (rs_gpu_attn_tc_v1.cu). */
rs_status rsg_attention_tc(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st);
rs_status rsg_attention_tc_v1(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st);

#endif /* RS_GPU_ATTN_IMPL_H */
