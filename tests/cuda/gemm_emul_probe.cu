/* gemm_emul_probe.cu — a device probe, not a CTest: does cuBLAS's FP32 emulation through BF16
 * tensor-core products (CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUDA 12.9+) run on this GPU, how fast
 * against SGEMM, and how accurate against a float64 GEMM of the same operands? The evaluator's
 * `--compute fp32` GEMM is bf16x3 for bf16-exact weights and SGEMM otherwise (kernels/dense/rs_dense_gemm.h); an
 * emulation as accurate as SGEMM and faster would be a candidate for it.
 *
 *   gemm_emul_probe [M]      (M rows, default 2560 = 5 runs x chunk 512)
 *
 * Shapes: the Qwen3.5-4B GEMMs (N x K = 9216 x 2560 MLP up/gate, 2560 x 9216 down, 8192 x 2560
 * in_qkv). X: uniform [-1, 1) with all 24 bits random; W: bf16-exact (as a bf16 checkpoint's
 * weights) and, separately, full fp32. Error: max_ij |y - y64| / max_ij |y64| and the same with
 * |X| |W|^T (the dot of the magnitudes: the scale rounding errors are relative to) per element.
 * Timing: 1 warm-up + 5 launches, cudaEvents. Methods whose call fails print the cuBLAS status. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_test_util.h"

static float uni_() { return (float)((int32_t)ct_rnd32() >> 7) * (1.0f / 16777216.0f); } /* 24 random bits in [-1, 1) */
__global__ void to_double_(const float *a, double *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = (double)a[i];
}
__global__ void abs_(const float *a, double *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = fabs((double)a[i]);
}

__device__ __forceinline__ float tf32_rna_(float x) { return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u); }
/* X = hi + lo (TF32 each; 22 of X's 24 bits) */
__global__ void split_tf32_(const float *X, float *H, float *L, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = X[i], hi = tf32_rna_(x);
        H[i] = hi, L[i] = tf32_rna_(x - hi);
    }
}
/* X = b1 + b2 + b3 exactly (three bf16: 8 + 8 + 8 significant bits, RN each step) */
__global__ void split_bf16x3_(const float *X, __nv_bfloat16 *B, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = X[i];
        const __nv_bfloat16 b1 = __float2bfloat16_rn(x);
        const float r1 = x - __bfloat162float(b1);
        const __nv_bfloat16 b2 = __float2bfloat16_rn(r1);
        const float r2 = r1 - __bfloat162float(b2);
        B[i] = b1, B[n + i] = b2, B[2 * n + i] = __float2bfloat16_rn(r2);
    }
}
__global__ void to_bf16_(const float *X, __nv_bfloat16 *B, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        B[i] = __float2bfloat16_rn(X[i]);
}
/* Y = sum_b P[b] in fp32, b ascending (round to nearest per add) */
__global__ void reduce_(const float *P, float *Y, size_t n, int nb)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float a = P[i];
        for (int b = 1; b < nb; b++) a = __fadd_rn(a, P[(size_t)b * n + i]);
        Y[i] = a;
    }
}

enum { M_SGEMM, M_EMUL_COMPUTE, M_EMUL_MATH, M_TF32, M_TF32X2, M_TF32X2_K512, M_TF32X2_K256, M_BF16X3, M_BF16X3_K512,
       M_BF16X3_K256, M_BF16X3_K128, N_METHODS };
static const char *k_names[N_METHODS] = {"sgemm", "bf16x9 (compute 32F_EMULATED_16BFX9)",
                                         "bf16x9 (math mode + EAGER, cublasSgemm)", "tf32 (one product)",
                                         "tf32x2 (X hi+lo, W exact), full K", "tf32x2, K blocks of 512 + fp32 sum",
                                         "tf32x2, K blocks of 256 + fp32 sum", "bf16x3 (X b1+b2+b3, W bf16), full K",
                                         "bf16x3, K blocks of 512 + fp32 sum", "bf16x3, K blocks of 256 + fp32 sum",
                                         "bf16x3, K blocks of 128 + fp32 sum"};
struct scratch {
    float *xh, *xl, *part;
    __nv_bfloat16 *xb, *wb;
};
static scratch g_s;

/* the split methods: X's parts times W, K in blocks of KB (KB = K: one block, no partials) */
static cublasStatus_t split_gemm_(cublasHandle_t h, int bf, int KB, int M, int N, int K, const float *X, const float *W,
                                  float *Y)
{
    const size_t nx = (size_t)M * K;
    const int nb = K / KB;
    float *out = nb == 1 ? Y : g_s.part;
    const float one = 1.0f, zero = 0.0f;
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    if (!bf) {
        split_tf32_<<<2048, 256>>>(X, g_s.xh, g_s.xl, nx);
        const float *parts[2] = {g_s.xl, g_s.xh}; /* small first */
        for (int p = 0; p < 2 && st == CUBLAS_STATUS_SUCCESS; p++)
            st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, KB, &one, W, CUDA_R_32F, K, KB, parts[p],
                                            CUDA_R_32F, K, KB, p ? &one : &zero, out, CUDA_R_32F, N, (long long)M * N,
                                            nb, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    } else {
        split_bf16x3_<<<2048, 256>>>(X, g_s.xb, nx);
        for (int p = 2; p >= 0 && st == CUBLAS_STATUS_SUCCESS; p--) /* smallest first */
            st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, KB, &one, g_s.wb, CUDA_R_16BF, K, KB,
                                            g_s.xb + (size_t)p * nx, CUDA_R_16BF, K, KB, p == 2 ? &zero : &one, out,
                                            CUDA_R_32F, N, (long long)M * N, nb, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT);
    }
    if (nb > 1 && st == CUBLAS_STATUS_SUCCESS) reduce_<<<4096, 256>>>(g_s.part, Y, (size_t)M * N, nb);
    return st;
}

/* row-major Y[M][N] = X[M][K] W[N][K]^T as column-major Y^T = W^T X^T */
static cublasStatus_t gemm_(cublasHandle_t h, int method, int M, int N, int K, const float *X, const float *W, float *Y)
{
    const float one = 1.0f, zero = 0.0f;
    switch (method) {
    case M_SGEMM:
        cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
        return cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, K, X, K, &zero, Y, N);
    case M_EMUL_COMPUTE:
        cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
        cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_EAGER);
        return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, X, CUDA_R_32F, K, &zero, Y,
                            CUDA_R_32F, N, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUBLAS_GEMM_DEFAULT);
    case M_EMUL_MATH:
        cublasSetMathMode(h, CUBLAS_FP32_EMULATED_BF16X9_MATH);
        cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_EAGER);
        return cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, K, X, K, &zero, Y, N);
    case M_TF32:
        cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
        return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, X, CUDA_R_32F, K, &zero, Y,
                            CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    case M_TF32X2: return split_gemm_(h, 0, K, M, N, K, X, W, Y);
    case M_TF32X2_K512: return split_gemm_(h, 0, 512, M, N, K, X, W, Y);
    case M_TF32X2_K256: return split_gemm_(h, 0, 256, M, N, K, X, W, Y);
    case M_BF16X3: return split_gemm_(h, 1, K, M, N, K, X, W, Y);
    case M_BF16X3_K512: return split_gemm_(h, 1, 512, M, N, K, X, W, Y);
    case M_BF16X3_K256: return split_gemm_(h, 1, 256, M, N, K, X, W, Y);
    default: return split_gemm_(h, 1, 128, M, N, K, X, W, Y);
    }
}

int main(int argc, char **argv)
{
    const int M = argc > 1 ? atoi(argv[1]) : 2560;
    const int shapes[][2] = {{9216, 2560}, {2560, 9216}, {8192, 2560}};
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    int ver = 0;
    cublasGetVersion(h, &ver);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("gemm_emul_probe: %s (sm_%d%d), cuBLAS %d, M = %d\n", prop.name, prop.major, prop.minor, ver, M);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (const auto &sh : shapes) {
        const int N = sh[0], K = sh[1];
        for (int wkind = 0; wkind < 1; wkind++) { /* bf16-exact W only: the split methods assume it */
            std::vector<float> hx((size_t)M * K), hw((size_t)N * K);
            for (auto &v : hx) v = uni_();
            for (auto &v : hw) v = wkind == 0 ? ct_bf16_exact(uni_() * 0.05f) : uni_() * 0.05f;
            float *X, *W, *Y;
            double *Xd, *Wd, *Yd, *Ad;
            CK(cudaMalloc(&X, hx.size() * 4));
            CK(cudaMalloc(&W, hw.size() * 4));
            CK(cudaMalloc(&Y, (size_t)M * N * 4));
            CK(cudaMalloc(&Xd, hx.size() * 8));
            CK(cudaMalloc(&Wd, hw.size() * 8));
            CK(cudaMalloc(&Yd, (size_t)M * N * 8));
            CK(cudaMalloc(&Ad, (size_t)M * N * 8));
            CK(cudaMemcpy(X, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(W, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMalloc(&g_s.xh, hx.size() * 4));
            CK(cudaMalloc(&g_s.xl, hx.size() * 4));
            CK(cudaMalloc(&g_s.xb, hx.size() * 2 * 3));
            CK(cudaMalloc(&g_s.wb, hw.size() * 2));
            CK(cudaMalloc(&g_s.part, (size_t)M * N * 4 * (K / 128)));
            to_bf16_<<<1024, 256>>>(W, g_s.wb, hw.size()); /* exact: W is bf16-exact */
            const double one = 1.0, zero = 0.0;
            /* the float64 reference and the magnitude GEMM |X| |W|^T */
            to_double_<<<1024, 256>>>(X, Xd, hx.size());
            to_double_<<<1024, 256>>>(W, Wd, hw.size());
            cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
            cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, Wd, K, Xd, K, &zero, Yd, N);
            abs_<<<1024, 256>>>(X, Xd, hx.size());
            abs_<<<1024, 256>>>(W, Wd, hw.size());
            cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, Wd, K, Xd, K, &zero, Ad, N);
            CK(cudaDeviceSynchronize());
            std::vector<double> yd((size_t)M * N), ad((size_t)M * N);
            CK(cudaMemcpy(yd.data(), Yd, yd.size() * 8, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(ad.data(), Ad, ad.size() * 8, cudaMemcpyDeviceToHost));
            double ymax = 0;
            for (double v : yd) ymax = fmax(ymax, fabs(v));
            std::vector<float> y((size_t)M * N);
            double t_sgemm = 0;
            for (int meth = 0; meth < N_METHODS; meth++) {
                if (meth == M_EMUL_COMPUTE || meth == M_EMUL_MATH) continue; /* measured: SGEMM on sm_90 */
                cublasStatus_t st = gemm_(h, meth, M, N, K, X, W, Y);
                if (st != CUBLAS_STATUS_SUCCESS) {
                    printf("  N %5d K %5d W %s  %-42s cuBLAS status %d\n", N, K, wkind ? "fp32" : "bf16", k_names[meth],
                           (int)st);
                    continue;
                }
                CK(cudaDeviceSynchronize());
                CK(cudaEventRecord(e0));
                for (int r = 0; r < 5; r++) gemm_(h, meth, M, N, K, X, W, Y);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                ms /= 5;
                if (meth == M_SGEMM) t_sgemm = ms;
                CK(cudaMemcpy(y.data(), Y, y.size() * 4, cudaMemcpyDeviceToHost));
                double emax = 0, erel = 0, esum = 0;
                for (size_t i = 0; i < y.size(); i++) {
                    const double d = fabs((double)y[i] - yd[i]);
                    if (!(d <= emax)) emax = d;
                    const double r = d / ad[i];
                    if (!(r <= erel)) erel = r;
                    esum += r;
                }
                printf("  N %5d K %5d W %s  %-42s %8.3f ms %6.1f TFLOP/s (%.2fx sgemm)  max|err|/max|y| %.3e  "
                       "max|err|/(|X||W|) %.3e mean %.3e\n",
                       N, K, wkind ? "fp32" : "bf16", k_names[meth], ms, 2.0 * M * N * K / (ms * 1e9),
                       t_sgemm / ms, emax / ymax, erel, esum / (double)y.size());
            }
            cudaFree(g_s.xh), cudaFree(g_s.xl), cudaFree(g_s.xb), cudaFree(g_s.wb), cudaFree(g_s.part);
            cudaFree(X), cudaFree(W), cudaFree(Y), cudaFree(Xd), cudaFree(Wd), cudaFree(Yd), cudaFree(Ad);
        }
    }
    cublasDestroy(h);
    return 0;
}
