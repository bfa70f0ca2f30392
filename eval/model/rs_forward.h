/* rs_forward.h — teacher-forced forward of a hybrid model over one chunk of positions, for R
 * runs in lockstep (the fp32 reference and N policies on the same tokens).
 *
 * A chunk of n <= C positions is processed layer by layer for all runs at once: the residual
 * streams of the R runs are stacked into M = R * n rows, so every projection, MLP and the LM
 * head is ONE GEMM over M rows (the weights are read once per chunk, not once per run). What
 * a run carries across chunks is its rs_run: conv states, the SSM heads (lib/ state engine,
 * one rs_head per (layer, head) with the run's policy, window and seed) and KV caches. Inside
 * a chunk the SSM recurrence runs token by token through rs_head_decode; attention reads the
 * growing KV cache causally. Everything except the SSM state computes in fp32.
 *
 * Record fed to the state engine (rs_ssm.h):
 *   Mamba-2 head h (group g = h / (H/G)):  alpha = exp(dt*A), v = dt * x_h, k = B_g, q = C_g;
 *            y_h = o + D_h * x_h (D skip) and the gate happen outside the engine.
 *   GDN value head h (key head h / (Hv/Hk)): alpha = exp(g), beta = sigmoid(b), v = v_h,
 *            k = l2norm(k), q = l2norm(q) * dk^-0.5.
 *
 * Rows of a stacked buffer: run r, chunk position t -> row r * n + t.
 * The per-layer math is written out in docs/models.md.
 */
#ifndef RS_FORWARD_H
#define RS_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "model/rs_backend.h"
#include "model/rs_moe_route.h"
#include "replayssm/engine/rs_head.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/engine/rs_policy.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the Mamba-2 time step is bounded after softplus(dt + dt_bias). */
typedef enum rs_dt_mode {
    RS_DT_KERNEL = 0,   /* default: the mamba_ssm / vLLM kernels' semantics, dt_limit = (0, inf):
                           no clamp */
    RS_DT_CLAMP_MIN = 1 /* transformers' PyTorch path (torch_forward): dt = max(dt, time_step_min) */
} rs_dt_mode;

/* Everything one run carries across chunks. Arrays are indexed by model layer; entries of
 * layers of another kind are NULL. */
typedef struct rs_run {
    rs_policy policy;
    float **conv_state; /* [n_layers] -> [conv_dim][K-1] previous conv inputs (SSM layers) */
    rs_head **heads;    /* [n_layers] -> [H] heads (GDN: value heads; Mamba-2: heads) */
    float **k_cache;    /* [n_layers] -> [Hkv][cap][hd] post-norm, post-RoPE keys (attention) */
    float **v_cache;    /* [n_layers] -> [Hkv][cap][hd] values (attention) */
    rs_status status;   /* RS_OK, or RS_E_NONFINITE once an SSM head of this run produced a
                           non-finite value (its later outputs are NaN; other runs go on) */
    char message[256];  /* the first failure's message */
    int32_t nf_layer;   /* where the first non-finite SSM value appeared: layer, head and */
    int32_t nf_head;    /* the head's step (token position); -1 while the run is finite */
    int64_t nf_step;
    int64_t *moe_pos_diff;  /* [n_layers] or NULL (dense model): positions at which this run's experts
                               (MoE layers) differ from run 0's — the reference in the runner */
    int64_t *moe_slot_diff; /* [n_layers] or NULL: experts of this run's choices not in run 0's, summed */
} rs_run;

/* MoE scratch of a chunk (rs_moe.c); E experts, k per token, din expert input width, I expert width. */
typedef struct rs_moe_ws {
    float *logits;   /* [M][E] router logits                                                   */
    int32_t *idx;    /* [M][k] experts of each row, ascending                                    */
    float *w;        /* [M][k] their weights                                                     */
    float *route;    /* [M][RS_MOE_ROUTE_SCRATCH(E, n_group)] router scratch, one slot per row   */
    int32_t *order;  /* [M * k] (row * k + slot) grouped by expert, rows ascending within one    */
    int32_t *count;  /* [E + 1] start of each expert's entries in order                          */
    float *lat;      /* [M][din] latent input (fc1_latent_proj), NemotronH with a latent         */
    float *xe;       /* [M][din] the rows of one expert, gathered                                */
    float *h;        /* [M][I] expert up projection / activation                                 */
    float *g;        /* [M][I] expert gate projection (SwiGLU)                                   */
    float *ye;       /* [M][din] the expert's output rows                                        */
    float *acc;      /* [M][din] weighted sum of the routed experts                              */
    float *out;      /* [M][d] routed output back in the hidden width (fc2_latent_proj)          */
    float *sh;       /* [M][d] shared expert output                                              */
    float *sg;       /* [M] shared expert gate (Qwen)                                            */
} rs_moe_ws;

/* Scratch of a chunk (M = R * C rows at most), owned by the runner; no allocation per chunk. */
typedef struct rs_fwd_ws {
    size_t rows;         /* M capacity */
    float *x;            /* [M][d] residual stream */
    float *xn;           /* [M][d] normed input of a mixer / MLP */
    float *proj;         /* [M][P1] first projection: GDN qkv, Mamba-2 in_proj, attention q, MLP gate/up */
    float *proj2;        /* [M][P2] GDN z, attention k|v, MLP up */
    float *conv;         /* [M][conv_dim] conv output (SSM layers); attention output [M][H*hd] */
    float *small;        /* [4][M][hmax] per-head scalar planes: GDN a, b, alpha, beta;
                            Mamba-2 -, dt, alpha (row stride = the layer's head count) */
    float *ssm_v;        /* [M][d_inner] Mamba-2 v = dt * x */
    float *ssm_o;        /* [M][Hv*dv | d_inner] head outputs, then gated-normed */
    float *rope_cos;     /* [C][rot/2] */
    float *rope_sin;     /* [C][rot/2] */
    float *rope_inv;     /* [rot/2] */
    float *attn_scratch; /* [n_threads][RS_ATTN_BLOCK_ROWS][cap] */
    float *logits;       /* [M][V] */
    rs_moe_ws moe;       /* zeroed for dense models */
    size_t P1, P2, cap;  /* widths / KV capacity the buffers were sized for */
    size_t hmax;         /* per-head scalar planes: small + k * rows * hmax, k = 0..3 */
} rs_fwd_ws;

/* Widths of the chunk scratch per row (what rs_fwd_ws holds for every stacked row): the widest
 * first / second projection (P1, P2), conv or attention output (cw), per-head scalar planes (hmax),
 * Mamba-2 inputs (sv) and SSM outputs (so), and the RoPE dims (rot). One definition for the CPU
 * runner and the GPU scorer. */
typedef struct rs_fwd_widths {
    size_t P1, P2, cw, hmax, sv, so, rot;
} rs_fwd_widths;

/*! rs_fwd_widths_of() : the widths for model config c. */
rs_fwd_widths rs_fwd_widths_of(const rs_model_config *c);

/* What one chunk call needs. */
typedef struct rs_fwd_args {
    const rs_model *m;
    rs_backend *be;
    rs_run *runs;        /* [R] */
    size_t R;
    rs_fwd_ws *ws;
    size_t pos;          /* absolute position of the chunk's first token */
    size_t n;            /* chunk length, 1 <= n <= C */
    const int32_t *tokens; /* [n] */
    rs_dt_mode dt_mode;
    float *hidden;       /* NULL, or [n_layers + 1][R * n][d]: residual stream after the
                            embedding (0) and after each layer (i + 1), before the final norm */
    int32_t *routes;     /* NULL, or [n_layers][R * n][top_k]: the experts each row chose in each
                            MoE layer (ascending; rows of other layers untouched) */
} rs_fwd_args;

/*! rs_forward_chunk() : run the chunk through every layer, the final norm and the LM head;
 *  logits land in ws->logits ([R * n][V], row r * n + t). Runs whose SSM state turns
 *  non-finite are marked in rs_run.status and do not stop the others.
 *  @return RS_OK, RS_E_INVAL (token outside the vocabulary), RS_E_SHAPE (KV cache full), or
 *  an error of the backend / state engine. */
rs_status rs_forward_chunk(const rs_fwd_args *a);

#ifdef __cplusplus
}
#endif
#endif /* RS_FORWARD_H */
