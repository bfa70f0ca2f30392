/* rs_test_util.h — small helpers shared by the CMocka tests (linked into every test). */
#ifndef RS_TEST_UTIL_H
#define RS_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Path of a committed fixture file: RS_FIXTURE_DIR "/" name (static buffer per call site
 * is not needed: the result is written into buf). Returns buf. */
char *rs_test_fixture_path(char *buf, size_t bufsize, const char *name);

/* A CLI test's working folder: a fresh /tmp/<tag>_XXXXXX into dir[dn] holding a copy of the
 * committed PG-19 excerpts (fixture pg19-mini) at dir/pg19 (that path into data[dd]), and the CLI
 * under test (RS_KL_CLI, else RS_CLI_PATH) into cli[cn] (cli may be NULL: a library test). 0, or -1 on
 * failure. */
int rs_test_cli_workdir(const char *tag, char *dir, size_t dn, char *data, size_t dd, char *cli, size_t cn);
/* rm -rf of such a folder: 0, or -1 on failure. */
int rs_test_rmdir(const char *dir);

/* x rounded half away from zero to dp decimals, as the paper prints its numbers. */
double rs_test_round_dp(double x, int dp);

/* Read a whole file into a malloc'd buffer with a NUL after its bytes (usable as text); *size gets
 * its length (without the NUL). When `path` does not exist, `path`.gz is read and inflated (the larger
 * fixtures are stored gzip-compressed). NULL if unreadable. */
void *rs_test_read_file(const char *path, size_t *size);

/* Run a shell command (printf-style) with stdout + stderr into dir/out.txt; the exit status,
 * or 128 when the command did not exit normally. */
int rs_test_sh(const char *dir, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The last rs_test_sh output in dir contains needle (the output is printed to stderr when not). */
int rs_test_out_has(const char *dir, const char *needle);

/* Time `'cli' args --out full` (must exit 0: returns its wall seconds, or -1), for
 * rs_test_kill9_run. */
double rs_test_timed_run(const char *dir, const char *cli, const char *args, const char *full);

/* Start `'cli' args --out out` and kill -9 it after a random fraction in [lo, hi) of `wall`
 * seconds (out removed first); up to 3 attempts until the kill lands before the command
 * finishes. Prints each attempt to stderr; returns 1 if a run was interrupted, else 0. */
int rs_test_kill9_run(const char *cli, const char *args, const char *out, double wall, double lo, double hi);

/* Start `'cli' args --out out` (stderr to errfile, out removed first), send it signal `sig`
 * after `at` seconds and, with count 2, once more 20 ms later; returns the wait status (waitpid)
 * or -1, or RS_TEST_SIGNAL_LATE (count 2) when the process had already ended before the second
 * signal (it was not sent). rs_test_kill9_run is this with SIGKILL at a random moment. */
#define RS_TEST_SIGNAL_LATE (-2)
int rs_test_signal_run(const char *cli, const char *args, const char *out, const char *errfile, double at, int sig,
                       int count);

/* Bit pattern of a float and back. */
/* rs_test_logs_equal() : two complete KL logs hold the same books and runs, every committed dataset
 * (reference and runs) bit for bit and the same non-finite records (cmocka asserts). */
void rs_test_logs_equal(const char *a, const char *b);

uint32_t rs_test_f2u(float x);
float rs_test_u2f(uint32_t u);

/* Deterministic test-side generator (splitmix64), independent of the library's Philox so
 * tests never validate the library's random stream with itself. */
uint64_t rs_test_splitmix64(uint64_t *state);
/* Uniform double in [0, 1). */
double rs_test_uniform(uint64_t *state);
/* Standard normal (Box-Muller). */
double rs_test_normal(uint64_t *state);

#endif
