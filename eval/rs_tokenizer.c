/* rs_tokenizer.c — byte-level tokenizer; everything else refused (see rs_tokenizer.h). */
#include "replayssm/eval/rs_tokenizer.h"
#include "rs_check.h"

#include <string.h>

rs_status rs_tokenizer_for_model(const rs_model_config *cfg, const char *label, rs_tokenizer *tok)
{
    RS_CHECK(cfg && tok, RS_E_INVAL, "tokenizer: NULL argument");
    if (!label) label = "model";
    memset(tok, 0, sizeof *tok);
    if (cfg->tokenizer == RS_TOKENIZER_BYTE) {
        RS_CHECK(cfg->vocab == 256, RS_E_UNSUPPORTED,
                 "%s: byte-level tokenizer needs vocab_size 256, the config says %d", label, cfg->vocab);
        tok->kind = RS_TOKENIZER_BYTE;
        tok->name = "byte";
        tok->vocab = 256;
        return RS_OK;
    }
    return rs_error_set(RS_E_UNSUPPORTED,
                        "%s: tokenizer not supported yet (vocab_size %d; only the byte-level tokenizer of "
                        "vocab_size 256 is implemented): refusing to evaluate on wrong token ids",
                        label, cfg->vocab);
}

rs_status rs_tokenizer_count(const rs_tokenizer *tok, const char *text, size_t len, size_t *n)
{
    RS_CHECK(tok && n && (text || len == 0), RS_E_INVAL, "tokenizer: NULL argument");
    RS_CHECK(tok->kind == RS_TOKENIZER_BYTE && tok->vocab == 256, RS_E_UNSUPPORTED,
             "tokenizer '%s': no encoder", tok->name ? tok->name : "?");
    *n = len;
    return RS_OK;
}

rs_status rs_tokenizer_encode(const rs_tokenizer *tok, const char *text, size_t len,
                              int32_t *ids, size_t max_ids, size_t *n_out)
{
    RS_CHECK(tok && n_out && (text || len == 0) && (ids || max_ids == 0), RS_E_INVAL,
             "tokenizer: NULL argument");
    RS_CHECK(tok->kind == RS_TOKENIZER_BYTE && tok->vocab == 256, RS_E_UNSUPPORTED,
             "tokenizer '%s': no encoder", tok->name ? tok->name : "?");
    const size_t n = len < max_ids ? len : max_ids;
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)u[i];
    *n_out = n;
    return RS_OK;
}
