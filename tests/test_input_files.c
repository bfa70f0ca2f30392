/* test_input_files.c — inputs must be regular files (docs/threat-model.md): a FIFO named like
 * an input (config.json, model.safetensors, model.safetensors.index.json, metadata.csv, a book,
 * tokenizer.json) is refused at once with "not a regular file" instead of blocking the program
 * at open(); a directory in its place likewise. Before the fix every one of these calls waited
 * forever on the FIFO: the alarm below turns such a hang into a failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/eval/rs_tokenizer.h"
#include "rs_test_util.h"

static char g_dir[64];

static void expect_refused_(rs_status st, rs_status want, const char *path)
{
    if (st != want || !strstr(rs_last_error(), "not a regular file"))
        print_message("%s: status %d, message '%s'\n", path, (int)st, rs_last_error());
    assert_int_equal(st, want);
    assert_non_null(strstr(rs_last_error(), "not a regular file"));
    assert_non_null(strstr(rs_last_error(), path));
}

static void fifo_(const char *name, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", g_dir, name);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
}

static void test_fifo_inputs(void **state)
{
    (void)state;
    alarm(20); /* a blocking open() would hang: SIGALRM fails the test instead */
    char p[256];
    rs_model_config cfg;
    fifo_("config.json", p, sizeof p);
    expect_refused_(rs_hf_config_load(p, &cfg), RS_E_IO, p);

    rs_st_set set;
    fifo_("model.safetensors", p, sizeof p);
    expect_refused_(rs_st_open_file(p, &set), RS_E_IO, p);
    expect_refused_(rs_st_open_dir(g_dir, &set), RS_E_IO, p);
    fifo_("model.safetensors.index.json", p, sizeof p);
    expect_refused_(rs_st_open_dir(g_dir, &set), RS_E_IO, p);

    rs_pg19_meta meta;
    fifo_("metadata.csv", p, sizeof p);
    expect_refused_(rs_pg19_meta_load(g_dir, &meta), RS_E_IO, p);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/test", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    char *text = NULL;
    size_t len = 0;
    /* books: the path lookup already takes regular files only, so a FIFO book is "not found" */
    fifo_("test/7.txt", p, sizeof p);
    assert_int_equal(rs_pg19_read_book(g_dir, "test", "7", &text, &len), RS_E_IO);
    assert_null(text);
    assert_non_null(strstr(rs_last_error(), p));
    unlink(p);
    fifo_("test/7.txt.gz", p, sizeof p);
    assert_int_equal(rs_pg19_read_book(g_dir, "test", "7", &text, &len), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), p));

    rs_tokenizer tok;
    fifo_("tokenizer.json", p, sizeof p);
    const rs_status st = rs_tokenizer_open_file(p, NULL, NULL, -1, &tok);
    expect_refused_(st, RS_E_IO, p);
    alarm(0);
}

/* a directory where a file belongs: refused the same way, not read as an empty file */
static void test_directory_inputs(void **state)
{
    (void)state;
    char p[256];
    snprintf(p, sizeof p, "%s/dir/config.json", g_dir);
    char d[256];
    snprintf(d, sizeof d, "%s/dir", g_dir);
    assert_int_equal(mkdir(d, 0700), 0);
    assert_int_equal(mkdir(p, 0700), 0);
    rs_model_config cfg;
    expect_refused_(rs_hf_config_load(p, &cfg), RS_E_IO, p);
    snprintf(p, sizeof p, "%s/dir/metadata.csv", g_dir);
    assert_int_equal(mkdir(p, 0700), 0);
    rs_pg19_meta meta;
    expect_refused_(rs_pg19_meta_load(d, &meta), RS_E_IO, p);
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_inputs_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_inputs),
        cmocka_unit_test(test_directory_inputs),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
