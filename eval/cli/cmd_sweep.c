/* cmd_sweep.c — `replayssm sweep`: the cartesian product modes x formats x rounding (x hp for
 * split) x windows as runs of one evaluation (rs_kl_evaluate, cmd_kl.c). All runs, whatever
 * their window, share one runner and therefore one fp32 reference per position. Every list item
 * goes to the library as given (rs_policy_mode_parse, rs_format_parse, rs_format_set_rounding,
 * rs_run_spec_make): the one format grammar of every command, and its messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_args.h"
#include "rs_cli.h"

#define STR_(x) #x
#define XSTR_(x) STR_(x)

static const char k_sweep_synopsis[] =
    "[kl options except --policy/--window] [--out F.h5]\n"
    "[--modes conv,shared,split] [--formats fp16,fp8,nvfp4]\n"
    "[--rounding sr,rtn] [--hp fp32[,fp16-sr...]] [--windows 4,8,16,32,64]";
static const char k_sweep_about[] =
    "The cartesian product modes x formats x rounding (x hp for split) x windows, in one HDF5\n"
    "log sharing the fp32 reference. conv runs do not depend on L and appear once.\n"
    "split:<fmt>-<rounding>/<hp> reads the low-precision copy and carries the recurrence in hp.";
static const char k_sweep_epilog[] =
    "Defaults: --modes shared,split --formats fp8,nvfp4 --rounding sr,rtn --hp fp32 --windows "
    XSTR_(RS_RUN_WINDOW_DEFAULT) ",\n"
    "--out " RS_SWEEP_DEFAULT_OUT ". The paper's window sweep (Figure 13, KL over L): --windows 4,8,16,32,64.\n"
    "Progress and the summary as `replayssm kl` (see its --help).";

/* The lists are split (strtok) in copies: argv stays whole for the log's command_line attribute
 * (splitting argv in place would record "--windows 4" for "--windows 4,8,16"). */
typedef struct sweep_lists {
    char *buf[5]; /* the copies: modes, formats, rounding, hp, windows */
    char *m[8], *f[16], *r[4], *h[8], *w[32];
    size_t nm, nf, nr, nh, nw;
} sweep_lists;

static int split_lists_(const rs_kl_opts *o, sweep_lists *l)
{
    const char *src[5] = {o->modes ? o->modes : "shared,split", o->formats ? o->formats : "fp8,nvfp4",
                          o->rounding ? o->rounding : "sr,rtn", o->hp ? o->hp : "fp32",
                          o->windows ? o->windows : XSTR_(RS_RUN_WINDOW_DEFAULT)};
    for (int i = 0; i < 5; i++)
        if (!(l->buf[i] = strdup(src[i]))) return 0;
    l->nm = rs_kl_split_list("sweep", "--modes", l->buf[0], l->m, 8);
    l->nf = rs_kl_split_list("sweep", "--formats", l->buf[1], l->f, 16);
    l->nr = rs_kl_split_list("sweep", "--rounding", l->buf[2], l->r, 4);
    l->nh = rs_kl_split_list("sweep", "--hp", l->buf[3], l->h, 8);
    l->nw = rs_kl_split_list("sweep", "--windows", l->buf[4], l->w, 32);
    return 1;
}

/* "replayssm sweep: <option>: <the library's message>"; 0 */
static int list_error_(const char *option)
{
    fprintf(stderr, "replayssm sweep: %s: %s\n", option, rs_last_error());
    return 0;
}

/* the runs of the product into o; 0 after printing a usage error */
static int add_runs_(rs_kl_opts *o, const sweep_lists *l)
{
    rs_policy_mode modes[8];
    rs_format fr[16][4], hp[8]; /* each --formats item with each --rounding; each --hp item */
    size_t wins[32];
    for (size_t w = 0; w < l->nw; w++)
        if (rs_run_window_parse(l->w[w], &wins[w]) != RS_OK) return list_error_("--windows");
    for (size_t m = 0; m < l->nm; m++)
        if (rs_policy_mode_parse(l->m[m], &modes[m]) != RS_OK) return list_error_("--modes");
    for (size_t f = 0; f < l->nf; f++) {
        rs_format base;
        if (rs_format_parse(l->f[f], &base) != RS_OK) return list_error_("--formats");
        for (size_t r = 0; r < l->nr; r++)
            if ((fr[f][r] = base, rs_format_set_rounding(&fr[f][r], l->r[r])) != RS_OK) return list_error_("--rounding");
    }
    for (size_t h = 0; h < l->nh; h++)
        if (rs_format_parse(l->h[h], &hp[h]) != RS_OK) return list_error_("--hp");
    for (size_t m = 0; m < l->nm; m++) {
        const int conv = modes[m] == RS_POLICY_CONV; /* conv runs do not depend on L: once */
        const int split = modes[m] == RS_POLICY_SPLIT || modes[m] == RS_POLICY_SPLIT_NAIVE;
        for (size_t w = 0; w < (conv ? 1 : l->nw); w++)
            for (size_t f = 0; f < l->nf; f++)
                for (size_t r = 0; r < l->nr; r++)
                    for (size_t h = 0; h < (split ? l->nh : 1); h++) {
                        const rs_policy pol = {modes[m], split ? hp[h] : fr[f][r], fr[f][r]}; /* mode, hp, lp */
                        rs_run_spec run;
                        if (!rs_kl_add_spec(o, rs_run_spec_make(&pol, wins[w], o->seed, &run), &run)) return 0;
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
