/* rs_ssm.h — one head's SSM recurrences (Mamba-2, Gated DeltaNet): record types and the
 * conventional step (read S, update, write S, output). Plain C11 CPU reference.
 *
 * Legend: d_v = value dim (rows), d_k = key dim (columns). A state S is d_v x d_k,
 * row-major with d_k contiguous: S[r * d_k + c] (the [H, V, K] "K-last" layout of vLLM,
 * FlashInfer and the ReplaySSM kernels).
 *
 *   Mamba-2:  S_t = alpha_t S_{t-1} + v_t k_t^T                     o_t = S_t q_t
 *             (v = dt * x, k = B, q = C as the model feeds them)
 *   GDN:      u_t = beta_t (v_t - alpha_t S_{t-1} k_t)
 *             S_t = alpha_t S_{t-1} + u_t k_t^T                     o_t = S_t q_t
 *
 * Arithmetic is fp32 with a fixed order (no FMA contraction: the build uses
 * -ffp-contract=off) so that the engine's replay forms (rs_head.h) and the CUDA twins can be
 * compared bit for bit where the algebra coincides (e.g. a window of one step):
 *   S[r,c] <- alpha * S[r,c] + v[r] * k[c]      dot products summed over c = 0..d_k-1 in order.
 */
#ifndef RS_SSM_H
#define RS_SSM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which recurrence a head runs. */
typedef enum rs_ssm_kind {
    RS_SSM_MAMBA2 = 0,
    RS_SSM_GDN = 1
} rs_ssm_kind;

/* One token's inputs to one head (pointers into caller storage, not owned).
 * A record as stored in the ring buffer is (alpha, v, k) for Mamba-2 and
 * (alpha, beta, u, v, k) for GDN, where u is derived from the state (see rs_head.h). */
typedef struct rs_ssm_token {
    float alpha;    /* decay in [0, 1] (Mamba-2: exp(dt*A); GDN: exp(g)) */
    float beta;     /* GDN write strength in [0, 1]; ignored by Mamba-2 */
    const float *v; /* [d_v] Mamba-2: dt * x; GDN: value */
    const float *k; /* [d_k] Mamba-2: B; GDN: L2-normalised key */
    const float *q; /* [d_k] Mamba-2: C; GDN: query (normalised, scaled) */
} rs_ssm_token;

/*! rs_ssm_kind_name() : "mamba2" or "gdn". */
const char *rs_ssm_kind_name(rs_ssm_kind kind);

/*! rs_ssm_output() : o[d_v] = S q (each row summed over c in order). */
void rs_ssm_output(const float *S, size_t d_v, size_t d_k, const float *q, float *o);

/*! rs_ssm_mamba2_step() : conventional Mamba-2 step in place on S[d_v x d_k];
 *  o[d_v] = S_t q if o is not NULL. */
void rs_ssm_mamba2_step(float *S, size_t d_v, size_t d_k, float alpha, const float *v,
                        const float *k, const float *q, float *o);

/*! rs_ssm_gdn_step() : conventional GDN step in place on S[d_v x d_k]; writes the
 *  correction u[d_v] (needed by ReplaySSM records) and, if o is not NULL, o[d_v] = S_t q. */
void rs_ssm_gdn_step(float *S, size_t d_v, size_t d_k, float alpha, float beta,
                     const float *v, const float *k, const float *q, float *u, float *o);

/*! rs_ssm_first_nonfinite() : index of the first NaN/Inf in x[n], or n if all finite. */
size_t rs_ssm_first_nonfinite(const float *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* RS_SSM_H */
