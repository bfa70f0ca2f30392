/* mpi_driver.c — `mpirun replayssm kl|sweep ...`: the evaluation spread over MPI ranks
 * (docs/evaluator.md "Scale-out with MPI").
 *
 * Work items are (book, group of runs): item k = book (k / G) with runs of group (k % G), G =
 * RS_MPI_RUN_GROUPS (default 1: every run of a book in one item, so the reference is computed once
 * per book, as in a single process). Rank 0 hands items out one at a time on request (dynamic: a
 * rank that finishes early takes the next one), and works on items itself between the requests it
 * serves (it polls for requests after every committed chunk). Each item is one ordinary library
 * evaluation (rs_kleval) of one book and the group's runs into its own shard log
 * "<out>.shards/bBBBBB-gGGG.h5"; once every item is done rank 0 merges the shards in item order
 * with rs_h5log_merge (the function behind `replayssm merge`) into <out> and removes them.
 *
 * Why the result equals a single-process run bit for bit: a book's positions depend only on the
 * book's tokens, the run (policy, window, seed) and the chunk (the runner is reset at every book,
 * SR streams are keyed by (seed, slot, layer, head, step), never by book index, rank or time), and
 * the merged log is written by the same writer, its summaries by the same function over the same
 * arrays. With G > 1 the GEMMs have fewer rows than in a single process; a run's bits do not
 * depend on the other rows (tests/test_kleval.c checks that on the OpenBLAS kernels in use).
 *
 * Failures: a rank killed (SIGKILL, node lost) takes the job down (mpirun stops the other ranks);
 * every shard keeps its committed chunks, and `--resume` (with any number of ranks) runs every
 * item again with RS_KLEVAL_OUT_RESUME where its shard exists: finished shards are only
 * re-checked and rebuilt, unfinished ones continue from their committed position, missing ones
 * start. A library error on any rank stops the handing out; the shards stay for --resume.
 *
 * Test hook (tests/mpi/test_mpi.sh): RS_MPI_TEST_KILL="I:C" makes the rank that runs item I SIGKILL
 * itself once it has committed C chunks of it (the last item is handed out only after a first one
 * finished, so killing it leaves finished, unfinished and missing shards behind). */
#ifdef RS_HAVE_MPI /* CMake leaves this file out without RS_MPI; a build that compiles every file of eval/cli/ gets an empty unit */
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "mpi_driver.h"
#include "rs_cli.h"
#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_h5log_merge.h"
#include "replayssm/eval/rs_pg19.h"
#ifdef RS_HAVE_CUDA
#include "replayssm/eval/rs_gpu_info.h"
#endif

enum { TAG_REQ = 11, TAG_WORK = 12, TAG_PROG = 13 };
enum { RES_NONE = 0, RES_DONE = 1, RES_SKIPPED = 2, RES_FAILED = 3 };

/* worker -> rank 0: the result of the last item (item -1: the first request) */
typedef struct msg_req {
    int64_t item;
    int32_t kind; /* RES_* */
    int32_t rc;   /* exit status of a failed item: 2 usage-like, 1 otherwise */
    char text[1024];
} msg_req;

/* worker -> rank 0: progress of the item in flight */
typedef struct msg_prog {
    int64_t item, done, total, at_start; /* positions of the item: committed, planned, committed before */
} msg_prog;

typedef struct drv {
    const rs_kleval_config *base;
    const char *cmd;
    int quiet, rank, size;
    char **ids;         /* the books, in order */
    size_t n_books, G, n_items;
    size_t (*grp)[2];   /* [G] run range [lo, hi) of each group */
    char dir[4096];     /* "<out>.shards" */
    double t0;
    /* rank 0: the schedule */
    size_t next;        /* next item to hand out */
    int failed, fail_rc;
    char fail_text[1200];
    int workers_left;   /* ranks > 0 not yet told to stop */
    int *result;        /* [n_items] RES_* */
    double *work_total, *work_done; /* [n_items] run-positions planned / committed (estimates until known) */
    double *work_start;             /* [n_items] committed before this job (resumed shards) */
    char *seen;                     /* [n_items] progress arrived from the item in this job */
    double last_eta;
    /* this rank's item in flight */
    int64_t cur;
    int cur_skipped;
    double cur_t0, last_line, last_prog;
    long kill_item, kill_chunks, chunks_in_item;
    int local_rank, gpu;  /* rank within the node; the GPU ordinal of a --device cuda rank */
} drv;

static double now_(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void nap_(void)
{
    const struct timespec t = {0, 2000000}; /* 2 ms: waiting ranks must not spin (oversubscribed hosts) */
    nanosleep(&t, NULL);
}

static void item_path_(const drv *d, size_t item, char *buf, size_t n)
{
    snprintf(buf, n, "%s/b%05zu-g%03zu.h5", d->dir, item / d->G, item % d->G);
}

static double item_weight_(const drv *d, size_t item)
{
    const size_t g = item % d->G;
    return (double)(d->grp[g][1] - d->grp[g][0] + 1); /* the group's runs + the reference */
}

/* ---- rank 0: the schedule ------------------------------------------------------------------ */

static int64_t take_(drv *d)
{
    if (d->failed || d->next >= d->n_items) return -1;
    return (int64_t)d->next++;
}

static void record_(drv *d, int64_t item, int kind, int rc, const char *text)
{
    if (item < 0) return;
    d->result[item] = kind;
    if (kind == RES_DONE && !d->seen[item]) d->work_start[item] = d->work_total[item]; /* finished before */
    if (kind == RES_DONE || kind == RES_SKIPPED) d->work_done[item] = d->work_total[item];
    if (kind == RES_SKIPPED) d->work_total[item] = d->work_done[item] = d->work_start[item] = 0;
    if (kind == RES_FAILED && !d->failed) {
        d->failed = 1;
        d->fail_rc = rc;
        snprintf(d->fail_text, sizeof d->fail_text, "%s", text);
    }
}

static void print_eta_(drv *d, int force)
{
    const double t = now_() - d->t0;
    if (d->quiet || (!force && t - d->last_eta < 2.0)) return;
    d->last_eta = t;
    double tot = 0, done = 0, start = 0;
    size_t items = 0;
    for (size_t i = 0; i < d->n_items; i++) {
        tot += d->work_total[i];
        done += d->work_done[i];
        start += d->work_start[i];
        items += d->result[i] != RES_NONE;
    }
    const double rate = (done - start) / (t + 1e-9); /* computed in this job */
    const double eta = rate > 0 ? (tot - done) / rate : 0;
    fprintf(stderr, "[rank 0] all %d ranks: %zu/%zu items, %.0f%% of the run-positions, %.0f run-positions/s, ETA %.0f s\n",
            d->size, items, d->n_items, tot > 0 ? 100.0 * done / tot : 100.0, rate, eta);
}

/* answer every message waiting at rank 0 */
static void serve_(drv *d)
{
    for (;;) {
        int flag = 0;
        MPI_Status s;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s);
        if (!flag) break;
        if (s.MPI_TAG == TAG_PROG) {
            msg_prog p;
            MPI_Recv(&p, (int)sizeof p, MPI_BYTE, s.MPI_SOURCE, TAG_PROG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (p.item >= 0 && (size_t)p.item < d->n_items) {
                const double w = item_weight_(d, (size_t)p.item);
                d->work_total[p.item] = w * (double)p.total;
                d->work_done[p.item] = w * (double)p.done;
                d->work_start[p.item] = w * (double)p.at_start;
                d->seen[p.item] = 1;
            }
        } else if (s.MPI_TAG == TAG_REQ) {
            msg_req q;
            MPI_Recv(&q, (int)sizeof q, MPI_BYTE, s.MPI_SOURCE, TAG_REQ, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            q.text[sizeof q.text - 1] = '\0';
            record_(d, q.item, q.kind, q.rc, q.text);
            int64_t next = take_(d);
            MPI_Send(&next, 1, MPI_INT64_T, s.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
            if (next < 0) d->workers_left--;
        } else { /* not ours: drop it */
            char junk[4096];
            MPI_Recv(junk, (int)sizeof junk, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    print_eta_(d, 0);
}

/* ---- one item ------------------------------------------------------------------------------- */

static int on_event_(const rs_kleval_event *e, void *user)
{
    drv *d = (drv *)user;
    const size_t g = (size_t)d->cur % d->G, lo = d->grp[g][0];
    char id[1024], msg[1024];
    switch (e->kind) {
    case RS_KLEVAL_EVENT_BOOK_SKIPPED:
        d->cur_skipped = 1;
        if (g == 0)
            fprintf(stderr, "[rank %d] replayssm %s: book %s has %zu tokens, fewer than --tokens %zu + 1: skipped%s\n",
                    d->rank, d->cmd, rs_cli_esc(e->book_id, id, sizeof id), e->available, d->base->tokens,
                    e->truncatable ? " (--short truncate keeps it)" : "");
        break;
    case RS_KLEVAL_EVENT_BOOK_TRUNCATED:
        if (g == 0)
            fprintf(stderr, "[rank %d] replayssm %s: book %s has %zu tokens: truncated to %zu positions\n", d->rank,
                    d->cmd, rs_cli_esc(e->book_id, id, sizeof id), e->available, e->positions);
        break;
    case RS_KLEVAL_EVENT_INVALID_UTF8:
        if (g == 0)
            fprintf(stderr, "[rank %d] replayssm %s: warning: %s is not valid UTF-8: first invalid byte at offset %zu "
                            "(%zu invalid sequence%s): %s\n", d->rank, d->cmd, rs_cli_esc(e->book_id, id, sizeof id),
                    e->position, e->available, e->available == 1 ? "" : "s", e->message);
        break;
    case RS_KLEVAL_EVENT_NONFINITE: /* the merged log's run index */
        fprintf(stderr, "[rank %d] replayssm %s: run %zu (%s, L=%zu) book %s: non-finite at position %zu%s%s\n", d->rank,
                d->cmd, lo + e->run, d->base->runs[lo + e->run].name, d->base->runs[lo + e->run].window,
                rs_cli_esc(e->book_id, id, sizeof id), e->position, e->message[0] ? ": " : "",
                rs_cli_esc(e->message, msg, sizeof msg));
        break;
    case RS_KLEVAL_EVENT_PROGRESS: {
        const double t = now_();
        if (d->rank == 0) {
            const double w = item_weight_(d, (size_t)d->cur);
            d->work_total[d->cur] = w * (double)e->total;
            d->work_done[d->cur] = w * (double)e->done;
            d->work_start[d->cur] = w * (double)e->done_at_start;
            d->seen[d->cur] = 1;
            serve_(d);
        } else if (t - d->last_prog > 1.0 || e->done == e->total) {
            msg_prog p = {d->cur, (int64_t)e->done, (int64_t)e->total, (int64_t)e->done_at_start};
            MPI_Send(&p, (int)sizeof p, MPI_BYTE, 0, TAG_PROG, MPI_COMM_WORLD);
            d->last_prog = t;
        }
        if (!d->quiet && (t - d->last_line > 5.0 || e->done == e->total)) {
            d->last_line = t;
            const double rate = (double)(e->done - e->done_at_start) / (e->elapsed_s + 1e-9);
            fprintf(stderr, "[rank %d] item %lld/%zu: book %s, runs %zu-%zu: %zu/%zu positions, %.0f positions/s\n",
                    d->rank, (long long)d->cur + 1, d->n_items, rs_cli_esc(e->book_id, id, sizeof id), lo,
                    d->grp[g][1] ? d->grp[g][1] - 1 : 0, e->done, e->total, rate);
        }
        d->chunks_in_item++;
        if (d->kill_item == d->cur && d->chunks_in_item >= d->kill_chunks)
            raise(SIGKILL); /* the test hook: a rank dying in the middle of an item */
        break;
    }
    }
    return 0;
}

/* evaluate one item into its shard; the result kind, with rc and text for a failure */
static int run_item_(drv *d, int64_t item, int *rc, char *text, size_t n)
{
    const size_t book = (size_t)item / d->G, g = (size_t)item % d->G;
    char path[4200];
    item_path_(d, (size_t)item, path, sizeof path);
    struct stat sb;
    rs_kleval_config c = *d->base;
    c.input = RS_KLEVAL_INPUT_PG19;
    c.book_ids = (const char *const *)&d->ids[book];
    c.n_book_ids = 1;
    c.runs = d->base->runs + d->grp[g][0];
    c.n_runs = d->grp[g][1] - d->grp[g][0];
    c.out_path = path;
    c.output = stat(path, &sb) == 0 ? RS_KLEVAL_OUT_RESUME : RS_KLEVAL_OUT_NEW; /* a shard left by a killed job */
    c.on_event = on_event_;
    c.user = d;
    if (d->base->device_kind && !strcmp(d->base->device_kind, "cuda")) c.device = d->gpu;
    d->cur = item;
    d->cur_skipped = 0;
    d->cur_t0 = now_();
    d->chunks_in_item = 0;
    rs_kleval *ev = NULL;
    rs_status st = rs_kleval_create(&c, &ev);
    int kind = RES_DONE;
    if (st == RS_OK) st = rs_kleval_run(ev);
    if (st != RS_OK) {
        const rs_kleval_stage stage = ev ? rs_kleval_failed_stage(ev) : RS_KLEVAL_STAGE_CONFIG;
        if (d->cur_skipped && stage == RS_KLEVAL_STAGE_BOOKS) kind = RES_SKIPPED; /* a too-short book: not in the log */
        else {
            kind = RES_FAILED;
            *rc = stage == RS_KLEVAL_STAGE_CONFIG || stage == RS_KLEVAL_STAGE_TOKENIZER || stage == RS_KLEVAL_STAGE_INPUT ? 2 : 1;
            snprintf(text, n, "rank %d, book %s: %s", d->rank, d->ids[book], rs_last_error());
        }
    }
    rs_kleval_free(ev);
    return kind;
}

/* ---- set-up: books, groups, the shard folder ------------------------------------------------ */

static int plan_(drv *d, char *err, size_t n)
{
    const rs_kleval_config *c = d->base;
    if (c->input != RS_KLEVAL_INPUT_PG19) {
        snprintf(err, n, "--text / --token-ids under MPI are not supported yet: run them without mpirun");
        return 2;
    }
    if (c->n_book_ids) {
        d->ids = (char **)calloc(c->n_book_ids, sizeof(char *));
        if (!d->ids) return snprintf(err, n, "out of memory"), 1;
        for (size_t i = 0; i < c->n_book_ids; i++) {
            for (size_t j = 0; j < i; j++)
                if (!strcmp(c->book_ids[i], c->book_ids[j])) return snprintf(err, n, "book %s listed twice", c->book_ids[i]), 2;
            if (!(d->ids[i] = strdup(c->book_ids[i]))) return snprintf(err, n, "out of memory"), 1;
            d->n_books = i + 1; /* what rs_pg19_ids_free frees on the way out */
        }
    } else {
        rs_pg19_meta meta;
        memset(&meta, 0, sizeof meta);
        rs_status st = rs_pg19_meta_load(c->data_dir, &meta);
        if (st == RS_OK) st = rs_pg19_select_first(c->data_dir, c->split, &meta, c->first_books, &d->ids);
        rs_pg19_meta_free(&meta);
        if (st != RS_OK) return snprintf(err, n, "cannot choose books: %s", rs_last_error()), 1;
        d->n_books = c->first_books;
    }
    const char *gs = getenv("RS_MPI_RUN_GROUPS");
    d->G = gs && *gs ? (size_t)strtoul(gs, NULL, 10) : 1;
    if (d->G == 0 || (c->n_runs > 0 && d->G > c->n_runs) || (c->n_runs == 0 && d->G != 1)) {
        snprintf(err, n, "RS_MPI_RUN_GROUPS=%s: must be 1..%zu (the number of runs)", gs, c->n_runs ? c->n_runs : 1);
        return 2;
    }
    d->grp = calloc(d->G, sizeof *d->grp);
    if (!d->grp) return snprintf(err, n, "out of memory"), 1;
    for (size_t g = 0; g < d->G; g++) { /* contiguous, sizes differing by at most one: the log's run order */
        d->grp[g][0] = g * c->n_runs / d->G;
        d->grp[g][1] = (g + 1) * c->n_runs / d->G;
    }
    d->n_items = d->n_books * d->G;
    snprintf(d->dir, sizeof d->dir, "%s.shards", c->out_path);
    return 0;
}

/* remove the shard files (and temporaries) of the folder, then the folder */
static void remove_shards_(const drv *d)
{
    DIR *dp = opendir(d->dir);
    if (!dp) return;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (e->d_name[0] != 'b' || !strstr(e->d_name, ".h5")) continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", d->dir, e->d_name);
        unlink(p);
    }
    closedir(dp);
    rmdir(d->dir);
}

/* rank 0, before any work: what exists at the output and the shard folder */
static int check_output_(drv *d, char *err, size_t n, int *nothing_to_do)
{
    const rs_kleval_config *c = d->base;
    struct stat sb;
    const int out_exists = stat(c->out_path, &sb) == 0, dir_exists = stat(d->dir, &sb) == 0;
    *nothing_to_do = 0;
    if (c->output == RS_KLEVAL_OUT_NEW && out_exists)
        return snprintf(err, n, "%s exists: use --force to replace it or --resume to continue it", c->out_path), 1;
    if (c->output == RS_KLEVAL_OUT_NEW && dir_exists)
        return snprintf(err, n, "%s exists (the shards of an interrupted MPI run): use --resume to continue it or "
                                "--force to start over", d->dir), 1;
    if (c->output == RS_KLEVAL_OUT_FORCE && dir_exists) remove_shards_(d);
    if (c->output == RS_KLEVAL_OUT_RESUME && !dir_exists) {
        if (!out_exists) return snprintf(err, n, "--resume: %s does not exist", c->out_path), 1;
        rs_h5log *lg = NULL;
        char status[64] = "";
        if (rs_h5log_open(c->out_path, 0, NULL, &lg) == RS_OK) {
            (void)rs_h5log_get_attr_string(lg, "/", "status", status, sizeof status);
            rs_h5log_close(lg);
        }
        if (!strcmp(status, "complete")) {
            *nothing_to_do = 1;
            return 0;
        }
        return snprintf(err, n, "--resume: %s has no shard folder %s (not an MPI run's output): resume it without "
                                "mpirun", c->out_path, d->dir), 1;
    }
    if (mkdir(d->dir, 0777) != 0 && errno != EEXIST)
        return snprintf(err, n, "cannot create the shard folder %s: %s", d->dir, strerror(errno)), 1;
    return 0;
}

static int merge_(drv *d, char *err, size_t n)
{
    const char **in = (const char **)calloc(d->n_items + 1, sizeof(char *));
    char (*paths)[4200] = calloc(d->n_items + 1, sizeof *paths);
    size_t k = 0;
    int rc = 0;
    if (!in || !paths) rc = 1, snprintf(err, n, "out of memory");
    for (size_t i = 0; !rc && i < d->n_items; i++) {
        if (d->result[i] != RES_DONE) continue;
        item_path_(d, i, paths[k], sizeof paths[k]);
        in[k] = paths[k];
        k++;
    }
    if (!rc && k == 0) rc = 1, snprintf(err, n, "no book left to evaluate (all shorter than --tokens %zu + 1; see --short)",
                                         d->base->tokens);
    if (!rc) {
        rs_h5log_merge_opts o = {d->base->output != RS_KLEVAL_OUT_NEW, d->base->command_line, NULL};
        if (rs_h5log_merge(in, k, d->base->out_path, &o) != RS_OK)
            rc = 1, snprintf(err, n, "merging the shards of %s: %s", d->dir, rs_last_error());
    }
    if (!rc) remove_shards_(d);
    free(in);
    free(paths);
    return rc;
}

/* ---- every rank runs the same evaluation ------------------------------------------------------ */

/* FNV-1a over a field and a separator (the separator keeps "ab","c" apart from "a","bc") */
static uint64_t fnv_(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : "\x01(null)"); *p; p++) h = (h ^ *p) * 1099511628211ull;
    return (h ^ 0x1f) * 1099511628211ull;
}

static uint64_t fnv_u_(uint64_t h, unsigned long long v)
{
    char b[32];
    snprintf(b, sizeof b, "%llu", v);
    return fnv_(h, b);
}

/* What decides the log's bits and its layout, apart from the device: an MPMD launch
 * (`mpirun -np 1 replayssm ... : -np 4 replayssm ...`) or a wrapper that edits the command per
 * rank could give the ranks different evaluations; their shards would then be refused only at the
 * merge, after all the work. --threads is left out (a run's bits do not depend on it: the OpenBLAS
 * kernels in use, tests/test_kleval.c), as are the command line and the event settings. */
static uint64_t config_digest_(const rs_kleval_config *c)
{
    uint64_t h = 1469598103934665603ull;
    h = fnv_(h, c->model_dir);
    h = fnv_u_(h, (unsigned long long)c->random_weights);
    h = fnv_u_(h, (unsigned long long)c->random_seed);
    h = fnv_u_(h, (unsigned long long)c->input);
    for (size_t i = 0; i < c->n_input_files; i++) h = fnv_(h, c->input_files[i]);
    h = fnv_(h, c->data_dir);
    h = fnv_(h, c->split);
    h = fnv_u_(h, c->first_books);
    for (size_t i = 0; i < c->n_book_ids; i++) h = fnv_(h, c->book_ids[i]);
    h = fnv_u_(h, c->tokens);
    h = fnv_u_(h, c->chunk);
    h = fnv_u_(h, (unsigned long long)c->compute);
    h = fnv_u_(h, (unsigned long long)c->short_books);
    h = fnv_(h, c->out_path);
    h = fnv_u_(h, (unsigned long long)c->output);
    h = fnv_u_(h, c->n_runs);
    for (size_t r = 0; r < c->n_runs; r++) {
        h = fnv_(h, c->runs[r].name);
        h = fnv_u_(h, c->runs[r].window);
        h = fnv_u_(h, (unsigned long long)c->runs[r].seed);
    }
    return h;
}

/* 0 when every rank has rank 0's evaluation and device kind; else 2 and err (rank 0's view) names
 * the first rank that differs. Mixed device kinds are refused: the log records one device kind
 * and its arithmetic (the GPU's fp32 reference differs from the CPU's in the last bits, which the
 * recurrence carries on), so a log of GPU and CPU items would equal neither single-process run,
 * and `replayssm merge` refuses such shards ("a different device kind") after the work. */
static int check_same_(const drv *d, char *err, size_t n)
{
    const rs_kleval_config *c = d->base;
    const char *kind = c->device_kind ? c->device_kind : "cpu";
    uint64_t mine[2] = {config_digest_(c), fnv_(1469598103934665603ull, kind)};
    uint64_t *all = (uint64_t *)malloc(2 * sizeof(uint64_t) * (size_t)d->size);
    if (!all) {
        snprintf(err, n, "out of memory");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    int bad = -1, what = 0;
    for (int r = 1; r < d->size && bad < 0; r++)
        if (all[2 * r + 1] != all[1]) bad = r, what = 1;
        else if (all[2 * r] != all[0]) bad = r, what = 2;
    free(all);
    if (bad < 0) return 0;
    if (d->rank != 0) return 2; /* every rank saw it; rank 0 says it once */
    if (what == 1)
        snprintf(err, n,
                 "rank %d runs on another device kind than rank 0 (rank 0: %s): mixing GPU and CPU ranks is "
                 "refused, because one log holds one device kind's arithmetic; run them as separate jobs with "
                 "separate --out (docs/evaluator.md, \"Scale-out with MPI\")",
                 bad, kind);
    else
        snprintf(err, n,
                 "rank %d was started with another evaluation than rank 0 (model, input, books, --tokens, "
                 "--chunk, --compute, policies, windows, seeds or --out differ): every rank must run the same command",
                 bad);
    return 2;
}

/* ---- the entry point ------------------------------------------------------------------------ */

int rs_mpi_kl_evaluate(const rs_kleval_config *c, const char *cmd, int quiet)
{
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided); /* OpenMP threads never call MPI */
    drv d;
    memset(&d, 0, sizeof d);
    d.base = c, d.cmd = cmd, d.quiet = quiet, d.t0 = now_(), d.cur = -1, d.kill_item = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d.size);
    /* one GPU per rank: the rank within its node picks it (cuda:N offsets the range), unless the
     * launcher already gave each rank one device (CUDA_VISIBLE_DEVICES of a single entry); more
     * ranks than GPUs on a node share them round-robin (local rank mod the GPUs from N on: small
     * models leave a GPU mostly idle, so two ranks on one can help; each plans its memory from what
     * is free when it starts) */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &d.local_rank);
    int local_size = 1;
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    const int single = vis && *vis && !strchr(vis, ',');
    d.gpu = c->device + (single ? 0 : d.local_rank);
    int n_gpu = 0;
#ifdef RS_HAVE_CUDA
    if (c->device_kind && !strcmp(c->device_kind, "cuda") && !single && rs_gpu_device_count(&n_gpu) == RS_OK &&
        n_gpu > c->device)
        d.gpu = c->device + d.local_rank % (n_gpu - c->device);
#endif
    if (!quiet && c->device_kind && !strcmp(c->device_kind, "cuda")) {
        if (n_gpu > c->device && local_size > n_gpu - c->device)
            fprintf(stderr, "[rank %d] GPU %d (local rank %d; %d ranks on this node share %d GPUs round-robin)\n", d.rank,
                    d.gpu, d.local_rank, local_size, n_gpu - c->device);
        else
            fprintf(stderr, "[rank %d] GPU %d (local rank %d)\n", d.rank, d.gpu, d.local_rank);
    }
    const char *nt = getenv("SLURM_STEP_NUM_TASKS");
    if (d.size == 1 && nt && strtol(nt, NULL, 10) > 1) { /* every task would run every item */
        if (!getenv("SLURM_PROCID") || !strcmp(getenv("SLURM_PROCID"), "0"))
            fprintf(stderr, "replayssm %s: srun started %s tasks but MPI sees 1 rank: start them with srun's MPI "
                            "plugin (srun --mpi=pmix) or mpirun\n", cmd, nt);
        MPI_Finalize();
        return 2;
    }
    const char *kill = getenv("RS_MPI_TEST_KILL");
    if (kill && sscanf(kill, "%ld:%ld", &d.kill_item, &d.kill_chunks) != 2) d.kill_item = -1;
    char err[10000] = "";
    int rc = check_same_(&d, err, sizeof err), nothing = 0;
    if (rc == 0) rc = plan_(&d, err, sizeof err);
    if (rc == 0 && d.rank == 0) rc = check_output_(&d, err, sizeof err, &nothing);
    const int mine = rc; /* every rank plans (its view of the data folder); the worst status wins */
    MPI_Allreduce(&mine, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Bcast(&nothing, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != 0 || nothing) {
        if (mine && err[0]) fprintf(stderr, "[rank %d] replayssm %s: %s\n", d.rank, cmd, err);
        if (d.rank == 0 && nothing) fprintf(stderr, "replayssm %s: %s is complete: nothing to resume\n", cmd, c->out_path);
        goto done;
    }
    if (d.rank == 0) {
        d.result = (int *)calloc(d.n_items, sizeof(int));
        d.work_total = (double *)calloc(d.n_items, sizeof(double));
        d.work_done = (double *)calloc(d.n_items, sizeof(double));
        d.work_start = (double *)calloc(d.n_items, sizeof(double));
        d.seen = (char *)calloc(d.n_items, 1);
        if (!d.result || !d.work_total || !d.work_done || !d.work_start || !d.seen) {
            fprintf(stderr, "replayssm %s: out of memory\n", cmd);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t i = 0; i < d.n_items; i++) d.work_total[i] = item_weight_(&d, i) * (double)c->tokens; /* until known */
        d.workers_left = d.size - 1;
        if (!quiet)
            fprintf(stderr, "[rank 0] %zu items (%zu books x %zu run groups) over %d ranks, shards in %s\n", d.n_items,
                    d.n_books, d.G, d.size, d.dir);
        for (int64_t it = take_(&d); it >= 0; it = take_(&d)) {
            int irc = 0;
            char text[1100] = "";
            const int kind = run_item_(&d, it, &irc, text, sizeof text);
            record_(&d, it, kind, irc, text);
            serve_(&d);
        }
        while (d.workers_left > 0) { /* the others' last items */
            serve_(&d);
            nap_();
        }
        print_eta_(&d, 1);
        if (d.failed) {
            fprintf(stderr, "replayssm %s: %s\n", cmd, d.fail_text);
            if (rmdir(d.dir) != 0) /* a folder without shards (e.g. a wrong --model) is not left behind */
                fprintf(stderr, "replayssm %s: the shards written so far are kept in %s: --resume continues\n", cmd,
                        d.dir);
            rc = d.fail_rc ? d.fail_rc : 1;
        } else {
            rc = merge_(&d, err, sizeof err);
            if (rc) fprintf(stderr, "replayssm %s: %s\n", cmd, err);
        }
    } else {
        msg_req q;
        memset(&q, 0, sizeof q);
        q.item = -1;
        for (;;) {
            MPI_Send(&q, (int)sizeof q, MPI_BYTE, 0, TAG_REQ, MPI_COMM_WORLD);
            int64_t it = -1;
            MPI_Request r;
            MPI_Irecv(&it, 1, MPI_INT64_T, 0, TAG_WORK, MPI_COMM_WORLD, &r);
            for (int flag = 0; !flag; ) { /* rank 0 answers between its own chunks: wait without spinning */
                MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
                if (!flag) nap_();
            }
            if (it < 0) break;
            memset(&q, 0, sizeof q);
            q.item = it;
            int irc = 0;
            q.kind = run_item_(&d, it, &irc, q.text, sizeof q.text);
            q.rc = irc;
        }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == 0 && d.rank == 0) { /* the summary of the merged log, as `replayssm info` prints it */
        char *args[] = {(char *)"info", (char *)c->out_path, NULL};
        fflush(stderr);
        (void)rs_cmd_info(2, args);
    }
done:
    MPI_Finalize();
    if (d.ids) rs_pg19_ids_free(d.ids, d.n_books);
    free(d.grp);
    free(d.result);
    free(d.work_total);
    free(d.work_done);
    free(d.work_start);
    free(d.seen);
    return rc;
}
#else
typedef int rs_mpi_driver_not_built; /* ISO C: a translation unit is not empty */
#endif /* RS_HAVE_MPI */
