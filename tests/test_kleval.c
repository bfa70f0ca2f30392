/* test_kleval.c — the evaluator library (replayssm/eval/rs_kleval.h) called directly, on the random-init
 * fixture models (tests/fixtures/models/) and the two PG-19 excerpts of tests/fixtures/pg19-mini:
 *  - one runner for any mix of policies, windows and seeds: every run of a mixed evaluation is
 *    bit-identical to the same run evaluated alone with the reference, on both model families;
 *    the fp32 reference is forwarded once per position (the result's cost counters);
 *  - stop through the event callback, resume, and the log equals an uninterrupted run bitwise;
 *  - the reference alone (no runs) has the reference bits of a run with a policy;
 *  - on a MoE model every run's routing counts against the reference are logged per book and MoE
 *    layer, equal to a recount from the runner's captured routes, and kept through stop / --resume
 *    and merge.
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

#include "model/rs_backend.h"
#include "model/rs_runner.h"
#include "replayssm/eval/rs_h5log_merge.h"
#include "replayssm/eval/rs_kleval.h"
#include "replayssm/eval/rs_model.h"
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

/* a run's routing counts per MoE layer recounted from the runner's captured routes of the whole
   stream in one step (chunk sizes give the CPU model the same bits: test_model_parity), each
   position's experts against the reference's: positions with any other expert, and those experts */
static void recount_(const rs_model *m, const int32_t *ids, size_t T, const rs_run_spec *runs, size_t R,
                     int64_t *pos, int64_t *ex, size_t L)
{
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(1, &be), RS_OK);
    rs_run_spec all[8]; /* run 0 the fp32 reference, as the CPU scorer builds its runner */
    assert_true(R < 8);
    assert_int_equal(rs_run_spec_parse("fp32", "16", 0, &all[0]), RS_OK);
    for (size_t r = 0; r < R; r++) all[r + 1] = runs[r];
    rs_runner_config rc = rs_runner_config_default();
    rc.n_runs = R + 1;
    rc.runs = all;
    rc.chunk = T;
    rc.max_tokens = T;
    rc.capture_routes = 1;
    rs_runner *run = NULL;
    assert_int_equal(rs_runner_create(m, be, &rc, &run), RS_OK);
    assert_int_equal(rs_runner_step(run, ids, T), RS_OK);
    const size_t k = (size_t)m->cfg.moe.top_k;
    size_t j = 0;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const int32_t *r0 = rs_runner_routes(run, (size_t)l, 0);
        if (!r0) continue;
        assert_true(j < L);
        for (size_t r = 0; r < R; r++) {
            const int32_t *r1 = rs_runner_routes(run, (size_t)l, r + 1);
            int64_t p = 0, e = 0;
            for (size_t t = 0; t < T; t++) {
                int miss = 0;
                for (size_t a = 0; a < k; a++) {
                    int found = 0;
                    for (size_t b = 0; b < k; b++) found |= r1[t * k + a] == r0[t * k + b];
                    miss += !found;
                }
                p += miss > 0;
                e += miss;
            }
            pos[r * L + j] = p;
            ex[r * L + j] = e;
        }
        j++;
    }
    assert_int_equal(j, L);
    rs_runner_free(run);
    rs_backend_destroy(be);
}

static void test_moe_route_log(void **state)
{
    (void)state;
    enum { T = 200, NS = 2, R = 2, LMAX = 16 };
    static const rs_test_run runs[R] = {{"conv:bf16-rtn", 16, 0}, {"conv:nvfp4-rtn", 16, 0}};
    char model[1024], full[600], cut[600], f0[600], f1[600];
    rs_test_fixture_path(model, sizeof model, "models/gdn-moe-tiny-random");
    uint32_t ids[NS][T + 1];
    int32_t ids32[NS][T + 1];
    uint64_t x = 0x2545f4914f6cdd1dull;
    const char *files[NS] = {path_(f0, "moe0.bin"), path_(f1, "moe1.bin")};
    for (int s = 0; s < NS; s++) {
        for (int t = 0; t <= T; t++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            ids[s][t] = (uint32_t)((x >> 33) % 256);
            ids32[s][t] = (int32_t)ids[s][t];
        }
        FILE *f = fopen(files[s], "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(ids[s], sizeof(uint32_t), T + 1, f), T + 1);
        fclose(f);
    }
    rs_kleval_config c = config_(model, path_(full, "moe.h5"), runs, R);
    c.data_dir = NULL;
    c.book_ids = NULL;
    c.n_book_ids = 0;
    c.input = RS_KLEVAL_INPUT_TOKEN_IDS;
    c.input_files = files;
    c.n_input_files = NS;
    c.tokens = T;
    c.chunk = 32;
    rs_kleval_free(run_(&c));
    /* the recount */
    rs_model m;
    assert_int_equal(rs_model_load(model, &m), RS_OK);
    int32_t layers[LMAX];
    size_t L = 0;
    for (int l = 0; l < m.cfg.n_layers; l++)
        if (m.cfg.mlp_is_moe || m.cfg.layer_kind[l] == RS_LAYER_MOE) layers[L++] = l;
    assert_true(L >= 1 && L <= LMAX);
    static rs_run_spec specs[R];
    assert_int_equal(rs_test_specs(runs, R, specs), RS_OK);
    int64_t want_p[NS][R * LMAX], want_e[NS][R * LMAX];
    for (int s = 0; s < NS; s++) recount_(&m, ids32[s], T, specs, R, want_p[s], want_e[s], L);
    rs_model_free(&m);
    /* stopped after 5 chunks of 32 (inside the first stream: replayed) and after 8 (the first stream
       complete: copied by --resume), then resumed */
    char cut2[600];
    const char *logs[3] = {full, path_(cut, "moecut5.h5"), path_(cut2, "moecut8.h5")};
    for (int g = 1; g < 3; g++) {
        stopper st = {g == 1 ? 5u : 8u, 0};
        c.out_path = logs[g];
        c.output = RS_KLEVAL_OUT_NEW;
        c.on_event = stop_after_;
        c.user = &st;
        rs_kleval_free(run_(&c));
        c.output = RS_KLEVAL_OUT_RESUME;
        c.on_event = NULL;
        rs_kleval_free(run_(&c));
    }
    /* each run alone, merged */
    char one[2][600], merged[600], name[32];
    for (int r = 0; r < R; r++) {
        snprintf(name, sizeof name, "moerun%d.h5", r);
        rs_kleval_config c1 = config_(model, path_(one[r], name), &runs[r], 1);
        c1.data_dir = NULL, c1.book_ids = NULL, c1.n_book_ids = 0;
        c1.input = RS_KLEVAL_INPUT_TOKEN_IDS, c1.input_files = files, c1.n_input_files = NS;
        c1.tokens = T, c1.chunk = 32;
        rs_kleval_free(run_(&c1));
    }
    const char *ins[2] = {one[0], one[1]};
    assert_int_equal(rs_h5log_merge(ins, 2, path_(merged, "moemerged.h5"), NULL), RS_OK);
    const char *logs4[4] = {logs[0], logs[1], logs[2], merged};
    int64_t total = 0;
    for (int g = 0; g < 4; g++) {
        rs_h5log *lg = NULL;
        assert_int_equal(rs_h5log_open(logs4[g], 0, NULL, &lg), RS_OK);
        assert_int_equal(rs_h5log_n_moe_layers(lg), L);
        for (size_t j = 0; j < L; j++) assert_int_equal(rs_h5log_moe_layer(lg, j), layers[j]);
        for (int s = 0; s < NS; s++)
            for (size_t r = 0; r < R; r++) {
                int64_t p[LMAX], e[LMAX];
                assert_int_equal(rs_h5log_get_route_diff(lg, r, (size_t)s, p, e), RS_OK);
                for (size_t j = 0; j < L; j++) {
                    assert_int_equal(p[j], want_p[s][r * L + j]);
                    assert_int_equal(e[j], want_e[s][r * L + j]);
                    total += p[j];
                }
            }
        rs_h5log_close(lg);
    }
    printf("  gdn-moe: %lld (position, layer) pairs routed unlike the reference over the four logs\n", (long long)total);
    assert_true(total > 0); /* nvfp4-rtn state reroutes: a count of zero would not test the plumbing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_gdn),      cmocka_unit_test(test_mixed_mamba2),
        cmocka_unit_test(test_reference_once), cmocka_unit_test(test_stop_resume),
        cmocka_unit_test(test_reference_only), cmocka_unit_test(test_moe_route_log),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
