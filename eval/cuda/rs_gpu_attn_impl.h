/* rs_gpu_attn_impl.h — private: the attention kernels behind rsg_attention (rs_gpu_attn.cu, the
 * CUDA-core fp32 kernel and the dispatch; rs_gpu_attn_tc.cu, the 3xTF32 tensor-core kernel;
 * rs_gpu_attn_tc_v1.cu, its predecessor). */
#ifndef RS_GPU_ATTN_IMPL_H
#define RS_GPU_ATTN_IMPL_H

#include <cuda_runtime.h>

#include "rs_gpu_ops.h"

/* The 3xTF32 kernels; arguments already checked by rsg_attention (rows = T * rep, vec: cp.async /
 * float4 loads allowed). rsg_attention_tc: the default (kv_rn: round the K / V low parts to
 * nearest instead of letting the tensor cores truncate them); rsg_attention_tc_v1: the earlier
 * kernel (rs_gpu_attn_tc_v1.cu). */
rs_status rsg_attention_tc(const rsg_attn_args *a, int rows, int rep, bool vec, bool kv_rn, cudaStream_t st);
rs_status rsg_attention_tc_v1(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st);

#endif /* RS_GPU_ATTN_IMPL_H */
