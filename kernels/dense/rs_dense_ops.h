/* rs_dense_ops.h — the dense ops of the GPU evaluator's forward (kernels/dense/, used by eval/gpu/):
 * the CUDA twins of the CPU backend's ops (eval/model/rs_backend_cpu.c, rs_layers.c) and of the
 * per-row tasks of eval/model/rs_forward.c, plus the on-device scoring (rs_kl.h's definitions).
 * Plain parameters only (sizes, device pointers, strides, a stream): nothing here knows a model.
 * GEMMs are not here: rs_dense_gemm.h calls cuBLAS (this file has the TF32 split they use).
 *
 * Conventions: fp32, row-major, every pointer device memory, a matrix is (pointer, row stride
 * "ld" in floats). Rows of a stacked buffer: run r, chunk position t -> row r * T + t (as the
 * CPU forward). Every launcher is asynchronous on stream s, never allocates, never syncs, and
 * returns RS_OK, RS_E_INVAL (bad sizes / NULL, checked on the host before any launch) or
 * RS_E_CUDA (the launch failed), with the message in rs_last_error().
 *
 * Numerics (each op's tolerance against the CPU op is stated in tests/cuda/): the row
 * reductions of the norms and the L2 norm accumulate in double as the CPU does; activations use
 * the same formulas (rs_silu, rs_sigmoid, rs_softplus with torch's threshold 20) in fp32 with
 * IEEE expf/log1pf (the file is built with --fmad=false --ftz=false --prec-div=true
 * --prec-sqrt=true, like kernels/).
 */
#ifndef RS_DENSE_OPS_H
#define RS_DENSE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef RS_CUDA_STREAM_DEFINED
#define RS_CUDA_STREAM_DEFINED
typedef struct CUstream_st *rs_cuda_stream;
#endif

/* Which weight an RMSNorm applies (the values of eval/model/rs_layers.h's rs_norm_weight). */
typedef enum rsg_norm_weight {
    RSG_NORM_PLAIN = 0,   /* y = w * x_hat */
    RSG_NORM_ONE_PLUS = 1 /* y = x_hat * (1 + w) */
} rsg_norm_weight;

/* Order of gate and norm in a gated RMSNorm (the values of rs_layers.h's rs_gate_order). */
typedef enum rsg_gate_order {
    RSG_GATE_AFTER_NORM = 0, /* y = w * rms(x) * silu(z), normalised over the group */
    RSG_GATE_BEFORE_NORM = 1 /* t = x * silu(z); y = w * rms(t) */
} rsg_gate_order;

/* Y[r*T + t] = E[tokens[t]] for r < R, t < T (the same tokens for every run); E [V][d].
 * A token outside [0, V) writes NaN rows (the host checks tokens before upload). */
rs_status rsg_embed(const int32_t *tokens, int T, int R, const float *E, int V, int d, float *Y,
                    size_t ldy, rs_cuda_stream s);

/* Row-wise RMSNorm of M rows of n (rs_rmsnorm); Y may equal X (same ld). One block per row;
 * the same fp32 operations as the CPU, the double sum of squares in another order: in practice
 * bit-identical (the double sum rounds to another float only near a tie). */
rs_status rsg_rmsnorm(int M, int n, const float *X, size_t ldx, const float *w, float eps,
                      rsg_norm_weight kind, float *Y, size_t ldy, rs_cuda_stream s);

/* Row-wise gated RMSNorm of M rows of n, groups of gs, gates Z (rs_rmsnorm_gated). Y may
 * equal X (same ld); Z must not alias Y. One block per (row, group). */
rs_status rsg_rmsnorm_gated(int M, int n, int gs, const float *X, size_t ldx, const float *Z,
                            size_t ldz, const float *w, int w_len, float eps, rsg_gate_order order,
                            float *Y, size_t ldy, rs_cuda_stream s);

/* The twin compute mode's norms (docs/evaluator.md "The twin compute mode"): as rsg_rmsnorm,
 * rsg_rmsnorm_gated and rsg_gdn_prep, but each double sum of squares is added by one thread in index
 * order, the order of rs_layers.c (inv_rms_, rs_l2norm): the same double, so the same bits as the
 * CPU's ops (test_gpu_ops "twin norms" demands it). */
rs_status rsg_rmsnorm_seq(int M, int n, const float *X, size_t ldx, const float *w, float eps,
                          rsg_norm_weight kind, float *Y, size_t ldy, rs_cuda_stream s);
rs_status rsg_rmsnorm_gated_seq(int M, int n, int gs, const float *X, size_t ldx, const float *Z,
                                size_t ldz, const float *w, int w_len, float eps, rsg_gate_order order,
                                float *Y, size_t ldy, rs_cuda_stream s);
rs_status rsg_gdn_prep_seq(int M, int Hk, int dk, int Hv, float *QKV, size_t ldq, const float *a,
                           const float *b, const float *A_log, const float *dt_bias, float *alpha,
                           float *beta, rs_cuda_stream s);

/* Causal depthwise conv1d (rs_conv1d_causal) for R runs of T steps x C channels: run r reads
 * rows X + r*T*ldx, writes Y + r*T*ldy, and carries state + r*C*(K-1) ([C][K-1] oldest first,
 * updated). bias may be NULL; silu: apply SiLU. Y must not alias X. K <= 8, R <= 65535.
 * One thread per (run, channel) walks the T steps in order: rs_conv1d_causal's arithmetic. */
rs_status rsg_conv1d(int R, int T, int C, int K, const float *X, size_t ldx, float *state,
                     const float *w, const float *bias, int silu, float *Y, size_t ldy,
                     rs_cuda_stream s);

/* GDN prep of M rows (eval/model/rs_forward.c gdn_prep_row_): in each row of QKV [M][ldq]
 * (q [Hk][dk] | k [Hk][dk] | v ...), q and k are L2-normalised per key head (eps 1e-6 on the
 * sum, rs_l2norm) and q is scaled by dk^-0.5, in place; per value head h:
 * alpha[row*Hv + h] = exp(-exp(A_log[h]) * softplus(a[row*Hv + h] + dt_bias[h])),
 * beta[row*Hv + h] = sigmoid(b[row*Hv + h]). */
rs_status rsg_gdn_prep(int M, int Hk, int dk, int Hv, float *QKV, size_t ldq, const float *a,
                       const float *b, const float *A_log, const float *dt_bias, float *alpha,
                       float *beta, rs_cuda_stream s);

/* Mamba-2 prep of M rows (mamba_prep_row_): dt = softplus(dt_raw[row*ld_dt + h] + dt_bias[h])
 * (clamp_min: dt = max(dt, dt_min)), alpha[row*H + h] = exp(dt * -exp(A_log[h])),
 * V[row*ldv + h*P + p] = dt * X[row*ldx + h*P + p]. */
rs_status rsg_mamba_prep(int M, int H, int P, const float *dt_raw, size_t ld_dt,
                         const float *dt_bias, const float *A_log, int clamp_min, float dt_min,
                         const float *X, size_t ldx, float *alpha, float *V, size_t ldv,
                         rs_cuda_stream s);

/* Mamba-2 D skip: O[row*ldo + h*P + p] += X[row*ldx + h*P + p] * D[h] for M rows (as the CPU:
 * o = o + x * D). Rows whose O is NaN stay NaN. */
rs_status rsg_mamba_dskip(int M, int H, int P, float *O, size_t ldo, const float *X, size_t ldx,
                          const float *D, rs_cuda_stream s);

/* Partial RoPE (rs_rope_apply, rotate_half on dims [0, rot) of each head) of M = R*T rows at
 * positions pos0 + (row % T): query heads h < Hq at Q + row*ldq + h*q_hstride, key heads
 * g < Hk at K + row*ldk + g*hd. cos/sin of position p, pair i: from inv_freq[rot/2] as
 * rs_rope_cos_sin does (fp32 angle inv_freq[i] * (float)p, then cosf/sinf). */
rs_status rsg_rope(int M, int T, int64_t pos0, float *Q, size_t ldq, int q_hstride, int Hq,
                   float *K, size_t ldk, int Hk, int hd, int rot, const float *inv_freq,
                   rs_cuda_stream s);

/* Append the chunk's keys and values to the KV caches: for run r < R, t < T, KV head g < Hkv:
 * Kc[((r*Hkv + g)*cap + pos0 + t)*hd ..] = K[(r*T + t)*ldk + g*hd ..], same for V. */
rs_status rsg_kv_append(int R, int T, int Hkv, int hd, int64_t pos0, size_t cap, const float *K,
                        size_t ldk, const float *V, size_t ldv, float *Kc, float *Vc,
                        rs_cuda_stream s);

/* Causal GQA attention, flash-style (online softmax, never an N x N matrix), fp32 with fp32
 * accumulation, for R runs at once: query (r, t, h) at Q + (r*T + t)*ldq + h*q_hstride sees the
 * cache positions 0 .. pos0 + t of run r (Kc, Vc [R][Hkv][cap][hd], KV head h / (H/Hkv)),
 * scores scaled by `scale`; output at O + (r*T + t)*ldo + h*hd. hd <= 256, R <= 65535,
 * pos0 + T <= cap, pos0 + T < 2^31; reads only positions < pos0 + T. Blocks of 64 query rows
 * x 64-key tiles (simt) or 32-key tiles (tf32x3), up to 212 / 200 KiB of dynamic shared memory
 * (set per launch with cudaFuncSetAttribute); cp.async / float4 loads when hd % 4 == 0 and Kc, Vc
 * are 16-byte aligned. */
typedef struct rsg_attn_args {
    int R, T, H, Hkv, hd;
    int64_t pos0;
    size_t cap;
    const float *Q;
    size_t ldq;
    int q_hstride;
    const float *Kc, *Vc;
    float scale;
    float *O;
    size_t ldo;
    int impl; /* RSG_ATTN_*: which kernel (0 = the default; zero-initialised callers get it) */
} rsg_attn_args;
rs_status rsg_attention(const rsg_attn_args *a, rs_cuda_stream s);

/* Attention kernels. RSG_ATTN_DEFAULT: RSG_ATTN_TF32X3, or what the environment variable
 * RS_GPU_ATTN names ("tf32x3", "simt", "tf32x3-v2"; read once) for comparisons.
 * RSG_ATTN_SIMT: fp32 FMAs on the CUDA cores (rs_dense_attn.cu). RSG_ATTN_TF32X3 (the same kernel as
 * RSG_ATTN_TF32X3_V2, rs_dense_attn_tc.cu) uses mma.sync TF32 with the 3xTF32 split (a = hi + lo,
 * hi*hi' + hi*lo' + lo*hi') for Q K^T and P V and an fp32 online softmax, and sums P V per key tile
 * in fresh accumulators added into O on the CUDA cores with one rounding to nearest per tile.
 * All are deterministic. */
enum { RSG_ATTN_DEFAULT = 0, RSG_ATTN_SIMT = 1, RSG_ATTN_TF32X3 = 2, RSG_ATTN_TF32X3_V2 = 3 };
/* the kernel RSG_ATTN_DEFAULT resolves to, and a kernel's name ("simt", "tf32x3", "tf32x3-v2") */
int rsg_attention_default_impl(void);
const char *rsg_attention_impl_name(int impl);

/* The twin compute mode's attention (rs_dense_twin.cu): the CPU backend's default attention
 * (cpu_attention_f64_ of eval/model/rs_backend_cpu.c) on the GPU, the same double operations in the
 * same order: s_j = (sum_d q_d k_jd in d order) * scale, m = max_j s_j, e_j = exp(s_j - m) by
 * rs_mathf.h's double exp (0 below -700), sum_j e_j and o_d = sum_j e_j v_jd in key order, one rounding
 * (float)(o_d / sum). One block of 256 threads per (run, position, head); hd <= 256. The same
 * arguments as rsg_attention (impl ignored). Every output is the CPU's bit for bit (test_gpu_ops
 * "twin attention"). For checking, not speed: no tensor cores, double on the CUDA cores. */
rs_status rsg_attention_twin(const rsg_attn_args *a, rs_cuda_stream s);

/* The twin compute mode's GEMM (rs_dense_twin.cu): Y [M][N] (ld ldy) = fl(beta Y + X W^T) as the CPU
 * backend's default GEMM (cpu_linear_f64_: OpenBLAS dgemm on double copies, one rounding) computes it
 * on the development machine, sum by sum: the CPU's column slabs for `cpu_threads` threads and their
 * column blocks of at most `blk` doubles (quant/rs_gemm_blocks.h) and, per block, OpenBLAS 0.3.21 SkylakeX dgemm's summation order (the small-matrix kernel's 8 lane sums and
 * reduction trees, or the blocked kernel's K blocks of 384; rs_dense_twin.cu has the rules). X [M][ldx]
 * holds M / Mc CPU GEMMs of Mc rows each (streams stacked; the small kernel's choice depends on Mc);
 * W [N][K] row-major. Bit for bit the CPU's (test_gpu_ops "twin GEMM", against the CPU backend with
 * the machine's OpenBLAS). */
rs_status rsg_linear_twin(size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W, float beta, float *Y,
                          size_t ldy, size_t Mc, int cpu_threads, size_t blk, rs_cuda_stream s);

/* The twin compute mode's SSM recurrence (rs_dense_twin.cu): the CPU engine's conventional fp32 step
 * (engine/rs_ssm.c rs_ssm_gdn_step / rs_ssm_mamba2_step with rs_dot.h's sequential dots) for the
 * runs named in `runs`, one thread per state row walking the T positions in order:
 *   GDN:     w = sum_c S[c] k[c] (c order); u = beta (v_r - alpha w); S[c] = alpha S[c] + u k[c];
 *   Mamba-2: S[c] = alpha S[c] + v_r k[c];
 *   both:    o_r = sum_c S[c] q[c] (c order)
 * every product and sum rounded to float as the engine does (--fmad=false): the engine's bits
 * (test_gpu_ops "twin recurrence"). Layout (rows of the stacked buffers: row group g, position t
 * -> row g * T + t): the batch has n_streams streams of RS row groups each; twin run i of stream j
 * is row group j * RS + runs[i]; head h reads alpha / beta at [row * ld_a + h], k and q of head
 * h / rep at [row * ld_k + (h / rep) * dk] / [row * ld_q + ...], v_r at [row * ld_v + h * dv + r]
 * and writes o_r at [row * ld_o + h * dv + r]; its state [dv][dk] (row-major, as rs_head) is at
 * S + ((j * nt + i) * H + h) * dv * dk, updated in place. beta is ignored for Mamba-2. */
typedef struct rsg_twin_ssm_args {
    int gdn;               /* 1: the GDN step, 0: Mamba-2 */
    int T, H, rep, dk, dv; /* positions, heads, heads per k/q head, state [dv][dk] */
    int RS, n_streams;     /* row groups per stream, streams of the batch */
    const int *runs;       /* device [nt]: the twin runs' indices in 0 .. RS-1 */
    int nt;
    const float *alpha, *beta;
    size_t ld_a;
    const float *k, *q, *v;
    size_t ld_k, ld_q, ld_v;
    float *o;
    size_t ld_o;
    float *S;
} rsg_twin_ssm_args;
rs_status rsg_twin_ssm(const rsg_twin_ssm_args *a, rs_cuda_stream s);

/* Qwen3.5 output gate: O[row*ldo + h*hd + i] *= sigmoid(Q[row*ldq + h*q_hstride + hd + i]). */
rs_status rsg_attn_gate(int M, int H, int hd, float *O, size_t ldo, const float *Q, size_t ldq,
                        int q_hstride, rs_cuda_stream s);

/* SwiGLU G <- silu(G) * U; relu^2 X <- max(X, 0)^2 (M rows of n; NaN -> 0 as the CPU).
 * Elementwise ops (these, dskip, attn_gate): n <= 256 * 65535 columns. */
rs_status rsg_swiglu(int M, int n, float *G, size_t ldg, const float *U, size_t ldu, rs_cuda_stream s);
rs_status rsg_relu2(int M, int n, float *X, size_t ldx, rs_cuda_stream s);

/* x[i] += y[i] for i < n (residual adds where a GEMM cannot accumulate). */
rs_status rsg_add(size_t n, float *x, const float *y, rs_cuda_stream s);

/* The TF32 split of the split-TF32 GEMMs (rs_dense_gemm.h): for M rows of n,
 * hi = x rounded to nearest TF32 (ties away from zero: cvt.rna.tf32.f32's rounding, by bit
 * arithmetic), lo = (x - hi) rounded likewise; x - hi is exact in fp32, so
 * |x - hi - lo| <= 2^-11 |x - hi| <= 2^-22 |x|, and hi, lo have their low 13 bits zero (exact
 * TF32 operands whether the tensor cores round or truncate). A finite x past TF32's largest value
 * gets hi = x truncated (not inf); a non-finite x gives hi = x, lo = 0 (an inf stays an inf).
 * hi may equal X (same ld: the split in place); lo must not alias either. n <= 256 * 65535. */
rs_status rsg_tf32_split(int M, int n, const float *X, size_t ldx, float *hi, size_t ldh, float *lo,
                         size_t ldl, rs_cuda_stream s);

/* ---- scoring: rs_kl.h's definitions, in double, on the device -------------------------------
 * logits of run r (r = 0 the fp32 reference, 1..R-1 the policy runs), position t at
 * L + (r*T + t)*ldl, [V]. For each position t with true next token y = targets[t]:
 *   nll_ref[t] = -log p_y, top1_ref[t] = argmax p (lowest index on ties);
 *   for each run r >= 1, out index (r-1)*T + t: kl, nll (= -log q_y), dp (= q_y - p_y),
 *   agree (argmax q == argmax p) exactly as rs_kl_compare_lp: log-softmax max-subtracted with the
 *   log-sum-exp in double, the Bregman form of the KL terms, double sums; a run row with a
 *   NaN/Inf logit gives kl = nll = dp = NaN and agree = 0.
 * ref_bad[t] = 1 if the reference row has a NaN/Inf (the caller fails the chunk), else 0;
 * such a position gets nll_ref = NaN, top1_ref = -1 and kl = nll = dp = NaN, agree = 0 in every
 * run. A target outside [0, V) (the host would reject it) gives NaN nll_ref, nll and dp (kl
 * and agree are still computed). Deterministic: fixed reduction order, repeated calls give the
 * same bits. R - 1 <= 65535; `work` 8-byte aligned.
 * work: rsg_score_work_bytes(R, T) bytes of scratch. Results stay on the device (the caller
 * copies the [R-1][T] arrays back once per chunk). */
size_t rsg_score_work_bytes(int R, int T);
rs_status rsg_score(int R, int T, int V, const float *L, size_t ldl, const int32_t *targets,
                    double *nll_ref, int32_t *top1_ref, uint8_t *ref_bad, double *kl, double *nll,
                    double *dp, uint8_t *agree, void *work, rs_cuda_stream s);

#ifdef __cplusplus
}
#endif
#endif /* RS_DENSE_OPS_H */
