/* cmd_kl.c — `replayssm kl`: teacher-forced KL(p_fp32 || p_policy) of PG-19 books, per position,
 * into an HDF5 log (docs/evaluator.md, docs/hdf5-layout.md); and rs_kl_evaluate, the one
 * library call behind `kl` and `sweep` (replayssm/eval/rs_kleval.h) with what the commands print: the
 * library's events (skipped / truncated books, non-finite runs, the progress line on stderr)
 * and, at the end, the summary table on stdout. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_progress.h"
#include "kl_args.h"
#include "rs_cli.h"
#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_kleval.h"
#ifdef RS_HAVE_CUDA
#include "replayssm/eval/rs_scorer_cuda.h"
#endif
#include "mpi_driver.h" /* mpirun replayssm kl|sweep: the same config over MPI ranks */

#ifndef RS_GIT_COMMIT
#define RS_GIT_COMMIT "unknown"
#endif

/* policies of the bundled run (the data/models issue): shared vs split NVFP4 checkpoints and
 * the conventional FP16+SR baseline, a subset of the paper's Figure 5 set */
static const char *const k_default_policies[] = {"shared:nvfp4-sr", "split:nvfp4-rtn/fp32",
                                                 "split:nvfp4-rtn/fp16-sr", "conv:fp16-sr"};

static const char k_kl_synopsis[] =
    "[--model DIR] [--data DIR] [--split test] [--books N | --book-ids ID,...]\n"
    "[--text FILE... | --token-ids FILE...] [--tokens N] [--policy P ...]\n"
    "[--window L] [--seed S] [--threads N] [--device cpu|cuda[:N]]\n"
    "[--compute fp32|tf32x3|tf32|bf16|twin] [--chunk C] [--out F.h5] [--resume | --force]\n"
    "[--batch B] [--quiet] [--progress-every SEC] [--all-stats] [--short skip|truncate]";
static const char k_kl_about[] =
    "Teacher-forced KL(p_fp32 || p_policy) per position of PG-19 books, logged to HDF5.\n"
    "The fp32 reference runs in lockstep with every policy on the same tokens.";

static void epilog_kl_(char *buf, size_t n)
{
    snprintf(buf, n,
             "Without --policy: %s, %s, %s, %s\n"
             "(each with the fp32 reference). With no options at all this is the bundled default run\n"
             "(run it from the repository root).\n"
             "Progress: on a terminal one line redrawn in place; otherwise a plain line every --progress-every\n"
             "seconds and one at the end; --quiet: none. The summary (stdout) is the one `replayssm info` prints.\n"
             "Exit status: 0 ok, 1 failure (I/O, a missing book or file), 2 usage error or refused input\n"
             "(the model's tokenizer: missing or malformed files, ids >= vocab_size; a malformed token-id file).",
             k_default_policies[0], k_default_policies[1], k_default_policies[2], k_default_policies[3]);
}

/* where the time went (the scorer's counters; the GPU scorer splits it by stage), on stderr after the
 * summary: timings differ run to run, the stdout summary does not */
static void print_cost_(const rs_kleval_result *res, FILE *f)
{
    const rs_scorer_stats *s = &res->stats;
    if (s->positions == 0) return;
    fprintf(f, "\ndevice: %s\n", res->device ? res->device : "?");
    fprintf(f, "compute: %.2f s for %zu positions x %zu runs (%.0f positions/s, %.0f run-positions/s)", s->total_s,
            s->positions, res->runner_runs, (double)s->positions / s->total_s,
            (double)(s->positions * res->runner_runs) / s->total_s);
    if (s->gemm_s + s->attention_s + s->recurrence_s > 0)
        fprintf(f, "; GEMM %.2f s, attention %.2f s, recurrence %.2f s, other ops %.2f s, scoring %.2f s, copies %.2f s, "
                   "MoE routing %.2f s; peak device memory %.2f GiB",
                s->gemm_s, s->attention_s, s->recurrence_s, s->other_s, s->score_s, s->copy_s, s->moe_s,
                (double)s->peak_bytes / 1073741824.0);
    fprintf(f, "\n");
}

/* "replayssm" and the arguments, quoted where they hold blanks or quotes (root attribute) */
static char *join_argv_(int argc, char **argv)
{
    size_t len = strlen("replayssm") + 2;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 3;
    char *s = (char *)calloc(len, 1);
    if (!s) return NULL;
    strcat(s, "replayssm");
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        const int q = strpbrk(argv[i], " \t\"'") != NULL;
        if (q) strcat(s, "'");
        strcat(s, argv[i]);
        if (q) strcat(s, "'");
    }
    return s;
}

typedef struct printer {
    const rs_kl_opts *o;
    const char *names[RS_KL_MAX_RUNS]; /* each run's canonical policy string and window, for messages */
    size_t windows[RS_KL_MAX_RUNS];
    rs_cli_progress prog; /* the progress report on stderr (cli_progress.h) */
    FILE *timing;         /* --timing: NULL if not asked for */
} printer;

/* --timing: a header, then per committed chunk where the time went so far (cumulative, so a line's
 * difference to the one before is that chunk's cost; with --resume the scorer's counters restart) */
static FILE *timing_open_(const rs_kl_opts *o)
{
    FILE *f = fopen(o->timing, o->resume ? "a" : "w");
    if (!f) {
        fprintf(stderr, "replayssm %s: --timing %s: %s\n", o->cmd, o->timing, strerror(errno));
        return NULL;
    }
    if (ftell(f) == 0 || !o->resume)
        fprintf(f, "book\tposition\tdone\telapsed_s\tscorer_s\tgemm_s\tattention_s\trecurrence_s\tother_s\t"
                   "score_s\tcopy_s\tpeak_bytes\tmoe_s\n");
    return f;
}

static void timing_line_(FILE *f, const rs_kleval_event *e)
{
    const rs_scorer_stats *s = &e->stats;
    fprintf(f, "%s\t%zu\t%zu\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%zu\t%.4f\n", e->book_id,
            e->position, e->done, e->elapsed_s, s->total_s, s->gemm_s, s->attention_s, s->recurrence_s, s->other_s,
            s->score_s, s->copy_s, s->peak_bytes, s->moe_s);
    fflush(f); /* a killed run keeps the lines of its committed chunks */
}

static int on_event_(const rs_kleval_event *e, void *user)
{
    printer *p = (printer *)user;
    const rs_kl_opts *o = p->o;
    switch (e->kind) {
    case RS_KLEVAL_EVENT_BOOK_SKIPPED:
        fprintf(stderr, "replayssm %s: book %s has %zu tokens, fewer than --tokens %zu + 1: skipped%s\n", o->cmd,
                e->book_id, e->available, o->tokens, e->truncatable ? " (--short truncate keeps it)" : "");
        break;
    case RS_KLEVAL_EVENT_BOOK_TRUNCATED:
        fprintf(stderr, "replayssm %s: book %s has %zu tokens: truncated to %zu positions\n", o->cmd, e->book_id,
                e->available, e->positions);
        break;
    case RS_KLEVAL_EVENT_NONFINITE: { /* the log's run index, as in the summary; the message names no run */
        char id[1024], msg[1024];
        fprintf(stderr, "replayssm %s: run %zu (%s, L=%zu) book %s: non-finite at position %zu%s%s\n", o->cmd,
                e->run, p->names[e->run], p->windows[e->run], rs_cli_esc(e->book_id, id, sizeof id), e->position,
                e->message[0] ? ": " : "", rs_cli_esc(e->message, msg, sizeof msg));
        break;
    }
    case RS_KLEVAL_EVENT_INVALID_UTF8: {
        char id[1024];
        fprintf(stderr, "replayssm %s: warning: %s is not valid UTF-8: first invalid byte at offset %zu (%zu invalid "
                        "sequence%s): %s\n", o->cmd, rs_cli_esc(e->book_id, id, sizeof id), e->position, e->available,
                e->available == 1 ? "" : "s", e->message);
        break;
    }
    case RS_KLEVAL_EVENT_PROGRESS:
        rs_cli_progress_event(&p->prog, e);
        if (p->timing) timing_line_(p->timing, e);
        break;
    }
    return 0;
}

static void print_summary_(const rs_kl_opts *o, const printer *p, const rs_kleval_result *res, FILE *f)
{
    /* PG-19 books, or the streams of --text / --token-ids files (a .npy [streams, tokens] gives
     * one per row, and files too short are skipped: streams and files are counted apart) */
    char what[128];
    const size_t nb = res->n_books;
    if (o->input_kind == 1 || o->input_kind == 2)
        snprintf(what, sizeof what, "%zu stream%s (%zu %s file%s)", nb, nb == 1 ? "" : "s", o->n_inputs,
                 o->input_kind == 1 ? "text" : "token-id", o->n_inputs == 1 ? "" : "s");
    else
        snprintf(what, sizeof what, "%zu book%s", nb, nb == 1 ? "" : "s");
    fprintf(f, "replayssm %s: model %s (%s), %s x %zu positions, chunk %zu, seed %llu -> %s\n", o->cmd, o->model,
            res->model_type, what, o->tokens, o->chunk, (unsigned long long)o->seed, o->out);
    const rs_kl_summary *s = res->summaries;
    /* a run that went non-finite says so first, from the finished log's non-finite record: the
     * lines `info` prints for the same log (run index, position, layer, head) */
    rs_h5log *lg = NULL;
    int blank = 0;
    for (size_t r = 0; r < o->n_runs; r++) {
        if (!s[r].n_nonfinite) continue;
        if (!blank && rs_h5log_open(o->out, 0, NULL, &lg) != RS_OK) lg = NULL; /* then the totals alone */
        if (!blank) fprintf(f, "\n");
        blank = 1;
        rs_cli_print_nonfinite(f, lg, r, p->names[r], p->windows[r], &s[r]);
    }
    if (lg) rs_h5log_close(lg);
    /* the table `info` prints for the same log (cli_summary.c); --policy none: the reference alone */
    rs_cli_print_summary(f, o->n_runs, p->names, p->windows, s, &res->reference, o->all_stats);
}

/* the failure of a prepared evaluation: the library's message, with a hint when a bundled
 * default is missing; a book listed twice, a refused tokenizer (missing or malformed files, ids >=
 * vocab_size, a BPE beside a byte model) or token-id file (malformed, ids outside the
 * vocabulary) are usage errors (2), the rest failures (1) */
static int report_failure_(const rs_kl_opts *o, rs_kleval_stage stage)
{
    const char *hint = "";
    if (stage == RS_KLEVAL_STAGE_MODEL_DIR && !strcmp(o->model, RS_KL_DEFAULT_MODEL))
        hint = "; the bundled default model " RS_KL_DEFAULT_MODEL " is not installed: pass --model DIR";
    if (stage == RS_KLEVAL_STAGE_DATA_DIR && !strcmp(o->data, RS_KL_DEFAULT_DATA))
        hint = "; the bundled default books " RS_KL_DEFAULT_DATA " are not installed: pass --data DIR";
    char esc[4 * 1024 + 1]; /* the message may quote a log or model file */
    fprintf(stderr, "replayssm %s: %s%s\n", o->cmd, rs_cli_esc(rs_last_error(), esc, sizeof esc), hint);
    return stage == RS_KLEVAL_STAGE_CONFIG || stage == RS_KLEVAL_STAGE_TOKENIZER || stage == RS_KLEVAL_STAGE_INPUT ? 2 : 1;
}

int rs_kl_evaluate(const rs_kl_opts *o, int argc, char **argv)
{
    /* a file-size limit (ulimit -f) must fail a write with EFBIG and a message, like a full disk,
     * not kill the process with SIGXFSZ */
    signal(SIGXFSZ, SIG_IGN);
    /* HDF5 1.10 crashes in its atexit handler when a file's close failed (e.g. disk full):
     * no atexit cleanup; the library closes every log explicitly. */
    rs_h5log_no_atexit();
    if (o->resume && o->force) {
        fprintf(stderr, "replayssm %s: --resume and --force exclude each other\n", o->cmd);
        return 2;
    }
    char *cmdline = join_argv_(argc, argv);
    if (!cmdline) {
        fprintf(stderr, "replayssm %s: out of memory\n", o->cmd);
        return 1;
    }
    printer pr;
    pr.o = o;
    pr.timing = NULL;
    for (size_t r = 0; r < o->n_runs; r++) {
        pr.names[r] = o->runs[r].name;
        pr.windows[r] = o->runs[r].window;
    }
    rs_cli_progress_init(&pr.prog, o->cmd, pr.names, pr.windows, o->n_runs, o->quiet, o->progress_every);
    rs_kleval_config c = rs_kleval_config_default();
    c.model_dir = o->model;
    c.random_weights = o->random_weights;
    c.random_seed = o->random_seed;
    c.input = o->input_kind == 1 ? RS_KLEVAL_INPUT_TEXT : o->input_kind == 2 ? RS_KLEVAL_INPUT_TOKEN_IDS : RS_KLEVAL_INPUT_PG19;
    c.input_files = o->inputs;
    c.n_input_files = o->n_inputs;
    c.data_dir = o->data;
    c.split = o->split;
    c.first_books = o->books;
    c.book_ids = (const char *const *)o->book_ids;
    c.n_book_ids = o->n_book_ids;
    c.tokens = o->tokens;
    c.chunk = o->chunk;
    c.batch = o->batch;
    c.threads = o->threads;
    if (!strcmp(o->device, "cuda")) {
#ifdef RS_HAVE_CUDA
        c.scorer = rs_scorer_cuda_create;
        c.device_kind = "cuda";
        c.device = o->device_ordinal;
#else
        fprintf(stderr, "replayssm %s: --device cuda: this build has no CUDA (configure with nvcc present and "
                        "-DRS_CUDA=ON)\n", o->cmd);
        free(cmdline);
        return 2;
#endif
    }
    (void)rs_compute_mode_parse(o->compute, &c.compute); /* checked while parsing */
    c.short_books = strcmp(o->short_mode, "truncate") ? RS_KLEVAL_SHORT_SKIP : RS_KLEVAL_SHORT_TRUNCATE;
    (void)rs_invalid_utf8_parse(o->invalid_utf8, &c.invalid_utf8); /* one of the choices: checked while parsing */
    c.out_path = o->out;
    c.output = o->resume ? RS_KLEVAL_OUT_RESUME : o->force ? RS_KLEVAL_OUT_FORCE : RS_KLEVAL_OUT_NEW;
    c.n_runs = o->n_runs;
    c.runs = o->runs;
    c.command_line = cmdline;
    c.tool_version = RS_VERSION_STRING;
    c.git_commit = RS_GIT_COMMIT;
    c.on_event = on_event_;
    c.user = &pr;
    c.cancel = rs_cli_signals_install(); /* Ctrl-C / SIGTERM: finish the chunk, close "interrupted" */
#ifdef RS_HAVE_MPI
    if (rs_mpi_launched()) {
        const int mrc = rs_mpi_kl_evaluate(&c, o->cmd, o->quiet);
        free(cmdline);
        return mrc;
    }
#else
    if (rs_mpi_launch_size() > 1) { /* N copies of a whole job racing for one --out: refuse */
        fprintf(stderr,
                "replayssm %s: started by an MPI launcher as one of %ld ranks, but this replayssm was built "
                "without MPI (RS_MPI=OFF or no libopenmpi-dev at configure time): every rank would run the "
                "whole job into %s. Rebuild with MPI, or run it without mpirun\n",
                o->cmd, rs_mpi_launch_size(), o->out);
        free(cmdline);
        return 2;
    }
#endif
    if (o->timing && !(pr.timing = timing_open_(o))) { /* (under mpirun the ranks' drivers time nothing) */
        free(cmdline);
        return 1;
    }
    rs_kleval *ev = NULL;
    rs_status st = rs_kleval_create(&c, &ev);
    free(cmdline);
    if (st != RS_OK) {
        fprintf(stderr, "replayssm %s: %s\n", o->cmd, rs_last_error());
        if (pr.timing) fclose(pr.timing);
        return 2;
    }
    st = rs_kleval_run(ev);
    rs_cli_progress_end(&pr.prog);
    if (pr.timing && fclose(pr.timing) != 0) fprintf(stderr, "replayssm %s: --timing %s: %s\n", o->cmd, o->timing,
                                                     strerror(errno));
    int rc = st != RS_OK ? report_failure_(o, rs_kleval_failed_stage(ev)) : 0;
    if (rc == 0 && rs_kleval_get_result(ev)->interrupted) {
        rc = rs_cli_interrupted(o->cmd, o->out, stderr);
        rs_kleval_free(ev);
        return rc;
    }
    if (rc == 0) print_summary_(o, &pr, rs_kleval_get_result(ev), stdout);
    if (rc == 0) print_cost_(rs_kleval_get_result(ev), stderr); /* timings: not in the stdout summary */
    rs_kleval_free(ev);
    return rc;
}

int rs_cmd_kl(int argc, char **argv)
{
    rs_kl_opts o;
    rs_kl_opts_init(&o, "kl");
    char epilog[1024];
    epilog_kl_(epilog, sizeof epilog);
    int pr = rs_kl_parse(argc, argv, &o, 0, k_kl_synopsis, k_kl_about, epilog);
    if (pr) {
        rs_kl_opts_free(&o);
        return pr == 1 ? 0 : 2;
    }
    if (!o.n_policies) /* the bundled default's policies (also with other options, e.g. --force) */
        for (size_t i = 0; i < sizeof k_default_policies / sizeof k_default_policies[0]; i++)
            o.policies[o.n_policies++] = k_default_policies[i];
    if (!o.out) o.out = RS_KL_DEFAULT_OUT;
    int rc = 2;
    if (o.books != 1 && o.n_book_ids) {
        fprintf(stderr, "replayssm kl: --books and --book-ids exclude each other\n");
        goto done;
    }
    for (size_t i = 0; i < o.n_policies; i++) {
        char *copy = strdup(o.policies[i]), *items[RS_KL_MAX_RUNS];
        const size_t k = copy ? rs_kl_split_list("kl", "--policy", copy, items, RS_KL_MAX_RUNS) : 0;
        int ok = k > 0;
        for (size_t j = 0; j < k && ok; j++) {
            if (!strcmp(items[j], "none")) o.ref_only = 1;
            else ok = rs_kl_add_run(&o, items[j], o.window);
        }
        free(copy);
        if (!ok) goto done;
    }
    if (o.ref_only && o.n_runs) {
        fprintf(stderr, "replayssm kl: --policy none (the fp32 reference alone) cannot be combined with other "
                        "policies\n");
        goto done;
    }
    size_t window;
    if (!o.n_runs && rs_run_window_parse(o.window, &window) != RS_OK) { /* no run parsed --window */
        fprintf(stderr, "replayssm kl: %s\n", rs_last_error());
        goto done;
    }
    rc = rs_kl_evaluate(&o, argc, argv);
done:
    rs_kl_opts_free(&o);
    return rc;
}
