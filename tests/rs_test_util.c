/* rs_test_util.c — helpers shared by the CMocka tests. */
#include "rs_test_util.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <zlib.h>
#include <unistd.h>

char *rs_test_fixture_path(char *buf, size_t bufsize, const char *name)
{
    snprintf(buf, bufsize, "%s/%s", RS_FIXTURE_DIR, name);
    return buf;
}

int rs_test_cli_workdir(const char *tag, char *dir, size_t dn, char *data, size_t dd, char *cli, size_t cn)
{
    snprintf(dir, dn, "/tmp/%s_XXXXXX", tag);
    if (!mkdtemp(dir)) return -1;
    snprintf(data, dd, "%s/pg19", dir);
    if (cli) {
#ifdef RS_CLI_PATH
        const char *e = getenv("RS_KL_CLI");
        snprintf(cli, cn, "%s", e && e[0] ? e : RS_CLI_PATH);
#else
        snprintf(cli, cn, "replayssm");
#endif
    }
    char fx[1024], cmd[4096];
    rs_test_fixture_path(fx, sizeof fx, "pg19-mini");
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", fx, data);
    return system(cmd) == 0 ? 0 : -1;
}

int rs_test_rmdir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* path + ".gz" through zlib, inflated (the larger text and table fixtures are stored compressed) */
static void *read_gz_(const char *path, size_t *size)
{
    char gzp[4096];
    if (snprintf(gzp, sizeof gzp, "%s.gz", path) >= (int)sizeof gzp) return NULL;
    gzFile g = gzopen(gzp, "rb");
    if (!g) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = (char *)malloc(cap + 1);
    int got;
    while (buf && (got = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)got;
        if (len == cap) {
            char *nb = (char *)realloc(buf, 2 * cap + 1);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    int err = 0;
    if (buf && (got < 0 || (gzerror(g, &err), err != Z_OK && err != Z_STREAM_END))) { free(buf); buf = NULL; }
    gzclose(g);
    if (!buf) return NULL;
    buf[len] = '\0';
    if (size) *size = len;
    return buf;
}

void *rs_test_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return read_gz_(path, size);
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long len = ftell(f);
    if (len < 0) { fclose(f); return NULL; }
    rewind(f);
    char *buf = (char *)malloc((size_t)len + 1); /* one more byte: a NUL after the data, for text */
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) { free(buf); buf = NULL; }
    if (buf) buf[len] = '\0';
    fclose(f);
    if (buf && size) *size = (size_t)len;
    return buf;
}

double rs_test_round_dp(double x, int dp)
{
    const double s = pow(10.0, dp);
    return round(x * s) / s;
}

uint32_t rs_test_f2u(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
float rs_test_u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

uint64_t rs_test_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rs_test_uniform(uint64_t *s) { return (double)(rs_test_splitmix64(s) >> 11) * 0x1.0p-53; }

double rs_test_normal(uint64_t *s)
{
    double u1 = rs_test_uniform(s), u2 = rs_test_uniform(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int rs_test_sh(const char *dir, const char *fmt, ...)
{
    char cmd[4096], full[4700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "%s > '%s/out.txt' 2>&1", cmd, dir);
    const int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int rs_test_out_has(const char *dir, const char *needle)
{
    char p[600];
    size_t n = 0;
    snprintf(p, sizeof p, "%s/out.txt", dir);
    char *z = rs_test_read_file(p, &n), *zz = z ? realloc(z, n + 1) : NULL;
    if (!zz) {
        free(z);
        return 0;
    }
    zz[n] = '\0';
    const int found = strstr(zz, needle) != NULL;
    if (!found) fprintf(stderr, "output was:\n%s\n", zz);
    free(zz);
    return found;
}

double rs_test_timed_run(const char *dir, const char *cli, const char *args, const char *full)
{
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    if (rs_test_sh(dir, "'%s' %s --out '%s'", cli, args, full) != 0) return -1.0;
    clock_gettime(CLOCK_MONOTONIC, &w1);
    return (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
}

int rs_test_signal_run(const char *cli, const char *args, const char *out, const char *errfile, double at, int sig,
                       int count)
{
    unlink(out);
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "exec '%s' %s --out '%s' >/dev/null 2>'%s'", cli, args, out, errfile);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    struct timespec ts = {(time_t)at, (long)((at - (double)(time_t)at) * 1e9)};
    nanosleep(&ts, NULL);
    kill(pid, sig);
    if (count > 1) {
        const struct timespec gap = {0, 20000000L}; /* 20 ms: inside one chunk of the signal test */
        nanosleep(&gap, NULL);
        /* already gone (the first signal's graceful stop took less than the gap, or a loaded machine
         * slept longer): the later signals would test nothing */
        int early = 0;
        if (waitpid(pid, &early, WNOHANG) == pid) return RS_TEST_SIGNAL_LATE;
        kill(pid, sig);
    }
    int wst = 0;
    if (waitpid(pid, &wst, 0) != pid) return -1;
    return wst;
}

int rs_test_kill9_run(const char *cli, const char *args, const char *out, double wall, double lo, double hi)
{
    uint64_t rng = (uint64_t)time(NULL);
    for (int attempt = 0; attempt < 3; attempt++) {
        unlink(out);
        const double at = wall * (lo + (hi - lo) * rs_test_uniform(&rng));
        const pid_t pid = fork();
        if (pid < 0) return 0;
        if (pid == 0) {
            char cmd[4096];
            snprintf(cmd, sizeof cmd, "exec '%s' %s --out '%s' >/dev/null 2>&1", cli, args, out);
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        struct timespec ts = {(time_t)at, (long)((at - (double)(time_t)at) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int wst = 0;
        waitpid(pid, &wst, 0);
        const int interrupted = WIFSIGNALED(wst);
        fprintf(stderr, "kill -9 after %.2f s of %.2f s: %s\n", at, wall, interrupted ? "interrupted" : "had finished");
        if (interrupted) return 1;
    }
    return 0;
}

void rs_test_logs_equal(const char *a, const char *b)
{
    rs_h5log *x = NULL, *y = NULL;
    assert_int_equal(rs_h5log_open(a, 0, NULL, &x), RS_OK);
    assert_int_equal(rs_h5log_open(b, 0, NULL, &y), RS_OK);
    assert_int_equal(rs_h5log_n_books(x), rs_h5log_n_books(y));
    assert_int_equal(rs_h5log_n_runs(x), rs_h5log_n_runs(y));
    char s1[32] = "", s2[32] = "";
    assert_int_equal(rs_h5log_get_attr_string(x, "/", "status", s1, sizeof s1), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(y, "/", "status", s2, sizeof s2), RS_OK);
    assert_string_equal(s1, "complete");
    assert_string_equal(s2, "complete");
    const char *names[] = {"kl", "nll", "dp", "top1_agree"}, *rnames[] = {"nll", "next_token", "top1"};
    for (size_t bk = 0; bk < rs_h5log_n_books(x); bk++) {
        const size_t n = (size_t)rs_h5log_completed(x, bk);
        assert_int_equal(rs_h5log_completed(y, bk), (int64_t)n);
        assert_int_equal(n, rs_h5log_book_len(x, bk));
        double *d1 = calloc(n + 1, 8), *d2 = calloc(n + 1, 8);
        assert_non_null(d1);
        assert_non_null(d2);
        for (long r = -1; r < (long)rs_h5log_n_runs(x); r++) {
            for (size_t k = 0; k < (r < 0 ? 3u : 4u); k++) {
                assert_int_equal(rs_h5log_read_row(x, r, r < 0 ? rnames[k] : names[k], bk, n, d1), RS_OK);
                assert_int_equal(rs_h5log_read_row(y, r, r < 0 ? rnames[k] : names[k], bk, n, d2), RS_OK);
                assert_memory_equal(d1, d2, n * 8);
            }
            if (r >= 0) {
                int64_t p1, p2;
                int32_t l1, l2, h1, h2;
                assert_int_equal(rs_h5log_get_nonfinite(x, (size_t)r, bk, &p1, &l1, &h1), RS_OK);
                assert_int_equal(rs_h5log_get_nonfinite(y, (size_t)r, bk, &p2, &l2, &h2), RS_OK);
                assert_true(p1 == p2 && l1 == l2 && h1 == h2);
            }
        }
        free(d1);
        free(d2);
    }
    rs_h5log_close(x);
    rs_h5log_close(y);
}
