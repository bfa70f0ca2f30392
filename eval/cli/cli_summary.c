/* cli_summary.c — the summary table that `kl` / `sweep` print at their end and `info LOG`
 * prints for a log: one function, so the two commands print the same text for the same log
 * (the statistics come from rs_h5log_summarize in both: replayssm/eval/rs_kl.h defines them).
 *
 * Layout (every line within 100 columns, whatever the policy strings): a legend of the runs
 * (index, window, policy), then tables keyed by the run index:
 *   KL (nats): mean ±se, median, p90, p95, p99, p99.9, max, n/f (non-finite positions)
 *   Δp, top-1 and PPL: RMS Δp ±se, mean Δp ±se, same top-1 % ±se, ln(PPL(run)/PPL(ref)) ±se
 *   mean KL by position window
 * and with --all-stats the rest of llama.cpp's report: the low KL quantiles (p25 .. p0.1, min)
 * and the Δp quantiles (max, 99.9% .. 0.1%, min) in two blocks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rs_cli.h"

/* level index of q in rs_kl_level (the table is fixed: 0.001 .. 0.999) */
static size_t lv_(double q)
{
    for (size_t i = 0; i < RS_KL_N_LEVELS; i++)
        if (fabs(rs_kl_level(i) - q) < 1e-12) return i;
    return 0;
}

static void e_(FILE *f, double v, int w, int prec)
{
    if (isnan(v)) fprintf(f, " %*s", w, "-");
    else fprintf(f, " %*.*e", w, prec, v);
}

static void pct_(FILE *f, double v, int w)
{
    if (isnan(v)) fprintf(f, " %*s", w, "-");
    else fprintf(f, " %*.3f%%", w - 1, 100.0 * v);
}

void rs_cli_print_summary(FILE *f, size_t n_runs, const char *const *policy, const size_t *window,
                          const rs_kl_summary *s, const rs_h5log_ref_summary *ref, int all_stats)
{
    if (n_runs > 0) {
        char esc[4 * 512 + 1];
        fprintf(f, "\nruns (KL = KL(p_fp32 || p_policy) per position in nats; Δp = p_policy(y) - p_fp32(y)):\n");
        fprintf(f, "%-3s %4s  %s\n", "run", "L", "policy");
        for (size_t r = 0; r < n_runs; r++)
            fprintf(f, "%-3zu %4zu  %s\n", r, window[r], rs_cli_esc(policy[r], esc, sizeof esc));
        fprintf(f, "\n%-3s %10s %10s %10s %10s %10s %10s %10s %10s %6s\n", "run", "mean KL", "±se", "median", "p90",
                "p95", "p99", "p99.9", "max", "n/f");
        for (size_t r = 0; r < n_runs; r++) {
            const rs_kl_summary *x = &s[r];
            fprintf(f, "%-3zu", r);
            e_(f, x->mean_kl, 10, 3);
            e_(f, x->mean_kl_se, 9, 2);
            e_(f, x->kl_q[lv_(0.5)], 10, 3);
            e_(f, x->kl_q[lv_(0.9)], 10, 3);
            e_(f, x->kl_q[lv_(0.95)], 10, 3);
            e_(f, x->kl_q[lv_(0.99)], 10, 3);
            e_(f, x->kl_q[lv_(0.999)], 10, 3);
            e_(f, x->max_kl, 10, 3);
            fprintf(f, " %6zu\n", x->n_nonfinite);
        }
        /* printf pads bytes: "Δ" and "±" are two bytes, one column, hence the widths + 1 */
        fprintf(f, "\n%-3s %10s %9s %10s %9s %9s %9s %12s %10s\n", "run", "RMS Δp", "±se", "mean Δp", "±se", "top1 %",
                "±se", "ln PPL ratio", "±se");
        for (size_t r = 0; r < n_runs; r++) {
            const rs_kl_summary *x = &s[r];
            fprintf(f, "%-3zu", r);
            pct_(f, x->rms_dp, 9);
            pct_(f, x->rms_dp_se, 8);
            pct_(f, x->mean_dp, 9);
            pct_(f, x->mean_dp_se, 8);
            if (isnan(x->same_top1_pct)) fprintf(f, " %9s %8s", "-", "-");
            else fprintf(f, " %8.3f%% %7.3f%%", x->same_top1_pct, x->same_top1_se_pct);
            e_(f, x->ln_ppl_ratio, 12, 4);
            e_(f, x->ln_ppl_ratio_se, 9, 2);
            fprintf(f, "\n");
        }
        if (all_stats) {
            static const double klo[] = {0.25, 0.10, 0.05, 0.01, 0.001};
            fprintf(f, "\nKL, low quantiles (nats):\n%-3s %10s %10s %10s %10s %10s %10s\n", "run", "p25", "p10", "p5",
                    "p1", "p0.1", "min");
            for (size_t r = 0; r < n_runs; r++) {
                fprintf(f, "%-3zu", r);
                for (size_t k = 0; k < sizeof klo / sizeof klo[0]; k++) e_(f, s[r].kl_q[lv_(klo[k])], 10, 3);
                e_(f, s[r].min_kl, 10, 3);
                fprintf(f, "\n");
            }
            static const double hi[] = {0.999, 0.99, 0.95, 0.90, 0.75, 0.50};
            static const double lo[] = {0.25, 0.10, 0.05, 0.01, 0.001};
            fprintf(f, "\nΔp quantiles (percentage points):\n%-3s %9s %9s %9s %9s %9s %9s %9s\n", "run", "max", "99.9%",
                    "99%", "95%", "90%", "75%", "median");
            for (size_t r = 0; r < n_runs; r++) {
                fprintf(f, "%-3zu", r);
                pct_(f, s[r].max_dp, 9);
                for (size_t k = 0; k < sizeof hi / sizeof hi[0]; k++) pct_(f, s[r].dp_q[lv_(hi[k])], 9);
                fprintf(f, "\n");
            }
            fprintf(f, "%-3s %9s %9s %9s %9s %9s %9s\n", "run", "25%", "10%", "5%", "1%", "0.1%", "min");
            for (size_t r = 0; r < n_runs; r++) {
                fprintf(f, "%-3zu", r);
                for (size_t k = 0; k < sizeof lo / sizeof lo[0]; k++) pct_(f, s[r].dp_q[lv_(lo[k])], 9);
                pct_(f, s[r].min_dp, 9);
                fprintf(f, "\n");
            }
        }
        fprintf(f, "\nmean KL by position window (nats):\n%-3s", "run");
        rs_cli_print_window_header(f);
        for (size_t r = 0; r < n_runs; r++) {
            fprintf(f, "%-3zu", r);
            for (size_t w = 0; w < RS_KL_N_WINDOWS; w++) {
                if (s[r].window_n[w]) fprintf(f, " %10.3e", s[r].window_mean_kl[w]);
                else fprintf(f, " %10s", "-");
            }
            fprintf(f, "\n");
        }
    }
    if (ref) rs_cli_print_reference(ref, f);
}
