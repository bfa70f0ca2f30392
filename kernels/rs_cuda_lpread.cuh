/* rs_cuda_lpread.cuh — the wide low-precision read kernel of ReplaySSM standard decode (kernel
 * version v4; docs/kernels.md "Low-precision reads").
 * Included once, by rs_cuda_decode.cu, after replay_flush_rows (which its flush rows call).
 *
 * Why a second kernel: v3 (rs_k_replay_main with CKF != FP32) gives a lane 4 columns of a row, so an
 * fp8 row is a 4-byte load per lane and an nvfp4 row 2 + 1 bytes, and it prefetches the next chunk
 * in registers (128-167 registers at 16 rows a chunk, 8-12 warps per SM): only ~2 KB in flight
 * per warp, ~24 KB per SM, which by Little's law caps fp8 at ~2 TB/s (measured 1.7-2.2 TB/s).
 * v4 moves every byte of the non-flush step through a per-warp cp.async pipeline in shared
 * memory (RS_LPW_STAGES chunks of 16 rows in flight per warp, no registers held by loads in
 * flight), with 16-byte pieces:
 *   - a chunk = 16 rows of the checkpoint copy, contiguous in memory; piece p of lane l is bytes
 *     (32 p + l) * 16 of it, so lane l always holds the same E columns: E = 8 (fp16/bf16, 16 lanes
 *     a row), 16 (fp8: one 16-byte load = 16 E4M3 codes, 8 lanes a row), 32 (nvfp4: 32 E2M1 codes
 *     = two NVFP4 blocks, 4 lanes a row); q (and GDN's k) for those columns sit in registers;
 *   - scales once per chunk: fp8's 16 row scales (one per row: d_k = 128 is one fp8 block), the
 *     chunk's 128 nvfp4 block-scale bytes (one 4-byte copy per lane);
 *   - the ring values of the committed records (16 rows each) and this step's v for the rows.
 * Dequantisation in registers: fp16 by cvt, bf16 by a shift, E4M3 by the packed
 * cvt.rn.f16x2.e4m3x2 (two codes per instruction), E2M1 by word-wide bit moves: the 3 magnitude bits
 * of each nibble land in binary16 bits 9..11 and the sign in bit 15 (value * 2^-14, exact; the
 * 2^14 is folded into the block multiplier), four half2 words per 32-bit code word, in the element
 * order (0,4), (1,5), (2,6), (3,7): q is held in that order, so no shuffle of codes is needed.
 * Sums: a lane forms its E-column partial dot per row (times the row's or block's multiplier and
 * P_ckpt) and adds the records j = li, li + LPR, ... of the ring sum (li = lane's column group), so
 * one transposed reduction over the LPR lanes of a row (log2 LPR shuffle rounds) finishes both.
 * Flush rows (fill + 1 == L) read and write the fp32 S_ckpt exactly as v3 (replay_flush_rows).
 * Results equal v3's up to fp32 summation order (both are checked against the engine and float64).
 */
#ifndef RS_CUDA_LPREAD_CUH
#define RS_CUDA_LPREAD_CUH

#define RS_LPW_ROWS 16  /* rows per chunk */
#define RS_LPW_STAGES 4 /* chunks in flight per warp (3 loading while one is computed) */
/* Every chunk's pieces are issued after fill is read, each chunk in its own cp.async group: issuing the first
 * chunks' checkpoint pieces before fill measured 0.93-0.98x slower on every v4 row (H200, docs/kernels.md), so
 * there is one issue order. */

#include "rs_cuda_lpread_tc.cuh" /* v7: the dot products on tensor cores (TC) */

#include "rs_cuda_cpasync.cuh" /* cp.async helpers (shared with the verify kernels) */

/* ---- per-format geometry ---- */
/* row bytes of the copy and scale bytes a chunk: the kernel's constants (rs_lpw) and the host's stage sizes */
__host__ __device__ __forceinline__ constexpr int rs_lpw_rb(int ckf) { return ckf == RS_FMT_NVFP4 ? 64 : ckf == RS_FMT_FP8 ? 128 : 256; }
__host__ __device__ __forceinline__ constexpr int rs_lpw_scb(int ckf) { return ckf == RS_FMT_FP8 ? 64 : ckf == RS_FMT_NVFP4 ? 128 : 0; }
template <int CKF> struct rs_lpw {
    static constexpr int RB = rs_lpw_rb(CKF);                                          /* row bytes */
    static constexpr int E = RB == 64 ? 32 : RB == 128 ? 16 : 8;                       /* columns per lane */
    static constexpr int LPR = RS_CUDA_DK / E;                                         /* lanes per row */
    static constexpr int RA = 32 / LPR;                                                /* rows per piece */
    static constexpr int NP = RS_LPW_ROWS / RA;                                        /* pieces per lane and chunk */
};
/* ring record stride in a stage: 16 rows + 16 bytes of padding (bank spread of the record reads), except a bf16
 * ring under fp8 / nvfp4: 32 bytes, so a record's two 16-byte pieces fill one 32-byte shared segment (at 48
 * bytes every other record straddles two: 5x the ideal shared wavefronts of the ring copies, Nsight Compute);
 * their record reads stay within 2-way bank conflicts (8 or 4 lanes a row, records li) while
 * fp16's 16 lanes a row would read 4-way, so fp16 / bf16 keep 48 */
__host__ __device__ __forceinline__ int rs_lpw_rstride(int ckf, int rdt)
{
    return rdt == RS_CUDA_F32 ? 80 : ckf == RS_FMT_FP8 || ckf == RS_FMT_NVFP4 ? 32 : 48;
}
/* Every piece of a stage that a 32-byte global sector fills sits at a 32-byte boundary of shared memory: a
 * 16-byte cp.async whose source and destination differ by 16 modulo 32 costs its sector twice (Nsight Compute, H200:
 * misaligned stages' checkpoint pieces took 2x the ideal L2 sectors, 30 % of the fp8 read's sectors in
 * excess, L2 at 86 % of its throughput). The stage size, the head tables' size and the offsets of v and the scales
 * are therefore multiples of 32, and so are the ring records under fp8 / nvfp4 with a bf16 ring (
 * rs_lpw_rstride above; the other rings keep 48 / 80 bytes for the banks of their record reads). */
__host__ __device__ __forceinline__ int rs_lpw_align32(int x) { return (x + 31) & ~31; }
/* offset of this step's v (16 floats) in a stage; the scales follow it */
__host__ __device__ __forceinline__ int rs_lpw_vc_off(int ckf, int rdt, int L)
{
    return RS_LPW_ROWS * rs_lpw_rb(ckf) + rs_lpw_align32((L - 1) * rs_lpw_rstride(ckf, rdt));
}
/* bytes of one stage: checkpoint pieces, L - 1 ring records, this step's v (16 floats), scales */
__host__ __device__ __forceinline__ int rs_lpw_stage_bytes(int ckf, int rdt, int L)
{
    return rs_lpw_align32(rs_lpw_vc_off(ckf, rdt, L) + 64 + rs_lpw_scb(ckf));
}

/* decoder element order within 8 consecutive columns (nvfp4: the four half2 words of a code word) */
template <int CKF> __device__ __forceinline__ constexpr int rs_lpw_perm(int k)
{
    return CKF == RS_FMT_NVFP4 ? (k >> 1) + 4 * (k & 1) : k;
}

/* the E columns of one 16-byte piece as floats (decoder order), into e[] */
template <int CKF> __device__ __forceinline__ void rs_lpw_decode(uint4 raw, float *e)
{
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        if constexpr (CKF == RS_FMT_FP16) {
            const float2 a = rs_h2f2(w[i]);
            e[2 * i] = a.x, e[2 * i + 1] = a.y;
        } else if constexpr (CKF == RS_FMT_BF16) {
            e[2 * i] = rs_bf16lo(w[i]), e[2 * i + 1] = rs_bf16hi(w[i]);
        } else if constexpr (CKF == RS_FMT_FP8) {
            const float2 a = rs_h2f2(rs_e4m3x2_h2(w[i])), b = rs_h2f2(rs_e4m3x2_h2(w[i] >> 16));
            e[4 * i] = a.x, e[4 * i + 1] = a.y, e[4 * i + 2] = b.x, e[4 * i + 3] = b.y;
        } else { /* E2M1: nibble k of w = element 8i + k; pairs (0, 4), (1, 5), (2, 6), (3, 7) */
            const uint32_t x = w[i];
            const float2 a = rs_h2f2(rs_e2m1w_h2(x, 0)), b = rs_h2f2(rs_e2m1w_h2(x, 1)), c = rs_h2f2(rs_e2m1w_h2(x, 2)),
                         d = rs_h2f2(rs_e2m1w_h2(x, 3));
            e[8 * i] = a.x, e[8 * i + 1] = a.y, e[8 * i + 2] = b.x, e[8 * i + 3] = b.y;
            e[8 * i + 4] = c.x, e[8 * i + 5] = c.y, e[8 * i + 6] = d.x, e[8 * i + 7] = d.y;
        }
    }
}

/* one ring value (row rr of the record at p) as fp32 */
template <int RDT> __device__ __forceinline__ float rs_lpw_ringval(const unsigned char *p, int rr)
{
    if constexpr (RDT == RS_CUDA_F32) return reinterpret_cast<const float *>(p)[rr];
    else return __uint_as_float((uint32_t)reinterpret_cast<const uint16_t *>(p)[rr] << 16);
}

/* per-head scalars after the two coefficient arrays of a head's table (floats) */
#define RS_LPW_HS 8
__host__ __device__ __forceinline__ int rs_lpw_head_floats(int L) { return 2 * L + RS_LPW_HS; }
/* chunks in flight per warp (the same for every format: 3 stages for fp16/bf16 measured slower) */
template <int CKF> __host__ __device__ __forceinline__ constexpr int rs_lpw_stages() { return RS_LPW_STAGES; }

/* A warp owns a slice of gm.rows rows of one head (hpw = 1, the default), or `hpw` consecutive value
 * heads of one (row, key head) (hpw | H/G; they share fill, q and k), and walks their chunks as one
 * sequence through its pipeline (the start-up latency, fill -> tables -> first chunk, paid once per hpw
 * heads; the heads' tables are copied together by cp.async, which makes 2-4 heads a warp faster for GDN and
 * nvfp4: lp_hpw, docs/kernels.md). hpw and
 * gm.wph are powers of two. coef_bytes: the per-warp tables (a multiple of 32). */
/* FUSED (RS_CUDA_LAUNCH_FUSED): no prologue launch; the warp forms its heads' coefficients itself
 * (replay_key_dots once for its key head, replay_head_coefs per value head) after issuing its first
 * stages' copies, and warps of part 0 store this step's record; !FUSED reads them from `work`. */
/* TC (v7, rs_cuda_lpread_tc.cuh): the chunk's dot products on tensor cores; with the prologue only; 4 blocks an SM
 * (<= 128 registers: uncapped it takes 133, 12 warps an SM, and was 1.4x slower than v4 there) */
template <int FAM, int RDT, int CKF, bool TWO, bool FUSED, bool TC = false>
__global__ void __launch_bounds__(128, TC ? (TWO ? 1 : 4) : rs_lpw_minb<FAM, CKF, TWO, FUSED>()) rs_k_replay_lpw(rs_ssm_dims d, rs_ssm_step_io io, rs_cuda_replay_state st,
                                                       rs_ckpt_src src, rs_geom gm, int hpw, int stage_bytes,
                                                       int coef_bytes)
{
    using F = rs_lpw<CKF>;
    static_assert(!(TC && FUSED), "v7 (TC) runs with the separate prologue only");
    constexpr int NS = rs_lpw_stages<CKF>();
    extern __shared__ __align__(16) unsigned char rs_lpw_sm[];
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    const unsigned gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    /* hpw and wph are powers of two (lp_hpw, rs_replay_geom): shifts, and one 32-bit division (B H < 2^32) */
    const unsigned lh = (unsigned)__ffs(hpw) - 1u, lw = (unsigned)__ffs((int)gm.wph) - 1u;
    if (gw >= (gm.BH >> lh) << lw) return; /* whole warps */
    const unsigned item = gw >> lw, part = gw & (gm.wph - 1u);
    const unsigned bh0u = item << lh, b = bh0u / gm.H, hd0 = bh0u - b * gm.H;
    const size_t bh0 = bh0u; /* first value head of the warp */
    const size_t kg = (size_t)b * gm.G + hd0 / gm.grp;
    const int dv = d.d_v, L = st.L;
    const int r_begin = (int)part * gm.rows, r_end = r_begin + gm.rows;
    const int nch = (r_end - r_begin) / RS_LPW_ROWS, ntot = nch * hpw;
    constexpr int ESZ = RDT == RS_CUDA_F32 ? 4 : 2, PR = ESZ; /* 16-byte pieces per ring record (16 rows) */
    const int rstr = rs_lpw_rstride(CKF, RDT);
    const int ring_off = RS_LPW_ROWS * F::RB, vc_off = rs_lpw_vc_off(CKF, RDT, L), sc_off = vc_off + 64;
    unsigned char *wsm = rs_lpw_sm + (size_t)wib * (coef_bytes + NS * stage_bytes);
    float *tab = reinterpret_cast<float *>(wsm);
    unsigned char *stg = wsm + coef_bytes;

    const size_t wrow0 = bh0 * dv + r_begin; /* the warp's first row (of B * H * d_v) */

    const int hn = st.fill[b];
    const int last = FAM == RS_SSM_MAMBA2 ? hn : hn - 1;
    const int WS = replay_ws(L);
    float4 kcur = make_float4(0.f, 0.f, 0.f, 0.f);
    if constexpr (FUSED) {
        kcur = replay_kcur<RDT>(io, kg, lane);
        if (part == 0)
            for (int hh = 0; hh < hpw; ++hh)
                replay_store_record<FAM, RDT>(io, st, bh0 + hh, kg, hn, lane, hh == 0 && hd0 % gm.grp == 0, kcur);
    }

    if (hn + 1 == L) { /* flush: v3's path (fp32 S_ckpt read and written), head by head */
        if constexpr (!FUSED) rs_pdl_wait(); /* `work` and ring_k's slot hn are the prologue's */
        if (FAM == RS_SSM_GDN && st.ring_vraw) return; /* two-precision records: rs_k_replay_flush_recompute */
        const float4 q4 = rs_ld4(io.q + kg * RS_CUDA_DK + 4 * lane);
        float4 kc4 = make_float4(0.f, 0.f, 0.f, 0.f);
        if (FAM == RS_SSM_GDN) kc4 = FUSED ? kcur : rs_ring_k4<RDT>(st.ring_k, (kg * L + hn) * RS_CUDA_DK, lane);
        for (int hh = 0; hh < hpw; ++hh) {
            const size_t bh = bh0 + hh;
            float P0 = 0.f, P1 = 0.f, alpha = 0.f, beta = 0.f, pck;
            if constexpr (FUSED) {
                float c0, c1, e0, e1; /* the decay products only (no key dots at a flush) */
                replay_head_coefs<FAM, TWO>(st, bh, hn, last, lane, io.alpha[bh], 0.f, 0.f, 0.f, 0.f, P0, P1, c0, c1, e0,
                                            e1, pck);
            } else {
                const float *w = st.work + bh * WS;
                if (lane <= last) P0 = w[lane];
                if (TWO && lane + 32 <= last) P1 = w[lane + 32];
                pck = w[3 * L];
            }
            if (FAM == RS_SSM_GDN) alpha = io.alpha[bh], beta = io.beta[bh];
            replay_flush_rows<FAM, RDT, TWO, FUSED>(io, st, bh, kg, dv, r_begin, r_end, lane, hn, last, P0, P1, pck, kc4,
                                                    q4, alpha, beta, kcur);
        }
        return;
    }

    /* ---- non-flush: o from one pass over the low-precision copy ---- */
    /* head tables: cq[L], ck[L] (GDN), then pck, alpha, beta, k.q, sdec */
    const int HF = rs_lpw_head_floats(L);
    const int li = lane % F::LPR, grp = lane / F::LPR; /* column group; row within a piece */

    /* q (GDN: and this step's k) for the lane's E columns, in decoder order */
    float qv[F::E], kv[FAM == RS_SSM_GDN ? F::E : 1];
    auto load_qk = [&]() {
        float t[F::E];
        rs_ring_ld<RS_CUDA_F32, F::E>(io.q, kg * RS_CUDA_DK + (size_t)li * F::E, t);
#pragma unroll
        for (int i = 0; i < F::E; ++i) qv[i] = t[(i & ~7) + rs_lpw_perm<CKF>(i & 7)];
        if constexpr (FAM == RS_SSM_GDN) {
            /* this step's k rounded as the ring stores it: the value the prologue (or, FUSED, a warp of this
             * launch) writes to ring_k's slot hn, read from io.k so that nothing here waits for either */
            rs_ring_ld<RS_CUDA_F32, F::E>(io.k, kg * RS_CUDA_DK + (size_t)li * F::E, t);
#pragma unroll
            for (int i = 0; i < F::E; ++i) t[i] = rs_ring_round<RDT>(t[i]);
#pragma unroll
            for (int i = 0; i < F::E; ++i) kv[i] = t[(i & ~7) + rs_lpw_perm<CKF>(i & 7)];
        }
    };
    uint32_t bfr[TC ? 16 : 1];
    float tinv = 1.f;

    /* !FUSED: q and k (io's: nothing the prologue writes) into registers, then the wait for the prologue
     * (rs_pdl_wait: this kernel is launched as its programmatic dependent), then the head tables copied
     * from `work` by cp.async into the first group, which chunk 0 waits for anyway: one memory round trip
     * fewer before the first chunk than loading them into registers and storing them.
     * The loads go before the first stages' copies (issuing those first was measured 1.02-1.28x slower on every
     * v4 row, H200: docs/kernels.md). */
    if constexpr (!FUSED && !TC) load_qk();
    if constexpr (!FUSED) { /* (FUSED: formed below) */
        rs_pdl_wait();
        for (int hh = 0; hh < hpw; ++hh) {
            const size_t bh = bh0 + hh;
            const float *w = st.work + bh * WS;
            float *t = tab + hh * HF;
            for (int j = lane; j <= last; j += 32) {
                rs_cp4(t + j, w + L + j);
                if (FAM == RS_SSM_GDN) rs_cp4(t + L + j, w + 2 * L + j);
            }
            if (lane == 0) rs_cp4(t + 2 * L, w + 3 * L);
            if (FAM == RS_SSM_GDN) {
                if (lane == 1) rs_cp4(t + 2 * L + 1, io.alpha + bh);
                if (lane == 2) rs_cp4(t + 2 * L + 2, io.beta + bh);
                if (lane == 3) rs_cp4(t + 2 * L + 3, w + 3 * L + 1);
            }
            if (CKF == RS_FMT_NVFP4 && lane == 4) rs_cp4(t + 2 * L + 4, src.sdec + bh);
        }
    }
    /* v7: B fragments (lane role n = lane / 4: q's parts for n < 3, GDN's k's for 4 <= n < 7), and the
     * factors that undo their scaling for the accumulator columns of this lane (2c, 2c + 1) */
    if constexpr (TC) {
        const bool krole = FAM == RS_SSM_GDN && lane >= 16;
        float x[32];
        if (krole) rs_ring_ld<RDT, 32>(st.ring_k, (kg * L + hn) * RS_CUDA_DK + 32 * (lane & 3), x);
        else rs_ring_ld<RS_CUDA_F32, 32>(io.q, kg * RS_CUDA_DK + 32 * (lane & 3), x);
        const float inv = rs_lpt_bfrag<CKF>(x, lane, (lane & 12) == 12 || (FAM == RS_SSM_MAMBA2 && lane >= 16), bfr);
        const float qinv = __shfl_sync(RS_FULL_MASK, inv, 0), kinv = __shfl_sync(RS_FULL_MASK, inv, 16);
        tinv = (lane & 3) < 2 ? qinv : kinv;
    }
    /* A chunk's copies from counters and fixed per-lane offsets. Chunk c is the 16 rows from row `rl` of the
     * warp's slice of its head `hh` (hh = c / nch, rl = 16 (c % nch)), walked in order by an issue position
     * (ih, irl) and a compute position (ch, crl), each advanced by 16 rows a chunk and wrapped to the next head.
     * Every 64-bit address is a per-warp (or per-lane) base plus a 32-bit offset formed once a chunk: the
     * general chunk index (a division by nch with hpw > 1) and per-piece 64-bit products would be ~230 of ~740
     * static instructions a chunk. */
    static_assert((NS & (NS - 1)) == 0, "stage slot = chunk & (NS - 1)");
    const int rows_w = r_end - r_begin, hstr = L * dv; /* slice rows; ring elements from a head's records to the next's */
    const int nring = hn * PR;                        /* 16-byte ring pieces a chunk: records 0..hn-1 */
    const unsigned char *codes_l = src.codes + wrow0 * F::RB + lane * 16; /* piece p of a chunk: + 512 p */
    /* ring pieces t = lane + 32 k: record t / PR, part t % PR; in global memory
     * ring_v + (((bh0 + hh) L + j) dv + r_begin + rl) ESZ + 16 part, in the stage ring_off + j rstr + 16 part */
    const unsigned char *ring_l = static_cast<const unsigned char *>(st.ring_v) + (bh0 * L * dv + r_begin) * ESZ +
                                  (size_t)((lane / PR) * dv * ESZ + (lane % PR) * 16);
    const int ring_sl = ring_off + (lane / PR) * rstr + (lane % PR) * 16;
    const int ring_gstep = (32 / PR) * dv * ESZ, ring_sstep = (32 / PR) * rstr;
    int ic = 0, ih = 0, irl = 0; /* the next chunk to issue */
    auto issue_next = [&]() {
        unsigned char *sg = stg + (ic & (NS - 1)) * stage_bytes;
        const int crow = ih * dv + irl; /* the chunk's first row from the warp's first */
        const unsigned char *cb = codes_l + (unsigned)(crow * F::RB);
#pragma unroll
        for (int p = 0; p < F::NP; ++p) rs_cp16(sg + (p * 32 + lane) * 16, cb + p * 512);
        const unsigned char *rg = ring_l + (unsigned)((ih * hstr + irl) * ESZ);
#pragma unroll 1 /* (one or two trips at L = 16: unrolled, the trip-count set-up cost more than the loop) */
        for (int t = lane, so = ring_sl, go = 0; t < nring; t += 32, so += ring_sstep, go += ring_gstep)
            rs_cp16(sg + so, rg + go);
        const size_t grow0 = wrow0 + (unsigned)crow;
        if (lane < 4) rs_cp16(sg + vc_off + lane * 16, io.v + grow0 + 4 * lane);
        if constexpr (CKF == RS_FMT_FP8) {
            if (lane < 16) rs_cp4(sg + sc_off + 4 * lane, src.scale_inv + grow0 + lane);
        } else if constexpr (CKF == RS_FMT_NVFP4) {
            rs_cp4(sg + sc_off + 4 * lane, src.bscale + grow0 * (RS_CUDA_DK / RS_NVFP4_BLOCK) + 4 * lane);
        }
        ++ic, irl += RS_LPW_ROWS;
        if (irl == rows_w) irl = 0, ++ih;
    };
    for (int s = 0; s < NS - 1; ++s) {
        if (s < ntot) issue_next();
        rs_cp_commit();
    }
    if constexpr (FUSED) {
        /* the prologue's work while the first stages are in flight: key dots once, then each head's table */
        const float4 q4 = rs_ld4(io.q + kg * RS_CUDA_DK + 4 * lane);
        float q0, q1, kk0, kk1;
        replay_key_dots<FAM, RDT, TWO>(st, kg, hn, lane, q4, kcur, q0, q1, kk0, kk1);
        const float kqc = __shfl_sync(RS_FULL_MASK, hn < 32 ? q0 : q1, hn & 31);
        for (int hh = 0; hh < hpw; ++hh) {
            const size_t bh = bh0 + hh;
            float *t = tab + hh * HF;
            float P0, P1, c0, c1, e0, e1, pck;
            replay_head_coefs<FAM, TWO>(st, bh, hn, last, lane, io.alpha[bh], q0, q1, kk0, kk1, P0, P1, c0, c1, e0, e1,
                                        pck);
            if (lane <= last) {
                t[lane] = c0;
                if (FAM == RS_SSM_GDN) t[L + lane] = e0;
            }
            if (TWO && lane + 32 <= last) {
                t[lane + 32] = c1;
                if (FAM == RS_SSM_GDN) t[L + lane + 32] = e1;
            }
            if (lane == 0) {
                t[2 * L] = pck;
                if (FAM == RS_SSM_GDN) t[2 * L + 1] = io.alpha[bh], t[2 * L + 2] = io.beta[bh], t[2 * L + 3] = kqc;
                if (CKF == RS_FMT_NVFP4) t[2 * L + 4] = src.sdec[bh];
            }
        }
        load_qk(); /* the tables are read after the loop's first __syncwarp */
    }
    /* this step's record of the chunk's first row: ring_v element rec0 + ch * hstr + crl */
    const size_t rec0 = (bh0 * L + hn) * dv + r_begin;
    int ch = 0, crl = 0; /* the chunk being computed */
    for (int c = 0; c < ntot; ++c) {
        rs_cp_wait<NS - 2>(); /* chunk c has landed (this lane's copies) */
        __syncwarp();         /* ... and every lane's; all lanes are done with chunk c - 1 and the tables */
        if (c + NS - 1 < ntot) issue_next(); /* into chunk c - 1's slot */
        rs_cp_commit();

        const unsigned char *sg = stg + (c & (NS - 1)) * stage_bytes;
        const float *vc = reinterpret_cast<const float *>(sg + vc_off);
        const float *t = tab + ch * HF;
        const float pck = t[2 * L];
        const size_t grow0 = wrow0 + (unsigned)(ch * dv + crl);
        const size_t erec = rec0 + (unsigned)(ch * hstr + crl);
        crl += RS_LPW_ROWS;
        if (crl == rows_w) crl = 0, ++ch;
        if constexpr (TC) {
            const int g = lane >> 2, cg = lane & 3; /* rows g, g + 8; columns 32 cg .. 32 cg + 31 */
            const unsigned char *ra = sg + g * F::RB + cg * (F::RB / 4);
            uint32_t s2a = 0, s2b = 0;
            if constexpr (CKF == RS_FMT_NVFP4) {
                s2a = *reinterpret_cast<const uint16_t *>(sg + sc_off + g * 8 + 2 * cg);
                s2b = *reinterpret_cast<const uint16_t *>(sg + sc_off + (g + 8) * 8 + 2 * cg);
            }
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            rs_lpt_dot<CKF>(ra, ra + 8 * F::RB, s2a, s2b, bfr, acc);
            /* acc: rows g (0, 1), g + 8 (2, 3); B columns 2cg, 2cg + 1: cg 0 q hi + mid, 1 q lo (+ 0), 2-3 k */
            float ma = __fmul_rn(pck, tinv), mb = ma;
            if constexpr (CKF == RS_FMT_FP8) {
                const float *rsc = reinterpret_cast<const float *>(sg + sc_off);
                ma = __fmul_rn(ma, rsc[g]), mb = __fmul_rn(mb, rsc[g + 8]);
            } else if constexpr (CKF == RS_FMT_NVFP4) {
                ma = mb = __fmul_rn(__fmul_rn(ma, t[2 * L + 4]), 16384.0f);
            }
            const float pa = __fmul_rn(ma, acc[0] + acc[1]), pb = __fmul_rn(mb, acc[2] + acc[3]);
            const bool kcol = FAM == RS_SSM_GDN && cg >= 2;
            float qa = kcol ? 0.f : pa, qb = kcol ? 0.f : pb, ka = kcol ? pa : 0.f, kb = kcol ? pb : 0.f;
#pragma unroll 1
            for (int j = cg; j < hn; j += 4) { /* the lane's share of the record sums: the ring's records */
                const unsigned char *rp = sg + ring_off + j * rstr;
                const float va = rs_lpw_ringval<RDT>(rp, g), vb = rs_lpw_ringval<RDT>(rp, g + 8);
                const float cq = t[j];
                qa = __fmaf_rn(cq, va, qa), qb = __fmaf_rn(cq, vb, qb);
                if constexpr (FAM == RS_SSM_GDN) {
                    const float ck = t[L + j];
                    ka = __fmaf_rn(ck, va, ka), kb = __fmaf_rn(ck, vb, kb);
                }
            }
            if (FAM == RS_SSM_MAMBA2 && (hn & 3) == cg) { /* Mamba-2's record hn (this step's v), last in order */
                const float cq = t[hn];
                qa = __fmaf_rn(cq, rs_ring_round<RDT>(vc[g]), qa), qb = __fmaf_rn(cq, rs_ring_round<RDT>(vc[g + 8]), qb);
            }
#pragma unroll
            for (int o = 1; o <= 2; o *= 2) {
                qa += __shfl_xor_sync(RS_FULL_MASK, qa, o), qb += __shfl_xor_sync(RS_FULL_MASK, qb, o);
                if constexpr (FAM == RS_SSM_GDN)
                    ka += __shfl_xor_sync(RS_FULL_MASK, ka, o), kb += __shfl_xor_sync(RS_FULL_MASK, kb, o);
            }
            const int rr = g + 8 * cg; /* lanes cg 0 and 1 finish rows g and g + 8 */
            if constexpr (FAM == RS_SSM_MAMBA2) {
                if (cg < 2) io.o[grow0 + rr] = cg ? qb : qa;
                if (lane < RS_LPW_ROWS) rs_ring_st1<RDT>(st.ring_v, erec + lane, rs_ring_round<RDT>(vc[lane])); /* this step's record */
            } else if (cg < 2) {
                const float alpha = t[2 * L + 1], beta = t[2 * L + 2], kqc = t[2 * L + 3];
                const float xq = cg ? qb : qa, xk = cg ? kb : ka;
                const float u = rs_ring_round<RDT>(beta * (vc[rr] - alpha * xk));
                io.o[grow0 + rr] = __fmaf_rn(u, kqc, alpha * xq);
                const size_t e = erec + rr;
                rs_ring_st1<RDT>(st.ring_v, e, u);
                if (st.ring_vraw) rs_ring_st1<RDT>(st.ring_vraw, e, rs_ring_round<RDT>(vc[rr])); /* two-precision records */
            }
        } else { /* v4: per-lane E-column dots, one transposed reduction */
            float xq[F::NP], xk[F::NP];
#pragma unroll
            for (int p = 0; p < F::NP; ++p) {
                const int rr = p * F::RA + grp; /* row within the chunk */
                float e[F::E];
                rs_lpw_decode<CKF>(*reinterpret_cast<const uint4 *>(sg + (p * 32 + lane) * 16), e);
                if constexpr (CKF == RS_FMT_NVFP4) {
                    /* two NVFP4 blocks (16 columns each), each with its E4M3 block scale */
                    const float sdec = t[2 * L + 4];
                    const uint16_t sb2 = *reinterpret_cast<const uint16_t *>(sg + sc_off + rr * 8 + 2 * li);
                    float dq[2] = {0.f, 0.f}, dk[2] = {0.f, 0.f};
#pragma unroll
                    for (int i = 0; i < F::E; ++i) {
                        dq[i >> 4] = __fmaf_rn(e[i], qv[i], dq[i >> 4]);
                        if constexpr (FAM == RS_SSM_GDN) dk[i >> 4] = __fmaf_rn(e[i], kv[i], dk[i >> 4]);
                    }
                    float m[2];
#pragma unroll
                    for (int k = 0; k < 2; ++k) {
                        const __half_raw hs = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)((sb2 >> (8 * k)) & 0xFFu), __NV_E4M3);
                        m[k] = __fmul_rn(__fmul_rn(__half2float(*reinterpret_cast<const __half *>(&hs)), sdec), 16384.0f);
                    }
                    xq[p] = __fmul_rn(pck, __fmaf_rn(m[1], dq[1], __fmul_rn(m[0], dq[0])));
                    if constexpr (FAM == RS_SSM_GDN) xk[p] = __fmul_rn(pck, __fmaf_rn(m[1], dk[1], __fmul_rn(m[0], dk[0])));
                } else {
                    float dq0 = 0.f, dq1 = 0.f, dk0 = 0.f, dk1 = 0.f; /* two chains each */
#pragma unroll
                    for (int i = 0; i < F::E; i += 2) {
                        dq0 = __fmaf_rn(e[i], qv[i], dq0), dq1 = __fmaf_rn(e[i + 1], qv[i + 1], dq1);
                        if constexpr (FAM == RS_SSM_GDN)
                            dk0 = __fmaf_rn(e[i], kv[i], dk0), dk1 = __fmaf_rn(e[i + 1], kv[i + 1], dk1);
                    }
                    float pm = pck;
                    if constexpr (CKF == RS_FMT_FP8) pm = __fmul_rn(pck, reinterpret_cast<const float *>(sg + sc_off)[rr]);
                    xq[p] = __fmul_rn(pm, dq0 + dq1);
                    if constexpr (FAM == RS_SSM_GDN) xk[p] = __fmul_rn(pm, dk0 + dk1);
                }
            }
            /* the lane's share of the record sum: records li, li + LPR, ... */
#pragma unroll 1
            for (int j = li; j < hn; j += F::LPR) { /* the ring's records (one or two a lane at L = 16) */
                const float cq = t[j], ck = FAM == RS_SSM_GDN ? t[L + j] : 0.f;
                const unsigned char *rp = sg + ring_off + j * rstr;
#pragma unroll
                for (int p = 0; p < F::NP; ++p) {
                    const float v = rs_lpw_ringval<RDT>(rp, p * F::RA + grp);
                    xq[p] = __fmaf_rn(cq, v, xq[p]);
                    if constexpr (FAM == RS_SSM_GDN) xk[p] = __fmaf_rn(ck, v, xk[p]);
                }
            }
            if (FAM == RS_SSM_MAMBA2 && (hn & (F::LPR - 1)) == li) { /* Mamba-2's record hn (this step's v), last */
                const float cq = t[hn];
#pragma unroll
                for (int p = 0; p < F::NP; ++p) xq[p] = __fmaf_rn(cq, rs_ring_round<RDT>(vc[p * F::RA + grp]), xq[p]);
            }
            if constexpr (FAM == RS_SSM_MAMBA2) {
                rs_dev_tred<F::NP, F::LPR / 2, false>::run(xq, lane); /* lane li holds piece li / 2 of its row group */
                if ((li & 1) == 0) io.o[grow0 + (li >> 1) * F::RA + grp] = xq[0];
                if (lane < RS_LPW_ROWS) rs_ring_st1<RDT>(st.ring_v, erec + lane, rs_ring_round<RDT>(vc[lane])); /* this step's record */
            } else {
                const float alpha = t[2 * L + 1], beta = t[2 * L + 2], kqc = t[2 * L + 3];
                float x[2 * F::NP];
#pragma unroll
                for (int p = 0; p < F::NP; ++p) x[p] = xk[p], x[F::NP + p] = xq[p];
                rs_dev_tred<2 * F::NP, F::LPR / 2, false>::run(x, lane); /* lane li: S_{t-1} k (li < NP) or S_{t-1} q of piece li % NP */
                const float sq = __shfl_down_sync(RS_FULL_MASK, x[0], F::NP);
                if (li < F::NP) {
                    const int rr = li * F::RA + grp;
                    const float u = rs_ring_round<RDT>(beta * (vc[rr] - alpha * x[0]));
                    io.o[grow0 + rr] = __fmaf_rn(u, kqc, alpha * sq);
                    const size_t e = erec + rr;
                    rs_ring_st1<RDT>(st.ring_v, e, u);
                    if (st.ring_vraw) rs_ring_st1<RDT>(st.ring_vraw, e, rs_ring_round<RDT>(vc[rr])); /* two-precision records */
                }
            }
        }
    }
}

#endif /* RS_CUDA_LPREAD_CUH */
