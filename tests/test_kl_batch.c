/* test_kl_batch.c — books batched (rs_kleval_config.batch, `kl --batch B`) on the CPU
 * scorer, whose streams are independent runners: a batched evaluation must give the sequential
 * one's log bit for bit. Four streams of different lengths (text files cut from the PG-19
 * excerpts of tests/fixtures/pg19-mini, --short truncate), chunk 16, SR and RTN policies of
 * every mode, on both fixture model families (GDN + attention, Mamba-2):
 *  - library: batch 1, 3, 4 and 8 (capped at the 4 books) give logs equal dataset by dataset
 *    (rs_test_logs_equal: every committed array of the reference and of every run, the
 *    non-finite records); every book gets the same PROGRESS positions, in ascending order, and
 *    the same running totals at the end; the log records the batch;
 *  - stop through the event callback in the middle of a batched run (books half done, one
 *    finished) and resume it with another batch (the CPU does not compare it): equal again;
 *  - CLI: kill -9 at a random moment of `kl --batch 3`, --resume: equal to the sequential run.
 * The CLI is RS_CLI_PATH (override with the environment variable RS_KL_CLI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_kleval.h"
#include "rs_test_kleval.h"
#include "rs_test_util.h"

#define N_FILES 4
static char g_dir[256], g_cli[1024], g_gdn[1024], g_m2[1024], g_files[N_FILES][600];
static const char *g_paths[N_FILES];
/* bytes of each stream (the byte tokenizer: tokens = bytes): 300, 149, 400 (truncated from
 * 420 by --tokens) and 232 positions; chunk 16 leaves short last chunks of 12, 5, 0 and 8 */
static const size_t k_len[N_FILES] = {301, 150, 420, 233};
static const size_t k_off[N_FILES] = {0, 400, 800, 1500};

static const rs_test_run k_runs[] = {
    {"shared:nvfp4-sr", 16, 3}, {"split:nvfp4-rtn/fp16-sr", 16, 3}, {"conv:fp16-sr", 16, 5},
    {"split:nvfp4-rtn/fp32", 8, 3}, {"split-naive:fp8-rtn/fp16-rtn", 4, 3}};
#define N_RUNS (sizeof k_runs / sizeof k_runs[0])
static rs_run_spec g_specs[N_RUNS]; /* k_runs by the library's parser (setup) */

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_klbatch_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    const char *e = getenv("RS_KL_CLI");
    snprintf(g_cli, sizeof g_cli, "%s", e && e[0] ? e : RS_CLI_PATH);
    char fx[1024], cmd[4096];
    rs_test_fixture_path(fx, sizeof fx, "pg19-mini/test/1023.txt.gz");
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    rs_test_fixture_path(g_m2, sizeof g_m2, "models/mamba2-tiny-random");
    for (int i = 0; i < N_FILES; i++) {
        snprintf(g_files[i], sizeof g_files[i], "%s/s%d.txt", g_dir, i);
        g_paths[i] = g_files[i];
        snprintf(cmd, sizeof cmd, "zcat '%s' | tail -c +%zu | head -c %zu > '%s'", fx, k_off[i] + 1, k_len[i],
                 g_files[i]);
        if (system(cmd) != 0) return -1;
        struct stat sb;
        if (stat(g_files[i], &sb) != 0 || (size_t)sb.st_size != k_len[i]) return -1;
    }
    return rs_test_specs(k_runs, N_RUNS, g_specs) == RS_OK ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* what the PROGRESS events said: per book the positions in event order */
typedef struct progress_log {
    size_t n[N_FILES];
    size_t pos[N_FILES][64];
    size_t done_last, total;
    int stop_at; /* > 0: ask to stop after that many events */
    int events;
} progress_log;

static int on_event_(const rs_kleval_event *e, void *user)
{
    progress_log *p = (progress_log *)user;
    if (e->kind != RS_KLEVAL_EVENT_PROGRESS) return 0;
    assert_true(e->book < N_FILES && p->n[e->book] < 64);
    p->pos[e->book][p->n[e->book]++] = e->position;
    p->done_last = e->done;
    p->total = e->total;
    p->events++;
    return p->stop_at > 0 && p->events >= p->stop_at;
}

static rs_kleval_config config_(const char *model, const char *out, size_t batch, progress_log *pl)
{
    rs_kleval_config c = rs_kleval_config_default();
    c.model_dir = model;
    c.input = RS_KLEVAL_INPUT_TEXT;
    c.input_files = g_paths;
    c.n_input_files = N_FILES;
    c.tokens = 400;
    c.short_books = RS_KLEVAL_SHORT_TRUNCATE;
    c.chunk = 16;
    c.threads = 1;
    c.batch = batch;
    c.out_path = out;
    c.output = RS_KLEVAL_OUT_FORCE;
    c.runs = g_specs;
    c.n_runs = N_RUNS;
    c.on_event = on_event_;
    c.user = pl;
    return c;
}

static void run_(const rs_kleval_config *c, int expect_complete)
{
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(c, &ev), RS_OK);
    const rs_status st = rs_kleval_run(ev);
    if (st != RS_OK) print_message("%s\n", rs_last_error());
    assert_int_equal(st, RS_OK);
    assert_int_equal(rs_kleval_get_result(ev)->complete, expect_complete);
    rs_kleval_free(ev);
}

static void check_batch_attr_(const char *path, const char *want)
{
    rs_h5log *lg = NULL;
    char v[32] = "";
    assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "batch", v, sizeof v), RS_OK);
    assert_string_equal(v, want);
    rs_h5log_close(lg);
}

/* the positions every book must report: 16, 32, ..., its length */
static void check_progress_(const progress_log *p)
{
    static const size_t len[N_FILES] = {300, 149, 400, 232};
    for (int b = 0; b < N_FILES; b++) {
        const size_t want = (len[b] + 15) / 16;
        assert_int_equal(p->n[b], want);
        for (size_t k = 0; k < want; k++) assert_int_equal(p->pos[b][k], k + 1 < want ? 16 * (k + 1) : len[b]);
    }
    assert_int_equal(p->done_last, 300 + 149 + 400 + 232);
    assert_int_equal(p->total, 300 + 149 + 400 + 232);
}

static void batched_equals_sequential_(const char *model, const char *tag)
{
    char seq[600], out[600];
    snprintf(seq, sizeof seq, "%s/%s-seq.h5", g_dir, tag);
    progress_log p1;
    memset(&p1, 0, sizeof p1);
    rs_kleval_config c = config_(model, seq, 1, &p1);
    run_(&c, 1);
    check_progress_(&p1);
    check_batch_attr_(seq, "1");
    static const size_t batches[] = {3, 4, 8};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        snprintf(out, sizeof out, "%s/%s-b%zu.h5", g_dir, tag, batches[i]);
        progress_log p;
        memset(&p, 0, sizeof p);
        c = config_(model, out, batches[i], &p);
        run_(&c, 1);
        check_progress_(&p);
        rs_test_logs_equal(seq, out);
        check_batch_attr_(out, batches[i] == 3 ? "3" : "4"); /* 8: no more streams than books */
    }
}

static void test_batched_gdn(void **state)
{
    (void)state;
    batched_equals_sequential_(g_gdn, "gdn");
}

static void test_batched_mamba2(void **state)
{
    (void)state;
    batched_equals_sequential_(g_m2, "m2");
}

/* stopped by the callback after 20 chunk commits of a batch-3 run (wave 1: books 0..2 half way,
 * book 1 (149 positions, 10 chunks) nearly done), resumed with batch 2 and with batch 4 */
static void test_stop_resume_other_batch(void **state)
{
    (void)state;
    char seq[600], cut[600], cut2[600];
    snprintf(seq, sizeof seq, "%s/gdn-seq.h5", g_dir); /* from test_batched_gdn */
    snprintf(cut, sizeof cut, "%s/cut.h5", g_dir);
    snprintf(cut2, sizeof cut2, "%s/cut2.h5", g_dir);
    const int stops[] = {20, 31};
    const size_t resume_batch[] = {2, 4};
    for (int k = 0; k < 2; k++) {
        progress_log p;
        memset(&p, 0, sizeof p);
        p.stop_at = stops[k];
        rs_kleval_config c = config_(g_gdn, k ? cut2 : cut, 3, &p);
        run_(&c, 0);
        memset(&p, 0, sizeof p);
        c = config_(g_gdn, k ? cut2 : cut, resume_batch[k], &p);
        c.output = RS_KLEVAL_OUT_RESUME;
        run_(&c, 1);
        rs_test_logs_equal(seq, k ? cut2 : cut);
    }
}

/* kill -9 of `kl --batch 3` at a random moment, --resume: the sequential log */
static void test_kill9_resume_batched(void **state)
{
    (void)state;
    char seq[600], full[600], cut[600], args[4096];
    snprintf(seq, sizeof seq, "%s/cli-seq.h5", g_dir);
    snprintf(full, sizeof full, "%s/cli-full.h5", g_dir);
    snprintf(cut, sizeof cut, "%s/cli-cut.h5", g_dir);
    const char *base = "kl --model '%s' --text '%s' '%s' '%s' '%s' --tokens 400 --short truncate --chunk 16 "
                       "--policy shared:nvfp4-sr,split:nvfp4-rtn/fp16-sr,conv:fp16-sr --seed 3 --threads 1 --quiet";
    char common[3000];
    snprintf(common, sizeof common, base, g_gdn, g_paths[0], g_paths[1], g_paths[2], g_paths[3]);
    assert_int_equal(rs_test_sh(g_dir, "'%s' %s --out '%s'", g_cli, common, seq), 0);
    snprintf(args, sizeof args, "%s --batch 3", common);
    const double wall = rs_test_timed_run(g_dir, g_cli, args, full);
    assert_true(wall >= 0.0);
    rs_test_logs_equal(seq, full);
    assert_true(rs_test_kill9_run(g_cli, args, cut, wall, 0.15, 0.85));
    struct stat sb;
    if (stat(cut, &sb) == 0) {
        rs_h5log *lg = NULL; /* the interrupted log is valid and holds a prefix */
        assert_int_equal(rs_h5log_open(cut, 0, NULL, &lg), RS_OK);
        rs_h5log_close(lg);
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, args, cut), 0);
    } else { /* killed before the skeleton was in place: a fresh run is the resume */
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --out '%s'", g_cli, args, cut), 0);
    }
    rs_test_logs_equal(seq, cut);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batched_gdn),
        cmocka_unit_test(test_batched_mamba2),
        cmocka_unit_test(test_stop_resume_other_batch),
        cmocka_unit_test(test_kill9_resume_batched),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
