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
 * uses key head h / (H/G)), d_v = state rows, d_k = state columns (contiguous; 128, and for the
 * standard decode also 64 and 256), L = ReplaySSM window (ring capacity), E = tensor extent of a
 * block quantizer.
 */
#ifndef RS_CUDA_H
#define RS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_qtensor.h"
#include "replayssm/quant/rs_status.h"

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

/* The family enum is the engine's rs_ssm_kind (RS_SSM_MAMBA2, RS_SSM_GDN). */
#include "replayssm/engine/rs_ssm.h"
typedef rs_ssm_kind rs_ssm_family;

/* Storage type of a state or ring buffer. */
typedef enum rs_cuda_dtype { RS_CUDA_F32 = 0, RS_CUDA_F16 = 1, RS_CUDA_BF16 = 2 } rs_cuda_dtype;

#define RS_CUDA_DK 128  /* d_k of every kernel (one float4 per lane, a warp per row). The standard decode
                           (rs_cuda_conv_decode, rs_cuda_replay_decode without ckpt_read) also takes 64 and
                           256 (lane l: d_k / 32 columns); low-precision reads, requant, verification,
                           snapshots and the scan return RS_E_UNSUPPORTED for d_k != 128 */
#define RS_CUDA_LMAX 64 /* largest ReplaySSM window */
#define RS_CUDA_TMAX 16 /* most draft tokens per verification (L + T <= RS_CUDA_LMAX as well) */

typedef struct rs_ssm_dims {
    int batch;     /* B */
    int heads;     /* H value heads */
    int key_heads; /* G key heads, H % G == 0 */
    int d_v;       /* state rows, a multiple of 16 */
    int d_k;       /* state columns: RS_CUDA_DK; 64 or 256 for the standard decode (see RS_CUDA_DK) */
} rs_ssm_dims;

/* Per-step inputs and outputs (fp32). Mamba-2: S = alpha S + v k^T, o = S q.
 * GDN: u = beta (v - alpha S k), S = alpha S + u k^T, o = S q (digest section 1).
 * For T draft tokens (verification) every array is T of these stacked, draft s first index:
 * alpha [T][B][H], v [T][B][H][d_v], k, q [T][B][G][d_k], o [T][B][H][d_v]. */
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

/* Rounding of the checkpoint at a flush (the engine's shared:<fmt> policy for fp16/bf16 formats,
 * and the HP copy of split:<lp>/<hp>): with dtype F16 or BF16 every flush stores
 * S_ckpt <- decode(Q(S)), i.e. values representable in dtype held in the fp32 S_ckpt (what the
 * engine's checkpoint holds), RTN or SR; outputs of the flushing step use the unrounded S, as in
 * the engine. SR element e = row * d_k + col of (row b, head h) uses rs_rand_u32(seeds[b],
 * rs_stream_id(slot, layer, h, flushes[b]), e): the engine's keying with slot RS_SLOT_SHARED (1)
 * for shared:<fmt> (RS_SLOT_HP (2) for a split HP copy) and index = the head's flush count.
 * flushes[b] is kept on the device: rs_cuda_replay_advance_counted (standard decode) and
 * rs_cuda_replay_commit (verification) add 1 for each row that flushed. A zeroed struct (dtype
 * F32) means no rounding: an fp32 checkpoint. */
typedef struct rs_cuda_ckpt_round {
    rs_cuda_dtype dtype;   /* F32 (no rounding), F16 or BF16 */
    rs_rounding rounding;  /* RTN or SR */
    int sr_bits;           /* SR random bits, 1..32 */
    uint32_t layer;        /* SR stream field */
    uint32_t slot;         /* SR stream field */
    const uint64_t *seeds; /* [B] per-sequence seeds (SR only) */
    int64_t *flushes;      /* [B] flushes so far (SR only; advanced by advance_counted / commit) */
} rs_cuda_ckpt_round;

/* Launch options of the ReplaySSM decode and verification: warp geometry and prefetch choices. They never
 * change a result (test_cuda_decode, _verify and _lpread hold every value to the same criteria), only the
 * time; the defaults follow the H200 measurements of docs/kernels.md. Passed per call (the launchers and the
 * rules that report their choices take a pointer; NULL = every default), so threads may use different
 * options. Zero in a field is its default, so a zeroed struct is the default launch. */
typedef struct rs_cuda_launch_opts {
    int warps_per_head;    /* warps that split one head's d_v rows (each walks d_v / w rows in chunks): 0 (default)
                              the smallest power of two that gives ~128 warps per SM (or the most that divide the
                              chunk count), and for the fp32 read, where that grid is one wave (<= 16 warps an SM,
                              e.g. B = 1), the largest divisor of the chunk count that keeps one wave; w > 0: the
                              largest power of two <= w dividing the chunk count. Verification: 0 takes any divisor
                              of its 16-row tile count up to ~128 warps per SM. */
    int lp_heads_per_warp; /* the v4 low-precision read: 0 (default) the automatic rule that
                              rs_cuda_replay_lp_heads_per_warp reports; 1: one head, or a slice of one, a warp
                              (warps_per_head's geometry); h >= 2: each warp walks the largest power of two <= h
                              dividing H / G of whole value heads of one key group as one pipeline (overrides
                              warps_per_head there) */
    int replay_spec;       /* early loads of the fused fp32 read where its grid is one wave and L <= 16:
                              RS_CUDA_SPEC_* (0: RS_CUDA_SPEC_VALUES) */
    int replay_l2pf;       /* L2 prefetch of the fp32 read's non-flush loop (L <= 32): RS_CUDA_L2PF_* (0:
                              RS_CUDA_L2PF_MULTIWAVE) */
    int verify_gshare;     /* the GDN T <= 8 tensor-core verification's B tables: RS_CUDA_GSHARE_* (0:
                              RS_CUDA_GSHARE_WIDEN) */
} rs_cuda_launch_opts;

/* rs_cuda_launch_opts.replay_spec: each warp's first chunk of loads before the fill is known, selected by it after */
#define RS_CUDA_SPEC_DEFAULT 0 /* = RS_CUDA_SPEC_VALUES */
#define RS_CUDA_SPEC_OFF 1     /* the loads wait for the fill */
#define RS_CUDA_SPEC_VALUES 2  /* checkpoint rows, every ring slot's values and decays, this step's v */
#define RS_CUDA_SPEC_KEYS 3    /* those and, with a bf16 ring at d_k = 128, the ring keys (slower on the paper shapes
                                  in docs/kernels.md; kept for benchmarks) */
/* rs_cuda_launch_opts.replay_l2pf: the non-flush loop's chunk two past the register prefetch requested into the L2
 * by one lane (cp.async.bulk.prefetch.L2), so that more of the checkpoint is in flight than a warp's registers hold */
#define RS_CUDA_L2PF_DEFAULT 0   /* = RS_CUDA_L2PF_MULTIWAVE */
#define RS_CUDA_L2PF_OFF 1       /* no L2 prefetch */
#define RS_CUDA_L2PF_MULTIWAVE 2 /* where the main grid is more than one wave */
#define RS_CUDA_L2PF_ALWAYS 3    /* on every launch (tests: their grids are small) */
/* rs_cuda_launch_opts.verify_gshare */
#define RS_CUDA_GSHARE_DEFAULT 0 /* = RS_CUDA_GSHARE_WIDEN */
#define RS_CUDA_GSHARE_OFF 1     /* the B tables a warp */
#define RS_CUDA_GSHARE_BLOCK 2   /* where a block's 4 warps are slices of one head (warps a head a multiple of 4), the
                                    B tables once a block and the checkpoint tile staged */
#define RS_CUDA_GSHARE_WIDEN 3   /* BLOCK, with an automatic geometry of 1 or 2 warps a head first widened to 4 where
                                    d_v / 16 allows */

/* ReplaySSM decode (digest Algorithms 1 and 4). fill[b] = records committed in row b before
 * this step (0..L-1). The step appends one record; row b flushes iff fill[b] + 1 == L.
 *  - non-flush (Mamba-2): o = gamma S_ckpt q + sum_j gamma_{j+1:h} v_j (k_j . q), reading
 *    S_ckpt once; GDN also forms S_{t-1} k and S_{t-1} q from the same pass to get u.
 *    Writes o and the new record (alpha, v or u, k) at ring slot fill[b].
 *  - flush: S = REPLAY(S_ckpt, ring + this step), o = S q, S_ckpt <- S (one read, one write);
 *    the ring empties (slot L-1 holds this step's k and alpha, which nothing reads again).
 * One or two launches (`launch`): FUSED, one launch: every warp of the main kernel forms
 * the coefficients of its own head itself (k_j . q, GDN also k_j . k, for its key head from the ring
 * keys; the float64 decay products of its value head) while its first checkpoint loads are in
 * flight, and one warp per key head / value head stores this step's k / alpha (beta); no scratch
 * is used (`work` may be NULL). PROLOGUE, two launches: a prologue per (row, key head) forms those
 * once per key head into `work` and stores k and alpha, then the main kernel streams the
 * checkpoint. AUTO (0, the default) takes FUSED where it measured faster on the H200 (fp32 reads
 * whose main grid fits in one wave, i.e. small B, or whose warps stream >= 16 chunks) and PROLOGUE
 * elsewhere (docs/kernels.md); rs_cuda_replay_launches says which. Either way warps are independent
 * (no block barrier) and the step is graph-capturable with per-row flush decided on the device.
 * The kernels read fill and never write it (all heads of a row read the same value in one
 * launch); call rs_cuda_replay_advance once per model step, after every layer's decode.
 * Records are rounded to ring_dtype before they are used, so this step's output and later
 * replays see the same values. Ring vectors are F32 or BF16 (RTN); decays are fp32.
 * Low-precision reads (split checkpoint, digest section 4): with ckpt_read set, non-flush rows
 * read that copy (fp16, bf16, fp8 or nvfp4, tensor extent d_v * d_k, as rs_qtensor stores it)
 * and dequantise in registers; flush rows read and write the fp32 S_ckpt, and
 * rs_cuda_replay_requant refreshes the copy of the rows that flushed (RTN, before advance). */
typedef struct rs_cuda_replay_state {
    float *S_ckpt;             /* [B][H][d_v][d_k] fp32 checkpoint */
    void *ring_v;              /* [B][H][L][d_v] Mamba-2 v / GDN u, ring_dtype */
    void *ring_k;              /* [B][G][L][d_k] ring_dtype */
    float *ring_alpha;         /* [B][H][L] */
    rs_cuda_dtype ring_dtype;  /* F32 or BF16 */
    int L;                     /* window, 1..RS_CUDA_LMAX */
    const int32_t *fill;       /* [B] records committed before this step, 0..L-1 */
    float *work;               /* rs_cuda_replay_work_bytes() of scratch (coefficients); used only by the
                                  two-launch path (may be NULL where rs_cuda_replay_launches gives 1) */
    const rs_qtensor *ckpt_read; /* NULL, or the low-precision copy of S_ckpt read by non-flush rows
                                   (a device descriptor; fp16/bf16/fp8/nvfp4, E = d_v * d_k) */
    int rows_per_warp;         /* tuning, fp32 reads at d_k = 128 only (64 / 256: 4): rows per prefetched chunk, 4 (0 = default) or 8;
                                  low-precision reads use 8 (fp16/bf16) or 16 (fp8/nvfp4; GDN 8) */
    int lp_kernel;             /* low-precision read kernel: 0 = AUTO (default: v4), 4 = v4 (16-byte pieces per
                                  lane through a per-warp cp.async pipeline; needs 16-byte aligned codes,
                                  ring_v and io->v, else v3 runs), 3 = v3 (4 columns per lane, register
                                  prefetch), 7 = v7 (v4's pipeline, the dot products as mma.sync on tensor
                                  cores; with the separate prologue only; the same alignment as v4, else
                                  v3); fp32 reads ignore it */
    rs_cuda_ckpt_round ckpt_round; /* rounding of S_ckpt at a flush (zeroed: none) */
    /* GDN two-precision records (engine split:<lp>/<hp>, digest section 4): with both set, every step
     * also stores its raw v (ring_dtype) and beta, and a flush discards the cached u (computed from
     * the copy non-flush rows read) and recomputes them along the checkpoint's own path,
     * u_j = beta_j (v_j - alpha_j S_{j-1} k_j), S_j = alpha_j S_{j-1} + u_j k_j^T from S_ckpt, then
     * this step. Both NULL: the flush folds the cached u (split-naive; shared). Mamba-2 ignores them
     * (its records do not depend on the state). */
    void *ring_vraw;           /* [B][H][L][d_v] raw v, ring_dtype */
    float *ring_beta;          /* [B][H][L] */
    int launch;                /* RS_CUDA_LAUNCH_AUTO (0, default), _PROLOGUE (two launches; needs work) or
                                  _FUSED (one launch; fp32 and v4 reads). The flush-time passes
                                  (ckpt_round, two-precision recompute) and rs_cuda_replay_requant are launches
                                  of their own either way. */
} rs_cuda_replay_state;

/* rs_cuda_replay_state.launch */
#define RS_CUDA_LAUNCH_AUTO 0     /* FUSED for fp32 reads whose main grid fits in one wave (<= 16 warps per SM) or whose
                                     warps walk >= 16 chunks each, else PROLOGUE (docs/kernels.md) */
#define RS_CUDA_LAUNCH_PROLOGUE 1 /* rs_k_replay_prep into work, then the main kernel */
#define RS_CUDA_LAUNCH_FUSED 2    /* the main kernel forms its coefficients itself (v3 and v7 low-precision reads: PROLOGUE) */

/*! rs_cuda_replay_work_bytes() : scratch bytes for the replay and verify kernels at (B, H, L, T). */
size_t rs_cuda_replay_work_bytes(const rs_ssm_dims *dims, int L, int T);

/*! rs_cuda_replay_decode() : one ReplaySSM decode step of B x H heads (per-row flush); opts: the launch options
 *  (NULL: the defaults; RS_E_INVAL for a value outside its range). */
rs_status rs_cuda_replay_decode(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                const rs_cuda_replay_state *st, const rs_cuda_launch_opts *opts, rs_cuda_stream s);

/*! rs_cuda_replay_lp_version() : the kernel version that rs_cuda_replay_decode(fam, ...) runs for the
 *  non-flush rows of these arguments: 0 (no low-precision copy: the fp32 read), 3, 4 or 7 (see lp_kernel). */
int rs_cuda_replay_lp_version(rs_ssm_family fam, const rs_ssm_step_io *io, const rs_cuda_replay_state *st);

/*! rs_cuda_replay_launches() : how many launches rs_cuda_replay_decode issues for the coefficients and the
 *  main pass of these arguments: 1 (the fused kernel) or 2 (prologue + main), after resolving
 *  RS_CUDA_LAUNCH_AUTO (which needs the device's SM count) and v3 / v7 low-precision reads (always 2). The
 *  flush-time passes (ckpt_round, two-precision recompute) come on top. 0 for NULL dims, io or st. */
int rs_cuda_replay_launches(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                            const rs_cuda_replay_state *st, const rs_cuda_launch_opts *opts);

/*! rs_cuda_replay_lp_heads_per_warp() : the value heads a warp of the v4 low-precision read walks in
 *  rs_cuda_replay_decode(fam, dims, io, st, opts): 0 when v4 does not run (rs_cuda_replay_lp_version != 4), 1
 *  for one head or a slice of one (the geometry of warps_per_head), else 2 or 4 whole heads of one key group as
 *  one pipeline. With opts->lp_heads_per_warp 0 (the default): up to 4 (fp16 / bf16: up to 2; the largest
 *  power of two <= that dividing H / G) for GDN reads and nvfp4 reads after the separate prologue when the grid
 *  keeps >= 16 warps per SM (B * H / hpw >= 16 x SMs), else 1 (faster on those shapes on the H200:
 *  docs/kernels.md). */
int rs_cuda_replay_lp_heads_per_warp(rs_ssm_family fam, const rs_ssm_dims *dims, const rs_ssm_step_io *io,
                                     const rs_cuda_replay_state *st, const rs_cuda_launch_opts *opts);

/*! rs_cuda_replay_requant() : for rows b with fill[b] + 1 == L (those that flushed in this
 *  step's decode), st->ckpt_read <- RTN quantisation of their S_ckpt heads (bit-identical to
 *  rs_quantize with the descriptor's format forced to RTN). Call after the decode, before
 *  rs_cuda_replay_advance. */
rs_status rs_cuda_replay_requant(const rs_ssm_dims *dims, const rs_cuda_replay_state *st, rs_cuda_stream s);

/*! rs_cuda_replay_advance() : fill[b] <- fill[b] + 1 == L ? 0 : fill[b] + 1, on the device. */
rs_status rs_cuda_replay_advance(int32_t *d_fill, int batch, int L, rs_cuda_stream s);

/*! rs_cuda_replay_advance_counted() : rs_cuda_replay_advance, and d_flushes[b] += 1 for the rows
 *  that flushed (fill[b] + 1 == L); d_flushes may be NULL (then the same as advance). */
rs_status rs_cuda_replay_advance_counted(int32_t *d_fill, int64_t *d_flushes, int batch, int L, rs_cuda_stream s);

/* ---- speculative verification (digest section 3) ------------------------------------------- */

/* Snapshot baseline (what vLLM ships): T conventional steps from S, each state written to its
 * snapshot slot: 1 read + T writes of the state. Outputs o[T]. Commit selects the snapshot of
 * the accepted length (rs_cuda_snapshot_commit copies it back; vLLM indexes it instead). */
rs_status rs_cuda_snapshot_verify(rs_ssm_family fam, const rs_ssm_dims *dims, int T, const rs_ssm_step_io *io,
                                  const float *S, float *snap /* [T][B][H][d_v][d_k] */, rs_cuda_stream s);

/*! rs_cuda_snapshot_commit() : S[b] <- snap[accepted[b] - 1][b] (accepted in 1..T). */
rs_status rs_cuda_snapshot_commit(const rs_ssm_dims *dims, int T, const int32_t *accepted, const float *snap,
                                  float *S, rs_cuda_stream s);

/* ReplaySSM verification. Ring of capacity C = L + T per row with a rotating origin:
 * logical record j of row b is physical slot (start[b] + j) % C; records 0..fill[b]-1 are
 * committed (fill <= L). The verify kernel writes the T drafts as records fill..fill+T-1
 * (Mamba-2 v; GDN u from the UT solve), computes the T outputs by the output-only form
 * (K^T Q once per key head) from one pass over S_ckpt, and, if fill + T > L (the flush rule of
 * Appendix D.1), also folds the committed records into S_ckpt in the same pass. The commit
 * kernel then sets fill <- (flushed ? 0 : fill) + accepted, start <- start + (flushed ? fill : 0)
 * (pointer rollback: rejected drafts stay where they are and are overwritten later).
 * T <= RS_CUDA_TMAX (16), T <= L, L + T <= cap <= RS_CUDA_LMAX (64). */
typedef struct rs_cuda_verify_state {
    float *S_ckpt;            /* [B][H][d_v][d_k] fp32 */
    void *ring_v;             /* [B][H][C][d_v] Mamba-2 v / GDN u, ring_dtype */
    void *ring_k;             /* [B][G][C][d_k] */
    float *ring_alpha;        /* [B][H][C] */
    rs_cuda_dtype ring_dtype; /* F32 or BF16 */
    int L;                    /* window */
    int cap;                  /* C >= L + T */
    int32_t *fill;            /* [B] committed records h */
    int32_t *start;           /* [B] physical slot of logical record 0 */
    float *work;              /* rs_cuda_replay_work_bytes(dims, L, T) */
    rs_cuda_ckpt_round ckpt_round; /* rounding of S_ckpt at a flush (zeroed: none); commit counts flushes */
    int kernel;               /* main kernel (after the same prologue): RS_CUDA_VERIFY_AUTO (0, default),
                                 _CORES (v3: 2T warp dot products per row on CUDA cores), _TC_V6A or _TC_V6B
                                 (S_ckpt [Q | K_d] and the record sums as m16n8k8 tensor-core products in
                                 3xTF32, fp32 accumulation; the fold of committed records on CUDA cores as in
                                 v3, bit for bit). docs/kernels.md. */
} rs_cuda_verify_state;

/* rs_cuda_verify_state.kernel (docs/kernels.md) */
#define RS_CUDA_VERIFY_AUTO 0    /* _CORES at T <= 2, _TC_V6A at T >= 3: the faster one on the H200 */
#define RS_CUDA_VERIFY_CORES 1   /* v3 CUDA-core main kernel */
#define RS_CUDA_VERIFY_TC_V6B 2  /* tensor cores, 3xTF32, next tile prefetched, B pre-split, 8 warps an SM (slower:
                                    kept for side-by-side benchmarks) */
#define RS_CUDA_VERIFY_TC_V6A 3  /* tensor cores, 3xTF32, 16 warps an SM (the default at T >= 2) */

/*! rs_cuda_replay_verify_kernel() : the main kernel rs_cuda_replay_verify runs for st at T drafts
 *  (RS_CUDA_VERIFY_CORES, _TC_V6A or _TC_V6B; AUTO resolved); 0 for NULL. */
int rs_cuda_replay_verify_kernel(const rs_cuda_verify_state *st, int T);

/*! rs_cuda_replay_verify() : verification of T drafts of B x H heads (see rs_cuda_verify_state); opts: the
 *  launch options (NULL: the defaults; RS_E_INVAL for a value outside its range). */
rs_status rs_cuda_replay_verify(rs_ssm_family fam, const rs_ssm_dims *dims, int T, const rs_ssm_step_io *io,
                                const rs_cuda_verify_state *st, const rs_cuda_launch_opts *opts, rs_cuda_stream s);

/*! rs_cuda_replay_commit() : the pointer commit after acceptance (accepted[b] in 1..T); with
 *  st->ckpt_round.flushes set, also flushes[b] += 1 for the rows whose verify flushed. */
rs_status rs_cuda_replay_commit(const rs_ssm_dims *dims, int T, const int32_t *accepted,
                                const rs_cuda_verify_state *st, rs_cuda_stream s);

/*! rs_cuda_dtype_bytes() : 4, 2, 2. */
size_t rs_cuda_dtype_bytes(rs_cuda_dtype t);

#ifdef __cplusplus
}
#endif
#endif /* RS_CUDA_H */
