/* test_wdecode.c — NVFP4 / FP8 checkpoint-weight decoders (rs_wdecode.h):
 *  - bit-exact against tests/fixtures/wdecode_fixtures.bin.gz, made by make_wdecode_fixtures.py
 *    from numpy + ml_dtypes (float4_e2m1fn / float8_e4m3fn, float64 products rounded once);
 *    the fixture's refused cases must return RS_E_FORMAT;
 *  - every refusal (NULL, lying shapes, scale counts, row ranges, short output, bad per-tensor
 *    scales, NaN scale or weight bytes) returns the documented code with a message and leaves
 *    the output buffer as it was;
 *  - row-range decodes equal the matching rows of the whole decode, and write nothing past them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/quant/rs_wdecode.h"
#include "rs_test_util.h"

#define SENTINEL 0x7FA5A5A5u /* a NaN payload no decoder writes */

static void fill_sentinel(float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = rs_test_u2f(SENTINEL);
}

static void assert_sentinel(const float *y, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (rs_test_f2u(y[i]) != SENTINEL) fail_msg("%s: output[%zu] written on refusal", what, i);
}

/* ---- fixture reader ----------------------------------------------------------------------------- */

typedef struct fx_case {
    char name[33];
    uint32_t kind;
    int32_t expect;
    int64_t wshape[2], sshape[2], block[2];
    float tscale;
    const uint8_t *wbytes, *sbytes;
    uint64_t wn, sn, nvalues;
    const uint8_t *values;
} fx_case;

static uint64_t rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Parse one case at *off; 0 on success, -1 on a truncated file. */
static int fx_next(const uint8_t *buf, size_t size, size_t *off, fx_case *c)
{
    size_t o = *off;
    if (o + 32 + 8 + 48 + 4 + 8 > size) return -1;
    memcpy(c->name, buf + o, 32);
    c->name[32] = '\0';
    c->kind = (uint32_t)rd(buf + o + 32, 4);
    c->expect = (int32_t)(uint32_t)rd(buf + o + 36, 4);
    o += 40;
    int64_t *dims[3] = {c->wshape, c->sshape, c->block};
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < 2; d++, o += 8) dims[k][d] = (int64_t)rd(buf + o, 8);
    uint32_t u = (uint32_t)rd(buf + o, 4);
    c->tscale = rs_test_u2f(u);
    o += 4;
    c->wn = rd(buf + o, 8);
    o += 8;
    if (c->wn > size - o) return -1;
    c->wbytes = buf + o;
    o += c->wn;
    if (o + 8 > size) return -1;
    c->sn = rd(buf + o, 8);
    o += 8;
    if (c->sn > size - o) return -1;
    c->sbytes = buf + o;
    o += c->sn;
    if (o + 8 > size) return -1;
    c->nvalues = rd(buf + o, 8);
    o += 8;
    if (c->nvalues > (size - o) / 4) return -1;
    c->values = buf + o;
    o += 4 * c->nvalues;
    *off = o;
    return 0;
}

/* Descriptors of a case; scale storage for FP8 copied into aligned floats (caller frees). */
static rs_wq_nvfp4 fx_nvfp4(const fx_case *c)
{
    rs_wq_nvfp4 w = {c->wbytes, {c->wshape[0], c->wshape[1]}, c->sbytes, {c->sshape[0], c->sshape[1]},
                     c->tscale};
    return w;
}

static rs_wq_fp8 fx_fp8(const fx_case *c, float **scale_store)
{
    const size_t ns = c->kind == 2 ? 1 : (size_t)(c->sn / 4);
    float *s = malloc(ns * sizeof *s);
    assert_non_null(s);
    if (c->kind == 2)
        s[0] = c->tscale;
    else
        for (size_t i = 0; i < ns; i++) s[i] = rs_test_u2f((uint32_t)rd(c->sbytes + 4 * i, 4));
    *scale_store = s;
    rs_wq_fp8 w = {c->wbytes, {c->wshape[0], c->wshape[1]}, s, {c->sshape[0], c->sshape[1]},
                   {c->block[0], c->block[1]}};
    return w;
}

static rs_status decode_rows(const fx_case *c, const rs_wq_nvfp4 *wn, const rs_wq_fp8 *wf,
                             int64_t row0, int64_t nrows, float *out, size_t len)
{
    return c->kind == 1 ? rs_wdecode_nvfp4_rows(wn, row0, nrows, out, len)
                        : rs_wdecode_fp8_rows(wf, row0, nrows, out, len);
}

static void test_fixture_bit_exact(void **state)
{
    (void)state;
    char path[1024];
    size_t size = 0;
    uint8_t *buf = rs_test_read_file(rs_test_fixture_path(path, sizeof path, "wdecode_fixtures.bin"), &size);
    if (!buf) fail_msg("cannot read %s (regenerate with tests/fixtures/make_wdecode_fixtures.py)", path);
    if (size < 12 || memcmp(buf, "RSWDFX1\0", 8) != 0) fail_msg("%s: bad magic", path);
    const uint32_t ncases = (uint32_t)rd(buf + 8, 4);
    size_t off = 12;
    int n_ok[4] = {0}, n_refused = 0;
    for (uint32_t k = 0; k < ncases; k++) {
        fx_case c;
        if (fx_next(buf, size, &off, &c) != 0) fail_msg("%s: truncated at case %u", path, k);
        assert_true(c.kind >= 1 && c.kind <= 3);
        float *sstore = NULL;
        rs_wq_nvfp4 wn = fx_nvfp4(&c);
        rs_wq_fp8 wf = {0};
        if (c.kind != 1) wf = fx_fp8(&c, &sstore);
        const int64_t rows = c.wshape[0], in = c.kind == 1 ? 2 * c.wshape[1] : c.wshape[1];
        const size_t n = (size_t)(rows * in);
        float *y = malloc((n + 1) * sizeof *y);
        assert_non_null(y);
        fill_sentinel(y, n + 1);
        rs_error_clear();
        const rs_status s = c.kind == 1 ? rs_wdecode_nvfp4(&wn, y, n) : rs_wdecode_fp8(&wf, y, n);
        if (c.expect != 0) {
            if ((int)s != c.expect) fail_msg("%s: status %d, expected %d", c.name, (int)s, c.expect);
            assert_true(rs_last_error()[0] != '\0');
            assert_sentinel(y, n + 1, c.name);
            n_refused++;
        } else {
            if (s != RS_OK) fail_msg("%s: %s", c.name, rs_last_error());
            if (c.nvalues != n) fail_msg("%s: fixture holds %llu values, expected %zu", c.name,
                                         (unsigned long long)c.nvalues, n);
            for (size_t i = 0; i < n; i++) {
                const uint32_t want = (uint32_t)rd(c.values + 4 * i, 4), got = rs_test_f2u(y[i]);
                if (want != got)
                    fail_msg("%s: element [%lld][%lld] = %a (0x%08x), ml_dtypes %a (0x%08x)", c.name,
                             (long long)(i / (size_t)in), (long long)(i % (size_t)in), (double)y[i], got,
                             (double)rs_test_u2f(want), want);
            }
            assert_int_equal(rs_test_f2u(y[n]), SENTINEL);
            /* row ranges: every single row, and a middle run, equal the whole decode */
            float *z = malloc((n + 1) * sizeof *z);
            assert_non_null(z);
            const int64_t r0 = rows / 3, nr = rows - rows / 3 - rows / 4;
            fill_sentinel(z, n + 1);
            assert_int_equal(decode_rows(&c, &wn, &wf, r0, nr, z, (size_t)(nr * in)), RS_OK);
            assert_memory_equal(z, y + r0 * in, (size_t)(nr * in) * sizeof *z);
            assert_sentinel(z + nr * in, n + 1 - (size_t)(nr * in), c.name);
            for (int64_t r = 0; r < rows; r++) {
                assert_int_equal(decode_rows(&c, &wn, &wf, r, 1, z, (size_t)in), RS_OK);
                assert_memory_equal(z, y + r * in, (size_t)in * sizeof *z);
            }
            free(z);
            n_ok[c.kind]++;
        }
        free(y);
        free(sstore);
    }
    assert_int_equal(off, size);
    print_message("wdecode fixture: %d nvfp4, %d fp8 tensor, %d fp8 block decoded; %d refused\n", n_ok[1],
                  n_ok[2], n_ok[3], n_refused);
    assert_true(n_ok[1] >= 5 && n_ok[2] >= 4 && n_ok[3] >= 2 && n_refused >= 10);
    free(buf);
}

/* ---- refusals built here ------------------------------------------------------------------------ */

#define OUT 4
#define IN 64 /* NVFP4: 32 bytes and 4 scales per row */

typedef struct nv_fix {
    uint8_t w[OUT * IN / 2];
    uint8_t s[OUT * IN / 16];
    float y[OUT * IN + 8];
} nv_fix;

static rs_wq_nvfp4 nv_make(nv_fix *f)
{
    for (size_t i = 0; i < sizeof f->w; i++) f->w[i] = (uint8_t)(i * 37u + 11u);
    for (size_t i = 0; i < sizeof f->s; i++) f->s[i] = (uint8_t)(0x30 + i);
    rs_wq_nvfp4 w = {f->w, {OUT, IN / 2}, f->s, {OUT, IN / 16}, 0.25f};
    return w;
}

static void expect_nv(const rs_wq_nvfp4 *w, int64_t row0, int64_t nrows, float *y, size_t len, rs_status code,
                      const char *what)
{
    fill_sentinel(y, OUT * IN + 8);
    rs_error_clear();
    const rs_status s = rs_wdecode_nvfp4_rows(w, row0, nrows, y, len);
    if (s != code) fail_msg("%s: status %d (%s), expected %d", what, (int)s, rs_last_error(), (int)code);
    assert_true(rs_last_error()[0] != '\0');
    assert_sentinel(y, OUT * IN + 8, what);
}

static void test_nvfp4_refusals(void **state)
{
    (void)state;
    nv_fix f;
    const size_t n = OUT * IN;
    rs_wq_nvfp4 w = nv_make(&f), b;
    assert_int_equal(rs_wdecode_nvfp4(&w, f.y, n), RS_OK); /* the base case decodes */

    expect_nv(NULL, 0, OUT, f.y, n, RS_E_INVAL, "NULL descriptor");
    assert_int_equal(rs_wdecode_nvfp4(NULL, f.y, n), RS_E_INVAL);
    b = w; b.weight = NULL; expect_nv(&b, 0, OUT, f.y, n, RS_E_INVAL, "NULL weight");
    b = w; b.scale = NULL; expect_nv(&b, 0, OUT, f.y, n, RS_E_INVAL, "NULL scale");
    rs_error_clear();
    assert_int_equal(rs_wdecode_nvfp4_rows(&w, 0, OUT, NULL, n), RS_E_INVAL);

    b = w; b.weight_shape[0] = 0; b.scale_shape[0] = 0; expect_nv(&b, 0, 0, f.y, n, RS_E_SHAPE, "zero rows");
    b = w; b.weight_shape[1] = -2; expect_nv(&b, 0, OUT, f.y, n, RS_E_SHAPE, "negative bytes");
    /* in = 2 * bytes must be a multiple of 16: 30 bytes = 60 inputs */
    b = w; b.weight_shape[1] = 30; b.scale_shape[1] = 3; expect_nv(&b, 0, OUT, f.y, n, RS_E_SHAPE, "in % 16");
    b = w; b.weight_shape[1] = 4; b.scale_shape[1] = 0; expect_nv(&b, 0, OUT, f.y, n, RS_E_SHAPE, "in 8");
    /* scale shapes that lie: one too few / many groups, wrong rows, transposed */
    b = w; b.scale_shape[1] = IN / 16 - 1; expect_nv(&b, 0, OUT, f.y, n, RS_E_SHAPE, "scale cols - 1");
    b = w; b.scale_shape[1] = IN / 16 + 1; expect_nv(&b, 0, OUT, f.y, n, RS_E_SHAPE, "scale cols + 1");
    b = w; b.scale_shape[0] = OUT - 1; expect_nv(&b, 0, OUT, f.y, n, RS_E_SHAPE, "scale rows - 1");
    b = w; b.scale_shape[0] = IN / 16; b.scale_shape[1] = OUT; b.weight_shape[0] = IN / 16;
    b.weight_shape[1] = OUT * 2; /* a [4, 8] weight with a [4, 4] scale: in = 16 needs [4, 1] */
    expect_nv(&b, 0, 4, f.y, n, RS_E_SHAPE, "scale per 8 inputs");
    b = w; b.weight_shape[0] = INT64_MAX; b.scale_shape[0] = INT64_MAX;
    expect_nv(&b, 0, 1, f.y, n, RS_E_SHAPE, "size overflow");

    /* row ranges and the output length */
    expect_nv(&w, -1, 1, f.y, n, RS_E_SHAPE, "row0 < 0");
    expect_nv(&w, 0, -1, f.y, n, RS_E_SHAPE, "nrows < 0");
    expect_nv(&w, 3, 2, f.y, n, RS_E_SHAPE, "past the last row");
    expect_nv(&w, OUT + 1, 0, f.y, n, RS_E_SHAPE, "row0 past the end");
    expect_nv(&w, 1, INT64_MAX, f.y, n, RS_E_SHAPE, "nrows overflow");
    expect_nv(&w, 0, OUT, f.y, n - 1, RS_E_SHAPE, "output one short");
    expect_nv(&w, 1, 2, f.y, 2 * IN - 1, RS_E_SHAPE, "range output one short");

    /* weight_scale_2 */
    const float bad_s2[] = {0.0f, -0.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e36f, 0x1p127f};
    for (size_t i = 0; i < sizeof bad_s2 / sizeof bad_s2[0]; i++) {
        b = w; b.scale_2 = bad_s2[i];
        expect_nv(&b, 0, OUT, f.y, n, RS_E_FORMAT, "bad weight_scale_2");
    }
    /* the largest accepted weight_scale_2 still gives finite values */
    b = w; b.scale_2 = 0x1p116f;
    assert_int_equal(rs_wdecode_nvfp4(&b, f.y, n), RS_OK);
    for (size_t i = 0; i < n; i++) assert_true(isfinite(f.y[i]));

    /* NaN scale bytes: refused for a range that holds the row, accepted for one that does not */
    f.s[2 * (IN / 16) + 1] = 0xFF;
    expect_nv(&w, 0, OUT, f.y, n, RS_E_FORMAT, "NaN scale 0xFF");
    expect_nv(&w, 2, 1, f.y, IN, RS_E_FORMAT, "NaN scale 0xFF, its row");
    assert_int_equal(rs_wdecode_nvfp4_rows(&w, 0, 2, f.y, 2 * IN), RS_OK);
    assert_int_equal(rs_wdecode_nvfp4_rows(&w, 3, 1, f.y, IN), RS_OK);
    f.s[2 * (IN / 16) + 1] = 0x7F;
    expect_nv(&w, 1, 3, f.y, n, RS_E_FORMAT, "NaN scale 0x7F");
    assert_non_null(strstr(rs_last_error(), "weight_scale[2][1]"));
    f.s[2 * (IN / 16) + 1] = 0x7E; /* 448 is a value */
    assert_int_equal(rs_wdecode_nvfp4(&w, f.y, n), RS_OK);

    /* an empty range writes nothing and succeeds */
    fill_sentinel(f.y, n + 8);
    assert_int_equal(rs_wdecode_nvfp4_rows(&w, OUT, 0, f.y, 0), RS_OK);
    assert_sentinel(f.y, n + 8, "empty range");
}

/* The nibble order on a hand-made byte: 0x9E holds element 0 = code 0xE (-4), element 1 = 0x9 (-0.5). */
static void test_nvfp4_nibble_order(void **state)
{
    (void)state;
    uint8_t wb[8] = {0x9E, 0x70, 0, 0, 0, 0, 0, 0x1F};
    uint8_t sb[1] = {0x40}; /* E4M3 2.0 */
    float y[16];
    rs_wq_nvfp4 w = {wb, {1, 8}, sb, {1, 1}, 0.5f};
    assert_int_equal(rs_wdecode_nvfp4(&w, y, 16), RS_OK);
    assert_true(y[0] == -4.0f && y[1] == -0.5f);
    assert_true(y[2] == 0.0f && y[3] == 6.0f);
    assert_true(y[14] == -6.0f && y[15] == 0.5f);
}

static void expect_f8(const rs_wq_fp8 *w, int64_t row0, int64_t nrows, float *y, size_t cap, size_t len,
                      rs_status code, const char *what)
{
    fill_sentinel(y, cap);
    rs_error_clear();
    const rs_status s = rs_wdecode_fp8_rows(w, row0, nrows, y, len);
    if (s != code) fail_msg("%s: status %d (%s), expected %d", what, (int)s, rs_last_error(), (int)code);
    assert_true(rs_last_error()[0] != '\0');
    assert_sentinel(y, cap, what);
}

static void test_fp8_refusals(void **state)
{
    (void)state;
    enum { R = 10, C = 12 };
    uint8_t q[R * C];
    for (size_t i = 0; i < sizeof q; i++) q[i] = (uint8_t)((i * 29u + 3u) % 0x7Fu);
    float ts = 0.125f;
    float grid[3 * 3]; /* blocks of 4 x 5: ceil(10/4) = 3, ceil(12/5) = 3 */
    for (int i = 0; i < 9; i++) grid[i] = 0.5f + (float)i;
    float y[R * C + 8];
    const size_t n = R * C, cap = R * C + 8;
    rs_wq_fp8 t = {q, {R, C}, &ts, {1, 1}, {0, 0}}, g = {q, {R, C}, grid, {3, 3}, {4, 5}}, b;
    assert_int_equal(rs_wdecode_fp8(&t, y, n), RS_OK);
    assert_int_equal(rs_wdecode_fp8(&g, y, n), RS_OK);
    /* value check by hand: q[0] = 3 = 3 * 2^-9, block scale 0.5 */
    assert_true(y[0] == 3.0f * 0x1p-9f * 0.5f);

    expect_f8(NULL, 0, R, y, cap, n, RS_E_INVAL, "NULL descriptor");
    b = t; b.weight = NULL; expect_f8(&b, 0, R, y, cap, n, RS_E_INVAL, "NULL weight");
    b = t; b.scale = NULL; expect_f8(&b, 0, R, y, cap, n, RS_E_INVAL, "NULL scale");
    b = t; b.weight_shape[1] = 0; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "zero cols");
    b = t; b.scale_shape[1] = 2; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "per-tensor scale [1, 2]");
    b = t; b.scale_shape[0] = 0; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "per-tensor scale [0, 1]");
    b = g; b.block[0] = 0; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "block {0, 5}");
    b = g; b.block[1] = -5; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "negative block");
    b = g; b.scale_shape[0] = 2; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "floor grid rows");
    b = g; b.scale_shape[1] = 4; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "grid cols + 1");
    b = g; b.scale_shape[0] = 1; b.scale_shape[1] = 1; expect_f8(&b, 0, R, y, cap, n, RS_E_SHAPE, "grid as per tensor");
    expect_f8(&g, 8, 3, y, cap, n, RS_E_SHAPE, "range past the end");
    expect_f8(&g, 0, R, y, cap, n - 1, RS_E_SHAPE, "output one short");

    const float bad[] = {0.0f, -0.125f, INFINITY, NAN, 1e37f};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ts = bad[i];
        expect_f8(&t, 0, R, y, cap, n, RS_E_FORMAT, "bad per-tensor scale");
    }
    ts = 0.125f;

    /* a non-finite block scale: refused for the rows of its block row (rows 4..7) only */
    grid[1 * 3 + 2] = NAN;
    expect_f8(&g, 0, R, y, cap, n, RS_E_FORMAT, "NaN block scale");
    expect_f8(&g, 7, 1, y, cap, C, RS_E_FORMAT, "NaN block scale, its row");
    assert_int_equal(rs_wdecode_fp8_rows(&g, 8, 2, y, 2 * C), RS_OK);
    grid[1 * 3 + 2] = -INFINITY;
    expect_f8(&g, 4, 1, y, cap, C, RS_E_FORMAT, "-Inf block scale");
    grid[1 * 3 + 2] = 0.0f; /* zero is a value */
    assert_int_equal(rs_wdecode_fp8(&g, y, n), RS_OK);

    /* NaN weight bytes */
    q[5 * C + 7] = 0x7F;
    expect_f8(&t, 0, R, y, cap, n, RS_E_FORMAT, "NaN weight 0x7F");
    assert_non_null(strstr(rs_last_error(), "weight[5][7]"));
    q[5 * C + 7] = 0xFF;
    expect_f8(&g, 5, 1, y, cap, C, RS_E_FORMAT, "NaN weight 0xFF");
    assert_int_equal(rs_wdecode_fp8_rows(&t, 6, 4, y, 4 * C), RS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_bit_exact),
        cmocka_unit_test(test_nvfp4_refusals),
        cmocka_unit_test(test_nvfp4_nibble_order),
        cmocka_unit_test(test_fp8_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
