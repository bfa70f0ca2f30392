/* rs_model.h — the in-memory hybrid model: configuration + fp32 weights of a Hugging Face
 * checkpoint (config.json + safetensors) of the families replayssm evaluates.
 *
 * Families (transformers 5.17 semantics; docs/model-formats.md has the full field table):
 *   RS_FAMILY_QWEN35     model_type "qwen3_5_text", or "qwen3_5" (text parameters nested under
 *                        `text_config`, text weights under `model.language_model.`; `model.visual.*`
 *                        and `mtp.*` are ignored); the MoE variants "qwen3_5_moe_text" / "qwen3_5_moe"
 *                        likewise (cfg.mlp_is_moe). Decoder layer i:
 *                          h = x + mixer(RMSNorm_{1+w}(x; norm))        mixer = GDN or gated attention
 *                          y = h + MLP(RMSNorm_{1+w}(h; post_norm))    MLP = SwiGLU, or the MoE block
 *   RS_FAMILY_NEMOTRONH  model_type "nemotron_h" (pattern from `hybrid_override_pattern` or
 *                        `layers_block_type`; weight prefix `backbone.` or `model.`). Block i holds ONE
 *                        mixer: y = x + mixer(RMSNorm_w(x; norm)), mixer = Mamba-2, attention, MLP or MoE.
 *
 * Weights: every tensor the forward needs is converted ONCE to fp32 into one slab (llm.c style) and
 * exposed as named read-only views below. All matrices keep the PyTorch nn.Linear layout
 * [out_features, in_features], row-major (y = W x  <=>  cblas ... CblasTrans with lda = in). Norm
 * weights are stored exactly as in the checkpoint: the Qwen3.5 decoder/final/q/k norms are applied as
 * (1 + w) by the forward, the GDN gated norm and all NemotronH norms as plain w.
 * conv1d weights are stored [channels, K] (HF [channels, 1, K] with the unit dim dropped);
 * tap K-1 multiplies the newest input.
 *
 * The library never prints: rs_model_load returns an rs_status and rs_last_error() names the file,
 * tensor or config field at fault. Unknown model types, biases and RoPE scaling the
 * families do not use are refused with RS_E_UNSUPPORTED ("not supported yet"). Vocabularies other
 * than 256 bytes load fine but are marked cfg.tokenizer = RS_TOKENIZER_UNSUPPORTED.
 *
 * Stability: this header is shared with the forward pass (rs_model_forward*.c); changes are additive.
 */
#ifndef RS_MODEL_H
#define RS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_quant_config.h"
#include "replayssm/eval/rs_tokenizer.h" /* rs_tokenizer_kind */

#ifdef __cplusplus
extern "C" {
#endif

#define RS_MODEL_MAX_LAYERS 256 /* more than any published hybrid (Nemotron-3-Super: 88 layers) */
/* Largest width a config may give or imply (a dimension, or a product such as heads x head_dim):
 * 2^24, far above any published model (vocabularies ~2.6e5, widths ~3e4), and small enough that
 * the derived widths and their small sums stay inside int (a fuzzed config once overflowed
 * linear_num_key_heads x linear_key_head_dim; tests/fuzz/corpus/hf_config). */
#define RS_MODEL_MAX_WIDTH (1 << 24)

typedef enum rs_model_family {
    RS_FAMILY_UNKNOWN = 0,
    RS_FAMILY_QWEN35 = 1,   /* qwen3_5_text / qwen3_5 */
    RS_FAMILY_NEMOTRONH = 2 /* nemotron_h */
} rs_model_family;

/* What a layer's mixer is. Qwen3.5 layers additionally always carry a SwiGLU MLP (cfg.layer_has_mlp). */
typedef enum rs_layer_kind {
    RS_LAYER_GDN = 1,       /* Qwen3.5 "linear_attention": Gated DeltaNet                        */
    RS_LAYER_MAMBA2 = 2,    /* NemotronH 'M' / "linear_attention" / legacy "mamba": Mamba-2        */
    RS_LAYER_ATTENTION = 3, /* Qwen3.5 "full_attention" (gated, q/k norm, partial RoPE) or
                               NemotronH '*' / "full_attention" / legacy "attention" (NoPE, GQA)   */
    RS_LAYER_MLP = 4,       /* NemotronH '-' / "mlp": the block's mixer is the MLP itself          */
    RS_LAYER_MOE = 5        /* NemotronH 'E' / "moe": the block's mixer is a mixture of experts    */
} rs_layer_kind;

typedef enum rs_activation {
    RS_ACT_SILU = 1, /* hidden_act "silu"/"swish": Qwen3.5 SwiGLU down(silu(gate x) * (up x))   */
    RS_ACT_RELU2 = 2 /* mlp_hidden_act "relu2": NemotronH down(relu(up x)^2), no gate            */
} rs_activation;

/* Attention parameters (used by RS_LAYER_ATTENTION layers of either family). */
typedef struct rs_attn_config {
    int n_heads;              /* num_attention_heads                                             */
    int n_kv_heads;           /* num_key_value_heads (GQA: query head h uses kv head h/(H/Hkv))  */
    int head_dim;             /* head_dim (NemotronH: else attention_head_dim, else 128;
                                 Qwen3.5: else hidden/heads)                                     */
    int output_gate;          /* Qwen3.5: 1 (q_proj yields per head [q(hd) | gate(hd)], output
                                 multiplied by sigmoid(gate)); NemotronH: 0                      */
    int qk_norm;              /* Qwen3.5: 1 (q_norm/k_norm RMSNorm(1+w) over head_dim); NemotronH: 0 */
    int use_rope;             /* Qwen3.5: 1; NemotronH: 0 (NoPE)                                 */
    double rope_theta;        /* rope_parameters.rope_theta (else top-level rope_theta, else 1e4) */
    double partial_rotary_factor; /* rope_parameters.partial_rotary_factor (else top-level, else 0.25) */
    int rotary_dim;           /* int(head_dim * partial_rotary_factor): RoPE (rotate_half) acts on
                                 dims [0, rotary_dim) of each head, the rest pass through        */
    /* scaling of scores: head_dim^-0.5 in both families */
} rs_attn_config;

/* Gated DeltaNet (Qwen3.5 linear_attention). */
typedef struct rs_gdn_config {
    int n_k_heads;   /* linear_num_key_heads (Hk)                                              */
    int n_v_heads;   /* linear_num_value_heads (Hv, multiple of Hk; value head hv uses key head
                        hv / (Hv/Hk), i.e. repeat_interleave)                                   */
    int k_head_dim;  /* linear_key_head_dim (dk)                                               */
    int v_head_dim;  /* linear_value_head_dim (dv)                                             */
    int conv_kernel; /* linear_conv_kernel_dim (K, default 4), depthwise causal conv, no bias   */
    int key_dim;     /* Hk*dk                                                                   */
    int value_dim;   /* Hv*dv                                                                   */
    int conv_dim;    /* 2*key_dim + value_dim: channels of in_proj_qkv and of the conv          */
    /* fixed by the model code (not config): l2norm eps 1e-6 on the SUM of squares; q scaled by
       dk^-0.5; gated norm eps = rms_eps */
} rs_gdn_config;

/* Mamba-2 (NemotronH 'M'). */
typedef struct rs_mamba2_config {
    int n_heads;        /* mamba_num_heads (H)                                                 */
    int head_dim;       /* mamba_head_dim (P)                                                  */
    int n_groups;       /* n_groups | mamba_n_groups (G); head h uses group h / (H/G)          */
    int d_state;        /* ssm_state_size (N)                                                  */
    int conv_kernel;    /* conv_kernel | mamba_d_conv (K, default 4)                           */
    int d_inner;        /* H*P (NOT expand*hidden)                                             */
    int conv_dim;       /* d_inner + 2*G*N: channels of xBC and of the conv                   */
    int in_proj_dim;    /* d_inner + conv_dim + H: rows of in_proj, split z | xBC | dt         */
    int use_conv_bias;  /* use_conv_bias | mamba_conv_bias (default 1)                         */
    int chunk_size;     /* chunk_size | mamba_chunk_size (irrelevant to the sequential forward) */
    double time_step_min;    /* time_step_min | mamba_dt_min (1e-3): HF torch path clamps dt to it
                                after softplus; mamba_ssm/vLLM kernels do not (forward option)  */
    double time_step_max;    /* time_step_max | mamba_dt_max (0.1): init only                  */
    double time_step_floor;  /* time_step_floor | mamba_dt_init_floor (1e-4): init only        */
    double time_step_limit[2]; /* time_step_limit | mamba_dt_limit (0, +inf): kernels' dt clamp */
    /* fixed by the model code: activation silu; gated norm = Zamba2RMSNormGated over groups of
       d_inner/G, gate before norm, eps = rms_eps; A = -exp(A_log); dt = softplus(dt + dt_bias) */
} rs_mamba2_config;

/* How a MoE router turns its fp32 logits into the experts of a token and their weights. Ties are
 * broken toward the lower index (group or expert). */
typedef enum rs_router_kind {
    RS_ROUTER_SOFTMAX = 1, /* Qwen3.5-MoE: p = softmax(logits) over all experts; the top_k largest p,
                              weights p_i / sum of the kept p (always renormalised)                  */
    RS_ROUTER_SIGMOID_GROUPED = 2 /* NemotronH (DeepSeek-V3 "noaux_tc"): s = sigmoid(logits); choice
                              c = s + e_score_correction_bias (selection only); group score = sum of
                              the group's two largest c; keep the topk_group best groups; the top_k
                              largest c among their experts; weights s_i [/ (sum + 1e-20) when
                              norm_topk_prob] x routed_scaling_factor                              */
} rs_router_kind;

/* Mixture-of-experts FFN (NemotronH 'E' mixers; the FFN of every Qwen3.5-MoE layer). Every token
 * runs the shared expert on the block input and its top_k routed experts on the block input or,
 * with a latent, on fc1_latent_proj(input), whose weighted sum goes back through fc2_latent_proj. */
typedef struct rs_moe_config {
    int n_experts;            /* Qwen: num_experts; NemotronH: n_routed_experts (num_local_experts) */
    int top_k;                /* num_experts_per_tok, 1..n_experts                                */
    int intermediate;         /* moe_intermediate_size: width of one routed expert                */
    int shared_intermediate;  /* Qwen: shared_expert_intermediate_size; NemotronH:
                                 moe_shared_expert_intermediate_size (one shared expert, as
                                 transformers builds it whatever n_shared_experts says)          */
    int latent;               /* NemotronH moe_latent_size; 0: no latent projection               */
    int expert_in;            /* width the routed experts act on: latent, else hidden             */
    rs_router_kind router;
    int n_group, topk_group;  /* NemotronH n_group, topk_group (Qwen: 1, 1)                        */
    int norm_topk_prob;       /* NemotronH norm_topk_prob; Qwen: always 1                         */
    float routed_scaling_factor; /* NemotronH (rounded to float as torch does); Qwen: 1           */
    int shared_gate;          /* Qwen: 1, the shared expert's output times
                                 sigmoid(shared_expert_gate x); NemotronH: 0                      */
    rs_activation activation; /* Qwen: SwiGLU experts (RS_ACT_SILU); NemotronH: relu2            */
} rs_moe_config;

/* Most routed experts a config may declare (published: 512), and most per token (published: 22). */
#define RS_MOE_MAX_EXPERTS 4096
#define RS_MOE_MAX_TOP_K 64

typedef struct rs_mlp_config {
    int intermediate;         /* intermediate_size                                             */
    rs_activation activation; /* Qwen3.5 hidden_act (silu, gated); NemotronH mlp_hidden_act (relu2) */
} rs_mlp_config;

typedef struct rs_model_config {
    rs_model_family family;
    char model_type[32];      /* config.json "model_type" verbatim ("qwen3_5_text", "qwen3_5", "nemotron_h") */
    int n_layers;             /* Qwen3.5: num_hidden_layers; NemotronH: length of the pattern   */
    rs_layer_kind layer_kind[RS_MODEL_MAX_LAYERS]; /* [n_layers] mixer of each layer            */
    int layer_has_mlp;        /* 1 for Qwen3.5 (every decoder layer = mixer + MLP), 0 for NemotronH */
    int mlp_is_moe;           /* Qwen3.5-MoE: 1, every layer's MLP is the MoE block (cfg.moe)     */
    int is_moe;               /* 1 when any layer routes tokens to experts (cfg.moe is set)       */
    int hidden;               /* hidden_size (d)                                                */
    int vocab;                /* vocab_size (V)                                                 */
    float rms_eps;            /* Qwen3.5 rms_norm_eps (1e-6); NemotronH layer_norm_epsilon (1e-5;
                                 HF 5.17 ignores a stray "rms_norm_eps" key). Rounded to float as torch
                                 does when adding a Python scalar to an fp32 tensor. Used by every
                                 RMSNorm of the model, the gated ones included.                 */
    int tie_word_embeddings;  /* lm_head == embeddings (qwen3_5: top-level key if present, else
                                 text_config's; also implied when lm_head.weight is absent)     */
    rs_attn_config attn;
    rs_gdn_config gdn;        /* zero unless family == QWEN35                                   */
    rs_mamba2_config mamba;   /* zero unless family == NEMOTRONH                                */
    rs_mlp_config mlp;
    rs_moe_config moe;        /* zero unless is_moe                                               */
    rs_tokenizer_kind tokenizer;
    int n_gdn, n_mamba, n_attn, n_mlp; /* layer counts per kind                                 */
    int n_moe;                /* layers with a MoE FFN (NemotronH 'E' blocks; every Qwen3.5-MoE layer) */
} rs_model_config;

/* Per-layer views into the fp32 slab. Pointers of parts a layer does not have are NULL.
 * d = hidden, shapes [rows, cols] row-major as in the checkpoint. */
typedef struct rs_layer_weights {
    rs_layer_kind kind;
    const float *norm;      /* [d] Qwen3.5 input_layernorm.weight (1+w); NemotronH norm.weight (w)  */
    const float *post_norm; /* [d] Qwen3.5 post_attention_layernorm.weight (1+w); NULL for NemotronH */

    struct { /* RS_LAYER_GDN: linear_attn.* (Qwen3.5) */
        const float *in_qkv;  /* in_proj_qkv.weight [2*Hk*dk + Hv*dv, d], rows q | k | v head-major */
        const float *in_z;    /* in_proj_z.weight   [Hv*dv, d]                                    */
        const float *in_b;    /* in_proj_b.weight   [Hv, d]   beta = sigmoid(b)                   */
        const float *in_a;    /* in_proj_a.weight   [Hv, d]   g = -exp(A_log)*softplus(a+dt_bias) */
        const float *conv_w;  /* conv1d.weight      [conv_dim, K] (HF [conv_dim, 1, K]), no bias   */
        const float *dt_bias; /* dt_bias            [Hv]                                          */
        const float *A_log;   /* A_log              [Hv]                                          */
        const float *norm;    /* norm.weight        [dv]  gated RMSNorm, plain w, norm then *silu(z) */
        const float *out;     /* out_proj.weight    [d, Hv*dv]                                    */
    } gdn;

    struct { /* RS_LAYER_MAMBA2: mixer.* (NemotronH) */
        const float *in_proj; /* in_proj.weight [d_inner + conv_dim + H, d]: rows z | xBC | dt       */
        const float *conv_w;  /* conv1d.weight  [conv_dim, K] (HF [conv_dim, 1, K])                 */
        const float *conv_b;  /* conv1d.bias    [conv_dim]; NULL when use_conv_bias == 0            */
        const float *dt_bias; /* dt_bias        [H]                                                 */
        const float *A_log;   /* A_log          [H]                                                 */
        const float *D;       /* D              [H]                                                 */
        const float *norm;    /* norm.weight    [d_inner] gated RMSNorm per group, silu(z) before norm */
        const float *out;     /* out_proj.weight [d, d_inner]                                       */
    } mamba;

    struct { /* RS_LAYER_ATTENTION: Qwen3.5 self_attn.*, NemotronH mixer.* */
        const float *q;      /* q_proj.weight [H*hd*(1+output_gate), d]; Qwen3.5 rows per head h:
                                [h*2*hd, h*2*hd+hd) query, [h*2*hd+hd, (h+1)*2*hd) gate          */
        const float *k;      /* k_proj.weight [Hkv*hd, d]                                         */
        const float *v;      /* v_proj.weight [Hkv*hd, d]                                         */
        const float *o;      /* o_proj.weight [d, H*hd]                                           */
        const float *q_norm; /* q_norm.weight [hd] (1+w); NULL for NemotronH                      */
        const float *k_norm; /* k_norm.weight [hd] (1+w); NULL for NemotronH                      */
    } attn;

    struct { /* MoE FFN: NemotronH mixer.* of RS_LAYER_MOE blocks; Qwen3.5-MoE mlp.* of every layer.
                din = moe.expert_in, I = moe.intermediate, Is = moe.shared_intermediate, E experts.
                Per-expert views are arrays of E pointers into the slab (owned by rs_model_weights).
                A checkpoint may store the experts one tensor each (the hub layout:
                experts.{e}.gate_proj / up_proj / down_proj.weight) or packed (transformers' in-memory
                layout: Qwen experts.gate_up_proj [E, 2I, d] with gate rows first, experts.down_proj
                [E, d, I]; NemotronH experts.up_proj [E, I, din], experts.down_proj [E, din, I]). */
        const float *router;        /* gate.weight [E, d]                                        */
        const float *router_bias;   /* gate.e_score_correction_bias [E] (NemotronH); NULL for Qwen */
        const float *latent_in;     /* fc1_latent_proj.weight [latent, d]; NULL without latent   */
        const float *latent_out;    /* fc2_latent_proj.weight [d, latent]                        */
        const float *const *gate;   /* [E] -> gate_proj [I, din] (Qwen); NULL for NemotronH      */
        const float *const *up;     /* [E] -> up_proj [I, din]                                   */
        const float *const *down;   /* [E] -> down_proj [din, I]                                 */
        const float *shared_gate;   /* Qwen shared_expert.gate_proj [Is, d]; NULL for NemotronH  */
        const float *shared_up;     /* Qwen shared_expert. / NemotronH shared_experts.up_proj [Is, d] */
        const float *shared_down;   /* ... down_proj [d, Is]                                     */
        const float *shared_scale;  /* Qwen shared_expert_gate.weight [1, d]; NULL for NemotronH */
    } moe;

    struct { /* Qwen3.5: mlp.* of every layer; NemotronH: mixer.* of RS_LAYER_MLP blocks */
        const float *gate; /* gate_proj.weight [I, d]; NULL for NemotronH (relu2 has no gate) */
        const float *up;   /* up_proj.weight   [I, d]                                         */
        const float *down; /* down_proj.weight [d, I]                                         */
    } mlp;
} rs_layer_weights;

typedef struct rs_model_weights {
    const float *embed;      /* [V, d] Qwen3.5 embed_tokens.weight; NemotronH embeddings.weight
                                (hub spelling embedding.weight accepted)                        */
    const float *final_norm; /* [d] Qwen3.5 norm.weight (1+w); NemotronH norm_f.weight (w)       */
    const float *lm_head;    /* [V, d] lm_head.weight, or == embed when tied                     */
    rs_layer_weights layers[RS_MODEL_MAX_LAYERS]; /* [n_layers] */
    const float **expert_views; /* the per-expert pointer arrays of the MoE layers (moe.gate / up /
                                   down point into it); NULL for dense models; owned            */
    float *slab;             /* the one fp32 allocation all views point into                    */
    size_t slab_floats;      /* its length in floats                                            */
} rs_model_weights;

struct rs_st_set; /* rs_safetensors.h: the open (mmapped) checkpoint */

/* A GEMM weight matrix a model keeps off the host (rs_model_init_random_device): its rs_model view is a
 * reserved address that is never read on the host; the GPU scorer makes the values on the device and
 * keeps them in `fmt` (NVFP4 / FP8 as stored, quantized the way rs_model_init_random does; fp32 when
 * dense). */
typedef struct rs_model_matrix {
    const float *view;   /* the view the forward names the matrix by (a key, not memory)          */
    int64_t rows, cols;  /* [out, in]                                                             */
    rs_wformat fmt;      /* RS_WFMT_DENSE (fp32), RS_WFMT_NVFP4 or RS_WFMT_FP8 (per tensor)       */
    uint64_t key;        /* its stream of random values (rs_random_weights.h rs_rw_key(seed, t))  */
    float sd;            /* element = sd * rs_rw_normal(key, i), i = row * cols + col             */
} rs_model_matrix;

typedef struct rs_model {
    rs_model_config cfg;
    rs_model_weights w;
    rs_quant_config quant;   /* hf_quant_config.json / config.json quantization_config (present = 0:
                                none); quantized tensors are decoded to fp32 into the slab          */
    int n_weights_fmt[4];    /* weight matrices loaded per stored format (rs_wformat index)       */
    int random_weights;      /* 1: made by rs_model_init_random (no checkpoint; st is NULL)        */
    uint64_t random_seed;    /* its seed                                                          */
    struct rs_st_set *st;    /* the checkpoint, still mapped (raw bytes for diagnostics/tests); owned */
    char prefix[64];         /* weight-name prefix found: "model.language_model.", "model.", "backbone." */
    int n_tensors_used;      /* checkpoint tensors converted into the slab                      */
    int weights_on_device;   /* 1: the GEMM matrices are dev_mats, made and kept on the GPU only
                                (rs_model_init_random_device); the CPU forward refuses the model   */
    rs_model_matrix *dev_mats; /* [n_dev_mats] sorted by view; owned                              */
    int n_dev_mats;
    void *dev_reserve;       /* the address range the views of dev_mats point into (PROT_NONE)   */
    size_t dev_reserve_bytes;
    int n_tensors_ignored;   /* checkpoint tensors not used (vision, mtp.*, ...)                 */
} rs_model;

/*! rs_model_load() : read `dir`/config.json and `dir`/model.safetensors (or the shards listed by
 *  `dir`/model.safetensors.index.json), validate every file completely, check every tensor the config
 *  implies is present with the expected shape, and convert them to fp32 into one slab. A weight
 *  matrix stored quantized (NVFP4: U8 weight + F8_E4M3 weight_scale + F32 weight_scale_2; FP8: F8_E4M3
 *  weight + F32 weight_scale, per tensor or per block, also spelled weight_scale_inv) is checked
 *  against its stored shapes and the quantization description (rs_quant_config.h), then decoded with
 *  rs_wdecode.h (each value the exact product rounded once). input_scale tensors (W4A4 activation
 *  scales) are not used: activations stay fp32 (W4A16 emulation).
 *  On failure *m is left zeroed (nothing to free) and rs_last_error() names what is wrong. */
rs_status rs_model_load(const char *dir, rs_model *m);

/*! rs_model_init_random() : a model of `dir`/config.json's exact shapes with random weights of a documented
 *  distribution (eval/model/rs_model_random.c: unit-variance linear maps, identity norms, Mamba / GDN
 *  decay parameters in their usual ranges), the same for a given seed on every machine and thread count;
 *  with a quantization description in `dir` the weights it declares quantized are quantized and decoded as
 *  a checkpoint of that format would hold them. No safetensors file is read. On failure *m is zeroed. */
rs_status rs_model_init_random(const char *dir, uint64_t seed, rs_model *m);

/*! rs_model_init_random_device() : rs_model_init_random's model for the GPU scorer when its fp32 weights
 *  would not fit the host: the embeddings, norms, convolutions and SSM parameters are made on the host as
 *  rs_model_init_random makes them; every GEMM matrix (projections, experts, routers, an untied lm_head) is
 *  only described (dev_mats: shape, format, random stream) and made on the GPU by the scorer, quantized
 *  as the description says (NVFP4; FP8 per tensor; FP8 blocks are refused). Its values are
 *  rs_model_init_random's up to the last bit of a normal deviate (host and device libm), so a quantized
 *  code may differ where a value sits on a rounding boundary. On failure *m is zeroed. */
rs_status rs_model_init_random_device(const char *dir, uint64_t seed, rs_model *m);

/*! rs_model_init_shapes() : rs_model_init_random_device's model with nothing made: every view is a reserved
 *  address (w.slab NULL, w.slab_floats the host tensors' floats), for memory plans from the config and
 *  the quantization description alone (rs_scorer_cuda_plan). No scorer runs it. On failure *m is zeroed. */
rs_status rs_model_init_shapes(const char *dir, rs_model *m);

/* What an evaluation of a model needs in memory on the CPU (rs_model_plan_cpu), in bytes. */
typedef struct rs_model_plan {
    double weights;      /* the fp32 slab (quantized checkpoints are decoded into it)           */
    double kv_per_run;   /* fp32 KV caches of one run at `tokens` positions                     */
    double state_per_run; /* fp32 SSM states and conv states of one run (a conventional fp32 run;
                            replay policies add their rings and checkpoints)                    */
    double logits;       /* one chunk's logits of every run                                    */
    double total;        /* weights + runs x (KV + state) + logits                              */
    double have;         /* the machine's physical memory (0: unknown)                         */
} rs_model_plan;

/*! rs_model_plan_cpu() : the memory of `runs` lockstep runs (the reference included) over `tokens`
 *  positions in chunks of `chunk`, from the config alone (no weight is read): what rs_model_load and
 *  rs_runner_create would allocate for their largest buffers (a NemotronH checkpoint storing its own
 *  lm_head despite tie_word_embeddings adds [V, d] floats). @return RS_OK, RS_E_INVAL, RS_E_NOMEM. */
rs_status rs_model_plan_cpu(const rs_model_config *c, size_t runs, size_t tokens, size_t chunk, rs_model_plan *p);

/*! rs_model_free() : release the slab and the mappings; *m becomes zeroed. NULL-safe. */
void rs_model_free(rs_model *m);

/*! rs_layer_kind_name() : "gdn", "mamba2", "attention", "mlp" (or "?"). */
const char *rs_layer_kind_name(rs_layer_kind k);

/*! rs_model_family_name() : "qwen3_5", "nemotron_h" (or "?"). */
const char *rs_model_family_name(rs_model_family f);

#ifdef __cplusplus
}
#endif
#endif /* RS_MODEL_H */
