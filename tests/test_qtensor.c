/* test_qtensor.c — block quantizers (rs_qtensor.h): storage, RTN / SR error bounds, bit-exact codes.
 *
 * What is checked, and against what:
 *  - storage: shapes, pointers, rs_qtensor_bytes == integer layout sum == n * bytes_per_element;
 *  - RTN error per element <= half a grid step times the block's decode scale, with the grid
 *    step derived here from the binade of the scaled value (not from the library's codec);
 *  - the block amax maps to the top code (FP8 0x7E; NVFP4 code 7 = 6.0, whose E4M3 block
 *    scale may round down so that the max clips to 6, as in TransformerEngine);
 *  - all-zero blocks/tensors, single-outlier blocks/tensors, NaN/Inf inputs;
 *  - the NVFP4 nibble packing on a hand-built block with known codes;
 *  - round trip == quantize + dequantize bit for bit (also in place);
 *  - SR: the random word of element i is rs_rand_u32(seed, stream, i); mean of many SR round
 *    trips with different streams approaches x within a stated binomial bound;
 *  - bit-exact codes, scales and dequantized values against tests/fixtures/qtensor_ref.bin.gz,
 *    made by make_qtensor_fixtures.py from numpy float32 + ml_dtypes (TE-formula oracles).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"
#include "replayssm/quant/rs_qtensor.h"
#include "rs_test_util.h"

/* ---- independent helpers ------------------------------------------------------------------ */

static rs_format fmt(const char *s)
{
    rs_format f;
    if (rs_format_parse(s, &f) != RS_OK) fail_msg("cannot parse %s: %s", s, rs_last_error());
    return f;
}

/* E4M3fn code value from the OCP definition: e == 0: m 2^-9, else (1 + m/8) 2^(e-7). */
static double e4m3_ref(uint8_t c)
{
    const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) return NAN;
    const double v = e == 0 ? m * ldexp(1.0, -9) : (1.0 + m / 8.0) * ldexp(1.0, e - 7);
    return s ? -v : v;
}

/* E2M1 code value: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}. */
static double e2m1_ref(uint8_t c)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return (c & 8) ? -mag[c & 7] : mag[c & 7];
}

/* E4M3 grid spacing in the binade of |v| (subnormal spacing 2^-9 below 2^-6). */
static double e4m3_step(double v)
{
    const double a = fabs(v);
    if (a < ldexp(1.0, -6)) return ldexp(1.0, -9);
    int e;
    frexp(a, &e); /* a = f 2^e, f in [0.5, 1): binade 2^(e-1) */
    return ldexp(1.0, e - 1 - 3);
}

/* E2M1 grid spacing in the binade of |v| (0.5 below 2, 1 in [2, 4), 2 in [4, 6]). */
static double e2m1_step(double v)
{
    const double a = fabs(v);
    return a < 2 ? 0.5 : a < 4 ? 1.0 : 2.0;
}

static void fill_gauss(float *x, size_t n, uint64_t *st, double scale)
{
    for (size_t i = 0; i < n; ++i) x[i] = (float)(scale * rs_test_normal(st));
}

static float *xmalloc_f(size_t n)
{
    float *p = malloc(n * sizeof *p);
    assert_non_null(p);
    return p;
}

/* ---- storage and shapes ------------------------------------------------------------------- */

static void test_alloc_and_bytes(void **state)
{
    (void)state;
    static const char *names[] = {"fp32", "fp16-rtn", "bf16-sr", "fp8-rtn", "fp8-sr+pow2", "nvfp4-rtn", "nvfp4-sr8",
                                  "e5m2-rtn", "e5m2-sr+pow2", "mxfp8-rtn", "mxfp4-sr"};
    static const size_t shapes[][2] = {{16384, 16384}, {4 * 256, 256}, {2 * 128, 128}, {96, 48}};
    for (size_t a = 0; a < sizeof names / sizeof names[0]; ++a) {
        const rs_format f = fmt(names[a]);
        for (size_t b = 0; b < sizeof shapes / sizeof shapes[0]; ++b) {
            const size_t n = shapes[b][0], E = shapes[b][1];
            rs_qtensor q;
            rs_status st = rs_qtensor_alloc(&q, &f, n, E);
            if (E % (rs_format_block(&f) ? rs_format_block(&f) : 1)) {
                assert_int_equal(st, RS_E_SHAPE);
                assert_null(q.codes);
                rs_qtensor_free(&q);
                continue;
            }
            assert_int_equal(st, RS_OK);
            /* expected bytes from the layout table of rs_qtensor.h */
            size_t want = 0;
            switch (f.kind) {
            case RS_FMT_FP32: want = 4 * n; break;
            case RS_FMT_FP16:
            case RS_FMT_BF16: want = 2 * n; break;
            case RS_FMT_FP8:
            case RS_FMT_E5M2: want = n + 4 * (n / 128); break;
            case RS_FMT_NVFP4: want = n / 2 + n / 16 + 4 * (n / E); break;
            case RS_FMT_MXFP8: want = n + n / 32; break;
            case RS_FMT_MXFP4: want = n / 2 + n / 32; break;
            }
            assert_int_equal(rs_qtensor_bytes(&q), want);
            const double bpe = rs_format_bytes_per_element(&f, E);
            /* exact for power-of-two E; E = 48 puts 4/48 through one double rounding */
            assert_true(fabs((double)n * bpe - (double)want) <= 1e-9 * (double)want);
            assert_non_null(q.codes);
            assert_true((q.scale_inv != NULL) == (f.kind == RS_FMT_FP8 || f.kind == RS_FMT_E5M2));
            assert_true((q.block_scale != NULL) ==
                        (f.kind == RS_FMT_NVFP4 || f.kind == RS_FMT_MXFP8 || f.kind == RS_FMT_MXFP4));
            assert_true((q.tensor_scale_dec != NULL) == (f.kind == RS_FMT_NVFP4));
            assert_int_equal(q.n, n);
            assert_int_equal(q.tensor_extent, E);
            rs_qtensor_free(&q);
            assert_null(q.codes);
        }
    }
    /* bad shapes */
    rs_qtensor q;
    rs_format f = fmt("nvfp4-rtn");
    assert_int_equal(rs_qtensor_alloc(&q, &f, 100, 48), RS_E_SHAPE); /* 100 % 48 */
    assert_int_equal(rs_qtensor_alloc(&q, &f, 96, 24), RS_E_SHAPE);  /* 24 % 16 */
    assert_int_equal(rs_qtensor_alloc(&q, &f, 96, 0), RS_E_SHAPE);
    assert_null(q.codes);
    f = fmt("fp8-rtn");
    assert_int_equal(rs_qtensor_alloc(&q, &f, 256, 64), RS_E_SHAPE);
    rs_format badf = f;
    badf.rounding = RS_ROUND_SR;
    badf.sr_bits = 0;
    assert_int_equal(rs_qtensor_alloc(&q, &badf, 256, 128), RS_E_INVAL);
    rs_qtensor_free(&q);   /* zeroed descriptor */
    rs_qtensor_free(NULL); /* accepted */
    /* quantize into a zeroed descriptor fails cleanly */
    float x[16] = {0};
    assert_int_not_equal(rs_quantize(&q, x, 1, 2), RS_OK);
    /* elementwise formats accept any extent dividing n */
    f = fmt("fp16-rtn");
    assert_int_equal(rs_qtensor_alloc(&q, &f, 9, 3), RS_OK);
    assert_int_equal(rs_qtensor_bytes(&q), 18);
    rs_qtensor_free(&q);
    float y[16];
    assert_int_equal(rs_quantize_roundtrip(&f, x, 9, 2, 0, 0, y), RS_E_SHAPE);
}

/* ---- FP8 block ----------------------------------------------------------------------------- */

/* A 64x128 tensor, rows scaled by 10^u, u uniform in [-4, 4] (one FP8 block per row). */
static void make_rows(float *x, size_t rows, uint64_t seed)
{
    uint64_t st = seed;
    for (size_t r = 0; r < rows; ++r) fill_gauss(x + r * 128, 128, &st, pow(10.0, -4.0 + 8.0 * rs_test_uniform(&st)));
}

static void check_fp8_rtn(const char *name)
{
    enum { ROWS = 64, N = ROWS * 128 };
    const rs_format f = fmt(name);
    float *x = xmalloc_f(N), *y = xmalloc_f(N);
    make_rows(x, ROWS, 11);
    rs_qtensor q;
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_int_equal(rs_dequantize(&q, y), RS_OK);

    double worst = 0; /* max |q - v| / step over elements: shows the bound is exercised */
    for (size_t b = 0; b < ROWS; ++b) {
        const float sinv = q.scale_inv[b];
        const double scale = 1.0 / (double)sinv; /* the encode scale, to 2^-24 relative */
        size_t imax = b * 128;
        for (size_t j = b * 128; j < (b + 1) * 128; ++j)
            if (fabsf(x[j]) > fabsf(x[imax])) imax = j;
        const double amax = fabs((double)x[imax]);

        /* the block amax maps to the top code */
        const uint8_t top = q.codes[imax];
        if (!f.fp8_pow2) {
            assert_int_equal(top & 0x7F, 0x7E);
            /* scale = RN(448 / amax): 448 * scale_inv recovers amax to a few float ulps */
            assert_true(fabs(448.0 * sinv - amax) <= 4 * ldexp(amax, -24));
        } else {
            /* scale rounded down to 2^e: amax * scale in (224, 448], so the top binade */
            const double t = fabs(e4m3_ref(top));
            assert_true(t >= 224.0 && t <= 448.0);
            int e;
            assert_true(frexpf(sinv, &e) == 0.5f); /* a power of two */
            /* 448/amax may round up onto a power of two before the mask: 2^-23 slack */
            assert_true(448.0 * sinv >= amax * (1 - 0x1p-23) && 224.0 * sinv <= amax * (1 + 0x1p-23));
        }
        assert_int_equal((top >> 7) != 0, x[imax] < 0);

        for (size_t j = b * 128; j < (b + 1) * 128; ++j) {
            /* dequant formula: e4m3(q) * scale_inv */
            const float want = (float)e4m3_ref(q.codes[j]) * sinv;
            if (memcmp(&want, &y[j], 4) != 0) fail_msg("%s: y[%zu] = %a, e4m3(q) * scale_inv = %a", name, j, y[j], want);
            /* RTN: |e4m3(q) - v| <= step(v)/2 with v = x * scale; then scaled back */
            const double v = (double)x[j] * scale;
            const double step = e4m3_step(v);
            const double err_q = fabs(e4m3_ref(q.codes[j]) - v);
            /* slack: v and scale_inv are float roundings (2^-24 relative each) and y is one
             * more rounding: 2^-21 of |x| + |y| covers all three */
            const double bound = 0.5 * step * sinv + ldexp(fabs(x[j]) + fabs(y[j]), -21);
            if (fabs((double)y[j] - x[j]) > bound)
                fail_msg("%s: element %zu x=%a y=%a err %g > bound %g", name, j, x[j], y[j], fabs(y[j] - x[j]), bound);
            if (err_q / step > worst) worst = err_q / step;
        }
    }
    assert_true(worst > 0.45 && worst <= 0.5 + 1e-6);
    rs_qtensor_free(&q);
    free(x);
    free(y);
}

static void test_fp8_rtn_bound_and_top_code(void **state)
{
    (void)state;
    check_fp8_rtn("fp8-rtn");
    check_fp8_rtn("fp8-rtn+pow2");
}

/* ---- NVFP4 ----------------------------------------------------------------------------------- */

static void check_nvfp4_rtn(size_t n, size_t E, uint64_t seed)
{
    const rs_format f = fmt("nvfp4-rtn");
    float *x = xmalloc_f(n), *y = xmalloc_f(n);
    uint64_t st = seed;
    for (size_t t = 0; t < n / E; ++t) fill_gauss(x + t * E, E, &st, pow(4.0, (double)t - 2.0));
    rs_qtensor q;
    assert_int_equal(rs_qtensor_alloc(&q, &f, n, E), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_int_equal(rs_dequantize(&q, y), RS_OK);

    size_t rounded_down = 0, normal_blocks = 0;
    for (size_t t = 0; t < n / E; ++t) {
        double amax = 0;
        size_t iamax = t * E;
        for (size_t i = t * E; i < (t + 1) * E; ++i)
            if (fabs(x[i]) > amax) { amax = fabs(x[i]); iamax = i; }
        const float sdec = q.tensor_scale_dec[t];
        /* S_dec = 1 / RN(2688 / amax): recovers amax / 2688 to a few float ulps */
        assert_true(fabs(2688.0 * sdec - amax) <= 4 * ldexp(amax, -24));
        /* the block holding the tensor amax gets the largest E4M3 scale, 448 (0x7E) */
        assert_int_equal(q.block_scale[iamax / 16], 0x7E);

        for (size_t b = t * E / 16; b < (t + 1) * E / 16; ++b) {
            const uint8_t sb = q.block_scale[b];
            const double d = e4m3_ref(sb) * (double)sdec; /* block decode scale */
            size_t imax = b * 16;
            for (size_t j = b * 16; j < b * 16 + 16; ++j)
                if (fabsf(x[j]) > fabsf(x[imax])) imax = j;
            /* the unrounded block scale, in double */
            const double sb_exact = fabs((double)x[imax]) * 448.0 / amax;
            assert_true(sb < 0x7F);
            if (sb < 0x08) continue; /* E4M3 subnormal/zero scale: covered by the fixture tests */
            ++normal_blocks;
            /* E4M3 RTN of the block scale: within half an E4M3 step (2^-4 relative) */
            /* slack 1e-6 relative: the library's block scale is three float roundings from sb_exact */
            assert_true(fabs(e4m3_ref(sb) - sb_exact) <= 0.5 * e4m3_step(sb_exact) + 1e-6 * sb_exact);
            if (e4m3_ref(sb) < sb_exact * (1 - 1e-6)) ++rounded_down;
            /* the block amax maps to the top code 6.0 (clipped when the scale rounded down) */
            const uint8_t c = (uint8_t)((q.codes[imax / 2] >> (4 * (imax & 1))) & 15);
            assert_int_equal(c & 7, 7);
            for (size_t j = b * 16; j < b * 16 + 16; ++j) {
                const uint8_t cj = (uint8_t)((q.codes[j / 2] >> (4 * (j & 1))) & 15);
                /* dequant formula (e2m1(q) * s_b) * S_dec */
                const float want = ((float)e2m1_ref(cj) * (float)e4m3_ref(sb)) * sdec;
                if (memcmp(&want, &y[j], 4) != 0) fail_msg("nvfp4: y[%zu] = %a, formula %a", j, y[j], want);
                const double v = (double)x[j] / d; /* scaled value */
                /* normal block scale => |v| <= 6 (1 + 2^-4): clipping costs < half a step */
                assert_true(fabs(v) <= 6.0 * (1.0 + 1.0 / 16) * (1 + 1e-6));
                const double step = e2m1_step(fmin(fabs(v), 6.0));
                const double bound = 0.5 * step * d + ldexp(fabs(x[j]) + fabs(y[j]), -20);
                if (fabs((double)y[j] - x[j]) > bound)
                    fail_msg("nvfp4: element %zu x=%a y=%a err %g > bound %g", j, x[j], y[j], fabs(y[j] - x[j]), bound);
                assert_true(fabs(e2m1_ref(cj) - v) <= 0.5 * step + 1e-5);
            }
        }
    }
    /* TE's RNE block scale rounds down for a good share of Gaussian blocks (their max then
     * clips to 6); make sure the test saw both cases */
    assert_true(normal_blocks > n / 16 / 2);
    assert_true(rounded_down > normal_blocks / 10 && rounded_down < normal_blocks);
    rs_qtensor_free(&q);
    free(x);
    free(y);
}

static void test_nvfp4_rtn_bound_and_top_code(void **state)
{
    (void)state;
    check_nvfp4_rtn(16384, 16384, 21); /* one 128x128 state */
    check_nvfp4_rtn(4 * 4096, 4096, 22); /* four tensors of different magnitude */
}

static void test_nvfp4_packing(void **state)
{
    (void)state;
    /* amax 6: S_enc = 448, block scale 6 * (448 * (1/6)) -> E4M3 448, multiplier ~1, so
     * values on the E2M1 grid keep their codes (written out by hand below). */
    const float x[32] = {6,  0.5f, 1,    1.5f, 2, 3,    4,     -0.5f, -1, -1.5f, -2,   -3,   -4,    -6, 0, 0.5f,
                         -6, 4,    -4.0f, 3,   -3, 2,   -2,    1.5f,  -1.5f, 1,  -1,   0.5f, -0.5f, 0,  6, 1};
    static const uint8_t want[32] = {7,  1, 2,   3, 4,  5, 6,  9,   10, 11, 12, 13, 14, 15, 0, 1,
                                     15, 6, 14,  5, 13, 4, 12, 3,   11, 2,  10, 1,  9,  0,  7, 2};
    const rs_format f = fmt("nvfp4-rtn");
    rs_qtensor q;
    assert_int_equal(rs_qtensor_alloc(&q, &f, 32, 32), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    for (size_t i = 0; i < 16; ++i) {
        if (q.codes[i] != (uint8_t)(want[2 * i] | (want[2 * i + 1] << 4)))
            fail_msg("byte %zu = 0x%02x, want 0x%02x (low nibble = element %zu)", i, q.codes[i],
                     want[2 * i] | (want[2 * i + 1] << 4), 2 * i);
    }
    assert_int_equal(q.block_scale[0], 0x7E);
    assert_int_equal(q.block_scale[1], 0x7E);
    float y[32];
    assert_int_equal(rs_dequantize(&q, y), RS_OK);
    for (size_t i = 0; i < 32; ++i) assert_true(fabsf(y[i] - x[i]) <= ldexpf(fabsf(x[i]), -22));
    rs_qtensor_free(&q);
}

/* ---- zero blocks, outliers, non-finite ------------------------------------------------------- */

static void test_zero_blocks(void **state)
{
    (void)state;
    enum { N = 512 };
    float x[N], y[N];
    uint64_t st = 5;
    fill_gauss(x, N, &st, 1.0);
    for (size_t i = 128; i < 256; ++i) x[i] = 0.0f;  /* an all-zero FP8 block */
    for (size_t i = 256; i < 384; ++i) x[i] = -0.0f; /* an all-negative-zero block */
    rs_qtensor q;

    rs_format f = fmt("fp8-rtn");
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_true(q.scale_inv[1] == 1.0f && q.scale_inv[2] == 1.0f); /* scale 1 for amax 0 */
    for (size_t i = 128; i < 256; ++i) assert_int_equal(q.codes[i], 0x00);
    for (size_t i = 256; i < 384; ++i) assert_int_equal(q.codes[i], 0x80); /* sign kept */
    assert_int_equal(rs_dequantize(&q, y), RS_OK);
    for (size_t i = 128; i < 384; ++i) assert_true(y[i] == 0.0f);
    rs_qtensor_free(&q);

    /* NVFP4: zero 16-blocks inside a nonzero tensor get block scale 0 and dequantize to 0 */
    f = fmt("nvfp4-rtn");
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    for (size_t b = 8; b < 24; ++b) assert_int_equal(q.block_scale[b], 0);
    for (size_t i = 64; i < 128; ++i) assert_int_equal(q.codes[i], 0x00);
    for (size_t i = 128; i < 192; ++i) assert_int_equal(q.codes[i], 0x88); /* -0 -> code 8 */
    assert_int_equal(rs_dequantize(&q, y), RS_OK);
    for (size_t i = 128; i < 384; ++i) assert_true(y[i] == 0.0f);
    rs_qtensor_free(&q);

    /* all-zero tensor: S_enc = 1 so S_dec = 1; every scale and code 0; also fp8/fp16 */
    memset(x, 0, sizeof x);
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, 256), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_true(q.tensor_scale_dec[0] == 1.0f && q.tensor_scale_dec[1] == 1.0f);
    for (size_t b = 0; b < N / 16; ++b) assert_int_equal(q.block_scale[b], 0);
    for (size_t i = 0; i < N / 2; ++i) assert_int_equal(q.codes[i], 0);
    rs_qtensor_free(&q);
    static const char *all[] = {"fp32", "fp16-sr", "bf16-rtn", "fp8-sr+pow2", "nvfp4-sr8+floor", "nvfp4-sr"};
    for (size_t a = 0; a < sizeof all / sizeof all[0]; ++a) {
        f = fmt(all[a]);
        memset(y, 0xFF, sizeof y);
        assert_int_equal(rs_quantize_roundtrip(&f, x, N, 256, 9, 9, y), RS_OK);
        for (size_t i = 0; i < N; ++i) assert_true(y[i] == 0.0f);
    }
}

static void test_single_outlier(void **state)
{
    (void)state;
    enum { N = 512 };
    float x[N], y[N], xb[128], yb[128];
    uint64_t st = 6;
    fill_gauss(x, N, &st, 1.0);
    x[128 + 37] = 1.0e4f; /* outlier in FP8 block 1 */
    rs_qtensor q;

    /* FP8: the outlier takes the top code; the rest of its block is coarse but still within
     * half a step; the other blocks are exactly what they are when quantized alone. */
    rs_format f = fmt("fp8-rtn");
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_int_equal(q.codes[128 + 37], 0x7E);
    assert_int_equal(rs_dequantize(&q, y), RS_OK);
    assert_true(fabsf(y[128 + 37] - 1.0e4f) <= ldexpf(1.0e4f, -21));
    size_t zeros = 0;
    for (size_t j = 128; j < 256; ++j) {
        const double v = (double)x[j] / q.scale_inv[1];
        assert_true(fabs(y[j] - x[j]) <= 0.5 * e4m3_step(v) * q.scale_inv[1] + ldexp(fabs(x[j]), -21));
        zeros += q.codes[j] == 0 || q.codes[j] == 0x80;
    }
    assert_true(zeros < 128); /* 448/1e4 * N(0,1) mostly lands on E4M3 subnormals, not all 0 */
    for (size_t b = 0; b < 4; ++b) {
        if (b == 1) continue;
        memcpy(xb, x + b * 128, sizeof xb);
        assert_int_equal(rs_quantize_roundtrip(&f, xb, 128, 128, 0, 0, yb), RS_OK);
        assert_memory_equal(yb, y + b * 128, sizeof yb);
    }
    rs_qtensor_free(&q);

    /* NVFP4: one outlier 1e7 in a tensor of N(0,1) values sets S_enc, so every other block's
     * scale |x| * 448 / 1e7 < 2^-10 rounds to 0 and the block dequantizes to 0 (TE has no
     * floor); with +floor the scale becomes 2^-6 (E4M3 0x08). */
    uint64_t st2 = 7;
    fill_gauss(x, N, &st2, 1.0);
    for (size_t i = 0; i < N; ++i) x[i] = fmaxf(fminf(x[i], 4.0f), -4.0f);
    x[300] = -1.0e7f;
    f = fmt("nvfp4-rtn");
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_int_equal(rs_dequantize(&q, y), RS_OK);
    for (size_t b = 0; b < N / 16; ++b) assert_int_equal(q.block_scale[b], b == 300 / 16 ? 0x7E : 0x00);
    assert_int_equal((q.codes[150] >> 0) & 15, 0xF); /* element 300 (even: low nibble) = -6 */
    assert_true(fabsf(y[300] + 1.0e7f) <= ldexpf(1.0e7f, -21));
    for (size_t i = 0; i < N; ++i)
        if (i != 300) assert_true(y[i] == 0.0f);
    rs_qtensor_free(&q);
    f = fmt("nvfp4-rtn+floor");
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    for (size_t b = 0; b < N / 16; ++b) assert_int_equal(q.block_scale[b], b == 300 / 16 ? 0x7E : 0x08);
    rs_qtensor_free(&q);
}

static void test_nonfinite(void **state)
{
    (void)state;
    enum { N = 2048 };
    static const char *names[] = {"fp32", "fp16-rtn", "bf16-sr", "fp8-rtn", "fp8-sr+pow2", "nvfp4-rtn", "nvfp4-sr8"};
    float *x = xmalloc_f(N), *y = xmalloc_f(N);
    uint64_t st = 8;
    struct {
        size_t idx[2];
        float val[2];
        const char *want;
    } cases[] = {
        {{1200, 300}, {NAN, INFINITY}, "index 300"},
        {{5, 5}, {-INFINITY, -INFINITY}, "index 5"},
        {{2047, 2047}, {NAN, NAN}, "index 2047"},
        {{0, 1500}, {-NAN, 1.0f}, "index 0"},
    };
    for (size_t a = 0; a < sizeof names / sizeof names[0]; ++a) {
        const rs_format f = fmt(names[a]);
        rs_qtensor q;
        assert_int_equal(rs_qtensor_alloc(&q, &f, N, 1024), RS_OK);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
            fill_gauss(x, N, &st, 1.0);
            x[cases[c].idx[0]] = cases[c].val[0];
            x[cases[c].idx[1]] = cases[c].val[1];
            assert_int_equal(rs_quantize(&q, x, 1, 2), RS_E_NONFINITE);
            assert_non_null(strstr(rs_last_error(), cases[c].want));
            assert_int_equal(rs_quantize_roundtrip(&f, x, N, 1024, 1, 2, y), RS_E_NONFINITE);
            assert_non_null(strstr(rs_last_error(), cases[c].want));
        }
        rs_qtensor_free(&q);
    }
    free(x);
    free(y);
}

/* ---- round trip vs quantize + dequantize ------------------------------------------------------ */

static void test_roundtrip_bitwise(void **state)
{
    (void)state;
    enum { E = 4096, N = 3 * E };
    static const char *names[] = {"fp32",      "fp16-rtn",        "fp16-sr",    "fp16-sr8",  "bf16-rtn",
                                  "bf16-sr",   "bf16-sr1",        "fp8-rtn",    "fp8-sr",    "fp8-sr4",
                                  "fp8-rtn+pow2", "fp8-sr+pow2",  "nvfp4-rtn",  "nvfp4-sr",  "nvfp4-sr8",
                                  "nvfp4-rtn+floor", "nvfp4-sr8+floor"};
    float *x = xmalloc_f(N), *y1 = xmalloc_f(N), *y2 = xmalloc_f(N), *y3 = xmalloc_f(N);
    uint64_t st = 9;
    make_rows(x, N / 128, 10);
    for (size_t i = 256; i < 384; ++i) x[i] = 0.0f;          /* zero block */
    for (size_t i = 512; i < 640; ++i) x[i] *= 1e-30f;       /* tiny block */
    for (size_t i = E; i < E + 64; ++i) x[i] = (float)rs_test_normal(&st) * 1e-41f; /* subnormals */
    x[2 * E + 5] = 3.0e38f;                                  /* near FLT_MAX */
    for (size_t a = 0; a < sizeof names / sizeof names[0]; ++a) {
        const rs_format f = fmt(names[a]);
        rs_qtensor q;
        assert_int_equal(rs_qtensor_alloc(&q, &f, N, E), RS_OK);
        assert_int_equal(rs_quantize(&q, x, 0x1234, 77), RS_OK);
        assert_int_equal(rs_dequantize(&q, y1), RS_OK);
        assert_int_equal(rs_quantize_roundtrip(&f, x, N, E, 0x1234, 77, y2), RS_OK);
        memcpy(y3, x, N * sizeof *x);
        assert_int_equal(rs_quantize_roundtrip(&f, y3, N, E, 0x1234, 77, y3), RS_OK); /* in place */
        for (size_t i = 0; i < N; ++i) {
            if (memcmp(&y1[i], &y2[i], 4) || memcmp(&y1[i], &y3[i], 4))
                fail_msg("%s: element %zu: quantize+dequantize %a, roundtrip %a, in place %a", names[a], i, y1[i],
                         y2[i], y3[i]);
        }
        /* determinism: same (seed, stream) -> same bytes; SR: another stream differs */
        assert_int_equal(rs_quantize_roundtrip(&f, x, N, E, 0x1234, 78, y2), RS_OK);
        const int differs = memcmp(y1, y2, N * sizeof *y1) != 0;
        assert_int_equal(differs, f.kind != RS_FMT_FP32 && f.rounding == RS_ROUND_SR);
        rs_qtensor_free(&q);
    }
    free(x);
    free(y1);
    free(y2);
    free(y3);
}

/* ---- SR ------------------------------------------------------------------------------------------- */

/* Element i's code equals the scalar SR codec fed rs_rand_u32(seed, stream, i). */
static void test_sr_random_words(void **state)
{
    (void)state;
    enum { E = 1024, N = 2 * E };
    float x[N];
    make_rows(x, N / 128, 12);
    const uint64_t seed = 0xDEADBEEFCAFEull, stream = rs_stream_id(1, 2, 3, 12345);
    rs_qtensor q;

    rs_format f;
    for (int k = 12; k <= 32; k += 20) {
        f = fmt(k == 12 ? "fp8-sr12+pow2" : "fp8-sr+pow2"); /* pow2: scale = 1/scale_inv exactly */
        assert_int_equal(rs_qtensor_alloc(&q, &f, N, E), RS_OK);
        assert_int_equal(rs_quantize(&q, x, seed, stream), RS_OK);
        for (size_t i = 0; i < N; ++i) {
            const float scale = 1.0f / q.scale_inv[i / 128];
            uint8_t c = 0;
            assert_int_equal(rs_e4m3_encode_sr(x[i] * scale, rs_rand_u32(seed, stream, i), k, &c), RS_OK);
            assert_int_equal(q.codes[i], c);
        }
        rs_qtensor_free(&q);
    }

    for (int k = 8; k <= 32; k += 24) {
        f = fmt(k == 8 ? "nvfp4-sr8" : "nvfp4-sr");
        assert_int_equal(rs_qtensor_alloc(&q, &f, N, E), RS_OK);
        assert_int_equal(rs_quantize(&q, x, seed, stream), RS_OK);
        for (size_t i = 0; i < N; ++i) {
            const float mult =
                fminf(1.0f / (rs_e4m3_decode(q.block_scale[i / 16]) * q.tensor_scale_dec[i / E]), FLT_MAX);
            const float v = fminf(fmaxf(x[i] * mult, -6.0f), 6.0f);
            uint8_t c;
            assert_int_equal(rs_e2m1_encode_sr(v, rs_rand_u32(seed, stream, i), k, &c), RS_OK);
            assert_int_equal((q.codes[i / 2] >> (4 * (i & 1))) & 15, c);
        }
        rs_qtensor_free(&q);
    }

    f = fmt("bf16-sr");
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, E), RS_OK);
    assert_int_equal(rs_quantize(&q, x, seed, stream), RS_OK);
    for (size_t i = 0; i < N; ++i) {
        uint16_t c;
        memcpy(&c, q.codes + 2 * i, 2);
        uint16_t w = 0;
        assert_int_equal(rs_bf16_encode_sr(x[i], rs_rand_u32(seed, stream, i), 32, &w), RS_OK);
        assert_int_equal(c, w);
    }
    rs_qtensor_free(&q);
}

/* Mean of M SR round trips (streams 0..M-1) vs x. Scales are RTN, hence the same in every
 * trial; with k = 32 each element's SR is exactly unbiased on its grid, so E[y] = v * d where
 * v = x * scale: the mean must approach x. Per element the SR variance is <= (step d)^2 / 4,
 * so |mean - x| <= 5 * (step d / 2) / sqrt(M) holds at 5 sigma (plus float slack). Pooled over
 * all elements, the normalized error mean((mean_i - x_i) / (step_i d_i)) has sigma <=
 * 1 / (2 sqrt(M N)); the k = 8 format may sit up to 2^-8 below zero (bias toward zero). */
static void check_sr_mean(const char *name, int clip_allowed)
{
    enum { N = 512, E = 512, M = 3000 };
    const rs_format f = fmt(name);
    float x[N], y[N];
    double sum[N] = {0};
    uint64_t st = 13;
    fill_gauss(x, N, &st, 0.37);
    rs_qtensor q;
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, E), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK); /* for the scales only */
    for (int m = 0; m < M; ++m) {
        assert_int_equal(rs_quantize_roundtrip(&f, x, N, E, 42, (uint64_t)m, y), RS_OK);
        for (size_t i = 0; i < N; ++i) sum[i] += y[i];
    }
    double pooled = 0, pooled_signed = 0;
    size_t used = 0;
    for (size_t i = 0; i < N; ++i) {
        double d, step;
        if (f.kind == RS_FMT_FP8) {
            d = q.scale_inv[i / 128];
            step = e4m3_step(x[i] / d);
        } else {
            d = e4m3_ref(q.block_scale[i / 16]) * q.tensor_scale_dec[0];
            const double v = x[i] / d;
            if (fabs(v) > 6.0) { /* clipped by a rounded-down block scale: biased, skip */
                assert_true(clip_allowed);
                continue;
            }
            step = e2m1_step(v);
        }
        const double mean = sum[i] / M, err = mean - x[i];
        const double bound = 5.0 * 0.5 * step * d / sqrt((double)M) + ldexp(fabs(x[i]), -20);
        if (fabs(err) > bound + (f.sr_bits < 32 ? ldexp(step * d, -f.sr_bits) : 0.0))
            fail_msg("%s: element %zu mean %.9g x %.9g err %g bound %g", name, i, mean, x[i], err, bound);
        pooled += err / (step * d);
        pooled_signed += (x[i] < 0 ? -err : err) / (step * d);
        ++used;
    }
    pooled /= (double)used;
    pooled_signed /= (double)used;
    const double sig = 1.0 / (2.0 * sqrt((double)M * (double)used));
    print_message("%s: %zu elements x %d trials: pooled normalized error %.2e, toward-magnitude %.2e (sigma %.1e)\n",
                  name, used, M, pooled, pooled_signed, sig);
    if (f.sr_bits >= 32) {
        assert_true(fabs(pooled) <= 5 * sig);
    } else {
        assert_true(pooled_signed <= 5 * sig && pooled_signed >= -ldexp(1.0, -f.sr_bits) - 5 * sig);
    }
    assert_true(used > N / 2);
    rs_qtensor_free(&q);
}

static void test_sr_unbiased_in_aggregate(void **state)
{
    (void)state;
    check_sr_mean("fp8-sr", 0);
    check_sr_mean("fp8-sr+pow2", 0);
    check_sr_mean("nvfp4-sr", 1);
    check_sr_mean("nvfp4-sr8", 1);
}

/* ---- fixture: numpy + ml_dtypes TE-formula oracle ---------------------------------------------- */

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_fixture_bit_exact(void **state)
{
    (void)state;
    char path[1024];
    size_t size = 0;
    uint8_t *buf = rs_test_read_file(rs_test_fixture_path(path, sizeof path, "qtensor_ref.bin"), &size);
    if (!buf) fail_msg("cannot read %s (regenerate with tests/fixtures/make_qtensor_fixtures.py)", path);
    assert_true(size >= 80);
    if (memcmp(buf, "RSQTREF\0", 8) != 0 || rd32(buf + 8) != 1)
        fail_msg("%s: bad magic or version (HINT: re-run make_qtensor_fixtures.py)", path);
    const uint32_t nrec = rd32(buf + 12);
    print_message("fixture: %u records, %.64s\n", nrec, (const char *)buf + 16);
    size_t off = 80;
    uint32_t n_fp8 = 0, n_nvfp4 = 0;
    for (uint32_t r = 0; r < nrec; ++r) {
        assert_true(off + 48 <= size);
        char name[33];
        memcpy(name, buf + off, 32);
        name[32] = '\0';
        const uint32_t kind = rd32(buf + off + 32), flags = rd32(buf + off + 36);
        const size_t n = rd32(buf + off + 40), E = rd32(buf + off + 44);
        off += 48;
        const char *fs = kind == 3 ? (flags & 1 ? "fp8-rtn+pow2" : "fp8-rtn")
                                   : (flags & 2 ? "nvfp4-rtn+floor" : "nvfp4-rtn");
        assert_true(kind == 3 || kind == 4);
        const rs_format f = fmt(fs);
        const size_t ncode = kind == 3 ? n : n / 2;
        const size_t need = 4 * n + ncode + (kind == 3 ? 4 * (n / 128) : n / 16 + 4 * (n / E)) + 4 * n;
        assert_true(off + need <= size);
        float *x = xmalloc_f(n), *yref = xmalloc_f(n), *y = xmalloc_f(n);
        memcpy(x, buf + off, 4 * n);
        const uint8_t *codes = buf + off + 4 * n;
        const uint8_t *scales = codes + ncode;
        const size_t scale_bytes = kind == 3 ? 4 * (n / 128) : n / 16;
        const uint8_t *sdec = scales + scale_bytes;
        memcpy(yref, buf + off + need - 4 * n, 4 * n);
        off += need;

        rs_qtensor q;
        assert_int_equal(rs_qtensor_alloc(&q, &f, n, E), RS_OK);
        assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
        for (size_t i = 0; i < ncode; ++i)
            if (q.codes[i] != codes[i])
                fail_msg("%s %s: code byte %zu = 0x%02x, ml_dtypes 0x%02x (x = %a)", name, fs, i, q.codes[i], codes[i],
                         x[kind == 3 ? i : 2 * i]);
        if (kind == 3) {
            if (memcmp(q.scale_inv, scales, scale_bytes) != 0) fail_msg("%s %s: scale_inv differs", name, fs);
            ++n_fp8;
        } else {
            for (size_t b = 0; b < n / 16; ++b)
                if (q.block_scale[b] != scales[b])
                    fail_msg("%s %s: block scale %zu = 0x%02x, ref 0x%02x", name, fs, b, q.block_scale[b], scales[b]);
            if (memcmp(q.tensor_scale_dec, sdec, 4 * (n / E)) != 0) fail_msg("%s %s: S_dec differs", name, fs);
            ++n_nvfp4;
        }
        assert_int_equal(rs_dequantize(&q, y), RS_OK);
        for (size_t i = 0; i < n; ++i)
            if (memcmp(&y[i], &yref[i], 4) != 0)
                fail_msg("%s %s: y[%zu] = %a, numpy %a", name, fs, i, y[i], yref[i]);
        assert_int_equal(rs_quantize_roundtrip(&f, x, n, E, 0, 0, y), RS_OK);
        assert_memory_equal(y, yref, 4 * n);
        rs_qtensor_free(&q);
        free(x);
        free(y);
        free(yref);
    }
    assert_int_equal(off, size);
    assert_true(n_fp8 >= 10 && n_nvfp4 >= 6);
    free(buf);
}

/* ---- elementwise formats ------------------------------------------------------------------------ */

static void test_half_formats_elementwise(void **state)
{
    (void)state;
    enum { N = 3000 };
    float x[N], y[N];
    uint64_t st = 14;
    fill_gauss(x, N, &st, 100.0);
    x[0] = 70000.0f; /* FP16 RTN overflows to +Inf (IEEE), not an error */
    rs_format f = fmt("fp16-rtn");
    rs_qtensor q;
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_int_equal(rs_dequantize(&q, y), RS_OK);
    for (size_t i = 0; i < N; ++i) {
        uint16_t c;
        memcpy(&c, q.codes + 2 * i, 2);
        assert_int_equal(c, rs_fp16_encode_rtn(x[i]));
        assert_true(y[i] == rs_fp16_decode(c));
    }
    assert_true(isinf(y[0]));
    rs_qtensor_free(&q);
    /* fp32 stores x verbatim */
    f = fmt("fp32");
    assert_int_equal(rs_qtensor_alloc(&q, &f, N, N), RS_OK);
    assert_int_equal(rs_quantize(&q, x, 0, 0), RS_OK);
    assert_memory_equal(q.codes, x, sizeof x);
    rs_qtensor_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_and_bytes),
        cmocka_unit_test(test_fp8_rtn_bound_and_top_code),
        cmocka_unit_test(test_nvfp4_rtn_bound_and_top_code),
        cmocka_unit_test(test_nvfp4_packing),
        cmocka_unit_test(test_zero_blocks),
        cmocka_unit_test(test_single_outlier),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_roundtrip_bitwise),
        cmocka_unit_test(test_sr_random_words),
        cmocka_unit_test(test_sr_unbiased_in_aggregate),
        cmocka_unit_test(test_fixture_bit_exact),
        cmocka_unit_test(test_half_formats_elementwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
