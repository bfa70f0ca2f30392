/* test_kl_cli_arith.c — the log's `arithmetic` attribute (eval/log/rs_log_arith.h): what a CPU device
 * line names, written by `replayssm kl`, and compared by --resume and `replayssm merge`, also against
 * logs written before the attribute (their `device` line says it). A refused --resume leaves the log
 * byte for byte as it was. Fixture model gdn-tiny-random, PG-19 excerpts of tests/fixtures/pg19-mini. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <hdf5.h>

#include "replayssm/eval/rs_h5log.h"
#include "log/rs_log_arith.h"
#include "rs_test_util.h"

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024], g_args[2048];

static int setup_(void **state)
{
    (void)state;
    if (rs_test_cli_workdir("rs_klarith", g_dir, sizeof g_dir, g_data, sizeof g_data, g_cli, sizeof g_cli)) return -1;
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    snprintf(g_args, sizeof g_args, "kl --model '%s' --data '%s' --book-ids 1023 --tokens 48 --chunk 16 --policy fp32 "
             "--threads 1 --quiet", g_gdn, g_data);
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_rmdir(g_dir);
}

/* the device lines the CPU scorer writes (eval/kleval/rs_scorer_cpu.c) and the ones of older logs */
static void test_from_device(void **state)
{
    (void)state;
    char b[160];
    assert_int_equal(rs_log_arith_from_device("cpu: 2 threads, GEMM f64, attention f64", b, sizeof b), 1);
    assert_string_equal(b, "cpu: gemm f64, attention f64");
    assert_int_equal(rs_log_arith_from_device("cpu: 16 threads, 4 streams, GEMM f64, attention f64", b, sizeof b), 1);
    assert_string_equal(b, "cpu: gemm f64, attention f64"); /* threads and streams do not change the numbers */
    assert_int_equal(rs_log_arith_from_device("cpu: 1 threads, GEMM RS_CPU_GEMM=loop (fp32), attention RS_CPU_ATTN=fp32",
                                              b, sizeof b), 1);
    assert_string_equal(b, "cpu: gemm loop, attention fp32");
    assert_int_equal(rs_log_arith_from_device("cpu: 2 threads, GEMM RS_CPU_GEMM=sgemm (fp32), attention f64", b, sizeof b), 1);
    assert_string_equal(b, "cpu: gemm sgemm, attention f64");
    /* written before 2026-12-01: no GEMM named; never equal to what a current build writes */
    assert_int_equal(rs_log_arith_from_device("cpu: 2 threads", b, sizeof b), 1);
    assert_string_equal(b, RS_LOG_ARITH_CPU_OLD);
    /* GPU lines and no line: nothing (their `compute` attribute covers them) */
    assert_int_equal(rs_log_arith_from_device("cuda: NVIDIA H200, driver 580.159.04", b, sizeof b), 0);
    assert_string_equal(b, "");
    assert_int_equal(rs_log_arith_from_device(NULL, b, sizeof b), 0);
    /* a short buffer is truncated, never overrun */
    char s[8];
    assert_int_equal(rs_log_arith_from_device("cpu: 2 threads, GEMM f64, attention f64", s, sizeof s), 1);
    assert_int_equal(strlen(s), sizeof s - 1);
}

static void root_attr_(const char *path, const char *name, char *buf, size_t n)
{
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", name, buf, n), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
}

/* a log as an older build wrote it: no `arithmetic`, the given `device` line */
static void make_legacy_(const char *src, const char *dst, const char *device)
{
    assert_int_equal(rs_test_sh(g_dir, "cp '%s' '%s'", src, dst), 0);
    hid_t f = H5Fopen(dst, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Adelete(f, "arithmetic") >= 0);
    assert_true(H5Adelete(f, "device") >= 0);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(device) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "device", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, t, device) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    assert_true(H5Fclose(f) >= 0);
}

static void test_resume_and_merge(void **state)
{
    (void)state;
    char log[600], old[600], mid[600], keep[600];
    snprintf(log, sizeof log, "%s/a.h5", g_dir);
    snprintf(old, sizeof old, "%s/old.h5", g_dir);
    snprintf(mid, sizeof mid, "%s/mid.h5", g_dir);
    snprintf(keep, sizeof keep, "%s/keep.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' %s --out '%s'", g_cli, g_args, log), 0);
    char v[256];
    root_attr_(log, "arithmetic", v, sizeof v);
    assert_string_equal(v, "cpu: gemm f64, attention f64");

    /* the same arithmetic resumes (a finished log: nothing left to do) */
    assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, g_args, log), 0);
    /* another GEMM summation is refused, and the log is left byte for byte */
    assert_int_equal(rs_test_sh(g_dir, "cp '%s' '%s'", log, keep), 0);
    assert_int_not_equal(rs_test_sh(g_dir, "RS_CPU_GEMM=sgemm '%s' %s --resume --out '%s'", g_cli, g_args, log), 0);
    assert_true(rs_test_out_has(g_dir, "arithmetic 'cpu: gemm f64, attention f64'"));
    assert_true(rs_test_out_has(g_dir, "'cpu: gemm sgemm, attention f64'"));
    assert_int_equal(rs_test_sh(g_dir, "cmp '%s' '%s'", log, keep), 0);

    /* written before 2026-12-01 (device line without GEMM): refused, kept as it was */
    make_legacy_(log, old, "cpu: 2 threads");
    assert_int_equal(rs_test_sh(g_dir, "cp '%s' '%s'", old, keep), 0);
    assert_int_not_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, g_args, old), 0);
    assert_true(rs_test_out_has(g_dir, "before 2026-12-01"));
    assert_int_equal(rs_test_sh(g_dir, "cmp '%s' '%s'", old, keep), 0);
    /* written after the double-summed default but before the attribute: its line names it, so it resumes */
    make_legacy_(log, mid, "cpu: 4 threads, GEMM f64, attention f64");
    assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, g_args, mid), 0);

    /* merge: the same rule; logs of the other book, so that the union is two books */
    char other[600], all[600];
    snprintf(other, sizeof other, "%s/b.h5", g_dir);
    snprintf(all, sizeof all, "%s/all.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --book-ids 105 --tokens 48 --chunk 16 "
                                "--policy fp32 --threads 1 --quiet --out '%s'", g_cli, g_gdn, g_data, other), 0);
    assert_int_not_equal(rs_test_sh(g_dir, "'%s' merge '%s' '%s' -o '%s'", g_cli, old, other, all), 0);
    assert_true(rs_test_out_has(g_dir, "arithmetic is"));
    assert_true(rs_test_out_has(g_dir, "before 2026-12-01"));
    /* same arithmetic, recorded (b.h5) or named by the device line (mid.h5): merged */
    assert_int_equal(rs_test_sh(g_dir, "'%s' merge '%s' '%s' -o '%s'", g_cli, mid, other, all), 0);
    root_attr_(all, "arithmetic", v, sizeof v);
    assert_string_equal(v, "cpu: gemm f64, attention f64");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_device),
        cmocka_unit_test(test_resume_and_merge),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
