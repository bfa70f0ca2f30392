/* rs_gpu_weights.h — the GPU scorer's GEMM weights (private to eval/gpu/): which GEMM method of
 * kernels/dense/rs_dense_gemm.h a compute mode uses, and every weight matrix of the model prepared
 * for it at create (the TF32 splits, the bf16 or float64 copies), counted in the memory plan. */
#ifndef RS_GPU_WEIGHTS_H
#define RS_GPU_WEIGHTS_H

#include "dense/rs_dense_gemm.h"
#include "kleval/rs_scorer_impl.h"

/* the method of a compute mode: fp32 -> bf16x3, tf32x3 -> tf32x3, tf32 -> tf32, twin -> twin; RS_E_UNSUPPORTED
 * for bf16 (not implemented on the GPU) */
rs_status rsg_gemm_method_of(rs_compute_mode c, rsg_gemm_method *out);

/* ---- the scorer's weights (rs_gpu_plan.cu calls these; rs_gpu_linear looks matrices up) ---- */

/* one GEMM weight matrix of the model: its device view (the key rs_gpu_linear is called with),
 * the operands tf32x3 uses (hi: == key, split in place, or its own copy when the matrix is also
 * read elsewhere, i.e. a tied embedding; lo: NULL when TF32-exact) */
typedef struct rs_gpu_wmat {
    const float *h;   /* host view (the model's slab) */
    size_t rows, cols;
    int exact;        /* TF32-exact: two products */
    int shared;       /* also read as data (lm_head == embed): split into a copy, never in place */
    const float *key, *hi, *lo;
    const void *bf;   /* bf16x3: the device bf16 copy [rows][cols], NULL when not bf16-exact (sgemm);
                         f64: the device double copy [rows][cols] */
    /* a matrix made on the GPU (rs_model.weights_on_device, rs_gpu_devweights.cu); NULL / 0 otherwise */
    const rs_model_matrix *dev; /* its description */
    float *f32;       /* dense: the device fp32 values */
    uint8_t *q;       /* NVFP4: [rows][cols / 2] E2M1 pairs; FP8: [rows][cols] E4M3 */
    uint8_t *qs;      /* NVFP4: [rows][cols / 16] E4M3 block scales */
    float *qscale;    /* device: NVFP4 weight_scale_2, FP8 the tensor scale */
} rs_gpu_wmat;

typedef struct rs_gpu_gemm_state {
    rsg_gemm_method method;
    rs_gpu_wmat *mats;       /* [n_mats], sorted by key after alloc (tf32x3 only) */
    int n_mats, n_exact;
    size_t split_floats;     /* device floats of the split weights (lo, and hi copies) */
    float *split_mem;        /* device [split_floats] */
    size_t ws_floats;        /* X split scratch: 2 M Kmax (tf32x3), 3 M Kmax / 2 (bf16x3) */
    float *ws;
    size_t bf_elems;         /* bf16x3: device bf16 elements of the bf16 weight copies */
    void *bf_mem;
    float *part;             /* bf16x3: the blocks' partial sums */
    size_t part_floats;
    /* diagnostic (env RS_GPU_GEMM_PAD_ROWS=P, read at plan, capped at the rows the buffers hold):
     * every GEMM of fewer than P rows runs as a P-row GEMM into pad_y and copies its M rows out, so
     * the GEMM's shape, and with it cuBLAS's kernel and per-element reduction order, no longer
     * depends on the chunk length. gpu_parity's step path uses it to show that stepping one
     * position at a time is the chunked arithmetic bit for bit once the GEMM shapes agree. */
    size_t pad_rows;
    float *pad_y;            /* device, grown on first use */
    int twin_threads;        /* twin: the CPU thread count whose GEMM slabs it reproduces (RS_TWIN_CPU_THREADS, 2) */
    size_t twin_block;       /* twin: the CPU GEMM's column-block bound in doubles (rs_gemm_blocks.h, RS_CPU_F64_BLOCK) */
    size_t pad_y_floats;
    int dev_mode;            /* the model's matrices are made on the GPU: every GEMM looks its matrix up */
    void *dev_mem;           /* their storage */
    float *deq;              /* fp32 scratch of the largest quantized matrix, decoded before its GEMM */
    size_t deq_floats;
} rs_gpu_gemm_state;

struct rs_scorer;
struct gpu_impl;

/* plan (before any allocation): the method, every GEMM weight matrix of the model and its
 * exactness (tf32x3 only), the device bytes of the split weights (*weight_bytes) and of the X
 * split scratch (*scratch_bytes) for M = RR * chunk rows */
rs_status rs_gpu_gemm_plan(const struct rs_scorer *sc, struct gpu_impl *im, size_t *weight_bytes,
                           size_t *scratch_bytes);
/* after the weights are on the device: allocate the planned bytes, split the inexact matrices */
rs_status rs_gpu_gemm_alloc(const struct rs_scorer *sc, struct gpu_impl *im);
void rs_gpu_gemm_free(struct gpu_impl *im);
/* the describe() part: "gemm tf32x3 (226 of 226 weight matrices TF32-exact: 2 products)" */
void rs_gpu_gemm_describe(const struct gpu_impl *im, char *buf, size_t n);

/* the prepared entry of the matrix whose device view (rs_gpu_linear's W) is W, or NULL (entries are
   sorted by key once allocated) */
const rs_gpu_wmat *rs_gpu_wmat_find(const struct gpu_impl *im, const float *W);

/* ---- matrices made on the GPU (rs_gpu_devweights.cu) ---- */
/* mark the entries of mats that are the model's dev_mats (entry.dev), their storage bytes and the decode scratch */
rs_status rs_gpu_devw_plan(const rs_model *m, rs_gpu_wmat *mats, int n, size_t *weight_bytes, size_t *deq_floats);
/* allocate and make every such matrix (synchronous) */
rs_status rs_gpu_devw_alloc(struct gpu_impl *im);
/* the fp32 operand of a GEMM on entry e: its values, or its decode into the scratch (queued on im->s) */
rs_status rs_gpu_devw_view(struct gpu_impl *im, const rs_gpu_wmat *e, const float **W);
/* one matrix of a batched decode (rs_gpu_devw_decode_jobs): NVFP4 when qs is set, else FP8 */
typedef struct rs_gpu_devw_job {
    const uint8_t *q, *qs;
    const float *qscale;
    float *out;
} rs_gpu_devw_job;
/* job of entry e (a quantized GPU-made matrix) decoding into out */
rs_gpu_devw_job rs_gpu_devw_job_of(const rs_gpu_wmat *e, float *out);
/* decode n_jobs matrices of n values each (device array jobs), queued on im->s as one launch */
rs_status rs_gpu_devw_decode_jobs(struct gpu_impl *im, const rs_gpu_devw_job *jobs, int n_jobs, size_t n);
/* tests and tools: the decoded fp32 values [rows][cols] of the matrix whose model view is `view`, to the host */
rs_status rs_gpu_devw_decode(struct gpu_impl *im, const float *view, float *out);

#endif /* RS_GPU_WEIGHTS_H */
