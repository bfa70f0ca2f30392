/* test_h5file.c — the result-file writer (include/replayssm/eval/rs_h5file.h) and the two
 * commands that write through it:
 *  - the API: every type and shape read back with HDF5 itself; the file appears only at close;
 *    sticky errors (the first failure returned by close, nothing placed, an existing file kept);
 *    refusals (exists without force; FIFO, directory, symbolic link; missing folder); a writer
 *    killed with kill -9 leaves "<path>.tmp.<pid>", which the next create removes;
 *  - `replayssm theory --out`: the layout of docs/theory.md (every dataset with units, root and
 *    group attributes with the values asked for), and every failure reported with exit status 1
 *    and the old file intact: a file-size limit in the middle of the writing, a missing or
 *    unwritable folder, an existing file without --force, --force onto a FIFO (must not block),
 *    a directory or a symbolic link;
 *  - the table writer (rs_h5file_write_table): a struct with every column kind written and read
 *    back with HDF5 itself (values, types, string widths and padding, units), an empty table, and
 *    every refusal (a string that fills its field, NULL and bad arguments, a group that exists);
 *  - the bench's table (the column list of eval/cli/bench.h, a header, over the row type of
 *    replayssm/cuda/rs_cuda_bench_sweeps.h; `replayssm bench` itself needs a GPU): the list covers
 *    every field of the row, and the rows of the committed H200 run
 *    (notebooks/figures/data/bench_h200.h5) read back and written again give byte-identical
 *    datasets, types and units. */
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
#include <unistd.h>
#include <cmocka.h>

#include <hdf5.h> /* reading back what the writer wrote, independently of it */

#include "replayssm/eval/rs_h5file.h"
#include "rs_test_util.h"

/* the bench's column list and row type (header only: no CLI code is compiled in) */
#include "../eval/cli/bench.h"

static char g_dir[256];
static char g_out[65536];

static int exists_(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0;
}

static int tmp_left_(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q '\\.tmp\\.'", g_dir);
    return system(cmd) == 0;
}

/* run a shell command, output (stdout + stderr) into g_out; returns the exit status, or 128 +
 * the signal */
static int sh_(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[4200];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    const size_t n = fread(g_out, 1, sizeof g_out - 1, p);
    g_out[n] = '\0';
    const int w = pclose(p);
    return WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
}

static void write_text_(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static void text_is_(const char *path, const char *s)
{
    size_t n = 0;
    char *c = (char *)rs_test_read_file(path, &n);
    assert_non_null(c);
    assert_int_equal(n, strlen(s));
    assert_memory_equal(c, s, n);
    free(c);
}

static hid_t open_ro_(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    return f;
}

/* class and size of a dataset's type, its rank and extent */
static void ds_is_(hid_t f, const char *path, H5T_class_t cls, size_t size, int rank, const hsize_t *dims)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0) fail_msg("dataset %s missing", path);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    assert_int_equal(H5Tget_class(t), cls);
    assert_int_equal(H5Tget_size(t), size);
    hsize_t have[8];
    assert_int_equal(H5Sget_simple_extent_ndims(s), rank);
    H5Sget_simple_extent_dims(s, have, NULL);
    for (int i = 0; i < rank; i++) assert_int_equal(have[i], dims[i]);
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
}

static void read_ds_(hid_t f, const char *path, hid_t mem, void *buf)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Dclose(d);
}

/* a fixed-length string attribute (what rs_h5file writes) */
static void attr_str_is_(hid_t f, const char *obj, const char *name, const char *want)
{
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) fail_msg("attribute %s of %s missing", name, obj);
    hid_t t = H5Aget_type(a);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    assert_false(H5Tis_variable_str(t));
    char buf[4096] = "";
    assert_true(H5Tget_size(t) < sizeof buf);
    assert_true(H5Aread(a, t, buf) >= 0);
    assert_string_equal(buf, want);
    H5Tclose(t);
    H5Aclose(a);
}

static double attr_f64_(hid_t f, const char *obj, const char *name)
{
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) fail_msg("attribute %s of %s missing", name, obj);
    hid_t t = H5Aget_type(a);
    assert_int_equal(H5Tget_class(t), H5T_FLOAT);
    double v = 0;
    assert_true(H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0);
    H5Tclose(t);
    H5Aclose(a);
    return v;
}

/* ---- the API ------------------------------------------------------------------------------- */

static void test_api_roundtrip(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/api.h5", g_dir);
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(path, 0, &h), RS_OK);
    const double d[6] = {1.5, -2, 3e300, 0, -0.0, 7};
    const float fl[3] = {1.25f, -3.0f, 1e-30f};
    const int64_t i64[2] = {INT64_MIN, INT64_MAX};
    const int32_t i32[4] = {-1, 0, 1, INT32_MAX};
    const uint8_t u8[2] = {0, 255};
    const char strs[3][8] = {"ab", "", "1234567"};
    const size_t d23[2] = {2, 3}, d3[1] = {3}, d2[1] = {2}, d4[1] = {4};
    assert_int_equal(rs_h5file_write_f64(h, "/a/b/m", 2, d23, d), RS_OK);
    assert_int_equal(rs_h5file_write_f32(h, "/f", 1, d3, fl), RS_OK);
    assert_int_equal(rs_h5file_write_i64(h, "/i64", 1, d2, i64), RS_OK);
    assert_int_equal(rs_h5file_write_i32(h, "/g/i32", 1, d4, i32), RS_OK);
    assert_int_equal(rs_h5file_write_u8(h, "/u8", 1, d2, u8), RS_OK);
    assert_int_equal(rs_h5file_write_str(h, "/s", 3, 8, &strs[0][0]), RS_OK);
    assert_int_equal(rs_h5file_group(h, "/empty/group"), RS_OK);
    assert_int_equal(rs_h5file_attr_str(h, "/", "tool", "test"), RS_OK);
    assert_int_equal(rs_h5file_attr_u64(h, "/a/b/m", "n", UINT64_MAX), RS_OK);
    assert_int_equal(rs_h5file_attr_i64(h, "/a", "k", -5), RS_OK);
    assert_int_equal(rs_h5file_attr_f64(h, "/new/grp", "x", 0.5), RS_OK); /* a missing object: a group */
    assert_int_equal(rs_h5file_attr_f64(h, "/new/grp", "x", 0.75), RS_OK); /* replaced */
    assert_int_equal(rs_h5file_status(h), RS_OK);
    assert_false(exists_(path)); /* only at close */
    assert_int_equal(rs_h5file_close(h), RS_OK);
    assert_true(exists_(path));
    assert_false(tmp_left_());
    hid_t f = open_ro_(path);
    const hsize_t e23[2] = {2, 3}, e3[1] = {3}, e2[1] = {2}, e4[1] = {4};
    ds_is_(f, "/a/b/m", H5T_FLOAT, 8, 2, e23);
    ds_is_(f, "/f", H5T_FLOAT, 4, 1, e3);
    ds_is_(f, "/i64", H5T_INTEGER, 8, 1, e2);
    ds_is_(f, "/g/i32", H5T_INTEGER, 4, 1, e4);
    ds_is_(f, "/u8", H5T_INTEGER, 1, 1, e2);
    ds_is_(f, "/s", H5T_STRING, 8, 1, e3);
    double rd[6];
    float rf[3];
    int64_t r64[2];
    int32_t r32[4];
    uint8_t ru[2];
    char rs[3][8];
    read_ds_(f, "/a/b/m", H5T_NATIVE_DOUBLE, rd);
    read_ds_(f, "/f", H5T_NATIVE_FLOAT, rf);
    read_ds_(f, "/i64", H5T_NATIVE_INT64, r64);
    read_ds_(f, "/g/i32", H5T_NATIVE_INT32, r32);
    read_ds_(f, "/u8", H5T_NATIVE_UINT8, ru);
    hid_t st8 = H5Tcopy(H5T_C_S1);
    H5Tset_size(st8, 8);
    read_ds_(f, "/s", st8, rs);
    H5Tclose(st8);
    assert_memory_equal(rd, d, sizeof d);
    assert_memory_equal(rf, fl, sizeof fl);
    assert_memory_equal(r64, i64, sizeof i64);
    assert_memory_equal(r32, i32, sizeof i32);
    assert_memory_equal(ru, u8, sizeof u8);
    assert_memory_equal(rs, strs, sizeof strs);
    attr_str_is_(f, "/", "tool", "test");
    assert_true(attr_f64_(f, "/new/grp", "x") == 0.75);
    uint64_t n = 0;
    int64_t k = 0;
    hid_t a = H5Aopen_by_name(f, "/a/b/m", "n", H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Aread(a, H5T_NATIVE_UINT64, &n) >= 0);
    H5Aclose(a);
    a = H5Aopen_by_name(f, "/a", "k", H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &k) >= 0);
    H5Aclose(a);
    assert_true(n == UINT64_MAX && k == -5);
    H5O_info_t oi;
    assert_true(H5Oget_info_by_name(f, "/empty/group", &oi, H5P_DEFAULT) >= 0);
    assert_int_equal(oi.type, H5O_TYPE_GROUP);
    H5Fclose(f);
}

static void test_sticky_error(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/sticky.h5", g_dir);
    write_text_(path, "precious");
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(path, 1, &h), RS_OK);
    const double v[2] = {1, 2};
    const size_t n2[1] = {2};
    assert_int_equal(rs_h5file_write_f64(h, "/x", 1, n2, v), RS_OK);
    assert_int_equal(rs_h5file_write_f64(h, "/x", 1, n2, v), RS_E_IO); /* exists */
    char first[512];
    snprintf(first, sizeof first, "%s", rs_last_error());
    assert_non_null(strstr(first, "/x"));
    /* later calls return the first failure and do nothing */
    assert_int_equal(rs_h5file_write_f64(h, "/y", 1, n2, v), RS_E_IO);
    assert_int_equal(rs_h5file_attr_str(h, "/", "a", "b"), RS_E_IO);
    assert_int_equal(rs_h5file_status(h), RS_E_IO);
    assert_int_equal(rs_h5file_write_f64(h, "/z", 0, n2, v), RS_E_IO); /* bad rank: still the first */
    rs_error_clear();
    assert_int_equal(rs_h5file_close(h), RS_E_IO);
    assert_string_equal(rs_last_error(), first);
    text_is_(path, "precious"); /* a failed file never replaces a good one */
    assert_false(tmp_left_());
    /* a first failure of a bad argument */
    assert_int_equal(rs_h5file_create(path, 1, &h), RS_OK);
    assert_int_equal(rs_h5file_write_f64(h, "/x", 9, n2, v), RS_E_INVAL);
    assert_int_equal(rs_h5file_close(h), RS_E_INVAL);
    text_is_(path, "precious");
    /* discard: nothing placed */
    assert_int_equal(rs_h5file_create(path, 1, &h), RS_OK);
    assert_int_equal(rs_h5file_write_f64(h, "/x", 1, n2, v), RS_OK);
    rs_h5file_discard(h);
    text_is_(path, "precious");
    assert_false(tmp_left_());
    /* force: the complete file replaces it */
    assert_int_equal(rs_h5file_create(path, 1, &h), RS_OK);
    assert_int_equal(rs_h5file_write_f64(h, "/x", 1, n2, v), RS_OK);
    assert_int_equal(rs_h5file_close(h), RS_OK);
    hid_t f = open_ro_(path);
    double r[2];
    read_ds_(f, "/x", H5T_NATIVE_DOUBLE, r);
    assert_true(r[0] == 1 && r[1] == 2);
    H5Fclose(f);
}

static void test_refusals(void **state)
{
    (void)state;
    alarm(60); /* a FIFO must not block: a hang fails the test */
    char p[512], q[600];
    rs_h5file *h = NULL;
    snprintf(p, sizeof p, "%s/exists.h5", g_dir);
    write_text_(p, "precious");
    assert_int_equal(rs_h5file_create(p, 0, &h), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "--force"));
    text_is_(p, "precious");
    snprintf(p, sizeof p, "%s/fifo.h5", g_dir);
    assert_int_equal(mkfifo(p, 0644), 0);
    for (int force = 0; force < 2; force++) {
        assert_int_equal(rs_h5file_create(p, force, &h), RS_E_IO);
        assert_non_null(strstr(rs_last_error(), "FIFO"));
    }
    snprintf(p, sizeof p, "%s/adir.h5", g_dir);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(rs_h5file_create(p, 1, &h), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "directory"));
    snprintf(q, sizeof q, "%s/exists.h5", g_dir);
    snprintf(p, sizeof p, "%s/link.h5", g_dir);
    assert_int_equal(symlink(q, p), 0);
    assert_int_equal(rs_h5file_create(p, 1, &h), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "symbolic link"));
    text_is_(q, "precious");
    assert_int_equal(rs_h5file_create("/nonexistent-dir/x.h5", 1, &h), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "/nonexistent-dir/x.h5"));
    alarm(0);
}

/* result files: a real kill -9 between create and close leaves no file under the final name */
static void test_killed_writer_leftover(void **state)
{
    (void)state;
    char path[512], tmp[600];
    snprintf(path, sizeof path, "%s/killed.h5", g_dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rs_h5file *h = NULL;
        if (rs_h5file_create(path, 0, &h) != RS_OK) _exit(3);
        raise(SIGKILL);
        _exit(4);
    }
    int wst = 0;
    waitpid(pid, &wst, 0);
    assert_true(WIFSIGNALED(wst));
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)pid);
    assert_true(exists_(tmp)); /* the leftover the issue describes */
    assert_false(exists_(path));
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(path, 0, &h), RS_OK);
    assert_false(exists_(tmp)); /* cleaned: its writer is gone */
    assert_int_equal(rs_h5file_close(h), RS_OK);
    assert_true(exists_(path));
}

/* ---- replayssm theory ----------------------------------------------------------------------- */

static int g_ds, g_ds_units;

static herr_t visit_(hid_t o, const char *name, const H5O_info_t *info, void *data)
{
    (void)data;
    if (info->type != H5O_TYPE_DATASET) return 0;
    g_ds++;
    if (H5Aexists_by_name(o, name, "units", H5P_DEFAULT) > 0) g_ds_units++;
    return 0;
}

static void theory_file_checks_(const char *path)
{
    hid_t f = open_ro_(path);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "replayssm theory --shape qwen3.5-4b --window 8 --mc-steps 60 --seed 5 --out %s", path);
    attr_str_is_(f, "/", "command", cmd);
    /* root: the values asked for, as doubles; strings fixed-length */
    assert_true(attr_f64_(f, "/", "seed") == 5.0);
    assert_true(attr_f64_(f, "/", "window_L") == 8.0);
    assert_true(attr_f64_(f, "/", "mc_steps") == 60.0);
    hid_t a = H5Aopen_by_name(f, "/", "tool", H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    H5Aclose(a);
    /* C.1: fp32 4 bytes, fp16 2 bytes per element */
    const hsize_t e5[1] = {5}, e128[1] = {128}, e3[1] = {3};
    ds_is_(f, "/c1/bytes_per_element", H5T_FLOAT, 8, 1, e5);
    double b[5];
    read_ds_(f, "/c1/bytes_per_element", H5T_NATIVE_DOUBLE, b);
    assert_true(b[0] == 4.0 && b[1] == 2.0 && b[2] == 2.0);
    attr_str_is_(f, "/c1/bytes_per_element", "units", "bytes per element (fp32, fp16, bf16, fp8, nvfp4)");
    ds_is_(f, "/c2/qwen3.5-4b", H5T_FLOAT, 8, 1, e3);
    /* C.3: L = 1 .. 128 */
    ds_is_(f, "/c3/qwen3.5-4b/nvfp4/L", H5T_FLOAT, 8, 1, e128);
    double L[128];
    read_ds_(f, "/c3/qwen3.5-4b/nvfp4/L", H5T_NATIVE_DOUBLE, L);
    for (int i = 0; i < 128; i++) assert_true(L[i] == i + 1);
    ds_is_(f, "/c5/qwen3.5-4b/fp32/f_speculative", H5T_FLOAT, 8, 1, e128);
    assert_true(attr_f64_(f, "/c5", "drafts_T") == 4.0);
    assert_true(attr_f64_(f, "/c5", "accept_a_bar") == 3.5);
    /* C.6 groups and curves */
    assert_true(attr_f64_(f, "/c6/nvfp4-sr/alpha_0.9", "window_L") == 8.0);
    assert_true(attr_f64_(f, "/c6/nvfp4-sr/alpha_0.9", "chains") == 8192.0);
    attr_str_is_(f, "/c6/nvfp4-sr/alpha_0.9", "pre_rounding_values", "half-normal |N(0,1)|, fresh per rounding (Philox)");
    assert_true(H5Lexists(f, "/c6/fp16-sr/alpha_0.9/conv/mc_var_se", H5P_DEFAULT) > 0);
    assert_true(H5Lexists(f, "/c6_state/nvfp4-sr/alpha_0.99/msd_pred", H5P_DEFAULT) > 0);
    /* every dataset carries units */
    g_ds = g_ds_units = 0;
    assert_true(H5Ovisit(f, H5_INDEX_NAME, H5_ITER_INC, visit_, NULL) >= 0);
    print_message("theory file: %d datasets, %d with units\n", g_ds, g_ds_units);
    assert_true(g_ds > 100);
    assert_int_equal(g_ds_units, g_ds);
    H5Fclose(f);
}

static void test_theory_file(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/theory2.h5", g_dir);
    assert_int_equal(sh_("'%s' theory --shape qwen3.5-4b --window 8 --mc-steps 60 --seed 5 --out '%s'", RS_CLI_PATH, path), 0);
    assert_non_null(strstr(g_out, "wrote"));
    theory_file_checks_(path);
    assert_false(tmp_left_());
}

static void test_theory_failures(void **state)
{
    (void)state;
    const char *args = "theory --shape qwen3.5-4b --mc-steps 0";
    char p[512], q[600];
    /* a file-size limit in the middle of the writing: reported, exit 1, the old file intact */
    snprintf(p, sizeof p, "%s/full.h5", g_dir);
    write_text_(p, "precious");
    assert_int_equal(sh_("ulimit -f 16; '%s' %s --out '%s' --force", RS_CLI_PATH, args, p), 1);
    assert_non_null(strstr(g_out, "File too large"));
    text_is_(p, "precious");
    assert_false(tmp_left_());
    /* an existing file without --force */
    assert_int_equal(sh_("'%s' %s --out '%s'", RS_CLI_PATH, args, p), 1);
    assert_non_null(strstr(g_out, "--force"));
    text_is_(p, "precious");
    /* a missing folder; a folder nobody may write (/proc, also for root) */
    assert_int_equal(sh_("'%s' %s --out /nonexistent-dir/t.h5", RS_CLI_PATH, args), 1);
    assert_non_null(strstr(g_out, "/nonexistent-dir/t.h5"));
    assert_int_equal(sh_("'%s' %s --out /proc/rs_theory_test.h5", RS_CLI_PATH, args), 1);
    assert_non_null(strstr(g_out, "cannot create"));
    /* --force onto a FIFO: refused at once (timeout's 124 would be the old hang) */
    snprintf(p, sizeof p, "%s/out.fifo", g_dir);
    assert_int_equal(mkfifo(p, 0644), 0);
    assert_int_equal(sh_("timeout 60 '%s' %s --out '%s' --force", RS_CLI_PATH, args, p), 1);
    assert_non_null(strstr(g_out, "FIFO"));
    struct stat sb;
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    /* a directory; a symbolic link (never written through, never replaced) */
    snprintf(p, sizeof p, "%s/outdir", g_dir);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(sh_("'%s' %s --out '%s' --force", RS_CLI_PATH, args, p), 1);
    snprintf(q, sizeof q, "%s/full.h5", g_dir);
    snprintf(p, sizeof p, "%s/out-link.h5", g_dir);
    assert_int_equal(symlink(q, p), 0);
    assert_int_equal(sh_("'%s' %s --out '%s' --force", RS_CLI_PATH, args, p), 1);
    assert_non_null(strstr(g_out, "symbolic link"));
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    text_is_(q, "precious");
    /* and --force over a regular file works */
    snprintf(p, sizeof p, "%s/full.h5", g_dir);
    assert_int_equal(sh_("'%s' %s --out '%s' --force", RS_CLI_PATH, args, p), 0);
    hid_t f = open_ro_(p);
    assert_true(H5Lexists(f, "/c1/bytes_per_element", H5P_DEFAULT) > 0);
    H5Fclose(f);
    assert_false(tmp_left_());
}

/* ---- the table writer ----------------------------------------------------------------------- */

/* every column kind, a string with units, padding between the fields */
typedef struct trow {
    char tag[5];
    int32_t k;
    double x;
    char name[12];
    int32_t m;
} trow;

static const rs_h5file_column k_tcols[] = {
    {"tag", offsetof(trow, tag), RS_H5FILE_COL_STR, sizeof(((trow *)0)->tag), NULL},
    {"k", offsetof(trow, k), RS_H5FILE_COL_I32, 0, "items"},
    {"x", offsetof(trow, x), RS_H5FILE_COL_F64, 0, "s"},
    {"name", offsetof(trow, name), RS_H5FILE_COL_STR, sizeof(((trow *)0)->name), "a label"},
    {"m", offsetof(trow, m), RS_H5FILE_COL_I32, 0, NULL},
};
#define NTCOLS (sizeof k_tcols / sizeof k_tcols[0])

/* four rows; every byte of the structs set first, so the bytes after a string's NUL are not zero */
static void trows_(trow *r)
{
    memset(r, 0x5a, 4 * sizeof *r);
    memcpy(r[0].tag, "abcd", 5); /* width - 1 characters: the longest that fits */
    memcpy(r[1].tag, "", 1);
    memcpy(r[2].tag, "x", 2);
    memcpy(r[3].tag, "yz", 3);
    memcpy(r[0].name, "first", 6);
    memcpy(r[1].name, "eleven char", 12);
    memcpy(r[2].name, "", 1);
    memcpy(r[3].name, "4", 2);
    const int32_t k[4] = {INT32_MIN, -1, 0, INT32_MAX}, m[4] = {7, 8, 9, 10};
    const double x[4] = {-0.0, 1e-310, -3e300, 0.1};
    for (int i = 0; i < 4; i++) r[i].k = k[i], r[i].x = x[i], r[i].m = m[i];
}

/* a fixed-length string dataset: its size, padding and character set */
static void str_type_is_(hid_t f, const char *path, size_t width)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t t = H5Dget_type(d);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    assert_false(H5Tis_variable_str(t));
    assert_int_equal(H5Tget_size(t), width);
    assert_int_equal(H5Tget_strpad(t), H5T_STR_NULLTERM);
    assert_int_equal(H5Tget_cset(t), H5T_CSET_ASCII);
    H5Tclose(t);
    H5Dclose(d);
}

static void int32_type_is_(hid_t f, const char *path)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t t = H5Dget_type(d);
    assert_int_equal(H5Tget_class(t), H5T_INTEGER);
    assert_int_equal(H5Tget_size(t), 4);
    assert_int_equal(H5Tget_sign(t), H5T_SGN_2);
    H5Tclose(t);
    H5Dclose(d);
}

static int units_exists_(hid_t f, const char *path) { return H5Aexists_by_name(f, path, "units", H5P_DEFAULT) > 0; }

static hsize_t nlinks_(hid_t f, const char *group)
{
    hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
    assert_true(g >= 0);
    H5G_info_t gi;
    assert_true(H5Gget_info(g, &gi) >= 0);
    H5Gclose(g);
    return gi.nlinks;
}

static void test_table_roundtrip(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/table.h5", g_dir);
    trow rows[4];
    trows_(rows);
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(path, 0, &h), RS_OK);
    assert_int_equal(rs_h5file_write_table(h, "/t/rows", rows, 4, sizeof(trow), k_tcols, NTCOLS), RS_OK);
    assert_int_equal(rs_h5file_close(h), RS_OK);
    hid_t f = open_ro_(path);
    assert_int_equal(nlinks_(f, "/t/rows"), NTCOLS); /* one dataset per column, nothing else */
    const hsize_t e4[1] = {4};
    ds_is_(f, "/t/rows/tag", H5T_STRING, 5, 1, e4);
    ds_is_(f, "/t/rows/k", H5T_INTEGER, 4, 1, e4);
    ds_is_(f, "/t/rows/x", H5T_FLOAT, 8, 1, e4);
    ds_is_(f, "/t/rows/name", H5T_STRING, 12, 1, e4);
    ds_is_(f, "/t/rows/m", H5T_INTEGER, 4, 1, e4);
    str_type_is_(f, "/t/rows/tag", 5);
    str_type_is_(f, "/t/rows/name", 12);
    int32_type_is_(f, "/t/rows/k");
    int32_type_is_(f, "/t/rows/m");
    /* the values, against literals (the strings NUL-padded to their widths) */
    static const char tag[4][5] = {"abcd", "", "x", "yz"};
    static const char name[4][12] = {"first", "eleven char", "", "4"};
    const int32_t k[4] = {INT32_MIN, -1, 0, INT32_MAX}, m[4] = {7, 8, 9, 10};
    const double x[4] = {-0.0, 1e-310, -3e300, 0.1};
    char rt[4][5], rn[4][12];
    int32_t rk[4], rm[4];
    double rx[4];
    hid_t s5 = H5Tcopy(H5T_C_S1), s12 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s5, 5);
    H5Tset_size(s12, 12);
    memset(rt, 0x77, sizeof rt);
    memset(rn, 0x77, sizeof rn);
    read_ds_(f, "/t/rows/tag", s5, rt);
    read_ds_(f, "/t/rows/name", s12, rn);
    H5Tclose(s5);
    H5Tclose(s12);
    read_ds_(f, "/t/rows/k", H5T_NATIVE_INT32, rk);
    read_ds_(f, "/t/rows/m", H5T_NATIVE_INT32, rm);
    read_ds_(f, "/t/rows/x", H5T_NATIVE_DOUBLE, rx);
    assert_memory_equal(rt, tag, sizeof tag);
    assert_memory_equal(rn, name, sizeof name);
    assert_memory_equal(rk, k, sizeof k);
    assert_memory_equal(rm, m, sizeof m);
    assert_memory_equal(rx, x, sizeof x); /* bit for bit: -0 and the denormal too */
    /* units where given, none where NULL */
    attr_str_is_(f, "/t/rows/k", "units", "items");
    attr_str_is_(f, "/t/rows/x", "units", "s");
    attr_str_is_(f, "/t/rows/name", "units", "a label");
    assert_false(units_exists_(f, "/t/rows/tag"));
    assert_false(units_exists_(f, "/t/rows/m"));
    H5Fclose(f);
}

static void test_table_empty(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/table0.h5", g_dir);
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(path, 0, &h), RS_OK);
    assert_int_equal(rs_h5file_write_table(h, "rows", NULL, 0, sizeof(trow), k_tcols, NTCOLS), RS_OK);
    assert_int_equal(rs_h5file_close(h), RS_OK);
    hid_t f = open_ro_(path);
    const hsize_t e0[1] = {0};
    ds_is_(f, "/rows/tag", H5T_STRING, 5, 1, e0);
    ds_is_(f, "/rows/k", H5T_INTEGER, 4, 1, e0);
    ds_is_(f, "/rows/x", H5T_FLOAT, 8, 1, e0);
    ds_is_(f, "/rows/name", H5T_STRING, 12, 1, e0);
    attr_str_is_(f, "/rows/x", "units", "s");
    H5Fclose(f);
}

/* one refused table: the status and a piece of the message, the same status again at close, nothing placed */
static void table_refused_(const char *group, const void *rows, size_t n, size_t row_size, const rs_h5file_column *cols,
                           size_t ncols, rs_status want, const char *msg)
{
    char path[512];
    snprintf(path, sizeof path, "%s/refused.h5", g_dir);
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(path, 0, &h), RS_OK);
    assert_int_equal(rs_h5file_group(h, "/g"), RS_OK); /* a group that exists, for the tables that name it */
    assert_int_equal(rs_h5file_write_table(h, group, rows, n, row_size, cols, ncols), want);
    if (!strstr(rs_last_error(), msg)) fail_msg("message '%s' lacks '%s'", rs_last_error(), msg);
    assert_int_equal(rs_h5file_status(h), want); /* sticky */
    assert_int_equal(rs_h5file_close(h), want);
    assert_false(exists_(path));
    assert_false(tmp_left_());
}

static void test_table_refusals(void **state)
{
    (void)state;
    trow rows[4];
    trows_(rows);
    rs_h5file_column c[NTCOLS];
    /* a string that fills its field (no NUL within the width): refused, naming the column and the row */
    memcpy(rows[2].name, "twelve chars", 12);
    table_refused_("/t", rows, 4, sizeof(trow), k_tcols, NTCOLS, RS_E_INVAL, "column name, row 2");
    trows_(rows);
    /* NULL and empty arguments */
    assert_int_equal(rs_h5file_write_table(NULL, "/t", rows, 4, sizeof(trow), k_tcols, NTCOLS), RS_E_INVAL);
    table_refused_(NULL, rows, 4, sizeof(trow), k_tcols, NTCOLS, RS_E_INVAL, "NULL");
    table_refused_("", rows, 4, sizeof(trow), k_tcols, NTCOLS, RS_E_INVAL, "NULL or empty");
    table_refused_("/t", NULL, 4, sizeof(trow), k_tcols, NTCOLS, RS_E_INVAL, "NULL or empty");
    table_refused_("/t", rows, 4, sizeof(trow), NULL, NTCOLS, RS_E_INVAL, "NULL or empty");
    table_refused_("/t", rows, 4, sizeof(trow), k_tcols, 0, RS_E_INVAL, "NULL or empty");
    table_refused_("/t", rows, 4, 0, k_tcols, NTCOLS, RS_E_INVAL, "NULL or empty");
    /* bad columns: NULL name, a '/' in it, a name twice, an unknown kind, width 0, a field outside the row */
    memcpy(c, k_tcols, sizeof c);
    c[1].name = NULL;
    table_refused_("/t", rows, 4, sizeof(trow), c, NTCOLS, RS_E_INVAL, "column 1");
    memcpy(c, k_tcols, sizeof c);
    c[1].name = "a/b";
    table_refused_("/t", rows, 4, sizeof(trow), c, NTCOLS, RS_E_INVAL, "without '/'");
    memcpy(c, k_tcols, sizeof c);
    c[4].name = "k";
    table_refused_("/t", rows, 4, sizeof(trow), c, NTCOLS, RS_E_INVAL, "column k twice");
    memcpy(c, k_tcols, sizeof c);
    c[2].kind = (rs_h5file_col_kind)7;
    table_refused_("/t", rows, 4, sizeof(trow), c, NTCOLS, RS_E_INVAL, "unknown kind");
    memcpy(c, k_tcols, sizeof c);
    c[0].width = 0;
    table_refused_("/t", rows, 4, sizeof(trow), c, NTCOLS, RS_E_INVAL, "width 0");
    memcpy(c, k_tcols, sizeof c);
    c[2].offset = sizeof(trow) - 4; /* a double's 8 bytes cross the row's end */
    table_refused_("/t", rows, 4, sizeof(trow), c, NTCOLS, RS_E_INVAL, "outside");
    memcpy(c, k_tcols, sizeof c);
    c[3].width = sizeof(trow); /* a string wider than what is left of the row */
    table_refused_("/t", rows, 4, sizeof(trow), c, NTCOLS, RS_E_INVAL, "outside");
    /* a group that exists: a group made before, the root, a table's own group a second time */
    table_refused_("/g", rows, 4, sizeof(trow), k_tcols, NTCOLS, RS_E_IO, "/g exists");
    table_refused_("/", rows, 4, sizeof(trow), k_tcols, NTCOLS, RS_E_IO, "exists");
    char path[512];
    snprintf(path, sizeof path, "%s/twice.h5", g_dir);
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(path, 0, &h), RS_OK);
    assert_int_equal(rs_h5file_write_table(h, "/t", rows, 4, sizeof(trow), k_tcols, NTCOLS), RS_OK);
    assert_int_equal(rs_h5file_write_table(h, "/t", rows, 4, sizeof(trow), k_tcols, NTCOLS), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "/t exists"));
    assert_int_equal(rs_h5file_close(h), RS_E_IO);
    assert_false(exists_(path));
    /* an earlier failure is returned without touching the file */
    assert_int_equal(rs_h5file_create(path, 0, &h), RS_OK);
    const double v[1] = {1};
    const size_t n1[1] = {1};
    assert_int_equal(rs_h5file_write_f64(h, "/x", 9, n1, v), RS_E_INVAL);
    assert_int_equal(rs_h5file_write_table(h, "/t", rows, 4, sizeof(trow), k_tcols, NTCOLS), RS_E_INVAL);
    assert_int_equal(rs_h5file_close(h), RS_E_INVAL);
    assert_false(exists_(path));
}

/* ---- the bench's table ---------------------------------------------------------------------- */

/* the column list covers rs_bench_row: fields in order, without gaps or overlaps, to its last byte (the row
 * has no padding), each string column as wide as its field */
static void test_bench_columns_cover_row(void **state)
{
    (void)state;
    size_t nc = 0;
    const rs_h5file_column *cols = bn_columns(&nc);
    size_t at = 0;
    for (size_t k = 0; k < nc; k++) {
        const size_t sz = cols[k].kind == RS_H5FILE_COL_STR ? cols[k].width
                          : cols[k].kind == RS_H5FILE_COL_I32 ? sizeof(int32_t)
                                                              : sizeof(double);
        if (cols[k].offset != at) fail_msg("column %s at offset %zu, expected %zu", cols[k].name, cols[k].offset, at);
        at += sz;
    }
    assert_int_equal(at, sizeof(rs_bench_row));
    assert_int_equal(cols[3].width, sizeof(((rs_bench_row *)0)->variant));
    assert_string_equal(cols[3].name, "variant");
}

/* the whole dataset in its file type, as bytes */
static void *raw_(hid_t f, const char *path, size_t *bytes, hid_t *type_out)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0) fail_msg("dataset %s missing", path);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    hid_t nt = H5Tget_native_type(t, H5T_DIR_ASCEND);
    const size_t n = (size_t)H5Sget_simple_extent_npoints(s) * H5Tget_size(nt);
    void *buf = calloc(n + 1, 1);
    assert_true(H5Dread(d, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    *bytes = n;
    *type_out = t;
    H5Tclose(nt);
    H5Sclose(s);
    H5Dclose(d);
    return buf;
}

static void read_str_attr_(hid_t o, const char *name, char *buf, size_t n)
{
    hid_t a = H5Aopen(o, name, H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    assert_true(a >= 0 && H5Tget_size(t) < n);
    memset(buf, 0, n);
    assert_true(H5Aread(a, t, buf) >= 0);
    H5Tclose(t);
    H5Aclose(a);
}

static void test_bench_table_same_file(void **state)
{
    (void)state;
    char before[1024], after[600];
    rs_test_fixture_path(before, sizeof before, "../../notebooks/figures/data/bench_h200.h5");
    snprintf(after, sizeof after, "%s/bench.h5", g_dir);
    size_t nc = 0;
    const rs_h5file_column *cols = bn_columns(&nc);
    /* the rows back from the committed file */
    hid_t f = open_ro_(before);
    hid_t d = H5Dopen2(f, "/rows/B", H5P_DEFAULT);
    hid_t s = H5Dget_space(d);
    const size_t n = (size_t)H5Sget_simple_extent_npoints(s);
    H5Sclose(s);
    H5Dclose(d);
    rs_bench_row *rows = (rs_bench_row *)calloc(n, sizeof *rows);
    assert_non_null(rows);
    for (size_t k = 0; k < nc; k++) {
        char p[64];
        snprintf(p, sizeof p, "/rows/%s", cols[k].name);
        size_t bytes = 0;
        hid_t t;
        char *col = (char *)raw_(f, p, &bytes, &t);
        H5Tclose(t);
        const size_t esz = bytes / n;
        for (size_t i = 0; i < n; i++) memcpy((char *)&rows[i] + cols[k].offset, col + i * esz, esz);
        free(col);
    }
    /* written again as the table of bench.h's columns */
    rs_h5file *h = NULL;
    assert_int_equal(rs_h5file_create(after, 0, &h), RS_OK);
    assert_int_equal(rs_h5file_write_table(h, "/rows", rows, n, sizeof *rows, cols, nc), RS_OK);
    assert_int_equal(rs_h5file_close(h), RS_OK);
    free(rows);
    /* every dataset: same type, same bytes, same units */
    hid_t g = open_ro_(after);
    for (size_t k = 0; k < nc; k++) {
        char p[64];
        snprintf(p, sizeof p, "/rows/%s", cols[k].name);
        size_t nb0 = 0, nb1 = 0;
        hid_t t0, t1;
        void *a = raw_(f, p, &nb0, &t0), *b = raw_(g, p, &nb1, &t1);
        if (H5Tequal(t0, t1) <= 0) fail_msg("%s: the type changed", p);
        assert_int_equal(nb0, nb1);
        assert_memory_equal(a, b, nb0);
        assert_int_equal(units_exists_(f, p), units_exists_(g, p));
        if (cols[k].units) {
            char u0[256], u1[256];
            hid_t d0 = H5Dopen2(f, p, H5P_DEFAULT), d1 = H5Dopen2(g, p, H5P_DEFAULT);
            read_str_attr_(d0, "units", u0, sizeof u0);
            read_str_attr_(d1, "units", u1, sizeof u1);
            assert_string_equal(u0, u1);
            H5Dclose(d0);
            H5Dclose(d1);
        }
        H5Tclose(t0);
        H5Tclose(t1);
        free(a);
        free(b);
    }
    assert_int_equal(nlinks_(f, "/rows"), nlinks_(g, "/rows")); /* no column more or less */
    assert_int_equal(nlinks_(g, "/rows"), nc);
    H5Fclose(f);
    H5Fclose(g);
    print_message("bench table: %zu rows x %zu columns identical to notebooks/figures/data/bench_h200.h5\n", n, nc);
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_h5file_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_roundtrip),
        cmocka_unit_test(test_sticky_error),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_killed_writer_leftover),
        cmocka_unit_test(test_theory_file),
        cmocka_unit_test(test_theory_failures),
        cmocka_unit_test(test_table_roundtrip),
        cmocka_unit_test(test_table_empty),
        cmocka_unit_test(test_table_refusals),
        cmocka_unit_test(test_bench_columns_cover_row),
        cmocka_unit_test(test_bench_table_same_file),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
