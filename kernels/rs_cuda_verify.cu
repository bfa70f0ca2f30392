/* rs_cuda_verify.cu — speculative verification of T draft tokens (digest section 3, rs_cuda.h):
 *   - the snapshot baseline (vLLM): T conventional steps, every intermediate state written
 *     (1 read + T writes of the state), and its commit (copy of the accepted snapshot);
 *   - ReplaySSM output-only verification (Algorithm 2; GDN with the UT triangular solve of
 *     Appendix B.3) and the pointer commit.
 *
 * ReplaySSM verification is two launches, like the standard decode:
 *   prologue, one block per (row b, key head g): stores the drafts' k (rounded to the ring
 *     type) and alpha in the ring, forms K^T Q (and K^T K_d for GDN) once per key head for
 *     all h + T records, and per value head the decay products gamma_{j+1:h+s} in float64
 *     rounded once (engine/rs_gamma.h), writing per-head coefficients to `work`;
 *   main, one warp per RPW state rows: one pass over S_ckpt gives S_ckpt q_s (and
 *     S_ckpt k_{h+s}) for all drafts; lane j holds record j, so the record sums ride on the
 *     same warp reduction (one transposed reduction for all rows x drafts). GDN then solves
 *     the T x T unit triangular system per row in registers. Rows whose h + T > L also fold
 *     their committed records into S_ckpt from the same registers (1R + 1W).
 * Work layout per (b, h) (floats, stride verify_ws(T, C)), logical record index j:
 *   [0, T)               D_s  = gamma_{0:h+s}           (checkpoint coefficient of draft s)
 *   [T + s C + j]        cq   = gamma_{j+1:h+s} (k_j . q_s), j <= h+s
 *   [T + T C + s C + j]  ck   = gamma_{j+1:h+s} (k_j . k_{h+s}), j < h+s   (GDN)
 *   [T + 2 T C + j]      Pf_j = gamma_{j+1:h-1}, j < h   (fold of the committed records)
 *   [T + 2 T C + C]      Pf_ckpt = gamma_{0:h-1}
 */
#include <cuda_runtime.h>

#include <cstdint>

#include "replayssm/cuda/rs_cuda.h"
#include "rs_cuda_common.cuh"
#include "rs_cuda_ssm.cuh"
#include "rs_check.h"

#define RS_VPREP_WARPS 4
#define RS_VCAP_MAX 64 /* lanes hold records j and j + 32 */

__host__ __device__ __forceinline__ int verify_ws(int T, int C) { return T + 2 * T * C + C + 4; }
__device__ __forceinline__ int ring_slot(int st0, int j, int C)
{
    const int x = st0 + j;
    return x >= C ? x - C : x;
}

/* ---- prologue ---------------------------------------------------------------------------------- */

template <int FAM, int RDT, int TP>
__global__ void __launch_bounds__(32 * RS_VPREP_WARPS) rs_k_verify_prep(rs_ssm_dims d, int T, rs_ssm_step_io io,
                                                                        rs_cuda_verify_state st)
{
    __shared__ float kq_s[RS_VCAP_MAX][TP], kk_s[RS_VCAP_MAX][TP];
    extern __shared__ float al_s[]; /* [grp][C] decays of the group's heads, physical slots */
    rs_pdl_trigger(); /* the tensor-core main kernel (rs_launch_pdl) may start: it waits before it reads `work` */
    const unsigned kgu = blockIdx.x;
    const size_t kg = kgu;
    const unsigned b = kgu / (unsigned)d.key_heads, g = kgu % (unsigned)d.key_heads;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int C = st.cap;
    const int grp = d.heads / d.key_heads;
    const size_t bh0 = (size_t)b * d.heads + (size_t)g * grp;
    for (int i = threadIdx.x; i < grp * C; i += blockDim.x) al_s[i] = st.ring_alpha[bh0 * C + i];
    const int h = st.fill[b], st0 = st.start[b];
    const size_t BH = (size_t)d.batch * d.heads, BG = (size_t)d.batch * d.key_heads;
    const int n = h + T;

    float4 qs[TP], kd[TP];
#pragma unroll
    for (int s = 0; s < TP; ++s) {
        qs[s] = kd[s] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (s < T) {
            qs[s] = rs_ld4(io.q + (s * BG + kg) * RS_CUDA_DK + 4 * lane);
            const float4 k = rs_ld4(io.k + (s * BG + kg) * RS_CUDA_DK + 4 * lane);
            kd[s] = make_float4(rs_ring_round<RDT>(k.x), rs_ring_round<RDT>(k.y), rs_ring_round<RDT>(k.z),
                                rs_ring_round<RDT>(k.w));
            if (s % RS_VPREP_WARPS == warp) {
                const float kx[4] = {kd[s].x, kd[s].y, kd[s].z, kd[s].w};
                rs_ring_st<RDT, 4>(st.ring_k, (kg * C + ring_slot(st0, h + s, C)) * RS_CUDA_DK + 4 * lane, kx);
            }
        }
    }
    constexpr int NV = FAM == RS_SSM_GDN ? 2 * TP : TP;
    constexpr int SPAN = 32 / NV;
    for (int j0 = warp; j0 < n; j0 += 2 * RS_VPREP_WARPS) {
        float4 kj[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) { /* loads first */
            const int j = j0 + u * RS_VPREP_WARPS;
            if (j < h) {
                kj[u] = rs_ring_k4<RDT>(st.ring_k, (kg * C + ring_slot(st0, j, C)) * RS_CUDA_DK, lane);
            } else {
                const int sd = j - h < T ? j - h : 0;
                const float4 k = rs_ld4(io.k + ((size_t)sd * BG + kg) * RS_CUDA_DK + 4 * lane);
                kj[u] = make_float4(rs_ring_round<RDT>(k.x), rs_ring_round<RDT>(k.y), rs_ring_round<RDT>(k.z),
                                    rs_ring_round<RDT>(k.w));
            }
        }
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            const int j = j0 + u * RS_VPREP_WARPS;
            float x[NV];
#pragma unroll
            for (int s = 0; s < TP; ++s) {
                x[s] = rs_dot4(kj[u], qs[s]);
                if (FAM == RS_SSM_GDN) x[TP + s] = rs_dot4(kj[u], kd[s]);
            }
            rs_dev_warp_reduce<NV>(x, lane);
            if (j < n && lane % SPAN == 0) {
                const int idx = lane / SPAN;
                if (idx < TP) kq_s[j][idx] = x[0];
                else kk_s[j][idx - TP] = x[0];
            }
        }
    }
    __syncthreads();

    const int WS = verify_ws(T, C);
    for (int hh = warp; hh < grp; hh += RS_VPREP_WARPS) {
        const size_t bh = bh0 + hh;
        const float *al = al_s + hh * C;
        float ad0 = 1.f; /* drafts' decays, lane s holds draft s */
        if (lane < T) ad0 = io.alpha[(size_t)lane * BH + bh];
        const float adj = __shfl_sync(RS_FULL_MASK, ad0, (lane - h) & 31);
        if (lane >= h && lane < n) st.ring_alpha[bh * C + ring_slot(st0, lane, C)] = adj;
        if (lane + 32 >= h && lane + 32 < n)
            st.ring_alpha[bh * C + ring_slot(st0, lane + 32, C)] = io.alpha[(size_t)(lane + 32 - h) * BH + bh];
        /* gamma_{j+1:h+s} for j = lane, lane + 32 in float64 (engine/rs_gamma.h), one warp scan
         * per draft s over the records 0..h+s, and one for the fold (records 0..h-1) */
        const float a_lo = lane < h ? al[ring_slot(st0, lane, C)] : adj;
        const float a_hi = lane + 32 < h ? al[ring_slot(st0, lane + 32, C)]
                                         : (lane + 32 < n ? io.alpha[(size_t)(lane + 32 - h) * BH + bh] : 1.f);
        const bool two = n > 32;
        double g0[TP], g1[TP], D[TP];
#pragma unroll
        for (int s = 0; s < TP; ++s) {
            g0[s] = g1[s] = D[s] = 1.0;
            if (s < T)
                rs_suffix64(lane <= h + s ? (double)a_lo : 1.0, lane + 32 <= h + s ? (double)a_hi : 1.0, two, lane, g0[s],
                            g1[s], D[s]);
        }
        double f0, f1, fc;
        rs_suffix64(lane < h ? (double)a_lo : 1.0, lane + 32 < h ? (double)a_hi : 1.0, two, lane, f0, f1, fc);
        float *w = st.work + bh * WS;
#pragma unroll
        for (int s = 0; s < TP; ++s) {
            if (s >= T) break;
            if (lane == 0) w[s] = (float)D[s];
            if (lane <= h + s) w[T + s * C + lane] = (float)g0[s] * kq_s[lane][s];
            if (lane + 32 <= h + s) w[T + s * C + lane + 32] = (float)g1[s] * kq_s[lane + 32][s];
            if (FAM == RS_SSM_GDN) {
                if (lane < h + s) w[T + T * C + s * C + lane] = (float)g0[s] * kk_s[lane][s];
                if (lane + 32 < h + s) w[T + T * C + s * C + lane + 32] = (float)g1[s] * kk_s[lane + 32][s];
            }
        }
        if (lane < h) w[T + 2 * T * C + lane] = (float)f0;
        if (lane + 32 < h) w[T + 2 * T * C + lane + 32] = (float)f1;
        if (lane == 0) w[T + 2 * T * C + C] = (float)fc;
    }
}

/* ---- main ---------------------------------------------------------------------------------------- */

/* the lane's records (lane, lane + 32) for rows [row, row + N): committed from the ring,
 * Mamba-2 drafts from the inputs (rounded); GDN drafts are solved, not loaded */
template <int FAM, int RDT, int N>
__device__ __forceinline__ void verify_vals(const rs_ssm_step_io &io, const rs_cuda_verify_state &st, size_t bh,
                                            size_t BH, int d_v, int row, int lane, int h, int nrec, int st0,
                                            float *v0, float *v1)
{
    const int C = st.cap;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int j = lane + 32 * half;
        float *v = half ? v1 : v0;
        if (j < h) {
            rs_ring_ld<RDT, N>(st.ring_v, (bh * C + ring_slot(st0, j, C)) * d_v + row, v);
        } else if (j < nrec) {
            rs_ring_ld<RS_CUDA_F32, N>(io.v, ((size_t)(j - h) * BH + bh) * d_v + row, v);
#pragma unroll
            for (int r = 0; r < N; ++r) v[r] = rs_ring_round<RDT>(v[r]);
        } else {
#pragma unroll
            for (int r = 0; r < N; ++r) v[r] = 0.f;
        }
    }
}

/* fold the committed records of rows [row, row + N): S <- pc S + sum_{j<h} Pf_j u_j k_j^T */
template <int RDT, int N>
__device__ __forceinline__ void verify_fold(const rs_cuda_verify_state &st, size_t kg, int st0, int h, float pc,
                                            float P0, float P1, const float *v0, const float *v1, float4 *s, int lane)
{
    const int C = st.cap;
    float cp0[N], cp1[N];
#pragma unroll
    for (int r = 0; r < N; ++r) cp0[r] = P0 * v0[r], cp1[r] = P1 * v1[r], s[r] = rs_scale4(pc, s[r]);
    int j = 0;
    for (; j + 4 <= h; j += 4) {
        float4 kj[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) kj[u] = rs_ring_k4<RDT>(st.ring_k, (kg * C + ring_slot(st0, j + u, C)) * RS_CUDA_DK, lane);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int r = 0; r < N; ++r)
                s[r] = rs_fma4(__shfl_sync(RS_FULL_MASK, j + u < 32 ? cp0[r] : cp1[r], (j + u) & 31), kj[u], s[r]);
    }
    for (; j < h; ++j) {
        const float4 kj = rs_ring_k4<RDT>(st.ring_k, (kg * C + ring_slot(st0, j, C)) * RS_CUDA_DK, lane);
#pragma unroll
        for (int r = 0; r < N; ++r) s[r] = rs_fma4(__shfl_sync(RS_FULL_MASK, j < 32 ? cp0[r] : cp1[r], j & 31), kj, s[r]);
    }
}

template <int FAM, int RDT, int TP, int RPW>
__global__ void __launch_bounds__(128) rs_k_verify_main(rs_ssm_dims d, int T, rs_ssm_step_io io,
                                                        rs_cuda_verify_state st, rs_geom gm)
{
    const int lane = threadIdx.x & 31;
    const unsigned gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (gw >= gm.BH * gm.wph) return;
    const unsigned bhu = gw / gm.wph, part = gw % gm.wph;
    const unsigned hd = bhu % gm.H, b = bhu / gm.H;
    const size_t bh = bhu, kg = (size_t)b * gm.G + hd / gm.grp;
    const size_t BH = gm.BH, BG = (size_t)d.batch * d.key_heads;
    const int dv = d.d_v, C = st.cap;
    const int r_begin = (int)part * gm.rows, r_end = r_begin + gm.rows;
    const int h = st.fill[b], st0 = st.start[b];
    const int n = h + T;
    const bool flush = n > st.L;
    const float *w = st.work + bh * verify_ws(T, C);
    const int nrec = FAM == RS_SSM_MAMBA2 ? n : h;

    /* per-head operands, loaded once */
    float4 q4[TP];
    float Ds[TP], c0[TP], c1[TP];
    const int cmax = FAM == RS_SSM_MAMBA2 ? 0 : -1; /* Mamba-2: j <= h + s; GDN committed part: j < h */
#pragma unroll
    for (int si = 0; si < TP; ++si) {
        const bool on = si < T;
        q4[si] = on ? rs_ld4(io.q + (si * BG + kg) * RS_CUDA_DK + 4 * lane) : make_float4(0.f, 0.f, 0.f, 0.f);
        Ds[si] = on ? w[si] : 0.f;
        const int lim = FAM == RS_SSM_MAMBA2 ? h + si + cmax : h - 1; /* last record of the sum */
        c0[si] = on && lane <= lim ? w[T + si * C + lane] : 0.f;
        c1[si] = on && lane + 32 <= lim ? w[T + si * C + lane + 32] : 0.f;
    }
    const float *pf = w + T + 2 * T * C;
    float P0 = 0.f, P1 = 0.f, pc = 1.f;
    if (flush) {
        P0 = lane < h ? pf[lane] : 0.f, P1 = lane + 32 < h ? pf[lane + 32] : 0.f;
        pc = pf[C];
    }

    float4 cs[RPW], ns[RPW];
    float cv0[RPW], cv1[RPW], nv0[RPW], nv1[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) cs[r] = rs_ld4(st.S_ckpt + (bh * dv + r_begin + r) * RS_CUDA_DK + 4 * lane);
    verify_vals<FAM, RDT, RPW>(io, st, bh, BH, dv, r_begin, lane, h, nrec, st0, cv0, cv1);

    if constexpr (FAM == RS_SSM_MAMBA2) {
        constexpr int N = RPW * TP;
        constexpr int SPAN = 32 / N;
        for (int row = r_begin; row < r_end; row += RPW) {
            const bool more = row + RPW < r_end;
            if (more) {
#pragma unroll
                for (int r = 0; r < RPW; ++r) ns[r] = rs_ld4(st.S_ckpt + (bh * dv + row + RPW + r) * RS_CUDA_DK + 4 * lane);
                verify_vals<FAM, RDT, RPW>(io, st, bh, BH, dv, row + RPW, lane, h, nrec, st0, nv0, nv1);
            }
            /* the drafts' records (rows of this chunk) */
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int j = lane + 32 * half;
                if (j >= h && j < n) rs_ring_st<RDT, RPW>(st.ring_v, (bh * C + ring_slot(st0, j, C)) * dv + row, half ? cv1 : cv0);
            }
            float x[N];
#pragma unroll
            for (int si = 0; si < TP; ++si)
#pragma unroll
                for (int r = 0; r < RPW; ++r)
                    x[r * TP + si] = __fmaf_rn(c1[si], cv1[r], __fmaf_rn(c0[si], cv0[r], __fmul_rn(Ds[si], rs_dot4(cs[r], q4[si]))));
            rs_dev_warp_reduce<N>(x, lane);
            const int idx = lane / SPAN, r = idx / TP, si = idx % TP;
            if (lane % SPAN == 0 && si < T) io.o[((size_t)si * BH + bh) * dv + row + r] = x[0];
            if (flush) {
                verify_fold<RDT, RPW>(st, kg, st0, h, pc, P0, P1, cv0, cv1, cs, lane);
#pragma unroll
                for (int r2 = 0; r2 < RPW; ++r2)
                    *reinterpret_cast<float4 *>(st.S_ckpt + (bh * dv + row + r2) * RS_CUDA_DK + 4 * lane) = cs[r2];
            }
            if (more) {
#pragma unroll
                for (int r2 = 0; r2 < RPW; ++r2) cs[r2] = ns[r2], cv0[r2] = nv0[r2], cv1[r2] = nv1[r2];
            }
        }
    } else {
        /* GDN: the drafts' keys (ring, rounded by the prologue) and the committed k . k_d sums */
        constexpr int N = 2 * RPW * TP; /* A (S_{t-1} k_t parts) and Q (S q parts) of RPW rows x TP drafts */
        static_assert(N <= 32, "GDN verify: 2 RPW TP <= 32");
        constexpr int SPAN = 32 / N;
        float4 kd4[TP];
        float e0[TP], e1[TP];
#pragma unroll
        for (int si = 0; si < TP; ++si) {
            const bool on = si < T;
            kd4[si] = on ? rs_ring_k4<RDT>(st.ring_k, (kg * C + ring_slot(st0, h + si, C)) * RS_CUDA_DK, lane)
                         : make_float4(0.f, 0.f, 0.f, 0.f);
            e0[si] = on && lane < h ? w[T + T * C + si * C + lane] : 0.f;
            e1[si] = on && lane + 32 < h ? w[T + T * C + si * C + lane + 32] : 0.f;
        }
        /* the triangular solve runs lane-parallel: lane l < 16 owns (row r, draft si) = idx / TP,
         * idx % TP with idx = l / SPAN; it keeps its row of the T x T coefficients */
        const int idx = (lane & 15) / SPAN, my_r = idx / TP, my_s = idx % TP;
        const bool my_on = my_s < T;
        float ckr[TP], cqr[TP];
#pragma unroll
        for (int sp = 0; sp < TP; ++sp) {
            ckr[sp] = my_on && sp < my_s ? w[T + T * C + my_s * C + h + sp] : 0.f;
            cqr[sp] = my_on && sp <= my_s ? w[T + my_s * C + h + sp] : 0.f;
        }
        const float my_beta = my_on ? io.beta[(size_t)my_s * BH + bh] : 0.f;
        float cvm = my_on ? io.v[((size_t)my_s * BH + bh) * dv + r_begin + my_r] : 0.f, nvm = 0.f;
        for (int row = r_begin; row < r_end; row += RPW) {
            const bool more = row + RPW < r_end;
            if (more) {
#pragma unroll
                for (int r = 0; r < RPW; ++r) ns[r] = rs_ld4(st.S_ckpt + (bh * dv + row + RPW + r) * RS_CUDA_DK + 4 * lane);
                verify_vals<FAM, RDT, RPW>(io, st, bh, BH, dv, row + RPW, lane, h, nrec, st0, nv0, nv1);
                nvm = my_on ? io.v[((size_t)my_s * BH + bh) * dv + row + RPW + my_r] : 0.f;
            }
            float x[N];
#pragma unroll
            for (int si = 0; si < TP; ++si)
#pragma unroll
                for (int r = 0; r < RPW; ++r) {
                    x[r * TP + si] = __fmaf_rn(e1[si], cv1[r], __fmaf_rn(e0[si], cv0[r], __fmul_rn(Ds[si], rs_dot4(cs[r], kd4[si]))));
                    x[RPW * TP + r * TP + si] =
                        __fmaf_rn(c1[si], cv1[r], __fmaf_rn(c0[si], cv0[r], __fmul_rn(Ds[si], rs_dot4(cs[r], q4[si]))));
                }
            rs_dev_warp_reduce<N>(x, lane);
            float acc = x[0];                                     /* alpha_t S_{t-1} k_t without the drafts */
            float o = __shfl_down_sync(RS_FULL_MASK, x[0], 16);   /* S_ckpt and committed part of o */
            float U = 0.f;
#pragma unroll
            for (int sp = 0; sp < TP; ++sp) {
                if (sp >= T) break;
                if (my_s == sp) U = rs_ring_round<RDT>(my_beta * (cvm - acc));
                const float Us = __shfl_sync(RS_FULL_MASK, U, ((my_r * TP + sp) * SPAN) | (lane & 16));
                acc = __fmaf_rn(ckr[sp], Us, acc);
                o = __fmaf_rn(cqr[sp], Us, o);
            }
            if (lane < 16 && lane % SPAN == 0 && my_on) {
                io.o[((size_t)my_s * BH + bh) * dv + row + my_r] = o;
                const size_t e = (bh * C + ring_slot(st0, h + my_s, C)) * dv + row + my_r;
                if (RDT == RS_CUDA_F32) static_cast<float *>(st.ring_v)[e] = U;
                else static_cast<uint16_t *>(st.ring_v)[e] = (uint16_t)rs_bf16bits(U);
            }
            if (flush) {
                verify_fold<RDT, RPW>(st, kg, st0, h, pc, P0, P1, cv0, cv1, cs, lane);
#pragma unroll
                for (int r2 = 0; r2 < RPW; ++r2)
                    *reinterpret_cast<float4 *>(st.S_ckpt + (bh * dv + row + r2) * RS_CUDA_DK + 4 * lane) = cs[r2];
            }
            if (more) {
#pragma unroll
                for (int r2 = 0; r2 < RPW; ++r2) cs[r2] = ns[r2], cv0[r2] = nv0[r2], cv1[r2] = nv1[r2];
                cvm = nvm;
            }
        }
    }
}

__global__ void rs_k_verify_commit(int batch, int T, int L, int C, const int32_t *accepted, int32_t *fill,
                                   int32_t *start, int64_t *flushes)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const int h = fill[b];
    if (h + T > L) { /* the verify folded records 0..h-1: drafts are now records 0..T-1 */
        int s0 = start[b] + h;
        start[b] = s0 >= C ? s0 - C : s0;
        fill[b] = accepted[b];
        if (flushes) flushes[b] += 1;
    } else {
        fill[b] = h + accepted[b];
    }
}

/* ---- snapshot baseline ---------------------------------------------------------------------------- */

#define RS_SNAP_RPW 4
template <int FAM>
__global__ void __launch_bounds__(128) rs_k_snapshot_verify(rs_ssm_dims d, int T, rs_ssm_step_io io, const float *S,
                                                            float *snap)
{
    constexpr int RPW = RS_SNAP_RPW;
    const int lane = threadIdx.x & 31;
    const size_t gw = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int wph = d.d_v / RPW;
    if (gw >= (size_t)d.batch * d.heads * wph) return;
    const size_t bh = gw / wph;
    const int row0 = (int)(gw % wph) * RPW;
    const int hd = (int)(bh % d.heads), b = (int)(bh / d.heads);
    const size_t kg = (size_t)b * d.key_heads + hd / (d.heads / d.key_heads);
    const size_t BH = (size_t)d.batch * d.heads, BG = (size_t)d.batch * d.key_heads;
    const size_t nS = BH * d.d_v * RS_CUDA_DK;
    const size_t grow0 = bh * d.d_v + row0;
    float4 s[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) s[r] = rs_ld4(S + (grow0 + r) * RS_CUDA_DK + 4 * lane);
    for (int t = 0; t < T; ++t) {
        const float alpha = io.alpha[t * BH + bh];
        const float4 k4 = rs_ld4(io.k + (t * BG + kg) * RS_CUDA_DK + 4 * lane);
        const float4 q4 = rs_ld4(io.q + (t * BG + kg) * RS_CUDA_DK + 4 * lane);
        float a[RPW];
        rs_ring_ld<RS_CUDA_F32, RPW>(io.v, (t * BH + bh) * d.d_v + row0, a);
        if (FAM == RS_SSM_GDN) {
            const float beta = io.beta[t * BH + bh];
            float x[RPW];
#pragma unroll
            for (int r = 0; r < RPW; ++r) x[r] = rs_dot4(s[r], k4);
            rs_dev_warp_reduce<RPW>(x, lane);
#pragma unroll
            for (int r = 0; r < RPW; ++r) a[r] = beta * (a[r] - alpha * __shfl_sync(RS_FULL_MASK, x[0], r * (32 / RPW)));
        }
        float x[RPW];
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
            s[r] = rs_fma4(a[r], k4, rs_scale4(alpha, s[r]));
            x[r] = rs_dot4(s[r], q4);
            *reinterpret_cast<float4 *>(snap + t * nS + (grow0 + r) * RS_CUDA_DK + 4 * lane) = s[r];
        }
        rs_dev_warp_reduce<RPW>(x, lane);
        if (lane % (32 / RPW) == 0) io.o[(t * BH + bh) * d.d_v + row0 + lane / (32 / RPW)] = x[0];
    }
}

__global__ void rs_k_snapshot_commit(size_t per_row4, int batch, const int32_t *accepted, const float4 *snap,
                                     float4 *S)
{
    const size_t n4 = per_row4 * (size_t)batch;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        const size_t b = i / per_row4;
        S[i] = snap[(size_t)(accepted[b] - 1) * n4 + i];
    }
}

#include "rs_cuda_verify_tc.cuh"

/* ---- launchers -------------------------------------------------------------------------------------- */

extern "C" int rs_cuda_replay_verify_kernel(const rs_cuda_verify_state *st, int T)
{
    if (!st) return 0;
    if (st->kernel != RS_CUDA_VERIFY_AUTO) return st->kernel;
    /* the H200 runs (docs/kernels.md): at T = 1 the CUDA-core kernel is 1.18-1.55x faster (B = 256), at T = 2
     * 0.83-0.94x the time of v6a on the four paper shapes, at T = 8 and 16 the tensor-core kernel v6a is
     * 1.09-2.8x faster; T = 3..7 were not timed against each other */
    return T <= 2 ? RS_CUDA_VERIFY_CORES : RS_CUDA_VERIFY_TC_V6A;
}

static rs_status check_common(const rs_ssm_dims *d, const rs_ssm_step_io *io, rs_ssm_family fam, int T, int rpw,
                              const char *who)
{
    RS_CHECK(d && io, RS_E_INVAL, "%s: NULL dims or io", who);
    RS_CHECK(fam == RS_SSM_MAMBA2 || fam == RS_SSM_GDN, RS_E_INVAL, "%s: unknown family %d", who, (int)fam);
    RS_CHECK(d->d_k == RS_CUDA_DK, RS_E_UNSUPPORTED,
             "%s: d_k = %d (speculative verification supports d_k = %d only; d_k = 64 and 256 have the standard "
             "decode)", who, d->d_k, RS_CUDA_DK);
    RS_CHECK(d->batch > 0 && d->heads > 0 && d->key_heads > 0 && d->heads % d->key_heads == 0, RS_E_SHAPE,
             "%s: B = %d, H = %d, G = %d", who, d->batch, d->heads, d->key_heads);
    RS_CHECK(d->d_v > 0 && d->d_v % 16 == 0 && d->d_v % rpw == 0, RS_E_SHAPE, "%s: d_v = %d", who, d->d_v);
    RS_CHECK(T >= 1 && T <= RS_CUDA_TMAX, RS_E_INVAL, "%s: T = %d outside 1..%d", who, T, RS_CUDA_TMAX);
    RS_CHECK(io->alpha && io->v && io->k && io->q && io->o && (fam == RS_SSM_MAMBA2 || io->beta), RS_E_INVAL,
             "%s: NULL input or output array", who);
    return RS_OK;
}

#define RS_VERIFY_RPW_M2 4
#define RS_VERIFY_RPW_GDN 2

/* the block's shared memory in bytes: 4 warps' regions, plus the tables once (GS) */
static inline size_t vtc_block_bytes(const vtc_lay &y) { return sizeof(float) * (4 * (size_t)y.total + (size_t)y.shared); }

/* the tensor-core main kernel: 4 warps a block, 16-row tiles, its shared memory raised past 48 KB once */
template <int FAM, int RDT, int NT, bool PF, bool GS = false>
static void verify_launch_tc_geom(const rs_ssm_dims *d, int T, const rs_ssm_step_io *io, const rs_cuda_verify_state *st,
                                  const rs_geom &g, cudaStream_t s)
{
    const int rb = st->ring_dtype == RS_CUDA_F32 ? 4 : 2;
    const size_t smem = vtc_block_bytes(vtc_layout<FAM, NT, PF, GS>(st->L, T, rb));
    static bool raised = false; /* per instantiation; a repeated call is harmless */
    if (!raised) {
        /* the limit once, at the largest L (cap <= RS_VCAP_MAX) and an fp32 ring; the launch's own size (by L, T and
         * the ring type) sets the blocks an SM */
        const size_t most = vtc_block_bytes(vtc_layout<FAM, NT, PF, GS>(RS_VCAP_MAX, 8 * NT, 4));
        if (most > 48 * 1024 && cudaFuncSetAttribute(rs_k_verify_tc<FAM, RDT, NT, PF, GS>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)most) != cudaSuccess)
            return; /* the launch below then fails and rs_cuda_launch_status reports it */
        /* staged (RS_VTC_STAGE): all of the unified L1 / shared memory as shared (a hint): v6a's staged Mamba-2
         * tiles need 4 x (55 + 1) KB of the 228 KB to keep 4 blocks an SM (L = 16, T = 8, bf16 ring) */
        if (vtc_staged<FAM, NT, PF, GS>())
            (void)cudaFuncSetAttribute(rs_k_verify_tc<FAM, RDT, NT, PF, GS>,
                                       cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
        raised = true;
    }
    const size_t warps = (size_t)g.BH * g.wph;
    /* the prologue's programmatic dependent: the first checkpoint tile's loads go out while it runs */
    rs_launch_pdl(rs_k_verify_tc<FAM, RDT, NT, PF, GS>, (unsigned)((warps + 3) / 4), 128, smem, s, *d, T, *io, *st, g);
}

template <int FAM, int RDT, int NT, bool PF>
static void verify_launch_tc(const rs_knobs &k, const rs_ssm_dims *d, int T, const rs_ssm_step_io *io,
                             const rs_cuda_verify_state *st, cudaStream_t s)
{
    rs_geom g = rs_replay_geom(d, 16, k.wph);
    if (!k.wph) { /* automatic: any divisor of the tile count (Nano's d_v = 80: 5 tiles) */
        const unsigned nch = (unsigned)(d->d_v / 16), target = 128u * (unsigned)rs_sm_count();
        for (unsigned c = 1; c <= nch; ++c)
            if (nch % c == 0) {
                g.wph = c;
                if (g.BH * c >= target) break;
            }
        g.rows = d->d_v / (int)g.wph;
    }
    /* GS (rs_cuda_launch_opts.verify_gshare): a block's 4 warps are slices of one head when the warps a head are a
     * multiple of 4; level 2 (the default) first widens an automatic geometry to 4 warps a head where the tiles
     * allow (faster on the T <= 8 rows of Qwen3.5-122B at B = 256 on the H200: docs/kernels.md) */
    if constexpr (FAM == RS_SSM_GDN && NT == 1 && !PF) {
        const unsigned nch = (unsigned)(d->d_v / 16);
        if (k.gshare == 2 && !k.wph && g.wph < 4 && nch % 4 == 0)
            g.wph = 4, g.rows = d->d_v / 4;
        if (k.gshare && g.wph % 4 == 0) {
            verify_launch_tc_geom<FAM, RDT, NT, PF, true>(d, T, io, st, g, s);
            return;
        }
    }
    verify_launch_tc_geom<FAM, RDT, NT, PF>(d, T, io, st, g, s);
}

template <int FAM, int RDT, int TP>
static void verify_launch(const rs_knobs &k, const rs_ssm_dims *d, int T, const rs_ssm_step_io *io,
                          const rs_cuda_verify_state *st, cudaStream_t s)
{
    /* rows per warp: one transposed reduction holds RPW x TP (Mamba-2) or 2 RPW x TP (GDN) values, at
     * most 32, so T > 8 halves the rows (Mamba-2 2, GDN 1) */
    constexpr int RPW0 = FAM == RS_SSM_MAMBA2 ? RS_VERIFY_RPW_M2 : RS_VERIFY_RPW_GDN;
    constexpr int RPW = TP > 8 ? RPW0 / 2 : RPW0;
    const size_t psmem = sizeof(float) * (size_t)(d->heads / d->key_heads) * st->cap;
    rs_k_verify_prep<FAM, RDT, TP><<<(unsigned)((size_t)d->batch * d->key_heads), 32 * RS_VPREP_WARPS, psmem, s>>>(
        *d, T, *io, *st);
    const int vk = rs_cuda_replay_verify_kernel(st, T);
    if (vk == RS_CUDA_VERIFY_TC_V6B) {
        verify_launch_tc<FAM, RDT, (TP > 8 ? 2 : 1), true>(k, d, T, io, st, s);
        return;
    }
    if (vk == RS_CUDA_VERIFY_TC_V6A) {
        verify_launch_tc<FAM, RDT, (TP > 8 ? 2 : 1), false>(k, d, T, io, st, s);
        return;
    }
    const rs_geom g = rs_replay_geom(d, RPW, k.wph);
    const size_t warps = (size_t)g.BH * g.wph;
    rs_k_verify_main<FAM, RDT, TP, RPW><<<(unsigned)((warps + 3) / 4), 128, 0, s>>>(*d, T, *io, *st, g);
}

template <int FAM, int RDT>
static void verify_launch_t(const rs_knobs &k, const rs_ssm_dims *d, int T, const rs_ssm_step_io *io,
                            const rs_cuda_verify_state *st, cudaStream_t s)
{
    if (T <= 1) verify_launch<FAM, RDT, 1>(k, d, T, io, st, s);
    else if (T <= 2) verify_launch<FAM, RDT, 2>(k, d, T, io, st, s);
    else if (T <= 4) verify_launch<FAM, RDT, 4>(k, d, T, io, st, s);
    else if (T <= 8) verify_launch<FAM, RDT, 8>(k, d, T, io, st, s);
    else verify_launch<FAM, RDT, 16>(k, d, T, io, st, s);
}

extern "C" rs_status rs_cuda_replay_verify(rs_ssm_family fam, const rs_ssm_dims *dims, int T, const rs_ssm_step_io *io,
                                           const rs_cuda_verify_state *st, const rs_cuda_launch_opts *opts,
                                           rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_replay_verify";
    RS_TRY(check_common(dims, io, fam, T, fam == RS_SSM_MAMBA2 ? RS_VERIFY_RPW_M2 : RS_VERIFY_RPW_GDN, who));
    RS_TRY(rs_opts_check(opts, who));
    const rs_knobs k = rs_knobs_of(opts);
    RS_CHECK(st && st->S_ckpt && st->ring_v && st->ring_k && st->ring_alpha && st->fill && st->start && st->work,
             RS_E_INVAL, "%s: NULL state array", who);
    RS_CHECK(st->L >= T && st->cap >= st->L + T && st->cap <= RS_VCAP_MAX, RS_E_INVAL,
             "%s: need T <= L and L + T <= cap <= %d (L = %d, T = %d, cap = %d)", who, RS_VCAP_MAX, st->L, T, st->cap);
    RS_CHECK(st->ring_dtype == RS_CUDA_F32 || st->ring_dtype == RS_CUDA_BF16, RS_E_UNSUPPORTED,
             "%s: ring dtype %d (F32 or BF16 only)", who, (int)st->ring_dtype);
    RS_TRY(rs_cuda_check_ckpt_round(&st->ckpt_round, who));
    RS_CHECK(st->kernel >= RS_CUDA_VERIFY_AUTO && st->kernel <= RS_CUDA_VERIFY_TC_V6A, RS_E_INVAL,
             "%s: kernel %d (0..3: AUTO, CORES, TC_V6B, TC_V6A)", who, st->kernel);
    if (fam == RS_SSM_MAMBA2) {
        if (st->ring_dtype == RS_CUDA_F32) verify_launch_t<RS_SSM_MAMBA2, RS_CUDA_F32>(k, dims, T, io, st, s);
        else verify_launch_t<RS_SSM_MAMBA2, RS_CUDA_BF16>(k, dims, T, io, st, s);
    } else {
        if (st->ring_dtype == RS_CUDA_F32) verify_launch_t<RS_SSM_GDN, RS_CUDA_F32>(k, dims, T, io, st, s);
        else verify_launch_t<RS_SSM_GDN, RS_CUDA_BF16>(k, dims, T, io, st, s);
    }
    RS_TRY(rs_cuda_launch_status(who));
    /* rows with fill + T > L folded their records: round their checkpoint (before the commit moves fill) */
    return rs_cuda_ckpt_round_launch(dims, st->S_ckpt, st->fill, st->L, T, &st->ckpt_round, s);
}

extern "C" rs_status rs_cuda_replay_commit(const rs_ssm_dims *dims, int T, const int32_t *accepted,
                                           const rs_cuda_verify_state *st, rs_cuda_stream s)
{
    RS_CHECK(dims && accepted && st && st->fill && st->start && T >= 1 && dims->batch > 0, RS_E_INVAL,
             "rs_cuda_replay_commit: bad arguments");
    RS_CHECK(dims->d_k == RS_CUDA_DK, RS_E_UNSUPPORTED,
             "rs_cuda_replay_commit: d_k = %d (speculative verification supports d_k = %d only)", dims->d_k, RS_CUDA_DK);
    rs_k_verify_commit<<<(dims->batch + 255) / 256, 256, 0, s>>>(dims->batch, T, st->L, st->cap, accepted, st->fill,
                                                                  st->start, st->ckpt_round.flushes);
    return rs_cuda_launch_status("rs_cuda_replay_commit");
}

extern "C" rs_status rs_cuda_snapshot_verify(rs_ssm_family fam, const rs_ssm_dims *dims, int T, const rs_ssm_step_io *io,
                                             const float *S, float *snap, rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_snapshot_verify";
    RS_TRY(check_common(dims, io, fam, T, RS_SNAP_RPW, who));
    RS_CHECK(S && snap, RS_E_INVAL, "%s: NULL state or snapshots", who);
    const size_t warps = (size_t)dims->batch * dims->heads * (dims->d_v / RS_SNAP_RPW);
    const unsigned grid = (unsigned)((warps + 3) / 4);
    if (fam == RS_SSM_MAMBA2) rs_k_snapshot_verify<RS_SSM_MAMBA2><<<grid, 128, 0, s>>>(*dims, T, *io, S, snap);
    else rs_k_snapshot_verify<RS_SSM_GDN><<<grid, 128, 0, s>>>(*dims, T, *io, S, snap);
    return rs_cuda_launch_status(who);
}

extern "C" rs_status rs_cuda_snapshot_commit(const rs_ssm_dims *dims, int T, const int32_t *accepted, const float *snap,
                                             float *S, rs_cuda_stream s)
{
    RS_CHECK(dims && accepted && snap && S && T >= 1 && dims->batch > 0, RS_E_INVAL,
             "rs_cuda_snapshot_commit: bad arguments");
    RS_CHECK(dims->d_k == RS_CUDA_DK, RS_E_UNSUPPORTED,
             "rs_cuda_snapshot_commit: d_k = %d (speculative verification supports d_k = %d only)", dims->d_k, RS_CUDA_DK);
    const size_t per_row4 = (size_t)dims->heads * dims->d_v * dims->d_k / 4;
    rs_k_snapshot_commit<<<1024, 256, 0, s>>>(per_row4, dims->batch, accepted, reinterpret_cast<const float4 *>(snap),
                                              reinterpret_cast<float4 *>(S));
    return rs_cuda_launch_status("rs_cuda_snapshot_commit");
}
