/* rs_dense_attn_tc.cu — causal GQA attention on tensor cores at fp32-level accuracy (3xTF32): the
 * kernel of RSG_ATTN_TF32X3 (the default at every head size; rs_dense_attn.cu dispatches).
 *
 * The same contract and row layout as the CUDA-core kernel (rs_dense_attn.cu): block = (query tile
 * of 64 rows, KV head g, run r), rows i = t * rep + hh. 256 threads = 8 warps: warp w owns the
 * tile rows 16 (w % 4) .. + 15 and the key half kh = w / 4 of every key tile (8 KT keys per half),
 * with its own online-softmax state (m, l, O); the two halves are merged at the end (the split-K
 * merge of flash decoding: O = O_a e^(m_a - m) + O_b e^(m_b - m), the same for l, m = max). Both
 * products run as mma.sync.m16n8k8 TF32 with fp32 accumulation:
 *
 *   3xTF32: a = a_hi + a_lo, a_hi = tf32(a) (round to nearest, ties away), a_lo = a - a_hi (exact
 *   in fp32, |a_lo| <= 2^-11 |a|) passed as fp32 bits, which the tensor cores truncate to TF32
 *   (they ignore the low 13 bits): |error| <= 2^-21 |a|, zero-mean (a_lo's sign is random with a
 *   rounded a_hi); a b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi, the dropped a_lo b_lo <= 2^-22 |a b|.
 *   Q, K and V are split so (rounding K's and V's a_lo too measured 5% slower at the same
 *   errors); P is split with both parts rounded (once per tile).
 *
 * Layout and accumulation:
 * - P V of a tile goes into fresh accumulators (the big product and the two small ones apart: 4
 *   n-tiles x 2 KT chained mma) and is added into O on the CUDA cores, O = fma(O, alpha, acc), one
 *   rounding to nearest per tile: the tensor cores' fp32 accumulation (alignment and truncation
 *   inside the mma) never carries O across the whole key range (a kernel that kept O in the mma
 *   accumulators erred 30-80x more over 8K keys). Against float64 the error is 3-6x smaller than
 *   the CUDA-core kernel's (test_gpu_ops, long-sum cases, max and rms); the online rescale costs
 *   no extra multiplies.
 * - K and V tiles are kept in shared memory as fp32, copied with cp.async, and split by each warp
 *   as it reads them (no staging registers, no split-and-store phase; but each element is split
 *   by the 4 warps that read it).
 * - Every fragment read is a 16-byte ld.shared: the 8 k-indices of an m16n8k8 step may be any 8
 *   dimensions (a dot product does not depend on their order), so lane (g, c) takes dimensions
 *   16 s + 4 c .. + 3 of Q and K with one float4 and uses (4c, 4c + 1) as k = (c, c + 4) of step
 *   2 s and (4c + 2, 4c + 3) of step 2 s + 1. For P V the n-index (output dimension) is free the
 *   same way: n-tile j of the 32-dimension group q, column n, is dimension 32 q + 4 n + j, so lane
 *   g's B operands of the 4 n-tiles of a group are one float4 of a V row, and the lane's C
 *   elements are dimensions 32 q + 8 c + (0..7) of its two rows.
 * Speed (H200, RS_ATTN_BENCH=1 test_gpu_ops, docs/evaluator.md): 64-key tiles at hd = 256, 32-key
 * tiles at hd = 128. One 8-warp block per SM (hd 256), ~40% of the tensor pipe's cycles; ncu's main stall is the
 * fixed-latency dependency ("wait"): with 2 warps per scheduler the split / mma chains are not
 * hidden. Tried and dropped: a split-once-per-block variant (hi / lo planes filled from registers
 * staged one phase ahead, 16-byte reads): 72 ms at hd = 256, 91 ms with more accumulators
 * (register spills).
 *
 * Shared memory: Q [64][LDQ], K [2][32][LDK], V [2][32][LDV] fp32 (KT = 4: the same bytes as
 * K [64][LDK], V [64][LDV]). LDQ = LDK = 64 NC + 16
 * (= 16 mod 32 words: the two rows of a quarter warp's float4 reads land on banks 0-15 and 16-31)
 * and LDV = 64 NC + 4 (rows 2c, 2c + 1 of the 4 lanes c at 8 c banks apart): every fragment read
 * is conflict-free. 201 KiB at hd = 256 (one block per SM), 105 KiB at hd = 128 (two).
 * Fragments (PTX m16n8k8 .tf32, g = lane / 4, c = lane % 4): A a0 (g, c) a1 (g+8, c) a2 (g, c+4)
 * a3 (g+8, c+4); B b0 (k c, n g) b1 (k c+4, n g); C c0 (g, 2c) c1 (g, 2c+1) c2 (g+8, 2c) c3 (g+8, 2c+1).
 * P goes from the C layout of S straight into the A layout of P V by numbering the 8 keys of a
 * k-step so that A column c is key 2c and column c+4 is key 2c+1 (V's B rows likewise).
 *
 * Keys past pos0 + t score -inf (weight exactly 0); key rows >= the tile's last visible key are
 * zero in shared memory (0 * garbage could be NaN), as are the columns >= hd. Rows past the last
 * repeat the last row (finite, never stored). Non-finite inputs give NaN (a_hi = inf, a_lo = inf
 * - inf), as a NaN run should. Deterministic: fixed work split and reduction order, no atomics. */
#include <cuda_pipeline.h>

#include "rs_dense_attn_impl.h"
#include "rs_cuda_common.cuh"

namespace {

constexpr int BM = 64, BN = 32, NT = 256;

template <int NC> struct lay_ {
    static constexpr int HDP = 64 * NC, LDQ = HDP + 16, LDK = HDP + 16, LDV = HDP + 4;
    static constexpr int KS = BN * LDK, VS = BN * LDV; /* one stage, floats */
    static constexpr size_t smem = (size_t)(BM * LDQ + 2 * KS + 2 * VS) * sizeof(float);
};

__device__ __forceinline__ uint32_t tf32_rna_(float x) { return (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u; }

/* hi and lo both rounded to TF32 (|error| <= 2^-22 |x| from lo's rounding) */
__device__ __forceinline__ void split_(float x, uint32_t &hi, uint32_t &lo)
{
    hi = tf32_rna_(x);
    lo = tf32_rna_(x - __uint_as_float(hi));
}

/* lo passed as fp32 bits, truncated by the tensor cores (|error| <= 2^-21 |x|, zero-mean) */
__device__ __forceinline__ void split_fast_(float x, uint32_t &hi, uint32_t &lo)
{
    hi = tf32_rna_(x);
    lo = __float_as_uint(x - __uint_as_float(hi));
}

/* c += a b, m16n8k8, tf32 inputs, fp32 accumulation */
__device__ __forceinline__ void mma_(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* key / value rows j0 .. j0 + 31 of one head into dst [32][LD] (cp.async, 16 bytes, when vec; else
 * plain loads); rows >= nkeys are zeroed; columns >= hd keep the zeros written at the start */
template <int LD>
__device__ __forceinline__ void load_rows_(float *dst, const float *src, int j0, int nkeys, int hd, bool vec)
{
    if (vec) {
        const int n4 = hd >> 2;
        for (int k = threadIdx.x; k < BN * n4; k += NT) {
            const int j = k / n4, c = k - j * n4;
            float *d = dst + j * LD + 4 * c;
            if (j0 + j < nkeys)
                __pipeline_memcpy_async(d, src + (size_t)(j0 + j) * hd + 4 * c, 16);
            else
                *reinterpret_cast<float4 *>(d) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    } else {
        for (int k = threadIdx.x; k < BN * hd; k += NT) {
            const int j = k / hd, e = k - j * hd;
            dst[j * LD + e] = j0 + j < nkeys ? src[(size_t)(j0 + j) * hd + e] : 0.0f;
        }
    }
}

/* KT: n-tiles of 8 keys per warp and tile (the tile has 16 KT keys, 8 KT per key half). KT = 2:
 * K and V in two stages of 32 keys, tile j + 1 copied while tile j is computed, one barrier per
 * tile. KT = 4 (hd > 128 only, registers): one 64-key buffer each for K and V in the same shared
 * memory, staggered as in the CUDA-core kernel (V(j) lands while S(j) is computed, K(j + 1) while
 * P V(j) is; two barriers per tile): Q's fragments serve 4 n-tiles instead of 2 and the softmax's
 * shuffles 32 keys instead of 16. */
template <int NC, int KT>
__global__ void __launch_bounds__(NT, NC <= 2 ? 2 : 1) attn_tc2_k_(rsg_attn_args a, int rows, int rep, bool vec)
{
    static_assert(KT == 2 || KT == 4, "KT");
    constexpr int BNT = 16 * KT, HK = 8 * KT; /* keys per tile, per key half */
    using L = lay_<NC>;
    constexpr int LDQ = L::LDQ, LDK = L::LDK, LDV = L::LDV, NG = L::HDP / 16, NQ = L::HDP / 32;
    constexpr int SU = NC > 2 ? 2 : 1; /* S loop unrolling: at 128 registers (hd <= 128) 2 spills */
    extern __shared__ float4 smem4[];
    float *Qs = reinterpret_cast<float *>(smem4), *Ks = Qs + BM * LDQ, *Vs = Ks + 2 * L::KS;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wr = warp & 3, kh = warp >> 2;
    const int gq = lane >> 2, c4 = lane & 3;
    const int qt = gridDim.x - 1 - blockIdx.x; /* the longest (last) tiles start first */
    const int g = blockIdx.y, r = blockIdx.z, i0 = qt * BM, hd = a.hd;

    for (int k = tid; k < (int)(L::smem / sizeof(float4)); k += NT) smem4[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    for (int k = tid; k < BM * hd; k += NT) {
        const int i = k / hd, e = k - i * hd, ri = min(i0 + i, rows - 1);
        const int t = ri / rep, h = g * rep + ri % rep;
        Qs[i * LDQ + e] = a.Q[((size_t)r * a.T + t) * a.ldq + (size_t)h * a.q_hstride + e];
    }
    const int row0 = 16 * wr + gq; /* the thread's tile rows row0 and row0 + 8 */
    const int lim0 = (int)a.pos0 + min(i0 + row0, rows - 1) / rep;
    const int lim1 = (int)a.pos0 + min(i0 + row0 + 8, rows - 1) / rep;
    const int nkeys = (int)a.pos0 + (min(i0 + BM, rows) - 1) / rep + 1, ntiles = (nkeys + BNT - 1) / BNT;
    const size_t head = ((size_t)r * a.Hkv + g) * a.cap * (size_t)hd;
    const float *Kg = a.Kc + head, *Vg = a.Vc + head;

    /* O: group q (32 dims), n-tile j, C element e: row row0 (e < 2) or row0 + 8, dimension
     * 32 q + 8 c4 + 4 (e & 1) + j */
    float o[NQ][4][4], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
#pragma unroll
    for (int q = 0; q < NQ; q++)
#pragma unroll
        for (int j = 0; j < 4; j++) o[q][j][0] = o[q][j][1] = o[q][j][2] = o[q][j][3] = 0.0f;

    const float *qa = Qs + row0 * LDQ + 4 * c4, *qb = qa + 8 * LDQ;
    load_rows_<LDK>(Ks, Kg, 0, nkeys, hd, vec);
    if (KT == 2) load_rows_<LDV>(Vs, Vg, 0, nkeys, hd, vec);
    else load_rows_<LDK>(Ks + L::KS, Kg, BN, nkeys, hd, vec);
    __pipeline_commit();
    for (int jt = 0; jt < ntiles; jt++) {
        const int st = KT == 2 ? jt & 1 : 0, j0 = jt * BNT;
        __pipeline_wait_prior(0); /* this thread's copies of K (KT = 2: and V) of tile jt landed */
        /* everyone's copies are visible, everyone is done with tile jt - 1 (KT = 2: the other
         * stage; KT = 4: V's buffer; and, the first time, Q is visible) */
        __syncthreads();
        if (KT == 2) {
            if (jt + 1 < ntiles) {
                load_rows_<LDK>(Ks + (st ^ 1) * L::KS, Kg, j0 + BN, nkeys, hd, vec);
                load_rows_<LDV>(Vs + (st ^ 1) * L::VS, Vg, j0 + BN, nkeys, hd, vec);
            }
        } else {
            load_rows_<LDV>(Vs, Vg, j0, nkeys, hd, vec);
            load_rows_<LDV>(Vs + L::VS, Vg, j0 + BN, nkeys, hd, vec);
        }
        __pipeline_commit(); /* (an empty group after the last tile keeps the count uniform) */
        const float *Kt = Ks + st * L::KS, *Vt = Vs + st * L::VS;

        /* S = Q K^T: the warp's 16 rows x its 8 KT keys (KT n-tiles of 8); the big products and the
         * two small ones (2^-11 smaller: their accumulation errors are negligible) in separate
         * accumulators, two independent mma chains per n-tile */
        float sb[KT][4] = {}, sl[KT][4] = {}, sr[KT][4] = {};
        const float *kp = Kt + (HK * kh + gq) * LDK + 4 * c4; /* B column n = key HK kh + 8 n + g */
#pragma unroll SU
        for (int s = 0; s < NG; s++) {
            const float4 x = *reinterpret_cast<const float4 *>(qa + 16 * s);
            const float4 y = *reinterpret_cast<const float4 *>(qb + 16 * s);
            uint32_t ah[2][4], al[2][4];
            split_fast_(x.x, ah[0][0], al[0][0]);
            split_fast_(y.x, ah[0][1], al[0][1]);
            split_fast_(x.y, ah[0][2], al[0][2]);
            split_fast_(y.y, ah[0][3], al[0][3]);
            split_fast_(x.z, ah[1][0], al[1][0]);
            split_fast_(y.z, ah[1][1], al[1][1]);
            split_fast_(x.w, ah[1][2], al[1][2]);
            split_fast_(y.w, ah[1][3], al[1][3]);
#pragma unroll
            for (int n = 0; n < KT; n++) {
                const float4 kv = *reinterpret_cast<const float4 *>(kp + 8 * n * LDK + 16 * s);
                uint32_t bh[4], bl[4];
                split_fast_(kv.x, bh[0], bl[0]);
                split_fast_(kv.y, bh[1], bl[1]);
                split_fast_(kv.z, bh[2], bl[2]);
                split_fast_(kv.w, bh[3], bl[3]);
                mma_(sb[n], ah[0], bh[0], bh[1]);
                mma_(sl[n], ah[0], bl[0], bl[1]);
                mma_(sr[n], al[0], bh[0], bh[1]);
                mma_(sb[n], ah[1], bh[2], bh[3]);
                mma_(sl[n], ah[1], bl[2], bl[3]);
                mma_(sr[n], al[1], bh[2], bh[3]);
            }
        }
        /* scale, causal mask, online softmax (fp32); element e of n-tile n: row row0 (e < 2) or
         * row0 + 8, key j0 + HK kh + 8 n + 2 c4 + (e & 1) */
        float p[KT][4], mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < KT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int kj = j0 + HK * kh + 8 * n + 2 * c4 + (e & 1);
                const float s = (sb[n][e] + (sl[n][e] + sr[n][e])) * a.scale;
                p[n][e] = kj <= (e < 2 ? lim0 : lim1) ? s : -INFINITY;
                if (e < 2) mx0 = fmaxf(mx0, p[n][e]);
                else mx1 = fmaxf(mx1, p[n][e]);
            }
#pragma unroll
        for (int off = 1; off < 4; off <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xFFFFFFFFu, mx0, off));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xFFFFFFFFu, mx1, off));
        }
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        /* a key half may have seen no visible key yet (m = -inf): keep exp(-inf - -inf) out */
        const float ms0 = mn0 == -INFINITY ? 0.0f : mn0, ms1 = mn1 == -INFINITY ? 0.0f : mn1;
        const float al0 = expf(m0 - ms0), al1 = expf(m1 - ms1);
        m0 = mn0, m1 = mn1;
        float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
        for (int n = 0; n < KT; n++) {
            p[n][0] = expf(p[n][0] - ms0), p[n][1] = expf(p[n][1] - ms0);
            p[n][2] = expf(p[n][2] - ms1), p[n][3] = expf(p[n][3] - ms1);
            rs0 = rs0 + p[n][0] + p[n][1];
            rs1 = rs1 + p[n][2] + p[n][3];
        }
#pragma unroll
        for (int off = 1; off < 4; off <<= 1) {
            rs0 = rs0 + __shfl_xor_sync(0xFFFFFFFFu, rs0, off);
            rs1 = rs1 + __shfl_xor_sync(0xFFFFFFFFu, rs1, off);
        }
        l0 = l0 * al0 + rs0;
        l1 = l1 * al1 + rs1;

        /* P in the A layout of k-step n: column c4 = key 2 c4, c4 + 4 = key 2 c4 + 1 */
        uint32_t ph[KT][4], pl[KT][4];
#pragma unroll
        for (int n = 0; n < KT; n++) {
            split_(p[n][0], ph[n][0], pl[n][0]);
            split_(p[n][2], ph[n][1], pl[n][1]);
            split_(p[n][1], ph[n][2], pl[n][2]);
            split_(p[n][3], ph[n][3], pl[n][3]);
        }
        if (KT == 4) {
            __pipeline_wait_prior(0); /* V(jt) landed */
            __syncthreads();          /* V(jt) visible, every warp done with K(jt) */
            if (jt + 1 < ntiles) {
                load_rows_<LDK>(Ks, Kg, j0 + BNT, nkeys, hd, vec);
                load_rows_<LDK>(Ks + L::KS, Kg, j0 + BNT + BN, nkeys, hd, vec);
            }
            __pipeline_commit();
        }
        /* O = O alpha + P V, per 32-dimension group q: the tile's 8 KT keys into fresh accumulators,
         * then one fma per element (rounded to nearest) */
        const float *vp = Vt + (HK * kh + 2 * c4) * LDV + 4 * gq; /* B rows: keys 2 c4, 2 c4 + 1 */
#pragma unroll
        for (int q = 0; q < NQ; q++) {
            float acc[4][4] = {}, acl[4][4] = {};
#pragma unroll
            for (int n = 0; n < KT; n++) {
                const float4 v0 = *reinterpret_cast<const float4 *>(vp + 8 * n * LDV + 32 * q);
                const float4 v1 = *reinterpret_cast<const float4 *>(vp + (8 * n + 1) * LDV + 32 * q);
                uint32_t h0[4], lo0[4], h1[4], lo1[4];
                split_fast_(v0.x, h0[0], lo0[0]);
                split_fast_(v0.y, h0[1], lo0[1]);
                split_fast_(v0.z, h0[2], lo0[2]);
                split_fast_(v0.w, h0[3], lo0[3]);
                split_fast_(v1.x, h1[0], lo1[0]);
                split_fast_(v1.y, h1[1], lo1[1]);
                split_fast_(v1.z, h1[2], lo1[2]);
                split_fast_(v1.w, h1[3], lo1[3]);
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    mma_(acc[j], ph[n], h0[j], h1[j]);
                    mma_(acl[j], ph[n], lo0[j], lo1[j]);
                    mma_(acl[j], pl[n], h0[j], h1[j]);
                }
            }
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[q][j][e] = __fmaf_rn(o[q][j][e], e < 2 ? al0 : al1, acc[j][e] + acl[j][e]);
        }
    }
    __pipeline_wait_prior(0);

    /* merge the key halves: half 1 hands (m, l, O) to half 0 through shared memory (Q's rows, then
     * the first K stage: every warp is past its last reads after the barrier) */
    __syncthreads();
    float *Xo = Qs, *Xm = Qs + BM * LDQ, *Xl = Xm + BM;
    if (kh == 1) {
#pragma unroll
        for (int q = 0; q < NQ; q++)
#pragma unroll
            for (int hr = 0; hr < 2; hr++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    *reinterpret_cast<float4 *>(Xo + (row0 + 8 * hr) * LDQ + 32 * q + 8 * c4 + 4 * e) =
                        make_float4(o[q][0][2 * hr + e], o[q][1][2 * hr + e], o[q][2][2 * hr + e], o[q][3][2 * hr + e]);
        if (c4 == 0) Xm[row0] = m0, Xm[row0 + 8] = m1, Xl[row0] = l0, Xl[row0 + 8] = l1;
    }
    __syncthreads();
    if (kh == 1) return;
    /* half 0 saw key 0, visible to every row: m0, m1 are finite */
    const float mb0 = Xm[row0], mb1 = Xm[row0 + 8];
    const float mm0 = fmaxf(m0, mb0), mm1 = fmaxf(m1, mb1);
    const float fa0 = expf(m0 - mm0), fb0 = expf(mb0 - mm0), fa1 = expf(m1 - mm1), fb1 = expf(mb1 - mm1);
    const float il0 = 1.0f / (l0 * fa0 + Xl[row0] * fb0), il1 = 1.0f / (l1 * fa1 + Xl[row0 + 8] * fb1);
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int i = i0 + row0 + 8 * hr;
        if (i >= rows) continue;
        const int t = i / rep, h = g * rep + i % rep;
        float *out = a.O + ((size_t)r * a.T + t) * a.ldo + (size_t)h * hd;
        const float *xo = Xo + (row0 + 8 * hr) * LDQ;
        const float fa = hr ? fa1 : fa0, fb = hr ? fb1 : fb0, il = hr ? il1 : il0;
#pragma unroll
        for (int q = 0; q < NQ; q++)
#pragma unroll
            for (int e = 0; e < 2; e++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int col = 32 * q + 8 * c4 + 4 * e + j;
                    if (col < hd) out[col] = (o[q][j][2 * hr + e] * fa + xo[col] * fb) * il;
                }
    }
}

template <int NC, int KT>
rs_status attn_tc2_launch_(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st)
{
    const size_t smem = lay_<NC>::smem;
    cudaError_t e = cudaFuncSetAttribute(attn_tc2_k_<NC, KT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "rsg_attention (tf32x3): %zu bytes of shared memory: %s", smem,
                            cudaGetErrorString(e));
    const dim3 grid((unsigned)((rows + BM - 1) / BM), (unsigned)a->Hkv, (unsigned)a->R);
    attn_tc2_k_<NC, KT><<<grid, NT, smem, st>>>(*a, rows, rep, vec);
    return rs_cuda_launch_status("rsg_attention (tf32x3)");
}

} // namespace

/* 32-key tiles at hd <= 128 (two blocks per SM, 128 registers: no room for four n-tiles), 64-key
 * tiles above (measured 12% faster than 32-key tiles at hd = 256 on the H200) */
rs_status rsg_attention_tc(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st)
{
    switch ((a->hd + 63) / 64) {
    case 1: return attn_tc2_launch_<1, 2>(a, rows, rep, vec, st);
    case 2: return attn_tc2_launch_<2, 2>(a, rows, rep, vec, st);
    case 3: return attn_tc2_launch_<3, 4>(a, rows, rep, vec, st);
    default: return attn_tc2_launch_<4, 4>(a, rows, rep, vec, st);
    }
}
