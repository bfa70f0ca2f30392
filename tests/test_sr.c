/* test_sr.c — stochastic rounding of the scalar codecs: the k-bit rule, exact per decision.
 *
 * The rule under test (quant/rs_minifloat.h): for |x| between adjacent representable
 * magnitudes a < b, d = (|x| - a)/(b - a), R = r >> (32 - k):
 *     round away from a (to b)  <=>  floor(d 2^k) + R >= 2^k,
 * the sign of x is kept. (The header speaks of "round up" and says the k-bit scheme is
 * biased toward zero, i.e. the rule acts on magnitudes; that is what is tested here.)
 * Everything is checked against a model built in this file from the bit fields of each
 * format (a sorted table of its non-negative finite values; value index == code), never
 * against the codec's own output:
 *   - exhaustive over all 2^k values of R: #up == floor(d 2^k), so FP16 (k = 13 normal,
 *     more for subnormals), BF16 (k = 16) and E4M3 (k = 20) are exactly unbiased, and
 *     E2M1 at k = 8 shows its bias toward zero (< 2^-8 of a step; printed);
 *   - per-word prediction of the decision for random x, r and k (incl. k = 32 == k0);
 *   - outputs are always one of the two neighbours, representable inputs fixed;
 *   - Monte Carlo over the real generator (rs_rand_u32) within a binomial bound;
 *   - mean bias per binade ~ 0 and an RTN control;
 *   - NaN, Inf and overflow under SR as documented.
 * Statistics use GSL (binomial tails).
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
#include <gsl/gsl_cdf.h>

#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"
#include "rs_test_util.h"

/* ---- the model -------------------------------------------------------------------- */

typedef struct grid {
    rs_elem t;
    double *v;      /* v[c] = value of non-negative code c, c < n; v[n] = sentinel */
    uint32_t n;     /* number of finite non-negative codes (0 .. max) */
    uint32_t sign;  /* sign bit of the code */
    int sat;        /* 1: saturate at v[n-1] (E4M3, E2M1); 0: v[n] = max + ulp is Inf */
    uint32_t inf_code;
} grid;

static grid g_grid[4];

static double val_e4m3(uint32_t c) { uint32_t e = c >> 3 & 15, m = c & 7; return e ? ldexp(8 + m, (int)e - 10) : ldexp(m, -9); }
static double val_e2m1(uint32_t c) { uint32_t e = c >> 1 & 3, m = c & 1; return e ? ldexp(2 + m, (int)e - 2) : 0.5 * m; }
static double val_fp16(uint32_t c) { uint32_t e = c >> 10 & 31, m = c & 1023; return e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24); }
static double val_bf16(uint32_t c) { uint32_t e = c >> 7 & 255, m = c & 127; return e ? ldexp(128 + m, (int)e - 134) : ldexp(m, -133); }

static int setup_grids(void **state)
{
    (void)state;
    const struct { rs_elem t; uint32_t n; uint32_t sign; int sat; uint32_t inf; double (*val)(uint32_t); } spec[4] = {
        {RS_ELEM_E4M3, 0x7F, 0x80, 1, 0, val_e4m3},
        {RS_ELEM_E2M1, 8, 0x8, 1, 0, val_e2m1},
        {RS_ELEM_FP16, 0x7C00, 0x8000, 0, 0x7C00, val_fp16},
        {RS_ELEM_BF16, 0x7F80, 0x8000, 0, 0x7F80, val_bf16},
    };
    for (int i = 0; i < 4; ++i) {
        grid *g = &g_grid[spec[i].t];
        g->t = spec[i].t;
        g->n = spec[i].n;
        g->sign = spec[i].sign;
        g->sat = spec[i].sat;
        g->inf_code = spec[i].inf;
        g->v = malloc(((size_t)g->n + 1) * sizeof *g->v);
        if (!g->v) return -1;
        for (uint32_t c = 0; c < g->n; ++c) g->v[c] = spec[i].val(c);
        /* Sentinel: the grid continued one step (FP16/BF16: that step is Inf). */
        g->v[g->n] = 2 * g->v[g->n - 1] - g->v[g->n - 2];
        for (uint32_t c = 1; c <= g->n; ++c)
            if (!(g->v[c] > g->v[c - 1])) return -1;
    }
    /* Spot-check the tables against the format definitions. */
    if (g_grid[RS_ELEM_E4M3].v[0x7E] != 448 || g_grid[RS_ELEM_E2M1].v[7] != 6 ||
        g_grid[RS_ELEM_FP16].v[0x7BFF] != 65504 || g_grid[RS_ELEM_FP16].v[0x7C00] != 65536 ||
        g_grid[RS_ELEM_BF16].v[0x7F80] != ldexp(1, 128))
        return -1;
    return 0;
}

static int teardown_grids(void **state)
{
    (void)state;
    for (int i = 0; i < 4; ++i) free(g_grid[i].v);
    return 0;
}

/* Neighbours of finite x: codes ca <= cb (magnitudes, sign added) and exact d.
 * Representable |x|: ca == cb, d = 0. Saturating types past max: ca == cb == max. */
typedef struct nb {
    uint32_t ca, cb;
    double a, b, d;
} nb;

static nb neighbours(rs_elem t, float x)
{
    const grid *g = &g_grid[t];
    double ax = fabs((double)x);
    nb r;
    uint32_t s = signbit(x) ? g->sign : 0;
    if (ax >= g->v[g->n - 1] && g->sat) {
        r.ca = r.cb = (g->n - 1) | s;
        r.a = r.b = g->v[g->n - 1];
        r.d = 0;
        return r;
    }
    if (ax >= g->v[g->n]) { /* at or past max + ulp: Inf */
        r.ca = r.cb = g->inf_code | s;
        r.a = r.b = INFINITY;
        r.d = 0;
        return r;
    }
    uint32_t lo = 0, hi = g->n; /* v[lo] <= ax < v[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->v[mid] <= ax) lo = mid;
        else hi = mid;
    }
    r.a = g->v[lo];
    r.b = g->v[hi];
    r.ca = lo | s;
    if (ax == r.a) {
        r.cb = r.ca;
        r.b = r.a;
        r.d = 0;
        return r;
    }
    r.cb = (hi == g->n && !g->sat ? g->inf_code : hi) | s;
    /* ax - a is exact (Sterbenz: a <= ax < b <= 2a, or a = 0) and b - a is a power of 2. */
    r.d = (ax - r.a) / (r.b - r.a);
    return r;
}

/* floor(d 2^k), exact (d has at most 53 significant bits; ldexp is exact). */
static uint64_t floor_d2k(double d, int k) { return (uint64_t)floor(ldexp(d, k)); }

/* The codec's SR through the typed wrapper, cross-checked with rs_elem_encode. */
static uint32_t sr(rs_elem t, float x, uint32_t r, int k)
{
    uint32_t c = 0xDEADBEEFu, w;
    assert_int_equal(rs_elem_encode(t, x, RS_ROUND_SR, r, k, &c), RS_OK);
    switch (t) {
    case RS_ELEM_E4M3: {
        uint8_t b = 0xAA;
        assert_int_equal(rs_e4m3_encode_sr(x, r, k, &b), RS_OK);
        w = b;
        break;
    }
    case RS_ELEM_FP16: case RS_ELEM_BF16: {
        uint16_t h = 0xAAAA;
        assert_int_equal(t == RS_ELEM_FP16 ? rs_fp16_encode_sr(x, r, k, &h) : rs_bf16_encode_sr(x, r, k, &h), RS_OK);
        w = h;
        break;
    }
    default: {
        uint8_t b = 0xAA;
        assert_int_equal(rs_e2m1_encode_sr(x, r, k, &b), RS_OK);
        w = b;
    }
    }
    if (w != c) fail_msg("%s SR: wrapper 0x%X != rs_elem_encode 0x%X (x=%a r=%08X k=%d)", rs_elem_name(t), w, c, (double)x, r, k);
    return c;
}

/* Faster path for the big loops (typed wrapper only). */
static uint32_t sr_fast(rs_elem t, float x, uint32_t r, int k)
{
    /* k is valid in every caller: a failure is E2M1 of a non-finite x (code left at 0xAA) or a bug */
    rs_status st;
    uint8_t b = 0xAA;
    uint16_t h = 0xAAAA;
    switch (t) {
    case RS_ELEM_E4M3: st = rs_e4m3_encode_sr(x, r, k, &b); break;
    case RS_ELEM_FP16: st = rs_fp16_encode_sr(x, r, k, &h); break;
    case RS_ELEM_BF16: st = rs_bf16_encode_sr(x, r, k, &h); break;
    default: st = rs_e2m1_encode_sr(x, r, k, &b); if (st == RS_E_NONFINITE) st = RS_OK;
    }
    if (st != RS_OK) fail_msg("%s SR k=%d: %s", rs_elem_name(t), k, rs_last_error());
    return t == RS_ELEM_FP16 || t == RS_ELEM_BF16 ? h : b;
}

/* ---- 1. exhaustive over all 2^k values of the top k bits -------------------------- */

typedef struct ex_case {
    rs_elem t;
    float x;
    int k;
    int exact; /* 1: d is a multiple of 2^-k, so #up must equal d 2^k (unbiased) */
    const char *what;
} ex_case;

/* Count round-ups of x over R = 0 .. 2^k - 1 (junk in the unused low bits). Returns the
 * count; fails on any output outside {a, b}. */
static uint64_t exhaustive_count(rs_elem t, float x, int k, nb *out)
{
    nb n = neighbours(t, x);
    uint64_t up = 0, s = 0x1234567ull + (uint64_t)rs_test_f2u(x);
    uint64_t nr = 1ull << k;
    uint32_t lowmask = k == 32 ? 0 : (uint32_t)((1ull << (32 - k)) - 1);
    for (uint64_t R = 0; R < nr; ++R) {
        uint32_t junk = (uint32_t)rs_test_splitmix64(&s) & lowmask;
        uint32_t r = (k == 32 ? (uint32_t)R : (uint32_t)(R << (32 - k))) | junk;
        uint32_t c = sr_fast(t, x, r, k);
        if (c == n.cb && n.cb != n.ca) up++;
        else if (c != n.ca)
            fail_msg("%s SR(x=%a, r=%08X, k=%d) = 0x%X, not a neighbour (0x%X, 0x%X)", rs_elem_name(t), (double)x, r, k,
                     c, n.ca, n.cb);
    }
    *out = n;
    return up;
}

static void run_exhaustive(const ex_case *cs, size_t ncase)
{
    int bad = 0;
    for (size_t i = 0; i < ncase; ++i) {
        const ex_case *e = &cs[i];
        for (int sg = 0; sg < 2; ++sg) {
            float x = sg ? -e->x : e->x;
            nb n;
            uint64_t up = exhaustive_count(e->t, x, e->k, &n);
            uint64_t want = floor_d2k(n.d, e->k);
            double dk = ldexp(n.d, e->k);
            if (up != want || (e->exact && (double)up != dk)) {
                bad++;
                fprintf(stderr, "exhaustive %s %s x=%a k=%d: #up=%llu want floor(d 2^k)=%llu (d 2^k=%.17g)\n",
                        rs_elem_name(e->t), e->what, (double)x, e->k, (unsigned long long)up,
                        (unsigned long long)want, dk);
            }
        }
    }
    assert_int_equal(bad, 0);
}

static void test_exhaustive_fp16_bf16(void **state)
{
    (void)state;
    const ex_case cs[] = {
        /* FP16 normal: ulp(1) = 2^-10, float32 ulp 2^-23 -> d multiple of 2^-13. */
        {RS_ELEM_FP16, 1.0f + 0x1p-23f, 13, 1, "d=2^-13"},
        {RS_ELEM_FP16, 1.0f + 2731 * 0x1p-23f, 13, 1, "d~1/3"},
        {RS_ELEM_FP16, 1.0f + 0x1p-11f, 13, 1, "d=1/2"},
        {RS_ELEM_FP16, 1.0f + 8191 * 0x1p-23f, 13, 1, "d=1-2^-13"},
        {RS_ELEM_FP16, 0x1.fffffep0f, 13, 1, "just below 2"},
        {RS_ELEM_FP16, 0x1p-14f + 3 * 0x1p-37f, 13, 1, "min normal binade"},
        {RS_ELEM_FP16, 65504.0f + 0.5f, 13, 1, "past max (Inf w.p. d)"},
        {RS_ELEM_FP16, 65535.99609375f, 13, 1, "just below 65536"},
        {RS_ELEM_FP16, 65472.0f + 11.0f, 13, 1, "top binade"},
        /* FP16 subnormal target: ulp 2^-24; x in [2^-22, 2^-21) has float32 ulp 2^-45 -> 21 bits. */
        {RS_ELEM_FP16, 5 * 0x1p-24f + 699051 * 0x1p-45f, 21, 1, "subnormal d~1/3"},
        {RS_ELEM_FP16, 0x1p-26f, 13, 1, "below half min subnormal"},
        {RS_ELEM_FP16, 0x1p-26f + 0x1p-49f, 25, 1, "tiny, d needs 25 bits"},
        /* BF16: d = low 16 bits / 2^16. */
        {RS_ELEM_BF16, 0x1.000002p0f, 16, 1, "d=2^-16"},
        {RS_ELEM_BF16, 0x1.00aaaap0f, 16, 1, "d~1/3"},
        {RS_ELEM_BF16, 0x1.01fffep0f, 16, 1, "d=1-2^-16"},
        {RS_ELEM_BF16, 0x1.fffffep0f, 16, 1, "just below 2"},
        {RS_ELEM_BF16, 0x1p-140f + 0x1p-149f * 0x1234, 16, 1, "bf16 subnormal (float32 subnormal)"},
        {RS_ELEM_BF16, 0x1.fe2468p127f, 16, 1, "past bf16 max (Inf w.p. d)"},
        {RS_ELEM_BF16, 3.4028235e38f, 16, 1, "FLT_MAX: Inf w.p. 1-2^-16"},
        {RS_ELEM_BF16, 0x1.fcaaaap127f, 16, 1, "top binade"},
    };
    run_exhaustive(cs, sizeof cs / sizeof cs[0]);
}

static void test_exhaustive_e4m3_e2m1(void **state)
{
    (void)state;
    const ex_case cs[] = {
        /* E4M3 normal: step 2^-3 at 1, float32 ulp 2^-23 -> 20 bits. */
        {RS_ELEM_E4M3, 1.0f + 0x1p-23f, 20, 1, "d=2^-20"},
        {RS_ELEM_E4M3, 1.0f + 349525 * 0x1p-23f, 20, 1, "d~1/3"},
        {RS_ELEM_E4M3, 1.0f + 0x1p-4f, 20, 1, "d=1/2"},
        {RS_ELEM_E4M3, 0x1.fffffep0f, 20, 1, "just below 2"},
        {RS_ELEM_E4M3, 416.0f + 0x1p-15f * 349525, 20, 1, "near max"},
        {RS_ELEM_E4M3, 3 * 0x1p-9f + 0x1p-29f * 349525, 20, 1, "subnormal d~1/3"},
        {RS_ELEM_E4M3, 0x1p-12f, 20, 1, "below min subnormal"},
        /* E2M1: step 0.5 at 1 -> 22 bits for exactness. */
        {RS_ELEM_E2M1, 1.0f + 1398101 * 0x1p-23f, 22, 1, "d~1/3, k=22"},
        {RS_ELEM_E2M1, 5.4f, 22, 1, "step 2, k=22"},
        /* k = 8 (hardware FP4 SR): #up = floor(256 d) < 256 d (bias checked below). */
        {RS_ELEM_E2M1, 1.0f + 0.5f / 3, 8, 0, "d~1/3, k=8"},
        {RS_ELEM_E2M1, 5.4f, 8, 0, "d=0.7, k=8"},
        {RS_ELEM_E2M1, 0.3f, 8, 0, "subnormal d=0.6, k=8"},
        {RS_ELEM_E2M1, 3.99f, 8, 0, "just below 4, k=8"},
        {RS_ELEM_E2M1, 1.99f, 8, 0, "just below 2, k=8"},
        {RS_ELEM_E2M1, 1.0f + 0x1p-23f, 8, 0, "d=2^-22, k=8 (never up)"},
        {RS_ELEM_E2M1, 2.5f, 8, 1, "d=1/2, k=8"},
    };
    run_exhaustive(cs, sizeof cs / sizeof cs[0]);

    /* The k = 8 bias of E2M1, in steps: E_R[SR(x)] - x = (floor(256 d) - 256 d)/256 step,
     * in (-2^-8, 0]; strictly negative when 256 d is not an integer. */
    const float xs[5] = {1.0f + 0.5f / 3, 5.4f, 0.3f, 3.99f, 1.99f};
    for (int i = 0; i < 5; ++i) {
        nb n;
        uint64_t up = exhaustive_count(RS_ELEM_E2M1, xs[i], 8, &n);
        double bias = (double)up / 256 - n.d; /* in steps */
        printf("E2M1 k=8 x=%.9g: d=%.9f, #up=%llu of 256 (256d=%.4f), bias %.3e step (%.3e absolute)\n",
               (double)xs[i], n.d, (unsigned long long)up, 256 * n.d, bias, bias * (n.b - n.a));
        assert_true(bias < 0 && bias > -1.0 / 256);
    }
}

/* ---- 2. decisions of single words: the spec formula, k = 32 vs k0 ------------------ */

/* Random float32 with biased exponent in [e0, e0 + ne) (uniform bit fields). */
static float rand_f32(uint64_t *s, uint32_t e0, uint32_t ne)
{
    uint64_t u = rs_test_splitmix64(s);
    uint32_t e = e0 + (uint32_t)((u >> 32) % ne);
    return rs_test_u2f(((uint32_t)u >> 31) << 31 | e << 23 | ((uint32_t)u & 0x7FFFFFu));
}

static void test_single_word_predictions(void **state)
{
    (void)state;
    /* Exponent ranges covering subnormals, normals and overflow of each type. */
    const struct { rs_elem t; uint32_t e0, ne; } rg[4] = {
        {RS_ELEM_E4M3, 110, 30}, {RS_ELEM_E2M1, 118, 14}, {RS_ELEM_FP16, 96, 50}, {RS_ELEM_BF16, 0, 255}};
    uint64_t s = 42;
    long bad = 0;
    for (int i = 0; i < 4; ++i) {
        rs_elem t = rg[i].t;
        for (int it = 0; it < 200000; ++it) {
            float x = rand_f32(&s, rg[i].e0, rg[i].ne);
            uint32_t r = (uint32_t)rs_test_splitmix64(&s);
            int k = 1 + (int)(rs_test_splitmix64(&s) % 32);
            if (it % 4 == 0) k = 32;
            nb n = neighbours(t, x);
            uint32_t want = n.ca;
            if (n.ca != n.cb) {
                uint64_t R = k == 32 ? r : r >> (32 - k);
                if (floor_d2k(n.d, k) + R >= (1ull << k)) want = n.cb;
            }
            uint32_t got = it < 1000 ? sr(t, x, r, k) : sr_fast(t, x, r, k);
            if (got != want && bad++ < 10)
                fprintf(stderr, "%s SR x=%a r=%08X k=%d: want 0x%X got 0x%X (a=%a b=%a d=%.17g)\n", rs_elem_name(t),
                        (double)x, r, k, want, got, n.a, n.b, n.d);
        }
    }
    /* Lemma: k = 32 decides as k0 whenever d is a multiple of 2^-k0 (normal range inputs). */
    const struct { rs_elem t; int k0; uint32_t e0, ne; } lm[4] = {
        {RS_ELEM_FP16, 13, 113, 30}, {RS_ELEM_BF16, 16, 1, 254}, {RS_ELEM_E4M3, 20, 121, 8}, {RS_ELEM_E2M1, 22, 127, 2}};
    for (int i = 0; i < 4; ++i) {
        for (int it = 0; it < 100000; ++it) {
            float x = rand_f32(&s, lm[i].e0, lm[i].ne);
            nb n = neighbours(lm[i].t, x);
            assert_true(ldexp(n.d, lm[i].k0) == floor(ldexp(n.d, lm[i].k0))); /* precondition */
            uint32_t r = (uint32_t)rs_test_splitmix64(&s);
            uint32_t c32 = sr_fast(lm[i].t, x, r, 32), ck = sr_fast(lm[i].t, x, r, lm[i].k0);
            if (c32 != ck && bad++ < 20)
                fprintf(stderr, "%s lemma x=%a r=%08X: k=32 -> 0x%X, k=%d -> 0x%X\n", rs_elem_name(lm[i].t), (double)x, r,
                        c32, lm[i].k0, ck);
        }
    }
    assert_int_equal(bad, 0);
}

/* ---- 3. neighbours only; representable values fixed ------------------------------ */

static void test_fixed_points_and_neighbours(void **state)
{
    (void)state;
    uint64_t s = 7;
    long bad = 0;
    for (int ti = 0; ti < 4; ++ti) {
        const grid *g = &g_grid[ti];
        rs_elem t = g->t;
        for (uint32_t c = 0; c < g->n; ++c) {
            for (int sg = 0; sg < 2; ++sg) {
                float x = (float)(sg ? -g->v[c] : g->v[c]);
                uint32_t want = c | (sg ? g->sign : 0);
                int reps = g->n > 1000 ? 4 : 64;
                for (int j = 0; j < reps; ++j) {
                    uint32_t r = j == 0 ? 0xFFFFFFFFu : j == 1 ? 0 : (uint32_t)rs_test_splitmix64(&s);
                    int k = j < 2 ? 32 : 1 + (int)(rs_test_splitmix64(&s) % 32);
                    uint32_t got = sr_fast(t, x, r, k);
                    if (got != want && bad++ < 10)
                        fprintf(stderr, "%s SR moved representable x=%a (r=%08X k=%d): want 0x%X got 0x%X\n",
                                rs_elem_name(t), (double)x, r, k, want, got);
                }
            }
        }
        /* Random x: output decodes to a or b (checked on values, not codes). */
        const uint32_t e0[4] = {110, 118, 96, 0}, ne[4] = {30, 14, 50, 255};
        for (int it = 0; it < 200000; ++it) {
            float x = rand_f32(&s, e0[ti], ne[ti]);
            uint32_t r = (uint32_t)rs_test_splitmix64(&s);
            int k = 1 + (int)(rs_test_splitmix64(&s) % 32);
            nb n = neighbours(t, x);
            float y = rs_elem_decode(t, sr_fast(t, x, r, k));
            double ay = fabs((double)y);
            int is_b = ay == n.b || (isinf(y) && !g->sat && n.b == g->v[g->n]); /* b = max + ulp is Inf */
            if (!((ay == n.a || is_b) && !signbit(y) == !signbit(x)) && bad++ < 10)
                fprintf(stderr, "%s SR(x=%a) = %a not in {%a, %a}\n", rs_elem_name(t), (double)x, (double)y, n.a, n.b);
        }
    }
    assert_int_equal(bad, 0);
}

/* ---- 4. Monte Carlo over the real generator ------------------------------------- */

/* Two-sided binomial check. Deterministic (fixed seeds); the bound is the brief's
 * |#up - Np| <= 5 sqrt(Np(1-p)) + 1, and additionally GSL's exact two-sided tail must be
 * >= 1e-7 (both reject a correct codec with probability < 1e-6 per case). */
static int binomial_ok(uint64_t up, uint64_t n, double p, double *pval)
{
    double np_ = (double)n * p;
    double dev = fabs((double)up - np_);
    int ok = dev <= 5 * sqrt(np_ * (1 - p)) + 1;
    if (p <= 0 || p >= 1) {
        *pval = ((p <= 0 && up == 0) || (p >= 1 && up == n)) ? 1 : 0;
        return *pval == 1;
    }
    double lo = gsl_cdf_binomial_P((unsigned)up, p, (unsigned)n);
    double hi = up ? gsl_cdf_binomial_Q((unsigned)up - 1, p, (unsigned)n) : 1;
    *pval = fmin(1, 2 * fmin(lo, hi));
    return ok && *pval >= 1e-7;
}

#define MC_N (1u << 18)

static void test_monte_carlo_real_generator(void **state)
{
    (void)state;
    /* Locations per type: [a, b) intervals (magnitudes). */
    typedef struct { rs_elem t; double a, b; const char *what; } loc;
    const loc L[] = {
        {RS_ELEM_FP16, 1.0, 1.0 + 0x1p-10, "normal"},
        {RS_ELEM_FP16, 3 * 0x1p-24, 4 * 0x1p-24, "subnormal"},
        {RS_ELEM_FP16, 65472, 65504, "near max"},
        {RS_ELEM_FP16, 65504, 65536, "past max (-> Inf)"},
        {RS_ELEM_FP16, 2 - 0x1p-10, 2, "below 2^1"},
        {RS_ELEM_BF16, 1.0, 1.0 + 0x1p-7, "normal"},
        {RS_ELEM_BF16, 3 * 0x1p-133, 4 * 0x1p-133, "subnormal"},
        {RS_ELEM_BF16, 0x1.fcp127, 0x1.fep127, "near max"},
        {RS_ELEM_BF16, 0x1p64 - 0x1p56, 0x1p64, "below 2^64"},
        {RS_ELEM_E4M3, 1.0, 1.125, "normal"},
        {RS_ELEM_E4M3, 3 * 0x1p-9, 4 * 0x1p-9, "subnormal"},
        {RS_ELEM_E4M3, 416, 448, "near max"},
        {RS_ELEM_E4M3, 1.875, 2, "below 2^1"},
        {RS_ELEM_E2M1, 1.0, 1.5, "normal"},
        {RS_ELEM_E2M1, 0, 0.5, "subnormal"},
        {RS_ELEM_E2M1, 4, 6, "near max"},
        {RS_ELEM_E2M1, 3, 4, "below 2^2"},
    };
    uint32_t *r = malloc(MC_N * sizeof *r);
    assert_non_null(r);
    int bad = 0, cases = 0;
    for (size_t li = 0; li < sizeof L / sizeof L[0]; ++li) {
        const loc *l = &L[li];
        float fa = (float)l->a, fb = (float)l->b; /* fb may be 65536 (past FP16 max) */
        /* p in {0, smallest (one float32 ulp above a: 2^-k0 in the normal range), 0.3, 0.5,
         * largest (one float32 ulp below b: 1 - 2^-k0)}. */
        float xs[5] = {fa, nextafterf(fa, INFINITY), (float)(l->a + 0.3 * (l->b - l->a)),
                       (float)(l->a + 0.5 * (l->b - l->a)), nextafterf(fb, 0)};
        for (int pi = 0; pi < 5; ++pi) {
            for (int sg = 0; sg < 2; ++sg) {
                float x = sg ? -xs[pi] : xs[pi];
                nb n = neighbours(l->t, x);
                double p = n.d;
                if (pi > 0) assert_true(n.a == l->a && n.b == l->b); /* x inside [a, b) */
                uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(cases + 1), stream = (uint64_t)cases * 77 + 5;
                rs_rand_fill(seed, stream, 0, MC_N, r);
                uint64_t up = 0;
                for (uint32_t i = 0; i < MC_N; ++i) {
                    uint32_t c = sr_fast(l->t, x, r[i], RS_SR_BITS_DEFAULT);
                    if (c == n.cb && n.cb != n.ca) up++;
                    else if (c != n.ca) {
                        bad++;
                        break;
                    }
                }
                double pval;
                if (!binomial_ok(up, MC_N, p, &pval)) {
                    bad++;
                    fprintf(stderr, "MC %s %s x=%a: #up=%llu of %u, p=%.9g (Np=%.1f) p-value=%.2e\n", rs_elem_name(l->t),
                            l->what, (double)x, (unsigned long long)up, MC_N, p, MC_N * p, pval);
                }
                cases++;
            }
        }
    }
    printf("Monte Carlo: %d cases of %u draws, %d outside the binomial bound\n", cases, MC_N, bad);
    free(r);
    assert_int_equal(bad, 0);
}

/* ---- 5. mean bias per binade ------------------------------------------------------ */

#define BIAS_N 200000

static void test_mean_bias_per_binade(void **state)
{
    (void)state;
    typedef struct { rs_elem t; double lo, hi; } binade;
    const binade B[] = {
        {RS_ELEM_FP16, 1, 2}, {RS_ELEM_FP16, 0x1p-14, 0x1p-13}, {RS_ELEM_FP16, 0x1p-20, 0x1p-19}, {RS_ELEM_FP16, 0x1p14, 0x1p15},
        {RS_ELEM_BF16, 1, 2}, {RS_ELEM_BF16, 0x1p-126, 0x1p-125}, {RS_ELEM_BF16, 0x1p-131, 0x1p-130}, {RS_ELEM_BF16, 0x1p100, 0x1p101},
        {RS_ELEM_E4M3, 1, 2}, {RS_ELEM_E4M3, 0x1p-8, 0x1p-7}, {RS_ELEM_E4M3, 256, 448},
        {RS_ELEM_E2M1, 0.5, 1}, {RS_ELEM_E2M1, 1, 2}, {RS_ELEM_E2M1, 2, 4}, {RS_ELEM_E2M1, 4, 6},
    };
    /* std of (SR(x) - x)/step is <= 1/2, so |mean| <= 5 * 0.5/sqrt(N) fails a correct codec
     * with probability < 1e-6 (5 sigma). */
    const double bound = 5 * 0.5 / sqrt((double)BIAS_N);
    uint64_t s = 2024;
    int bad = 0;
    for (size_t bi = 0; bi < sizeof B / sizeof B[0]; ++bi) {
        const binade *b = &B[bi];
        uint32_t lo = rs_test_f2u((float)b->lo), hi = rs_test_f2u((float)b->hi); /* bit range [lo, hi) */
        double sum_sr = 0, sum_rtn_skew = 0, sum_sr_skew = 0;
        long nskew = 0;
        for (long i = 0; i < BIAS_N; ++i) {
            /* Uniform over the float32 values of [lo, hi) (uniform in value within a binade). */
            float x = rs_test_u2f(lo + (uint32_t)(rs_test_splitmix64(&s) % (hi - lo)));
            if (i & 1) x = -x;
            nb n = neighbours(b->t, x);
            uint32_t r = rs_rand_u32(0xB1A5ull + bi, 3, (uint64_t)i);
            double step = n.b - n.a;
            if (n.ca == n.cb) continue; /* representable: error 0 */
            double y = (double)rs_elem_decode(b->t, sr_fast(b->t, x, r, RS_SR_BITS_DEFAULT));
            double e = (y - x) / step;
            if (signbit(x)) e = -e; /* magnitudes, so both signs pool */
            sum_sr += e;
            /* Skewed control set: d < 1/2, where RTN always rounds down (mean -E[d] ~ -1/4). */
            if (n.d < 0.5) {
                uint32_t crtn;
                assert_int_equal(rs_elem_encode(b->t, x, RS_ROUND_RTN, 0, 0, &crtn), RS_OK);
                double yr = (double)rs_elem_decode(b->t, crtn);
                sum_rtn_skew += (fabs(yr) - fabs((double)x)) / step;
                sum_sr_skew += e;
                nskew++;
            }
        }
        double m = sum_sr / BIAS_N, mr = sum_rtn_skew / (double)nskew, ms = sum_sr_skew / (double)nskew;
        double bound_skew = 5 * 0.5 / sqrt((double)nskew);
        int ok = fabs(m) <= bound && fabs(ms) <= bound_skew && mr < -0.2;
        printf("bias %s [%g, %g): SR mean %+.2e (bound %.1e); skewed set n=%ld: RTN %+.3f, SR %+.2e step\n",
               rs_elem_name(b->t), b->lo, b->hi, m, bound, nskew, mr, ms);
        if (!ok) bad++;
    }
    assert_int_equal(bad, 0);
}

/* E2M1 with k = 8: the mean bias over uniform x in [1, 2), computed exactly per x (all 256
 * words), lies in (-2^-8, 0) steps and is about -2^-9 (the mean of -frac(256 d)/256). */
static void test_e2m1_k8_mean_bias(void **state)
{
    (void)state;
    uint64_t s = 99;
    double sum = 0;
    const int nx = 2000;
    for (int i = 0; i < nx; ++i) {
        float x = rs_test_u2f(0x3F800000u + (uint32_t)(rs_test_splitmix64(&s) % 0x800000u));
        nb n;
        uint64_t up = exhaustive_count(RS_ELEM_E2M1, x, 8, &n);
        assert_true(up == floor_d2k(n.d, 8));
        sum += (double)up / 256 - n.d;
    }
    double m = sum / nx;
    printf("E2M1 k=8: mean bias over %d uniform x in [1,2) = %.3e step (expected about -2^-9 = %.3e)\n", nx, m,
           -0x1p-9);
    /* frac(256 d) is ~uniform on [0,1): mean -1/512, sd of the mean (1/256)/sqrt(12 nx). */
    assert_true(fabs(m + 0x1p-9) < 5 * (1.0 / 256) / sqrt(12.0 * nx));
}

/* ---- 6. NaN, Inf, overflow under SR ---------------------------------------------- */

static void test_sr_specials(void **state)
{
    (void)state;
    const float qnan = rs_test_u2f(0x7FC00000u), snan = rs_test_u2f(0x7F800001u), nnan = rs_test_u2f(0xFFC00001u);
    const uint32_t rs[4] = {0, 0xFFFFFFFFu, 0x80000000u, 0x12345678u};
    const int ks[3] = {1, 8, 32};
    for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 3; ++j) {
            uint32_t r = rs[i];
            int k = ks[j];
            /* E4M3: saturate everything finite past 448 and +-Inf; NaN keeps its sign. */
            assert_int_equal(sr(RS_ELEM_E4M3, 448.5f, r, k), 0x7E);
            assert_int_equal(sr(RS_ELEM_E4M3, 470.0f, r, k), 0x7E);
            assert_int_equal(sr(RS_ELEM_E4M3, -1e38f, r, k), 0xFE);
            assert_int_equal(sr(RS_ELEM_E4M3, INFINITY, r, k), 0x7E);
            assert_int_equal(sr(RS_ELEM_E4M3, -INFINITY, r, k), 0xFE);
            assert_int_equal(sr(RS_ELEM_E4M3, qnan, r, k), 0x7F);
            assert_int_equal(sr(RS_ELEM_E4M3, snan, r, k), 0x7F);
            assert_int_equal(sr(RS_ELEM_E4M3, nnan, r, k), 0xFF);
            /* E2M1: saturate past 6; reject non-finite, code untouched. */
            assert_int_equal(sr(RS_ELEM_E2M1, 6.5f, r, k), 0x7);
            assert_int_equal(sr(RS_ELEM_E2M1, -1e30f, r, k), 0xF);
            const float bad[4] = {INFINITY, -INFINITY, qnan, nnan};
            for (int b = 0; b < 4; ++b) {
                uint8_t c = 0xAA;
                uint32_t c32 = 0xAAAA;
                assert_int_equal(rs_e2m1_encode_sr(bad[b], r, k, &c), RS_E_NONFINITE);
                assert_int_equal(c, 0xAA);
                assert_int_equal(rs_elem_encode(RS_ELEM_E2M1, bad[b], RS_ROUND_SR, r, k, &c32), RS_E_NONFINITE);
                assert_int_equal(c32, 0xAAAA);
            }
            /* FP16/BF16: |x| >= max + ulp is Inf; Inf stays; NaN quiet with sign. */
            assert_int_equal(sr(RS_ELEM_FP16, 65536.0f, r, k), 0x7C00);
            assert_int_equal(sr(RS_ELEM_FP16, -1e6f, r, k), 0xFC00);
            assert_int_equal(sr(RS_ELEM_FP16, INFINITY, r, k), 0x7C00);
            assert_int_equal(sr(RS_ELEM_BF16, -INFINITY, r, k), 0xFF80);
            const float nans[3] = {qnan, snan, nnan};
            for (int q = 0; q < 3; ++q) {
                uint32_t h = sr(RS_ELEM_FP16, nans[q], r, k), bb = sr(RS_ELEM_BF16, nans[q], r, k);
                uint32_t sg = signbit(nans[q]) ? 0x8000u : 0;
                if (!((h & 0x7C00) == 0x7C00 && (h & 0x200) && (h & 0x8000) == sg))
                    fail_msg("fp16 SR NaN 0x%08X r=%08X k=%d -> 0x%04X", rs_test_f2u(nans[q]), r, k, h);
                if (!((bb & 0x7F80) == 0x7F80 && (bb & 0x40) && (bb & 0x8000) == sg))
                    fail_msg("bf16 SR NaN 0x%08X r=%08X k=%d -> 0x%04X", rs_test_f2u(nans[q]), r, k, bb);
            }
        }
    }
    /* FP16 past max: Inf with probability exactly d = (x - 65504)/32 (exhaustive, k = 13). */
    for (int j = 1; j < 8192; j += 819) {
        float x = 65504.0f + (float)j / 256.0f;
        nb n;
        uint64_t up = exhaustive_count(RS_ELEM_FP16, x, 13, &n);
        assert_int_equal(n.cb, 0x7C00);
        assert_int_equal(up, (uint64_t)j);
    }
}

/* k outside [1, 32] is RS_E_INVAL from every SR wrapper, with the code untouched and a
 * message naming k (a NaN code for it could be mistaken for data). */
static void test_sr_wrappers_bad_k(void **state)
{
    (void)state;
    static const int bad_k[] = {-1, 0, 33, 64, -2147483647 - 1};
    static const float xs[] = {1.0f, 0.3f, -2.5f, INFINITY, NAN};
    char want[64];
    for (size_t i = 0; i < sizeof bad_k / sizeof bad_k[0]; ++i) {
        const int k = bad_k[i];
        snprintf(want, sizeof want, "k=%d outside 1..32", k);
        for (size_t j = 0; j < sizeof xs / sizeof xs[0]; ++j) {
            uint8_t c8 = 0xAA;
            uint16_t c16 = 0xAAAA;
            rs_error_clear();
            assert_int_equal(rs_e4m3_encode_sr(xs[j], 0x12345678u, k, &c8), RS_E_INVAL);
            assert_int_equal(c8, 0xAA);
            assert_non_null(strstr(rs_last_error(), "rs_e4m3_encode_sr"));
            assert_non_null(strstr(rs_last_error(), want));
            rs_error_clear();
            assert_int_equal(rs_fp16_encode_sr(xs[j], 0x12345678u, k, &c16), RS_E_INVAL);
            assert_int_equal(c16, 0xAAAA);
            assert_non_null(strstr(rs_last_error(), want));
            rs_error_clear();
            assert_int_equal(rs_bf16_encode_sr(xs[j], 0x12345678u, k, &c16), RS_E_INVAL);
            assert_int_equal(c16, 0xAAAA);
            assert_non_null(strstr(rs_last_error(), want));
            assert_int_equal(rs_e2m1_encode_sr(xs[j], 0x12345678u, k, &c8), RS_E_INVAL);
            assert_int_equal(c8, 0xAA);
            /* NULL code is allowed (the status alone) */
            assert_int_equal(rs_fp16_encode_sr(xs[j], 0, k, NULL), RS_E_INVAL);
        }
    }
    /* the edges 1 and 32 are valid */
    uint8_t c8 = 0;
    uint16_t c16 = 0;
    assert_int_equal(rs_e4m3_encode_sr(1.0f, 0, 1, &c8), RS_OK);
    assert_int_equal(c8, 0x38);
    assert_int_equal(rs_fp16_encode_sr(1.0f, 0, 32, &c16), RS_OK);
    assert_int_equal(c16, 0x3C00);
    assert_int_equal(rs_bf16_encode_sr(1.0f, 0xFFFFFFFFu, 1, &c16), RS_OK);
    assert_int_equal(c16, 0x3F80);
    assert_int_equal(rs_fp16_encode_sr(1.0f, 0, 16, NULL), RS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sr_wrappers_bad_k),
        cmocka_unit_test(test_exhaustive_fp16_bf16),
        cmocka_unit_test(test_exhaustive_e4m3_e2m1),
        cmocka_unit_test(test_single_word_predictions),
        cmocka_unit_test(test_fixed_points_and_neighbours),
        cmocka_unit_test(test_monte_carlo_real_generator),
        cmocka_unit_test(test_mean_bias_per_binade),
        cmocka_unit_test(test_e2m1_k8_mean_bias),
        cmocka_unit_test(test_sr_specials),
    };
    return cmocka_run_group_tests(tests, setup_grids, teardown_grids);
}
