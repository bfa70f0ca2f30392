/* rs_cuda_decode.cu — SSM decode kernels (rs_cuda.h): conventional Mamba-2 / GDN decode with
 * fp32, fp16 or bf16 state, and ReplaySSM standard decode (output-only non-flush steps,
 * one-pass flush) with per-row flush decided on the device.
 *
 * Mapping (d_k = 128): a warp owns whole state rows; lane l holds columns 4l .. 4l+3 as one
 * float4 (16-byte, fully coalesced: a row is one 512-byte warp access). A warp handles 4
 * consecutive rows, whose loads are all issued before the first use.
 *   conventional: block = 4 warps = 16 rows of one (b, h); grid = B * H * d_v/16.
 *   replay:       one launch (RS_CUDA_LAUNCH_FUSED): every warp of the main kernel forms
 *                 its own head's coefficients (k_j . q and k_j . k of its key head, the decay products
 *                 of its value head, float64 rounded once: engine/rs_gamma.h) while its first
 *                 checkpoint loads are in flight; or (RS_CUDA_LAUNCH_PROLOGUE) two launches: a prologue (block per row and key head) writes those coefficients to
 *                 `work` once per key head, then the main kernel. RS_CUDA_LAUNCH_AUTO (default)
 *                 picks per call what measured faster (rs_cuda_replay_launches). The main kernel
 *                 gives each warp RPW rows (4 or 8) and no block barrier: lane j also holds ring
 *                 record j (and j + 32), so the record sum is part of the row's warp reduction.
 * Arithmetic is fp32. The conventional state update is written as alpha*s + v*k (GDN:
 * alpha*s + u*k) with explicit round-to-nearest intrinsics, the same operations as a plain C
 * loop, so a fp16/bf16 store can be checked bit for bit against the CPU codecs.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "replayssm/cuda/rs_cuda.h"
#include "replayssm/quant/rs_codec.h"
#include "rs_cuda_common.cuh"
#include "rs_cuda_ssm.cuh"
#include "rs_cuda_cpasync.cuh" /* rs_l2_prefetch (rs_cuda_launch_opts.replay_l2pf) */
#include "rs_check.h"

#define RS_CONV_ROWS_PER_WARP 4
#define RS_CONV_WARPS 4
#define RS_CONV_ROWS (RS_CONV_ROWS_PER_WARP * RS_CONV_WARPS) /* 16 rows per block */

extern "C" size_t rs_cuda_dtype_bytes(rs_cuda_dtype t) { return t == RS_CUDA_F32 ? 4u : 2u; }

/* ---- element access ----------------------------------------------------------------------- */

__device__ __forceinline__ float4 ld4(const float *p) { return *reinterpret_cast<const float4 *>(p); }
__device__ __forceinline__ float dot4(float4 a, float4 b) { return ((a.x * b.x + a.y * b.y) + a.z * b.z) + a.w * b.w; }

/* 4 state elements at element offset e (a multiple of 4) in storage type DT. */
template <int DT> __device__ __forceinline__ float4 load_state4(const void *S, size_t e)
{
    if (DT == RS_CUDA_F32) return ld4(static_cast<const float *>(S) + e);
    const uint2 w = *reinterpret_cast<const uint2 *>(static_cast<const uint16_t *>(S) + e);
    const uint32_t c[4] = {w.x & 0xFFFFu, w.x >> 16, w.y & 0xFFFFu, w.y >> 16};
    float f[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) f[j] = DT == RS_CUDA_F16 ? rs_codec_fp16_value(c[j]) : rs_codec_bf16_value(c[j]);
    return make_float4(f[0], f[1], f[2], f[3]);
}

/* Store 4 elements; fp16/bf16 with RTN or SR (words w for the 4 elements). */
template <int DT>
__device__ __forceinline__ void store_state4(void *S, size_t e, float4 v, int sr, rs_philox_words w, int k)
{
    if (DT == RS_CUDA_F32) {
        *reinterpret_cast<float4 *>(static_cast<float *>(S) + e) = v;
        return;
    }
    const uint32_t c0 = rs_half_code<DT>(v.x, sr, w.x, k), c1 = rs_half_code<DT>(v.y, sr, w.y, k);
    const uint32_t c2 = rs_half_code<DT>(v.z, sr, w.z, k), c3 = rs_half_code<DT>(v.w, sr, w.w, k);
    *reinterpret_cast<uint2 *>(static_cast<uint16_t *>(S) + e) = make_uint2(c0 | (c1 << 16), c2 | (c3 << 16));
}

/* s' = alpha * s + a * k, elementwise, explicit RN (no contraction). */
__device__ __forceinline__ float4 axpy4(float alpha, float4 s, float a, float4 k)
{
    return make_float4(__fadd_rn(__fmul_rn(alpha, s.x), __fmul_rn(a, k.x)),
                       __fadd_rn(__fmul_rn(alpha, s.y), __fmul_rn(a, k.y)),
                       __fadd_rn(__fmul_rn(alpha, s.z), __fmul_rn(a, k.z)),
                       __fadd_rn(__fmul_rn(alpha, s.w), __fmul_rn(a, k.w)));
}

/* The same per d_k (rs_lv<DK>, rs_cuda_ssm.cuh): d_k = 128 is the float4 code above; 64 a float2 at
 * element e (row start + 2l); 256 two float4 at e and e + 128 (row start + 4l). */
__device__ __forceinline__ float dotv(float4 a, float4 b) { return dot4(a, b); }
__device__ __forceinline__ float dotv(float2 a, float2 b) { return a.x * b.x + a.y * b.y; }
__device__ __forceinline__ float dotv(rs_f8 a, rs_f8 b) { return dot4(a.a, b.a) + dot4(a.b, b.b); }
__device__ __forceinline__ float4 axpyv(float alpha, float4 s, float a, float4 k) { return axpy4(alpha, s, a, k); }
__device__ __forceinline__ float2 axpyv(float alpha, float2 s, float a, float2 k)
{
    return make_float2(__fadd_rn(__fmul_rn(alpha, s.x), __fmul_rn(a, k.x)), __fadd_rn(__fmul_rn(alpha, s.y), __fmul_rn(a, k.y)));
}
__device__ __forceinline__ rs_f8 axpyv(float alpha, rs_f8 s, float a, rs_f8 k)
{
    return rs_f8{axpy4(alpha, s.a, a, k.a), axpy4(alpha, s.b, a, k.b)};
}
template <int DT, int DK> __device__ __forceinline__ rs_lv<DK> load_statev(const void *S, size_t e)
{
    if constexpr (DK == 128) {
        return load_state4<DT>(S, e);
    } else if constexpr (DK == 256) {
        return rs_f8{load_state4<DT>(S, e), load_state4<DT>(S, e + 128)};
    } else {
        if (DT == RS_CUDA_F32) return *reinterpret_cast<const float2 *>(static_cast<const float *>(S) + e);
        const uint32_t w = *reinterpret_cast<const uint32_t *>(static_cast<const uint16_t *>(S) + e);
        return DT == RS_CUDA_F16 ? make_float2(rs_codec_fp16_value(w & 0xFFFFu), rs_codec_fp16_value(w >> 16))
                                 : make_float2(rs_codec_bf16_value(w & 0xFFFFu), rs_codec_bf16_value(w >> 16));
    }
}
/* store with RTN or SR (sr: the kernel's flag): the Philox words of element e = row * DK + col are word
 * e % 4 of block e / 4 under (seed, stream) (the CPU keying, rs_rand_u32) */
template <int DT, int DK>
__device__ __forceinline__ void store_statev(void *S, size_t e, rs_lv<DK> v, int sr, uint64_t seed, uint64_t stream,
                                             int row, int lane, int k)
{
    if constexpr (DK == 128) {
        rs_philox_words w = {0, 0, 0, 0};
        if (DT != RS_CUDA_F32 && sr) w = rs_codec_rand_block(seed, stream, (uint64_t)row * (DK / 4) + lane);
        store_state4<DT>(S, e, v, sr, w, k);
    } else if constexpr (DK == 256) {
        rs_philox_words wa = {0, 0, 0, 0}, wb = {0, 0, 0, 0};
        if (DT != RS_CUDA_F32 && sr) {
            wa = rs_codec_rand_block(seed, stream, (uint64_t)row * (DK / 4) + lane);
            wb = rs_codec_rand_block(seed, stream, (uint64_t)row * (DK / 4) + 32 + lane);
        }
        store_state4<DT>(S, e, v.a, sr, wa, k);
        store_state4<DT>(S, e + 128, v.b, sr, wb, k);
    } else {
        if (DT == RS_CUDA_F32) {
            *reinterpret_cast<float2 *>(static_cast<float *>(S) + e) = v;
            return;
        }
        rs_philox_words w = {0, 0, 0, 0};
        if (sr) w = rs_codec_rand_block(seed, stream, (uint64_t)row * (DK / 4) + (lane >> 1));
        const bool odd = (lane & 1) != 0;
        const uint32_t c0 = rs_half_code<DT>(v.x, sr, odd ? w.z : w.x, k), c1 = rs_half_code<DT>(v.y, sr, odd ? w.w : w.y, k);
        *reinterpret_cast<uint32_t *>(static_cast<uint16_t *>(S) + e) = c0 | (c1 << 16);
    }
}

/* ---- conventional decode ---------------------------------------------------------------------- */

template <int FAM, int DT, int DK>
__global__ void __launch_bounds__(32 * RS_CONV_WARPS) rs_k_conv_decode(rs_ssm_dims d, rs_ssm_step_io io,
                                                                       rs_cuda_conv_state st, int sr)
{
    const int chunks = d.d_v / RS_CONV_ROWS;
    const size_t bh = blockIdx.x / chunks; /* b * H + h */
    const int chunk = blockIdx.x % chunks;
    const int h = (int)(bh % d.heads), b = (int)(bh / d.heads);
    const int g = h / (d.heads / d.key_heads);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row0 = chunk * RS_CONV_ROWS + warp * RS_CONV_ROWS_PER_WARP;

    const size_t sbase = (bh * d.d_v + row0) * DK + rs_loff<DK>(lane);
    rs_lv<DK> s[RS_CONV_ROWS_PER_WARP];
#pragma unroll
    for (int r = 0; r < RS_CONV_ROWS_PER_WARP; ++r) s[r] = load_statev<DT, DK>(st.S, sbase + (size_t)r * DK);

    const size_t kq_off = ((size_t)b * d.key_heads + g) * DK + rs_loff<DK>(lane);
    const rs_lv<DK> k4 = rs_ldv<DK>(io.k + kq_off), q4 = rs_ldv<DK>(io.q + kq_off);
    const float alpha = io.alpha[bh];
    const float beta = FAM == RS_SSM_GDN ? io.beta[bh] : 0.0f;
    const float4 v4 = ld4(io.v + bh * d.d_v + row0); /* the warp's 4 rows (broadcast load) */
    const float vv[4] = {v4.x, v4.y, v4.z, v4.w};

    uint64_t seed = 0, stream = 0;
    if (DT != RS_CUDA_F32 && sr) {
        seed = st.seeds[b];
        stream = rs_codec_stream_id(st.sr_slot, st.layer, (uint32_t)h, (uint64_t)st.steps[b]);
    }
    float o[RS_CONV_ROWS_PER_WARP];
#pragma unroll
    for (int r = 0; r < RS_CONV_ROWS_PER_WARP; ++r) {
        float a = vv[r];
        if (FAM == RS_SSM_GDN) {
            const float sk = rs_dev_warp_sum(dotv(s[r], k4));
            a = __fmul_rn(beta, __fsub_rn(vv[r], __fmul_rn(alpha, sk)));
        }
        const rs_lv<DK> ns = axpyv(alpha, s[r], a, k4);
        o[r] = rs_dev_warp_sum(dotv(ns, q4));
        store_statev<DT, DK>(st.S, sbase + (size_t)r * DK, ns, sr, seed, stream, row0 + r, lane, st.sr_bits);
    }
    if (lane == 0) *reinterpret_cast<float4 *>(io.o + bh * d.d_v + row0) = make_float4(o[0], o[1], o[2], o[3]);
}

static rs_status check_dims(const rs_ssm_dims *d, const rs_ssm_step_io *io, rs_ssm_family fam, const char *who)
{
    RS_CHECK(d && io, RS_E_INVAL, "%s: NULL dims or io", who);
    RS_CHECK(fam == RS_SSM_MAMBA2 || fam == RS_SSM_GDN, RS_E_INVAL, "%s: unknown family %d", who, (int)fam);
    RS_CHECK(d->d_k == 64 || d->d_k == 128 || d->d_k == 256, RS_E_UNSUPPORTED,
             "%s: d_k = %d (the standard decode kernels take d_k = 64, 128 or 256)", who, d->d_k);
    RS_CHECK(d->batch > 0 && d->heads > 0 && d->key_heads > 0 && d->heads % d->key_heads == 0, RS_E_SHAPE,
             "%s: B = %d, H = %d, G = %d (need positive, H %% G == 0)", who, d->batch, d->heads, d->key_heads);
    RS_CHECK(d->d_v > 0 && d->d_v % RS_CONV_ROWS == 0, RS_E_SHAPE, "%s: d_v = %d is not a positive multiple of %d",
             who, d->d_v, RS_CONV_ROWS);
    RS_CHECK(io->alpha && io->v && io->k && io->q && io->o && (fam == RS_SSM_MAMBA2 || io->beta), RS_E_INVAL,
             "%s: NULL input or output array", who);
    return RS_OK;
}

template <int FAM, int DK>
static void conv_launch(const rs_ssm_dims *d, const rs_ssm_step_io *io, const rs_cuda_conv_state *st, int sr,
                        cudaStream_t s)
{
    const unsigned grid = (unsigned)((size_t)d->batch * d->heads * (d->d_v / RS_CONV_ROWS));
    const unsigned threads = 32 * RS_CONV_WARPS;
    switch (st->dtype) {
    case RS_CUDA_F32: rs_k_conv_decode<FAM, RS_CUDA_F32, DK><<<grid, threads, 0, s>>>(*d, *io, *st, 0); break;
    case RS_CUDA_F16: rs_k_conv_decode<FAM, RS_CUDA_F16, DK><<<grid, threads, 0, s>>>(*d, *io, *st, sr); break;
    case RS_CUDA_BF16: rs_k_conv_decode<FAM, RS_CUDA_BF16, DK><<<grid, threads, 0, s>>>(*d, *io, *st, sr); break;
    }
}
template <int FAM>
static void conv_launch_dk(const rs_ssm_dims *d, const rs_ssm_step_io *io, const rs_cuda_conv_state *st, int sr,
                           cudaStream_t s)
{
    if (d->d_k == 64) conv_launch<FAM, 64>(d, io, st, sr, s);
    else if (d->d_k == 256) conv_launch<FAM, 256>(d, io, st, sr, s);
    else conv_launch<FAM, 128>(d, io, st, sr, s);
}

extern "C" rs_status rs_cuda_conv_decode(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                         const rs_cuda_conv_state *st, rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_conv_decode";
    RS_TRY(check_dims(dims, io, fam, who));
    RS_CHECK(st && st->S, RS_E_INVAL, "%s: NULL state", who);
    RS_CHECK(st->dtype == RS_CUDA_F32 || st->dtype == RS_CUDA_F16 || st->dtype == RS_CUDA_BF16, RS_E_INVAL,
             "%s: bad state dtype %d", who, (int)st->dtype);
    const int sr = st->dtype != RS_CUDA_F32 && st->rounding == RS_ROUND_SR;
    RS_CHECK(!sr || (st->sr_bits >= 1 && st->sr_bits <= 32 && st->seeds && st->steps), RS_E_INVAL,
             "%s: SR needs sr_bits in 1..32 (got %d), seeds and steps", who, st->sr_bits);
    if (fam == RS_SSM_MAMBA2) conv_launch_dk<RS_SSM_MAMBA2>(dims, io, st, sr, s);
    else conv_launch_dk<RS_SSM_GDN>(dims, io, st, sr, s);
    return rs_cuda_launch_status(who);
}

/* ---- ReplaySSM decode ------------------------------------------------------------------------- */

/* Per-head coefficients written by the prologue (floats, stride replay_ws(L) per (b, h)):
 *   [0, L)    P_j   decay from record j to the end of the replay (gamma_{j+1:last})
 *   [L, 2L)   cq_j = P_j (k_j . q)
 *   [2L, 3L)  ck_j = P_j (k_j . k)          (GDN)
 *   3L        P_ckpt = gamma_{0:last}
 *   3L+1      k_hn . q (the current record's; GDN)
 * last = fill (Mamba-2 replays this step's record too) or fill - 1 (GDN replays to S_{t-1}). */
__host__ __device__ __forceinline__ int replay_ws(int L) { return 3 * L + 4; }

extern "C" size_t rs_cuda_replay_work_bytes(const rs_ssm_dims *d, int L, int T)
{
    if (!d || L < 1) return 0;
    const size_t C = (size_t)L + (size_t)(T > 0 ? T : 0);
    size_t per = (size_t)replay_ws(L);
    if (T > 0) {
        const size_t v = (size_t)T + 2 * (size_t)T * C + C + 4; /* rs_cuda_verify.cu layout */
        if (v > per) per = v;
    }
    return sizeof(float) * per * (size_t)d->batch * (size_t)d->heads;
}

#define RS_PREP_WARPS 4

/* Prologue, one block per (row b, key head g). Every global load is issued up front (the ring
 * decays of the group's heads, all L slots, and the ring keys, up to 4 records per warp in
 * flight), so a block costs about one memory latency. */
template <int FAM, int RDT, int DK>
__global__ void __launch_bounds__(32 * RS_PREP_WARPS) rs_k_replay_prep(rs_ssm_dims d, rs_ssm_step_io io,
                                                                       rs_cuda_replay_state st)
{
    extern __shared__ float psm[];
    float *kq_s = psm, *kk_s = psm + RS_CUDA_LMAX, *al_s = psm + 2 * RS_CUDA_LMAX; /* al_s [grp][L] */
    const int L = st.L;
    rs_pdl_trigger(); /* the v4 read (launched with rs_launch_pdl) may start: it waits before it reads `work` */
    const unsigned kg = blockIdx.x; /* b * G + g */
    const unsigned b = kg / (unsigned)d.key_heads, g = kg % (unsigned)d.key_heads;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int grp = d.heads / d.key_heads;
    const size_t bh0 = (size_t)b * d.heads + (size_t)g * grp; /* first value head of the group */
    for (int i = threadIdx.x; i < grp * L; i += blockDim.x) al_s[i] = st.ring_alpha[bh0 * L + i];
    const int hn = st.fill[b];
    const rs_lv<DK> q4 = rs_ldv<DK>(io.q + (size_t)kg * DK + rs_loff<DK>(lane));
    rs_lv<DK> kc = rs_ldv<DK>(io.k + (size_t)kg * DK + rs_loff<DK>(lane));
    kc = rs_ring_roundv<RDT>(kc);
    if (warp == 0) rs_ring_stv<RDT>(st.ring_k, ((size_t)kg * L + hn) * DK + rs_loff<DK>(lane), kc);
    for (int j0 = warp; j0 <= hn; j0 += 4 * RS_PREP_WARPS) {
        rs_lv<DK> kj[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) { /* loads first */
            const int j = j0 + u * RS_PREP_WARPS;
            kj[u] = j < hn ? rs_ring_kv<RDT, DK>(st.ring_k, ((size_t)kg * L + j) * DK, lane) : kc;
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int j = j0 + u * RS_PREP_WARPS;
            float x[2] = {rs_dotv(kj[u], q4), rs_dotv(kj[u], kc)};
            rs_dev_warp_reduce<2>(x, lane); /* lanes 0-15: k_j.q, lanes 16-31: k_j.k */
            if (j <= hn) {
                if (lane == 0) kq_s[j] = x[0];
                if (lane == 16) kk_s[j] = x[0];
            }
        }
    }
    __syncthreads();
    const int last = FAM == RS_SSM_MAMBA2 ? hn : hn - 1;
    const int WS = replay_ws(L);
    for (int hh = warp; hh < grp; hh += RS_PREP_WARPS) {
        const size_t bh = bh0 + hh;
        const float acur = io.alpha[bh];
        const float *al = al_s + hh * L;
        /* suffix products in float64 (engine/rs_gamma.h), a warp scan over the records */
        const double alo = lane <= last ? (double)(lane == hn ? acur : al[lane]) : 1.0;
        const double ahi = lane + 32 <= last ? (double)(lane + 32 == hn ? acur : al[lane + 32]) : 1.0;
        double g0, g1, gc;
        rs_suffix64(alo, ahi, last >= 32, lane, g0, g1, gc);
        float *w = st.work + bh * WS;
        if (lane <= last) {
            const float P = (float)g0;
            w[lane] = P;
            w[L + lane] = P * kq_s[lane];
            if (FAM == RS_SSM_GDN) w[2 * L + lane] = P * kk_s[lane];
        }
        if (lane + 32 <= last) {
            const float P = (float)g1;
            w[lane + 32] = P;
            w[L + lane + 32] = P * kq_s[lane + 32];
            if (FAM == RS_SSM_GDN) w[2 * L + lane + 32] = P * kk_s[lane + 32];
        }
        if (lane == 0) {
            w[3 * L] = (float)gc;
            w[3 * L + 1] = kq_s[hn];
            st.ring_alpha[bh * L + hn] = acur;
            if (FAM == RS_SSM_GDN && st.ring_beta) st.ring_beta[bh * L + hn] = io.beta[bh]; /* two-precision records */
        }
    }
}

/* the lane's ring values (records lane and lane + 32) for rows [row, row + N) */
template <int FAM, int RDT, int N, bool TWO>
__device__ __forceinline__ void replay_vals(const rs_ssm_step_io &io, const rs_cuda_replay_state &st, size_t bh,
                                            int d_v, int row, int lane, int hn, int last, float *v0, float *v1)
{
    const size_t vb = bh * (size_t)st.L * d_v + row;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int j = lane + 32 * half;
        float *v = half ? v1 : v0;
        if (half && !TWO) {
#pragma unroll
            for (int r = 0; r < N; ++r) v[r] = 0.f;
            continue;
        }
        if (j <= last) {
            if (FAM == RS_SSM_MAMBA2 && j == hn) {
                rs_ring_ld<RS_CUDA_F32, N>(io.v, bh * d_v + row, v);
#pragma unroll
                for (int r = 0; r < N; ++r) v[r] = rs_ring_round<RDT>(v[r]);
            } else {
                rs_ring_ld<RDT, N>(st.ring_v, vb + (size_t)j * d_v, v);
            }
        } else {
#pragma unroll
            for (int r = 0; r < N; ++r) v[r] = 0.f;
        }
    }
}

/* ---- the prologue's work inside the main kernels (one fused launch) ---------------------------------
 * Each warp forms the coefficients of its own head, which rs_k_replay_prep formed once per (row, key
 * head): for ~16 warps of a key group (Nemotron-3-Super: 16 value heads; Qwen3.5-4B: 2 heads x 4 slices)
 * the key dots are formed 16 times instead of once, from ring keys that sit in the L2 (4 KB per key head
 * at L = 16, bf16) - cheaper than a second launch and its memory round trips, which bound the step at
 * small B. Arithmetic as the prologue's: the same dot products (another summation tree: fp32 noise), the
 * same float64 suffix scan rounded once. */

/* The key dots of a warp's key head kg: lane j ends with kq = k_j . q and (GDN) kk = k_j . k for record
 * j = lane (q0, kk0) and j = lane + 32 (q1, kk1; TWO), j <= hn, where record hn is this step's key kcur
 * (already rounded to the ring type; it is not read back from the ring, whose slot hn one warp of the
 * launch writes) and records j < hn are ring_k's. 16 records per round: the lane's 4-column partial dots,
 * one transposed reduction (Mamba-2 16 values, GDN 32: the q dots and the k dots), then one or two
 * shuffles bring record j's sums to lane j. Lanes past hn get zeros. */
/* KPRE (SPEC 2, bf16 ring, d_k = 128, L <= 16): keys 0..14 already loaded as the lane's raw bf16 pairs */
template <int FAM, int RDT, bool TWO, int DK = 128, bool KPRE = false>
__device__ __forceinline__ void replay_key_dots(const rs_cuda_replay_state &st, size_t kg, int hn, int lane, rs_lv<DK> q4,
                                                rs_lv<DK> kcur, float &q0, float &q1, float &kk0, float &kk1,
                                                const uint2 *kraw = nullptr)
{
    static_assert(!KPRE || (RDT == RS_CUDA_BF16 && DK == 128 && !TWO), "KPRE: bf16 ring, d_k = 128, L <= 16");
    constexpr int NV = FAM == RS_SSM_GDN ? 32 : 16;
    const int L = st.L, rounds = hn / 16 + 1; /* records 0..hn */
    q0 = q1 = kk0 = kk1 = 0.f;
#pragma unroll 1
    for (int r = 0; r < (TWO ? 4 : 2) && r < rounds; ++r) {
        float x[NV];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const int j = 16 * r + i;
            rs_lv<DK> kj = kcur;
            if constexpr (KPRE) { /* r = 0 only (L <= 16), so j = i */
                if (j < hn) kj = rs_bf16x4(kraw[i]);
            } else if (j < hn) {
                kj = rs_ring_kv<RDT, DK>(st.ring_k, (kg * L + j) * DK, lane);
            }
            const bool on = j <= hn;
            x[i] = on ? rs_dotv(kj, q4) : 0.f;
            if constexpr (FAM == RS_SSM_GDN) x[16 + i] = on ? rs_dotv(kj, kcur) : 0.f;
        }
        rs_dev_warp_reduce<NV>(x, lane); /* lane l: the sum of value l (GDN) or l / 2 (Mamba-2) */
        const int src = FAM == RS_SSM_GDN ? (lane & 15) : 2 * (lane & 15);
        const float sq = __shfl_sync(RS_FULL_MASK, x[0], src);
        const float sk = FAM == RS_SSM_GDN ? __shfl_sync(RS_FULL_MASK, x[0], src + 16) : 0.f;
        if ((lane >> 4) == (r & 1)) { /* record 16 r + (lane & 15) is the lane's (r < 2) or its second (r >= 2) */
            if (r < 2) q0 = sq, kk0 = sk;
            else q1 = sq, kk1 = sk;
        }
    }
}

/* A value head's coefficients from the key dots (what rs_k_replay_prep writes to `work`): lane j gets
 * P = gamma_{j+1:last} (the float64 suffix products of rs_suffix64 rounded once), c = P kq and (GDN)
 * e = P kk for j = lane (P0, c0, e0) and lane + 32 (TWO), zero past last; pck = gamma_{0:last}. The
 * decays: ring_alpha[j] for j < hn, this step's acur for j == hn (Mamba-2; GDN's last is hn - 1), so
 * ring_alpha's slot hn, which the launch writes, is not read. */
template <int FAM, bool TWO, bool PRE = false>
__device__ __forceinline__ void replay_head_coefs(const rs_cuda_replay_state &st, size_t bh, int hn, int last, int lane,
                                                  float acur, float q0, float q1, float kk0, float kk1, float &P0,
                                                  float &P1, float &c0, float &c1, float &e0, float &e1, float &pck,
                                                  float apre = 0.f)
{
    const int L = st.L;
    const double alo = lane <= last ? (double)(lane == hn ? acur : PRE ? apre : st.ring_alpha[bh * L + lane]) : 1.0;
    const double ahi =
        TWO && lane + 32 <= last ? (double)(lane + 32 == hn ? acur : st.ring_alpha[bh * L + lane + 32]) : 1.0;
    double g0, g1, gc;
    rs_suffix64(alo, ahi, TWO && last >= 32, lane, g0, g1, gc);
    P0 = P1 = c0 = c1 = e0 = e1 = 0.f;
    if (lane <= last) {
        P0 = (float)g0, c0 = P0 * q0;
        if (FAM == RS_SSM_GDN) e0 = P0 * kk0;
    }
    if (TWO && lane + 32 <= last) {
        P1 = (float)g1, c1 = P1 * q1;
        if (FAM == RS_SSM_GDN) e1 = P1 * kk1;
    }
    pck = (float)gc;
}

/* Blocks of 128 threads per SM that a replay kernel keeps (ptxas caps its registers at 65536 / (128 n);
 * 1 = no cap). Mamba-2 5 blocks (<= 102 registers: 20 warps an SM), GDN 4 (<= 128: 16 warps).
 * - fused kernels (L <= 32, <= 4 rows a warp): the key dots hold up to 16 ring keys in flight next to the
 *   first chunk's loads, which without a cap raised the registers above those of the separate-prologue
 *   kernels and cost occupancy (Mamba-2 fp32 read: 96 -> 112 registers, 20 -> 16 warps per SM; GDN nvfp4
 *   read: 127 -> 159, 16 -> 12).
 * - separate-prologue kernels (compiled from the same source as the fused ones) hold more registers
 *   uncapped (Mamba-2 fp32 read 113, v3 fp16 109, v3 nvfp4 142, v4 reads 123, GDN v4 nvfp4 141) and so
 *   fewer warps an SM. Measured with and without the cap (H200, docs/kernels.md): v4 nvfp4 0.90-0.99x the
 *   time on the four shapes (capped); v3 fp16 / nvfp4 on Mamba-2 0.85x at 5 / 4 blocks (capped); v4 fp16 /
 *   fp8 1.02-1.03x (spill loads in the chunk loop, no warps gained: shared memory limits them; not capped);
 *   the fp32 read 0.97-0.99x at B = 32-512 but 1.09x at Super's B = 8, where AUTO runs it (not capped). v3
 *   fp8 (167 registers) and GDN v3 (<= 128) lose no warps, so they keep none.
 * d_k = 256 and L > 32 (two records a lane): no cap. */
template <int FAM, int CKF, int RPW, bool TWO, bool FUSED, int DK = 128>
__host__ __device__ constexpr int rs_replay_minb()
{
    constexpr int cap = FAM == RS_SSM_MAMBA2 ? 5 : 4;
    if (DK == 256 || TWO) return 1;
    if (FUSED) return RPW <= 4 ? cap : 1; /* fused fp32 read */
    if (CKF == RS_FMT_FP32) return 1;     /* separate-prologue fp32 read: the cap lost at B = 8 */
    if (FAM != RS_SSM_MAMBA2) return 1;                          /* GDN v3: 16 warps either way */
    if (CKF == RS_FMT_FP16 || CKF == RS_FMT_BF16) return 5;       /* Mamba-2 v3, 8 rows */
    return CKF == RS_FMT_NVFP4 ? 4 : 1;                          /* Mamba-2 v3, 16 rows; fp8: 167 either way */
}
/* the v4 read (rs_k_replay_lpw, 4 rows a lane's slice of a chunk): fused, or the separate prologue's nvfp4 */
template <int FAM, int CKF, bool TWO, bool FUSED> __host__ __device__ constexpr int rs_lpw_minb()
{
    return TWO ? 1 : FUSED || CKF == RS_FMT_NVFP4 ? (FAM == RS_SSM_MAMBA2 ? 5 : 4) : 1;
}

/* This step's k rounded to the ring type, the lane's 4 columns */
template <int RDT, int DK = 128>
__device__ __forceinline__ rs_lv<DK> replay_kcur(const rs_ssm_step_io &io, size_t kg, int lane)
{
    const rs_lv<DK> k = rs_ldv<DK>(io.k + kg * DK + rs_loff<DK>(lane));
    return rs_ring_roundv<RDT>(k);
}

/* The prologue's stores, by one warp of each (row, key head) (kwriter: this step's key into ring_k slot
 * hn) and of each value head (lane 0: alpha, and GDN's beta for two-precision records, into slot hn). No
 * warp of the launch reads these slots (the key and decay of record hn come from the inputs); the later
 * launches of the step (two-precision recompute, checkpoint rounding) and the next steps do. */
template <int FAM, int RDT, int DK = 128>
__device__ __forceinline__ void replay_store_record(const rs_ssm_step_io &io, const rs_cuda_replay_state &st, size_t bh,
                                                    size_t kg, int hn, int lane, bool kwriter, rs_lv<DK> kcur)
{
    const int L = st.L;
    if (kwriter) rs_ring_stv<RDT>(st.ring_k, (kg * L + hn) * DK + rs_loff<DK>(lane), kcur);
    if (lane == 0) {
        st.ring_alpha[bh * L + hn] = io.alpha[bh];
        if (FAM == RS_SSM_GDN && st.ring_beta) st.ring_beta[bh * L + hn] = io.beta[bh];
    }
}

/* L2 prefetch of the fp32 non-flush read (the main kernel's PFD, chosen by rs_cuda_launch_opts.replay_l2pf; by
 * default where the grid is more than one wave): the chunk D past the register prefetch (one chunk ahead) requested
 * into the L2 by one lane (rs_l2_prefetch: no registers held), so that more of the checkpoint is in flight than a
 * warp's two chunks of registers. Nsight Compute of the non-flush step (Nemotron-3-Super, B = 256): 79.7 % of DRAM,
 * 4.7 warps a scheduler, 0.47 eligible, 69 % of the stalls on the loads' scoreboard: latency-bound at 20 warps an
 * SM. The non-flush loop alone at D = 2 on grids of more than one wave measured B = 128-512 cycles 0.93-1.00x,
 * never slower; prefetching the flush rows too, or at one wave, or D = 4 was slower somewhere (H200,
 * docs/kernels.md). rs_l2pf_start: chunks 2 .. D of [r_begin, r_end) (chunk 1 is the loop's first register
 * prefetch); rs_l2pf_step at chunk row: chunk row / RPW + 1 + D. */
template <int RPW, int DK, int D>
__device__ __forceinline__ void rs_l2pf_start(const float *S, size_t row0, int r_begin, int r_end, int lane)
{
    if constexpr (D > 1) {
        const int a = r_begin + 2 * RPW, e = min(r_end, r_begin + (D + 1) * RPW);
        if (lane == 0 && a < e) rs_l2_prefetch(S + (row0 + a) * DK, (unsigned)((e - a) * DK * 4));
    }
}
template <int RPW, int DK, int D>
__device__ __forceinline__ void rs_l2pf_step(const float *S, size_t row0, int row, int r_end, int lane)
{
    if constexpr (D > 0) {
        const int p = row + (D + 1) * RPW;
        if (lane == 0 && p < r_end) rs_l2_prefetch(S + (row0 + p) * DK, (unsigned)(RPW * DK * 4));
    }
}

/* Flush rows [r_begin, r_end) of head bh: S = P_ckpt S_ckpt + sum_j P_j v_j k_j^T (GDN: then the
 * current token's u from S_{t-1} k), o = S q, S_ckpt <- S (fp32, 4 rows a chunk, the next chunk
 * prefetched). Shared by rs_k_replay_main and the wide low-precision kernel (rs_cuda_lpread.cuh).
 * A rounded checkpoint (rs_cuda_ckpt_round) is a separate pass, rs_k_ckpt_round, after the launch. */
template <int FAM, int RDT, bool TWO, bool FUSED = false, int DK = 128>
__device__ __forceinline__ void replay_flush_rows(const rs_ssm_step_io &io, const rs_cuda_replay_state &st, size_t bh,
                                                  size_t kg, int dv, int r_begin, int r_end, int lane, int hn, int last,
                                                  float P0, float P1, float pck, rs_lv<DK> kc4, rs_lv<DK> q4, float alpha,
                                                  float beta, rs_lv<DK> kcur = rs_lv<DK>{})
{
    /* FUSED: record hn's key (Mamba-2 replays it) is kcur, not ring_k's slot hn (written in this launch) */
    const int L = st.L;
    constexpr int RF = 4;
    rs_lv<DK> cs[RF], ns[RF];
    float cv0[RF], cv1[RF], nv0[RF], nv1[RF], cvv[RF], nvv[RF];
#pragma unroll
    for (int r = 0; r < RF; ++r) cs[r] = rs_ldv<DK>(st.S_ckpt + (bh * dv + r_begin + r) * DK + rs_loff<DK>(lane));
    replay_vals<FAM, RDT, RF, TWO>(io, st, bh, dv, r_begin, lane, hn, last, cv0, cv1);
    if (FAM == RS_SSM_GDN) rs_ring_ld<RS_CUDA_F32, RF>(io.v, bh * dv + r_begin, cvv);
    for (int row = r_begin; row < r_end; row += RF) {
        const bool more = row + RF < r_end;
        if (more) {
#pragma unroll
            for (int r = 0; r < RF; ++r) ns[r] = rs_ldv<DK>(st.S_ckpt + (bh * dv + row + RF + r) * DK + rs_loff<DK>(lane));
            replay_vals<FAM, RDT, RF, TWO>(io, st, bh, dv, row + RF, lane, hn, last, nv0, nv1);
            if (FAM == RS_SSM_GDN) rs_ring_ld<RS_CUDA_F32, RF>(io.v, bh * dv + row + RF, nvv);
        }
        const size_t grow0 = bh * dv + row;
        float cp0[RF], cp1[RF];
#pragma unroll
        for (int r = 0; r < RF; ++r) cp0[r] = P0 * cv0[r], cp1[r] = P1 * cv1[r], cs[r] = rs_scalev(pck, cs[r]);
        int j = 0;
        for (; j + 4 <= last + 1; j += 4) { /* 4 key loads in flight */
            rs_lv<DK> kj[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                if (FUSED && j + u == hn) kj[u] = kcur;
                else kj[u] = rs_ring_kv<RDT, DK>(st.ring_k, (kg * L + j + u) * DK, lane);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
                for (int r = 0; r < RF; ++r)
                    cs[r] = rs_fmav(__shfl_sync(RS_FULL_MASK, j + u < 32 ? cp0[r] : cp1[r], (j + u) & 31), kj[u], cs[r]);
        }
        for (; j <= last; ++j) {
            const rs_lv<DK> kj = FUSED && j == hn ? kcur : rs_ring_kv<RDT, DK>(st.ring_k, (kg * L + j) * DK, lane);
#pragma unroll
            for (int r = 0; r < RF; ++r) cs[r] = rs_fmav(__shfl_sync(RS_FULL_MASK, j < 32 ? cp0[r] : cp1[r], j & 31), kj, cs[r]);
        }
        if (FAM == RS_SSM_GDN) {
            float x[RF];
#pragma unroll
            for (int r = 0; r < RF; ++r) x[r] = rs_dotv(cs[r], kc4);
            rs_dev_warp_reduce<RF>(x, lane);
#pragma unroll
            for (int r = 0; r < RF; ++r) {
                const float sk = __shfl_sync(RS_FULL_MASK, x[0], r * (32 / RF));
                const float u = rs_ring_round<RDT>(beta * (cvv[r] - alpha * sk));
                cs[r] = rs_fmav(u, kc4, rs_scalev(alpha, cs[r]));
            }
        }
        float x[RF];
#pragma unroll
        for (int r = 0; r < RF; ++r) {
            x[r] = rs_dotv(cs[r], q4);
            rs_stv(st.S_ckpt + (grow0 + r) * DK + rs_loff<DK>(lane), cs[r]);
        }
        rs_dev_warp_reduce<RF>(x, lane);
        if (lane % (32 / RF) == 0) io.o[grow0 + lane / (32 / RF)] = x[0];
        if (more) {
#pragma unroll
            for (int r = 0; r < RF; ++r) cs[r] = ns[r], cv0[r] = nv0[r], cv1[r] = nv1[r], cvv[r] = nvv[r];
        }
    }
}

/* GDN flush with two-precision records (rs_cuda_replay_state.ring_vraw / ring_beta; the engine's
 * split policy, rs_replay_gdn_fold_recompute then this step), its own launch after the main kernel
 * (which leaves these rows alone, so its registers and the non-flush path do not change): a warp
 * per head of a flushing row; it starts from S_ckpt and replays the hn committed tokens one by one
 * from their raw (alpha, beta, v, k), u_j = beta_j (v_j - alpha_j S k_j) (one transposed warp
 * reduction of the chunk's 4 rows per record), S = alpha_j S + u_j k_j^T, then this step the same
 * way; o = S q; S_ckpt <- S. The cached u of the ring (from the low-precision reads) are not read.
 * u_j is rounded to the ring type, as every record is. Sequential in j: hn + 1 reductions per 4
 * rows, paid at flushes only. */
template <int RDT, bool TWO, int DK>
__global__ void __launch_bounds__(128) rs_k_replay_flush_recompute(rs_ssm_dims d, rs_ssm_step_io io,
                                                                   rs_cuda_replay_state st)
{
    const int lane = threadIdx.x & 31;
    const size_t bh = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (bh >= (size_t)d.batch * d.heads) return; /* whole warps */
    const size_t b = bh / d.heads, kg = b * d.key_heads + (bh % d.heads) / (d.heads / d.key_heads);
    const int L = st.L, hn = st.fill[b], dv = d.d_v;
    if (hn + 1 != L) return; /* not flushing: the main kernel did the row */
    const rs_lv<DK> q4 = rs_ldv<DK>(io.q + kg * DK + rs_loff<DK>(lane));
    const rs_lv<DK> kc4 = rs_ring_kv<RDT, DK>(st.ring_k, (kg * L + hn) * DK, lane); /* stored by the prologue */
    const float alpha = io.alpha[bh], beta = io.beta[bh];
    const int r_begin = 0, r_end = dv;
    constexpr int RF = 4;
    /* lane j holds record j's decay and beta (and j + 32's) */
    const float a0 = lane < hn ? st.ring_alpha[bh * L + lane] : 1.f, b0 = lane < hn ? st.ring_beta[bh * L + lane] : 0.f;
    const float a1 = TWO && lane + 32 < hn ? st.ring_alpha[bh * L + lane + 32] : 1.f;
    const float b1 = TWO && lane + 32 < hn ? st.ring_beta[bh * L + lane + 32] : 0.f;
    for (int row = r_begin; row < r_end; row += RF) {
        rs_lv<DK> s[RF];
#pragma unroll
        for (int r = 0; r < RF; ++r) s[r] = rs_ldv<DK>(st.S_ckpt + (bh * dv + row + r) * DK + rs_loff<DK>(lane));
        for (int j = 0; j <= hn; ++j) {
            const bool cur = j == hn; /* this step: its k, alpha, beta, v from the inputs */
            rs_lv<DK> kj;
            float vr[RF], aj, bj;
            if (cur) {
                kj = kc4, aj = alpha, bj = beta;
                rs_ring_ld<RS_CUDA_F32, RF>(io.v, bh * dv + row, vr);
            } else {
                kj = rs_ring_kv<RDT, DK>(st.ring_k, (kg * L + j) * DK, lane);
                aj = __shfl_sync(RS_FULL_MASK, j < 32 ? a0 : a1, j & 31);
                bj = __shfl_sync(RS_FULL_MASK, j < 32 ? b0 : b1, j & 31);
                rs_ring_ld<RDT, RF>(st.ring_vraw, (bh * L + j) * dv + row, vr);
            }
            float x[RF];
#pragma unroll
            for (int r = 0; r < RF; ++r) x[r] = rs_dotv(s[r], kj);
            rs_dev_warp_reduce<RF>(x, lane);
#pragma unroll
            for (int r = 0; r < RF; ++r) {
                const float sk = __shfl_sync(RS_FULL_MASK, x[0], r * (32 / RF));
                const float u = rs_ring_round<RDT>(bj * (vr[r] - aj * sk));
                s[r] = rs_fmav(u, kj, rs_scalev(aj, s[r]));
            }
        }
        float x[RF];
#pragma unroll
        for (int r = 0; r < RF; ++r) {
            x[r] = rs_dotv(s[r], q4);
            rs_stv(st.S_ckpt + (bh * dv + row + r) * DK + rs_loff<DK>(lane), s[r]);
        }
        rs_dev_warp_reduce<RF>(x, lane);
        if (lane % (32 / RF) == 0) io.o[bh * dv + row + lane / (32 / RF)] = x[0];
    }
}

/* the wide low-precision read kernel (v4), which calls replay_flush_rows for its flush rows */
#include "rs_cuda_lpread.cuh"

/* FUSED (fp32 reads): no prologue launch; the warp forms its coefficients itself
 * (replay_key_dots, replay_head_coefs) after issuing its first chunk's loads, and the warps of part 0
 * store this step's record (replay_store_record). !FUSED: the coefficients from `work`.
 * SPEC >= 1 (fused, L <= 16; rs_cuda_launch_opts.replay_spec): the loads of the first chunk that the
 * fill only selects from go out before the fill is known: the checkpoint rows, the ring values of every
 * slot (records 0..L-1 of the chunk's rows), the ring decays and this step's v into registers. The ring keys
 * are not among them: held in registers, 15 keys made ptxas spill 60-148 bytes at the kernels' register caps,
 * and as L1 prefetches they made the B = 1 step 1.08-1.18x slower than without (H200, docs/kernels.md; with
 * these early loads 0.92x the step's time). A one-wave grid
 * (B = 1) is a dependent chain a warp, and this takes the fill's round trip off it (and the decays' after the
 * key dots); the slots past the fill (and slot hn, which this launch writes) are loaded and dropped by selects
 * (never multiplied: a stale slot may hold anything). More loads than needed, so only where the grid is one
 * wave (replay_launch). SPEC 2 (bf16 ring, d_k = 128; RS_CUDA_SPEC_KEYS, not the default: H200 0.97-0.99x of
 * level 1 on three paper shapes, 1.06x slower on Qwen3.5-122B): the keys too, as the lane's raw bf16 pairs
 * (2 registers a key instead of 4: Mamba-2 128 registers, 4 bytes spilled; GDN 40). */
template <int FAM, int RDT, int CKF, int RPW, bool TWO /* L > 32: lanes hold two records */, bool FUSED, int DK,
          int SPEC = 0, int PFD = 0 /* the non-flush loop's L2 prefetch distance (replay_l2pf); 0: none */>
__global__ void __launch_bounds__(128, SPEC ? 4 : rs_replay_minb<FAM, CKF, RPW, TWO, FUSED, DK>()) rs_k_replay_main(rs_ssm_dims d, rs_ssm_step_io io, rs_cuda_replay_state st,
                                                        rs_ckpt_src src, rs_geom gm)
{
    /* SPEC runs one wave (<= 16 warps an SM): 4 blocks an SM suffice, so up to 128 registers (Mamba-2's cap of 5
     * blocks made ptxas spill 4 bytes with a bf16 ring) */
    static_assert(!SPEC || (FUSED && !TWO && CKF == RS_FMT_FP32 && DK != 256), "SPEC: the fused fp32 read, L <= 16");
    const int lane = threadIdx.x & 31;
    const unsigned gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (gw >= gm.BH * gm.wph) return; /* whole warps */
    const unsigned bhu = gw / gm.wph, part = gw % gm.wph;
    const unsigned hd = bhu % gm.H, b = bhu / gm.H;
    const size_t bh = bhu, kg = (size_t)b * gm.G + hd / gm.grp;
    const int dv = d.d_v, L = st.L;
    const int r_begin = (int)part * gm.rows, r_end = r_begin + gm.rows;
    const int hn = st.fill[b];
    const rs_lv<DK> q4 = rs_ldv<DK>(io.q + kg * DK + rs_loff<DK>(lane));
    /* SPEC: the first chunk's loads that need no fill (above); zero-size arrays are not C++, so size 1 when off */
    constexpr int NRP = SPEC ? RPW : 1;
    constexpr int SPAN = 16 / RPW > 0 ? 16 / RPW : 1; /* GDN: lanes per row value after the reduction */
    rs_raw<CKF, DK> spc[NRP];
    float rvp[NRP], ivp[NRP], apre = 0.f, cvip = 0.f;
    constexpr bool KPRE = SPEC == 2;
    static_assert(!KPRE || (RDT == RS_CUDA_BF16 && DK == 128), "SPEC 2: bf16 ring, d_k = 128");
    uint2 kraw[KPRE ? 15 : 1];
    if constexpr (SPEC) {
#pragma unroll
        for (int r = 0; r < RPW; ++r) spc[r] = rs_raw_load<CKF, DK>(src, bh * dv + r_begin + r, lane);
        if (lane < L) rs_ring_ld<RDT, RPW>(st.ring_v, (bh * L + lane) * dv + r_begin, rvp);
        else
#pragma unroll
            for (int r = 0; r < RPW; ++r) rvp[r] = 0.f;
        if (FAM == RS_SSM_MAMBA2) rs_ring_ld<RS_CUDA_F32, RPW>(io.v, bh * dv + r_begin, ivp);
        else cvip = io.v[bh * dv + r_begin + (lane / SPAN) % RPW];
        if (lane < L) apre = st.ring_alpha[bh * L + lane];
        if constexpr (KPRE) { /* keys 0..L-2 (slot hn's, written by this launch, is dropped by the dots' select) */
            const uint16_t *kb = static_cast<const uint16_t *>(st.ring_k) + kg * L * DK + 4 * lane;
#pragma unroll
            for (int i = 0; i < 15; ++i)
                kraw[i] = i < L - 1 ? *reinterpret_cast<const uint2 *>(kb + (size_t)i * DK) : make_uint2(0u, 0u);
        }
    }
    const bool flush = hn + 1 == L;
    const int last = FAM == RS_SSM_MAMBA2 ? hn : hn - 1;
    const float *w = FUSED ? nullptr : st.work + bh * replay_ws(L);
    float P0 = 0.f, P1 = 0.f, c0 = 0.f, c1 = 0.f, k0 = 0.f, k1 = 0.f;
    if constexpr (!FUSED) {
        rs_pdl_wait(); /* the prologue's programmatic dependent (rs_launch_pdl): `work` and ring_k's slot hn are its */
        if (lane <= last) {
            P0 = w[lane], c0 = w[L + lane];
            if (FAM == RS_SSM_GDN) k0 = w[2 * L + lane];
        }
        if (TWO && lane + 32 <= last) {
            P1 = w[lane + 32], c1 = w[L + lane + 32];
            if (FAM == RS_SSM_GDN) k1 = w[2 * L + lane + 32];
        }
    }
    float pck = FUSED ? 0.f : w[3 * L];
    rs_lv<DK> kc4 = rs_zerov<DK>(), kcur = kc4;
    float alpha = 0.f, beta = 0.f, kqc = 0.f;
    if constexpr (FUSED) {
        kcur = replay_kcur<RDT, DK>(io, kg, lane);
        if (FAM == RS_SSM_GDN) kc4 = kcur;
        if (part == 0) replay_store_record<FAM, RDT, DK>(io, st, bh, kg, hn, lane, hd % gm.grp == 0, kcur);
    }
    if (FAM == RS_SSM_GDN) {
        if constexpr (!FUSED) kc4 = rs_ring_kv<RDT, DK>(st.ring_k, (kg * L + hn) * DK, lane);
        alpha = io.alpha[bh], beta = io.beta[bh];
        if constexpr (!FUSED) kqc = w[3 * L + 1];
    }
    /* FUSED: the prologue's coefficients, formed by this warp (flush rows: the decay products only) */
    auto fused_coefs = [&](bool dots) {
        float q0 = 0.f, q1 = 0.f, kk0 = 0.f, kk1 = 0.f;
        if (dots) replay_key_dots<FAM, RDT, TWO, DK, KPRE>(st, kg, hn, lane, q4, kcur, q0, q1, kk0, kk1, kraw);
        replay_head_coefs<FAM, TWO, SPEC != 0>(st, bh, hn, last, lane, io.alpha[bh], q0, q1, kk0, kk1, P0, P1, c0, c1, k0,
                                          k1, pck, apre);
        if (FAM == RS_SSM_GDN) kqc = __shfl_sync(RS_FULL_MASK, hn < 32 ? q0 : q1, hn & 31);
    };

    if (!flush) {
        /* ---- non-flush: o from one read of the checkpoint (any format) ---- */
        const float sdec = CKF == RS_FMT_NVFP4 ? src.sdec[bh] : 0.f;
        rs_raw<CKF, DK> cur[RPW], nxt[RPW];
        float cv0[RPW], cv1[RPW], nv0[RPW], nv1[RPW], cvi = 0.f, nvi = 0.f;
        if constexpr (SPEC) { /* the loads above, selected by the fill (replay_vals' choice) */
#pragma unroll
            for (int r = 0; r < RPW; ++r) {
                cur[r] = spc[r], cv1[r] = 0.f;
                cv0[r] = lane > last ? 0.f : FAM == RS_SSM_MAMBA2 && lane == hn ? rs_ring_round<RDT>(ivp[r]) : rvp[r];
            }
            cvi = cvip;
        } else {
#pragma unroll
            for (int r = 0; r < RPW; ++r) cur[r] = rs_raw_load<CKF, DK>(src, bh * dv + r_begin + r, lane);
            replay_vals<FAM, RDT, RPW, TWO>(io, st, bh, dv, r_begin, lane, hn, last, cv0, cv1);
            if (FAM == RS_SSM_GDN) cvi = io.v[bh * dv + r_begin + (lane / SPAN) % RPW];
        }
        if constexpr (FUSED) fused_coefs(true); /* while the first chunk is in flight */
        if constexpr (CKF == RS_FMT_FP32) rs_l2pf_start<RPW, DK, PFD>(src.f32, bh * dv, r_begin, r_end, lane);
        for (int row = r_begin; row < r_end; row += RPW) {
            const bool more = row + RPW < r_end;
            if constexpr (CKF == RS_FMT_FP32) rs_l2pf_step<RPW, DK, PFD>(src.f32, bh * dv, row, r_end, lane);
            if (more) { /* prefetch the next chunk */
#pragma unroll
                for (int r = 0; r < RPW; ++r) nxt[r] = rs_raw_load<CKF, DK>(src, bh * dv + row + RPW + r, lane);
                replay_vals<FAM, RDT, RPW, TWO>(io, st, bh, dv, row + RPW, lane, hn, last, nv0, nv1);
                if (FAM == RS_SSM_GDN) nvi = io.v[bh * dv + row + RPW + (lane / SPAN) % RPW];
            }
            const size_t grow0 = bh * dv + row;
            if constexpr (FAM == RS_SSM_MAMBA2) {
                float x[RPW];
#pragma unroll
                for (int r = 0; r < RPW; ++r) {
                    float m;
                    const rs_lv<DK> sv = rs_raw_dec<CKF, DK>(cur[r], sdec, m);
                    x[r] = __fmaf_rn(c1, cv1[r], __fmaf_rn(c0, cv0[r], __fmul_rn(__fmul_rn(pck, m), rs_dotv(sv, q4))));
                }
                rs_dev_warp_reduce<RPW>(x, lane);
                if (lane % (32 / RPW) == 0) io.o[grow0 + lane / (32 / RPW)] = x[0];
                if (lane == (hn & 31)) { /* the lane holding this step's record stores it */
                    if (hn < 32) rs_ring_st<RDT, RPW>(st.ring_v, (bh * L + hn) * dv + row, cv0);
                    else rs_ring_st<RDT, RPW>(st.ring_v, (bh * L + hn) * dv + row, cv1);
                }
            } else {
                float x[2 * RPW];
#pragma unroll
                for (int r = 0; r < RPW; ++r) {
                    float m;
                    const rs_lv<DK> sv = rs_raw_dec<CKF, DK>(cur[r], sdec, m);
                    const float pm = __fmul_rn(pck, m);
                    x[r] = __fmaf_rn(k1, cv1[r], __fmaf_rn(k0, cv0[r], __fmul_rn(pm, rs_dotv(sv, kc4))));
                    x[RPW + r] = __fmaf_rn(c1, cv1[r], __fmaf_rn(c0, cv0[r], __fmul_rn(pm, rs_dotv(sv, q4))));
                }
                rs_dev_warp_reduce<2 * RPW>(x, lane); /* lanes 0-15: S_{t-1} k of the rows, 16-31: S_{t-1} q */
                const float sq = __shfl_down_sync(RS_FULL_MASK, x[0], 16);
                if (lane < 16 && lane % SPAN == 0) {
                    const int r = lane / SPAN;
                    const float u = rs_ring_round<RDT>(beta * (cvi - alpha * x[0]));
                    io.o[grow0 + r] = __fmaf_rn(u, kqc, alpha * sq);
                    if (RDT == RS_CUDA_F32) static_cast<float *>(st.ring_v)[(bh * L + hn) * dv + row + r] = u;
                    else static_cast<uint16_t *>(st.ring_v)[(bh * L + hn) * dv + row + r] = (uint16_t)rs_bf16bits(u);
                    if (st.ring_vraw) rs_ring_st1<RDT>(st.ring_vraw, (bh * L + hn) * dv + row + r, rs_ring_round<RDT>(cvi));
                }
            }
            if (more) {
#pragma unroll
                for (int r = 0; r < RPW; ++r) cur[r] = nxt[r], cv0[r] = nv0[r], cv1[r] = nv1[r];
                cvi = nvi;
            }
        }
        return;
    }

    if (FAM == RS_SSM_GDN && st.ring_vraw) return; /* two-precision records: rs_k_replay_flush_recompute */
    if constexpr (FUSED) fused_coefs(false);
    replay_flush_rows<FAM, RDT, TWO, FUSED, DK>(io, st, bh, kg, dv, r_begin, r_end, lane, hn, last, P0, P1, pck, kc4,
                                                q4, alpha, beta, kcur);
}

/* Checkpoint rounding at a flush (rs_cuda_ckpt_round), a pass after the decode or verify launch
 * over the heads of the rows that flushed in it, fill + T > lim (decode: T = 1, lim = L - 1, i.e.
 * fill + 1 == L; verify: lim = L; both read before advance / commit change fill): S_ckpt <- decode(Q(S_ckpt)) in place, a warp per
 * head, lane l columns 4l..4l+3 of each row (Philox block row * 32 + l: rs_flush_round4). The
 * launch reads and writes the flushed heads once more (1/L of the state per step on average at
 * T = 1); fusing it into the flush's store would save that traffic but costs the main kernels
 * registers on their non-flush path, which this functional path leaves untouched. */
template <int DK>
__global__ void __launch_bounds__(128) rs_k_ckpt_round(rs_ssm_dims d, float *S, const int32_t *fill, int lim, int T,
                                                       rs_cuda_ckpt_round c)
{
    const int lane = threadIdx.x & 31;
    const size_t bh = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (bh >= (size_t)d.batch * d.heads) return;
    const size_t b = bh / d.heads;
    if (!(fill[b] + T > lim)) return; /* this row did not flush */
    const rs_flush_round fr = rs_flush_round_of(c, b, (unsigned)(bh % d.heads));
    float *p = S + bh * (size_t)d.d_v * DK + rs_loff<DK>(lane);
    for (int row = 0; row < d.d_v; ++row) {
        float *q = p + (size_t)row * DK;
        rs_stv(q, rs_flush_roundv<DK>(fr, rs_ldv<DK>(q), row, lane));
    }
}

extern "C" rs_status rs_cuda_ckpt_round_launch(const rs_ssm_dims *d, float *S, const int32_t *fill, int lim, int T,
                                               const rs_cuda_ckpt_round *c, cudaStream_t s)
{
    if (c->dtype == RS_CUDA_F32) return RS_OK;
    const size_t warps = (size_t)d->batch * d->heads;
    const unsigned blocks = (unsigned)((warps + 3) / 4);
    if (d->d_k == 64) rs_k_ckpt_round<64><<<blocks, 128, 0, s>>>(*d, S, fill, lim, T, *c);
    else if (d->d_k == 256) rs_k_ckpt_round<256><<<blocks, 128, 0, s>>>(*d, S, fill, lim, T, *c);
    else rs_k_ckpt_round<128><<<blocks, 128, 0, s>>>(*d, S, fill, lim, T, *c);
    return rs_cuda_launch_status("checkpoint rounding at flush");
}

__global__ void rs_k_replay_advance(int32_t *fill, int64_t *flushes, int batch, int L)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const bool fl = fill[b] + 1 == L;
    fill[b] = fl ? 0 : fill[b] + 1;
    if (flushes && fl) flushes[b] += 1;
}

template <int FAM, int RDT, int DK = 128>
static void replay_prep_launch(const rs_ssm_dims *d, const rs_ssm_step_io *io, const rs_cuda_replay_state *st,
                               cudaStream_t s)
{
    const int grp = d->heads / d->key_heads;
    const size_t psmem = sizeof(float) * (2 * RS_CUDA_LMAX + (size_t)grp * st->L);
    rs_k_replay_prep<FAM, RDT, DK><<<(unsigned)((size_t)d->batch * d->key_heads), 32 * RS_PREP_WARPS, psmem, s>>>(*d, *io,
                                                                                                            *st);
}

/* the L2 prefetch (rs_cuda_launch_opts.replay_l2pf; windows L <= 32, whose instances have it): level 1 where the
 * main grid is more than one wave (a warp's chunks then follow other warps' on its SM; at one wave the B = 1 chain
 * matters more), level 2 on every launch (the tests' small batches) */
static bool replay_l2pf(const rs_knobs &k, const rs_geom &g, int L)
{
    return L <= 32 && (k.l2pf == 2 || (k.l2pf == 1 && !rs_one_wave(g)));
}

/* fp32 reads: the fused launch when `fused` (rs_cuda_replay_launches); v3's low-precision reads (CKF !=
 * FP32) keep the prologue launch (their fused form is not built: v4 is the default low-precision kernel) */
template <int FAM, int RDT, int CKF, int RPW, int DK = 128>
static void replay_launch(const rs_knobs &k, bool fused, const rs_ssm_dims *d, const rs_ssm_step_io *io,
                          const rs_cuda_replay_state *st, const rs_ckpt_src &src, cudaStream_t s)
{
    const rs_geom g = CKF == RS_FMT_FP32 ? rs_replay_geom_any(d, RPW, k.wph) : rs_replay_geom(d, RPW, k.wph);
    const unsigned blocks = (unsigned)(((size_t)g.BH * g.wph + 3) / 4);
    if constexpr (CKF == RS_FMT_FP32) {
        if (fused) {
            const bool one_wave = rs_one_wave(g);
            if constexpr (RPW == 4 && DK != 256) /* d_k = 256: 238 registers uncapped, 4 blocks an SM would spill */
                if (one_wave && st->L <= 16 && k.spec) {
                    if constexpr (RDT == RS_CUDA_BF16 && DK == 128)
                        if (k.spec == 2) {
                            rs_k_replay_main<FAM, RDT, CKF, RPW, false, true, DK, 2><<<blocks, 128, 0, s>>>(*d, *io, *st, src, g);
                            return;
                        }
                    rs_k_replay_main<FAM, RDT, CKF, RPW, false, true, DK, 1><<<blocks, 128, 0, s>>>(*d, *io, *st, src, g);
                    return;
                }
            if constexpr (RPW == 4 && DK == 128)
                if (replay_l2pf(k, g, st->L)) {
                    rs_k_replay_main<FAM, RDT, CKF, RPW, false, true, DK, 0, 2><<<blocks, 128, 0, s>>>(*d, *io, *st, src, g);
                    return;
                }
            if (st->L > 32) rs_k_replay_main<FAM, RDT, CKF, RPW, true, true, DK><<<blocks, 128, 0, s>>>(*d, *io, *st, src, g);
            else rs_k_replay_main<FAM, RDT, CKF, RPW, false, true, DK><<<blocks, 128, 0, s>>>(*d, *io, *st, src, g);
            return;
        }
    }
    replay_prep_launch<FAM, RDT, DK>(d, io, st, s);
    /* the prologue's programmatic dependent: its warps start, read fill and q while the prologue runs */
    if constexpr (CKF == RS_FMT_FP32 && RPW == 4 && DK == 128)
        if (replay_l2pf(k, g, st->L)) {
            rs_launch_pdl(rs_k_replay_main<FAM, RDT, CKF, RPW, false, false, DK, 0, 2>, blocks, 128, 0, s, *d, *io, *st, src, g);
            return;
        }
    if (st->L > 32) rs_launch_pdl(rs_k_replay_main<FAM, RDT, CKF, RPW, true, false, DK>, blocks, 128, 0, s, *d, *io, *st, src, g);
    else rs_launch_pdl(rs_k_replay_main<FAM, RDT, CKF, RPW, false, false, DK>, blocks, 128, 0, s, *d, *io, *st, src, g);
}

/* v4's heads per warp (rs_cuda_replay_lp_heads_per_warp): lp_heads_per_warp, or under 0 the automatic rule: up to
 * 4 whole heads of a key group for GDN and for nvfp4 after the separate prologue while the grid keeps >= 16 warps
 * per SM. Measured at B = 256 (H200, docs/kernels.md; the head tables copied by cp.async, so the heads' set-up
 * is not serial): GDN fp8 / nvfp4 0.79 / 0.78x (Qwen3.5-4B, 2 heads) and 0.92 / 0.89x (Qwen3.5-122B) the time of
 * one head (or slice) a warp, Mamba-2 nvfp4 0.95-0.98x; Mamba-2 fp8 0.97x (Super) but 1.04x (Nano), fp16
 * 1.02-1.05x (except Qwen3.5-4B): those keep one head. Fused and v7 launches: not measured with more heads, one
 * head. fp16 / bf16: at most 2 heads (a warp's stages are 2x those of fp8, 10 warps an SM: Qwen3.5-122B GDN fp16
 * at 4 heads 167.5 us, 2 heads 162.6, one 160.0; Qwen3.5-4B's 2 heads 90.3 against one 104.7). */
static unsigned lp_hpw(const rs_knobs &k, int fam, int ckf, bool fused, bool tc, const rs_ssm_dims *d)
{
    const unsigned grp = (unsigned)(d->heads / d->key_heads);
    auto pow2_in_group = [grp](unsigned cap) { /* the largest power of two <= cap dividing the key group */
        unsigned h = 1;
        while (2 * h <= cap && grp % (2 * h) == 0) h *= 2;
        return h;
    };
    if (k.hpw > 0) return pow2_in_group(k.hpw);
    const unsigned h = pow2_in_group(ckf == RS_FMT_FP16 || ckf == RS_FMT_BF16 ? 2 : 4);
    const bool wide = !fused && !tc && (fam == RS_SSM_GDN || ckf == RS_FMT_NVFP4);
    return wide && (size_t)d->batch * (size_t)d->heads / h >= 16u * (size_t)rs_sm_count() ? h : 1;
}

/* v4: a warp walks the 16-row chunks of one head, or of a power-of-two slice of it (rs_replay_geom:
 * ~128 warps per SM, as v3), or with hpw > 1 (lp_hpw) those of hpw whole heads of one key group as one
 * pipeline; 1, 2 or 4 warps a block so that the
 * dynamic shared memory (per warp: the head tables and the stages) stays within the 48 KB that
 * needs no opt-in attribute (so the first launch may sit inside a graph capture) */
template <int FAM, int RDT, int CKF>
static void replay_launch_wide(const rs_knobs &k, bool fused, bool tc, const rs_ssm_dims *d, const rs_ssm_step_io *io,
                               const rs_cuda_replay_state *st, const rs_ckpt_src &src, cudaStream_t s)
{
    if (tc) fused = false; /* v7 runs with the prologue (rs_cuda_replay_launches says 2) */
    if (!fused) replay_prep_launch<FAM, RDT>(d, io, st, s);
    rs_geom g = rs_replay_geom(d, RS_LPW_ROWS, k.wph);
    const unsigned hpw = lp_hpw(k, FAM, CKF, fused, tc, d);
    if (hpw > 1) g.wph = 1, g.rows = d->d_v;
    const int sb = rs_lpw_stage_bytes(CKF, RDT, st->L);
    const int cb = rs_lpw_align32((int)(sizeof(float) * hpw * rs_lpw_head_floats(st->L))); /* stages 32-aligned */
    const size_t per_warp = (size_t)cb + (size_t)rs_lpw_stages<CKF>() * sb;
    unsigned wpb = 4;
    while (wpb > 1 && wpb * per_warp > 48u * 1024u) wpb /= 2;
    const size_t warps = (size_t)g.BH / hpw * g.wph;
    const unsigned blocks = (unsigned)((warps + wpb - 1) / wpb);
    const size_t smem = wpb * per_warp;
    const bool two = st->L > 32;
    if (fused) {
        if (two) rs_k_replay_lpw<FAM, RDT, CKF, true, true><<<blocks, 32 * wpb, smem, s>>>(*d, *io, *st, src, g, (int)hpw, sb, cb);
        else rs_k_replay_lpw<FAM, RDT, CKF, false, true><<<blocks, 32 * wpb, smem, s>>>(*d, *io, *st, src, g, (int)hpw, sb, cb);
        return;
    }
    /* after the prologue: its programmatic dependent (the warps' first loads go out while it runs) */
    void (*kern)(rs_ssm_dims, rs_ssm_step_io, rs_cuda_replay_state, rs_ckpt_src, rs_geom, int, int, int) =
        tc ? (two ? rs_k_replay_lpw<FAM, RDT, CKF, true, false, true> : rs_k_replay_lpw<FAM, RDT, CKF, false, false, true>)
           : (two ? rs_k_replay_lpw<FAM, RDT, CKF, true, false> : rs_k_replay_lpw<FAM, RDT, CKF, false, false>);
    rs_launch_pdl(kern, blocks, 32 * wpb, smem, s, *d, *io, *st, src, g, (int)hpw, sb, cb);
}

template <int FAM, int RDT>
static void replay_launch_ckf(const rs_knobs &k, int ckf, int rpw, int wide, bool fused, const rs_ssm_dims *d,
                              const rs_ssm_step_io *io, const rs_cuda_replay_state *st, const rs_ckpt_src &src,
                              cudaStream_t s)
{
    constexpr int RLP = FAM == RS_SSM_GDN ? 8 : 16;
    if (wide) {
        switch (ckf) {
        case RS_FMT_FP16: replay_launch_wide<FAM, RDT, RS_FMT_FP16>(k, fused, wide == 7, d, io, st, src, s); return;
        case RS_FMT_BF16: replay_launch_wide<FAM, RDT, RS_FMT_BF16>(k, fused, wide == 7, d, io, st, src, s); return;
        case RS_FMT_FP8: replay_launch_wide<FAM, RDT, RS_FMT_FP8>(k, fused, wide == 7, d, io, st, src, s); return;
        case RS_FMT_NVFP4: replay_launch_wide<FAM, RDT, RS_FMT_NVFP4>(k, fused, wide == 7, d, io, st, src, s); return;
        default: break;
        }
    }
    switch (ckf) { /* v3 low-precision reads: always with the prologue (fused = false there) */
    case RS_FMT_FP16: replay_launch<FAM, RDT, RS_FMT_FP16, 8>(k, false, d, io, st, src, s); break;
    case RS_FMT_BF16: replay_launch<FAM, RDT, RS_FMT_BF16, 8>(k, false, d, io, st, src, s); break;
    case RS_FMT_FP8: replay_launch<FAM, RDT, RS_FMT_FP8, RLP>(k, false, d, io, st, src, s); break;
    case RS_FMT_NVFP4: replay_launch<FAM, RDT, RS_FMT_NVFP4, RLP>(k, false, d, io, st, src, s); break;
    default:
        if (rpw == 8) replay_launch<FAM, RDT, RS_FMT_FP32, 8>(k, fused, d, io, st, src, s);
        else replay_launch<FAM, RDT, RS_FMT_FP32, 4>(k, fused, d, io, st, src, s);
        break;
    }
}

/* d_k = 64 / 256: fp32 reads only (rs_cuda_replay_decode refuses ckpt_read there), 4 rows a
 * chunk (rows_per_warp is not used: 8 rows of 8 columns a lane, prefetched, would be 128 registers of state
 * alone at d_k = 256); d_k = 128: every path above */
template <int FAM, int RDT, int DK>
static void replay_launch_dk(const rs_knobs &k, int ckf, int rpw, int wide, bool fused, const rs_ssm_dims *d,
                             const rs_ssm_step_io *io, const rs_cuda_replay_state *st, const rs_ckpt_src &src,
                             cudaStream_t s)
{
    if constexpr (DK == 128) replay_launch_ckf<FAM, RDT>(k, ckf, rpw, wide, fused, d, io, st, src, s);
    else replay_launch<FAM, RDT, RS_FMT_FP32, 4, DK>(k, fused, d, io, st, src, s);
}
template <int FAM, int RDT>
static void replay_launch_any(const rs_knobs &k, int ckf, int rpw, int wide, bool fused, const rs_ssm_dims *d,
                              const rs_ssm_step_io *io, const rs_cuda_replay_state *st, const rs_ckpt_src &src,
                              cudaStream_t s)
{
    if (d->d_k == 64) replay_launch_dk<FAM, RDT, 64>(k, ckf, rpw, wide, fused, d, io, st, src, s);
    else if (d->d_k == 256) replay_launch_dk<FAM, RDT, 256>(k, ckf, rpw, wide, fused, d, io, st, src, s);
    else replay_launch_dk<FAM, RDT, 128>(k, ckf, rpw, wide, fused, d, io, st, src, s);
}

/* GDN two-precision records: the flush rows' recompute, a launch of its own after the main one */
template <int DK>
static void flush_recompute_launch(const rs_ssm_dims *dims, const rs_ssm_step_io *io, const rs_cuda_replay_state *st,
                                   cudaStream_t s)
{
    const unsigned blocks = (unsigned)(((size_t)dims->batch * dims->heads + 3) / 4);
    const bool two = st->L > 32;
    if (st->ring_dtype == RS_CUDA_F32) {
        if (two) rs_k_replay_flush_recompute<RS_CUDA_F32, true, DK><<<blocks, 128, 0, s>>>(*dims, *io, *st);
        else rs_k_replay_flush_recompute<RS_CUDA_F32, false, DK><<<blocks, 128, 0, s>>>(*dims, *io, *st);
    } else {
        if (two) rs_k_replay_flush_recompute<RS_CUDA_BF16, true, DK><<<blocks, 128, 0, s>>>(*dims, *io, *st);
        else rs_k_replay_flush_recompute<RS_CUDA_BF16, false, DK><<<blocks, 128, 0, s>>>(*dims, *io, *st);
    }
}

/* the RPW replay_launch_ckf will use (for the d_v check) */
static int replay_rpw(rs_ssm_family fam, int ckf, int knob)
{
    if (ckf == RS_FMT_FP32) return knob == 8 ? 8 : 4;
    if (ckf == RS_FMT_FP16 || ckf == RS_FMT_BF16) return 8;
    return fam == RS_SSM_GDN ? 8 : 16;
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* v4 needs 16-byte aligned codes, ring values and v (its 16-byte cp.async pieces); else v3 runs.
 * lp_kernel 0 (AUTO) follows the H200 lp sweeps (B = 256, L = 16, fill 7; docs/kernels.md): v4 on every format
 * and family. On GDN's fp16 / bf16 reads v4 with its heads a warp (lp_hpw) measured 90.3 vs 107.4 us
 * (Qwen3.5-4B, 2 heads) and 162.6 (2 heads; one head 160.0, 4 heads 167.5) vs 191.9 us (Qwen3.5-122B) against
 * v3; B = 1 low-precision reads were not measured. */
extern "C" int rs_cuda_replay_lp_version(rs_ssm_family fam, const rs_ssm_step_io *io, const rs_cuda_replay_state *st)
{
    if (!io || !st || !st->ckpt_read || st->ckpt_read->fmt.kind == RS_FMT_FP32) return 0;
    if (st->lp_kernel == 3) return 3;
    if (!(aligned16(st->ckpt_read->codes) && aligned16(st->ring_v) && aligned16(io->v))) return 3;
    return st->lp_kernel == 7 ? 7 : 4;
}

/* One launch (the fused kernel) or two (prologue + main). AUTO follows the H200 measurements (docs/kernels.md:
 * one `replayssm bench` run with both paths, L = 16, the amortised cycle): every
 * fused warp pays the key dots and the decay scan (a dependent chain of ~1 us) once, so the fused launch
 * wins where that is paid once for the whole step, i.e. the main grid is at most one wave (B = 1 on the
 * four shapes: 1.23-1.67x), or where each warp streams enough chunks to hide it (>= 16 chunks of its
 * head: 1.008-1.021x at B = 256-512 for the shapes with 64-row or 128-row warps), and loses elsewhere
 * (B = 8-128 and Qwen3.5-4B at 256, whose warps walk 1-8 chunks: 0.67-0.99x; Nemotron-3-Nano at B = 8 and
 * 32, 5 chunks a warp, was 1.04-1.11x, which the rule gives up). v4 low-precision reads: the prologue
 * (fused measured 0.81-0.94x at B = 256; B = 1 not measured). One wave = 16 warps per SM (the fp32 main
 * kernels' occupancy at 96-128 registers). */
extern "C" int rs_cuda_replay_launches(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                      const rs_cuda_replay_state *st, const rs_cuda_launch_opts *opts)
{
    if (!dims || !io || !st) return 0;
    const int lpv = rs_cuda_replay_lp_version(fam, io, st);
    if (lpv == 3 || lpv == 7 || st->launch == RS_CUDA_LAUNCH_PROLOGUE) return 2; /* v3, v7: prologue only */
    if (st->launch == RS_CUDA_LAUNCH_FUSED) return 1;
    if (lpv != 0) return 2; /* AUTO, v4 reads */
    const int rpw = st->rows_per_warp == 8 && dims->d_k == 128 ? 8 : 4;
    const rs_geom g = rs_replay_geom_any(dims, rpw, rs_knobs_of(opts).wph); /* replay_launch's fp32 geometry */
    return rs_one_wave(g) || g.rows / rpw >= 16 ? 1 : 2;
}

extern "C" int rs_cuda_replay_lp_heads_per_warp(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                                const rs_cuda_replay_state *st, const rs_cuda_launch_opts *opts)
{
    if (!dims || !io || !st || !st->ckpt_read || dims->key_heads <= 0) return 0;
    if (rs_cuda_replay_lp_version(fam, io, st) != 4) return 0;
    const bool fused = rs_cuda_replay_launches(fam, dims, io, st, opts) == 1;
    return (int)lp_hpw(rs_knobs_of(opts), (int)fam, (int)st->ckpt_read->fmt.kind, fused, false, dims);
}

extern "C" rs_status rs_cuda_replay_decode(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                           const rs_cuda_replay_state *st, const rs_cuda_launch_opts *opts,
                                           rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_replay_decode";
    RS_TRY(check_dims(dims, io, fam, who));
    RS_TRY(rs_opts_check(opts, who));
    const rs_knobs k = rs_knobs_of(opts);
    RS_CHECK(st && st->S_ckpt && st->ring_v && st->ring_k && st->ring_alpha && st->fill, RS_E_INVAL,
             "%s: NULL state array", who);
    RS_CHECK(st->launch >= RS_CUDA_LAUNCH_AUTO && st->launch <= RS_CUDA_LAUNCH_FUSED, RS_E_INVAL,
             "%s: launch = %d (need 0, 1 or 2)", who, st->launch);
    RS_CHECK(st->L >= 1 && st->L <= RS_CUDA_LMAX, RS_E_INVAL, "%s: window L = %d outside 1..%d", who, st->L,
             RS_CUDA_LMAX);
    RS_CHECK(st->rows_per_warp == 0 || st->rows_per_warp == 4 || st->rows_per_warp == 8, RS_E_INVAL,
             "%s: rows_per_warp = %d (need 0, 4 or 8)", who, st->rows_per_warp);
    RS_CHECK(st->lp_kernel == 0 || st->lp_kernel == 3 || st->lp_kernel == 4 || st->lp_kernel == 7, RS_E_INVAL,
             "%s: lp_kernel = %d (need 0, 3, 4 or 7)", who, st->lp_kernel);
    RS_CHECK(!st->ckpt_read || dims->d_k == RS_CUDA_DK, RS_E_UNSUPPORTED,
             "%s: low-precision checkpoint reads (ckpt_read) support d_k = %d only (got d_k = %d; d_k = 64 and 256 "
             "run the fp32 read)", who, RS_CUDA_DK, dims->d_k);
    const int rpw = dims->d_k != RS_CUDA_DK ? 4 : replay_rpw(fam, st->ckpt_read ? (int)st->ckpt_read->fmt.kind : (int)RS_FMT_FP32, st->rows_per_warp);
    RS_CHECK(dims->d_v % rpw == 0, RS_E_SHAPE, "%s: d_v = %d is not a multiple of %d rows per chunk", who, dims->d_v,
             rpw);
    RS_CHECK(st->ring_dtype == RS_CUDA_F32 || st->ring_dtype == RS_CUDA_BF16, RS_E_UNSUPPORTED,
             "%s: ring dtype %d (F32 or BF16 only)", who, (int)st->ring_dtype);
    RS_TRY(rs_cuda_check_ckpt_round(&st->ckpt_round, who));
    RS_CHECK(!st->ring_vraw == !st->ring_beta, RS_E_INVAL, "%s: two-precision records need both ring_vraw and ring_beta",
             who);
    rs_ckpt_src src = {st->S_ckpt, nullptr, nullptr, nullptr, nullptr, dims->d_v};
    int ckf = RS_FMT_FP32;
    if (st->ckpt_read) {
        const rs_qtensor *q = st->ckpt_read;
        const size_t n = (size_t)dims->batch * dims->heads * dims->d_v * dims->d_k;
        RS_CHECK(q->codes && q->n == n && q->tensor_extent == (size_t)dims->d_v * dims->d_k, RS_E_SHAPE,
                 "%s: ckpt_read holds %zu elements in tensors of %zu (need %zu in tensors of d_v * d_k)", who, q->n,
                 q->tensor_extent, n);
        ckf = (int)q->fmt.kind;
        RS_CHECK(rs_format_on_gpu(&q->fmt), RS_E_UNSUPPORTED, "%s: ckpt_read in format kind %d has no CUDA reader", who, ckf);
        src.codes = q->codes, src.scale_inv = q->scale_inv, src.bscale = q->block_scale, src.sdec = q->tensor_scale_dec;
    }
    const int lpv = rs_cuda_replay_lp_version(fam, io, st), wide = lpv == 4 || lpv == 7 ? lpv : 0; /* 4: v4, 7: v7 */
    const bool fused = rs_cuda_replay_launches(fam, dims, io, st, opts) == 1;
    RS_CHECK(st->work || fused, RS_E_INVAL, "%s: NULL work (the separate prologue launch needs it)", who);
    if (fam == RS_SSM_MAMBA2) {
        if (st->ring_dtype == RS_CUDA_F32)
            replay_launch_any<RS_SSM_MAMBA2, RS_CUDA_F32>(k, ckf, rpw, wide, fused, dims, io, st, src, s);
        else replay_launch_any<RS_SSM_MAMBA2, RS_CUDA_BF16>(k, ckf, rpw, wide, fused, dims, io, st, src, s);
    } else {
        if (st->ring_dtype == RS_CUDA_F32)
            replay_launch_any<RS_SSM_GDN, RS_CUDA_F32>(k, ckf, rpw, wide, fused, dims, io, st, src, s);
        else replay_launch_any<RS_SSM_GDN, RS_CUDA_BF16>(k, ckf, rpw, wide, fused, dims, io, st, src, s);
    }
    RS_TRY(rs_cuda_launch_status(who));
    if (fam == RS_SSM_GDN && st->ring_vraw) { /* the flush rows the main kernel left: u recomputed */
        if (dims->d_k == 64) flush_recompute_launch<64>(dims, io, st, s);
        else if (dims->d_k == 256) flush_recompute_launch<256>(dims, io, st, s);
        else flush_recompute_launch<128>(dims, io, st, s);
        RS_TRY(rs_cuda_launch_status(who));
    }
    /* rows with fill + 1 == L flushed: fill + 1 > L - 1 */
    return rs_cuda_ckpt_round_launch(dims, st->S_ckpt, st->fill, st->L - 1, 1, &st->ckpt_round, s);
}

extern "C" rs_status rs_cuda_replay_advance_counted(int32_t *d_fill, int64_t *d_flushes, int batch, int L,
                                                   rs_cuda_stream s)
{
    RS_CHECK(d_fill && batch > 0 && L >= 1, RS_E_INVAL, "rs_cuda_replay_advance: bad arguments (B = %d, L = %d)",
             batch, L);
    rs_k_replay_advance<<<(batch + 255) / 256, 256, 0, s>>>(d_fill, d_flushes, batch, L);
    return rs_cuda_launch_status("rs_cuda_replay_advance");
}

extern "C" rs_status rs_cuda_replay_advance(int32_t *d_fill, int batch, int L, rs_cuda_stream s)
{
    return rs_cuda_replay_advance_counted(d_fill, nullptr, batch, L, s);
}

/* the checks of rs_cuda_ckpt_round shared by the decode and verify launchers */
extern "C" rs_status rs_cuda_check_ckpt_round(const rs_cuda_ckpt_round *c, const char *who)
{
    RS_CHECK(c->dtype == RS_CUDA_F32 || c->dtype == RS_CUDA_F16 || c->dtype == RS_CUDA_BF16, RS_E_INVAL,
             "%s: ckpt_round dtype %d (F32, F16 or BF16)", who, (int)c->dtype);
    RS_CHECK(c->rounding == RS_ROUND_RTN || c->rounding == RS_ROUND_SR, RS_E_INVAL, "%s: ckpt_round rounding %d", who,
             (int)c->rounding);
    const bool sr = c->dtype != RS_CUDA_F32 && c->rounding == RS_ROUND_SR;
    RS_CHECK(!sr || (c->sr_bits >= 1 && c->sr_bits <= 32 && c->seeds && c->flushes), RS_E_INVAL,
             "%s: SR checkpoint rounding needs sr_bits in 1..32 (got %d), seeds and flushes", who, c->sr_bits);
    return RS_OK;
}
