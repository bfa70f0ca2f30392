/* rs_dense_ops.cu — the row and elementwise ops of rs_dense_ops.h: embedding, RMSNorms, conv1d, the
 * GDN / Mamba-2 preps, D skip, RoPE, KV append, output gate, SwiGLU, relu^2, add; the TF32 split
 * of the split-TF32 GEMMs (rs_dense_gemm.cu).
 *
 * Each kernel does per element the same fp32 operations, in the same order, as its CPU twin
 * (rs_layers.c, rs_forward.c); built with --fmad=false nothing is contracted. Differences left:
 *   - the row sums of squares (double) are added in another order; the double sum then rounds
 *     to the same float except in rare ties (about 1e-5 per row at n = 2560), where x_hat
 *     moves by 1 ulp;
 *   - none from the transcendentals: exp / log1p / sigmoid / SiLU / softplus and RoPE's cos / sin
 *     are rs_mathf.h's, the CPU's twins (the same bits on both; CUDA's own expf / cosf / sinf are
 *     not glibc's).
 * Launch shapes: "row" kernels take one block per row (blockIdx.x, up to 2^31 - 1 rows);
 * elementwise kernels take blockIdx.x = row and blockIdx.y = 256-column chunk. */
#include <math.h>
#include <stdint.h>

#include "replayssm/quant/rs_mathf.h"
#include "rs_cuda_common.cuh"
#include "rs_dense_ops.h"

#define EW 256 /* threads of an elementwise block (columns per blockIdx.y) */

static int row_threads_(size_t n) /* threads of a row kernel over n elements: 32..256 */
{
    size_t t = (n + 31) / 32 * 32;
    return t < 32 ? 32 : t > 256 ? 256 : (int)t;
}

static rs_status ew_grid_(const char *who, int M, size_t n, dim3 *g)
{
    RS_CHECK((n + EW - 1) / EW <= 65535, RS_E_INVAL, "%s: %zu columns exceed the grid (%d x 65535)", who, n, EW);
    *g = dim3((unsigned)M, (unsigned)((n + EW - 1) / EW));
    return RS_OK;
}

/* ---- embedding ------------------------------------------------------------------------------ */
static __global__ void embed_k_(const int32_t *tokens, int T, const float *E, int V, int d, float *Y, size_t ldy)
{
    const int row = blockIdx.x, tok = tokens[row % T];
    float *y = Y + (size_t)row * ldy;
    const bool ok = tok >= 0 && tok < V;
    const float *e = E + (size_t)(ok ? tok : 0) * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) y[i] = ok ? e[i] : __int_as_float(0x7fc00000);
}

rs_status rsg_embed(const int32_t *tokens, int T, int R, const float *E, int V, int d, float *Y,
                    size_t ldy, rs_cuda_stream s)
{
    RS_CHECK(tokens && E && Y && T >= 0 && R >= 0 && V > 0 && d > 0 && ldy >= (size_t)d, RS_E_INVAL,
                "rsg_embed: bad arguments (T %d, R %d, V %d, d %d, ldy %zu)", T, R, V, d, ldy);
    if (T == 0 || R == 0) return RS_OK;
    embed_k_<<<(unsigned)T * (unsigned)R, row_threads_(d), 0, s>>>(tokens, T, E, V, d, Y, ldy);
    return rs_cuda_launch_status("rsg_embed");
}

/* ---- RMSNorm -------------------------------------------------------------------------------- */
/* inv_rms_ of rs_layers.c: (float)(ss / n), then 1 / sqrtf(var + eps) (IEEE div and sqrt) */
static __device__ __forceinline__ float inv_rms_(double ss, int n, float eps)
{
    const float var = (float)(ss / (double)n);
    return 1.0f / sqrtf(var + eps);
}

/* the block's double sum of squares of x[0 .. n-1]: SEQ (the twin compute mode) one thread adds them in
 * index order, inv_rms_ of rs_layers.c exactly (the same double, so the same float); otherwise strided
 * partial sums and a tree (another order: the same float except in rare ties). Ends with a barrier
 * after every thread's reads of x. */
template <bool SEQ>
static __device__ __forceinline__ double sum_sq_(const float *x, int n, double *sh)
{
    if (SEQ) {
        if (threadIdx.x == 0) {
            double ss = 0.0;
            for (int i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
            sh[32] = ss;
        }
        __syncthreads();
        return sh[32];
    }
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (double)x[i] * (double)x[i];
    return rs_dev_block_sum(ss, sh);
}

template <bool SEQ>
static __global__ void rmsnorm_k_(int n, const float *X, size_t ldx, const float *w, float eps, int one_plus,
                           float *Y, size_t ldy)
{
    __shared__ double sh[33];
    const float *x = X + (size_t)blockIdx.x * ldx;
    float *y = Y + (size_t)blockIdx.x * ldy;
    const float r = inv_rms_(sum_sq_<SEQ>(x, n, sh), n, eps);
    /* each thread rewrites only the elements it read: Y == X is safe */
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[i] = one_plus ? (x[i] * r) * (1.0f + w[i]) : w[i] * (x[i] * r);
}

static rs_status rmsnorm_(bool seq, int M, int n, const float *X, size_t ldx, const float *w, float eps,
                          rsg_norm_weight kind, float *Y, size_t ldy, rs_cuda_stream s)
{
    RS_CHECK(X && w && Y && M >= 0 && n > 0 && ldx >= (size_t)n && ldy >= (size_t)n &&
                (Y != X || ldx == ldy), RS_E_INVAL,
                "rsg_rmsnorm: bad arguments (M %d, n %d, ldx %zu, ldy %zu)", M, n, ldx, ldy);
    if (M == 0) return RS_OK;
    if (seq)
        rmsnorm_k_<true><<<(unsigned)M, row_threads_(n), 0, s>>>(n, X, ldx, w, eps,
                                                                         kind == RSG_NORM_ONE_PLUS, Y, ldy);
    else
        rmsnorm_k_<false><<<(unsigned)M, row_threads_(n), 0, s>>>(n, X, ldx, w, eps,
                                                                          kind == RSG_NORM_ONE_PLUS, Y, ldy);
    return rs_cuda_launch_status("rsg_rmsnorm");
}

rs_status rsg_rmsnorm(int M, int n, const float *X, size_t ldx, const float *w, float eps,
                      rsg_norm_weight kind, float *Y, size_t ldy, rs_cuda_stream s)
{
    return rmsnorm_(false, M, n, X, ldx, w, eps, kind, Y, ldy, s);
}

rs_status rsg_rmsnorm_seq(int M, int n, const float *X, size_t ldx, const float *w, float eps,
                          rsg_norm_weight kind, float *Y, size_t ldy, rs_cuda_stream s)
{
    return rmsnorm_(true, M, n, X, ldx, w, eps, kind, Y, ldy, s);
}

/* one block per (row, group): blockIdx.x = row * (n / gs) + group */
template <bool SEQ>
static __global__ void rmsnorm_gated_k_(int n, int gs, const float *X, size_t ldx, const float *Z, size_t ldz,
                                 const float *w, int w_per_elem, float eps, int before, float *Y, size_t ldy)
{
    __shared__ double sh[33];
    const int ng = n / gs, row = blockIdx.x / ng, g0 = (blockIdx.x % ng) * gs;
    const float *x = X + (size_t)row * ldx + g0, *z = Z + (size_t)row * ldz + g0;
    const float *wg = w_per_elem ? w + g0 : w;
    float *y = Y + (size_t)row * ldy + g0;
    double ss = 0.0;
    if (before) { /* t = x * silu(z) into y, then y = w * (t * r) */
        for (int i = threadIdx.x; i < gs; i += blockDim.x) {
            const float t = x[i] * rs_siluf(z[i]);
            y[i] = t;
            ss += (double)t * (double)t;
        }
        double tot;
        if (SEQ) { /* the sum of the t in index order (the block's writes of y are visible after the barrier) */
            __syncthreads();
            tot = sum_sq_<true>(y, gs, sh);
        } else {
            tot = rs_dev_block_sum(ss, sh);
        }
        const float r = inv_rms_(tot, gs, eps);
        for (int i = threadIdx.x; i < gs; i += blockDim.x) y[i] = wg[i] * (y[i] * r);
    } else { /* y = (w * (x * r)) * silu(z) */
        const float r = inv_rms_(sum_sq_<SEQ>(x, gs, sh), gs, eps);
        for (int i = threadIdx.x; i < gs; i += blockDim.x) y[i] = (wg[i] * (x[i] * r)) * rs_siluf(z[i]);
    }
}

static rs_status rmsnorm_gated_(bool seq, int M, int n, int gs, const float *X, size_t ldx, const float *Z,
                                size_t ldz, const float *w, int w_len, float eps, rsg_gate_order order,
                                float *Y, size_t ldy, rs_cuda_stream s)
{
    RS_CHECK(X && Z && w && Y && M >= 0 && n > 0 && gs > 0 && n % gs == 0 &&
                (w_len == gs || w_len == n) && ldx >= (size_t)n && ldz >= (size_t)n &&
                ldy >= (size_t)n && (Y != X || ldx == ldy), RS_E_INVAL,
                "rsg_rmsnorm_gated: bad arguments (M %d, n %d, gs %d, w_len %d, ldx %zu, ldz %zu, ldy %zu)",
                M, n, gs, w_len, ldx, ldz, ldy);
    RS_CHECK((size_t)M * (size_t)(n / gs) <= 0x7fffffffu, RS_E_INVAL, "rsg_rmsnorm_gated: too many groups");
    if (M == 0) return RS_OK;
    if (seq)
        rmsnorm_gated_k_<true><<<(unsigned)(M * (n / gs)), row_threads_(gs), 0, s>>>(
            n, gs, X, ldx, Z, ldz, w, w_len == n && n != gs, eps, order == RSG_GATE_BEFORE_NORM, Y, ldy);
    else
        rmsnorm_gated_k_<false><<<(unsigned)(M * (n / gs)), row_threads_(gs), 0, s>>>(
            n, gs, X, ldx, Z, ldz, w, w_len == n && n != gs, eps, order == RSG_GATE_BEFORE_NORM, Y, ldy);
    return rs_cuda_launch_status("rsg_rmsnorm_gated");
}

rs_status rsg_rmsnorm_gated(int M, int n, int gs, const float *X, size_t ldx, const float *Z,
                            size_t ldz, const float *w, int w_len, float eps, rsg_gate_order order,
                            float *Y, size_t ldy, rs_cuda_stream s)
{
    return rmsnorm_gated_(false, M, n, gs, X, ldx, Z, ldz, w, w_len, eps, order, Y, ldy, s);
}

rs_status rsg_rmsnorm_gated_seq(int M, int n, int gs, const float *X, size_t ldx, const float *Z,
                                size_t ldz, const float *w, int w_len, float eps, rsg_gate_order order,
                                float *Y, size_t ldy, rs_cuda_stream s)
{
    return rmsnorm_gated_(true, M, n, gs, X, ldx, Z, ldz, w, w_len, eps, order, Y, ldy, s);
}

/* ---- causal depthwise conv1d ---------------------------------------------------------------- */
/* One thread per (run, channel), the T steps in order with the K-1 window in registers:
 * rs_conv1d_causal's arithmetic (acc = 0; acc += w_i * s_i; acc += w_{K-1} * x; + bias). */
template <int K>
static __global__ void conv1d_k_(int T, int C, const float *X, size_t ldx, float *state, const float *w,
                          const float *bias, int silu, float *Y, size_t ldy)
{
    constexpr int KM1 = K - 1, NS = K > 1 ? K - 1 : 1;
    const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
    if (c >= C) return;
    float st[NS], wc[K];
    float *sp = state + ((size_t)r * C + c) * KM1;
#pragma unroll
    for (int i = 0; i < KM1; i++) st[i] = sp[i];
#pragma unroll
    for (int i = 0; i < K; i++) wc[i] = w[(size_t)c * K + i];
    const float b = bias ? bias[c] : 0.0f;
    const float *x = X + (size_t)r * T * ldx + c;
    float *y = Y + (size_t)r * T * ldy + c;
    for (int t = 0; t < T; t++) {
        const float xt = x[(size_t)t * ldx];
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < KM1; i++) acc += wc[i] * st[i];
        acc += wc[KM1] * xt;
        if (bias) acc += b;
        y[(size_t)t * ldy] = silu ? rs_siluf(acc) : acc;
#pragma unroll
        for (int i = 0; i + 1 < KM1; i++) st[i] = st[i + 1];
        if (KM1 > 0) st[NS - 1] = xt;
    }
#pragma unroll
    for (int i = 0; i < KM1; i++) sp[i] = st[i];
}

rs_status rsg_conv1d(int R, int T, int C, int K, const float *X, size_t ldx, float *state,
                     const float *w, const float *bias, int silu, float *Y, size_t ldy,
                     rs_cuda_stream s)
{
    RS_CHECK(X && w && Y && (state || K == 1) && R >= 0 && R <= 65535 && T >= 0 && C > 0 &&
                K >= 1 && K <= 8 && ldx >= (size_t)C && ldy >= (size_t)C, RS_E_INVAL,
                "rsg_conv1d: bad arguments (R %d, T %d, C %d, K %d, ldx %zu, ldy %zu)", R, T, C, K, ldx, ldy);
    if (R == 0 || T == 0) return RS_OK;
    const dim3 grid((unsigned)((C + 127) / 128), (unsigned)R);
    cudaStream_t st = s;
    switch (K) {
    case 1: conv1d_k_<1><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    case 2: conv1d_k_<2><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    case 3: conv1d_k_<3><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    case 4: conv1d_k_<4><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    case 5: conv1d_k_<5><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    case 6: conv1d_k_<6><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    case 7: conv1d_k_<7><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    default: conv1d_k_<8><<<grid, 128, 0, st>>>(T, C, X, ldx, state, w, bias, silu, Y, ldy); break;
    }
    return rs_cuda_launch_status("rsg_conv1d");
}

/* ---- GDN prep ------------------------------------------------------------------------------- */
/* one block (4 warps) per row: warp j-loop over the 2 Hk heads of q | k (head j at j * dk),
 * rs_l2norm's arithmetic (double sum, r = 1 / sqrtf((float)ss + 1e-6f), x *= r), then q *= scale;
 * then the value heads' alpha and beta (gdn_prep_row_). */
template <bool SEQ> /* SEQ (twin): lane 0 adds the squares in index order, as rs_l2norm */
static __global__ void gdn_prep_k_(int Hk, int dk, int Hv, float *QKV, size_t ldq, const float *a, const float *b,
                            const float *A_log, const float *dt_bias, float scale, float *alpha, float *beta)
{
    const int row = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    float *q = QKV + (size_t)row * ldq;
    for (int j = warp; j < 2 * Hk; j += nw) {
        float *x = q + (size_t)j * dk;
        double ss = 0.0;
        if (SEQ) {
            if (lane == 0)
                for (int i = 0; i < dk; i++) ss += (double)x[i] * (double)x[i];
            ss = __shfl_sync(0xFFFFFFFFu, ss, 0);
        } else {
            for (int i = lane; i < dk; i += 32) ss += (double)x[i] * (double)x[i];
            ss = rs_dev_warp_sum(ss);
        }
        const float r = 1.0f / sqrtf((float)ss + 1e-6f);
        for (int i = lane; i < dk; i += 32) {
            float v = x[i] * r;
            if (j < Hk) v = v * scale;
            x[i] = v;
        }
    }
    for (int h = threadIdx.x; h < Hv; h += blockDim.x) {
        const size_t o = (size_t)row * Hv + h;
        const float A = -rs_expf(A_log[h]);
        const float gl = A * rs_softplusf(a[o] + dt_bias[h]);
        alpha[o] = rs_expf(gl);
        beta[o] = rs_sigmoidf(b[o]);
    }
}

static rs_status gdn_prep_(bool seq, int M, int Hk, int dk, int Hv, float *QKV, size_t ldq, const float *a,
                           const float *b, const float *A_log, const float *dt_bias, float *alpha,
                           float *beta, rs_cuda_stream s)
{
    RS_CHECK(QKV && a && b && A_log && dt_bias && alpha && beta && M >= 0 && Hk > 0 && dk > 0 &&
                Hv > 0 && ldq >= 2 * (size_t)Hk * dk, RS_E_INVAL,
                "rsg_gdn_prep: bad arguments (M %d, Hk %d, dk %d, Hv %d, ldq %zu)", M, Hk, dk, Hv, ldq);
    if (M == 0) return RS_OK;
    const float scale = (float)(1.0 / sqrt((double)dk)); /* as gdn_prep_row_ */
    if (seq)
        gdn_prep_k_<true><<<(unsigned)M, 128, 0, s>>>(Hk, dk, Hv, QKV, ldq, a, b, A_log, dt_bias, scale,
                                                                  alpha, beta);
    else
        gdn_prep_k_<false><<<(unsigned)M, 128, 0, s>>>(Hk, dk, Hv, QKV, ldq, a, b, A_log, dt_bias, scale,
                                                                   alpha, beta);
    return rs_cuda_launch_status("rsg_gdn_prep");
}

rs_status rsg_gdn_prep(int M, int Hk, int dk, int Hv, float *QKV, size_t ldq, const float *a,
                       const float *b, const float *A_log, const float *dt_bias, float *alpha,
                       float *beta, rs_cuda_stream s)
{
    return gdn_prep_(false, M, Hk, dk, Hv, QKV, ldq, a, b, A_log, dt_bias, alpha, beta, s);
}

rs_status rsg_gdn_prep_seq(int M, int Hk, int dk, int Hv, float *QKV, size_t ldq, const float *a,
                           const float *b, const float *A_log, const float *dt_bias, float *alpha,
                           float *beta, rs_cuda_stream s)
{
    return gdn_prep_(true, M, Hk, dk, Hv, QKV, ldq, a, b, A_log, dt_bias, alpha, beta, s);
}

/* ---- Mamba-2 prep and D skip ---------------------------------------------------------------- */
/* one block per row: dt of the H heads into shared memory (dynamic, H floats), then V = dt * X */
static __global__ void mamba_prep_k_(int H, int P, const float *dt_raw, size_t ld_dt, const float *dt_bias,
                              const float *A_log, int clamp_min, float dt_min, const float *X, size_t ldx,
                              float *alpha, float *V, size_t ldv)
{
    extern __shared__ float sdt[];
    const int row = blockIdx.x;
    for (int h = threadIdx.x; h < H; h += blockDim.x) {
        float dt = rs_softplusf(dt_raw[(size_t)row * ld_dt + h] + dt_bias[h]);
        if (clamp_min && dt < dt_min) dt = dt_min;
        const float A = -rs_expf(A_log[h]);
        sdt[h] = dt;
        alpha[(size_t)row * H + h] = rs_expf(dt * A);
    }
    __syncthreads();
    const float *x = X + (size_t)row * ldx;
    float *v = V + (size_t)row * ldv;
    for (int i = threadIdx.x; i < H * P; i += blockDim.x) v[i] = sdt[i / P] * x[i];
}

rs_status rsg_mamba_prep(int M, int H, int P, const float *dt_raw, size_t ld_dt,
                         const float *dt_bias, const float *A_log, int clamp_min, float dt_min,
                         const float *X, size_t ldx, float *alpha, float *V, size_t ldv,
                         rs_cuda_stream s)
{
    RS_CHECK(dt_raw && dt_bias && A_log && X && alpha && V && M >= 0 && H > 0 && H <= 8192 && P > 0 &&
                ld_dt >= (size_t)H && ldx >= (size_t)H * P && ldv >= (size_t)H * P, RS_E_INVAL,
                "rsg_mamba_prep: bad arguments (M %d, H %d, P %d, ld_dt %zu, ldx %zu, ldv %zu)", M, H, P,
                ld_dt, ldx, ldv);
    if (M == 0) return RS_OK;
    mamba_prep_k_<<<(unsigned)M, 256, (size_t)H * sizeof(float), s>>>(
        H, P, dt_raw, ld_dt, dt_bias, A_log, clamp_min, dt_min, X, ldx, alpha, V, ldv);
    return rs_cuda_launch_status("rsg_mamba_prep");
}

static __global__ void dskip_k_(int P, int n, float *O, size_t ldo, const float *X, size_t ldx, const float *D)
{
    const int i = blockIdx.y * EW + threadIdx.x;
    if (i >= n) return;
    float *o = O + (size_t)blockIdx.x * ldo + i;
    *o = *o + X[(size_t)blockIdx.x * ldx + i] * D[i / P];
}

rs_status rsg_mamba_dskip(int M, int H, int P, float *O, size_t ldo, const float *X, size_t ldx,
                          const float *D, rs_cuda_stream s)
{
    const size_t n = (size_t)H * P;
    RS_CHECK(O && X && D && M >= 0 && H > 0 && P > 0 && ldo >= n && ldx >= n, RS_E_INVAL,
                "rsg_mamba_dskip: bad arguments (M %d, H %d, P %d, ldo %zu, ldx %zu)", M, H, P, ldo, ldx);
    if (M == 0) return RS_OK;
    dim3 g;
    if (rs_status st = ew_grid_("rsg_mamba_dskip", M, n, &g)) return st;
    dskip_k_<<<g, EW, 0, s>>>(P, (int)n, O, ldo, X, ldx, D);
    return rs_cuda_launch_status("rsg_mamba_dskip");
}

/* ---- RoPE, KV append, output gate ----------------------------------------------------------- */
/* one block per row: cos/sin of the row's position (rs_rope_cos_sin) into shared memory, then
 * every (head, pair) of the row's query and key heads by one thread (rs_rope_apply) */
static __global__ void rope_k_(int T, long long pos0, float *Q, size_t ldq, int q_hstride, int Hq, float *K,
                        size_t ldk, int Hk, int hd, int rot, const float *inv_freq)
{
    extern __shared__ float cs[]; /* cos [rot/2] | sin [rot/2] */
    const int row = blockIdx.x, h2 = rot / 2;
    const float p = (float)(pos0 + row % T);
    for (int i = threadIdx.x; i < h2; i += blockDim.x) {
        const float a = inv_freq[i] * p;
        rs_cossinf(a, &cs[i], &cs[h2 + i]); /* rs_mathf.h: rs_rope_cos_sin's bits (CUDA's cosf / sinf are not glibc's) */
    }
    __syncthreads();
    for (int it = threadIdx.x; it < (Hq + Hk) * h2; it += blockDim.x) {
        const int j = it / h2, i = it % h2;
        float *x = j < Hq ? Q + (size_t)row * ldq + (size_t)j * q_hstride : K + (size_t)row * ldk + (size_t)(j - Hq) * hd;
        const float a = x[i], b = x[i + h2], c = cs[i], sn = cs[h2 + i];
        x[i] = a * c - b * sn;
        x[i + h2] = b * c + a * sn;
    }
}

rs_status rsg_rope(int M, int T, int64_t pos0, float *Q, size_t ldq, int q_hstride, int Hq,
                   float *K, size_t ldk, int Hk, int hd, int rot, const float *inv_freq,
                   rs_cuda_stream s)
{
    RS_CHECK(inv_freq && M >= 0 && T > 0 && pos0 >= 0 && Hq >= 0 && Hk >= 0 && hd > 0 && rot >= 0 &&
                rot % 2 == 0 && rot <= hd && (Hq == 0 || (Q && q_hstride >= hd && ldq >= (size_t)(Hq - 1) * q_hstride + hd)) &&
                (Hk == 0 || (K && ldk >= (size_t)Hk * hd)), RS_E_INVAL,
                "rsg_rope: bad arguments (M %d, T %d, Hq %d, Hk %d, hd %d, rot %d)", M, T, Hq, Hk, hd, rot);
    if (M == 0 || rot == 0 || Hq + Hk == 0) return RS_OK;
    rope_k_<<<(unsigned)M, 128, (size_t)rot * sizeof(float), s>>>(
        T, (long long)pos0, Q, ldq, q_hstride, Hq, K, ldk, Hk, hd, rot, inv_freq);
    return rs_cuda_launch_status("rsg_rope");
}

/* one block per (run, position): the Hkv * hd keys and values of the row */
static __global__ void kv_append_k_(int T, int Hkv, int hd, long long pos0, size_t cap, const float *K, size_t ldk,
                             const float *V, size_t ldv, float *Kc, float *Vc)
{
    const int row = blockIdx.x, r = row / T, t = row % T;
    for (int i = threadIdx.x; i < Hkv * hd; i += blockDim.x) {
        const int g = i / hd, e = i % hd;
        const size_t dst = (((size_t)r * Hkv + g) * cap + (size_t)(pos0 + t)) * hd + e;
        Kc[dst] = K[(size_t)row * ldk + i];
        Vc[dst] = V[(size_t)row * ldv + i];
    }
}

rs_status rsg_kv_append(int R, int T, int Hkv, int hd, int64_t pos0, size_t cap, const float *K,
                        size_t ldk, const float *V, size_t ldv, float *Kc, float *Vc,
                        rs_cuda_stream s)
{
    RS_CHECK(K && V && Kc && Vc && R >= 0 && T >= 0 && Hkv > 0 && hd > 0 && pos0 >= 0 &&
                (size_t)pos0 + (size_t)T <= cap && ldk >= (size_t)Hkv * hd && ldv >= (size_t)Hkv * hd, RS_E_INVAL,
                "rsg_kv_append: bad arguments (R %d, T %d, Hkv %d, hd %d, pos0 %lld, cap %zu)", R, T, Hkv,
                hd, (long long)pos0, cap);
    if (R == 0 || T == 0) return RS_OK;
    kv_append_k_<<<(unsigned)R * (unsigned)T, 256, 0, s>>>(T, Hkv, hd, (long long)pos0, cap, K, ldk,
                                                                        V, ldv, Kc, Vc);
    return rs_cuda_launch_status("rsg_kv_append");
}

static __global__ void attn_gate_k_(int hd, int n, float *O, size_t ldo, const float *Q, size_t ldq, int q_hstride)
{
    const int i = blockIdx.y * EW + threadIdx.x;
    if (i >= n) return;
    const int h = i / hd, e = i % hd;
    float *o = O + (size_t)blockIdx.x * ldo + i;
    *o = *o * rs_sigmoidf(Q[(size_t)blockIdx.x * ldq + (size_t)h * q_hstride + hd + e]);
}

rs_status rsg_attn_gate(int M, int H, int hd, float *O, size_t ldo, const float *Q, size_t ldq,
                        int q_hstride, rs_cuda_stream s)
{
    const size_t n = (size_t)H * hd;
    RS_CHECK(O && Q && M >= 0 && H > 0 && hd > 0 && ldo >= n && q_hstride >= 2 * hd &&
                ldq >= (size_t)(H - 1) * q_hstride + 2 * (size_t)hd, RS_E_INVAL,
                "rsg_attn_gate: bad arguments (M %d, H %d, hd %d, ldo %zu, ldq %zu, q_hstride %d)", M, H, hd,
                ldo, ldq, q_hstride);
    if (M == 0) return RS_OK;
    dim3 g;
    if (rs_status st = ew_grid_("rsg_attn_gate", M, n, &g)) return st;
    attn_gate_k_<<<g, EW, 0, s>>>(hd, (int)n, O, ldo, Q, ldq, q_hstride);
    return rs_cuda_launch_status("rsg_attn_gate");
}

/* ---- MLP activations, add ------------------------------------------------------------------- */
static __global__ void swiglu_k_(int n, float *G, size_t ldg, const float *U, size_t ldu)
{
    const int i = blockIdx.y * EW + threadIdx.x;
    if (i >= n) return;
    float *g = G + (size_t)blockIdx.x * ldg + i;
    *g = rs_siluf(*g) * U[(size_t)blockIdx.x * ldu + i];
}

static __global__ void relu2_k_(int n, float *X, size_t ldx)
{
    const int i = blockIdx.y * EW + threadIdx.x;
    if (i >= n) return;
    float *x = X + (size_t)blockIdx.x * ldx + i;
    const float r = *x > 0.0f ? *x : 0.0f; /* NaN -> 0, as the CPU */
    *x = r * r;
}

rs_status rsg_swiglu(int M, int n, float *G, size_t ldg, const float *U, size_t ldu, rs_cuda_stream s)
{
    RS_CHECK(G && U && M >= 0 && n > 0 && ldg >= (size_t)n && ldu >= (size_t)n, RS_E_INVAL,
                "rsg_swiglu: bad arguments (M %d, n %d, ldg %zu, ldu %zu)", M, n, ldg, ldu);
    if (M == 0) return RS_OK;
    dim3 g;
    if (rs_status st = ew_grid_("rsg_swiglu", M, (size_t)n, &g)) return st;
    swiglu_k_<<<g, EW, 0, s>>>(n, G, ldg, U, ldu);
    return rs_cuda_launch_status("rsg_swiglu");
}

rs_status rsg_relu2(int M, int n, float *X, size_t ldx, rs_cuda_stream s)
{
    RS_CHECK(X && M >= 0 && n > 0 && ldx >= (size_t)n, RS_E_INVAL, "rsg_relu2: bad arguments (M %d, n %d, ldx %zu)",
                M, n, ldx);
    if (M == 0) return RS_OK;
    dim3 g;
    if (rs_status st = ew_grid_("rsg_relu2", M, (size_t)n, &g)) return st;
    relu2_k_<<<g, EW, 0, s>>>(n, X, ldx);
    return rs_cuda_launch_status("rsg_relu2");
}

static __global__ void add_k_(size_t n, float *x, const float *y)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = x[i] + y[i];
}

rs_status rsg_add(size_t n, float *x, const float *y, rs_cuda_stream s)
{
    RS_CHECK(x && y, RS_E_INVAL, "rsg_add: NULL operand");
    if (n == 0) return RS_OK;
    size_t nb = (n + 255) / 256;
    if (nb > 8192) nb = 8192;
    add_k_<<<(unsigned)nb, 256, 0, s>>>(n, x, y);
    return rs_cuda_launch_status("rsg_add");
}

/* ---- the TF32 split of the split-TF32 GEMMs -------------------------------------------------- */
__device__ __forceinline__ float tf32_rna_(float x) /* round to nearest TF32, ties away from zero */
{
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u);
}

static __global__ void tf32_split_k_(int n, const float *X, size_t ldx, float *H, size_t ldh, float *L, size_t ldl)
{
    const int i = blockIdx.y * EW + threadIdx.x;
    if (i >= n) return;
    const size_t r = blockIdx.x;
    const float x = X[r * ldx + i];
    float hi = x, lo = 0.0f;
    if (isfinite(x)) {
        hi = tf32_rna_(x);
        if (isinf(hi)) hi = __uint_as_float(__float_as_uint(x) & 0xFFFFE000u); /* past TF32's largest */
        lo = tf32_rna_(x - hi); /* x - hi: exact (same sign, within half a TF32 ulp: Sterbenz) */
    }
    H[r * ldh + i] = hi;
    L[r * ldl + i] = lo;
}

rs_status rsg_tf32_split(int M, int n, const float *X, size_t ldx, float *hi, size_t ldh, float *lo, size_t ldl,
                         rs_cuda_stream s)
{
    RS_CHECK(X && hi && lo && M >= 0 && n > 0 && ldx >= (size_t)n && ldh >= (size_t)n && ldl >= (size_t)n &&
                    (hi == X ? ldh == ldx : 1) && (const float *)lo != X && lo != hi, RS_E_INVAL,
                "rsg_tf32_split: bad arguments (M %d, n %d, ldx %zu, ldh %zu, ldl %zu, or aliasing)", M, n, ldx, ldh,
                ldl);
    if (M == 0) return RS_OK;
    dim3 g;
    if (rs_status st = ew_grid_("rsg_tf32_split", M, (size_t)n, &g)) return st;
    tf32_split_k_<<<g, EW, 0, s>>>(n, X, ldx, hi, ldh, lo, ldl);
    return rs_cuda_launch_status("rsg_tf32_split");
}
