/* rs_gpu_devweights.cu — the GEMM matrices of a model whose weights are made on the GPU
 * (rs_model.weights_on_device, rs_model_init_random_device): their device storage in the format the
 * quantization description gives, their values made there, and their fp32 view for one GEMM.
 *
 * Values: element i of a matrix is sd * rs_rw_normal(key, i) (eval/model/rs_random_weights.h, the host's
 * function); quantized as eval/model/rs_model_random.c quantizes (ModelOpt's rules):
 *   NVFP4  s2 = amax / (6 * 448) (1 when amax is 0); per 16 inputs the E4M3 scale of min(block amax /
 *          (6 s2), 448), round to nearest; codes E2M1 of x / (e4m3 s2) clamped to +-6, round to nearest;
 *          two codes a byte, the even column in the low nibble; the matrix keeps codes, scales and s2.
 *   FP8    s = amax / 448 per tensor; codes E4M3 of x / s clamped to +-448.
 *   dense  the fp32 values.
 * A GEMM on a quantized matrix first decodes it (rs_codec_nvfp4_value / e4m3 times s: the host's
 * rs_wdecode, each value the exact product rounded once) into an fp32 scratch of the largest matrix,
 * then runs the fp32 GEMM: the weights stay quantized in device memory, the arithmetic is the
 * checkpoint's dequantised fp32 (W4A16 emulation). Decoding per GEMM costs one pass over the codes
 * and one fp32 write and read of the matrix. The grouped expert GEMMs (rs_gpu_moe.cu) decode a batch
 * of experts' matrices in one launch (rs_gpu_devw_decode_jobs) into a scratch that holds the batch.
 */
#include "rs_gpu_weights.h"
#include "model/rs_random_weights.h"
#include "replayssm/quant/rs_codec.h"
#include "rs_gpu_scorer_impl.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>

#include "rs_check.h"
#include "rs_cuda_common.cuh"

#define QGROUP 16 /* NVFP4 inputs per block scale */

static size_t align_(size_t b) { return (b + 255) & ~(size_t)255; }

/* device bytes of one matrix in its format: values, then (quantized) the block scales and two floats
   (amax as bits, the tensor scale) */
static size_t bytes_of_(const rs_model_matrix *x)
{
    const size_t n = (size_t)x->rows * (size_t)x->cols;
    switch (x->fmt) {
    case RS_WFMT_NVFP4: return align_(n / 2) + align_(n / QGROUP) + 256;
    case RS_WFMT_FP8: return align_(n) + 256;
    default: return align_(n * sizeof(float));
    }
}

static const rs_model_matrix *find_(const rs_model *m, const float *view)
{
    rs_model_matrix key;
    memset(&key, 0, sizeof key);
    key.view = view;
    const rs_model_matrix *e = std::lower_bound(m->dev_mats, m->dev_mats + m->n_dev_mats, key,
                                                [](const rs_model_matrix &a, const rs_model_matrix &b) {
                                                    return a.view < b.view;
                                                });
    return e < m->dev_mats + m->n_dev_mats && e->view == view ? e : NULL;
}

rs_status rs_gpu_devw_plan(const rs_model *m, rs_gpu_wmat *mats, int n, size_t *weight_bytes, size_t *deq_floats)
{
    *weight_bytes = *deq_floats = 0;
    for (int i = 0; i < n; i++) {
        rs_gpu_wmat *e = &mats[i];
        e->dev = find_(m, e->h);
        if (!e->dev) continue; /* a slab matrix (the tied embedding): fp32 from the slab */
        RS_CHECK((size_t)e->dev->rows == e->rows && (size_t)e->dev->cols == e->cols, RS_E_STATE,
                 "GPU-made weights: matrix %d is %lld x %lld, the forward uses %zu x %zu", i, (long long)e->dev->rows,
                 (long long)e->dev->cols, e->rows, e->cols);
        e->exact = 0;
        *weight_bytes += bytes_of_(e->dev);
        if (e->dev->fmt != RS_WFMT_DENSE) *deq_floats = std::max(*deq_floats, e->rows * e->cols);
    }
    return RS_OK;
}

/* ---- making the values ----------------------------------------------------------------------- */

static __device__ __forceinline__ float value_(const rs_model_matrix &x, size_t i)
{
    return x.sd * rs_rw_normal(x.key, (uint64_t)i);
}

static __global__ void make_dense_k_(rs_model_matrix x, size_t n, float *y)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = value_(x, i);
}

/* amax of |values| as float bits (non-negative floats order as their bits) */
static __global__ void amax_k_(rs_model_matrix x, size_t n, unsigned *amax)
{
    float m = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        m = fmaxf(m, fabsf(value_(x, i)));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) atomicMax(amax, __float_as_uint(m));
}

/* one thread per block of 16 inputs (NVFP4) */
static __global__ void make_nvfp4_k_(rs_model_matrix x, size_t nblk, const unsigned *amax, float *s2_out,
                                     uint8_t *codes, uint8_t *scales)
{
    const float am = __uint_as_float(*amax);
    const float s2 = am > 0.0f ? am / (6.0f * 448.0f) : 1.0f;
    const size_t b0 = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (b0 == 0) *s2_out = s2;
    for (size_t b = b0; b < nblk; b += (size_t)gridDim.x * blockDim.x) {
        float v[QGROUP], bm = 0.0f;
        for (int j = 0; j < QGROUP; j++) {
            v[j] = value_(x, b * QGROUP + j);
            bm = fmaxf(bm, fabsf(v[j]));
        }
        const float bs = fminf(bm / (6.0f * s2), 448.0f);
        const uint32_t sc = rs_codec_encode(RS_ELEM_E4M3, bs, 0, 0, 0);
        scales[b] = (uint8_t)sc;
        const float sv = rs_codec_e4m3_value(sc) * s2;
        for (int j = 0; j < QGROUP; j += 2) {
            uint8_t byte = 0;
            for (int h = 0; h < 2; h++) {
                float y = sv > 0.0f ? v[j + h] / sv : 0.0f;
                y = fminf(fmaxf(y, -6.0f), 6.0f);
                byte |= (uint8_t)((rs_codec_encode(RS_ELEM_E2M1, y, 0, 0, 0) & 0xFu) << (4 * h));
            }
            codes[b * (QGROUP / 2) + j / 2] = byte;
        }
    }
}

static __global__ void make_fp8_k_(rs_model_matrix x, size_t n, const unsigned *amax, float *s_out, uint8_t *codes)
{
    const float am = __uint_as_float(*amax);
    const float s = am > 0.0f ? am / 448.0f : 1.0f;
    const size_t i0 = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i0 == 0) *s_out = s;
    for (size_t i = i0; i < n; i += (size_t)gridDim.x * blockDim.x)
        codes[i] = (uint8_t)rs_codec_encode(RS_ELEM_E4M3, fminf(fmaxf(value_(x, i) / s, -448.0f), 448.0f), 0, 0, 0);
}

static unsigned grid_(size_t n) { return (unsigned)std::min<size_t>((n + 255) / 256, 65536); }

rs_status rs_gpu_devw_alloc(gpu_impl *im)
{
    rs_gpu_gemm_state *g = &im->gemm;
    size_t bytes = 0;
    for (int i = 0; i < g->n_mats; i++)
        if (g->mats[i].dev) bytes += bytes_of_(g->mats[i].dev);
    cudaError_t ce = cudaMalloc(&g->dev_mem, bytes ? bytes : 256);
    if (ce == cudaSuccess && g->deq_floats) ce = cudaMalloc((void **)&g->deq, g->deq_floats * sizeof(float));
    if (ce != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "cudaMalloc of the GPU-made weights (%.3f GiB) and their decode scratch "
                            "(%.3f GiB): %s", (double)bytes / 1073741824.0,
                            (double)g->deq_floats * 4.0 / 1073741824.0, cudaGetErrorString(ce));
    im->device_bytes += bytes + g->deq_floats * sizeof(float);
    char *p = (char *)g->dev_mem;
    for (int i = 0; i < g->n_mats; i++) {
        rs_gpu_wmat *e = &g->mats[i];
        if (!e->dev) continue;
        const rs_model_matrix x = *e->dev;
        const size_t n = e->rows * e->cols;
        if (x.fmt == RS_WFMT_DENSE) {
            e->f32 = (float *)p;
            make_dense_k_<<<grid_(n), 256, 0, im->s>>>(x, n, e->f32);
        } else {
            const size_t vb = x.fmt == RS_WFMT_NVFP4 ? align_(n / 2) : align_(n);
            e->q = (uint8_t *)p;
            e->qs = x.fmt == RS_WFMT_NVFP4 ? e->q + vb : NULL;
            unsigned *amax = (unsigned *)(e->q + vb + (x.fmt == RS_WFMT_NVFP4 ? align_(n / QGROUP) : 0));
            e->qscale = (float *)(amax + 1);
            RS_CUDA_TRY(cudaMemsetAsync(amax, 0, sizeof *amax, im->s), "clearing an amax");
            amax_k_<<<grid_(n), 256, 0, im->s>>>(x, n, amax);
            if (x.fmt == RS_WFMT_NVFP4)
                make_nvfp4_k_<<<grid_(n / QGROUP), 256, 0, im->s>>>(x, n / QGROUP, amax, e->qscale, e->q, e->qs);
            else
                make_fp8_k_<<<grid_(n), 256, 0, im->s>>>(x, n, amax, e->qscale, e->q);
        }
        RS_TRY(rs_cuda_launch_status("making the GPU weights"));
        p += bytes_of_(e->dev);
    }
    return rs_cuda_call_status(cudaStreamSynchronize(im->s), "making the GPU weights");
}

/* ---- decoding for a GEMM ---------------------------------------------------------------------- */

/* byte j holds columns 2j, 2j + 1 of the row-major matrix; cols % 16 == 0, so its block scale is 2j / 16 */
static __global__ void decode_nvfp4_k_(size_t nbytes, const uint8_t *codes, const uint8_t *scales, const float *s2p,
                                       float *y)
{
    const float s2 = *s2p;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < nbytes; j += (size_t)gridDim.x * blockDim.x) {
        const uint32_t sb = scales[(2 * j) / QGROUP];
        const uint8_t b = codes[j];
        y[2 * j] = rs_codec_nvfp4_value(b & 0xFu, sb, s2);
        y[2 * j + 1] = rs_codec_nvfp4_value(b >> 4, sb, s2);
    }
}

static __global__ void decode_fp8_k_(size_t n, const uint8_t *codes, const float *sp, float *y)
{
    const float s = *sp;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = rs_codec_mul(rs_codec_e4m3_value(codes[i]), s);
}

rs_status rs_gpu_devw_view(gpu_impl *im, const rs_gpu_wmat *e, const float **W)
{
    if (e->f32) {
        *W = e->f32;
        return RS_OK;
    }
    const size_t n = e->rows * e->cols;
    float *y = im->gemm.deq;
    if (e->dev->fmt == RS_WFMT_NVFP4)
        decode_nvfp4_k_<<<grid_(n / 2), 256, 0, im->s>>>(n / 2, e->q, e->qs, e->qscale, y);
    else
        decode_fp8_k_<<<grid_(n), 256, 0, im->s>>>(n, e->q, e->qscale, y);
    *W = y;
    return rs_cuda_launch_status("decoding a GPU-made weight matrix");
}

/* blockIdx.y: the job; the blocks of x stride over its n values (n % 16 == 0 for NVFP4) */
static __global__ void decode_jobs_k_(const rs_gpu_devw_job *jobs, size_t n)
{
    const rs_gpu_devw_job j = jobs[blockIdx.y];
    const float s = *j.qscale;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    if (j.qs) {
        for (size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x; b < n / 2; b += stride) {
            const uint32_t sb = j.qs[(2 * b) / QGROUP];
            const uint8_t c = j.q[b];
            j.out[2 * b] = rs_codec_nvfp4_value(c & 0xFu, sb, s);
            j.out[2 * b + 1] = rs_codec_nvfp4_value(c >> 4, sb, s);
        }
    } else {
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
            j.out[i] = rs_codec_mul(rs_codec_e4m3_value(j.q[i]), s);
    }
}

rs_gpu_devw_job rs_gpu_devw_job_of(const rs_gpu_wmat *e, float *out)
{
    rs_gpu_devw_job j;
    j.q = e->q;
    j.qs = e->dev->fmt == RS_WFMT_NVFP4 ? e->qs : NULL;
    j.qscale = e->qscale;
    j.out = out;
    return j;
}

rs_status rs_gpu_devw_decode_jobs(gpu_impl *im, const rs_gpu_devw_job *jobs, int n_jobs, size_t n)
{
    RS_CHECK(n_jobs >= 0 && n_jobs <= 65535, RS_E_INVAL, "rs_gpu_devw_decode_jobs: %d jobs (at most 65535)", n_jobs);
    if (n_jobs == 0 || n == 0) return RS_OK;
    const dim3 grid((unsigned)std::min<size_t>((n / 2 + 255) / 256, 1024), (unsigned)n_jobs);
    decode_jobs_k_<<<grid, 256, 0, im->s>>>(jobs, n);
    return rs_cuda_launch_status("decoding a batch of GPU-made weight matrices");
}

rs_status rs_gpu_devw_decode(gpu_impl *im, const float *view, float *out)
{
    const rs_gpu_gemm_state *g = &im->gemm;
    for (int i = 0; i < g->n_mats; i++) {
        const rs_gpu_wmat *e = &g->mats[i];
        if (!e->dev || e->dev->view != view) continue;
        const float *W = NULL;
        RS_TRY(rs_gpu_devw_view(im, e, &W));
        RS_CUDA_TRY(cudaMemcpyAsync(out, W, e->rows * e->cols * sizeof(float), cudaMemcpyDeviceToHost, im->s),
                    "copying a decoded weight matrix");
        return rs_cuda_call_status(cudaStreamSynchronize(im->s), "decoding a weight matrix");
    }
    return rs_error_set(RS_E_INVAL, "no GPU-made weight matrix has view %p", (const void *)view);
}
