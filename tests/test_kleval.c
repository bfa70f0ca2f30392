/* test_kleval.c — the evaluator library (replayssm/eval/rs_kleval.h) called directly, on the random-init
 * fixture models (tests/fixtures/models/) and the two PG-19 excerpts of tests/fixtures/pg19-mini:
 *  - one runner for any mix of policies, windows and seeds: every run of a mixed evaluation is
 *    bit-identical to the same run evaluated alone with the reference, on both model families;
 *    the fp32 reference is forwarded once per position (the result's cost counters);
 *  - stop through the event callback, resume, and the log equals an uninterrupted run bitwise;
 *  - the reference alone (no runs) has the reference bits of a run with a policy.
 * Planning and bad configurations: test_kleval_plan.c; the CLI on top: test_kl_cli.c; the bits
 * before/after the move of the evaluator into the library: test_kleval_fixture.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "replayssm/eval/rs_kleval.h"
#include "rs_test_kleval.h"
#include "rs_test_util.h"

static char g_dir[256], g_data[512], g_gdn[1024], g_m2[1024];

static int setup_(void **state)
{
    (void)state;
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    rs_test_fixture_path(g_m2, sizeof g_m2, "models/mamba2-tiny-random");
    return rs_test_cli_workdir("rs_kleval", g_dir, sizeof g_dir, g_data, sizeof g_data, NULL, 0);
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_rmdir(g_dir);
}

static const char *path_(char *buf, const char *name)
{
    snprintf(buf, 600, "%s/%s", g_dir, name);
    return buf;
}

/* book 1023, 160 positions in chunks of 32, 1 thread (rs_test_kleval.h); the runs made into specs
 * by the library's parser, held until the next config_ */
static rs_kleval_config config_(const char *model, const char *out, const rs_test_run *runs, size_t n)
{
    static rs_run_spec specs[16];
    assert_true(n <= 16);
    assert_int_equal(rs_test_specs(runs, n, specs), RS_OK);
    return rs_test_kleval_config(model, g_data, out, specs, n);
}

/* create + run; the handle stays open for its result */
static rs_kleval *run_(const rs_kleval_config *c)
{
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(c, &ev), RS_OK);
    const rs_status st = rs_kleval_run(ev);
    if (st != RS_OK) print_message("%s\n", rs_last_error());
    assert_int_equal(st, RS_OK);
    return ev;
}

/* run ra of log a and run rb of log b (-1: the reference) hold the same bits in every
 * dataset of every book, and every planned position is committed */
static void same_run_(const char *a, long ra, const char *b, long rb)
{
    rs_h5log *x = NULL, *y = NULL;
    assert_int_equal(rs_h5log_open(a, 0, NULL, &x), RS_OK);
    assert_int_equal(rs_h5log_open(b, 0, NULL, &y), RS_OK);
    assert_int_equal(rs_h5log_n_books(x), rs_h5log_n_books(y));
    const char *run_sets[] = {"kl", "nll", "dp", "top1_agree"}, *ref_sets[] = {"nll", "next_token", "top1"};
    for (size_t bk = 0; bk < rs_h5log_n_books(x); bk++) {
        const size_t n = (size_t)rs_h5log_completed(x, bk);
        assert_int_equal(n, rs_h5log_book_len(x, bk));
        assert_int_equal(rs_h5log_completed(y, bk), (int64_t)n);
        double *d1 = calloc(n, 8), *d2 = calloc(n, 8);
        for (size_t k = 0; k < (ra < 0 ? 3u : 4u); k++) {
            const char *nm = ra < 0 ? ref_sets[k] : run_sets[k];
            assert_int_equal(rs_h5log_read_row(x, ra, nm, bk, n, d1), RS_OK);
            assert_int_equal(rs_h5log_read_row(y, rb, nm, bk, n, d2), RS_OK);
            assert_memory_equal(d1, d2, n * 8);
        }
        free(d1);
        free(d2);
    }
    rs_h5log_close(x);
    rs_h5log_close(y);
}

static void same_log_(const char *a, const char *b, size_t n_runs)
{
    same_run_(a, -1, b, -1);
    for (size_t r = 0; r < n_runs; r++) same_run_(a, (long)r, b, (long)r);
}

/* A mixed evaluation (windows 4, 8, 16, two seeds) on one model: each run equals the run alone;
 * the windows and seeds reach the heads (runs differing only in L or seed differ); the runner
 * carries the reference once and steps once per chunk. */
static void mixed_(const char *model, const char *tag)
{
    static const rs_test_run runs[] = {{"shared:nvfp4-sr", 4, 3},  {"split:nvfp4-rtn/fp32", 16, 3},
                                       {"shared:nvfp4-sr", 16, 3}, {"conv:fp16-sr", 8, 3},
                                       {"shared:nvfp4-sr", 4, 9},  {"split:nvfp4-sr/fp16-sr", 4, 3}};
    const size_t R = sizeof runs / sizeof runs[0];
    char mixed[600], one[600], name[64];
    snprintf(name, sizeof name, "mixed-%s.h5", tag);
    rs_kleval_config c = config_(model, path_(mixed, name), runs, R);
    rs_kleval *ev = run_(&c);
    const rs_kleval_result *res = rs_kleval_get_result(ev);
    assert_true(res->complete);
    assert_int_equal(res->runner_runs, R + 1);
    assert_int_equal(res->runner_steps, 5); /* 160 / 32: one forward per chunk for all runs */
    assert_int_equal(res->reference_positions, 160);
    assert_string_equal(res->runs[5].name, "split:nvfp4-sr/fp16-sr");
    rs_kleval_free(ev);
    for (size_t r = 0; r < R; r++) {
        snprintf(name, sizeof name, "one-%s-%zu.h5", tag, r);
        c = config_(model, path_(one, name), &runs[r], 1);
        ev = run_(&c);
        assert_int_equal(rs_kleval_get_result(ev)->runner_runs, 2);
        rs_kleval_free(ev);
        same_run_(mixed, (long)r, one, 0);
        same_run_(mixed, -1, one, -1);
    }
    rs_h5log *lg = NULL;
    double a[160], b[160], s[160];
    assert_int_equal(rs_h5log_open(mixed, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_read_row(lg, 0, "kl", 0, 160, a), RS_OK);
    assert_int_equal(rs_h5log_read_row(lg, 2, "kl", 0, 160, b), RS_OK);
    assert_int_equal(rs_h5log_read_row(lg, 4, "kl", 0, 160, s), RS_OK);
    assert_int_equal(rs_h5log_window(lg, 3), 8);
    rs_h5log_close(lg);
    assert_true(memcmp(a, b, sizeof a) != 0); /* L = 4 vs L = 16 */
    assert_true(memcmp(a, s, sizeof a) != 0); /* seed 3 vs seed 9 */
}

static void test_mixed_gdn(void **state) { (void)state; mixed_(g_gdn, "gdn"); }
static void test_mixed_mamba2(void **state) { (void)state; mixed_(g_m2, "mamba2"); }

/* the paper's window sweep shape (5 windows x 2 policies): still one forward per chunk */
static void test_reference_once(void **state)
{
    (void)state;
    rs_test_run runs[10];
    const size_t L[5] = {4, 8, 16, 32, 64};
    for (size_t i = 0; i < 10; i++)
        runs[i] = (rs_test_run){i % 2 ? "split:nvfp4-sr/fp32" : "shared:nvfp4-sr", L[i / 2], 0};
    char out[600];
    rs_kleval_config c = config_(g_gdn, path_(out, "sweep5.h5"), runs, 10);
    c.tokens = 96;
    rs_kleval *ev = run_(&c);
    const rs_kleval_result *res = rs_kleval_get_result(ev);
    assert_int_equal(res->runner_runs, 11);
    assert_int_equal(res->runner_steps, 3); /* a runner per window would step 15 times */
    assert_int_equal(res->reference_positions, 96);
    rs_kleval_free(ev);
}

typedef struct stopper { size_t after, seen; } stopper;

static int stop_after_(const rs_kleval_event *e, void *user)
{
    stopper *s = (stopper *)user;
    return e->kind == RS_KLEVAL_EVENT_PROGRESS && ++s->seen == s->after;
}

/* stopped by the callback after `after` chunks of 16 (20 per book), then resumed: equal to the
 * uninterrupted log; the resume recomputes only the book in progress */
static void test_stop_resume(void **state)
{
    (void)state;
    static const rs_test_run runs[] = {
        {"shared:nvfp4-sr", 4, 3}, {"split:nvfp4-rtn/fp16-sr", 16, 3}, {"conv:fp16-sr", 16, 3}};
    char full[600], cut[600], buf[64];
    rs_kleval_config c = config_(g_gdn, path_(full, "full.h5"), runs, 3);
    c.book_ids = NULL;
    c.n_book_ids = 0;
    c.first_books = 2;
    c.tokens = 320;
    c.chunk = 16;
    rs_kleval *ev = run_(&c);
    const double mean0 = rs_kleval_get_result(ev)->summaries[0].mean_kl;
    rs_kleval_free(ev);
    const size_t stops[] = {5, 27};
    for (size_t k = 0; k < 2; k++) {
        snprintf(buf, sizeof buf, "cut%zu.h5", k);
        stopper s = {stops[k], 0};
        c.out_path = path_(cut, buf);
        c.output = RS_KLEVAL_OUT_NEW;
        c.on_event = stop_after_;
        c.user = &s;
        ev = run_(&c);
        assert_false(rs_kleval_get_result(ev)->complete);
        assert_int_equal(rs_kleval_get_result(ev)->runner_steps, stops[k]);
        rs_kleval_free(ev);
        rs_h5log *lg = NULL;
        assert_int_equal(rs_h5log_open(cut, 0, NULL, &lg), RS_OK);
        assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
        assert_string_equal(buf, "running");
        assert_int_equal(rs_h5log_completed(lg, 0) + rs_h5log_completed(lg, 1), (int64_t)(16 * stops[k]));
        rs_h5log_close(lg);
        c.output = RS_KLEVAL_OUT_RESUME;
        c.on_event = NULL;
        ev = run_(&c);
        const rs_kleval_result *res = rs_kleval_get_result(ev);
        assert_true(res->complete);
        assert_int_equal(res->runner_steps, k == 0 ? 40 : 20); /* book 0 is complete in the second case */
        assert_true(res->summaries[0].mean_kl == mean0);
        rs_kleval_free(ev);
        same_log_(full, cut, 3);
    }
}

/* no runs: the fp32 reference alone, bit-identical to the reference of a policy run */
static void test_reference_only(void **state)
{
    (void)state;
    static const rs_test_run one = {"split:nvfp4-rtn/fp32", 16, 0};
    char ref[600], pol[600];
    rs_kleval_config c = config_(g_m2, path_(ref, "ref.h5"), NULL, 0);
    rs_kleval *ev = run_(&c);
    const rs_kleval_result *res = rs_kleval_get_result(ev);
    assert_int_equal(res->runner_runs, 1);
    assert_int_equal(res->reference.n, 160);
    const double mean = res->reference.mean_nll;
    rs_kleval_free(ev);
    c = config_(g_m2, path_(pol, "refpol.h5"), &one, 1);
    rs_kleval_free(run_(&c));
    same_run_(ref, -1, pol, -1);
    rs_h5log *lg = NULL;
    double x[160], sum = 0;
    assert_int_equal(rs_h5log_open(ref, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_runs(lg), 0);
    assert_int_equal(rs_h5log_read_row(lg, -1, "nll", 0, 160, x), RS_OK);
    rs_h5log_close(lg);
    for (int t = 0; t < 160; t++) sum += x[t];
    assert_true(fabs(mean - sum / 160) <= 1e-12 * sum);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_gdn),      cmocka_unit_test(test_mixed_mamba2),
        cmocka_unit_test(test_reference_once), cmocka_unit_test(test_stop_resume),
        cmocka_unit_test(test_reference_only),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
