/* rs_text.h — text files as Unicode: what the input room does with bytes that are not valid UTF-8
 * before a BPE tokenizer sees them (docs/tokenizers.md "Invalid UTF-8"). The byte tokenizer of the
 * vocab-256 models takes the bytes as stored and never goes through here.
 *
 * One invalid byte must not change how the rest of a file is read: each maximal invalid
 * subsequence becomes U+FFFD by default (Python's bytes.decode("utf-8", errors="replace")), so a
 * UTF-8 book with one stray byte keeps the ids of its valid text. The other choices are the whole
 * file as Latin-1 (a file known to be ISO 8859-1; every byte one code point, Python's "latin-1")
 * and a refusal naming the byte offset. The decoder reports the first invalid offset and the count,
 * so the caller can warn (the library never prints).
 */
#ifndef RS_TEXT_H
#define RS_TEXT_H

#include <stddef.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --invalid-utf8 of kl / sweep / tokenize; 0 is the default */
typedef enum rs_invalid_utf8 {
    RS_INVALID_UTF8_REPLACE = 0, /* each maximal invalid subsequence -> U+FFFD (default)  */
    RS_INVALID_UTF8_LATIN1 = 1,  /* a file with any invalid byte is read as Latin-1 whole  */
    RS_INVALID_UTF8_ERROR = 2    /* refused: RS_E_FORMAT naming the first invalid offset   */
} rs_invalid_utf8;

/* the option's words, "replace|latin1|error" (for a CLI's choice list) */
#define RS_INVALID_UTF8_CHOICES "replace|latin1|error"

/*! rs_invalid_utf8_name() : "replace", "latin1" or "error" (the value a log records); "?" else. */
const char *rs_invalid_utf8_name(rs_invalid_utf8 mode);

/*! rs_invalid_utf8_parse() : one of the three words into *mode. @return RS_OK, RS_E_INVAL. */
rs_status rs_invalid_utf8_parse(const char *word, rs_invalid_utf8 *mode);

/* what rs_text_decode found */
typedef struct rs_text_report {
    size_t n_invalid;   /* maximal invalid subsequences (0: the bytes were valid UTF-8) */
    size_t first;       /* byte offset of the first one (when n_invalid > 0) */
    unsigned first_byte; /* its first byte's value */
} rs_text_report;

/*! rs_text_validate() : scan bytes[len] (rs_text_report of the bytes, nothing converted). */
void rs_text_validate(const char *bytes, size_t len, rs_text_report *rep);

/*! rs_text_decode() : bytes[len] as valid UTF-8 under `mode`. Valid UTF-8 is used as it is: *out
 *  = NULL, nothing copied. Otherwise *out (malloc'd, NUL after the data, *out_len bytes) is the
 *  replaced (REPLACE) or Latin-1-decoded (LATIN1) text. rep (may be NULL) says what was found,
 *  also when the call fails under ERROR. `label` (a file name)
 *  starts the messages. @return RS_OK, RS_E_FORMAT under RS_INVALID_UTF8_ERROR ("<label>: not valid
 *  UTF-8: byte 0xHH at offset N (--invalid-utf8 replace or latin1 reads it)"), RS_E_NOMEM,
 *  RS_E_INVAL. */
rs_status rs_text_decode(const char *bytes, size_t len, rs_invalid_utf8 mode, const char *label, char **out,
                         size_t *out_len, rs_text_report *rep);

#ifdef __cplusplus
}
#endif
#endif /* RS_TEXT_H */
