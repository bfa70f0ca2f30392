/* rs_wdecode.h — decoders of quantized checkpoint weights stored in NVIDIA ModelOpt's layouts
 * (NVFP4, FP8 E4M3 per-tensor) and in the block-scaled FP8 layout of vLLM's `fp8` method, into
 * float32 rows. Pure functions over caller buffers: no allocation, no printing; a row-range call
 * lets a CPU or GPU caller decode one layer or one tile at a time.
 *
 * Layouts (row-major, a linear layer's weight is [out, in]; docs/formats.md "Quantized
 * checkpoint weights"):
 *   NVFP4  weight        uint8 [out, in/2]: element 2j of a row in the LOW nibble of byte j,
 *                        element 2j+1 in the high nibble; each nibble an E2M1 code
 *                        (bit 3 sign, magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6);
 *          weight_scale  E4M3 bytes [out, in/16], one per 16 consecutive inputs of a row;
 *          weight_scale_2  one float32 per tensor.
 *          w[r][c] = e2m1(q[r][c]) * e4m3(weight_scale[r][c/16]) * weight_scale_2
 *   FP8    weight        E4M3 bytes [out, in];
 *          per tensor:   weight_scale one float32, w = e4m3(q) * weight_scale;
 *          per block:    float32 scales [ceil(out/bo), ceil(in/bi)] for blocks of bo x bi,
 *                        w[r][c] = e4m3(q[r][c]) * scale[r/bo][c/bi] (vLLM `weight_scale_inv`
 *                        with weight_block_size [bo, bi]; ModelOpt's FP8 blocks are the same
 *                        grid with out, in multiples of the block).
 * Rounding: each value is the exact product rounded once to float32. NVFP4 multiplies
 * e2m1 * e4m3 first (exact: at most 5 significant bits), then by weight_scale_2 (one rounding);
 * ModelOpt's torch dequantize multiplies the two scales first, which may differ in the last bit.
 *
 * Order of checks, every entry point; the first failure returns and NOTHING is written to out:
 *   1. RS_E_INVAL   a NULL pointer (descriptor, weight, scale, out);
 *   2. RS_E_SHAPE   the tensor shapes: dimensions > 0; NVFP4 in = 2 * weight_shape[1] a
 *                   multiple of 16; scale_shape exactly [out, in/16] (NVFP4), [1, 1] (FP8 per
 *                   tensor) or [ceil(out/bo), ceil(in/bi)] with bo, bi > 0 (FP8 blocks);
 *                   element counts that overflow size_t;
 *   3. RS_E_SHAPE   the row range: 0 <= row0, 0 <= nrows, row0 + nrows <= out, and
 *                   out_len >= nrows * in (out_len counts floats);
 *   4. RS_E_FORMAT  the per-tensor scale (weight_scale_2, FP8 weight_scale): NaN, Inf, <= 0, or
 *                   so large that 6 * 448 * it (NVFP4) or 448 * it (FP8) is not finite;
 *   5. RS_E_FORMAT  the block scales of the rows in the range: an E4M3 NaN byte (0x7F / 0xFF)
 *                   for NVFP4, a NaN / Inf float for FP8 blocks (the message names row, block);
 *                   other values, zero and negative ones included, are decoded as stored;
 *   6. RS_E_FORMAT  FP8 only: an E4M3 NaN weight byte (0x7F / 0xFF) in the rows of the range
 *                   (E2M1 has no NaN code).
 * Checks 5 and 6 look at the rows of the range only, so a range call succeeds where the whole
 * tensor would be refused for a bad row elsewhere. On success out[0 .. nrows*in) holds rows
 * row0 .. row0+nrows-1, row after row; nothing past it is touched.
 */
#ifndef RS_WDECODE_H
#define RS_WDECODE_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An NVFP4 weight as stored: shapes as read from the checkpoint, so lying shapes are caught. */
typedef struct rs_wq_nvfp4 {
    const uint8_t *weight;    /* [weight_shape[0], weight_shape[1]] packed E2M1 pairs */
    int64_t weight_shape[2];  /* {out, in/2} */
    const uint8_t *scale;     /* E4M3 bytes [scale_shape[0], scale_shape[1]] */
    int64_t scale_shape[2];   /* must be {out, in/16} */
    float scale_2;            /* weight_scale_2 */
} rs_wq_nvfp4;

/* An FP8 E4M3 weight. block {0, 0}: one per-tensor scale, scale_shape {1, 1} (a stored scalar
 * or [1] is passed as {1, 1}); block {bo, bi}: the float32 block-scale grid. */
typedef struct rs_wq_fp8 {
    const uint8_t *weight;    /* E4M3 bytes [out, in] */
    int64_t weight_shape[2];  /* {out, in} */
    const float *scale;       /* [scale_shape[0], scale_shape[1]] */
    int64_t scale_shape[2];
    int64_t block[2];         /* {0, 0} per tensor, else {bo, bi} */
} rs_wq_fp8;

/*! rs_wdecode_nvfp4_rows() : decode rows row0 .. row0+nrows-1 of w into out (out_len floats
 *  available), in float32, row-major [nrows, in]. Checks and failure: see the file header. */
rs_status rs_wdecode_nvfp4_rows(const rs_wq_nvfp4 *w, int64_t row0, int64_t nrows, float *out,
                                size_t out_len);

/*! rs_wdecode_nvfp4() : the whole tensor, [out, in]. */
rs_status rs_wdecode_nvfp4(const rs_wq_nvfp4 *w, float *out, size_t out_len);

/*! rs_wdecode_fp8_rows() : as rs_wdecode_nvfp4_rows, for an FP8 weight. */
rs_status rs_wdecode_fp8_rows(const rs_wq_fp8 *w, int64_t row0, int64_t nrows, float *out,
                              size_t out_len);

/*! rs_wdecode_fp8() : the whole tensor, [out, in]. */
rs_status rs_wdecode_fp8(const rs_wq_fp8 *w, float *out, size_t out_len);

#ifdef __cplusplus
}
#endif
#endif /* RS_WDECODE_H */
