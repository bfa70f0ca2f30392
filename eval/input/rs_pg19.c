/* rs_pg19.c — PG-19 layout: metadata.csv (RFC 4180) and book files (.txt / .txt.gz). */
#include "replayssm/eval/rs_pg19.h"
#include "rs_check.h"
#include "rs_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rs_pg19_id_valid(const char *id)
{
    if (!id || !id[0]) return 0;
    size_t n = 0;
    for (const char *p = id; *p; p++, n++) {
        const char c = *p;
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '_' || c == '-'))
            return 0;
    }
    return n < RS_PG19_ID_MAX;
}

void rs_pg19_meta_free(rs_pg19_meta *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->books[i].title);
        free(m->books[i].date);
        free(m->books[i].link);
    }
    free(m->books);
    m->books = NULL;
    m->n = 0;
}

/* A growing byte buffer for one field. */
typedef struct field_buf {
    char *s;
    size_t n, cap;
} field_buf;

static int fb_push_(field_buf *b, char c)
{
    if (b->n + 1 >= b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        char *s = (char *)realloc(b->s, cap);
        if (!s) return 0;
        b->s = s;
        b->cap = cap;
    }
    b->s[b->n++] = c;
    b->s[b->n] = '\0';
    return 1;
}

static char *fb_take_(field_buf *b)
{
    char *s = b->s ? b->s : (char *)calloc(1, 1);
    b->s = NULL;
    b->n = b->cap = 0;
    return s;
}

rs_status rs_pg19_meta_parse(const char *text, size_t len, const char *label, rs_pg19_meta *out)
{
    RS_CHECK(out && (text || len == 0), RS_E_INVAL, "pg19: NULL argument");
    if (!label) label = "metadata.csv";
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    rs_status st = RS_OK;
    size_t i = 0, line = 1;
    field_buf fb = {0};
    char *fields[4] = {0};
    while (i < len && st == RS_OK) {
        /* skip blank lines */
        if (text[i] == '\n') { i++; line++; continue; }
        if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n') { i += 2; line++; continue; }
        const size_t row_line = line;
        int nf = 0;
        int row_done = 0;
        while (!row_done && st == RS_OK) {
            /* one field */
            if (i < len && text[i] == '"') {
                i++;
                for (;;) {
                    if (i >= len) {
                        st = rs_error_set(RS_E_FORMAT, "%s: line %zu: quoted field not closed before the end of the file",
                                          label, row_line);
                        break;
                    }
                    if (text[i] == '"') {
                        if (i + 1 < len && text[i + 1] == '"') {
                            if (!fb_push_(&fb, '"')) st = rs_error_set(RS_E_NOMEM, "pg19: out of memory");
                            i += 2;
                            continue;
                        }
                        i++;
                        break;
                    }
                    if (text[i] == '\n') line++;
                    if (!fb_push_(&fb, text[i])) st = rs_error_set(RS_E_NOMEM, "pg19: out of memory");
                    i++;
                }
                if (st == RS_OK && i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
                    st = rs_error_set(RS_E_FORMAT, "%s: line %zu: field %d: unexpected character '%c' after a closing quote",
                                      label, row_line, nf + 1, text[i]);
            } else {
                while (i < len && text[i] != ',' && text[i] != '\n' &&
                       !(text[i] == '\r' && (i + 1 >= len || text[i + 1] == '\n'))) {
                    if (text[i] == '"') {
                        st = rs_error_set(RS_E_FORMAT, "%s: line %zu: field %d: quote inside an unquoted field",
                                          label, row_line, nf + 1);
                        break;
                    }
                    if (!fb_push_(&fb, text[i])) { st = rs_error_set(RS_E_NOMEM, "pg19: out of memory"); break; }
                    i++;
                }
            }
            if (st != RS_OK) break;
            if (nf >= 4) {
                st = rs_error_set(RS_E_FORMAT, "%s: line %zu: more than 4 fields (expected book_id,short_book_title,publication_date,book_link)",
                                  label, row_line);
                break;
            }
            fields[nf++] = fb_take_(&fb);
            if (!fields[nf - 1]) { st = rs_error_set(RS_E_NOMEM, "pg19: out of memory"); break; }
            if (i < len && text[i] == ',') { i++; continue; }
            /* end of row */
            if (i < len && text[i] == '\r') i++;
            if (i < len && text[i] == '\n') { i++; line++; }
            row_done = 1;
        }
        if (st == RS_OK && nf != 4)
            st = rs_error_set(RS_E_FORMAT, "%s: line %zu: %d field%s, expected 4 (book_id,short_book_title,publication_date,book_link)",
                              label, row_line, nf, nf == 1 ? "" : "s");
        if (st == RS_OK && !rs_pg19_id_valid(fields[0]))
            st = rs_error_set(RS_E_FORMAT, "%s: line %zu: invalid book_id '%.40s' (expected [A-Za-z0-9_-], at most %d characters)",
                              label, row_line, fields[0], RS_PG19_ID_MAX - 1);
        if (st == RS_OK && out->n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            rs_pg19_book *b = (rs_pg19_book *)realloc(out->books, nc * sizeof *b);
            if (!b) st = rs_error_set(RS_E_NOMEM, "pg19: out of memory");
            else { out->books = b; cap = nc; }
        }
        if (st == RS_OK) {
            rs_pg19_book *b = &out->books[out->n++];
            memset(b, 0, sizeof *b);
            snprintf(b->id, sizeof b->id, "%s", fields[0]);
            free(fields[0]);
            b->title = fields[1];
            b->date = fields[2];
            b->link = fields[3];
            memset(fields, 0, sizeof fields);
        }
        for (int k = 0; k < 4; k++) { free(fields[k]); fields[k] = NULL; }
    }
    free(fb.s);
    if (st != RS_OK) rs_pg19_meta_free(out);
    return st;
}

/* A book or metadata.csv larger than this is refused (PG-19's largest book is ~11 MB), also as
 * the uncompressed size of a .txt.gz, so a gzip bomb stops at the limit instead of exhausting
 * memory. */
#define RS_PG19_MAX_BYTES ((size_t)1 << 30)

/* a whole regular file (metadata.csv, a book), gunzipped when its name ends in .gz */
static rs_status slurp_(const char *path, char **data, size_t *len)
{
    return rs_input_read_all(path, RS_PG19_MAX_BYTES, RS_INPUT_GUNZIP, data, len, NULL);
}

rs_status rs_pg19_meta_load(const char *root, rs_pg19_meta *out)
{
    RS_CHECK(root && out, RS_E_INVAL, "pg19: NULL argument");
    char path[4096];
    RS_CHECK((size_t)snprintf(path, sizeof path, "%s/metadata.csv", root) < sizeof path, RS_E_INVAL,
             "pg19: path too long");
    char *text = NULL;
    size_t len = 0;
    rs_status st = slurp_(path, &text, &len);
    if (st != RS_OK)
        return rs_error_set(RS_E_IO, "PG-19 metadata: %s (expected <data>/metadata.csv)", rs_last_error());
    st = rs_pg19_meta_parse(text, len, path, out);
    free(text);
    return st;
}

long rs_pg19_meta_find(const rs_pg19_meta *m, const char *id)
{
    if (!m || !id) return -1;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->books[i].id, id)) return (long)i;
    return -1;
}

static int is_file_(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

rs_status rs_pg19_book_path(const char *root, const char *split, const char *id, char *buf,
                            size_t bufsize)
{
    RS_CHECK(root && split && id && buf, RS_E_INVAL, "pg19: NULL argument");
    RS_CHECK(rs_pg19_id_valid(id), RS_E_INVAL,
             "invalid book id '%.40s' (expected [A-Za-z0-9_-], at most %d characters)", id,
             RS_PG19_ID_MAX - 1);
    RS_CHECK(rs_pg19_id_valid(split), RS_E_INVAL, "invalid split name '%.40s'", split);
    int k = snprintf(buf, bufsize, "%s/%s/%s.txt", root, split, id);
    RS_CHECK(k > 0 && (size_t)k + 3 < bufsize, RS_E_INVAL, "pg19: path of book %s too long", id);
    if (is_file_(buf)) return RS_OK;
    strcat(buf, ".gz");
    if (is_file_(buf)) return RS_OK;
    return rs_error_set(RS_E_IO, "book %s not found: neither %s/%s/%s.txt nor %s/%s/%s.txt.gz exists",
                        id, root, split, id, root, split, id);
}

rs_status rs_pg19_read_book(const char *root, const char *split, const char *id, char **data,
                            size_t *len)
{
    RS_CHECK(data && len, RS_E_INVAL, "pg19: NULL argument");
    *data = NULL;
    *len = 0;
    char path[4096];
    RS_TRY(rs_pg19_book_path(root, split, id, path, sizeof path));
    rs_status st = slurp_(path, data, len);
    if (st != RS_OK) return st;
    if (*len == 0) {
        free(*data);
        *data = NULL;
        return rs_error_set(RS_E_FORMAT, "book %s (%s) is empty", id, path);
    }
    return RS_OK;
}

void rs_pg19_ids_free(char **ids, size_t n)
{
    if (!ids) return;
    for (size_t i = 0; i < n; i++) free(ids[i]);
    free(ids);
}

rs_status rs_pg19_select_first(const char *root, const char *split, const rs_pg19_meta *m,
                               size_t n, char ***ids)
{
    RS_CHECK(root && split && m && ids, RS_E_INVAL, "pg19: NULL argument");
    RS_CHECK(n > 0, RS_E_INVAL, "pg19: asked for 0 books");
    *ids = NULL;
    char **out = (char **)calloc(n, sizeof *out);
    RS_CHECK(out, RS_E_NOMEM, "pg19: out of memory");
    size_t k = 0;
    char path[4096];
    for (size_t i = 0; i < m->n && k < n; i++) {
        if (rs_pg19_book_path(root, split, m->books[i].id, path, sizeof path) != RS_OK) continue;
        out[k] = strdup(m->books[i].id);
        if (!out[k]) {
            rs_pg19_ids_free(out, k);
            return rs_error_set(RS_E_NOMEM, "pg19: out of memory");
        }
        k++;
    }
    rs_error_clear();
    if (k < n) {
        rs_pg19_ids_free(out, k);
        return rs_error_set(RS_E_IO, "asked for %zu books, but only %zu of the %zu books in %s/metadata.csv have a file in %s/%s/",
                            n, k, m->n, root, root, split);
    }
    *ids = out;
    return RS_OK;
}
