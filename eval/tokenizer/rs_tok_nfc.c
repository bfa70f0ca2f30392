/* rs_tok_nfc.c — Unicode NFC (UAX #15) of valid UTF-8, for tokenizers whose normalizer is NFC.
 *
 * Data: rs_tok_nfc_data.h, generated from Python's unicodedata by gen_nfc_tables.py (its Unicode
 * version is RS_NFC_UNICODE_VERSION). Text is cut into chunks that normalise independently: a
 * chunk starts at a "safe" code point (combining class 0, NFC_QC=Yes, never the second of a
 * composition) and holds the unsafe code points that follow it. Chunks of one safe code point
 * are copied; the others are fully decomposed (canonical, Hangul algorithmic), put in canonical
 * order (stable by combining class) and recomposed (canonical composition with blocking, as
 * Rust's unicode-normalization, which HF tokenizers uses). Code points below U+0300 are all safe,
 * so ASCII and Latin-1 text is copied without a table lookup.
 */
#include "rs_tok.h"

#include <stdlib.h>
#include <string.h>

#include "rs_tok_nfc_data.h"

#define SBASE 0xAC00u
#define LBASE 0x1100u
#define VBASE 0x1161u
#define TBASE 0x11A7u
#define LCOUNT 19u
#define VCOUNT 21u
#define TCOUNT 28u
#define NCOUNT (VCOUNT * TCOUNT)
#define SCOUNT (LCOUNT * NCOUNT)

static int unsafe_(uint32_t cp)
{
    if (cp >= 0x110000) return 0;
    const unsigned blk = nfc_unsafe_index[cp >> 8];
    return (nfc_unsafe_bits[blk][(cp & 255) >> 3] >> (cp & 7)) & 1;
}

static unsigned ccc_(uint32_t cp)
{
    if (cp < 0x300) return 0;
    size_t lo = 0, hi = sizeof nfc_ccc / sizeof nfc_ccc[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (nfc_ccc[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof nfc_ccc / sizeof nfc_ccc[0] && nfc_ccc[lo].cp == cp ? nfc_ccc[lo].ccc : 0;
}

/* canonical decomposition of cp into out (at most 4 code points); returns the count */
static int decompose_(uint32_t cp, uint32_t *out)
{
    if (cp >= SBASE && cp < SBASE + SCOUNT) {
        const uint32_t si = cp - SBASE;
        out[0] = LBASE + si / NCOUNT;
        out[1] = VBASE + (si % NCOUNT) / TCOUNT;
        if (si % TCOUNT) {
            out[2] = TBASE + si % TCOUNT;
            return 3;
        }
        return 2;
    }
    if (cp >= 0xC0) {
        size_t lo = 0, hi = sizeof nfc_decomp / sizeof nfc_decomp[0];
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (nfc_decomp[mid].cp < cp) lo = mid + 1;
            else hi = mid;
        }
        if (lo < sizeof nfc_decomp / sizeof nfc_decomp[0] && nfc_decomp[lo].cp == cp) {
            for (int i = 0; i < nfc_decomp[lo].len; i++) out[i] = nfc_decomp_cp[nfc_decomp[lo].off + i];
            return nfc_decomp[lo].len;
        }
    }
    out[0] = cp;
    return 1;
}

/* the primary composite of (a, b), or 0 */
static uint32_t compose_(uint32_t a, uint32_t b)
{
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE && b < TBASE + TCOUNT)
        return a + (b - TBASE);
    const unsigned long long key = ((unsigned long long)a << 21) | b;
    size_t lo = 0, hi = sizeof nfc_comp / sizeof nfc_comp[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (nfc_comp[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof nfc_comp / sizeof nfc_comp[0] && nfc_comp[lo].key == key ? nfc_comp[lo].cp : 0;
}

/* decode one code point of valid UTF-8 */
static uint32_t utf8_cp_(const uint8_t *s, int *len)
{
    if (s[0] < 0x80) return *len = 1, s[0];
    if (s[0] < 0xE0) return *len = 2, ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    if (s[0] < 0xF0) return *len = 3, ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    return *len = 4, ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
                         (s[3] & 0x3F);
}

typedef struct cpbuf {
    uint32_t *p;
    size_t n, cap;
} cpbuf;

static int cp_push_(cpbuf *b, uint32_t cp)
{
    if (b->n == b->cap) {
        size_t c = b->cap ? 2 * b->cap : 64;
        uint32_t *p = (uint32_t *)realloc(b->p, c * sizeof *p);
        if (!p) return -1;
        b->p = p;
        b->cap = c;
    }
    b->p[b->n++] = cp;
    return 0;
}

static int emit_cp_(tk_buf *out, uint32_t cp)
{
    char u[4];
    return tk_buf_append(out, u, tk_utf8_encode(cp, u));
}

/* full NFC of the chunk s[0..n) appended to out */
static int normalize_chunk_(const uint8_t *s, size_t n, tk_buf *out)
{
    cpbuf d = {0};
    int rc = -1;
    for (size_t i = 0; i < n;) {
        int len;
        uint32_t cp = utf8_cp_(s + i, &len), parts[4];
        i += (size_t)len;
        int k = decompose_(cp, parts);
        for (int j = 0; j < k; j++)
            if (cp_push_(&d, parts[j]) != 0) goto out;
    }
    /* canonical ordering: stable insertion sort of each run of non-zero classes */
    for (size_t i = 1; i < d.n; i++) {
        const unsigned c = ccc_(d.p[i]);
        if (c == 0) continue;
        size_t j = i;
        const uint32_t x = d.p[i];
        while (j > 0) {
            const unsigned cj = ccc_(d.p[j - 1]);
            if (cj == 0 || cj <= c) break;
            d.p[j] = d.p[j - 1];
            j--;
        }
        d.p[j] = x;
    }
    /* canonical composition */
    {
        uint32_t composee = 0;
        int have = 0, last_set = 0;
        unsigned last_ccc = 0;
        cpbuf pend = {0};
        for (size_t i = 0; i < d.n; i++) {
            const uint32_t ch = d.p[i];
            const unsigned c = ccc_(ch);
            if (!have) {
                if (c != 0) {
                    if (emit_cp_(out, ch) != 0) goto comp_fail;
                    continue;
                }
                composee = ch;
                have = 1;
                continue;
            }
            if (!last_set) {
                const uint32_t r = compose_(composee, ch);
                if (r) {
                    composee = r;
                    continue;
                }
                if (c == 0) {
                    if (emit_cp_(out, composee) != 0) goto comp_fail;
                    composee = ch;
                    continue;
                }
                last_ccc = c;
                last_set = 1;
                if (cp_push_(&pend, ch) != 0) goto comp_fail;
                continue;
            }
            if (last_ccc >= c) { /* blocked */
                if (c == 0) {
                    if (emit_cp_(out, composee) != 0) goto comp_fail;
                    for (size_t j = 0; j < pend.n; j++)
                        if (emit_cp_(out, pend.p[j]) != 0) goto comp_fail;
                    pend.n = 0;
                    last_set = 0;
                    composee = ch;
                    continue;
                }
                last_ccc = c;
                if (cp_push_(&pend, ch) != 0) goto comp_fail;
                continue;
            }
            const uint32_t r = compose_(composee, ch);
            if (r) {
                composee = r;
                continue;
            }
            last_ccc = c;
            if (cp_push_(&pend, ch) != 0) goto comp_fail;
        }
        if (have && emit_cp_(out, composee) != 0) goto comp_fail;
        for (size_t j = 0; j < pend.n; j++)
            if (emit_cp_(out, pend.p[j]) != 0) goto comp_fail;
        free(pend.p);
        rc = 0;
        goto out;
    comp_fail:
        free(pend.p);
    }
out:
    free(d.p);
    return rc;
}

int tk_nfc_is_quick(const char *str, size_t n)
{
    const uint8_t *s = (const uint8_t *)str;
    for (size_t i = 0; i < n;) {
        if (s[i] < 0xCC) {
            i++;
            continue;
        }
        int len;
        uint32_t cp = utf8_cp_(s + i, &len);
        if (unsafe_(cp)) return 0;
        i += (size_t)len;
    }
    return 1;
}

int tk_nfc(const char *str, size_t n, tk_buf *out)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t copied = 0, pos = 0, last_safe = 0;
    int have_safe = 0;
    while (pos < n) {
        const uint8_t b = s[pos];
        if (b < 0xCC) {
            if (b < 0x80 || b >= 0xC0) last_safe = pos, have_safe = 1;
            pos++;
            continue;
        }
        int len;
        const uint32_t cp = utf8_cp_(s + pos, &len);
        if (!unsafe_(cp)) {
            last_safe = pos;
            have_safe = 1;
            pos += (size_t)len;
            continue;
        }
        const size_t start = have_safe && last_safe >= copied ? last_safe : copied;
        size_t end = pos + (size_t)len;
        while (end < n) {
            int l2;
            const uint32_t c2 = utf8_cp_(s + end, &l2);
            if (!unsafe_(c2)) break;
            end += (size_t)l2;
        }
        if (tk_buf_append(out, s + copied, start - copied) != 0) return -1;
        if (normalize_chunk_(s + start, end - start, out) != 0) return -1;
        copied = pos = end;
        have_safe = 0;
    }
    return tk_buf_append(out, s + copied, n - copied);
}
