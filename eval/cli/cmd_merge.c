/* cmd_merge.c — `replayssm merge A.h5 B.h5 ... -o ALL.h5`: logs of independent jobs (Slurm job
 * arrays, other machines, half-sweeps) of one configuration into one log with the layout of a
 * single run (rs_h5log_merge, eval/log/rs_h5log_merge.c; docs/evaluator.md "Scale-out with MPI"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_cli.h"
#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_h5log_merge.h"

static void usage_merge_(FILE *f)
{
    fprintf(f,
            "usage: replayssm merge A.h5 B.h5 [...] -o ALL.h5 [--force]\n\n"
            "Merge KL logs of one configuration (same model config hash, tokenizer, input kind and\n"
            "files, split, --short, --tokens, --chunk, device kind and compute mode) into one log:\n"
            "the union of their books and runs, in order of first appearance. Every book must come\n"
            "with every run of the union, every input must be complete (--resume it first), and a\n"
            "book or run found in several inputs must agree bit for bit; anything else is refused\n"
            "and nothing is written. Summaries are recomputed from the merged arrays.\n\n"
            "  -o, --out F.h5  the merged log (refused if it exists, unless --force)\n"
            "  --force         replace an existing output (atomically, once the merge succeeded)\n"
            "Exit status: 0 ok, 1 refused or failed, 2 usage error.\n");
}

int rs_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    int force = 0;
    const char **in = (const char **)calloc((size_t)argc + 1, sizeof(char *));
    size_t n = 0;
    if (!in) {
        fprintf(stderr, "replayssm merge: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage_merge_(stdout);
            free(in);
            return 0;
        } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "replayssm merge: %s needs a file name\n", argv[i]);
                free(in);
                return 2;
            }
            out = argv[++i];
        } else if (!strcmp(argv[i], "--force")) {
            force = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "replayssm merge: unknown option '%s' (see --help)\n", argv[i]);
            free(in);
            return 2;
        } else {
            in[n++] = argv[i];
        }
    }
    if (!out || n == 0) {
        fprintf(stderr, "replayssm merge: give the logs to merge and -o OUT.h5 (see --help)\n");
        free(in);
        return 2;
    }
    rs_h5log_no_atexit();
    /* the command line recorded in the merged log */
    size_t len = 32;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *cmd = (char *)calloc(len, 1);
    if (cmd) {
        strcpy(cmd, "replayssm");
        for (int i = 0; i < argc; i++) strcat(strcat(cmd, " "), argv[i]);
    }
    rs_h5log_merge_opts o = {force, cmd, NULL};
    const rs_status st = rs_h5log_merge(in, n, out, &o);
    free(cmd);
    free(in);
    if (st != RS_OK) {
        char esc[4 * 1024 + 1];
        fprintf(stderr, "replayssm merge: %s\n", rs_cli_esc(rs_last_error(), esc, sizeof esc));
        return 1;
    }
    rs_h5log *lg = NULL;
    if (rs_h5log_open(out, 0, NULL, &lg) == RS_OK) {
        printf("replayssm merge: %zu logs -> %s: %zu books x %zu runs\n", n, out, rs_h5log_n_books(lg),
               rs_h5log_n_runs(lg));
        rs_h5log_close(lg);
    }
    return 0;
}
