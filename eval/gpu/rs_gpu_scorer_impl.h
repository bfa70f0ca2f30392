/* rs_gpu_scorer_impl.h — the GPU scorer's layout, private to eval/gpu/:
 *   rs_scorer_cuda.cu   create, the rs_scorer ops
 *   rs_gpu_plan.cu      the memory plan, allocation, weight upload
 *   rs_gpu_forward.cu   the forward of one chunk for every run (cuBLAS + dense/rs_dense_ops.h + scan)
 *   rs_gpu_weights.cu   the weights' GEMM method and preparation (rs_gpu_weights.h) and rs_gpu_linear
 *   rs_gpu_moe.cu       the mixture-of-experts FFN of a chunk (routing on the device, experts grouped
 *                       on the host, one GEMM per expert over its gathered rows)
 * The GEMMs and dense ops themselves are kernels/dense/ (rs_dense_gemm.h, rs_dense_ops.h).
 *
 * Runs: g = 0 is the fp32 reference, g = r + 1 policy run r (RS = R + 1 runs per stream); S
 * streams (books batched): run g of stream s is row group s * RS + g of RR = S * RS on the
 * device (conv states, KV caches, scan runs). A forward covers a batch of consecutive streams at
 * one position (G = streams * RS row groups); rows of its stacked buffers: row group j, chunk
 * position t -> row j * n + t (as the CPU forward).
 */
#ifndef RS_GPU_SCORER_IMPL_H
#define RS_GPU_SCORER_IMPL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "replayssm/cuda/rs_cuda_scan.h"
#include "kleval/rs_scorer_impl.h"
#include "replayssm/eval/rs_gpu_info.h"
#include "dense/rs_dense_ops.h"
#include "rs_gpu_weights.h"

/* stages of the cost breakdown (rs_scorer_stats) */
enum { GS_GEMM = 0, GS_ATTN, GS_REC, GS_OTHER, GS_SCORE, GS_COPY, GS_MOE, GS_N };
#define RS_GPU_MAX_MARKS 4096 /* timing events per step (a few per layer) */

typedef struct gpu_layer {
    int kind;           /* rs_layer_kind */
    int ssm;            /* ordinal among the layers of its SSM kind (scan layer), -1 otherwise */
    int attn;           /* ordinal among the attention layers, -1 otherwise */
    float *conv_state;  /* SSM: [RR][conv_dim][K-1] (every stream's runs) */
} gpu_layer;

/* the MoE FFN's scratch (rs_gpu_moe.cu), M = RR * C rows, E experts, k per row, din expert input width,
 * I expert width; all NULL for dense models */
typedef struct gpu_moe {
    float *logits;       /* [M][E] router logits                                                */
    float *route;        /* [M][RS_MOE_ROUTE_SCRATCH(E, n_group)] the router's scratch           */
    int32_t *idx;        /* [M][k] experts of each row, ascending                                */
    float *w;            /* [M][k] their weights                                                 */
    int32_t *order;      /* [M * k] (row * k + slot) grouped by expert (uploaded from h_order)   */
    float *lat;          /* [M][din] fc1_latent_proj output (NemotronH with a latent)            */
    float *xe, *ye;      /* [Mx][din] gathered input rows, their expert's output rows            */
    float *h, *g;        /* [Mx][I] up (activation) and gate projections of the gathered rows
                            (Mx = M * k when grouped: every entry at its place in order; else M,
                            one expert's rows at a time)                                          */
    float *acc;          /* [M][din] the weighted sum of the routed experts                      */
    float *out, *sh;     /* [M][d] routed output in the hidden width, shared expert output       */
    float *sg;           /* [M] the shared expert's gate logit (Qwen)                            */
    int32_t *h_idx;      /* pinned [M][k]: idx on the host, grouped there                        */
    int32_t *h_order;    /* pinned [M * k]                                                       */
    int32_t *count;      /* host [E + 1]: expert e's entries are order[count[e] .. count[e+1])   */
    /* the grouped expert GEMMs (rs_gpu_moe.cu "Grouped experts"); NULL / 0 in the per-expert loop */
    int grouped;         /* 1: grouped GEMMs; 0: one expert at a time (twin, RS_GPU_MOE=loop, or
                            experts that run another GEMM method than SGEMM)                     */
    int32_t *rowpos;     /* [M * k] row r's entries' places in order, experts ascending          */
    int32_t *h_rowpos;   /* pinned [M * k]                                                       */
    int32_t *h_cur;      /* host [M]                                                             */
    const float **ptrs;  /* device [3 kinds][3][E]: the GEMMs' W, X and Y pointers               */
    const float **h_ptrs;/* pinned, the same                                                     */
    struct rs_gpu_devw_job *jobs, *h_jobs; /* device / pinned [3 kinds][E] decodes               */
    cublasOperation_t *h_ops; /* host [2][E]: transa (T), transb (N) of each group (cuBLAS arrays)  */
    int *h_dims;         /* host [6][E]: m, n, k, lda, ldb, ldc                                  */
    float *h_ab;         /* host [2][E]: alpha 1, beta 0                                         */
    int *h_gs;           /* host [E]: group sizes, all 1                                         */
    int32_t *routes;     /* host [n_layers][M][k]: every MoE layer's choices of the last step    */
    int64_t *diff;       /* host [S][R + 1][n_layers][2]: since each stream's reset, positions whose
                            experts differ from the reference's, and experts not the reference's  */
} gpu_moe;

typedef struct gpu_impl {
    rs_gpu_info info;
    cudaStream_t s;
    cublasHandle_t blas;
    int RS;               /* runs per stream: the reference + R */
    size_t S;             /* streams */
    int RR;               /* row groups on the device: S * RS */
    size_t C;             /* chunk capacity */
    size_t cap;           /* KV capacity (positions) */
    size_t *spos;         /* [S] positions done per stream */
    size_t last_n;        /* positions of the last step of stream 0 (0 after reset) */
    /* the batch rs_gpu_forward_chunk forwards: streams b_s0 .. b_s0 + b_ns - 1 at position b_pos,
     * G = b_ns * RS row groups from row group b_r0 = b_s0 * RS */
    size_t b_s0, b_ns, b_pos, b_r0;
    int G;

    /* weights: the host slab uploaded once; a host view p maps to d_slab + (p - slab) */
    float *d_slab;
    const float *h_slab;

    gpu_layer layers[256];
    rs_cuda_scan *scan_gdn, *scan_mamba;
    float *kv;            /* [n_attn][2][RR][Hkv][cap][hd] */
    size_t kv_layer;      /* floats of one cache (K or V) of one layer, all runs of all streams */
    float *inv_freq;      /* [rot/2] */

    /* chunk scratch, M = RR * C rows (sized as rs_runner_ws.c): room for every stream at once */
    float *x, *xn, *proj, *proj2, *conv, *small, *ssm_v, *ssm_o, *logits;
    size_t P1, P2, cw, hmax, so, sv;
    int32_t *d_tok, *d_tgt;  /* [S][C] each */
    int32_t *h_tok;          /* pinned [2][S][C]: tokens | targets */

    /* scoring results per stream [R][C] (+ reference [C]) on the device, pinned host copies */
    double *d_res, *h_res;   /* [S][3R + 1][C]: kl | nll | dp per run, nll_ref */
    uint8_t *d_flags, *h_flags; /* [S][R + 1][C]: [R][C] agree, [C] ref_bad */
    int32_t *d_top, *h_top;  /* [S][C] */
    void *score_work;        /* one stream's scoring scratch (streams are scored one by one) */
    rs_scorer_stream *one;   /* [S] inputs of the single-stream step */

    /* timing */
    cudaEvent_t ev[RS_GPU_MAX_MARKS];
    int ev_stage[RS_GPU_MAX_MARKS];
    int n_marks;
    double stage_s[GS_N];

    gpu_moe moe;            /* MoE models: the routed FFN's scratch (rs_gpu_moe.cu) */
    int quiet_marks;        /* > 0: rs_gpu_linear sets no timing mark (the MoE expert loop marks once) */
    int plan_only;          /* rs_scorer_cuda_plan: plan, allocate nothing, refuse nothing for size */
    rs_gpu_gemm_state gemm; /* the GEMM method, split weights and scratch (rs_gpu_weights.cu) */

    /* --compute twin (docs/evaluator.md "The twin compute mode"): the CPU evaluator's arithmetic.
     * twin_runs: the runs (0 .. RS-1 of every stream: the reference and each conventional fp32 run)
     * whose recurrence is the engine's (rsg_twin_ssm, after the scan, overwriting its outputs);
     * twin_state[kind]: their states [n_layers(kind)][S][nt][H][d_v][d_k]; h_logits: a batch's
     * logits on the host, scored there by rs_kl.c as the CPU scorer does */
    int twin;
    int nt;
    int *d_twin_runs;         /* device [nt] */
    float *twin_state[2];     /* GDN, Mamba-2 */
    size_t twin_layer[2];     /* floats of one layer's twin states (all streams) */
    int n_twin_layers[2];     /* layers of each kind */
    float *h_logits;          /* pinned [RR * C][V] (twin only) */
    double *h_lp;             /* [2][V] host log-probabilities (twin only) */

    int64_t *nf;          /* [RR][n_layers(kind)][H] host copy of the scans' marks */
    char msg[512];
    char describe[768];
    size_t device_bytes;  /* allocated */
    void *cfg_mem;
    rs_scorer_stats st;
} gpu_impl;

#define RS_GPU_W(im, p) ((im)->d_slab + ((const float *)(p) - (im)->h_slab)) /* device view */

/* rs_gpu_plan.cu: the memory plan (device bytes per consumer, the scan configurations), then the
 * allocation and the weight upload */
enum { MP_WEIGHTS = 0, MP_KV, MP_STATE, MP_ACT, MP_LOGITS, MP_N };
typedef struct rs_gpu_plan {
    size_t bytes[MP_N];
    size_t total;
    rs_cuda_scan_config scfg[2]; /* GDN, Mamba-2 */
    int has_scan[2];
    uint32_t layer_ids[2][256];
    rs_policy *pol;   /* [RR] */
    size_t *win;
    uint64_t *seed;
} rs_gpu_plan;
rs_status rs_gpu_plan_make(const rs_scorer *sc, gpu_impl *im, rs_gpu_plan *p);
rs_status rs_gpu_alloc(const rs_scorer *sc, gpu_impl *im, rs_gpu_plan *p);
void rs_gpu_plan_free(rs_gpu_plan *p);

/* rs_gpu_forward.cu: the forward of n tokens (already on the device in d_tok) for every run of
 * the batch set in im (b_s0, b_ns, b_pos, b_r0, G); logits [G * n][V] land in im->logits. */
rs_status rs_gpu_forward_chunk(const rs_scorer *sc, gpu_impl *im, size_t n);

/* rs_gpu_moe.cu: x += MoE(RMSNorm(x; nw)) for the batch's M = G * n rows of layer l (the twin of
 * eval/model/rs_moe.c); the routes land in im->moe.routes */
rs_status rs_gpu_moe_ffn(const rs_scorer *sc, gpu_impl *im, int l, const float *nw, rsg_norm_weight kind, size_t n);
/* the bytes of the MoE scratch for M rows (device: *dev, pinned + host: *host); 0 for dense models;
   grouped: sized for the grouped expert GEMMs (M * k gathered rows) */
void rs_gpu_moe_bytes(const rs_model_config *c, size_t M, int grouped, size_t *dev, size_t *host);
/* 1 when the scorer may group its expert GEMMs: not twin, RS_GPU_MOE unset or not "loop" (the choice
   is final at rs_gpu_moe_alloc, once the GEMM method of each expert matrix is known) */
int rs_gpu_moe_may_group(const gpu_impl *im);
/* floats of decode scratch the grouped expert GEMMs of a model made on the GPU need (0 when its
   experts are not quantized or the GEMMs are not grouped) */
size_t rs_gpu_moe_deq_floats(const rs_model *m, const gpu_impl *im);
rs_status rs_gpu_moe_alloc(const rs_scorer *sc, gpu_impl *im);
void rs_gpu_moe_free(gpu_impl *im);

/* a timing mark: the work queued since the previous mark counts to `stage` */
void rs_gpu_mark(gpu_impl *im, int stage);

/* rs_gpu_weights.cu: Y[M][N] = beta Y + X[M][K] W[N][K]^T by the compute mode's GEMM method
 * (rs_gpu_weights.h); W a device view of a weight matrix of the model (prepared at create) */
rs_status rs_gpu_linear(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W,
                        float beta, float *Y, size_t ldy);
/* rs_gpu_linear of one row group (an expert's gathered rows): --compute twin reproduces the CPU's GEMM of
 * these M rows alone rather than one GEMM per stream of the batch */
rs_status rs_gpu_linear_rows(gpu_impl *im, size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W,
                             float beta, float *Y, size_t ldy);

#endif /* RS_GPU_SCORER_IMPL_H */
