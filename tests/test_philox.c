/* test_philox.c — the counter-based generator behind SR.
 *
 *   - rs_philox4x32_10 matches the Random123 known-answer vectors, and a Philox written
 *     independently here (checked against the 7- and 10-round vectors) on 10^5 random
 *     counters and keys;
 *   - rs_rand_u32 follows the documented (seed, stream, i) -> (ctr, key, lane) mapping, and
 *     rs_rand_fill equals it for every alignment of the start and length;
 *   - rs_stream_id packs its fields as documented;
 *   - SR output depends only on (seed, stream, index): whole-tensor quantization (fp16,
 *     bf16, fp8+pow2, nvfp4 SR) equals element-by-element recomputation with
 *     rs_rand_u32(seed, stream, i), a prefix quantized alone gives the same bits, changing
 *     other elements changes nothing elementwise, repeat calls are identical;
 *   - decisions of different streams, seeds and neighbouring elements are uncorrelated.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_statistics_double.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"
#include "replayssm/quant/rs_qtensor.h"
#include "rs_test_util.h"

/* ---- known answers ------------------------------------------------------------------
 * Random123's `tests/kat_vectors` (https://github.com/DEShawResearch/random123), its six
 * philox4x32 lines for 7 and 10 rounds (counter and key all zeros, all ones, and the digits of
 * pi 0x243f6a88 ...), in the file's column order: rounds, CTR[4], KEY[2], EXPECTED[4]. The same
 * lines are quoted verbatim by independent ports (e.g. E. Sarmas' philox.py).
 */
typedef struct kat {
    int rounds;
    uint32_t ctr[4], key[2], out[4];
} kat;

static const kat k_kat[6] = {
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

/* Independent Philox4x32-R (Salmon et al. SC'11): R rounds, key bumped before rounds 2..R. */
static void my_philox(int rounds, const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < rounds; ++r) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p = 0xD2511F53ull * x0, q = 0xCD9E8D57ull * x2;
        uint32_t y0 = (uint32_t)(q >> 32) ^ x1 ^ k0, y1 = (uint32_t)q;
        uint32_t y2 = (uint32_t)(p >> 32) ^ x3 ^ k1, y3 = (uint32_t)p;
        x0 = y0, x1 = y1, x2 = y2, x3 = y3;
    }
    out[0] = x0, out[1] = x1, out[2] = x2, out[3] = x3;
}

static void test_known_answers(void **state)
{
    (void)state;
    for (int i = 0; i < 6; ++i) {
        uint32_t o[4];
        my_philox(k_kat[i].rounds, k_kat[i].ctr, k_kat[i].key, o);
        assert_memory_equal(o, k_kat[i].out, sizeof o); /* the test's own Philox is right */
        if (k_kat[i].rounds != 10) continue;
        memset(o, 0, sizeof o);
        rs_philox4x32_10(k_kat[i].ctr, k_kat[i].key, o);
        if (memcmp(o, k_kat[i].out, sizeof o))
            fail_msg("KAT %d: got %08x %08x %08x %08x want %08x %08x %08x %08x", i, o[0], o[1], o[2], o[3],
                     k_kat[i].out[0], k_kat[i].out[1], k_kat[i].out[2], k_kat[i].out[3]);
    }
}

static void test_random_blocks_vs_independent(void **state)
{
    (void)state;
    uint64_t s = 123;
    for (int it = 0; it < 100000; ++it) {
        uint32_t c[4], k[2], a[4], b[4];
        for (int j = 0; j < 4; ++j) c[j] = (uint32_t)rs_test_splitmix64(&s);
        k[0] = (uint32_t)rs_test_splitmix64(&s);
        k[1] = (uint32_t)rs_test_splitmix64(&s);
        rs_philox4x32_10(c, k, a);
        my_philox(10, c, k, b);
        if (memcmp(a, b, sizeof a)) fail_msg("block %d differs (ctr %08x.. key %08x %08x)", it, c[0], k[0], k[1]);
    }
}

/* ---- element keying --------------------------------------------------------------- */

/* The documented mapping, spelled out. */
static uint32_t doc_word(uint64_t seed, uint64_t stream, uint64_t i)
{
    const uint32_t ctr[4] = {(uint32_t)(i >> 2), (uint32_t)(i >> 34), (uint32_t)stream, (uint32_t)(stream >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t o[4];
    my_philox(10, ctr, key, o);
    return o[i & 3];
}

static void test_rand_u32_mapping(void **state)
{
    (void)state;
    uint64_t s = 5;
    const uint64_t fixed_i[6] = {0, 1, 3, 4, (1ull << 34) + 2, UINT64_MAX};
    for (int it = 0; it < 100000; ++it) {
        uint64_t seed = rs_test_splitmix64(&s), stream = rs_test_splitmix64(&s), i = rs_test_splitmix64(&s);
        if (it % 3 == 0) i >>= 30; /* small indices too */
        if (it < 6) i = fixed_i[it];
        uint32_t got = rs_rand_u32(seed, stream, i), want = doc_word(seed, stream, i);
        if (got != want) fail_msg("rs_rand_u32(%llx, %llx, %llx) = %08x, documented mapping gives %08x",
                                  (unsigned long long)seed, (unsigned long long)stream, (unsigned long long)i, got, want);
        /* And through the library's own block function. */
        const uint32_t ctr[4] = {(uint32_t)(i >> 2), (uint32_t)(i >> 34), (uint32_t)stream, (uint32_t)(stream >> 32)};
        const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
        uint32_t o[4];
        rs_philox4x32_10(ctr, key, o);
        assert_int_equal(o[i & 3], got);
    }
}

static void test_rand_fill_alignments(void **state)
{
    (void)state;
    const uint64_t starts[] = {0, 1, 2, 3, 4, 5, 6, 7, 1001, (1ull << 32) - 3, (1ull << 34) - 1, (1ull << 62) + 2};
    const size_t lens[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 64, 1001};
    uint32_t buf[1001 + 4];
    const uint64_t seed = 0xC0FFEE1234ull, stream = 0xABCDEF0123456789ull;
    for (size_t a = 0; a < sizeof starts / sizeof starts[0]; ++a) {
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; ++b) {
            size_t n = lens[b];
            for (size_t j = 0; j < n + 4; ++j) buf[j] = 0xA5A5A5A5u;
            rs_rand_fill(seed, stream, starts[a], n, buf);
            for (size_t j = 0; j < n; ++j)
                if (buf[j] != rs_rand_u32(seed, stream, starts[a] + j))
                    fail_msg("rs_rand_fill(i0=%llu, n=%zu)[%zu] != rs_rand_u32", (unsigned long long)starts[a], n, j);
            for (size_t j = n; j < n + 4; ++j) assert_int_equal(buf[j], 0xA5A5A5A5u); /* no overrun */
        }
    }
}

static void test_stream_id_packing(void **state)
{
    (void)state;
    /* slot 4 | layer 10 | head 12 | step 38 (most significant first). */
    assert_true(rs_stream_id(0, 0, 0, 0) == 0);
    assert_true(rs_stream_id(0, 0, 0, 5) == 5);
    assert_true(rs_stream_id(0, 0, 1, 0) == 1ull << 38);
    assert_true(rs_stream_id(0, 1, 0, 0) == 1ull << 50);
    assert_true(rs_stream_id(1, 0, 0, 0) == 1ull << 60);
    assert_true(rs_stream_id(15, 1023, 4095, (1ull << 38) - 1) == UINT64_MAX);
    /* Fields are masked to their widths. */
    assert_true(rs_stream_id(16, 1024, 4096, 1ull << 38) == 0);
    assert_true(rs_stream_id(3, 7, 100, 123456789) == (3ull << 60 | 7ull << 50 | 100ull << 38 | 123456789ull));
}

/* ---- SR depends only on (seed, stream, index) ------------------------------------- */

#define TN 2048 /* tensor elements: 16 FP8 blocks, 128 NVFP4 blocks */

static void make_tensor(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; ++i) x[i] = (float)(3.0 * rs_test_normal(&s));
}

/* Expected element code of a quantized tensor, recomputed alone from (seed, stream, i). */
static uint32_t elem_alone(const rs_format *f, const rs_qtensor *q, const float *x, size_t i, uint64_t seed,
                           uint64_t stream)
{
    uint32_t r = rs_rand_u32(seed, stream, i);
    int k = f->sr_bits;
    switch (f->kind) {
    case RS_FMT_FP16: {
        uint16_t h = 0;
        assert_int_equal(rs_fp16_encode_sr(x[i], r, k, &h), RS_OK);
        return h;
    }
    case RS_FMT_BF16: {
        uint16_t h = 0;
        assert_int_equal(rs_bf16_encode_sr(x[i], r, k, &h), RS_OK);
        return h;
    }
    case RS_FMT_FP8: {
        float scale = 1.0f / q->scale_inv[i / RS_FP8_BLOCK]; /* exact: pow2 scales */
        uint8_t c = 0;
        assert_int_equal(rs_e4m3_encode_sr(x[i] * scale, r, k, &c), RS_OK);
        return c;
    }
    case RS_FMT_NVFP4: {
        float sb = rs_e4m3_decode(q->block_scale[i / RS_NVFP4_BLOCK]);
        float sdec = q->tensor_scale_dec[i / q->tensor_extent];
        float mult = fminf(1.0f / (sb * sdec), 3.4028235e38f); /* header formula */
        uint8_t c = 0;
        assert_int_equal(rs_e2m1_encode_sr(x[i] * mult, r, k, &c), RS_OK);
        return c;
    }
    default: fail_msg("format"); return 0;
    }
}

static uint32_t elem_stored(const rs_qtensor *q, size_t i)
{
    switch (q->fmt.kind) {
    case RS_FMT_FP16:
    case RS_FMT_BF16: {
        uint16_t h;
        memcpy(&h, q->codes + 2 * i, 2);
        return h;
    }
    case RS_FMT_FP8: return q->codes[i];
    case RS_FMT_NVFP4: return (q->codes[i / 2] >> (4 * (i & 1))) & 0xF;
    default: return 0;
    }
}

static void test_sr_tensor_depends_only_on_index(void **state)
{
    (void)state;
    const char *fmts[] = {"fp16-sr", "bf16-sr", "fp16-sr13", "fp8-sr+pow2", "nvfp4-sr", "nvfp4-sr8"};
    float *x = malloc(TN * sizeof *x), *x2 = malloc(TN * sizeof *x2);
    assert_non_null(x);
    assert_non_null(x2);
    make_tensor(x, TN, 77);
    const uint64_t seed = 0x5EEDull, stream = rs_stream_id(1, 3, 17, 12345);
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; ++fi) {
        rs_format f;
        assert_int_equal(rs_format_parse(fmts[fi], &f), RS_OK);
        rs_qtensor q, q2, qp;
        assert_int_equal(rs_qtensor_alloc(&q, &f, TN, TN), RS_OK);
        assert_int_equal(rs_qtensor_alloc(&q2, &f, TN, TN), RS_OK);
        assert_int_equal(rs_quantize(&q, x, seed, stream), RS_OK);
        /* (1) every element equals its recomputation from (seed, stream, i) alone. */
        for (size_t i = 0; i < TN; ++i) {
            uint32_t want = elem_alone(&f, &q, x, i, seed, stream), got = elem_stored(&q, i);
            if (want != got) fail_msg("%s element %zu: stored 0x%X, recomputed alone 0x%X", fmts[fi], i, got, want);
        }
        /* (2) the same call again gives the same bytes. */
        assert_int_equal(rs_quantize(&q2, x, seed, stream), RS_OK);
        assert_int_equal(rs_qtensor_bytes(&q), rs_qtensor_bytes(&q2));
        size_t code_bytes = f.kind == RS_FMT_NVFP4 ? TN / 2 : f.kind == RS_FMT_FP8 ? TN : 2 * TN;
        assert_memory_equal(q.codes, q2.codes, code_bytes);
        /* (3) a prefix quantized on its own (indices 0..m-1 again) gives the same bits; for
         * nvfp4 the prefix is its own tensor, so its scales would differ: fp8/fp16/bf16 only. */
        if (f.kind != RS_FMT_NVFP4) {
            const size_t m = 512;
            assert_int_equal(rs_qtensor_alloc(&qp, &f, m, m), RS_OK);
            assert_int_equal(rs_quantize(&qp, x, seed, stream), RS_OK);
            for (size_t i = 0; i < m; ++i) assert_int_equal(elem_stored(&qp, i), elem_stored(&q, i));
            rs_qtensor_free(&qp);
        }
        /* (4) elementwise formats: changing other elements changes nothing else. */
        if (f.kind == RS_FMT_FP16 || f.kind == RS_FMT_BF16) {
            memcpy(x2, x, TN * sizeof *x);
            for (size_t i = 0; i < TN; i += 3) x2[i] = -x2[i] * 0.5f;
            assert_int_equal(rs_quantize(&q2, x2, seed, stream), RS_OK);
            for (size_t i = 0; i < TN; ++i)
                if (i % 3) assert_int_equal(elem_stored(&q2, i), elem_stored(&q, i));
        }
        /* (5) another stream changes some decisions (sanity that the stream is used). */
        assert_int_equal(rs_quantize(&q2, x, seed, stream + 1), RS_OK);
        assert_true(memcmp(q.codes, q2.codes, code_bytes) != 0);
        rs_qtensor_free(&q);
        rs_qtensor_free(&q2);
    }
    free(x);
    free(x2);
}

/* ---- decisions of different streams are uncorrelated ------------------------------ */

#define CN (1u << 18)

/* up[i] = 1 if SR of x (FP16, p = d) with word (seed, stream, i + off) rounds up. */
static void decisions(float x, uint64_t seed, uint64_t stream, uint64_t off, double *up)
{
    uint16_t a = rs_fp16_encode_rtn(x); /* x has d = 0.3 < 1/2: RTN gives the lower neighbour */
    for (uint32_t i = 0; i < CN; ++i) {
        uint16_t h = a;
        if (rs_fp16_encode_sr(x, rs_rand_u32(seed, stream, i + off), 32, &h) != RS_OK) fail_msg("fp16 sr failed");
        up[i] = h != a;
    }
}

static void test_streams_uncorrelated(void **state)
{
    (void)state;
    /* x = 1 + 0.3 ulp (FP16): P(up) = d (exact, 13-bit); d computed from the bits. */
    const float x = 1.0f + 2458 * 0x1p-23f; /* d = 2458/8192 = 0.30005 */
    double *u0 = malloc(CN * sizeof *u0), *u1 = malloc(CN * sizeof *u1);
    assert_non_null(u0);
    assert_non_null(u1);
    const uint64_t seed = 2026, st = rs_stream_id(0, 4, 9, 1000);
    decisions(x, seed, st, 0, u0);
    /* Under independence the sample correlation of two Bernoulli sequences is ~N(0, 1/N):
     * |rho| <= 5/sqrt(N) = 0.0098 fails a correct generator with probability < 1e-6. */
    const double bound = 5.0 / sqrt((double)CN);
    double mean = gsl_stats_mean(u0, 1, CN);
    assert_true(fabs(mean - 2458.0 / 8192) < 5 * sqrt(0.3 * 0.7 / CN));
    struct { uint64_t seed, stream, off; const char *what; } pairs[] = {
        {seed, st + 1, 0, "stream + 1"},
        {seed, st ^ (1ull << 63), 0, "stream top bit"},
        {seed, st ^ (1ull << 32), 0, "stream bit 32"},
        {seed, rs_stream_id(0, 4, 10, 1000), 0, "next head"},
        {seed, rs_stream_id(0, 4, 9, 1000 + (1u << 20)), 0, "step + 2^20"},
        {seed, rs_stream_id(1, 4, 9, 1000), 0, "other slot"},
        {seed + 1, st, 0, "seed + 1"},
        {seed ^ (1ull << 40), st, 0, "seed bit 40"},
        {seed, st, 1, "element i+1 (same block mostly)"},
        {seed, st, 4, "element i+4 (next block, same lane)"},
    };
    int bad = 0;
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; ++p) {
        decisions(x, pairs[p].seed, pairs[p].stream, pairs[p].off, u1);
        double rho = gsl_stats_correlation(u0, 1, u1, 1, CN);
        printf("correlation of SR decisions vs %-36s rho = %+.5f (bound %.4f)\n", pairs[p].what, rho, bound);
        if (!(fabs(rho) <= bound)) bad++;
    }
    free(u0);
    free(u1);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_random_blocks_vs_independent),
        cmocka_unit_test(test_rand_u32_mapping),
        cmocka_unit_test(test_rand_fill_alignments),
        cmocka_unit_test(test_stream_id_packing),
        cmocka_unit_test(test_sr_tensor_depends_only_on_index),
        cmocka_unit_test(test_streams_uncorrelated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
