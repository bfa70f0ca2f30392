/* cmd_bench.c — `replayssm bench`: the GPU benchmark of the decode kernels: the
 * device-to-device copy ceiling, conventional vs ReplaySSM standard decode over the batch,
 * the window sweep, speculative verification (snapshot baseline vs ReplaySSM, a = 1 and
 * a = T), and non-flush reads of fp32 / fp16 / fp8 / nvfp4 checkpoints, for the paper's four
 * model shapes. Prints one table per sweep and writes every row to HDF5 (layout:
 * docs/kernels.md "replayssm bench"). Needs a CUDA build (RS_HAVE_CUDA: -DRS_CUDA=ON) and a GPU;
 * otherwise it says so and exits 1. Timing method: replayssm/cuda/rs_cuda_bench.h. This file
 * parses the options, prints the rows the sweeps report and owns the output (rs_h5file: created
 * before any GPU time is spent, atomic, never over a non-regular file); the sweeps are
 * libreplayssm-cuda's (replayssm/cuda/rs_cuda_bench_sweeps.h), the file's layout bench.h and
 * bench_write.c. */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"   /* rows, columns, the writer */
#include "cli_opts.h" /* the option grammar */
#include "rs_cli.h"  /* rs_cli_fail */

#ifndef RS_GIT_COMMIT
#define RS_GIT_COMMIT "unknown"
#endif

#define BN_DEFAULT_REPS 50
#define BN_DEFAULT_OUT "bench.h5"

static const char k_about[] =
    "GPU benchmark of the CUDA decode kernels (needs a CUDA build and a GPU):\n"
    "  copy     device-to-device copy ceiling (bytes read + written)\n"
    "  std      standard decode, fp32 state, L = 16: conventional vs ReplaySSM,\n"
    "           B in {1, 8, 32, 128, 256, 512}, flush cost amortised over the window; ReplaySSM as\n"
    "           the default launch choice and forced to two launches / one (variants -prep, -fused)\n"
    "  window   ReplaySSM, L in {4, 8, 16, 32, 64}, B = 256\n"
    "  verify   speculative verification, T in {1, 2, 4, 6, 8, 12, 16} at L = 16, a = 1 and a = T,\n"
    "           B = 256: snapshot baseline (1R + T W) vs ReplaySSM output-only (+ UT solve, GDN);\n"
    "           ReplaySSM also at L + T = 64 ((L, T) = (48, 16), (56, 8))\n"
    "  lp       ReplaySSM non-flush read of an fp32 / fp16 / fp8 / nvfp4 checkpoint (-prep, -fused, -v3)\n"
    "Timing: CUDA graphs of consecutive steps over rotating input sets larger than the L2,\n"
    "CUDA events, warm-up, median of N replays. Every row reports achieved GB/s of the\n"
    "bytes that must move and % of the measured copy bandwidth; std rows also carry the\n"
    "traffic model of Appendix C.3 (replayssm/theory/rs_theory.h).";

/* the options (cli_opts.h), parsed the same way with and without CUDA */
typedef struct bench_opts {
    const char *out, *shape, *model_arg, *sweeps;
    int force, quick, reps;
} bench_opts;

static int parse_bench_(int argc, char **argv, bench_opts *b)
{
    const rs_cli_opt opts[] = {
        RS_CLI_OPT_OUT(&b->out, "HDF5 output; an existing FILE is kept unless --force", "[" BN_DEFAULT_OUT "]"),
        RS_CLI_OPT_FORCE(&b->force),
        RS_CLI_OPT_SHAPE(&b->shape),
        RS_CLI_OPT_MODEL_SHAPE(&b->model_arg),
        {"--sweep", NULL, RS_CLI_STR, "LIST", "comma-separated subset of copy,std,window,verify,lp (all, the default), tcv and tcl", "[all]", &b->sweeps,
         0, 0, NULL, NULL, NULL, 0},
        {"--reps", NULL, RS_CLI_INT, "N", "timed graph replays per case", "[50]", &b->reps, 1, 100000, NULL, NULL, NULL,
         0},
        {"--quick", NULL, RS_CLI_FLAG, NULL, "B = 256 only in std, T in {1, 8, 16} and (48, 16) in verify (smoke test)", NULL, &b->quick,
         0, 0, NULL, NULL, NULL, 0},
    };
    const rs_cli_spec spec = {"bench", "[--out FILE.h5] [--force] [--shape NAME|all] [--sweep LIST]\n"
                              "[--reps N] [--quick]", k_about, opts, sizeof opts / sizeof opts[0], NULL, 0};
    return rs_cli_parse(&spec, argc, argv, NULL, NULL, NULL);
}

#ifndef RS_HAVE_CUDA

int rs_cmd_bench(int argc, char **argv)
{
    bench_opts b = {BN_DEFAULT_OUT, NULL, NULL, "copy,std,window,verify,lp", 0, 0, BN_DEFAULT_REPS};
    const int pr = parse_bench_(argc, argv, &b);
    if (pr) return pr == 1 ? 0 : 2;
    const char *model = NULL;
    if (rs_cli_shape_name("bench", b.shape, b.model_arg, &model)) return 2;
    fprintf(stderr, "replayssm bench: built without CUDA: reconfigure with -DRS_CUDA=ON on a machine with nvcc "
                    "and run on a GPU\n");
    return 1;
}

#else /* RS_HAVE_CUDA */

#include "replayssm/theory/rs_theory.h" /* model shapes; before rs_cuda.h (rs_ssm_kind) */
#include "replayssm/cuda/rs_cuda_bench.h"
#include "replayssm/cuda/rs_cuda_bench_sweeps.h"

static int has_sweep(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

/* the sweeps' tables as they run (rs_bench_report) */
static void print_heading(void *user, const char *text)
{
    (void)user;
    printf("\n## %s\n", text);
}
static void print_header(void *user, const char *title)
{
    (void)user;
    printf("\n## %s\n", title);
    printf("%-18s %-16s %-20s %5s %3s %2s %2s %10s %8s %6s %7s %s\n", "model", "kernel", "variant", "B", "L", "T", "a",
           "median_us", "GB/s", "%copy", "flush", "x");
}
static void print_row(void *user, const rs_bench_row *r, double x)
{
    (void)user;
    printf("%-18s %-16s %-20s %5d %3d %2d %2d %10.1f %8.0f %5.1f%% %6.3f %s", r->model, r->kernel, r->variant, r->B, r->L,
           r->T, r->a, r->median_us, r->gbps, r->pct_copy, r->flush_frac, x > 0 ? "" : "-");
    if (x > 0) printf("%.2fx", x);
    printf("\n");
    fflush(stdout);
}

/* one sweep of the list for model m */
static rs_status run_sweep(rs_bench_ctx *c, const char *name, const rs_model_shape *m, int quick)
{
    if (!strcmp(name, "std")) return rs_bench_sweep_std(c, m, quick);
    if (!strcmp(name, "window")) return rs_bench_sweep_window(c, m);
    if (!strcmp(name, "verify")) return rs_bench_sweep_verify(c, m, quick);
    if (!strcmp(name, "lp")) return rs_bench_sweep_lp(c, m);
    if (!strcmp(name, "tcv")) return rs_bench_sweep_tcv(c, m);
    return rs_bench_sweep_tcl(c, m);
}

/* the GPU's clock and power over the rows (rs_bench_result.sm_mhz / power_w / pcap_frac): their ranges, and how many
 * rows the board's power cap held for more than 5 % of their timed replays, by sweep, with those rows' clock range */
static void print_power(const rs_bench_ctx *c)
{
    const char *why = rs_cuda_bench_power_unavailable();
    if (why) {
        printf("\n## clocks and power: not measured (%s)\n", why);
        return;
    }
    double clo = 1e30, chi = 0, plo = 1e30, phi = 0, klo = 1e30, khi = 0; /* clock, power, clock of capped rows */
    size_t capped = 0, ns = 0, per[16] = {0};
    const char *sweeps[16]; /* the sweeps with capped rows, in order of appearance (a run has at most 8, `ref` included) */
    for (size_t i = 0; i < c->n; ++i) {
        const rs_bench_row *r = &c->rows[i];
        if (r->sm_mhz == r->sm_mhz) clo = r->sm_mhz < clo ? r->sm_mhz : clo, chi = r->sm_mhz > chi ? r->sm_mhz : chi;
        if (r->power_w == r->power_w) plo = r->power_w < plo ? r->power_w : plo, phi = r->power_w > phi ? r->power_w : phi;
        if (!(r->pcap_frac > 0.05)) continue;
        ++capped;
        if (r->sm_mhz == r->sm_mhz) klo = r->sm_mhz < klo ? r->sm_mhz : klo, khi = r->sm_mhz > khi ? r->sm_mhz : khi;
        size_t j = 0;
        while (j < ns && strcmp(sweeps[j], r->sweep)) ++j;
        if (j == ns && ns < 16) sweeps[ns++] = r->sweep;
        if (j < ns) ++per[j];
    }
    char by[256] = "none";
    for (size_t j = 0, o = 0; j < ns && o < sizeof by; ++j)
        o += (size_t)snprintf(by + o, sizeof by - o, "%s%s %zu", j ? ", " : "", sweeps[j], per[j]);
    printf("\n## clocks and power (NVML, per row: the mean over its timed replays; columns sm_mhz, power_w, pcap_frac)\n"
           "SM clock %.0f-%.0f MHz, board power %.0f-%.0f W; %zu of %zu rows under the power cap for > 5 %% of their "
           "timing (%s)", clo < 1e30 ? clo : 0, chi, plo < 1e30 ? plo : 0, phi, capped, c->n, by);
    if (capped && klo < 1e30) printf(", at %.0f-%.0f MHz", klo, khi);
    printf("\n");
}

int rs_cmd_bench(int argc, char **argv)
{
    bench_opts b = {BN_DEFAULT_OUT, NULL, NULL, "copy,std,window,verify,lp", 0, 0, BN_DEFAULT_REPS};
    const int pr = parse_bench_(argc, argv, &b);
    if (pr) return pr == 1 ? 0 : 2;
    const char *model = "all", *out = b.out, *sweeps = b.sweeps;
    if (rs_cli_shape_name("bench", b.shape, b.model_arg, &model)) return 2;
    const int force = b.force, quick = b.quick;
    const long reps = b.reps;
    static const char *known[] = {"copy", "std", "window", "verify", "lp", "tcv", "tcl"};
    for (const char *p = sweeps; *p;) {
        size_t n = strcspn(p, ",");
        int ok = 0;
        for (size_t j = 0; j < sizeof known / sizeof known[0]; ++j) ok |= strlen(known[j]) == n && !strncmp(p, known[j], n);
        if (!ok) {
            fprintf(stderr, "replayssm bench: unknown sweep '%.*s' (copy,std,window,verify,lp,tcv,tcl)\n", (int)n, p);
            return 2;
        }
        p += n + (p[n] == ',');
    }
    const rs_model_shape *ms[4];
    size_t nm = 0;
    if (!strcmp(model, "all")) {
        for (size_t i = 0; i < rs_theory_model_count() && i < 4; ++i) ms[nm++] = rs_theory_model_at(i);
    } else {
        rs_status st = rs_theory_model_find(model, &ms[0]);
        if (st != RS_OK) return rs_cli_fail("bench", "--model", st) + 1;
        nm = 1;
    }

    char device[256];
    int sms = 0;
    size_t l2 = 0, mem = 0;
    rs_status st = rs_cuda_bench_device(device, sizeof device, &sms, &l2, &mem);
    if (st != RS_OK) {
        fprintf(stderr, "replayssm bench: no usable GPU: %s\n", rs_last_error());
        return 1;
    }
    /* the output first: an existing file, a FIFO or an unwritable folder is refused before any
     * GPU time is spent (the file is built at a temporary name and placed at the end) */
    rs_h5file *h = NULL;
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit: EFBIG, reported, not a kill */
    rs_h5file_no_atexit();    /* HDF5 1.10's atexit handler crashes after a failed close */
    if ((st = rs_h5file_create(out, force, &h)) != RS_OK) return rs_cli_fail("bench", "--out", st);
    char cmdline[1024] = "replayssm bench";
    for (int i = 1; i < argc; ++i)
        if (strlen(cmdline) + strlen(argv[i]) + 2 < sizeof cmdline) strcat(cmdline, " "), strcat(cmdline, argv[i]);

    rs_bench_ctx c;
    memset(&c, 0, sizeof c);
    c.reps = (int)reps;
    c.report.heading = print_heading, c.report.table = print_header, c.report.row = print_row;
    printf("# replayssm bench on %s: %d SMs, %.0f MB L2, %.1f GB; %d timed replays per case\n", device, sms,
           (double)l2 / 1e6, (double)mem / 1e9, c.reps);
    const size_t copy_bytes = (size_t)2 << 30;
    double copy_us = 0;
    if ((st = rs_cuda_bench_copy(copy_bytes, c.reps, &copy_us)) != RS_OK) {
        rs_h5file_discard(h);
        return rs_cli_fail("bench", "copy", st);
    }
    c.copy_gbps = 2.0 * (double)copy_bytes / (copy_us * 1e3);
    printf("copy ceiling: cudaMemcpy D2D of %.2f GiB in %.1f us = %.0f GB/s (read + write)\n",
           (double)copy_bytes / (1 << 30), copy_us, c.copy_gbps);
    double read_us = 0;
    if ((st = rs_cuda_bench_read(copy_bytes, c.reps, &read_us)) != RS_OK) {
        rs_h5file_discard(h);
        return rs_cli_fail("bench", "read ceiling", st);
    }
    printf("read ceiling: a kernel reading %.2f GiB in %.1f us = %.0f GB/s (read only: the non-flush steps' floor)\n",
           (double)copy_bytes / (1 << 30), read_us, (double)copy_bytes / (read_us * 1e3));
    int rc = 0;
    for (size_t i = 0; i < nm && !rc; ++i) {
        const rs_model_shape *m = ms[i];
        printf("\n# %s (%s): H = %u value heads, G = %u key heads, d_v = %u, d_k = %u\n", m->full_name,
               m->ssm == RS_SSM_MAMBA2 ? "Mamba-2" : "GDN", m->value_heads, m->key_heads, m->d_v, m->d_k);
        static const char *order[] = {"std", "window", "verify", "lp", "tcv", "tcl"};
        for (size_t s = 0; s < sizeof order / sizeof order[0] && !rc; ++s)
            if (has_sweep(sweeps, order[s]) && (st = run_sweep(&c, order[s], m, quick)) != RS_OK)
                rc = rs_cli_fail("bench", order[s], st); /* the message names the case */
    }
    if (c.n) { /* the summary: one row of headline ratios per model shape */
        printf("\n## summary (B = 256; B1x: conv / ReplaySSM at B = 1)\n%-18s %9s %9s %8s %9s %9s %8s %8s %8s %7s\n",
               "model", "conv_us", "%copy", "replay", "speedup", "verifyT8", "fp16", "fp8", "nvfp4", "B1x");
        for (size_t i = 0; i < nm; ++i) {
            const rs_model_shape *m = ms[i];
            const rs_bench_row *cv = rs_bench_find_row(&c, "std", m->name, "conv", "fp32", 256);
            const rs_bench_row *rp = rs_bench_find_row(&c, "std", m->name, "replay", "cycle-bf16ring", 256);
            const rs_bench_row *v8 = rs_bench_find_row(&c, "verify", m->name, "verify-replay", "bf16ring-a8", 256);
            const rs_bench_row *f16 = rs_bench_find_row(&c, "lp", m->name, "replay", "nonflush-h7-fp16", 256);
            const rs_bench_row *f8 = rs_bench_find_row(&c, "lp", m->name, "replay", "nonflush-h7-fp8", 256);
            const rs_bench_row *f4 = rs_bench_find_row(&c, "lp", m->name, "replay", "nonflush-h7-nvfp4", 256);
            const rs_bench_row *r1 = rs_bench_find_row(&c, "std", m->name, "replay", "cycle-bf16ring", 1);
            printf("%-18s %9.1f %8.1f%% %8.1f %8.2fx %8.2fx %7.2fx %7.2fx %7.2fx %6.2fx\n", m->name, cv ? cv->median_us : 0,
                   cv ? cv->pct_copy : 0, rp ? rp->median_us : 0, rp ? rp->speedup : 0, v8 ? v8->norm : 0,
                   f16 ? f16->speedup : 0, f8 ? f8->speedup : 0, f4 ? f4->speedup : 0, r1 ? r1->speedup : 0);
        }
        /* the fused launch against the separate prologue, measured side by side in this run */
        static const char *pv[][2] = {{"std", "cycle-bf16ring"}, {"std", "nonflush-h7"}, {"std", "allflush"},
                                      {"lp", "nonflush-h7-fp32"}, {"lp", "nonflush-h7-fp16"}, {"lp", "nonflush-h7-fp8"},
                                      {"lp", "nonflush-h7-nvfp4"}};
        static const int pb[] = {1, 8, 32, 128, 256, 512};
        printf("\n## fused launch vs separate prologue (us -fused / us -prep = speed-up)\n");
        for (size_t i = 0; i < nm; ++i) {
            const rs_model_shape *m = ms[i];
            for (size_t j = 0; j < sizeof pv / sizeof pv[0]; ++j)
                for (size_t q = 0; q < sizeof pb / sizeof pb[0]; ++q) {
                    char v1[32], v2[32];
                    snprintf(v1, sizeof v1, "%s-fused", pv[j][1]);
                    snprintf(v2, sizeof v2, "%s-prep", pv[j][1]);
                    const rs_bench_row *f = rs_bench_find_row(&c, pv[j][0], m->name, "replay", v1, pb[q]);
                    const rs_bench_row *o = rs_bench_find_row(&c, pv[j][0], m->name, "replay", v2, pb[q]);
                    if (f && o)
                        printf("%-18s %-4s %-20s B=%-4d %9.1f / %9.1f = %.3fx\n", m->name, pv[j][0], pv[j][1], pb[q],
                               f->median_us, o->median_us, o->median_us / f->median_us);
                }
        }
    }
    if (c.n) print_power(&c);
    if (c.n) { /* the rows measured, also after a failed case (as before: rc stays 1 then) */
        const bn_meta meta = {"replayssm bench " RS_VERSION_STRING " (git " RS_GIT_COMMIT ")", cmdline, device, sms, l2,
                              copy_us, (double)copy_bytes, c.copy_gbps, c.reps, read_us, (double)copy_bytes};
        (void)bn_write_file(h, c.rows, c.n, &meta); /* sticky: the close reports the first failure */
        st = rs_h5file_close(h);
        if (st != RS_OK) rc = rs_cli_fail("bench", "writing the rows", st);
        else printf("\nwrote %s (%zu rows)\n", out, c.n);
    } else {
        rs_h5file_discard(h);
    }
    rs_bench_ctx_free(&c);
    return rc ? 1 : 0;
}

#endif /* RS_HAVE_CUDA */

