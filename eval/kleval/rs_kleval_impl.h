/* rs_kleval_impl.h — the evaluation handle's layout, private to eval/kleval/rs_kleval*.c:
 *   rs_kleval.c       configuration (copy, checks), life cycle, run loop, results
 *   rs_kleval_plan.c  prepare: inputs, books, runner, buffers
 *   rs_kleval_input.c the token streams of each input kind (PG-19 books, text files, token ids)
 *   rs_kleval_log.c   the log: provenance, create / resume, summaries and finish
 *   rs_kleval_step.c  one chunk: forward, compare with the reference, write, events
 */
#ifndef RS_KLEVAL_IMPL_H
#define RS_KLEVAL_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "replayssm/engine/rs_policy.h"
#include "model/rs_backend.h"
#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_kleval.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_pg19.h"
#include "rs_scorer_impl.h"
#include "replayssm/eval/rs_tokenizer.h"

/* An input file of a text or token-id evaluation (rs_kleval_input.c). */
typedef struct rs_kleval_file {
    const char *path;      /* ev's copy of cfg.input_files[i] */
    char sha256[65];       /* hex SHA-256 of the file as read at planning */
    /* token ids: the file stays open from planning to the end */
    FILE *f;
    int npy;               /* 1: .npy, 0: raw little-endian uint32 */
    int dtype;             /* rs_npy_dtype (raw: RS_NPY_U4) */
    size_t itemsize;
    uint64_t size, data_off, rows, cols; /* the file and its [rows, cols] id array */
} rs_kleval_file;

/* A stream of the plan: a PG-19 book (ids[i] is the book id), a text file, or a row of ids. */
typedef struct rs_kleval_stream {
    size_t file;           /* index into files */
    uint64_t row;          /* token ids: row of the array */
} rs_kleval_stream;

/* A book in flight: one stream of the scorer. Its chunk buffers are what the scorer writes and
 * the log commits. */
typedef struct rs_kleval_slot {
    size_t book;              /* index among the evaluated books */
    size_t pos, start, len;   /* next position; committed at open (replayed, not written, below it);
                                 the book's positions */
    int active;               /* positions left in this wave */
    int32_t *toks;            /* [max_len + 1] the book's tokens */
    double *buf;              /* [(3R + 1) C] kl, nll, dp of every run; the reference NLL */
    uint8_t *agree;           /* [R C + 1] */
    int32_t *tgt, *top;       /* [C] next tokens, reference top-1 */
    rs_h5log_run_chunk *rcs;  /* [R + 1] views into buf / agree */
    double **kl_v, **nll_v, **dp_v; /* [R + 1] the same views as the scorer's output arrays */
    uint8_t **agree_v;
    uint8_t *nf_done;         /* [R + 1] run already reported non-finite in this book */
} rs_kleval_slot;

struct rs_kleval {
    rs_kleval_config cfg;     /* every pointer refers to the copies below */
    char *model_dir, *data_dir, *split, *out_path, *command_line, *tool_version, *git_commit, *device_kind;
    char **book_ids;          /* [cfg.n_book_ids] */
    char **input_files;       /* [cfg.n_input_files] */
    rs_run_spec *runs;        /* [R] the runs as given (checked, distinct) */

    /* prepare */
    rs_kleval_stage failed;   /* where the evaluation stopped on an error */
    int prepared, finished, stop;
    int stopped;              /* interrupted by cfg.cancel: the log is closed */
    char start_time[32];
    rs_tokenizer tok;         /* rs_tokenizer_open; freed by rs_kleval_free */
    rs_model model;
    int model_loaded;
    rs_pg19_meta meta;        /* titles of the plan point into it */
    char **ids;               /* the books asked for (ids_owned: from rs_pg19_select_first) */
    size_t n_ids;
    int ids_owned;
    rs_kleval_file *files;    /* [cfg.n_input_files] text / token-id inputs */
    rs_kleval_stream *streams; /* [n_ids] text / token-id streams; ids[] are their ids (owned) */
    size_t *book_stream;      /* [n_ids] stream (index into ids) of each evaluated book */
    rs_kleval_book *books;    /* [n_ids] evaluated, then skipped from the end (see plan) */
    rs_kleval_book *skipped;  /* [n_ids] */
    size_t max_len;           /* longest book: the KV caches' capacity */
    struct rs_prov_job *prov; /* the model files' digests, hashed on worker threads from the start of
                                 prepare until the log is opened (rs_provenance.h) */
    rs_scorer *sc;            /* the reference and every run (rs_scorer.h; CPU or GPU) */
    char describe[512];       /* the scorer's description, for the log */
    rs_h5log *lg;

    /* the position loop (rs_kleval_step.c): a wave of up to n_slots books in flight, one scorer
     * stream each, in lockstep from position 0 */
    size_t book;              /* next book not yet taken into a wave */
    size_t n_slots;           /* batch: the scorer's streams */
    rs_kleval_slot *slots;    /* [n_slots] */
    size_t n_wave;            /* slots of the current wave (0: none open) */
    rs_scorer_stream *sin;    /* [n_slots] the step's inputs */
    rs_scorer_out *sout;      /* [n_slots] the step's outputs (views into the slots) */
    size_t n_moe;             /* MoE models: the layers with a MoE FFN, whose routing the log counts */
    int32_t *moe_layers;      /* [n_moe] their indices, ascending */
    int64_t *moe_cnt;         /* [2][n_moe] one run's counts of one book, for the log */
    rs_kl_running *running;   /* [R + 1] mean KL of the positions computed here */
    double ref_nll_sum;
    size_t ref_nll_n;
    size_t done, done_at_start, total;
    double t0;
    rs_kl_summary *sums;      /* [R + 1] */
    rs_kleval_result res;
};

/* Record a failure of `stage` with the message "<what>: <status name>: <cause>" (what NULL:
 * the cause alone) and return st. */
rs_status rs_kleval_fail(rs_kleval *ev, rs_kleval_stage stage, rs_status st, const char *what);

/* random weights on a GPU scorer are made on the device (rs_model_init_random_device); the log says so */
static inline int rs_kleval_random_on_device(const rs_kleval_config *c)
{
    return c->random_weights && c->device_kind && strcmp(c->device_kind, "cpu") != 0;
}

/* Monotonic seconds; the current UTC time as ISO 8601 ("2026-12-01T08:00:00Z"). */
double rs_kleval_now(void);
void rs_kleval_iso_now(char *buf, size_t n);

/* rs_kleval_log.c */
rs_status rs_kleval_log_hash_start(rs_kleval *ev); /* start hashing the model files (stage SETUP) */
rs_status rs_kleval_log_open(rs_kleval *ev);   /* create or resume (stage SETUP on failure) */
rs_status rs_kleval_log_finish(rs_kleval *ev); /* summaries, finish, close (stage FINISH) */

/* rs_kleval_plan.c: the body of rs_kleval_prepare */
rs_status rs_kleval_plan(rs_kleval *ev);

/* rs_kleval_input.c: the streams of every input kind. Stream i is ev->ids[i]: a PG-19 book id,
 * or (text / token ids) the id list_inputs made. */
rs_status rs_kleval_input_check(rs_kleval *ev);  /* the input files open (stage BOOKS) */
rs_status rs_kleval_input_list(rs_kleval *ev);   /* text / token ids: files, streams, ev->ids */
/* tokens stream i encodes to (read once here: a book or text file, its SHA-256), and its title;
 * the failure's stage is set */
rs_status rs_kleval_input_count(rs_kleval *ev, size_t i, size_t *avail, const char **title);
/* the first max tokens of stream i into toks (*n: how many); no stage set */
rs_status rs_kleval_input_tokens(rs_kleval *ev, size_t i, int32_t *toks, size_t max, size_t *n);
const char *rs_kleval_input_name(rs_kleval_input k); /* "pg19", "text", "token-ids" */
void rs_kleval_input_free(rs_kleval *ev);

/* rs_kleval_step.c: the next chunk of every book in flight (prepared, not finished, no earlier
 * failure); *all_done = 1 once every book's positions are committed */
rs_status rs_kleval_next_chunk(rs_kleval *ev, int *all_done);
void rs_kleval_slots_free(rs_kleval *ev);

#endif /* RS_KLEVAL_IMPL_H */
