/* rs_text.c — invalid UTF-8 in text inputs (replayssm/eval/rs_text.h): the scan, the three choices
 * and the decoding a BPE tokenizer's input gets before it is encoded. */
#include "replayssm/eval/rs_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_names[3] = {"replace", "latin1", "error"};

const char *rs_invalid_utf8_name(rs_invalid_utf8 mode)
{
    return (unsigned)mode < 3 ? k_names[mode] : "?";
}

rs_status rs_invalid_utf8_parse(const char *word, rs_invalid_utf8 *mode)
{
    for (unsigned i = 0; word && mode && i < 3; i++)
        if (!strcmp(word, k_names[i])) {
            *mode = (rs_invalid_utf8)i;
            return RS_OK;
        }
    return rs_error_set(RS_E_INVAL, "invalid UTF-8 handling '%.40s': one of replace, latin1, error",
                        word ? word : "(null)");
}

/* A multi-byte lead byte b (Unicode table 3-7): the sequence length and the range of its second
 * byte (the others are 80..BF), or 0 when b cannot start a well-formed sequence. */
static int lead_(uint8_t b, uint8_t *lo, uint8_t *hi)
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

/* at s[0..n) (n >= 1): > 0 the length of a well-formed sequence; < 0 minus the length of the
 * maximal invalid subsequence there (Unicode 3.9 "U+FFFD substitution of maximal subparts", what
 * Python's errors="replace" replaces with one U+FFFD) */
static int seq_(const uint8_t *s, size_t n)
{
    if (s[0] < 0x80) return 1;
    uint8_t lo, hi;
    const int len = lead_(s[0], &lo, &hi);
    if (len == 0) return -1;
    size_t k = 1;
    if (k < n && s[1] >= lo && s[1] <= hi) {
        k++;
        while (k < n && k < (size_t)len && s[k] >= 0x80 && s[k] <= 0xBF) k++;
    }
    return k == (size_t)len ? len : -(int)k;
}

/* the offset of the first invalid byte at or after i, or n (ASCII 8 bytes at a time) */
static size_t next_invalid_(const uint8_t *s, size_t n, size_t i)
{
    while (i < n) {
        if (s[i] < 0x80) {
            while (i + 8 <= n) {
                uint64_t v;
                memcpy(&v, s + i, 8);
                if (v & 0x8080808080808080ULL) break;
                i += 8;
            }
            while (i < n && s[i] < 0x80) i++;
            continue;
        }
        const int l = seq_(s + i, n - i);
        if (l < 0) return i;
        i += (size_t)l;
    }
    return n;
}

void rs_text_validate(const char *bytes, size_t len, rs_text_report *rep)
{
    memset(rep, 0, sizeof *rep);
    const uint8_t *s = (const uint8_t *)bytes;
    for (size_t i = next_invalid_(s, len, 0); i < len; i = next_invalid_(s, len, i)) {
        if (rep->n_invalid++ == 0) {
            rep->first = i;
            rep->first_byte = s[i];
        }
        i += (size_t)-seq_(s + i, len - i);
    }
}

rs_status rs_text_decode(const char *bytes, size_t len, rs_invalid_utf8 mode, const char *label, char **out,
                         size_t *out_len, rs_text_report *rep)
{
    rs_text_report r;
    if (!rep) rep = &r;
    memset(rep, 0, sizeof *rep);
    if (!out || !out_len || (!bytes && len)) return rs_error_set(RS_E_INVAL, "rs_text_decode: NULL argument");
    *out = NULL;
    *out_len = 0;
    if ((unsigned)mode > RS_INVALID_UTF8_ERROR) return rs_error_set(RS_E_INVAL, "rs_text_decode: unknown mode %d", (int)mode);
    rs_text_validate(bytes, len, rep);
    if (rep->n_invalid == 0) return RS_OK;
    if (mode == RS_INVALID_UTF8_ERROR)
        return rs_error_set(RS_E_FORMAT,
                            "%s: not valid UTF-8: byte 0x%02X at offset %zu (%zu invalid sequence%s; --invalid-utf8 "
                            "replace or latin1 reads it)",
                            label ? label : "input", rep->first_byte, rep->first, rep->n_invalid,
                            rep->n_invalid == 1 ? "" : "s");
    const uint8_t *s = (const uint8_t *)bytes;
    /* at most 2 bytes per byte (Latin-1) or 3 per invalid byte (U+FFFD) */
    if (len > (SIZE_MAX - 1) / 3) return rs_error_set(RS_E_NOMEM, "%s: too large to decode", label ? label : "input");
    char *o = (char *)malloc(3 * len + 1);
    if (!o) return rs_error_set(RS_E_NOMEM, "%s: out of memory decoding %zu bytes", label ? label : "input", len);
    size_t k = 0;
    if (mode == RS_INVALID_UTF8_LATIN1) {
        for (size_t i = 0; i < len; i++) {
            if (s[i] < 0x80) o[k++] = (char)s[i];
            else o[k++] = (char)(0xC0 | (s[i] >> 6)), o[k++] = (char)(0x80 | (s[i] & 63));
        }
    } else {
        size_t i = 0;
        while (i < len) {
            const size_t bad = next_invalid_(s, len, i);
            memcpy(o + k, s + i, bad - i);
            k += bad - i;
            if (bad == len) break;
            memcpy(o + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i = bad + (size_t)-seq_(s + bad, len - bad);
        }
    }
    o[k] = '\0';
    *out = o;
    *out_len = k;
    return RS_OK;
}
