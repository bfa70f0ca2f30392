/* test_speculative.c — speculative decode (Algorithm 2; GDN via the
 * UT solve) with random draft lengths T in 1..8 and random acceptance a in 1..T equals
 * sequential decode of the accepted tokens, for 10^5 accepted tokens per case at realistic
 * shapes (Mamba-2 d_v 64, GDN d_v 128, d_k 128), policy shared:fp32:
 *  - outputs at accepted positions and states (sampled) vs a float64 run of the accepted
 *    tokens: max rel error <= 2 x that of conventional fp32 decode and <= 1e-4 (item 1's
 *    tolerance); also reported against the sequential ReplaySSM decode;
 *  - L = 4 < T_max = 8 exercises drafts longer than the window;
 *  - the ring canaries (sequence numbers + checksums of every live record) hold after
 *    every verify and every commit: no uncommitted record is ever overwritten.
 * Also: the conventional policy's verify (per-draft snapshots) over a shorter run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/engine/rs_head.h"
#include "rs_test_ssm.h"

#define TMAX 8

static void run_(rs_ssm_kind kind, size_t d_v, double median_alpha, size_t L, const char *pol,
                 size_t ntok, uint64_t seed)
{
    const size_t d_k = 128, n = d_v * d_k;
    rs_head spec, seq, conv;
    rs_head_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.d_v = d_v;
    c.d_k = d_k;
    c.window = L;
    c.max_drafts = TMAX;
    c.layer = 2;
    c.head = 5;
    assert_int_equal(rs_policy_parse(pol, &c.policy), RS_OK);
    assert_int_equal(rs_head_init(&spec, &c), RS_OK);
    assert_int_equal(rs_head_init(&seq, &c), RS_OK);
    c.policy = rs_policy_fp32();
    assert_int_equal(rs_head_init(&conv, &c), RS_OK);
    rs_tgen g = {kind, d_v, d_k, median_alpha, seed};
    uint64_t rng = seed * 7919 + 1;
    rs_ttok t[TMAX];
    rs_ssm_token x[TMAX];
    for (int i = 0; i < TMAX; i++) rs_ttok_alloc(&t[i], d_v, d_k);
    double *S = calloc(n, 8), *oref = malloc(d_v * 8);
    float *O = malloc(TMAX * d_v * 4), *o = malloc(d_v * 4), *o2 = malloc(d_v * 4);
    float *Ss = malloc(n * 4), *Sc = malloc(n * 4);
    double e_spec = 0, e_conv = 0, e_seq = 0, e_vs_seq = 0, es_spec = 0, es_conv = 0;
    size_t done = 0, verifies = 0, flushes_seen = 0, maxh = 0;
    while (done < ntok) {
        const size_t T = 1 + (size_t)(rs_test_uniform(&rng) * TMAX);
        const size_t a = 1 + (size_t)(rs_test_uniform(&rng) * T);
        for (size_t s = 0; s < T; s++) {
            rs_tgen_next(&g, &t[s]);
            x[s] = rs_ttok_view(&t[s]);
        }
        assert_int_equal(rs_head_verify(&spec, x, T, O), RS_OK);
        if (rs_head_ring_check(&spec) != RS_OK) {
            print_error("after verify %zu: %s\n", verifies, rs_last_error());
            fail();
        }
        assert_int_equal(rs_head_commit(&spec, a), RS_OK);
        assert_int_equal(rs_head_ring_check(&spec), RS_OK);
        if (rs_head_unfolded(&spec) > maxh) maxh = rs_head_unfolded(&spec);
        verifies++;
        for (size_t s = 0; s < a; s++) { /* sequential decode of the accepted tokens */
            rs_tref_step(kind, S, d_v, d_k, &t[s], oref);
            assert_int_equal(rs_head_decode(&seq, &x[s], o), RS_OK);
            assert_int_equal(rs_head_decode(&conv, &x[s], o2), RS_OK);
            e_spec = fmax(e_spec, rs_trel_f(O + s * d_v, oref, d_v));
            e_seq = fmax(e_seq, rs_trel_f(o, oref, d_v));
            e_conv = fmax(e_conv, rs_trel_f(o2, oref, d_v));
            e_vs_seq = fmax(e_vs_seq, rs_trel_ff(O + s * d_v, o, d_v));
        }
        done += a;
        if (verifies % 1000 == 0 || done >= ntok) { /* states, sampled */
            assert_int_equal(rs_head_state(&spec, Ss), RS_OK);
            assert_int_equal(rs_head_state(&conv, Sc), RS_OK);
            es_spec = fmax(es_spec, rs_trel_f(Ss, S, n));
            es_conv = fmax(es_conv, rs_trel_f(Sc, S, n));
        }
        flushes_seen = spec.flushes;
    }
    print_message("%-6s d_v %3zu L %2zu %-12s %zu tokens, %zu verifies, %zu flushes, max h %zu: "
                  "output err spec %.3g seq %.3g conv %.3g, spec vs seq %.3g | state err spec "
                  "%.3g conv %.3g\n",
                  rs_ssm_kind_name(kind), d_v, L, pol, done, verifies, flushes_seen, maxh, e_spec,
                  e_seq, e_conv, e_vs_seq, es_spec, es_conv);
    /* committed-unfolded records never exceed the window (or T_max when T_max > L: a
     * flush keeps up to T_max drafts, all of which may be accepted) */
    assert_true(maxh <= (L > TMAX ? L : TMAX));
    if (L >= TMAX) assert_true(maxh <= L);
    assert_true(flushes_seen > 0 || !rs_policy_is_replay(&spec.cfg.policy));
    assert_true(e_spec <= 2.0 * e_conv && e_spec <= 1e-4);
    assert_true(es_spec <= 2.0 * es_conv && es_spec <= 1e-4);
    assert_true(e_vs_seq <= 1e-4);
    for (int i = 0; i < TMAX; i++) rs_ttok_free(&t[i]);
    rs_head_free(&spec);
    rs_head_free(&seq);
    rs_head_free(&conv);
    free(S);
    free(oref);
    free(O);
    free(o);
    free(o2);
    free(Ss);
    free(Sc);
}

static void test_mamba2_L4(void **st) { (void)st; run_(RS_SSM_MAMBA2, 64, 0.999, 4, "shared:fp32", 100000, 1); }
static void test_mamba2_L16(void **st) { (void)st; run_(RS_SSM_MAMBA2, 80, 0.9999, 16, "shared:fp32", 100000, 2); }
static void test_gdn_L16(void **st) { (void)st; run_(RS_SSM_GDN, 128, 0.99, 16, "shared:fp32", 100000, 3); }
static void test_conv_snapshots(void **st)
{
    (void)st;
    run_(RS_SSM_MAMBA2, 64, 0.99, 16, "fp32", 20000, 4);
    run_(RS_SSM_GDN, 128, 0.99, 16, "fp32", 10000, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mamba2_L4),
        cmocka_unit_test(test_mamba2_L16),
        cmocka_unit_test(test_gdn_L16),
        cmocka_unit_test(test_conv_snapshots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
