/* rs_dense_attn_impl.h — private: the attention kernels behind rsg_attention (rs_dense_attn.cu, the
 * CUDA-core fp32 kernel and the dispatch; rs_dense_attn_tc.cu, the 3xTF32 tensor-core kernel). */
#ifndef RS_GPU_ATTN_IMPL_H
#define RS_GPU_ATTN_IMPL_H

#include <cuda_runtime.h>

#include "rs_dense_ops.h"

/* The 3xTF32 kernel (RSG_ATTN_TF32X3 / _V2); arguments already checked by rsg_attention (rows =
 * T * rep, vec: cp.async / float4 loads allowed). */
rs_status rsg_attention_tc(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st);

#endif /* RS_GPU_ATTN_IMPL_H */
