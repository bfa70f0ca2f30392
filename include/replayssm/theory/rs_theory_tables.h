/* rs_theory_tables.h — the numbers of the Appendix C tables C.1-C.6 (the library side of
 * `replayssm theory`): each function fills one table's rows and curves for one model shape (or,
 * for C.6, one format and decay) into a caller-owned struct of fixed-size arrays, so a caller
 * prints or stores them as it likes. Nothing here prints, writes files, allocates for the caller
 * or keeps state between calls; failures return an rs_status with the message set
 * (rs_last_error).
 *
 * The formats, windows, decays and Monte Carlo sizes of the tables are fixed here (the constants
 * below) because they are what the tables show; the closed forms themselves are rs_theory.h, the
 * Monte Carlo rs_theory_mc.h, the derivations docs/theory.md. Legend as in rs_theory.h.
 */
#ifndef RS_THEORY_TABLES_H
#define RS_THEORY_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_status.h"
#include "replayssm/theory/rs_theory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- state formats of C.1, C.3, C.5 ---------------------------------------------------- */

#define RS_THEORY_TAB_NFMT 5      /* fp32, fp16, bf16, fp8, nvfp4 (RTN; bytes do not depend on rounding) */
#define RS_THEORY_TAB_CURVE_L 128 /* curves over L = 1 .. RS_THEORY_TAB_CURVE_L */

/*! rs_theory_tab_format() : state format f (0 <= f < RS_THEORY_TAB_NFMT) in the format grammar
 *  ("fp32", "fp16-rtn", "bf16-rtn", "fp8-rtn", "nvfp4-rtn"), or NULL. */
const char *rs_theory_tab_format(size_t f);

/*! rs_theory_tab_label() : its short label ("fp32", "fp16", "bf16", "fp8", "nvfp4"), or NULL. */
const char *rs_theory_tab_label(size_t f);

/* ---- C.1 arithmetic intensity -------------------------------------------------------------- */

typedef struct rs_theory_c1 {
    double b[RS_THEORY_TAB_NFMT];         /* bytes per element at this model's extent d_v d_k */
    double limit[RS_THEORY_TAB_NFMT];     /* 5/(2 b), rs_theory_intensity_limit */
    double intensity[RS_THEORY_TAB_NFMT]; /* (5 d_v d_k - d_v)/(2 b d_v d_k), rs_theory_intensity */
} rs_theory_c1;

/*! rs_theory_table_c1() : C.1 for model m, per state format.
 *  @return RS_OK; RS_E_INVAL for a NULL argument. */
rs_status rs_theory_table_c1(const rs_model_shape *m, rs_theory_c1 *out);

/* ---- C.2 SSM / attention crossover --------------------------------------------------------- */

typedef struct rs_theory_c2 {
    int known;    /* 1: m's attention KV shape is known and x is complete; 0: only x.ssm_bytes_per_step */
    rs_crossover x; /* FP32 state (b = 4); attn_bytes_per_token and n_tokens NaN when !known */
} rs_theory_c2;

/*! rs_theory_table_c2() : C.2 for model m with an FP32 state. A model whose attention shape is
 *  not known is a row too (known = 0, rs_last_error says why), not a failure.
 *  @return RS_OK; RS_E_INVAL for a NULL argument. */
rs_status rs_theory_table_c2(const rs_model_shape *m, rs_theory_c2 *out);

/* ---- C.3 traffic per window ---------------------------------------------------------------- */

#define RS_THEORY_C3_NL 7 /* the table's windows: L = 1, 2, 4, ..., 64 */

typedef struct rs_theory_c3_fmt {
    double b;                             /* bytes per element */
    double ratio[RS_THEORY_C3_NL];        /* M_replay / M_conv in this format at L = rs_theory_c3.L[i] */
    double ratio_vs_fp32;                 /* M_replay(window) in this format / M_conv(window) in fp32 */
    double L[RS_THEORY_TAB_CURVE_L];      /* curves: L[i] = i + 1 */
    double m_conv[RS_THEORY_TAB_CURVE_L]; /* bytes per head per window */
    double m_replay[RS_THEORY_TAB_CURVE_L];
    double m_ratio[RS_THEORY_TAB_CURVE_L]; /* m_replay / m_conv */
} rs_theory_c3_fmt;

typedef struct rs_theory_c3 {
    unsigned L[RS_THEORY_C3_NL];          /* the table's windows */
    unsigned window;                      /* the window of the "vs fp32" column */
    double r;                             /* record bytes, rs_theory_record_bytes */
    rs_theory_c3_fmt fmt[RS_THEORY_TAB_NFMT];
    double split_ratio[RS_THEORY_C3_NL];  /* split nvfp4/fp32 (rs_theory_msplit) / fp32 M_conv at L[i] */
    double split_vs_fp32;                 /* the same at `window` */
} rs_theory_c3;

/*! rs_theory_table_c3() : C.3 for model m; `window` >= 1 is the L of the "vs fp32" column.
 *  @return RS_OK; RS_E_INVAL for a NULL argument or window 0. */
rs_status rs_theory_table_c3(const rs_model_shape *m, unsigned window, rs_theory_c3 *out);

/* ---- C.4 FLOPs of one step ----------------------------------------------------------------- */

#define RS_THEORY_C4_NH 3 /* the table's buffered-record counts h = 0, 7, 15 */

typedef struct rs_theory_c4_row {
    unsigned h;
    double output_only;  /* rs_theory_flops_output_only */
    double materialised; /* rs_theory_flops_materialised */
    double ratio;        /* materialised / output_only */
} rs_theory_c4_row;

/*! rs_theory_table_c4() : C.4 for model m, one row per h.
 *  @return RS_OK; RS_E_INVAL for a NULL argument. */
rs_status rs_theory_table_c4(const rs_model_shape *m, rs_theory_c4_row out[RS_THEORY_C4_NH]);

/* ---- C.5 optimal window -------------------------------------------------------------------- */

typedef struct rs_theory_c5_fmt {
    double M_S;           /* b d_v d_k, bytes of one head's state */
    double ms_over_r;     /* M_S / r */
    int standard_ok;      /* L_standard exists (M_S/r > 1) */
    double L_standard;    /* L* with T = a_bar = 1; NaN when !standard_ok */
    int speculative_ok;   /* L_speculative exists (M_S/r > T) */
    double L_speculative; /* L* with the caller's T, a_bar; NaN when !speculative_ok */
} rs_theory_c5_fmt;

typedef struct rs_theory_c5 {
    double r; /* record bytes */
    rs_theory_c5_fmt fmt[RS_THEORY_TAB_NFMT];
    double f_standard[RS_THEORY_TAB_CURVE_L];    /* fp32: f(L) with T = a_bar = 1, L = 1..128 */
    double f_speculative[RS_THEORY_TAB_CURVE_L]; /* fp32: f(L) with the caller's T, a_bar */
} rs_theory_c5;

/*! rs_theory_table_c5() : C.5 for model m with T drafts and a_bar accepted tokens per step.
 *  A format whose M_S/r is too small for L* is a row too (the *_ok flags), not a failure.
 *  @return RS_OK; RS_E_INVAL for a NULL argument or unless T >= 1 and 0 < a_bar <= T (finite). */
rs_status rs_theory_table_c5(const rs_model_shape *m, double T, double a_bar, rs_theory_c5 *out);

/* ---- C.6 error accumulation: closed forms next to a Monte Carlo ------------------------------
 * Abstract recurrence (rs_theory_mc_accum): per format (RS_THEORY_C6_NFMT) the per-rounding
 * moments are calibrated once (rs_theory_table_c6_calibrate); per decay (RS_THEORY_C6_NALPHA) a cell
 * gives the closed-form limits and the run length (rs_theory_table_c6_cell); per storage a curve puts
 * the closed form next to the ensemble (rs_theory_table_c6_curve, the expensive step). The actual
 * Mamba-2 recurrence (rs_theory_mc_state) is rs_theory_table_c6_state, per format and decay. */

#define RS_THEORY_C6_NFMT 6          /* fp16-sr, bf16-rtn, fp8-rtn, fp8-sr, nvfp4-rtn, nvfp4-sr */
#define RS_THEORY_C6_NALPHA 3        /* alpha = 0.9, 0.99, 0.999 */
#define RS_THEORY_C6_STATE_NFMT 3    /* fp16-sr, nvfp4-rtn, nvfp4-sr */
#define RS_THEORY_C6_MAX_OBS 64      /* observation steps per curve, at most */
#define RS_THEORY_C6_EXTENT 2048ul   /* one tensor of the abstract MC (a multiple of every block) */
#define RS_THEORY_C6_CHAINS 8192ul   /* ensemble of the abstract MC (4 tensors) */
#define RS_THEORY_C6_CAL 1048576ul   /* calibration draws per format */
#define RS_THEORY_C6_STATE_DV 16u    /* state MC head: 16 x 128, 8 replicas (a curve, not a test) */
#define RS_THEORY_C6_STATE_DK 128u
#define RS_THEORY_C6_STATE_R 8ul

/*! rs_theory_c6_format() : abstract-MC format i in the format grammar, or NULL. */
const char *rs_theory_c6_format(size_t i);

/*! rs_theory_c6_state_format() : state-MC format i, or NULL. */
const char *rs_theory_c6_state_format(size_t i);

/*! rs_theory_c6_alpha() : decay i (0.9, 0.99, 0.999), or NaN. */
double rs_theory_c6_alpha(size_t i);

typedef struct rs_theory_c6_cal {
    const char *name;    /* rs_theory_c6_format(i): a static string */
    rs_format fmt;
    rs_err_moments q;    /* per-rounding moments (b, s2) on RS_THEORY_C6_CAL half-normal values */
    rs_err_moments q_se; /* their batch-means standard errors */
} rs_theory_c6_cal;

/*! rs_theory_table_c6_calibrate() : the moments of abstract-MC format i (rs_theory_mc_calibrate,
 *  extent RS_THEORY_C6_EXTENT, on a stream derived from `seed` and apart from the curves').
 *  @return RS_OK; RS_E_INVAL for i out of range or NULL; the calibration's errors. */
rs_status rs_theory_table_c6_calibrate(size_t i, uint64_t seed, rs_theory_c6_cal *out);

typedef struct rs_theory_c6_cell {
    double alpha;
    unsigned window;             /* L of shared and split */
    size_t t_max;                /* last step of the curves: min(ceil(5/(1 - alpha)), mc_steps) */
    rs_err_moments conv_limit;   /* b/(1-alpha), s2/(1-alpha^2) */
    rs_err_moments shared_limit; /* b/(1-alpha^L), s2/(1-alpha^2L) */
} rs_theory_c6_cell;

/*! rs_theory_table_c6_cell() : limits and run length of decay ai for calibrated cal.
 *  @return RS_OK; RS_E_INVAL for NULL, ai out of range, window 0 or mc_steps 0. */
rs_status rs_theory_table_c6_cell(const rs_theory_c6_cal *cal, size_t ai, unsigned window, size_t mc_steps,
                                  rs_theory_c6_cell *out);

typedef struct rs_theory_c6_curve {
    rs_storage storage;
    size_t n; /* points; 0 when t_max is below the first observable step (shared/split: L) */
    /* at ~log-spaced steps t[i] <= t_max, multiples of L for shared and split: */
    double t[RS_THEORY_C6_MAX_OBS];
    double closed_mean[RS_THEORY_C6_MAX_OBS]; /* rs_theory_err_accum with the calibrated moments */
    double closed_var[RS_THEORY_C6_MAX_OBS];
    double mc_mean[RS_THEORY_C6_MAX_OBS];     /* ensemble of RS_THEORY_C6_CHAINS chains */
    double mc_var[RS_THEORY_C6_MAX_OBS];
    double mc_mean_se[RS_THEORY_C6_MAX_OBS];  /* batch means, RS_MC_BATCH chains per batch */
    double mc_var_se[RS_THEORY_C6_MAX_OBS];
    double mean_ratio; /* mc_mean / closed_mean at t[n-1]; NaN when n = 0 */
    double var_ratio;  /* mc_var / closed_var at t[n-1]; NaN when n = 0 */
} rs_theory_c6_curve;

/*! rs_theory_table_c6_curve() : the Monte Carlo of storage s for cell (rs_theory_mc_accum, seed),
 *  next to the closed form.
 *  @return RS_OK; RS_E_INVAL for NULL or a bad storage; the Monte Carlo's errors. */
rs_status rs_theory_table_c6_curve(const rs_theory_c6_cal *cal, const rs_theory_c6_cell *cell, rs_storage s,
                                   uint64_t seed, rs_theory_c6_curve *out);

typedef struct rs_theory_c6_state {
    const char *name; /* rs_theory_c6_state_format(i): a static string */
    double alpha;
    size_t n;         /* points (>= 1), at ~log-spaced steps up to min(ceil(3/(1 - alpha)), mc_steps) */
    /* the fields of rs_mc_state_point, one curve each: */
    double t[RS_THEORY_C6_MAX_OBS];
    double var_meas[RS_THEORY_C6_MAX_OBS];
    double var_meas_se[RS_THEORY_C6_MAX_OBS];
    double var_pred[RS_THEORY_C6_MAX_OBS];
    double var_closed[RS_THEORY_C6_MAX_OBS];
    double msd_meas[RS_THEORY_C6_MAX_OBS];
    double msd_pred[RS_THEORY_C6_MAX_OBS];
    /* the row, at t[n-1]: */
    int deterministic;       /* var_pred <= 1e-12 msd_pred: RTN replicas are identical */
    double var_ratio_pred;   /* var_meas / var_pred (NaN when deterministic) */
    double var_ratio_closed; /* var_meas / var_closed (NaN when deterministic) */
    double msd_ratio_pred;   /* msd_meas / msd_pred */
    double msd_rel_state;    /* msd_meas / state_ms: error energy relative to the state's */
} rs_theory_c6_state;

/*! rs_theory_table_c6_state() : the state Monte Carlo (rs_theory_mc_state) of format i and decay ai:
 *  a RS_THEORY_C6_STATE_DV x RS_THEORY_C6_STATE_DK head, RS_THEORY_C6_STATE_R replicas,
 *  conventional storage, a float64 burn-in of ceil(5/(1 - alpha)) steps.
 *  @return RS_OK; RS_E_INVAL for NULL, i or ai out of range, or mc_steps 0; the Monte Carlo's errors. */
rs_status rs_theory_table_c6_state(size_t i, size_t ai, size_t mc_steps, uint64_t seed, rs_theory_c6_state *out);

#ifdef __cplusplus
}
#endif
#endif /* RS_THEORY_TABLES_H */
