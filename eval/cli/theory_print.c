/* theory_print.c — `replayssm theory` tables C.1-C.6 on stdout and their curves in the output
 * file (theory.h). The numbers are the theory library's (replayssm/theory/rs_theory_tables.h):
 * this file only lays them out. Derivations: docs/theory.md. */
#include <math.h>
#include <stdio.h>

#include "rs_cli.h" /* rs_cli_fail */
#include "theory.h"
#include "replayssm/theory/rs_theory_tables.h"

#define NFMT RS_THEORY_TAB_NFMT
#define NL RS_THEORY_C3_NL

/* printed the way the paper rounds: half away from zero */
static double round_dp(double x, int dp)
{
    double s = pow(10.0, dp);
    return round(x * s) / s;
}

/* 1-D double dataset `path` with a `units` attribute (nothing when h == NULL) */
static void th_vec(rs_h5file *h, const char *path, const double *v, size_t n, const char *units)
{
    if (!h) return;
    /* errors are sticky (rs_h5file.h): the first one is reported by rs_h5file_close */
    const size_t dims[1] = {n};
    if (rs_h5file_write_f64(h, path, 1, dims, v) == RS_OK) (void)rs_h5file_attr_str(h, path, "units", units);
}

int rs_th_table_c1(const rs_model_shape **ms, size_t nm, rs_h5file *h)
{
    rs_theory_c1 c[TH_MAX_MODELS];
    for (size_t m = 0; m < nm && m < TH_MAX_MODELS; ++m) {
        rs_status st = rs_theory_table_c1(ms[m], &c[m]);
        if (st != RS_OK) return rs_cli_fail("theory", "C.1", st);
    }
    if (nm > TH_MAX_MODELS) nm = TH_MAX_MODELS;
    printf("## C.1 arithmetic intensity of conventional decode: (5 d_v d_k - d_v) / (2 b d_v d_k)\n\n");
    printf("| format | b (B/elem) | limit 5/(2b) | paper-rounded |");
    for (size_t m = 0; m < nm; ++m) printf(" %s |", ms[m]->name);
    printf("\n|---|---|---|---|");
    for (size_t m = 0; m < nm; ++m) printf("---|");
    printf("\n");
    for (size_t f = 0; f < NFMT; ++f) { /* b and the limit at the first model's extent */
        printf("| %s | %.6g | %.4f | %.2f |", rs_theory_tab_label(f), c[0].b[f], c[0].limit[f],
               round_dp(c[0].limit[f], 2));
        for (size_t m = 0; m < nm; ++m) printf(" %.4f |", c[m].intensity[f]);
        printf("\n");
    }
    printf("\n(b for the first model's state extent; nvfp4's per-tensor scale makes b depend on d_v d_k.)\n\n");
    th_vec(h, "/c1/bytes_per_element", c[0].b, NFMT, "bytes per element (fp32, fp16, bf16, fp8, nvfp4)");
    th_vec(h, "/c1/intensity_limit", c[0].limit, NFMT, "FLOP/byte, 5/(2b)");
    for (size_t m = 0; m < nm; ++m) {
        char p[256];
        snprintf(p, sizeof p, "/c1/intensity/%s", ms[m]->name);
        th_vec(h, p, c[m].intensity, NFMT, "FLOP/byte per format (fp32, fp16, bf16, fp8, nvfp4)");
    }
    return 0;
}

int rs_th_table_c2(const rs_model_shape **ms, size_t nm, rs_h5file *h)
{
    printf("## C.2 SSM vs attention crossover (FP32 state read + write per step vs KV read)\n\n");
    printf("| model | SSM MiB/step | attention KiB/token | crossover N (tokens) |\n|---|---|---|---|\n");
    for (size_t m = 0; m < nm; ++m) {
        rs_theory_c2 c;
        rs_status st = rs_theory_table_c2(ms[m], &c);
        if (st != RS_OK) return rs_cli_fail("theory", "C.2", st);
        double v[3] = {NAN, NAN, NAN};
        if (c.known) {
            printf("| %s | %.1f | %.3f | %.0f |\n", ms[m]->name, c.x.ssm_bytes_per_step / 1048576.0,
                   c.x.attn_bytes_per_token / 1024.0, c.x.n_tokens);
            v[0] = c.x.ssm_bytes_per_step, v[1] = c.x.attn_bytes_per_token, v[2] = c.x.n_tokens;
        } else {
            printf("| %s | %.1f | n/a | n/a (attention KV shape not in sources) |\n", ms[m]->name,
                   c.x.ssm_bytes_per_step / 1048576.0);
        }
        char p[256];
        snprintf(p, sizeof p, "/c2/%s", ms[m]->name);
        th_vec(h, p, v, 3, "[SSM bytes/step, attention bytes/token, crossover tokens]; NaN = unknown");
    }
    printf("\n");
    return 0;
}

int rs_th_table_c3(const rs_model_shape **ms, size_t nm, unsigned L, rs_h5file *h)
{
    printf("## C.3 traffic per window of L steps, M_replay / M_conv (same format); r = 2 d_v + 2 d_k + 4 B\n\n");
    for (size_t m = 0; m < nm; ++m) {
        const rs_model_shape *s = ms[m];
        rs_theory_c3 c;
        rs_status st = rs_theory_table_c3(s, L, &c);
        if (st != RS_OK) return rs_cli_fail("theory", "C.3", st);
        printf("%s (d_v %u, d_k %u, r = %.0f B):\n\n| format |", s->full_name, s->d_v, s->d_k, c.r);
        for (size_t i = 0; i < NL; ++i) printf(" L=%u |", c.L[i]);
        printf(" vs fp32 conv at L=%u |\n|---|", c.window);
        for (size_t i = 0; i <= NL; ++i) printf("---|");
        printf("\n");
        for (size_t f = 0; f < NFMT; ++f) {
            const rs_theory_c3_fmt *o = &c.fmt[f];
            const char *label = rs_theory_tab_label(f);
            printf("| %s |", label);
            for (size_t i = 0; i < NL; ++i) printf(" %.4f |", o->ratio[i]);
            printf(" %.4f |\n", o->ratio_vs_fp32);
            char p[256];
            snprintf(p, sizeof p, "/c3/%s/%s/L", s->name, label);
            th_vec(h, p, o->L, RS_THEORY_TAB_CURVE_L, "steps per window");
            snprintf(p, sizeof p, "/c3/%s/%s/m_conv", s->name, label);
            th_vec(h, p, o->m_conv, RS_THEORY_TAB_CURVE_L, "bytes per head per window");
            snprintf(p, sizeof p, "/c3/%s/%s/m_replay", s->name, label);
            th_vec(h, p, o->m_replay, RS_THEORY_TAB_CURVE_L, "bytes per head per window");
            snprintf(p, sizeof p, "/c3/%s/%s/ratio", s->name, label);
            th_vec(h, p, o->m_ratio, RS_THEORY_TAB_CURVE_L, "M_replay / M_conv");
        }
        printf("| split nvfp4/fp32 (ours) | ");
        for (size_t i = 0; i < NL; ++i) printf(" %.4f |", c.split_ratio[i]);
        printf(" %.4f |\n\n", c.split_vs_fp32);
    }
    return 0;
}

int rs_th_table_c4(const rs_model_shape **ms, size_t nm)
{
    printf("## C.4 FLOPs per head and step with h buffered records: output-only vs materialised\n\n");
    printf("| model | h | output-only | materialised | ratio |\n|---|---|---|---|---|\n");
    for (size_t m = 0; m < nm; ++m) {
        rs_theory_c4_row rows[RS_THEORY_C4_NH];
        rs_status st = rs_theory_table_c4(ms[m], rows);
        if (st != RS_OK) return rs_cli_fail("theory", "C.4", st);
        for (size_t i = 0; i < RS_THEORY_C4_NH; ++i)
            printf("| %s | %u | %.0f | %.0f | %.2f |\n", ms[m]->name, rows[i].h, rows[i].output_only,
                   rows[i].materialised, rows[i].ratio);
    }
    printf("\n");
    return 0;
}

int rs_th_table_c5(const rs_model_shape **ms, size_t nm, double T, double A, rs_h5file *h)
{
    printf("## C.5 optimal window L* = sqrt(2 a_bar (M_S/r - T)), M_S = b d_v d_k per head\n\n");
    printf("| model | format | M_S/r | L* standard (T = a = 1) | L* speculative (T = %g, a = %g) |\n|---|---|---|---|---|\n",
           T, A);
    for (size_t m = 0; m < nm; ++m) {
        rs_theory_c5 c;
        rs_status st = rs_theory_table_c5(ms[m], T, A, &c);
        if (st != RS_OK) return rs_cli_fail("theory", "C.5", st);
        for (size_t f = 0; f < NFMT; ++f) {
            const rs_theory_c5_fmt *o = &c.fmt[f];
            printf("| %s | %s | %.2f |", ms[m]->name, rs_theory_tab_label(f), o->ms_over_r);
            if (o->standard_ok) printf(" %.2f (~%.0f) |", o->L_standard, round(o->L_standard));
            else printf(" n/a |");
            if (o->speculative_ok) printf(" %.2f (~%.0f) |\n", o->L_speculative, round(o->L_speculative));
            else printf(" n/a (M_S/r <= T) |\n");
            if (f == 0) { /* the curves are fp32's */
                char p[256];
                snprintf(p, sizeof p, "/c5/%s/fp32/f_standard", ms[m]->name);
                th_vec(h, p, c.f_standard, RS_THEORY_TAB_CURVE_L, "bytes per committed token per head, L = 1..128");
                snprintf(p, sizeof p, "/c5/%s/fp32/f_speculative", ms[m]->name);
                th_vec(h, p, c.f_speculative, RS_THEORY_TAB_CURVE_L, "bytes per committed token per head, L = 1..128");
                if (h) { /* sticky errors: rs_h5file_close reports a failure */
                    (void)rs_h5file_attr_f64(h, "/c5", "drafts_T", T);
                    (void)rs_h5file_attr_f64(h, "/c5", "accept_a_bar", A);
                }
            }
        }
    }
    printf("\n");
    return 0;
}

/* one storage's curve of the abstract recurrence: the conv row's MC/closed ratios, and the curves */
static int c6_curve_(const rs_theory_c6_cal *cal, const rs_theory_c6_cell *cell, rs_storage sto,
                     unsigned long long seed, const char *base, rs_h5file *h)
{
    rs_theory_c6_curve c;
    rs_status st = rs_theory_table_c6_curve(cal, cell, sto, seed, &c);
    if (st != RS_OK) return rs_cli_fail("theory", "Monte Carlo", st);
    const size_t n = c.n;
    if (sto == RS_STORE_CONV) {
        if (n > 0)
            printf(" %.4f @%zu | %.4f @%zu |\n", c.mean_ratio, (size_t)c.t[n - 1], c.var_ratio, (size_t)c.t[n - 1]);
        else printf(" - | - |\n");
    }
    if (n == 0) return 0;
    const char *names[] = {"t", "closed_mean", "closed_var", "mc_mean", "mc_var", "mc_mean_se", "mc_var_se"};
    const double *arrs[] = {c.t, c.closed_mean, c.closed_var, c.mc_mean, c.mc_var, c.mc_mean_se, c.mc_var_se};
    const char *units[] = {"steps", "state units (same as the pre-rounding values)", "state units squared",
                           "state units", "state units squared", "state units (batch means, 128 chains per batch)",
                           "state units squared (batch means)"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        char p[320];
        snprintf(p, sizeof p, "%s/%s/%s", base, rs_storage_name(sto), names[i]);
        th_vec(h, p, arrs[i], n, units[i]);
    }
    return 0;
}

/* the abstract recurrence, every format x alpha x storage */
static int c6_abstract_(unsigned L, size_t mc_steps, unsigned long long seed, rs_h5file *h)
{
    for (size_t fi = 0; fi < RS_THEORY_C6_NFMT; ++fi) {
        rs_theory_c6_cal cal;
        rs_status st = rs_theory_table_c6_calibrate(fi, seed, &cal);
        if (st != RS_OK) return rs_cli_fail("theory", "calibration", st);
        for (size_t ai = 0; ai < RS_THEORY_C6_NALPHA; ++ai) {
            rs_theory_c6_cell cell;
            st = rs_theory_table_c6_cell(&cal, ai, L, mc_steps, &cell);
            if (st != RS_OK) return rs_cli_fail("theory", "Monte Carlo", st);
            const double a = cell.alpha;
            printf("| %s | %g | %+.3e | %.3e | %+.3e | %.3e | %+.3e | %.3e |", cal.name, a, cal.q.mean, cal.q.var,
                   cell.conv_limit.mean, cell.conv_limit.var, cell.shared_limit.mean, cell.shared_limit.var);
            char base[256];
            snprintf(base, sizeof base, "/c6/%s/alpha_%g", cal.name, a);
            if (h) { /* the group's attributes; sticky errors: rs_h5file_close reports a failure */
                const char *an[] = {"alpha", "b", "sigma2", "b_se", "sigma2_se", "window_L", "chains"};
                const double av[] = {a, cal.q.mean, cal.q.var, cal.q_se.mean, cal.q_se.var, cell.window,
                                     (double)RS_THEORY_C6_CHAINS};
                for (size_t i = 0; i < sizeof an / sizeof an[0]; ++i) (void)rs_h5file_attr_f64(h, base, an[i], av[i]);
                (void)rs_h5file_attr_str(h, base, "pre_rounding_values",
                                         "half-normal |N(0,1)|, fresh per rounding (Philox)");
            }
            for (int s = 0; s < 3; ++s)
                if (c6_curve_(&cal, &cell, (rs_storage)s, seed, base, h)) return 1;
        }
    }
    return 0;
}

/* the actual Mamba-2 recurrence, conventional storage, replicas differing only in SR seed */
static int c6_state_(size_t mc_steps, unsigned long long seed, rs_h5file *h)
{
    for (size_t fi = 0; fi < RS_THEORY_C6_STATE_NFMT; ++fi)
        for (size_t ai = 0; ai < RS_THEORY_C6_NALPHA; ++ai) {
            rs_theory_c6_state c;
            rs_status st = rs_theory_table_c6_state(fi, ai, mc_steps, seed, &c);
            if (st != RS_OK) return rs_cli_fail("theory", "state Monte Carlo", st);
            const size_t n = c.n, t = (size_t)c.t[n - 1];
            if (!c.deterministic)
                printf("| %s | %g | %zu | %.4f | %.4f | %.3f | %.3e |\n", c.name, c.alpha, t, c.var_ratio_pred,
                       c.var_ratio_closed, c.msd_ratio_pred, c.msd_rel_state);
            else /* RTN: the replicas are identical, the replica variance is rounding noise */
                printf("| %s | %g | %zu | - (deterministic) | - | %.3f | %.3e |\n", c.name, c.alpha, t,
                       c.msd_ratio_pred, c.msd_rel_state);
            const char *names[] = {"t", "var_meas", "var_meas_se", "var_pred", "var_closed", "msd_meas", "msd_pred"};
            const double *arrs[] = {c.t, c.var_meas, c.var_meas_se, c.var_pred, c.var_closed, c.msd_meas, c.msd_pred};
            for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
                char p[320];
                snprintf(p, sizeof p, "/c6_state/%s/alpha_%g/%s", c.name, c.alpha, names[i]);
                th_vec(h, p, arrs[i], n,
                       i == 0 ? "steps" : i == 1 ? "sum over state elements, state units squared" : "same");
            }
        }
    return 0;
}

int rs_th_table_c6(unsigned L, size_t mc_steps, unsigned long long seed, rs_h5file *h)
{
    printf("## C.6 accumulated rounding error of the state (D_t = alpha D_{t-1} + e_t)\n\n");
    printf("Per-rounding moments b, s2 of e = Q(x) - x measured on %lu half-normal values (one-signed\n"
           "state block); closed forms use them; MC = %lu chains through the real quantizer.\n"
           "conv limit b/(1-a), s2/(1-a^2); shared (L = %u) b/(1-a^L), s2/(1-a^2L); split (LP = format,\n"
           "HP = fp32): one rounding b, s2 at any t.\n\n",
           RS_THEORY_C6_CAL, RS_THEORY_C6_CHAINS, L);
    printf("| format | alpha | b | s2 | conv mean lim | conv var lim | shared mean lim | shared var lim | "
           "MC/closed conv mean @t | MC/closed conv var @t |\n|---|---|---|---|---|---|---|---|---|---|\n");
    if (c6_abstract_(L, mc_steps, seed, h)) return 1;
    printf("\n");
    printf("Mamba-2 head %u x %u, conventional storage, %lu replicas (same inputs), vs float64:\n"
           "var_meas = sum_i Var_r(D_t[i]); var_pred = sum_i sum_j a^2(t-j) Var_r(e_j[i]) (uncorrelated steps);\n"
           "msd = sum_i mean_r D_t[i]^2 and its uncorrelated-errors prediction (RTN: errors correlate).\n\n",
           RS_THEORY_C6_STATE_DV, RS_THEORY_C6_STATE_DK, RS_THEORY_C6_STATE_R);
    printf("| format | alpha | t | var_meas/var_pred | var_meas/var_closed | msd_meas/msd_pred | msd / |S|^2 |\n"
           "|---|---|---|---|---|---|---|\n");
    if (c6_state_(mc_steps, seed, h)) return 1;
    printf("\n");
    return 0;
}
