/* rs_scorer_impl.h — the scorer interface's inside (the public part is replayssm/eval/rs_scorer.h):
 * what a scorer implementation fills in. The evaluator's compute engine behind one interface: forward the fp32 reference
 * and R policy runs over a chunk of teacher-forced tokens, and score every run against the
 * reference position by position (rs_kl.h's definitions). The evaluator (rs_kleval) drives a
 * scorer chunk by chunk and writes what it returns; it does not know where the work runs.
 *
 *   rs_scorer_cpu_create   the CPU engine: rs_runner (OpenBLAS GEMMs, the lib/engine state engine
 *                          per head) + rs_kl on the host — eval/kleval/rs_scorer_cpu.c
 *   rs_scorer_cuda_create  one GPU: cuBLAS GEMMs, device ops, the state engine on the device
 *                          (kernels/ rs_cuda_scan.h), scoring on the device — libreplayssm-evalcuda
 *                          (include/replayssm/eval/rs_scorer_cuda.h), built with CUDA only
 * A program picks one through rs_kleval_config.scorer (NULL: the CPU one); the CLI maps
 * `--device cuda` to rs_scorer_cuda_create when it was built with CUDA.
 *
 * Runs: index 0 .. R-1 are the policy runs of the config (the reference is internal). The
 * reference is the fp32 conventional recurrence ("fp32") on the same tokens.
 *
 * Streams (books batched): a scorer made with n_streams = S > 1 holds S independent token
 * streams, each with its own reference and R runs, positions, KV caches, states and scores
 * (stream s, run g -> row group s * (R + 1) + g on the GPU). step_streams advances any subset
 * of them by their own n positions; reset_stream puts one back to position 0 (the next book
 * takes its slot). The single-stream ops act on stream 0 (reset: on every stream), so a
 * scorer with n_streams = 0 or 1 behaves as a single-stream scorer. How streams are
 * computed is the scorer's business: the CPU one runs them one after another (one rs_runner
 * each, so every stream's numbers equal a single-stream scorer's bit for bit); the GPU one
 * forwards every maximal run of consecutive streams that share (position, n) as one batch
 * (one GEMM of M = streams x (R + 1) x n rows, one scan launch), so lockstep streams cost one
 * forward.
 */
#ifndef RS_SCORER_IMPL_H
#define RS_SCORER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/engine/rs_policy.h"
#include "model/rs_forward.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_scorer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_SCORER_MAX_STREAMS 1024 /* n_streams */


struct rs_scorer_config {
    size_t n_runs;              /* R >= 0 policy runs (0: the reference alone) */
    const rs_run_spec *runs;    /* [R] policy, window and SR seed of each run (rs_run_spec_parse) */
    size_t chunk;               /* most positions per step */
    size_t max_tokens;          /* positions a stream may reach (KV cache capacity) */
    rs_dt_mode dt_mode;         /* Mamba-2 dt bound */
    int threads;                /* CPU threads (0: the OpenMP default) */
    rs_compute_mode compute;    /* GEMM precision (the CPU scorer supports RS_COMPUTE_FP32 only) */
    int device;                 /* GPU ordinal (GPU scorers) */
    size_t n_streams;           /* S independent streams (books) held at once; 0 means 1 */
};

/* One stream's part of a multi-stream step (step_streams). */
typedef struct rs_scorer_stream {
    const int32_t *tokens;  /* [n] the stream's next tokens */
    const int32_t *targets; /* [n] the true next tokens */
    size_t n;               /* 0 .. chunk: 0 = the stream sits this step out (out not written) */
    int ref_nonfinite;      /* set by the scorer: 1 if this stream's reference went non-finite */
} rs_scorer_stream;

/* What one step returns, caller-owned arrays of n entries (run arrays: [R] pointers to [n]). */
typedef struct rs_scorer_out {
    double *nll_ref;   /* [n] -log p_ref(y) */
    int32_t *top1_ref; /* [n] argmax of the reference */
    double **kl;       /* [R][n] KL(p_ref || p_run); NaN where the run's logits are non-finite */
    double **nll;      /* [R][n] -log p_run(y); NaN likewise */
    double **dp;       /* [R][n] p_run(y) - p_ref(y); NaN likewise */
    uint8_t **agree;   /* [R][n] same top-1 (0 where non-finite) */
} rs_scorer_out;

/* Where a run first went non-finite in its SSM state (-1 each while finite). */
typedef struct rs_scorer_nonfinite {
    int32_t layer, head;
    int64_t step;
} rs_scorer_nonfinite;



typedef struct rs_scorer_ops {
    const char *name; /* "cpu", "cuda" */
    /* back to position 0: states zeroed, caches emptied, non-finite marks cleared */
    rs_status (*reset)(rs_scorer *sc);
    /* forward tokens[n] (1 <= n <= chunk), score against targets[n] (the true next tokens).
     * RS_E_NONFINITE: the reference went non-finite (the message names the position); a policy
     * run going non-finite is not an error (NaN entries, see run_nonfinite). */
    rs_status (*step)(rs_scorer *sc, const int32_t *tokens, const int32_t *targets, size_t n,
                      const rs_scorer_out *out);
    /* where run r (0 .. R-1) first went non-finite in its SSM state; *msg (may be NULL) gets a
     * message naming layer, head, policy and step ("" while finite). */
    rs_status (*run_nonfinite)(const rs_scorer *sc, size_t r, rs_scorer_nonfinite *nf, const char **msg);
    /* one line describing the device ("cpu: 2 threads", "cuda: NVIDIA H200, driver 13.0, ...") */
    const char *(*describe)(const rs_scorer *sc);
    /* cost counters so far */
    void (*stats)(const rs_scorer *sc, rs_scorer_stats *out);
    /* the fp32 logits of the last step's n positions of run r (-1: the reference) into out[n][V]
     * (host memory; for parity tests and tools, not the evaluation loop; stream 0's with
     * n_streams > 1 on the CPU, RS_E_UNSUPPORTED there on the GPU) */
    rs_status (*logits)(const rs_scorer *sc, long r, float *out);
    void (*destroy)(rs_scorer *sc);
    /* ---- streams (n_streams > 1; the ops above act on stream 0, reset on all) ---- */
    /* stream s (0 .. S-1) back to position 0 (its states, caches and non-finite marks only) */
    rs_status (*reset_stream)(rs_scorer *sc, size_t s);
    /* advance every stream s with in[s].n > 0 by its n positions and score it into out[s]
     * (in[S], out[S]); streams with n = 0 are untouched. RS_E_NONFINITE: a stream's reference
     * went non-finite (in[s].ref_nonfinite marks which; the other streams' outputs are written) */
    rs_status (*step_streams)(rs_scorer *sc, rs_scorer_stream *in, const rs_scorer_out *out);
    /* run_nonfinite of run r of stream s */
    rs_status (*stream_nonfinite)(const rs_scorer *sc, size_t s, size_t r, rs_scorer_nonfinite *nf,
                                  const char **msg);
    /* the experts run r (-1: the reference) of stream 0 chose in MoE layer `layer` for the last step's n
     * positions, out[n][top_k] ascending per position (parity tests and tools; RS_E_INVAL for a dense
     * layer or model, RS_E_UNSUPPORTED on a multi-stream GPU scorer) */
    rs_status (*routes)(const rs_scorer *sc, long r, int layer, int32_t *out);
    /* since stream s's last reset: at how many positions run r's experts in layer `layer` differ from the
     * reference's (*positions) and how many of its experts are not the reference's (*experts); 0 for a
     * dense layer or model (the forward's rs_moe_route_diff of every row) */
    rs_status (*route_diff)(const rs_scorer *sc, size_t s, size_t r, int layer, int64_t *positions,
                            int64_t *experts);
} rs_scorer_ops;

struct rs_scorer {
    const rs_scorer_ops *ops;
    const rs_model *m;     /* not owned */
    rs_scorer_config cfg;  /* arrays point into the scorer's own copies */
    void *impl;
};


/*! rs_scorer_n_streams() : S of the scorer (n_streams, 0 counted as 1). */
size_t rs_scorer_n_streams(const rs_scorer *sc);


/*! rs_scorer_config_copy_() helpers for implementations: copy cfg's arrays into one allocation
 *  owned by the scorer (*mem, free with free()) and point sc->cfg at them. */
rs_status rs_scorer_config_copy(rs_scorer *sc, const rs_scorer_config *cfg, void **mem);

/*! rs_scorer_score() : the scoring of every scorer that scores on the host: n positions of one
 *  stream, logits [R + 1][n][V] (the reference's n rows, then each run's), against targets [n],
 *  into out (nll_ref, top1_ref; kl, nll, dp, agree of each run) by rs_kl's definitions: the
 *  reference's log-softmax once per position, then rs_kl_compare_lp per run (R = 0: the reference
 *  against itself, for its NLL and top-1). lp, lq: [V] scratch. A run's non-finite logits give NaN
 *  entries (agree 0), not an error. A position whose reference logits are not finite: with
 *  ref_bad NULL the call stops there, RS_E_NONFINITE ("chunk offset t: ..."); else ref_bad[t] = 1,
 *  its entries NaN (nll_ref, kl, nll, dp), top1_ref -1, agree 0, and the other positions are
 *  scored (ref_bad[t] = 0 for them). */
rs_status rs_scorer_score(const float *logits, size_t R, size_t n, size_t V, const int32_t *targets, double *lp,
                          double *lq, const rs_scorer_out *out, uint8_t *ref_bad);

#ifdef __cplusplus
}
#endif
#endif /* RS_SCORER_IMPL_H */
