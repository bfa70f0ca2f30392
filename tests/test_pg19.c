/* test_pg19.c — PG-19 layout reader (replayssm/eval/rs_pg19.h): quoted csv, .txt / .txt.gz, selection,
 * and the error cases (missing book, empty book, malformed csv, bad id). Books are written to a
 * temporary folder by the test (gzip through zlib, an independent writer), plus one check
 * against the shared sample when it is present. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "replayssm/eval/rs_pg19.h"
#include "rs_test_util.h"

static char g_root[256];

static void write_file_(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void write_gz_(const char *path, const char *text, size_t len)
{
    gzFile g = gzopen(path, "wb9");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, text, (unsigned)len), (int)len);
    gzclose(g);
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/rs_pg19_XXXXXX");
    if (!mkdtemp(g_root)) return -1;
    char p[512];
    snprintf(p, sizeof p, "%s/test", g_root);
    mkdir(p, 0755);
    const char *meta =
        "10,\"Tales, Stories and \"\"Quotes\"\"\",1900,http://www.gutenberg.org/ebooks/10\n"
        "99,Not In This Split,1890,http://x\r\n"
        "\n"
        "20,Plain Title,1901,http://www.gutenberg.org/ebooks/20\n"
        "30,\"Multi\nLine\",1902,http://y\n"
        "40,Empty Book,1903,http://z\n";
    snprintf(p, sizeof p, "%s/metadata.csv", g_root);
    write_file_(p, meta, strlen(meta));
    snprintf(p, sizeof p, "%s/test/10.txt", g_root);
    write_file_(p, "Hello, world.\n", 14);
    static char big[100000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + (i * 7) % 26);
    snprintf(p, sizeof p, "%s/test/20.txt.gz", g_root);
    write_gz_(p, big, sizeof big);
    snprintf(p, sizeof p, "%s/test/30.txt", g_root);
    write_file_(p, "\xe9t\xe9", 3); /* Latin-1 bytes pass through unchanged */
    snprintf(p, sizeof p, "%s/test/40.txt", g_root);
    write_file_(p, "", 0);
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_metadata(void **state)
{
    (void)state;
    rs_pg19_meta m;
    assert_int_equal(rs_pg19_meta_load(g_root, &m), RS_OK);
    assert_int_equal(m.n, 5);
    assert_string_equal(m.books[0].id, "10");
    assert_string_equal(m.books[0].title, "Tales, Stories and \"Quotes\"");
    assert_string_equal(m.books[0].date, "1900");
    assert_string_equal(m.books[0].link, "http://www.gutenberg.org/ebooks/10");
    assert_string_equal(m.books[1].link, "http://x"); /* CRLF stripped */
    assert_string_equal(m.books[2].id, "20");
    assert_string_equal(m.books[3].title, "Multi\nLine");
    assert_int_equal(rs_pg19_meta_find(&m, "30"), 3);
    assert_int_equal(rs_pg19_meta_find(&m, "31"), -1);
    rs_pg19_meta_free(&m);
    assert_null(m.books);
}

static void test_metadata_malformed(void **state)
{
    (void)state;
    rs_pg19_meta m;
    const char *bad[] = {
        "1,a,b\n",                 /* 3 fields */
        "1,a,b,c,d\n",             /* 5 fields */
        "1,\"unterminated,b,c\n",  /* open quote */
        "1,\"x\"y,b,c\n",          /* junk after closing quote */
        "1,a\"b,c,d\n",            /* quote inside unquoted field */
        "../etc,a,b,c\n",          /* id that could escape the folder */
        "1,a,b,c\n2,a,b\n",        /* second line bad */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rs_pg19_meta_parse(bad[i], strlen(bad[i]), "m.csv", &m), RS_E_FORMAT);
        assert_non_null(strstr(rs_last_error(), "m.csv: line "));
        assert_null(m.books);
    }
    assert_non_null(strstr(rs_last_error(), "line 2"));
    /* last line without newline is fine */
    assert_int_equal(rs_pg19_meta_parse("7,t,d,l", 7, "m.csv", &m), RS_OK);
    assert_int_equal(m.n, 1);
    assert_string_equal(m.books[0].link, "l");
    rs_pg19_meta_free(&m);
    /* missing file */
    assert_int_equal(rs_pg19_meta_load("/nonexistent/dir", &m), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "metadata.csv"));
}

static void test_books(void **state)
{
    (void)state;
    char *d = NULL;
    size_t n = 0;
    assert_int_equal(rs_pg19_read_book(g_root, "test", "10", &d, &n), RS_OK);
    assert_int_equal(n, 14);
    assert_memory_equal(d, "Hello, world.\n", 14);
    assert_int_equal(d[n], '\0');
    free(d);
    assert_int_equal(rs_pg19_read_book(g_root, "test", "20", &d, &n), RS_OK);
    assert_int_equal(n, 100000);
    for (size_t i = 0; i < n; i++) assert_int_equal(d[i], (char)('a' + (i * 7) % 26));
    free(d);
    assert_int_equal(rs_pg19_read_book(g_root, "test", "30", &d, &n), RS_OK);
    assert_int_equal(n, 3);
    assert_int_equal((unsigned char)d[0], 0xe9);
    free(d);
    /* empty, missing, bad id */
    assert_int_equal(rs_pg19_read_book(g_root, "test", "40", &d, &n), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "is empty"));
    assert_null(d);
    assert_int_equal(rs_pg19_read_book(g_root, "test", "99", &d, &n), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "book 99 not found"));
    assert_int_equal(rs_pg19_read_book(g_root, "test", "../x", &d, &n), RS_E_INVAL);
    assert_int_equal(rs_pg19_read_book(g_root, "nosplit", "10", &d, &n), RS_E_IO);
}

static void test_corrupt_gz(void **state)
{
    (void)state;
    char p[512];
    /* a gzip stream cut in half */
    static char text[20000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)(rs_test_splitmix64(&(uint64_t){i}) & 0x7f);
    snprintf(p, sizeof p, "%s/test/50.txt.gz", g_root);
    write_gz_(p, text, sizeof text);
    size_t len = 0;
    char *raw = rs_test_read_file(p, &len);
    assert_non_null(raw);
    write_file_(p, raw, len / 2);
    free(raw);
    char *d = NULL;
    size_t n = 0;
    assert_int_equal(rs_pg19_read_book(g_root, "test", "50", &d, &n), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "gzip"));
    /* bytes without the gzip magic: zlib would pass them through as text ("transparent mode");
     * a .txt.gz must be gzip. Plain printable text, so only the magic check
     * can refuse it. */
    write_file_(p, "plain text, not gzip\n", 21);
    d = NULL;
    assert_int_equal(rs_pg19_read_book(g_root, "test", "50", &d, &n), RS_E_FORMAT);
    assert_null(d);
    assert_non_null(strstr(rs_last_error(), "not gzip data"));
    /* a one-byte file is too short to hold the magic */
    write_file_(p, "\x1f", 1);
    assert_int_equal(rs_pg19_read_book(g_root, "test", "50", &d, &n), RS_E_FORMAT);
    unlink(p);
}

static void test_select_first(void **state)
{
    (void)state;
    rs_pg19_meta m;
    assert_int_equal(rs_pg19_meta_load(g_root, &m), RS_OK);
    char **ids = NULL;
    /* first 3 in metadata order with a file in test/: 10, 20, 30 (99 has no file) */
    assert_int_equal(rs_pg19_select_first(g_root, "test", &m, 3, &ids), RS_OK);
    assert_string_equal(ids[0], "10");
    assert_string_equal(ids[1], "20");
    assert_string_equal(ids[2], "30");
    rs_pg19_ids_free(ids, 3);
    assert_int_equal(rs_pg19_select_first(g_root, "test", &m, 9, &ids), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "only 4"));
    rs_pg19_meta_free(&m);
}

/* the shared sample (skipped quietly when absent): 50 rows, first book readable */
static void test_shared_sample(void **state)
{
    (void)state;
    const char *root = "/work/shared/data/pg19-sample";
    struct stat sb;
    if (stat(root, &sb) != 0) { skip(); }
    rs_pg19_meta m;
    assert_int_equal(rs_pg19_meta_load(root, &m), RS_OK);
    assert_int_equal(m.n, 50);
    char **ids = NULL;
    assert_int_equal(rs_pg19_select_first(root, "test", &m, 2, &ids), RS_OK);
    char *d = NULL;
    size_t n = 0;
    assert_int_equal(rs_pg19_read_book(root, "test", ids[0], &d, &n), RS_OK);
    assert_true(n > 10000);
    free(d);
    rs_pg19_ids_free(ids, 2);
    rs_pg19_meta_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata),       cmocka_unit_test(test_metadata_malformed),
        cmocka_unit_test(test_books),          cmocka_unit_test(test_corrupt_gz),
        cmocka_unit_test(test_select_first),   cmocka_unit_test(test_shared_sample),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
