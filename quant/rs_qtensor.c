/* rs_qtensor.c — block quantizers (FP8 block, NVFP4, FP16, BF16) over float32 tensors: the
 * CPU reference that the CUDA twins match bit for bit. Formulas and storage: rs_qtensor.h.
 *
 * Structure. Each format has one "encode a block" function that reads the float32 block,
 * computes its scale and writes element codes to a caller buffer, and one "decode" rule.
 * rs_quantize() stores the codes in the descriptor, rs_dequantize() decodes them, and
 * rs_quantize_roundtrip() encodes each block into a small stack buffer and decodes it at
 * once; all three use the same functions, which is why the round trip equals quantize +
 * dequantize bit for bit without allocating. A block is read completely before its output
 * is written, and the NVFP4 tensor amax is taken before any block of the tensor is written,
 * so the round trip may run in place (y == x).
 *
 * Order of checks: format and shapes, then one pass over all of x for NaN/Inf (reported
 * with the first index, before any amax: fmaxf would drop a NaN silently), then the work.
 * So on RS_E_NONFINITE nothing has been written (the header leaves it unspecified).
 *
 * Random words for SR: element i of x uses rs_rand_u32(seed, stream, i), drawn in chunks
 * with rs_rand_fill(); scales are always RTN (they are not stochastic in TransformerEngine).
 */
#include "replayssm/quant/rs_codec.h" /* the block-scale formulas shared with kernels/ */
#include "replayssm/quant/rs_qtensor.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"
#include "rs_check.h"

#define RS_ELEMWISE_CHUNK 1024 /* elements per rs_rand_fill call for fp16/bf16 SR */

/* ---- exact decoders of the stored codes (same values as rs_elem_decode) ---------------- */

/* |E4M3fn| values of codes 0x00..0x7F (OCP: e == 0: m 2^-9, else (1 + m/8) 2^(e-7); 0x7F is
 * NaN and never written by the quantizers). A table, because the decode runs per element and
 * a branchy formula costs mispredictions on random signs; checked against rs_e4m3_decode and
 * ml_dtypes by the tests (dequantized values are compared bit for bit). */
static const float k_e4m3_mag[128] = {
    0.0f, 0x1p-9f, 0x1p-8f, 0x1.8p-8f, 0x1p-7f, 0x1.4p-7f, 0x1.8p-7f, 0x1.cp-7f,
    0x1p-6f, 0x1.2p-6f, 0x1.4p-6f, 0x1.6p-6f, 0x1.8p-6f, 0x1.ap-6f, 0x1.cp-6f, 0x1.ep-6f,
    0x1p-5f, 0x1.2p-5f, 0x1.4p-5f, 0x1.6p-5f, 0x1.8p-5f, 0x1.ap-5f, 0x1.cp-5f, 0x1.ep-5f,
    0x1p-4f, 0x1.2p-4f, 0x1.4p-4f, 0x1.6p-4f, 0x1.8p-4f, 0x1.ap-4f, 0x1.cp-4f, 0x1.ep-4f,
    0x1p-3f, 0x1.2p-3f, 0x1.4p-3f, 0x1.6p-3f, 0x1.8p-3f, 0x1.ap-3f, 0x1.cp-3f, 0x1.ep-3f,
    0x1p-2f, 0x1.2p-2f, 0x1.4p-2f, 0x1.6p-2f, 0x1.8p-2f, 0x1.ap-2f, 0x1.cp-2f, 0x1.ep-2f,
    0x1p-1f, 0x1.2p-1f, 0x1.4p-1f, 0x1.6p-1f, 0x1.8p-1f, 0x1.ap-1f, 0x1.cp-1f, 0x1.ep-1f,
    0x1p0f, 0x1.2p0f, 0x1.4p0f, 0x1.6p0f, 0x1.8p0f, 0x1.ap0f, 0x1.cp0f, 0x1.ep0f,
    0x1p1f, 0x1.2p1f, 0x1.4p1f, 0x1.6p1f, 0x1.8p1f, 0x1.ap1f, 0x1.cp1f, 0x1.ep1f,
    0x1p2f, 0x1.2p2f, 0x1.4p2f, 0x1.6p2f, 0x1.8p2f, 0x1.ap2f, 0x1.cp2f, 0x1.ep2f,
    0x1p3f, 0x1.2p3f, 0x1.4p3f, 0x1.6p3f, 0x1.8p3f, 0x1.ap3f, 0x1.cp3f, 0x1.ep3f,
    0x1p4f, 0x1.2p4f, 0x1.4p4f, 0x1.6p4f, 0x1.8p4f, 0x1.ap4f, 0x1.cp4f, 0x1.ep4f,
    0x1p5f, 0x1.2p5f, 0x1.4p5f, 0x1.6p5f, 0x1.8p5f, 0x1.ap5f, 0x1.cp5f, 0x1.ep5f,
    0x1p6f, 0x1.2p6f, 0x1.4p6f, 0x1.6p6f, 0x1.8p6f, 0x1.ap6f, 0x1.cp6f, 0x1.ep6f,
    0x1p7f, 0x1.2p7f, 0x1.4p7f, 0x1.6p7f, 0x1.8p7f, 0x1.ap7f, 0x1.cp7f, 0x1.ep7f,
    0x1p8f, 0x1.2p8f, 0x1.4p8f, 0x1.6p8f, 0x1.8p8f, 0x1.ap8f, 0x1.cp8f, NAN,
};

/* E4M3fn code -> float, sign bit copied (branch-free). */
static inline float e4m3_value(uint8_t c)
{
    float v = k_e4m3_mag[c & 127u];
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    b |= (uint32_t)(c >> 7) << 31;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* E2M1 code (low nibble) -> float. */
static const float k_e2m1_value[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                       -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/* ---- checks --------------------------------------------------------------------------- */

static rs_status check_shape(const rs_format *f, size_t n, size_t E, const char *who)
{
    char name[32];
    if (!f) return rs_error_set(RS_E_INVAL, "%s: NULL format", who);
    RS_TRY(rs_format_print(f, name, sizeof name)); /* validates every field */
    RS_CHECK(E > 0, RS_E_SHAPE, "%s: tensor extent must be positive (format %s)", who, name);
    RS_CHECK(n % E == 0, RS_E_SHAPE, "%s: n = %zu is not a multiple of the tensor extent %zu (format %s)", who, n,
             E, name);
    const size_t block = rs_format_block(f);
    RS_CHECK(block == 0 || E % block == 0, RS_E_SHAPE,
             "%s: tensor extent %zu is not a multiple of the %s block of %zu elements", who, E, name, block);
    RS_CHECK(n <= SIZE_MAX / 4, RS_E_SHAPE, "%s: n = %zu is too large", who, n);
    return RS_OK;
}

/* First NaN/Inf in x[n] -> RS_E_NONFINITE naming its index. The chunked OR keeps the
 * common all-finite case a vectorizable pass. */
static rs_status check_finite(const float *x, size_t n, const char *who)
{
    for (size_t i0 = 0; i0 < n; i0 += RS_ELEMWISE_CHUNK) {
        const size_t m = n - i0 < RS_ELEMWISE_CHUNK ? n - i0 : RS_ELEMWISE_CHUNK;
        int bad = 0;
        for (size_t j = 0; j < m; ++j) bad |= !(fabsf(x[i0 + j]) <= FLT_MAX);
        if (!bad) continue;
        for (size_t j = 0; j < m; ++j) {
            const float v = x[i0 + j];
            if (!(fabsf(v) <= FLT_MAX))
                return rs_error_set(RS_E_NONFINITE, "%s: non-finite input %s at index %zu (of %zu elements)", who,
                                    isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), i0 + j, n);
        }
    }
    return RS_OK;
}

static float amax_of(const float *x, size_t n)
{
    float a = 0.0f;
    for (size_t j = 0; j < n; ++j) a = fmaxf(a, fabsf(x[j]));
    return a;
}

/* ---- FP8 block: E4M3 (fp8) or E5M2 (e5m2) elements, float32 scale per 128 -------------- */

/* Encode x[RS_FP8_BLOCK] (element i0 of the call) into codes; *scale_inv = 1/scale. The scale maps
   the block amax to the element type's largest finite value (448 or 57344). */
static void fp8_encode_block(const rs_format *f, const float *x, uint64_t i0, uint64_t seed, uint64_t stream,
                             uint8_t *codes, float *scale_inv)
{
    const int e5 = f->kind == RS_FMT_E5M2;
    const float scale = rs_codec_fp8_scale_of(amax_of(x, RS_FP8_BLOCK), e5 ? RS_E5M2_MAX : RS_E4M3_MAX, f->fp8_pow2);
    if (f->rounding == RS_ROUND_RTN && !e5) {
        for (size_t j = 0; j < RS_FP8_BLOCK; ++j) codes[j] = rs_e4m3_encode_rtn(x[j] * scale);
    } else if (f->rounding == RS_ROUND_RTN) {
        for (size_t j = 0; j < RS_FP8_BLOCK; ++j) codes[j] = (uint8_t)rs_codec_encode(RS_ELEM_E5M2, x[j] * scale, 0, 0, 32);
    } else {
        uint32_t r[RS_FP8_BLOCK];
        rs_rand_fill(seed, stream, i0, RS_FP8_BLOCK, r);
        /* f was validated (k in 1..32): the codec directly, as rs_e4m3_encode_sr does */
        const rs_elem t = e5 ? RS_ELEM_E5M2 : RS_ELEM_E4M3;
        for (size_t j = 0; j < RS_FP8_BLOCK; ++j) codes[j] = (uint8_t)rs_codec_encode(t, x[j] * scale, 1, r[j], f->sr_bits);
    }
    *scale_inv = 1.0f / scale;
}

static void fp8_decode_block(const rs_format *f, const uint8_t *codes, float scale_inv, float *y)
{
    if (f->kind == RS_FMT_E5M2)
        for (size_t j = 0; j < RS_FP8_BLOCK; ++j) y[j] = rs_codec_e5m2_value(codes[j]) * scale_inv;
    else
        for (size_t j = 0; j < RS_FP8_BLOCK; ++j) y[j] = e4m3_value(codes[j]) * scale_inv;
}

/* ---- NVFP4: E2M1 elements, E4M3 scale per 16, float32 S_dec per tensor ----------------- */

/* Tensor scales from the tensor amax (TE compute_global_encode_scaling_factor_FP4). */
static void nvfp4_tensor_scales(const float *x, size_t E, float *s_enc, float *s_dec)
{
    const float se = rs_codec_nvfp4_senc(amax_of(x, E));
    *s_enc = se;
    *s_dec = 1.0f / se;
}

/* Encode x[RS_NVFP4_BLOCK] into unpacked E2M1 codes q[16] and the E4M3 block scale. */
static rs_status nvfp4_encode_block(const rs_format *f, const float *x, uint64_t i0, float s_enc, float s_dec,
                                    uint64_t seed, uint64_t stream, uint8_t *q, uint8_t *sb_code)
{
    /* the block scale and element multiplier by the formulas the CUDA quantizer shares */
    const uint8_t sb = (uint8_t)rs_codec_nvfp4_block_scale(amax_of(x, RS_NVFP4_BLOCK), s_enc, f->nvfp4_floor);
    const float mult = rs_codec_nvfp4_mult(sb, s_dec);
    *sb_code = sb;

    uint32_t r[RS_NVFP4_BLOCK];
    if (f->rounding == RS_ROUND_SR) rs_rand_fill(seed, stream, i0, RS_NVFP4_BLOCK, r);
    for (size_t j = 0; j < RS_NVFP4_BLOCK; ++j) {
        /* x * mult may overflow to Inf in a block whose scale is 0 (mult = FLT_MAX): clamp
         * first, which is what cvt.satfinite does with it (and exact for finite values). */
        const float v = fminf(fmaxf(x[j] * mult, -6.0f), 6.0f);
        rs_status st = f->rounding == RS_ROUND_RTN ? rs_e2m1_encode_rtn(v, &q[j])
                                                   : rs_e2m1_encode_sr(v, r[j], f->sr_bits, &q[j]);
        if (st != RS_OK) return st; /* unreachable: v is finite */
    }
    return RS_OK;
}

static void nvfp4_decode_block(const uint8_t *q, uint8_t sb_code, float s_dec, float *y)
{
    const float sbv = e4m3_value(sb_code);
    for (size_t j = 0; j < RS_NVFP4_BLOCK; ++j) y[j] = (k_e2m1_value[q[j] & 15u] * sbv) * s_dec;
}

/* ---- MX (OCP Microscaling v1.0): E4M3 or E2M1 elements, E8M0 scale per 32 ------------------ */

/* Encode x[RS_MX_BLOCK] (element i0 of the call) into unpacked element codes q[32] and the E8M0
   code of the block's scale (rs_codec.h "OCP Microscaling") */
static void mx_encode_block(const rs_format *f, const float *x, uint64_t i0, uint64_t seed, uint64_t stream,
                            uint8_t *q, uint8_t *sc)
{
    const int fp4 = f->kind == RS_FMT_MXFP4;
    const rs_elem t = fp4 ? RS_ELEM_E2M1 : RS_ELEM_E4M3;
    const float emaxv = fp4 ? RS_E2M1_MAX : RS_E4M3_MAX;
    const uint32_t code = rs_codec_mx_scale_code(amax_of(x, RS_MX_BLOCK), fp4 ? 2 : 8);
    const float inv = rs_codec_e8m0_inverse(code);
    *sc = (uint8_t)code;
    uint32_t r[RS_MX_BLOCK];
    const int sr = f->rounding == RS_ROUND_SR;
    if (sr) rs_rand_fill(seed, stream, i0, RS_MX_BLOCK, r);
    const rs_codec_desc d = rs_codec_desc_of(t);
    for (size_t j = 0; j < RS_MX_BLOCK; ++j) {
        /* V / X exactly, then saturated to the element type's largest value (the spec's clamp) */
        const float v = fminf(fmaxf(x[j] * inv, -emaxv), emaxv);
        const uint32_t u = rs_codec_f2u(v);
        q[j] = (uint8_t)rs_codec_encode_finite(d, u >> 31, u & 0x7FFFFFFFu, sr, sr ? r[j] : 0, f->sr_bits);
    }
}

static void mx_decode_block(const rs_format *f, const uint8_t *q, uint8_t sc, float *y)
{
    const float X = rs_codec_e8m0_value(sc);
    if (f->kind == RS_FMT_MXFP4)
        for (size_t j = 0; j < RS_MX_BLOCK; ++j) y[j] = k_e2m1_value[q[j] & 15u] * X;
    else
        for (size_t j = 0; j < RS_MX_BLOCK; ++j) y[j] = e4m3_value(q[j]) * X;
}

/* x[RS_MX_BLOCK] -> the stored codes (mxfp8: one byte each; mxfp4: element 2i low nibble, 2i+1 high) */
static void mx_store_(const rs_format *f, const uint8_t *q, uint8_t *codes)
{
    if (f->kind == RS_FMT_MXFP4)
        for (size_t j = 0; j < RS_MX_BLOCK; j += 2) codes[j / 2] = (uint8_t)((q[j] & 15u) | (uint8_t)((q[j + 1] & 15u) << 4));
    else
        memcpy(codes, q, RS_MX_BLOCK);
}

static void mx_load_(const rs_format *f, const uint8_t *codes, uint8_t *q)
{
    if (f->kind == RS_FMT_MXFP4)
        for (size_t j = 0; j < RS_MX_BLOCK; j += 2) {
            q[j] = codes[j / 2] & 15u;
            q[j + 1] = (uint8_t)(codes[j / 2] >> 4);
        }
    else
        memcpy(q, codes, RS_MX_BLOCK);
}

/* ---- FP16 / BF16: elementwise --------------------------------------------------------- */

static void half_encode_chunk(const rs_format *f, const float *x, size_t m, uint64_t i0, uint64_t seed,
                              uint64_t stream, uint16_t *codes)
{
    const int bf = f->kind == RS_FMT_BF16;
    if (f->rounding == RS_ROUND_RTN) {
        for (size_t j = 0; j < m; ++j) codes[j] = bf ? rs_bf16_encode_rtn(x[j]) : rs_fp16_encode_rtn(x[j]);
    } else {
        uint32_t r[RS_ELEMWISE_CHUNK];
        rs_rand_fill(seed, stream, i0, m, r);
        for (size_t j = 0; j < m; ++j)
            codes[j] = (uint16_t)(bf ? rs_codec_bf16_sr(x[j], r[j], f->sr_bits) /* f validated: k in 1..32 */
                                     : rs_codec_fp16_sr(x[j], r[j], f->sr_bits));
    }
}

static void half_decode_chunk(const rs_format *f, const uint16_t *codes, size_t m, float *y)
{
    if (f->kind == RS_FMT_BF16) {
        for (size_t j = 0; j < m; ++j) {
            const uint32_t b = (uint32_t)codes[j] << 16;
            memcpy(&y[j], &b, sizeof b);
        }
    } else {
        for (size_t j = 0; j < m; ++j) y[j] = rs_fp16_decode(codes[j]);
    }
}

/* ---- storage ---------------------------------------------------------------------------- */

/* Byte sizes of the four arrays for n elements in tensors of E. */
typedef struct {
    size_t codes, scale_inv, block_scale, tensor_scale;
} qt_sizes;

static qt_sizes sizes_of(const rs_format *f, size_t n, size_t E)
{
    qt_sizes s = {0, 0, 0, 0};
    switch (f->kind) {
    case RS_FMT_FP32: s.codes = 4 * n; break;
    case RS_FMT_FP16:
    case RS_FMT_BF16: s.codes = 2 * n; break;
    case RS_FMT_FP8:
    case RS_FMT_E5M2:
        s.codes = n;
        s.scale_inv = 4 * (n / RS_FP8_BLOCK);
        break;
    case RS_FMT_NVFP4:
        s.codes = n / 2;
        s.block_scale = n / RS_NVFP4_BLOCK;
        s.tensor_scale = E ? 4 * (n / E) : 0;
        break;
    case RS_FMT_MXFP8:
    case RS_FMT_MXFP4:
        s.codes = f->kind == RS_FMT_MXFP4 ? n / 2 : n;
        s.block_scale = n / RS_MX_BLOCK;
        break;
    }
    return s;
}

rs_status rs_qtensor_alloc(rs_qtensor *q, const rs_format *f, size_t n, size_t tensor_extent)
{
    if (!q) return rs_error_set(RS_E_INVAL, "rs_qtensor_alloc: NULL descriptor");
    memset(q, 0, sizeof *q);
    RS_TRY(check_shape(f, n, tensor_extent, "rs_qtensor_alloc"));
    const qt_sizes s = sizes_of(f, n, tensor_extent);
    const size_t total = s.codes + s.scale_inv + s.tensor_scale + s.block_scale;
    /* One slab, codes first: the float arrays that follow start at a multiple of 4 bytes
     * (codes are n, n/2 with 16 | n, or 2n/4n bytes), the E4M3 block scales come last. */
    uint8_t *slab = NULL;
    if (total > 0) {
        slab = malloc(total);
        if (!slab) return rs_error_set(RS_E_NOMEM, "rs_qtensor_alloc: cannot allocate %zu bytes", total);
    }
    q->fmt = *f;
    q->n = n;
    q->tensor_extent = tensor_extent;
    q->codes = slab;
    uint8_t *p = slab ? slab + s.codes : NULL;
    if (s.scale_inv) { q->scale_inv = (float *)(void *)p; p += s.scale_inv; }
    if (s.tensor_scale) { q->tensor_scale_dec = (float *)(void *)p; p += s.tensor_scale; }
    if (s.block_scale) q->block_scale = p;
    return RS_OK;
}

void rs_qtensor_free(rs_qtensor *q)
{
    if (!q) return;
    free(q->codes); /* the slab's base; the scale arrays live inside it */
    memset(q, 0, sizeof *q);
}

size_t rs_qtensor_bytes(const rs_qtensor *q)
{
    if (!q || !q->tensor_extent) return 0;
    const qt_sizes s = sizes_of(&q->fmt, q->n, q->tensor_extent);
    return s.codes + s.scale_inv + s.tensor_scale + s.block_scale;
}

static rs_status check_qtensor(const rs_qtensor *q, const char *who)
{
    if (!q) return rs_error_set(RS_E_INVAL, "%s: NULL descriptor", who);
    RS_TRY(check_shape(&q->fmt, q->n, q->tensor_extent, who));
    RS_CHECK(q->n == 0 || q->codes, RS_E_STATE, "%s: descriptor has no storage (call rs_qtensor_alloc)", who);
    return RS_OK;
}

/* ---- entry points ------------------------------------------------------------------------ */

rs_status rs_quantize(rs_qtensor *q, const float *x, uint64_t seed, uint64_t stream)
{
    static const char who[] = "rs_quantize";
    RS_TRY(check_qtensor(q, who));
    const size_t n = q->n, E = q->tensor_extent;
    RS_CHECK(n == 0 || x, RS_E_INVAL, "%s: NULL input", who);
    RS_TRY(check_finite(x, n, who));
    const rs_format *f = &q->fmt;

    switch (f->kind) {
    case RS_FMT_FP32: if (n) memcpy(q->codes, x, 4 * n); break;
    case RS_FMT_FP16:
    case RS_FMT_BF16: {
        uint16_t c[RS_ELEMWISE_CHUNK];
        for (size_t i0 = 0; i0 < n; i0 += RS_ELEMWISE_CHUNK) {
            const size_t m = n - i0 < RS_ELEMWISE_CHUNK ? n - i0 : RS_ELEMWISE_CHUNK;
            half_encode_chunk(f, x + i0, m, i0, seed, stream, c);
            memcpy(q->codes + 2 * i0, c, 2 * m);
        }
        break;
    }
    case RS_FMT_FP8:
    case RS_FMT_E5M2:
        for (size_t b = 0; b < n / RS_FP8_BLOCK; ++b) {
            const size_t i0 = b * RS_FP8_BLOCK;
            fp8_encode_block(f, x + i0, i0, seed, stream, q->codes + i0, &q->scale_inv[b]);
        }
        break;
    case RS_FMT_NVFP4:
        for (size_t t = 0; t < n / E; ++t) {
            float s_enc, s_dec;
            nvfp4_tensor_scales(x + t * E, E, &s_enc, &s_dec);
            q->tensor_scale_dec[t] = s_dec;
            for (size_t i0 = t * E; i0 < (t + 1) * E; i0 += RS_NVFP4_BLOCK) {
                uint8_t c[RS_NVFP4_BLOCK];
                RS_TRY(nvfp4_encode_block(f, x + i0, i0, s_enc, s_dec, seed, stream, c,
                                          &q->block_scale[i0 / RS_NVFP4_BLOCK]));
                for (size_t j = 0; j < RS_NVFP4_BLOCK; j += 2)
                    q->codes[(i0 + j) / 2] = (uint8_t)((c[j] & 15u) | (uint8_t)((c[j + 1] & 15u) << 4));
            }
        }
        break;
    case RS_FMT_MXFP8:
    case RS_FMT_MXFP4: {
        const size_t cb = f->kind == RS_FMT_MXFP4 ? RS_MX_BLOCK / 2 : RS_MX_BLOCK;
        for (size_t b = 0; b < n / RS_MX_BLOCK; ++b) {
            uint8_t c[RS_MX_BLOCK];
            mx_encode_block(f, x + b * RS_MX_BLOCK, b * RS_MX_BLOCK, seed, stream, c, &q->block_scale[b]);
            mx_store_(f, c, q->codes + b * cb);
        }
        break;
    }
    }
    return RS_OK;
}

rs_status rs_dequantize(const rs_qtensor *q, float *y)
{
    static const char who[] = "rs_dequantize";
    RS_TRY(check_qtensor(q, who));
    const size_t n = q->n, E = q->tensor_extent;
    RS_CHECK(n == 0 || y, RS_E_INVAL, "%s: NULL output", who);
    const rs_format *f = &q->fmt;

    switch (f->kind) {
    case RS_FMT_FP32: if (n) memcpy(y, q->codes, 4 * n); break;
    case RS_FMT_FP16:
    case RS_FMT_BF16: {
        uint16_t c[RS_ELEMWISE_CHUNK];
        for (size_t i0 = 0; i0 < n; i0 += RS_ELEMWISE_CHUNK) {
            const size_t m = n - i0 < RS_ELEMWISE_CHUNK ? n - i0 : RS_ELEMWISE_CHUNK;
            memcpy(c, q->codes + 2 * i0, 2 * m);
            half_decode_chunk(f, c, m, y + i0);
        }
        break;
    }
    case RS_FMT_FP8:
    case RS_FMT_E5M2:
        for (size_t b = 0; b < n / RS_FP8_BLOCK; ++b)
            fp8_decode_block(f, q->codes + b * RS_FP8_BLOCK, q->scale_inv[b], y + b * RS_FP8_BLOCK);
        break;
    case RS_FMT_NVFP4:
        for (size_t i0 = 0; i0 < n; i0 += RS_NVFP4_BLOCK) {
            uint8_t c[RS_NVFP4_BLOCK];
            for (size_t j = 0; j < RS_NVFP4_BLOCK; j += 2) {
                const uint8_t byte = q->codes[(i0 + j) / 2];
                c[j] = byte & 15u;
                c[j + 1] = (uint8_t)(byte >> 4);
            }
            nvfp4_decode_block(c, q->block_scale[i0 / RS_NVFP4_BLOCK], q->tensor_scale_dec[i0 / E], y + i0);
        }
        break;
    case RS_FMT_MXFP8:
    case RS_FMT_MXFP4: {
        const size_t cb = f->kind == RS_FMT_MXFP4 ? RS_MX_BLOCK / 2 : RS_MX_BLOCK;
        for (size_t b = 0; b < n / RS_MX_BLOCK; ++b) {
            uint8_t c[RS_MX_BLOCK];
            mx_load_(f, q->codes + b * cb, c);
            mx_decode_block(f, c, q->block_scale[b], y + b * RS_MX_BLOCK);
        }
        break;
    }
    }
    return RS_OK;
}

rs_status rs_quantize_roundtrip(const rs_format *f, const float *x, size_t n, size_t tensor_extent, uint64_t seed,
                                uint64_t stream, float *y)
{
    static const char who[] = "rs_quantize_roundtrip";
    RS_TRY(check_shape(f, n, tensor_extent, who));
    RS_CHECK(n == 0 || (x && y), RS_E_INVAL, "%s: NULL input or output", who);
    RS_TRY(check_finite(x, n, who));
    const size_t E = tensor_extent;

    switch (f->kind) {
    case RS_FMT_FP32: if (n && x != y) memmove(y, x, 4 * n); break;
    case RS_FMT_FP16:
    case RS_FMT_BF16: {
        uint16_t c[RS_ELEMWISE_CHUNK];
        for (size_t i0 = 0; i0 < n; i0 += RS_ELEMWISE_CHUNK) {
            const size_t m = n - i0 < RS_ELEMWISE_CHUNK ? n - i0 : RS_ELEMWISE_CHUNK;
            half_encode_chunk(f, x + i0, m, i0, seed, stream, c);
            half_decode_chunk(f, c, m, y + i0);
        }
        break;
    }
    case RS_FMT_FP8:
    case RS_FMT_E5M2:
        for (size_t i0 = 0; i0 < n; i0 += RS_FP8_BLOCK) {
            uint8_t c[RS_FP8_BLOCK];
            float scale_inv;
            fp8_encode_block(f, x + i0, i0, seed, stream, c, &scale_inv);
            fp8_decode_block(f, c, scale_inv, y + i0);
        }
        break;
    case RS_FMT_NVFP4:
        for (size_t t = 0; t < n / E; ++t) {
            float s_enc, s_dec;
            nvfp4_tensor_scales(x + t * E, E, &s_enc, &s_dec);
            for (size_t i0 = t * E; i0 < (t + 1) * E; i0 += RS_NVFP4_BLOCK) {
                uint8_t c[RS_NVFP4_BLOCK], sb;
                RS_TRY(nvfp4_encode_block(f, x + i0, i0, s_enc, s_dec, seed, stream, c, &sb));
                nvfp4_decode_block(c, sb, s_dec, y + i0);
            }
        }
        break;
    case RS_FMT_MXFP8:
    case RS_FMT_MXFP4:
        for (size_t i0 = 0; i0 < n; i0 += RS_MX_BLOCK) {
            uint8_t c[RS_MX_BLOCK], sc;
            mx_encode_block(f, x + i0, i0, seed, stream, c, &sc);
            mx_decode_block(f, c, sc, y + i0);
        }
        break;
    }
    return RS_OK;
}
