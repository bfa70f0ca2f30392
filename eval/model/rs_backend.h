/* rs_backend.h — the compute ops of the model forward, behind a vtable.
 *
 * rs_forward.c never does arithmetic on whole chunks itself: it calls these ops, so a CUDA
 * backend can replace the CPU one (rs_backend_cpu.c: CBLAS GEMMs through OpenBLAS, OpenMP
 * threads over rows / channels / heads) without touching the forward. The SSM recurrence is
 * not an op: it runs in the lib/engine/ state engine (rs_head.h), one object per (run, layer, head).
 *
 * Conventions: fp32, row-major; a matrix argument is (pointer, row stride "ld" in floats);
 * weights are torch nn.Linear layout W[N][K] (out x in). In this version every pointer is
 * host memory (the CPU backend); a device backend will add buffer ops (alloc / upload /
 * download) and keep the same op signatures. All ops return RS_OK or an error with a message
 * (rs_last_error); none allocates.
 *
 * Legend: M rows (= runs x chunk positions), N/K output/input features, T chunk positions.
 */
#ifndef RS_BACKEND_H
#define RS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "model/rs_layers.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rs_backend rs_backend;

/* Task of parallel_for: fn(ctx, i) for i in [0, n); tasks must be independent. Returns a
 * status; the first failing task's status (and its message) is returned by parallel_for. */
typedef rs_status (*rs_task_fn)(void *ctx, size_t i);

/* Causal GQA attention of T chunk queries over a KV cache (see op attention). */
typedef struct rs_attn_args {
    size_t T;             /* queries: chunk positions n_past .. n_past + T - 1 */
    size_t n_past;        /* cache positions before the chunk (the chunk's keys are already in) */
    size_t H, Hkv, hd;    /* query heads, KV heads (H % Hkv == 0), head dim */
    const float *Q;       /* query of (t, h) at Q + t * ldq + h * q_hstride, [hd] */
    size_t ldq, q_hstride;
    const float *Kc;      /* [Hkv][cap][hd] keys (row p = position p) */
    const float *Vc;      /* [Hkv][cap][hd] values */
    size_t cap;           /* cache capacity (positions) */
    float scale;          /* softmax scale (head_dim^-0.5) */
    float *O;             /* out of (t, h) at O + t * ldo + h * hd, [hd] */
    size_t ldo;
    float *scratch;       /* [n_threads][max(scratch_rows, 1)][cap] score rows (caller-owned) */
    size_t scratch_rows;  /* score rows per thread in scratch; 0 counts as 1. More rows let a
                             task share each key/value tile among several query rows (the
                             queries of one KV head at several chunk positions); the result is
                             bit-identical for every value (see cpu_attention_). The runner
                             passes RS_ATTN_BLOCK_ROWS. */
} rs_attn_args;

/* Score rows per thread that the runner allocates for attention (rs_attn_args.scratch_rows):
 * 16 rows x cap floats per thread, 8 MiB per thread at cap = 131072. */
#define RS_ATTN_BLOCK_ROWS 16

typedef struct rs_backend_ops {
    const char *name;
    void (*destroy)(rs_backend *be);

    /* Y[M][N] = beta * Y + X[M][K] W[N][K]^T   (beta 0: overwrite, 1: accumulate, e.g. the
     * residual add of an output projection). */
    rs_status (*linear)(rs_backend *be, size_t M, size_t N, size_t K, const float *X, size_t ldx,
                        const float *W, float beta, float *Y, size_t ldy);

    /* Y[t] = E[tokens[t]] for t < T; E[vocab][d]. Fails on a token outside [0, vocab). */
    rs_status (*embed)(rs_backend *be, const int32_t *tokens, size_t T, const float *E,
                       size_t vocab, size_t d, float *Y, size_t ldy);

    /* Row-wise RMSNorm of M rows of n (rs_rmsnorm). Y may equal X (same ld). */
    rs_status (*rmsnorm)(rs_backend *be, size_t M, size_t n, const float *X, size_t ldx,
                         const float *w, float eps, rs_norm_weight kind, float *Y, size_t ldy);

    /* Row-wise gated RMSNorm of M rows of n with gates Z (rs_rmsnorm_gated). */
    rs_status (*rmsnorm_gated)(rs_backend *be, size_t M, size_t n, size_t gs, const float *X,
                               size_t ldx, const float *Z, size_t ldz, const float *w,
                               size_t w_len, float eps, rs_gate_order order, float *Y,
                               size_t ldy);

    /* Causal depthwise conv1d of T steps x C channels with carried state[C][K-1]
     * (rs_conv1d_causal); bias may be NULL; silu: apply SiLU. Y must not alias X. */
    rs_status (*conv1d)(rs_backend *be, size_t T, size_t C, size_t K, const float *X,
                        size_t ldx, float *state, const float *w, const float *bias, int silu,
                        float *Y, size_t ldy);

    /* Causal GQA softmax attention (rs_attn_args); query head h reads KV head h / (H/Hkv);
     * query t sees cache positions 0 .. n_past + t. */
    rs_status (*attention)(rs_backend *be, const rs_attn_args *a);

    /* SwiGLU: G[M][n] <- silu(G) * U   (Qwen3.5 MLP). */
    rs_status (*swiglu)(rs_backend *be, size_t M, size_t n, float *G, size_t ldg, const float *U,
                        size_t ldu);

    /* relu^2 in place: X <- max(X, 0)^2   (NemotronH MLP). */
    rs_status (*relu2)(rs_backend *be, size_t M, size_t n, float *X, size_t ldx);

    /* Run n independent tasks (the per-head SSM steps, per-row gate math). */
    rs_status (*parallel_for)(rs_backend *be, size_t n, rs_task_fn fn, void *ctx);
} rs_backend_ops;

struct rs_backend {
    const rs_backend_ops *ops;
    int n_threads; /* threads the backend uses (scratch that is per thread is sized by it) */
    void *impl;
};

/*! rs_backend_cpu_create() : the CPU backend (OpenBLAS sgemm, OpenMP). n_threads <= 0: the
 *  OpenMP default. @return RS_OK, RS_E_NOMEM. */
rs_status rs_backend_cpu_create(int n_threads, rs_backend **out);

/*! rs_backend_destroy() : release; accepts NULL. */
void rs_backend_destroy(rs_backend *be);

#ifdef __cplusplus
}
#endif
#endif /* RS_BACKEND_H */
