/* test_kl_cli_resume.c — `replayssm kl` killed with kill -9 at a random moment on the
 * random-init fixture model gdn-tiny-random and the PG-19 excerpts of
 * tests/fixtures/pg19-mini: the interrupted log is valid, a plain rerun refuses to overwrite it,
 * --resume completes it, and every dataset then equals an uninterrupted run bit for bit; resuming
 * with another configuration is refused. (The library's stop / resume: test_kleval.c.)
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

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024];

static int setup_(void **state)
{
    (void)state;
    if (rs_test_cli_workdir("rs_klkill", g_dir, sizeof g_dir, g_data, sizeof g_data, g_cli, sizeof g_cli)) return -1;
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_rmdir(g_dir);
}

/* kill -9 at a random moment, --resume, identical to an uninterrupted run */
static void test_kill9_resume(void **state)
{
    (void)state;
    char full[600], cut[600], args[2048];
    snprintf(full, sizeof full, "%s/full.h5", g_dir);
    snprintf(cut, sizeof cut, "%s/cut.h5", g_dir);
    snprintf(args, sizeof args, "kl --model '%s' --data '%s' --books 2 --tokens 320 --chunk 16 --seed 3 "
             "--policy shared:nvfp4-sr,split:nvfp4-rtn/fp16-sr --threads 1 --quiet", g_gdn, g_data);
    const double wall = rs_test_timed_run(g_dir, g_cli, args, full);
    assert_true(wall >= 0.0);
    /* kill -9 somewhere in the middle 15% .. 85% of the run's wall time */
    assert_true(rs_test_kill9_run(g_cli, args, cut, wall, 0.15, 0.85));
    struct stat sb;
    if (stat(cut, &sb) == 0) {
        rs_h5log *lg = NULL; /* the interrupted log is valid and holds a prefix */
        assert_int_equal(rs_h5log_open(cut, 0, NULL, &lg), RS_OK);
        rs_h5log_close(lg);
        /* a plain rerun refuses to overwrite it */
        assert_int_not_equal(rs_test_sh(g_dir, "'%s' %s --out '%s'", g_cli, args, cut), 0);
        assert_true(rs_test_out_has(g_dir, "--resume"));
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, args, cut), 0);
    } else {
        /* killed before the skeleton was in place: a fresh run is the resume */
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --out '%s'", g_cli, args, cut), 0);
    }
    rs_test_logs_equal(full, cut);
    /* resuming with another configuration is refused */
    assert_int_not_equal(rs_test_sh(g_dir, "'%s' %s --seed 4 --resume --out '%s'", g_cli, args, cut), 0);
    assert_true(rs_test_out_has(g_dir, "seed"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_resume),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
