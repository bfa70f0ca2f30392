/* rs_replay.c — REPLAY, OUTPUTONLY, GDN UT solve and HP recompute (fp32 CPU reference). */
#include "rs_replay.h"

#include <stdlib.h>
#include <string.h>

#include "rs_dot.h"
#include "rs_gamma.h"
#include "replayssm/engine/rs_ssm.h"
#include "rs_check.h"

rs_status rs_replay_ws_init(rs_replay_ws *ws, size_t cap, size_t max_T, size_t d_v)
{
    RS_CHECK(ws != NULL, RS_E_INVAL, "rs_replay_ws_init: NULL workspace");
    memset(ws, 0, sizeof *ws);
    ws->cap = cap;
    ws->max_T = max_T;
    ws->d_v = d_v;
    ws->alpha = malloc(cap * sizeof(float));
    ws->gam = malloc((cap + 1) * sizeof(float));
    ws->dots = malloc(cap * sizeof(float));
    ws->sq = malloc(max_T * d_v * sizeof(float));
    ws->sk = malloc(max_T * d_v * sizeof(float));
    ws->acc = malloc(d_v * sizeof(float));
    if (!ws->alpha || !ws->gam || !ws->dots || !ws->sq || !ws->sk || !ws->acc) {
        rs_replay_ws_free(ws);
        return rs_error_set(RS_E_NOMEM, "rs_replay_ws_init: out of memory");
    }
    return RS_OK;
}

void rs_replay_ws_free(rs_replay_ws *ws)
{
    if (!ws) return;
    free(ws->alpha);
    free(ws->gam);
    free(ws->dots);
    free(ws->sq);
    free(ws->sk);
    free(ws->acc);
    memset(ws, 0, sizeof *ws);
}

/* The dots below are rs_dot_seq() (one sequential chain each), batched over rows with
 * rs_dot_rows() / rs_dot_ptrs(): the same operations per dot, so the same bits. */

/* dots[j] = dot(k_j, q) for records j < t */
static void record_dots_(const rs_ring *ring, size_t t, const float *q, float *dots)
{
    const float *kp[16];
    for (size_t j0 = 0; j0 < t; j0 += 16) {
        const size_t m = t - j0 < 16 ? t - j0 : 16;
        for (size_t j = 0; j < m; j++) kp[j] = rs_ring_k(ring, j0 + j);
        rs_dot_ptrs(kp, m, q, ring->d_k, dots + j0);
    }
}

static void gather_alpha_(const rs_ring *ring, size_t n, float *alpha)
{
    for (size_t j = 0; j < n; j++) alpha[j] = rs_ring_alpha(ring, j);
}

void rs_replay_materialise(float *S, const rs_ring *ring, size_t n, rs_replay_ws *ws)
{
    if (n == 0) return;
    const size_t d_v = ring->d_v, d_k = ring->d_k;
    gather_alpha_(ring, n, ws->alpha);
    rs_gamma_suffix(ws->alpha, n, ws->gam); /* gam[0] = gamma_{1:n}; record j: gam[j+1] */
    const float g0 = ws->gam[0];
    for (size_t r = 0; r < d_v; r++) {
        float *row = S + r * d_k;
        /* first record fused with the checkpoint scaling: g0*S + c*k, as a conventional step */
        const float c0 = ws->gam[1] * rs_ring_u(ring, 0)[r];
        const float *k0 = rs_ring_k(ring, 0);
        rs_axpby(row, g0, c0, k0, d_k);
        for (size_t j = 1; j < n; j++) {
            const float cj = ws->gam[j + 1] * rs_ring_u(ring, j)[r];
            const float *kj = rs_ring_k(ring, j);
            rs_axpy(row, cj, kj, d_k);
        }
    }
}

/* sq[s][r] = (ckpt q_s)[r] for s < T (and sk[s][r] = (ckpt k_{h+s})[r] if ks != NULL):
 * one pass over the checkpoint. */
static void ckpt_pass_(const float *ckpt, size_t d_v, size_t d_k, size_t T, const float *Q,
                       float *sq, const rs_ring *ks_ring, size_t h, float *sk)
{
    for (size_t s = 0; s < T; s++) {
        rs_dot_rows(ckpt, d_k, d_v, Q + s * d_k, d_k, sq + s * d_v);
        if (sk) rs_dot_rows(ckpt, d_k, d_v, rs_ring_k(ks_ring, h + s), d_k, sk + s * d_v);
    }
}

/* o[d_v] = g[0] * base + sum_{j<t} (g[j+1] * dots[j]) u_j  (dots filled by the caller) */
static void combine_(const rs_ring *ring, size_t t, const float *g, const float *dots,
                     const float *base, float *o)
{
    const size_t d_v = ring->d_v;
    for (size_t r = 0; r < d_v; r++) o[r] = g[0] * base[r];
    for (size_t j = 0; j < t; j++) {
        const float cj = g[j + 1] * dots[j];
        const float *uj = rs_ring_u(ring, j);
        rs_axpy(o, cj, uj, d_v);
    }
}

void rs_replay_outputonly(const float *ckpt, const rs_ring *ring, size_t h, size_t T,
                          const float *Q, float *O, rs_replay_ws *ws)
{
    const size_t d_v = ring->d_v, d_k = ring->d_k;
    ckpt_pass_(ckpt, d_v, d_k, T, Q, ws->sq, NULL, 0, NULL);
    gather_alpha_(ring, h + T, ws->alpha);
    for (size_t s = 0; s < T; s++) {
        const size_t t = h + s + 1; /* records 0..t-1 precede and include draft s */
        const float *q = Q + s * d_k;
        rs_gamma_suffix(ws->alpha, t, ws->gam);
        record_dots_(ring, t, q, ws->dots);
        combine_(ring, t, ws->gam, ws->dots, ws->sq + s * d_v, O + s * d_v);
    }
}

void rs_replay_gdn_solve(const float *ckpt, rs_ring *ring, size_t h, size_t T,
                         rs_replay_ws *ws)
{
    const size_t d_v = ring->d_v, d_k = ring->d_k;
    /* S_ckpt K_d in one pass (sq slot unused here: pass a dummy Q of zero drafts) */
    for (size_t s = 0; s < T; s++) rs_dot_rows(ckpt, d_k, d_v, rs_ring_k(ring, h + s), d_k, ws->sk + s * d_v);
    gather_alpha_(ring, h + T, ws->alpha);
    for (size_t s = 0; s < T; s++) {
        const size_t t = h + s; /* logical index of the draft; records 0..t-1 precede it */
        const float *kt = rs_ring_k(ring, t);
        /* gam over records 0..t: gam[0] = gamma_{1:t}, record j < t: gam[j+1] = gamma_{j+1:t} */
        rs_gamma_suffix(ws->alpha, t + 1, ws->gam);
        record_dots_(ring, t, kt, ws->dots);
        /* acc = alpha_t S_{t-1} k_t: history (j < h, cached U_c) and earlier drafts (solved) */
        combine_(ring, t, ws->gam, ws->dots, ws->sk + s * d_v, ws->acc);
        const float beta = rs_ring_beta(ring, t);
        const float *v = rs_ring_v(ring, t);
        float *u = rs_ring_u(ring, t);
        for (size_t r = 0; r < d_v; r++) u[r] = beta * (v[r] - ws->acc[r]);
    }
}

void rs_replay_gdn_fold_recompute(float *S, const rs_ring *ring, size_t n, rs_replay_ws *ws)
{
    for (size_t j = 0; j < n; j++)
        rs_ssm_gdn_step(S, ring->d_v, ring->d_k, rs_ring_alpha(ring, j), rs_ring_beta(ring, j),
                        rs_ring_v(ring, j), rs_ring_k(ring, j), NULL, ws->acc, NULL);
}
