/* theory_tables.c — `replayssm theory` tables C.1-C.5 (intensity, crossover, traffic per window,
 * FLOPs, optimal window) on stdout, and their curves in the output file (theory.h). Formulas:
 * replayssm/theory/rs_theory.h; derivations: docs/theory.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "theory.h"
#include "replayssm/quant/rs_format.h" /* rs_format_parse, rs_format_bytes_per_element */

static const char *k_state_formats[] = {"fp32", "fp16-rtn", "bf16-rtn", "fp8-rtn", "nvfp4-rtn"};
static const char *k_state_labels[] = {"fp32", "fp16", "bf16", "fp8", "nvfp4"};
#define TH_NFMT 5

/* printed the way the paper rounds: half away from zero */
static double round_dp(double x, int dp)
{
    double s = pow(10.0, dp);
    return round(x * s) / s;
}

void rs_th_vec(rs_h5file *h, const char *path, const double *v, size_t n, const char *units)
{
    if (!h) return;
    /* errors are sticky (rs_h5file.h): the first one is reported by rs_h5file_close */
    const size_t dims[1] = {n};
    if (rs_h5file_write_f64(h, path, 1, dims, v) == RS_OK) (void)rs_h5file_attr_str(h, path, "units", units);
}

static double fmt_bpe(const char *s, size_t extent)
{
    rs_format f;
    if (rs_format_parse(s, &f) != RS_OK) return NAN;
    return rs_format_bytes_per_element(&f, extent);
}

void rs_th_table_c1(const rs_model_shape **ms, size_t nm, rs_h5file *h)
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
    rs_th_vec(h, "/c1/bytes_per_element", b, TH_NFMT, "bytes per element (fp32, fp16, bf16, fp8, nvfp4)");
    rs_th_vec(h, "/c1/intensity_limit", lim, TH_NFMT, "FLOP/byte, 5/(2b)");
    for (size_t m = 0; m < nm; ++m) {
        char p[256];
        double col[TH_NFMT];
        for (size_t f = 0; f < TH_NFMT; ++f) col[f] = inten[f * 4 + m];
        snprintf(p, sizeof p, "/c1/intensity/%s", ms[m]->name);
        rs_th_vec(h, p, col, TH_NFMT, "FLOP/byte per format (fp32, fp16, bf16, fp8, nvfp4)");
    }
}

void rs_th_table_c2(const rs_model_shape **ms, size_t nm, rs_h5file *h)
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
        rs_th_vec(h, p, v, 3, "[SSM bytes/step, attention bytes/token, crossover tokens]; NaN = unknown");
    }
    printf("\n");
}

void rs_th_table_c3(const rs_model_shape **ms, size_t nm, unsigned Lw, rs_h5file *h)
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
            rs_th_vec(h, p, Lv, TH_MAX_L, "steps per window");
            snprintf(p, sizeof p, "/c3/%s/%s/m_conv", s->name, k_state_labels[f]);
            rs_th_vec(h, p, mc, TH_MAX_L, "bytes per head per window");
            snprintf(p, sizeof p, "/c3/%s/%s/m_replay", s->name, k_state_labels[f]);
            rs_th_vec(h, p, mr, TH_MAX_L, "bytes per head per window");
            snprintf(p, sizeof p, "/c3/%s/%s/ratio", s->name, k_state_labels[f]);
            rs_th_vec(h, p, ra, TH_MAX_L, "M_replay / M_conv");
        }
        double b4 = fmt_bpe("nvfp4-rtn", E);
        printf("| split nvfp4/fp32 (ours) | ");
        for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; ++i)
            printf(" %.4f |", rs_theory_msplit(Ls[i], s->d_v, s->d_k, b4, 4.0, r) / rs_theory_mconv(Ls[i], s->d_v, s->d_k, 4.0));
        printf(" %.4f |\n\n", rs_theory_msplit(Lw, s->d_v, s->d_k, b4, 4.0, r) / rs_theory_mconv(Lw, s->d_v, s->d_k, 4.0));
    }
}

void rs_th_table_c4(const rs_model_shape **ms, size_t nm)
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

void rs_th_table_c5(const rs_model_shape **ms, size_t nm, double T, double A, rs_h5file *h)
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
                rs_th_vec(h, p, fs, TH_MAX_L, "bytes per committed token per head, L = 1..128");
                snprintf(p, sizeof p, "/c5/%s/fp32/f_speculative", ms[m]->name);
                rs_th_vec(h, p, ft, TH_MAX_L, "bytes per committed token per head, L = 1..128");
                if (h) { /* sticky errors: rs_h5file_close reports a failure */
                    (void)rs_h5file_attr_f64(h, "/c5", "drafts_T", T);
                    (void)rs_h5file_attr_f64(h, "/c5", "accept_a_bar", A);
                }
            }
        }
    }
    printf("\n");
}
