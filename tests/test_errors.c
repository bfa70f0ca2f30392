/* test_errors.c — error messages that wrap an inner cause.
 *
 * `rs_error_set(code, "...%s...", rs_last_error())` must not format the thread-local message
 * buffer into itself (undefined behaviour: the context would print twice, "PG-19 metadata:
 * PG-19 metadata: ...", and the cause be lost); quant/rs_status.c formats into a local buffer
 * first. Checked here:
 *  - the mechanism: rs_last_error() as an argument (once, twice, nested), messages at and past
 *    the 1024-byte buffer (truncation keeps a NUL, the kept text is the right prefix, no shift);
 *  - call sites that wrap a cause, through the public API, with the cause present exactly once:
 *    eval/input/rs_pg19.c rs_pg19_meta_load (missing metadata.csv), eval/log/rs_kl.c rs_kl_compare
 *    (non-finite reference logits), lib/theory/rs_theory_mc.c rs_theory_mc_state (the quantizer
 *    refuses the stored format: an invalid format is the one failure the public API can reach
 *    there, since the experiment's inputs cannot go non-finite);
 *  - the CLI: `replayssm kl --data DIR` with DIR without metadata.csv prints the real cause once
 *    on stderr, and with DIR missing names it clearly. The CLI is RS_CLI_PATH (override with the
 *    environment variable RS_KL_CLI), run with the bundled model data/models/gdn-tiny. */
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
#include <unistd.h>
#include <cmocka.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_kl.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/quant/rs_format.h"
#include "replayssm/theory/rs_theory_mc.h"
#include "rs_test_util.h"

#define MSG_CAP 1024 /* the message buffer of quant/rs_status.c, NUL included */

static char g_dir[256];

/* non-overlapping occurrences of needle in hay */
static int count_(const char *hay, const char *needle)
{
    int n = 0;
    const size_t k = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + k, needle)) n++;
    return n;
}

/* count_ with the message shown when it is not the expected number */
static int count_shown_(const char *hay, const char *needle)
{
    const int n = count_(hay, needle);
    if (n != 1) print_message("\"%s\" found %d times in:\n%s\n", needle, n, hay);
    return n;
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_errors_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- the mechanism -------------------------------------------------------------------- */

static void test_wrap_last_error(void **st)
{
    (void)st;
    assert_int_equal(rs_error_set(RS_E_IO, "cannot open %s: %s", "/x/y", "No such file"), RS_E_IO);
    assert_string_equal(rs_last_error(), "cannot open /x/y: No such file");
    /* wrap the cause in context: the returned code is the one given, the cause kept whole */
    assert_int_equal(rs_error_set(RS_E_FORMAT, "PG-19 metadata: %s (expected <data>/metadata.csv)",
                                  rs_last_error()),
                     RS_E_FORMAT);
    assert_string_equal(rs_last_error(), "PG-19 metadata: cannot open /x/y: No such file (expected <data>/metadata.csv)");
    /* nested a second time, and the buffer passed twice in one call */
    rs_error_set(RS_E_IO, "outer: %s", rs_last_error());
    assert_string_equal(rs_last_error(),
                        "outer: PG-19 metadata: cannot open /x/y: No such file (expected <data>/metadata.csv)");
    rs_error_set(RS_E_IO, "a");
    rs_error_set(RS_E_IO, "%s|%s|%s", rs_last_error(), rs_last_error(), rs_last_error());
    assert_string_equal(rs_last_error(), "a|a|a");
    /* the buffer as an argument that is not the first thing written */
    rs_error_set(RS_E_IO, "cause");
    rs_error_set(RS_E_IO, "%d %s %.3s", 12345, rs_last_error(), rs_last_error());
    assert_string_equal(rs_last_error(), "12345 cause cau");
    rs_error_clear();
    assert_string_equal(rs_last_error(), "");
    /* wrapping an empty message */
    rs_error_set(RS_E_IO, "[%s]", rs_last_error());
    assert_string_equal(rs_last_error(), "[]");
}

/* character i of a pattern with no period shorter than 26 (a shifted copy would differ) */
static char pat_(size_t i) { return (char)('a' + (i * 7 + i / 26) % 26); }

static void test_wrap_near_limit(void **st)
{
    (void)st;
    static char big[3 * MSG_CAP];
    for (size_t i = 0; i < sizeof big - 1; i++) big[i] = pat_(i);
    big[sizeof big - 1] = '\0';

    /* a message longer than the buffer is cut to MSG_CAP - 1 characters, NUL-terminated */
    rs_error_set(RS_E_IO, "%s", big);
    assert_int_equal(strlen(rs_last_error()), MSG_CAP - 1);
    assert_memory_equal(rs_last_error(), big, MSG_CAP - 1);

    /* a full buffer wrapped in context: the context, then the cause's prefix, in order */
    static const char ctx[] = "context: ";
    rs_error_set(RS_E_IO, "%s%s (tail)", ctx, rs_last_error());
    const char *m = rs_last_error();
    assert_int_equal(strlen(m), MSG_CAP - 1);
    assert_memory_equal(m, ctx, sizeof ctx - 1);
    assert_memory_equal(m + sizeof ctx - 1, big, MSG_CAP - 1 - (sizeof ctx - 1));

    /* a cause just below the limit: it fits alone; wrapped, only its end is cut */
    const size_t len = MSG_CAP - 20;
    char cause[MSG_CAP];
    memcpy(cause, big + 5, len);
    cause[len] = '\0';
    rs_error_set(RS_E_IO, "%s", cause);
    assert_string_equal(rs_last_error(), cause);
    rs_error_set(RS_E_IO, "0123456789012345678901234567890123456789: %s", rs_last_error());
    m = rs_last_error();
    assert_int_equal(strlen(m), MSG_CAP - 1);
    assert_memory_equal(m, "0123456789012345678901234567890123456789: ", 42);
    assert_memory_equal(m + 42, cause, MSG_CAP - 1 - 42);

    /* exactly at the limit: MSG_CAP - 1 characters kept whole, then wrapped with nothing */
    rs_error_set(RS_E_IO, "%.*s", (int)(MSG_CAP - 1), big + 3);
    assert_int_equal(strlen(rs_last_error()), MSG_CAP - 1);
    assert_memory_equal(rs_last_error(), big + 3, MSG_CAP - 1);
    rs_error_set(RS_E_IO, "%s", rs_last_error());
    assert_int_equal(strlen(rs_last_error()), MSG_CAP - 1);
    assert_memory_equal(rs_last_error(), big + 3, MSG_CAP - 1);

    /* and a short message afterwards leaves no trace of the long one */
    rs_error_set(RS_E_IO, "short");
    assert_string_equal(rs_last_error(), "short");
}

/* ---- the former call sites ------------------------------------------------------------ */

static void test_pg19_meta_missing(void **st)
{
    (void)st;
    char root[400], want[600];
    rs_pg19_meta meta;
    /* a folder that exists but has no metadata.csv */
    snprintf(root, sizeof root, "%s/pg19-empty", g_dir);
    assert_int_equal(mkdir(root, 0755), 0);
    memset(&meta, 0, sizeof meta);
    assert_int_equal(rs_pg19_meta_load(root, &meta), RS_E_IO);
    snprintf(want, sizeof want, "cannot open %s/metadata.csv: No such file or directory", root);
    assert_int_equal(count_shown_(rs_last_error(), want), 1);
    assert_true(count_(rs_last_error(), "PG-19 metadata") <= 1);
    rs_pg19_meta_free(&meta);
    /* a folder that does not exist at all */
    snprintf(root, sizeof root, "%s/abc/def", g_dir);
    memset(&meta, 0, sizeof meta);
    assert_int_equal(rs_pg19_meta_load(root, &meta), RS_E_IO);
    snprintf(want, sizeof want, "cannot open %s/metadata.csv: No such file or directory", root);
    assert_int_equal(count_shown_(rs_last_error(), want), 1);
    assert_true(count_(rs_last_error(), "PG-19 metadata") <= 1);
    rs_pg19_meta_free(&meta);
}

static void test_kl_nonfinite_reference(void **st)
{
    (void)st;
    enum { V = 8 };
    float ref[V], run[V];
    for (int i = 0; i < V; i++) ref[i] = run[i] = 0.25f * (float)i;
    double scratch[2 * V];
    rs_kl_point pt;
    /* the inputs are otherwise valid: finite logits compare fine */
    assert_int_equal(rs_kl_compare(ref, run, V, 2, scratch, &pt), RS_OK);
    ref[3] = NAN;
    assert_int_equal(rs_kl_compare(ref, run, V, 2, scratch, &pt), RS_E_NONFINITE);
    assert_int_equal(count_shown_(rs_last_error(), "logit 3 is NaN"), 1);
    assert_int_equal(count_shown_(rs_last_error(), "reference logits are not finite"), 1);
    ref[3] = 0.0f;
    ref[5] = INFINITY;
    assert_int_equal(rs_kl_compare(ref, run, V, 2, scratch, &pt), RS_E_NONFINITE);
    assert_int_equal(count_shown_(rs_last_error(), "logit 5 is Inf"), 1);
    assert_int_equal(count_shown_(rs_last_error(), "reference logits are not finite"), 1);
}

static void test_theory_mc_state_quantizer_error(void **st)
{
    (void)st;
    rs_mc_state_config c;
    memset(&c, 0, sizeof c);
    assert_int_equal(rs_format_parse("fp16-sr", &c.fmt), RS_OK);
    c.alpha = 0.5;
    c.d_v = 4;
    c.d_k = 4;
    c.replicas = 2;
    c.burn_in = 3;
    c.seed = 9;
    const size_t obs[2] = {1, 2};
    rs_mc_state_point out[2];
    /* the configuration runs as given */
    assert_int_equal(rs_theory_mc_state(&c, obs, 2, out), RS_OK);
    /* ... and with SR bits outside 1..32 the quantizer refuses it at the first rounding: the
     * experiment's own checks do not look at the format's fields, the quantizer does */
    c.fmt.sr_bits = 0;
    assert_int_equal(rs_theory_mc_state(&c, obs, 2, out), RS_E_INVAL);
    assert_int_equal(count_shown_(rs_last_error(), "rs_theory_mc_state: step 1, replica 0: "), 1);
    assert_int_equal(count_shown_(rs_last_error(), "SR bits 0 outside 1..32"), 1);
    assert_int_equal(count_(rs_last_error(), "rs_theory_mc_state"), 1);
}

/* ---- the CLI ---------------------------------------------------------------------------- */

static const char *cli_(void)
{
    const char *e = getenv("RS_KL_CLI");
    return e && e[0] ? e : RS_CLI_PATH;
}

/* run `cli kl --model <bundled gdn-tiny> --data DATA --out OUT`, stderr into *err (malloc'd,
 * NUL-terminated), stdout discarded; returns the exit status */
static int run_kl_(const char *data, const char *out, char **err)
{
    char model[1200], errp[400], cmd[4096];
    snprintf(model, sizeof model, "%s/../../data/models/gdn-tiny", RS_FIXTURE_DIR);
    snprintf(errp, sizeof errp, "%s/stderr.txt", g_dir);
    snprintf(cmd, sizeof cmd, "'%s' kl --model '%s' --data '%s' --out '%s' --threads 1 > /dev/null 2> '%s'", cli_(),
             model, data, out, errp);
    const int s = system(cmd);
    size_t n = 0;
    char *t = rs_test_read_file(errp, &n);
    char *z = t ? realloc(t, n + 1) : calloc(1, 1);
    assert_non_null(z);
    z[t ? n : 0] = '\0';
    *err = z;
    return WIFEXITED(s) ? WEXITSTATUS(s) : 128;
}

static void test_cli_missing_metadata(void **st)
{
    (void)st;
    char data[400], out[400], want[600];
    struct stat sb;
    snprintf(data, sizeof data, "%s/cli-pg19", g_dir);
    assert_int_equal(mkdir(data, 0755), 0);
    snprintf(out, sizeof out, "%s/cli.h5", g_dir);
    char *err = NULL;
    assert_int_equal(run_kl_(data, out, &err), 1);
    snprintf(want, sizeof want, "cannot open %s/metadata.csv: No such file or directory", data);
    assert_int_equal(count_shown_(err, want), 1);
    assert_true(count_(err, "PG-19 metadata") <= 1);
    assert_int_equal(count_(err, "metadata.csv: No such file"), 1); /* the cause once, not repeated */
    assert_int_not_equal(stat(out, &sb), 0);                        /* nothing written */
    free(err);
}

static void test_cli_missing_data_dir(void **st)
{
    (void)st;
    char data[400], out[400], want[600];
    struct stat sb;
    snprintf(data, sizeof data, "%s/abc/def", g_dir);
    snprintf(out, sizeof out, "%s/cli2.h5", g_dir);
    char *err = NULL;
    assert_int_equal(run_kl_(data, out, &err), 1);
    snprintf(want, sizeof want, "no data at %s", data);
    assert_int_equal(count_shown_(err, want), 1);
    assert_int_equal(count_(err, data), 1); /* the path named once */
    assert_int_equal(count_(err, "\n"), 1);  /* one line */
    assert_int_not_equal(stat(out, &sb), 0);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_last_error),
        cmocka_unit_test(test_wrap_near_limit),
        cmocka_unit_test(test_pg19_meta_missing),
        cmocka_unit_test(test_kl_nonfinite_reference),
        cmocka_unit_test(test_theory_mc_state_quantizer_error),
        cmocka_unit_test(test_cli_missing_metadata),
        cmocka_unit_test(test_cli_missing_data_dir),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
