/* test_replay_fp32.c — ReplaySSM in fp32 (Algorithm 1 for Mamba-2,
 * Algorithm 4 for GDN; policy shared:fp32) changes the numerics no more than fp32 rounding
 * does. Against a float64 run of the same recurrence on the same fp32 inputs, over 10^5
 * steps and L in {1, 4, 16, 64}, for heads shaped like the paper's models (Mamba-2 d_v 64
 * and 80, GDN d_v 128; d_k 128) with decays from 0.5 to 0.9999:
 *   max_t rel output error (ReplaySSM) <= 2 x max_t rel output error (conventional fp32)
 *   and <= 1e-4; the same for the checkpoint after each flush vs the conventional state
 *   at those steps. Relative errors are norm-wise ||x - ref||_2 / ||ref||_2. */
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

#ifndef NSTEPS
#define NSTEPS 100000
#endif
#define NL 4
static const size_t k_L[NL] = {1, 4, 16, 64};

static void run_head_(rs_ssm_kind kind, size_t d_v, double median_alpha, uint64_t seed)
{
    const size_t d_k = 128, n = d_v * d_k;
    rs_head conv, rep[NL];
    rs_head_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.d_v = d_v;
    c.d_k = d_k;
    c.max_drafts = 1;
    c.policy = rs_policy_fp32();
    assert_int_equal(rs_head_init(&conv, &c), RS_OK);
    for (int l = 0; l < NL; l++) {
        assert_int_equal(rs_policy_parse("shared:fp32", &c.policy), RS_OK);
        c.window = k_L[l];
        assert_int_equal(rs_head_init(&rep[l], &c), RS_OK);
    }
    double *S = calloc(n, 8), *oref = malloc(d_v * 8);
    float *o = malloc(d_v * 4), *ck = malloc(n * 4), *Sc = malloc(n * 4);
    double eo_conv = 0, eo[NL] = {0}, es[NL] = {0}, es_conv[NL] = {0};
    uint64_t seen[NL] = {0};
    rs_tgen g = {kind, d_v, d_k, median_alpha, seed};
    rs_ttok t;
    rs_ttok_alloc(&t, d_v, d_k);
    for (size_t i = 0; i < NSTEPS; i++) {
        rs_tgen_next(&g, &t);
        rs_ssm_token x = rs_ttok_view(&t);
        rs_tref_step(kind, S, d_v, d_k, &t, oref);
        assert_int_equal(rs_head_decode(&conv, &x, o), RS_OK);
        eo_conv = fmax(eo_conv, rs_trel_f(o, oref, d_v));
        double esc = -1; /* conventional state error at this step, computed on demand */
        for (int l = 0; l < NL; l++) {
            assert_int_equal(rs_head_decode(&rep[l], &x, o), RS_OK);
            eo[l] = fmax(eo[l], rs_trel_f(o, oref, d_v));
            if (rep[l].folded != seen[l]) { /* a flush happened at this step */
                seen[l] = rep[l].folded;
                assert_int_equal(seen[l], i + 1);
                uint64_t f;
                assert_int_equal(rs_head_checkpoint(&rep[l], 0, ck, &f), RS_OK);
                es[l] = fmax(es[l], rs_trel_f(ck, S, n));
                if (esc < 0) {
                    assert_int_equal(rs_head_checkpoint(&conv, 0, Sc, &f), RS_OK);
                    esc = rs_trel_f(Sc, S, n);
                }
                es_conv[l] = fmax(es_conv[l], esc);
            }
        }
    }
    for (int l = 0; l < NL; l++) {
        print_message("%-6s d_v %3zu alpha~%-7g L %2zu: output err replay %.3g conv %.3g "
                      "(ratio %.2f) | state err replay %.3g conv %.3g (ratio %.2f)\n",
                      rs_ssm_kind_name(kind), d_v, median_alpha, k_L[l], eo[l], eo_conv,
                      eo[l] / eo_conv, es[l], es_conv[l], es[l] / es_conv[l]);
        assert_true(eo[l] <= 2.0 * eo_conv && eo[l] <= 1e-4);
        assert_true(es[l] <= 2.0 * es_conv[l] && es[l] <= 1e-4);
        assert_int_equal(rep[l].flushes, NSTEPS / k_L[l]);
        rs_head_free(&rep[l]);
    }
    rs_head_free(&conv);
    rs_ttok_free(&t);
    free(S);
    free(oref);
    free(o);
    free(ck);
    free(Sc);
}

static void test_mamba2_fast_head(void **st) { (void)st; run_head_(RS_SSM_MAMBA2, 64, 0.5, 1); }
static void test_mamba2_mid_head(void **st) { (void)st; run_head_(RS_SSM_MAMBA2, 80, 0.99, 2); }
static void test_mamba2_slow_head(void **st) { (void)st; run_head_(RS_SSM_MAMBA2, 80, 0.9999, 3); }
static void test_gdn_mid_head(void **st) { (void)st; run_head_(RS_SSM_GDN, 128, 0.9, 4); }
static void test_gdn_slow_head(void **st) { (void)st; run_head_(RS_SSM_GDN, 128, 0.9999, 5); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mamba2_fast_head), cmocka_unit_test(test_mamba2_mid_head),
        cmocka_unit_test(test_mamba2_slow_head), cmocka_unit_test(test_gdn_mid_head),
        cmocka_unit_test(test_gdn_slow_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
