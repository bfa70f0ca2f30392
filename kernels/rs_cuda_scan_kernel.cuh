/* rs_cuda_scan_kernel.cuh — private to rs_cuda_scan.cu: the chunk kernel of rs_cuda_scan.h.
 *
 * One CTA per (run, value head): grid (H, runs of this launch), d_v / RPW warps. Warp w owns state
 * rows w*RPW .. w*RPW+RPW-1, lane l columns 4l .. 4l+3 (a float4 per row): the head's running
 * state(s) live in registers for the whole chunk (NS = 1: conv / shared; NS = 2: split W_lp, W_hp),
 * loaded at the start and written back at the end. The warps of a CTA never wait for each other
 * except inside an NVFP4 store (the tensor amax) and at the end of the chunk.
 *
 * Per token (inputs of t + 1 are loaded while t is computed):
 *   partial dots of the lane's float4s with k and q, one transposed warp reduction of 2 RPW
 *   values (GDN: S k and S q per row; Mamba-2: S q only, RPW values) -> the lane holding (S k)_r
 *   forms u_r, a shuffle broadcast gives every lane u of every row, the state update
 *   S = alpha S + u k^T, and o_r = alpha (S_{t-1} q)_r + u_r (k . q): S_t q written through
 *   the pre-update state (exact in real arithmetic; one reduction per token instead of two).
 *   Policies (branch per CTA, rs_cuda_scan.h and docs/kernels.md):
 *     conv     S <- Q_hp(S) every step (slot CONV, index pos);
 *     shared   W <- Q_hp(W) after the update when (pos + 1) % L == 0 (slot SHARED, flush count);
 *     split    non-flush: the token from W_lp; W_hp along its own path (split GDN: u recomputed
 *              from W_hp; split-naive GDN: the same u). Flush (pos >= L, pos % L == 0):
 *              C_lp = Q_lp(W_hp), C_hp = Q_hp(W_hp) (slots LP, HP, index pos / L - 1) from the
 *              unrounded W_hp, the token from the unrounded W_hp, then W_lp = step(C_lp) with that
 *              u, W_hp = step(C_hp) (split GDN: u recomputed from C_hp).
 *
 * Non-finite values: each lane keeps the first step t at which it saw a NaN alpha/beta (F_IN), a
 * non-finite output it wrote (F_OUT) or a non-finite stored value (F_ST, rs_scan_store), with
 * that step's flags. At the end the CTA takes the least such step and ORs the flags of the lanes
 * that saw it, and turns them into the engine's step (rs_head.c: store failures of a split flush
 * are reported at pos - 1, the newest folded token; GDN split checks the stores before the
 * output, split-naive and Mamba-2 the output first). The head's outputs from that step on are
 * overwritten with NaN (sticky), and later launches of a marked head write NaN only.
 */
#ifndef RS_CUDA_SCAN_KERNEL_CUH
#define RS_CUDA_SCAN_KERNEL_CUH

#include "rs_cuda_scan_dev.cuh"

/* One token's inputs as a lane needs them. */
template <int RPW, bool GDN> struct rs_scan_tok {
    float al, be;
    float4 k, q;
    float v1; /* GDN: v of row (lane / GS2) % RPW (the 2 RPW reduction); Mamba-2: of row lane / GS1 */
    float v2; /* GDN: v of row lane / GS1 (the RPW reduction: split's HP recompute) */
    float V[GDN ? 1 : RPW]; /* Mamba-2: v of every row of the warp */
};

template <int RPW, bool GDN>
__device__ __forceinline__ void rs_scan_load(const rs_scan_kargs &a, size_t rt, int h, int g, int row0, int lane,
                                             rs_scan_tok<RPW, GDN> &x)
{
    constexpr int GS1 = 32 / RPW, GS2 = 16 / RPW;
    x.al = __ldg(a.alpha + rt * a.ld_a + h);
    x.k = __ldg(reinterpret_cast<const float4 *>(a.k + rt * a.ld_k + (size_t)g * RS_SCAN_DK) + lane);
    x.q = __ldg(reinterpret_cast<const float4 *>(a.q + rt * a.ld_q + (size_t)g * RS_SCAN_DK) + lane);
    const float *vp = a.v + rt * a.ld_v + (size_t)h * a.d_v + row0;
    if constexpr (GDN) {
        x.be = __ldg(a.beta + rt * a.ld_a + h);
        x.v1 = __ldg(vp + (lane / GS2) % RPW);
        x.v2 = __ldg(vp + lane / GS1);
    } else {
        x.be = 0.0f;
        x.v1 = __ldg(vp + lane / GS1);
        x.v2 = 0.0f;
#pragma unroll
        for (int j = 0; j < RPW / 4; ++j) { /* row0 and d_v are multiples of 4: aligned */
            const float4 t = __ldg(reinterpret_cast<const float4 *>(vp) + j);
            x.V[4 * j] = t.x, x.V[4 * j + 1] = t.y, x.V[4 * j + 2] = t.z, x.V[4 * j + 3] = t.w;
        }
    }
}

template <int RPW, bool GDN, int NS>
__global__ void __launch_bounds__(32 * RS_SCAN_MAX_WARPS, RPW <= 4 && NS == 1 ? 2 : 1) rs_k_scan(const rs_scan_kargs a)
{
    static_assert(RPW == 4 || RPW == 8 || RPW == 16, "RPW");
    constexpr int GS1 = 32 / RPW; /* lanes per value after an RPW-value reduction */
    constexpr int GS2 = 16 / RPW; /* lanes per value after a 2 RPW-value reduction */
    /* the launch's list from its end: the block scheduler dispatches low blockIdx.y first, and the
       evaluator puts its cheapest run (the fp32 reference) first, so it fills the SMs last */
    const int h = blockIdx.x, r = a.list[gridDim.y - 1 - blockIdx.y];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
    const int row0 = warp * RPW, T = a.T, d_v = a.d_v;
    const size_t rt0 = (size_t)(r - a.run0) * T; /* the launch's rows start at its first run */
    float *const ob = a.o + (size_t)h * d_v; /* + (rt0 + t) * ld_o + row */
    int64_t *const mark = a.marks + ((size_t)r * a.n_layers + a.layer) * a.H + h;

    if (*mark >= 0) { /* non-finite earlier (uniform): NaN outputs until reset */
        for (size_t i = tid; i < (size_t)T * d_v; i += blockDim.x) ob[(rt0 + i / d_v) * a.ld_o + i % d_v] = NAN;
        return;
    }
    __shared__ float s_red[2 * RS_SCAN_MAX_WARPS];
    __shared__ int s_min_t, s_flags;
    if (tid == 0) s_min_t = INT_MAX, s_flags = 0; /* read after the first __syncthreads below */

    const rs_scan_run run = a.runs[r];
    const int g = h / a.hpg;
    const size_t n_el = (size_t)d_v * RS_SCAN_DK;
    float *const S = a.states + run.state_off + ((size_t)a.layer * a.H + h) * (size_t)NS * n_el +
                     (size_t)row0 * RS_SCAN_DK + 4 * lane;
    float4 A[RPW], B[NS == 2 ? RPW : 1];
#pragma unroll
    for (int i = 0; i < RPW; ++i) A[i] = *reinterpret_cast<const float4 *>(S + i * RS_SCAN_DK);
    if constexpr (NS == 2) {
#pragma unroll
        for (int i = 0; i < RPW; ++i) B[i] = *reinterpret_cast<const float4 *>(S + n_el + i * RS_SCAN_DK);
    }

    const uint64_t L = run.L;
    uint64_t ph = a.pos0 % L, blk = a.pos0 / L; /* pos = blk * L + ph, kept up to date per step */
    int first_t = INT_MAX, first_fl = 0, red_ctr = 0;
    rs_scan_tok<RPW, GDN> cur, nxt;
    rs_scan_load<RPW, GDN>(a, rt0, h, g, row0, lane, cur);
    nxt = cur;

    for (int t = 0; t < T; ++t) {
        if (t + 1 < T) rs_scan_load<RPW, GDN>(a, rt0 + t + 1, h, g, row0, lane, nxt);
        const float al = cur.al, be = cur.be;
        const float kq = rs_dev_warp_sum(rs_scan_dot4(cur.k, cur.q));
        int fl = (isnan(al) || (GDN && isnan(be))) ? RS_SCAN_F_IN : 0;
        float chk = 0.0f, o, red;
        bool writer;
        int orow;

        /* the dots: from A, or (split flush) from the unrounded W_hp in B */
        bool flush = false;
        if constexpr (NS == 2) flush = ph == 0 && blk >= 1;
        if constexpr (GDN) {
            float x[2 * RPW];
            if (flush) {
#pragma unroll
                for (int i = 0; i < RPW; ++i) x[i] = rs_scan_dot4(B[i], cur.k), x[RPW + i] = rs_scan_dot4(B[i], cur.q);
            } else {
#pragma unroll
                for (int i = 0; i < RPW; ++i) x[i] = rs_scan_dot4(A[i], cur.k), x[RPW + i] = rs_scan_dot4(A[i], cur.q);
            }
            red = rs_dev_warp_reduce<2 * RPW>(x, lane); /* lane < 16: (S k) of row lane / GS2; else (S q) */
            writer = lane >= 16 && (lane & (GS2 - 1)) == 0;
            orow = (lane - 16) / GS2;
        } else {
            float x[RPW];
            if (flush) {
#pragma unroll
                for (int i = 0; i < RPW; ++i) x[i] = rs_scan_dot4(B[i], cur.q);
            } else {
#pragma unroll
                for (int i = 0; i < RPW; ++i) x[i] = rs_scan_dot4(A[i], cur.q);
            }
            red = rs_dev_warp_reduce<RPW>(x, lane); /* (S q) of row lane / GS1 */
            writer = (lane & (GS1 - 1)) == 0;
            orow = lane / GS1;
        }

        if constexpr (NS == 2) {
            if (flush) { /* both checkpoints from the same unrounded W_hp: A <- C_lp, B <- C_hp */
                const uint64_t fi = blk - 1;
                rs_scan_store<RPW>(run.lp, B, A, run.seed, rs_codec_stream_id(RS_SLOT_LP, a.layer_id, (uint32_t)h, fi),
                                   row0, lane, warp, nwarps, s_red, red_ctr, chk);
                rs_scan_store<RPW>(run.hp, B, B, run.seed, rs_codec_stream_id(RS_SLOT_HP, a.layer_id, (uint32_t)h, fi),
                                   row0, lane, warp, nwarps, s_red, red_ctr, chk);
            }
        }

        if constexpr (GDN) {
            const float u = __fmul_rn(be, __fsub_rn(cur.v1, __fmul_rn(al, red))); /* lanes < 16 */
            const float ux = __shfl_xor_sync(RS_SCAN_FULL, u, 16); /* lanes >= 16: u of their row */
            o = __fmaf_rn(ux, kq, __fmul_rn(al, red));
            bool recompute = false;
            if constexpr (NS == 2) recompute = run.mode == RS_POLICY_SPLIT;
            if (recompute) { /* split GDN: W_hp's own u = beta (v - alpha W_hp k) (W_hp = C_hp at a flush) */
                float y[RPW];
#pragma unroll
                for (int i = 0; i < RPW; ++i) y[i] = rs_scan_dot4(B[i], cur.k);
                const float red2 = rs_dev_warp_reduce<RPW>(y, lane); /* (W_hp k) of row lane / GS1 */
                const float u2 = __fmul_rn(be, __fsub_rn(cur.v2, __fmul_rn(al, red2)));
#pragma unroll
                for (int i = 0; i < RPW; ++i) {
                    A[i] = rs_scan_upd4(A[i], al, __shfl_sync(RS_SCAN_FULL, u, i * GS2), cur.k);
                    if constexpr (NS == 2) B[i] = rs_scan_upd4(B[i], al, __shfl_sync(RS_SCAN_FULL, u2, i * GS1), cur.k);
                }
            } else {
#pragma unroll
                for (int i = 0; i < RPW; ++i) {
                    const float ui = __shfl_sync(RS_SCAN_FULL, u, i * GS2);
                    A[i] = rs_scan_upd4(A[i], al, ui, cur.k);
                    if constexpr (NS == 2) B[i] = rs_scan_upd4(B[i], al, ui, cur.k);
                }
            }
        } else {
            o = __fmaf_rn(cur.v1, kq, __fmul_rn(al, red));
#pragma unroll
            for (int i = 0; i < RPW; ++i) {
                A[i] = rs_scan_upd4(A[i], al, cur.V[i], cur.k);
                if constexpr (NS == 2) B[i] = rs_scan_upd4(B[i], al, cur.V[i], cur.k);
            }
        }

        if (writer) {
            ob[(rt0 + t) * a.ld_o + row0 + orow] = o;
            if (!(fabsf(o) <= FLT_MAX)) fl |= RS_SCAN_F_OUT;
        }

        if constexpr (NS == 1) { /* conv: every step (L = 1); shared: the L-th record of the window */
            if (ph == L - 1) {
                const bool conv = run.mode == RS_POLICY_CONV;
                const uint64_t stream = rs_codec_stream_id(conv ? RS_SLOT_CONV : RS_SLOT_SHARED, a.layer_id,
                                                           (uint32_t)h, conv ? a.pos0 + (uint64_t)t : blk);
                rs_scan_store<RPW>(run.hp, A, A, run.seed, stream, row0, lane, warp, nwarps, s_red, red_ctr, chk);
            }
        }
        if (isnan(chk)) fl |= RS_SCAN_F_ST;
        if (fl && first_t == INT_MAX) first_t = t, first_fl = fl;
        if (++ph == L) ph = 0, ++blk;
        cur = nxt;
    }

#pragma unroll
    for (int i = 0; i < RPW; ++i) *reinterpret_cast<float4 *>(S + i * RS_SCAN_DK) = A[i];
    if constexpr (NS == 2) {
#pragma unroll
        for (int i = 0; i < RPW; ++i) *reinterpret_cast<float4 *>(S + n_el + i * RS_SCAN_DK) = B[i];
    }

    /* the head's first non-finite step of this chunk, if any */
    const int m = rs_dev_warp_min(first_t);
    __syncthreads();
    if (lane == 0 && m != INT_MAX) atomicMin(&s_min_t, m);
    __syncthreads();
    const int tmin = s_min_t;
    if (tmin == INT_MAX) return; /* uniform */
    if (first_t == tmin) atomicOr(&s_flags, first_fl);
    __syncthreads();
    if (tid == 0) {
        const uint64_t p = a.pos0 + (uint64_t)tmin;
        const int f = s_flags;
        int64_t mk = (int64_t)p;
        if (NS == 2 && !(f & RS_SCAN_F_IN) && p >= L && p % L == 0) { /* a split flush step */
            const bool stores_first = GDN && run.mode == RS_POLICY_SPLIT;
            if (stores_first ? (f & RS_SCAN_F_ST) != 0 : (f & RS_SCAN_F_OUT) == 0) mk = (int64_t)p - 1;
        }
        *mark = mk;
    }
    for (size_t i = tid; i < (size_t)(T - tmin) * d_v; i += blockDim.x)
        ob[(rt0 + (size_t)tmin + i / d_v) * a.ld_o + i % d_v] = NAN;
}

/* The launches of one SSM kind (instantiated by rs_cuda_scan_gdn.cu / rs_cuda_scan_mamba2.cu). */
template <bool GDN> static void rs_scan_launch_kind(int rpw, int ns, const rs_scan_kargs &a, int nruns, cudaStream_t st)
{
    const dim3 grid((unsigned)a.H, (unsigned)nruns), block((unsigned)(32 * (a.d_v / rpw)));
    if (ns == 1) {
        if (rpw == 4) rs_k_scan<4, GDN, 1><<<grid, block, 0, st>>>(a);
        else if (rpw == 8) rs_k_scan<8, GDN, 1><<<grid, block, 0, st>>>(a);
        else rs_k_scan<16, GDN, 1><<<grid, block, 0, st>>>(a);
    } else {
        if (rpw == 4) rs_k_scan<4, GDN, 2><<<grid, block, 0, st>>>(a);
        else if (rpw == 8) rs_k_scan<8, GDN, 2><<<grid, block, 0, st>>>(a);
        else rs_k_scan<16, GDN, 2><<<grid, block, 0, st>>>(a);
    }
}

#endif /* RS_CUDA_SCAN_KERNEL_CUH */
