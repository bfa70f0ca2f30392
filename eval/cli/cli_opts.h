/* cli_opts.h — the one option grammar of every `replayssm` command (cli_opts.c). A command
 * declares its options in a table of rs_cli_opt; rs_cli_parse reads argv against it (option
 * lookup, "--name value" and "--name=value", value parsing with range checks, the error
 * messages) and rs_cli_help renders `--help` from the same table, so every command spells an
 * option, its value check and its message the same way. Shared options (--seed, --threads,
 * --out, --force, --quiet, --progress-every, --model, --shape) are declared once here as
 * macros with one default each.
 *
 * Messages (every one starts "replayssm <cmd>: ", exit status 2):
 *   unknown option '--x' (see 'replayssm <cmd> --help')
 *   --x needs a value
 *   --x needs a non-negative integer, not 'v'     (size / u64 with lo = 0 and no upper bound)
 *   --x needs a positive integer, not 'v'         (lo = 1, no upper bound)
 *   --x needs an integer in [lo, hi], not 'v'     (otherwise)
 *   --x needs a number in (lo, hi], not 'v'       (double; lo excluded when RS_CLI_LO_OPEN)
 *   --x must be one of a, b, c, not 'v'           (choice)
 *   unexpected argument 'v' (see ...)             (a positional argument the command has none of)
 */
#ifndef RS_CLI_OPTS_H
#define RS_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "replayssm/engine/rs_policy.h" /* RS_RUN_SEED_DEFAULT */

#define RS_CLI_STR_(x) #x
#define RS_CLI_XSTR_(x) RS_CLI_STR_(x)
/* The one default seed of every command that draws random numbers (kl / sweep stochastic
 * rounding, quant-error's synthetic data and SR, theory's Monte Carlo). */
#define RS_CLI_DEFAULT_SEED RS_RUN_SEED_DEFAULT
#define RS_CLI_DEFAULT_SEED_STR RS_CLI_XSTR_(RS_RUN_SEED_DEFAULT)
/* non-TTY progress: one plain line every this many seconds */
#define RS_CLI_DEFAULT_PROGRESS_EVERY 30.0
/* help layout: options indented 2, their text starts at this column (0-based) */
#define RS_CLI_HELP_COL 24
#define RS_CLI_HELP_WIDTH 100 /* no help line is longer */

typedef enum rs_cli_kind {
    RS_CLI_FLAG,   /* no value: *(int *)dst = 1 */
    RS_CLI_STR,    /* *(const char **)dst = the value (a pointer into argv) */
    RS_CLI_SIZE,   /* *(size_t *)dst, decimal, in [lo, hi] */
    RS_CLI_U64,    /* *(uint64_t *)dst, decimal, in [lo, hi] (hi 0: UINT64_MAX) */
    RS_CLI_INT,    /* *(int *)dst, decimal, in [lo, hi] */
    RS_CLI_DOUBLE, /* *(double *)dst, finite, in [lo, hi] (lo excluded with RS_CLI_LO_OPEN) */
    RS_CLI_CHOICE, /* *(const char **)dst = the value, one of `choices` ("a|b|c") */
    RS_CLI_CUSTOM  /* fn(ctx, value) checks and stores (value NULL for a flag-like custom) */
} rs_cli_kind;

#define RS_CLI_LO_OPEN 1u /* flags: the lower bound is excluded (a double > lo) */
#define RS_CLI_NOVAL 2u   /* RS_CLI_CUSTOM without a value */
#define RS_CLI_HIDDEN 4u  /* parsed, not listed by --help (old spellings) */

struct rs_cli_ctx;
typedef struct rs_cli_opt {
    const char *name;    /* "--seed" */
    const char *alias;   /* "-q" or NULL */
    rs_cli_kind kind;
    const char *metavar; /* "S" (NULL for flags) */
    const char *help;    /* text; '\n' starts a line, each rendered at RS_CLI_HELP_COL */
    const char *def;     /* the default as shown ("[0]"), NULL: none shown */
    void *dst;
    double lo, hi;       /* numeric kinds; hi 0 for SIZE / U64: no upper bound */
    const char *choices; /* RS_CLI_CHOICE: "skip|truncate" */
    int (*fn)(struct rs_cli_ctx *c, const char *val); /* RS_CLI_CUSTOM: 1 ok, 0 after printing */
    int *given;          /* set to 1 when the option appears (may be NULL) */
    unsigned flags;
} rs_cli_opt;

typedef struct rs_cli_spec {
    const char *cmd;       /* "kl" */
    const char *synopsis;  /* after "usage: replayssm <cmd> "; '\n' continues aligned */
    const char *about;     /* paragraph(s) between usage and options (may be NULL) */
    const rs_cli_opt *opts;
    size_t n_opts;
    const char *epilog;    /* after the options (may be NULL) */
    size_t max_positional; /* positional arguments allowed (info: 1, tokenize: many) */
} rs_cli_spec;

/* what a RS_CLI_CUSTOM handler sees: the command, argv with the index of the option's value
 * (a handler may consume more arguments by advancing *i), and the command's own data */
typedef struct rs_cli_ctx {
    const rs_cli_spec *spec;
    const char *name; /* the option as spelled */
    int argc;
    char **argv;
    int *i;       /* index of the value in argv (or of the option with "--name=value": eq_form) */
    int eq_form;  /* the value came with "=" */
    void *user;
} rs_cli_ctx;

/* rs_cli_parse() : parse argv[1..argc) against spec; positional arguments (anything not starting
 * with '-', and everything after "--") go to pos[*n_pos] (pos has room for max_positional).
 * Returns 0 ok, 1 help printed on stdout, 2 usage error printed on stderr. */
int rs_cli_parse(const rs_cli_spec *spec, int argc, char **argv, void *user, char **pos, size_t *n_pos);

/* rs_cli_help() : the --help text of spec (usage, about, options with defaults, epilog). */
void rs_cli_help(const rs_cli_spec *spec, FILE *f);

/* rs_cli_usage_error() : "replayssm <cmd>: <message>\n" on stderr; returns 2. printf-style. */
int rs_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* rs_cli_parse_size() : a non-negative decimal integer (no sign, no blanks); 1 ok, 0 not one. */
int rs_cli_parse_size(const char *s, size_t *out);

/* rs_cli_shape_name() : the built-in model shape of `theory` / `bench` from --shape (shape) and
 * --model (model; NULL when not given): --model is a checkpoint folder in every command, so a
 * folder here is refused with a pointer to --shape, and so is a name that is neither a folder nor
 * a built-in shape; a built-in shape name after --model (the old spelling) is taken with a note
 * on stderr. *out: the shape name or "all". Returns 0, or 2 after printing the error. */
int rs_cli_shape_name(const char *cmd, const char *shape, const char *model, const char **out);

/* Shared option declarations: one spelling, one check, one help text and one default. */
#define RS_CLI_OPT_SEED(dst)                                                                                \
    {"--seed", NULL, RS_CLI_U64, "S", "seed of every random draw (SR, synthetic data, Monte Carlo)",    \
     "[" RS_CLI_DEFAULT_SEED_STR "]", (dst), 0, 0, NULL, NULL, NULL, 0}
#define RS_CLI_OPT_THREADS(dst)                                                                             \
    {"--threads", NULL, RS_CLI_INT, "N", "CPU threads", "[OpenMP default]", (dst), 1, 4096, NULL, NULL, NULL, 0}
#define RS_CLI_OPT_FORCE(dst) {"--force", NULL, RS_CLI_FLAG, NULL, "replace an existing --out", NULL, (dst), 0, 0, NULL, NULL, NULL, 0}
#define RS_CLI_OPT_QUIET(dst)                                                                               \
    {"--quiet", "-q", RS_CLI_FLAG, NULL, "no progress on stderr", NULL, (dst), 0, 0, NULL, NULL, NULL, 0}
#define RS_CLI_OPT_SHAPE(dst)                                                                               \
    {"--shape", NULL, RS_CLI_STR, "NAME", "built-in model shape: nemotron-3-nano-4b, nemotron-3-super,\n"   \
     "qwen3.5-4b, qwen3.5-122b, or all", "[all]", (dst), 0, 0, NULL, NULL, NULL, 0}
#define RS_CLI_OPT_MODEL_SHAPE(dst)                                                                         \
    {"--model", NULL, RS_CLI_STR, "DIR", "a checkpoint folder, as in every command: refused here (use\n"    \
     "--shape); a built-in shape name is taken as --shape NAME", NULL, (dst), 0, 0, NULL, NULL, NULL, 0}
#define RS_CLI_OPT_OUT(dst, what, def)                                                                      \
    {"--out", NULL, RS_CLI_STR, "FILE", what, def, (dst), 0, 0, NULL, NULL, NULL, 0}

#endif /* RS_CLI_OPTS_H */
