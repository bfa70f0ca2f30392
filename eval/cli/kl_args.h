/* kl_args.h — what `replayssm kl` and `replayssm sweep` share: their options (kl_args.c parses
 * them) and the evaluation with its printing (cmd_kl.c: one rs_kleval call, the events and the
 * summary table on the way out). */
#ifndef RS_KL_ARGS_H
#define RS_KL_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "replayssm/engine/rs_policy.h"

/* Defaults of the bundled run (`replayssm kl` with no options); paths relative to the repo root. */
#define RS_KL_DEFAULT_MODEL "data/models/gdn-tiny"
#define RS_KL_DEFAULT_DATA "data/pg19-sample"
#define RS_KL_DEFAULT_OUT "kl-default.h5"
#define RS_SWEEP_DEFAULT_OUT "sweep-default.h5" /* sweep without --out */
#define RS_KL_DEFAULT_TOKENS 8192
#define RS_KL_DEFAULT_CHUNK 64
#define RS_KL_MAX_RUNS 64 /* the window's default and range are the library's (RS_RUN_WINDOW_*) */

typedef struct rs_kl_opts {
    const char *cmd; /* "kl" or "sweep" (messages) */
    const char *model, *data, *split, *out, *short_mode;
    const char *invalid_utf8; /* --invalid-utf8 replace|latin1|error (rs_text.h) ["replace"] */
    size_t books;
    char **book_ids; /* owned copies */
    size_t n_book_ids;
    int pg19_given;  /* --data, --split, --books or --book-ids was given */
    /* --text FILE... / --token-ids FILE...: the input kind (0 PG-19, 1 text, 2 token ids, as
     * rs_kleval_input) and the files (pointers into argv) */
    int input_kind;
    const char **inputs;
    size_t n_inputs;
    size_t tokens, chunk;
    size_t batch;            /* --batch B: books in flight at once [1] */
    uint64_t seed;
    int random_weights;      /* --random-weights SEED given */
    uint64_t random_seed;    /* its SEED */
    int threads, resume, force, quiet;
    double progress_every; /* --progress-every: seconds between plain progress lines (stderr not a TTY) */
    int all_stats;         /* --all-stats: the low KL percentiles and the Δp percentiles too */
    const char *timing;    /* --timing F.tsv: one line of cumulative stage seconds per committed chunk */
    const char *device;      /* --device cpu|cuda[:N]  ["cpu"] */
    int device_ordinal;      /* N of cuda:N [0] */
    const char *compute;     /* --compute fp32|tf32x3|tf32|bf16  ["fp32"] */
    int ref_only; /* kl --policy none: the fp32 reference alone (its NLL / bits per token), no runs */
    /* kl: the --policy values as given (comma lists split later) and --window as given (NULL:
     * the library's default window) */
    const char *policies[RS_KL_MAX_RUNS];
    size_t n_policies;
    const char *window;
    /* sweep: the list options as given (NULL: the command's default) */
    const char *modes, *formats, *rounding, *hp, *windows;
    /* the runs, parsed by the library from the strings above (rs_run_spec_parse / _make), without
     * repeats (rs_run_spec_add) */
    size_t n_runs;
    rs_run_spec runs[RS_KL_MAX_RUNS];
} rs_kl_opts;

/* rs_kl_opts_init() : the defaults of `cmd`; rs_kl_opts_free() : the book id copies. */
void rs_kl_opts_init(rs_kl_opts *o, const char *cmd);
void rs_kl_opts_free(rs_kl_opts *o);

/* rs_kl_parse() : the options of argv[1..argc) (sweep != 0: the sweep lists instead of --policy /
 * --window) through the shared grammar (cli_opts.h); --help renders synopsis, about, the option
 * table and epilog. Returns 0 ok, 1 help printed, 2 usage error (printed). */
int rs_kl_parse(int argc, char **argv, rs_kl_opts *o, int sweep, const char *synopsis, const char *about,
                const char *epilog);

/* rs_kl_add_run() : append the run the library parses from the policy and window strings (window
 * NULL: the default) and the seed, unless it is already there. Returns 1, or 0 after printing the
 * library's message (unknown policy, bad window, too many runs). */
int rs_kl_add_run(rs_kl_opts *o, const char *policy, const char *window);

/* rs_kl_add_spec() : the same for a run the library made (st: the status of rs_run_spec_make). */
int rs_kl_add_spec(rs_kl_opts *o, rs_status st, const rs_run_spec *run);

/* rs_kl_split_list() : split a comma list in place into at most max items; the count, or 0
 * after printing "replayssm <cmd>: <what>: ..." for an empty list, an empty item or more than
 * max items. */
size_t rs_kl_split_list(const char *cmd, const char *what, char *s, char **items, size_t max);

/* rs_kl_evaluate() : run the evaluation of o (cmd_kl.c); argv is recorded as the command line.
 * Returns the exit status: 0 ok, 1 failure, 2 usage error. */
int rs_kl_evaluate(const rs_kl_opts *o, int argc, char **argv);

#endif /* RS_KL_ARGS_H */
