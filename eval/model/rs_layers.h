/* rs_layers.h — the scalar building blocks of the hybrid model forward (fp32 CPU reference).
 *
 * Every function works on one vector (or one row, or one channel range) in plain C11: no
 * threads, no BLAS, no allocation. The backend (rs_backend.h) batches them over the rows of
 * a chunk and threads them; the tests check them against float64 / hand-computed values.
 * The formulas are those of transformers 5.17 (modeling_qwen3_5.py, modeling_qwen3_next.py,
 * modeling_nemotron_h.py); docs/models.md lists them layer by layer.
 *
 * Reductions over a row (sums of squares of the norms, L2 norm, softmax denominator) are
 * accumulated in double: the result is within fp32 rounding of the exact value whatever
 * order the reference (PyTorch) used.
 */
#ifndef RS_LAYERS_H
#define RS_LAYERS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which weight an RMSNorm applies. */
typedef enum rs_norm_weight {
    RS_NORM_PLAIN = 0,   /* y = w * x_hat           (NemotronH, Zamba2, gated norms) */
    RS_NORM_ONE_PLUS = 1 /* y = x_hat * (1 + w)     (Qwen3.5 / Qwen3-Next: zero-init weight) */
} rs_norm_weight;

/* Order of gate and norm in a gated RMSNorm. */
typedef enum rs_gate_order {
    RS_GATE_AFTER_NORM = 0, /* Qwen3.5 GDN: y = w * rms(x) * silu(z), normalised over the group */
    RS_GATE_BEFORE_NORM = 1 /* Mamba-2 (Zamba2RMSNormGated): t = x * silu(z); y = w * rms(t) */
} rs_gate_order;

/* ---- scalar activations (torch semantics) ---- */
float rs_silu(float x);     /* x * sigmoid(x) */
float rs_sigmoid(float x);  /* 1 / (1 + exp(-x)), no overflow for large |x| */
float rs_softplus(float x); /* log1p(exp(x)), = x for x > 20 (torch's threshold) */

/*! rs_rmsnorm() : y[n] = x_hat * weight, x_hat = x / sqrt(mean(x^2) + eps).
 *  kind: RS_NORM_PLAIN (w) or RS_NORM_ONE_PLUS (1 + w). y may alias x. */
void rs_rmsnorm(const float *x, size_t n, const float *w, float eps, rs_norm_weight kind, float *y);

/*! rs_rmsnorm_gated() : gated RMSNorm of x[n] with gate z[n], normalised per group of gs
 *  elements (n a multiple of gs), plain weight w[gs or n] (w_len = gs: the same weight for
 *  every group, Qwen3.5 per-head norm; w_len = n: one weight per element, Mamba-2).
 *  order: see rs_gate_order. y may alias x. */
void rs_rmsnorm_gated(const float *x, const float *z, size_t n, size_t gs, const float *w,
                      size_t w_len, float eps, rs_gate_order order, float *y);

/*! rs_l2norm() : x[n] *= 1 / sqrt(sum(x^2) + eps) in place (eps on the SUM, FLA / HF l2norm). */
void rs_l2norm(float *x, size_t n, float eps);

/*! rs_conv1d_causal() : causal depthwise conv1d over T steps for channels [c0, c1).
 *  x[T][ldx]: inputs (channel c of step t at x[t*ldx + c]); state[C][K-1]: the K-1
 *  previous inputs of every channel, oldest first (updated: on return it holds the last
 *  K-1 inputs); w[C][K] (w[c][K-1] multiplies the current input); bias[C] or NULL;
 *  silu: apply SiLU. out[T][ldo]. out must not alias x.
 *  out[t][c] = act(bias[c] + sum_{i<K} w[c][i] * in(t - (K-1) + i)). */
void rs_conv1d_causal(const float *x, size_t ldx, size_t T, float *state, const float *w,
                      const float *bias, size_t K, size_t c0, size_t c1, int silu, float *out,
                      size_t ldo);

/*! rs_rope_inv_freq() : inv_freq[rot/2] = 1 / theta^(2i/rot) computed as torch does in
 *  fp32 (arange(0, rot, 2).float() / rot, then theta ** that). rot even. */
void rs_rope_inv_freq(double theta, size_t rot, float *inv_freq);

/*! rs_rope_cos_sin() : cos[rot/2], sin[rot/2] of the angles inv_freq[i] * pos (fp32 product,
 *  like torch's inv_freq @ position_ids). */
void rs_rope_cos_sin(const float *inv_freq, size_t rot, size_t pos, float *cos_, float *sin_);

/*! rs_rope_apply() : rotate_half RoPE on the first rot dims of x (the rest untouched):
 *  x'[i] = x[i] c_i - x[i+h] s_i, x'[i+h] = x[i+h] c_i + x[i] s_i, h = rot/2. */
void rs_rope_apply(float *x, size_t rot, const float *cos_, const float *sin_);

/*! rs_attention_row_ref() : one query q[hd] against keys K[n][hd], values V[n][hd]
 *  (row stride hd): out[hd] = softmax(scale * K q) V. Scalar reference (the backend uses
 *  BLAS); scores[n] is caller scratch. n >= 1. */
void rs_attention_row_ref(const float *q, const float *K, const float *V, size_t n, size_t hd,
                          float scale, float *scores, float *out);

/*! rs_softmax_inplace() : s[n] <- exp(s - max) / sum (sum in double). n >= 1. */
void rs_softmax_inplace(float *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* RS_LAYERS_H */
