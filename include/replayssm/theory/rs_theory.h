/* rs_theory.h — the closed forms of Appendix C: what decode costs, where ReplaySSM pays
 * off, which window is best, and how rounding errors accumulate in a recurrent state.
 *
 * Legend: d_v x d_k = one head's state (d_k contiguous); b = bytes per state element
 * (from rs_format_bytes_per_element, scales included); L = replay window (records per
 * flush); h = buffered records before the current step; r = bytes of one buffered record;
 * T = draft tokens per verification; a_bar = mean accepted tokens per step;
 * M_S = bytes of one head's state; alpha = per-step decay; t = steps since the start.
 *
 * Sources (digest = shared/paper/replayssm-digest.md, paper = arXiv:2610.13778 App. C):
 *   C.1 arithmetic intensity      digest §6, paper C.1
 *   C.2 SSM/attention crossover   digest §6, paper C.2
 *   C.3 traffic per window        digest §2, paper C.3
 *   C.4 FLOPs per step            digest §6, paper C.4
 *   C.5 optimal window            digest §6, paper C.5
 *   C.6 error accumulation        digest §4, paper C.6
 * Derivations: docs/theory.md. Everything here is pure arithmetic in double (no I/O, no
 * allocation); functions with preconditions return rs_status, plain formulas return the
 * value and document their domain. The Monte Carlo checks are in rs_theory_mc.h.
 */
#ifndef RS_THEORY_H
#define RS_THEORY_H

#include <stddef.h>

#include "replayssm/engine/rs_ssm.h"    /* rs_ssm_kind */
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- model shapes (digest §7) --------------------------------------------------------- */

typedef struct rs_model_shape {
    const char *name;          /* CLI key, e.g. "nemotron-3-super" */
    const char *full_name;     /* e.g. "Nemotron-3-Super-120B-A12B (NVFP4)" */
    rs_ssm_kind ssm;
    unsigned ssm_layers;       /* recurrent layers */
    unsigned attn_layers;      /* full-attention layers */
    unsigned key_heads;        /* SSM key heads (groups) */
    unsigned value_heads;      /* SSM value heads: one d_v x d_k state each */
    unsigned d_k, d_v;
    unsigned attn_kv_heads;    /* attention KV heads; 0 = not in our sources (no C.2) */
    unsigned attn_head_dim;    /* attention head dim; 0 = unknown */
    double kv_bytes;           /* bytes per KV-cache element as served (FP8 1, BF16 2) */
    const char *source;        /* where the numbers come from */
} rs_model_shape;

/*! rs_theory_model_count() : number of built-in model shapes (the four of digest §7). */
size_t rs_theory_model_count(void);

/*! rs_theory_model_at() : shape i (0 <= i < count), or NULL. */
const rs_model_shape *rs_theory_model_at(size_t i);

/*! rs_theory_model_find() : shape by CLI key (exact) or full name prefix (case-insensitive).
 *  @return RS_OK; RS_E_INVAL listing the valid keys. */
rs_status rs_theory_model_find(const char *name, const rs_model_shape **out);

/* ---- C.1 arithmetic intensity of conventional decode ------------------------------------ */

/*! rs_theory_conv_step_flops() : FLOPs of one conventional Mamba-2 step of one head:
 *  alpha S (d_v d_k) + v k^T (d_v d_k) + sum (d_v d_k) + S q (d_v (2 d_k - 1)) =
 *  5 d_v d_k - d_v. */
double rs_theory_conv_step_flops(unsigned d_v, unsigned d_k);

/*! rs_theory_conv_step_bytes() : state bytes moved per conventional step: read + write,
 *  2 b d_v d_k (inputs and outputs, O(d_v + d_k), are not counted, as in the paper). */
double rs_theory_conv_step_bytes(unsigned d_v, unsigned d_k, double b);

/*! rs_theory_intensity() : (5 d_v d_k - d_v) / (2 b d_v d_k) FLOP/byte = (5 - 1/d_k)/(2b). */
double rs_theory_intensity(unsigned d_v, unsigned d_k, double b);

/*! rs_theory_intensity_limit() : 5/(2b), the large-d_k limit the paper quotes
 *  (0.625 -> "0.63" for FP32, 1.25 for FP16). */
double rs_theory_intensity_limit(double b);

/* ---- C.2 hybrid crossover ------------------------------------------------------------- */

typedef struct rs_crossover {
    double ssm_bytes_per_step;   /* all SSM layers, one sequence: 2 * layers * heads * d_v d_k b */
    double attn_bytes_per_token; /* all attention layers: layers * 2 (K,V) * kv_heads * hd * kv_b */
    double n_tokens;             /* context length where attention reads equal SSM traffic */
} rs_crossover;

/*! rs_theory_crossover() : C.2 for model m with state bytes/element b (FP32: 4).
 *  @return RS_OK; RS_E_UNSUPPORTED when m's attention KV shape is not known. */
rs_status rs_theory_crossover(const rs_model_shape *m, double b, rs_crossover *out);

/* ---- C.3 traffic per window (one head) ---------------------------------------------------- */

/*! rs_theory_record_bytes() : r = 2 d_v + 2 d_k + 4 (bf16 v or u, bf16 k, fp32 decay). */
double rs_theory_record_bytes(unsigned d_v, unsigned d_k);

/*! rs_theory_mconv() : conventional bytes over L steps, 2 L b d_v d_k (L >= 1). */
double rs_theory_mconv(unsigned L, unsigned d_v, unsigned d_k, double b);

/*! rs_theory_mreplay() : ReplaySSM (Algorithm 1) bytes over a window of L steps (L >= 1):
 *  (L+1) b d_v d_k  (L checkpoint reads + one write)
 *  + (L-1)(L+2)/2 r (step h reads the h-1 earlier records, non-flush steps write theirs).
 *  At L = 1 it equals rs_theory_mconv(1, ...). */
double rs_theory_mreplay(unsigned L, unsigned d_v, unsigned d_k, double b, double r);

/*! rs_theory_msplit() : two-precision variant (Algorithm 3 with T = 1, our extension, not in
 *  the paper): L-1 LP reads + 1 HP read + 1 HP write + 1 LP write of the checkpoint, plus the
 *  same record traffic: (L b_lp + 2 b_hp) d_v d_k + (L-1)(L+2)/2 r. */
double rs_theory_msplit(unsigned L, unsigned d_v, unsigned d_k, double b_lp, double b_hp, double r);

/* ---- C.4 FLOPs of one decode step with h buffered records ---------------------------------- */

/*! rs_theory_flops_output_only() : 2 d_v d_k + 2 (h+1)(d_v + d_k) (S_ckpt q, k_j.q for the
 *  h+1 records, weighted sum of the v_j). */
double rs_theory_flops_output_only(unsigned h, unsigned d_v, unsigned d_k);

/*! rs_theory_flops_materialised() : 2 (h+3) d_v d_k (rebuild S from S_ckpt and h+1 records:
 *  2 (h+2) d_v d_k, then S q: 2 d_v d_k). */
double rs_theory_flops_materialised(unsigned h, unsigned d_v, unsigned d_k);

/* ---- C.5 optimal window ----------------------------------------------------------------- */

/*! rs_theory_amortised_bytes() : f(L) = M_S/a + M_S/L + r L/(2a) - r/2 + r T/a - r T/L,
 *  bytes per committed token (paper C.5). With a = T = 1, f(L) = M_replay(L)/L. */
double rs_theory_amortised_bytes(double L, double M_S, double r, double T, double a_bar);

/*! rs_theory_optimal_window() : L* = sqrt(2 a_bar (M_S/r - T)), the zero of f'(L).
 *  @return RS_OK; RS_E_INVAL unless M_S > 0, r > 0, T >= 1, 0 < a_bar <= T and M_S/r > T. */
rs_status rs_theory_optimal_window(double M_S, double r, double T, double a_bar, double *L_star);

/*! rs_theory_optimal_window_numeric() : argmin of f over [1, L_max] by GSL's Brent
 *  minimiser (an independent check of the closed form; tolerance 1e-10 relative).
 *  @return RS_OK; RS_E_INVAL as above or when the minimum is not bracketed in [1, L_max]. */
rs_status rs_theory_optimal_window_numeric(double M_S, double r, double T, double a_bar, double L_max,
                                           double *L_star);

/* ---- C.6 accumulation of rounding errors ---------------------------------------------------- */

typedef enum rs_storage {
    RS_STORE_CONV = 0,   /* state stored (rounded) every step and fed back */
    RS_STORE_SHARED = 1, /* one checkpoint, rounded at each flush (every L steps), fed back */
    RS_STORE_SPLIT = 2   /* HP checkpoint carries the recurrence; LP copy read only, never fed back */
} rs_storage;

/*! rs_storage_name() : "conv", "shared", "split". */
const char *rs_storage_name(rs_storage s);

/* Moments of one rounding: e = Q(x) - x has mean b and variance var. */
typedef struct rs_err_moments {
    double mean;
    double var;
} rs_err_moments;

/*! rs_theory_err_accum() : mean and variance of the accumulated deviation D_t of the state
 *  (stored copy minus exact), with constant decay alpha in (0, 1], per-rounding moments q
 *  (the stored format; for split, the LP copy) and hp (split only: the HP checkpoint's
 *  rounding, NULL = exact), independent roundings, D_0 = 0. t = steps, t = INFINITY for the
 *  limit (observed right after a flush for shared and split).
 *   conv   D_t = alpha D_{t-1} + e_t:          mean b (1-alpha^t)/(1-alpha),
 *                                              var  s2 (1-alpha^{2t})/(1-alpha^2);
 *   shared rounding only at flushes t = kL; between flushes D decays:
 *          D_t = alpha^{t-kL} D_(k),  D_(k) = alpha^L D_(k-1) + e_k:
 *          mean alpha^{t-kL} b (1-alpha^{kL})/(1-alpha^L), var alpha^{2(t-kL)} s2 (1-alpha^{2kL})/(1-alpha^{2L});
 *   split  the deviation the outputs see: one LP rounding at flush k decayed by alpha^{t-kL}
 *          (for k >= 1; zero before the first flush), plus alpha^{t-kL} alpha^L D_HP_(k-1), the
 *          HP checkpoint's own shared-type accumulation (hp moments) before that flush:
 *          mean alpha^{t-kL} (b_lp + b_hp (G_k - 1)), G_k = (1-alpha^{kL})/(1-alpha^L), var alike
 *          with alpha^{2L}; independent of t when hp is exact (NULL).
 *  @return RS_OK; RS_E_INVAL for alpha outside (0, 1], t < 0, L = 0 (shared/split), var < 0. */
rs_status rs_theory_err_accum(rs_storage s, const rs_err_moments *q, const rs_err_moments *hp, double alpha,
                              unsigned L, double t, rs_err_moments *out);

#ifdef __cplusplus
}
#endif
#endif /* RS_THEORY_H */
