/* bench.h — the parts of `replayssm bench` (private to eval/cli/): cmd_bench.c parses the options and
 * drives the sweeps, bench_sweeps.c runs them on the GPU (CUDA builds only), bench_write.c writes
 * the rows through rs_h5file (layout: docs/kernels.md "replayssm bench"; plain C, compiled in
 * every build so the writer is checked without a GPU: tests/test_h5file.c). */
#ifndef RS_CLI_BENCH_H
#define RS_CLI_BENCH_H

#include <stddef.h>

#include "replayssm/eval/rs_h5file.h"

/* One benchmark case's row; the string fields' sizes are the widths of the HDF5 columns. */
typedef struct bn_row {
    char sweep[8], model[24], kernel[24], variant[24], fmt[8];
    int B, L, T, a;
    double median_us, p10_us, p90_us, bytes, gbps, pct_copy, flush_frac, mean_fill, theory_bytes;
    double speedup;  /* std/window: conv / replay at the same B; lp: fp32 read / this read */
    double norm;     /* verify: time / conventional standard step (same model, B) */
    double norm_own; /* verify: snapshot / conv step; ReplaySSM / ReplaySSM standard step (L = 16) */
    double sm_mhz, power_w, pcap_frac; /* the GPU over the row's timed replays (rs_bench_result; NaN: no NVML) */
} bn_row;

typedef struct bn_ctx {
    bn_row *rows;
    size_t n, cap;
    int reps;
    double copy_gbps;
} bn_ctx;

/* What the root of the file records besides the rows. */
typedef struct bn_meta {
    const char *tool, *command, *device;
    int sms;
    size_t l2_bytes;
    double copy_us, copy_bytes;
    double read_us, read_bytes; /* the read-only ceiling (0: not measured, not written) */
} bn_meta;

/* rs_bench_write() : root attributes and one /rows/<column> dataset per field of bn_row into h
 * (the caller creates and closes h; errors are sticky there too). */
rs_status rs_bench_write(rs_h5file *h, const bn_ctx *c, const bn_meta *m);

#ifdef RS_HAVE_CUDA
#include "replayssm/theory/rs_theory.h" /* rs_model_shape */

/* the sweeps of bench_sweeps.c: 0 ok, 1 after a failed case (reported) */
int rs_bench_sweep_std(bn_ctx *c, const rs_model_shape *m, int quick);
int rs_bench_sweep_window(bn_ctx *c, const rs_model_shape *m);
int rs_bench_sweep_verify(bn_ctx *c, const rs_model_shape *m, int quick);
int rs_bench_sweep_lp(bn_ctx *c, const rs_model_shape *m);
int rs_bench_sweep_tcv(bn_ctx *c, const rs_model_shape *m);
int rs_bench_sweep_tcl(bn_ctx *c, const rs_model_shape *m);
/* the row of (sweep, model, kernel, variant, B), or NULL */
bn_row *rs_bench_find_row(bn_ctx *c, const char *sweep, const char *model, const char *kernel, const char *variant,
                          int B);
#endif

#endif /* RS_CLI_BENCH_H */
