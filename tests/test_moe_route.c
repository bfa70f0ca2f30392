/* test_moe_route.c — rs_moe_route_row (eval/model/rs_moe_route.h) against an independent reference:
 * the same rules written in double with qsort (every expert ranked by score, then by index), on
 * random logits whose decision margins are far above fp32 rounding, and on hand-built cases whose
 * answer is known: the group rule overriding the global top-k, the bias acting on the choice only,
 * ties to the lower index, NaN logits, and the set difference used by the routing counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/rs_moe_route.h"
#include "rs_test_util.h"

/* ---- the double-precision reference ------------------------------------------------------------ */

typedef struct ranked {
    double v;
    int i;
} ranked;

static int by_value_desc_(const void *pa, const void *pb)
{
    const ranked *a = (const ranked *)pa, *b = (const ranked *)pb;
    if (a->v != b->v) return a->v > b->v ? -1 : 1;
    return a->i - b->i;
}

static int by_index_(const void *pa, const void *pb)
{
    return ((const ranked *)pa)->i - ((const ranked *)pb)->i;
}

/* idx ascending with weights alongside; margin: smallest gap between a kept and a dropped score */
static void ref_route_(const rs_moe_config *mo, const float *logits, const float *bias, int32_t *idx, double *w,
                       double *margin)
{
    const int E = mo->n_experts, k = mo->top_k;
    ranked *r = (ranked *)calloc((size_t)E, sizeof *r);
    double *s = (double *)calloc((size_t)E, sizeof *s);
    *margin = INFINITY;
    if (mo->router == RS_ROUTER_SOFTMAX) {
        double mx = -INFINITY, sum = 0.0;
        for (int i = 0; i < E; i++) mx = fmax(mx, logits[i]);
        for (int i = 0; i < E; i++) sum += (s[i] = exp((double)logits[i] - mx));
        for (int i = 0; i < E; i++) r[i] = (ranked){s[i] / sum, i};
    } else {
        const int G = mo->n_group, per = E / G;
        for (int i = 0; i < E; i++) {
            s[i] = 1.0 / (1.0 + exp(-(double)logits[i]));
            r[i] = (ranked){s[i] + (bias ? bias[i] : 0.0), i};
        }
        ranked *g = (ranked *)calloc((size_t)G, sizeof *g);
        for (int q = 0; q < G; q++) {
            ranked *tmp = (ranked *)malloc((size_t)per * sizeof *tmp);
            memcpy(tmp, r + q * per, (size_t)per * sizeof *tmp);
            qsort(tmp, (size_t)per, sizeof *tmp, by_value_desc_);
            g[q] = (ranked){tmp[0].v + tmp[1].v, q};
            free(tmp);
        }
        qsort(g, (size_t)G, sizeof *g, by_value_desc_);
        if (mo->topk_group < G) *margin = fmin(*margin, g[mo->topk_group - 1].v - g[mo->topk_group].v);
        for (int q = mo->topk_group; q < G; q++)
            for (int i = 0; i < per; i++) r[g[q].i * per + i].v = -INFINITY;
        free(g);
    }
    qsort(r, (size_t)E, sizeof *r, by_value_desc_);
    if (k < E && isfinite(r[k].v)) *margin = fmin(*margin, r[k - 1].v - r[k].v);
    qsort(r, (size_t)k, sizeof *r, by_index_);
    double sum = 0.0;
    for (int j = 0; j < k; j++) {
        idx[j] = r[j].i;
        sum += (w[j] = s[r[j].i]);
    }
    if (mo->router == RS_ROUTER_SOFTMAX || mo->norm_topk_prob)
        for (int j = 0; j < k; j++) w[j] /= sum;
    if (mo->router == RS_ROUTER_SIGMOID_GROUPED)
        for (int j = 0; j < k; j++) w[j] *= mo->routed_scaling_factor;
    free(r);
    free(s);
}

static rs_moe_config softmax_cfg_(int E, int k)
{
    rs_moe_config mo;
    memset(&mo, 0, sizeof mo);
    mo.n_experts = E;
    mo.top_k = k;
    mo.router = RS_ROUTER_SOFTMAX;
    mo.n_group = mo.topk_group = 1;
    mo.norm_topk_prob = 1;
    mo.routed_scaling_factor = 1.0f;
    return mo;
}

static rs_moe_config grouped_cfg_(int E, int k, int G, int TG, int norm, float scale)
{
    rs_moe_config mo = softmax_cfg_(E, k);
    mo.router = RS_ROUTER_SIGMOID_GROUPED;
    mo.n_group = G;
    mo.topk_group = TG;
    mo.norm_topk_prob = norm;
    mo.routed_scaling_factor = scale;
    return mo;
}

/* random rows: the same expert set as the reference whenever its margin exceeds 1e-5 (fp32 scores
 * are within ~1e-7 of the double ones), weights within 1e-6 relative */
static void check_random_(const rs_moe_config *mo, int use_bias, uint64_t seed, int rows)
{
    const int E = mo->n_experts, k = mo->top_k;
    float *lg = (float *)malloc((size_t)E * sizeof(float)), *bias = (float *)malloc((size_t)E * sizeof(float));
    float *scr = (float *)malloc(RS_MOE_ROUTE_SCRATCH(E, mo->n_group) * sizeof(float));
    int32_t idx[RS_MOE_MAX_TOP_K], ridx[RS_MOE_MAX_TOP_K];
    float w[RS_MOE_MAX_TOP_K];
    double rw[RS_MOE_MAX_TOP_K], margin;
    uint64_t st = seed;
    int compared = 0;
    for (int i = 0; i < E; i++) bias[i] = use_bias ? (float)(0.1 * rs_test_normal(&st)) : 0.0f;
    for (int row = 0; row < rows; row++) {
        for (int i = 0; i < E; i++) lg[i] = (float)(2.0 * rs_test_normal(&st));
        rs_moe_route_row(mo, lg, use_bias ? bias : NULL, idx, w, scr);
        ref_route_(mo, lg, use_bias ? bias : NULL, ridx, rw, &margin);
        for (int j = 1; j < k; j++) assert_true(idx[j - 1] < idx[j]); /* a set, ascending */
        for (int j = 0; j < k; j++) assert_true(idx[j] >= 0 && idx[j] < E);
        if (margin < 1e-5) continue;
        compared++;
        for (int j = 0; j < k; j++) {
            assert_int_equal(idx[j], ridx[j]);
            assert_true(fabs(w[j] - rw[j]) <= 1e-6 * fabs(rw[j]) + 1e-30);
        }
    }
    assert_true(compared >= rows * 9 / 10); /* the margins are wide: almost every row is compared */
    free(lg);
    free(bias);
    free(scr);
}

static void test_random_softmax(void **state)
{
    (void)state;
    rs_moe_config a = softmax_cfg_(8, 3), b = softmax_cfg_(256, 8), c = softmax_cfg_(5, 5), d = softmax_cfg_(2, 1);
    check_random_(&a, 0, 11, 2000);
    check_random_(&b, 0, 12, 500);
    check_random_(&c, 0, 13, 200); /* k = E: every expert, weights = the probabilities */
    check_random_(&d, 0, 14, 200);
}

static void test_random_grouped(void **state)
{
    (void)state;
    rs_moe_config a = grouped_cfg_(16, 4, 4, 2, 1, 2.5f);     /* the fixture's shape */
    rs_moe_config b = grouped_cfg_(8, 2, 1, 1, 0, 1.0f);      /* one group, no renormalisation */
    rs_moe_config c = grouped_cfg_(512, 22, 1, 1, 1, 5.0f);   /* Nemotron-3-Super's router shape */
    rs_moe_config d = grouped_cfg_(256, 8, 8, 4, 1, 2.5f);    /* DeepSeek-V3's */
    rs_moe_config e = grouped_cfg_(16, 8, 8, 4, 1, 1.0f);     /* k = every kept expert */
    check_random_(&a, 1, 21, 2000);
    check_random_(&a, 0, 22, 500);
    check_random_(&b, 1, 23, 500);
    check_random_(&c, 1, 24, 200);
    check_random_(&d, 1, 25, 300);
    check_random_(&e, 1, 26, 300);
}

/* the group rule: expert 0 has the best single score, but its group's two best sum below the
 * other groups', so with topk_group = 1 of 2 groups it is not chosen */
static void test_group_overrides_topk(void **state)
{
    (void)state;
    rs_moe_config mo = grouped_cfg_(4, 2, 2, 1, 1, 1.0f);
    const float lg[4] = {4.0f, -4.0f, 2.0f, 2.5f}; /* group 0 {0, 1}, group 1 {2, 3} */
    int32_t idx[2];
    float w[2], scr[16];
    rs_moe_route_row(&mo, lg, NULL, idx, w, scr);
    assert_int_equal(idx[0], 2);
    assert_int_equal(idx[1], 3);
    const double s2 = 1.0 / (1.0 + exp(-2.0)), s3 = 1.0 / (1.0 + exp(-2.5));
    assert_true(fabs(w[0] - s2 / (s2 + s3)) < 1e-6);
    assert_true(fabs(w[1] - s3 / (s2 + s3)) < 1e-6);
    mo.topk_group = 2; /* both groups: the global top-2 */
    rs_moe_route_row(&mo, lg, NULL, idx, w, scr);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 3);
}

/* the bias picks the experts, the unbiased sigmoid weights them; scaling and no renormalisation */
static void test_bias_selects_only(void **state)
{
    (void)state;
    rs_moe_config mo = grouped_cfg_(4, 1, 1, 1, 0, 3.0f);
    const float lg[4] = {1.0f, 0.5f, 0.0f, -1.0f}, bias[4] = {0.0f, 0.0f, 0.0f, 1.0f};
    int32_t idx[4] = {-1, -1, -1, -1}; /* top_k = 1: idx[0], w[0] */
    float w[4] = {0}, scr[16];
    rs_moe_route_row(&mo, lg, bias, idx, w, scr);
    assert_int_equal(idx[0], 3); /* sigmoid(-1) + 1 = 1.27 beats sigmoid(1) = 0.73 */
    const double s3 = 1.0 / (1.0 + exp(1.0));
    assert_true(fabs(w[0] - 3.0 * s3) < 1e-6); /* x 3, not renormalised to 1 */
    mo.norm_topk_prob = 1;
    rs_moe_route_row(&mo, lg, bias, idx, w, scr);
    assert_true(fabs(w[0] - 3.0) < 1e-6); /* one expert renormalised: 1, times 3 */
}

/* equal scores go to the lower index; NaN logits give NaN weights and valid indices */
static void test_ties_and_nan(void **state)
{
    (void)state;
    rs_moe_config mo = softmax_cfg_(6, 2);
    const float tie[6] = {0.5f, 1.0f, 0.0f, 1.0f, 1.0f, -2.0f};
    int32_t idx[2];
    float w[2], scr[32];
    rs_moe_route_row(&mo, tie, NULL, idx, w, scr);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 3);
    assert_true(w[0] == 0.5f && w[1] == 0.5f);
    rs_moe_config g = grouped_cfg_(6, 2, 3, 2, 1, 1.0f);
    const float gt[6] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}; /* every group ties: groups 0, 1 */
    rs_moe_route_row(&g, gt, NULL, idx, w, scr);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
    const float nanrow[6] = {0.0f, NAN, 1.0f, 0.0f, 0.0f, 0.0f};
    rs_moe_route_row(&mo, nanrow, NULL, idx, w, scr);
    for (int j = 0; j < 2; j++) {
        assert_true(idx[j] >= 0 && idx[j] < 6);
        assert_true(isnan(w[j]));
    }
    rs_moe_route_row(&g, nanrow, NULL, idx, w, scr);
    for (int j = 0; j < 2; j++) assert_true(idx[j] >= 0 && idx[j] < 6);
}

static void test_route_diff(void **state)
{
    (void)state;
    const int32_t a[4] = {0, 3, 5, 9}, b[4] = {0, 3, 5, 9}, c[4] = {1, 3, 6, 9}, d[4] = {10, 11, 12, 13};
    assert_int_equal(rs_moe_route_diff(a, b, 4), 0);
    assert_int_equal(rs_moe_route_diff(a, c, 4), 2);
    assert_int_equal(rs_moe_route_diff(c, a, 4), 2);
    assert_int_equal(rs_moe_route_diff(a, d, 4), 4);
    assert_int_equal(rs_moe_route_diff(a, d, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_softmax),   cmocka_unit_test(test_random_grouped),
        cmocka_unit_test(test_group_overrides_topk), cmocka_unit_test(test_bias_selects_only),
        cmocka_unit_test(test_ties_and_nan),     cmocka_unit_test(test_route_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
