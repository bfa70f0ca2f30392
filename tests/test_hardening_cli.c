/* test_hardening_cli.c — hostile files and arguments against the `replayssm` commands
 * (docs/threat-model.md): each case is one finding of the hardening review, run through the CLI
 * under test (RS_KL_CLI, else RS_CLI_PATH), with a watchdog so that a command that hangs fails the
 * case instead of the suite:
 *  - a FIFO named like a model file (notes.json) in the model folder: `kl`, `sweep` and
 *    `kl --resume` refuse it at once, naming it (it was opened blocking by the provenance hash and
 *    hung forever); a link x.json -> /dev/zero likewise (it was hashed forever at full CPU);
 *  - SIGINT while a large model file is hashed ends `kl` within a second, exit 130, nothing written
 *    (the hashing threads never saw the stop flag);
 *  - an unreadable log is "Permission denied" in `info`, not "not an HDF5 file";
 *  - `tokenize --out`: refuses an existing FILE without --force, a symbolic link, a FIFO (at once),
 *    and leaves no FILE (an old FILE untouched) when an input is missing;
 *  - `quant-error --input` with a NaN, an Inf or a float64 value beyond the fp32 range: exit 1
 *    naming the element, and no CSV;
 *  - `theory --drafts 99999999999999999999`: a usage error, as every other number option's bound;
 *  - a "<out>.partial" left by `merge --force` is not continued by `kl --resume --out <out>`:
 *    refused, <out> and the partial unchanged.
 * The partial of the last case is a merged log renamed to <out>.partial: the state an interrupted
 * `merge --force` leaves (its skeleton placed at <out>.partial), made without a timed kill. */
#include <errno.h>
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

#include <hdf5.h>

#include "rs_test_util.h"

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024];

static int setup_(void **state)
{
    (void)state;
    if (rs_test_cli_workdir("rs_hard", g_dir, sizeof g_dir, g_data, sizeof g_data, g_cli, sizeof g_cli) != 0) return -1;
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_rmdir(g_dir);
}

/* a copy of the fixture model at g_dir/name, then `extra` run inside it (sh) */
static void model_copy_(const char *name, const char *extra, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", g_dir, name);
    assert_int_equal(rs_test_sh(g_dir, "rm -rf '%s' && cp -r '%s' '%s' && cd '%s' && %s", out, g_gdn, out, out, extra), 0);
}

/* `cli args` with a watchdog of `secs` seconds (exit 124 / 137 when it had to stop it) */
static int run_(int secs, const char *fmt, ...)
{
    char args[3000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return rs_test_sh(g_dir, "timeout -k 2 %d '%s' %s", secs, g_cli, args);
}

static int exists_(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0;
}

#define KL_ARGS "--books 1 --tokens 32 --chunk 16 --threads 1 --quiet --policy fp32"

/* ---- the model folder's files: only regular files, refused at once ------------------------ */

static void test_model_folder_fifo(void **state)
{
    (void)state;
    char m[600], out[700], good[600], log[700];
    model_copy_("m-fifo", "mkfifo notes.json", m, sizeof m);
    snprintf(out, sizeof out, "%s/fifo.h5", g_dir);
    assert_int_equal(run_(60, "kl --model '%s' --data '%s' " KL_ARGS " --out '%s'", m, g_data, out), 1);
    assert_true(rs_test_out_has(g_dir, "notes.json: not a regular file (a FIFO)"));
    assert_false(exists_(out));
    assert_int_equal(run_(60, "sweep --model '%s' --data '%s' --books 1 --tokens 32 --chunk 16 --threads 1 --quiet "
                              "--modes conv --formats fp16 --rounding rtn --out '%s'", m, g_data, out), 1);
    assert_true(rs_test_out_has(g_dir, "notes.json: not a regular file (a FIFO)"));
    assert_false(exists_(out));
    /* --resume of a log written before the FIFO appeared */
    model_copy_("m-later", "true", good, sizeof good);
    snprintf(log, sizeof log, "%s/later.h5", g_dir);
    assert_int_equal(run_(120, "kl --model '%s' --data '%s' " KL_ARGS " --out '%s'", good, g_data, log), 0);
    size_t n0 = 0, n1 = 0;
    unsigned char *before = rs_test_read_file(log, &n0);
    assert_non_null(before);
    assert_int_equal(rs_test_sh(g_dir, "mkfifo '%s/notes.json'", good), 0);
    assert_int_equal(run_(60, "kl --model '%s' --data '%s' " KL_ARGS " --resume --out '%s'", good, g_data, log), 1);
    assert_true(rs_test_out_has(g_dir, "notes.json: not a regular file (a FIFO)"));
    unsigned char *after = rs_test_read_file(log, &n1);
    assert_non_null(after);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
}

static void test_model_folder_dev_zero(void **state)
{
    (void)state;
    char m[600], out[700];
    model_copy_("m-zero", "ln -s /dev/zero x.json", m, sizeof m);
    snprintf(out, sizeof out, "%s/zero.h5", g_dir);
    assert_int_equal(run_(60, "kl --model '%s' --data '%s' " KL_ARGS " --out '%s'", m, g_data, out), 1);
    assert_true(rs_test_out_has(g_dir, "x.json: not a regular file (a character device)"));
    assert_false(exists_(out));
}

static double now_(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* SIGINT while a 64 GiB (sparse) model file is hashed: the command ends within a second of the
 * signal, exit 130, and writes nothing */
static void test_signal_while_hashing(void **state)
{
    (void)state;
    char m[600], out[700], err[700];
    model_copy_("m-big", "truncate -s 64G blob.model", m, sizeof m);
    snprintf(out, sizeof out, "%s/big.h5", g_dir);
    snprintf(err, sizeof err, "%s/big.err", g_dir);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "exec '%s' kl --model '%s' --data '%s' " KL_ARGS " --out '%s' 2>'%s'", g_cli, m, g_data,
                 out, err);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    const struct timespec warm = {0, 800000000L}; /* the hashing runs from the start of prepare */
    nanosleep(&warm, NULL);
    assert_int_equal(kill(pid, SIGINT), 0);
    const double t0 = now_();
    int wst = 0;
    pid_t w = 0;
    while ((w = waitpid(pid, &wst, WNOHANG)) == 0 && now_() - t0 < 10.0) {
        const struct timespec tick = {0, 10000000L};
        nanosleep(&tick, NULL);
    }
    const double took = now_() - t0;
    if (w == 0) { /* still hashing: stop it, the case fails below */
        kill(pid, SIGKILL);
        waitpid(pid, &wst, 0);
    }
    fprintf(stderr, "exit %.2f s after SIGINT (wait status 0x%x)\n", took, wst);
    assert_true(w == pid);
    assert_true(took < 1.5);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 130);
    size_t n = 0;
    char *e = rs_test_read_file(err, &n), *z = e ? realloc(e, n + 1) : NULL;
    assert_non_null(z);
    z[n] = '\0';
    if (!strstr(z, "interrupted by SIGINT")) fail_msg("stderr: %s", z);
    free(z);
    assert_false(exists_(out));
}

/* ---- logs: the cause of a refusal is named -------------------------------------------------- */

static void test_log_permission_denied(void **state)
{
    (void)state;
    char m[600], log[700];
    model_copy_("m-perm", "true", m, sizeof m);
    snprintf(log, sizeof log, "%s/perm.h5", g_dir);
    assert_int_equal(run_(120, "kl --model '%s' --data '%s' " KL_ARGS " --out '%s'", m, g_data, log), 0);
    assert_int_equal(chmod(g_dir, 0755), 0);
    assert_int_equal(chmod(log, 0600), 0);
    /* as another user (nobody): the log exists and is a log, but cannot be read */
    if (system("command -v setpriv >/dev/null 2>&1") != 0 || getuid() != 0) {
        skip();
        return;
    }
    const int rc = rs_test_sh(g_dir, "setpriv --reuid=65534 --regid=65534 --clear-groups '%s' info '%s'", g_cli, log);
    assert_int_equal(rc, 1);
    assert_true(rs_test_out_has(g_dir, "Permission denied"));
    size_t n = 0;
    char p[600];
    snprintf(p, sizeof p, "%s/out.txt", g_dir);
    char *o = rs_test_read_file(p, &n), *z = o ? realloc(o, n + 1) : NULL;
    assert_non_null(z);
    z[n] = '\0';
    assert_null(strstr(z, "not an HDF5 file"));
    free(z);
}

/* ---- tokenize --out: the rules of every output ---------------------------------------------- */

static void put_(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* the file at path holds exactly text */
static void holds_(const char *path, const char *text)
{
    size_t n = 0;
    char *d = rs_test_read_file(path, &n);
    assert_non_null(d);
    assert_int_equal(n, strlen(text));
    assert_memory_equal(d, text, n);
    free(d);
}

static void test_tokenize_out(void **state)
{
    (void)state;
    char in[600], out[600], target[600], link[600], fifo[600], fresh[600];
    snprintf(in, sizeof in, "%s/in.txt", g_dir);
    snprintf(out, sizeof out, "%s/ids.bin", g_dir);
    snprintf(target, sizeof target, "%s/target.bin", g_dir);
    snprintf(link, sizeof link, "%s/link.bin", g_dir);
    snprintf(fifo, sizeof fifo, "%s/fifo.bin", g_dir);
    snprintf(fresh, sizeof fresh, "%s/fresh.bin", g_dir);
    put_(in, "hello");
    /* an existing FILE: refused without --force, kept as it was */
    put_(out, "OLD");
    assert_int_equal(run_(60, "tokenize --model '%s' --out '%s' '%s'", g_gdn, out, in), 1);
    assert_true(rs_test_out_has(g_dir, "exists"));
    holds_(out, "OLD");
    /* a missing input with --force: the old FILE stays, nothing half-written */
    assert_int_equal(run_(60, "tokenize --model '%s' --out '%s' --force '%s' '%s/missing.txt'", g_gdn, out, in, g_dir), 1);
    holds_(out, "OLD");
    /* a missing input without an old FILE: no FILE at all (it was created empty before the read) */
    assert_int_equal(run_(60, "tokenize --model '%s' --out '%s' '%s/missing.txt'", g_gdn, fresh, g_dir), 1);
    assert_false(exists_(fresh));
    /* --force replaces it: the byte tokenizer's ids of "hello", little-endian uint32 */
    assert_int_equal(run_(60, "tokenize --model '%s' --out '%s' --force '%s'", g_gdn, out, in), 0);
    size_t n = 0;
    unsigned char *ids = rs_test_read_file(out, &n);
    assert_non_null(ids);
    assert_int_equal(n, 20);
    for (int i = 0; i < 5; i++) assert_int_equal(ids[4 * i] | ids[4 * i + 1] << 8, (unsigned char)"hello"[i]);
    free(ids);
    /* a symbolic link: never written through, with or without --force */
    put_(target, "TARGET");
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(run_(60, "tokenize --model '%s' --out '%s' --force '%s'", g_gdn, link, in), 1);
    assert_true(rs_test_out_has(g_dir, "symbolic link"));
    holds_(target, "TARGET");
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    /* a FIFO: refused at once (opening it for writing would wait for a reader) */
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(run_(30, "tokenize --model '%s' --out '%s' --force '%s'", g_gdn, fifo, in), 1);
    assert_true(rs_test_out_has(g_dir, "a FIFO"));
}

/* ---- quant-error: non-finite input is refused, naming it ------------------------------------- */

static void write_ds_(hid_t f, const char *name, hid_t type, const void *v)
{
    const hsize_t dims[2] = {4, 8};
    const hid_t sp = H5Screate_simple(2, dims, NULL);
    const hid_t d = H5Dcreate2(f, name, type == H5T_NATIVE_DOUBLE ? H5T_IEEE_F64LE : H5T_IEEE_F32LE, sp, H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    H5Sclose(sp);
}

static void test_quant_error_nonfinite(void **state)
{
    (void)state;
    char h5[600], csv[600];
    snprintf(h5, sizeof h5, "%s/m.h5", g_dir);
    snprintf(csv, sizeof csv, "%s/t.csv", g_dir);
    float ok[32], nan_[32], inf_[32];
    double big[32];
    for (int i = 0; i < 32; i++) ok[i] = nan_[i] = inf_[i] = (float)(i - 16) * 0.25f, big[i] = (double)(i - 16);
    nan_[13] = NAN;
    nan_[20] = NAN;
    inf_[5] = -INFINITY;
    big[27] = 1e300; /* beyond fp32: reads as Inf */
    const hid_t f = H5Fcreate(h5, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    write_ds_(f, "ok", H5T_NATIVE_FLOAT, ok);
    write_ds_(f, "nan", H5T_NATIVE_FLOAT, nan_);
    write_ds_(f, "inf", H5T_NATIVE_FLOAT, inf_);
    write_ds_(f, "big", H5T_NATIVE_DOUBLE, big);
    H5Fclose(f);
    static const struct {
        const char *ds, *needle;
    } cases[3] = {{"nan", "element 13 (row 1, column 5) is NaN"},
                  {"inf", "element 5 (row 0, column 5) is Inf"},
                  {"big", "element 27 (row 3, column 3) is Inf (or a value beyond the fp32 range)"}};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(run_(60, "quant-error --input '%s' --dataset %s --format fp16 --out '%s'", h5, cases[k].ds, csv), 1);
        assert_true(rs_test_out_has(g_dir, cases[k].needle));
        assert_false(exists_(csv)); /* no table at all, not a header without rows */
    }
    assert_int_equal(run_(60, "quant-error --input '%s' --dataset ok --format fp16 --out '%s'", h5, csv), 0);
    assert_true(exists_(csv));
}

/* ---- theory: every number option is bounded ------------------------------------------------- */

static void test_theory_drafts_bound(void **state)
{
    (void)state;
    assert_int_equal(run_(60, "theory --drafts 99999999999999999999 --mc-steps 0"), 2);
    assert_true(rs_test_out_has(g_dir, "--drafts needs a number in [1, 4096], not '99999999999999999999'"));
    assert_int_equal(run_(60, "theory --drafts 8 --accept 5000 --mc-steps 0"), 2);
    assert_true(rs_test_out_has(g_dir, "--accept needs a number in (0, 4096]"));
}

/* ---- a merge's partial is not a KL run's ----------------------------------------------------- */

static void test_merge_partial_not_resumed(void **state)
{
    (void)state;
    char m[600], a[700], a2[700], merged[700], out[700], partial[720];
    model_copy_("m-merge", "true", m, sizeof m);
    snprintf(a, sizeof a, "%s/a.h5", g_dir);
    snprintf(a2, sizeof a2, "%s/a2.h5", g_dir);
    snprintf(merged, sizeof merged, "%s/merged.h5", g_dir);
    snprintf(out, sizeof out, "%s/out.h5", g_dir);
    snprintf(partial, sizeof partial, "%s/out.h5.partial", g_dir);
    assert_int_equal(run_(120, "kl --model '%s' --data '%s' " KL_ARGS " --out '%s'", m, g_data, a), 0);
    assert_int_equal(rs_test_sh(g_dir, "cp '%s' '%s' && cp '%s' '%s'", a, a2, a, out), 0);
    assert_int_equal(run_(60, "merge '%s' '%s' -o '%s'", a, a2, merged), 0);
    assert_int_equal(rename(merged, partial), 0); /* what `merge ... -o out.h5 --force` leaves when killed */
    size_t n0 = 0, n1 = 0, p0 = 0, p1 = 0;
    unsigned char *before = rs_test_read_file(out, &n0), *pbefore = rs_test_read_file(partial, &p0);
    assert_non_null(before);
    assert_non_null(pbefore);
    assert_int_equal(run_(120, "kl --model '%s' --data '%s' " KL_ARGS " --resume --out '%s'", m, g_data, out), 1);
    assert_true(rs_test_out_has(g_dir, "left by an interrupted `replayssm merge`"));
    unsigned char *after = rs_test_read_file(out, &n1), *pafter = rs_test_read_file(partial, &p1);
    assert_non_null(after);
    assert_non_null(pafter);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    assert_int_equal(p0, p1);
    assert_memory_equal(pbefore, pafter, p0);
    free(before);
    free(after);
    free(pbefore);
    free(pafter);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_folder_fifo),
        cmocka_unit_test(test_model_folder_dev_zero),
        cmocka_unit_test(test_signal_while_hashing),
        cmocka_unit_test(test_log_permission_denied),
        cmocka_unit_test(test_tokenize_out),
        cmocka_unit_test(test_quant_error_nonfinite),
        cmocka_unit_test(test_theory_drafts_bound),
        cmocka_unit_test(test_merge_partial_not_resumed),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
