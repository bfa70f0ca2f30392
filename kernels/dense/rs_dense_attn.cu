/* rs_dense_attn.cu — causal GQA attention (rsg_attention): the dispatch (RSG_ATTN_*; the 3xTF32
 * tensor-core kernel, the default, is rs_dense_attn_tc.cu) and the flash-style kernel on CUDA cores
 * in fp32 (simt).
 *
 * Block = (query tile of 64 rows, KV head g, run r); 256 threads. The rows of (r, g) are
 * i = t * rep + hh (chunk position t, query head g * rep + hh; rep = H / Hkv), as the CPU's
 * tasks, so one key / value tile in shared memory serves every query head of the KV head and
 * 64 / rep chunk positions. Key tiles of 64 go through shared memory; the scores of a tile
 * (64 x 64) live in registers and one shared tile, never an N-long row.
 *
 * Thread layout: warp w holds tile rows ty * 4 + a (a < 4) for ty = 2w + lane / 16; lane % 16 = tx
 * owns keys tx + 16 b (b < 4) of S = Q K^T and output columns tx * 4 + 64 c + e (c < NC, e < 4)
 * of O. A row's 64 scores are spread over the 16 lanes of one half-warp, so the row max and
 * row sum are 4-level xor butterflies (every lane gets the same bits) and P = exp(S - m)
 * goes to shared memory only for the same half-warp's PV product.
 * Shared memory, floats: Q [64][LD], K [64][LD], V [64][LD], P^T [64 keys][68], LD = 64 NC + 4
 * (NC = ceil(hd / 64); the +4 spreads the rows of K over the banks): 212 KiB at hd = 256.
 * Inner loops: S per 4 dims, 8 float4 loads (Q broadcast, K 2 wavefronts) per 64 FMAs;
 * PV per key, 1 + NC float4 loads per 16 NC FMAs.
 * Pipeline: K(j) and V(j) are copied with cp.async (16-byte, when hd % 4 == 0 and the caches
 * are 16-byte aligned; else plain loads): V(j) streams in while S(j) is computed, K(j+1) while
 * PV(j) is.
 *
 * Numerics (online softmax, fp32): per row m = running max of the scaled scores, l = running
 * sum of exp(s - m), O rescaled by exp(m_old - m_new) when the max grows; at the end O / l.
 * Scores are dot * scale as the CPU (the dot products and PV use fmaf: one rounding per term;
 * the CPU sums in another order anyway). Keys past pos0 + t score -inf (weight exactly 0).
 * Tolerance against the CPU op: see tests/cuda/test_gpu_ops.cu. */
#include <cuda_pipeline.h>
#include <stdlib.h>
#include <string.h>

#include "rs_dense_attn_impl.h"
#include "rs_cuda_common.cuh"

namespace {

constexpr int BM = 64, BN = 64, NT = 256, PLD = BM + 4;

/* the key/value rows j0 .. j0 + 63 of one head into dst [64][LD]; rows >= nkeys are zeroed
 * (their weights are 0, and 0 * garbage could be NaN) */
template <int LD>
__device__ __forceinline__ void load_tile_(float *dst, const float *src, int j0, int nkeys, int hd, bool vec)
{
    if (vec) {
        const int n4 = hd >> 2;
        for (int k = threadIdx.x; k < BN * n4; k += NT) {
            const int j = k / n4, c4 = k - j * n4;
            float *d = dst + j * LD + c4 * 4;
            if (j0 + j < nkeys)
                __pipeline_memcpy_async(d, src + (size_t)(j0 + j) * hd + c4 * 4, 16);
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

template <int NC>
__global__ void __launch_bounds__(NT, 1) attn_k_(rsg_attn_args a, int rows, int rep, bool vec)
{
    constexpr int LD = 64 * NC + 4;
    extern __shared__ float4 smem4[];
    float *Qs = reinterpret_cast<float *>(smem4), *Ks = Qs + BM * LD, *Vs = Ks + BN * LD, *Ps = Vs + BN * LD;
    const int tid = threadIdx.x, lane = tid & 31;
    const int ty = (tid >> 5) * 2 + (lane >> 4), tx = lane & 15;
    const int qt = gridDim.x - 1 - blockIdx.x; /* the longest (last) tiles start first */
    const int g = blockIdx.y, r = blockIdx.z, i0 = qt * BM, hd = a.hd, hdp = (hd + 3) & ~3;

    /* zero everything once: the padding columns [hd, 64 NC) must hold zeros for S */
    for (int k = tid; k < (3 * BM * LD + BN * PLD) / 4; k += NT) smem4[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    /* Q tile; rows past the last (i >= rows) repeat the last row (finite, never stored) */
    for (int k = tid; k < BM * hd; k += NT) {
        const int i = k / hd, e = k - i * hd, ri = min(i0 + i, rows - 1);
        const int t = ri / rep, h = g * rep + ri % rep;
        Qs[i * LD + e] = a.Q[((size_t)r * a.T + t) * a.ldq + (size_t)h * a.q_hstride + e];
    }
    int lim[4]; /* last visible key of each of the thread's rows */
#pragma unroll
    for (int x = 0; x < 4; x++) lim[x] = (int)a.pos0 + min(i0 + ty * 4 + x, rows - 1) / rep;
    const int nkeys = (int)a.pos0 + (min(i0 + BM, rows) - 1) / rep + 1, ntiles = (nkeys + BN - 1) / BN;
    const size_t head = ((size_t)r * a.Hkv + g) * a.cap * (size_t)hd;
    const float *Kh = a.Kc + head, *Vh = a.Vc + head;

    float o[4][NC][4], m[4], l[4];
#pragma unroll
    for (int x = 0; x < 4; x++) {
        m[x] = -INFINITY;
        l[x] = 0.0f;
#pragma unroll
        for (int c = 0; c < NC; c++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[x][c][e] = 0.0f;
    }

    load_tile_<LD>(Ks, Kh, 0, nkeys, hd, vec);
    __pipeline_commit();
    for (int jt = 0; jt < ntiles; jt++) {
        const int j0 = jt * BN;
        load_tile_<LD>(Vs, Vh, j0, nkeys, hd, vec);
        __pipeline_commit();
        __pipeline_wait_prior(1); /* K(jt) landed (V(jt) may still be in flight) */
        __syncthreads();

        /* S = Q K^T for rows ty*4 + x, keys tx + 16 y */
        float sc[4][4];
#pragma unroll
        for (int x = 0; x < 4; x++)
#pragma unroll
            for (int y = 0; y < 4; y++) sc[x][y] = 0.0f;
#pragma unroll 2
        for (int d = 0; d < hdp; d += 4) {
            float4 qv[4], kv[4];
#pragma unroll
            for (int x = 0; x < 4; x++) qv[x] = *reinterpret_cast<const float4 *>(Qs + (ty * 4 + x) * LD + d);
#pragma unroll
            for (int y = 0; y < 4; y++) kv[y] = *reinterpret_cast<const float4 *>(Ks + (tx + 16 * y) * LD + d);
#pragma unroll
            for (int x = 0; x < 4; x++)
#pragma unroll
                for (int y = 0; y < 4; y++) {
                    float s = sc[x][y];
                    s = __fmaf_rn(qv[x].x, kv[y].x, s);
                    s = __fmaf_rn(qv[x].y, kv[y].y, s);
                    s = __fmaf_rn(qv[x].z, kv[y].z, s);
                    s = __fmaf_rn(qv[x].w, kv[y].w, s);
                    sc[x][y] = s;
                }
        }
        /* scale, causal mask, online softmax update (fp32) */
#pragma unroll
        for (int x = 0; x < 4; x++) {
            float mx = -INFINITY;
#pragma unroll
            for (int y = 0; y < 4; y++) {
                const int kj = j0 + tx + 16 * y;
                sc[x][y] = kj <= lim[x] ? sc[x][y] * a.scale : -INFINITY;
                mx = fmaxf(mx, sc[x][y]);
            }
            mx = rs_dev_warp_max<16>(mx); /* the row's half-warp */
            const float mnew = fmaxf(m[x], mx); /* finite: key 0 is visible to every row in tile 0 */
            const float alpha = expf(m[x] - mnew);
            m[x] = mnew;
            float rs = 0.0f;
#pragma unroll
            for (int y = 0; y < 4; y++) {
                sc[x][y] = expf(sc[x][y] - mnew);
                rs = rs + sc[x][y];
            }
            rs = rs_dev_warp_sum<16>(rs);
            l[x] = l[x] * alpha + rs;
#pragma unroll
            for (int c = 0; c < NC; c++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[x][c][e] = o[x][c][e] * alpha;
        }
#pragma unroll
        for (int y = 0; y < 4; y++)
            *reinterpret_cast<float4 *>(Ps + (tx + 16 * y) * PLD + ty * 4) =
                make_float4(sc[0][y], sc[1][y], sc[2][y], sc[3][y]);
        __syncthreads(); /* every thread is done with K(jt); P is visible */
        if (jt + 1 < ntiles) load_tile_<LD>(Ks, Kh, j0 + BN, nkeys, hd, vec);
        __pipeline_commit(); /* (an empty group after the last tile keeps the count uniform) */
        __pipeline_wait_prior(1); /* V(jt) landed */
        __syncthreads();

        /* O += P V over the tile's keys (keys >= nkeys have P = 0 and are skipped) */
        const int jn = min(BN, nkeys - j0);
#pragma unroll 2
        for (int j = 0; j < jn; j++) {
            const float4 p4 = *reinterpret_cast<const float4 *>(Ps + j * PLD + ty * 4);
            const float pj[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const float4 v4 = *reinterpret_cast<const float4 *>(Vs + j * LD + tx * 4 + 64 * c);
#pragma unroll
                for (int x = 0; x < 4; x++) {
                    o[x][c][0] = __fmaf_rn(pj[x], v4.x, o[x][c][0]);
                    o[x][c][1] = __fmaf_rn(pj[x], v4.y, o[x][c][1]);
                    o[x][c][2] = __fmaf_rn(pj[x], v4.z, o[x][c][2]);
                    o[x][c][3] = __fmaf_rn(pj[x], v4.w, o[x][c][3]);
                }
            }
        }
        __syncthreads(); /* V(jt) and P are free for the next tile */
    }
    __pipeline_wait_prior(0);

#pragma unroll
    for (int x = 0; x < 4; x++) {
        const int i = i0 + ty * 4 + x;
        if (i >= rows) continue;
        const int t = i / rep, h = g * rep + i % rep;
        float *out = a.O + ((size_t)r * a.T + t) * a.ldo + (size_t)h * hd;
#pragma unroll
        for (int c = 0; c < NC; c++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int col = tx * 4 + 64 * c + e;
                if (col < hd) out[col] = o[x][c][e] / l[x];
            }
    }
}

template <int NC> size_t attn_smem_() { return (size_t)(3 * BM * (64 * NC + 4) + BN * PLD) * sizeof(float); }

template <int NC> rs_status attn_launch_(const rsg_attn_args *a, int rows, int rep, bool vec, cudaStream_t st)
{
    const size_t smem = attn_smem_<NC>();
    cudaError_t e = cudaFuncSetAttribute(attn_k_<NC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
        return rs_error_set(RS_E_CUDA, "rsg_attention: %zu bytes of shared memory: %s", smem, cudaGetErrorString(e));
    const dim3 grid((unsigned)((rows + BM - 1) / BM), (unsigned)a->Hkv, (unsigned)a->R);
    attn_k_<NC><<<grid, NT, smem, st>>>(*a, rows, rep, vec);
    return rs_cuda_launch_status("rsg_attention");
}

} // namespace

int rsg_attention_default_impl(void)
{
    /* read once; an unknown value keeps the default (the launcher never prints) */
    static int impl = 0;
    if (impl == 0) {
        const char *e = getenv("RS_GPU_ATTN");
        impl = RSG_ATTN_TF32X3;
        for (int k = RSG_ATTN_SIMT; e && k <= RSG_ATTN_TF32X3_V2; k++)
            if (strcmp(e, rsg_attention_impl_name(k)) == 0) impl = k;
    }
    return impl;
}

const char *rsg_attention_impl_name(int impl)
{
    if (impl == RSG_ATTN_DEFAULT) impl = rsg_attention_default_impl();
    switch (impl) {
    case RSG_ATTN_SIMT: return "simt";
    case RSG_ATTN_TF32X3_V2: return "tf32x3-v2";
    default: return "tf32x3";
    }
}

rs_status rsg_attention(const rsg_attn_args *a, rs_cuda_stream s)
{
    RS_CHECK(a, RS_E_INVAL, "rsg_attention: NULL arguments");
    RS_CHECK(a->Q && a->Kc && a->Vc && a->O && a->R >= 0 && a->R <= 65535 && a->T >= 0 && a->H > 0 &&
                    a->Hkv > 0 && a->Hkv <= 65535 && a->H % a->Hkv == 0 && a->hd > 0 && a->hd <= 256 &&
                    a->pos0 >= 0 && (size_t)a->pos0 + (size_t)a->T <= a->cap && a->pos0 + a->T <= 0x7fffffff &&
                    a->q_hstride >= a->hd && a->ldq >= (size_t)(a->H - 1) * a->q_hstride + a->hd &&
                    a->ldo >= (size_t)a->H * a->hd && (size_t)a->T * (a->H / a->Hkv) <= 0x7fffffff, RS_E_INVAL,
                "rsg_attention: bad arguments (R %d, T %d, H %d, Hkv %d, hd %d, pos0 %lld, cap %zu, ldq %zu, "
                "q_hstride %d, ldo %zu)",
                a->R, a->T, a->H, a->Hkv, a->hd, (long long)a->pos0, a->cap, a->ldq, a->q_hstride, a->ldo);
    RS_CHECK(a->impl >= RSG_ATTN_DEFAULT && a->impl <= RSG_ATTN_TF32X3_V2, RS_E_INVAL, "rsg_attention: unknown kernel %d", a->impl);
    if (a->R == 0 || a->T == 0) return RS_OK;
    const int rep = a->H / a->Hkv, rows = a->T * rep;
    const bool vec = a->hd % 4 == 0 && ((uintptr_t)a->Kc % 16) == 0 && ((uintptr_t)a->Vc % 16) == 0;
    cudaStream_t st = s;
    const int impl = a->impl == RSG_ATTN_DEFAULT ? rsg_attention_default_impl() : a->impl;
    if (impl == RSG_ATTN_TF32X3_V2 || impl == RSG_ATTN_TF32X3) return rsg_attention_tc(a, rows, rep, vec, st);
    switch ((a->hd + 63) / 64) {
    case 1: return attn_launch_<1>(a, rows, rep, vec, st);
    case 2: return attn_launch_<2>(a, rows, rep, vec, st);
    case 3: return attn_launch_<3>(a, rows, rep, vec, st);
    default: return attn_launch_<4>(a, rows, rep, vec, st);
    }
}
