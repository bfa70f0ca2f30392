/* rs_pg19.h — reader of the PG-19 corpus layout (Rae et al. 2019, google-deepmind/pg19).
 *
 * Layout (unchanged from the published corpus, so the real test split drops in):
 *   <root>/metadata.csv            no header; one row per book of every split:
 *                                  book_id,short_book_title,publication_date,book_link
 *                                  RFC 4180 quoting: a field may be "quoted", with "" for a
 *                                  quote inside; quoted titles contain commas.
 *   <root>/<split>/<book_id>.txt   the book text (bytes, any encoding), or
 *   <root>/<split>/<book_id>.txt.gz  the same gzip-compressed (read through zlib).
 *
 * metadata.csv lists the books of all splits; a split folder holds only its own. Selecting
 * "the first N books" therefore means the first N metadata rows whose file exists in the split
 * folder, in metadata order. Books chosen by id need a file in the split folder; a metadata row
 * is optional for them (the title is then "").
 *
 * Book ids are used in file names: only [A-Za-z0-9_-] are accepted, so an id can never escape
 * the split folder. Errors (RS_E_IO missing file, RS_E_FORMAT malformed csv / empty book /
 * corrupt gzip, RS_E_INVAL bad id) carry a message naming the file, line or id.
 */
#ifndef RS_PG19_H
#define RS_PG19_H

#include <stddef.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_PG19_ID_MAX 64 /* longest accepted book id (PG-19 ids are at most 5 digits) */

typedef struct rs_pg19_book {
    char id[RS_PG19_ID_MAX];  /* e.g. "1023" */
    char *title;              /* short_book_title, unquoted (malloc'd, "" if unknown) */
    char *date;               /* publication_date as written (malloc'd, "" if unknown) */
    char *link;               /* book_link (malloc'd, "" if unknown) */
} rs_pg19_book;

typedef struct rs_pg19_meta {
    rs_pg19_book *books; /* [n] in file order */
    size_t n;
} rs_pg19_meta;

/*! rs_pg19_meta_parse() : parse metadata.csv text of `len` bytes. `label` names the source in
 *  messages. Blank lines are skipped; "\r\n" line ends are accepted. Each row must have exactly
 *  4 fields and a valid id; a quote must close before the end of the file.
 *  @return RS_OK, RS_E_FORMAT (message: label, line number, what), RS_E_NOMEM. */
rs_status rs_pg19_meta_parse(const char *text, size_t len, const char *label, rs_pg19_meta *out);

/*! rs_pg19_meta_load() : read and parse <root>/metadata.csv. RS_E_IO if it cannot be read. */
rs_status rs_pg19_meta_load(const char *root, rs_pg19_meta *out);

/*! rs_pg19_meta_free() : release; *m becomes empty. NULL-safe. */
void rs_pg19_meta_free(rs_pg19_meta *m);

/*! rs_pg19_meta_find() : index of book id in m, or -1. */
long rs_pg19_meta_find(const rs_pg19_meta *m, const char *id);

/*! rs_pg19_id_valid() : 1 if id is 1..RS_PG19_ID_MAX-1 characters of [A-Za-z0-9_-]. */
int rs_pg19_id_valid(const char *id);

/*! rs_pg19_book_path() : path of the book file that exists (".txt" preferred over ".txt.gz")
 *  into buf. @return RS_OK, RS_E_INVAL (bad id, buf too small), RS_E_IO (neither file exists;
 *  the message names both paths tried). */
rs_status rs_pg19_book_path(const char *root, const char *split, const char *id, char *buf,
                            size_t bufsize);

/*! rs_pg19_read_book() : the whole text of a book (either form) into a malloc'd buffer
 *  (*data, *len; the buffer has one extra NUL byte after the text). An empty book (0 bytes
 *  after decompression) is an error: RS_E_FORMAT "book <id> (<path>) is empty".
 *  @return RS_OK, RS_E_IO, RS_E_FORMAT (corrupt gzip, empty), RS_E_NOMEM, RS_E_INVAL. */
rs_status rs_pg19_read_book(const char *root, const char *split, const char *id, char **data,
                            size_t *len);

/*! rs_pg19_select_first() : ids of the first `n` metadata rows whose book file exists in
 *  <root>/<split>/, in metadata order. *ids gets a malloc'd array of n ids (copies; free with
 *  rs_pg19_ids_free). @return RS_OK, RS_E_INVAL (n == 0), RS_E_IO (fewer than n books in the
 *  split: the message says how many were found), RS_E_NOMEM. */
rs_status rs_pg19_select_first(const char *root, const char *split, const rs_pg19_meta *m,
                               size_t n, char ***ids);

/*! rs_pg19_ids_free() : free an id array of n entries from rs_pg19_select_first. NULL-safe. */
void rs_pg19_ids_free(char **ids, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* RS_PG19_H */
