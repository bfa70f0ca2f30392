/* rs_cuda_decode.cu — SSM decode kernels (rs_cuda.h): conventional Mamba-2 / GDN decode with
 * fp32, fp16 or bf16 state, and ReplaySSM standard decode (output-only non-flush steps,
 * one-pass flush) with per-row flush decided on the device.
 *
 * Mapping (d_k = 128): a warp owns whole state rows; lane l holds columns 4l .. 4l+3 as one
 * float4 (16-byte, fully coalesced: a row is one 512-byte warp access). A warp handles 4
 * consecutive rows, whose loads are all issued before the first use.
 *   conventional: block = 4 warps = 16 rows of one (b, h); grid = B * H * d_v/16.
 *   replay:       block = R/4 warps = R rows of one (b, h), R = the largest multiple of 4
 *                 dividing d_v and <= 64; the block stages the key-head ring (k_j), the
 *                 decays and its rows' ring values in shared memory, computes k_j . q (and
 *                 k_j . k for GDN) once, then streams the checkpoint rows.
 * Arithmetic is fp32. The conventional state update is written as alpha*s + v*k (GDN:
 * alpha*s + u*k) with explicit round-to-nearest intrinsics, the same operations as a plain C
 * loop, so a fp16/bf16 store can be checked bit for bit against the CPU codecs.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "rs_cuda.h"
#include "rs_cuda_common.cuh"
#include "rs_cuda_quant.cuh"

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
    for (int j = 0; j < 4; ++j) f[j] = DT == RS_CUDA_F16 ? rs_dev_fp16_value(c[j]) : rs_dev_bf16_value(c[j]);
    return make_float4(f[0], f[1], f[2], f[3]);
}

/* One fp16/bf16 code, bit-identical to rs_elem_encode. Fast paths: RTN of a non-NaN value is
 * the hardware cvt.rn (IEEE round-to-nearest-even, no flush, overflow to Inf: the CPU
 * codec's rules); bf16 SR of a finite value drops exactly 16 bits of the float32 pattern at
 * every exponent (bf16 shares float32's exponent range), so it is the integer rule of the
 * header on the magnitude bits with the carry running into the exponent (which also gives
 * the CPU's overflow-to-Inf). Everything else takes the generic encoder. */
template <int DT> __device__ __forceinline__ uint32_t half_code(float x, int sr, uint32_t r, int k)
{
    const uint32_t u = __float_as_uint(x), ax = u & 0x7FFFFFFFu;
    if (!sr && ax <= 0x7F800000u) {
        if (DT == RS_CUDA_F16) return __half_as_ushort(__float2half_rn(x));
        return __bfloat16_as_ushort(__float2bfloat16_rn(x));
    }
    if (DT == RS_CUDA_BF16 && sr && ax < 0x7F800000u) {
        const uint32_t rem = ax & 0xFFFFu;
        const uint64_t dk = k >= 16 ? (uint64_t)rem << (k - 16) : (uint64_t)(rem >> (16 - k));
        const uint64_t R = k == 32 ? (uint64_t)r : (uint64_t)(r >> (32 - k));
        const uint32_t up = dk + R >= (1ull << k) ? 1u : 0u;
        return ((u >> 31) << 15) | ((ax >> 16) + up);
    }
    return rs_dev_elem_encode(DT == RS_CUDA_F16 ? RS_ELEM_FP16 : RS_ELEM_BF16, x, sr, r, k);
}

/* Store 4 elements; fp16/bf16 with RTN or SR (words w for the 4 elements). */
template <int DT> __device__ __forceinline__ void store_state4(void *S, size_t e, float4 v, int sr, uint4 w, int k)
{
    if (DT == RS_CUDA_F32) {
        *reinterpret_cast<float4 *>(static_cast<float *>(S) + e) = v;
        return;
    }
    const uint32_t c0 = half_code<DT>(v.x, sr, w.x, k), c1 = half_code<DT>(v.y, sr, w.y, k);
    const uint32_t c2 = half_code<DT>(v.z, sr, w.z, k), c3 = half_code<DT>(v.w, sr, w.w, k);
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

/* ---- conventional decode ---------------------------------------------------------------------- */

template <int FAM, int DT>
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

    const size_t sbase = (bh * d.d_v + row0) * RS_CUDA_DK + 4 * lane;
    float4 s[RS_CONV_ROWS_PER_WARP];
#pragma unroll
    for (int r = 0; r < RS_CONV_ROWS_PER_WARP; ++r) s[r] = load_state4<DT>(st.S, sbase + (size_t)r * RS_CUDA_DK);

    const size_t kq_off = ((size_t)b * d.key_heads + g) * RS_CUDA_DK + 4 * lane;
    const float4 k4 = ld4(io.k + kq_off), q4 = ld4(io.q + kq_off);
    const float alpha = io.alpha[bh];
    const float beta = FAM == RS_SSM_GDN ? io.beta[bh] : 0.0f;
    const float4 v4 = ld4(io.v + bh * d.d_v + row0); /* the warp's 4 rows (broadcast load) */
    const float vv[4] = {v4.x, v4.y, v4.z, v4.w};

    uint64_t seed = 0, stream = 0;
    if (DT != RS_CUDA_F32 && sr) {
        seed = st.seeds[b];
        stream = rs_dev_stream_id(st.sr_slot, st.layer, (uint32_t)h, (uint64_t)st.steps[b]);
    }
    float o[RS_CONV_ROWS_PER_WARP];
#pragma unroll
    for (int r = 0; r < RS_CONV_ROWS_PER_WARP; ++r) {
        float a = vv[r];
        if (FAM == RS_SSM_GDN) {
            const float sk = rs_dev_warp_sum(dot4(s[r], k4));
            a = __fmul_rn(beta, __fsub_rn(vv[r], __fmul_rn(alpha, sk)));
        }
        const float4 ns = axpy4(alpha, s[r], a, k4);
        o[r] = rs_dev_warp_sum(dot4(ns, q4));
        const int row = row0 + r;
        uint4 w = make_uint4(0, 0, 0, 0);
        if (DT != RS_CUDA_F32 && sr) w = rs_dev_rand_block(seed, stream, (uint64_t)row * (RS_CUDA_DK / 4) + lane);
        store_state4<DT>(st.S, sbase + (size_t)r * RS_CUDA_DK, ns, sr, w, st.sr_bits);
    }
    if (lane == 0) *reinterpret_cast<float4 *>(io.o + bh * d.d_v + row0) = make_float4(o[0], o[1], o[2], o[3]);
}

static rs_status check_dims(const rs_ssm_dims *d, const rs_ssm_step_io *io, rs_ssm_family fam, const char *who)
{
    RS_CHECK(d && io, RS_E_INVAL, "%s: NULL dims or io", who);
    RS_CHECK(fam == RS_SSM_MAMBA2 || fam == RS_SSM_GDN, RS_E_INVAL, "%s: unknown family %d", who, (int)fam);
    RS_CHECK(d->d_k == RS_CUDA_DK, RS_E_UNSUPPORTED, "%s: d_k = %d (this version supports d_k = %d only)", who,
             d->d_k, RS_CUDA_DK);
    RS_CHECK(d->batch > 0 && d->heads > 0 && d->key_heads > 0 && d->heads % d->key_heads == 0, RS_E_SHAPE,
             "%s: B = %d, H = %d, G = %d (need positive, H %% G == 0)", who, d->batch, d->heads, d->key_heads);
    RS_CHECK(d->d_v > 0 && d->d_v % RS_CONV_ROWS == 0, RS_E_SHAPE, "%s: d_v = %d is not a positive multiple of %d",
             who, d->d_v, RS_CONV_ROWS);
    RS_CHECK(io->alpha && io->v && io->k && io->q && io->o && (fam == RS_SSM_MAMBA2 || io->beta), RS_E_INVAL,
             "%s: NULL input or output array", who);
    return RS_OK;
}

template <int FAM>
static void conv_launch(const rs_ssm_dims *d, const rs_ssm_step_io *io, const rs_cuda_conv_state *st, int sr,
                        cudaStream_t s)
{
    const unsigned grid = (unsigned)((size_t)d->batch * d->heads * (d->d_v / RS_CONV_ROWS));
    const unsigned threads = 32 * RS_CONV_WARPS;
    switch (st->dtype) {
    case RS_CUDA_F32: rs_k_conv_decode<FAM, RS_CUDA_F32><<<grid, threads, 0, s>>>(*d, *io, *st, 0); break;
    case RS_CUDA_F16: rs_k_conv_decode<FAM, RS_CUDA_F16><<<grid, threads, 0, s>>>(*d, *io, *st, sr); break;
    case RS_CUDA_BF16: rs_k_conv_decode<FAM, RS_CUDA_BF16><<<grid, threads, 0, s>>>(*d, *io, *st, sr); break;
    }
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
    if (fam == RS_SSM_MAMBA2) conv_launch<RS_SSM_MAMBA2>(dims, io, st, sr, s);
    else conv_launch<RS_SSM_GDN>(dims, io, st, sr, s);
    return rs_cuda_launch_status(who);
}

/* ---- ReplaySSM decode ------------------------------------------------------------------------- */

/* Round to the ring's storage type (the record's value as every later step will see it). */
template <int RDT> __device__ __forceinline__ float ring_round(float x)
{
    return RDT == RS_CUDA_F32 ? x : rs_dev_bf16_value(rs_dev_bf16_rtn(x));
}
template <int RDT> __device__ __forceinline__ float ring_load(const void *p, size_t i)
{
    return RDT == RS_CUDA_F32 ? static_cast<const float *>(p)[i] : rs_dev_bf16_value(static_cast<const uint16_t *>(p)[i]);
}
template <int RDT> __device__ __forceinline__ void ring_store(void *p, size_t i, float x) /* x already rounded */
{
    if (RDT == RS_CUDA_F32) static_cast<float *>(p)[i] = x;
    else static_cast<uint16_t *>(p)[i] = rs_dev_bf16_rtn(x);
}

__device__ __forceinline__ float beta_of(const rs_ssm_step_io &io, size_t bh) { return io.beta[bh]; }

/* Rows per replay block: the largest multiple of 4 that divides d_v and is <= 64. */
static int replay_rows(int d_v)
{
    for (int r = 64; r >= 4; r -= 4)
        if (d_v % r == 0) return r;
    return 0;
}

static size_t replay_smem_bytes(int L, int R)
{
    /* ks[(L+1)][128], qs[128], al, P, kq, kk [L+1 each], vs[(L+1)][R+1], Pck */
    return sizeof(float) * ((size_t)(L + 1) * RS_CUDA_DK + RS_CUDA_DK + 4 * (size_t)(L + 1) + (size_t)(L + 1) * (R + 1) + 1);
}

template <int FAM, int RDT>
__global__ void __launch_bounds__(512) rs_k_replay_decode(rs_ssm_dims d, rs_ssm_step_io io, rs_cuda_replay_state st,
                                                          int R)
{
    extern __shared__ float sm[];
    const int L = st.L;
    float *ks = sm;                               /* [L+1][128]: ring k_0..k_{hn-1}, this step's k at hn */
    float *qs = ks + (size_t)(L + 1) * RS_CUDA_DK; /* [128] */
    float *al = qs + RS_CUDA_DK;                  /* [L+1] decays, this step's at hn */
    float *P = al + (L + 1);                      /* [L+1] decay from record j to the end of the replay */
    float *kq = P + (L + 1);                      /* [L+1] k_j . q */
    float *kk = kq + (L + 1);                     /* [L+1] k_j . k (GDN) */
    float *vs = kk + (L + 1);                     /* [L+1][VS] ring values of this block's rows */
    float *Pck = vs + (size_t)(L + 1) * (R + 1);  /* [1] decay of the checkpoint */
    const int VS = R + 1;                         /* padded: lanes reading record j = lane hit distinct banks */

    const int chunks = d.d_v / R;
    const size_t bh = blockIdx.x / chunks;
    const int chunk = blockIdx.x % chunks;
    const int h = (int)(bh % d.heads), b = (int)(bh / d.heads);
    const int grp = d.heads / d.key_heads;
    const int g = h / grp;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    const int rowblk = chunk * R;
    const int hn = st.fill[b];                    /* records in the ring before this step */
    const bool flush = hn + 1 == L;
    const size_t kg = (size_t)b * d.key_heads + g; /* key-head index */

    /* the checkpoint rows first: their DRAM latency overlaps the staging below */
    const int lr0 = warp * 4;                         /* first local row of this warp */
    const size_t sbase = (bh * d.d_v + rowblk + lr0) * RS_CUDA_DK + 4 * lane;
    float4 s[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) s[r] = ld4(st.S_ckpt + sbase + (size_t)r * RS_CUDA_DK);

    /* stage: ring k, this step's k (rounded like a record) and q, decays, ring values */
    for (int i = threadIdx.x; i < hn * RS_CUDA_DK; i += blockDim.x)
        ks[i] = ring_load<RDT>(st.ring_k, (kg * L) * RS_CUDA_DK + i);
    for (int i = threadIdx.x; i < RS_CUDA_DK; i += blockDim.x) {
        ks[(size_t)hn * RS_CUDA_DK + i] = ring_round<RDT>(io.k[kg * RS_CUDA_DK + i]);
        qs[i] = io.q[kg * RS_CUDA_DK + i];
    }
    for (int j = threadIdx.x; j < hn; j += blockDim.x) al[j] = st.ring_alpha[bh * L + j];
    if (threadIdx.x == 0) al[hn] = io.alpha[bh];
    for (int i = threadIdx.x; i < hn * R; i += blockDim.x) {
        const int j = i / R, r = i % R;
        vs[j * VS + r] = ring_load<RDT>(st.ring_v, (bh * L + j) * d.d_v + rowblk + r);
    }
    if (FAM == RS_SSM_MAMBA2)
        for (int r = threadIdx.x; r < R; r += blockDim.x) vs[hn * VS + r] = ring_round<RDT>(io.v[bh * d.d_v + rowblk + r]);
    __syncthreads();

    /* dot products with q (and k), one warp per record */
    for (int j = warp; j <= hn; j += nwarps) {
        const float4 kj = ld4(ks + (size_t)j * RS_CUDA_DK + 4 * lane);
        kq[j] = rs_dev_warp_sum(dot4(kj, ld4(qs + 4 * lane)));
        if (FAM == RS_SSM_GDN) kk[j] = rs_dev_warp_sum(dot4(kj, ld4(ks + (size_t)hn * RS_CUDA_DK + 4 * lane)));
    }
    /* decay products. Mamba-2 replays records 0..hn (this step included); GDN replays 0..hn-1
     * to get S_{t-1}, then applies this step's update itself. Accumulated in double and
     * rounded once: a float product of L decays carries ~L/2 roundings, and its error is the
     * same for every element of the head (coherent), which made the L = 4 replay 2.4x the
     * sequential fp32 error in the first measurement (docs/kernels-notes.md). */
    if (threadIdx.x == 0) {
        const int last = FAM == RS_SSM_MAMBA2 ? hn : hn - 1;
        double p = 1.0;
        for (int j = last; j >= 0; --j) {
            P[j] = (float)p;
            p = p * (double)al[j];
        }
        *Pck = (float)p;
    }
    __syncthreads();

    const float pck = *Pck;
    const float alpha = al[hn];
    const float4 q4 = ld4(qs + 4 * lane);
    const float4 kc4 = ld4(ks + (size_t)hn * RS_CUDA_DK + 4 * lane);
    float o[4];
    if (!flush) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int lr = lr0 + r;
            if (FAM == RS_SSM_MAMBA2) {
                float part = pck * dot4(s[r], q4);
                for (int j = lane; j <= hn; j += 32) part += (P[j] * kq[j]) * vs[j * VS + lr];
                o[r] = rs_dev_warp_sum(part);
            } else {
                float a = pck * dot4(s[r], kc4), c = pck * dot4(s[r], q4);
                for (int j = lane; j < hn; j += 32) {
                    const float uj = P[j] * vs[j * VS + lr];
                    a += uj * kk[j];
                    c += uj * kq[j];
                }
                const float sk = rs_dev_warp_sum(a), sq = rs_dev_warp_sum(c);
                const float vi = io.v[bh * d.d_v + rowblk + lr];
                const float u = ring_round<RDT>(beta_of(io, bh) * (vi - alpha * sk));
                o[r] = alpha * sq + u * kq[hn];
                if (lane == 0) ring_store<RDT>(st.ring_v, (bh * L + hn) * d.d_v + rowblk + lr, u);
            }
        }
    } else {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int lr = lr0 + r;
            float4 S = make_float4(pck * s[r].x, pck * s[r].y, pck * s[r].z, pck * s[r].w);
            const int nrep = FAM == RS_SSM_MAMBA2 ? hn + 1 : hn;
            for (int j = 0; j < nrep; ++j) {
                const float c = P[j] * vs[j * VS + lr];
                const float4 kj = ld4(ks + (size_t)j * RS_CUDA_DK + 4 * lane);
                S = make_float4(S.x + c * kj.x, S.y + c * kj.y, S.z + c * kj.z, S.w + c * kj.w);
            }
            if (FAM == RS_SSM_GDN) {
                const float sk = rs_dev_warp_sum(dot4(S, kc4));
                const float vi = io.v[bh * d.d_v + rowblk + lr];
                const float u = ring_round<RDT>(beta_of(io, bh) * (vi - alpha * sk));
                S = axpy4(alpha, S, u, kc4);
            }
            o[r] = rs_dev_warp_sum(dot4(S, q4));
            *reinterpret_cast<float4 *>(st.S_ckpt + sbase + (size_t)r * RS_CUDA_DK) = S;
        }
    }
    if (lane == 0)
        *reinterpret_cast<float4 *>(io.o + bh * d.d_v + rowblk + lr0) = make_float4(o[0], o[1], o[2], o[3]);

    /* the new record (non-flush): values of this block's rows, decay and k once per key head */
    if (!flush) {
        if (FAM == RS_SSM_MAMBA2)
            for (int r = threadIdx.x; r < R; r += blockDim.x)
                ring_store<RDT>(st.ring_v, (bh * L + hn) * d.d_v + rowblk + r, vs[hn * VS + r]);
        if (chunk == 0) {
            if (threadIdx.x == 0) st.ring_alpha[bh * L + hn] = alpha;
            if (h % grp == 0)
                for (int i = threadIdx.x; i < RS_CUDA_DK; i += blockDim.x)
                    ring_store<RDT>(st.ring_k, (kg * L + hn) * RS_CUDA_DK + i, ks[(size_t)hn * RS_CUDA_DK + i]);
        }
    }
}

__global__ void rs_k_replay_advance(int32_t *fill, int batch, int L)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < batch) fill[b] = fill[b] + 1 == L ? 0 : fill[b] + 1;
}

template <int FAM, int RDT>
static cudaError_t replay_launch(const rs_ssm_dims *d, const rs_ssm_step_io *io, const rs_cuda_replay_state *st,
                                 cudaStream_t s)
{
    const int R = st->rows_per_block ? st->rows_per_block : replay_rows(d->d_v);
    const size_t smem = replay_smem_bytes(st->L, R);
    if (smem > 48 * 1024) {
        const cudaError_t e = cudaFuncSetAttribute(rs_k_replay_decode<FAM, RDT>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    const unsigned grid = (unsigned)((size_t)d->batch * d->heads * (d->d_v / R));
    rs_k_replay_decode<FAM, RDT><<<grid, 8 * R, smem, s>>>(*d, *io, *st, R);
    return cudaSuccess;
}

extern "C" rs_status rs_cuda_replay_decode(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                           const rs_cuda_replay_state *st, rs_cuda_stream s)
{
    static const char who[] = "rs_cuda_replay_decode";
    RS_TRY(check_dims(dims, io, fam, who));
    RS_CHECK(st && st->S_ckpt && st->ring_v && st->ring_k && st->ring_alpha && st->fill, RS_E_INVAL,
             "%s: NULL state array", who);
    RS_CHECK(st->L >= 1 && st->L <= RS_CUDA_LMAX, RS_E_INVAL, "%s: window L = %d outside 1..%d", who, st->L,
             RS_CUDA_LMAX);
    RS_CHECK(st->rows_per_block == 0 || (st->rows_per_block % 4 == 0 && st->rows_per_block <= 64 &&
                                         dims->d_v % st->rows_per_block == 0),
             RS_E_INVAL, "%s: rows_per_block = %d (need 0, or a multiple of 4 dividing d_v = %d, <= 64)", who,
             st->rows_per_block, dims->d_v);
    RS_CHECK(st->ring_dtype == RS_CUDA_F32 || st->ring_dtype == RS_CUDA_BF16, RS_E_UNSUPPORTED,
             "%s: ring dtype %d (F32 or BF16 only)", who, (int)st->ring_dtype);
    cudaError_t e;
    if (fam == RS_SSM_MAMBA2)
        e = st->ring_dtype == RS_CUDA_F32 ? replay_launch<RS_SSM_MAMBA2, RS_CUDA_F32>(dims, io, st, s)
                                          : replay_launch<RS_SSM_MAMBA2, RS_CUDA_BF16>(dims, io, st, s);
    else
        e = st->ring_dtype == RS_CUDA_F32 ? replay_launch<RS_SSM_GDN, RS_CUDA_F32>(dims, io, st, s)
                                          : replay_launch<RS_SSM_GDN, RS_CUDA_BF16>(dims, io, st, s);
    RS_TRY(rs_cuda_call_status(e, who, "cudaFuncSetAttribute"));
    return rs_cuda_launch_status(who);
}

extern "C" rs_status rs_cuda_replay_advance(int32_t *d_fill, int batch, int L, rs_cuda_stream s)
{
    RS_CHECK(d_fill && batch > 0 && L >= 1, RS_E_INVAL, "rs_cuda_replay_advance: bad arguments (B = %d, L = %d)",
             batch, L);
    rs_k_replay_advance<<<(batch + 255) / 256, 256, 0, s>>>(d_fill, batch, L);
    return rs_cuda_launch_status("rs_cuda_replay_advance");
}
