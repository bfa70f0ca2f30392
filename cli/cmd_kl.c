/* cmd_kl.c — `replayssm kl` and `replayssm sweep`: teacher-forced KL(p_fp32 || p_policy) of
 * PG-19 books, per position, into an HDF5 log (docs/evaluator.md, docs/hdf5-layout.md).
 *
 * Flow: validate everything (options, output path, model, tokenizer, policies, books) before
 * the output is touched; create the log (or reopen it with --resume after checking that the
 * configuration matches); per book, run the fp32 reference and every policy in lockstep over
 * chunks of C tokens (one rs_runner per distinct window: the runner takes one window), compare
 * the logits position by position (rs_kl), write and commit the chunk; at the end compute the
 * summaries from the stored per-position arrays and print the table.
 *
 * Resume: completed books are skipped; the book in progress is re-run from position 0 without
 * writing up to its committed position (the SSM states and KV caches are not stored), then
 * continues. Chunk boundaries and SR streams (counter-based, keyed by layer, head, step) are the
 * same, so the result equals an uninterrupted run.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rs_cli.h"
#include "replayssm/eval/rs_h5log.h"   /* defines: rs_h5log_* (the HDF5 log) */
#include "replayssm/eval/rs_hf_config.h" /* defines: rs_hf_config_load */
#include "replayssm/eval/rs_kl.h"      /* defines: rs_kl_compare_lp, rs_kl_summary */
#include "replayssm/eval/rs_model.h"   /* defines: rs_model_load */
#include "replayssm/eval/rs_pg19.h"    /* defines: rs_pg19_* (books) */
#include "replayssm/engine/rs_policy.h"  /* defines: rs_policy_parse / print */
#include "replayssm/eval/rs_runner.h"  /* defines: rs_runner_* (lockstep runs) */
#include "replayssm/common/rs_status.h"
#include "replayssm/eval/rs_tokenizer.h"

#ifndef RS_GIT_COMMIT
#define RS_GIT_COMMIT "unknown"
#endif

/* Defaults of the bundled run (`replayssm kl` with no options); paths relative to the repo root. */
#define RS_KL_DEFAULT_MODEL "data/models/gdn-tiny"
#define RS_KL_DEFAULT_DATA "data/pg19-sample"
#define RS_KL_DEFAULT_OUT "kl-default.h5"
#define RS_KL_DEFAULT_TOKENS 8192
#define RS_KL_MAX_TOKENS 131072
#define RS_KL_DEFAULT_CHUNK 64
#define RS_KL_DEFAULT_WINDOW 16
#define RS_KL_MAX_RUNS 64
/* policies of the bundled run (the data/models issue): shared vs split NVFP4 checkpoints and
 * the conventional FP16+SR baseline, a subset of the paper's Figure 5 set */
static const char *const k_default_policies[] = {"shared:nvfp4-sr", "split:nvfp4-rtn/fp32",
                                                 "split:nvfp4-rtn/fp16-sr", "conv:fp16-sr"};

typedef struct kl_opts {
    const char *cmd;
    const char *model, *data, *split, *out, *short_mode;
    size_t books;
    char **book_ids;
    size_t n_book_ids;
    size_t tokens, chunk;
    uint64_t seed;
    int threads, resume, force, quiet;
    int ref_only; /* --policy none: the fp32 reference alone (its NLL / bits per token), no runs */
    /* runs (policy, window) */
    size_t n_runs;
    rs_policy pol[RS_KL_MAX_RUNS];
    char pol_str[RS_KL_MAX_RUNS][64];
    size_t win[RS_KL_MAX_RUNS];
} kl_opts;

/* ---- small helpers ------------------------------------------------------------------------ */

static void iso_now_(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static double now_s_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_size_(const char *s, size_t *out)
{
    if (!s || !*s) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-') return 0;
    *out = (size_t)v;
    return 1;
}

static char *join_argv_(const char *prog, int argc, char **argv)
{
    size_t len = strlen(prog) + 2;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 3;
    char *s = (char *)calloc(len, 1);
    if (!s) return NULL;
    strcat(s, prog);
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        const int q = strpbrk(argv[i], " \t\"'") != NULL;
        if (q) strcat(s, "'");
        strcat(s, argv[i]);
        if (q) strcat(s, "'");
    }
    return s;
}

/* FNV-1a 64 of a file's bytes ("fnv1a64:<16 hex>"). */
static int hash_file_(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint64_t h = 1469598103934665603ULL;
    int c;
    while ((c = fgetc(f)) != EOF) {
        h ^= (uint64_t)(unsigned char)c;
        h *= 1099511628211ULL;
    }
    fclose(f);
    snprintf(out, n, "fnv1a64:%016llx", (unsigned long long)h);
    return 1;
}

static const char *mode_name_(rs_policy_mode m)
{
    switch (m) {
    case RS_POLICY_CONV: return "conv";
    case RS_POLICY_SHARED: return "shared";
    case RS_POLICY_SPLIT: return "split";
    case RS_POLICY_SPLIT_NAIVE: return "split-naive";
    }
    return "?";
}

static int add_run_(kl_opts *o, const char *policy, size_t window)
{
    if (o->n_runs >= RS_KL_MAX_RUNS) {
        fprintf(stderr, "replayssm %s: at most %d runs\n", o->cmd, RS_KL_MAX_RUNS);
        return 0;
    }
    rs_policy p;
    if (rs_policy_parse(policy, &p) != RS_OK) {
        fprintf(stderr, "replayssm %s: unknown policy: %s\n", o->cmd, rs_last_error());
        return 0;
    }
    char canon[64];
    if (rs_policy_print(&p, canon, sizeof canon) != RS_OK) snprintf(canon, sizeof canon, "%s", policy);
    for (size_t i = 0; i < o->n_runs; i++)
        if (rs_policy_equal(&o->pol[i], &p) && o->win[i] == window) return 1; /* duplicate: once */
    o->pol[o->n_runs] = p;
    snprintf(o->pol_str[o->n_runs], sizeof o->pol_str[0], "%s", canon);
    o->win[o->n_runs] = window;
    o->n_runs++;
    return 1;
}

/* split a comma list in place into items (returns count) */
static size_t split_list_(char *s, char **items, size_t max)
{
    size_t n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

/* ---- usage ------------------------------------------------------------------------------- */

static void usage_kl_(FILE *f)
{
    fprintf(f,
            "usage: replayssm kl [--model DIR] [--data DIR] [--split test] [--books N | --book-ids ID[,ID...]]\n"
            "                    [--tokens N] [--policy P ...] [--window L] [--seed S]\n"
            "                    [--threads N] [--chunk C] [--out F.h5] [--resume] [--force] [--quiet]\n"
            "                    [--short skip|truncate]\n\n"
            "Teacher-forced KL(p_fp32 || p_policy) per position of PG-19 books, logged to HDF5.\n"
            "The fp32 reference runs in lockstep with every policy on the same tokens.\n\n"
            "  --model DIR     Hugging Face checkpoint (config.json + safetensors)  [%s]\n"
            "  --data DIR      PG-19 layout root (metadata.csv, <split>/<id>.txt[.gz])  [%s]\n"
            "  --split NAME    split folder  [test]\n"
            "  --books N       first N books of metadata.csv found in the split  [1]\n"
            "  --book-ids L    comma-separated book ids (repeatable)\n"
            "  --tokens N      positions per book (needs N+1 tokens), at most %d  [%d]\n"
            "  --policy P      state policy, repeatable or comma-separated:\n%s\n"
            "                  or 'none': the fp32 reference alone (NLL, bits/token; a third of the\n"
            "                  cost of one policy run), e.g. for a model's quality at long context\n"
            "  --window L      replay window L  [%d]\n"
            "  --seed S        stochastic-rounding seed  [0]\n"
            "  --threads N     CPU threads  [OpenMP default]\n"
            "  --chunk C       positions per forward chunk and per HDF5 flush  [%d]\n"
            "  --out F.h5      output log  [%s]\n"
            "  --resume        continue an interrupted log (same configuration)\n"
            "  --force         replace an existing output\n"
            "  --quiet         no progress on stderr (also off when stderr is not a terminal)\n"
            "  --short MODE    books shorter than N+1 tokens: skip (report) or truncate  [skip]\n\n"
            "Without --policy: %s, %s, %s, %s (each with the fp32 reference). With no options at all\n"
            "this is the bundled default run (run it from the repository root).\n",
            RS_KL_DEFAULT_MODEL, RS_KL_DEFAULT_DATA, RS_KL_MAX_TOKENS, RS_KL_DEFAULT_TOKENS, rs_policy_forms(),
            RS_KL_DEFAULT_WINDOW, RS_KL_DEFAULT_CHUNK, RS_KL_DEFAULT_OUT, k_default_policies[0],
            k_default_policies[1], k_default_policies[2], k_default_policies[3]);
}

static void usage_sweep_(FILE *f)
{
    fprintf(f,
            "usage: replayssm sweep [kl options except --policy/--window] --out F.h5\n"
            "                       [--modes conv,shared,split] [--formats fp16,fp8,nvfp4]\n"
            "                       [--rounding sr,rtn] [--hp fp32[,fp16-sr...]] [--windows 4,8,16,32,64]\n\n"
            "The cartesian product modes x formats x rounding (x hp for split) x windows, in one HDF5\n"
            "log sharing the fp32 reference. conv runs do not depend on L and appear once.\n"
            "split:<fmt>-<rounding>/<hp> reads the low-precision copy and carries the recurrence in hp.\n"
            "Defaults: --modes shared,split --formats fp8,nvfp4 --rounding sr,rtn --hp fp32 --windows 16.\n"
            "The paper's Figure 5 window sweep: --windows 4,8,16,32,64.\n");
}

/* ---- option parsing ------------------------------------------------------------------------ */

typedef struct sweep_lists {
    char *modes, *formats, *rounding, *hp, *windows;
} sweep_lists;

/* returns 0 ok, 1 help printed, 2 usage error */
static int parse_(int argc, char **argv, kl_opts *o, int sweep, sweep_lists *sl, char **policies,
                  size_t *n_pol, size_t *window)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char name[64];
        const char *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
#define FLAG(s) (!strcmp(name, s))
#define NEEDVAL()                                                                                   \
    do {                                                                                            \
        if (!val) {                                                                                 \
            if (i + 1 >= argc) {                                                                    \
                fprintf(stderr, "replayssm %s: %s needs a value\n", o->cmd, name);                  \
                return 2;                                                                           \
            }                                                                                       \
            val = argv[++i];                                                                        \
        }                                                                                           \
    } while (0)
        if (FLAG("-h") || FLAG("--help")) {
            sweep ? usage_sweep_(stdout) : usage_kl_(stdout);
            return 1;
        } else if (FLAG("--model")) { NEEDVAL(); o->model = val; }
        else if (FLAG("--data")) { NEEDVAL(); o->data = val; }
        else if (FLAG("--split")) { NEEDVAL(); o->split = val; }
        else if (FLAG("--out")) { NEEDVAL(); o->out = val; }
        else if (FLAG("--short")) {
            NEEDVAL();
            if (strcmp(val, "skip") && strcmp(val, "truncate")) {
                fprintf(stderr, "replayssm %s: --short must be skip or truncate, not '%s'\n", o->cmd, val);
                return 2;
            }
            o->short_mode = val;
        } else if (FLAG("--books")) {
            NEEDVAL();
            if (!parse_size_(val, &o->books) || o->books == 0) {
                fprintf(stderr, "replayssm %s: --books needs a positive integer, not '%s'\n", o->cmd, val);
                return 2;
            }
        } else if (FLAG("--book-ids")) {
            NEEDVAL();
            char *copy = strdup(val);
            if (!copy) return 2;
            char *items[1024];
            const size_t k = split_list_(copy, items, 1024);
            for (size_t j = 0; j < k; j++) {
                char **nb = (char **)realloc(o->book_ids, (o->n_book_ids + 1) * sizeof(char *));
                if (!nb) { free(copy); return 2; }
                o->book_ids = nb;
                o->book_ids[o->n_book_ids++] = strdup(items[j]);
            }
            free(copy);
        } else if (FLAG("--tokens")) {
            NEEDVAL();
            if (!parse_size_(val, &o->tokens) || o->tokens == 0 || o->tokens > RS_KL_MAX_TOKENS) {
                fprintf(stderr, "replayssm %s: --tokens must be in [1, %d], not '%s'\n", o->cmd, RS_KL_MAX_TOKENS, val);
                return 2;
            }
        } else if (FLAG("--chunk")) {
            NEEDVAL();
            if (!parse_size_(val, &o->chunk) || o->chunk == 0 || o->chunk > 65536) {
                fprintf(stderr, "replayssm %s: --chunk must be in [1, 65536], not '%s'\n", o->cmd, val);
                return 2;
            }
        } else if (FLAG("--seed")) {
            NEEDVAL();
            size_t s;
            if (!parse_size_(val, &s)) {
                fprintf(stderr, "replayssm %s: --seed needs a non-negative integer, not '%s'\n", o->cmd, val);
                return 2;
            }
            o->seed = (uint64_t)s;
        } else if (FLAG("--threads")) {
            NEEDVAL();
            size_t t;
            if (!parse_size_(val, &t) || t == 0 || t > 4096) {
                fprintf(stderr, "replayssm %s: --threads needs a positive integer, not '%s'\n", o->cmd, val);
                return 2;
            }
            o->threads = (int)t;
        } else if (FLAG("--resume")) o->resume = 1;
        else if (FLAG("--force")) o->force = 1;
        else if (FLAG("--quiet") || FLAG("-q")) o->quiet = 1;
        else if (!sweep && FLAG("--policy")) {
            NEEDVAL();
            if (*n_pol >= RS_KL_MAX_RUNS) {
                fprintf(stderr, "replayssm %s: too many policies\n", o->cmd);
                return 2;
            }
            policies[(*n_pol)++] = (char *)val;
        } else if (!sweep && FLAG("--window")) {
            NEEDVAL();
            if (!parse_size_(val, window) || *window == 0 || *window > 4096) {
                fprintf(stderr, "replayssm %s: --window must be in [1, 4096], not '%s'\n", o->cmd, val);
                return 2;
            }
        } else if (sweep && FLAG("--modes")) { NEEDVAL(); sl->modes = (char *)val; }
        else if (sweep && FLAG("--formats")) { NEEDVAL(); sl->formats = (char *)val; }
        else if (sweep && FLAG("--rounding")) { NEEDVAL(); sl->rounding = (char *)val; }
        else if (sweep && FLAG("--hp")) { NEEDVAL(); sl->hp = (char *)val; }
        else if (sweep && FLAG("--windows")) { NEEDVAL(); sl->windows = (char *)val; }
        else {
            fprintf(stderr, "replayssm %s: unknown option '%s' (see 'replayssm %s --help')\n", o->cmd, a, o->cmd);
            return 2;
        }
#undef FLAG
#undef NEEDVAL
    }
    return 0;
}

/* ---- the evaluation ------------------------------------------------------------------------ */

typedef struct book_plan {
    char *id, *title;
    size_t avail;  /* tokens the book encodes to */
    size_t len;    /* positions evaluated */
} book_plan;

typedef struct group {
    size_t window;
    size_t n;               /* runs in this runner (group 0: + the reference at index 0) */
    size_t run_index[RS_KL_MAX_RUNS]; /* global run index of runner run j (group 0: j >= 1) */
    rs_policy pols[RS_KL_MAX_RUNS + 1];
    rs_runner *runner;
} group;

static void print_summary_(const kl_opts *o, const rs_kl_summary *s, FILE *f)
{
    if (o->n_runs == 0) return; /* --policy none: the reference's table alone */
    fprintf(f, "\n%-3s %-26s %4s %10s %9s %10s %10s %10s %10s %10s %8s %8s %6s\n", "run", "policy", "L", "mean KL",
            "±se", "median", "p90", "p99", "p99.9", "max", "RMS Δp", "top1 %", "n/f");
    for (size_t r = 0; r < o->n_runs; r++) {
        const rs_kl_summary *x = &s[r];
        fprintf(f, "%-3zu %-26s %4zu %10.3e %9.2e %10.3e %10.3e %10.3e %10.3e %10.3e %7.3f%% %8.3f %6zu\n", r,
                o->pol_str[r], o->win[r], x->mean_kl, x->mean_kl_se, x->median_kl, x->p90_kl, x->p99_kl, x->p999_kl,
                x->max_kl, 100.0 * x->rms_dp, x->same_top1_pct, x->n_nonfinite);
    }
    fprintf(f, "\nmean KL by position window (nats):\n%-3s", "run");
    rs_cli_print_window_header(f);
    for (size_t r = 0; r < o->n_runs; r++) {
        fprintf(f, "%-3zu", r);
        for (size_t w = 0; w < RS_KL_N_WINDOWS; w++) {
            if (s[r].window_n[w]) fprintf(f, " %10.3e", s[r].window_mean_kl[w]);
            else fprintf(f, " %10s", "-");
        }
        fprintf(f, "\n");
    }
}

static int run_eval_(kl_opts *o, int argc, char **argv)
{
    const char *cmd = o->cmd;
    int rc = 1;
    rs_status st;
    char t_start[32];
    iso_now_(t_start, sizeof t_start);
    /* a file-size limit (ulimit -f) must fail a write with EFBIG and a message, like a full disk,
     * not kill the process with SIGXFSZ */
    signal(SIGXFSZ, SIG_IGN);
    /* HDF5 1.10 crashes in its atexit handler when a file's close failed (e.g. disk full):
     * no atexit cleanup; every log this command opens is closed explicitly. */
    rs_h5log_no_atexit();
    /* 1. output path first (cheap, and before anything long) */
    struct stat sb;
    const int exists = stat(o->out, &sb) == 0;
    if (o->resume && o->force) {
        fprintf(stderr, "replayssm %s: --resume and --force exclude each other\n", cmd);
        return 2;
    }
    if (o->resume && !exists) {
        fprintf(stderr, "replayssm %s: --resume: %s does not exist\n", cmd, o->out);
        return 1;
    }
    if (exists && !o->resume && !o->force) {
        fprintf(stderr, "replayssm %s: %s exists: use --force to replace it or --resume to continue it\n", cmd, o->out);
        return 1;
    }
    /* 2. model, tokenizer */
    {
        char cfgp[4096];
        snprintf(cfgp, sizeof cfgp, "%s/config.json", o->model);
        if (stat(cfgp, &sb) != 0) {
            fprintf(stderr, "replayssm %s: no model at %s (missing %s)%s\n", cmd, o->model, cfgp,
                    !strcmp(o->model, RS_KL_DEFAULT_MODEL)
                        ? "; the bundled default model " RS_KL_DEFAULT_MODEL " is not installed: pass --model DIR"
                        : "");
            return 1;
        }
        if (stat(o->data, &sb) != 0) {
            fprintf(stderr, "replayssm %s: no data at %s%s\n", cmd, o->data,
                    !strcmp(o->data, RS_KL_DEFAULT_DATA)
                        ? "; the bundled default books " RS_KL_DEFAULT_DATA " are not installed: pass --data DIR"
                        : "");
            return 1;
        }
    }
    rs_model model;
    memset(&model, 0, sizeof model);
    rs_pg19_meta meta = {0};
    book_plan *plan = NULL;
    size_t n_plan = 0;
    char **ids = NULL;
    size_t n_ids = 0;
    int ids_owned = 0;
    rs_backend *be = NULL;
    group groups[RS_KL_MAX_RUNS];
    size_t n_groups = 0;
    memset(groups, 0, sizeof groups);
    rs_h5log *lg = NULL;
    char *cmdline = NULL;
    int32_t *toks = NULL;
    char *text = NULL;
    double *lp = NULL, *lq = NULL, *buf = NULL;
    uint8_t *agbuf = NULL;
    int32_t *tgt = NULL, *top = NULL;
    rs_kl_summary *sums = NULL;

    rs_tokenizer tok;
    {   /* the tokenizer is decided by the config: refuse before loading any weight */
        char cfgp[4096];
        rs_model_config mc;
        snprintf(cfgp, sizeof cfgp, "%s/config.json", o->model);
        st = rs_hf_config_load(cfgp, &mc);
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot read the model config", st); goto done; }
        st = rs_tokenizer_for_model(&mc, o->model, &tok);
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot evaluate this model", st); goto done; }
    }
    st = rs_model_load(o->model, &model);
    if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot load the model", st); goto done; }
    const size_t V = (size_t)model.cfg.vocab;

    /* 3. books: ids, lengths (read each once now: missing/empty books fail before any output) */
    st = rs_pg19_meta_load(o->data, &meta);
    if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot read the book list", st); goto done; }
    if (o->n_book_ids) {
        ids = o->book_ids;
        n_ids = o->n_book_ids;
    } else {
        st = rs_pg19_select_first(o->data, o->split, &meta, o->books, &ids);
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot choose books", st); goto done; }
        n_ids = o->books;
        ids_owned = 1;
    }
    plan = (book_plan *)calloc(n_ids, sizeof *plan);
    if (!plan) { fprintf(stderr, "replayssm %s: out of memory\n", cmd); goto done; }
    for (size_t i = 0; i < n_ids; i++) {
        for (size_t j = 0; j < n_plan; j++)
            if (!strcmp(plan[j].id, ids[i])) {
                fprintf(stderr, "replayssm %s: book %s listed twice\n", cmd, ids[i]);
                rc = 2;
                goto done;
            }
        size_t len = 0;
        st = rs_pg19_read_book(o->data, o->split, ids[i], &text, &len);
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot read a book", st); goto done; }
        size_t avail = 0;
        st = rs_tokenizer_count(&tok, text, len, &avail);
        free(text);
        text = NULL;
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot tokenize", st); goto done; }
        size_t positions = o->tokens;
        if (avail < o->tokens + 1) {
            if (!strcmp(o->short_mode, "skip") || avail < 2) {
                fprintf(stderr, "replayssm %s: book %s has %zu tokens, fewer than --tokens %zu + 1: skipped%s\n", cmd,
                        ids[i], avail, o->tokens, avail < 2 ? "" : " (--short truncate keeps it)");
                continue;
            }
            positions = avail - 1;
            fprintf(stderr, "replayssm %s: book %s has %zu tokens: truncated to %zu positions\n", cmd, ids[i], avail,
                    positions);
        }
        const long mi = rs_pg19_meta_find(&meta, ids[i]);
        plan[n_plan].id = ids[i];
        plan[n_plan].title = mi >= 0 ? meta.books[mi].title : "";
        plan[n_plan].avail = avail;
        plan[n_plan].len = positions;
        n_plan++;
    }
    if (n_plan == 0) {
        fprintf(stderr, "replayssm %s: no book left to evaluate (all shorter than --tokens %zu + 1; see --short)\n", cmd,
                o->tokens);
        goto done;
    }
    size_t max_len = 0;
    for (size_t b = 0; b < n_plan; b++)
        if (plan[b].len > max_len) max_len = plan[b].len;

    /* 4. runners: one per distinct window; group 0 carries the fp32 reference at index 0 */
    for (size_t r = 0; r < o->n_runs; r++) {
        size_t g = 0;
        while (g < n_groups && groups[g].window != o->win[r]) g++;
        if (g == n_groups) {
            groups[g].window = o->win[r];
            groups[g].n = 0;
            if (g == 0) groups[g].pols[groups[g].n++] = rs_policy_fp32();
            n_groups++;
        }
        groups[g].run_index[groups[g].n] = r;
        groups[g].pols[groups[g].n++] = o->pol[r];
    }
    if (o->n_runs == 0) { /* --policy none: one runner carrying the reference alone */
        groups[0].window = RS_KL_DEFAULT_WINDOW;
        groups[0].n = 1;
        groups[0].pols[0] = rs_policy_fp32();
        n_groups = 1;
    }
    st = rs_backend_cpu_create(o->threads, &be);
    if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot start the CPU backend", st); goto done; }
    for (size_t g = 0; g < n_groups; g++) {
        rs_runner_config rcfg = rs_runner_config_default();
        rcfg.n_runs = groups[g].n;
        rcfg.policies = groups[g].pols;
        rcfg.window = groups[g].window;
        rcfg.seed = o->seed;
        rcfg.chunk = o->chunk;
        rcfg.max_tokens = max_len;
        st = rs_runner_create(&model, be, &rcfg, &groups[g].runner);
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot set up the runs", st); goto done; }
    }

    /* 5. the log */
    char cfg_hash[64] = "unknown";
    {
        char cfgp[4096];
        snprintf(cfgp, sizeof cfgp, "%s/config.json", o->model);
        hash_file_(cfgp, cfg_hash, sizeof cfg_hash);
    }
    cmdline = join_argv_("replayssm", argc, argv);
    const char **bid = (const char **)calloc(n_plan, sizeof(char *));
    const char **btitle = (const char **)calloc(n_plan, sizeof(char *));
    uint64_t *blen = (uint64_t *)calloc(n_plan, sizeof(uint64_t));
    /* + 1: calloc(0) may return NULL, and --policy none has no runs */
    rs_h5log_run_info *ri = (rs_h5log_run_info *)calloc(o->n_runs + 1, sizeof *ri);
    char (*fmt_hp)[48] = calloc(o->n_runs + 1, 48), (*fmt_lp)[48] = calloc(o->n_runs + 1, 48);
    if (!bid || !btitle || !blen || !ri || !fmt_hp || !fmt_lp || !cmdline) {
        fprintf(stderr, "replayssm %s: out of memory\n", cmd);
        free(bid); free(btitle); free(blen); free(ri); free(fmt_hp); free(fmt_lp);
        goto done;
    }
    for (size_t b = 0; b < n_plan; b++) {
        bid[b] = plan[b].id;
        btitle[b] = plan[b].title;
        blen[b] = plan[b].len;
    }
    for (size_t r = 0; r < o->n_runs; r++) {
        if (rs_format_print(&o->pol[r].hp, fmt_hp[r], 48) != RS_OK) snprintf(fmt_hp[r], 48, "?");
        if (rs_format_print(&o->pol[r].lp, fmt_lp[r], 48) != RS_OK) snprintf(fmt_lp[r], 48, "?");
        ri[r].policy = o->pol_str[r];
        ri[r].mode = mode_name_(o->pol[r].mode);
        ri[r].hp_format = fmt_hp[r];
        ri[r].lp_format = fmt_lp[r];
        ri[r].window = o->win[r];
        ri[r].seed = o->seed;
    }
    rs_h5log_meta hm;
    memset(&hm, 0, sizeof hm);
    hm.tool_version = RS_VERSION_STRING;
    hm.git_commit = RS_GIT_COMMIT;
    hm.command_line = cmdline;
    hm.start_time = t_start;
    hm.model_path = o->model;
    hm.data_path = o->data;
    hm.model_config_hash = cfg_hash;
    hm.model_type = model.cfg.model_type;
    hm.tokenizer = tok.name;
    hm.split = o->split;
    hm.short_books = o->short_mode;
    hm.tokens = o->tokens;
    hm.chunk = o->chunk;
    hm.n_books = n_plan;
    hm.book_ids = bid;
    hm.book_titles = btitle;
    hm.book_len = blen;
    hm.n_runs = o->n_runs;
    hm.runs = ri;
    st = o->resume ? rs_h5log_open(o->out, 1, &hm, &lg) : rs_h5log_create(o->out, &hm, o->force, &lg);
    free(bid); free(btitle); free(blen); free(ri); free(fmt_hp); free(fmt_lp);
    if (st != RS_OK) { rc = rs_cli_fail(cmd, o->resume ? "cannot resume the log" : "cannot create the log", st); goto done; }

    /* 6. the books */
    const size_t C = o->chunk, R = o->n_runs;
    toks = (int32_t *)malloc((max_len + 1) * sizeof(int32_t));
    lp = (double *)malloc(V * sizeof(double));
    lq = (double *)malloc(V * sizeof(double));
    buf = (double *)malloc((3 * R + 1) * C * sizeof(double));
    agbuf = (uint8_t *)malloc(R * C + 1);
    tgt = (int32_t *)malloc(C * sizeof(int32_t));
    top = (int32_t *)malloc(C * sizeof(int32_t));
    sums = (rs_kl_summary *)calloc(R + 1, sizeof *sums);
    rs_h5log_run_chunk *rcs = (rs_h5log_run_chunk *)calloc(R + 1, sizeof *rcs);
    uint8_t *nf_done = (uint8_t *)calloc(R + 1, 1);
    rs_kl_running *running = (rs_kl_running *)calloc(R + 1, sizeof *running);
    if (!toks || !lp || !lq || !buf || !agbuf || !tgt || !top || !sums || !rcs || !nf_done || !running) {
        fprintf(stderr, "replayssm %s: out of memory\n", cmd);
        free(rcs); free(nf_done); free(running);
        goto done;
    }
    double *nll_ref = buf + 3 * R * C;
    for (size_t r = 0; r < R; r++) {
        rcs[r].kl = buf + (3 * r + 0) * C;
        rcs[r].nll = buf + (3 * r + 1) * C;
        rcs[r].dp = buf + (3 * r + 2) * C;
        rcs[r].agree = agbuf + r * C;
    }
    const int progress = !o->quiet && isatty(2);
    size_t total = 0, done_pos = 0;
    for (size_t b = 0; b < n_plan; b++) {
        total += plan[b].len;
        done_pos += (size_t)rs_h5log_completed(lg, b);
    }
    const size_t done_at_start = done_pos;
    const double t0 = now_s_();
    double last_print = 0;
    double ref_nll_sum = 0; /* --policy none: the running mean reference NLL of the progress line */
    size_t ref_nll_n = 0;
    int failed = 0;
    for (size_t b = 0; b < n_plan && !failed; b++) {
        const size_t len = plan[b].len;
        const size_t start = (size_t)rs_h5log_completed(lg, b);
        if (start >= len) continue;
        size_t tl = 0, n_tok = 0;
        st = rs_pg19_read_book(o->data, o->split, plan[b].id, &text, &tl);
        if (st == RS_OK) st = rs_tokenizer_encode(&tok, text, tl, toks, len + 1, &n_tok);
        free(text);
        text = NULL;
        if (st == RS_OK && n_tok != len + 1)
            st = rs_error_set(RS_E_STATE, "book %s now encodes to %zu tokens, %zu expected (changed on disk?)",
                              plan[b].id, n_tok, len + 1);
        if (st == RS_OK && start > 0) {
            /* the stored tokens must be the ones we are about to continue */
            int32_t *stored = (int32_t *)malloc(start * sizeof(int32_t));
            if (!stored) st = rs_error_set(RS_E_NOMEM, "out of memory");
            else st = rs_h5log_read_row(lg, -1, "next_token", b, start, stored);
            for (size_t t = 0; st == RS_OK && t < start; t++)
                if (stored[t] != toks[t + 1])
                    st = rs_error_set(RS_E_STATE, "--resume: book %s position %zu: the log has next token %d, the book gives %d",
                                      plan[b].id, t, (int)stored[t], (int)toks[t + 1]);
            free(stored);
        }
        for (size_t g = 0; st == RS_OK && g < n_groups; g++) st = rs_runner_reset(groups[g].runner);
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot evaluate", st); failed = 1; break; }
        memset(nf_done, 0, R);
        for (size_t r = 0; r < R; r++) {
            int64_t p;
            int32_t L, H;
            if (rs_h5log_get_nonfinite(lg, r, b, &p, &L, &H) == RS_OK && p >= 0) nf_done[r] = 1;
        }
        /* replay the committed prefix without writing (resume) */
        for (size_t pos = 0; pos < start && st == RS_OK; pos += C) {
            const size_t n = start - pos < C ? start - pos : C;
            for (size_t g = 0; g < n_groups && st == RS_OK; g++) st = rs_runner_step(groups[g].runner, toks + pos, n);
        }
        for (size_t pos = start; pos < len && st == RS_OK; pos += C) {
            const size_t n = len - pos < C ? len - pos : C;
            for (size_t g = 0; g < n_groups && st == RS_OK; g++) st = rs_runner_step(groups[g].runner, toks + pos, n);
            if (st != RS_OK) break;
            const float *ref = rs_runner_logits(groups[0].runner, 0);
            for (size_t t = 0; t < n && st == RS_OK; t++) {
                const int32_t y = toks[pos + t + 1];
                tgt[t] = y;
                st = rs_kl_log_softmax(ref + t * V, V, lp);
                if (st != RS_OK) {
                    st = rs_error_set(RS_E_NONFINITE, "book %s position %zu: the fp32 reference logits are not finite",
                                      plan[b].id, pos + t);
                    break;
                }
                if (R == 0) { /* --policy none: the reference's NLL and top-1, by the same definitions */
                    rs_kl_point pt;
                    st = rs_kl_compare_lp(lp, lp, V, y, &pt);
                    nll_ref[t] = pt.nll_ref;
                    top[t] = pt.top1_ref;
                    ref_nll_sum += pt.nll_ref;
                    ref_nll_n++;
                }
                for (size_t g = 0; g < n_groups && st == RS_OK; g++) {
                    const size_t j0 = g == 0 ? 1 : 0;
                    for (size_t j = j0; j < groups[g].n && st == RS_OK; j++) {
                        const size_t r = groups[g].run_index[j];
                        const float *lg_run = rs_runner_logits(groups[g].runner, j) + t * V;
                        rs_status s2 = rs_kl_log_softmax(lg_run, V, lq);
                        if (s2 != RS_OK && s2 != RS_E_NONFINITE) { st = s2; break; }
                        rs_kl_point pt;
                        st = rs_kl_compare_lp(lp, lq, V, y, &pt);
                        if (st != RS_OK) break;
                        if (g == 0 && j == j0) { nll_ref[t] = pt.nll_ref; top[t] = pt.top1_ref; }
                        ((double *)rcs[r].kl)[t] = pt.kl;
                        ((double *)rcs[r].nll)[t] = pt.nll_run;
                        ((double *)rcs[r].dp)[t] = pt.dp;
                        ((uint8_t *)rcs[r].agree)[t] = (uint8_t)pt.agree;
                        if (pt.finite) rs_kl_running_add(&running[r], pt.kl);
                        if (!pt.finite && !nf_done[r]) {
                            const char *msg = NULL;
                            int32_t L = -1, H = -1;
                            int64_t nf_step = -1;
                            if (rs_runner_run_status(groups[g].runner, j, &msg) != RS_OK)
                                rs_runner_run_nonfinite(groups[g].runner, j, &L, &H, &nf_step);
                            st = rs_h5log_set_nonfinite(lg, r, b, (int64_t)(pos + t), L, H);
                            nf_done[r] = 1;
                            fprintf(stderr, "replayssm %s: run %zu (%s, L=%zu) book %s: non-finite from position %zu%s%s\n",
                                    cmd, r, o->pol_str[r], o->win[r], plan[b].id, pos + t, msg ? ": " : "", msg ? msg : "");
                        }
                    }
                }
            }
            if (st == RS_OK) st = rs_h5log_write_chunk(lg, b, pos, n, tgt, nll_ref, top, rcs);
            done_pos += n;
            if (progress && st == RS_OK) {
                const double now = now_s_();
                if (now - last_print > 0.5 || pos + n >= len) {
                    last_print = now;
                    const double rate = (double)(done_pos - done_at_start) / (now - t0 + 1e-9);
                    const double eta = rate > 0 ? (double)(total - done_pos) / rate : 0;
                    fprintf(stderr, "\r[book %zu/%zu %s] pos %zu/%zu  %.0f tok/s  ETA %.0fs  KL:", b + 1, n_plan,
                            plan[b].id, pos + n, len, rate, eta);
                    if (R == 0 && ref_nll_n)
                        fprintf(stderr, " - (reference %.4f bits/token)", ref_nll_sum / (double)ref_nll_n / RS_CLI_LN2);
                    for (size_t r = 0; r < R && r < 6; r++) fprintf(stderr, " %.3g", running[r].mean);
                    if (R > 6) fprintf(stderr, " ...");
                    fprintf(stderr, "\033[K");
                }
            }
        }
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "evaluation failed (completed chunks are kept; --resume continues)", st); failed = 1; }
    }
    if (progress) fprintf(stderr, "\n");
    free(rcs);
    free(nf_done);
    free(running);
    if (failed) goto done;
    /* 7. summaries from the stored arrays */
    for (size_t r = 0; r < R; r++) {
        st = rs_h5log_summarize(lg, r, &sums[r]);
        if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot summarise", st); goto done; }
    }
    char t_end[32];
    iso_now_(t_end, sizeof t_end);
    st = rs_h5log_finish(lg, t_end, sums);
    if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot finish the log", st); goto done; }
    rs_h5log_ref_summary rsum;
    st = rs_h5log_reference_summary(lg, &rsum);
    if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot summarise the reference", st); goto done; }
    st = rs_h5log_close(lg);
    lg = NULL;
    if (st != RS_OK) { rc = rs_cli_fail(cmd, "cannot close the log", st); goto done; }
    printf("replayssm %s: model %s (%s), %zu book%s x %zu positions, chunk %zu, seed %llu -> %s\n", cmd, o->model,
           model.cfg.model_type, n_plan, n_plan == 1 ? "" : "s", o->tokens, o->chunk, (unsigned long long)o->seed,
           o->out);
    print_summary_(o, sums, stdout);
    rs_cli_print_reference(&rsum, stdout);
    rc = 0;
done:
    if (lg) rs_h5log_close(lg);
    for (size_t g = 0; g < n_groups; g++) rs_runner_free(groups[g].runner);
    rs_backend_destroy(be);
    rs_model_free(&model);
    if (ids_owned) rs_pg19_ids_free(ids, n_ids);
    rs_pg19_meta_free(&meta);
    free(plan);
    free(cmdline);
    free(toks);
    free(text);
    free(lp);
    free(lq);
    free(buf);
    free(agbuf);
    free(tgt);
    free(top);
    free(sums);
    return rc;
}

static void opts_init_(kl_opts *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->model = RS_KL_DEFAULT_MODEL;
    o->data = RS_KL_DEFAULT_DATA;
    o->split = "test";
    o->short_mode = "skip";
    o->books = 1;
    o->tokens = RS_KL_DEFAULT_TOKENS;
    o->chunk = RS_KL_DEFAULT_CHUNK;
}

static void opts_free_(kl_opts *o)
{
    for (size_t i = 0; i < o->n_book_ids; i++) free(o->book_ids[i]);
    free(o->book_ids);
}

int rs_cmd_kl(int argc, char **argv)
{
    kl_opts o;
    opts_init_(&o, "kl");
    char *policies[RS_KL_MAX_RUNS];
    size_t n_pol = 0, window = RS_KL_DEFAULT_WINDOW;
    int pr = parse_(argc, argv, &o, 0, NULL, policies, &n_pol, &window);
    if (pr) {
        opts_free_(&o);
        return pr == 1 ? 0 : 2;
    }
    if (!n_pol) /* the bundled default's policies (also with other options, e.g. --force) */
        for (size_t i = 0; i < sizeof k_default_policies / sizeof k_default_policies[0]; i++)
            policies[n_pol++] = (char *)k_default_policies[i];
    if (!o.out) o.out = RS_KL_DEFAULT_OUT;
    if (o.books != 1 && o.n_book_ids) {
        fprintf(stderr, "replayssm kl: --books and --book-ids exclude each other\n");
        opts_free_(&o);
        return 2;
    }
    for (size_t i = 0; i < n_pol; i++) {
        char *copy = strdup(policies[i]), *items[RS_KL_MAX_RUNS];
        const size_t k = copy ? split_list_(copy, items, RS_KL_MAX_RUNS) : 0;
        for (size_t j = 0; j < k; j++) {
            if (!strcmp(items[j], "none")) {
                o.ref_only = 1;
                continue;
            }
            if (!add_run_(&o, items[j], window)) {
                free(copy);
                opts_free_(&o);
                return 2;
            }
        }
        free(copy);
    }
    if (o.ref_only && o.n_runs) {
        fprintf(stderr, "replayssm kl: --policy none (the fp32 reference alone) cannot be combined with other "
                        "policies\n");
        opts_free_(&o);
        return 2;
    }
    int rc = run_eval_(&o, argc, argv);
    opts_free_(&o);
    return rc;
}

/* The sweep lists (--modes, --windows, ...) are split in place (strtok), so the body parses a
 * copy of argv and keeps the original for the log's command_line attribute (it used to record
 * "--windows 4" for "--windows 4,8,16"). */
static int sweep_(int argc, char **argv, char **orig_argv);

int rs_cmd_sweep(int argc, char **argv)
{
    char **copy = calloc((size_t)argc + 1, sizeof *copy);
    if (!copy) {
        fprintf(stderr, "replayssm sweep: out of memory\n");
        return 2;
    }
    int ok = 1;
    for (int i = 0; i < argc; i++)
        if (!(copy[i] = strdup(argv[i]))) ok = 0;
    int rc = 2;
    if (ok) rc = sweep_(argc, copy, argv);
    else fprintf(stderr, "replayssm sweep: out of memory\n");
    for (int i = 0; i < argc; i++) free(copy[i]);
    free(copy);
    return rc;
}

static int sweep_(int argc, char **argv, char **orig_argv)
{
    kl_opts o;
    opts_init_(&o, "sweep");
    sweep_lists sl = {0};
    size_t n_pol = 0, window = 0;
    int pr = parse_(argc, argv, &o, 1, &sl, NULL, &n_pol, &window);
    if (pr) {
        opts_free_(&o);
        return pr == 1 ? 0 : 2;
    }
    if (!o.out) {
        fprintf(stderr, "replayssm sweep: --out F.h5 is required\n");
        opts_free_(&o);
        return 2;
    }
    char d_modes[] = "shared,split", d_formats[] = "fp8,nvfp4", d_round[] = "sr,rtn", d_hp[] = "fp32", d_win[] = "16";
    char *lm[8], *lf[16], *lr[4], *lh[8], *lw[32];
    const size_t nm = split_list_(sl.modes ? sl.modes : d_modes, lm, 8);
    const size_t nf = split_list_(sl.formats ? sl.formats : d_formats, lf, 16);
    const size_t nr = split_list_(sl.rounding ? sl.rounding : d_round, lr, 4);
    const size_t nh = split_list_(sl.hp ? sl.hp : d_hp, lh, 8);
    const size_t nw = split_list_(sl.windows ? sl.windows : d_win, lw, 32);
    size_t wins[32];
    for (size_t w = 0; w < nw; w++)
        if (!parse_size_(lw[w], &wins[w]) || wins[w] == 0 || wins[w] > 4096) {
            fprintf(stderr, "replayssm sweep: bad window '%s'\n", lw[w]);
            opts_free_(&o);
            return 2;
        }
    for (size_t m = 0; m < nm; m++) {
        const int conv = !strcmp(lm[m], "conv");
        const int split = !strcmp(lm[m], "split") || !strcmp(lm[m], "split-naive");
        if (!conv && !split && strcmp(lm[m], "shared")) {
            fprintf(stderr, "replayssm sweep: unknown mode '%s' (conv, shared, split, split-naive)\n", lm[m]);
            opts_free_(&o);
            return 2;
        }
        for (size_t w = 0; w < (conv ? 1 : nw); w++)
            for (size_t f = 0; f < nf; f++)
                for (size_t r = 0; r < nr; r++)
                    for (size_t h = 0; h < (split ? nh : 1); h++) {
                        char pol[96];
                        if (split) snprintf(pol, sizeof pol, "%s:%s-%s/%s", lm[m], lf[f], lr[r], lh[h]);
                        else snprintf(pol, sizeof pol, "%s:%s-%s", lm[m], lf[f], lr[r]);
                        if (!add_run_(&o, pol, wins[w])) {
                            opts_free_(&o);
                            return 2;
                        }
                    }
    }
    int rc = run_eval_(&o, argc, orig_argv);
    opts_free_(&o);
    return rc;
}
