/* rs_cuda.h — C interface of the CUDA kernels: the quantizer twins of quant/ and the SSM decode
 * kernels (conventional and ReplaySSM). Include from C or C++; link replayssm_cuda.
 *
 * Every pointer named d_* (and every pointer inside the params structs) is device memory.
 * Launchers are asynchronous on the given stream (NULL = legacy default stream), never
 * synchronize, never allocate (except rs_cuda_qtensor_alloc) and are graph-capturable. They
 * return RS_OK, RS_E_INVAL / RS_E_SHAPE / RS_E_UNSUPPORTED for bad arguments (checked on the
 * host before any launch), or RS_E_CUDA if the launch itself failed; the message is in
 * rs_last_error(). Errors raised while a kernel runs surface at the caller's next sync.
 *
 * Legend: B = sequences (batch rows), H = value heads, G = key heads (H % G == 0: value head h
 * uses key head h / (H/G)), d_v = state rows, d_k = state columns (contiguous; 128 in this
 * version), L = ReplaySSM window (ring capacity), E = tensor extent of a block quantizer.
 */
#ifndef RS_CUDA_H
#define RS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "rs_format.h"
#include "rs_minifloat.h"
#include "rs_qtensor.h"
#include "rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same type as cudaStream_t (typedef struct CUstream_st *cudaStream_t) without cuda_runtime.h. */
typedef struct CUstream_st *rs_cuda_stream;

/* Code written by rs_cuda_elem_encode where the CPU codec returns an error (E2M1 of NaN/Inf). */
#define RS_CUDA_CODE_INVALID 0xFFFFFFFFu

/* ======================= quantizer twins (bit-identical to quant/) ======================= */

/*! rs_cuda_rand_fill() : d_out[j] = rs_rand_u32(seed, stream, i0 + j), j < n. */
rs_status rs_cuda_rand_fill(uint64_t seed, uint64_t stream, uint64_t i0, size_t n, uint32_t *d_out,
                            rs_cuda_stream s);

/*! rs_cuda_elem_encode() : d_codes[j] = rs_elem_encode(t, d_x[j], mode, d_r[j], k) for j < n.
 *  d_r may be NULL under RTN. Where the CPU codec fails (E2M1 of a non-finite x) the code is
 *  RS_CUDA_CODE_INVALID. k in [1, 32] under SR. */
rs_status rs_cuda_elem_encode(rs_elem t, rs_rounding mode, int k, const float *d_x, const uint32_t *d_r, size_t n,
                              uint32_t *d_codes, rs_cuda_stream s);

/*! rs_cuda_elem_decode() : d_y[j] = rs_elem_decode(t, d_codes[j]). */
rs_status rs_cuda_elem_decode(rs_elem t, const uint32_t *d_codes, size_t n, float *d_y, rs_cuda_stream s);

/* Device quantized tensors reuse rs_qtensor: the same fields, formulas and byte layout (one
 * slab, codes first, see rs_qtensor_alloc), with every pointer in device memory. So
 * cudaMemcpy(host_q.codes, dev_q.codes, rs_qtensor_bytes(&dev_q)) gives a host rs_qtensor
 * that rs_dequantize reads. */

/*! rs_cuda_qtensor_alloc() : rs_qtensor_alloc's checks and layout, storage from cudaMalloc. */
rs_status rs_cuda_qtensor_alloc(rs_qtensor *q, const rs_format *f, size_t n, size_t tensor_extent);

/*! rs_cuda_qtensor_free() : cudaFree the slab; accepts NULL and zeroed descriptors. */
void rs_cuda_qtensor_free(rs_qtensor *q);

/*! rs_cuda_quantize() : rs_quantize on the device (SR word of element i: rs_rand_u32(seed,
 *  stream, i)). Input must be finite: the CPU's RS_E_NONFINITE check needs a host sync, so
 *  here non-finite input gives unspecified codes and no error. */
rs_status rs_cuda_quantize(rs_qtensor *dq, const float *d_x, uint64_t seed, uint64_t stream, rs_cuda_stream s);

/*! rs_cuda_dequantize() : rs_dequantize on the device. */
rs_status rs_cuda_dequantize(const rs_qtensor *dq, float *d_y, rs_cuda_stream s);

/*! rs_cuda_quantize_roundtrip() : rs_quantize_roundtrip on the device (d_y may equal d_x). */
rs_status rs_cuda_quantize_roundtrip(const rs_format *f, const float *d_x, size_t n, size_t tensor_extent,
                                     uint64_t seed, uint64_t stream, float *d_y, rs_cuda_stream s);

/* ================================== SSM decode kernels ================================== */

typedef enum rs_ssm_family { RS_SSM_MAMBA2 = 0, RS_SSM_GDN = 1 } rs_ssm_family;

/* Storage type of a state or ring buffer. */
typedef enum rs_cuda_dtype { RS_CUDA_F32 = 0, RS_CUDA_F16 = 1, RS_CUDA_BF16 = 2 } rs_cuda_dtype;

#define RS_CUDA_DK 128 /* d_k supported by this version (one float4 per lane, a warp per row) */
#define RS_CUDA_LMAX 64 /* largest ReplaySSM window */

typedef struct rs_ssm_dims {
    int batch;     /* B */
    int heads;     /* H value heads */
    int key_heads; /* G key heads, H % G == 0 */
    int d_v;       /* state rows, a multiple of 16 */
    int d_k;       /* state columns, RS_CUDA_DK */
} rs_ssm_dims;

/* Per-step inputs and outputs (fp32). Mamba-2: S = alpha S + v k^T, o = S q.
 * GDN: u = beta (v - alpha S k), S = alpha S + u k^T, o = S q (digest section 1). */
typedef struct rs_ssm_step_io {
    const float *alpha; /* [B][H] decay in (0, 1) */
    const float *beta;  /* [B][H] GDN write strength in (0, 1); unused (may be NULL) for Mamba-2 */
    const float *v;     /* [B][H][d_v] */
    const float *k;     /* [B][G][d_k] */
    const float *q;     /* [B][G][d_k] */
    float *o;           /* [B][H][d_v] output */
} rs_ssm_step_io;

/* Conventional decode: the state is read, updated and written every step.
 * fp16/bf16 states are updated in fp32 registers and stored with RTN or SR; SR element
 * e = row * d_k + col of (row b, head h) uses rs_rand_u32(seeds[b],
 * rs_stream_id(sr_slot, layer, h, steps[b]), e), the keying of one sequence on the CPU. */
typedef struct rs_cuda_conv_state {
    void *S;               /* [B][H][d_v][d_k] in dtype, updated in place */
    rs_cuda_dtype dtype;   /* F32, F16 or BF16 */
    rs_rounding rounding;  /* F16/BF16 store rounding */
    int sr_bits;           /* SR random bits, 1..32 */
    uint32_t layer;        /* SR stream field */
    uint32_t sr_slot;      /* SR stream field */
    const uint64_t *seeds; /* [B] per-sequence seeds (SR only; may be NULL otherwise) */
    const int64_t *steps;  /* [B] per-sequence step index (SR only; may be NULL otherwise) */
} rs_cuda_conv_state;

/*! rs_cuda_conv_decode() : one conventional decode step of B x H heads. */
rs_status rs_cuda_conv_decode(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                              const rs_cuda_conv_state *st, rs_cuda_stream s);

/* ReplaySSM decode (digest Algorithms 1 and 4). fill[b] = records committed in row b before
 * this step (0..L-1). The step appends one record; row b flushes iff fill[b] + 1 == L.
 *  - non-flush (Mamba-2): o = gamma S_ckpt q + sum_j gamma_{j+1:h} v_j (k_j . q), reading
 *    S_ckpt once; GDN also forms S_{t-1} k and S_{t-1} q from the same pass to get u.
 *    Writes o and the new record (alpha, v or u, k) at ring slot fill[b].
 *  - flush: S = REPLAY(S_ckpt, ring + this step), o = S q, S_ckpt <- S (one read, one write),
 *    and the record is not stored (the ring empties).
 * The kernel reads fill and never writes it (all heads of a row read the same value in one
 * launch); call rs_cuda_replay_advance once per model step, after every layer's decode.
 * Records are rounded to ring_dtype before they are used, so this step's output and later
 * replays see the same values. k is stored once per key head (by the first value head of the
 * group). Ring vectors are F32 or BF16 (RTN); decays are fp32. */
typedef struct rs_cuda_replay_state {
    float *S_ckpt;             /* [B][H][d_v][d_k] fp32 checkpoint */
    void *ring_v;              /* [B][H][L][d_v] Mamba-2 v / GDN u, ring_dtype */
    void *ring_k;              /* [B][G][L][d_k] ring_dtype */
    float *ring_alpha;         /* [B][H][L] */
    rs_cuda_dtype ring_dtype;  /* F32 or BF16 */
    int L;                     /* window, 1..RS_CUDA_LMAX */
    const int32_t *fill;       /* [B] records committed before this step, 0..L-1 */
    int rows_per_block;        /* tuning: state rows per CUDA block, a multiple of 4 dividing d_v,
                                  <= 64; 0 = the largest such (64 for d_v = 64 and 128) */
} rs_cuda_replay_state;

/*! rs_cuda_replay_decode() : one ReplaySSM decode step of B x H heads (per-row flush). */
rs_status rs_cuda_replay_decode(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                const rs_cuda_replay_state *st, rs_cuda_stream s);

/*! rs_cuda_replay_advance() : fill[b] <- fill[b] + 1 == L ? 0 : fill[b] + 1, on the device. */
rs_status rs_cuda_replay_advance(int32_t *d_fill, int batch, int L, rs_cuda_stream s);

/*! rs_cuda_dtype_bytes() : 4, 2, 2. */
size_t rs_cuda_dtype_bytes(rs_cuda_dtype t);

#ifdef __cplusplus
}
#endif
#endif /* RS_CUDA_H */
