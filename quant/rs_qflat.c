/* rs_qflat.c — rs_qtensor's quantizers over caller-owned flat buffers (rs_qflat.h).
 *
 * Each call parses the format string and builds an rs_qtensor descriptor on the stack whose
 * array pointers are the caller's buffers (it is never passed to rs_qtensor_free), then calls
 * rs_quantize / rs_dequantize / rs_quantize_roundtrip: one implementation of the formats, so
 * results are theirs bit for bit. The sizes follow rs_qtensor.h's storage table; tests/test_qflat.c
 * checks them against rs_qtensor_alloc's layout and rs_qtensor_bytes().
 */
#include "replayssm/quant/rs_qflat.h"

#include <string.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_qtensor.h"
#include "rs_check.h"

static rs_status parse(const char *format, rs_format *f, const char *who)
{
    if (!format) return rs_error_set(RS_E_INVAL, "%s: NULL format string; valid formats: %s", who, rs_format_valid_list());
    return rs_format_parse(format, f);
}

/* Shape check as rs_qtensor_alloc does it, then the byte sizes of the four arrays. */
static rs_status sizes_of(const rs_format *f, size_t n, size_t E, size_t b[4], const char *who)
{
    char name[32];
    RS_TRY(rs_format_print(f, name, sizeof name));
    RS_CHECK(E > 0, RS_E_SHAPE, "%s: tensor extent must be positive (format %s)", who, name);
    RS_CHECK(n % E == 0, RS_E_SHAPE, "%s: n = %zu is not a multiple of the tensor extent %zu (format %s)", who, n,
             E, name);
    const size_t block = rs_format_block(f);
    RS_CHECK(block == 0 || E % block == 0, RS_E_SHAPE,
             "%s: tensor extent %zu is not a multiple of the %s block of %zu elements", who, E, name, block);
    RS_CHECK(n <= SIZE_MAX / 4, RS_E_SHAPE, "%s: n = %zu is too large", who, n);
    b[0] = b[1] = b[2] = b[3] = 0;
    switch (f->kind) {
    case RS_FMT_FP32: b[0] = 4 * n; break;
    case RS_FMT_FP16:
    case RS_FMT_BF16: b[0] = 2 * n; break;
    case RS_FMT_FP8:
    case RS_FMT_E5M2:
        b[0] = n;
        b[1] = 4 * (n / RS_FP8_BLOCK);
        break;
    case RS_FMT_MXFP8:
        b[0] = n;
        b[2] = n / RS_MX_BLOCK;
        break;
    case RS_FMT_MXFP4:
        b[0] = n / 2;
        b[2] = n / RS_MX_BLOCK;
        break;
    case RS_FMT_NVFP4:
        b[0] = n / 2;
        b[2] = n / RS_NVFP4_BLOCK;
        b[3] = 4 * (n / E);
        break;
    }
    return RS_OK;
}

/* The descriptor over the caller's arrays; a NULL array the format needs is RS_E_INVAL. */
static rs_status view(const char *format, size_t n, size_t E, void *codes, float *scale_inv, uint8_t *block_scale,
                      float *tensor_scale_dec, rs_qtensor *q, const char *who)
{
    size_t b[4];
    memset(q, 0, sizeof *q);
    RS_TRY(parse(format, &q->fmt, who));
    RS_TRY(sizes_of(&q->fmt, n, E, b, who));
    RS_CHECK(!b[0] || codes, RS_E_INVAL, "%s: NULL codes array (%s needs %zu bytes)", who, format, b[0]);
    RS_CHECK(!b[1] || scale_inv, RS_E_INVAL, "%s: NULL scale_inv array (%s needs %zu bytes)", who, format, b[1]);
    RS_CHECK(!b[2] || block_scale, RS_E_INVAL, "%s: NULL block_scale array (%s needs %zu bytes)", who, format,
             b[2]);
    RS_CHECK(!b[3] || tensor_scale_dec, RS_E_INVAL, "%s: NULL tensor_scale_dec array (%s needs %zu bytes)", who,
             format, b[3]);
    q->n = n;
    q->tensor_extent = E;
    q->codes = codes;
    q->scale_inv = b[1] ? scale_inv : NULL;
    q->block_scale = b[2] ? block_scale : NULL;
    q->tensor_scale_dec = b[3] ? tensor_scale_dec : NULL;
    return RS_OK;
}

rs_status rs_qflat_canonical(const char *format, char *buf, size_t bufsize)
{
    rs_format f;
    RS_TRY(parse(format, &f, "rs_qflat_canonical"));
    RS_CHECK(buf && bufsize > 0, RS_E_INVAL, "rs_qflat_canonical: NULL or empty output buffer");
    return rs_format_print(&f, buf, bufsize);
}

rs_status rs_qflat_sizes(const char *format, size_t n, size_t tensor_extent, size_t bytes[4])
{
    static const char who[] = "rs_qflat_sizes";
    rs_format f;
    RS_CHECK(bytes, RS_E_INVAL, "%s: NULL output", who);
    RS_TRY(parse(format, &f, who));
    return sizes_of(&f, n, tensor_extent, bytes, who);
}

rs_status rs_qflat_quantize(const char *format, const float *x, size_t n, size_t tensor_extent, uint64_t seed,
                            uint64_t stream, void *codes, float *scale_inv, uint8_t *block_scale,
                            float *tensor_scale_dec)
{
    rs_qtensor q;
    RS_TRY(view(format, n, tensor_extent, codes, scale_inv, block_scale, tensor_scale_dec, &q, "rs_qflat_quantize"));
    return rs_quantize(&q, x, seed, stream);
}

rs_status rs_qflat_dequantize(const char *format, size_t n, size_t tensor_extent, const void *codes,
                              const float *scale_inv, const uint8_t *block_scale, const float *tensor_scale_dec,
                              float *y)
{
    rs_qtensor q;
    /* the descriptor's pointers are not const, but rs_dequantize only reads them */
    RS_TRY(view(format, n, tensor_extent, (void *)codes, (float *)scale_inv, (uint8_t *)block_scale,
                (float *)tensor_scale_dec, &q, "rs_qflat_dequantize"));
    return rs_dequantize(&q, y);
}

rs_status rs_qflat_roundtrip(const char *format, const float *x, size_t n, size_t tensor_extent, uint64_t seed,
                             uint64_t stream, float *y)
{
    rs_format f;
    RS_TRY(parse(format, &f, "rs_qflat_roundtrip"));
    return rs_quantize_roundtrip(&f, x, n, tensor_extent, seed, stream, y);
}
