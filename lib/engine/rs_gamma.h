/* rs_gamma.h — THE cumulative decay convention of replayssm (one function, used everywhere).
 *
 * gamma_{i:j} = prod_{l=i..j} alpha_l (1 when i > j). Replay needs, for a window of n
 * records ending at the current position, the suffix products gamma_{j+1:n} (coefficient
 * of record j) and gamma_{1:n} (coefficient of the checkpoint).
 *
 * Convention: running products of the stored fp32 alpha, multiplied from the newest record
 * backwards (g = 1; g = g * alpha_j), accumulated in float64 and rounded once to fp32 per
 * coefficient. Not exp(sum of log-decays). Why:
 *  - no transcendental: the CPU reference and a CUDA kernel produce the same bits (expf
 *    and __expf / libdevice differ in the last ulp; a product chain is plain IEEE; a GPU
 *    kernel does the same <= L + T scalar fp64 multiplies per head, or an FMA-based
 *    double-float product, negligible next to the d_v x d_k work);
 *  - a window of one record gives gamma = alpha exactly, so ReplaySSM with L = 1 is the
 *    conventional step bit for bit (a test checks it);
 *  - suffix products never divide: prefix-product ratios P_n / P_j underflow for fast
 *    heads (alpha ~ 1e-5 over 64 steps is below FLT_MIN) and amplify rounding;
 *  - why float64 and not an fp32 chain: for slow heads alpha = 1 - e with e ~ 1e-4, the
 *    fp32 product (1-e1)(1-e2) loses the second-order term e1*e2 (below half an ulp)
 *    always in the same direction: a systematic bias of ~(L-1) e^2 per flush in the
 *    decay, which accumulates over the head's 1/(1-alpha) memory to ~1e-4 relative
 *    (measured: 5.5x the conventional fp32 error at alpha ~ 0.9999, L = 4). With one final
 *    rounding the decay error is unbiased, like the conventional step's.
 * Kernels that receive log-decays (dt*A, g) should form alpha = exp(.) once per record
 * when writing the ring and then use these products.
 */
#ifndef RS_GAMMA_H
#define RS_GAMMA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_gamma_suffix() : g[j] = alpha[j] * alpha[j+1] * ... * alpha[n-1] for j = 0..n-1 and
 *  g[n] = 1, accumulated from j = n-1 down to 0 in float64, each g[j] rounded once to fp32
 *  (alpha[n], g[n+1]).
 *  In 1-based paper terms for a window of n records: g[0] = gamma_{1:n} (checkpoint
 *  coefficient) and record j (1-based) has coefficient g[j] = gamma_{j+1:n}. */
void rs_gamma_suffix(const float *alpha, size_t n, float *g);

#ifdef __cplusplus
}
#endif
#endif /* RS_GAMMA_H */
