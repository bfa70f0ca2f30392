/* rs_gpu_info.cu — device, driver, runtime and cuBLAS versions for the log (rs_gpu_info.h). */
#include "replayssm/eval/rs_gpu_info.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

static void version_(int v, char *buf, size_t n) /* 13000 -> "13.0" (CUDA's encoding) */
{
    snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10);
}

rs_status rs_gpu_device_count(int *n)
{
    if (!n) return rs_error_set(RS_E_INVAL, "rs_gpu_device_count: NULL output");
    *n = 0;
    const cudaError_t e = cudaGetDeviceCount(n);
    if (e != cudaSuccess || *n == 0)
        return rs_error_set(RS_E_CUDA, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return RS_OK;
}

rs_status rs_gpu_info_query(int ordinal, rs_gpu_info *out)
{
    if (!out) return rs_error_set(RS_E_INVAL, "rs_gpu_info_query: NULL output");
    memset(out, 0, sizeof *out);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        return rs_error_set(RS_E_CUDA, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    if (ordinal < 0 || ordinal >= n)
        return rs_error_set(RS_E_INVAL, "CUDA device %d does not exist (%d present)", ordinal, n);
    cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, ordinal)) != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->ordinal = ordinal;
    out->sm_count = p.multiProcessorCount;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->total_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess) version_(v, out->driver, sizeof out->driver);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) version_(v, out->runtime, sizeof out->runtime);
    int ma = 0, mi = 0, pa = 0;
    if (cublasGetProperty(MAJOR_VERSION, &ma) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &mi) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &pa) == CUBLAS_STATUS_SUCCESS)
        snprintf(out->cublas, sizeof out->cublas, "%d.%d.%d", ma, mi, pa);
    return RS_OK;
}
