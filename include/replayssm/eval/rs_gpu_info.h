/* rs_gpu_info.h — what the GPU evaluator records about the device it ran on (the log's provenance:
 * docs/hdf5-layout.md, root attributes device_*). Part of libreplayssm-evalcuda. */
#ifndef RS_GPU_INFO_H
#define RS_GPU_INFO_H

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rs_gpu_info {
    char name[256];       /* cudaDeviceProp.name, e.g. "NVIDIA H200" */
    char driver[32];      /* driver API version, "13.0" */
    char runtime[32];     /* CUDA runtime the program runs with, "13.0" */
    char cublas[32];      /* cuBLAS version, "13.0.0" */
    int ordinal;          /* device index */
    int sm_count;         /* multiprocessors */
    int cc_major, cc_minor; /* compute capability */
    double total_gib;     /* device memory */
} rs_gpu_info;

/*! rs_gpu_info_query() : fill *out for device `ordinal`. @return RS_OK, RS_E_CUDA ("no CUDA
 *  device", or the runtime's message). */
rs_status rs_gpu_info_query(int ordinal, rs_gpu_info *out);

/*! rs_gpu_device_count() : the CUDA devices this process sees (after CUDA_VISIBLE_DEVICES) into *n.
 *  @return RS_OK, RS_E_INVAL (NULL), RS_E_CUDA ("no CUDA device", or the runtime's message). */
rs_status rs_gpu_device_count(int *n);

#ifdef __cplusplus
}
#endif
#endif /* RS_GPU_INFO_H */
