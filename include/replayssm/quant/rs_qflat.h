/* rs_qflat.h — the block quantizers (rs_qtensor.h) over caller-owned flat buffers, with the
 * format given as its string (rs_format.h grammar). For foreign-function callers (the Python
 * module python/replayssm/ via ctypes): no struct crosses the interface, only a format string,
 * sizes, seeds and pointers to plain arrays, so a binding copies no C struct layout and the
 * quantizers write straight into the caller's (e.g. numpy's) memory.
 *
 * The four arrays are exactly those of rs_qtensor (layout and formulas: rs_qtensor.h):
 *   codes            element codes (fp32: n float32; fp16/bf16: n uint16; fp8: n E4M3 bytes;
 *                    nvfp4: n/2 bytes, element 2i in the low nibble)
 *   scale_inv        fp8: n/128 float32 decode scales, else unused (may be NULL)
 *   block_scale      nvfp4: n/16 E4M3 bytes, else unused (may be NULL)
 *   tensor_scale_dec nvfp4: n/E float32 S_dec, else unused (may be NULL)
 * Their byte sizes for a format and shape: rs_qflat_sizes(). Results are bit for bit those
 * of rs_quantize / rs_dequantize / rs_quantize_roundtrip (the functions below call them).
 * Errors: RS_E_INVAL (bad format string, NULL array that the format needs), RS_E_SHAPE,
 * RS_E_NONFINITE, with the message in rs_last_error().
 */
#ifndef RS_QFLAT_H
#define RS_QFLAT_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_qflat_canonical() : parse `format` and write its canonical spelling into buf. */
rs_status rs_qflat_canonical(const char *format, char *buf, size_t bufsize);

/*! rs_qflat_sizes() : bytes[0..3] = byte sizes of codes, scale_inv, block_scale,
 *  tensor_scale_dec for n elements in tensors of tensor_extent (0 where unused). Checks the
 *  format and the shape as rs_qtensor_alloc does. */
rs_status rs_qflat_sizes(const char *format, size_t n, size_t tensor_extent, size_t bytes[4]);

/*! rs_qflat_quantize() : quantize x[n] into the caller's arrays (SR keyed by seed, stream,
 *  element index, as rs_quantize). */
rs_status rs_qflat_quantize(const char *format, const float *x, size_t n, size_t tensor_extent, uint64_t seed,
                            uint64_t stream, void *codes, float *scale_inv, uint8_t *block_scale,
                            float *tensor_scale_dec);

/*! rs_qflat_dequantize() : y[n] = dequantized values of the arrays (as rs_dequantize). */
rs_status rs_qflat_dequantize(const char *format, size_t n, size_t tensor_extent, const void *codes,
                              const float *scale_inv, const uint8_t *block_scale, const float *tensor_scale_dec,
                              float *y);

/*! rs_qflat_roundtrip() : y = dequantize(quantize(x)) (rs_quantize_roundtrip; y may alias x). */
rs_status rs_qflat_roundtrip(const char *format, const float *x, size_t n, size_t tensor_extent, uint64_t seed,
                             uint64_t stream, float *y);

#ifdef __cplusplus
}
#endif
#endif /* RS_QFLAT_H */
