/* cli_print.c — what the CLI prints of text it did not write itself, and the non-finite block
 * that `kl` and `info` print before a summary table.
 *
 * rs_cli_esc: strings read from a log (attributes, book ids, policies), from a model folder or
 * quoted in a library message reach the terminal only through it: C0 control bytes, DEL, the C1
 * controls (U+0080..U+009F, which some terminals obey like ESC [) and bytes that are not valid
 * UTF-8 are written as \xHH (C1 as \u00HH), so a hostile log cannot move the cursor, recolour
 * or retitle the terminal (docs/threat-model.md). Valid printable UTF-8 passes unchanged.
 *
 * rs_cli_print_nonfinite: one notion of position (the per-position arrays' index: the first
 * position whose KL is not finite, as the log's non-finite record stores it) and one numbering
 * of runs (the log's run index, as in the table). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rs_cli.h"

/* length of the valid UTF-8 sequence at p (1..4), 0 if the bytes there are not one */
static size_t utf8_seq_(const unsigned char *p)
{
    const unsigned c = p[0];
    if (c < 0x80) return 1;
#define CONT_(x) (((x) & 0xC0u) == 0x80u)
    if (c >= 0xC2 && c <= 0xDF) return CONT_(p[1]) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF; /* no overlong, no surrogates */
        return p[1] >= lo && p[1] <= hi && CONT_(p[2]) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && CONT_(p[2]) && CONT_(p[3]) ? 4 : 0;
    }
#undef CONT_
    return 0;
}

const char *rs_cli_esc(const char *s, char *buf, size_t n)
{
    if (!buf || n == 0) return "";
    if (!s) s = "";
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        char piece[8];
        size_t len = utf8_seq_(p), w;
        if (len == 1 && (*p < 0x20 || *p == 0x7F)) w = (size_t)snprintf(piece, sizeof piece, "\\x%02X", *p);
        else if (len == 2 && p[0] == 0xC2 && p[1] < 0xA0) w = (size_t)snprintf(piece, sizeof piece, "\\u00%02X", p[1]);
        else if (len == 0) {
            len = 1; /* one invalid byte at a time: the next may start a valid sequence */
            w = (size_t)snprintf(piece, sizeof piece, "\\x%02X", *p);
        } else {
            memcpy(piece, p, len);
            w = len;
        }
        if (o + w + 1 > n) { /* no room: end with "..." (never half a UTF-8 character) */
            while (o > 0 && o + 4 > n) o--;
            while (o > 0 && (((unsigned char)buf[o] & 0xC0u) == 0x80u)) o--; /* not inside a character */
            if (o + 4 <= n) {
                memcpy(buf + o, "...", 3);
                o += 3;
            }
            break;
        }
        memcpy(buf + o, piece, w);
        o += w;
        p += len;
    }
    buf[o] = '\0';
    return buf;
}

size_t rs_cli_print_nonfinite(FILE *f, const rs_h5log *lg, size_t run, const char *policy, size_t window,
                              const rs_kl_summary *s)
{
    char pol[512], id[512];
    size_t lines = 0, n_books = lg ? rs_h5log_n_books(lg) : 0;
    rs_cli_esc(policy, pol, sizeof pol);
    for (size_t b = 0; b < n_books; b++) {
        int64_t p = -1;
        int32_t L = -1, H = -1;
        if (rs_h5log_get_nonfinite(lg, run, b, &p, &L, &H) != RS_OK || p < 0) continue;
        const int64_t done = rs_h5log_completed(lg, b), finite = p < done ? p : done;
        char where[64];
        if (L >= 0 && H >= 0) snprintf(where, sizeof where, "layer %d, head %d", (int)L, (int)H);
        else snprintf(where, sizeof where, "no SSM head marked");
        fprintf(f, "run %zu (%s, L=%zu) book %s: non-finite at position %lld (%s); summary over %lld finite position%s\n",
                run, pol, window, rs_cli_esc(rs_h5log_book_id(lg, b), id, sizeof id), (long long)p, where,
                (long long)finite, finite == 1 ? "" : "s");
        lines++;
    }
    if (s && s->n_nonfinite > 0 && (lines == 0 || n_books > 1)) {
        fprintf(f, "run %zu (%s, L=%zu): summary over %zu finite position%s", run, pol, window, s->n,
                s->n == 1 ? "" : "s");
        if (n_books > 1) fprintf(f, " of %zu books", n_books);
        fprintf(f, " (%zu non-finite position%s left out)\n", s->n_nonfinite, s->n_nonfinite == 1 ? "" : "s");
        lines++;
    }
    return lines;
}
