/* rs_format.h — storage formats for SSM states, and their config-string grammar.
 *
 * A format says how a float32 tensor is stored: element type, block scaling and rounding.
 *
 *   fp32            no rounding (the reference)
 *   fp16, bf16      elementwise, no scale
 *   fp8             E4M3 elements, one float32 scale per 128 contiguous elements
 *                   (TransformerEngine compute_scale_from_amax; 1/scale is stored)
 *   nvfp4           E2M1 elements, one E4M3 scale per 16 contiguous elements and one
 *                   float32 decode scale per tensor (TransformerEngine NVFP4 formulas)
 *   e5m2            E5M2 elements, one float32 scale per 128 contiguous elements (fp8's
 *                   rule with E5M2's largest value 57344: more range, one mantissa bit less)
 *   mxfp8, mxfp4    OCP Microscaling v1.0: E4M3 (mxfp8) or E2M1 (mxfp4) elements with one
 *                   E8M0 (power-of-two) scale per 32 contiguous elements
 *
 * Grammar (case-sensitive):
 *
 *   format   := "fp32" | base [ "-" rounding ] options
 *   base     := "fp16" | "bf16" | "fp8" | "nvfp4" | "e5m2" | "mxfp8" | "mxfp4"
 *   rounding := "rtn" | "sr" | "sr" K          (K = random bits, 1..32; "sr" = 32)
 *   options  := { "+pow2" (fp8, e5m2: power-of-two block scales)
 *               | "+floor" (nvfp4 only: torchao's 2^-6 floor on block scales) }
 *
 * e.g. fp32, fp16-sr, bf16-rtn, fp8-rtn, fp8-sr+pow2, nvfp4-sr, nvfp4-sr8, nvfp4-rtn+floor.
 * A bare base ("nvfp4", "fp8+pow2") is RTN, the default rounding: every command and the Python
 * module take this one grammar (quant-error --format, sweep --formats, kl --policy conv:nvfp4).
 * rs_format_print() writes the canonical string (the rounding always spelled), which parses back
 * to the same format. K is decimal without leading zeros; "sr32" is accepted and prints as "sr".
 * Each option at most once. Under RTN the struct's sr_bits is unused (parse sets it to 32).
 */
#ifndef RS_FORMAT_H
#define RS_FORMAT_H

#include <stddef.h>

#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rs_format_kind {
    RS_FMT_FP32 = 0,
    RS_FMT_FP16 = 1,
    RS_FMT_BF16 = 2,
    RS_FMT_FP8 = 3,   /* E4M3 + fp32 scale per RS_FP8_BLOCK elements */
    RS_FMT_NVFP4 = 4, /* E2M1 + E4M3 scale per RS_NVFP4_BLOCK elements + fp32 per tensor */
    RS_FMT_E5M2 = 5,  /* E5M2 + fp32 scale per RS_FP8_BLOCK elements (CPU; the GPU refuses it) */
    RS_FMT_MXFP8 = 6, /* E4M3 + E8M0 scale per RS_MX_BLOCK elements (CPU; the GPU refuses it) */
    RS_FMT_MXFP4 = 7  /* E2M1 + E8M0 scale per RS_MX_BLOCK elements (CPU; the GPU refuses it) */
} rs_format_kind;

#define RS_FP8_BLOCK 128
#define RS_NVFP4_BLOCK 16
#define RS_MX_BLOCK 32

typedef struct rs_format {
    rs_format_kind kind;
    rs_rounding rounding; /* RTN or SR (fp32: RTN, unused) */
    int sr_bits;          /* random bits per SR decision, 1..32 (default 32) */
    int fp8_pow2;         /* fp8, e5m2: round block scales down to a power of two (TE option) */
    int nvfp4_floor;      /* nvfp4: clamp block scales below at 2^-6 (torchao) */
} rs_format;

/*! rs_format_parse() : parse a format string.
 *  @return RS_OK, or RS_E_INVAL with a message that lists the valid strings. */
rs_status rs_format_parse(const char *s, rs_format *out);

/*! rs_format_print() : canonical string of f into buf (always NUL-terminated).
 *  @return RS_OK, or RS_E_INVAL if buf is too small or f is invalid. */
rs_status rs_format_print(const rs_format *f, char *buf, size_t bufsize);

/*! rs_format_set_rounding() : replace the rounding of f by a rounding word of the grammar ("rtn",
 *  "sr", "srK"), e.g. a --rounding option over a --format(s) value; "sr" keeps the K of a format
 *  that is SR already (nvfp4-sr8 stays sr8), else K = 32. @return RS_OK, or RS_E_INVAL for a bad
 *  word (the message lists the choices) or for fp32 (it has no rounding); f unchanged then. */
rs_status rs_format_set_rounding(rs_format *f, const char *rounding);

/*! rs_format_kind_name() : the base word of a kind ("fp32", "fp16", "bf16", "fp8", "nvfp4"; NULL
 *  for an unknown kind). */
const char *rs_format_kind_name(rs_format_kind k);

/*! rs_format_rounding_name() : "none" (fp32), "rtn" or "sr" (SR's bits: f->sr_bits). */
const char *rs_format_rounding_name(const rs_format *f);

/*! rs_format_option_name() : "pow2", "floor" or "" (the option words without their "+"). */
const char *rs_format_option_name(const rs_format *f);

/*! rs_format_valid_list() : human-readable list of the valid strings (for messages). */
const char *rs_format_valid_list(void);

/*! rs_format_fp32() : the fp32 format value. */
rs_format rs_format_fp32(void);

/*! rs_format_block() : elements per block scale (128 fp8, 16 nvfp4, 0 otherwise). */
size_t rs_format_block(const rs_format *f);

/*! rs_format_on_gpu() : 1 if the CUDA quantizers, state kernels and checkpoint readers store this
 *  format (fp32, fp16, bf16, fp8, nvfp4), 0 for the CPU-only ones (e5m2, mxfp8, mxfp4) and NULL. */
int rs_format_on_gpu(const rs_format *f);

/*! rs_format_bytes_per_element() : exact storage bytes per element, scales included, for
 *  tensors of `tensor_extent` elements (the extent that owns one NVFP4 tensor scale; for an
 *  SSM state, d_v * d_k). fp8: 1 + 4/128; nvfp4: 0.5 + 1/16 + 4/tensor_extent
 *  (tensor_extent 0 leaves the per-tensor term out). fp32 4, fp16/bf16 2; NULL f: 0. */
double rs_format_bytes_per_element(const rs_format *f, size_t tensor_extent);

#ifdef __cplusplus
}
#endif
#endif /* RS_FORMAT_H */
