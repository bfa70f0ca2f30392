/* rs_theory_mc.h — Monte Carlo checks of the C.6 error-accumulation closed forms with the
 * REAL quantizers (rs_quantize_roundtrip) and the toolkit's Philox streams.
 *
 * Two experiments (design and the reason for each choice: docs/theory.md, "Monte Carlo"):
 *
 * 1. Abstract recurrence D_t = alpha D_{t-1} + e_t. Each of M chains is one element of a
 *    tensor of M elements (tensor extent E). At every rounding site a fresh tensor of
 *    pre-rounding values x ~ half-normal |N(0,1)| (a one-signed block of a state, which is
 *    what gives RTN a non-zero bias) is drawn from Philox, stored with the format under
 *    test, and e = Q(x) - x (x taken exactly, in double) is added to the chain. Storage:
 *      conv    a rounding every step;
 *      shared  D decays every step, a rounding only at flushes (t multiple of L);
 *      split   the HP copy accumulates like shared with the HP format; at each flush the LP
 *              copy rounds the same x: D_LP = alpha^L D_HP(previous flush) + e_LP, and decays
 *              until the next flush (never fed back).
 *    The per-rounding moments (b, sigma^2) are measured separately by rs_theory_mc_calibrate
 *    on independent draws (another seed), so the closed form's prediction and the ensemble it
 *    is compared with share no random numbers.
 *
 * 2. Actual Mamba-2 state recurrence S_t = alpha S_{t-1} + v_t k_t^T of one head (d_v x d_k),
 *    synthetic inputs, conventional storage in a format every step, R replicas that differ
 *    only in the SR seed (same inputs), against a float64 reference. D_t = S^_t - S_t obeys
 *    D_t = alpha D_{t-1} + e_t exactly with e_t = Q(x_t) - x_t, x_t = alpha S^_{t-1} + v k^T in
 *    double. The check: Var over replicas of D_t equals sum_j alpha^{2(t-j)} Var(e_j) (per-step
 *    variances measured on the same run), i.e. SR errors of successive steps are uncorrelated;
 *    and it reports the stationary closed form sigma^2 (1-alpha^{2t})/(1-alpha^2).
 *    (A plain loop, not the engine's rs_head: see docs/theory.md.)
 *
 * Random streams (rs_philox.h; slot field of rs_stream_id): pre-rounding data slot 2,
 * SR of the stored/LP copy slot 1, SR of the HP copy slot 3, synthetic inputs slot 5; the
 * step (or flush) index in the step field, so every number is reproducible alone.
 */
#ifndef RS_THEORY_MC_H
#define RS_THEORY_MC_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_status.h"
#include "replayssm/theory/rs_theory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Elements per batch for the batch-means standard errors: one FP8 block (8 NVFP4 blocks), so
 * the dependence that shared block scales create stays inside a batch. */
#define RS_MC_BATCH 128

/*! rs_theory_mc_draw() : x[n] = |z_i| rounded to float, z_i ~ N(0,1) by Box-Muller on the
 *  Philox words (seed, stream, 2p) and (seed, stream, 2p+1), p = i/2 (cosine output for even
 *  i, sine for odd i). */
void rs_theory_mc_draw(uint64_t seed, uint64_t stream, size_t n, float *x);

/*! rs_theory_mc_calibrate() : per-rounding moments of f on n fresh half-normal values
 *  (n a multiple of `extent`, extent a multiple of f's block): m = (mean, variance) of
 *  e = Q(x) - x, se = their batch-means standard errors. Uses `seed` for data and SR.
 *  @return RS_OK; RS_E_INVAL / RS_E_SHAPE for bad sizes; RS_E_NOMEM. */
rs_status rs_theory_mc_calibrate(const rs_format *f, size_t n, size_t extent, uint64_t seed, rs_err_moments *m,
                                 rs_err_moments *se);

typedef struct rs_mc_config {
    rs_format fmt;     /* conv/shared: the stored format; split: the LP copy */
    rs_format hp;      /* split: the HP copy (fp32 = exact); ignored otherwise */
    rs_storage storage;
    double alpha;      /* decay per step, (0, 1] */
    unsigned window;   /* L (shared, split) */
    size_t chains;     /* M: ensemble size, a multiple of extent and of RS_MC_BATCH */
    size_t extent;     /* E: tensor extent of one draw (multiple of the format blocks) */
    uint64_t seed;
} rs_mc_config;

typedef struct rs_mc_point {
    size_t t;          /* step of the observation */
    double mean, var;  /* ensemble mean and variance of D_t */
    double mean_se;    /* batch-means standard errors (batches of RS_MC_BATCH chains) */
    double var_se;
} rs_mc_point;

/*! rs_theory_mc_accum() : run experiment 1 up to the largest requested step and fill
 *  out[i] at steps obs[i] (strictly increasing, >= 1).
 *  @return RS_OK; RS_E_INVAL for bad configuration; RS_E_NOMEM; quantizer errors. */
rs_status rs_theory_mc_accum(const rs_mc_config *c, const size_t *obs, size_t n_obs, rs_mc_point *out);

typedef struct rs_mc_state_config {
    rs_format fmt;     /* conventional storage format (SR: replicas differ; RTN: identical) */
    double alpha;      /* constant decay */
    unsigned d_v, d_k; /* one head; d_v d_k a multiple of the format's block */
    size_t replicas;   /* R >= 2 */
    size_t burn_in;    /* exact (float64) steps before quantized storage starts */
    uint64_t seed;
} rs_mc_state_config;

typedef struct rs_mc_state_point {
    size_t t;           /* quantized steps so far */
    double var_meas;    /* sum over elements of the replica variance of D_t */
    double var_meas_se; /* its standard error (Gaussian: sqrt(sum 2 s_i^4 / (R-1))) */
    double var_pred;    /* sum_i sum_j alpha^{2(t-j)} Var_r(e_j[i]), per-step variances of this run */
    double var_closed;  /* sigma2_bar (1-alpha^{2t})/(1-alpha^2), sigma2_bar = mean_j sum_i Var_r(e_j[i]) */
    double msd_meas;    /* sum over elements of mean_r D_t^2 (total error energy, incl. bias) */
    double msd_pred;    /* sum_i sum_j alpha^{2(t-j)} mean_r e_j[i]^2 (if errors were uncorrelated) */
    double state_ms;    /* sum over elements of S_t^2 (reference), for relative scales */
} rs_mc_state_point;

/*! rs_theory_mc_state() : run experiment 2 and fill out[i] at steps obs[i] (increasing, >= 1).
 *  Inputs: k_t unit-norm Gaussian direction, v_t ~ N(0, 1 - alpha^2) per element, so each
 *  state element is stationary with variance 1/d_k; S_0 after burn_in exact steps.
 *  @return RS_OK; RS_E_INVAL; RS_E_NOMEM; RS_E_NONFINITE (with the step) from the quantizer. */
rs_status rs_theory_mc_state(const rs_mc_state_config *c, const size_t *obs, size_t n_obs, rs_mc_state_point *out);

#ifdef __cplusplus
}
#endif
#endif /* RS_THEORY_MC_H */
