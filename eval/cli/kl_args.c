/* kl_args.c — option parsing shared by `replayssm kl` and `replayssm sweep` (kl_args.h).
 * Every usage error is printed here ("replayssm <cmd>: ...") and ends with exit status 2. */
#include "kl_args.h"

#include "cli_opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_kleval.h"

void rs_kl_opts_init(rs_kl_opts *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->model = RS_KL_DEFAULT_MODEL;
    o->data = RS_KL_DEFAULT_DATA;
    o->split = "test";
    o->short_mode = "skip";
    o->invalid_utf8 = "replace";
    o->books = 1;
    o->tokens = RS_KL_DEFAULT_TOKENS;
    o->chunk = RS_KL_DEFAULT_CHUNK;
    o->batch = 1;
    o->device = "cpu";
    o->compute = "fp32";
    o->seed = RS_CLI_DEFAULT_SEED;
    o->progress_every = RS_CLI_DEFAULT_PROGRESS_EVERY;
}

void rs_kl_opts_free(rs_kl_opts *o)
{
    for (size_t i = 0; i < o->n_book_ids; i++) free(o->book_ids[i]);
    free(o->book_ids);
    o->book_ids = NULL;
    o->n_book_ids = 0;
    free(o->inputs);
    o->inputs = NULL;
    o->n_inputs = 0;
}

size_t rs_kl_split_list(const char *cmd, const char *what, char *s, char **items, size_t max)
{
    /* strtok would skip empty items: "--policy ''" or "--policy ," ran the reference alone, and
     * items past max were dropped without a word */
    const size_t len = strlen(s);
    if (!len || s[0] == ',' || s[len - 1] == ',' || strstr(s, ",,")) {
        fprintf(stderr, "replayssm %s: %s: empty item in '%s'\n", cmd, what, s);
        return 0;
    }
    size_t n = 1;
    for (const char *c = s; *c; c++) n += *c == ',';
    if (n > max) {
        fprintf(stderr, "replayssm %s: %s: %zu items in '%s', at most %zu\n", cmd, what, n, s, max);
        return 0;
    }
    n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

int rs_kl_add_spec(rs_kl_opts *o, rs_status st, const rs_run_spec *run)
{
    if (st == RS_OK) st = rs_run_spec_add(o->runs, &o->n_runs, RS_KL_MAX_RUNS, run);
    if (st != RS_OK) fprintf(stderr, "replayssm %s: %s\n", o->cmd, rs_last_error());
    return st == RS_OK;
}

int rs_kl_add_run(rs_kl_opts *o, const char *policy, const char *window)
{
    rs_run_spec run; /* the user's strings go to the library as given: its parse, checks and messages */
    return rs_kl_add_spec(o, rs_run_spec_parse(policy, window, o->seed, &run), &run);
}

/* --book-ids L: append the ids of the comma list (repeatable) */
static int add_book_ids_(rs_kl_opts *o, const char *val)
{
    char *copy = strdup(val);
    if (!copy) return 0;
    char *items[1024];
    const size_t k = rs_kl_split_list(o->cmd, "--book-ids", copy, items, 1024);
    if (!k) {
        free(copy);
        return 0;
    }
    for (size_t j = 0; j < k; j++) {
        char **nb = (char **)realloc(o->book_ids, (o->n_book_ids + 1) * sizeof(char *));
        if (!nb) {
            free(copy);
            return 0;
        }
        o->book_ids = nb;
        if (!(o->book_ids[o->n_book_ids] = strdup(items[j]))) {
            free(copy);
            return 0;
        }
        o->n_book_ids++;
    }
    free(copy);
    return 1;
}

/* --text / --token-ids (kind 1 / 2): the value and every following argument that is not an
 * option (--text a.txt b.txt); repeatable; the two exclude each other */
static int add_inputs_(rs_kl_opts *o, int kind, const char *name, const char *val, int *i, int argc, char **argv)
{
    if (o->input_kind && o->input_kind != kind) {
        fprintf(stderr, "replayssm %s: --text and --token-ids exclude each other\n", o->cmd);
        return 0;
    }
    o->input_kind = kind;
    for (;;) {
        if (!val[0]) {
            fprintf(stderr, "replayssm %s: %s: empty file name\n", o->cmd, name);
            return 0;
        }
        const char **ni = (const char **)realloc(o->inputs, (o->n_inputs + 1) * sizeof *ni);
        if (!ni) {
            fprintf(stderr, "replayssm %s: out of memory\n", o->cmd);
            return 0;
        }
        o->inputs = ni;
        o->inputs[o->n_inputs++] = val;
        if (*i + 1 >= argc || argv[*i + 1][0] == '-') return 1;
        val = argv[++*i];
    }
}

/* ---- the option tables of `kl` and `sweep` (cli_opts.h: one grammar for every command) ---- */

static int book_ids_opt_(rs_cli_ctx *c, const char *val)
{
    return add_book_ids_((rs_kl_opts *)c->user, val);
}

static int inputs_opt_(rs_cli_ctx *c, const char *val)
{
    rs_kl_opts *o = (rs_kl_opts *)c->user;
    /* --text=a.txt: that one file; --text a.txt b.txt: every following non-option */
    return add_inputs_(o, !strcmp(c->name, "--text") ? 1 : 2, c->name, val, c->i, c->eq_form ? *c->i + 1 : c->argc,
                       c->argv);
}

/* --device cpu | cuda | cuda:N */
/* --random-weights SEED: a decimal uint64 */
static int random_opt_(rs_cli_ctx *c, const char *val)
{
    rs_kl_opts *o = (rs_kl_opts *)c->user;
    char *end = NULL;
    if (val[0] >= '0' && val[0] <= '9') {
        const unsigned long long v = strtoull(val, &end, 10);
        if (*end == '\0') {
            o->random_weights = 1;
            o->random_seed = (uint64_t)v;
            return 1;
        }
    }
    rs_cli_usage_error(o->cmd, "--random-weights needs a decimal seed, not '%s'", val);
    return 0;
}

static int device_opt_(rs_cli_ctx *c, const char *val)
{
    rs_kl_opts *o = (rs_kl_opts *)c->user;
    if (!strcmp(val, "cpu") || !strcmp(val, "cuda")) {
        o->device = val;
        o->device_ordinal = 0;
        return 1;
    }
    if (!strncmp(val, "cuda:", 5) && val[5] >= '0' && val[5] <= '9') {
        char *end = NULL;
        const long n = strtol(val + 5, &end, 10);
        if (*end == '\0' && n >= 0 && n < 64) {
            o->device = "cuda";
            o->device_ordinal = (int)n;
            return 1;
        }
    }
    rs_cli_usage_error(o->cmd, "--device must be cpu, cuda or cuda:N, not '%s'", val);
    return 0;
}

static int compute_opt_(rs_cli_ctx *c, const char *val)
{
    rs_kl_opts *o = (rs_kl_opts *)c->user;
    rs_compute_mode cm;
    if (rs_compute_mode_parse(val, &cm) != RS_OK) {
        rs_cli_usage_error(o->cmd, "--compute: %s", rs_last_error());
        return 0;
    }
    o->compute = val;
    return 1;
}

static int policy_opt_(rs_cli_ctx *c, const char *val)
{
    rs_kl_opts *o = (rs_kl_opts *)c->user;
    if (o->n_policies >= RS_KL_MAX_RUNS) {
        rs_cli_usage_error(o->cmd, "too many policies");
        return 0;
    }
    o->policies[o->n_policies++] = val;
    return 1;
}

#define STR_(x) #x
#define XSTR_(x) STR_(x)

/* the options common to kl and sweep, then the command's own; returns the count */
static size_t kl_table_(rs_kl_opts *o, int sweep, rs_cli_opt *t, char *policy_help, size_t ph)
{
    snprintf(policy_help, ph, "state policy, repeatable or comma-separated:\n%s\nor 'none': the fp32 reference "
             "alone (NLL, bits/token; a third of the\ncost of one policy run), e.g. for a model's quality at long "
             "context", rs_policy_forms());
    /* rs_policy_forms() is one long line: rs_cli_help wraps it at the help column */
    const rs_cli_opt common[] = {
        {"--model", NULL, RS_CLI_STR, "DIR", "Hugging Face checkpoint folder (config.json + safetensors)",
         "[" RS_KL_DEFAULT_MODEL "]", &o->model, 0, 0, NULL, NULL, NULL, 0},
        {"--data", NULL, RS_CLI_STR, "DIR", "PG-19 layout root (metadata.csv, <split>/<id>.txt[.gz])",
         "[" RS_KL_DEFAULT_DATA "]", &o->data, 0, 0, NULL, NULL, &o->pg19_given, 0},
        {"--split", NULL, RS_CLI_STR, "NAME", "split folder", "[test]", &o->split, 0, 0, NULL, NULL, &o->pg19_given, 0},
        {"--books", NULL, RS_CLI_SIZE, "N", "first N books of metadata.csv found in the split", "[1]", &o->books, 1, 0,
         NULL, NULL, &o->pg19_given, 0},
        {"--book-ids", NULL, RS_CLI_CUSTOM, "L", "comma-separated book ids (repeatable)", NULL, NULL, 0, 0, NULL,
         book_ids_opt_, &o->pg19_given, 0},
        {"--text", NULL, RS_CLI_CUSTOM, "FILE...", "text files (UTF-8: see --invalid-utf8) instead of PG-19 books: each file "
         "one\nstream, tokenized by the model's tokenizer as a book is; stream id = its\nbase name", NULL, NULL, 0, 0,
         NULL, inputs_opt_, NULL, 0},
        {"--token-ids", NULL, RS_CLI_CUSTOM, "FILE...", "token ids instead of text (no tokenizer): raw little-endian "
         "uint32\n(one stream) or .npy [tokens] / [streams, tokens] of <u4 <i4 <u2 <i8 <u8;\nevery id < the model's "
         "vocab_size. --text / --token-ids exclude --data,\n--split, --books, --book-ids; the log records the files' "
         "SHA-256", NULL, NULL, 0, 0, NULL, inputs_opt_, NULL, 0},
        {"--tokens", NULL, RS_CLI_SIZE, "N", "positions per book or stream (needs N+1 tokens)",
         "[" XSTR_(RS_KL_DEFAULT_TOKENS) "]", &o->tokens, 1, RS_KLEVAL_MAX_TOKENS, NULL, NULL, NULL, 0},
    };
    const rs_cli_opt tail[] = {
        RS_CLI_OPT_SEED(&o->seed),
        {"--random-weights", NULL, RS_CLI_CUSTOM, "SEED", "random weights of a documented distribution instead of\n"
         "the checkpoint's (--model then needs only config.json, and\noptionally hf_quant_config.json): shape and "
         "speed runs\n(docs/models.md)", NULL, NULL, 0, 0, NULL, random_opt_, NULL, 0},
        RS_CLI_OPT_THREADS(&o->threads),
        {"--device", NULL, RS_CLI_CUSTOM, "D", "where the model runs: cpu, cuda or cuda:N (one GPU)", "[cpu]", NULL, 0,
         0, NULL, device_opt_, NULL, 0},
        {"--compute", NULL, RS_CLI_CUSTOM, "M", "GEMM precision: fp32, or on cuda tf32x3 (split-TF32), tf32, bf16;\nfp32 accumulation; twin (cuda): the CPU evaluator's arithmetic\n(bit for bit nearly everywhere; for checking, slower)",
         "[fp32]", NULL, 0, 0, NULL, compute_opt_, NULL, 0},
        {"--chunk", NULL, RS_CLI_SIZE, "C", "positions per forward chunk and per HDF5 flush",
         "[" XSTR_(RS_KL_DEFAULT_CHUNK) "]", &o->chunk, 1, RS_KLEVAL_MAX_CHUNK, NULL, NULL, NULL, 0},
        {"--batch", NULL, RS_CLI_SIZE, "B", "books / streams in flight at once: the next B books forwarded\n"
         "together (the reference and every run of each as batch rows);\nthe log equals the one-by-one run's "
         "(on cuda the GEMM shapes\nchange with B: recorded, --resume needs the same B)",
         "[1]", &o->batch, 1, RS_KLEVAL_MAX_BATCH, NULL, NULL, NULL, 0},
        {"--out", NULL, RS_CLI_STR, "F.h5", "output log", sweep ? "[" RS_SWEEP_DEFAULT_OUT "]" : "[" RS_KL_DEFAULT_OUT "]",
         &o->out, 0, 0, NULL, NULL, NULL, 0},
        {"--resume", NULL, RS_CLI_FLAG, NULL, "continue an interrupted log (same configuration)", NULL, &o->resume, 0, 0,
         NULL, NULL, NULL, 0},
        RS_CLI_OPT_FORCE(&o->force),
        RS_CLI_OPT_QUIET(&o->quiet),
        {"--progress-every", NULL, RS_CLI_DOUBLE, "SEC", "when stderr is not a terminal: one plain progress line\n"
         "every SEC seconds, and a last one at the end", "[30]", &o->progress_every, 0, 86400, NULL, NULL, NULL,
         RS_CLI_LO_OPEN},
        {"--all-stats", NULL, RS_CLI_FLAG, NULL, "also the low KL percentiles and the Δp percentiles", NULL,
         &o->all_stats, 0, 0, NULL, NULL, NULL, 0},
        {"--timing", NULL, RS_CLI_STR, "F.tsv", "one line per committed chunk: positions done and the\n"
         "scorer's cumulative stage seconds (GEMM, attention, ...)", NULL, &o->timing, 0, 0, NULL, NULL, NULL, 0},
        {"--short", NULL, RS_CLI_CHOICE, "MODE", "books / streams shorter than N+1 tokens: skip (report) or\ntruncate",
         "[skip]", &o->short_mode, 0, 0, "skip|truncate", NULL, NULL, 0},
        {"--invalid-utf8", NULL, RS_CLI_CHOICE, "M", "text bytes that are not valid UTF-8 (BPE tokenizers):\n"
         "replace (U+FFFD each), latin1 (the whole text) or error", "[replace]", &o->invalid_utf8, 0, 0,
         "replace|latin1|error", NULL, NULL, 0},
    };
    size_t n = sizeof common / sizeof common[0];
    memcpy(t, common, sizeof common); /* the input options, the command's own, then the rest */
    if (!sweep) {
        t[n++] = (rs_cli_opt){"--policy", NULL, RS_CLI_CUSTOM, "P", policy_help, NULL, NULL, 0, 0, NULL, policy_opt_,
                              NULL, 0};
        t[n++] = (rs_cli_opt){"--window", NULL, RS_CLI_STR, "L", "replay window L (1.." XSTR_(RS_RUN_WINDOW_MAX) ")",
                              "[" XSTR_(RS_RUN_WINDOW_DEFAULT) "]", &o->window, 0, 0, NULL, NULL, NULL, 0};
    } else {
        t[n++] = (rs_cli_opt){"--modes", NULL, RS_CLI_STR, "LIST", "conv, shared, split, split-naive",
                              "[shared,split]", &o->modes, 0, 0, NULL, NULL, NULL, 0};
        t[n++] = (rs_cli_opt){"--formats", NULL, RS_CLI_STR, "LIST", "formats of the state (split: of the read copy): fp16,\n"
                              "bf16, fp8, nvfp4, with options (fp8+pow2), any format string", "[fp8,nvfp4]",
                              &o->formats, 0, 0, NULL, NULL, NULL, 0};
        t[n++] = (rs_cli_opt){"--rounding", NULL, RS_CLI_STR, "LIST", "rtn, sr, srK: each replaces the rounding of\n"
                              "every --formats item", "[sr,rtn]", &o->rounding, 0, 0, NULL, NULL, NULL, 0};
        t[n++] = (rs_cli_opt){"--hp", NULL, RS_CLI_STR, "LIST", "high-precision formats of split runs (fp32, fp16-sr, ...)",
                              "[fp32]", &o->hp, 0, 0, NULL, NULL, NULL, 0};
        t[n++] = (rs_cli_opt){"--windows", NULL, RS_CLI_STR, "LIST", "replay windows L (1.." XSTR_(RS_RUN_WINDOW_MAX) ")",
                              "[" XSTR_(RS_RUN_WINDOW_DEFAULT) "]", &o->windows, 0, 0, NULL, NULL, NULL, 0};
    }
    memcpy(t + n, tail, sizeof tail);
    return n + sizeof tail / sizeof tail[0];
}

int rs_kl_parse(int argc, char **argv, rs_kl_opts *o, int sweep, const char *synopsis, const char *about,
                const char *epilog)
{
    rs_cli_opt t[40];
    char policy_help[1024];
    rs_cli_spec spec = {o->cmd, synopsis, about, t, kl_table_(o, sweep, t, policy_help, sizeof policy_help), epilog, 0};
    const int rc = rs_cli_parse(&spec, argc, argv, o, NULL, NULL);
    if (rc) return rc;
    if (o->input_kind && o->pg19_given)
        return rs_cli_usage_error(o->cmd, "%s replaces the PG-19 books: it excludes --data, --split, --books and "
                                  "--book-ids", o->input_kind == 1 ? "--text" : "--token-ids");
    return 0;
}
