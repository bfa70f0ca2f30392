/* rs_cuda_verify_tc.cuh — the tensor-core main kernel of ReplaySSM verification (v6a / v6b;
 * docs/kernels.md), included by rs_cuda_verify.cu after its prologue, whose `work`
 * coefficients it reads (layout in rs_cuda_verify.cu's header comment).
 *
 * One warp per (row b, value head, slice of rows) as the CUDA-core kernel, walking its rows in
 * tiles of 16. Per tile the warp forms, with mma.sync.m16n8k8 (tf32 in, fp32 accumulate):
 *   P  = S_ckpt[16 x 128] . [q_0 .. q_{TP-1}]          (and GDN: K = S_ckpt . [k_h .. k_{h+TP-1}])
 *   P <- P diag(D_s) + V[16 x records] . Cq[records x TP]   (GDN: K likewise with the k.k_d sums)
 * in 3xTF32: every operand x is split into hi = tf32(x) and lo = tf32(x - hi) and the product is
 * lo_A hi_B + hi_A lo_B + hi_A hi_B (lo lo dropped, ~2^-22 relative per product), which keeps the
 * result within fp32 noise of the engine (plain tf32 would be ~2^-11); bf16 ring values are exact
 * in tf32 (lo = 0) and skip their lo term; in the k loops the split is RS_VTC_SPLIT's (below: lo unrounded); each k-step's products are summed in a fresh accumulator
 * and added to the running sum in fp32 round-to-nearest (rs_mma_3xtf32). Since the k dimension is
 * a sum, its order is free: thread (g, t) = (lane / 4, lane % 4) loads rows g and g + 8 of the tile at columns 16 i + 4 t .. + 3
 * (float4, every 32-byte sector used whole), and k-step (i, p) maps the fragment's logical columns
 * t, t + 4 to physical 16 i + 4 t + 2 p, + 1; the B operands use the same map. The same registers
 * are the fold's tile: flush rows fold their committed records on CUDA cores in exactly the v3
 * kernel's operations and order (bit-identical checkpoints), then store the tile.
 * GDN: after the products, the T x T unit triangular solve runs per row across the 4 threads of a
 * quad (thread t owns drafts 2t, 2t+1 of each 8): T rounds, each one owner computing u_s for rows
 * g and g + 8 and one shuffle, as v3's lane-parallel solve.
 * B operands are per lane (thread (g, t) holds draft g's values at its columns), staged once per
 * warp in shared memory (an explicit register file extension: each lane reads only its own entries,
 * except the GDN solve tables); TP = 8 NT drafts, NT = 1 (T <= 8) or 2 (T <= 16), zero-padded.
 * Each tile's record values (the committed records' 16 rows, the drafts' v) come from a per-warp record stage
 * filled by cp.async one tile ahead (at stage_rec below). */
#ifndef RS_CUDA_VERIFY_TC_CUH
#define RS_CUDA_VERIFY_TC_CUH

#include <type_traits>

#include "rs_cuda_cpasync.cuh"

#define RS_VTC_KR 8 /* record k-steps: cap <= RS_VCAP_MAX = 64 records */

__device__ __forceinline__ uint32_t rs_tf32(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ void rs_tf32_split(float x, uint32_t &hi, uint32_t &lo)
{
    hi = rs_tf32(x);
    lo = rs_tf32(__fsub_rn(x, __uint_as_float(hi)));
}
/* The split in the k loops (RS_VTC_SPLIT, build-time). cvt.rna.tf32.f32 is no sm_90
 * instruction: ptxas emits FSETP (|x| < inf) + IADD 0x1000 + SEL + LOP3 for each, so rs_tf32_split costs 9
 * instructions an element, ~2/3 of v6a's instructions a tile with it.
 * 1 (default): hi = the same round-to-nearest-away by IADD + LOP3 alone (equal to cvt.rna for every finite x
 *   and for +-inf; a NaN may become +-0 in hi, but lo = x - hi is then NaN and carries it into the products),
 *   lo = x - hi exact and passed unrounded: the tensor core reads its top 19 bits (truncation), an error
 *   <= 2^-21 |x| instead of <= 2^-22 |x|; 3 instructions.
 * 0: rs_tf32_split.
 * Not for Mamba-2 at T > 8 (NT = 2): there the integer split makes ptxas spill (16 bytes at the 128-register cap,
 * none with cvt.rna) and the a = T rows 1.12-1.16x slower (H200), so that instance keeps cvt.rna. */
#ifndef RS_VTC_SPLIT
#define RS_VTC_SPLIT 1
#endif
template <int FAM, int NT> __host__ __device__ constexpr bool vtc_fast_split()
{
    return RS_VTC_SPLIT && !(FAM == RS_SSM_MAMBA2 && NT == 2);
}
template <bool FAST> __device__ __forceinline__ void rs_tf32_split_k(float x, uint32_t &hi, uint32_t &lo)
{
    if constexpr (FAST) {
        rs_codec_tf32_split(x, &hi, &lo); /* the shared codec's (rs_codec.h; tested on every float32) */
    } else {
        rs_tf32_split(x, hi, lo);
    }
}
__device__ __forceinline__ void rs_mma_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* c += A B in 3xTF32 (A pre-split; B = (b0, b1) split here), small terms first. The k-step's products go
 * into a fresh accumulator that is then added to c in fp32 round-to-nearest: the tensor cores' own
 * accumulation truncates (round toward zero), and a chain of 3 x 16 of those into one running sum
 * would bias every output toward zero by up to ~48 ulp / 2; this way each truncation is relative to
 * one k-step's partial (of random sign) and the running sum is rounded to nearest */
template <bool A_EXACT, bool FAST>
__device__ __forceinline__ void rs_mma_3xtf32(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4], float2 b)
{
    uint32_t bh0, bl0, bh1, bl1;
    rs_tf32_split_k<FAST>(b.x, bh0, bl0);
    rs_tf32_split_k<FAST>(b.y, bh1, bl1);
    float p[4] = {0.f, 0.f, 0.f, 0.f};
    if (!A_EXACT) rs_mma_tf32(p, al, bh0, bh1);
    rs_mma_tf32(p, ah, bl0, bl1);
    rs_mma_tf32(p, ah, bh0, bh1);
#pragma unroll
    for (int e = 0; e < 4; ++e) c[e] = __fadd_rn(c[e], p[e]);
}

/* the same with B already split: b = {hi0, hi1, lo0, lo1} (tf32 bit patterns) */
template <bool A_EXACT, bool FAST>
__device__ __forceinline__ void rs_mma_3xtf32(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4], uint4 b)
{
    float p[4] = {0.f, 0.f, 0.f, 0.f};
    if (!A_EXACT) rs_mma_tf32(p, al, b.x, b.y);
    rs_mma_tf32(p, ah, b.z, b.w);
    rs_mma_tf32(p, ah, b.x, b.y);
#pragma unroll
    for (int e = 0; e < 4; ++e) c[e] = __fadd_rn(c[e], p[e]);
}
__device__ __forceinline__ uint4 rs_tf32_split2(float2 b)
{
    uint4 r;
    rs_tf32_split(b.x, r.x, r.z);
    rs_tf32_split(b.y, r.y, r.w);
    return r;
}

/* !PF (v6a, the default at T >= 2): the next tile loaded after this tile's products (or staged: RS_VTC_STAGE),
 * B as float2 split in the loop (Mamba-2 at T <= 8: pre-split, see RS_VTC_STAGE), <= 128 registers, 16 warps an SM (GDN at T > 8: <= 255, 8 warps). PF (v6b, measured slower:
 * 1.20-1.36x v6a's time, kept for side-by-side benchmarks): the next tile's loads go out before this tile's
 * products (two tiles in registers, <= 255 registers, 8 warps an SM) and the B operands are staged pre-split
 * (uint4 a lane and k-step, 2x the bytes, no split in the k loop), except GDN at T > 8. */
/* RS_VTC_STAGE (build-time), v6a at Mamba-2 T <= 8 only:
 * 1 (default): the next tile is copied into shared memory by cp.async while this one is computed (one 8 KB stage a
 *    warp: each lane copies and later reads back its own float4s, so no warp barrier) instead of loaded into
 *    registers after the products; B split in the loop; with the record stage, sized by L and T, 13.8 KB a warp at
 *    L = 16, T = 8, bf16 ring: 4 blocks an SM. Measured 0.975-0.991x the time of 0 on the Mamba-2 rows (H200,
 *    docs/kernels.md).
 * 0: the tile loaded into registers after the products, B staged pre-split (measured no faster than splitting in
 *    the loop). */
#ifndef RS_VTC_STAGE
#define RS_VTC_STAGE 1
#endif
/* The most committed records the record stage holds: records past it are read from the
 * ring in the loops. RS_VTC_RMAX = 24 keeps 4 blocks an SM where a stage of L records would not (Mamba-2 NT = 2
 * at L = 48 and GDN at L = 56, bf16 ring: 3 528 floats a warp, 4 blocks allow 3 584), applied only where it
 * measured faster (H200, `bench --sweep tcl`, A B A B; docs/kernels.md): Mamba-2 T > 8 (L = 48,
 * T = 16, a = 16: 0.91x) and GDN T <= 8 (L = 56, T = 8, a = 8: 0.94x); Mamba-2 T <= 8 at L = 56 was 1.06-1.11x
 * slower with it (the records past 24 read from the ring inside the loop cost more than the fourth block) and
 * GDN T > 8 at L = 48 1.03x: those stage all L. */
#ifndef RS_VTC_RMAX
#define RS_VTC_RMAX 24
#endif
template <int FAM, int NT> __host__ __device__ constexpr int vtc_rmax_cap()
{
    return (FAM == RS_SSM_MAMBA2) == (NT == 2) ? RS_VTC_RMAX : RS_VCAP_MAX;
}
/* The record coefficients (`work`, written by the prologue) by cp.async where B entries are not pre-split: read
 * one float at a time into the B tables they were the top set-up stall line in the profiles. */
#ifndef RS_VTC_COEF_CP
#define RS_VTC_COEF_CP 1
#endif
template <int FAM, int NT, bool PF> __host__ __device__ constexpr bool vtc_presplit()
{
    return PF ? !(FAM == RS_SSM_GDN && NT == 2) : (!RS_VTC_STAGE && FAM == RS_SSM_MAMBA2 && NT == 1);
}
/* GS (rs_cuda_launch_opts.verify_gshare, on by default): GDN at T <= 8 (v6a) where the 4 warps
 * of a block are slices of one head (warps a head a multiple of 4): the B tables (queries, keys, coefficients, the
 * solve's tables), identical for those warps, are held once a block (the warps fill a quarter each, then wait at a
 * block barrier), and the 9.7 KB a warp saved pays for the checkpoint tile's stage as Mamba-2 has it
 * (Qwen3.5-4B's T <= 8 rows 0.84-0.94x of the per-warp tables on the H200, docs/kernels.md). */
#ifndef RS_VTC_GSTAGE /* with GS: the tile staged too (1) or loaded into registers as v6a's GDN (0) */
#define RS_VTC_GSTAGE 1
#endif
template <int FAM, int NT, bool PF, bool GS = false> __host__ __device__ constexpr bool vtc_staged()
{
    return RS_VTC_STAGE && !PF && ((FAM == RS_SSM_MAMBA2 && NT == 1) || (GS && RS_VTC_GSTAGE));
}
/* The per-warp shared memory (offsets in floats; host and device compute it alike from L and T):
 *   bq [NT][16][32] B entries of the queries, bk (GDN) the drafts' keys, cq [NT][krc][32] the record
 *   coefficients, ce (GDN) the k.k_d sums, tk / tq (GDN) the solve's tables, stile (staged Mamba-2) the next
 *   checkpoint tile, drf [TP][16] the drafts' v of the tile's rows (fp32, io->v), rec [rmax][16] the committed
 *   records' values of the tile's rows (ring type).
 * krc record k-steps cover the most records a sum can have (Mamba-2 L + T, GDN L: the commit keeps h <= L) and
 * rmax = min(L, vtc_rmax_cap) committed records are staged (sized by L and T instead of the cap of 64, which pays
 * for the record stage within the 14 KB a warp that keeps 4 blocks an SM at L = 16, T = 8, bf16 ring). */
struct vtc_lay {
    int bq, bk, cq, ce, tk, tq, stile, drf, rec, desc, total, krc, rmax;
    int shared; /* GS: floats of the block's tables (bq .. tq, offsets from the block's base) before the warps' */
};
/* the record stage's warp-uniform sources, kept in shared memory: held in registers across the tile loop they
 * made ptxas spill ~130 bytes at the 128-register cap (a test compile) */
struct vtc_sdesc {
    const char *rb; /* ring_v of this (b, head): slot x at rb + x d_v (ring bytes) */
    const char *vb; /* io->v of this (b, head): draft s at vb + s vs */
    size_t vs;
    int st0, hs;
};
template <int FAM, int NT, bool PF, bool GS = false>
__host__ __device__ inline vtc_lay vtc_layout(int L, int T, int ring_bytes)
{
    constexpr bool GDN = FAM == RS_SSM_GDN;
    constexpr int TP = 8 * NT, BW = vtc_presplit<FAM, NT, PF>() ? 4 : 2; /* floats a lane's B entry */
    vtc_lay y;
    const int nmax = GDN ? L : L + T, krc = (nmax + 7) / 8;
    y.krc = krc < RS_VTC_KR ? krc : RS_VTC_KR;
    y.rmax = L < vtc_rmax_cap<FAM, NT>() ? L : vtc_rmax_cap<FAM, NT>();
    int o = 0;
    y.bq = o, o += NT * 16 * 32 * BW;
    y.bk = o, o += GDN ? NT * 16 * 32 * BW : 0;
    y.cq = o, o += NT * y.krc * 32 * BW;
    y.ce = o, o += GDN ? NT * y.krc * 32 * BW : 0;
    y.tk = o, o += GDN ? TP * TP : 0;
    y.tq = o, o += GDN ? TP * TP : 0;
    y.shared = 0;
    if (GS) y.shared = o, o = 0; /* the tables once a block, the rest a warp */
    y.stile = o, o += vtc_staged<FAM, NT, PF, GS>() ? 16 * RS_CUDA_DK : 0;
    y.drf = o, o += TP * 16;
    y.rec = o, o += y.rmax * 16 * ring_bytes / 4; /* every region a multiple of 4 floats: 16-byte copies */
    y.desc = o, o += (int)(sizeof(vtc_sdesc) / 4);
    y.total = o;
    return y;
}

/* record j of row row0 + ro as the mma operand: committed from the record stage (or the ring past it: only a fill
 * above L, which the commit never leaves), Mamba-2 drafts from the staged inputs (rounded to the ring type, and
 * stored as their record: each (row, j) is read by one thread once) */
template <int FAM, int RDT>
__device__ __forceinline__ float vtc_rec(const rs_cuda_verify_state &st, const float *sdrf, const void *srec, size_t bh,
                                         int dv, int row0, int ro, int j, int h, int hs, int nrec, int st0)
{
    const int C = st.cap;
    float x;
    if (j < hs) {
        rs_ring_ld<RDT, 1>(srec, (size_t)j * 16 + ro, &x);
        return x;
    }
    if (j < h) {
        rs_ring_ld<RDT, 1>(st.ring_v, (bh * C + ring_slot(st0, j, C)) * dv + row0 + ro, &x);
        return x;
    }
    if (j < nrec) { /* Mamba-2 drafts only (GDN: nrec = h) */
        x = rs_ring_round<RDT>(sdrf[(j - h) * 16 + ro]);
        rs_ring_st1<RDT>(st.ring_v, (bh * C + ring_slot(st0, j, C)) * dv + row0 + ro, x);
        return x;
    }
    return 0.f;
}

template <int FAM, int RDT, int NT, bool PF, bool GS = false>
__global__ void __launch_bounds__(128, (PF || (FAM == RS_SSM_GDN && NT == 2)) ? 2 : 4) rs_k_verify_tc(rs_ssm_dims d, int T, rs_ssm_step_io io,
                                                         rs_cuda_verify_state st, rs_geom gm)
{
    static_assert(!GS || (FAM == RS_SSM_GDN && NT == 1 && !PF), "GS: GDN, T <= 8, v6a");
    constexpr int TP = 8 * NT;
    constexpr bool GDN = FAM == RS_SSM_GDN;
    constexpr bool VEX = RDT == RS_CUDA_BF16; /* ring values exact in tf32 */
    constexpr bool FS = vtc_fast_split<FAM, NT>(); /* the k loops' split (RS_VTC_SPLIT) */
    extern __shared__ float vtc_sm[];
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const unsigned gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (gw >= gm.BH * gm.wph) return;
    constexpr bool PS = vtc_presplit<FAM, NT, PF>();
    using BT = typename std::conditional<PS, uint4, float2>::type; /* one lane's B entry of a k-step */
    constexpr int RB = RDT == RS_CUDA_F32 ? 4 : 2; /* bytes a ring element */
    const vtc_lay ly = vtc_layout<FAM, NT, PF, GS>(st.L, T, RB);
    const int KRC = ly.krc;
    const int wib = (int)(threadIdx.x >> 5); /* warp in block */
    float *sm = vtc_sm + ly.shared + wib * ly.total, *tb = GS ? vtc_sm : sm; /* tb: the tables' base */
    /* GS: the block's warps fill a quarter of each table each (k-steps kk = wib, wib + 4, ...) */
    constexpr int TS = GS ? 4 : 1;
    const int t0 = GS ? wib : 0;
    BT *bq = reinterpret_cast<BT *>(tb + ly.bq), *bk = reinterpret_cast<BT *>(tb + ly.bk); /* [NT][16][32] */
    BT *cq = reinterpret_cast<BT *>(tb + ly.cq), *ce = reinterpret_cast<BT *>(tb + ly.ce); /* [NT][KRC][32] */
    float *tk = tb + ly.tk, *tq = tb + ly.tq;                                             /* GDN: [TP][TP] */
    float *sdrf = sm + ly.drf;
    void *srec = sm + ly.rec;
    auto put = [](float2 x) -> BT {
        if constexpr (PS) return rs_tf32_split2(x);
        else return x;
    };

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
    const int nrec = GDN ? h : n;
    const int kr = min((nrec + 7) >> 3, KRC); /* KRC covers every fill the commit leaves (h <= L) */
    const int hs = min(h, ly.rmax);           /* committed records staged */

    /* the first tile's loads go out before the set-up */
    constexpr bool STG = vtc_staged<FAM, NT, PF, GS>();
    float4 *stile = reinterpret_cast<float4 *>(sm + ly.stile);
    /* the copies of the tile at row0 into this lane's slots of the stage: [i][lane] rows g, then g + 8 */
    auto stage_tile = [&](int row0) {
        const float *p = st.S_ckpt + (bh * dv + row0 + g) * RS_CUDA_DK + 4 * t;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            rs_cp16(stile + i * 32 + lane, p + 16 * i);
            rs_cp16(stile + (8 + i) * 32 + lane, p + 8 * RS_CUDA_DK + 16 * i);
        }
        rs_cp_commit();
    };
    float4 xa[8], xb[8];
    if constexpr (STG) {
        stage_tile(r_begin);
    } else {
        const float *p = st.S_ckpt + (bh * dv + r_begin + g) * RS_CUDA_DK + 4 * t;
#pragma unroll
        for (int i = 0; i < 8; ++i) xa[i] = rs_ld4(p + 16 * i), xb[i] = rs_ld4(p + 8 * RS_CUDA_DK + 16 * i);
    }
    /* The record stage: the tile's committed records (ring) and the drafts' v (io->v) of its 16 rows, copied by
     * cp.async one tile ahead, one commit group a tile. Issued inside the record loop one k-step at a time, these
     * loads held ~48 % of the warps' stall samples (source-level profile, Nemotron-3-Super, T = 8, a = 1). 16-byte copies where ring_v and io->v are
     * 16-byte aligned (every 16-row piece then is: d_v % 16 == 0), else 4-byte ones. Lanes read what other lanes
     * copied: wait, then __syncwarp; and __syncwarp before the next tile's copies overwrite the stage. */
    vtc_sdesc *sdesc = reinterpret_cast<vtc_sdesc *>(sm + ly.desc);
    if (lane == 0)
        *sdesc = vtc_sdesc{static_cast<const char *>(st.ring_v) + bh * C * dv * RB,
                           reinterpret_cast<const char *>(io.v + bh * dv), BH * dv * sizeof(float), st0, hs};
    __syncwarp();
    auto stage_rec = [&](int row0) {
        const vtc_sdesc q = *sdesc;
        const bool al16 = (((uintptr_t)q.rb | (uintptr_t)q.vb) & 15) == 0; /* as ring_v's and io->v's */
        const int csh = al16 ? 4 : 2;            /* log2 bytes a copy */
        const int rsh = (RB == 4 ? 6 : 5) - csh; /* log2 copies a record (16 elements) */
        const int dsh = 6 - csh;                 /* log2 copies a draft's 16 fp32 values */
        const int nr = q.hs << rsh, nall = nr + (T << dsh);
        for (int u = lane; u < nall; u += 32) {
            const char *src;
            char *dst;
            if (u < nr) {
                const int j = u >> rsh, pc = (u & ((1 << rsh) - 1)) << csh;
                src = q.rb + ((size_t)ring_slot(q.st0, j, C) * dv + row0) * RB + pc;
                dst = static_cast<char *>(srec) + j * 16 * RB + pc;
            } else {
                const int x = u - nr, s = x >> dsh, pc = (x & ((1 << dsh) - 1)) << csh;
                src = q.vb + s * q.vs + row0 * sizeof(float) + pc;
                dst = reinterpret_cast<char *>(sdrf + s * 16) + pc;
            }
            if (al16) rs_cp16(dst, src);
            else rs_cp4(dst, src);
        }
        rs_cp_commit();
    };
    /* the queries' B entries (io->q: no output of the prologue) copied as they are where not pre-split */
    if constexpr (!PS) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            const int s = 8 * nt + g;
            const float *qp = io.q + ((size_t)s * BG + kg) * RS_CUDA_DK + 4 * t;
#pragma unroll
            for (int k4 = 0; k4 < 16 / TS; ++k4) {
                const int kk = TS * k4 + t0;
                BT *e = &bq[(nt * 16 + kk) * 32 + lane];
                if (s < T) rs_cp8(e, qp + 16 * (kk >> 1) + 2 * (kk & 1));
                else *e = put(make_float2(0.f, 0.f));
            }
        }
    }
    stage_rec(r_begin); /* with the queries: one group */
    /* launched as the prologue's programmatic dependent (rs_launch_pdl): everything below reads what it writes
     * (`work`, the drafts' ring slots: keys); the checkpoint tile, the queries and the record stage above do not */
    rs_pdl_wait();

    /* the coefficients by cp.async: NT = 1 only (at NT = 2 the copies' addresses made ptxas spill 68 bytes in the
     * tile loop, Mamba-2 bf16 ring, a test compile) */
    constexpr bool CCP = RS_VTC_COEF_CP && !PS && NT == 1;
    /* B operands of this lane: draft s = 8 nt + g at columns 16 i + 4 t + 2 p (+1) */
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
        const int s = 8 * nt + g;
        const bool on = s < T;
        const float *qp = io.q + ((size_t)(on ? s : 0) * BG + kg) * RS_CUDA_DK + 4 * t;
        const size_t ke = (kg * C + ring_slot(st0, h + (on ? s : 0), C)) * RS_CUDA_DK + 4 * t;
#pragma unroll
        for (int k4 = 0; k4 < 16 / TS; ++k4) {
            const int kk = TS * k4 + t0;
            const int col = 16 * (kk >> 1) + 2 * (kk & 1);
            if (PS) {
                float2 x = make_float2(0.f, 0.f);
                if (on) x = *reinterpret_cast<const float2 *>(qp + col);
                bq[(nt * 16 + kk) * 32 + lane] = put(x);
            }
            if (GDN) {
                float y[2] = {0.f, 0.f};
                if (on) rs_ring_ld<RDT, 2>(st.ring_k, ke + col, y);
                bk[(nt * 16 + kk) * 32 + lane] = put(make_float2(y[0], y[1]));
            }
        }
        /* record coefficients: records 8 r + t and 8 r + t + 4 for draft s */
        if constexpr (CCP) { /* copies, waited for with the tile's records */
            const int lim = GDN ? h - 1 : h + s; /* last record of the sum */
            const float *wq = w + T + (on ? s : 0) * C, *we = wq + T * C;
            for (int r = t0; r < kr; r += TS) {
                const int j0 = 8 * r + t, j1 = j0 + 4;
                const bool o0 = on && j0 <= lim, o1 = on && j1 <= lim;
                float *e = reinterpret_cast<float *>(&cq[(nt * KRC + r) * 32 + lane]);
                rs_cp4z(e, wq + (o0 ? j0 : 0), o0);
                rs_cp4z(e + 1, wq + (o1 ? j1 : 0), o1);
                if (GDN) {
                    float *f = reinterpret_cast<float *>(&ce[(nt * KRC + r) * 32 + lane]);
                    rs_cp4z(f, we + (o0 ? j0 : 0), o0);
                    rs_cp4z(f + 1, we + (o1 ? j1 : 0), o1);
                }
            }
        } else {
            for (int r = t0; r < kr; r += TS) {
                const int j0 = 8 * r + t, j1 = j0 + 4;
                const int lim = GDN ? h - 1 : h + s; /* last record of the sum */
                cq[(nt * KRC + r) * 32 + lane] = put(
                    make_float2(on && j0 <= lim ? w[T + s * C + j0] : 0.f, on && j1 <= lim ? w[T + s * C + j1] : 0.f));
                if (GDN)
                    ce[(nt * KRC + r) * 32 + lane] = put(make_float2(on && j0 <= lim ? w[T + T * C + s * C + j0] : 0.f,
                                                                     on && j1 <= lim ? w[T + T * C + s * C + j1] : 0.f));
            }
        }
    }
    if constexpr (CCP) rs_cp_commit(); /* the coefficients' copies: one group after the records' */
    /* this thread's drafts in the accumulators: s = 8 nt + 2 t + e (c[e] row g, c[2 + e] row g + 8) */
    float Dd[NT][2], bet[NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int s = 8 * nt + 2 * t + e;
            Dd[nt][e] = s < T ? w[s] : 0.f;
            bet[nt][e] = GDN && s < T ? io.beta[(size_t)s * BH + bh] : 0.f;
        }
    if (GDN) { /* the solve's T x T tables: tk[s][s'] (s' < s), tq[s][s'] (s' <= s) */
        for (int x = lane + 32 * t0; x < TP * TP; x += 32 * TS) {
            const int s = x / TP, sp = x % TP;
            const bool on = s < T && sp < T;
            tk[x] = on && sp < s ? w[T + T * C + s * C + h + sp] : 0.f;
            tq[x] = on && sp <= s ? w[T + s * C + h + sp] : 0.f;
        }
        __syncwarp();
    }
    if constexpr (GS) { /* every warp's quarter of the tables (stores and copies) before any warp reads them */
        rs_cp_commit();
        rs_cp_wait<0>();
        __syncthreads();
    }
    const float *pf = w + T + 2 * T * C;
    const float pc = flush ? pf[C] : 1.f;

    for (int row0 = r_begin; row0 < r_end; row0 += 16) {
        const bool more = row0 + 16 < r_end;
        /* groups in flight: [tile (staged)], then [records] of this tile (the first tile: [tile], [queries +
         * records], both needed now, then [coefficients], needed by the record loop) */
        if constexpr (STG) { /* this tile from the stage, then the next one's copies into it */
            if (row0 == r_begin) rs_cp_wait<CCP ? 1 : 0>();
            else rs_cp_wait<1>();
#pragma unroll
            for (int i = 0; i < 8; ++i) xa[i] = stile[i * 32 + lane], xb[i] = stile[(8 + i) * 32 + lane];
            if (!GS && more) stage_tile(row0 + 16);
        } else if (!PS) {
            if (row0 == r_begin) rs_cp_wait<CCP ? 1 : 0>(); /* the queries */
        }
        /* the next tile's loads go out before this tile's products (registers: two tiles) */
        float4 na[8], nb[8];
        if (PF && more) {
            const float *p = st.S_ckpt + (bh * dv + row0 + 16 + g) * RS_CUDA_DK + 4 * t;
#pragma unroll
            for (int i = 0; i < 8; ++i) na[i] = rs_ld4(p + 16 * i), nb[i] = rs_ld4(p + 8 * RS_CUDA_DK + 16 * i);
        }
        /* ---- S_ckpt . [Q | K_d] ---- */
        float aq[NT][4], ak[NT][4];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) aq[nt][e] = ak[nt][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < 16; ++kk) {
            const int i = kk >> 1;
            const bool p = kk & 1;
            const float a[4] = {p ? xa[i].z : xa[i].x, p ? xb[i].z : xb[i].x, p ? xa[i].w : xa[i].y,
                                p ? xb[i].w : xb[i].y};
            uint32_t ah[4], al[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) rs_tf32_split_k<FS>(a[e], ah[e], al[e]);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                rs_mma_3xtf32<false, FS>(aq[nt], ah, al, bq[(nt * 16 + kk) * 32 + lane]);
                if (GDN) rs_mma_3xtf32<false, FS>(ak[nt], ah, al, bk[(nt * 16 + kk) * 32 + lane]);
            }
        }
        /* GS: the next tile's copies after the products, not before them as Mamba-2's: before, ptxas spills 144-148
         * bytes inside the tile loop, after 16 (the copies still overlap the records, solve, fold) */
        if (GS && STG && more) stage_tile(row0 + 16);
        if (!PF && !STG && !flush && more) { /* v6a: the tile is dead, the next one's loads overlap the rest */
            const float *p = st.S_ckpt + (bh * dv + row0 + 16 + g) * RS_CUDA_DK + 4 * t;
#pragma unroll
            for (int i = 0; i < 8; ++i) xa[i] = rs_ld4(p + 16 * i), xb[i] = rs_ld4(p + 8 * RS_CUDA_DK + 16 * i);
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                aq[nt][e] = __fmul_rn(aq[nt][e], Dd[nt][e & 1]);
                ak[nt][e] = __fmul_rn(ak[nt][e], Dd[nt][e & 1]);
            }
        /* ---- + records . coefficients ---- */
        if (STG && more) rs_cp_wait<1>(); /* the next tile's copies may stay in flight */
        else rs_cp_wait<0>();
        __syncwarp();
        for (int r = 0; r < kr; ++r) {
            const int j0 = 8 * r + t, j1 = j0 + 4;
            const float a[4] = {vtc_rec<FAM, RDT>(st, sdrf, srec, bh, dv, row0, g, j0, h, hs, nrec, st0),
                                vtc_rec<FAM, RDT>(st, sdrf, srec, bh, dv, row0, g + 8, j0, h, hs, nrec, st0),
                                vtc_rec<FAM, RDT>(st, sdrf, srec, bh, dv, row0, g, j1, h, hs, nrec, st0),
                                vtc_rec<FAM, RDT>(st, sdrf, srec, bh, dv, row0, g + 8, j1, h, hs, nrec, st0)};
            uint32_t ah[4], al[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) rs_tf32_split_k<FS>(a[e], ah[e], al[e]);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                rs_mma_3xtf32<VEX, FS>(aq[nt], ah, al, cq[(nt * KRC + r) * 32 + lane]);
                if (GDN) rs_mma_3xtf32<VEX, FS>(ak[nt], ah, al, ce[(nt * KRC + r) * 32 + lane]);
            }
        }
        if (GDN) { /* ---- UT solve: u_s = round(beta_s (v_s - a_s)), a and o of later drafts updated ---- */
            float vv[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int s = 8 * nt + 2 * t + (e & 1);
                    vv[nt][e] = s < T ? sdrf[s * 16 + g + 8 * (e >> 1)] : 0.f;
                }
#pragma unroll
            for (int sp = 0; sp < TP; ++sp) {
                if (sp >= T) break;
                const int nto = sp >> 3, to = (sp & 7) >> 1, eo = sp & 1;
                float U0 = 0.f, U1 = 0.f;
                if (t == to) {
                    U0 = rs_ring_round<RDT>(__fmul_rn(bet[nto][eo], __fsub_rn(vv[nto][eo], ak[nto][eo])));
                    U1 = rs_ring_round<RDT>(__fmul_rn(bet[nto][eo], __fsub_rn(vv[nto][2 + eo], ak[nto][2 + eo])));
                    const size_t e0 = (bh * C + ring_slot(st0, h + sp, C)) * dv + row0 + g;
                    rs_ring_st1<RDT>(st.ring_v, e0, U0);
                    rs_ring_st1<RDT>(st.ring_v, e0 + 8, U1);
                }
                U0 = __shfl_sync(RS_FULL_MASK, U0, (lane & ~3) | to);
                U1 = __shfl_sync(RS_FULL_MASK, U1, (lane & ~3) | to);
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int s = 8 * nt + 2 * t + e;
                        const float ck = tk[s * TP + sp], cqq = tq[s * TP + sp];
                        ak[nt][e] = __fmaf_rn(ck, U0, ak[nt][e]);
                        ak[nt][2 + e] = __fmaf_rn(ck, U1, ak[nt][2 + e]);
                        aq[nt][e] = __fmaf_rn(cqq, U0, aq[nt][e]);
                        aq[nt][2 + e] = __fmaf_rn(cqq, U1, aq[nt][2 + e]);
                    }
            }
        }
        /* ---- outputs ---- */
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int s = 8 * nt + 2 * t + e;
                if (s < T) {
                    float *o = io.o + ((size_t)s * BH + bh) * dv + row0 + g;
                    o[0] = aq[nt][e];
                    o[8] = aq[nt][2 + e];
                }
            }
        /* ---- fold of the committed records (flush rows): v3's operations in v3's order ---- */
        if (flush) {
#pragma unroll
            for (int i = 0; i < 8; ++i) xa[i] = rs_scale4(pc, xa[i]), xb[i] = rs_scale4(pc, xb[i]);
            for (int j = 0; j < h; ++j) {
                const size_t slot = ring_slot(st0, j, C);
                float u0, u1;
                if (j < hs) {
                    rs_ring_ld<RDT, 1>(srec, (size_t)j * 16 + g, &u0);
                    rs_ring_ld<RDT, 1>(srec, (size_t)j * 16 + g + 8, &u1);
                } else {
                    rs_ring_ld<RDT, 1>(st.ring_v, (bh * C + slot) * dv + row0 + g, &u0);
                    rs_ring_ld<RDT, 1>(st.ring_v, (bh * C + slot) * dv + row0 + g + 8, &u1);
                }
                const float P = pf[j], cp0 = __fmul_rn(P, u0), cp1 = __fmul_rn(P, u1);
                float4 kj[8];
#pragma unroll
                for (int i = 0; i < 8; ++i) kj[i] = rs_ring_k4<RDT>(st.ring_k, (kg * C + slot) * RS_CUDA_DK + 16 * i, t);
#pragma unroll
                for (int i = 0; i < 8; ++i) xa[i] = rs_fma4(cp0, kj[i], xa[i]), xb[i] = rs_fma4(cp1, kj[i], xb[i]);
            }
            float *p = st.S_ckpt + (bh * dv + row0 + g) * RS_CUDA_DK + 4 * t;
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                *reinterpret_cast<float4 *>(p + 16 * i) = xa[i];
                *reinterpret_cast<float4 *>(p + 8 * RS_CUDA_DK + 16 * i) = xb[i];
            }
            if (!PF && !STG && more) {
                const float *q = st.S_ckpt + (bh * dv + row0 + 16 + g) * RS_CUDA_DK + 4 * t;
#pragma unroll
                for (int i = 0; i < 8; ++i) xa[i] = rs_ld4(q + 16 * i), xb[i] = rs_ld4(q + 8 * RS_CUDA_DK + 16 * i);
            }
        }
        if (PF && more) {
#pragma unroll
            for (int i = 0; i < 8; ++i) xa[i] = na[i], xb[i] = nb[i];
        }
        if (more) { /* every lane is done with this tile's record stage */
            __syncwarp();
            stage_rec(row0 + 16);
        }
    }
}

#endif /* RS_CUDA_VERIFY_TC_CUH */
