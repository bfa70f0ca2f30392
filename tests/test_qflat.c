/* test_qflat.c — the flat-buffer quantizer entry points (quant/rs_qflat.h), used by the Python
 * module python/replayssm/.
 *
 * What is checked, and against what:
 *  - rs_qflat_sizes == the layout of rs_qtensor_alloc (pointer offsets) and rs_qtensor_bytes;
 *  - rs_qflat_quantize writes the same bytes as rs_quantize into an rs_qtensor, and
 *    rs_qflat_dequantize / rs_qflat_roundtrip give the same floats as rs_dequantize /
 *    rs_quantize_roundtrip, bit for bit, for every base format in RTN and SR (the flat calls
 *    must be views of the descriptor API, not a second implementation);
 *  - a different seed changes the SR codes (the seed reaches the quantizer);
 *  - errors: unknown format string (message lists the valid ones), shape mismatch, NULL
 *    array that the format needs, non-finite input naming its index, too small a buffer for
 *    the canonical name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_qflat.h"
#include "replayssm/quant/rs_qtensor.h"

#define N 512 /* 4 fp8 blocks, 32 nvfp4 blocks */
#define E 256 /* two nvfp4 tensors */

static void fill(float *x)
{
    /* deterministic values over several binades, both signs (an LCG, not the library's RNG) */
    uint32_t s = 12345u;
    for (int i = 0; i < N; ++i) {
        s = s * 1664525u + 1013904223u;
        x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * ldexpf(1.0f, (int)(i % 7) - 3);
    }
}

static const char *k_formats[] = {"fp32", "fp16-rtn", "fp16-sr", "bf16-rtn", "bf16-sr8", "fp8-rtn", "fp8-sr+pow2",
                                  "nvfp4-rtn", "nvfp4-sr", "nvfp4-sr8+floor"};

static void test_sizes_match_qtensor_layout(void **st)
{
    (void)st;
    for (size_t k = 0; k < sizeof k_formats / sizeof k_formats[0]; ++k) {
        rs_format f;
        assert_int_equal(rs_format_parse(k_formats[k], &f), RS_OK);
        rs_qtensor q;
        assert_int_equal(rs_qtensor_alloc(&q, &f, N, E), RS_OK);
        size_t b[4];
        assert_int_equal(rs_qflat_sizes(k_formats[k], N, E, b), RS_OK);
        assert_int_equal(b[0] + b[1] + b[2] + b[3], rs_qtensor_bytes(&q));
        /* the slab layout: codes, then scale_inv / tensor scales, block scales last */
        if (q.scale_inv) assert_int_equal((uint8_t *)q.scale_inv - q.codes, b[0]);
        else assert_int_equal(b[1], 0);
        if (q.tensor_scale_dec) assert_int_equal((uint8_t *)q.tensor_scale_dec - q.codes, b[0]);
        else assert_int_equal(b[3], 0);
        if (q.block_scale) assert_int_equal(q.block_scale - q.codes, b[0] + b[3]);
        else assert_int_equal(b[2], 0);
        rs_qtensor_free(&q);
    }
}

static void test_same_bits_as_descriptor_api(void **st)
{
    (void)st;
    float x[N], y_ref[N], y_flat[N], y_rt[N], y_rt_ref[N];
    fill(x);
    for (size_t k = 0; k < sizeof k_formats / sizeof k_formats[0]; ++k) {
        const char *name = k_formats[k];
        rs_format f;
        assert_int_equal(rs_format_parse(name, &f), RS_OK);
        rs_qtensor q;
        assert_int_equal(rs_qtensor_alloc(&q, &f, N, E), RS_OK);
        assert_int_equal(rs_quantize(&q, x, 77, 3), RS_OK);
        assert_int_equal(rs_dequantize(&q, y_ref), RS_OK);

        size_t b[4];
        assert_int_equal(rs_qflat_sizes(name, N, E, b), RS_OK);
        uint8_t *codes = malloc(b[0]), *bs = malloc(b[2] + 1);
        float *si = malloc(b[1] + 4), *ts = malloc(b[3] + 4);
        assert_non_null(codes);
        assert_int_equal(rs_qflat_quantize(name, x, N, E, 77, 3, codes, si, bs, ts), RS_OK);
        assert_memory_equal(codes, q.codes, b[0]);
        if (b[1]) assert_memory_equal(si, q.scale_inv, b[1]);
        if (b[2]) assert_memory_equal(bs, q.block_scale, b[2]);
        if (b[3]) assert_memory_equal(ts, q.tensor_scale_dec, b[3]);
        assert_int_equal(rs_qflat_dequantize(name, N, E, codes, si, bs, ts, y_flat), RS_OK);
        assert_memory_equal(y_flat, y_ref, sizeof y_ref);

        assert_int_equal(rs_quantize_roundtrip(&f, x, N, E, 77, 3, y_rt_ref), RS_OK);
        assert_int_equal(rs_qflat_roundtrip(name, x, N, E, 77, 3, y_rt), RS_OK);
        assert_memory_equal(y_rt, y_rt_ref, sizeof y_rt);

        if (f.rounding == RS_ROUND_SR) { /* another seed: other codes */
            uint8_t *c2 = malloc(b[0]);
            assert_int_equal(rs_qflat_quantize(name, x, N, E, 78, 3, c2, si, bs, ts), RS_OK);
            assert_true(memcmp(c2, codes, b[0]) != 0);
            free(c2);
        }
        free(codes); free(bs); free(si); free(ts);
        rs_qtensor_free(&q);
    }
}

static void test_errors(void **st)
{
    (void)st;
    float x[N], y[N];
    fill(x);
    size_t b[4];
    char buf[32];
    assert_int_equal(rs_qflat_sizes("fp12-rtn", N, E, b), RS_E_INVAL); /* no such base */
    assert_non_null(strstr(rs_last_error(), "valid formats"));
    assert_int_equal(rs_qflat_roundtrip(NULL, x, N, E, 0, 0, y), RS_E_INVAL);
    assert_int_equal(rs_qflat_sizes("fp8-rtn", 100, 100, b), RS_E_SHAPE); /* 100 % 128 != 0 */
    assert_non_null(strstr(rs_last_error(), "block of 128"));
    assert_int_equal(rs_qflat_sizes("fp8-rtn", N, 0, b), RS_E_SHAPE);
    uint8_t codes[N];
    assert_int_equal(rs_qflat_quantize("fp8-rtn", x, N, N, 0, 0, codes, NULL, NULL, NULL), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "scale_inv"));
    assert_int_equal(rs_qflat_dequantize("nvfp4-rtn", N, N, codes, NULL, NULL, NULL, y), RS_E_INVAL);
    x[5] = NAN;
    float si[N / 128];
    assert_int_equal(rs_qflat_quantize("fp8-rtn", x, N, N, 0, 0, codes, si, NULL, NULL), RS_E_NONFINITE);
    assert_non_null(strstr(rs_last_error(), "index 5"));
    assert_int_equal(rs_qflat_canonical("nvfp4-sr32", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "nvfp4-sr");
    assert_int_equal(rs_qflat_canonical("nvfp4-sr", buf, 3), RS_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_match_qtensor_layout),
        cmocka_unit_test(test_same_bits_as_descriptor_api),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
