/* rs_model_names.h — the tensors a config implies (names, shapes, the rs_model view each fills), shared
 * by the checkpoint loader (rs_model_load.c) and the random-weight model (rs_model_random.c). Private to
 * eval/model.
 */
#ifndef RS_MODEL_NAMES_H
#define RS_MODEL_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_quant_config.h"
#include "replayssm/eval/rs_safetensors.h"

/* one expected tensor */
typedef struct want {
    char name[192];
    int ndim;
    int64_t shape[3];
    const float **dst;
    const rs_st_tensor *t;
    rs_wformat fmt;                    /* how t is stored (resolve_q_)                        */
    const rs_st_tensor *scale, *scale2; /* quantized: weight_scale, weight_scale_2 (NVFP4)      */
    int64_t block[2];                  /* FP8 blocks                                          */
} want;

/* a packed expert tensor [E, ...]: after conversion, views[e] = base + e * stride + offset */
typedef struct expert_fixup {
    const float *base;
    const float **views;
    int E;
    size_t stride, offset;
} expert_fixup;

typedef struct want_list {
    want *v;
    int n, cap;
    const rs_st_set *st;
    const char *dir;
    expert_fixup *fix; /* [3 x MoE layers] */
    int n_fix;
} want_list;

/*! rs_mn_add() : append tensor `fmt...` of shape [d0, d1, d2][:ndim] filling *dst. */
rs_status rs_mn_add(want_list *wl, const float **dst, int ndim, int64_t d0, int64_t d1, int64_t d2, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;

/*! rs_mn_shape_str() : "[a, b, c]" of a shape. */
void rs_mn_shape_str(char *buf, size_t n, int ndim, const int64_t *s);

/*! rs_mn_layer_note() : " (layer i, kind)" for a tensor name of layer i, else "". */
const char *rs_mn_layer_note(const rs_model_config *cfg, const char *name, char *buf, size_t n);

/*! rs_mn_list_qwen35() / rs_mn_list_nemotronh() : every tensor of the family under prefix px (the
 *  embedding's spelling for NemotronH); MoE experts per expert unless wl->st holds them packed. */
rs_status rs_mn_list_qwen35(want_list *wl, const rs_model_config *c, rs_model_weights *w, const char *px);
rs_status rs_mn_list_nemotronh(want_list *wl, const rs_model_config *c, rs_model_weights *w, const char *px,
                               const char *embed_name);

/*! rs_mn_physical_memory() : the machine's physical memory in bytes (0 when unknown). */
uint64_t rs_mn_physical_memory(void);

/*! rs_mn_check_memory() : RS_OK when `need` bytes (for `what`) fit the physical memory, else RS_E_NOMEM
 *  with both numbers: refusing before allocating beats an allocation that Linux overcommits and the OOM
 *  killer ends half-way. */
rs_status rs_mn_check_memory(const char *dir, const char *what, uint64_t need);

/*! rs_mn_begin() : allocate m's per-expert view arrays and wl's fixups (MoE configs; nothing for dense). */
rs_status rs_mn_begin(rs_model *m, want_list *wl);

/*! rs_mn_finish() : after the slab is filled: point the per-expert views of packed expert tensors. */
void rs_mn_finish(want_list *wl);

#endif /* RS_MODEL_NAMES_H */
