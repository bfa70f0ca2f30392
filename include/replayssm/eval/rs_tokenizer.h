/* rs_tokenizer.h — text -> token ids for the evaluator.
 *
 * One interface, one implementation so far: the byte-level tokenizer of the bundled small
 * models (vocab_size 256, token id == byte value, every byte sequence encodes, nothing is
 * normalised: a Latin-1 or UTF-8 book becomes exactly its bytes). A model whose config says
 * another tokenizer (a real BPE vocabulary, rs_model_config.tokenizer ==
 * RS_TOKENIZER_UNSUPPORTED) is refused with RS_E_UNSUPPORTED and a message naming the model
 * directory and its vocabulary size: the evaluator never feeds ids produced for one
 * vocabulary to another model.
 */
#ifndef RS_TOKENIZER_H
#define RS_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/eval/rs_model.h"
#include "replayssm/common/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rs_tokenizer {
    rs_tokenizer_kind kind;
    const char *name; /* "byte" */
    int vocab;        /* ids are in [0, vocab) */
} rs_tokenizer;

/*! rs_tokenizer_for_model() : the tokenizer of a model config. `label` (e.g. the model
 *  directory) names the model in the message. @return RS_OK, RS_E_UNSUPPORTED (tokenizer
 *  kind not implemented, or a byte tokenizer with vocab != 256), RS_E_INVAL (NULL). */
rs_status rs_tokenizer_for_model(const rs_model_config *cfg, const char *label, rs_tokenizer *tok);

/*! rs_tokenizer_encode() : encode text[len] into ids[0..*n_out), writing at most max_ids
 *  ids (encoding stops there: the evaluator asks only for what it needs).
 *  @return RS_OK, RS_E_INVAL (NULL, or a tokenizer not returned by rs_tokenizer_for_model),
 *  RS_E_UNSUPPORTED (kind without an encoder). */
rs_status rs_tokenizer_encode(const rs_tokenizer *tok, const char *text, size_t len,
                              int32_t *ids, size_t max_ids, size_t *n_out);

/*! rs_tokenizer_count() : how many ids text[len] encodes to (byte: len). */
rs_status rs_tokenizer_count(const rs_tokenizer *tok, const char *text, size_t len, size_t *n);

#ifdef __cplusplus
}
#endif
#endif /* RS_TOKENIZER_H */
