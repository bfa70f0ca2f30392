/* rs_hf_config.c — config.json parsing for qwen3_5(_text) and nemotron_h (see rs_hf_config.h). */
#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_tokenizer.h"
#include "rs_check.h"
#include "input/rs_input.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- typed field access; `present` tells whether the key exists and is not null ---------------- */

typedef struct ctx {
    const char *label; /* file name for messages */
    const char *scope; /* "" or "text_config." */
} ctx;

static const cJSON *field(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

/* A JSON number, or transformers' tagged float {"__float__": "Infinity" | "-Infinity" | "NaN"}. */
static int as_double(const cJSON *v, double *out) {
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 1;
    }
    const cJSON *tag = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "__float__") : NULL;
    if (cJSON_IsString(tag)) {
        if (strcmp(tag->valuestring, "Infinity") == 0) *out = HUGE_VAL;
        else if (strcmp(tag->valuestring, "-Infinity") == 0) *out = -HUGE_VAL;
        else if (strcmp(tag->valuestring, "NaN") == 0) *out = NAN;
        else return 0;
        return 1;
    }
    return 0;
}

static rs_status get_int(const ctx *c, const cJSON *obj, const char *key, int def, int *out) {
    const cJSON *v = field(obj, key);
    if (!v) {
        *out = def;
        return RS_OK;
    }
    RS_CHECK(cJSON_IsNumber(v) && floor(v->valuedouble) == v->valuedouble, RS_E_FORMAT,
             "%s: %s%s must be an integer", c->label, c->scope, key);
    /* an integer that does not fit is out of range, not "not an integer" */
    RS_CHECK(fabs(v->valuedouble) < 2147483647.0, RS_E_FORMAT, "%s: %s%s = %.17g is out of range (|value| < 2^31)",
             c->label, c->scope, key, v->valuedouble);
    *out = (int)v->valuedouble;
    return RS_OK;
}

static rs_status get_double(const ctx *c, const cJSON *obj, const char *key, double def, double *out) {
    const cJSON *v = field(obj, key);
    if (!v) {
        *out = def;
        return RS_OK;
    }
    RS_CHECK(as_double(v, out), RS_E_FORMAT, "%s: %s%s must be a number", c->label, c->scope, key);
    return RS_OK;
}

static rs_status get_bool(const ctx *c, const cJSON *obj, const char *key, int def, int *out) {
    const cJSON *v = field(obj, key);
    if (!v) {
        *out = def;
        return RS_OK;
    }
    RS_CHECK(cJSON_IsBool(v), RS_E_FORMAT, "%s: %s%s must be true or false", c->label, c->scope, key);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return RS_OK;
}

static rs_status get_str(const ctx *c, const cJSON *obj, const char *key, const char *def, const char **out) {
    const cJSON *v = field(obj, key);
    if (!v) {
        *out = def;
        return RS_OK;
    }
    RS_CHECK(cJSON_IsString(v), RS_E_FORMAT, "%s: %s%s must be a string", c->label, c->scope, key);
    *out = v->valuestring;
    return RS_OK;
}

/* First present key of an alias list wins (aliases listed in the order transformers applies them). */
static const char *first_key(const cJSON *obj, const char *a, const char *b) {
    if (b && field(obj, b)) return b; /* legacy alias overrides (NemotronH __post_init__ pops it last) */
    return a;
}

static rs_status check_pos(const ctx *c, const char *what, int v) {
    RS_CHECK(v > 0, RS_E_FORMAT, "%s: %s%s must be positive (got %d)", c->label, c->scope, what, v);
    return RS_OK;
}

/* Ranges of the float fields: finite, in intervals no published config comes near the edges of.
 * "Infinity" / "NaN" (transformers' tagged floats) and 1e308 would pass a sign check alone. */
#define RS_CFG_EPS_MAX 1.0          /* rms_norm_eps, layer_norm_epsilon in (0, 1] */
#define RS_CFG_ROPE_THETA_MAX 1e12  /* rope_theta in (1, 1e12] (published: 1e4 .. 1e7) */
#define RS_CFG_DT_MAX 1e3           /* time_step_min / max / floor / limit[0] at most this */

/* v finite and in (lo, hi] (lo_open) or [lo, hi]; the message names the field, its value and the range */
static rs_status check_range(const ctx *c, const char *what, double v, double lo, int lo_open, double hi) {
    RS_CHECK(isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi, RS_E_FORMAT,
             "%s: %s%s = %g is out of range (a finite number in %s%g, %g])", c->label, c->scope, what, v,
             lo_open ? "(" : "[", lo, hi);
    return RS_OK;
}

/* a width derived from config integers (products, sums), computed in 64 bits: in 1..RS_MODEL_MAX_WIDTH */
static rs_status derived(const ctx *c, const char *what, long long v, int *out) {
    RS_CHECK(v > 0 && v <= RS_MODEL_MAX_WIDTH, RS_E_FORMAT, "%s: %s = %lld is out of range (1..%d)", c->label, what,
             v, RS_MODEL_MAX_WIDTH);
    *out = (int)v;
    return RS_OK;
}

/* ---- layer schedules ------------------------------------------------------------------------- */

/* transformers' remap_legacy_layer_types + the type names each family accepts */
static rs_status layer_from_name(const ctx *c, rs_model_family fam, int i, const char *name, rs_layer_kind *k) {
    if (strcmp(name, "linear_attention") == 0 || strcmp(name, "linear") == 0 || strcmp(name, "mamba") == 0) {
        if (fam == RS_FAMILY_QWEN35 && strcmp(name, "mamba") == 0) goto bad;
        *k = fam == RS_FAMILY_QWEN35 ? RS_LAYER_GDN : RS_LAYER_MAMBA2;
        return RS_OK;
    }
    if (strcmp(name, "full_attention") == 0 || strcmp(name, "attention") == 0 || strcmp(name, "full") == 0) {
        *k = RS_LAYER_ATTENTION;
        return RS_OK;
    }
    if (fam == RS_FAMILY_NEMOTRONH && strcmp(name, "mlp") == 0) {
        *k = RS_LAYER_MLP;
        return RS_OK;
    }
    if (fam == RS_FAMILY_NEMOTRONH && strcmp(name, "moe") == 0) {
        *k = RS_LAYER_MOE;
        return RS_OK;
    }
bad:
    return rs_error_set(RS_E_UNSUPPORTED, "%s: layer %d has type '%s': not supported yet for this model type",
                        c->label, i, name);
}

static rs_status layers_from_list(const ctx *c, rs_model_family fam, const cJSON *arr, const char *key,
                                  rs_model_config *cfg) {
    RS_CHECK(cJSON_IsArray(arr), RS_E_FORMAT, "%s: %s%s must be a list of strings", c->label, c->scope, key);
    int n = cJSON_GetArraySize(arr);
    RS_CHECK(n > 0, RS_E_FORMAT, "%s: %s%s is empty", c->label, c->scope, key);
    RS_CHECK(n <= RS_MODEL_MAX_LAYERS, RS_E_UNSUPPORTED, "%s: %d layers: more than %d is not supported yet",
             c->label, n, RS_MODEL_MAX_LAYERS);
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        RS_CHECK(cJSON_IsString(e), RS_E_FORMAT, "%s: %s%s[%d] is not a string", c->label, c->scope, key, i);
        RS_TRY(layer_from_name(c, fam, i, e->valuestring, &cfg->layer_kind[i]));
    }
    cfg->n_layers = n;
    return RS_OK;
}

static rs_status layers_from_pattern(const ctx *c, const char *pat, rs_model_config *cfg) {
    int n = (int)strlen(pat);
    RS_CHECK(n > 0, RS_E_FORMAT, "%s: hybrid_override_pattern is empty", c->label);
    RS_CHECK(n <= RS_MODEL_MAX_LAYERS, RS_E_UNSUPPORTED, "%s: %d layers: more than %d is not supported yet",
             c->label, n, RS_MODEL_MAX_LAYERS);
    for (int i = 0; i < n; i++) {
        switch (pat[i]) {
        case 'M': cfg->layer_kind[i] = RS_LAYER_MAMBA2; break;
        case '*': cfg->layer_kind[i] = RS_LAYER_ATTENTION; break;
        case '-': cfg->layer_kind[i] = RS_LAYER_MLP; break;
        case 'E': cfg->layer_kind[i] = RS_LAYER_MOE; break;
        default:
            return rs_error_set(RS_E_FORMAT, "%s: hybrid_override_pattern[%d] = '%c' is not one of M * - E",
                                c->label, i, pat[i]);
        }
    }
    cfg->n_layers = n;
    return RS_OK;
}

/* ---- mixture of experts ---------------------------------------------------------------------------- */

#define RS_CFG_ROUTED_SCALE_MAX 1e3 /* routed_scaling_factor in (0, 1e3] (published: 1 .. 16) */

/* the MoE keys of either family, then the checks that make routing possible: top_k experts must exist
 * among the kept groups, every group must hold the two experts its score sums */
static rs_status parse_moe(const ctx *c, const cJSON *obj, rs_model_family fam, int hidden, rs_moe_config *mo) {
    const char *ne_key = "num_experts", *si_key = "shared_expert_intermediate_size";
    if (fam == RS_FAMILY_QWEN35) {
        RS_TRY(get_int(c, obj, ne_key, 256, &mo->n_experts));
        RS_TRY(get_int(c, obj, "num_experts_per_tok", 8, &mo->top_k));
        RS_TRY(get_int(c, obj, "moe_intermediate_size", 512, &mo->intermediate));
        RS_TRY(get_int(c, obj, si_key, 512, &mo->shared_intermediate));
        mo->router = RS_ROUTER_SOFTMAX;
        mo->n_group = mo->topk_group = 1;
        mo->norm_topk_prob = 1;
        mo->routed_scaling_factor = 1.0f;
        mo->shared_gate = 1;
        mo->activation = RS_ACT_SILU;
    } else {
        ne_key = field(obj, "n_routed_experts") || !field(obj, "num_local_experts") ? "n_routed_experts"
                                                                                    : "num_local_experts";
        si_key = "moe_shared_expert_intermediate_size";
        double scale;
        RS_TRY(get_int(c, obj, ne_key, 8, &mo->n_experts));
        RS_TRY(get_int(c, obj, "num_experts_per_tok", 2, &mo->top_k));
        RS_TRY(get_int(c, obj, "moe_intermediate_size", 7688, &mo->intermediate));
        RS_TRY(get_int(c, obj, si_key, 7688, &mo->shared_intermediate));
        RS_TRY(get_int(c, obj, "moe_latent_size", 0, &mo->latent));
        RS_TRY(get_int(c, obj, "n_group", 1, &mo->n_group));
        RS_TRY(get_int(c, obj, "topk_group", 1, &mo->topk_group));
        RS_TRY(get_bool(c, obj, "norm_topk_prob", 1, &mo->norm_topk_prob));
        RS_TRY(get_double(c, obj, "routed_scaling_factor", 1.0, &scale));
        RS_TRY(check_range(c, "routed_scaling_factor", scale, 0.0, 1, RS_CFG_ROUTED_SCALE_MAX));
        mo->routed_scaling_factor = (float)scale;
        mo->router = RS_ROUTER_SIGMOID_GROUPED;
        mo->shared_gate = 0;
        mo->activation = RS_ACT_RELU2;
        RS_CHECK(mo->latent >= 0, RS_E_FORMAT, "%s: moe_latent_size must be positive or null (got %d)", c->label,
                 mo->latent);
    }
    RS_CHECK(mo->n_experts >= 1 && mo->n_experts <= RS_MOE_MAX_EXPERTS, RS_E_FORMAT,
             "%s: %s%s = %d is out of range (1..%d)", c->label, c->scope, ne_key, mo->n_experts, RS_MOE_MAX_EXPERTS);
    RS_CHECK(mo->top_k >= 1 && mo->top_k <= mo->n_experts && mo->top_k <= RS_MOE_MAX_TOP_K, RS_E_FORMAT,
             "%s: %snum_experts_per_tok = %d is out of range (1..%d: at most %s%s = %d, and %d)", c->label, c->scope,
             mo->top_k, mo->n_experts < RS_MOE_MAX_TOP_K ? mo->n_experts : RS_MOE_MAX_TOP_K, c->scope, ne_key,
             mo->n_experts, RS_MOE_MAX_TOP_K);
    RS_TRY(check_pos(c, "moe_intermediate_size", mo->intermediate));
    RS_TRY(check_pos(c, si_key, mo->shared_intermediate));
    int w;
    RS_TRY(derived(c, "moe_intermediate_size", mo->intermediate, &w));
    RS_TRY(derived(c, si_key, mo->shared_intermediate, &w));
    if (mo->latent > 0) RS_TRY(derived(c, "moe_latent_size", mo->latent, &w));
    mo->expert_in = mo->latent > 0 ? mo->latent : hidden;
    if (fam == RS_FAMILY_NEMOTRONH) {
        RS_CHECK(mo->n_group >= 1 && mo->n_experts % mo->n_group == 0, RS_E_FORMAT,
                 "%s: n_group = %d does not divide %s = %d into equal expert groups", c->label, mo->n_group, ne_key,
                 mo->n_experts);
        RS_CHECK(mo->n_experts / mo->n_group >= 2, RS_E_FORMAT,
                 "%s: %d experts per group (%s %d / n_group %d): a group's score is the sum of its two best experts, "
                 "so each group needs at least 2", c->label, mo->n_experts / mo->n_group, ne_key, mo->n_experts,
                 mo->n_group);
        RS_CHECK(mo->topk_group >= 1 && mo->topk_group <= mo->n_group && mo->topk_group <= RS_MOE_MAX_TOP_K,
                 RS_E_FORMAT, "%s: topk_group = %d is out of range (1..n_group = %d, at most %d)", c->label,
                 mo->topk_group, mo->n_group, RS_MOE_MAX_TOP_K);
        const int avail = mo->topk_group * (mo->n_experts / mo->n_group);
        RS_CHECK(mo->top_k <= avail, RS_E_FORMAT,
                 "%s: num_experts_per_tok = %d but the %d kept groups (topk_group) hold only %d experts", c->label,
                 mo->top_k, mo->topk_group, avail);
    }
    return RS_OK;
}

/* ---- families ---------------------------------------------------------------------------------- */

static rs_status parse_qwen35(const ctx *c, const cJSON *tc, const cJSON *root, int moe, rs_model_config *cfg) {
    cfg->family = RS_FAMILY_QWEN35;
    cfg->layer_has_mlp = 1;
    int nl;
    double eps;
    RS_TRY(get_int(c, tc, "vocab_size", 248320, &cfg->vocab));
    RS_TRY(get_int(c, tc, "hidden_size", moe ? 2048 : 4096, &cfg->hidden));
    if (!moe) RS_TRY(get_int(c, tc, "intermediate_size", 12288, &cfg->mlp.intermediate));
    RS_TRY(get_int(c, tc, "num_hidden_layers", 32, &nl));
    RS_TRY(get_int(c, tc, "num_attention_heads", 16, &cfg->attn.n_heads));
    RS_TRY(get_int(c, tc, "num_key_value_heads", 4, &cfg->attn.n_kv_heads));
    RS_TRY(get_double(c, tc, "rms_norm_eps", 1e-6, &eps));
    RS_TRY(check_range(c, "rms_norm_eps", eps, 0.0, 1, RS_CFG_EPS_MAX));
    cfg->rms_eps = (float)eps;
    RS_TRY(check_pos(c, "hidden_size", cfg->hidden));
    RS_TRY(check_pos(c, "num_attention_heads", cfg->attn.n_heads));
    /* head_dim: class default 256; an explicit null means hidden_size // num_attention_heads */
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(tc, "head_dim");
    if (hd && cJSON_IsNull(hd)) cfg->attn.head_dim = cfg->hidden / cfg->attn.n_heads;
    else RS_TRY(get_int(c, tc, "head_dim", 256, &cfg->attn.head_dim));

    const char *act;
    RS_TRY(get_str(c, tc, "hidden_act", "silu", &act));
    RS_CHECK(strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0, RS_E_UNSUPPORTED,
             "%s: hidden_act '%s' is not supported yet (silu only)", c->label, act);
    cfg->mlp.activation = RS_ACT_SILU;
    int bias;
    RS_TRY(get_bool(c, tc, "attention_bias", 0, &bias));
    RS_CHECK(!bias, RS_E_UNSUPPORTED, "%s: attention_bias = true is not supported yet", c->label);
    int gate;
    RS_TRY(get_bool(c, tc, "attn_output_gate", 1, &gate));
    RS_CHECK(gate, RS_E_UNSUPPORTED, "%s: attn_output_gate = false is not supported yet", c->label);
    if (moe) {
        RS_TRY(check_pos(c, "hidden_size", cfg->hidden));
        RS_TRY(parse_moe(c, tc, RS_FAMILY_QWEN35, cfg->hidden, &cfg->moe));
        cfg->mlp_is_moe = 1;
        cfg->is_moe = 1;
    } else {
        const cJSON *ne = field(tc, "num_experts");
        RS_CHECK(!ne || (cJSON_IsNumber(ne) && ne->valuedouble == 0.0), RS_E_FORMAT,
                 "%s: num_experts is set but model_type '%s' is dense (the mixture-of-experts variants are "
                 "qwen3_5_moe / qwen3_5_moe_text)", c->label, cfg->model_type);
    }
    cfg->attn.output_gate = 1;
    cfg->attn.qk_norm = 1;
    cfg->attn.use_rope = 1;

    /* RoPE: rope_parameters {rope_type, rope_theta, partial_rotary_factor, mrope_*}; text-only positions
     * make interleaved M-RoPE equal to plain partial RoPE. Fallbacks: top-level keys (BC), then defaults
     * (theta 10000, partial_rotary_factor 0.25 set by Qwen3_5TextConfig.__post_init__). */
    double theta, prf;
    RS_TRY(get_double(c, tc, "rope_theta", 10000.0, &theta));
    RS_TRY(get_double(c, tc, "partial_rotary_factor", 0.25, &prf));
    const cJSON *rp = field(tc, "rope_parameters");
    if (!rp) rp = field(tc, "rope_scaling");
    if (rp) {
        RS_CHECK(cJSON_IsObject(rp), RS_E_FORMAT, "%s: %srope_parameters must be an object", c->label, c->scope);
        const char *rt;
        RS_TRY(get_str(c, rp, "rope_type", "default", &rt));
        const char *rt2;
        RS_TRY(get_str(c, rp, "type", rt, &rt2));
        RS_CHECK(strcmp(rt2, "default") == 0, RS_E_UNSUPPORTED,
                 "%s: rope_type '%s' is not supported yet (default only)", c->label, rt2);
        RS_TRY(get_double(c, rp, "rope_theta", theta, &theta));
        RS_TRY(get_double(c, rp, "partial_rotary_factor", prf, &prf));
    }
    RS_TRY(check_range(c, "rope_theta", theta, 1.0, 1, RS_CFG_ROPE_THETA_MAX));
    RS_TRY(check_range(c, "partial_rotary_factor", prf, 0.0, 1, 1.0));
    cfg->attn.rope_theta = theta;
    cfg->attn.partial_rotary_factor = prf;
    cfg->attn.rotary_dim = (int)(cfg->attn.head_dim * prf);

    RS_TRY(get_int(c, tc, "linear_num_key_heads", 16, &cfg->gdn.n_k_heads));
    RS_TRY(get_int(c, tc, "linear_num_value_heads", 32, &cfg->gdn.n_v_heads));
    RS_TRY(get_int(c, tc, "linear_key_head_dim", 128, &cfg->gdn.k_head_dim));
    RS_TRY(get_int(c, tc, "linear_value_head_dim", 128, &cfg->gdn.v_head_dim));
    RS_TRY(get_int(c, tc, "linear_conv_kernel_dim", 4, &cfg->gdn.conv_kernel));

    /* layer_types, else full_attention_interval (default 4): linear unless (i+1) % interval == 0 */
    const cJSON *lt = field(tc, "layer_types");
    if (lt) {
        RS_TRY(layers_from_list(c, RS_FAMILY_QWEN35, lt, "layer_types", cfg));
        RS_CHECK(cfg->n_layers == nl, RS_E_FORMAT, "%s: layer_types has %d entries but num_hidden_layers is %d",
                 c->label, cfg->n_layers, nl);
    } else {
        int interval;
        RS_TRY(get_int(c, tc, "full_attention_interval", 4, &interval));
        RS_TRY(check_pos(c, "full_attention_interval", interval));
        RS_TRY(check_pos(c, "num_hidden_layers", nl));
        RS_CHECK(nl <= RS_MODEL_MAX_LAYERS, RS_E_UNSUPPORTED, "%s: %d layers: more than %d is not supported yet",
                 c->label, nl, RS_MODEL_MAX_LAYERS);
        for (int i = 0; i < nl; i++)
            cfg->layer_kind[i] = ((i + 1) % interval) ? RS_LAYER_GDN : RS_LAYER_ATTENTION;
        cfg->n_layers = nl;
    }

    /* tie_word_embeddings: the top-level key (qwen3_5 wrapper) if present, else the text config's */
    const cJSON *tie_src = field(root, "tie_word_embeddings") ? root : tc;
    RS_TRY(get_bool(c, tie_src, "tie_word_embeddings", 0, &cfg->tie_word_embeddings));

    RS_TRY(check_pos(c, "linear_num_key_heads", cfg->gdn.n_k_heads));
    RS_TRY(check_pos(c, "linear_num_value_heads", cfg->gdn.n_v_heads));
    RS_TRY(check_pos(c, "linear_key_head_dim", cfg->gdn.k_head_dim));
    RS_TRY(check_pos(c, "linear_value_head_dim", cfg->gdn.v_head_dim));
    RS_TRY(check_pos(c, "linear_conv_kernel_dim", cfg->gdn.conv_kernel));
    RS_CHECK(cfg->gdn.n_v_heads % cfg->gdn.n_k_heads == 0, RS_E_FORMAT,
             "%s: linear_num_value_heads %d is not a multiple of linear_num_key_heads %d", c->label,
             cfg->gdn.n_v_heads, cfg->gdn.n_k_heads);
    rs_gdn_config *g = &cfg->gdn;
    RS_TRY(derived(c, "linear_num_key_heads x linear_key_head_dim", (long long)g->n_k_heads * g->k_head_dim, &g->key_dim));
    RS_TRY(derived(c, "linear_num_value_heads x linear_value_head_dim", (long long)g->n_v_heads * g->v_head_dim,
                   &g->value_dim));
    RS_TRY(derived(c, "the GDN conv width 2 key_dim + value_dim", 2LL * g->key_dim + g->value_dim, &g->conv_dim));
    return RS_OK;
}

static rs_status parse_nemotronh(const ctx *c, const cJSON *root, rs_model_config *cfg) {
    cfg->family = RS_FAMILY_NEMOTRONH;
    cfg->layer_has_mlp = 0;
    double eps;
    rs_mamba2_config *mc = &cfg->mamba;
    RS_TRY(get_int(c, root, "vocab_size", 131072, &cfg->vocab));
    RS_TRY(get_int(c, root, "hidden_size", 4096, &cfg->hidden));
    RS_TRY(get_double(c, root, "layer_norm_epsilon", 1e-5, &eps)); /* HF ignores a stray rms_norm_eps */
    RS_TRY(check_range(c, "layer_norm_epsilon", eps, 0.0, 1, RS_CFG_EPS_MAX));
    cfg->rms_eps = (float)eps;
    RS_TRY(get_bool(c, root, "tie_word_embeddings", 0, &cfg->tie_word_embeddings));

    /* pattern: layers_block_type (alias layer_types) wins over the legacy hybrid_override_pattern;
     * without either, transformers' default schedule contains a MoE layer */
    const cJSON *lbt = field(root, "layers_block_type");
    const char *lbt_key = "layers_block_type";
    if (!lbt) {
        lbt = field(root, "layer_types");
        lbt_key = "layer_types";
    }
    if (lbt) {
        RS_TRY(layers_from_list(c, RS_FAMILY_NEMOTRONH, lbt, lbt_key, cfg));
    } else if (field(root, "hybrid_override_pattern")) {
        const char *pat;
        RS_TRY(get_str(c, root, "hybrid_override_pattern", "", &pat));
        RS_TRY(layers_from_pattern(c, pat, cfg));
    } else { /* transformers' default schedule */
        static const rs_layer_kind def[] = {RS_LAYER_MAMBA2, RS_LAYER_MOE, RS_LAYER_ATTENTION, RS_LAYER_MLP};
        for (int i = 0; i < 4; i++) cfg->layer_kind[i] = def[i];
        cfg->n_layers = 4;
    }

    RS_TRY(get_int(c, root, "num_attention_heads", 32, &cfg->attn.n_heads));
    const cJSON *kvh = cJSON_GetObjectItemCaseSensitive(root, "num_key_value_heads");
    if (kvh && cJSON_IsNull(kvh)) cfg->attn.n_kv_heads = cfg->attn.n_heads;
    else RS_TRY(get_int(c, root, "num_key_value_heads", 8, &cfg->attn.n_kv_heads));
    /* head_dim (class default 128); older remote-code configs spell it attention_head_dim */
    RS_TRY(get_int(c, root, field(root, "head_dim") ? "head_dim" : "attention_head_dim", 128, &cfg->attn.head_dim));
    cfg->attn.output_gate = 0;
    cfg->attn.qk_norm = 0;
    cfg->attn.use_rope = 0;

    const char *act;
    RS_TRY(get_int(c, root, "intermediate_size", 21504, &cfg->mlp.intermediate));
    RS_TRY(get_str(c, root, "mlp_hidden_act", "relu2", &act));
    RS_CHECK(strcmp(act, "relu2") == 0, RS_E_UNSUPPORTED,
             "%s: mlp_hidden_act '%s' is not supported yet (relu2 only)", c->label, act);
    cfg->mlp.activation = RS_ACT_RELU2;
    RS_TRY(get_str(c, root, "mamba_hidden_act", "silu", &act));
    RS_CHECK(strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0, RS_E_UNSUPPORTED,
             "%s: mamba_hidden_act '%s' is not supported yet (silu only)", c->label, act);
    int b1, b2;
    RS_TRY(get_bool(c, root, "use_bias", 0, &b1));
    RS_TRY(get_bool(c, root, "mlp_bias", 0, &b2));
    RS_CHECK(!b1 && !b2, RS_E_UNSUPPORTED, "%s: use_bias / mlp_bias = true is not supported yet", c->label);

    RS_TRY(get_int(c, root, "ssm_state_size", 128, &mc->d_state));
    RS_TRY(get_int(c, root, "mamba_num_heads", 128, &mc->n_heads));
    RS_TRY(get_int(c, root, "mamba_head_dim", 64, &mc->head_dim));
    RS_TRY(get_int(c, root, first_key(root, "n_groups", "mamba_n_groups"), 8, &mc->n_groups));
    RS_TRY(get_int(c, root, first_key(root, "conv_kernel", "mamba_d_conv"), 4, &mc->conv_kernel));
    RS_TRY(get_int(c, root, first_key(root, "chunk_size", "mamba_chunk_size"), 128, &mc->chunk_size));
    RS_TRY(get_bool(c, root, first_key(root, "use_conv_bias", "mamba_conv_bias"), 1, &mc->use_conv_bias));
    const char *k_min = first_key(root, "time_step_min", "mamba_dt_min");
    const char *k_max = first_key(root, "time_step_max", "mamba_dt_max");
    const char *k_floor = first_key(root, "time_step_floor", "mamba_dt_init_floor");
    RS_TRY(get_double(c, root, k_min, 0.001, &mc->time_step_min));
    RS_TRY(get_double(c, root, k_max, 0.1, &mc->time_step_max));
    RS_TRY(get_double(c, root, k_floor, 1e-4, &mc->time_step_floor));
    mc->time_step_limit[0] = 0.0;
    mc->time_step_limit[1] = HUGE_VAL;
    const char *lk = first_key(root, "time_step_limit", "mamba_dt_limit");
    const cJSON *lim = field(root, lk);
    if (lim) {
        RS_CHECK(cJSON_IsArray(lim) && cJSON_GetArraySize(lim) == 2 && as_double(lim->child, &mc->time_step_limit[0])
                     && as_double(lim->child->next, &mc->time_step_limit[1]),
                 RS_E_FORMAT, "%s: %s must be a list of two numbers", c->label, lk);
    }
    RS_TRY(check_range(c, k_min, mc->time_step_min, 0.0, 1, RS_CFG_DT_MAX));
    RS_TRY(check_range(c, k_max, mc->time_step_max, 0.0, 1, RS_CFG_DT_MAX));
    RS_TRY(check_range(c, k_floor, mc->time_step_floor, 0.0, 0, RS_CFG_DT_MAX));
    RS_CHECK(mc->time_step_min <= mc->time_step_max, RS_E_FORMAT, "%s: %s = %g is above %s = %g", c->label, k_min,
             mc->time_step_min, k_max, mc->time_step_max);
    /* the kernels' dt clamp: the upper end may be +Infinity (transformers' default), never NaN */
    char k_lim[64];
    snprintf(k_lim, sizeof k_lim, "%s[0]", lk);
    RS_TRY(check_range(c, k_lim, mc->time_step_limit[0], 0.0, 0, RS_CFG_DT_MAX));
    RS_CHECK(!isnan(mc->time_step_limit[1]) && mc->time_step_limit[1] > mc->time_step_limit[0], RS_E_FORMAT,
             "%s: %s[1] = %g must be above %s[0] = %g (+Infinity allowed)", c->label, lk, mc->time_step_limit[1], lk,
             mc->time_step_limit[0]);

    RS_TRY(check_pos(c, "hidden_size", cfg->hidden));
    RS_TRY(check_pos(c, "num_attention_heads", cfg->attn.n_heads));
    RS_TRY(check_pos(c, "head_dim", cfg->attn.head_dim));
    RS_TRY(check_pos(c, "ssm_state_size", mc->d_state));
    RS_TRY(check_pos(c, "mamba_num_heads", mc->n_heads));
    RS_TRY(check_pos(c, "mamba_head_dim", mc->head_dim));
    RS_TRY(check_pos(c, "n_groups", mc->n_groups));
    RS_TRY(check_pos(c, "conv_kernel", mc->conv_kernel));
    RS_CHECK(mc->n_heads % mc->n_groups == 0, RS_E_FORMAT, "%s: mamba_num_heads %d is not a multiple of n_groups %d",
             c->label, mc->n_heads, mc->n_groups);
    RS_TRY(derived(c, "mamba_num_heads x mamba_head_dim", (long long)mc->n_heads * mc->head_dim, &mc->d_inner));
    RS_TRY(derived(c, "the Mamba-2 conv width d_inner + 2 n_groups ssm_state_size",
                   mc->d_inner + 2LL * mc->n_groups * mc->d_state, &mc->conv_dim));
    RS_TRY(derived(c, "the Mamba-2 in_proj width", (long long)mc->d_inner + mc->conv_dim + mc->n_heads,
                   &mc->in_proj_dim));
    cfg->attn.rotary_dim = 0;
    for (int i = 0; i < cfg->n_layers; i++)
        if (cfg->layer_kind[i] == RS_LAYER_MOE) cfg->is_moe = 1;
    if (cfg->is_moe) RS_TRY(parse_moe(c, root, RS_FAMILY_NEMOTRONH, cfg->hidden, &cfg->moe));
    return RS_OK;
}

rs_status rs_hf_config_parse(const char *text, size_t len, const char *label, rs_model_config *cfg) {
    RS_CHECK(text && cfg, RS_E_INVAL, "rs_hf_config_parse: NULL argument");
    if (!label) label = "config.json";
    memset(cfg, 0, sizeof *cfg);
    cJSON *root = cJSON_ParseWithLength(text, len);
    RS_CHECK(root != NULL, RS_E_FORMAT, "%s: not well-formed JSON (error near byte %ld)", label,
             cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
    rs_status st = RS_OK;
    ctx c = {label, ""};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsObject(root)) {
        st = rs_error_set(RS_E_FORMAT, "%s: top level is not a JSON object", label);
    } else if (!cJSON_IsString(mt)) {
        st = rs_error_set(RS_E_FORMAT, "%s: no string field 'model_type'", label);
    } else if (strlen(mt->valuestring) >= sizeof cfg->model_type) {
        st = rs_error_set(RS_E_UNSUPPORTED, "%s: model_type '%.40s...' is not supported yet", label, mt->valuestring);
    } else {
        snprintf(cfg->model_type, sizeof cfg->model_type, "%s", mt->valuestring);
        const char *t = mt->valuestring;
        const int q_moe = strcmp(t, "qwen3_5_moe_text") == 0 || strcmp(t, "qwen3_5_moe") == 0;
        if (strcmp(t, "qwen3_5_text") == 0 || strcmp(t, "qwen3_5_moe_text") == 0) {
            st = parse_qwen35(&c, root, root, q_moe, cfg);
        } else if (strcmp(t, "qwen3_5") == 0 || strcmp(t, "qwen3_5_moe") == 0) {
            const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
            if (!cJSON_IsObject(tc)) {
                st = rs_error_set(RS_E_FORMAT, "%s: model_type %s needs an object 'text_config'", label, t);
            } else {
                c.scope = "text_config.";
                st = parse_qwen35(&c, tc, root, q_moe, cfg);
            }
        } else if (strcmp(mt->valuestring, "nemotron_h") == 0) {
            st = parse_nemotronh(&c, root, cfg);
        } else {
            st = rs_error_set(RS_E_UNSUPPORTED, "%s: model_type '%s' is not supported yet (supported: qwen3_5_text, "
                              "qwen3_5, qwen3_5_moe_text, qwen3_5_moe, nemotron_h)", label, mt->valuestring);
        }
    }
    if (st == RS_OK) {
        st = check_pos(&c, "vocab_size", cfg->vocab);
        if (st == RS_OK && cfg->attn.n_kv_heads <= 0)
            st = rs_error_set(RS_E_FORMAT, "%s: num_key_value_heads must be positive", label);
        if (st == RS_OK && cfg->attn.n_heads % cfg->attn.n_kv_heads != 0)
            st = rs_error_set(RS_E_FORMAT, "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d",
                              label, cfg->attn.n_heads, cfg->attn.n_kv_heads);
        if (st == RS_OK && cfg->attn.head_dim <= 0)
            st = rs_error_set(RS_E_FORMAT, "%s: head_dim must be positive", label);
        if (st == RS_OK && cfg->mlp.intermediate <= 0 && !cfg->mlp_is_moe)
            st = rs_error_set(RS_E_FORMAT, "%s: intermediate_size must be positive", label);
        if (st == RS_OK && !(cfg->rms_eps > 0.0f))
            st = rs_error_set(RS_E_FORMAT, "%s: the RMSNorm epsilon must be positive", label);
        int width; /* every width, and heads x head_dim of the attention, within RS_MODEL_MAX_WIDTH */
        if (st == RS_OK) st = derived(&c, "vocab_size", cfg->vocab, &width);
        if (st == RS_OK) st = derived(&c, "hidden_size", cfg->hidden, &width);
        if (st == RS_OK && !cfg->mlp_is_moe) st = derived(&c, "intermediate_size", cfg->mlp.intermediate, &width);
        if (st == RS_OK)
            st = derived(&c, "num_attention_heads x head_dim", (long long)cfg->attn.n_heads * cfg->attn.head_dim, &width);
    }
    if (st == RS_OK) {
        cfg->tokenizer = cfg->vocab == 256 ? RS_TOKENIZER_BYTE : RS_TOKENIZER_UNSUPPORTED;
        for (int i = 0; i < cfg->n_layers; i++) {
            switch (cfg->layer_kind[i]) {
            case RS_LAYER_GDN: cfg->n_gdn++; break;
            case RS_LAYER_MAMBA2: cfg->n_mamba++; break;
            case RS_LAYER_ATTENTION: cfg->n_attn++; break;
            case RS_LAYER_MLP: cfg->n_mlp++; break;
            case RS_LAYER_MOE: cfg->n_moe++; break;
            }
        }
        if (cfg->mlp_is_moe) cfg->n_moe = cfg->n_layers;
    }
    cJSON_Delete(root);
    if (st != RS_OK) {
        memset(cfg, 0, sizeof *cfg);
    }
    return st;
}

rs_status rs_hf_config_load(const char *path, rs_model_config *cfg) {
    RS_CHECK(path && cfg, RS_E_INVAL, "rs_hf_config_load: NULL argument");
    char *buf = NULL;
    size_t n = 0;
    RS_TRY(rs_input_read_all(path, (size_t)64 << 20, 0, &buf, &n, NULL)); /* regular, <= 64 MiB */
    rs_status st = rs_hf_config_parse(buf ? buf : "", n, path, cfg);
    free(buf);
    if (st == RS_OK) {
        /* tokenizer files beside config.json decide the tokenizer, whatever vocab_size says (a
         * vocab-256 model with a tokenizer.json is not silently byte-level): rs_tokenizer_open */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        else snprintf(dir, sizeof dir, ".");
        if (rs_tokenizer_probe(dir, NULL, 0) != RS_TOKFMT_NONE) cfg->tokenizer = RS_TOKENIZER_BPE;
    }
    return st;
}
