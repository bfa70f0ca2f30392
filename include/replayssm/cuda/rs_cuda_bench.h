/* rs_cuda_bench.h — timing harness of the decode kernels, for `replayssm bench` (C interface).
 *
 * Method (docs/kernels.md "Benchmark"): every case allocates its own input sets (state,
 * ring, step inputs), fills them with non-zero random values, and rotates among enough sets
 * that one pass over them is larger than twice the L2, so no step reads its state from
 * cache. A CUDA graph holds `steps` consecutive decode steps (step p uses set p mod sets and,
 * for ReplaySSM, the fill pattern of phase p); after warm-up replays, each of `reps` graph
 * replays is timed with CUDA events and divided by `steps`. Reported: median, 10th and 90th
 * percentiles of the per-step time, and the bytes that must move per step (each byte read
 * once from DRAM, written once), computed from the exact fills of the case.
 *
 * Fill patterns (per-row ring fill h before the step):
 *   standard ReplaySSM decode, RS_BENCH_FILL_CYCLE: row b starts at phase b mod L and every
 *     step advances all rows by one, so a graph of L steps covers a whole window for every
 *     row: flush cost amortised exactly, also at B < L (B = 1 flushes once per L steps);
 *   RS_BENCH_FILL_FIXED: all rows at `fill` (no flush when fill + 1 < L);
 *   RS_BENCH_FILL_FLUSH: all rows at L - 1 (every row flushes).
 *   Verification: the steady-state cycle of h under the flush rule h + T > L with `accepted`
 *     tokens per step (h <- h + a, or a after a flush); row b starts at phase b mod cycle.
 */
#ifndef RS_CUDA_BENCH_H
#define RS_CUDA_BENCH_H

#include "replayssm/cuda/rs_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rs_bench_kernel {
    RS_BENCH_CONV = 0,            /* conventional decode, fp32 state */
    RS_BENCH_REPLAY = 1,          /* ReplaySSM standard decode (fused or prologue + main: rs_bench_case.launch) */
    RS_BENCH_VERIFY_SNAPSHOT = 2, /* snapshot verification of T drafts (1R + T W) */
    RS_BENCH_VERIFY_REPLAY = 3    /* ReplaySSM output-only verification of T drafts */
} rs_bench_kernel;

typedef enum rs_bench_fill { RS_BENCH_FILL_CYCLE = 0, RS_BENCH_FILL_FIXED = 1, RS_BENCH_FILL_FLUSH = 2 } rs_bench_fill;

typedef struct rs_bench_case {
    rs_bench_kernel kernel;
    rs_ssm_family fam;
    rs_ssm_dims dims;
    int L;                     /* window (replay kernels) */
    int T;                     /* drafts (verify kernels) */
    int accepted;              /* a, 1..T (verify replay: sets the fill cycle) */
    rs_bench_fill fill_mode;   /* standard replay */
    int fill;                  /* RS_BENCH_FILL_FIXED */
    rs_cuda_dtype ring_dtype;  /* F32 or BF16 */
    rs_format_kind read_fmt;   /* standard replay: checkpoint read by non-flush rows (FP32 = S_ckpt) */
    int rows_per_warp;         /* 0 = the launcher's default */
    int lp_kernel;             /* standard replay, low-precision read: rs_cuda_replay_state.lp_kernel (0 = AUTO, 3 = v3, 4 = v4, 7 = v7) */
    int launch;                /* standard replay: rs_cuda_replay_state.launch (RS_CUDA_LAUNCH_AUTO / _PROLOGUE / _FUSED) */
    int verify_kernel;         /* verify replay: rs_cuda_verify_state.kernel (RS_CUDA_VERIFY_AUTO / _CORES / _TC_V6A / _TC_V6B) */
    rs_cuda_launch_opts opts;  /* ReplaySSM decode and verification: the launch options (zeroed: the defaults) */
    int reps;                  /* timed graph replays (>= 1) */
    int warmup;                /* untimed graph replays */
    const char *label;         /* NULL, or an NVTX range around the case (e.g. "std:nemotron-3-super:allflush:256", so
                                  that `ncu --nvtx --nvtx-include LABEL/` profiles one row's launches) */
} rs_bench_case;

typedef struct rs_bench_result {
    double median_us, p10_us, p90_us; /* per decode step */
    double bytes;                     /* bytes that must move per step (mean over the graph) */
    double flush_frac;                /* fraction of row-steps that flush */
    double mean_fill;                 /* mean h before the step */
    int sets, steps;                  /* input sets rotated, steps per graph */
    /* over the timed replays, through NVML (NaN where it is missing): the mean SM clock (MHz, read after each
     * replay), the mean board power (W, the driver's samples) and the fraction of the time the board's power cap
     * held the clocks down (the H200 caps at 700 W, which the B >= 128 ReplaySSM steps reach: docs/kernels.md
     * "Clocks and power") */
    double sm_mhz, power_w, pcap_frac;
} rs_bench_result;

/*! rs_cuda_bench_device() : device name, SM count, L2 bytes, global memory bytes. */
rs_status rs_cuda_bench_device(char *name, size_t name_size, int *sms, size_t *l2_bytes, size_t *mem_bytes);

/*! rs_cuda_bench_copy() : median time of a device-to-device cudaMemcpyAsync of `bytes`
 *  (the copy ceiling counts 2 * bytes moved). */
rs_status rs_cuda_bench_copy(size_t bytes, int reps, double *median_us);

/*! rs_cuda_bench_read() : median time of a kernel that reads `bytes` once (16-byte loads, nothing written):
 *  the read-only ceiling, bytes / time (the floor of the non-flush steps, which only read the checkpoint). */
rs_status rs_cuda_bench_read(size_t bytes, int reps, double *median_us);

/*! rs_cuda_bench_run() : time one case (allocates and frees its buffers). */
rs_status rs_cuda_bench_run(const rs_bench_case *c, rs_bench_result *r);

/*! rs_cuda_bench_power_unavailable() : why rs_bench_result's sm_mhz / power_w / pcap_frac are NaN (e.g. "libnvidia-ml.so.1
 *  not found"), or NULL when they are measured (valid after a case has run). */
const char *rs_cuda_bench_power_unavailable(void);

#ifdef __cplusplus
}
#endif
#endif /* RS_CUDA_BENCH_H */
