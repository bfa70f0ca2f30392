/* rs_gpu_attn_tc_v1.cu — the first tensor-core attention kernel (RSG_ATTN_TF32X3_V1,
 * RS_GPU_ATTN=tf32x3-v1; the default at hd <= 128 until 2026-12-01, where it is 14% faster than its
 * successor rs_gpu_attn_tc.cu on the H200, whose errors over long key ranges are 30-80x smaller).
 * Causal GQA attention at fp32-level accuracy (3xTF32).
 *
 * The same contract and row layout as the CUDA-core kernel (rs_gpu_attn.cu): block = (query tile
 * of 64 rows, KV head g, run r), rows i = t * rep + hh. 256 threads = 8 warps: warp w owns the
 * tile rows 16 (w % 4) .. + 15 and the key half kh = w / 4 of every 32-key tile (keys 16 kh ..
 * 16 kh + 15), with its own online-softmax state (m, l, O); the two halves are merged at the end
 * (exactly the split-K merge of flash decoding: O = O_a e^(m_a - m) + O_b e^(m_b - m), the same
 * for l, m = max). Each half loads and splits only its own 16 rows of every K / V tile; the whole
 * block syncs twice per tile. Both products run as mma.sync.m16n8k8 TF32 with fp32 accumulation:
 *
 *   3xTF32: a = a_hi + a_lo, a_hi = tf32(a), a_lo = tf32(a - a_hi) (round to nearest, ties away;
 *   for Q, a_lo truncated by the tensor cores instead: split_fast_);
 *   a b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi. a - a_hi is exact in fp32, |a_lo| <= 2^-11 |a|, and
 *   the dropped a_lo b_lo and the rounding of a_lo are each <= ~2^-22 |a b|: a product error of a
 *   few fp32 units, then fp32 accumulation (the tensor cores' fp32 sums round / truncate within
 *   ~1 ulp per addition). The scores S = Q K^T and O += P V both use it; the online softmax (max,
 *   exp, sums, rescaling) is fp32 on the CUDA cores as in the CUDA-core kernel.
 *
 * Shared memory: Q [64][LD] fp32 (split per fragment as it is read: each warp reads its own rows),
 * K and V [32][LD] already split (hi and lo planes: every warp reuses them, so they are split once
 * at load), LD = 64 NC + 4 (NC = ceil(hd / 64)): the +4 puts the 8 x 4 lanes of every fragment read
 * on 32 distinct banks. 195 KiB at hd = 256 (one block per SM), 99 KiB at hd = 128 (two).
 * Fragments (PTX m16n8k8 .tf32, g = lane / 4, c = lane % 4): A a0 (g, c) a1 (g+8, c) a2 (g, c+4)
 * a3 (g+8, c+4); B b0 (k c, n g) b1 (k c+4, n g); C c0 (g, 2c) c1 (g, 2c+1) c2 (g+8, 2c) c3 (g+8, 2c+1).
 * P goes from the C layout of S straight into the A layout of P V by numbering the 8 keys of a
 * k-step so that A column c is key 2c and column c+4 is key 2c+1 (V's B rows likewise): no shuffle.
 *
 * Loads (hd % 4 == 0, 16-byte aligned caches): all float4s of a tile's K and V are issued together;
 * for hd > 128 (one block per SM) the next tile's are loaded into registers while the current
 * tile's P V runs and split into shared memory after the next barrier.
 *
 * Keys past pos0 + t score -inf (weight exactly 0); keys >= the tile's last visible key are zero
 * in shared memory (0 * garbage could be NaN). Rows past the last repeat the last row (finite,
 * never stored). Non-finite inputs give NaN (a_hi = inf, a_lo = inf - inf), as a NaN run should.
 * Deterministic: fixed work split and reduction order, no atomics. */
#include "rs_gpu_attn_impl.h"
#include "rs_gpu_common.cuh"

namespace {

constexpr int BM = 64, BN = 32, NT = 256, GT = 128, HB = BN / 2; /* GT threads per key half of HB keys */

__device__ __forceinline__ uint32_t tf32_rna_(float x) { return (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u; }

__device__ __forceinline__ void split_(float x, uint32_t &hi, uint32_t &lo)
{
    hi = tf32_rna_(x);
    lo = tf32_rna_(x - __uint_as_float(hi));
}

/* the same with lo passed as fp32 bits: the tensor cores read the top 19 bits of a .tf32 operand
 * (they ignore the low 13), i.e. lo truncated: |error| <= 2^-21 |x|, zero-mean (a_lo's sign is
 * random with a rounded a_hi). Two integer operations fewer; used for Q, which every warp splits
 * again for every key tile (K, V and P are split once, exactly). */
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

/* key / value rows jg .. jg + 15 of one head (one key half), split into hi [16][LD] and lo [16][LD]
 * by that half's GT threads (gt); rows >= nkeys are zero; columns >= hd keep the zeros written at
 * the start */
template <int NC>
__device__ __forceinline__ void load_split_(uint32_t *hi, uint32_t *lo, const float *src, int jg, int nkeys, int hd,
                                            int gt)
{
    constexpr int LD = 64 * NC + 4;
    for (int k = gt; k < HB * hd; k += GT) {
        const int j = k / hd, e = k - j * hd;
        uint32_t h, l;
        split_(jg + j < nkeys ? src[(size_t)(jg + j) * hd + e] : 0.0f, h, l);
        hi[j * LD + e] = h;
        lo[j * LD + e] = l;
    }
}

/* The vectorised path, software-pipelined: the next tile's K and V float4s are loaded into
 * registers (issue_) while the current tile's P V runs, and split into shared memory (commit_)
 * after the next barrier, so the global latency hides behind the tensor-core work. */
template <int NC> struct tile_regs_ {
    static constexpr int IT = HB * 16 * NC / GT; /* float4s of K (and of V) per thread */
    float4 k[IT], v[IT];
};

template <int NC>
__device__ __forceinline__ void issue_(tile_regs_<NC> &b, const float *Kg, const float *Vg, int jg, int nkeys, int hd,
                                       int gt)
{
    constexpr int N4 = 16 * NC;
    const int n4 = hd >> 2;
#pragma unroll
    for (int it = 0; it < tile_regs_<NC>::IT; it++) {
        const int k = gt + GT * it, j = k / N4, c4 = k % N4;
        const bool in = c4 < n4 && jg + j < nkeys;
        const size_t off = (size_t)(jg + j) * hd + 4 * c4;
        b.k[it] = in ? __ldg(reinterpret_cast<const float4 *>(Kg + off)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        b.v[it] = in ? __ldg(reinterpret_cast<const float4 *>(Vg + off)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

__device__ __forceinline__ void split4_(uint32_t *hi, uint32_t *lo, float4 v)
{
    uint4 h, l;
    split_(v.x, h.x, l.x);
    split_(v.y, h.y, l.y);
    split_(v.z, h.z, l.z);
    split_(v.w, h.w, l.w);
    *reinterpret_cast<uint4 *>(hi) = h;
    *reinterpret_cast<uint4 *>(lo) = l;
}

template <int NC>
__device__ __forceinline__ void commit_(const tile_regs_<NC> &b, uint32_t *Kh, uint32_t *Kl, uint32_t *Vh, uint32_t *Vl,
                                        int hd, int gt)
{
    constexpr int N4 = 16 * NC, LD = 64 * NC + 4;
    const int n4 = hd >> 2;
#pragma unroll
    for (int it = 0; it < tile_regs_<NC>::IT; it++) {
        const int k = gt + GT * it, j = k / N4, c4 = k % N4;
        if (c4 < n4) { /* columns >= hd keep their zeros */
            split4_(Kh + j * LD + 4 * c4, Kl + j * LD + 4 * c4, b.k[it]);
            split4_(Vh + j * LD + 4 * c4, Vl + j * LD + 4 * c4, b.v[it]);
        }
    }
}

template <int NC>
__global__ void __launch_bounds__(NT, NC <= 2 ? 2 : 1) attn_tc1_k_(rsg_attn_args a, int rows, int rep, bool vec)
{
    constexpr int HDP = 64 * NC, LD = HDP + 4, NS = HDP / 8;
    extern __shared__ float4 smem4[];
    float *Qs = reinterpret_cast<float *>(smem4);
    uint32_t *Kh = reinterpret_cast<uint32_t *>(Qs + BM * LD), *Kl = Kh + BN * LD, *Vh = Kl + BN * LD,
             *Vl = Vh + BN * LD;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wr = warp & 3, kh = warp >> 2;
    const int gq = lane >> 2, c4 = lane & 3;
    const int qt = gridDim.x - 1 - blockIdx.x; /* the longest (last) tiles start first */
    const int g = blockIdx.y, r = blockIdx.z, i0 = qt * BM, hd = a.hd;

    for (int k = tid; k < (BM + 4 * BN) * LD / 4; k += NT) smem4[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    for (int k = tid; k < BM * hd; k += NT) {
        const int i = k / hd, e = k - i * hd, ri = min(i0 + i, rows - 1);
        const int t = ri / rep, h = g * rep + ri % rep;
        Qs[i * LD + e] = a.Q[((size_t)r * a.T + t) * a.ldq + (size_t)h * a.q_hstride + e];
    }
    const int row0 = 16 * wr + gq; /* the thread's tile rows row0 and row0 + 8 */
    const int lim0 = (int)a.pos0 + min(i0 + row0, rows - 1) / rep;
    const int lim1 = (int)a.pos0 + min(i0 + row0 + 8, rows - 1) / rep;
    const int nkeys = (int)a.pos0 + (min(i0 + BM, rows) - 1) / rep + 1, ntiles = (nkeys + BN - 1) / BN;
    const size_t head = ((size_t)r * a.Hkv + g) * a.cap * (size_t)hd;
    const float *Kg = a.Kc + head, *Vg = a.Vc + head;

    float o[NS][4], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
#pragma unroll
    for (int n = 0; n < NS; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    const float *qa = Qs + row0 * LD + c4, *qb = qa + 8 * LD;
    /* hd > 128: one block per SM and registers to spare beside O for the prefetch; hd <= 128: two
     * blocks per SM at 128 registers, so the loads of a tile are issued together right before it
     * is split (one latency per tile) and the other block computes meanwhile */
    constexpr bool PIPE = NC >= 3;
    tile_regs_<NC> pf;
    /* each key half loads, splits and reads only its own 16 rows of K and V (the halves still
     * sync together: a named barrier per half measured 2% slower on the H200) */
    const int gt = tid & (GT - 1), hoff = HB * kh * LD;
    if (vec && PIPE) issue_<NC>(pf, Kg, Vg, HB * kh, nkeys, hd, gt);
    for (int jt = 0; jt < ntiles; jt++) {
        const int j0 = jt * BN, jg = j0 + HB * kh;
        __syncthreads(); /* the previous tile's K / V are no longer read (and, the first time, Q is visible) */
        if (vec) {
            if (!PIPE) issue_<NC>(pf, Kg, Vg, jg, nkeys, hd, gt);
            commit_<NC>(pf, Kh + hoff, Kl + hoff, Vh + hoff, Vl + hoff, hd, gt);
        } else {
            load_split_<NC>(Kh + hoff, Kl + hoff, Kg, jg, nkeys, hd, gt);
            load_split_<NC>(Vh + hoff, Vl + hoff, Vg, jg, nkeys, hd, gt);
        }
        __syncthreads();

        /* S = Q K^T: the warp's 16 rows x its 16 keys (two n-tiles of 8); separate accumulators for
         * the big and the two small products keep three independent mma chains per n-tile */
        float sb[2][4] = {}, sl[2][4] = {}, sr[2][4] = {};
        const int kr = 16 * kh + gq; /* B column n = key row kr (+ 8 for the second n-tile) */
#pragma unroll 4
        for (int ks = 0; ks < NS; ks++) {
            const int d0 = 8 * ks;
            uint32_t ah[4], al[4];
            split_fast_(qa[d0], ah[0], al[0]);
            split_fast_(qb[d0], ah[1], al[1]);
            split_fast_(qa[d0 + 4], ah[2], al[2]);
            split_fast_(qb[d0 + 4], ah[3], al[3]);
#pragma unroll
            for (int n = 0; n < 2; n++) {
                const int o0 = (kr + 8 * n) * LD + d0 + c4;
                const uint32_t bh0 = Kh[o0], bh1 = Kh[o0 + 4], bl0 = Kl[o0], bl1 = Kl[o0 + 4];
                mma_(sb[n], ah, bh0, bh1);
                mma_(sl[n], ah, bl0, bl1);
                mma_(sr[n], al, bh0, bh1);
            }
        }
        /* scale, causal mask, online softmax (fp32); element e of n-tile n: row row0 (e < 2) or
         * row0 + 8, key j0 + 16 kh + 8 n + 2 c4 + (e & 1) */
        float p[2][4], mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int kj = j0 + 16 * kh + 8 * n + 2 * c4 + (e & 1);
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
        for (int n = 0; n < 2; n++) {
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
#pragma unroll
        for (int n = 0; n < NS; n++) o[n][0] *= al0, o[n][1] *= al0, o[n][2] *= al1, o[n][3] *= al1;

        if (vec && PIPE && jt + 1 < ntiles) issue_<NC>(pf, Kg, Vg, jg + BN, nkeys, hd, gt); /* lands during P V */

        /* O += P V over the warp's 16 keys: k-step n, A column c4 = key 2 c4, c4 + 4 = key 2 c4 + 1 */
#pragma unroll
        for (int n = 0; n < 2; n++) {
            uint32_t ph[4], pl[4];
            split_(p[n][0], ph[0], pl[0]);
            split_(p[n][2], ph[1], pl[1]);
            split_(p[n][1], ph[2], pl[2]);
            split_(p[n][3], ph[3], pl[3]);
            const int v0 = (16 * kh + 8 * n + 2 * c4) * LD + gq;
#pragma unroll
            for (int d = 0; d < NS; d++) {
                const uint32_t bh0 = Vh[v0 + 8 * d], bh1 = Vh[v0 + LD + 8 * d];
                const uint32_t bl0 = Vl[v0 + 8 * d], bl1 = Vl[v0 + LD + 8 * d];
                mma_(o[d], ph, bh0, bh1);
                mma_(o[d], ph, bl0, bl1);
                mma_(o[d], pl, bh0, bh1);
            }
        }
    }

    /* merge the key halves: half 1 hands (m, l, O) to half 0 through shared memory */
    __syncthreads();
    float *Xo = Qs, *Xm = Qs + BM * LD, *Xl = Xm + BM;
    if (kh == 1) {
#pragma unroll
        for (int n = 0; n < NS; n++) {
            *reinterpret_cast<float2 *>(Xo + row0 * LD + 8 * n + 2 * c4) = make_float2(o[n][0], o[n][1]);
            *reinterpret_cast<float2 *>(Xo + (row0 + 8) * LD + 8 * n + 2 * c4) = make_float2(o[n][2], o[n][3]);
        }
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
    for (int half = 0; half < 2; half++) {
        const int i = i0 + row0 + 8 * half;
        if (i >= rows) continue;
        const int t = i / rep, h = g * rep + i % rep;
        float *out = a.O + ((size_t)r * a.T + t) * a.ldo + (size_t)h * hd;
        const float *xo = Xo + (row0 + 8 * half) * LD;
        const float fa = half ? fa1 : fa0, fb = half ? fb1 : fb0, il = half ? il1 : il0;
#pragma unroll
        for (int n = 0; n < NS; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int col = 8 * n + 2 * c4 + e;
                if (col < hd) out[col] = (o[n][2 * half + e] * fa + xo[col] * fb) * il;
            }
    }
}

template <int NC> size_t attn_tc1_smem_() { return (size_t)(BM + 4 * BN) * (64 * NC + 4) * sizeof(float); }

template <int NC> rs_status attn_tc1_launch_(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st)
{
    const size_t smem = attn_tc1_smem_<NC>();
    cudaError_t e = cudaFuncSetAttribute(attn_tc1_k_<NC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "rsg_attention (tf32x3-v1): %zu bytes of shared memory: %s", smem,
                            cudaGetErrorString(e));
    const dim3 grid((unsigned)((rows + BM - 1) / BM), (unsigned)a->Hkv, (unsigned)a->R);
    attn_tc1_k_<NC><<<grid, NT, smem, st>>>(*a, rows, rep, vec);
    return rsg_launched("rsg_attention (tf32x3-v1)");
}


} // namespace

rs_status rsg_attention_tc_v1(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st)
{
    switch ((a->hd + 63) / 64) {
    case 1: return attn_tc1_launch_<1>(a, rows, rep, vec, st);
    case 2: return attn_tc1_launch_<2>(a, rows, rep, vec, st);
    case 3: return attn_tc1_launch_<3>(a, rows, rep, vec, st);
    default: return attn_tc1_launch_<4>(a, rows, rep, vec, st);
    }
}
