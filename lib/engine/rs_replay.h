/* rs_replay.h — ReplaySSM's state reconstruction operators over a ring of records.
 * Private to lib/engine/ (not installed): used by rs_head.c, and by tests that check the operators.
 *
 * Legend: S, ckpt: d_v x d_k row-major (d_k contiguous); records are logical ring indices
 * 0 .. n-1 (the paper's B[1..n]); Q: T x d_k (row s = q of draft s); O: T x d_v.
 * Decays come from rs_gamma_suffix() only.
 *
 *   REPLAY(S_ckpt, B[1:n])   = gamma_{1:n} S_ckpt + sum_j gamma_{j+1:n} u_j k_j^T
 *   OUTPUTONLY(S_ckpt, B[1:h+T], Q): for s = 1..T, t = h + s,
 *       o_s = gamma_{1:t} (S_ckpt q_s) + sum_{j<=t} gamma_{j+1:t} (k_j^T q_s) u_j
 *     i.e. S_ckpt Q D + U (W .* (K^T Q)); no d_v x d_k state is formed (one pass over
 *     the checkpoint for S_ckpt Q, then vectors only).
 *   GDN verification (Appendix B.3, UT transform): the draft corrections solve
 *       U_d (I + A B_d) = R B_d,  R = V_d - S_ckpt K_d D - U_c (W_c .* (K_c^T K_d))
 *     I + A B_d is unit upper triangular; forward substitution over s gives
 *       u_t = beta_t (v_t - [gamma_{1:t} S_ckpt k_t + sum_{j<t} gamma_{j+1:t} (k_j^T k_t) u_j])
 *     (the bracket is alpha_t S_{t-1} k_t), then O by OUTPUTONLY with U = [U_c, U_d].
 *
 * (Mamba-2: u_j is v_j.) Accumulation order is fixed: checkpoint term first, then records
 * in increasing j; each record's scalar coefficient is formed before it scales a vector.
 */
#ifndef RS_REPLAY_H
#define RS_REPLAY_H

#include <stddef.h>

#include "rs_ring.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Workspace, allocated once per head (hot paths never allocate). */
typedef struct rs_replay_ws {
    size_t cap, max_T, d_v;
    float *alpha; /* [cap] decays gathered in logical order */
    float *gam;   /* [cap + 1] suffix products */
    float *dots;  /* [cap] k_j . q_s or k_j . k_t */
    float *sq;    /* [max_T][d_v] S_ckpt q_s */
    float *sk;    /* [max_T][d_v] S_ckpt k_{h+s} (GDN) */
    float *acc;   /* [d_v] */
} rs_replay_ws;

rs_status rs_replay_ws_init(rs_replay_ws *ws, size_t cap, size_t max_T, size_t d_v);
void rs_replay_ws_free(rs_replay_ws *ws);

/*! rs_replay_materialise() : S <- REPLAY(S, B[0:n]) in place (S holds the checkpoint on
 *  entry). n = 0 leaves S unchanged. With n = 1 this is the conventional Mamba-2 update
 *  bit for bit (gamma = alpha, coefficient 1 * v). */
void rs_replay_materialise(float *S, const rs_ring *ring, size_t n, rs_replay_ws *ws);

/*! rs_replay_outputonly() : O[T][d_v] = OUTPUTONLY(ckpt, B[0:h+T], Q[T][d_k]); uses the
 *  records' u (GDN: must already be solved). T <= ws->max_T, h + T <= ring->cap. */
void rs_replay_outputonly(const float *ckpt, const rs_ring *ring, size_t h, size_t T,
                          const float *Q, float *O, rs_replay_ws *ws);

/*! rs_replay_gdn_solve() : the UT-transform solve of the T draft corrections for records
 *  h .. h+T-1 (alpha, beta, v, k written), from ckpt and the cached u of records 0..h-1.
 *  Writes u into the ring records (caller seals them). */
void rs_replay_gdn_solve(const float *ckpt, rs_ring *ring, size_t h, size_t T,
                         rs_replay_ws *ws);

/*! rs_replay_gdn_fold_recompute() : S <- S_n along the recurrence from S (= checkpoint),
 *  discarding the cached u of records 0..n-1 and recomputing
 *  u_j = beta_j (v_j - alpha_j S_{j-1} k_j) step by step (the split policy's HP path,
 *  digest section 4). The recomputed u are not written back. */
void rs_replay_gdn_fold_recompute(float *S, const rs_ring *ring, size_t n, rs_replay_ws *ws);

#ifdef __cplusplus
}
#endif
#endif /* RS_REPLAY_H */
