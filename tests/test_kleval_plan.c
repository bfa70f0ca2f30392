/* test_kleval_plan.c — rs_kleval_create / rs_kleval_prepare (replayssm/eval/rs_kleval.h) on the fixture
 * model tests/fixtures/models/gdn-tiny-random and the PG-19 excerpts of tests/fixtures/pg19-mini,
 * copied into a temporary layout with an empty book 777 and a 50-byte book 900:
 *  - short books: reported as events (skip, or truncate to what they have) and in the plan;
 *  - bad configurations (unknown policy, repeated run, tokens out of range, no model, a book
 *    listed twice, an empty book, resume without a log, an existing output): the right status,
 *    failed stage and message, no output file (an existing one untouched), and the failure is
 *    final. The evaluation itself: test_kleval.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "replayssm/eval/rs_kleval.h"
#include "rs_test_kleval.h"
#include "rs_test_util.h"

static char g_dir[256], g_data[512], g_gdn[1024];

static int setup_(void **state)
{
    (void)state;
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    if (rs_test_cli_workdir("rs_klplan", g_dir, sizeof g_dir, g_data, sizeof g_data, NULL, 0)) return -1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "printf '' > '%s/test/777.txt' && printf '%%050d' 0 > '%s/test/900.txt' && "
             "printf '777,Empty,1900,x\\n900,Short,1900,x\\n' >> '%s/metadata.csv'",
             g_data, g_data, g_data);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_rmdir(g_dir);
}

static const char *path_(char *buf, const char *name)
{
    snprintf(buf, 600, "%s/%s", g_dir, name);
    return buf;
}

/* book 1023, 160 positions in chunks of 32, 1 thread (rs_test_kleval.h); the runs made into specs
 * by the library's parser, held until the next config_ */
static rs_run_spec g_specs[4];
static rs_kleval_config config_(const char *model, const char *out, const rs_test_run *runs, size_t n)
{
    assert_true(n <= 4);
    assert_int_equal(rs_test_specs(runs, n, g_specs), RS_OK);
    return rs_test_kleval_config(model, g_data, out, g_specs, n);
}

typedef struct seen_books { size_t skipped, truncated, avail, kept; int truncatable; } seen_books;

static int book_events_(const rs_kleval_event *e, void *user)
{
    seen_books *s = (seen_books *)user;
    if (e->kind == RS_KLEVAL_EVENT_BOOK_SKIPPED) s->skipped++;
    if (e->kind == RS_KLEVAL_EVENT_BOOK_TRUNCATED) s->truncated++, s->kept = e->positions;
    if (e->kind != RS_KLEVAL_EVENT_PROGRESS) s->avail = e->available, s->truncatable = e->truncatable;
    return 0;
}

/* book 900 (50 tokens) with --tokens 64: skipped and reported, or truncated to 49 positions */
static void test_short_books(void **state)
{
    (void)state;
    static const char *const ids[] = {"900", "1023"};
    static const rs_test_run one = {"shared:nvfp4-sr", 16, 0};
    char out[600];
    for (int trunc = 0; trunc < 2; trunc++) {
        seen_books s = {0, 0, 0, 0, 0};
        rs_kleval_config c = config_(g_gdn, path_(out, trunc ? "trunc.h5" : "skip.h5"), &one, 1);
        c.book_ids = ids;
        c.n_book_ids = 2;
        c.tokens = 64;
        c.short_books = trunc ? RS_KLEVAL_SHORT_TRUNCATE : RS_KLEVAL_SHORT_SKIP;
        c.on_event = book_events_;
        c.user = &s;
        rs_kleval *ev = NULL;
        assert_int_equal(rs_kleval_create(&c, &ev), RS_OK);
        assert_int_equal(rs_kleval_run(ev), RS_OK);
        const rs_kleval_result *res = rs_kleval_get_result(ev);
        assert_int_equal(s.avail, 50);
        assert_true(s.truncatable);
        assert_int_equal(s.skipped, trunc ? 0 : 1);
        assert_int_equal(s.truncated, trunc ? 1 : 0);
        assert_int_equal(res->n_books, trunc ? 2 : 1);
        assert_int_equal(res->n_skipped, trunc ? 0 : 1);
        if (!trunc) assert_string_equal(res->skipped[0].id, "900");
        if (!trunc) assert_non_null(res->skipped[0].reason);
        if (trunc) assert_int_equal(s.kept, 49);
        if (trunc) assert_int_equal(res->books[0].positions, 49);
        assert_string_equal(res->books[res->n_books - 1].id, "1023");
        rs_kleval_free(ev);
    }
}

/* prepare fails with (status, stage, message) and leaves no output */
static void prepare_fails_(const rs_kleval_config *c, rs_status st, rs_kleval_stage stage, const char *needle)
{
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(c, &ev), RS_OK);
    assert_int_equal(rs_kleval_prepare(ev), st);
    print_message("%s\n", rs_last_error());
    assert_non_null(strstr(rs_last_error(), needle));
    assert_int_equal(rs_kleval_failed_stage(ev), stage);
    int fin = 0;
    assert_int_equal(rs_kleval_step(ev, &fin), RS_E_STATE); /* a failure is final */
    rs_kleval_free(ev);
    if (c->output != RS_KLEVAL_OUT_RESUME && stage != RS_KLEVAL_STAGE_OUTPUT) {
        struct stat sb;
        assert_int_not_equal(stat(c->out_path, &sb), 0);
    }
}

static void test_bad_config(void **state)
{
    (void)state;
    static const rs_test_run bad = {"shared:fp7-sr", 16, 0}, twice[] = {{"fp32", 16, 0}, {"fp32", 16, 0}};
    static const rs_test_run one = {"fp32", 16, 0};
    static const char *const dup[] = {"1023", "105", "1023"}, *empty[] = {"777"};
    char out[600], nomodel[600];
    /* a policy is refused where it is parsed, once: rs_run_spec_parse, before any evaluation */
    rs_run_spec spec;
    assert_int_equal(rs_test_specs(&bad, 1, &spec), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "unknown policy"));
    assert_non_null(strstr(rs_last_error(), "fp7"));
    /* the evaluator takes specs, and refuses a repeated run or one not as the parser makes them */
    rs_kleval_config c = config_(g_gdn, path_(out, "bad.h5"), twice, 2);
    static char sentinel;
    rs_kleval *ev = (rs_kleval *)(void *)&sentinel; /* create must reset it to NULL on failure */
    assert_int_equal(rs_kleval_create(&c, &ev), RS_E_INVAL);
    assert_null(ev);
    assert_non_null(strstr(rs_last_error(), "repeats run 0"));
    c = config_(g_gdn, out, &one, 1);
    g_specs[0].window = 0; /* the one window range: rs_run_spec_make's */
    assert_int_equal(rs_kleval_create(&c, &ev), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "run 0: run fp32: window L 0 is not in [1, 4096]"));
    c = config_(g_gdn, out, &one, 1);
    snprintf(g_specs[0].name, sizeof g_specs[0].name, "conv:fp16-sr"); /* a name that is not the policy's */
    assert_int_equal(rs_kleval_create(&c, &ev), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "canonical"));
    c = config_(g_gdn, out, &one, 1);
    c.tokens = 0;
    assert_int_equal(rs_kleval_create(&c, &ev), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "tokens"));
    c = config_(path_(nomodel, "no-such-model"), out, &one, 1);
    prepare_fails_(&c, RS_E_IO, RS_KLEVAL_STAGE_MODEL_DIR, "no model at");
    c = config_(g_gdn, out, &one, 1);
    c.book_ids = dup;
    c.n_book_ids = 3;
    prepare_fails_(&c, RS_E_INVAL, RS_KLEVAL_STAGE_CONFIG, "book 1023 listed twice");
    c.book_ids = empty;
    c.n_book_ids = 1;
    prepare_fails_(&c, RS_E_FORMAT, RS_KLEVAL_STAGE_BOOKS, "is empty");
    c = config_(g_gdn, out, &one, 1);
    c.output = RS_KLEVAL_OUT_RESUME;
    prepare_fails_(&c, RS_E_IO, RS_KLEVAL_STAGE_OUTPUT, "does not exist");
    FILE *f = fopen(out, "w");
    fputs("precious", f);
    fclose(f);
    c.output = RS_KLEVAL_OUT_NEW;
    prepare_fails_(&c, RS_E_IO, RS_KLEVAL_STAGE_OUTPUT, "exists: use --force");
    size_t n = 0;
    char *kept = rs_test_read_file(out, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(kept, "precious", 8);
    free(kept);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_books),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
