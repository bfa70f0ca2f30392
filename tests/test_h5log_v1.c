/* test_h5log_v1.c — logs of format version 1 stay readable and resumable (docs/hdf5-layout.md
 * "Versions"), on the committed log tests/fixtures/h5log-v1/kl_gdn_v1.h5 written by the layout-1
 * build (its README says how):
 *  - rs_h5log_open reads it; its history is one entry made of its root command_line / status,
 *    it records no model files; `replayssm info` prints it;
 *  - a copy with the commit record cut back to [32, 0] positions and status "running" (what an
 *    interrupted version-1 run leaves) is continued by `kl --resume` of the current build: its
 *    model_config_hash (fnv1a64 of config.json) is accepted, the result is a version 2 log with
 *    two history entries, and every dataset equals the complete version-1 log bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <hdf5.h>

#include "replayssm/eval/rs_h5log.h"
#include "rs_test_util.h"

static char g_dir[256], g_v1[1024], g_cli[1024];

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_h5v1_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    rs_test_fixture_path(g_v1, sizeof g_v1, "h5log-v1/kl_gdn_v1.h5");
    const char *e = getenv("RS_KL_CLI");
    snprintf(g_cli, sizeof g_cli, "%s", e && e[0] ? e : RS_CLI_PATH);
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_sh("/tmp", "rm -rf '%s'", g_dir);
}

static void test_v1_reads(void **state)
{
    (void)state;
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(g_v1, 0, NULL, &lg), RS_OK);
    char a[4096], b[4096];
    assert_int_equal(rs_h5log_history_count(lg), 1);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "command_line", a, sizeof a), RS_OK);
    assert_int_equal(rs_h5log_get_history(lg, 0, "command_line", b, sizeof b), RS_OK);
    assert_string_equal(a, b);
    assert_int_equal(rs_h5log_get_history(lg, 0, "status", b, sizeof b), RS_OK);
    assert_string_equal(b, "complete");
    assert_int_equal(rs_h5log_file_count(lg), 0);
    assert_int_equal(rs_h5log_completed(lg, 0), 96);
    rs_h5log_close(lg);
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, g_v1), 0);
    assert_true(rs_test_out_has(g_dir, "split:nvfp4-rtn/fp16-sr"));
}

static void test_v1_resumes(void **state)
{
    (void)state;
    char cut[600];
    snprintf(cut, sizeof cut, "%s/cut.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "cp '%s' '%s'", g_v1, cut), 0);
    /* an interrupted version-1 run: commit record [32, 0], status running */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(cut, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "/books/completed_positions", H5P_DEFAULT);
    const int64_t done[2] = {32, 0};
    assert_true(d >= 0 && H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, done) >= 0);
    H5Dclose(d);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    const char *running = "running";
    hid_t at = H5Aopen(f, "status", H5P_DEFAULT);
    assert_true(at >= 0 && H5Awrite(at, t, &running) >= 0);
    H5Aclose(at);
    H5Tclose(t);
    H5Fclose(f);
    char model[1024], data[1024];
    rs_test_fixture_path(model, sizeof model, "models/gdn-tiny-random");
    rs_test_fixture_path(data, sizeof data, "pg19-mini");
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --books 2 --tokens 96 --chunk 16 --seed 3 "
                                       "--policy shared:nvfp4-sr,split:nvfp4-rtn/fp16-sr --threads 1 --quiet "
                                       "--resume --out '%s'", g_cli, model, data, cut), 0);
    rs_h5log *x = NULL, *y = NULL;
    assert_int_equal(rs_h5log_open(g_v1, 0, NULL, &x), RS_OK);
    assert_int_equal(rs_h5log_open(cut, 0, NULL, &y), RS_OK);
    assert_int_equal(rs_h5log_history_count(y), 2);
    char buf[4096];
    assert_int_equal(rs_h5log_get_history(y, 1, "command_line", buf, sizeof buf), RS_OK);
    assert_non_null(strstr(buf, "--resume"));
    assert_int_equal(rs_h5log_get_history(y, 1, "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    assert_int_equal(rs_h5log_file_count(y), 3); /* the current build records the model files */
    const char *names[] = {"kl", "nll", "dp", "top1_agree"}, *rnames[] = {"nll", "next_token", "top1"};
    for (size_t bk = 0; bk < 2; bk++) {
        const size_t n = 96;
        assert_int_equal(rs_h5log_completed(y, bk), (int64_t)n);
        double d1[96], d2[96];
        for (long r = -1; r < 2; r++)
            for (size_t k = 0; k < (r < 0 ? 3u : 4u); k++) {
                memset(d1, 0, sizeof d1);
                memset(d2, 0, sizeof d2);
                assert_int_equal(rs_h5log_read_row(x, r, r < 0 ? rnames[k] : names[k], bk, n, d1), RS_OK);
                assert_int_equal(rs_h5log_read_row(y, r, r < 0 ? rnames[k] : names[k], bk, n, d2), RS_OK);
                assert_memory_equal(d1, d2, sizeof d1);
            }
    }
    rs_h5log_close(x);
    rs_h5log_close(y);
    /* it is a version 2 log now: xarray's layout is there */
    f = H5Fopen(cut, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    uint64_t ver = 0;
    at = H5Aopen(f, "format_version", H5P_DEFAULT);
    assert_true(at >= 0 && H5Aread(at, H5T_NATIVE_UINT64, &ver) >= 0);
    H5Aclose(at);
    assert_int_equal(ver, 2);
    assert_true(H5Lexists(f, "/kl", H5P_DEFAULT) > 0 && H5Lexists(f, "/provenance", H5P_DEFAULT) > 0);
    H5Fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_reads),
        cmocka_unit_test(test_v1_resumes),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
