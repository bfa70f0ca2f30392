/* test_minifloat.c — decode and round-to-nearest-even of the scalar codecs (E4M3, E2M1, FP16,
 * BF16), against two independent references:
 *   - values computed here from the bit fields (sign, exponent, mantissa; ldexp), and
 *   - tests/fixtures/codec_fixtures.bin, made by make_codec_fixtures.py from ml_dtypes 0.6
 *     (E4M3, E2M1, BF16) and numpy (FP16); see tests/fixtures/README.md "codec fixtures".
 * Special values follow quant/rs_minifloat.h: E4M3 saturates finite overflow and +-Inf to
 * +-448 and keeps NaN (0x7F|sign); E2M1 rejects non-finite input with RS_E_NONFINITE and
 * leaves the code untouched; FP16/BF16 are IEEE (overflow to Inf, NaN stays a quiet NaN
 * with its sign).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "replayssm/quant/rs_minifloat.h"
#include "rs_test_util.h"

/* ---- fixture reader (format documented in make_codec_fixtures.py) ------------------ */

#define FX_MAGIC "RSCODEC"
#define FX_VERSION 1u

typedef struct fx_file {
    uint8_t *buf;
    size_t size;
} fx_file;

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static fx_file *g_fx;

static int fx_open(void **state)
{
    (void)state;
    char path[1024];
    rs_test_fixture_path(path, sizeof path, "codec_fixtures.bin");
    g_fx = calloc(1, sizeof *g_fx);
    if (!g_fx) return -1;
    g_fx->buf = rs_test_read_file(path, &g_fx->size);
    if (!g_fx->buf) {
        fprintf(stderr, "cannot read fixture %s (run tests/fixtures/make_codec_fixtures.py)\n", path);
        return -1;
    }
    if (g_fx->size < 16 || memcmp(g_fx->buf, FX_MAGIC, 8) != 0 || rd32(g_fx->buf + 8) != FX_VERSION) {
        fprintf(stderr, "%s: bad magic or version (want version %u)\n", path, FX_VERSION);
        return -1;
    }
    return 0;
}

static int fx_close(void **state)
{
    (void)state;
    if (g_fx) free(g_fx->buf);
    free(g_fx);
    g_fx = NULL;
    return 0;
}

/* Section `name` inflated into a malloc'd array of count elements of elem_size bytes
 * (asserted); delta encoding undone. Little-endian host assumed (x86-64/aarch64). */
static void *fx_get(const char *name, uint32_t elem_size, size_t *count)
{
    assert_non_null(g_fx);
    uint32_t nsec = rd32(g_fx->buf + 12);
    size_t off = 16;
    for (uint32_t s = 0; s < nsec; ++s) {
        assert_true(off + 48 <= g_fx->size);
        const uint8_t *h = g_fx->buf + off;
        uint32_t es = rd32(h + 32), n = rd32(h + 36), enc = rd32(h + 40), zlen = rd32(h + 44);
        assert_true(off + 48 + zlen <= g_fx->size);
        if (strncmp((const char *)h, name, 32) == 0) {
            assert_int_equal(es, elem_size);
            uLongf len = (uLongf)n * es;
            void *out = malloc(len ? len : 1);
            assert_non_null(out);
            assert_int_equal(uncompress(out, &len, h + 48, zlen), Z_OK);
            assert_int_equal(len, (uLongf)n * es);
            if (enc == 1) {
                assert_int_equal(es, 4);
                uint32_t *v = out;
                for (uint32_t i = 1; i < n; ++i) v[i] += v[i - 1];
            } else {
                assert_int_equal(enc, 0);
            }
            *count = n;
            return out;
        }
        off += 48 + zlen;
    }
    fail_msg("fixture section %s missing", name);
    return NULL;
}

/* ---- independent decoders (from the bit fields) ------------------------------------ */

static double ref_e4m3(uint32_t c)
{
    int s = (c >> 7) & 1, e = (c >> 3) & 0xF, m = c & 7;
    double v;
    if (e == 15 && m == 7) return NAN;
    v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10); /* (1 + m/8) 2^(e-7) */
    return s ? -v : v;
}

static double ref_e2m1(uint32_t c)
{
    int s = (c >> 3) & 1, e = (c >> 1) & 3, m = c & 1;
    double v = e == 0 ? 0.5 * m : ldexp(2 + m, e - 2); /* (1 + m/2) 2^(e-1) */
    return s ? -v : v;
}

static double ref_fp16(uint32_t c)
{
    int s = (c >> 15) & 1, e = (c >> 10) & 0x1F, m = c & 0x3FF;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static double ref_bf16(uint32_t c)
{
    int s = (c >> 15) & 1, e = (c >> 7) & 0xFF, m = c & 0x7F;
    double v;
    if (e == 255) v = m ? NAN : INFINITY;
    else v = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    return s ? -v : v;
}

/* Same float, bit for bit (NaN: both NaN, sign compared when want_sign). */
static int same_float(float got, double want, int want_sign)
{
    if (isnan(want)) return isnan(got) && (!want_sign || !signbit(got) == !signbit(want));
    float w = (float)want;
    return rs_test_f2u(got) == rs_test_f2u(w);
}

/* ---- (a) decode ------------------------------------------------------------------- */

static void test_decode_e4m3_all_codes(void **state)
{
    (void)state;
    size_t n;
    float *lut = fx_get("e4m3_decode", 4, &n);
    assert_int_equal(n, 256);
    int bad = 0;
    for (uint32_t c = 0; c < 256; ++c) {
        double want = ref_e4m3(c);
        float got = rs_e4m3_decode((uint8_t)c), got2 = rs_elem_decode(RS_ELEM_E4M3, c);
        /* The formula must match ml_dtypes too (else the reference itself is wrong). */
        if (!same_float(lut[c], want, 0)) fail_msg("formula vs ml_dtypes at 0x%02X: %a vs %a", c, want, lut[c]);
        if (!same_float(got, want, 0) || !same_float(got2, want, 0) || !same_float(got, lut[c], 0)) {
            if (bad++ < 10)
                fprintf(stderr, "e4m3 decode 0x%02X: want %a (ml_dtypes %a), got %a / %a\n", c, want,
                        (double)lut[c], (double)got, (double)got2);
        }
    }
    /* Spot values from the format definition (notes section 8). */
    assert_true(rs_e4m3_decode(0x7E) == 448.0f && rs_e4m3_decode(0xFE) == -448.0f);
    assert_true(rs_e4m3_decode(0x08) == 0x1p-6f && rs_e4m3_decode(0x01) == 0x1p-9f);
    assert_true(isnan(rs_e4m3_decode(0x7F)) && isnan(rs_e4m3_decode(0xFF)));
    assert_true(signbit(rs_e4m3_decode(0x80)) && rs_e4m3_decode(0x80) == 0.0f);
    free(lut);
    assert_int_equal(bad, 0);
}

static void test_decode_e2m1_all_codes(void **state)
{
    (void)state;
    static const double table[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6}; /* the E2M1 magnitudes (OCP MX spec) */
    size_t n;
    float *lut = fx_get("e2m1_decode", 4, &n);
    assert_int_equal(n, 16);
    int bad = 0;
    for (uint32_t c = 0; c < 16; ++c) {
        double want = ref_e2m1(c);
        assert_true(fabs(want) == table[c & 7]);
        if (!same_float(lut[c], want, 1)) fail_msg("formula vs ml_dtypes at 0x%X", c);
        float got = rs_e2m1_decode((uint8_t)c), got2 = rs_elem_decode(RS_ELEM_E2M1, c);
        if (!same_float(got, want, 1) || !same_float(got2, want, 1)) {
            bad++;
            fprintf(stderr, "e2m1 decode 0x%X: want %g got %g / %g\n", c, want, (double)got, (double)got2);
        }
    }
    free(lut);
    assert_int_equal(bad, 0);
}

static void test_decode_fp16_bf16_all_codes(void **state)
{
    (void)state;
    int bad16 = 0, badbf = 0;
    for (uint32_t c = 0; c < 65536; ++c) {
        double w16 = ref_fp16(c), wbf = ref_bf16(c);
        float g16 = rs_fp16_decode((uint16_t)c), gbf = rs_bf16_decode((uint16_t)c);
        if (!same_float(g16, w16, 1) || !same_float(rs_elem_decode(RS_ELEM_FP16, c), w16, 1)) {
            if (bad16++ < 10) fprintf(stderr, "fp16 decode 0x%04X: want %a got %a\n", c, w16, (double)g16);
        }
        if (!same_float(gbf, wbf, 1) || !same_float(rs_elem_decode(RS_ELEM_BF16, c), wbf, 1)) {
            if (badbf++ < 10) fprintf(stderr, "bf16 decode 0x%04X: want %a got %a\n", c, wbf, (double)gbf);
        }
    }
    assert_int_equal(bad16, 0);
    assert_int_equal(badbf, 0);
}

/* ---- (b) RTN against the fixtures --------------------------------------------------- */

/* One RTN encode through both entry points; returns the status and the code. The generic
 * rs_elem_encode must agree with the typed wrapper. */
static rs_status enc_rtn(rs_elem t, float x, uint32_t *code)
{
    uint32_t c = 0xDEADBEEFu;
    rs_status st = rs_elem_encode(t, x, RS_ROUND_RTN, 0, 0, &c);
    uint32_t w = 0xDEADBEEFu;
    switch (t) {
    case RS_ELEM_E4M3: w = rs_e4m3_encode_rtn(x); break;
    case RS_ELEM_FP16: w = rs_fp16_encode_rtn(x); break;
    case RS_ELEM_BF16: w = rs_bf16_encode_rtn(x); break;
    case RS_ELEM_E5M2: w = c; break; /* no typed wrapper */
    case RS_ELEM_E2M1: {
        uint8_t b = 0xAA;
        rs_status st2 = rs_e2m1_encode_rtn(x, &b);
        assert_int_equal(st2, st);
        w = st2 == RS_OK ? b : c;
        if (st2 != RS_OK) { /* the code is left untouched on failure */
            assert_int_equal(b, 0xAA);
            assert_int_equal(c, 0xDEADBEEFu);
        }
        break;
    }
    }
    if (st == RS_OK && w != c)
        fail_msg("%s: rs_elem_encode 0x%X != wrapper 0x%X for x=%a", rs_elem_name(t), c, w, (double)x);
    *code = c;
    return st;
}

typedef struct mismatch_log {
    const char *what;
    long n;
} mismatch_log;

static void report(mismatch_log *ml, rs_elem t, float x, uint32_t want, uint32_t got, const char *note)
{
    if (ml->n++ < 12)
        fprintf(stderr, "%s %s: x=%a (bits 0x%08X) want 0x%X got 0x%X %s\n", ml->what, rs_elem_name(t), (double)x,
                rs_test_f2u(x), want, got, note);
}

/* Check x against the fixture code `ref` with the documented special-value rules. */
static void check_rtn(mismatch_log *ml, rs_elem t, float x, uint32_t ref)
{
    uint32_t got = 0;
    rs_status st = enc_rtn(t, x, &got);
    uint32_t sign = signbit(x) ? 1u : 0u;
    if (t == RS_ELEM_E2M1 && !isfinite(x)) {
        if (st != RS_E_NONFINITE) report(ml, t, x, 0, got, "(want RS_E_NONFINITE)");
        return;
    }
    if (st != RS_OK) {
        report(ml, t, x, ref, got, "(status not RS_OK)");
        return;
    }
    if (t == RS_ELEM_E4M3 && isinf(x)) { /* ml_dtypes gives NaN here; we saturate */
        if (got != (0x7Eu | sign << 7)) report(ml, t, x, 0x7Eu | sign << 7, got, "(Inf -> +-448)");
        return;
    }
    if (t == RS_ELEM_E4M3 && isnan(x)) {
        if (got != (0x7Fu | sign << 7) || ref != got) report(ml, t, x, 0x7Fu | sign << 7, got, "(NaN)");
        return;
    }
    if ((t == RS_ELEM_FP16 || t == RS_ELEM_BF16) && isnan(x)) {
        /* Payloads are not specified: a quiet NaN with x's sign. */
        uint32_t expmask = t == RS_ELEM_FP16 ? 0x7C00u : 0x7F80u, mant = t == RS_ELEM_FP16 ? 0x3FFu : 0x7Fu;
        uint32_t quiet = t == RS_ELEM_FP16 ? 0x200u : 0x40u;
        if ((got & expmask) != expmask || !(got & mant) || !(got & quiet) || (got >> 15) != sign)
            report(ml, t, x, ref, got, "(want quiet NaN with sign)");
        return;
    }
    if (got != ref) report(ml, t, x, ref, got, "");
}

static const rs_elem k_types[4] = {RS_ELEM_FP16, RS_ELEM_BF16, RS_ELEM_E4M3, RS_ELEM_E2M1};

static uint32_t *fx_codes(const char *name, rs_elem t, size_t *n)
{
    if (t == RS_ELEM_FP16 || t == RS_ELEM_BF16) {
        uint16_t *c16 = fx_get(name, 2, n);
        uint32_t *c = malloc(*n * 4 + 4);
        assert_non_null(c);
        for (size_t i = 0; i < *n; ++i) c[i] = c16[i];
        free(c16);
        return c;
    }
    uint8_t *c8 = fx_get(name, 1, n);
    uint32_t *c = malloc(*n * 4 + 4);
    assert_non_null(c);
    for (size_t i = 0; i < *n; ++i) c[i] = c8[i];
    free(c8);
    return c;
}

/* The random inputs: regenerated with the script's recipe (rand_inputs()). */
static uint32_t *rand_inputs(uint64_t seed, size_t n)
{
    static const uint32_t e0[8] = {0, 0, 0, 112, 122, 99, 0, 235}, ne[8] = {0, 0, 0, 26, 10, 46, 20, 20};
    uint32_t *b = malloc(n * 4);
    assert_non_null(b);
    uint64_t s = seed;
    for (size_t i = 0; i < n; ++i) {
        uint64_t u = rs_test_splitmix64(&s);
        uint32_t lo = (uint32_t)u, hi = (uint32_t)(u >> 32);
        unsigned k = (unsigned)(i & 7);
        if (k < 3) {
            b[i] = lo;
        } else {
            uint32_t e = e0[k] + (uint32_t)((uint64_t)hi % ne[k]);
            b[i] = ((lo >> 23) & 1u) << 31 | e << 23 | (lo & 0x7FFFFFu);
        }
    }
    return b;
}

static void test_rtn_random_vs_fixtures(void **state)
{
    (void)state;
    size_t nm, ns;
    uint64_t *meta = fx_get("rand_meta", 8, &nm);
    assert_int_equal(nm, 4);
    size_t n = (size_t)meta[1], stride = (size_t)meta[3];
    assert_true(n >= 1000000); /* acceptance: at least 10^6 random floats */
    uint32_t *xb = rand_inputs(meta[0], n);
    /* Prove these are the script's inputs: checksum and every stride-th sample. */
    uint64_t h = 0;
    for (size_t i = 0; i < n; ++i) h += (uint64_t)xb[i] * (2 * (uint64_t)i + 1);
    assert_true(h == meta[2]);
    uint32_t *sample = fx_get("rand_sample", 4, &ns);
    for (size_t j = 0; j < ns; ++j) assert_int_equal(sample[j], xb[j * stride]);
    free(sample);

    long total_bad = 0;
    for (int ti = 0; ti < 4; ++ti) {
        rs_elem t = k_types[ti];
        char name[64];
        snprintf(name, sizeof name, "%s_rand_codes", rs_elem_name(t));
        size_t nc;
        uint32_t *ref = fx_codes(name, t, &nc);
        assert_int_equal(nc, n);
        mismatch_log ml = {"rtn-random", 0};
        for (size_t i = 0; i < n; ++i) check_rtn(&ml, t, rs_test_u2f(xb[i]), ref[i]);
        if (ml.n) fprintf(stderr, "%s: %ld of %zu random inputs wrong\n", rs_elem_name(t), ml.n, n);
        total_bad += ml.n;
        free(ref);
    }
    free(xb);
    free(meta);
    assert_int_equal(total_bad, 0);
}

static void test_rtn_edges_vs_fixtures(void **state)
{
    (void)state;
    long total_bad = 0;
    for (int ti = 0; ti < 4; ++ti) {
        rs_elem t = k_types[ti];
        uint32_t sbit = t == RS_ELEM_E4M3 ? 0x80u : t == RS_ELEM_E2M1 ? 0x8u : 0x8000u;
        char name[64];
        size_t ni, nc;
        snprintf(name, sizeof name, "%s_edge_in", rs_elem_name(t));
        uint32_t *in = fx_get(name, 4, &ni);
        snprintf(name, sizeof name, "%s_edge_codes", rs_elem_name(t));
        uint32_t *ref = fx_codes(name, t, &nc);
        assert_int_equal(ni, nc);
        assert_true(ni > 60);
        mismatch_log ml = {"rtn-edge", 0};
        for (size_t i = 0; i < ni; ++i) {
            float x = rs_test_u2f(in[i]);
            check_rtn(&ml, t, x, ref[i]);
            /* The script asserted the oracle is sign-symmetric on these inputs. */
            check_rtn(&ml, t, -x, ref[i] | sbit);
        }
        if (ml.n) fprintf(stderr, "%s: %ld of %zu edge inputs wrong\n", rs_elem_name(t), ml.n, 2 * ni);
        total_bad += ml.n;
        free(in);
        free(ref);
    }
    assert_int_equal(total_bad, 0);
}

/* ---- (c) special values, spelled out ---------------------------------------------- */

static float f_next(float x) { return nextafterf(x, INFINITY); }
static float f_prev(float x) { return nextafterf(x, -INFINITY); }

static void test_rtn_specials(void **state)
{
    (void)state;
    const float qnan = rs_test_u2f(0x7FC00000u), snan = rs_test_u2f(0x7F800001u), nnan = rs_test_u2f(0xFFFFFFFFu);
    /* E4M3: RNE inside, satfinite outside; 464 is the tie between 448 and (virtual) 480. */
    assert_int_equal(rs_e4m3_encode_rtn(448.0f), 0x7E);
    assert_int_equal(rs_e4m3_encode_rtn(464.0f), 0x7E);
    assert_int_equal(rs_e4m3_encode_rtn(f_next(464.0f)), 0x7E);
    assert_int_equal(rs_e4m3_encode_rtn(-1e30f), 0xFE);
    assert_int_equal(rs_e4m3_encode_rtn(3.4028235e38f), 0x7E);
    assert_int_equal(rs_e4m3_encode_rtn(INFINITY), 0x7E);
    assert_int_equal(rs_e4m3_encode_rtn(-INFINITY), 0xFE);
    assert_int_equal(rs_e4m3_encode_rtn(qnan), 0x7F);
    assert_int_equal(rs_e4m3_encode_rtn(snan), 0x7F);
    assert_int_equal(rs_e4m3_encode_rtn(nnan), 0xFF);
    assert_int_equal(rs_e4m3_encode_rtn(-0.0f), 0x80);
    assert_int_equal(rs_e4m3_encode_rtn(0x1p-10f), 0x00);          /* tie 0 | 2^-9 -> even 0 */
    assert_int_equal(rs_e4m3_encode_rtn(f_next(0x1p-10f)), 0x01);
    assert_int_equal(rs_e4m3_encode_rtn(400.0f), 0x7C);             /* 384 (RNE), not 416 */
    /* E2M1: saturate finite, reject non-finite with the code untouched. */
    const float e2m1_bad[5] = {INFINITY, -INFINITY, qnan, snan, nnan};
    for (int i = 0; i < 5; ++i) {
        uint8_t c = 0xAA;
        uint32_t c32 = 0xAAAAu;
        assert_int_equal(rs_e2m1_encode_rtn(e2m1_bad[i], &c), RS_E_NONFINITE);
        assert_int_equal(c, 0xAA);
        assert_int_equal(rs_elem_encode(RS_ELEM_E2M1, e2m1_bad[i], RS_ROUND_RTN, 0, 0, &c32), RS_E_NONFINITE);
        assert_int_equal(c32, 0xAAAAu);
    }
    uint8_t c;
    assert_int_equal(rs_e2m1_encode_rtn(5.0f, &c), RS_OK);
    assert_int_equal(c, 0x6); /* tie 4|6 -> even mantissa (4) */
    assert_int_equal(rs_e2m1_encode_rtn(f_next(5.0f), &c), RS_OK);
    assert_int_equal(c, 0x7);
    assert_int_equal(rs_e2m1_encode_rtn(1e30f, &c), RS_OK);
    assert_int_equal(c, 0x7);
    assert_int_equal(rs_e2m1_encode_rtn(-7.0f, &c), RS_OK);
    assert_int_equal(c, 0xF);
    assert_int_equal(rs_e2m1_encode_rtn(0.25f, &c), RS_OK);
    assert_int_equal(c, 0x0);
    /* FP16: overflow threshold 65520. */
    assert_int_equal(rs_fp16_encode_rtn(65504.0f), 0x7BFF);
    assert_int_equal(rs_fp16_encode_rtn(f_prev(65520.0f)), 0x7BFF);
    assert_int_equal(rs_fp16_encode_rtn(65520.0f), 0x7C00);
    assert_int_equal(rs_fp16_encode_rtn(-65520.0f), 0xFC00);
    assert_int_equal(rs_fp16_encode_rtn(INFINITY), 0x7C00);
    assert_int_equal(rs_fp16_encode_rtn(0x1p-25f), 0x0000);        /* tie 0 | 2^-24 */
    assert_int_equal(rs_fp16_encode_rtn(f_next(0x1p-25f)), 0x0001);
    assert_int_equal(rs_fp16_encode_rtn(-0.0f), 0x8000);
    /* NaNs stay NaN: a low-payload sNaN must not become Inf (payload shifted out). */
    const float nans[3] = {qnan, snan, nnan};
    for (int i = 0; i < 3; ++i) {
        uint16_t h = rs_fp16_encode_rtn(nans[i]), b = rs_bf16_encode_rtn(nans[i]);
        uint16_t s = signbit(nans[i]) ? 0x8000 : 0;
        assert_true((h & 0x7C00) == 0x7C00 && (h & 0x200) && (h & 0x8000) == s);
        assert_true((b & 0x7F80) == 0x7F80 && (b & 0x40) && (b & 0x8000) == s);
    }
    /* BF16: 0x7F7F8000 is the tie between max (odd) and Inf -> Inf. */
    assert_int_equal(rs_bf16_encode_rtn(rs_test_u2f(0x7F7F7FFFu)), 0x7F7F);
    assert_int_equal(rs_bf16_encode_rtn(rs_test_u2f(0x7F7F8000u)), 0x7F80);
    assert_int_equal(rs_bf16_encode_rtn(3.4028235e38f), 0x7F80);
    assert_int_equal(rs_bf16_encode_rtn(rs_test_u2f(0x3F808000u)), 0x3F80); /* tie to even */
    assert_int_equal(rs_bf16_encode_rtn(rs_test_u2f(0x3F818000u)), 0x3F82);
}

static void test_api_contract(void **state)
{
    (void)state;
    uint32_t c = 0x1234;
    assert_int_equal(rs_elem_encode((rs_elem)7, 1.0f, RS_ROUND_RTN, 0, 0, &c), RS_E_INVAL);
    assert_int_equal(rs_elem_encode(RS_ELEM_FP16, 1.0f, RS_ROUND_SR, 0, 0, &c), RS_E_INVAL);
    assert_int_equal(rs_elem_encode(RS_ELEM_FP16, 1.0f, RS_ROUND_SR, 0, 33, &c), RS_E_INVAL);
    assert_int_equal(rs_elem_encode(RS_ELEM_FP16, 1.0f, RS_ROUND_RTN, 0, 0, &c), RS_OK); /* k ignored */
    assert_int_equal(c, 0x3C00);
    assert_int_equal(rs_elem_bits(RS_ELEM_E4M3), 8);
    assert_int_equal(rs_elem_bits(RS_ELEM_E2M1), 4);
    assert_int_equal(rs_elem_bits(RS_ELEM_FP16), 16);
    assert_int_equal(rs_elem_bits(RS_ELEM_BF16), 16);
    assert_string_equal(rs_elem_name(RS_ELEM_E4M3), "e4m3");
    assert_string_equal(rs_elem_name(RS_ELEM_E2M1), "e2m1");
    assert_string_equal(rs_elem_name(RS_ELEM_FP16), "fp16");
    assert_string_equal(rs_elem_name(RS_ELEM_BF16), "bf16");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_e4m3_all_codes),  cmocka_unit_test(test_decode_e2m1_all_codes),
        cmocka_unit_test(test_decode_fp16_bf16_all_codes), cmocka_unit_test(test_rtn_random_vs_fixtures),
        cmocka_unit_test(test_rtn_edges_vs_fixtures),  cmocka_unit_test(test_rtn_specials),
        cmocka_unit_test(test_api_contract),
    };
    return cmocka_run_group_tests(tests, fx_open, fx_close);
}
