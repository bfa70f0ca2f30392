/* test_kl_cli.c — `replayssm kl` end to end on the random-init fixture models
 * (tests/fixtures/models/) and two PG-19 book excerpts (tests/fixtures/pg19-mini, copied into a
 * temporary PG-19 layout):
 *  - acceptance 2: conv:fp16-sr, shared:nvfp4-sr, split:nvfp4-rtn/fp32 give finite, non-zero KL;
 *    fp32 gives exactly 0 and 100% top-1 (acceptance 1); the log reads back (and with h5dump);
 *  - acceptance 4: missing book, empty book, unknown policy, a book listed twice, existing output,
 *    unwritable path, a file-size limit (disk full): the exit status of each (1 failure, 2 usage
 *    error), the message, existing files intact; an unsupported tokenizer is refused;
 *  - the no-option default names the missing bundled paths;
 *  - sweep: the product and its command line; one swept run bit-identical to `kl` alone;
 *  - --policy none (the reference alone): the printed bits per token, resume, info.
 * kill -9 and --resume: test_kl_cli_resume.c; the library underneath: test_kleval*.c.
 * The CLI is RS_CLI_PATH (override with the environment variable RS_KL_CLI). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "rs_test_util.h"

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024], g_m2[1024];

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_klcli_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_data, sizeof g_data, "%s/pg19", g_dir);
    const char *e = getenv("RS_KL_CLI");
    snprintf(g_cli, sizeof g_cli, "%s", e && e[0] ? e : RS_CLI_PATH);
    char fx[1024], cmd[4096];
    rs_test_fixture_path(fx, sizeof fx, "pg19-mini");
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    rs_test_fixture_path(g_m2, sizeof g_m2, "models/mamba2-tiny-random");
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
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 160 --chunk 32 --window 16 --seed 7 "
                         "--policy fp32 --policy conv:fp16-sr --policy shared:nvfp4-sr --policy split:nvfp4-rtn/fp32 "
                         "--threads 1 --quiet --out '%s'", g_cli, model, g_data, out), 0);
    assert_true(rs_test_out_has(g_dir, "mean KL"));
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
            assert_true(isfinite(kl[t]) && kl[t] >= 0.0);
            assert_true(r > 0 || (kl[t] == 0.0 && ag[t] == 1)); /* fp32: the reference itself */
            sum += kl[t];
        }
        print_message("%s run %ld (%s): mean KL %.3e\n", tag, r, rs_h5log_policy(lg, r), sum / 160);
        assert_true(r == 0 || sum > 0.0);
    }
    char buf[64];
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    if (system("command -v h5dump >/dev/null 2>&1") == 0)
        assert_int_equal(rs_test_sh(g_dir, "h5dump -d /runs/run02/kl '%s'", out), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, out), 0);
    assert_true(rs_test_out_has(g_dir, "split:nvfp4-rtn/fp32"));
}

static void test_acceptance2_gdn(void **state) { (void)state; check_model_(g_gdn, "gdn"); }
static void test_acceptance2_mamba2(void **state) { (void)state; check_model_(g_m2, "mamba2"); }

/* `replayssm sweep`: the cartesian product lands in one log (window-major within a mode) with
 * the command line as typed, and a swept run equals the same policy and window alone with `kl`
 * (every run of a mix vs alone: test_kleval.c). */
static void test_sweep(void **state)
{
    (void)state;
    char sw[600], one[600], cmdl[2048];
    snprintf(sw, sizeof sw, "%s/sweep.h5", g_dir);
    snprintf(one, sizeof one, "%s/one.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' sweep --model '%s' --data '%s' --books 1 --tokens 96 --chunk 32 --seed 5 --threads 1 "
                         "--quiet --modes shared,split --formats nvfp4 --rounding sr --hp fp32 --windows 4,16 --out '%s'",
                         g_cli, g_gdn, g_data, sw), 0);
    assert_true(rs_test_out_has(g_dir, "split:nvfp4-sr/fp32"));
    rs_h5log *a = NULL;
    assert_int_equal(rs_h5log_open(sw, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_n_runs(a), 4); /* {shared, split} x {L=4, L=16} */
    const char *want[] = {"shared:nvfp4-sr", "shared:nvfp4-sr", "split:nvfp4-sr/fp32", "split:nvfp4-sr/fp32"};
    for (size_t r = 0; r < 4; r++) {
        assert_string_equal(rs_h5log_policy(a, r), want[r]);
        assert_int_equal(rs_h5log_window(a, r), r % 2 ? 16 : 4);
    }
    /* regression: the lists used to be split in place in argv ("--modes shared --windows 4") */
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "command_line", cmdl, sizeof cmdl), RS_OK);
    assert_non_null(strstr(cmdl, "--modes shared,split"));
    assert_non_null(strstr(cmdl, "--windows 4,16"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --books 1 --tokens 96 --chunk 32 --seed 5 --threads 1 --quiet "
                         "--policy shared:nvfp4-sr --window 16 --out '%s'", g_cli, g_gdn, g_data, one), 0);
    rs_h5log *b = NULL;
    assert_int_equal(rs_h5log_open(one, 0, NULL, &b), RS_OK);
    double x[96], y[96];
    const char *names[] = {"nll", "kl", "nll", "dp", "top1_agree"};
    for (long k = 0; k < 5; k++) { /* the reference's nll, then run 1 (shared, L = 16) vs run 0 */
        memset(x, 0, sizeof x);
        memset(y, 0, sizeof y);
        assert_int_equal(rs_h5log_read_row(a, k ? 1 : -1, names[k], 0, 96, x), RS_OK);
        assert_int_equal(rs_h5log_read_row(b, k ? 0 : -1, names[k], 0, 96, y), RS_OK);
        assert_memory_equal(x, y, sizeof x);
    }
    rs_h5log_close(a);
    rs_h5log_close(b);
}

/* --policy none: the fp32 reference alone (its bits equal a policy run's: test_kleval.c). The
 * printed bits per token equal the mean of the stored NLL computed here; --resume of such a log
 * works; info reports it. */
static void test_reference_only(void **state)
{
    (void)state;
    char ref[600], want[64];
    snprintf(ref, sizeof ref, "%s/refonly.h5", g_dir);
    const char *common = "--book-ids 1023 --tokens 160 --chunk 32 --threads 1 --quiet --policy none";
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --out '%s'", g_cli, g_gdn, g_data, common, ref), 0);
    rs_h5log *a = NULL;
    double x[160], sum = 0;
    assert_int_equal(rs_h5log_open(ref, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_n_runs(a), 0);
    assert_int_equal(rs_h5log_read_row(a, -1, "nll", 0, 160, x), RS_OK);
    rs_h5log_close(a);
    for (int t = 0; t < 160; t++) sum += x[t];
    snprintf(want, sizeof want, "= %.4f bits per token", sum / 160 / log(2.0));
    assert_true(rs_test_out_has(g_dir, want));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --resume --out '%s'", g_cli, g_gdn, g_data, common, ref), 0);
    assert_true(rs_test_out_has(g_dir, want));
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, ref), 0);
    assert_true(rs_test_out_has(g_dir, "runs: none"));
    assert_true(rs_test_out_has(g_dir, want));
}

/* a failing command: exit status `rc`, `needle` printed, and no output file left */
static void fails_(int rc, const char *needle, const char *model, const char *args, const char *out)
{
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --tokens 64 --chunk 32 --quiet --threads 1 %s --out '%s'",
                         g_cli, model, g_data, args, out), rc);
    assert_true(rs_test_out_has(g_dir, needle));
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    char out[600], keep[600], mdir[600];
    snprintf(out, sizeof out, "%s/bad.h5", g_dir);
    fails_(1, "book 4242 not found", g_gdn, "--book-ids 4242 --policy fp32", out);
    fails_(1, "is empty", g_gdn, "--book-ids 777 --policy fp32", out);
    fails_(2, "fp7", g_gdn, "--policy shared:fp7-sr", out);
    fails_(2, "book 1023 listed twice", g_gdn, "--book-ids 1023,105,1023 --policy fp32", out);
    fails_(2, "cannot be combined", g_gdn, "--policy none,fp32", out);
    /* empty list items are refused, not skipped (issue 14: '' and ',' ran the reference alone) */
    fails_(2, "--policy: empty item in ''", g_gdn, "--policy ''", out);
    fails_(2, "--policy: empty item in ','", g_gdn, "--policy ,", out);
    fails_(2, "--policy: empty item in 'fp32,,shared:nvfp4-sr'", g_gdn, "--policy fp32,,shared:nvfp4-sr", out);
    fails_(2, "--book-ids: empty item in '1023,'", g_gdn, "--book-ids 1023, --policy fp32", out);
    fails_(2, "exclude each other", g_gdn, "--policy fp32 --resume --force", out);
    fails_(1, "does not exist", g_gdn, "--policy fp32 --resume", out);
    /* unsupported tokenizer: the fixture's weights with a config claiming a real vocabulary */
    snprintf(mdir, sizeof mdir, "%s/bpe-model", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s' && sed 's/\"vocab_size\": 256/\"vocab_size\": 248320/' '%s/config.json' > "
                         "'%s/config.json' && ln -s '%s/model.safetensors' '%s/model.safetensors'", mdir, g_gdn, mdir,
                         g_gdn, mdir), 0);
    fails_(1, "tokenizer not supported yet", mdir, "--policy fp32", out);
    /* existing output: refused, untouched */
    snprintf(keep, sizeof keep, "%s/keep.h5", g_dir);
    FILE *f = fopen(keep, "w");
    fputs("precious", f);
    fclose(f);
    const char *common = "--tokens 64 --chunk 32 --quiet --threads 1 --policy fp32";
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --out '%s'", g_cli, g_gdn, g_data, common, keep), 1);
    assert_true(rs_test_out_has(g_dir, "exists"));
    /* unwritable path */
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --out /nonexistent-dir/x.h5", g_cli, g_gdn, g_data, common), 1);
    assert_true(rs_test_out_has(g_dir, "/nonexistent-dir/x.h5"));
    /* disk full: a 64 KiB file-size limit (ulimit -f counts 1024-byte blocks); --force over the
     * precious file must leave it intact when the new log cannot even be built */
    assert_int_not_equal(rs_test_sh(g_dir, "ulimit -f 16; '%s' kl --model '%s' --data '%s' %s --force --out '%s'", g_cli, g_gdn, g_data,
                             common, keep), 0);
    size_t n = 0;
    char *c = rs_test_read_file(keep, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(c, "precious", 8);
    free(c);
    /* exit status exactly 1 (a clean failure, not a crash) and the I/O error named */
    assert_int_equal(rs_test_sh(g_dir, "ulimit -f 64; '%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 2000 --chunk 16 "
                         "--policy fp32,shared:nvfp4-sr --quiet --threads 1 --out '%s/full-disk.h5'", g_cli, g_gdn, g_data, g_dir), 1);
    assert_true(rs_test_out_has(g_dir, "File too large"));
    /* no option: the bundled default paths are named (run in an empty folder) */
    assert_int_equal(rs_test_sh(g_dir, "cd '%s' && '%s' kl", g_dir, g_cli), 1);
    assert_true(rs_test_out_has(g_dir, "the bundled default model data/models/gdn-tiny is not installed"));
    assert_int_equal(rs_test_sh(g_dir, "cd '%s' && '%s' kl --model '%s'", g_dir, g_cli, g_gdn), 1);
    assert_true(rs_test_out_has(g_dir, "the bundled default books data/pg19-sample are not installed"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acceptance2_gdn),
        cmocka_unit_test(test_acceptance2_mamba2),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_reference_only),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
