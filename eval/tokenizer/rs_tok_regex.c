/* rs_tok_regex.c — the split regexes through PCRE2 (UTF + UCP, JIT when available).
 *
 * The references use other engines: HF `tokenizers` Oniguruma (Ruby syntax), tiktoken
 * fancy-regex (Rust `regex` classes). PCRE2 agrees with both on the constructs of the published
 * split patterns (\p{..} classes, (?i:..), lookahead, greedy alternation) except for the
 * shorthand classes, which are therefore rewritten before compiling:
 *   \s  -> the Unicode White_Space set (both references; PCRE2's UCP \s adds U+180E)
 *   \S  -> its complement (outside character classes; inside a class \S stays PCRE2's)
 *   \w  -> HF (Oniguruma): [\p{L}\p{M}\p{N}\p{Pc}]; tiktoken (Rust): [\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]
 *   \W  -> the complement (outside classes)
 * \d is \p{Nd} in all three. HF patterns are compiled with PCRE2_MULTILINE (^ and $ are line
 * anchors in Ruby syntax, as Oniguruma runs them); tiktoken patterns without (Rust semantics).
 * A Split pattern given as a String is compiled literally (HF escapes it).
 */
#include "rs_tok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_check.h"

#ifdef RS_HAVE_PCRE2

#define WS_ITEMS "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define W_ONIG "\\p{L}\\p{M}\\p{N}\\p{Pc}"
#define W_RUST "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}"

/* rewrite the shorthand classes (see the top of the file); multiline doubles as "HF flavour" */
static int rewrite_(const char *p, size_t n, int hf, tk_buf *out)
{
    const char *w = hf ? W_ONIG : W_RUST;
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        const char c = p[i];
        if (c == '\\' && i + 1 < n) {
            const char d = p[i + 1];
            const char *rep = NULL;
            char tmp[256];
            if (d == 's') {
                snprintf(tmp, sizeof tmp, in_class ? "%s" : "[%s]", WS_ITEMS);
                rep = tmp;
            } else if (d == 'S' && !in_class) {
                snprintf(tmp, sizeof tmp, "[^%s]", WS_ITEMS);
                rep = tmp;
            } else if (d == 'w') {
                snprintf(tmp, sizeof tmp, in_class ? "%s" : "[%s]", w);
                rep = tmp;
            } else if (d == 'W' && !in_class) {
                snprintf(tmp, sizeof tmp, "[^%s]", w);
                rep = tmp;
            }
            if (rep) {
                if (tk_buf_append(out, rep, strlen(rep)) != 0) return -1;
            } else if (d == 'Q') { /* \Q...\E: copy verbatim */
                size_t j = i + 2;
                while (j + 1 < n && !(p[j] == '\\' && p[j + 1] == 'E')) j++;
                size_t e = j + 1 < n ? j + 2 : n;
                if (tk_buf_append(out, p + i, e - i) != 0) return -1;
                i = e - 1;
                continue;
            } else if (tk_buf_append(out, p + i, 2) != 0) {
                return -1;
            }
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            if (tk_buf_append(out, p + i, 1) != 0) return -1;
            /* a leading ^ and a leading ] belong to the class */
            if (i + 1 < n && p[i + 1] == '^') {
                if (tk_buf_append(out, "^", 1) != 0) return -1;
                i++;
            }
            if (i + 1 < n && p[i + 1] == ']') {
                if (tk_buf_append(out, "]", 1) != 0) return -1;
                i++;
            }
            continue;
        }
        if (in_class && c == '[' && i + 1 < n && p[i + 1] == ':') { /* POSIX [:name:] */
            const char *e = NULL;
            for (size_t j = i + 2; j + 1 < n; j++)
                if (p[j] == ':' && p[j + 1] == ']') {
                    e = p + j + 2;
                    break;
                }
            if (e) {
                if (tk_buf_append(out, p + i, (size_t)(e - (p + i))) != 0) return -1;
                i = (size_t)(e - p) - 1;
                continue;
            }
        }
        if (in_class && c == ']') in_class = 0;
        if (tk_buf_append(out, p + i, 1) != 0) return -1;
    }
    return 0;
}

rs_status tk_regex_compile(tk_regex *re, const char *pattern, size_t len, int literal, int multiline, const char *label)
{
    memset(re, 0, sizeof *re);
    tk_buf pat = {0};
    if (literal) {
        if (tk_buf_append(&pat, pattern, len) != 0) return rs_error_set(RS_E_NOMEM, "%s: out of memory", label);
    } else if (rewrite_(pattern, len, multiline, &pat) != 0) {
        tk_buf_free(&pat);
        return rs_error_set(RS_E_NOMEM, "%s: out of memory", label);
    }
    int err = 0;
    PCRE2_SIZE eoff = 0;
    uint32_t opt = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    if (multiline && !literal) opt |= PCRE2_MULTILINE;
    re->code = pcre2_compile((PCRE2_SPTR)(pat.p ? pat.p : ""), pat.n, opt, &err, &eoff, NULL);
    tk_buf_free(&pat);
    if (!re->code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return rs_error_set(RS_E_UNSUPPORTED, "%s: split regex /%.80s%s/ does not compile in PCRE2: %s", label, pattern,
                            len > 80 ? "..." : "", (const char *)msg);
    }
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
    return RS_OK;
}

void tk_regex_free(tk_regex *re)
{
    if (re->code) pcre2_code_free(re->code);
    memset(re, 0, sizeof *re);
}

int tk_regex_next(rs_tok_model *m, const tk_regex *re, const char *s, size_t n, size_t from, size_t *ms, size_t *me)
{
    if (!m->md) {
        m->md = pcre2_match_data_create(1, NULL);
        if (!m->md) {
            rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
            return -1;
        }
    }
    if (!m->mctx) { /* our limits, not the PCRE2 build's (rs_tok.h TK_RE_*) */
        m->mctx = pcre2_match_context_create(NULL);
        if (!m->mctx) {
            rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
            return -1;
        }
        pcre2_set_match_limit(m->mctx, TK_RE_MATCH_LIMIT);
        pcre2_set_depth_limit(m->mctx, TK_RE_DEPTH_LIMIT);
        pcre2_set_heap_limit(m->mctx, TK_RE_HEAP_LIMIT_KIB);
    }
    int rc = re->jit ? pcre2_jit_match(re->code, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, m->md, m->mctx)
                     : pcre2_match(re->code, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, m->md, m->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
        rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        char what[64];
        if (rc == PCRE2_ERROR_MATCHLIMIT) snprintf(what, sizeof what, "match limit (%u steps)", TK_RE_MATCH_LIMIT);
        else if (rc == PCRE2_ERROR_DEPTHLIMIT) snprintf(what, sizeof what, "depth limit (%u)", TK_RE_DEPTH_LIMIT);
        else if (rc == PCRE2_ERROR_HEAPLIMIT) snprintf(what, sizeof what, "heap limit (%u KiB)", TK_RE_HEAP_LIMIT_KIB);
        else snprintf(what, sizeof what, "JIT stack (PCRE2's default 32 KiB)");
        rs_error_set(RS_E_UNSUPPORTED,
                     "tokenizer: the split regex exceeded its %s at byte %zu of the %zu bytes being split: "
                     "the pattern backtracks catastrophically on this input (a hostile or broken tokenizer?)",
                     what, from, n);
        return -1;
    }
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof msg);
        rs_error_set(RS_E_UNSUPPORTED, "tokenizer: split regex failed on the input: %s", (const char *)msg);
        return -1;
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
    *ms = ov[0];
    *me = ov[1];
    if (*me < *ms) *me = *ms; /* \K tricks: never a negative span */
    return 1;
}

#else /* !RS_HAVE_PCRE2 */

rs_status tk_regex_compile(tk_regex *re, const char *pattern, size_t len, int literal, int multiline, const char *label)
{
    (void)pattern, (void)len, (void)literal, (void)multiline;
    memset(re, 0, sizeof *re);
    return rs_error_set(RS_E_UNSUPPORTED,
                        "%s: BPE tokenizers need PCRE2 and this build has none (install libpcre2-dev and reconfigure)",
                        label);
}

void tk_regex_free(tk_regex *re) { memset(re, 0, sizeof *re); }

int tk_regex_next(rs_tok_model *m, const tk_regex *re, const char *s, size_t n, size_t from, size_t *ms, size_t *me)
{
    (void)m, (void)re, (void)s, (void)n, (void)from, (void)ms, (void)me;
    rs_error_set(RS_E_UNSUPPORTED, "tokenizer: built without PCRE2");
    return -1;
}

#endif
