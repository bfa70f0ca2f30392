/* rs_kleval.c — the evaluator's configuration (copy and checks), life cycle, run loop and
 * results (rs_kleval.h). The work itself: rs_kleval_plan.c, rs_kleval_log.c, rs_kleval_step.c. */
#include "rs_kleval_impl.h"
#include "log/rs_provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rs_check.h"

rs_kleval_config rs_kleval_config_default(void)
{
    rs_kleval_config c;
    memset(&c, 0, sizeof c);
    c.input = RS_KLEVAL_INPUT_PG19;
    c.split = "test";
    c.first_books = 1;
    c.tokens = 8192;
    c.chunk = 64;
    c.batch = 1;
    c.short_books = RS_KLEVAL_SHORT_SKIP;
    c.output = RS_KLEVAL_OUT_NEW;
    c.device_kind = "cpu";
    c.compute = RS_COMPUTE_FP32;
    return c;
}

double rs_kleval_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void rs_kleval_iso_now(char *buf, size_t n)
{
    const time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

rs_status rs_kleval_fail(rs_kleval *ev, rs_kleval_stage stage, rs_status st, const char *what)
{
    ev->failed = stage;
    if (what) { /* rs_error_set formats into its own buffer first: the cause may be passed in */
        const char *cause = rs_last_error();
        rs_error_set(st, "%s: %s%s%s", what, rs_strerror(st), cause[0] ? ": " : "", cause);
    }
    return st;
}

/* strdup of s, or of dflt when s is NULL; NULL only when out of memory */
static char *dup_(const char *s, const char *dflt)
{
    const char *v = s ? s : dflt;
    char *d = (char *)malloc(strlen(v) + 1);
    if (d) strcpy(d, v);
    return d;
}

/* the values of cfg that need no file: ranges, enums, run specs, distinct runs */
static rs_status check_config_(const rs_kleval_config *c)
{
    RS_CHECK(c->input == RS_KLEVAL_INPUT_PG19 || c->input == RS_KLEVAL_INPUT_TEXT ||
                 c->input == RS_KLEVAL_INPUT_TOKEN_IDS,
             RS_E_INVAL, "input: unknown kind %d", (int)c->input);
    RS_CHECK((unsigned)c->invalid_utf8 <= RS_INVALID_UTF8_ERROR, RS_E_INVAL, "invalid_utf8: unknown choice %d",
             (int)c->invalid_utf8);
    const int pg19 = c->input == RS_KLEVAL_INPUT_PG19;
    RS_CHECK(c->model_dir && (c->data_dir || !pg19) && c->out_path, RS_E_INVAL,
             "rs_kleval_create: model_dir, data_dir (PG-19 input) and out_path are required");
    RS_CHECK(pg19 || (c->n_input_files > 0 && c->input_files), RS_E_INVAL,
             "rs_kleval_create: the %s input needs at least one input file",
             c->input == RS_KLEVAL_INPUT_TEXT ? "text" : "token-id");
    RS_CHECK(pg19 || c->n_input_files <= RS_H5LOG_MAX_BOOKS, RS_E_INVAL, "%zu input files: at most %u",
             c->n_input_files, RS_H5LOG_MAX_BOOKS);
    for (size_t i = 0; !pg19 && i < c->n_input_files; i++)
        RS_CHECK(c->input_files[i] != NULL && c->input_files[i][0], RS_E_INVAL, "input file %zu is %s", i,
                 c->input_files[i] ? "an empty path" : "NULL");
    RS_CHECK(c->tokens >= 1 && c->tokens <= RS_KLEVAL_MAX_TOKENS, RS_E_INVAL,
             "tokens must be in [1, %d], not %zu", RS_KLEVAL_MAX_TOKENS, c->tokens);
    RS_CHECK(c->chunk >= 1 && c->chunk <= RS_KLEVAL_MAX_CHUNK, RS_E_INVAL,
             "chunk must be in [1, %d], not %zu", RS_KLEVAL_MAX_CHUNK, c->chunk);
    RS_CHECK(c->batch <= RS_KLEVAL_MAX_BATCH, RS_E_INVAL, "batch must be in [1, %d], not %zu", RS_KLEVAL_MAX_BATCH,
             c->batch);
    RS_CHECK(c->threads >= 0, RS_E_INVAL, "threads must be >= 0 (0: the OpenMP default), not %d",
             c->threads);
    RS_CHECK(!pg19 || c->n_book_ids > 0 || c->first_books > 0, RS_E_INVAL,
             "no books: give book ids or first_books >= 1");
    RS_CHECK(c->n_book_ids == 0 || c->book_ids, RS_E_INVAL, "%zu book ids but book_ids is NULL",
             c->n_book_ids);
    for (size_t i = 0; i < c->n_book_ids; i++)
        RS_CHECK(c->book_ids[i] != NULL, RS_E_INVAL, "book id %zu is NULL", i);
    RS_CHECK(c->short_books == RS_KLEVAL_SHORT_SKIP || c->short_books == RS_KLEVAL_SHORT_TRUNCATE,
             RS_E_INVAL, "short_books: unknown mode %d", (int)c->short_books);
    RS_CHECK(c->output == RS_KLEVAL_OUT_NEW || c->output == RS_KLEVAL_OUT_FORCE ||
                 c->output == RS_KLEVAL_OUT_RESUME,
             RS_E_INVAL, "output: unknown mode %d", (int)c->output);
    RS_CHECK(c->n_runs == 0 || c->runs, RS_E_INVAL, "%zu runs but runs is NULL", c->n_runs);
    for (size_t r = 0; r < c->n_runs; r++) {
        if (rs_run_spec_check(&c->runs[r]) != RS_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", rs_last_error());
            return rs_error_set(RS_E_INVAL, "run %zu: %s", r, why);
        }
        /* a repeated run would write the same datasets twice under two names; rs_run_spec_add,
         * which builds a command's runs, drops repeats, so only a hand-made list has one */
        const size_t q = rs_run_spec_find(c->runs, r, &c->runs[r]);
        RS_CHECK(q == r, RS_E_INVAL, "run %zu (%s, L=%zu, seed %llu) repeats run %zu", r, c->runs[r].name,
                 c->runs[r].window, (unsigned long long)c->runs[r].seed, q);
    }
    return RS_OK;
}

/* deep copy of cfg into ev (ev->cfg then points only into ev) */
static rs_status copy_config_(rs_kleval *ev, const rs_kleval_config *c)
{
    const size_t R = c->n_runs;
    ev->cfg = *c;
    ev->model_dir = dup_(c->model_dir, "");
    ev->data_dir = dup_(c->data_dir, "");
    ev->split = dup_(c->split, "test");
    ev->out_path = dup_(c->out_path, "");
    ev->command_line = dup_(c->command_line, "");
    ev->tool_version = dup_(c->tool_version, RS_VERSION_STRING);
    ev->git_commit = dup_(c->git_commit, "unknown");
    ev->device_kind = dup_(c->device_kind, "cpu");
    ev->book_ids = (char **)calloc(c->n_book_ids + 1, sizeof(char *));
    const size_t nf = c->input == RS_KLEVAL_INPUT_PG19 ? 0 : c->n_input_files;
    ev->cfg.n_input_files = nf;
    ev->input_files = (char **)calloc(nf + 1, sizeof(char *));
    /* + 1: R may be 0 (the reference alone) and calloc(0) may return NULL */
    ev->runs = (rs_run_spec *)calloc(R + 1, sizeof(rs_run_spec));
    RS_CHECK(ev->model_dir && ev->data_dir && ev->split && ev->out_path && ev->command_line &&
                 ev->tool_version && ev->git_commit && ev->device_kind && ev->book_ids && ev->input_files && ev->runs,
             RS_E_NOMEM, "out of memory");
    if (R) memcpy(ev->runs, c->runs, R * sizeof *ev->runs);
    for (size_t i = 0; i < c->n_book_ids; i++)
        RS_CHECK((ev->book_ids[i] = dup_(c->book_ids[i], "")) != NULL, RS_E_NOMEM, "out of memory");
    for (size_t i = 0; i < nf; i++)
        RS_CHECK((ev->input_files[i] = dup_(c->input_files[i], "")) != NULL, RS_E_NOMEM, "out of memory");
    ev->cfg.model_dir = ev->model_dir;
    ev->cfg.data_dir = ev->data_dir;
    ev->cfg.split = ev->split;
    ev->cfg.out_path = ev->out_path;
    ev->cfg.command_line = ev->command_line;
    ev->cfg.tool_version = ev->tool_version;
    ev->cfg.git_commit = ev->git_commit;
    ev->cfg.device_kind = ev->device_kind;
    ev->cfg.book_ids = (const char *const *)ev->book_ids;
    ev->cfg.input_files = (const char *const *)ev->input_files;
    ev->cfg.runs = ev->runs;
    return RS_OK;
}

rs_status rs_kleval_create(const rs_kleval_config *cfg, rs_kleval **out)
{
    RS_CHECK(out != NULL, RS_E_INVAL, "rs_kleval_create: NULL out");
    *out = NULL;
    RS_CHECK(cfg != NULL, RS_E_INVAL, "rs_kleval_create: NULL config");
    RS_TRY(check_config_(cfg));
    rs_kleval *ev = (rs_kleval *)calloc(1, sizeof *ev);
    RS_CHECK(ev != NULL, RS_E_NOMEM, "out of memory");
    const rs_status st = copy_config_(ev, cfg);
    if (st != RS_OK) {
        rs_kleval_free(ev);
        return st;
    }
    ev->res.n_runs = cfg->n_runs;
    ev->res.runs = ev->runs;
    *out = ev;
    return RS_OK;
}

rs_status rs_kleval_prepare(rs_kleval *ev)
{
    RS_CHECK(ev != NULL, RS_E_INVAL, "rs_kleval_prepare: NULL evaluation");
    RS_CHECK(!ev->prepared && ev->failed == RS_KLEVAL_STAGE_NONE, RS_E_STATE,
             "rs_kleval_prepare: %s", ev->prepared ? "already prepared" : "an earlier step failed");
    RS_TRY(rs_kleval_plan(ev));
    ev->prepared = 1;
    return RS_OK;
}

rs_status rs_kleval_step(rs_kleval *ev, int *finished)
{
    RS_CHECK(ev != NULL && finished != NULL, RS_E_INVAL, "rs_kleval_step: NULL argument");
    *finished = ev->finished;
    if (ev->finished) return RS_OK;
    RS_CHECK(ev->failed == RS_KLEVAL_STAGE_NONE, RS_E_STATE,
             "rs_kleval_step: the evaluation failed earlier (the committed chunks are kept)");
    RS_CHECK(!ev->stopped, RS_E_STATE, "rs_kleval_step: the evaluation was interrupted (the log is closed; resume it)");
    if (!ev->prepared) RS_TRY(rs_kleval_prepare(ev));
    int all_done = 0;
    RS_TRY(rs_kleval_next_chunk(ev, &all_done));
    if (all_done) { /* every position committed */
        RS_TRY(rs_kleval_log_finish(ev));
        ev->finished = 1;
        ev->res.complete = 1;
        ev->res.summaries = ev->sums;
    }
    *finished = ev->finished;
    return RS_OK;
}

/* stopped by cfg.cancel between two chunks: every chunk computed so far is committed and
 * flushed; mark the log interrupted (root status, end_time, this invocation's history entry)
 * and close it, so nothing is left "running" */
static rs_status interrupt_(rs_kleval *ev)
{
    ev->res.interrupted = 1;
    if (!ev->lg) return RS_OK; /* stopped before the log existed (while preparing): nothing written */
    char t_end[32];
    rs_kleval_iso_now(t_end, sizeof t_end);
    rs_status st = rs_h5log_interrupt(ev->lg, t_end);
    const rs_status cs = rs_h5log_close(ev->lg);
    ev->lg = NULL;
    if (st == RS_OK) st = cs;
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_FINISH, st, "cannot close the interrupted log");
    ev->failed = RS_KLEVAL_STAGE_NONE; /* not a failure: later steps are refused by `stopped` */
    ev->stopped = 1;
    return RS_OK;
}

rs_status rs_kleval_run(rs_kleval *ev)
{
    RS_CHECK(ev != NULL, RS_E_INVAL, "rs_kleval_run: NULL evaluation");
    ev->stop = 0;
    int finished = 0;
    const volatile sig_atomic_t *cancel = ev->cfg.cancel;
    /* prepare first, so a signal that arrived while the model was loaded and hashed stops before
     * the first chunk */
    if (!ev->prepared && !ev->finished && ev->failed == RS_KLEVAL_STAGE_NONE && !ev->stopped) {
        const rs_status st = rs_kleval_prepare(ev);
        /* a signal while preparing (the model files' hashing stops at once, rs_provenance.h):
         * nothing was written, the run ends as interrupted rather than failed */
        if (st != RS_OK && cancel && *cancel && !ev->lg) {
            rs_error_clear();
            ev->failed = RS_KLEVAL_STAGE_NONE;
            ev->stopped = 1;
            ev->res.interrupted = 1;
            return RS_OK;
        }
        RS_TRY(st);
    }
    while (!finished && !ev->stop) {
        if (cancel && *cancel) return interrupt_(ev);
        RS_TRY(rs_kleval_step(ev, &finished));
    }
    return RS_OK;
}

const rs_kleval_result *rs_kleval_get_result(const rs_kleval *ev)
{
    if (!ev) return NULL;
    rs_kleval *m = (rs_kleval *)ev; /* the counters are read here, on demand (logically const) */
    if (m->sc) {
        m->sc->ops->stats(m->sc, &m->res.stats);
        m->res.device = m->describe;
    }
    return &ev->res;
}

rs_kleval_stage rs_kleval_failed_stage(const rs_kleval *ev)
{
    return ev ? ev->failed : RS_KLEVAL_STAGE_NONE;
}

void rs_kleval_free(rs_kleval *ev)
{
    if (!ev) return;
    rs_h5log_close(ev->lg); /* an unfinished log keeps its committed positions */
    rs_prov_hash_cancel(ev->prov); /* prepare failed before the log: stop the hashing threads */
    rs_scorer_free(ev->sc);
    if (ev->model_loaded) rs_model_free(&ev->model);
    if (ev->ids_owned) rs_pg19_ids_free(ev->ids, ev->n_ids);
    rs_pg19_meta_free(&ev->meta);
    if (ev->book_ids)
        for (size_t i = 0; i < ev->cfg.n_book_ids; i++) free(ev->book_ids[i]);
    free(ev->book_ids);
    rs_kleval_input_free(ev);
    if (ev->input_files)
        for (size_t i = 0; i < ev->cfg.n_input_files; i++) free(ev->input_files[i]);
    free(ev->input_files);
    free(ev->book_stream);
    free(ev->model_dir);
    free(ev->data_dir);
    free(ev->split);
    free(ev->out_path);
    free(ev->command_line);
    free(ev->tool_version);
    free(ev->git_commit);
    free(ev->device_kind);
    free(ev->runs);
    free(ev->books);
    free(ev->skipped);
    rs_kleval_slots_free(ev);
    rs_tokenizer_free(&ev->tok);
    free(ev->running);
    free(ev->sums);
    free(ev);
}
