/* test_kl_cli.c — `replayssm kl` end to end on the random-init fixture models
 * (tests/fixtures/models/) and two PG-19 book excerpts (tests/fixtures/pg19-mini, copied into a
 * temporary PG-19 layout):
 *  - acceptance 2: conv:fp16-sr, shared:nvfp4-sr, split:nvfp4-rtn/fp32 give finite, non-zero KL;
 *    fp32 gives exactly 0 and 100% top-1 (acceptance 1); the log reads back (and with h5dump);
 *  - acceptance 3: kill -9 at a random moment, --resume, compare with an uninterrupted run:
 *    identical datasets (bit for bit);
 *  - acceptance 4: missing book, empty book, unsupported tokenizer, unknown policy, existing output,
 *    unwritable path, a file-size limit (disk full): non-zero exit, a message, existing files intact;
 *  - the no-option default names the missing bundled paths;
 *  - --policy none (the reference alone): same reference bits as with a policy, summary, resume.
 * The CLI is RS_CLI_PATH (override with the environment variable RS_KL_CLI). */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "rs_test_util.h"

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024], g_m2[1024];

static const char *cli_(void)
{
    const char *e = getenv("RS_KL_CLI");
    return e && e[0] ? e : RS_CLI_PATH;
}

/* run a shell command, stderr+stdout into g_dir/out.txt; returns the exit status */
static int sh_(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[4700];
    snprintf(full, sizeof full, "%s > '%s/out.txt' 2>&1", cmd, g_dir);
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int out_has_(const char *needle)
{
    char p[600];
    snprintf(p, sizeof p, "%s/out.txt", g_dir);
    size_t n = 0;
    char *s = rs_test_read_file(p, &n);
    if (!s) return 0;
    char *z = realloc(s, n + 1);
    z[n] = '\0';
    int found = strstr(z, needle) != NULL;
    if (!found) print_message("output was:\n%s\n", z);
    free(z);
    return found;
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_klcli_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_data, sizeof g_data, "%s/pg19", g_dir);
    snprintf(g_cli, sizeof g_cli, "%s", cli_());
    char fx[1024];
    rs_test_fixture_path(fx, sizeof fx, "pg19-mini");
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    rs_test_fixture_path(g_m2, sizeof g_m2, "models/mamba2-tiny-random");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && printf '' > '%s/test/777.txt' && printf '777,Empty,1900,x\\n' >> '%s/metadata.csv'",
             fx, g_data, g_data, g_data);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* acceptance 1 + 2 on one model */
static void check_model_(const char *model, const char *tag)
{
    char out[600];
    snprintf(out, sizeof out, "%s/acc2-%s.h5", g_dir, tag);
    assert_int_equal(sh_("'%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 160 --chunk 32 --window 16 --seed 7 "
                         "--policy fp32 --policy conv:fp16-sr --policy shared:nvfp4-sr --policy split:nvfp4-rtn/fp32 "
                         "--threads 1 --quiet --out '%s'",
                         g_cli, model, g_data, out),
                     0);
    assert_true(out_has_("mean KL"));
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_runs(lg), 4);
    assert_int_equal(rs_h5log_completed(lg, 0), 160);
    double kl[160];
    uint8_t ag[160];
    for (long r = 0; r < 4; r++) {
        assert_int_equal(rs_h5log_read_row(lg, r, "kl", 0, 160, kl), RS_OK);
        assert_int_equal(rs_h5log_read_row(lg, r, "top1_agree", 0, 160, ag), RS_OK);
        double sum = 0;
        for (int t = 0; t < 160; t++) {
            assert_true(isfinite(kl[t]));
            assert_true(kl[t] >= 0.0);
            sum += kl[t];
        }
        if (r == 0) {
            for (int t = 0; t < 160; t++) assert_true(kl[t] == 0.0 && ag[t] == 1);
        } else {
            print_message("%s run %ld (%s): mean KL %.3e\n", tag, r, rs_h5log_policy(lg, r), sum / 160);
            assert_true(sum > 0.0);
        }
    }
    char buf[64];
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    if (system("command -v h5dump >/dev/null 2>&1") == 0)
        assert_int_equal(sh_("h5dump -d /runs/run02/kl '%s'", out), 0);
    assert_int_equal(sh_("'%s' info '%s'", g_cli, out), 0);
    assert_true(out_has_("split:nvfp4-rtn/fp32"));
}

static void test_acceptance2_gdn(void **state) { (void)state; check_model_(g_gdn, "gdn"); }
static void test_acceptance2_mamba2(void **state) { (void)state; check_model_(g_m2, "mamba2"); }

/* every committed dataset of two logs identical, bit for bit */
static void compare_logs_(const char *a, const char *b)
{
    rs_h5log *x = NULL, *y = NULL;
    assert_int_equal(rs_h5log_open(a, 0, NULL, &x), RS_OK);
    assert_int_equal(rs_h5log_open(b, 0, NULL, &y), RS_OK);
    assert_int_equal(rs_h5log_n_books(x), rs_h5log_n_books(y));
    assert_int_equal(rs_h5log_n_runs(x), rs_h5log_n_runs(y));
    for (size_t bk = 0; bk < rs_h5log_n_books(x); bk++) {
        assert_int_equal(rs_h5log_completed(x, bk), rs_h5log_completed(y, bk));
        assert_int_equal(rs_h5log_completed(x, bk), (int64_t)rs_h5log_book_len(x, bk));
        const size_t n = (size_t)rs_h5log_completed(x, bk);
        double *d1 = malloc(n * 8), *d2 = malloc(n * 8);
        for (long r = -1; r < (long)rs_h5log_n_runs(x); r++) {
            const char *names[] = {"kl", "nll", "dp", "top1_agree"};
            const char *rnames[] = {"nll", "next_token", "top1"};
            const size_t nn = r < 0 ? 3 : 4;
            for (size_t k = 0; k < nn; k++) {
                const char *nm = r < 0 ? rnames[k] : names[k];
                memset(d1, 0, n * 8);
                memset(d2, 0, n * 8);
                assert_int_equal(rs_h5log_read_row(x, r, nm, bk, n, d1), RS_OK);
                assert_int_equal(rs_h5log_read_row(y, r, nm, bk, n, d2), RS_OK);
                assert_memory_equal(d1, d2, n * 8);
            }
        }
        free(d1);
        free(d2);
    }
    rs_h5log_close(x);
    rs_h5log_close(y);
}

/* acceptance 3: kill -9 at a random moment, --resume, identical to an uninterrupted run */
static void test_kill9_resume(void **state)
{
    (void)state;
    char full[600], cut[600], args[2048];
    snprintf(full, sizeof full, "%s/full.h5", g_dir);
    snprintf(cut, sizeof cut, "%s/cut.h5", g_dir);
    snprintf(args, sizeof args, "kl --model '%s' --data '%s' --books 2 --tokens 320 --chunk 16 --seed 3 "
             "--policy shared:nvfp4-sr,split:nvfp4-rtn/fp16-sr --threads 1 --quiet", g_gdn, g_data);
    const double t0 = (double)clock() / CLOCKS_PER_SEC;
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    assert_int_equal(sh_("'%s' %s --out '%s'", g_cli, args, full), 0);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    (void)t0;
    const double wall = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
    uint64_t rng = (uint64_t)time(NULL);
    int interrupted = 0;
    for (int attempt = 0; attempt < 3 && !interrupted; attempt++) {
        unlink(cut);
        /* kill somewhere in the middle 15% .. 85% of the run's wall time */
        const double at = wall * (0.15 + 0.7 * rs_test_uniform(&rng));
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            char cmd[4096];
            snprintf(cmd, sizeof cmd, "exec '%s' %s --out '%s' >/dev/null 2>&1", g_cli, args, cut);
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        struct timespec ts = {(time_t)at, (long)((at - (double)(time_t)at) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int wst = 0;
        waitpid(pid, &wst, 0);
        interrupted = WIFSIGNALED(wst);
        print_message("kill -9 after %.2f s of %.2f s: %s\n", at, wall, interrupted ? "interrupted" : "had finished");
    }
    assert_true(interrupted);
    struct stat sb;
    if (stat(cut, &sb) == 0) {
        /* the interrupted log is valid and holds a prefix */
        rs_h5log *lg = NULL;
        assert_int_equal(rs_h5log_open(cut, 0, NULL, &lg), RS_OK);
        print_message("committed before the kill: %lld + %lld positions\n", (long long)rs_h5log_completed(lg, 0),
                      (long long)rs_h5log_completed(lg, 1));
        rs_h5log_close(lg);
        /* a plain rerun refuses to overwrite it */
        assert_int_not_equal(sh_("'%s' %s --out '%s'", g_cli, args, cut), 0);
        assert_true(out_has_("--resume"));
        assert_int_equal(sh_("'%s' %s --resume --out '%s'", g_cli, args, cut), 0);
    } else {
        /* killed before the skeleton was in place: a fresh run is the resume */
        assert_int_equal(sh_("'%s' %s --out '%s'", g_cli, args, cut), 0);
    }
    compare_logs_(full, cut);
    /* resuming with another configuration is refused */
    assert_int_not_equal(sh_("'%s' %s --seed 4 --resume --out '%s'", g_cli, args, cut), 0);
    assert_true(out_has_("seed"));
}

/* `replayssm sweep`: the cartesian product lands in one log with one fp32 reference, and each
 * swept run is bit-identical to the same policy and window run alone with `kl` (sharing the
 * reference and grouping runs by window must not change any result). */
static void test_sweep_matches_kl(void **state)
{
    (void)state;
    char sw[600], one[600];
    snprintf(sw, sizeof sw, "%s/sweep.h5", g_dir);
    snprintf(one, sizeof one, "%s/one.h5", g_dir);
    assert_int_equal(sh_("'%s' sweep --model '%s' --data '%s' --books 1 --tokens 96 --chunk 32 --seed 5 "
                         "--threads 1 --quiet --modes shared,split --formats nvfp4 --rounding sr --hp fp32 "
                         "--windows 4,16 --out '%s'", g_cli, g_gdn, g_data, sw), 0);
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open(sw, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_n_runs(a), 4); /* {shared, split} x {L=4, L=16} */
    long want = -1;
    int seen[2][2] = {{0, 0}, {0, 0}};
    for (size_t r = 0; r < rs_h5log_n_runs(a); r++) {
        const int split = !strncmp(rs_h5log_policy(a, r), "split:", 6);
        const int big = rs_h5log_window(a, r) == 16;
        assert_true(rs_h5log_window(a, r) == 4 || rs_h5log_window(a, r) == 16);
        seen[split][big]++;
        if (!strcmp(rs_h5log_policy(a, r), "shared:nvfp4-sr") && big) want = (long)r;
    }
    assert_true(seen[0][0] == 1 && seen[0][1] == 1 && seen[1][0] == 1 && seen[1][1] == 1);
    assert_true(want >= 0);
    /* regression: the lists used to be split in place in argv, so the log recorded
     * "--modes shared --windows 4" */
    char cmdl[2048];
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "command_line", cmdl, sizeof cmdl), RS_OK);
    assert_non_null(strstr(cmdl, "--modes shared,split"));
    assert_non_null(strstr(cmdl, "--windows 4,16"));
    assert_int_equal(sh_("'%s' kl --model '%s' --data '%s' --books 1 --tokens 96 --chunk 32 --seed 5 "
                         "--threads 1 --quiet --policy shared:nvfp4-sr --window 16 --out '%s'",
                         g_cli, g_gdn, g_data, one), 0);
    assert_int_equal(rs_h5log_open(one, 0, NULL, &b), RS_OK);
    const size_t n = (size_t)rs_h5log_completed(a, 0);
    assert_int_equal(n, 96);
    double *x = malloc(n * 8), *y = malloc(n * 8);
    const char *names[] = {"kl", "nll", "dp", "top1_agree"};
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(rs_h5log_read_row(a, want, names[k], 0, n, x), RS_OK);
        assert_int_equal(rs_h5log_read_row(b, 0, names[k], 0, n, y), RS_OK);
        assert_memory_equal(x, y, n * 8);
    }
    /* the shared reference run too */
    assert_int_equal(rs_h5log_read_row(a, -1, "nll", 0, n, x), RS_OK);
    assert_int_equal(rs_h5log_read_row(b, -1, "nll", 0, n, y), RS_OK);
    assert_memory_equal(x, y, n * 8);
    free(x);
    free(y);
    rs_h5log_close(a);
    rs_h5log_close(b);
}

/* --policy none: the fp32 reference alone. Its /reference datasets equal those of a run with a
 * policy bit for bit (same chunk, same reference computation); /runs is empty; the printed
 * bits per token and the library's per-window summary equal means computed here from the
 * stored NLL; --resume of such a log works; info reports it; none cannot be combined. */
static void test_reference_only(void **state)
{
    (void)state;
    char ref[600], pol[600];
    snprintf(ref, sizeof ref, "%s/refonly.h5", g_dir);
    snprintf(pol, sizeof pol, "%s/refpol.h5", g_dir);
    const char *common = "--book-ids 1023 --tokens 160 --chunk 32 --threads 1 --quiet";
    assert_int_equal(sh_("'%s' kl --model '%s' --data '%s' %s --policy shared:nvfp4-sr --out '%s'", g_cli, g_gdn, g_data,
                         common, pol), 0);
    assert_int_equal(sh_("'%s' kl --model '%s' --data '%s' %s --policy none --out '%s'", g_cli, g_gdn, g_data, common, ref),
                     0);
    assert_true(out_has_("bits per token"));
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open(ref, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_open(pol, 0, NULL, &b), RS_OK);
    assert_int_equal(rs_h5log_n_runs(a), 0);
    assert_int_equal(rs_h5log_completed(a, 0), 160);
    char buf[64];
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    double x[160], y[160];
    int32_t i[160], j[160];
    assert_int_equal(rs_h5log_read_row(a, -1, "nll", 0, 160, x), RS_OK);
    assert_int_equal(rs_h5log_read_row(b, -1, "nll", 0, 160, y), RS_OK);
    assert_memory_equal(x, y, sizeof x);
    const char *ints[] = {"top1", "next_token"};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rs_h5log_read_row(a, -1, ints[k], 0, 160, i), RS_OK);
        assert_int_equal(rs_h5log_read_row(b, -1, ints[k], 0, 160, j), RS_OK);
        assert_memory_equal(i, j, sizeof i);
    }
    /* the summary vs a mean computed here (160 positions: all in window 0) */
    double sum = 0;
    for (int t = 0; t < 160; t++) {
        assert_true(isfinite(x[t]) && x[t] >= 0.0);
        sum += x[t];
    }
    rs_h5log_ref_summary rs;
    assert_int_equal(rs_h5log_reference_summary(a, &rs), RS_OK);
    assert_int_equal(rs.n, 160);
    assert_int_equal(rs.window_n[0], 160);
    assert_int_equal(rs.window_n[1], 0);
    assert_true(fabs(rs.mean_nll - sum / 160) <= 1e-12 * sum);
    assert_true(fabs(rs.window_mean_nll[0] - sum / 160) <= 1e-12 * sum);
    assert_true(isnan(rs.window_mean_nll[1]));
    rs_h5log_close(a);
    rs_h5log_close(b);
    char want[64];
    snprintf(want, sizeof want, "= %.4f bits per token", sum / 160 / log(2.0));
    assert_true(out_has_(want));
    /* --resume rebuilds a reference-only log from its committed positions */
    assert_int_equal(sh_("'%s' kl --model '%s' --data '%s' %s --policy none --resume --out '%s'", g_cli, g_gdn, g_data,
                         common, ref), 0);
    assert_int_equal(rs_h5log_open(ref, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_read_row(a, -1, "nll", 0, 160, y), RS_OK);
    assert_memory_equal(x, y, sizeof x);
    rs_h5log_close(a);
    assert_int_equal(sh_("'%s' info '%s'", g_cli, ref), 0);
    assert_true(out_has_("runs: none"));
    assert_true(out_has_(want));
    /* none is the reference alone: with another policy it is a usage error, the log untouched */
    assert_int_equal(sh_("'%s' kl --model '%s' --data '%s' %s --policy none,fp32 --force --out '%s'", g_cli, g_gdn, g_data,
                         common, ref), 2);
    assert_true(out_has_("cannot be combined"));
    assert_int_equal(rs_h5log_open(ref, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_n_runs(a), 0);
    rs_h5log_close(a);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    char out[600], keep[600];
    snprintf(out, sizeof out, "%s/bad.h5", g_dir);
    const char *common = "--tokens 64 --chunk 32 --quiet --threads 1";
    /* missing book */
    assert_int_not_equal(sh_("'%s' kl --model '%s' --data '%s' --book-ids 4242 --policy fp32 %s --out '%s'", g_cli, g_gdn,
                             g_data, common, out), 0);
    assert_true(out_has_("book 4242 not found"));
    /* empty book */
    assert_int_not_equal(sh_("'%s' kl --model '%s' --data '%s' --book-ids 777 --policy fp32 %s --out '%s'", g_cli, g_gdn,
                             g_data, common, out), 0);
    assert_true(out_has_("is empty"));
    /* unknown policy */
    assert_int_not_equal(sh_("'%s' kl --model '%s' --data '%s' --policy shared:fp7-sr %s --out '%s'", g_cli, g_gdn, g_data,
                             common, out), 0);
    assert_true(out_has_("fp7"));
    /* unsupported tokenizer: the fixture's weights with a config claiming a real vocabulary */
    char mdir[600];
    snprintf(mdir, sizeof mdir, "%s/bpe-model", g_dir);
    assert_int_equal(sh_("mkdir -p '%s' && sed 's/\"vocab_size\": 256/\"vocab_size\": 248320/' '%s/config.json' > '%s/config.json' "
                         "&& ln -s '%s/model.safetensors' '%s/model.safetensors'", mdir, g_gdn, mdir, g_gdn, mdir), 0);
    assert_int_not_equal(sh_("'%s' kl --model '%s' --data '%s' --policy fp32 %s --out '%s'", g_cli, mdir, g_data, common, out), 0);
    assert_true(out_has_("tokenizer not supported yet"));
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0); /* none of the above created the output */
    /* existing output: refused, untouched */
    snprintf(keep, sizeof keep, "%s/keep.h5", g_dir);
    FILE *f = fopen(keep, "w");
    fputs("precious", f);
    fclose(f);
    assert_int_not_equal(sh_("'%s' kl --model '%s' --data '%s' --policy fp32 %s --out '%s'", g_cli, g_gdn, g_data, common, keep), 0);
    assert_true(out_has_("exists"));
    size_t n = 0;
    char *c = rs_test_read_file(keep, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(c, "precious", 8);
    free(c);
    /* unwritable path */
    assert_int_not_equal(sh_("'%s' kl --model '%s' --data '%s' --policy fp32 %s --out /nonexistent-dir/x.h5", g_cli, g_gdn,
                             g_data, common), 0);
    assert_true(out_has_("/nonexistent-dir/x.h5"));
    /* disk full: a 64 KiB file-size limit (ulimit -f counts 1024-byte blocks); --force over the
     * precious file must leave it intact when the new log cannot even be built */
    assert_int_not_equal(sh_("ulimit -f 16; '%s' kl --model '%s' --data '%s' --policy fp32 %s --force --out '%s'", g_cli, g_gdn,
                             g_data, common, keep), 0);
    c = rs_test_read_file(keep, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(c, "precious", 8);
    free(c);
    /* exit status exactly 1 (a clean failure, not a crash) and the I/O error named */
    assert_int_equal(sh_("ulimit -f 64; '%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 2000 --chunk 16 "
                         "--policy fp32,shared:nvfp4-sr --quiet --threads 1 --out '%s/full-disk.h5'", g_cli, g_gdn, g_data, g_dir), 1);
    assert_true(out_has_("File too large"));
    /* no option: the bundled default paths are named (run in an empty folder) */
    assert_int_not_equal(sh_("cd '%s' && '%s' kl", g_dir, g_cli), 0);
    assert_true(out_has_("data/models/gdn-tiny"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acceptance2_gdn),
        cmocka_unit_test(test_acceptance2_mamba2),
        cmocka_unit_test(test_kill9_resume),
        cmocka_unit_test(test_sweep_matches_kl),
        cmocka_unit_test(test_reference_only),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
