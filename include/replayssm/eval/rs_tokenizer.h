/* rs_tokenizer.h — text -> token ids (and back) for the evaluator (docs/tokenizers.md).
 *
 * Two families behind one value type:
 *  - the byte-level tokenizer of the bundled small models (vocab_size 256, token id == byte value,
 *    every byte sequence encodes, nothing is normalised: a Latin-1 or UTF-8 book becomes exactly
 *    its bytes), returned by rs_tokenizer_for_model() from the config alone;
 *  - BPE tokenizers loaded from a checkpoint directory by rs_tokenizer_open(): Hugging Face
 *    `tokenizer.json` (model BPE; pre-tokenizers Split / ByteLevel / Sequence; normalizer NFC or
 *    none; added and special tokens; byte_fallback; ignore_merges; both merge forms) and tiktoken
 *    rank files (`*.tiktoken`: base64 token + rank per line) with their split pattern and special
 *    tokens. Encoding follows HF `Tokenizer.encode(text, add_special_tokens=False)` and tiktoken
 *    `encode(text, allowed_special="all")` (after NFC where the tokenizer says so) token for token.
 *
 * Input text is bytes. A BPE tokenizer works on Unicode text: valid UTF-8 is taken as is; a text
 * that is not valid UTF-8 is decoded as a whole (rs_tokenizer.invalid_utf8): by default as Latin-1
 * (each byte one code point U+0000..U+00FF, as Python's bytes.decode("latin-1")), so a Latin-1 book
 * gets the ids a Python user gets from open(f, encoding="latin-1"); or each maximal invalid
 * subsequence becomes U+FFFD (Python's errors="replace"); or it is refused (RS_E_FORMAT).
 * rs_tokenizer_decode() returns the UTF-8 bytes of the tokens: decode(encode(x)) == x for valid
 * UTF-8 x whenever the tokenizer is lossless (no NFC change, no unknown token, no removed split).
 *
 * A tokenizer whose ids would reach the model's vocab_size is refused at open (RS_E_FORMAT), and so
 * is a BPE on a byte-level (vocab 256) model: a tokenizer.json / tiktoken file beside a vocab-256
 * model must be the identity byte map (then the byte tokenizer is used, as the model was trained).
 * The library never prints; errors come back as rs_status with a one-line rs_last_error() that
 * names the file. An rs_tokenizer from rs_tokenizer_open must be released with rs_tokenizer_free
 * (harmless on byte tokenizers and zeroed structs). Encoding uses per-tokenizer scratch and a word
 * cache: one tokenizer must not be used by two threads at once (open one per thread).
 */
#ifndef RS_TOKENIZER_H
#define RS_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tokenizer a model config asks for (rs_model_config.tokenizer). */
typedef enum rs_tokenizer_kind {
    RS_TOKENIZER_UNSUPPORTED = 0, /* real BPE vocabularies: token ids must come pre-tokenized  */
    RS_TOKENIZER_BYTE = 1,        /* vocab_size == 256: token id == byte value                */
    RS_TOKENIZER_BPE = 2          /* tokenizer.json / *.tiktoken beside config.json (rs_tokenizer_open) */
} rs_tokenizer_kind;

typedef enum rs_tokenizer_format {
    RS_TOKFMT_NONE = 0,
    RS_TOKFMT_BYTE = 1,     /* id == byte                                                    */
    RS_TOKFMT_HF_JSON = 2,  /* tokenizer.json (or tokenizer.json.gz)                          */
    RS_TOKFMT_TIKTOKEN = 3  /* <name>.tiktoken (or .tiktoken.gz) + split pattern + specials   */
} rs_tokenizer_format;

/* what a BPE tokenizer does with input that is not valid UTF-8 (the byte tokenizer takes bytes) */
typedef enum rs_tokenizer_invalid_utf8 {
    RS_TOK_INVALID_LATIN1 = 0,  /* default: decode the whole text as Latin-1                    */
    RS_TOK_INVALID_REPLACE = 1, /* each maximal invalid subsequence -> U+FFFD (Python "replace") */
    RS_TOK_INVALID_REFUSE = 2   /* RS_E_FORMAT naming the byte offset                           */
} rs_tokenizer_invalid_utf8;

struct rs_tok_model; /* private (eval/tokenizer/rs_tok.h) */

typedef struct rs_tokenizer {
    rs_tokenizer_kind kind;     /* RS_TOKENIZER_BYTE, or RS_TOKENIZER_BPE                          */
    const char *name;           /* "byte", "tokenizer.json", "tiktoken"                            */
    int vocab;                  /* ids are in [0, vocab): the largest id + 1                       */
    rs_tokenizer_format format;
    rs_tokenizer_invalid_utf8 invalid_utf8; /* may be changed between calls                        */
    int special_as_text;        /* 0 (default): added/special tokens in the text are matched as
                                   tokens (HF default; tiktoken allowed_special="all"); 1: special
                                   tokens are encoded as plain text (HF encode_special_tokens=True;
                                   tiktoken encode_ordinary); non-special added tokens still match */
    char path[1024];            /* the file that was loaded ("" for the byte tokenizer)            */
    char sha256[65];            /* hex SHA-256 of that file's bytes as stored ("" for byte)        */
    struct rs_tok_model *model; /* private: the loaded BPE (NULL for the byte tokenizer)           */
} rs_tokenizer;

/*! rs_tokenizer_for_model() : the tokenizer of a model config alone (its rs_model_config.tokenizer
 *  and .vocab): the byte tokenizer for kind == RS_TOKENIZER_BYTE (vocab 256). Any other kind needs the checkpoint's files
 *  (rs_tokenizer_open) and is refused here. `label` (e.g. the model directory) names the model.
 *  @return RS_OK, RS_E_UNSUPPORTED ("tokenizer not supported yet ...", or a byte tokenizer with
 *  vocab != 256), RS_E_INVAL (NULL). Nothing to free. */
rs_status rs_tokenizer_for_model(rs_tokenizer_kind kind, int vocab, const char *label, rs_tokenizer *tok);

/*! rs_tokenizer_open() : the tokenizer of a checkpoint directory, chosen from what it holds:
 *  tokenizer.json, else tokenizer.json.gz, else exactly one *.tiktoken (or *.tiktoken.gz) whose
 *  split pattern and special tokens come from tiktoken_config.json beside it ({"pat_str": ...,
 *  "special_tokens": {"<|endoftext|>": 248044, ...}, "normalizer": "NFC" | null}) or, for the
 *  known Qwen3.5/3.6 rank file (recognised by its SHA-256), from the built-in Qwen3.5 table;
 *  else, for a byte-level model (model_vocab 256), the byte tokenizer. model_vocab is the model's
 *  rs_model_config.vocab, or 0 for no vocabulary check. @return RS_OK, RS_E_IO (missing / unreadable files: the message names what was looked
 *  for), RS_E_FORMAT (malformed JSON or ranks, an id >= model_vocab, a BPE on a vocab-256 model),
 *  RS_E_UNSUPPORTED (a tokenizer.json feature not implemented, or built without PCRE2),
 *  RS_E_NOMEM, RS_E_INVAL. On failure *tok is zeroed (rs_tokenizer_free is still harmless). */
rs_status rs_tokenizer_open(const char *model_dir, int model_vocab, rs_tokenizer *tok);

/*! rs_tokenizer_open_file() : one tokenizer file: a tokenizer.json, or a tiktoken rank file
 *  (format chosen by the name: *.tiktoken[.gz] is tiktoken, anything else tokenizer.json; a
 *  *.gz name is gunzipped). For tiktoken, `pat_str` (NULL: tiktoken_config.json beside the file,
 *  or the built-in table) and `specials_json` (NULL or a JSON object {"token": id, ...}) and
 *  `nfc` (-1: from the config / table; 0 / 1) complete it. Same returns as rs_tokenizer_open. */
rs_status rs_tokenizer_open_file(const char *path, const char *pat_str, const char *specials_json, int nfc,
                                 rs_tokenizer *tok);

/*! rs_tokenizer_free() : release a tokenizer from rs_tokenizer_open*; zeroes *tok. */
void rs_tokenizer_free(rs_tokenizer *tok);

/*! rs_tokenizer_encode() : encode text[len] into ids[0..*n_out), writing at most max_ids ids;
 *  encoding stops there, and the ids written are the first max_ids ids of the whole text's
 *  encoding (the evaluator asks only for what it needs). @return RS_OK, RS_E_INVAL (NULL, or a
 *  zeroed tokenizer), RS_E_FORMAT (invalid UTF-8 under RS_TOK_INVALID_REFUSE), RS_E_NOMEM,
 *  RS_E_UNSUPPORTED (the split regex exceeded the match / depth / heap limits replayssm sets on
 *  one match, 10^6 steps: a catastrophically backtracking pattern; the message says which). */
rs_status rs_tokenizer_encode(const rs_tokenizer *tok, const char *text, size_t len,
                              int32_t *ids, size_t max_ids, size_t *n_out);

/* The largest file rs_tokenizer_read_input reads: 1 GiB, the limit of a PG-19 book. */
#define RS_TOKENIZER_INPUT_MAX_BYTES ((size_t)1 << 30)

/*! rs_tokenizer_read_input() : a file to encode (or ids to decode) read whole into a malloc'd
 *  buffer with one NUL byte after the data (*data, *len; free() it). Like every input the
 *  library reads whole: a regular file (opened non-blocking, so a FIFO is refused at once) of
 *  at most RS_TOKENIZER_INPUT_MAX_BYTES, checked before anything is allocated; exactly the size
 *  seen at open is read. @return RS_OK, RS_E_IO ("cannot open P: ...", "P: not a regular file",
 *  a read error), RS_E_FORMAT ("P: N bytes, more than the limit of 1024 MiB"), RS_E_NOMEM. */
rs_status rs_tokenizer_read_input(const char *path, char **data, size_t *len);

/*! rs_tokenizer_count() : how many ids text[len] encodes to (byte: len). */
rs_status rs_tokenizer_count(const rs_tokenizer *tok, const char *text, size_t len, size_t *n);

/*! rs_tokenizer_decode() : the bytes of ids[0..n) into out[0..*out_len), at most cap bytes
 *  (*out_len is the full length even when it does not fit: call with cap 0 to size the buffer;
 *  RS_E_SHAPE when it did not fit). Byte-level vocabularies give back the original bytes, byte
 *  fallback tokens <0xXX> their byte, added tokens their content. @return RS_OK, RS_E_SHAPE,
 *  RS_E_FORMAT (an id outside [0, vocab) or an unassigned id), RS_E_INVAL. */
rs_status rs_tokenizer_decode(const rs_tokenizer *tok, const int32_t *ids, size_t n, char *out, size_t cap,
                              size_t *out_len);

/*! rs_tokenizer_probe() : which tokenizer files a directory holds (the choice rs_tokenizer_open
 *  makes, without loading): RS_TOKFMT_HF_JSON, RS_TOKFMT_TIKTOKEN or RS_TOKFMT_NONE; the file name
 *  goes to file[cap] when not NULL. Never fails (an unreadable directory holds nothing). */
rs_tokenizer_format rs_tokenizer_probe(const char *model_dir, char *file, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* RS_TOKENIZER_H */
