/* rs_hf_config.h — Hugging Face config.json -> rs_model_config, with transformers 5.17 semantics.
 *
 * Supported model_type values: "qwen3_5_text", "qwen3_5" (text parameters under "text_config") and
 * "nemotron_h". Field names, legacy aliases and class defaults follow configuration_qwen3_5.py and
 * configuration_nemotron_h.py of transformers 5.17 (docs/model-formats.md lists them). Anything the
 * CPU forward does not implement — other model types, MoE layers ("moe", pattern 'E'), biases,
 * non-default RoPE scaling, other activations — is refused with RS_E_UNSUPPORTED and a message saying
 * "not supported yet"; malformed JSON or fields of the wrong type give RS_E_FORMAT naming the field.
 */
#ifndef RS_HF_CONFIG_H
#define RS_HF_CONFIG_H

#include <stddef.h>

#include "replayssm/eval/rs_model.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_hf_config_parse() : parse `len` bytes of config.json text (need not be NUL-terminated) into
 *  *cfg (fully overwritten). `label` names the source in error messages (e.g. the file path). */
rs_status rs_hf_config_parse(const char *text, size_t len, const char *label, rs_model_config *cfg);

/*! rs_hf_config_load() : read and parse the file at `path`. */
rs_status rs_hf_config_load(const char *path, rs_model_config *cfg);

#ifdef __cplusplus
}
#endif
#endif /* RS_HF_CONFIG_H */
