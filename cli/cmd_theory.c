/* cmd_theory.c — `replayssm theory`: the Appendix C numbers (C.1-C.6) as tables, and their
 * curves in an HDF5 file: traffic vs window per model and format, amortised bytes vs window,
 * and the C.6 error growth (closed form next to a Monte Carlo through the real quantizers).
 * Formulas: lib/rs_theory.h; Monte Carlo: lib/rs_theory_mc.h; derivations: docs/theory.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h> /* the curves file */

#include "rs_cli.h"       /* rs_cli_fail */
#include "replayssm/quant/rs_format.h"    /* rs_format_parse, rs_format_bytes_per_element */
#include "replayssm/theory/rs_theory.h"    /* C.1-C.6 closed forms, model shapes */
#include "replayssm/theory/rs_theory_mc.h" /* Monte Carlo of C.6 */

#ifndef RS_GIT_COMMIT
#define RS_GIT_COMMIT "unknown"
#endif

#define TH_DEFAULT_WINDOW 16u
#define TH_DEFAULT_DRAFTS 4.0
#define TH_DEFAULT_ACCEPT 3.5
#define TH_DEFAULT_MC_STEPS 2000ul
#define TH_DEFAULT_SEED 0x7E0ull
#define TH_MC_EXTENT 2048ul /* one tensor of the abstract MC (multiple of every block) */
#define TH_MC_CHAINS 8192ul /* ensemble of the abstract MC (4 tensors) */
#define TH_MC_CAL 1048576ul /* calibration draws per format */
#define TH_STATE_DV 16u     /* state MC head: 16 x 128, 8 replicas (a curve, not a test) */
#define TH_STATE_R 8ul
#define TH_MAX_OBS 64
#define TH_MAX_L 128u

static const char *k_state_formats[] = {"fp32", "fp16-rtn", "bf16-rtn", "fp8-rtn", "nvfp4-rtn"};
static const char *k_state_labels[] = {"fp32", "fp16", "bf16", "fp8", "nvfp4"};
#define TH_NFMT 5
static const char *k_mc_formats[] = {"fp16-sr", "bf16-rtn", "fp8-rtn", "fp8-sr", "nvfp4-rtn", "nvfp4-sr"};
#define TH_NMC 6
static const char *k_state_mc_formats[] = {"fp16-sr", "nvfp4-rtn", "nvfp4-sr"};
#define TH_NSTATE 3
static const double k_alphas[] = {0.9, 0.99, 0.999};
#define TH_NALPHA 3

static void usage(FILE *out)
{
    fprintf(out,
            "usage: replayssm theory [--model NAME|all] [--window L] [--drafts T] [--accept A]\n"
            "                        [--out curves.h5 [--force]] [--mc-steps N] [--seed S]\n\n"
            "Prints the closed forms of the paper's Appendix C for the built-in model shapes:\n"
            "  C.1  arithmetic intensity of conventional decode per state format\n"
            "  C.2  context length where attention KV reads equal SSM state traffic\n"
            "  C.3  traffic per window, ReplaySSM / conventional, vs L, per model and format\n"
            "  C.4  FLOPs of one step: output-only vs materialised state\n"
            "  C.5  optimal window L* = sqrt(2 a_bar (M_S/r - T)), standard and speculative\n"
            "  C.6  accumulated rounding error (conventional, shared, split; RTN and SR):\n"
            "       closed forms with per-rounding moments measured on the real quantizers,\n"
            "       next to a Monte Carlo through the same quantizers\n"
            "and, with --out, writes every curve to an HDF5 file (see docs/theory.md).\n\n"
            "options:\n"
            "  --model NAME   nemotron-3-nano-4b, nemotron-3-super, qwen3.5-4b, qwen3.5-122b, or\n"
            "                 all (default)\n"
            "  --window L     replay window for C.3/C.6 tables (default %u)\n"
            "  --drafts T     draft tokens for speculative L* (default %g)\n"
            "  --accept A     mean accepted tokens per step, 0 < A <= T (default %g)\n"
            "  --out FILE     write the curves (HDF5); an existing FILE is kept unless --force\n"
            "  --force        overwrite --out\n"
            "  --mc-steps N   longest Monte Carlo run, steps (default %lu; 0 skips the MC)\n"
            "  --seed S       seed of every Monte Carlo draw and SR decision (default %llu)\n",
            TH_DEFAULT_WINDOW, TH_DEFAULT_DRAFTS, TH_DEFAULT_ACCEPT, TH_DEFAULT_MC_STEPS,
            (unsigned long long)TH_DEFAULT_SEED);
}

/* printed the way the paper rounds: half away from zero */
static double round_dp(double x, int dp)
{
    double s = pow(10.0, dp);
    return round(x * s) / s;
}

/* ---- HDF5 helpers (every failure is reported by the caller as an I/O error) ------------------ */

typedef struct {
    hid_t file, lcpl;
    int failed;
} h5out;

static void h5_attr_str(hid_t obj, const char *name, const char *val)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(val) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, t, val), H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
}

static void h5_attr_num(hid_t obj, const char *name, double val)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, H5T_NATIVE_DOUBLE, &val), H5Aclose(a);
    H5Sclose(sp);
}

/* 1-D double dataset at `path` (groups created on the way) with a units attribute. */
static void h5_vec(h5out *h, const char *path, const double *v, size_t n, const char *units)
{
    if (!h || h->file < 0 || h->failed) return;
    hsize_t dim = n;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    hid_t d = H5Dcreate2(h->file, path, H5T_NATIVE_DOUBLE, sp, h->lcpl, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) h->failed = 1;
    if (d >= 0) {
        h5_attr_str(d, "units", units);
        H5Dclose(d);
    }
    H5Sclose(sp);
}

/* group at path (created with parents), for attributes; returns an open id or -1 */
static hid_t h5_group(h5out *h, const char *path)
{
    if (!h || h->file < 0 || h->failed) return -1;
    hid_t g;
    H5E_BEGIN_TRY { g = H5Gopen2(h->file, path, H5P_DEFAULT); }
    H5E_END_TRY;
    if (g < 0) g = H5Gcreate2(h->file, path, h->lcpl, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) h->failed = 1;
    return g;
}

/* ---- the tables ---------------------------------------------------------------------------- */

static double fmt_bpe(const char *s, size_t extent)
{
    rs_format f;
    if (rs_format_parse(s, &f) != RS_OK) return NAN;
    return rs_format_bytes_per_element(&f, extent);
}

static void table_c1(const rs_model_shape **ms, size_t nm, h5out *h)
{
    printf("## C.1 arithmetic intensity of conventional decode: (5 d_v d_k - d_v) / (2 b d_v d_k)\n\n");
    printf("| format | b (B/elem) | limit 5/(2b) | paper-rounded |");
    for (size_t m = 0; m < nm; ++m) printf(" %s |", ms[m]->name);
    printf("\n|---|---|---|---|");
    for (size_t m = 0; m < nm; ++m) printf("---|");
    printf("\n");
    double b[TH_NFMT], lim[TH_NFMT], inten[TH_NFMT * 4];
    for (size_t f = 0; f < TH_NFMT; ++f) {
        size_t E = (size_t)ms[0]->d_v * ms[0]->d_k;
        b[f] = fmt_bpe(k_state_formats[f], E);
        lim[f] = rs_theory_intensity_limit(b[f]);
        printf("| %s | %.6g | %.4f | %.2f |", k_state_labels[f], b[f], lim[f], round_dp(lim[f], 2));
        for (size_t m = 0; m < nm; ++m) {
            double bm = fmt_bpe(k_state_formats[f], (size_t)ms[m]->d_v * ms[m]->d_k);
            inten[f * 4 + m] = rs_theory_intensity(ms[m]->d_v, ms[m]->d_k, bm);
            printf(" %.4f |", inten[f * 4 + m]);
        }
        printf("\n");
    }
    printf("\n(b for the first model's state extent; nvfp4's per-tensor scale makes b depend on d_v d_k.)\n\n");
    h5_vec(h, "/c1/bytes_per_element", b, TH_NFMT, "bytes per element (fp32, fp16, bf16, fp8, nvfp4)");
    h5_vec(h, "/c1/intensity_limit", lim, TH_NFMT, "FLOP/byte, 5/(2b)");
    for (size_t m = 0; m < nm; ++m) {
        char p[256];
        double col[TH_NFMT];
        for (size_t f = 0; f < TH_NFMT; ++f) col[f] = inten[f * 4 + m];
        snprintf(p, sizeof p, "/c1/intensity/%s", ms[m]->name);
        h5_vec(h, p, col, TH_NFMT, "FLOP/byte per format (fp32, fp16, bf16, fp8, nvfp4)");
    }
}

static void table_c2(const rs_model_shape **ms, size_t nm, h5out *h)
{
    printf("## C.2 SSM vs attention crossover (FP32 state read + write per step vs KV read)\n\n");
    printf("| model | SSM MiB/step | attention KiB/token | crossover N (tokens) |\n|---|---|---|---|\n");
    for (size_t m = 0; m < nm; ++m) {
        rs_crossover c;
        double v[3] = {NAN, NAN, NAN};
        if (rs_theory_crossover(ms[m], 4.0, &c) == RS_OK) {
            printf("| %s | %.1f | %.3f | %.0f |\n", ms[m]->name, c.ssm_bytes_per_step / 1048576.0,
                   c.attn_bytes_per_token / 1024.0, c.n_tokens);
            v[0] = c.ssm_bytes_per_step, v[1] = c.attn_bytes_per_token, v[2] = c.n_tokens;
        } else {
            printf("| %s | %.1f | n/a | n/a (attention KV shape not in sources) |\n", ms[m]->name,
                   2.0 * ms[m]->ssm_layers * ms[m]->value_heads * ms[m]->d_v * ms[m]->d_k * 4.0 / 1048576.0);
        }
        char p[256];
        snprintf(p, sizeof p, "/c2/%s", ms[m]->name);
        h5_vec(h, p, v, 3, "[SSM bytes/step, attention bytes/token, crossover tokens]; NaN = unknown");
    }
    printf("\n");
}

static void table_c3(const rs_model_shape **ms, size_t nm, unsigned Lw, h5out *h)
{
    static const unsigned Ls[] = {1, 2, 4, 8, 16, 32, 64};
    printf("## C.3 traffic per window of L steps, M_replay / M_conv (same format); r = 2 d_v + 2 d_k + 4 B\n\n");
    for (size_t m = 0; m < nm; ++m) {
        const rs_model_shape *s = ms[m];
        double r = rs_theory_record_bytes(s->d_v, s->d_k);
        size_t E = (size_t)s->d_v * s->d_k;
        printf("%s (d_v %u, d_k %u, r = %.0f B):\n\n| format |", s->full_name, s->d_v, s->d_k, r);
        for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; ++i) printf(" L=%u |", Ls[i]);
        printf(" vs fp32 conv at L=%u |\n|---|", Lw);
        for (size_t i = 0; i <= sizeof Ls / sizeof Ls[0]; ++i) printf("---|");
        printf("\n");
        for (size_t f = 0; f < TH_NFMT; ++f) {
            double b = fmt_bpe(k_state_formats[f], E);
            printf("| %s |", k_state_labels[f]);
            for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; ++i)
                printf(" %.4f |", rs_theory_mreplay(Ls[i], s->d_v, s->d_k, b, r) / rs_theory_mconv(Ls[i], s->d_v, s->d_k, b));
            printf(" %.4f |\n", rs_theory_mreplay(Lw, s->d_v, s->d_k, b, r) / rs_theory_mconv(Lw, s->d_v, s->d_k, 4.0));
            double Lv[TH_MAX_L], mc[TH_MAX_L], mr[TH_MAX_L], ra[TH_MAX_L];
            for (unsigned L = 1; L <= TH_MAX_L; ++L) {
                Lv[L - 1] = L;
                mc[L - 1] = rs_theory_mconv(L, s->d_v, s->d_k, b);
                mr[L - 1] = rs_theory_mreplay(L, s->d_v, s->d_k, b, r);
                ra[L - 1] = mr[L - 1] / mc[L - 1];
            }
            char p[256];
            snprintf(p, sizeof p, "/c3/%s/%s/L", s->name, k_state_labels[f]);
            h5_vec(h, p, Lv, TH_MAX_L, "steps per window");
            snprintf(p, sizeof p, "/c3/%s/%s/m_conv", s->name, k_state_labels[f]);
            h5_vec(h, p, mc, TH_MAX_L, "bytes per head per window");
            snprintf(p, sizeof p, "/c3/%s/%s/m_replay", s->name, k_state_labels[f]);
            h5_vec(h, p, mr, TH_MAX_L, "bytes per head per window");
            snprintf(p, sizeof p, "/c3/%s/%s/ratio", s->name, k_state_labels[f]);
            h5_vec(h, p, ra, TH_MAX_L, "M_replay / M_conv");
        }
        double b4 = fmt_bpe("nvfp4-rtn", E);
        printf("| split nvfp4/fp32 (ours) | ");
        for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; ++i)
            printf(" %.4f |", rs_theory_msplit(Ls[i], s->d_v, s->d_k, b4, 4.0, r) / rs_theory_mconv(Ls[i], s->d_v, s->d_k, 4.0));
        printf(" %.4f |\n\n", rs_theory_msplit(Lw, s->d_v, s->d_k, b4, 4.0, r) / rs_theory_mconv(Lw, s->d_v, s->d_k, 4.0));
    }
}

static void table_c4(const rs_model_shape **ms, size_t nm)
{
    static const unsigned hs[] = {0, 7, 15};
    printf("## C.4 FLOPs per head and step with h buffered records: output-only vs materialised\n\n");
    printf("| model | h | output-only | materialised | ratio |\n|---|---|---|---|---|\n");
    for (size_t m = 0; m < nm; ++m)
        for (size_t i = 0; i < 3; ++i) {
            double a = rs_theory_flops_output_only(hs[i], ms[m]->d_v, ms[m]->d_k);
            double b = rs_theory_flops_materialised(hs[i], ms[m]->d_v, ms[m]->d_k);
            printf("| %s | %u | %.0f | %.0f | %.2f |\n", ms[m]->name, hs[i], a, b, b / a);
        }
    printf("\n");
}

static int table_c5(const rs_model_shape **ms, size_t nm, double T, double A, h5out *h)
{
    printf("## C.5 optimal window L* = sqrt(2 a_bar (M_S/r - T)), M_S = b d_v d_k per head\n\n");
    printf("| model | format | M_S/r | L* standard (T = a = 1) | L* speculative (T = %g, a = %g) |\n|---|---|---|---|---|\n",
           T, A);
    for (size_t m = 0; m < nm; ++m) {
        size_t E = (size_t)ms[m]->d_v * ms[m]->d_k;
        double r = rs_theory_record_bytes(ms[m]->d_v, ms[m]->d_k);
        for (size_t f = 0; f < TH_NFMT; ++f) {
            double MS = fmt_bpe(k_state_formats[f], E) * (double)E, L1, LT;
            printf("| %s | %s | %.2f |", ms[m]->name, k_state_labels[f], MS / r);
            if (rs_theory_optimal_window(MS, r, 1, 1, &L1) == RS_OK) printf(" %.2f (~%.0f) |", L1, round(L1));
            else printf(" n/a |");
            if (rs_theory_optimal_window(MS, r, T, A, &LT) == RS_OK) printf(" %.2f (~%.0f) |\n", LT, round(LT));
            else printf(" n/a (M_S/r <= T) |\n");
            if (f == 0) {
                double fs[TH_MAX_L], ft[TH_MAX_L];
                for (unsigned L = 1; L <= TH_MAX_L; ++L) {
                    fs[L - 1] = rs_theory_amortised_bytes(L, MS, r, 1, 1);
                    ft[L - 1] = rs_theory_amortised_bytes(L, MS, r, T, A);
                }
                char p[256];
                snprintf(p, sizeof p, "/c5/%s/fp32/f_standard", ms[m]->name);
                h5_vec(h, p, fs, TH_MAX_L, "bytes per committed token per head, L = 1..128");
                snprintf(p, sizeof p, "/c5/%s/fp32/f_speculative", ms[m]->name);
                h5_vec(h, p, ft, TH_MAX_L, "bytes per committed token per head, L = 1..128");
                hid_t g = h5_group(h, "/c5");
                if (g >= 0) h5_attr_num(g, "drafts_T", T), h5_attr_num(g, "accept_a_bar", A), H5Gclose(g);
            }
        }
    }
    printf("\n");
    return 0;
}

/* ---- C.6 ------------------------------------------------------------------------------------ */

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

static int table_c6(unsigned L, size_t mc_steps, unsigned long long seed, h5out *h)
{
    printf("## C.6 accumulated rounding error of the state (D_t = alpha D_{t-1} + e_t)\n\n");
    printf("Per-rounding moments b, s2 of e = Q(x) - x measured on %lu half-normal values (one-signed\n"
           "state block); closed forms use them; MC = %lu chains through the real quantizer.\n"
           "conv limit b/(1-a), s2/(1-a^2); shared (L = %u) b/(1-a^L), s2/(1-a^2L); split (LP = format,\n"
           "HP = fp32): one rounding b, s2 at any t.\n\n",
           TH_MC_CAL, TH_MC_CHAINS, L);
    printf("| format | alpha | b | s2 | conv mean lim | conv var lim | shared mean lim | shared var lim | "
           "MC/closed conv mean @t | MC/closed conv var @t |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t fi = 0; fi < TH_NMC; ++fi) {
        rs_format f, hp = rs_format_fp32();
        rs_format_parse(k_mc_formats[fi], &f);
        rs_err_moments q, qse;
        rs_status st = rs_theory_mc_calibrate(&f, TH_MC_CAL, TH_MC_EXTENT, seed ^ 0xCA11B8A7Eull, &q, &qse);
        if (st != RS_OK) return rs_cli_fail("theory", "calibration", st);
        for (size_t ai = 0; ai < TH_NALPHA; ++ai) {
            double a = k_alphas[ai];
            rs_err_moments cl, sl;
            rs_theory_err_accum(RS_STORE_CONV, &q, NULL, a, L, INFINITY, &cl);
            rs_theory_err_accum(RS_STORE_SHARED, &q, NULL, a, L, INFINITY, &sl);
            printf("| %s | %g | %+.3e | %.3e | %+.3e | %.3e | %+.3e | %.3e |", k_mc_formats[fi], a, q.mean, q.var,
                   cl.mean, cl.var, sl.mean, sl.var);
            char base[256];
            snprintf(base, sizeof base, "/c6/%s/alpha_%g", k_mc_formats[fi], a);
            hid_t g = h5_group(h, base);
            if (g >= 0) {
                h5_attr_num(g, "alpha", a), h5_attr_num(g, "b", q.mean), h5_attr_num(g, "sigma2", q.var);
                h5_attr_num(g, "b_se", qse.mean), h5_attr_num(g, "sigma2_se", qse.var);
                h5_attr_num(g, "window_L", L), h5_attr_num(g, "chains", (double)TH_MC_CHAINS);
                h5_attr_str(g, "pre_rounding_values", "half-normal |N(0,1)|, fresh per rounding (Philox)");
                H5Gclose(g);
            }
            size_t t_max = (size_t)ceil(5.0 / (1.0 - a));
            if (t_max > mc_steps) t_max = mc_steps;
            for (int s = 0; s < 3; ++s) {
                rs_storage sto = (rs_storage)s;
                unsigned every = sto == RS_STORE_CONV ? 1 : L;
                size_t obs[TH_MAX_OBS], n = t_max >= every ? obs_steps(t_max, every, obs) : 0;
                double tv[TH_MAX_OBS], cm[TH_MAX_OBS], cv[TH_MAX_OBS], mm[TH_MAX_OBS], mv[TH_MAX_OBS],
                    mms[TH_MAX_OBS], mvs[TH_MAX_OBS];
                rs_mc_point pts[TH_MAX_OBS];
                if (n > 0) {
                    rs_mc_config c = {f, hp, sto, a, L, TH_MC_CHAINS, TH_MC_EXTENT, seed};
                    st = rs_theory_mc_accum(&c, obs, n, pts);
                    if (st != RS_OK) return rs_cli_fail("theory", "Monte Carlo", st);
                }
                for (size_t i = 0; i < n; ++i) {
                    rs_err_moments m;
                    rs_theory_err_accum(sto, &q, NULL, a, L, (double)obs[i], &m);
                    tv[i] = (double)obs[i], cm[i] = m.mean, cv[i] = m.var;
                    mm[i] = pts[i].mean, mv[i] = pts[i].var, mms[i] = pts[i].mean_se, mvs[i] = pts[i].var_se;
                }
                if (sto == RS_STORE_CONV) {
                    if (n > 0)
                        printf(" %.4f @%zu | %.4f @%zu |\n", mm[n - 1] / cm[n - 1], obs[n - 1], mv[n - 1] / cv[n - 1],
                               obs[n - 1]);
                    else printf(" - | - |\n");
                }
                if (n == 0) continue;
                char p[320];
                const char *sn = rs_storage_name(sto);
#define TH_W(name, arr, units)                                                                                \
    do {                                                                                                       \
        snprintf(p, sizeof p, "%s/%s/%s", base, sn, name);                                                     \
        h5_vec(h, p, arr, n, units);                                                                           \
    } while (0)
                TH_W("t", tv, "steps");
                TH_W("closed_mean", cm, "state units (same as the pre-rounding values)");
                TH_W("closed_var", cv, "state units squared");
                TH_W("mc_mean", mm, "state units");
                TH_W("mc_var", mv, "state units squared");
                TH_W("mc_mean_se", mms, "state units (batch means, 128 chains per batch)");
                TH_W("mc_var_se", mvs, "state units squared (batch means)");
#undef TH_W
            }
        }
    }
    printf("\n");
    /* the actual Mamba-2 recurrence, conventional storage, replicas differing only in SR seed */
    printf("Mamba-2 head %u x 128, conventional storage, %lu replicas (same inputs), vs float64:\n"
           "var_meas = sum_i Var_r(D_t[i]); var_pred = sum_i sum_j a^2(t-j) Var_r(e_j[i]) (uncorrelated steps);\n"
           "msd = sum_i mean_r D_t[i]^2 and its uncorrelated-errors prediction (RTN: errors correlate).\n\n",
           TH_STATE_DV, TH_STATE_R);
    printf("| format | alpha | t | var_meas/var_pred | var_meas/var_closed | msd_meas/msd_pred | msd / |S|^2 |\n"
           "|---|---|---|---|---|---|---|\n");
    for (size_t fi = 0; fi < TH_NSTATE && mc_steps > 0; ++fi) {
        rs_format f;
        rs_format_parse(k_state_mc_formats[fi], &f);
        for (size_t ai = 0; ai < TH_NALPHA; ++ai) {
            double a = k_alphas[ai];
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
            double tv[TH_MAX_OBS], vm[TH_MAX_OBS], vp[TH_MAX_OBS], vc[TH_MAX_OBS], mm[TH_MAX_OBS], mp[TH_MAX_OBS],
                vs[TH_MAX_OBS];
            for (size_t i = 0; i < n; ++i) {
                tv[i] = (double)pts[i].t, vm[i] = pts[i].var_meas, vp[i] = pts[i].var_pred, vc[i] = pts[i].var_closed;
                mm[i] = pts[i].msd_meas, mp[i] = pts[i].msd_pred, vs[i] = pts[i].var_meas_se;
            }
            char p[320];
#define TH_S(name, arr, units)                                                                                      \
    do {                                                                                                             \
        snprintf(p, sizeof p, "/c6_state/%s/alpha_%g/%s", k_state_mc_formats[fi], a, name);                         \
        h5_vec(h, p, arr, n, units);                                                                                 \
    } while (0)
            TH_S("t", tv, "steps");
            TH_S("var_meas", vm, "sum over state elements, state units squared");
            TH_S("var_meas_se", vs, "same");
            TH_S("var_pred", vp, "same");
            TH_S("var_closed", vc, "same");
            TH_S("msd_meas", mm, "same");
            TH_S("msd_pred", mp, "same");
#undef TH_S
        }
    }
    printf("\n");
    return 0;
}

/* ---- main ----------------------------------------------------------------------------------- */

static int parse_ull(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (!s[0] || s[0] == '-') return -1;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static int parse_pos_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v > 0) || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int rs_cmd_theory(int argc, char **argv)
{
    const char *model = "all", *out = NULL;
    unsigned L = TH_DEFAULT_WINDOW;
    double T = TH_DEFAULT_DRAFTS, A = TH_DEFAULT_ACCEPT;
    unsigned long long mc_steps = TH_DEFAULT_MC_STEPS, seed = TH_DEFAULT_SEED;
    int force = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--force")) {
            force = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "replayssm theory: '%s' needs a value (or is unknown)\n", a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        unsigned long long u;
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--window")) {
            if (parse_ull(v, &u) || u < 1 || u > 4096) {
                fprintf(stderr, "replayssm theory: --window needs an integer in 1..4096, not '%s'\n", v);
                return 2;
            }
            L = (unsigned)u;
        } else if (!strcmp(a, "--drafts") || !strcmp(a, "--accept")) {
            double d;
            if (parse_pos_double(v, &d)) {
                fprintf(stderr, "replayssm theory: %s needs a positive number, not '%s'\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--drafts")) T = d;
            else A = d;
        } else if (!strcmp(a, "--mc-steps")) {
            if (parse_ull(v, &u) || u > 10000000ull) {
                fprintf(stderr, "replayssm theory: --mc-steps needs an integer in 0..10^7, not '%s'\n", v);
                return 2;
            }
            mc_steps = u;
        } else if (!strcmp(a, "--seed")) {
            if (parse_ull(v, &seed)) {
                fprintf(stderr, "replayssm theory: bad --seed '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "replayssm theory: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (T < 1 || A > T) {
        fprintf(stderr, "replayssm theory: need --drafts >= 1 and 0 < --accept <= --drafts (got %g, %g)\n", T, A);
        return 2;
    }
    const rs_model_shape *ms[4];
    size_t nm = 0;
    if (!strcmp(model, "all")) {
        for (size_t i = 0; i < rs_theory_model_count(); ++i) ms[nm++] = rs_theory_model_at(i);
    } else {
        rs_status st = rs_theory_model_find(model, &ms[0]);
        if (st != RS_OK) {
            rs_cli_fail("theory", "--model", st);
            return 2;
        }
        nm = 1;
    }

    h5out h = {-1, -1, 0};
    if (out) {
        H5E_BEGIN_TRY { h.file = H5Fcreate(out, force ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT); }
        H5E_END_TRY;
        if (h.file < 0) {
            FILE *probe = fopen(out, "rb");
            if (probe && !force) {
                fclose(probe);
                fprintf(stderr, "replayssm theory: '%s' exists; pass --force to overwrite it\n", out);
                return 1;
            }
            if (probe) fclose(probe);
            fprintf(stderr, "replayssm theory: cannot create '%s'\n", out);
            return 1;
        }
        h.lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(h.lcpl, 1);
        hid_t root = H5Gopen2(h.file, "/", H5P_DEFAULT);
        char cmdline[1024] = "replayssm theory";
        for (int i = 1; i < argc; ++i)
            if (strlen(cmdline) + strlen(argv[i]) + 2 < sizeof cmdline) strcat(cmdline, " "), strcat(cmdline, argv[i]);
        h5_attr_str(root, "tool", "replayssm theory " RS_VERSION_STRING " (git " RS_GIT_COMMIT ")");
        h5_attr_str(root, "command", cmdline);
        h5_attr_str(root, "source", "ReplaySSM (arXiv:2610.13778) Appendix C; shared/paper/replayssm-digest.md; "
                                    "formulas lib/rs_theory.h, derivations docs/theory.md");
        h5_attr_num(root, "seed", (double)seed);
        h5_attr_num(root, "window_L", L);
        h5_attr_num(root, "mc_steps", (double)mc_steps);
        H5Gclose(root);
    }

    printf("# replayssm theory — Appendix C (models: %s; L = %u; T = %g; a_bar = %g)\n\n", model, L, T, A);
    table_c1(ms, nm, &h);
    table_c2(ms, nm, &h);
    table_c3(ms, nm, L, &h);
    table_c4(ms, nm);
    table_c5(ms, nm, T, A, &h);
    int rc = 0;
    if (mc_steps > 0) rc = table_c6(L, (size_t)mc_steps, seed, &h);
    else printf("## C.6 skipped (--mc-steps 0)\n");

    if (out) {
        int failed = h.failed;
        H5Pclose(h.lcpl);
        if (H5Fclose(h.file) < 0) failed = 1;
        if (failed) {
            fprintf(stderr, "replayssm theory: writing '%s' failed\n", out);
            return 1;
        }
        if (!rc) printf("wrote %s\n", out);
    }
    return rc;
}
