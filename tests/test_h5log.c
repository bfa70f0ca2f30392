/* test_h5log.c — the HDF5 log (eval/rs_h5log.h): write / flush / reopen / resume, crash
 * simulation (fork, kill -9 at random moments of a writer that flushes constantly, then reopen
 * and check every committed chunk), no overwrite without force, atomic replace with force,
 * unwritable path, and h5dump readability when the tool is installed.
 * Values written are a closed-form function of (run, book, position), so every check compares
 * with an independent expectation, never with an earlier output of the code. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "rs_test_util.h"

#define NB 2
#define NR 2
#define CH 8

static char g_dir[256];
static const char *g_ids[NB] = {"1023", "105"};
static const char *g_titles[NB] = {"Bleak House, by \"Dickens\"", "Persuasion"};
static uint64_t g_len[NB];
static rs_h5log_run_info g_runs[NR];

static rs_h5log_meta meta_(uint64_t tokens, uint64_t len0, uint64_t len1)
{
    g_len[0] = len0;
    g_len[1] = len1;
    g_runs[0] = (rs_h5log_run_info){"fp32", "conv", "fp32", "fp32", 16, 0};
    g_runs[1] = (rs_h5log_run_info){"split:nvfp4-rtn/fp32", "split", "fp32", "nvfp4-rtn", 16, 42};
    rs_h5log_meta m;
    memset(&m, 0, sizeof m);
    m.tool_version = "test";
    m.git_commit = "abc";
    m.command_line = "replayssm kl --test";
    m.start_time = "2026-01-01T00:00:00Z";
    m.model_path = "/m";
    m.data_path = "/d";
    m.model_config_hash = "fnv1a64:0000000000000001";
    m.model_type = "qwen3_5_text";
    m.tokenizer = "byte";
    m.split = "test";
    m.short_books = "skip";
    m.tokens = tokens;
    m.chunk = CH;
    m.n_books = NB;
    m.book_ids = g_ids;
    m.book_titles = g_titles;
    m.book_len = g_len;
    m.n_runs = NR;
    m.runs = g_runs;
    return m;
}

/* the closed-form values */
static double v_kl(size_t r, size_t b, uint64_t t) { return r == 0 ? 0.0 : 1e-3 * (double)(b + 1) + 1e-7 * (double)t; }
static double v_nll(size_t r, size_t b, uint64_t t) { return 1.0 + 0.5 * (double)r + 1e-4 * (double)((t * 31 + b) % 97); }
static double v_dp(size_t r, size_t b, uint64_t t) { return r == 0 ? 0.0 : 1e-5 * (double)((t + b) % 11) - 5e-5; }
static uint8_t v_ag(size_t r, size_t b, uint64_t t) { return r == 0 ? 1 : (uint8_t)((t + b) % 3 != 0); }
static int32_t v_tok(size_t b, uint64_t t) { return (int32_t)((t * 7 + b * 13) % 256); }

static rs_status write_chunk_(rs_h5log *lg, size_t b, uint64_t pos, size_t n)
{
    double kl[NR][CH], nll[NR][CH], dp[NR][CH], nref[CH];
    uint8_t ag[NR][CH];
    int32_t tok[CH], top[CH];
    for (size_t i = 0; i < n; i++) {
        const uint64_t t = pos + i;
        tok[i] = v_tok(b, t);
        top[i] = (int32_t)(t % 5);
        nref[i] = v_nll(0, b, t) - 0.25;
        for (size_t r = 0; r < NR; r++) {
            kl[r][i] = v_kl(r, b, t);
            nll[r][i] = v_nll(r, b, t);
            dp[r][i] = v_dp(r, b, t);
            ag[r][i] = v_ag(r, b, t);
        }
    }
    rs_h5log_run_chunk rc[NR];
    for (size_t r = 0; r < NR; r++) rc[r] = (rs_h5log_run_chunk){kl[r], nll[r], dp[r], ag[r]};
    return rs_h5log_write_chunk(lg, b, pos, n, tok, nref, top, rc);
}

/* write every book from its committed position to its end */
static rs_status write_all_(rs_h5log *lg)
{
    for (size_t b = 0; b < NB; b++) {
        for (uint64_t pos = (uint64_t)rs_h5log_completed(lg, b); pos < rs_h5log_book_len(lg, b); pos += CH) {
            const size_t n = (size_t)(rs_h5log_book_len(lg, b) - pos < CH ? rs_h5log_book_len(lg, b) - pos : CH);
            rs_status st = write_chunk_(lg, b, pos, n);
            if (st != RS_OK) {
                print_error("book %zu position %llu: %s\n", b, (unsigned long long)pos, rs_last_error());
                return st;
            }
        }
    }
    return RS_OK;
}

/* every committed position of the log holds the closed-form values */
static void check_committed_(const rs_h5log *lg)
{
    for (size_t b = 0; b < NB; b++) {
        const size_t n = (size_t)rs_h5log_completed(lg, b);
        if (!n) continue;
        double *d = malloc(n * sizeof(double));
        uint8_t *u = malloc(n);
        int32_t *k = malloc(n * sizeof(int32_t));
        assert_int_equal(rs_h5log_read_row(lg, -1, "next_token", b, n, k), RS_OK);
        for (size_t t = 0; t < n; t++) assert_int_equal(k[t], v_tok(b, t));
        for (size_t r = 0; r < NR; r++) {
            assert_int_equal(rs_h5log_read_row(lg, (long)r, "kl", b, n, d), RS_OK);
            for (size_t t = 0; t < n; t++) assert_true(d[t] == v_kl(r, b, t));
            assert_int_equal(rs_h5log_read_row(lg, (long)r, "nll", b, n, d), RS_OK);
            for (size_t t = 0; t < n; t++) assert_true(d[t] == v_nll(r, b, t));
            assert_int_equal(rs_h5log_read_row(lg, (long)r, "dp", b, n, d), RS_OK);
            for (size_t t = 0; t < n; t++) assert_true(d[t] == v_dp(r, b, t));
            assert_int_equal(rs_h5log_read_row(lg, (long)r, "top1_agree", b, n, u), RS_OK);
            for (size_t t = 0; t < n; t++) assert_int_equal(u[t], v_ag(r, b, t));
        }
        free(d);
        free(u);
        free(k);
    }
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_h5log_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_write_reopen_summary(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/a.h5", g_dir);
    rs_h5log_meta m = meta_(100, 100, 37);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_OK);
    assert_int_equal(write_all_(lg), RS_OK);
    assert_int_equal(rs_h5log_set_nonfinite(lg, 1, 1, 30, 2, 3), RS_OK);
    /* chunk-rule violations */
    assert_int_equal(write_chunk_(lg, 0, 3, 2), RS_E_INVAL);   /* unaligned */
    assert_int_equal(write_chunk_(lg, 0, 96, 8), RS_E_INVAL);  /* past the book */
    rs_kl_summary s[NR];
    for (size_t r = 0; r < NR; r++) assert_int_equal(rs_h5log_summarize(lg, r, &s[r]), RS_OK);
    assert_int_equal(rs_h5log_finish(lg, "2026-01-01T00:01:00Z", s), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);

    assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_completed(lg, 0), 100);
    assert_int_equal(rs_h5log_completed(lg, 1), 37);
    assert_string_equal(rs_h5log_book_id(lg, 1), "105");
    assert_string_equal(rs_h5log_policy(lg, 1), "split:nvfp4-rtn/fp32");
    check_committed_(lg);
    int64_t p;
    int32_t L, H;
    assert_int_equal(rs_h5log_get_nonfinite(lg, 1, 1, &p, &L, &H), RS_OK);
    assert_true(p == 30 && L == 2 && H == 3);
    assert_int_equal(rs_h5log_get_nonfinite(lg, 1, 0, &p, &L, &H), RS_OK);
    assert_true(p == -1 && L == -1 && H == -1);
    char buf[256];
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    assert_int_equal(rs_h5log_get_attr_string(lg, "/runs/run01", "policy", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "split:nvfp4-rtn/fp32");
    /* summary of run 1 against the closed form: mean KL over 137 positions */
    double sum = 0;
    size_t agree = 0;
    for (size_t b = 0; b < NB; b++)
        for (uint64_t t = 0; t < g_len[b]; t++) { sum += v_kl(1, b, t); agree += v_ag(1, b, t); }
    assert_int_equal(s[1].n, 137);
    assert_true(fabs(s[1].mean_kl - sum / 137) <= 1e-15);
    assert_true(fabs(s[1].same_top1_pct - 100.0 * (double)agree / 137) <= 1e-12);
    assert_true(s[0].mean_kl == 0.0 && s[0].same_top1_pct == 100.0);
    assert_int_equal(rs_h5log_close(lg), RS_OK);

    /* h5dump reads it (when installed) */
    if (system("command -v h5dump >/dev/null 2>&1") == 0) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "h5dump -A '%s' >/dev/null 2>&1", path);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "h5dump -d /runs/run01/kl '%s' >/dev/null 2>&1", path);
        assert_int_equal(system(cmd), 0);
    }
}

static void test_resume_and_mismatch(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/r.h5", g_dir);
    rs_h5log_meta m = meta_(64, 64, 64);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_OK);
    assert_int_equal(write_chunk_(lg, 0, 0, CH), RS_OK);
    assert_int_equal(write_chunk_(lg, 0, CH, CH), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    /* a different configuration is refused, naming the field */
    rs_h5log_meta bad = m;
    bad.chunk = 16;
    assert_int_equal(rs_h5log_open(path, 1, &bad, &lg), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "chunk"));
    bad = m;
    bad.model_config_hash = "fnv1a64:ffff";
    assert_int_equal(rs_h5log_open(path, 1, &bad, &lg), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "model_config_hash"));
    rs_h5log_run_info runs2[NR];
    memcpy(runs2, g_runs, sizeof runs2);
    runs2[1].seed = 43;
    bad = m;
    bad.runs = runs2;
    assert_int_equal(rs_h5log_open(path, 1, &bad, &lg), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "seed"));
    /* the matching one continues */
    assert_int_equal(rs_h5log_open(path, 1, &m, &lg), RS_OK);
    assert_int_equal(rs_h5log_completed(lg, 0), 2 * CH);
    assert_int_equal(rs_h5log_completed(lg, 1), 0);
    assert_int_equal(write_all_(lg), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_completed(lg, 0), 64);
    assert_int_equal(rs_h5log_completed(lg, 1), 64);
    check_committed_(lg);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    /* not a log */
    char other[512];
    snprintf(other, sizeof other, "%s/not.h5", g_dir);
    FILE *f = fopen(other, "w");
    fputs("plain text", f);
    fclose(f);
    assert_int_equal(rs_h5log_open(other, 0, NULL, &lg), RS_E_FORMAT);
}

static void test_no_overwrite_force_unwritable(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/keep.h5", g_dir);
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    rs_h5log_meta m = meta_(16, 16, 16);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "--force"));
    size_t n = 0;
    char *c = rs_test_read_file(path, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(c, "precious", 8);
    free(c);
    /* force: replaced atomically by a complete log */
    assert_int_equal(rs_h5log_create(path, &m, 1, &lg), RS_OK);
    assert_int_equal(write_all_(lg), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
    check_committed_(lg);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    /* unwritable folder (skipped as root: permissions do not bind root) */
    char ro[512];
    snprintf(ro, sizeof ro, "%s/ro", g_dir);
    mkdir(ro, 0555);
    char p2[600];
    snprintf(p2, sizeof p2, "%s/x.h5", ro);
    if (geteuid() != 0) {
        assert_int_equal(rs_h5log_create(p2, &m, 0, &lg), RS_E_IO);
        assert_non_null(strstr(rs_last_error(), "cannot create"));
    }
    assert_int_equal(rs_h5log_create("/nonexistent-dir/x.h5", &m, 0, &lg), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "/nonexistent-dir/x.h5"));
    /* no temporary left behind in g_dir */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '\\.tmp\\.'", g_dir);
    assert_int_not_equal(system(cmd), 0);
}

/* kill -9 a writer at random moments; the file must open and every committed chunk be intact;
 * --resume (open writable + write the rest) must give the full closed-form content. */
/* A reference-only log (`kl --policy none`): n_runs 0, runs NULL. Create, write in chunks with no
 * run values, finish with no summaries, reopen; the reference summary's overall and per-window
 * means equal long-double sums of the closed-form values written; --resume (rebuild from the
 * committed positions) keeps them; a log with runs still refuses a write without run values. */
static void test_reference_only(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/refonly.h5", g_dir);
    rs_h5log_meta m = meta_(3000, 3000, 1500);
    m.n_runs = 0;
    m.runs = NULL;
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_runs(lg), 0);
    for (size_t b = 0; b < NB; b++)
        for (uint64_t pos = 0; pos < g_len[b]; pos += CH) {
            const size_t n = (size_t)(g_len[b] - pos < CH ? g_len[b] - pos : CH);
            double nref[CH];
            int32_t tok[CH], top[CH];
            for (size_t i = 0; i < n; i++) {
                nref[i] = v_nll(0, b, pos + i);
                tok[i] = v_tok(b, pos + i);
                top[i] = (int32_t)((pos + i) % 5);
            }
            assert_int_equal(rs_h5log_write_chunk(lg, b, pos, n, tok, nref, top, NULL), RS_OK);
        }
    assert_int_equal(rs_h5log_finish(lg, "2026-01-01T00:01:00Z", NULL), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    /* expected: windows [0,1K) [1K,2K) [2K,4K) over both books */
    long double ws[3] = {0, 0, 0}, all = 0;
    size_t wn[3] = {0, 0, 0}, n_all = 0;
    for (size_t b = 0; b < NB; b++)
        for (uint64_t t = 0; t < g_len[b]; t++) {
            const size_t w = t < 1024 ? 0 : t < 2048 ? 1 : 2;
            ws[w] += v_nll(0, b, t);
            wn[w]++;
            all += v_nll(0, b, t);
            n_all++;
        }
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
        assert_int_equal(rs_h5log_n_runs(lg), 0);
        rs_h5log_ref_summary rs;
        assert_int_equal(rs_h5log_reference_summary(lg, &rs), RS_OK);
        assert_int_equal(rs.n, n_all);
        assert_true(fabs(rs.mean_nll - (double)(all / n_all)) <= 1e-13);
        for (int w = 0; w < 3; w++) {
            assert_int_equal(rs.window_n[w], wn[w]);
            assert_true(fabs(rs.window_mean_nll[w] - (double)(ws[w] / wn[w])) <= 1e-13);
        }
        assert_int_equal(rs.window_n[3], 0);
        assert_true(isnan(rs.window_mean_nll[3]));
        double v[3000];
        assert_int_equal(rs_h5log_read_row(lg, -1, "nll", 1, 1500, v), RS_OK);
        for (uint64_t t = 0; t < 1500; t++) assert_true(v[t] == v_nll(0, 1, t));
        assert_int_equal(rs_h5log_close(lg), RS_OK);
        if (pass == 0) { /* --resume rebuilds the file from its committed positions */
            assert_int_equal(rs_h5log_open(path, 1, &m, &lg), RS_OK);
            assert_int_equal(rs_h5log_close(lg), RS_OK);
        }
    }
    /* a log with runs: run values are required */
    snprintf(path, sizeof path, "%s/withruns.h5", g_dir);
    rs_h5log_meta m2 = meta_(16, 16, 16);
    assert_int_equal(rs_h5log_create(path, &m2, 0, &lg), RS_OK);
    double nref[CH] = {0};
    int32_t tok[CH] = {0}, top[CH] = {0};
    assert_int_equal(rs_h5log_write_chunk(lg, 0, 0, CH, tok, nref, top, NULL), RS_E_INVAL);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
}

static void test_crash_kill9(void **state)
{
    (void)state;
    uint64_t rng = 2024;
    const int trials = 12;
    int killed_mid = 0;
    for (int k = 0; k < trials; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/crash%d.h5", g_dir, k);
        rs_h5log_meta m = meta_(4000, 4000, 3001);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            rs_h5log *lg = NULL;
            if (rs_h5log_create(path, &m, 0, &lg) != RS_OK) _exit(3);
            if (write_all_(lg) != RS_OK) _exit(4);
            rs_h5log_close(lg);
            _exit(0);
        }
        /* 2 .. 60 ms: the writer flushes every 8 positions, so kills land anywhere */
        const long us = 2000 + (long)(rs_test_uniform(&rng) * 58000.0);
        struct timespec ts = {0, us * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int wst = 0;
        waitpid(pid, &wst, 0);
        if (WIFSIGNALED(wst)) killed_mid++;
        else assert_int_equal(WEXITSTATUS(wst), 0);
        struct stat sb;
        if (stat(path, &sb) != 0) continue; /* killed before the skeleton was placed: nothing to check */
        rs_h5log *lg = NULL;
        assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
        check_committed_(lg);
        assert_int_equal(rs_h5log_close(lg), RS_OK);
        if (system("command -v h5dump >/dev/null 2>&1") == 0) {
            char cmd[700];
            snprintf(cmd, sizeof cmd, "h5dump -H '%s' >/dev/null 2>&1", path);
            assert_int_equal(system(cmd), 0);
        }
        assert_int_equal(rs_h5log_open(path, 1, &m, &lg), RS_OK);
        assert_int_equal(write_all_(lg), RS_OK);
        assert_int_equal(rs_h5log_close(lg), RS_OK);
        assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
        assert_int_equal(rs_h5log_completed(lg, 0), 4000);
        assert_int_equal(rs_h5log_completed(lg, 1), 3001);
        check_committed_(lg);
        assert_int_equal(rs_h5log_close(lg), RS_OK);
    }
    print_message("kill -9 trials: %d of %d killed mid-write\n", killed_mid, trials);
    assert_true(killed_mid >= trials / 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_reopen_summary),
        cmocka_unit_test(test_resume_and_mismatch),
        cmocka_unit_test(test_no_overwrite_force_unwritable),
        cmocka_unit_test(test_reference_only),
        cmocka_unit_test(test_crash_kill9),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
