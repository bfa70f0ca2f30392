/* rs_runner.h — teacher-forced evaluation of one model under several state policies at once.
 *
 * A runner owns R runs (rs_run: conv states, one rs_head per (SSM layer, head) with the run's
 * policy, window and seed, KV caches) and the chunk scratch. rs_runner_step() feeds the next
 * n <= chunk tokens to every run in lockstep (rs_forward_chunk); afterwards each run's logits
 * for those n positions can be read until the next step. Memory is bounded: everything is
 * allocated at create time; it grows with max_tokens only through the KV caches of the
 * attention layers (R x n_attn x 2 x Hkv x hd x max_tokens floats) — logits exist for one
 * chunk only ([R][chunk][V]).
 *
 * Typical use: runs {fp32, shared:fp8-sr, ...} (rs_run_spec: policy, window L, seed); run 0 is
 * then the fp32 reference, and the caller compares the logits of runs 1.. with it chunk by chunk.
 * The window and seed only reach a run's heads, so any mix of policies and windows shares one
 * runner, one fp32 reference and every GEMM of a chunk. A run's
 * logits do not depend on which other runs share the runner (each output row of a GEMM is
 * computed the same way whatever the row count; tests/test_kleval.c checks this bitwise).
 */
#ifndef RS_RUNNER_H
#define RS_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "model/rs_backend.h"
#include "model/rs_forward.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/engine/rs_policy.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rs_runner_config {
    size_t n_runs;              /* R >= 1 */
    const rs_run_spec *runs;    /* [R] policy, window and SR seed of each run (copied; the heads get
                                   them through rs_head_config), or NULL with R = 1: the fp32
                                   reference (rs_run_spec_reference) */
    size_t chunk;               /* C >= 1: most positions per rs_runner_step */
    size_t max_tokens;          /* positions the KV caches hold (>= the stream length) */
    rs_dt_mode dt_mode;         /* Mamba-2 dt bound (default RS_DT_KERNEL: no clamp) */
    int capture_hidden;         /* keep the residual stream after every layer of the last chunk */
    int capture_routes;         /* keep every MoE layer's expert choices of the last chunk */
} rs_runner_config;

typedef struct rs_runner {
    const rs_model *m;          /* not owned */
    rs_backend *be;             /* not owned */
    rs_runner_config cfg;
    rs_run_spec *specs;         /* [R] each run's spec (cfg.runs points here) */
    rs_run *runs;               /* [R] */
    rs_fwd_ws ws;
    float *hidden;              /* [n_layers + 1][R * chunk][d] if capture_hidden, else NULL */
    int32_t *routes;            /* [n_layers][R * chunk][top_k] if capture_routes on a MoE model */
    size_t pos;                 /* positions processed so far */
    size_t last_n;              /* length of the last chunk */
    rs_status sticky;           /* a failed step leaves the runs inconsistent: later steps fail */
} rs_runner;

/*! rs_runner_config_default() : R = 1 with runs NULL (the fp32 reference), chunk 64, max_tokens
 *  8192, RS_DT_KERNEL, no hidden capture. */
rs_runner_config rs_runner_config_default(void);

/*! rs_runner_create() : allocate the runs and the scratch for model m on backend be.
 *  @return RS_OK, RS_E_INVAL (bad config, policy/window rejected by the state engine),
 *  RS_E_NOMEM (the message says how many bytes were asked for). */
rs_status rs_runner_create(const rs_model *m, rs_backend *be, const rs_runner_config *cfg,
                           rs_runner **out);

/*! rs_runner_free() : release; accepts NULL. */
void rs_runner_free(rs_runner *r);

/*! rs_runner_reset() : back to position 0 (states zeroed, caches emptied, statuses cleared). */
rs_status rs_runner_reset(rs_runner *r);

/*! rs_runner_step() : feed tokens[n] (1 <= n <= chunk) to every run.
 *  @return RS_OK (check rs_runner_run_status for runs gone non-finite), RS_E_INVAL (bad
 *  token / n), RS_E_SHAPE (past max_tokens), RS_E_STATE (an earlier step failed). */
rs_status rs_runner_step(rs_runner *r, const int32_t *tokens, size_t n);

/*! rs_runner_logits() : [last_n][V] logits of run i for the last step's positions. */
const float *rs_runner_logits(const rs_runner *r, size_t run);

/*! rs_runner_hidden() : [last_n][d] residual stream of run i after layer `layer` - 1
 *  (layer 0: the embeddings) for the last step; NULL without capture_hidden. */
const float *rs_runner_hidden(const rs_runner *r, size_t layer, size_t run);

/*! rs_runner_routes() : [last_n][top_k] experts run i chose in MoE layer `layer` for the last step's
 *  positions (ascending per position); NULL without capture_routes, for a dense layer or model. */
const int32_t *rs_runner_routes(const rs_runner *r, size_t layer, size_t run);

/*! rs_runner_run_status() : RS_OK or RS_E_NONFINITE for run i; *msg (if not NULL) gets the
 *  message of its first failure. */
rs_status rs_runner_run_status(const rs_runner *r, size_t run, const char **msg);

/*! rs_runner_run_nonfinite() : where run i first went non-finite: *layer, *head and the
 *  head's *step (token position), or -1 each while the run is finite. The head is the one with
 *  the earliest step (then the lowest layer, then head). A step s is the token whose output was
 *  non-finite, or after which the stored state was: the run's logits are then non-finite from
 *  position s or s + 1 on. The run status message says the same (layer, head, token; no run index). */
rs_status rs_runner_run_nonfinite(const rs_runner *r, size_t run, int32_t *layer, int32_t *head,
                                  int64_t *step);

/*! rs_runner_moe_route_diff() : since the last reset, at how many positions run i's experts in layer
 *  `layer` differed from run 0's (*positions) and how many of its chosen experts run 0 had not
 *  chosen (*experts). Both 0 for run 0, dense layers and dense models. */
rs_status rs_runner_moe_route_diff(const rs_runner *r, size_t run, int layer, int64_t *positions,
                                   int64_t *experts);

#ifdef __cplusplus
}
#endif
#endif /* RS_RUNNER_H */
