/* bench.h — the file of `replayssm bench` (private to eval/cli/): cmd_bench.c parses the options,
 * drives the sweeps of libreplayssm-cuda (replayssm/cuda/rs_cuda_bench_sweeps.h) and prints their
 * rows; bench_write.c writes the rows through rs_h5file's table writer with the column list below
 * (layout: docs/kernels.md "replayssm bench"). The list is here, in a header, so that the writer's
 * test (tests/test_h5file.c) checks the layout without a GPU and without compiling CLI code. */
#ifndef RS_CLI_BENCH_H
#define RS_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/eval/rs_h5file.h"
#include "replayssm/cuda/rs_cuda_bench_sweeps.h" /* rs_bench_row (plain C, every build) */

/* int fields are the files' int32 columns (the type since the first H200 run) */
_Static_assert(sizeof(int) == sizeof(int32_t), "rs_bench_row ints are the int32 columns");

/* bn_columns() : the columns of /rows, one per field of rs_bench_row, in the files' order; *n their count. */
static inline const rs_h5file_column *bn_columns(size_t *n)
{
#define S_(f) {#f, offsetof(rs_bench_row, f), RS_H5FILE_COL_STR, sizeof(((rs_bench_row *)0)->f), NULL}
#define I_(f, u) {#f, offsetof(rs_bench_row, f), RS_H5FILE_COL_I32, 0, u}
#define D_(f, u) {#f, offsetof(rs_bench_row, f), RS_H5FILE_COL_F64, 0, u}
    static const rs_h5file_column cols[] = {
        S_(sweep), S_(model), S_(kernel), S_(variant), S_(fmt),
        I_(B, "sequences"),
        I_(L, "window (0: not a ReplaySSM kernel)"),
        I_(T, "draft tokens (1: standard decode)"),
        I_(a, "accepted per verification (ReplaySSM verify only)"),
        D_(median_us, "us per step"),
        D_(p10_us, "us per step"),
        D_(p90_us, "us per step"),
        D_(bytes, "bytes that must move per step"),
        D_(gbps, "GB/s (1e9 B/s)"),
        D_(pct_copy, "% of copy bandwidth"),
        D_(flush_frac, "fraction of row-steps that flush"),
        D_(mean_fill, "mean committed records before the step"),
        D_(theory_bytes, "lib/rs_theory.h C.3 bytes per step (0: not modelled)"),
        D_(speedup, "x (see docs/kernels.md)"),
        D_(norm, "verify time / conventional standard step"),
        D_(norm_own, "verify time / own standard step"),
        D_(sm_mhz, "MHz, mean SM clock over the timed replays (NVML samples; NaN: not measured)"),
        D_(power_w, "W, mean board power over the timed replays (NVML samples; NaN: not measured)"),
        D_(pcap_frac, "fraction of the timed replays under the board power cap (NVML; NaN: not measured)"),
    };
#undef S_
#undef I_
#undef D_
    *n = sizeof cols / sizeof cols[0];
    return cols;
}

/* What the root of the file records besides the rows. */
typedef struct bn_meta {
    const char *tool, *command, *device;
    int sms;
    size_t l2_bytes;
    double copy_us, copy_bytes, copy_gbps;
    int reps;
    double read_us, read_bytes; /* the read-only ceiling (0: not measured, not written) */
} bn_meta;

/* bn_write_file() : root attributes and the table /rows (bn_columns) of the n rows into h (the caller
 * creates and closes h; errors are sticky there too). */
rs_status bn_write_file(rs_h5file *h, const rs_bench_row *rows, size_t n, const bn_meta *m);

#endif /* RS_CLI_BENCH_H */
