/* rs_quant_config.h — the quantization description of a checkpoint: NVIDIA ModelOpt's
 * hf_quant_config.json, or the `quantization_config` object of config.json that newer ModelOpt /
 * transformers exports carry (quant_method "modelopt").
 *
 *   hf_quant_config.json  {"producer": {...}, "quantization": {"quant_algo": "NVFP4" | "FP8" |
 *                          "W4A16_NVFP4" | "FP8_PB_WO" | "MIXED_PRECISION", "group_size": 16,
 *                          "kv_cache_quant_algo": ..., "exclude_modules": ["lm_head", "*.gate", ...],
 *                          "quantized_layers": {"<module>": {"quant_algo": "NVFP4", ...}, ...}}}
 *   config.json           {"quantization_config": {"quant_method": "modelopt", "quant_algo": ...,
 *                          same keys as "quantization", "weight_block_size": [bo, bi] (FP8 blocks)}}
 *
 * What a module's weight should be (rs_quant_config_format_of): with MIXED_PRECISION the module's
 * entry of quantized_layers (absent: dense); otherwise the algorithm's format unless a pattern of
 * exclude_modules matches the module name (shell wildcards, fnmatch(3); a pattern also matches the
 * name with its model prefix removed, "model.language_model." / "model." / "backbone."). The
 * checkpoint's tensors are what is decoded (their dtypes say it); the loader checks them against
 * this description and refuses a disagreement.
 *
 * Parsing never prints; errors are RS_E_FORMAT (malformed JSON, wrong types, an empty or unknown
 * algorithm name, group_size other than 16 for NVFP4) or RS_E_UNSUPPORTED (an algorithm replayssm
 * does not decode, e.g. INT4_AWQ) with a message naming the file and the key. On failure the struct
 * is left empty.
 */
#ifndef RS_QUANT_CONFIG_H
#define RS_QUANT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a weight matrix is stored. */
typedef enum rs_wformat {
    RS_WFMT_DENSE = 0,    /* F32 / BF16 / F16 */
    RS_WFMT_NVFP4 = 1,    /* U8 E2M1 pairs + E4M3 per 16 inputs + fp32 per tensor (rs_wdecode.h) */
    RS_WFMT_FP8 = 2,      /* E4M3 + one fp32 scale per tensor */
    RS_WFMT_FP8_BLOCK = 3 /* E4M3 + an fp32 scale per block of bo x bi */
} rs_wformat;

typedef struct rs_quant_layer {
    char *module;     /* owned: module name as written, e.g. "backbone.layers.3.mixer.experts.7.up_proj" */
    rs_wformat fmt;
} rs_quant_layer;

typedef struct rs_quant_config {
    int present;              /* 0: no description (a dense checkpoint, or one without it)        */
    char source[48];          /* "hf_quant_config.json" or "config.json quantization_config"       */
    char quant_algo[32];      /* as written: NVFP4, W4A16_NVFP4, FP8, FP8_PB_WO, MIXED_PRECISION   */
    rs_wformat fmt;           /* the algorithm's weight format (MIXED_PRECISION: per layer)         */
    int mixed;                /* MIXED_PRECISION: quantized_layers decides                          */
    int w4a16;                /* W4A16_NVFP4 (weight-only); NVFP4 also quantizes activations (W4A4)
                                 in serving kernels, which replayssm emulates as W4A16 (docs)       */
    int group_size;           /* 16 for NVFP4; 0 when not given                                     */
    int64_t block[2];         /* FP8 block size [bo, bi] from weight_block_size; {0, 0} if absent   */
    char kv_cache_quant_algo[32]; /* as written ("" when absent or null)                            */
    char **exclude;           /* [n_exclude] owned patterns                                         */
    int n_exclude;
    rs_quant_layer *layers;   /* [n_layers] MIXED_PRECISION quantized_layers, owned                 */
    int n_layers;
} rs_quant_config;

/*! rs_quant_config_parse() : hf_quant_config.json text (is_config_json = 0) or config.json text
 *  (is_config_json = 1: its quantization_config; none, or a quant_method other than "modelopt",
 *  gives present = 0 when that method is absent and RS_E_UNSUPPORTED otherwise). label names the
 *  file in messages. */
rs_status rs_quant_config_parse(const char *text, size_t len, int is_config_json, const char *label,
                                rs_quant_config *q);

/*! rs_quant_config_load_dir() : `dir`/hf_quant_config.json if it exists, else config.json's
 *  quantization_config; neither: RS_OK with present = 0. */
rs_status rs_quant_config_load_dir(const char *dir, rs_quant_config *q);

/*! rs_quant_config_format_of() : the format the description gives module `module` (name without
 *  ".weight"); RS_WFMT_DENSE when q is absent, the module excluded, or not listed (MIXED_PRECISION). */
rs_wformat rs_quant_config_format_of(const rs_quant_config *q, const char *module);

/*! rs_wformat_name() : "dense", "nvfp4", "fp8", "fp8-block". */
const char *rs_wformat_name(rs_wformat f);

/*! rs_quant_config_free() : release; the struct becomes empty. NULL-safe. */
void rs_quant_config_free(rs_quant_config *q);

#ifdef __cplusplus
}
#endif
#endif /* RS_QUANT_CONFIG_H */
