/* cmd_sweep.c — `replayssm sweep`: the cartesian product modes x formats x rounding (x hp for
 * split) x windows as runs of one evaluation (rs_kl_evaluate, cmd_kl.c). All runs, whatever
 * their window, share one runner and therefore one fp32 reference per position. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_args.h"
#include "rs_cli.h"

static const char k_sweep_synopsis[] =
    "[kl options except --policy/--window] [--out F.h5]\n"
    "[--modes conv,shared,split] [--formats fp16,fp8,nvfp4]\n"
    "[--rounding sr,rtn] [--hp fp32[,fp16-sr...]] [--windows 4,8,16,32,64]";
static const char k_sweep_about[] =
    "The cartesian product modes x formats x rounding (x hp for split) x windows, in one HDF5\n"
    "log sharing the fp32 reference. conv runs do not depend on L and appear once.\n"
    "split:<fmt>-<rounding>/<hp> reads the low-precision copy and carries the recurrence in hp.";
static const char k_sweep_epilog[] =
    "Defaults: --modes shared,split --formats fp8,nvfp4 --rounding sr,rtn --hp fp32 --windows 16,\n"
    "--out " RS_SWEEP_DEFAULT_OUT ". The paper's window sweep (Figure 13, KL over L): --windows 4,8,16,32,64.\n"
    "Progress and the summary as `replayssm kl` (see its --help).";

/* The lists are split (strtok) in copies: argv stays whole for the log's command_line attribute
 * (splitting argv in place used to record "--windows 4" for "--windows 4,8,16"). */
typedef struct sweep_lists {
    char *buf[5]; /* the copies: modes, formats, rounding, hp, windows */
    char *m[8], *f[16], *r[4], *h[8], *w[32];
    size_t nm, nf, nr, nh, nw;
} sweep_lists;

static int split_lists_(const rs_kl_opts *o, sweep_lists *l)
{
    const char *src[5] = {o->modes ? o->modes : "shared,split", o->formats ? o->formats : "fp8,nvfp4",
                          o->rounding ? o->rounding : "sr,rtn", o->hp ? o->hp : "fp32",
                          o->windows ? o->windows : "16"};
    for (int i = 0; i < 5; i++)
        if (!(l->buf[i] = strdup(src[i]))) return 0;
    l->nm = rs_kl_split_list("sweep", "--modes", l->buf[0], l->m, 8);
    l->nf = rs_kl_split_list("sweep", "--formats", l->buf[1], l->f, 16);
    l->nr = rs_kl_split_list("sweep", "--rounding", l->buf[2], l->r, 4);
    l->nh = rs_kl_split_list("sweep", "--hp", l->buf[3], l->h, 8);
    l->nw = rs_kl_split_list("sweep", "--windows", l->buf[4], l->w, 32);
    return 1;
}

/* the runs of the product into o; 0 after printing a usage error */
static int add_runs_(rs_kl_opts *o, const sweep_lists *l)
{
    size_t wins[32];
    for (size_t w = 0; w < l->nw; w++)
        if (!rs_kl_parse_size(l->w[w], &wins[w]) || wins[w] == 0 || wins[w] > 4096) {
            fprintf(stderr, "replayssm sweep: bad window '%s'\n", l->w[w]);
            return 0;
        }
    for (size_t m = 0; m < l->nm; m++) {
        const char *mode = l->m[m];
        const int conv = !strcmp(mode, "conv");
        const int split = !strcmp(mode, "split") || !strcmp(mode, "split-naive");
        if (!conv && !split && strcmp(mode, "shared")) {
            fprintf(stderr, "replayssm sweep: unknown mode '%s' (conv, shared, split, split-naive)\n", mode);
            return 0;
        }
        for (size_t w = 0; w < (conv ? 1 : l->nw); w++)
            for (size_t f = 0; f < l->nf; f++)
                for (size_t r = 0; r < l->nr; r++)
                    for (size_t h = 0; h < (split ? l->nh : 1); h++) {
                        char pol[96];
                        if (split) snprintf(pol, sizeof pol, "%s:%s-%s/%s", mode, l->f[f], l->r[r], l->h[h]);
                        else snprintf(pol, sizeof pol, "%s:%s-%s", mode, l->f[f], l->r[r]);
                        if (!rs_kl_add_run(o, pol, wins[w])) return 0;
                    }
    }
    return 1;
}

int rs_cmd_sweep(int argc, char **argv)
{
    rs_kl_opts o;
    rs_kl_opts_init(&o, "sweep");
    sweep_lists l;
    memset(&l, 0, sizeof l);
    int rc = rs_kl_parse(argc, argv, &o, 1, k_sweep_synopsis, k_sweep_about, k_sweep_epilog);
    if (!o.out) o.out = RS_SWEEP_DEFAULT_OUT;
    if (rc == 1) rc = 0; /* --help */
    else if (rc == 0 && !split_lists_(&o, &l)) {
        fprintf(stderr, "replayssm sweep: out of memory\n");
        rc = 2;
    } else if (rc == 0 && !(l.nm && l.nf && l.nr && l.nh && l.nw)) {
        rc = 2; /* rs_kl_split_list said why */
    } else if (rc == 0) {
        rc = add_runs_(&o, &l) ? rs_kl_evaluate(&o, argc, argv) : 2;
    }
    for (int i = 0; i < 5; i++) free(l.buf[i]);
    rs_kl_opts_free(&o);
    return rc;
}
