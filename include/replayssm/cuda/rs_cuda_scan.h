/* rs_cuda_scan.h — the state engine on the GPU for teacher-forced chunks: every policy of
 * rs_policy.h (fp32, conv:<fmt>, shared:<fmt>, split:<lp>/<hp>, split-naive:<lp>/<hp>; every
 * format of rs_format.h, RTN and SR with k bits) for R runs x H heads of the SSM layers of a
 * model, T consecutive positions of one layer per launch. The GPU evaluator (eval/gpu/) calls
 * it once per SSM layer and chunk; tests/cuda/test_cuda_scan.cu checks it against engine/
 * (rs_head_decode, one head object per (run, layer, head), token by token).
 *
 * Semantics = rs_head_decode's (engine/rs_head.h), token by token, per (run, layer, head):
 *   fp32, conv:<fmt>   S_t = step(S_{t-1}); o_t = S_t q_t from the unrounded S_t; then
 *                      S_t <- Q_fmt(S_t) (SR stream rs_stream_id(RS_SLOT_CONV, layer, head, t)).
 *   shared:<fmt>       the output of the ReplaySSM decode; in exact arithmetic the conventional
 *                      recurrence from the checkpoint C with the window's records, i.e. a running
 *                      fp32 state W (W <- step(W)), o_t = W_t q_t; at a flush (the L-th record of
 *                      the window: positions L-1, 2L-1, ...) C <- Q_fmt(W) (slot RS_SLOT_SHARED,
 *                      index = flush count) and W <- C.
 *   split:<lp>/<hp>    two running states from the two checkpoints: W_lp (from C_lp; carries the
 *                      cached records: GDN u = beta (v - alpha W_lp k)) gives the non-flush
 *                      outputs; W_hp (from C_hp) the HP path (split: GDN u recomputed along it;
 *                      split-naive: the cached u folded). A split flush happens when the window
 *                      already holds L committed records (positions L, 2L, ...: one token later
 *                      than shared): C_hp <- Q_hp(W_hp) (slot RS_SLOT_HP), C_lp <- Q_lp(W_hp)
 *                      (slot RS_SLOT_LP), both indexed by the flush count; that step's token is
 *                      then solved and output from the unrounded W_hp, and both running states
 *                      restart from their checkpoints with that token as the window's record 0.
 *   The initial state is zero (rs_head_reset(hd, NULL)).
 * The engine evaluates replay outputs in the output-only form (checkpoint pass plus record
 * sums); this file keeps running states instead (the same value in exact arithmetic, one state
 * update per token instead of a window of record dots). So results agree with engine/ to fp32
 * rounding (not bit for bit) for fp32 formats, and for rounded formats up to the rounding
 * decisions those last bits flip; SR bits come from the same counter-based streams (the same
 * seed, slot, layer, head, index and element index as rs_quantize_roundtrip), so a GPU run
 * follows a CPU run of the same policy closely. Tolerances: tests/cuda/test_cuda_scan.cu.
 *
 * Non-finite values (a NaN alpha or beta, a non-finite output or stored state) are detected
 * where they appear, as in the engine: the first position is kept per (run, layer, head), and
 * from then on that head's outputs are NaN (sticky, as rs_head) until rs_cuda_scan_reset; the
 * other heads and runs go on. The position is the engine's (rs_head_first_nonfinite): a store
 * that fails at a split flush at position p is reported at p - 1 (the newest token the
 * checkpoint holds), as engine/rs_head.c's flush_store_ does. The outputs are NaN from the
 * step that detected it (p for such a store) on.
 *
 * Every pointer in rs_cuda_scan_io is device memory; the object's state is device memory
 * allocated at create. Launches are asynchronous on the given stream and never allocate.
 */
#ifndef RS_CUDA_SCAN_H
#define RS_CUDA_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/engine/rs_policy.h"
#include "replayssm/engine/rs_ssm.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef RS_CUDA_STREAM_DEFINED
#define RS_CUDA_STREAM_DEFINED
typedef struct CUstream_st *rs_cuda_stream; /* = cudaStream_t (as in rs_cuda.h) */
#endif

typedef struct rs_cuda_scan rs_cuda_scan;

typedef struct rs_cuda_scan_config {
    rs_ssm_kind kind;          /* RS_SSM_MAMBA2 or RS_SSM_GDN */
    int n_runs;                /* R >= 1 (the evaluator passes the fp32 reference as run 0) */
    int n_layers;              /* SSM layers held (ordinal 0 .. n_layers-1, the caller's order) */
    const uint32_t *layer_ids; /* [n_layers] model layer index of each: the `layer` of the SR
                                  streams and of messages (rs_head_config.layer); copied */
    int heads;                 /* H value heads (GDN: Hv; Mamba-2: heads) */
    int key_heads;             /* G: value head h reads key/query head h / (H/G) (Mamba-2: groups) */
    int d_v;                   /* state rows (GDN dv, Mamba-2 head_dim P) */
    int d_k;                   /* state columns (GDN dk, Mamba-2 d_state N) */
    const rs_policy *policies; /* [R] (copied) */
    const size_t *windows;     /* [R] replay window L >= 1 of each run (copied; conv ignores it) */
    const uint64_t *seeds;     /* [R] SR seed of each run (copied) */
    int max_chunk;             /* most positions T per rs_cuda_scan_chunk (1 .. 2^22) */
} rs_cuda_scan_config;

/* Inputs and outputs of one layer over T positions for all R runs. Row (r, t) = r * T + t.
 * alpha of (r, t, h) at alpha[(r*T + t) * ld_a + h]; beta likewise (GDN only, else NULL);
 * v of (r, t, h) at v + (r*T + t) * ld_v + h * d_v; k, q of (r, t, g) at k + (r*T+t) * ld_k +
 * g * d_k (q: ld_q); o of (r, t, h) at o + (r*T + t) * ld_o + h * d_v. v, k and q are read as
 * float4: they must be 16-byte aligned and ld_v, ld_k, ld_q multiples of 4; every ld is at least
 * a row (ld_a >= H, ld_v, ld_o >= H*d_v, ld_k, ld_q >= G*d_k); o must not overlap the inputs
 * (RS_E_INVAL otherwise, except the overlap, which is not checked). */
typedef struct rs_cuda_scan_io {
    int T;
    const float *alpha, *beta;
    size_t ld_a;
    const float *v;
    size_t ld_v;
    const float *k;
    size_t ld_k;
    const float *q;
    size_t ld_q;
    float *o;
    size_t ld_o;
} rs_cuda_scan_io;

/*! rs_cuda_scan_bytes() : device bytes rs_cuda_scan_create will allocate for cfg (the
 *  evaluator's memory plan); 0 if cfg is invalid. */
size_t rs_cuda_scan_bytes(const rs_cuda_scan_config *cfg);

/*! rs_cuda_scan_create() : check cfg (as rs_head_init would: formats' blocks divide d_v*d_k,
 *  windows >= 1; d_k and d_v within what the kernels support, else RS_E_UNSUPPORTED), allocate
 *  the device states and reset them. @return RS_OK, RS_E_INVAL, RS_E_UNSUPPORTED, RS_E_CUDA
 *  (the message says how many bytes were asked for). */
rs_status rs_cuda_scan_create(const rs_cuda_scan_config *cfg, rs_cuda_scan **out);

/*! rs_cuda_scan_free() : release; accepts NULL. */
void rs_cuda_scan_free(rs_cuda_scan *s);

/*! rs_cuda_scan_reset() : every state zero, every layer back to position 0, non-finite marks
 *  cleared (asynchronous on st). */
rs_status rs_cuda_scan_reset(rs_cuda_scan *s, rs_cuda_stream st);

/*! rs_cuda_scan_chunk() : the next io->T positions of SSM layer `layer` (ordinal) for every run
 *  and head; the layer's position advances by T. Split runs (two states) run on a side stream
 *  of the object, forked from st and joined back to it by events (so everything queued on st
 *  after the call waits for them; RS_CUDA_SCAN_SERIAL=1 keeps both launches on st, same bits).
 *  @return RS_OK, RS_E_INVAL (T outside
 *  1..max_chunk, NULL pointers, layer out of range, misaligned v/k/q or short strides),
 *  RS_E_CUDA (launch failed). */
rs_status rs_cuda_scan_chunk(rs_cuda_scan *s, int layer, const rs_cuda_scan_io *io, rs_cuda_stream st);

/*! rs_cuda_scan_chunk_runs() : rs_cuda_scan_chunk for the runs run0 .. run0 + n_runs - 1 only,
 *  which are at position pos0 of layer `layer` (the caller keeps the positions: the evaluator's
 *  streams, i.e. books batched, hold their runs at different positions); io rows are
 *  (r - run0) * T + t. The position rs_cuda_scan_chunk keeps is not touched. @return as
 *  rs_cuda_scan_chunk, RS_E_INVAL also for a run range outside 0 .. n_runs - 1. */
rs_status rs_cuda_scan_chunk_runs(rs_cuda_scan *s, int layer, int run0, int n_runs, uint64_t pos0,
                                  const rs_cuda_scan_io *io, rs_cuda_stream st);

/*! rs_cuda_scan_reset_runs() : rs_cuda_scan_reset for the runs run0 .. run0 + n_runs - 1 only
 *  (their states zero, their non-finite marks cleared; asynchronous on st). */
rs_status rs_cuda_scan_reset_runs(rs_cuda_scan *s, int run0, int n_runs, rs_cuda_stream st);

/*! rs_cuda_scan_first_nonfinite() : copy the first non-finite position of every (run, layer,
 *  head) to the host, out[(r * n_layers + layer) * H + h], -1 where finite (synchronizes st). */
rs_status rs_cuda_scan_first_nonfinite(rs_cuda_scan *s, int64_t *out, rs_cuda_stream st);

#ifdef __cplusplus
}
#endif
#endif /* RS_CUDA_SCAN_H */
