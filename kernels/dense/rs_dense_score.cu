/* rs_dense_score.cu — per-position scoring on the device (rsg_score): rs_kl.h's definitions.
 *
 * Kernel 1, one block of 512 threads per logits row (R * T rows): pass 1 max and finiteness,
 * pass 2 s = sum exp((double)x - max), lse = max + log(s) (rs_kl_log_softmax), pass 3 the argmax
 * of lp = (double)x - lse (lowest index on ties: the argmax of rs_kl_compare_lp, taken over the
 * same doubles). The row's (lse, argmax, finite) go to the work buffer; rows of the reference
 * (r = 0) also write nll_ref, top1_ref, ref_bad.
 * Kernel 2, one block per (position t, run r >= 1): the KL sum over the V terms in the Bregman
 * form of rs_kl_compare_lp (same branches, same double operations on the same lp, lq values up
 * to the lse), nll, dp, agree.
 * Every sum is per-thread sequential over i = tid, tid + 512, ... then a fixed tree: the bits do
 * not depend on timing (repeated calls agree exactly). Against the host (rs_kl_compare) the
 * only differences are the summation order of s (lse moves by ~1e-15 relative) and of the KL
 * terms, and CUDA's double exp / expm1 / log (<= 1 ulp, glibc's < 1 ulp); tolerances in
 * tests/cuda/test_gpu_ops.cu.
 * Deviations from the host, which fails instead: a target outside [0, V) gives NaN nll / dp
 * (and NaN nll_ref); a non-finite reference row gives ref_bad = 1, nll_ref = NaN,
 * top1_ref = -1 and, for that position, kl = nll = dp = NaN, agree = 0 in every run. */
#include <math.h>
#include <stdint.h>

#include "rs_cuda_common.cuh"
#include "rs_dense_ops.h"

namespace {

constexpr int SB = 512;

struct row_stat {
    double lse;
    int32_t top1;  /* argmax of the row's log-probabilities, -1 if not finite */
    int32_t finite;
};

__device__ __forceinline__ void better_(double &bv, int &bi, double v, int i) /* (v, i) wins? */
{
    if (v > bv || (v == bv && i < bi)) {
        bv = v;
        bi = i;
    }
}

__global__ void __launch_bounds__(SB) score_rows_k_(int T, int V, const float *L, size_t ldl,
                                                    const int32_t *targets, row_stat *st, double *nll_ref,
                                                    int32_t *top1_ref, uint8_t *ref_bad)
{
    __shared__ double sh[33];
    __shared__ double sv[SB / 32];
    __shared__ int si[SB / 32];
    __shared__ float sm[SB / 32];
    const int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const float *x = L + (size_t)row * ldl;

    /* pass 1: max over finite values, any non-finite */
    float mx = -INFINITY;
    int bad = 0;
    for (int i = tid; i < V; i += SB) {
        const float v = x[i];
        if (!isfinite(v)) bad = 1;
        else if (v > mx) mx = v;
    }
    bad = __syncthreads_or(bad);
    if (bad) {
        if (tid == 0) {
            st[row].lse = NAN;
            st[row].top1 = -1;
            st[row].finite = 0;
            if (row < T) {
                nll_ref[row] = NAN;
                top1_ref[row] = -1;
                ref_bad[row] = 1;
            }
        }
        return;
    }
    mx = rs_dev_warp_max(mx);
    if (lane == 0) sm[warp] = mx;
    __syncthreads();
    mx = sm[0];
    for (int w = 1; w < SB / 32; w++) mx = fmaxf(mx, sm[w]);
    const double dmx = (double)mx;

    /* pass 2: log-sum-exp in double */
    double s = 0.0;
    for (int i = tid; i < V; i += SB) s += exp((double)x[i] - dmx);
    s = rs_dev_block_sum(s, sh);
    const double lse = dmx + log(s);

    /* pass 3: argmax of lp = x - lse, lowest index on ties */
    double bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = tid; i < V; i += SB) {
        const double lp = (double)x[i] - lse;
        if (lp > bv) { /* ascending i: the first of equal values stays */
            bv = lp;
            bi = i;
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const double ov = __shfl_xor_sync(0xFFFFFFFFu, bv, off);
        const int oi = __shfl_xor_sync(0xFFFFFFFFu, bi, off);
        better_(bv, bi, ov, oi);
    }
    if (lane == 0) {
        sv[warp] = bv;
        si[warp] = bi;
    }
    __syncthreads();
    if (tid == 0) {
        for (int w = 1; w < SB / 32; w++) better_(bv, bi, sv[w], si[w]);
        st[row].lse = lse;
        st[row].top1 = bi;
        st[row].finite = 1;
        if (row < T) {
            const int y = targets[row];
            nll_ref[row] = y >= 0 && y < V ? -((double)x[y] - lse) : (double)NAN;
            top1_ref[row] = bi;
            ref_bad[row] = 0;
        }
    }
}

__global__ void __launch_bounds__(SB) score_kl_k_(int T, int V, const float *L, size_t ldl,
                                                  const int32_t *targets, const row_stat *st, double *kl,
                                                  double *nll, double *dp, uint8_t *agree)
{
    __shared__ double sh[33];
    const int t = blockIdx.x, r = blockIdx.y + 1, tid = threadIdx.x;
    const size_t out = (size_t)(r - 1) * T + t;
    const row_stat sp = st[t], sq = st[(size_t)r * T + t];
    if (!sp.finite || !sq.finite) {
        if (tid == 0) {
            kl[out] = nll[out] = dp[out] = NAN;
            agree[out] = 0;
        }
        return;
    }
    const float *xp = L + (size_t)t * ldl, *xq = L + ((size_t)r * T + t) * ldl;
    double acc = 0.0;
    for (int i = tid; i < V; i += SB) {
        const double lp = (double)xp[i] - sp.lse, lq = (double)xq[i] - sq.lse;
        const double p = exp(lp), q = exp(lq);
        double term;
        if (p == 0.0) {
            term = q;
        } else {
            const double rr = lp - lq;
            if (rr >= -1.0)
                term = p * (rr + expm1(-rr));
            else
                term = (q - p) + p * rr;
        }
        if (term < 0.0) term = 0.0;
        acc += term;
    }
    acc = rs_dev_block_sum(acc, sh);
    if (tid == 0) {
        kl[out] = acc;
        const int y = targets[t];
        if (y >= 0 && y < V) {
            const double lpy = (double)xp[y] - sp.lse, lqy = (double)xq[y] - sq.lse;
            nll[out] = -lqy;
            dp[out] = exp(lqy) - exp(lpy);
        } else {
            nll[out] = dp[out] = NAN;
        }
        agree[out] = sq.top1 == sp.top1;
    }
}

} // namespace

size_t rsg_score_work_bytes(int R, int T)
{
    return R > 0 && T > 0 ? (size_t)R * (size_t)T * sizeof(row_stat) : 0;
}

rs_status rsg_score(int R, int T, int V, const float *L, size_t ldl, const int32_t *targets,
                    double *nll_ref, int32_t *top1_ref, uint8_t *ref_bad, double *kl, double *nll,
                    double *dp, uint8_t *agree, void *work, rs_cuda_stream s)
{
    RS_CHECK(L && targets && nll_ref && top1_ref && ref_bad && work && R >= 1 && T >= 0 &&
                    V > 0 && ldl >= (size_t)V && (size_t)R * T <= 0x7fffffff && ((uintptr_t)work % 8) == 0 &&
                    (R == 1 || (kl && nll && dp && agree)), RS_E_INVAL,
                "rsg_score: bad arguments (R %d, T %d, V %d, ldl %zu)", R, T, V, ldl);
    RS_CHECK(R - 1 <= 65535, RS_E_INVAL, "rsg_score: %d runs exceed the grid", R);
    if (T == 0) return RS_OK;
    row_stat *st = static_cast<row_stat *>(work);
    cudaStream_t cs = s;
    score_rows_k_<<<(unsigned)(R * T), SB, 0, cs>>>(T, V, L, ldl, targets, st, nll_ref, top1_ref, ref_bad);
    rs_status rc = rs_cuda_launch_status("rsg_score (row statistics)");
    if (rc != RS_OK || R == 1) return rc;
    score_kl_k_<<<dim3((unsigned)T, (unsigned)(R - 1)), SB, 0, cs>>>(T, V, L, ldl, targets, st, kl, nll, dp, agree);
    return rs_cuda_launch_status("rsg_score (KL)");
}
