/* rs_cuda_bench_sweeps.h — the sweeps of `replayssm bench` (C interface): the case list of each sweep,
 * every case timed by the harness (rs_cuda_bench.h) and kept as one row with its derived columns
 * (speedup, norm, norm_own, theory_bytes). Sweeps and columns: docs/kernels.md "replayssm bench".
 *
 *     rs_bench_ctx c = {0};
 *     c.reps = 50, c.copy_gbps = ...;                 // from rs_cuda_bench_copy
 *     c.report = (rs_bench_report){on_heading, on_table, on_row, &my_state};
 *     rs_status st = rs_bench_sweep_std(&c, shape, 0);
 *     ...c.rows[0 .. c.n) (also after a failure: the rows measured before it)...
 *     rs_bench_ctx_free(&c);
 *
 * The library never prints: a sweep announces each table it shows and each row of it through the
 * callbacks of rs_bench_report, in the order a printout shows them, and returns an rs_status whose
 * message names the failing case ("case std:nemotron-3-super:allflush:256 (replay): ..."). The row
 * type is plain C, usable without CUDA (a program that writes or reads rows); the sweeps themselves
 * are in libreplayssm-cuda and take the C.3 traffic model from the theory layer, so a program that
 * calls them links replayssm_theory as well (the CLI links every layer). */
#ifndef RS_CUDA_BENCH_SWEEPS_H
#define RS_CUDA_BENCH_SWEEPS_H

#include <stddef.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/theory/rs_theory.h" /* rs_model_shape */

#ifdef __cplusplus
extern "C" {
#endif

/* One benchmark case's row. The strings are NUL-terminated within their fields (a name that would not
 * fit is refused, so two rows never share a cut name); the field sizes are the string widths of a file
 * that stores the rows (the CLI's HDF5 columns). */
typedef struct rs_bench_row {
    char sweep[8];   /* std, window, verify, lp, tcv, tcl; ref: a reference row another sweep needed */
    char model[24];  /* rs_model_shape.name */
    char kernel[24]; /* conv, replay, verify-snapshot, verify-replay */
    char variant[24];
    char fmt[8];     /* checkpoint format read by non-flush rows */
    int B, L, T, a;  /* batch; window (0: not a ReplaySSM kernel); drafts (1: standard); accepted (verify-replay) */
    double median_us, p10_us, p90_us, bytes; /* rs_bench_result, per step */
    double gbps;     /* bytes / median */
    double pct_copy; /* 100 gbps / rs_bench_ctx.copy_gbps */
    double flush_frac, mean_fill;
    double theory_bytes; /* C.3: mconv(1) x B x H (conv), mreplay(L) / L x B x H (replay, cycle, fp32 read); else 0 */
    double speedup;  /* std/window: conv / replay at the same B (window: B = 256); lp: fp32 read / this read */
    double norm;     /* verify: time / conventional standard step (same model, B) */
    double norm_own; /* verify: snapshot / conv step; ReplaySSM / ReplaySSM standard step (L = 16) */
    double sm_mhz, power_w, pcap_frac; /* the GPU over the row's timed replays (rs_bench_result; NaN: no NVML) */
} rs_bench_row;

/* What a sweep shows, in order; any callback may be NULL. The row pointer is valid during the call only
 * (later rows may move the array). */
typedef struct rs_bench_report {
    void (*heading)(void *user, const char *text); /* a heading over the tables that follow */
    void (*table)(void *user, const char *title);  /* a table of rows starts */
    /* a row of the current table, a new one or one measured earlier (the conventional step a verification
     * table compares with); x: the ratio the table shows for it (the row's speedup or norm), 0: none */
    void (*row)(void *user, const rs_bench_row *row, double x);
    void *user;
} rs_bench_report;

/* The rows of a run and its settings. Zero it, set reps, copy_gbps and report, then call the sweeps in any
 * order: a later sweep reuses the conventional and ReplaySSM rows of an earlier `std` sweep and measures
 * the ones it misses as `ref` rows. */
typedef struct rs_bench_ctx {
    rs_bench_row *rows;     /* every row so far, in the order measured (grown by the sweeps) */
    size_t n, cap;
    int reps;               /* timed graph replays per case (rs_bench_case.reps, >= 1) */
    double copy_gbps;       /* the copy ceiling (rs_cuda_bench_copy: 2 bytes / time), for pct_copy */
    rs_bench_report report;
} rs_bench_ctx;

/*! rs_bench_sweep_*() : run one sweep for model shape m, appending its rows to c and reporting them.
 *  quick (std, verify): the shortened case list of `replayssm bench --quick`. The cases (docs/kernels.md):
 *  std      conventional and ReplaySSM standard decode over B, the launch variants, the parts of the step;
 *  window   ReplaySSM over L at B = 256;
 *  verify   snapshot and ReplaySSM verification over T and L + T = 64 at B = 256, then T = 8 at B = 1;
 *  lp       the non-flush step reading fp32 / fp16 / fp8 / nvfp4 checkpoints, every read kernel;
 *  tcv      T = 8 at B = 256 and 1, every verification main kernel side by side;
 *  tcl      the default verification kernel alone over the verify sweep's (L, T), then T = 8 at B = 1.
 *  @return RS_OK; the harness's status of the first failing case (message: the case and the harness's
 *  message); RS_E_INVAL for a row name longer than its field; RS_E_NOMEM. The rows measured before a
 *  failure stay in c. */
rs_status rs_bench_sweep_std(rs_bench_ctx *c, const rs_model_shape *m, int quick);
rs_status rs_bench_sweep_window(rs_bench_ctx *c, const rs_model_shape *m);
rs_status rs_bench_sweep_verify(rs_bench_ctx *c, const rs_model_shape *m, int quick);
rs_status rs_bench_sweep_lp(rs_bench_ctx *c, const rs_model_shape *m);
rs_status rs_bench_sweep_tcv(rs_bench_ctx *c, const rs_model_shape *m);
rs_status rs_bench_sweep_tcl(rs_bench_ctx *c, const rs_model_shape *m);

/*! rs_bench_find_row() : the row of (sweep, model, kernel, variant, B) in c, or NULL. */
const rs_bench_row *rs_bench_find_row(const rs_bench_ctx *c, const char *sweep, const char *model, const char *kernel,
                                      const char *variant, int B);

/*! rs_bench_ctx_free() : free c's rows and zero its row fields (the settings stay). Accepts NULL. */
void rs_bench_ctx_free(rs_bench_ctx *c);

#ifdef __cplusplus
}
#endif
#endif /* RS_CUDA_BENCH_SWEEPS_H */
