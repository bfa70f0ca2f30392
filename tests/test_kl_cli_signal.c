/* test_kl_cli_signal.c — `replayssm kl` stopped by SIGINT / SIGTERM (eval/cli/cli_signal.c,
 * rs_kleval_config.cancel) on the fixture model gdn-tiny-random and the PG-19
 * excerpts of tests/fixtures/pg19-mini:
 *  - SIGINT in the middle of the run: exit status 130, one line naming --resume on stderr, the
 *    log closed with status "interrupted" (root and history) holding a committed prefix, and
 *    --resume completes it to datasets equal bit for bit to an uninterrupted run's;
 *  - SIGTERM: the same with exit status 143;
 *  - a second SIGINT 20 ms after the first (inside the chunk in flight): the process ends at
 *    once by the signal; the log still opens and --resume completes it, bit for bit equal.
 * The CLI is RS_CLI_PATH (override with the environment variable RS_KL_CLI). */
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

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024], g_args[2048], g_full[600];
static double g_wall;

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_klsig_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_data, sizeof g_data, "%s/pg19", g_dir);
    const char *e = getenv("RS_KL_CLI");
    snprintf(g_cli, sizeof g_cli, "%s", e && e[0] ? e : RS_CLI_PATH);
    char fx[1024];
    rs_test_fixture_path(fx, sizeof fx, "pg19-mini");
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    if (rs_test_sh(g_dir, "cp -r '%s' '%s'", fx, g_data) != 0) return -1;
    /* chunks of 64 positions (~0.1 s each here), so a second signal 20 ms after the first lands
     * inside the chunk in flight */
    snprintf(g_args, sizeof g_args, "kl --model '%s' --data '%s' --books 2 --tokens 640 --chunk 64 --seed 3 "
             "--policy shared:nvfp4-sr,split:nvfp4-rtn/fp16-sr --threads 1 --quiet", g_gdn, g_data);
    snprintf(g_full, sizeof g_full, "%s/full.h5", g_dir);
    g_wall = rs_test_timed_run(g_dir, g_cli, g_args, g_full);
    fprintf(stderr, "uninterrupted run: %.2f s\n", g_wall);
    return g_wall > 0.0 ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_sh("/tmp", "rm -rf '%s'", g_dir);
}

/* the run stopped by `sig` (count times) somewhere in the middle; returns its wait status */
static int stopped_run_(const char *out, const char *err, int sig, int count)
{
    uint64_t rng = (uint64_t)time(NULL);
    int wst = 0;
    for (int attempt = 0; attempt < 5; attempt++) {
        const double at = g_wall * (0.25 + 0.4 * rs_test_uniform(&rng));
        wst = rs_test_signal_run(g_cli, g_args, out, err, at, sig, count);
        if (wst == RS_TEST_SIGNAL_LATE) { /* (seen in CI beside a build: exit 130 before the second signal) */
            fprintf(stderr, "signal %d after %.2f s of %.2f s: the run had ended before the second one; again\n", sig,
                    at, g_wall);
            continue;
        }
        fprintf(stderr, "signal %d (x%d) after %.2f s of %.2f s: wait status 0x%x\n", sig, count, at, g_wall, wst);
        if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0) continue; /* finished before the signal: again */
        if (count > 1 && WIFEXITED(wst) && WEXITSTATUS(wst) == 128 + sig)
            continue; /* the graceful stop of the first signal can end between the harness's check that the run is
                         still going and the second kill (the process already in its exit; seen in CI):
                         again; a second signal that is really ignored ends every attempt this way, and
                         the caller's assertion then fails */
        struct stat sb;
        if (count == 1 && WIFSIGNALED(wst) && stat(out, &sb) != 0) continue; /* signalled during start-up,
            before the handler and the log existed (a loaded machine): again; a handler that fails with
            the log in place still fails the test */
        break;
    }
    return wst;
}

static void graceful_(int sig, int want_rc, const char *name)
{
    char out[600], err[600], buf[256];
    snprintf(out, sizeof out, "%s/%s.h5", g_dir, name);
    snprintf(err, sizeof err, "%s/%s.err", g_dir, name);
    const int wst = stopped_run_(out, err, sig, 1);
    assert_true(WIFEXITED(wst));
    assert_int_equal(WEXITSTATUS(wst), want_rc);
    size_t n = 0;
    char *msg = (char *)rs_test_read_file(err, &n);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "interrupted by"));
    assert_non_null(strstr(msg, "--resume"));
    free(msg);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "interrupted");
    assert_int_equal(rs_h5log_get_history(lg, rs_h5log_history_count(lg) - 1, "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "interrupted");
    const int64_t done = rs_h5log_completed(lg, 0) + rs_h5log_completed(lg, 1);
    assert_true(done < 2 * 640); /* stopped before the end */
    rs_h5log_close(lg);
    assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, g_args, out), 0);
    rs_test_logs_equal(g_full, out);
}

static void test_sigint(void **state)
{
    (void)state;
    graceful_(SIGINT, 130, "int");
}

static void test_sigterm(void **state)
{
    (void)state;
    graceful_(SIGTERM, 143, "term");
}

static void test_second_sigint_kills(void **state)
{
    (void)state;
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/twice.h5", g_dir);
    snprintf(err, sizeof err, "%s/twice.err", g_dir);
    const int wst = stopped_run_(out, err, SIGINT, 2);
    assert_true(WIFSIGNALED(wst));
    assert_int_equal(WTERMSIG(wst), SIGINT);
    struct stat sb;
    if (stat(out, &sb) == 0) { /* the committed prefix is valid and resumes */
        rs_h5log *lg = NULL;
        assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
        rs_h5log_close(lg);
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, g_args, out), 0);
    } else { /* killed before the skeleton was in place */
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --out '%s'", g_cli, g_args, out), 0);
    }
    rs_test_logs_equal(g_full, out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_second_sigint_kills),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
