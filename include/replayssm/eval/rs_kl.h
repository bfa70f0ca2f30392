/* rs_kl.h — per-position comparison of a run's next-token distribution with the reference's,
 * and the llama.cpp-style summary of a whole evaluation.
 *
 * Per position t (logits of the reference p and of the run q over V tokens, true next token y):
 *   log p = log_softmax(ref logits), log q = log_softmax(run logits), in double
 *     (max-subtracted, log-sum-exp accumulated in double)
 *   kl      = KL(p || q) = sum_i p_i (log p_i - log q_i)                          [nats]
 *             computed term by term in the Bregman form p_i (r_i + expm1(-r_i)), r_i = log p_i -
 *             log q_i, which equals p_i r_i - p_i + q_i: the extra terms sum to 1 - 1 = 0 but make
 *             every term >= 0, so kl >= 0 holds in floating point too and identical distributions
 *             give exactly 0. All V terms count (no llama.cpp 16-nat floor, no 16-bit reference).
 *   nll_ref = -log p_y,  nll_run = -log q_y                                          [nats]
 *   dp      = q_y - p_y  (run minus reference, llama.cpp's Δp)
 *   top1    = argmax q == argmax p (lowest index on ties)
 * A run whose logits contain a NaN/Inf gives finite = 0, kl = nll_run = dp = NaN, top1 = 0.
 *
 * Summary (rs_kl_summary_compute, from the stored per-position arrays so quantiles are exact):
 *   the set of llama.cpp's KL-divergence report (tools/perplexity/perplexity.cpp, kl_divergence():
 *   "Mean ln(PPL(Q)/PPL(base))", "Mean KLD", "Maximum KLD", "99.9% KLD" ... " 0.1% KLD", "Minimum
 *   KLD", the same for Δp with 75% and 25%, "RMS Δp", "Same top p"), with its definitions:
 *   mean KL with standard error sqrt((E[x^2] - E[x]^2) / (n-1)); KL and Δp quantiles at the
 *   levels rs_kl_level() (0.1% .. 99.9%), min and max, all by linear interpolation between order
 *   statistics (position q (n-1) in the sorted values: numpy.percentile's default method
 *   "linear", and llama.cpp's percentile(): (1 - f) v[i] + f v[i+1]); mean Δp with its standard
 *   error; RMS Δp with the delta-method error sqrt(var(Δp^2) / (n-1)) / (2 RMS) (llama.cpp's
 *   "RMS Δp ± "); ln(PPL(run) / PPL(ref)) = mean(nll_run - nll_ref) with the standard error of
 *   that per-position difference, sqrt(var(d) / (n-1)) (llama.cpp: sqrt(se_q^2 + se_base^2 -
 *   2 cov), the same number); same-top-1 % with binomial error sqrt(p(1-p)/(n-1)); mean NLLs
 *   (-> PPL); mean KL
 *   over position windows [0, 1K), [1K, 2K), [2K, 4K), ..., [64K, 128K) (RS_KL_N_WINDOWS,
 *   K = 1024), NaN where a window has no position. Non-finite positions are counted and left
 *   out of every statistic.
 */
#ifndef RS_KL_H
#define RS_KL_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_KL_N_WINDOWS 8 /* [0,1K) [1K,2K) [2K,4K) [4K,8K) [8K,16K) [16K,32K) [32K,64K) [64K,128K) */

typedef struct rs_kl_point {
    double kl;      /* KL(p_ref || p_run) in nats, >= 0 */
    double nll_ref; /* -log p_ref(y) */
    double nll_run; /* -log p_run(y) */
    double dp;      /* p_run(y) - p_ref(y) */
    int32_t top1_ref, top1_run; /* argmax of each (lowest index on ties) */
    int agree;      /* top1_ref == top1_run */
    int finite;     /* 0 if the run's logits had a NaN/Inf */
} rs_kl_point;

/*! rs_kl_log_softmax() : out[i] = x[i] - max - log(sum exp(x - max)), in double.
 *  @return RS_OK, RS_E_NONFINITE (x has a NaN/Inf: out is NaN), RS_E_INVAL. */
rs_status rs_kl_log_softmax(const float *x, size_t V, double *out);

/*! rs_kl_compare_lp() : the measurements of one position from log-probabilities lp (reference)
 *  and lq (run), [V] each, true token y. Non-finite lq gives finite = 0 (see above); lp must be
 *  finite (the reference). @return RS_OK, RS_E_INVAL (y outside [0, V), NULL),
 *  RS_E_NONFINITE (lp has a NaN/Inf). */
rs_status rs_kl_compare_lp(const double *lp, const double *lq, size_t V, int32_t y, rs_kl_point *out);

/*! rs_kl_compare() : as rs_kl_compare_lp from raw logits; scratch is [2V] doubles. */
rs_status rs_kl_compare(const float *ref_logits, const float *run_logits, size_t V, int32_t y,
                        double *scratch, rs_kl_point *out);

/* Running mean of one quantity (Welford), for progress lines. */
typedef struct rs_kl_running {
    size_t n;
    double mean, m2;
} rs_kl_running;
void rs_kl_running_add(rs_kl_running *r, double x);

/* quantile levels of the summary, ascending: 0.001 0.01 0.05 0.10 0.25 0.50 0.75 0.90 0.95 0.99
 * 0.999 (llama.cpp's KLD set and its Δp set, which adds 0.25 and 0.75) */
#define RS_KL_N_LEVELS 11
/*! rs_kl_level() : level i of the summary quantiles (NaN for i >= RS_KL_N_LEVELS). */
double rs_kl_level(size_t i);

typedef struct rs_kl_summary {
    size_t n;            /* finite positions summarised */
    size_t n_nonfinite;  /* positions left out (run logits non-finite) */
    double mean_kl, mean_kl_se;
    double median_kl, p90_kl, p99_kl, p999_kl, max_kl, min_kl;
    double rms_dp, mean_dp;
    double same_top1_pct, same_top1_se_pct;
    double mean_nll_ref, mean_nll_run; /* PPL = exp(mean NLL) */
    double window_mean_kl[RS_KL_N_WINDOWS]; /* NaN if empty */
    size_t window_n[RS_KL_N_WINDOWS];
    /* the llama.cpp report set (see the top of this header) */
    double kl_q[RS_KL_N_LEVELS];   /* KL at rs_kl_level(i); median_kl .. p999_kl repeat 5, 7, 9, 10 */
    double dp_q[RS_KL_N_LEVELS];   /* Δp at rs_kl_level(i) */
    double min_dp, max_dp;
    double mean_dp_se, rms_dp_se;
    double ln_ppl_ratio, ln_ppl_ratio_se; /* mean(nll_run - nll_ref) = ln(PPL(run) / PPL(ref)), its SE */
} rs_kl_summary;

/*! rs_kl_window_of() : window index of position t (0-based); RS_KL_N_WINDOWS - 1 for t >= 64K
 *  (positions past 128K would also land there; the evaluator stops at 131072). */
size_t rs_kl_window_of(size_t t);

/*! rs_kl_window_bounds() : [*lo, *hi) positions of window w. */
void rs_kl_window_bounds(size_t w, size_t *lo, size_t *hi);

/*! rs_kl_quantile() : linear-interpolation quantile q in [0,1] of sorted[n] (n >= 1). */
double rs_kl_quantile(const double *sorted, size_t n, double q);

/* Accumulator of a summary, fed row segment by row segment (e.g. one book of an HDF5 log at a
 * time), so only the KL values themselves (for the exact quantiles) are held. */
typedef struct rs_kl_acc {
    double s_kl, s_kl2, s_dp, s_dp2, s_nr, s_nq;
    size_t n, n_agree, n_nonfinite;
    double wsum[RS_KL_N_WINDOWS];
    size_t wn[RS_KL_N_WINDOWS];
    double *vals; /* finite KL values so far [n] (malloc'd) */
    double *dvals; /* their Δp [n] (malloc'd, the same capacity) */
    double s_dp4, s_d, s_d2; /* sum Δp^4; sum and sum of squares of d = nll_run - nll_ref */
    size_t cap;
} rs_kl_acc;

/*! rs_kl_acc_add() : add positions t0 .. t0+n-1 of one stream (t = absolute position, used for
 *  the windows); arrays are [n]. @return RS_OK, RS_E_NOMEM, RS_E_INVAL. */
rs_status rs_kl_acc_add(rs_kl_acc *a, size_t t0, size_t n, const double *kl, const double *dp,
                        const uint8_t *agree, const double *nll_ref, const double *nll_run);

/*! rs_kl_acc_finish() : the summary; frees the accumulator's values (*a is reset). */
rs_status rs_kl_acc_finish(rs_kl_acc *a, rs_kl_summary *out);

/*! rs_kl_acc_free() : discard without a summary. NULL-safe. */
void rs_kl_acc_free(rs_kl_acc *a);

/*! rs_kl_summary_compute() : summary of n_books rows of row length `stride`; row b holds
 *  valid positions [0, len[b]) (len[b] <= stride). kl, dp, nll_ref, nll_run are [n_books][stride];
 *  agree is [n_books][stride] (0/1). Non-finite kl values are counted in n_nonfinite.
 *  @return RS_OK, RS_E_NOMEM (the sort copy), RS_E_INVAL. */
rs_status rs_kl_summary_compute(size_t n_books, size_t stride, const size_t *len, const double *kl,
                                const double *dp, const uint8_t *agree, const double *nll_ref,
                                const double *nll_run, rs_kl_summary *out);

#ifdef __cplusplus
}
#endif
#endif /* RS_KL_H */
