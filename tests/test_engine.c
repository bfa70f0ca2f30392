/* test_engine.c — fast checks of the state engine (lib/engine/rs_gamma, rs_ring, rs_replay,
 * rs_head): the replay operators agree (OUTPUTONLY == materialised REPLAY then S q; GDN UT solve ==
 * sequential GDN on the drafts), the gamma convention, the ring canaries, the L = 1 bit
 * identity with the conventional step, SR stream keying, non-finite reporting, API errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rs_gamma.h"
#include "replayssm/engine/rs_head.h"
#include "engine/rs_replay.h" /* private (engine/): the operators are tested directly */
#include "engine/rs_ring.h"   /* private (engine/) */
#include "rs_test_ssm.h"

static rs_head_config cfg_(rs_ssm_kind kind, size_t d_v, size_t d_k, const char *pol,
                           size_t L, size_t T)
{
    rs_head_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.d_v = d_v;
    c.d_k = d_k;
    assert_int_equal(rs_policy_parse(pol, &c.policy), RS_OK);
    c.window = L;
    c.max_drafts = T;
    c.seed = 1234;
    c.layer = 3;
    c.head = 7;
    return c;
}

/* ---- gamma ---------------------------------------------------------------------------- */

static void test_gamma_suffix(void **st)
{
    (void)st;
    float a[9] = {0.5f, 0.9f, 0.99f, 0.9999f, 0.7f, 1.0f, 0.3f, 0.999f, 0.95f};
    float g[10];
    rs_gamma_suffix(a, 9, g);
    assert_true(g[9] == 1.0f);
    for (size_t j = 0; j < 9; j++) {
        double p = 1;
        for (size_t i = j; i < 9; i++) p *= a[i];
        /* (9-j-1) fp32 roundings of relative size <= 2^-24 each */
        assert_true(fabs(g[j] - p) <= 9 * ldexp(1.0, -24) * p);
    }
    rs_gamma_suffix(a, 1, g); /* one record: gamma is alpha exactly */
    assert_true(g[0] == a[0] && g[1] == 1.0f);
    float tiny[8];
    for (int i = 0; i < 8; i++) tiny[i] = 1e-5f; /* fast head: suffix products, no ratios */
    rs_gamma_suffix(tiny, 8, g);
    assert_true(g[7] == 1e-5f && g[3] > 0.0f && g[4] > 0.0f);
}

/* ---- ring canaries -------------------------------------------------------------------- */

static void test_ring_canary(void **st)
{
    (void)st;
    rs_ring r;
    const size_t d_v = 4, d_k = 8;
    float v[4] = {1, 2, 3, 4}, k[8] = {1, 0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(rs_ring_init(&r, 6, d_v, d_k, 1), RS_OK);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rs_ring_put(&r, i, 100 + i, 0.9f, 0.5f, v, k), RS_OK);
        memset(rs_ring_u(&r, i), 0, d_v * sizeof(float));
        rs_ring_seal(&r, i);
    }
    rs_ring_set_pending(&r, 3);
    assert_int_equal(rs_ring_commit(&r, 3), RS_OK);
    assert_int_equal(rs_ring_check(&r, 100), RS_OK);
    assert_int_equal(rs_ring_put(&r, 1, 999, 0.9f, 0.5f, v, k), RS_E_STATE); /* committed */
    assert_non_null(strstr(rs_last_error(), "overwrite a committed record"));
    rs_ring_drop(&r, 2); /* fold two: origin rotates to slot 2, h = 1 */
    assert_int_equal(r.h, 1);
    assert_int_equal(rs_ring_check(&r, 102), RS_OK);
    for (size_t i = 1; i < 6; i++) { /* fill to capacity, wrapping around the end */
        assert_int_equal(rs_ring_put(&r, i, 102 + i, 0.8f, 0.5f, v, k), RS_OK);
        rs_ring_seal(&r, i);
    }
    rs_ring_set_pending(&r, 5);
    assert_int_equal(rs_ring_check(&r, 102), RS_OK);
    assert_int_equal(rs_ring_put(&r, 6, 108, 0.8f, 0.5f, v, k), RS_E_STATE); /* beyond cap */
    assert_int_equal(rs_ring_commit(&r, 2), RS_OK); /* three drafts rejected and freed */
    assert_int_equal(r.h, 3);
    assert_true(isnan(rs_ring_v(&r, 3)[0])); /* freed slots are poisoned */
    /* a wrong origin (the bug class the canary exists for) hits a live slot: refused */
    r.start = (r.start + 4) % r.cap;
    assert_int_equal(rs_ring_put(&r, 3, 105, 0.8f, 0.5f, v, k), RS_E_STATE);
    assert_non_null(strstr(rs_last_error(), "canary"));
    r.start = (r.start + 2) % r.cap;
    assert_int_equal(rs_ring_check(&r, 102), RS_OK);
    rs_ring_v(&r, 1)[2] += 1.0f; /* silent modification of a committed record */
    assert_int_equal(rs_ring_check(&r, 102), RS_E_STATE);
    assert_non_null(strstr(rs_last_error(), "modified"));
    rs_ring_free(&r);
}

/* ---- L = 1 identity ------------------------------------------------------------------- */

/* ReplaySSM fp32 with L = 1 folds every step: gamma = alpha, coefficient 1 * v, so it must
 * be the conventional Mamba-2 step bit for bit (the gamma convention's promise). */
static void test_window1_bit_identical(void **st)
{
    (void)st;
    const size_t d_v = 80, d_k = 128, N = 1500;
    rs_head a, b;
    rs_head_config ca = cfg_(RS_SSM_MAMBA2, d_v, d_k, "fp32", 1, 1);
    rs_head_config cb = cfg_(RS_SSM_MAMBA2, d_v, d_k, "shared:fp32", 1, 1);
    assert_int_equal(rs_head_init(&a, &ca), RS_OK);
    assert_int_equal(rs_head_init(&b, &cb), RS_OK);
    rs_tgen g = {RS_SSM_MAMBA2, d_v, d_k, 0.99, 42};
    rs_ttok t;
    rs_ttok_alloc(&t, d_v, d_k);
    float oa[80], ob[80];
    float *Sa = malloc(d_v * d_k * 4), *Sb = malloc(d_v * d_k * 4);
    for (size_t i = 0; i < N; i++) {
        rs_tgen_next(&g, &t);
        rs_ssm_token x = rs_ttok_view(&t);
        assert_int_equal(rs_head_decode(&a, &x, oa), RS_OK);
        assert_int_equal(rs_head_decode(&b, &x, ob), RS_OK);
        assert_memory_equal(oa, ob, sizeof oa);
    }
    assert_int_equal(rs_head_state(&a, Sa), RS_OK);
    assert_int_equal(rs_head_state(&b, Sb), RS_OK);
    assert_memory_equal(Sa, Sb, d_v * d_k * 4);
    uint64_t folded;
    assert_int_equal(rs_head_checkpoint(&b, 0, Sb, &folded), RS_OK);
    assert_int_equal(folded, N);
    assert_memory_equal(Sa, Sb, d_v * d_k * 4);
    free(Sa);
    free(Sb);
    rs_ttok_free(&t);
    rs_head_free(&a);
    rs_head_free(&b);
}

/* ---- item 3: OUTPUTONLY == REPLAY then S q -------------------------------------------- */

static void fill_normal_(float *x, size_t n, double scale, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * rs_test_normal(rng));
}

static void outputonly_case_(rs_ssm_kind kind, size_t d_v, size_t h, size_t T, uint64_t seed)
{
    const size_t d_k = 128, n = d_v * d_k;
    uint64_t rng = seed;
    rs_ring r;
    rs_replay_ws ws;
    assert_int_equal(rs_ring_init(&r, h + T, d_v, d_k, kind == RS_SSM_GDN), RS_OK);
    assert_int_equal(rs_replay_ws_init(&ws, h + T, T, d_v), RS_OK);
    rs_tgen g = {kind, d_v, d_k, 0.9, seed};
    rs_ttok t;
    rs_ttok_alloc(&t, d_v, d_k);
    float *Q = malloc(T * d_k * 4), *O = malloc(T * d_v * 4), *ckpt = malloc(n * 4),
          *S = malloc(n * 4), *o = malloc(d_v * 4);
    fill_normal_(ckpt, n, 0.3, &rng); /* any checkpoint: the identity is algebraic */
    for (size_t i = 0; i < h + T; i++) {
        rs_tgen_next(&g, &t);
        assert_int_equal(rs_ring_put(&r, i, i, t.alpha, t.beta, t.v, t.k), RS_OK);
        if (kind == RS_SSM_GDN) fill_normal_(rs_ring_u(&r, i), d_v, 0.5, &rng);
        if (i >= h) memcpy(Q + (i - h) * d_k, t.q, d_k * 4);
    }
    rs_replay_outputonly(ckpt, &r, h, T, Q, O, &ws);
    double worst = 0;
    for (size_t s = 0; s < T; s++) {
        memcpy(S, ckpt, n * 4);
        rs_replay_materialise(S, &r, h + s + 1, &ws);
        rs_ssm_output(S, d_v, d_k, Q + s * d_k, o);
        const double e = rs_trel_ff(O + s * d_v, o, d_v);
        if (e > worst) worst = e;
    }
    /* Both fp32, different association (coefficient*dot vs row sums): a few ulp of the
     * terms; 1e-5 norm-wise leaves room for cancellation in a 128-term dot product. */
    if (worst > 1e-5) {
        print_error("%s d_v %zu h %zu T %zu: OUTPUTONLY vs REPLAY+Sq rel %.3g\n",
                    rs_ssm_kind_name(kind), d_v, h, T, worst);
        fail();
    }
    free(Q);
    free(O);
    free(ckpt);
    free(S);
    free(o);
    rs_ttok_free(&t);
    rs_ring_free(&r);
    rs_replay_ws_free(&ws);
}

static void test_outputonly_equals_replay(void **st)
{
    (void)st;
    const size_t hs[] = {0, 1, 7, 16, 64};
    const size_t Ts[] = {1, 4, 8};
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 3; j++) {
            outputonly_case_(RS_SSM_MAMBA2, 64, hs[i], Ts[j], 11 + i * 3 + j);
            outputonly_case_(RS_SSM_GDN, 128, hs[i], Ts[j], 101 + i * 3 + j);
        }
}

/* ---- item 3: GDN UT solve == sequential GDN ------------------------------------------- */

static void ut_case_(size_t h, size_t T, uint64_t seed, double *worst_u, double *worst_o)
{
    const size_t d_v = 128, d_k = 128, n = d_v * d_k;
    rs_ring r;
    rs_replay_ws ws;
    assert_int_equal(rs_ring_init(&r, h + T, d_v, d_k, 1), RS_OK);
    assert_int_equal(rs_replay_ws_init(&ws, h + T, T, d_v), RS_OK);
    rs_tgen g = {RS_SSM_GDN, d_v, d_k, 0.95, seed};
    rs_ttok t;
    rs_ttok_alloc(&t, d_v, d_k);
    float *ckpt = malloc(n * 4), *Q = malloc(T * d_k * 4), *O = malloc(T * d_v * 4);
    double *Sd = malloc(n * 8), *od = malloc(d_v * 8), *ud = malloc(d_v * 8);
    /* a realistic checkpoint: 300 GDN steps of the float64 reference from zero */
    memset(Sd, 0, n * 8);
    for (int i = 0; i < 300; i++) {
        rs_tgen_next(&g, &t);
        rs_tref_step(RS_SSM_GDN, Sd, d_v, d_k, &t, NULL);
    }
    for (size_t i = 0; i < n; i++) ckpt[i] = (float)Sd[i];
    for (size_t i = 0; i < n; i++) Sd[i] = ckpt[i];
    /* history: cached u from the sequential float64 recurrence; drafts: raw inputs only */
    double worst_u_ = 0, worst_o_ = 0;
    float *u_ref = malloc(T * d_v * 4);
    double *o_ref = malloc(T * d_v * 8), *u_refd = malloc(T * d_v * 8);
    for (size_t i = 0; i < h + T; i++) {
        rs_tgen_next(&g, &t);
        assert_int_equal(rs_ring_put(&r, i, i, t.alpha, t.beta, t.v, t.k), RS_OK);
        /* sequential float64 step computing u_i and o_i */
        for (size_t rr = 0; rr < d_v; rr++) {
            double w = 0;
            for (size_t c = 0; c < d_k; c++) w += Sd[rr * d_k + c] * t.k[c];
            ud[rr] = (double)t.beta * ((double)t.v[rr] - (double)t.alpha * w);
        }
        rs_tref_step(RS_SSM_GDN, Sd, d_v, d_k, &t, od);
        if (i < h) {
            for (size_t rr = 0; rr < d_v; rr++) rs_ring_u(&r, i)[rr] = (float)ud[rr];
        } else {
            memcpy(Q + (i - h) * d_k, t.q, d_k * 4);
            memcpy(o_ref + (i - h) * d_v, od, d_v * 8);
            memcpy(u_refd + (i - h) * d_v, ud, d_v * 8);
        }
    }
    rs_replay_gdn_solve(ckpt, &r, h, T, &ws);
    rs_replay_outputonly(ckpt, &r, h, T, Q, O, &ws);
    for (size_t s = 0; s < T; s++) {
        const double eu = rs_trel_f(rs_ring_u(&r, h + s), u_refd + s * d_v, d_v);
        const double eo = rs_trel_f(O + s * d_v, o_ref + s * d_v, d_v);
        if (eu > worst_u_) worst_u_ = eu;
        if (eo > worst_o_) worst_o_ = eo;
    }
    *worst_u = fmax(*worst_u, worst_u_);
    *worst_o = fmax(*worst_o, worst_o_);
    free(u_ref);
    free(o_ref);
    free(u_refd);
    free(ckpt);
    free(Q);
    free(O);
    free(Sd);
    free(od);
    free(ud);
    rs_ttok_free(&t);
    rs_ring_free(&r);
    rs_replay_ws_free(&ws);
}

static void test_gdn_ut_equals_sequential(void **st)
{
    (void)st;
    double wu = 0, wo = 0;
    const size_t hs[] = {0, 3, 16, 63};
    for (size_t i = 0; i < 4; i++)
        for (size_t T = 1; T <= 8; T++) ut_case_(hs[i], T, 7 + 10 * i + T, &wu, &wo);
    print_message("GDN UT solve vs sequential float64 GDN: max rel u %.3g, o %.3g\n", wu, wo);
    /* the history u are rounded to fp32 and every sum runs in fp32: errors of a few 1e-7;
     * 1e-5 catches any algebra error (a wrong gamma or mask index is O(1e-2) or worse). */
    assert_true(wu < 1e-5);
    assert_true(wo < 1e-5);
}

/* ---- SR stream keys ------------------------------------------------------------------- */

static void run_sr_(rs_head *hd, uint64_t gseed, size_t N, float *out)
{
    rs_tgen g = {RS_SSM_MAMBA2, 64, 128, 0.999, gseed};
    rs_ttok t;
    rs_ttok_alloc(&t, 64, 128);
    for (size_t i = 0; i < N; i++) {
        rs_tgen_next(&g, &t);
        rs_ssm_token x = rs_ttok_view(&t);
        assert_int_equal(rs_head_decode(hd, &x, out + i * 64), RS_OK);
    }
    rs_ttok_free(&t);
}

static void test_sr_streams(void **st)
{
    (void)st;
    const size_t N = 200;
    float *o1 = malloc(N * 64 * 4), *o2 = malloc(N * 64 * 4), *o3 = malloc(N * 64 * 4);
    const char *pols[] = {"conv:fp16-sr", "shared:fp8-sr", "split:nvfp4-sr/fp16-sr"};
    for (int p = 0; p < 3; p++) {
        rs_head a, b, c;
        rs_head_config ca = cfg_(RS_SSM_MAMBA2, 64, 128, pols[p], 8, 2);
        rs_head_config cc = ca;
        cc.head = 8; /* another head: another stream */
        assert_int_equal(rs_head_init(&a, &ca), RS_OK);
        assert_int_equal(rs_head_init(&b, &ca), RS_OK);
        assert_int_equal(rs_head_init(&c, &cc), RS_OK);
        run_sr_(&a, 5, N, o1);
        run_sr_(&c, 5, N, o3); /* interleaving other heads' work changes nothing */
        run_sr_(&b, 5, N, o2);
        assert_memory_equal(o1, o2, N * 64 * 4);
        assert_true(memcmp(o1, o3, N * 64 * 4) != 0);
        rs_head_free(&a);
        rs_head_free(&b);
        rs_head_free(&c);
    }
    free(o1);
    free(o2);
    free(o3);
}

/* ---- non-finite reporting ------------------------------------------------------------- */

static void test_nonfinite(void **st)
{
    (void)st;
    const size_t d_v = 64, d_k = 128;
    const char *pols[] = {"conv:fp16-rtn", "shared:fp16-rtn", "split:nvfp4-rtn/fp16-rtn"};
    for (int p = 0; p < 3; p++) {
        rs_head hd;
        rs_head_config c = cfg_(RS_SSM_MAMBA2, d_v, d_k, pols[p], 4, 1);
        assert_int_equal(rs_head_init(&hd, &c), RS_OK);
        rs_tgen g = {RS_SSM_MAMBA2, d_v, d_k, 0.9999, 9};
        rs_ttok t;
        rs_ttok_alloc(&t, d_v, d_k);
        float o[64];
        rs_status stt = RS_OK;
        size_t i;
        for (i = 0; i < 1000 && stt == RS_OK; i++) {
            rs_tgen_next(&g, &t);
            for (size_t r = 0; r < d_v; r++) t.v[r] = 3000.0f; /* state passes fp16's 65504 */
            rs_ssm_token x = rs_ttok_view(&t);
            stt = rs_head_decode(&hd, &x, o);
        }
        assert_int_equal(stt, RS_E_NONFINITE);
        const int64_t step = rs_head_first_nonfinite(&hd);
        assert_true(step >= 0 && step < (int64_t)i);
        char want[64];
        snprintf(want, sizeof want, "step %lld", (long long)step);
        assert_non_null(strstr(rs_last_error(), want));
        assert_non_null(strstr(rs_last_error(), "head 7"));
        rs_ssm_token x = rs_ttok_view(&t);
        assert_int_equal(rs_head_decode(&hd, &x, o), RS_E_NONFINITE); /* sticky, no crash */
        assert_true(isnan(o[0]));
        assert_int_equal(rs_head_reset(&hd, NULL), RS_OK);
        assert_int_equal(rs_head_first_nonfinite(&hd), -1);
        rs_ttok_free(&t);
        rs_head_free(&hd);
    }
    /* a NaN input surfaces as a non-finite output at its own step */
    rs_head hd;
    rs_head_config c = cfg_(RS_SSM_GDN, 128, 128, "shared:fp32", 16, 4);
    assert_int_equal(rs_head_init(&hd, &c), RS_OK);
    rs_tgen g = {RS_SSM_GDN, 128, 128, 0.99, 3};
    rs_ttok t;
    rs_ttok_alloc(&t, 128, 128);
    float o[4 * 128];
    for (int i = 0; i < 10; i++) {
        rs_tgen_next(&g, &t);
        rs_ssm_token x = rs_ttok_view(&t);
        assert_int_equal(rs_head_decode(&hd, &x, o), RS_OK);
    }
    rs_tgen_next(&g, &t);
    t.k[5] = NAN;
    rs_ssm_token x = rs_ttok_view(&t);
    assert_int_equal(rs_head_decode(&hd, &x, o), RS_E_NONFINITE);
    assert_int_equal(rs_head_first_nonfinite(&hd), 10);
    assert_non_null(strstr(rs_last_error(), "output at step 10"));
    /* Regression: a NaN decay or gate (from upstream activations that overflowed) was
     * rejected as RS_E_INVAL "alpha outside [0, 1]", which aborted the whole model step
     * instead of marking this head's run non-finite. It is a non-finite input. */
    for (int which = 0; which < 2; which++) {
        assert_int_equal(rs_head_reset(&hd, NULL), RS_OK);
        for (int i = 0; i < 3; i++) {
            rs_tgen_next(&g, &t);
            rs_ssm_token y = rs_ttok_view(&t);
            assert_int_equal(rs_head_decode(&hd, &y, o), RS_OK);
        }
        rs_tgen_next(&g, &t);
        rs_ssm_token y = rs_ttok_view(&t);
        if (which == 0) y.alpha = NAN;
        else y.beta = NAN;
        assert_int_equal(rs_head_decode(&hd, &y, o), RS_E_NONFINITE);
        assert_int_equal(rs_head_first_nonfinite(&hd), 3);
        assert_true(isnan(o[0]));
        assert_non_null(strstr(rs_last_error(), "decay/gate input at step 3"));
    }
    /* out-of-range but finite decays are still a caller error */
    assert_int_equal(rs_head_reset(&hd, NULL), RS_OK);
    rs_tgen_next(&g, &t);
    rs_ssm_token y = rs_ttok_view(&t);
    y.alpha = 1.5f;
    assert_int_equal(rs_head_decode(&hd, &y, o), RS_E_INVAL);
    rs_ttok_free(&t);
    rs_head_free(&hd);
}

/* ---- API misuse ----------------------------------------------------------------------- */

static void test_api_errors(void **st)
{
    (void)st;
    rs_head hd;
    rs_head_config c = cfg_(RS_SSM_MAMBA2, 3, 5, "shared:nvfp4-rtn", 4, 2);
    assert_int_equal(rs_head_init(&hd, &c), RS_E_SHAPE); /* 15 elements, block 16 */
    rs_head_free(&hd);
    c = cfg_(RS_SSM_MAMBA2, 64, 128, "shared:fp32", 0, 2);
    assert_int_equal(rs_head_init(&hd, &c), RS_E_INVAL);
    c = cfg_(RS_SSM_GDN, 64, 128, "split:fp8-rtn/fp32", 4, 2);
    assert_int_equal(rs_head_init(&hd, &c), RS_OK);
    rs_tgen g = {RS_SSM_GDN, 64, 128, 0.9, 1};
    rs_ttok t[3];
    rs_ssm_token x[3];
    for (int i = 0; i < 3; i++) {
        rs_ttok_alloc(&t[i], 64, 128);
        rs_tgen_next(&g, &t[i]);
        x[i] = rs_ttok_view(&t[i]);
    }
    float O[3 * 64];
    assert_int_equal(rs_head_commit(&hd, 1), RS_E_STATE);
    assert_int_equal(rs_head_verify(&hd, x, 3, O), RS_E_INVAL); /* T > T_max */
    assert_int_equal(rs_head_verify(&hd, x, 2, O), RS_OK);
    assert_int_equal(rs_head_decode(&hd, x, O), RS_E_STATE);    /* commit first */
    assert_int_equal(rs_head_commit(&hd, 3), RS_E_INVAL);
    assert_int_equal(rs_head_commit(&hd, 1), RS_OK);
    assert_int_equal(rs_head_ring_check(&hd), RS_OK);
    x[0].alpha = 1.5f;
    assert_int_equal(rs_head_decode(&hd, x, O), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "alpha"));
    for (int i = 0; i < 3; i++) rs_ttok_free(&t[i]);
    rs_head_free(&hd);
}

/* ---- the head as a value: lifetime, private part, window count ------------------------- */

/* decode one generated token on each head of hd[n] and check rs_head_unfolded against want */
static void decode_check_(rs_head *hd, rs_tgen *g, rs_ttok *t, size_t want)
{
    rs_tgen_next(g, t);
    const rs_ssm_token x = rs_ttok_view(t);
    float o[16];
    assert_int_equal(rs_head_decode(hd, &x, o), RS_OK);
    assert_int_equal(rs_head_unfolded(hd), want);
}

static void test_head_value(void **st)
{
    (void)st;
    /* a zeroed head is "not initialised": every entry point refuses it, none crashes */
    rs_head z;
    memset(&z, 0, sizeof z);
    float S[16 * 8], o[16];
    rs_ttok t;
    rs_ttok_alloc(&t, 16, 8);
    rs_tgen g = {RS_SSM_MAMBA2, 16, 8, 0.9, 5};
    rs_tgen_next(&g, &t);
    rs_ssm_token x = rs_ttok_view(&t);
    assert_null(z.impl);
    assert_int_equal(rs_head_decode(&z, &x, o), RS_E_STATE);
    assert_int_equal(rs_head_verify(&z, &x, 1, o), RS_E_STATE);
    assert_int_equal(rs_head_commit(&z, 1), RS_E_STATE);
    assert_int_equal(rs_head_reset(&z, NULL), RS_E_STATE);
    assert_int_equal(rs_head_state(&z, S), RS_E_STATE);
    assert_int_equal(rs_head_checkpoint(&z, 0, S, NULL), RS_E_STATE);
    assert_int_equal(rs_head_unfolded(&z), 0);
    assert_int_equal(rs_head_first_nonfinite(&z), -1);
    assert_int_equal(rs_head_ring_check(&z), RS_OK);
    rs_head_free(&z);
    rs_head_free(&z); /* twice: free leaves a zeroed head */
    rs_head_free(NULL);
    assert_null(z.impl);

    /* heads in an array (as the model runner keeps them) each own their private part */
    rs_head hd[3];
    const char *pol[3] = {"shared:fp32", "split:fp8-rtn/fp32", "fp32"};
    for (int i = 0; i < 3; i++) {
        rs_head_config c = cfg_(RS_SSM_MAMBA2, 16, 8, pol[i], 4, 3);
        assert_int_equal(rs_head_init(&hd[i], &c), RS_OK);
        assert_non_null(hd[i].impl);
        assert_int_equal(rs_head_unfolded(&hd[i]), 0);
        assert_int_equal(rs_head_first_nonfinite(&hd[i]), -1);
    }
    assert_ptr_not_equal(hd[0].impl, hd[1].impl);
    assert_ptr_not_equal(hd[1].impl, hd[2].impl);
    /* shared, L = 4 (Algorithm 1): the flush comes when the window holds L records */
    const size_t want_shared[9] = {1, 2, 3, 0, 1, 2, 3, 0, 1};
    /* split: decode is verify(1) + commit(1), the flush when h + 1 > L */
    const size_t want_split[9] = {1, 2, 3, 4, 1, 2, 3, 4, 1};
    for (int s = 0; s < 9; s++) {
        decode_check_(&hd[0], &g, &t, want_shared[s]);
        decode_check_(&hd[1], &g, &t, want_split[s]);
        decode_check_(&hd[2], &g, &t, 0); /* conv: nothing unfolded, ever */
        assert_int_equal(hd[0].pos, (uint64_t)s + 1);
        assert_int_equal(hd[0].folded + rs_head_unfolded(&hd[0]), hd[0].pos);
        assert_int_equal(hd[1].folded + rs_head_unfolded(&hd[1]), hd[1].pos);
        assert_int_equal(hd[2].folded, hd[2].pos);
    }
    assert_int_equal(hd[0].flushes, 2);
    assert_int_equal(hd[1].flushes, 2);
    /* speculative (Algorithm 2): drafts do not count until committed; flush rule h + T > L */
    rs_ttok dt[3];
    rs_ssm_token dx[3];
    for (int i = 0; i < 3; i++) {
        rs_ttok_alloc(&dt[i], 16, 8);
        rs_tgen_next(&g, &dt[i]);
        dx[i] = rs_ttok_view(&dt[i]);
    }
    float O[3 * 16];
    assert_int_equal(rs_head_unfolded(&hd[0]), 1);
    assert_int_equal(rs_head_verify(&hd[0], dx, 2, O), RS_OK); /* 1 + 2 <= 4: no flush */
    assert_int_equal(rs_head_unfolded(&hd[0]), 1);
    assert_int_equal(rs_head_commit(&hd[0], 2), RS_OK);
    assert_int_equal(rs_head_unfolded(&hd[0]), 3);
    assert_int_equal(rs_head_verify(&hd[0], dx, 3, O), RS_OK); /* 3 + 3 > 4: fold the 3 */
    assert_int_equal(rs_head_unfolded(&hd[0]), 0);
    assert_int_equal(hd[0].flushes, 3);
    assert_int_equal(rs_head_commit(&hd[0], 1), RS_OK);
    assert_int_equal(rs_head_unfolded(&hd[0]), 1);
    assert_int_equal(rs_head_ring_check(&hd[0]), RS_OK);
    /* reset empties the window */
    assert_int_equal(rs_head_reset(&hd[1], NULL), RS_OK);
    assert_int_equal(rs_head_unfolded(&hd[1]), 0);
    assert_int_equal(hd[1].pos, 0);
    for (int i = 0; i < 3; i++) {
        rs_ttok_free(&dt[i]);
        rs_head_free(&hd[i]);
        assert_null(hd[i].impl);
        assert_int_equal(rs_head_unfolded(&hd[i]), 0);
    }
    rs_ttok_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gamma_suffix),
        cmocka_unit_test(test_ring_canary),
        cmocka_unit_test(test_window1_bit_identical),
        cmocka_unit_test(test_outputonly_equals_replay),
        cmocka_unit_test(test_gdn_ut_equals_sequential),
        cmocka_unit_test(test_sr_streams),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_head_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
