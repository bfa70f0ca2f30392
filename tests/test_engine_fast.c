/* test_engine_fast.c — the speed-ups of the engine steps and of the CPU attention keep every
 * bit. References are the straightforward loops the code had before (one sequential dot per
 * row, element-by-element updates, one (query, head) row at a time over the whole KV cache),
 * written out here; the fast code must equal them bitwise (memcmp), for odd sizes, every
 * block size of the attention (scratch rows 1..16), thread counts 1..3 and chunk splits. The
 * attention checked is the fp32 kernel (RS_CPU_ATTN=fp32, the yardstick; the default sums in
 * double, tests/test_layers.c checks it against float64). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/rs_backend.h"
#include "model/rs_layers.h"
#include "replayssm/engine/rs_ssm.h"
#include "rs_test_util.h"

static void fill_(float *x, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(2.0 * rs_test_uniform(s) - 1.0);
}

static float dot_ref_(const float *a, const float *b, size_t n)
{
    float acc = 0.0f;
    for (size_t c = 0; c < n; c++) acc += a[c] * b[c];
    return acc;
}

static void gdn_ref_(float *S, size_t d_v, size_t d_k, float alpha, float beta, const float *v,
                     const float *k, const float *q, float *u, float *o)
{
    for (size_t r = 0; r < d_v; r++) {
        float *row = S + r * d_k;
        const float w = dot_ref_(row, k, d_k);
        const float ur = beta * (v[r] - alpha * w);
        u[r] = ur;
        for (size_t c = 0; c < d_k; c++) row[c] = alpha * row[c] + ur * k[c];
        if (o) o[r] = dot_ref_(row, q, d_k);
    }
}

static void mamba_ref_(float *S, size_t d_v, size_t d_k, float alpha, const float *v,
                       const float *k, const float *q, float *o)
{
    for (size_t r = 0; r < d_v; r++) {
        float *row = S + r * d_k;
        for (size_t c = 0; c < d_k; c++) row[c] = alpha * row[c] + v[r] * k[c];
        if (o) o[r] = dot_ref_(row, q, d_k);
    }
}

/* 40 steps of both recurrences on odd and realistic shapes: states, u and o bitwise equal */
static void test_ssm_steps_bitwise(void **state)
{
    (void)state;
    static const size_t shapes[][2] = {{128, 128}, {64, 128}, {13, 37}, {8, 8}, {7, 5}, {1, 3}};
    uint64_t s = 0xE9u;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const size_t dv = shapes[i][0], dk = shapes[i][1];
        float *S1 = malloc(dv * dk * sizeof(float)), *S2 = malloc(dv * dk * sizeof(float));
        float *v = malloc(dv * sizeof(float)), *k = malloc(dk * sizeof(float)), *q = malloc(dk * sizeof(float));
        float *u1 = malloc(dv * sizeof(float)), *u2 = malloc(dv * sizeof(float));
        float *o1 = malloc(dv * sizeof(float)), *o2 = malloc(dv * sizeof(float));
        assert_non_null(S1 && S2 && v && k && q && u1 && u2 && o1 && o2);
        for (int kind = 0; kind < 2; kind++) {
            fill_(S1, dv * dk, &s);
            memcpy(S2, S1, dv * dk * sizeof(float));
            for (int step = 0; step < 40; step++) {
                fill_(v, dv, &s);
                fill_(k, dk, &s);
                fill_(q, dk, &s);
                const float alpha = (float)rs_test_uniform(&s), beta = (float)rs_test_uniform(&s);
                float *o = step % 5 == 4 ? NULL : o1; /* the o == NULL path too */
                if (kind == 0) {
                    rs_ssm_gdn_step(S1, dv, dk, alpha, beta, v, k, q, u1, o);
                    gdn_ref_(S2, dv, dk, alpha, beta, v, k, q, u2, o ? o2 : NULL);
                    assert_memory_equal(u1, u2, dv * sizeof(float));
                } else {
                    rs_ssm_mamba2_step(S1, dv, dk, alpha, v, k, q, o);
                    mamba_ref_(S2, dv, dk, alpha, v, k, q, o ? o2 : NULL);
                }
                assert_memory_equal(S1, S2, dv * dk * sizeof(float));
                if (o) assert_memory_equal(o1, o2, dv * sizeof(float));
            }
            rs_ssm_output(S1, dv, dk, q, o1);
            for (size_t r = 0; r < dv; r++) o2[r] = dot_ref_(S2 + r * dk, q, dk);
            assert_memory_equal(o1, o2, dv * sizeof(float));
        }
        free(S1), free(S2), free(v), free(k), free(q), free(u1), free(u2), free(o1), free(o2);
    }
}

static void test_first_nonfinite(void **state)
{
    (void)state;
    float x[300];
    for (size_t i = 0; i < 300; i++) x[i] = (float)i - 150.0f;
    assert_int_equal(rs_ssm_first_nonfinite(x, 300), 300);
    const float bad[] = {INFINITY, -INFINITY, NAN};
    for (size_t b = 0; b < 3; b++)
        for (size_t p = 0; p < 300; p += 7) {
            const float keep = x[p];
            x[p] = bad[b];
            assert_int_equal(rs_ssm_first_nonfinite(x, 300), p);
            assert_int_equal(rs_ssm_first_nonfinite(x, p), p); /* not in range: none */
            x[p] = keep;
        }
    x[299] = NAN;
    x[70] = INFINITY;
    assert_int_equal(rs_ssm_first_nonfinite(x, 300), 70);
}

/* the pre-blocking attention: one (t, h) row at a time, dot8_-style scores */
static float dot8_ref_(const float *a, const float *b, size_t n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void attn_ref_(const rs_attn_args *a, float *srow)
{
    const size_t rep = a->H / a->Hkv, hd = a->hd;
    for (size_t t = 0; t < a->T; t++)
        for (size_t h = 0; h < a->H; h++) {
            const size_t g = h / rep, n = a->n_past + t + 1;
            const float *q = a->Q + t * a->ldq + h * a->q_hstride;
            const float *Kh = a->Kc + g * a->cap * hd, *Vh = a->Vc + g * a->cap * hd;
            float *o = a->O + t * a->ldo + h * hd;
            for (size_t j = 0; j < n; j++) srow[j] = dot8_ref_(q, Kh + j * hd, hd) * a->scale;
            rs_softmax_inplace(srow, n);
            for (size_t d = 0; d < hd; d++) o[d] = 0.0f;
            for (size_t j = 0; j < n; j++)
                for (size_t d = 0; d < hd; d++) o[d] += srow[j] * Vh[j * hd + d];
        }
}

static void test_attention_bitwise(void **state)
{
    (void)state;
    /* (H, Hkv, hd, cap, n_past, T): GQA groups, hd not a multiple of 4 / 8 / 32, decode T = 1 */
    static const size_t cases[][6] = {{4, 2, 64, 300, 200, 64}, {4, 2, 64, 300, 0, 70},  {8, 2, 128, 160, 30, 9},
                                      {4, 4, 36, 90, 50, 1},    {6, 3, 100, 70, 11, 13}, {2, 1, 7, 40, 3, 20},
                                      {4, 2, 64, 1100, 1000, 1}};
    uint64_t s = 0xA77u;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t H = cases[c][0], Hkv = cases[c][1], hd = cases[c][2], cap = cases[c][3];
        const size_t n_past = cases[c][4], T = cases[c][5], qh = 2 * hd; /* gate half between heads */
        float *Q = malloc(T * H * qh * sizeof(float)), *Kc = malloc(Hkv * cap * hd * sizeof(float));
        float *Vc = malloc(Hkv * cap * hd * sizeof(float)), *O = malloc(T * H * hd * sizeof(float));
        float *Oref = malloc(T * H * hd * sizeof(float)), *srow = malloc(cap * sizeof(float));
        float *scratch = malloc(3 * 16 * cap * sizeof(float));
        assert_non_null(Q && Kc && Vc && O && Oref && srow && scratch);
        fill_(Q, T * H * qh, &s);
        fill_(Kc, Hkv * cap * hd, &s);
        fill_(Vc, Hkv * cap * hd, &s);
        for (size_t i = 0; i < T * H * qh; i++) Q[i] *= 3.0f; /* peaked softmax rows too */
        rs_attn_args a = {T, n_past, H, Hkv, hd, Q, H * qh, qh, Kc, Vc, cap, 1.0f / sqrtf((float)hd), Oref, H * hd,
                          scratch, 16};
        attn_ref_(&a, srow);
        for (int nt = 1; nt <= 3; nt++) {
            rs_backend *be = NULL;
            assert_int_equal(setenv("RS_CPU_ATTN", "fp32", 1), 0);
            assert_int_equal(rs_backend_cpu_create(nt, &be), RS_OK);
            unsetenv("RS_CPU_ATTN");
            for (size_t rows = 0; rows <= 16; rows += (rows < 4 ? 1 : 6)) {
                a.scratch_rows = rows;
                a.O = O;
                memset(O, 0xFF, T * H * hd * sizeof(float));
                /* the chunk in pieces of 1, 5 and the rest: same rows, other block splits */
                size_t t0 = 0;
                const size_t pieces[] = {1, 5, T};
                for (size_t p = 0; p < 3 && t0 < T; p++) {
                    const size_t len = pieces[p] < T - t0 ? pieces[p] : T - t0;
                    rs_attn_args b = a;
                    b.T = len;
                    b.n_past = n_past + t0;
                    b.Q = Q + t0 * H * qh;
                    b.O = O + t0 * H * hd;
                    assert_int_equal(be->ops->attention(be, &b), RS_OK);
                    t0 += len;
                }
                if (memcmp(O, Oref, T * H * hd * sizeof(float)) != 0)
                    fail_msg("case %zu, %d threads, %zu scratch rows: output differs from the reference", c, nt,
                             rows);
            }
            rs_backend_destroy(be);
        }
        free(Q), free(Kc), free(Vc), free(O), free(Oref), free(srow), free(scratch);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ssm_steps_bitwise),
        cmocka_unit_test(test_first_nonfinite),
        cmocka_unit_test(test_attention_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
