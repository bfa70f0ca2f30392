/* rs_wdecode.c — NVFP4 and FP8 checkpoint-weight decoders (layouts and checks: rs_wdecode.h).
 *
 * Every check runs before the first write, so a refused call leaves out untouched. Values come
 * from quant/'s exact codecs (rs_codec.h), the same functions the CUDA kernels call, so a GPU
 * decoder built on them gives the same bits.
 */
#include "replayssm/quant/rs_wdecode.h"

#include <math.h>
#include <stdint.h>

#include "replayssm/quant/rs_codec.h"
#include "rs_check.h"

#define RS_WD_NVFP4_GROUP 16

static int e4m3_is_nan(uint8_t b) { return (b & 0x7Fu) == 0x7Fu; }

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* a * b fits in size_t (both > 0) */
static int mul_fits(int64_t a, int64_t b)
{
    return (uint64_t)a <= (uint64_t)SIZE_MAX / (uint64_t)b;
}

/* Check 3: the row range against out rows, and the caller's buffer. */
static rs_status check_range(const char *what, int64_t out_rows, int64_t in, int64_t row0,
                             int64_t nrows, size_t out_len)
{
    RS_CHECK(row0 >= 0 && nrows >= 0 && row0 <= out_rows && nrows <= out_rows - row0, RS_E_SHAPE,
             "%s: row range [%lld, %lld + %lld) outside the %lld rows", what, (long long)row0,
             (long long)row0, (long long)nrows, (long long)out_rows);
    RS_CHECK((size_t)nrows * (size_t)in <= out_len, RS_E_SHAPE,
             "%s: output holds %zu floats, %lld rows of %lld need %zu", what, out_len,
             (long long)nrows, (long long)in, (size_t)nrows * (size_t)in);
    return RS_OK;
}

/* Check 4: a per-tensor scale, finite, positive, and max_code * s finite. */
static rs_status check_tensor_scale(const char *what, const char *name, float s, float max_code)
{
    RS_CHECK(isfinite(s) && s > 0.0f, RS_E_FORMAT, "%s: %s %g is not a finite positive number",
             what, name, (double)s);
    RS_CHECK(isfinite(max_code * s), RS_E_FORMAT,
             "%s: %s %g overflows float32 at the largest code (%g)", what, name, (double)s,
             (double)max_code);
    return RS_OK;
}

rs_status rs_wdecode_nvfp4_rows(const rs_wq_nvfp4 *w, int64_t row0, int64_t nrows, float *out,
                                size_t out_len)
{
    static const char what[] = "nvfp4 weight";
    RS_CHECK(w != NULL && w->weight != NULL && w->scale != NULL && out != NULL, RS_E_INVAL,
             "%s: NULL descriptor, weight, scale or output", what);
    const int64_t rows = w->weight_shape[0], bytes = w->weight_shape[1];
    RS_CHECK(rows > 0 && bytes > 0 && bytes <= INT64_MAX / 2, RS_E_SHAPE,
             "%s: shape [%lld, %lld] must be positive", what, (long long)rows, (long long)bytes);
    const int64_t in = 2 * bytes;
    RS_CHECK(in % RS_WD_NVFP4_GROUP == 0, RS_E_SHAPE,
             "%s: %lld inputs (2 x %lld bytes) is not a multiple of the %d-input scale group",
             what, (long long)in, (long long)bytes, RS_WD_NVFP4_GROUP);
    const int64_t groups = in / RS_WD_NVFP4_GROUP;
    RS_CHECK(w->scale_shape[0] == rows && w->scale_shape[1] == groups, RS_E_SHAPE,
             "%s: weight_scale shape [%lld, %lld], expected [%lld, %lld] (one per %d inputs)",
             what, (long long)w->scale_shape[0], (long long)w->scale_shape[1], (long long)rows,
             (long long)groups, RS_WD_NVFP4_GROUP);
    RS_CHECK(mul_fits(rows, in), RS_E_SHAPE, "%s: %lld x %lld elements overflow size_t", what,
             (long long)rows, (long long)in);
    RS_TRY(check_range(what, rows, in, row0, nrows, out_len));
    RS_TRY(check_tensor_scale(what, "weight_scale_2", w->scale_2, RS_E2M1_MAX * RS_E4M3_MAX));
    for (int64_t r = row0; r < row0 + nrows; r++) {
        const uint8_t *sr = w->scale + (size_t)r * (size_t)groups;
        for (int64_t g = 0; g < groups; g++)
            RS_CHECK(!e4m3_is_nan(sr[g]), RS_E_FORMAT,
                     "%s: weight_scale[%lld][%lld] is the E4M3 NaN byte 0x%02X", what,
                     (long long)r, (long long)g, (unsigned)sr[g]);
    }

    const float s2 = w->scale_2;
    for (int64_t r = row0; r < row0 + nrows; r++) {
        const uint8_t *qr = w->weight + (size_t)r * (size_t)bytes;
        const uint8_t *sr = w->scale + (size_t)r * (size_t)groups;
        float *y = out + (size_t)(r - row0) * (size_t)in;
        for (int64_t j = 0; j < bytes; j++) {
            const uint32_t sb = sr[(2 * j) / RS_WD_NVFP4_GROUP];
            y[2 * j] = rs_codec_nvfp4_value(qr[j] & 0xFu, sb, s2);
            y[2 * j + 1] = rs_codec_nvfp4_value(qr[j] >> 4, sb, s2);
        }
    }
    return RS_OK;
}

rs_status rs_wdecode_nvfp4(const rs_wq_nvfp4 *w, float *out, size_t out_len)
{
    return rs_wdecode_nvfp4_rows(w, 0, w != NULL ? w->weight_shape[0] : 0, out, out_len);
}

rs_status rs_wdecode_fp8_rows(const rs_wq_fp8 *w, int64_t row0, int64_t nrows, float *out,
                              size_t out_len)
{
    static const char what[] = "fp8 weight";
    RS_CHECK(w != NULL && w->weight != NULL && w->scale != NULL && out != NULL, RS_E_INVAL,
             "%s: NULL descriptor, weight, scale or output", what);
    const int64_t rows = w->weight_shape[0], in = w->weight_shape[1];
    RS_CHECK(rows > 0 && in > 0, RS_E_SHAPE, "%s: shape [%lld, %lld] must be positive", what,
             (long long)rows, (long long)in);
    const int per_tensor = w->block[0] == 0 && w->block[1] == 0;
    int64_t bo = rows, bi = in, grid_r = 1, grid_c = 1;
    if (!per_tensor) {
        bo = w->block[0];
        bi = w->block[1];
        RS_CHECK(bo > 0 && bi > 0, RS_E_SHAPE, "%s: block [%lld, %lld] must be positive or {0, 0}",
                 what, (long long)bo, (long long)bi);
        grid_r = ceil_div(rows, bo);
        grid_c = ceil_div(in, bi);
    }
    RS_CHECK(w->scale_shape[0] == grid_r && w->scale_shape[1] == grid_c, RS_E_SHAPE,
             "%s: weight_scale shape [%lld, %lld], expected [%lld, %lld] for blocks of %lld x %lld",
             what, (long long)w->scale_shape[0], (long long)w->scale_shape[1], (long long)grid_r,
             (long long)grid_c, (long long)bo, (long long)bi);
    RS_CHECK(mul_fits(rows, in), RS_E_SHAPE, "%s: %lld x %lld elements overflow size_t", what,
             (long long)rows, (long long)in);
    RS_TRY(check_range(what, rows, in, row0, nrows, out_len));
    if (per_tensor) {
        RS_TRY(check_tensor_scale(what, "weight_scale", w->scale[0], RS_E4M3_MAX));
    } else if (nrows > 0) {
        for (int64_t br = row0 / bo; br <= (row0 + nrows - 1) / bo; br++)
            for (int64_t bc = 0; bc < grid_c; bc++) {
                const float s = w->scale[(size_t)br * (size_t)grid_c + (size_t)bc];
                RS_CHECK(isfinite(s), RS_E_FORMAT, "%s: block scale [%lld][%lld] is %g", what,
                         (long long)br, (long long)bc, (double)s);
            }
    }
    for (int64_t r = row0; r < row0 + nrows; r++) {
        const uint8_t *qr = w->weight + (size_t)r * (size_t)in;
        for (int64_t c = 0; c < in; c++)
            RS_CHECK(!e4m3_is_nan(qr[c]), RS_E_FORMAT,
                     "%s: weight[%lld][%lld] is the E4M3 NaN byte 0x%02X", what, (long long)r,
                     (long long)c, (unsigned)qr[c]);
    }

    for (int64_t r = row0; r < row0 + nrows; r++) {
        const uint8_t *qr = w->weight + (size_t)r * (size_t)in;
        const float *sr = w->scale + (size_t)(r / bo) * (size_t)grid_c;
        float *y = out + (size_t)(r - row0) * (size_t)in;
        for (int64_t c = 0; c < in; c++)
            y[c] = rs_codec_mul(rs_codec_e4m3_value(qr[c]), sr[c / bi]);
    }
    return RS_OK;
}

rs_status rs_wdecode_fp8(const rs_wq_fp8 *w, float *out, size_t out_len)
{
    return rs_wdecode_fp8_rows(w, 0, w != NULL ? w->weight_shape[0] : 0, out, out_len);
}
