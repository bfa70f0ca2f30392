/* test_kleval_provenance.c — what a log records about its model and its invocations
 * (docs/hdf5-layout.md "Provenance"), through the library (rs_kleval) on the fixture
 * model gdn-tiny-random and book 1023 of tests/fixtures/pg19-mini:
 *  - two model folders differing only in one weight byte get different digests of that file, the
 *    same digest of config.json and different model_config_hash; every digest equals sha256sum's
 *    and model_config_hash equals sha256sum of sha256sum's manifest (an independent reference);
 *    paths given relative are recorded absolute;
 *  - an evaluation stopped through rs_kleval_config.cancel closes its log "interrupted" (root
 *    status and history), and --resume (RS_KLEVAL_OUT_RESUME) appends a history entry with its
 *    own command line, ending "complete";
 *  - --resume after a weight file changed (new mtime) is refused naming model_config_hash; with
 *    size and mtime restored the digest comes from the log's cache (documented: the cache key is
 *    size + mtime, as make and rsync's quick check). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_kleval.h"
#include "rs_test_kleval.h"
#include "rs_test_util.h"

static char g_dir[256];

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_prov_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    char fx[1024], gdn[1024];
    rs_test_fixture_path(fx, sizeof fx, "pg19-mini");
    rs_test_fixture_path(gdn, sizeof gdn, "models/gdn-tiny-random");
    if (rs_test_sh(g_dir, "cd '%s' && cp -r '%s' pg19 && cp -r '%s' A && cp -r '%s' B && cp -r '%s' C", g_dir, fx, gdn,
                   gdn, gdn)) return -1;
    /* B: one byte of the last tensor's data flipped (the safetensors header is at the start) */
    char p[600];
    snprintf(p, sizeof p, "%s/B/model.safetensors", g_dir);
    FILE *f = fopen(p, "r+b");
    if (!f || fseek(f, -1, SEEK_END) != 0) return -1;
    const int c = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(c ^ 0x01, f);
    fclose(f);
    return chdir(g_dir); /* the model folders are given relative: the log must record them absolute */
}

static int teardown_(void **state)
{
    (void)state;
    if (chdir("/tmp") != 0) return -1;
    return rs_test_sh("/tmp", "rm -rf '%s'", g_dir);
}

typedef struct stopper {
    volatile sig_atomic_t flag;
    int after; /* set the flag at this PROGRESS event (what the CLI's signal handler does) */
    int seen;
} stopper;

static int on_event_(const rs_kleval_event *e, void *user)
{
    stopper *s = (stopper *)user;
    if (e->kind == RS_KLEVAL_EVENT_PROGRESS && s && ++s->seen == s->after) s->flag = SIGINT;
    return 0;
}

static const rs_test_run k_run[1] = {{"split:nvfp4-rtn/fp16-sr", 16, 5}};

static rs_kleval_config config_(const char *model, const char *out, const char *cmdline, stopper *s)
{
    static const char *const ids[] = {"1023"};
    static rs_run_spec run[1];
    assert_int_equal(rs_test_specs(k_run, 1, run), RS_OK);
    rs_kleval_config c = rs_kleval_config_default();
    c.model_dir = model;
    c.data_dir = "pg19";
    c.book_ids = ids;
    c.n_book_ids = 1;
    c.tokens = 96;
    c.chunk = 16;
    c.threads = 1;
    c.out_path = out;
    c.runs = run;
    c.n_runs = 1;
    c.command_line = cmdline;
    if (s) {
        c.on_event = on_event_;
        c.user = s;
        c.cancel = &s->flag;
    }
    return c;
}

static rs_status run_(const rs_kleval_config *c, int *complete, int *interrupted)
{
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(c, &ev), RS_OK);
    const rs_status st = rs_kleval_run(ev);
    *complete = rs_kleval_get_result(ev)->complete;
    *interrupted = rs_kleval_get_result(ev)->interrupted;
    rs_kleval_free(ev);
    return st;
}

/* sha256sum's digest of a file, or of a shell pipeline's output */
static void sha_of_(const char *cmd, char out[65])
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, 65, p));
    pclose(p);
    assert_int_equal(strlen(out), 64);
}

static const char *file_sha_(const rs_h5log *lg, const char *name)
{
    for (size_t i = 0; i < rs_h5log_file_count(lg); i++) {
        rs_h5log_file_hash fh;
        assert_int_equal(rs_h5log_get_file(lg, i, &fh), RS_OK);
        if (!strcmp(fh.name, name)) return fh.sha256;
    }
    fail_msg("%s not recorded", name);
    return NULL;
}

static void test_one_byte_other_hash(void **state)
{
    (void)state;
    int done, intr;
    rs_kleval_config ca = config_("A", "a.h5", "first A", NULL), cb = config_("B", "b.h5", "first B", NULL);
    assert_int_equal(run_(&ca, &done, &intr), RS_OK);
    assert_int_equal(run_(&cb, &done, &intr), RS_OK);
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open("a.h5", 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_open("b.h5", 0, NULL, &b), RS_OK);
    assert_int_equal(rs_h5log_file_count(a), 3); /* config.json, model.safetensors, reference.safetensors */
    char ref[65];
    const char *names[] = {"config.json", "model.safetensors", "reference.safetensors"};
    for (int i = 0; i < 3; i++) { /* every digest == sha256sum's */
        char cmd[700];
        snprintf(cmd, sizeof cmd, "sha256sum 'A/%s'", names[i]);
        sha_of_(cmd, ref);
        assert_string_equal(file_sha_(a, names[i]), ref);
        snprintf(cmd, sizeof cmd, "sha256sum 'B/%s'", names[i]);
        sha_of_(cmd, ref);
        assert_string_equal(file_sha_(b, names[i]), ref);
    }
    assert_string_not_equal(file_sha_(a, "model.safetensors"), file_sha_(b, "model.safetensors"));
    assert_string_equal(file_sha_(a, "config.json"), file_sha_(b, "config.json"));
    char ha[128], hb[128], want[80];
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "model_config_hash", ha, sizeof ha), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(b, "/", "model_config_hash", hb, sizeof hb), RS_OK);
    assert_string_not_equal(ha, hb);
    sha_of_("cd A && sha256sum config.json model.safetensors reference.safetensors | sha256sum", ref);
    snprintf(want, sizeof want, "sha256:%s", ref);
    assert_string_equal(ha, want);
    /* absolute paths and the machine */
    char mp[4096], dp[4096], abs_a[4096], host[256];
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "model_path", mp, sizeof mp), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "data_path", dp, sizeof dp), RS_OK);
    snprintf(abs_a, sizeof abs_a, "%s/A", g_dir);
    char *real = realpath(abs_a, NULL);
    assert_non_null(real);
    assert_string_equal(mp, real);
    free(real);
    assert_true(dp[0] == '/' && strstr(dp, "/pg19"));
    assert_int_equal(rs_h5log_get_attr_string(a, "/provenance", "host", host, sizeof host), RS_OK);
    char me[256] = "";
    gethostname(me, sizeof me - 1);
    assert_string_equal(host, me);
    char blas[512];
    assert_int_equal(rs_h5log_get_attr_string(a, "/provenance", "blas", blas, sizeof blas), RS_OK);
    assert_non_null(strstr(blas, "OpenBLAS"));
    rs_h5log_close(a);
    rs_h5log_close(b);
}

static void test_interrupt_and_history(void **state)
{
    (void)state;
    int done = -1, intr = -1;
    stopper s = {0, 2, 0};
    rs_kleval_config c = config_("A", "h.h5", "first command", &s);
    assert_int_equal(run_(&c, &done, &intr), RS_OK);
    assert_int_equal(done, 0);
    assert_int_equal(intr, 1);
    rs_h5log *lg = NULL;
    char buf[256];
    assert_int_equal(rs_h5log_open("h.h5", 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_completed(lg, 0), 32); /* the two chunks before the flag, committed */
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "interrupted");
    assert_int_equal(rs_h5log_history_count(lg), 1);
    assert_int_equal(rs_h5log_get_history(lg, 0, "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "interrupted");
    assert_int_equal(rs_h5log_get_history(lg, 0, "end_time", buf, sizeof buf), RS_OK);
    assert_true(strlen(buf) == 20);
    rs_h5log_close(lg);
    /* resumed: a second entry with its own command line */
    rs_kleval_config r = config_("A", "h.h5", "second command --resume", NULL);
    r.output = RS_KLEVAL_OUT_RESUME;
    assert_int_equal(run_(&r, &done, &intr), RS_OK);
    assert_int_equal(done, 1);
    assert_int_equal(intr, 0);
    assert_int_equal(rs_h5log_open("h.h5", 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_history_count(lg), 2);
    assert_int_equal(rs_h5log_get_history(lg, 0, "command_line", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "first command");
    assert_int_equal(rs_h5log_get_history(lg, 0, "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "interrupted");
    assert_int_equal(rs_h5log_get_history(lg, 1, "command_line", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "second command --resume");
    assert_int_equal(rs_h5log_get_history(lg, 1, "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    rs_h5log_close(lg);
}

static void test_changed_weights_refused(void **state)
{
    (void)state;
    int done, intr;
    stopper s = {0, 1, 0};
    rs_kleval_config c = config_("C", "c.h5", "first", &s);
    assert_int_equal(run_(&c, &done, &intr), RS_OK);
    assert_int_equal(intr, 1);
    struct stat before;
    assert_int_equal(stat("C/model.safetensors", &before), 0);
    /* one byte changed (inverted), and (1 s later) the mtime with it: refused */
    sleep(1);
    FILE *f = fopen("C/model.safetensors", "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -2, SEEK_END), 0);
    const int byte = fgetc(f);
    assert_int_equal(fseek(f, -2, SEEK_END), 0);
    fputc(byte ^ 0xff, f);
    fclose(f);
    rs_kleval_config r = config_("C", "c.h5", "resume", NULL);
    r.output = RS_KLEVAL_OUT_RESUME;
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(&r, &ev), RS_OK);
    assert_int_not_equal(rs_kleval_run(ev), RS_OK);
    assert_non_null(strstr(rs_last_error(), "model_config_hash"));
    assert_int_equal(rs_kleval_failed_stage(ev), RS_KLEVAL_STAGE_SETUP);
    rs_kleval_free(ev);
    /* the same size and mtime as recorded: the digest is taken from the log (not reread), so
     * this resume is accepted although a byte differs: the cache's documented limit */
    const struct timespec ts[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, "C/model.safetensors", ts, 0), 0);
    assert_int_equal(run_(&r, &done, &intr), RS_OK);
    assert_int_equal(done, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_byte_other_hash),
        cmocka_unit_test(test_interrupt_and_history),
        cmocka_unit_test(test_changed_weights_refused),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
