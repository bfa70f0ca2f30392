/* cmd_theory.c — `replayssm theory`: the Appendix C numbers (C.1-C.6) as tables, and their
 * curves in an HDF5 file: traffic vs window per model and format, amortised bytes vs window,
 * and the C.6 error growth (closed form next to a Monte Carlo through the real quantizers).
 * This file parses the options and owns the output file (written through rs_h5file: atomic,
 * never over a non-regular file, every failure reported); theory_print.c prints the tables and
 * writes the curves, whose numbers come from replayssm/theory/rs_theory_tables.h. Formulas:
 * replayssm/theory/rs_theory.h; Monte Carlo: replayssm/theory/rs_theory_mc.h; derivations:
 * docs/theory.md. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h" /* the option grammar */
#include "rs_cli.h"  /* rs_cli_fail */
#include "theory.h"  /* the tables */
#include "replayssm/engine/rs_policy.h" /* RS_RUN_WINDOW_DEFAULT, RS_RUN_WINDOW_MAX */
#include "replayssm/eval/rs_h5file.h"   /* the curves file */
#include "replayssm/theory/rs_theory.h" /* model shapes */

#ifndef RS_GIT_COMMIT
#define RS_GIT_COMMIT "unknown"
#endif

#define TH_DEFAULT_DRAFTS 4.0
#define TH_DEFAULT_ACCEPT 3.5
#define TH_DEFAULT_MC_STEPS 2000ul
/* the seed default is the CLI's one default (RS_CLI_DEFAULT_SEED), the same for every command */

static const char k_about[] =
    "Prints the closed forms of the paper's Appendix C for the built-in model shapes:\n"
    "  C.1  arithmetic intensity of conventional decode per state format\n"
    "  C.2  context length where attention KV reads equal SSM state traffic\n"
    "  C.3  traffic per window, ReplaySSM / conventional, vs L, per model and format\n"
    "  C.4  FLOPs of one step: output-only vs materialised state\n"
    "  C.5  optimal window L* = sqrt(2 a_bar (M_S/r - T)), standard and speculative\n"
    "  C.6  accumulated rounding error (conventional, shared, split; RTN and SR):\n"
    "       closed forms with per-rounding moments measured on the real quantizers,\n"
    "       next to a Monte Carlo through the same quantizers\n"
    "and, with --out, writes every curve to an HDF5 file (see docs/theory.md).";

#define TH_MAX_DRAFTS RS_RUN_WINDOW_MAX /* --drafts / --accept at most the longest --window */

int rs_cmd_theory(int argc, char **argv)
{
    const char *shape = NULL, *model_arg = NULL, *model = "all", *out = NULL;
    size_t L = RS_RUN_WINDOW_DEFAULT, mc_steps = TH_DEFAULT_MC_STEPS;
    double T = TH_DEFAULT_DRAFTS, A = TH_DEFAULT_ACCEPT;
    uint64_t seed = RS_CLI_DEFAULT_SEED;
    int force = 0;
    const rs_cli_opt opts[] = {
        RS_CLI_OPT_SHAPE(&shape),
        RS_CLI_OPT_MODEL_SHAPE(&model_arg),
        /* the replay window L of a run (C.3's window, C.6's shared/split flush interval): default
           and range are the run spec's */
        {"--window", NULL, RS_CLI_SIZE, "L", "replay window for the C.3/C.6 tables",
         "[" RS_CLI_XSTR_(RS_RUN_WINDOW_DEFAULT) "]", &L, 1, RS_RUN_WINDOW_MAX, NULL, NULL, NULL, 0},
        /* bounded like every number option (a window of drafts never exceeds the longest replay
           window): 1e20 drafts is a typo, not a shape */
        {"--drafts", NULL, RS_CLI_DOUBLE, "T", "draft tokens for speculative L*", "[4]", &T, 1, TH_MAX_DRAFTS, NULL, NULL,
         NULL, 0},
        {"--accept", NULL, RS_CLI_DOUBLE, "A", "mean accepted tokens per step, 0 < A <= T", "[3.5]", &A, 0,
         TH_MAX_DRAFTS, NULL, NULL, NULL, RS_CLI_LO_OPEN},
        RS_CLI_OPT_OUT(&out, "write the curves (HDF5); an existing FILE is kept unless --force", "[none: tables only]"),
        RS_CLI_OPT_FORCE(&force),
        {"--mc-steps", NULL, RS_CLI_SIZE, "N", "longest Monte Carlo run, steps (0 skips the MC)", "[2000]", &mc_steps,
         0, 10000000, NULL, NULL, NULL, 0},
        RS_CLI_OPT_SEED(&seed),
    };
    const rs_cli_spec spec = {"theory", "[--shape NAME|all] [--window L] [--drafts T] [--accept A]\n"
                              "[--out curves.h5 [--force]] [--mc-steps N] [--seed S]", k_about, opts,
                              sizeof opts / sizeof opts[0], NULL, 0};
    const int pr = rs_cli_parse(&spec, argc, argv, NULL, NULL, NULL);
    if (pr) return pr == 1 ? 0 : 2;
    if (rs_cli_shape_name("theory", shape, model_arg, &model)) return 2;
    if (T < 1 || A > T) {
        fprintf(stderr, "replayssm theory: need --drafts >= 1 and 0 < --accept <= --drafts (got %g, %g)\n", T, A);
        return 2;
    }
    const rs_model_shape *ms[TH_MAX_MODELS];
    size_t nm = 0;
    if (!strcmp(model, "all")) {
        for (size_t i = 0; i < rs_theory_model_count() && nm < TH_MAX_MODELS; ++i) ms[nm++] = rs_theory_model_at(i);
    } else {
        rs_status st = rs_theory_model_find(model, &ms[0]);
        if (st != RS_OK) {
            rs_cli_fail("theory", "--model", st);
            return 2;
        }
        nm = 1;
    }

    rs_h5file *h = NULL;
    if (out) {
        /* a file-size limit fails a write with EFBIG (reported), not SIGXFSZ; and HDF5 1.10's
         * atexit handler would crash after such a failed close */
        signal(SIGXFSZ, SIG_IGN);
        rs_h5file_no_atexit();
        rs_status st = rs_h5file_create(out, force, &h);
        if (st != RS_OK) return rs_cli_fail("theory", "--out", st);
        char cmdline[1024] = "replayssm theory";
        for (int i = 1; i < argc; ++i)
            if (strlen(cmdline) + strlen(argv[i]) + 2 < sizeof cmdline) strcat(cmdline, " "), strcat(cmdline, argv[i]);
        /* sticky errors (rs_h5file.h): rs_h5file_close below reports the first failure */
        (void)rs_h5file_attr_str(h, "/", "tool", "replayssm theory " RS_VERSION_STRING " (git " RS_GIT_COMMIT ")");
        (void)rs_h5file_attr_str(h, "/", "command", cmdline);
        (void)rs_h5file_attr_str(h, "/", "source", "ReplaySSM (arXiv:2610.13778) Appendix C; shared/paper/replayssm-digest.md; "
                                                   "formulas include/replayssm/theory/rs_theory.h, derivations docs/theory.md");
        (void)rs_h5file_attr_f64(h, "/", "seed", (double)seed);
        (void)rs_h5file_attr_f64(h, "/", "window_L", L);
        (void)rs_h5file_attr_f64(h, "/", "mc_steps", (double)mc_steps);
    }

    printf("# replayssm theory — Appendix C (models: %s; L = %zu; T = %g; a_bar = %g)\n\n", model, L, T, A);
    int rc = rs_th_table_c1(ms, nm, h) || rs_th_table_c2(ms, nm, h) || rs_th_table_c3(ms, nm, (unsigned)L, h) ||
             rs_th_table_c4(ms, nm) || rs_th_table_c5(ms, nm, T, A, h);
    if (!rc) {
        if (mc_steps > 0) rc = rs_th_table_c6((unsigned)L, mc_steps, (unsigned long long)seed, h);
        else printf("## C.6 skipped (--mc-steps 0)\n");
    }

    if (out) {
        if (rc) { /* an incomplete set of curves never replaces a file */
            rs_h5file_discard(h);
            return rc;
        }
        rs_status st = rs_h5file_close(h);
        if (st != RS_OK) return rs_cli_fail("theory", "writing the curves", st);
        printf("wrote %s\n", out);
    }
    return rc;
}
