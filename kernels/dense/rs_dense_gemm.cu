/* rs_dense_gemm.cu — the GEMM methods of rs_dense_gemm.h on cuBLAS (sgemm, tf32, tf32x3, bf16x3,
 * f64) and the host scans for TF32- / bf16-exact weights. */
#include "rs_dense_gemm.h"

#include <cuda_bf16.h>
#include "rs_dense_ops.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "rs_check.h"
#include "rs_cuda_common.cuh" /* rs_cuda_call_status, rs_cuda_launch_status */

const char *rsg_gemm_method_name(rsg_gemm_method m)
{
    switch (m) {
    case RSG_GEMM_SGEMM: return "sgemm";
    case RSG_GEMM_TF32: return "tf32";
    case RSG_GEMM_TF32X3: return "tf32x3";
    case RSG_GEMM_BF16X3: return "bf16x3";
    case RSG_GEMM_F64: return "f64";
    case RSG_GEMM_TWIN: return "twin";
    }
    return "?";
}

/* ---- exactness (host) ----------------------------------------------------------------------- */

static int exact_range_(const uint32_t *u, size_t n, uint32_t mask)
{
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= u[i];
    return (acc & mask) == 0;
}

/* 1 if no element of w has a bit of `mask` set */
static int exact_(const float *w, size_t n, int threads, uint32_t mask)
{
    const uint32_t *u = (const uint32_t *)(const void *)w;
    const size_t blk = (size_t)1 << 22; /* 16 MiB a piece */
    if (threads <= 1 || n <= blk) {
        for (size_t o = 0; o < n; o += blk)
            if (!exact_range_(u + o, std::min(blk, n - o), mask)) return 0;
        return 1;
    }
    std::atomic<size_t> next(0);
    std::atomic<int> bad(0);
    const size_t pieces = (n + blk - 1) / blk;
    auto work = [&]() {
        for (size_t p; !bad.load(std::memory_order_relaxed) && (p = next.fetch_add(1)) < pieces;)
            if (!exact_range_(u + p * blk, std::min(blk, n - p * blk), mask)) bad.store(1);
    };
    std::vector<std::thread> pool;
    const int nt = (int)std::min<size_t>((size_t)threads, pieces);
    for (int t = 1; t < nt; t++) pool.emplace_back(work);
    work();
    for (auto &t : pool) t.join();
    return !bad.load();
}

int rsg_tf32_exact(const float *w, size_t n, int threads) { return exact_(w, n, threads, 0x1FFFu); }
int rsg_bf16_exact(const float *w, size_t n, int threads) { return exact_(w, n, threads, 0xFFFFu); }

/* ---- rsg_linear ---------------------------------------------------------------------------- */

size_t rsg_linear_ws_floats(rsg_gemm_method m, size_t M, size_t K)
{
    return m == RSG_GEMM_TF32X3 ? 2 * M * K : m == RSG_GEMM_BF16X3 ? (3 * M * K + 1) / 2 : 0;
}

/* row-major Y[M][N] = beta Y + X W^T is column-major Y^T (N x M) = W^T(K x N col-major)^T X^T */
static rs_status gemm_(cublasHandle_t h, cublasComputeType_t ct, int M, int N, int K, const float *X, size_t ldx,
                       const float *W, float beta, float *Y, size_t ldy)
{
    const float one = 1.0f;
    const cublasStatus_t e = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, X, CUDA_R_32F,
                                          (int)ldx, &beta, Y, CUDA_R_32F, (int)ldy, ct, CUBLAS_GEMM_DEFAULT);
    if (e != CUBLAS_STATUS_SUCCESS)
        return rs_error_set(RS_E_CUDA, "cublasGemmEx (M %d, N %d, K %d, compute %d): status %d", M, N, K, (int)ct,
                            (int)e);
    return RS_OK;
}

rs_status rsg_linear(cublasHandle_t h, rsg_gemm_method m, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                     const float *W, const float *W_lo, float beta, float *Y, size_t ldy, float *ws, size_t ws_floats,
                     cudaStream_t s)
{
    RS_CHECK(h && X && W && Y && M >= 1 && N >= 1 && K >= 1 && M < INT_MAX && N < INT_MAX && K < INT_MAX &&
                 ldx >= K && ldy >= N && ldx < INT_MAX && ldy < INT_MAX,
             RS_E_INVAL, "rsg_linear: bad arguments (M %zu, N %zu, K %zu, ldx %zu, ldy %zu)", M, N, K, ldx, ldy);
    const int m_ = (int)M, n_ = (int)N, k_ = (int)K;
    if (m == RSG_GEMM_SGEMM) {
        const float one = 1.0f;
        cublasSetMathMode(h, CUBLAS_DEFAULT_MATH); /* true fp32: TF32 is opt-in */
        const cublasStatus_t e =
            cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n_, m_, k_, &one, W, k_, X, (int)ldx, &beta, Y, (int)ldy);
        if (e != CUBLAS_STATUS_SUCCESS)
            return rs_error_set(RS_E_CUDA, "cublasSgemm (M %zu, N %zu, K %zu): status %d", M, N, K, (int)e);
        return RS_OK;
    }
    if (m == RSG_GEMM_TF32) return gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, X, ldx, W, beta, Y, ldy);
    RS_CHECK(m == RSG_GEMM_TF32X3, RS_E_INVAL, "rsg_linear: unknown method %d", (int)m);
    RS_CHECK(ws && ws_floats >= 2 * M * K, RS_E_INVAL, "rsg_linear: tf32x3 needs %zu floats of workspace (%zu given)",
             2 * M * K, ws_floats);
    float *xh = ws, *xl = ws + M * K;
    RS_TRY(rsg_tf32_split(m_, k_, X, ldx, xh, K, xl, K, (rs_cuda_stream)s));
    /* the small terms first, into Y (with beta Y), then the large one: every product of two TF32
       values is exact in the tensor cores' fp32 accumulator */
    RS_TRY(gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, xl, K, W, beta, Y, ldy));
    if (W_lo) RS_TRY(gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, xh, K, W_lo, 1.0f, Y, ldy));
    return gemm_(h, CUBLAS_COMPUTE_32F_FAST_TF32, m_, n_, k_, xh, K, W, 1.0f, Y, ldy);
}

/* ---- bf16x3 ---------------------------------------------------------------------------------- */

static __global__ void bf16x3_split_k_(int K, const float *X, size_t ldx, __nv_bfloat16 *B, size_t plane)
{
    const int i = blockIdx.y * 256 + threadIdx.x;
    if (i >= K) return;
    const size_t r = blockIdx.x, o = r * (size_t)K + i;
    const float x = X[r * ldx + i];
    __nv_bfloat16 b0 = __float2bfloat16_rn(x), b1 = __float2bfloat16_rn(0.0f), b2 = b1;
    if (isfinite(x)) {
        if (isinf(__bfloat162float(b0))) /* past bf16's largest finite value: truncate */
            b0 = __ushort_as_bfloat16((unsigned short)(__float_as_uint(x) >> 16));
        const float r1 = x - __bfloat162float(b0); /* exact: within half a bf16 ulp of x, same binade */
        b1 = __float2bfloat16_rn(r1);
        b2 = __float2bfloat16_rn(r1 - __bfloat162float(b1)); /* <= 8 significant bits left: exact */
    }
    B[o] = b0;
    B[plane + o] = b1;
    B[2 * plane + o] = b2;
}

rs_status rsg_bf16x3_split(int M, int K, const float *X, size_t ldx, void *B, cudaStream_t s)
{
    RS_CHECK(X && B && M >= 1 && K >= 1 && ldx >= (size_t)K && K <= 65535 * 256, RS_E_INVAL,
             "rsg_bf16x3_split: bad arguments (M %d, K %d, ldx %zu)", M, K, ldx);
    const dim3 g((unsigned)M, (unsigned)((K + 255) / 256));
    bf16x3_split_k_<<<g, 256, 0, s>>>(K, X, ldx, (__nv_bfloat16 *)B, (size_t)M * K);
    return rs_cuda_launch_status("rsg_bf16x3_split");
}

/* Y[r][j] = beta Y[r][j] + sum_b P[b][r][j], b ascending, each add rounded to nearest */
static __global__ void bf16x3_reduce_k_(size_t n, int ns, int nb, const float *P, float beta, float *Y, size_t ldy)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float a = P[i];
        for (int b = 1; b < nb; b++) a = __fadd_rn(a, P[(size_t)b * n + i]);
        float *y = Y + (i / (size_t)ns) * ldy + i % (size_t)ns;
        *y = beta == 0.0f ? a : __fmaf_rn(beta, *y, a); /* beta 0: Y is not read (it may hold NaN) */
    }
}

size_t rsg_bf16x3_part_floats(size_t M, size_t N, size_t K)
{
    const size_t nb = (K + RSG_BF16X3_KB - 1) / RSG_BF16X3_KB;
    return nb > 1 ? nb * M * N : 0;
}

static rs_status bf_gemm_(cublasHandle_t h, int N, int M, int k, const __nv_bfloat16 *W, int K, const __nv_bfloat16 *X,
                          float beta, float *C, int ldc, long long strideC, int batch)
{
    const float one = 1.0f;
    const cublasStatus_t e =
        batch > 1 ? cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, k, &one, W, CUDA_R_16BF, K,
                                               RSG_BF16X3_KB, X, CUDA_R_16BF, K, RSG_BF16X3_KB, &beta, C, CUDA_R_32F,
                                               ldc, strideC, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                  : cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, k, &one, W, CUDA_R_16BF, K, X, CUDA_R_16BF, K, &beta,
                                 C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (e != CUBLAS_STATUS_SUCCESS)
        return rs_error_set(RS_E_CUDA, "bf16x3 GEMM (M %d, N %d, k %d, batch %d): cuBLAS status %d", M, N, k, batch,
                            (int)e);
    return RS_OK;
}

rs_status rsg_linear_bf16x3(cublasHandle_t h, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                            const void *W_bf16, float beta, float *Y, size_t ldy, void *ws, size_t ws_floats,
                            float *part, size_t part_floats, cudaStream_t s)
{
    const size_t KB = RSG_BF16X3_KB, nf = K / KB, kr = K % KB, nb = nf + (kr > 0);
    RS_CHECK(h && X && W_bf16 && Y && ws && M >= 1 && N >= 1 && K >= 1 && M < INT_MAX && N < INT_MAX &&
                 K < INT_MAX && ldx >= K && ldy >= N && ldx < INT_MAX && ldy < INT_MAX,
             RS_E_INVAL, "rsg_linear_bf16x3: bad arguments (M %zu, N %zu, K %zu, ldx %zu, ldy %zu)", M, N, K, ldx, ldy);
    RS_CHECK(ws_floats >= rsg_linear_ws_floats(RSG_GEMM_BF16X3, M, K), RS_E_INVAL,
             "rsg_linear_bf16x3: needs %zu floats of workspace (%zu given)",
             rsg_linear_ws_floats(RSG_GEMM_BF16X3, M, K), ws_floats);
    RS_CHECK(nb == 1 || (part && part_floats >= nb * M), RS_E_INVAL,
             "rsg_linear_bf16x3: K %zu in %zu blocks needs >= %zu floats of partial sums (%zu given)", K, nb, nb * M,
             part_floats);
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    RS_TRY(rsg_bf16x3_split((int)M, (int)K, X, ldx, ws, s));
    const __nv_bfloat16 *B = (const __nv_bfloat16 *)ws, *W = (const __nv_bfloat16 *)W_bf16;
    const size_t plane = M * K;
    const int m_ = (int)M, k_ = (int)K;
    if (nb == 1) { /* one block: the three products straight into Y, the smallest first */
        for (int p = 2; p >= 0; p--)
            RS_TRY(bf_gemm_(h, (int)N, m_, k_, W, k_, B + p * plane, p == 2 ? beta : 1.0f, Y, (int)ldy, 0, 1));
        return RS_OK;
    }
    size_t ns = std::min(N, part_floats / (nb * M)); /* columns per slice */
    if (ns < N && ns >= 8) ns &= ~(size_t)7;
    for (size_t n0 = 0; n0 < N; n0 += ns) {
        const size_t w = std::min(ns, N - n0);
        const long long stride = (long long)(M * w); /* partial sums [nb][M][w] */
        for (int p = 2; p >= 0; p--) {
            const __nv_bfloat16 *Xp = B + p * plane, *Wn = W + n0 * K;
            const float bp = p == 2 ? 0.0f : 1.0f;
            if (nf) RS_TRY(bf_gemm_(h, (int)w, m_, (int)KB, Wn, k_, Xp, bp, part, (int)w, stride, (int)nf));
            if (kr) RS_TRY(bf_gemm_(h, (int)w, m_, (int)kr, Wn + nf * KB, k_, Xp + nf * KB, bp, part + nf * M * w,
                                    (int)w, 0, 1));
        }
        const size_t n = M * w;
        const unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, 8192);
        bf16x3_reduce_k_<<<blocks, 256, 0, s>>>(n, (int)w, (int)nb, part, beta, Y + n0, ldy);
        RS_TRY(rs_cuda_launch_status("bf16x3 partial sums"));
    }
    return RS_OK;
}

/* ---- f64 (diagnostic) ------------------------------------------------------------------------ */

static __global__ void f64_in_k_(int M, int K, const float *X, size_t ldx, double *xd)
{
    const int k = blockIdx.y * 256 + threadIdx.x;
    if (k < K) xd[(size_t)blockIdx.x * K + k] = (double)X[(size_t)blockIdx.x * ldx + k];
}

/* y = fl(beta y + acc): one rounding (beta 0: Y is not read) */
static __global__ void f64_out_k_(size_t n, int N, const double *yd, float beta, float *Y, size_t ldy)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float *y = Y + (i / (size_t)N) * ldy + i % (size_t)N;
        *y = beta == 0.0f ? (float)yd[i] : (float)__dadd_rn(__dmul_rn((double)beta, (double)*y), yd[i]);
    }
}

rs_status rsg_linear_f64(cublasHandle_t h, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                         const double *W_f64, float beta, float *Y, size_t ldy, double *xd, double *yd, cudaStream_t s)
{
    RS_CHECK(h && X && W_f64 && Y && xd && yd && M >= 1 && N >= 1 && K >= 1 && M < INT_MAX && N < INT_MAX &&
                 K < INT_MAX && ldx >= K && ldy >= N,
             RS_E_INVAL, "rsg_linear_f64: bad arguments (M %zu, N %zu, K %zu, ldx %zu, ldy %zu)", M, N, K, ldx, ldy);
    RS_CHECK((K + 255) / 256 <= 65535, RS_E_INVAL, "rsg_linear_f64: K %zu too large", K);
    f64_in_k_<<<dim3((unsigned)M, (unsigned)((K + 255) / 256)), 256, 0, s>>>((int)M, (int)K, X, ldx, xd);
    RS_TRY(rs_cuda_launch_status("rsg_linear_f64"));
    const double one = 1.0, zero = 0.0;
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    const cublasStatus_t b =
        cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, W_f64, (int)K, xd, (int)K, &zero, yd, (int)N);
    if (b != CUBLAS_STATUS_SUCCESS)
        return rs_error_set(RS_E_CUDA, "cublasDgemm (M %zu, N %zu, K %zu): status %d", M, N, K, (int)b);
    const size_t n = M * N;
    f64_out_k_<<<(unsigned)std::min<size_t>((n + 255) / 256, 8192), 256, 0, s>>>(n, (int)N, yd, beta, Y, ldy);
    return rs_cuda_launch_status("rsg_linear_f64");
}
