/* rs_cuda_quant.cu — quantizer kernels and launchers (rs_cuda.h), the device twins of
 * quant/rs_philox.c, rs_minifloat.c and rs_qtensor.c. The per-element and per-block arithmetic is
 * not restated here: Philox, the encoders, the decoders and the scale formulas are the functions
 * of replayssm/quant/rs_codec.h that the CPU quantizers call (see that header for why the results
 * are bit-identical: integer encoding, explicitly rounded float operations, --ftz=false).
 *
 * Thread mapping. Philox yields the words of four consecutive elements at once, so every
 * kernel gives a thread four consecutive elements starting at a multiple of 4:
 *   fp16/bf16   one thread per 4 elements;
 *   fp8         one warp per 128-element block (lane = 4 elements), amax by warp max;
 *   nvfp4       one CUDA block per tensor of E elements: tensor amax by block reduction,
 *               then 4 threads per 16-element block (amax by two shuffles).
 * A thread reads all of its elements before writing, and the NVFP4 tensor amax is complete
 * (__syncthreads) before any element is written, so the round trip may run in place.
 */
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <cstring>

#include "replayssm/cuda/rs_cuda.h"
#include "replayssm/quant/rs_codec.h"
#include "rs_cuda_common.cuh"
#include "rs_check.h"

static_assert(RS_CUDA_CODE_INVALID == RS_CODEC_INVALID, "rs_cuda.h's invalid code is the codec's");

#define RS_QK_THREADS 256

/* ---- scalar kernels ------------------------------------------------------------------------ */

__global__ void rs_k_rand_fill(uint64_t seed, uint64_t stream, uint64_t i0, size_t n, uint32_t *out)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) out[j] = rs_codec_rand_u32(seed, stream, i0 + j);
}

__global__ void rs_k_elem_encode(rs_elem t, int sr, int k, const float *x, const uint32_t *r, size_t n,
                                 uint32_t *codes)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) codes[j] = rs_codec_encode(t, x[j], sr, sr ? r[j] : 0u, k);
}

__global__ void rs_k_elem_decode(rs_elem t, const uint32_t *codes, size_t n, float *y)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) y[j] = rs_codec_decode(t, codes[j]);
}

static unsigned grid_for(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

extern "C" rs_status rs_cuda_rand_fill(uint64_t seed, uint64_t stream, uint64_t i0, size_t n, uint32_t *d_out,
                                       rs_cuda_stream s)
{
    if (n == 0) return RS_OK;
    RS_CHECK(d_out, RS_E_INVAL, "rs_cuda_rand_fill: NULL output");
    rs_k_rand_fill<<<grid_for(n, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(seed, stream, i0, n, d_out);
    return rs_cuda_launch_status("rs_cuda_rand_fill");
}

extern "C" rs_status rs_cuda_elem_encode(rs_elem t, rs_rounding mode, int k, const float *d_x, const uint32_t *d_r,
                                         size_t n, uint32_t *d_codes, rs_cuda_stream s)
{
    RS_CHECK((unsigned)t <= (unsigned)RS_ELEM_BF16, RS_E_INVAL, "rs_cuda_elem_encode: bad element type %d", (int)t);
    RS_CHECK(mode == RS_ROUND_RTN || mode == RS_ROUND_SR, RS_E_INVAL, "rs_cuda_elem_encode: bad rounding %d",
             (int)mode);
    RS_CHECK(mode != RS_ROUND_SR || (k >= 1 && k <= 32 && d_r), RS_E_INVAL,
             "rs_cuda_elem_encode: SR needs k in 1..32 (got %d) and random words", k);
    if (n == 0) return RS_OK;
    RS_CHECK(d_x && d_codes, RS_E_INVAL, "rs_cuda_elem_encode: NULL input or output");
    rs_k_elem_encode<<<grid_for(n, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(t, mode == RS_ROUND_SR, k, d_x, d_r, n,
                                                                          d_codes);
    return rs_cuda_launch_status("rs_cuda_elem_encode");
}

extern "C" rs_status rs_cuda_elem_decode(rs_elem t, const uint32_t *d_codes, size_t n, float *d_y, rs_cuda_stream s)
{
    RS_CHECK((unsigned)t <= (unsigned)RS_ELEM_BF16, RS_E_INVAL, "rs_cuda_elem_decode: bad element type %d", (int)t);
    if (n == 0) return RS_OK;
    RS_CHECK(d_codes && d_y, RS_E_INVAL, "rs_cuda_elem_decode: NULL input or output");
    rs_k_elem_decode<<<grid_for(n, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(t, d_codes, n, d_y);
    return rs_cuda_launch_status("rs_cuda_elem_decode");
}

/* ---- tensor kernels -------------------------------------------------------------------------- */

/* Format fields a kernel needs, by value. */
struct rs_dev_fmt {
    int sr, k, fp8_pow2, nvfp4_floor;
};

static rs_dev_fmt dev_fmt(const rs_format *f)
{
    rs_dev_fmt d;
    d.sr = f->rounding == RS_ROUND_SR;
    d.k = f->sr_bits;
    d.fp8_pow2 = f->fp8_pow2;
    d.nvfp4_floor = f->nvfp4_floor;
    return d;
}

/* fp16/bf16: thread = elements 4g .. 4g+3 (< n). codes (may be NULL), y (may be NULL). */
/* Row filter of rs_cuda_replay_requant: with fill set, only elements of batch rows b whose
 * fill[b] + 1 == L (row_elems elements each) are encoded; NULL encodes everything. */
struct rs_dev_rowsel {
    const int32_t *fill;
    int L;
    size_t row_elems;
};
__device__ __forceinline__ bool rs_dev_skip(const rs_dev_rowsel &sel, size_t i)
{
    return sel.fill && sel.fill[i / sel.row_elems] + 1 != sel.L;
}

/* One fp16/bf16 code: the bit paths the CPU quantizer calls (rs_fp16_encode_rtn etc.). */
__device__ __forceinline__ uint32_t half_encode(int bf, int sr, float x, uint32_t r, int k)
{
    if (bf) return sr ? rs_codec_bf16_sr(x, r, k) : rs_codec_bf16_rtn(x);
    return sr ? rs_codec_fp16_sr(x, r, k) : rs_codec_fp16_rtn(x);
}

__global__ void rs_k_half_encode(int bf, rs_dev_fmt f, const float *x, size_t n, uint64_t seed, uint64_t stream,
                                 uint16_t *codes, float *y, rs_dev_rowsel sel)
{
    const size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t i = 4 * g;
    if (i >= n || rs_dev_skip(sel, i)) return;
    const size_t m = n - i < 4 ? n - i : 4;
    float xv[4];
    for (size_t j = 0; j < m; ++j) xv[j] = x[i + j];
    rs_philox_words w = {0, 0, 0, 0};
    if (f.sr) w = rs_codec_rand_block(seed, stream, g);
    const uint32_t r[4] = {w.x, w.y, w.z, w.w};
    for (size_t j = 0; j < m; ++j) {
        const uint32_t c = half_encode(bf, f.sr, xv[j], r[j], f.k);
        if (codes) codes[i + j] = (uint16_t)c;
        if (y) y[i + j] = bf ? rs_codec_bf16_value(c) : rs_codec_fp16_value(c);
    }
}

__global__ void rs_k_half_decode(int bf, const uint16_t *codes, size_t n, float *y)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) y[j] = bf ? rs_codec_bf16_value(codes[j]) : rs_codec_fp16_value(codes[j]);
}

/* fp8: warp w handles block w (128 elements), lane = 4 elements. */
__global__ void rs_k_fp8_encode(rs_dev_fmt f, const float *x, size_t nblocks, uint64_t seed, uint64_t stream,
                                uint8_t *codes, float *scale_inv, float *y, rs_dev_rowsel sel)
{
    const size_t blk = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (blk >= nblocks) return; /* whole warps exit together: nblocks counts warps */
    if (rs_dev_skip(sel, blk * RS_FP8_BLOCK)) return; /* rows are whole fp8 blocks: warp-uniform */
    const size_t i = blk * RS_FP8_BLOCK + 4 * (size_t)lane;
    const float4 xv = *reinterpret_cast<const float4 *>(x + i);
    float a = fmaxf(fmaxf(fabsf(xv.x), fabsf(xv.y)), fmaxf(fabsf(xv.z), fabsf(xv.w)));
    a = rs_dev_warp_max(a);
    const float scale = rs_codec_fp8_scale(a, f.fp8_pow2);
    const float sinv = rs_codec_div(1.0f, scale);
    rs_philox_words w = {0, 0, 0, 0};
    if (f.sr) w = rs_codec_rand_block(seed, stream, i >> 2);
    const float xs[4] = {xv.x, xv.y, xv.z, xv.w};
    const uint32_t r[4] = {w.x, w.y, w.z, w.w};
    uint32_t packed = 0;
    float out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const uint32_t c = rs_codec_encode(RS_ELEM_E4M3, rs_codec_mul(xs[j], scale), f.sr, r[j], f.k);
        packed |= (c & 0xFFu) << (8 * j);
        out[j] = rs_codec_mul(rs_codec_e4m3_value(c), sinv);
    }
    if (codes) *reinterpret_cast<uint32_t *>(codes + i) = packed;
    if (scale_inv && lane == 0) scale_inv[blk] = sinv;
    if (y) *reinterpret_cast<float4 *>(y + i) = make_float4(out[0], out[1], out[2], out[3]);
}

__global__ void rs_k_fp8_decode(const uint8_t *codes, const float *scale_inv, size_t n, float *y)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) y[j] = rs_codec_mul(rs_codec_e4m3_value(codes[j]), scale_inv[j / RS_FP8_BLOCK]);
}

/* nvfp4: CUDA block t handles tensor t (E elements, E % 16 == 0). */
__global__ void rs_k_nvfp4_encode(rs_dev_fmt f, const float *x, size_t E, uint64_t seed, uint64_t stream,
                                  uint8_t *codes, uint8_t *block_scale, float *tensor_scale_dec, float *y,
                                  rs_dev_rowsel sel)
{
    __shared__ float warp_amax[RS_QK_THREADS / 32];
    const size_t base = (size_t)blockIdx.x * E;
    if (rs_dev_skip(sel, base)) return; /* rows are whole tensors: block-uniform */
    float a = 0.0f;
    for (size_t j = threadIdx.x; j < E; j += blockDim.x) a = fmaxf(a, fabsf(x[base + j]));
    a = rs_dev_warp_max(a);
    if ((threadIdx.x & 31) == 0) warp_amax[threadIdx.x / 32] = a;
    __syncthreads(); /* every read of the tensor's amax pass is done before any write below */
    a = 0.0f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) a = fmaxf(a, warp_amax[w]);
    const float s_enc = rs_codec_nvfp4_senc(a);
    const float s_dec = rs_codec_div(1.0f, s_enc);
    if (threadIdx.x == 0 && tensor_scale_dec) tensor_scale_dec[blockIdx.x] = s_dec;

    /* groups of 4 elements; 4 consecutive threads (lanes 4m..4m+3) cover one 16-block */
    const size_t ngroups = E / 4;
    for (size_t g0 = 0; g0 < ngroups; g0 += blockDim.x) {
        const size_t g = g0 + threadIdx.x; /* E/4 is a multiple of 4, so a 16-block never straddles */
        const bool active = g < ngroups;
        const size_t i = base + 4 * g;
        float4 xv = make_float4(0.f, 0.f, 0.f, 0.f);
        if (active) xv = *reinterpret_cast<const float4 *>(x + i);
        float ba = fmaxf(fmaxf(fabsf(xv.x), fabsf(xv.y)), fmaxf(fabsf(xv.z), fabsf(xv.w)));
        ba = fmaxf(ba, __shfl_xor_sync(0xFFFFFFFFu, ba, 1));
        ba = fmaxf(ba, __shfl_xor_sync(0xFFFFFFFFu, ba, 2));
        if (!active) continue;
        const uint8_t sb = (uint8_t)rs_codec_nvfp4_block_scale(ba, s_enc, f.nvfp4_floor);
        const float mult = rs_codec_nvfp4_mult(sb, s_dec);
        rs_philox_words w = {0, 0, 0, 0};
        if (f.sr) w = rs_codec_rand_block(seed, stream, i >> 2);
        const float xs[4] = {xv.x, xv.y, xv.z, xv.w};
        const uint32_t r[4] = {w.x, w.y, w.z, w.w};
        uint32_t q[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) q[j] = rs_codec_nvfp4_elem(xs[j], mult, f.sr, r[j], f.k) & 15u;
        if (codes) {
            const uint16_t two = (uint16_t)(q[0] | (q[1] << 4) | (q[2] << 8) | (q[3] << 12));
            *reinterpret_cast<uint16_t *>(codes + i / 2) = two;
        }
        if (block_scale && (g & 3) == 0) block_scale[i / RS_NVFP4_BLOCK] = sb;
        if (y)
            *reinterpret_cast<float4 *>(y + i) =
                make_float4(rs_codec_nvfp4_value(q[0], sb, s_dec), rs_codec_nvfp4_value(q[1], sb, s_dec),
                            rs_codec_nvfp4_value(q[2], sb, s_dec), rs_codec_nvfp4_value(q[3], sb, s_dec));
    }
}

__global__ void rs_k_nvfp4_decode(const uint8_t *codes, const uint8_t *block_scale, const float *tensor_scale_dec,
                                  size_t n, size_t E, float *y)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const uint32_t byte = codes[j / 2];
    const uint32_t q = (j & 1) ? byte >> 4 : byte & 15u;
    y[j] = rs_codec_nvfp4_value(q, block_scale[j / RS_NVFP4_BLOCK], tensor_scale_dec[j / E]);
}

/* ---- host side -------------------------------------------------------------------------------- */

/* rs_qtensor.c check_shape(), restated: format valid, E > 0, n % E == 0, block | E. */
static rs_status check_shape(const rs_format *f, size_t n, size_t E, const char *who)
{
    char name[32];
    RS_CHECK(f, RS_E_INVAL, "%s: NULL format", who);
    RS_TRY(rs_format_print(f, name, sizeof name));
    RS_CHECK(rs_format_on_gpu(f), RS_E_UNSUPPORTED, "%s: %s has no CUDA quantizer (the CPU's rs_quantize runs it)",
             who, name);
    RS_CHECK(E > 0 && n % E == 0, RS_E_SHAPE, "%s: n = %zu is not a positive multiple of the tensor extent %zu",
             who, n, E);
    const size_t block = rs_format_block(f);
    RS_CHECK(block == 0 || E % block == 0, RS_E_SHAPE, "%s: tensor extent %zu is not a multiple of the %s block", who,
             E, name);
    return RS_OK;
}

extern "C" rs_status rs_cuda_qtensor_alloc(rs_qtensor *q, const rs_format *f, size_t n, size_t tensor_extent)
{
    static const char who[] = "rs_cuda_qtensor_alloc";
    RS_CHECK(q, RS_E_INVAL, "%s: NULL descriptor", who);
    memset(q, 0, sizeof *q);
    /* The host allocator fixes the layout (one slab, offsets); mirror it in device memory. */
    rs_qtensor h;
    RS_TRY(rs_qtensor_alloc(&h, f, n, tensor_extent));
    const size_t total = rs_qtensor_bytes(&h);
    uint8_t *slab = NULL;
    if (total > 0) {
        const cudaError_t e = cudaMalloc((void **)&slab, total);
        if (e != cudaSuccess) {
            rs_qtensor_free(&h);
            return rs_error_set(RS_E_NOMEM, "%s: cudaMalloc of %zu bytes failed: %s", who, total, cudaGetErrorString(e));
        }
    }
    *q = h;
    q->codes = slab;
    if (h.scale_inv) q->scale_inv = (float *)(void *)(slab + ((uint8_t *)(void *)h.scale_inv - h.codes));
    if (h.tensor_scale_dec)
        q->tensor_scale_dec = (float *)(void *)(slab + ((uint8_t *)(void *)h.tensor_scale_dec - h.codes));
    if (h.block_scale) q->block_scale = slab + (h.block_scale - h.codes);
    rs_qtensor_free(&h);
    return RS_OK;
}

extern "C" void rs_cuda_qtensor_free(rs_qtensor *q)
{
    if (!q) return;
    if (q->codes) cudaFree(q->codes);
    memset(q, 0, sizeof *q);
}

/* Shared by quantize (codes != NULL, y == NULL) and the round trip (codes == NULL, y != NULL). */
static rs_status encode_launch(const rs_format *f, const float *x, size_t n, size_t E, uint64_t seed,
                               uint64_t stream, uint8_t *codes, float *scale_inv, uint8_t *block_scale,
                               float *tensor_scale_dec, float *y, rs_cuda_stream s, const char *who,
                               rs_dev_rowsel sel = rs_dev_rowsel{nullptr, 0, 1})
{
    const rs_dev_fmt df = dev_fmt(f);
    switch (f->kind) {
    case RS_FMT_FP32:
        if (codes) return rs_cuda_call_status(cudaMemcpyAsync(codes, x, 4 * n, cudaMemcpyDeviceToDevice, s), who);
        if (y != x) return rs_cuda_call_status(cudaMemcpyAsync(y, x, 4 * n, cudaMemcpyDeviceToDevice, s), who);
        return RS_OK;
    case RS_FMT_FP16:
    case RS_FMT_BF16:
        rs_k_half_encode<<<grid_for((n + 3) / 4, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(
            f->kind == RS_FMT_BF16, df, x, n, seed, stream, (uint16_t *)(void *)codes, y, sel);
        break;
    case RS_FMT_FP8: {
        const size_t nb = n / RS_FP8_BLOCK;
        rs_k_fp8_encode<<<grid_for(32 * nb, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(df, x, nb, seed, stream, codes,
                                                                                 scale_inv, y, sel);
        break;
    }
    case RS_FMT_NVFP4:
        rs_k_nvfp4_encode<<<(unsigned)(n / E), RS_QK_THREADS, 0, s>>>(df, x, E, seed, stream, codes, block_scale,
                                                                      tensor_scale_dec, y, sel);
        break;
    default: return rs_error_set(RS_E_UNSUPPORTED, "%s: format kind %d has no CUDA quantizer", who, (int)f->kind);
    }
    return rs_cuda_launch_status(who);
}

extern "C" rs_status rs_cuda_quantize(rs_qtensor *dq, const float *d_x, uint64_t seed, uint64_t stream,
                                      rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_quantize";
    RS_CHECK(dq, RS_E_INVAL, "%s: NULL descriptor", who);
    RS_TRY(check_shape(&dq->fmt, dq->n, dq->tensor_extent, who));
    if (dq->n == 0) return RS_OK;
    RS_CHECK(d_x && dq->codes, RS_E_INVAL, "%s: NULL input or unallocated descriptor", who);
    return encode_launch(&dq->fmt, d_x, dq->n, dq->tensor_extent, seed, stream, dq->codes, dq->scale_inv,
                         dq->block_scale, dq->tensor_scale_dec, NULL, s, who);
}

extern "C" rs_status rs_cuda_quantize_roundtrip(const rs_format *f, const float *d_x, size_t n, size_t tensor_extent,
                                                uint64_t seed, uint64_t stream, float *d_y, rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_quantize_roundtrip";
    RS_TRY(check_shape(f, n, tensor_extent, who));
    if (n == 0) return RS_OK;
    RS_CHECK(d_x && d_y, RS_E_INVAL, "%s: NULL input or output", who);
    return encode_launch(f, d_x, n, tensor_extent, seed, stream, NULL, NULL, NULL, NULL, d_y, s, who);
}

extern "C" rs_status rs_cuda_dequantize(const rs_qtensor *dq, float *d_y, rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_dequantize";
    RS_CHECK(dq, RS_E_INVAL, "%s: NULL descriptor", who);
    RS_TRY(check_shape(&dq->fmt, dq->n, dq->tensor_extent, who));
    const size_t n = dq->n;
    if (n == 0) return RS_OK;
    RS_CHECK(d_y && dq->codes, RS_E_INVAL, "%s: NULL output or unallocated descriptor", who);
    switch (dq->fmt.kind) {
    case RS_FMT_FP32:
        return rs_cuda_call_status(cudaMemcpyAsync(d_y, dq->codes, 4 * n, cudaMemcpyDeviceToDevice, s), who);
    case RS_FMT_FP16:
    case RS_FMT_BF16:
        rs_k_half_decode<<<grid_for(n, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(
            dq->fmt.kind == RS_FMT_BF16, (const uint16_t *)(const void *)dq->codes, n, d_y);
        break;
    case RS_FMT_FP8:
        rs_k_fp8_decode<<<grid_for(n, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(dq->codes, dq->scale_inv, n, d_y);
        break;
    case RS_FMT_NVFP4:
        rs_k_nvfp4_decode<<<grid_for(n, RS_QK_THREADS), RS_QK_THREADS, 0, s>>>(
            dq->codes, dq->block_scale, dq->tensor_scale_dec, n, dq->tensor_extent, d_y);
        break;
    default: return rs_error_set(RS_E_UNSUPPORTED, "%s: format kind %d has no CUDA decoder", who, (int)dq->fmt.kind);
    }
    return rs_cuda_launch_status(who);
}

extern "C" rs_status rs_cuda_replay_requant(const rs_ssm_dims *dims, const rs_cuda_replay_state *st, rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_replay_requant";
    RS_CHECK(dims && st && st->S_ckpt && st->fill && st->ckpt_read && st->ckpt_read->codes, RS_E_INVAL,
             "%s: NULL dims, state, fill or ckpt_read", who);
    RS_CHECK(dims->d_k == RS_CUDA_DK, RS_E_UNSUPPORTED,
             "%s: d_k = %d (low-precision checkpoint reads support d_k = %d only)", who, dims->d_k, RS_CUDA_DK);
    const rs_qtensor *q = st->ckpt_read;
    const size_t row = (size_t)dims->heads * dims->d_v * dims->d_k;
    RS_CHECK(q->n == row * (size_t)dims->batch && q->tensor_extent == (size_t)dims->d_v * dims->d_k, RS_E_SHAPE,
             "%s: ckpt_read holds %zu elements in tensors of %zu", who, q->n, q->tensor_extent);
    RS_CHECK(q->fmt.kind != RS_FMT_FP32, RS_E_INVAL, "%s: an fp32 read copy is S_ckpt itself", who);
    rs_format f = q->fmt;
    f.rounding = RS_ROUND_RTN; /* the read-only copy is rounded to nearest (digest section 5) */
    const rs_dev_rowsel sel = {st->fill, st->L, row};
    return encode_launch(&f, st->S_ckpt, q->n, q->tensor_extent, 0, 0, q->codes, q->scale_inv, q->block_scale,
                         q->tensor_scale_dec, NULL, s, who, sel);
}
