/* rs_head.h — the state engine: one SSM head's recurrent state under a precision policy.
 *
 * One object per (sequence, layer, head). eval/ calls it token by token; the CUDA kernels
 * mirror it. Legend: d_v x d_k state (d_k contiguous), L = window, T = drafts per verify.
 *
 * Policies (rs_policy.h) and where rounding happens:
 *   fp32, conv:<fmt>   conventional step; the output is taken from the on-chip S_t, then
 *                      S_t is stored as Q_fmt(S_t) every step (stream: slot 0, step).
 *   shared:<fmt>       ReplaySSM with one checkpoint; decode = Algorithm 1 (Mamba-2) /
 *                      Algorithm 4 (GDN), flush when the window holds L records (h >= L
 *                      after the append); verify = Algorithm 2 (GDN: UT solve), flush when
 *                      h + T > L. At each flush ckpt <- Q_fmt(S) (stream: slot 1, flush).
 *                      The checkpoint is read by outputs and by the recurrence.
 *   split:<lp>/<hp>    Algorithm 3. decode = verify of one draft then commit(1) (standard
 *                      decode with two precisions is Algorithm 3 with T = 1 and a = 1).
 *                      Non-flush steps read LP; a flush (h + T > L) reads HP, folds, and
 *                      stores HP <- Q_hp(S) (slot 2, flush) and LP <- Q_lp(S) (slot 3,
 *                      flush) from the same on-chip S. GDN: at the flush the cached u are
 *                      discarded and recomputed along the HP path, then the drafts are
 *                      solved from the folded on-chip S.
 *   split-naive:...    as split; GDN folds the cached (LP-contaminated) u (literal
 *                      Algorithm 3 with the UT solve). Mamba-2: identical to split.
 * fp32 formats are copies (no quantizer call). Streams are rs_stream_id(slot, layer, head,
 * index) under cfg.seed: runs are reproducible and independent of threading.
 *
 * Non-finite values (outputs, stored states) are detected where they appear: the call
 * returns RS_E_NONFINITE naming the layer, head, policy and step; the first such step is
 * kept (rs_head_first_nonfinite) and every later call fails fast the same way with NaN
 * outputs. Nothing crashes, nothing prints.
 *
 * Hot paths (decode, verify, commit) never allocate: all workspaces are made at init.
 * The ring buffer and replay operators behind it are private to lib/engine/ (rs_ring.h,
 * rs_replay.h there, not installed).
 */
#ifndef RS_HEAD_H
#define RS_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/engine/rs_policy.h"
#include "replayssm/engine/rs_ssm.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SR stream slots (the 4-bit slot field of rs_stream_id). */
#define RS_SLOT_CONV 0u   /* conv:<fmt> state, indexed by token position */
#define RS_SLOT_SHARED 1u /* shared:<fmt> checkpoint, indexed by flush */
#define RS_SLOT_HP 2u     /* split HP checkpoint, indexed by flush */
#define RS_SLOT_LP 3u     /* split LP checkpoint, indexed by flush */
#define RS_SLOT_INIT 4u   /* rs_head_reset() of a given initial state */

typedef struct rs_head_config {
    rs_ssm_kind kind;
    size_t d_v, d_k;     /* state shape; d_v * d_k a multiple of every format's block */
    rs_policy policy;
    size_t window;       /* L >= 1 (replay policies; ignored by conv) */
    size_t max_drafts;   /* T_max >= 1: most drafts per verify (ring capacity
                          * max(L, T_max) + T_max: L + T_max as in the paper when T_max <= L) */
    uint64_t seed;       /* SR seed */
    uint32_t layer, head;
} rs_head_config;

/* The engine's internals (state copies, draft snapshots, the record ring, the replay
 * workspace) live in a private part allocated by rs_head_init and released by rs_head_free;
 * only the configuration and the counters are visible. rs_head itself is a plain value:
 * declare it on the stack, in an array or in calloc'd memory (a zeroed rs_head is a valid
 * "not initialised" head that rs_head_free accepts); do not copy an initialised head (the
 * copy would share the private part). The public fields are read-only for callers. */
struct rs_head_impl;

typedef struct rs_head {
    rs_head_config cfg;
    size_t n;            /* d_v * d_k */
    uint64_t pos;        /* tokens committed so far (= index of the next token) */
    uint64_t folded;     /* tokens contained in the recurrent copy */
    uint64_t flushes;    /* flushes so far (replay policies) */
    size_t pending;      /* drafts awaiting commit, 0 if none */
    int64_t first_nonfinite; /* step of the first non-finite value, -1 if none */
    struct rs_head_impl *impl; /* private (lib/engine/rs_head.c); NULL when not initialised */
} rs_head;

/*! rs_head_init() : validate cfg and allocate every buffer; state is zero.
 *  @return RS_OK, RS_E_INVAL (bad kind/window/drafts), RS_E_SHAPE (block does not divide
 *  d_v*d_k), RS_E_NOMEM. On failure hd is safe to rs_head_free. */
rs_status rs_head_init(rs_head *hd, const rs_head_config *cfg);

/*! rs_head_free() : release; accepts NULL and zeroed heads. */
void rs_head_free(rs_head *hd);

/*! rs_head_reset() : back to step 0 with state S0[d_v*d_k] (NULL = zeros), stored in the
 *  policy's formats; ring emptied, counters and the non-finite mark cleared. */
rs_status rs_head_reset(rs_head *hd, const float *S0);

/*! rs_head_decode() : standard decode of one token; o[d_v] = S_t q.
 *  @return RS_OK, RS_E_INVAL, RS_E_STATE (drafts pending), RS_E_NONFINITE. */
rs_status rs_head_decode(rs_head *hd, const rs_ssm_token *x, float *o);

/*! rs_head_verify() : speculative verification of T drafts x[T] (1 <= T <= T_max);
 *  O[T][d_v] = the outputs the model gives at each draft position. Must be followed by
 *  rs_head_commit(a) before the next decode/verify. */
rs_status rs_head_verify(rs_head *hd, const rs_ssm_token *x, size_t T, float *O);

/*! rs_head_commit() : accept the first a drafts (1 <= a <= T) of the last verify:
 *  pointer rollback h <- h + a (conv: keep the a-th snapshot). */
rs_status rs_head_commit(rs_head *hd, size_t a);

/*! rs_head_state() : materialise the current state S_pos (committed tokens only) into
 *  S[d_v*d_k]: conv: S_t; shared, split-naive: REPLAY(ckpt, B[1:h]); split: from the HP
 *  checkpoint along the HP path (GDN recomputes u), i.e. what the next flush folds
 *  before rounding. For tests and inspection (not a hot path). */
rs_status rs_head_state(rs_head *hd, float *S);

/*! rs_head_checkpoint() : copy a stored checkpoint into S[d_v*d_k] (values as stored,
 *  dequantized): read_copy = 0: the recurrent copy (conv S_t, shared ckpt, split HP);
 *  read_copy = 1: split LP (other policies: the same as 0). *folded = tokens it contains. */
rs_status rs_head_checkpoint(const rs_head *hd, int read_copy, float *S, uint64_t *folded);

/*! rs_head_first_nonfinite() : step of the first non-finite value seen, or -1 (also for a
 *  head that is not initialised). */
int64_t rs_head_first_nonfinite(const rs_head *hd);

/*! rs_head_unfolded() : committed records not yet folded into the checkpoint (the paper's
 *  h; drafts awaiting commit not included). At most max(L, T_max) after a commit; 0 for conv
 *  policies and for a head that is not initialised. */
size_t rs_head_unfolded(const rs_head *hd);

/*! rs_head_ring_check() : verify the ring canaries (RS_OK for conv).
 *  @return RS_OK, or RS_E_STATE naming the record whose sequence number or checksum changed. */
rs_status rs_head_ring_check(const rs_head *hd);

#ifdef __cplusplus
}
#endif
#endif /* RS_HEAD_H */
