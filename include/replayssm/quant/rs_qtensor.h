/* rs_qtensor.h — block quantizers over float32 tensors, with packed storage.
 *
 * Legend: n = elements; E = tensor extent (elements sharing one NVFP4 tensor scale; an SSM
 * state is one tensor of E = d_v * d_k, row-major, d_k contiguous); blocks are contiguous.
 * n must be a multiple of E and E a multiple of the format's block (128 fp8, 16 nvfp4).
 *
 * Storage (exact bytes, see rs_qtensor_bytes()):
 *   fp32   codes = n float32                    (4 B/elem)
 *   fp16   codes = n binary16 bit patterns       (2 B/elem)
 *   bf16   codes = n bfloat16 bit patterns       (2 B/elem)
 *   fp8    codes = n E4M3 bytes; scale_inv[n/128] float32 decode scales (1/scale)
 *   nvfp4  codes = n/2 bytes, element 2i in the low nibble, 2i+1 in the high nibble;
 *          block_scale[n/16] E4M3 bytes; tensor_scale_dec[n/E] float32 S_dec
 *
 * FP8 block scale (TransformerEngine compute_scale_from_amax with max 448, eps 0):
 *   scale = 448 / amax (IEEE division); scale = 1 when amax is 0; +FLT_MAX if it overflows;
 *   pow2 option: scale's mantissa bits cleared (rounds down). Stored: scale_inv = 1/scale.
 *   Elements: E4M3-satfinite(x * scale) with the format's rounding. Dequant: q * scale_inv.
 * NVFP4 (TransformerEngine NVFP4, bit for bit):
 *   S_enc = fminf(448*6 / amax, FLT_MAX); S_enc = 1 if amax == 0 or S_enc == 0;
 *   S_dec = 1 / S_enc (stored, never recomputed from amax);
 *   block scale s_b = E4M3-RTN-satfinite(block_amax * (S_enc * (1.0f/6.0f)));
 *   [floor option: s_b = max(s_b, 2^-6) before the cast]
 *   multiplier = fminf(1 / (float(s_b) * S_dec), FLT_MAX);
 *   elements E2M1-satfinite(x * multiplier) with the format's rounding.
 *   Dequant: e2m1(q) * float(s_b) * S_dec  (a zero block scale dequantizes to 0).
 * SR: element i of the call uses the random word rs_rand_u32(seed, stream, i).
 *   fp8 elements: E4M3 SR with k = fmt.sr_bits; nvfp4 elements: E2M1 SR with k = fmt.sr_bits
 *   (nvfp4-sr8 is the hardware-like 8-bit variant); fp16/bf16: their SR codecs. Every scale
 *   (fp8 block scale, nvfp4 block and tensor scales) is computed with RTN, as in TE.
 * nvfp4: x * multiplier is clamped to +-6 before the E2M1 cast (what cvt.satfinite does; it
 *   also catches x * FLT_MAX overflowing to Inf in a block whose scale is 0).
 * Non-finite input anywhere in x is detected before any amax and returns RS_E_NONFINITE
 * naming the first index; the destination is then left unspecified. This holds for every
 * format, fp32 included (a NaN/Inf state is an error, never stored). (The implementation
 * scans all of x before writing anything, but callers should not rely on that.)
 * n = 0 is allowed (no storage, nothing to do). All arrays of a descriptor live in one
 * allocation owned by the descriptor; release it only with rs_qtensor_free().
 */
#ifndef RS_QTENSOR_H
#define RS_QTENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rs_qtensor {
    rs_format fmt;
    size_t n;                 /* elements */
    size_t tensor_extent;     /* E */
    uint8_t *codes;           /* packed element codes (see table above) */
    float *scale_inv;         /* fp8, e5m2: (n/128) decode scales, else NULL */
    uint8_t *block_scale;     /* nvfp4: (n/16) E4M3 codes, else NULL */
    float *tensor_scale_dec;  /* nvfp4: (n/E) S_dec, else NULL */
} rs_qtensor;

/*! rs_qtensor_alloc() : allocate storage for n elements in tensors of E elements.
 *  @return RS_OK; RS_E_SHAPE if n, E and the block do not fit; RS_E_NOMEM. On failure q is
 *  left zeroed (safe to rs_qtensor_free). */
rs_status rs_qtensor_alloc(rs_qtensor *q, const rs_format *f, size_t n, size_t tensor_extent);

/*! rs_qtensor_free() : release storage; accepts NULL and zeroed descriptors. */
void rs_qtensor_free(rs_qtensor *q);

/*! rs_qtensor_bytes() : exact bytes of codes plus scales. */
size_t rs_qtensor_bytes(const rs_qtensor *q);

/*! rs_quantize() : quantize x[n] into q (SR keyed by seed, stream, element index). */
rs_status rs_quantize(rs_qtensor *q, const float *x, uint64_t seed, uint64_t stream);

/*! rs_dequantize() : y[n] = dequantized values of q. */
rs_status rs_dequantize(const rs_qtensor *q, float *y);

/*! rs_quantize_roundtrip() : y = dequantize(quantize(x)) without allocating (y may alias
 *  x). Same results, bit for bit, as rs_quantize followed by rs_dequantize. This is what
 *  the state engine calls to store a state in a format. fp32 copies x. */
rs_status rs_quantize_roundtrip(const rs_format *f, const float *x, size_t n, size_t tensor_extent,
                                uint64_t seed, uint64_t stream, float *y);

#ifdef __cplusplus
}
#endif
#endif /* RS_QTENSOR_H */
