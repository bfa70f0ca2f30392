/* theory_c6.c — `replayssm theory` C.6: accumulated rounding error of the state, the closed forms
 * with per-rounding moments measured on the real quantizers next to a Monte Carlo through the same
 * quantizers (abstract recurrence), then the actual Mamba-2 recurrence (replayssm/theory/rs_theory_mc.h). */
#include <math.h>
#include <stdio.h>

#include "rs_cli.h" /* rs_cli_fail */
#include "theory.h"
#include "replayssm/quant/rs_format.h"
#include "replayssm/theory/rs_theory_mc.h"

#define TH_MC_EXTENT 2048ul /* one tensor of the abstract MC (multiple of every block) */
#define TH_MC_CHAINS 8192ul /* ensemble of the abstract MC (4 tensors) */
#define TH_MC_CAL 1048576ul /* calibration draws per format */
#define TH_STATE_DV 16u     /* state MC head: 16 x 128, 8 replicas (a curve, not a test) */
#define TH_STATE_R 8ul

static const char *k_mc_formats[] = {"fp16-sr", "bf16-rtn", "fp8-rtn", "fp8-sr", "nvfp4-rtn", "nvfp4-sr"};
#define TH_NMC 6
static const char *k_state_mc_formats[] = {"fp16-sr", "nvfp4-rtn", "nvfp4-sr"};
#define TH_NSTATE 3
static const double k_alphas[] = {0.9, 0.99, 0.999};
#define TH_NALPHA 3

static size_t obs_steps(size_t t_max, unsigned every, size_t *obs)
{
    /* ~log-spaced steps 1..t_max, multiples of `every` (flush steps for shared/split) */
    size_t n = 0, last = 0;
    for (int i = 0; i < TH_MAX_OBS; ++i) {
        double x = exp(log((double)t_max) * (i + 1) / TH_MAX_OBS);
        size_t t = (size_t)ceil(x / every) * every;
        if (t > t_max) t = t_max / every * every;
        if (t > last && t >= 1) obs[n++] = last = t;
    }
    return n;
}

/* one storage of one (format, alpha): MC vs closed form, the conv ratio printed; -1 on failure */
static int c6_storage_(rs_storage sto, const rs_format *f, const rs_err_moments *q, double a, unsigned L,
                       size_t t_max, unsigned long long seed, const char *base, rs_h5file *h)
{
    const unsigned every = sto == RS_STORE_CONV ? 1 : L;
    size_t obs[TH_MAX_OBS], n = t_max >= every ? obs_steps(t_max, every, obs) : 0;
    double tv[TH_MAX_OBS], cm[TH_MAX_OBS], cv[TH_MAX_OBS], mm[TH_MAX_OBS], mv[TH_MAX_OBS], mms[TH_MAX_OBS],
        mvs[TH_MAX_OBS];
    rs_mc_point pts[TH_MAX_OBS];
    if (n > 0) {
        rs_mc_config c = {*f, rs_format_fp32(), sto, a, L, TH_MC_CHAINS, TH_MC_EXTENT, seed};
        rs_status st = rs_theory_mc_accum(&c, obs, n, pts);
        if (st != RS_OK) return -rs_cli_fail("theory", "Monte Carlo", st);
    }
    for (size_t i = 0; i < n; ++i) {
        rs_err_moments m;
        rs_theory_err_accum(sto, q, NULL, a, L, (double)obs[i], &m);
        tv[i] = (double)obs[i], cm[i] = m.mean, cv[i] = m.var;
        mm[i] = pts[i].mean, mv[i] = pts[i].var, mms[i] = pts[i].mean_se, mvs[i] = pts[i].var_se;
    }
    if (sto == RS_STORE_CONV) {
        if (n > 0)
            printf(" %.4f @%zu | %.4f @%zu |\n", mm[n - 1] / cm[n - 1], obs[n - 1], mv[n - 1] / cv[n - 1], obs[n - 1]);
        else printf(" - | - |\n");
    }
    if (n == 0) return 0;
    const char *names[] = {"t", "closed_mean", "closed_var", "mc_mean", "mc_var", "mc_mean_se", "mc_var_se"};
    const double *arrs[] = {tv, cm, cv, mm, mv, mms, mvs};
    const char *units[] = {"steps", "state units (same as the pre-rounding values)", "state units squared",
                           "state units", "state units squared", "state units (batch means, 128 chains per batch)",
                           "state units squared (batch means)"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        char p[320];
        snprintf(p, sizeof p, "%s/%s/%s", base, rs_storage_name(sto), names[i]);
        rs_th_vec(h, p, arrs[i], n, units[i]);
    }
    return 0;
}

/* the abstract recurrence, every format x alpha x storage; 1 on failure (reported) */
static int c6_abstract_(unsigned L, size_t mc_steps, unsigned long long seed, rs_h5file *h)
{
    for (size_t fi = 0; fi < TH_NMC; ++fi) {
        rs_format f;
        rs_format_parse(k_mc_formats[fi], &f);
        rs_err_moments q, qse;
        rs_status st = rs_theory_mc_calibrate(&f, TH_MC_CAL, TH_MC_EXTENT, seed ^ 0xCA11B8A7Eull, &q, &qse);
        if (st != RS_OK) return rs_cli_fail("theory", "calibration", st);
        for (size_t ai = 0; ai < TH_NALPHA; ++ai) {
            const double a = k_alphas[ai];
            rs_err_moments cl, sl;
            rs_theory_err_accum(RS_STORE_CONV, &q, NULL, a, L, INFINITY, &cl);
            rs_theory_err_accum(RS_STORE_SHARED, &q, NULL, a, L, INFINITY, &sl);
            printf("| %s | %g | %+.3e | %.3e | %+.3e | %.3e | %+.3e | %.3e |", k_mc_formats[fi], a, q.mean, q.var,
                   cl.mean, cl.var, sl.mean, sl.var);
            char base[256];
            snprintf(base, sizeof base, "/c6/%s/alpha_%g", k_mc_formats[fi], a);
            if (h) { /* the group's attributes; sticky errors: rs_h5file_close reports a failure */
                const char *an[] = {"alpha", "b", "sigma2", "b_se", "sigma2_se", "window_L", "chains"};
                const double av[] = {a, q.mean, q.var, qse.mean, qse.var, L, (double)TH_MC_CHAINS};
                for (size_t i = 0; i < sizeof an / sizeof an[0]; ++i) (void)rs_h5file_attr_f64(h, base, an[i], av[i]);
                (void)rs_h5file_attr_str(h, base, "pre_rounding_values", "half-normal |N(0,1)|, fresh per rounding (Philox)");
            }
            size_t t_max = (size_t)ceil(5.0 / (1.0 - a));
            if (t_max > mc_steps) t_max = mc_steps;
            for (int s = 0; s < 3; ++s)
                if (c6_storage_((rs_storage)s, &f, &q, a, L, t_max, seed, base, h) < 0) return 1;
        }
    }
    return 0;
}

/* the actual Mamba-2 recurrence, conventional storage, replicas differing only in SR seed */
static int c6_state_(size_t mc_steps, unsigned long long seed, rs_h5file *h)
{
    for (size_t fi = 0; fi < TH_NSTATE && mc_steps > 0; ++fi) {
        rs_format f;
        rs_format_parse(k_state_mc_formats[fi], &f);
        for (size_t ai = 0; ai < TH_NALPHA; ++ai) {
            const double a = k_alphas[ai];
            size_t t_max = (size_t)ceil(3.0 / (1.0 - a));
            if (t_max > mc_steps) t_max = mc_steps;
            size_t obs[TH_MAX_OBS], n = obs_steps(t_max, 1, obs);
            rs_mc_state_point pts[TH_MAX_OBS];
            rs_mc_state_config c = {f, a, TH_STATE_DV, 128, TH_STATE_R, (size_t)ceil(5.0 / (1.0 - a)), seed};
            rs_status st = rs_theory_mc_state(&c, obs, n, pts);
            if (st != RS_OK) return rs_cli_fail("theory", "state Monte Carlo", st);
            const rs_mc_state_point *e = &pts[n - 1];
            if (e->var_pred > 1e-12 * e->msd_pred)
                printf("| %s | %g | %zu | %.4f | %.4f | %.3f | %.3e |\n", k_state_mc_formats[fi], a, e->t,
                       e->var_meas / e->var_pred, e->var_meas / e->var_closed, e->msd_meas / e->msd_pred,
                       e->msd_meas / e->state_ms);
            else /* RTN: the replicas are identical, the replica variance is rounding noise */
                printf("| %s | %g | %zu | - (deterministic) | - | %.3f | %.3e |\n", k_state_mc_formats[fi], a, e->t,
                       e->msd_meas / e->msd_pred, e->msd_meas / e->state_ms);
            double v[7][TH_MAX_OBS];
            for (size_t i = 0; i < n; ++i) {
                v[0][i] = (double)pts[i].t, v[1][i] = pts[i].var_meas, v[2][i] = pts[i].var_meas_se;
                v[3][i] = pts[i].var_pred, v[4][i] = pts[i].var_closed, v[5][i] = pts[i].msd_meas;
                v[6][i] = pts[i].msd_pred;
            }
            const char *names[] = {"t", "var_meas", "var_meas_se", "var_pred", "var_closed", "msd_meas", "msd_pred"};
            for (size_t i = 0; i < 7; ++i) {
                char p[320];
                snprintf(p, sizeof p, "/c6_state/%s/alpha_%g/%s", k_state_mc_formats[fi], a, names[i]);
                rs_th_vec(h, p, v[i], n,
                          i == 0 ? "steps" : i == 1 ? "sum over state elements, state units squared" : "same");
            }
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
           TH_MC_CAL, TH_MC_CHAINS, L);
    printf("| format | alpha | b | s2 | conv mean lim | conv var lim | shared mean lim | shared var lim | "
           "MC/closed conv mean @t | MC/closed conv var @t |\n|---|---|---|---|---|---|---|---|---|---|\n");
    if (c6_abstract_(L, mc_steps, seed, h)) return 1;
    printf("\n");
    printf("Mamba-2 head %u x 128, conventional storage, %lu replicas (same inputs), vs float64:\n"
           "var_meas = sum_i Var_r(D_t[i]); var_pred = sum_i sum_j a^2(t-j) Var_r(e_j[i]) (uncorrelated steps);\n"
           "msd = sum_i mean_r D_t[i]^2 and its uncorrelated-errors prediction (RTN: errors correlate).\n\n",
           TH_STATE_DV, TH_STATE_R);
    printf("| format | alpha | t | var_meas/var_pred | var_meas/var_closed | msd_meas/msd_pred | msd / |S|^2 |\n"
           "|---|---|---|---|---|---|---|\n");
    if (c6_state_(mc_steps, seed, h)) return 1;
    printf("\n");
    return 0;
}
