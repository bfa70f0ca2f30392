/* rs_kleval.h — the teacher-forced KL evaluator as a library (docs/evaluator.md, "The evaluator
 * as a library"): what `replayssm kl` and `replayssm sweep` run, callable from any program.
 *
 * One evaluation = one model, a list of token streams (PG-19 books, text files or token-id
 * arrays: rs_kleval_input), and R runs {policy, window, seed} (rs_run_spec, parsed by
 * rs_run_spec_parse from the user's strings: replayssm/engine/rs_policy.h); every
 * run is compared position by position with the fp32 reference (rs_kl) and logged to one HDF5
 * file (rs_h5log, docs/hdf5-layout.md). All runs and the reference advance in lockstep in ONE
 * rs_runner, whatever their windows: the reference is computed once per position and every
 * GEMM of a chunk is shared by all runs.
 *
 * Life cycle:
 *   rs_kleval_config c = rs_kleval_config_default();  ... fill in ...
 *   rs_kleval_create(&c, &ev)   checks the configuration itself (values, run specs, duplicate
 *                               runs); touches no file. Failure: a usage error, no handle.
 *   rs_kleval_prepare(ev)       everything that can fail before the output is touched, in this
 *                               order: the output path (exists without force / resume target
 *                               missing), the model folder, the data folder, the model config and
 *                               tokenizer (rs_tokenizer_open on the model folder: tokenizer.json,
 *                               *.tiktoken or the byte tokenizer; missing files or ids >= vocab_size
 *                               are refused before any weight is read; token-id inputs need none),
 *                               the weights, the books or input streams (each read once: a
 *                               missing or empty book or file, a malformed token-id file or an
 *                               id >= vocab_size fails here;
 *                               too-short books are skipped or truncated, reported as events),
 *                               the runner; then the log is created, or reopened with resume
 *                               after checking that the configuration matches.
 *   rs_kleval_step(ev, &done)   one chunk of positions of one book, or with batch > 1 of each
 *                               book in flight (forward, compare, write, commit); after the
 *                               last chunk: the summaries, the log finished and closed,
 *                               *done = 1.
 *   rs_kleval_run(ev)           prepare if needed, then steps until done, until the event
 *                               callback asks to stop (returns non-zero after a PROGRESS event)
 *                               or until *cfg.cancel is set (a signal: the log is then closed
 *                               with status "interrupted").
 *   rs_kleval_get_result(ev)    the plan, the cost counters, and once complete the summaries.
 *   rs_kleval_free(ev)          closes an unfinished log: its committed positions stay valid and
 *                               a later evaluation with output = RS_KLEVAL_OUT_RESUME continues
 *                               it; the result then equals an uninterrupted run bit for bit
 *                               (SR streams are counter-based, chunk boundaries are the same).
 *
 * The library never prints. What the CLI shows on the way (skipped and truncated books,
 * non-finite runs, progress) arrives as events; failures return a status whose message
 * (rs_last_error) is complete, e.g. "cannot read a book: I/O error: book 4242 not found ...",
 * and rs_kleval_failed_stage() says which step failed. Messages name the CLI's options where a
 * config field mirrors one (tokens: --tokens, output: --force / --resume).
 */
#ifndef RS_KLEVAL_H
#define RS_KLEVAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/engine/rs_policy.h"
#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_kl.h"
#include "replayssm/eval/rs_scorer.h"
#include "replayssm/eval/rs_text.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_KLEVAL_MAX_TOKENS 131072 /* positions per book */
#define RS_KLEVAL_MAX_CHUNK 65536   /* positions per chunk */
#define RS_KLEVAL_MAX_BATCH 256     /* books in flight at once (batch) */

/* Books with fewer than tokens + 1 tokens. */
typedef enum rs_kleval_short {
    RS_KLEVAL_SHORT_SKIP = 0,    /* left out (an event reports each) */
    RS_KLEVAL_SHORT_TRUNCATE = 1 /* evaluated on the positions they have (at least 2 tokens) */
} rs_kleval_short;

/* What the token streams ("books") are (docs/evaluator.md, "Inputs: PG-19, text files, token ids"). */
typedef enum rs_kleval_input {
    RS_KLEVAL_INPUT_PG19 = 0,     /* default: books of a PG-19 layout (data_dir, split, book ids)   */
    RS_KLEVAL_INPUT_TEXT = 1,     /* input_files: text files (bytes, UTF-8 or Latin-1), one stream
                                     each, tokenized by the model's tokenizer as a book's text is;
                                     stream id = the base name ("#2", "#3" appended to repeats)     */
    RS_KLEVAL_INPUT_TOKEN_IDS = 2 /* input_files: token ids, no tokenizer: a raw little-endian uint32
                                     file (one stream) or a .npy of shape [tokens] or [streams,
                                     tokens], dtype <u4 <i4 <u2 <i8 <u8; every id < vocab_size      */
} rs_kleval_input;

/* What to do with the output path. */
typedef enum rs_kleval_output {
    RS_KLEVAL_OUT_NEW = 0,   /* refuse an existing file */
    RS_KLEVAL_OUT_FORCE = 1, /* replace an existing file atomically once the new log is built */
    RS_KLEVAL_OUT_RESUME = 2 /* continue an existing log (same configuration) */
} rs_kleval_output;

typedef enum rs_kleval_event_kind {
    RS_KLEVAL_EVENT_BOOK_SKIPPED = 0,   /* prepare: book_id, available (tokens), truncatable */
    RS_KLEVAL_EVENT_BOOK_TRUNCATED = 1, /* prepare: book_id, available, positions kept */
    RS_KLEVAL_EVENT_NONFINITE = 2,      /* step: run's logits non-finite from `position` on */
    RS_KLEVAL_EVENT_PROGRESS = 3,       /* step: a chunk was committed */
    RS_KLEVAL_EVENT_INVALID_UTF8 = 4    /* prepare: a book's or text file's bytes are not valid UTF-8
                                           (BPE tokenizers): book_id, position (byte offset of the
                                           first invalid sequence), available (invalid sequences),
                                           message (what cfg.invalid_utf8 does with them) */
} rs_kleval_event_kind;

/* An event; fields not listed for a kind are 0 / NULL. Pointers live during the callback. */
typedef struct rs_kleval_event {
    rs_kleval_event_kind kind;
    const char *book_id;
    size_t book;        /* NONFINITE, PROGRESS: index among the evaluated books */
    size_t n_books;     /* NONFINITE, PROGRESS: evaluated books */
    size_t available;   /* SKIPPED, TRUNCATED: tokens the book encodes to */
    int truncatable;    /* SKIPPED: 1 if RS_KLEVAL_SHORT_TRUNCATE would have kept it */
    size_t positions;   /* TRUNCATED: positions kept; PROGRESS: the book's positions */
    size_t position;    /* NONFINITE: first non-finite position; PROGRESS: positions done in
                           this book */
    size_t run;         /* NONFINITE: run index */
    const char *message; /* NONFINITE: the state engine's message, "" if none */
    size_t done;        /* PROGRESS: positions committed over all books */
    size_t done_at_start; /* PROGRESS: positions that were committed before this evaluation */
    size_t total;       /* PROGRESS: positions of all books */
    double elapsed_s;   /* PROGRESS: seconds since prepare finished */
    size_t n_runs;      /* PROGRESS: runs */
    const rs_kl_running *running; /* PROGRESS: [n_runs] mean KL of the positions computed here */
    double ref_mean_nll; /* PROGRESS: mean reference NLL (nats) of the positions computed here */
    rs_scorer_stats stats; /* PROGRESS: the scorer's cost counters so far (cumulative; zero if it has none) */
} rs_kleval_event;

/* Event callback. Its return value is read after PROGRESS events only: non-zero asks
 * rs_kleval_run to stop there (the committed chunk is kept). */
typedef int (*rs_kleval_event_fn)(const rs_kleval_event *ev, void *user);

typedef struct rs_kleval_config {
    const char *model_dir;  /* Hugging Face checkpoint folder (config.json + safetensors) */
    int random_weights;     /* 1: rs_model_init_random(model_dir, random_seed) instead of the checkpoint;
                               the log's model_weights attribute says so (compared on resume) */
    uint64_t random_seed;
    rs_kleval_input input;  /* what the streams are [RS_KLEVAL_INPUT_PG19] */
    const char *const *input_files; /* TEXT / TOKEN_IDS: [n_input_files] the files, in this order */
    size_t n_input_files;
    const char *data_dir;   /* PG-19 layout root (metadata.csv, <split>/<id>.txt[.gz]); PG19 only */
    const char *split;      /* split folder ["test"] */
    size_t first_books;     /* without book ids: the first N books of metadata.csv in the split */
    const char *const *book_ids; /* [n_book_ids] these books, in this order (overrides first_books) */
    size_t n_book_ids;
    size_t tokens;          /* positions per book (needs tokens + 1 tokens), 1..RS_KLEVAL_MAX_TOKENS */
    size_t chunk;           /* positions per forward chunk = per HDF5 chunk = per flush */
    int threads;            /* CPU threads; 0: the OpenMP default */
    /* books in flight at once (--batch; 0 or 1: one after another): the next `batch` books with
     * work left are forwarded together as streams of one scorer (rs_scorer.h), in lockstep from
     * position 0, longest first (docs/evaluator.md, "Books batched"). The log is the same as
     * for sequential books (on the CPU bit for bit); on the GPU the GEMM shapes change with the
     * batch, so the log records it and --resume requires the same batch there. */
    size_t batch;
    /* where the forward and scoring run (rs_scorer.h): NULL = rs_scorer_cpu_create; a GPU
     * scorer (rs_scorer_cuda_create) with `device_kind` "cuda". The log records device_kind,
     * compute and the scorer's description; --resume requires the same kind and compute. */
    rs_scorer_factory scorer;
    const char *device_kind; /* name recorded for the scorer ["cpu"] */
    int device;             /* GPU ordinal [0] */
    rs_compute_mode compute; /* GEMM precision [RS_COMPUTE_FP32] */
    rs_kleval_short short_books;
    /* bytes of a book or text file that are not valid UTF-8, for a BPE tokenizer (rs_text.h; the
     * byte tokenizer takes bytes as stored): U+FFFD per invalid sequence [REPLACE, the 0 value],
     * the whole text as Latin-1, or refused. Recorded in the log (root `invalid_utf8`, compared
     * on resume); an INVALID_UTF8 event names each such input and its first invalid offset. */
    rs_invalid_utf8 invalid_utf8;
    const char *out_path;   /* the HDF5 log */
    rs_kleval_output output;
    size_t n_runs;          /* R; 0: the fp32 reference alone (NLL, bits per token) */
    const rs_run_spec *runs; /* [R] distinct runs made by rs_run_spec_parse (rs_run_spec_add drops
                                repeats); the log names each by its canonical policy string */
    /* provenance (root attributes; not compared on resume) */
    const char *command_line; /* how it was started [""] */
    const char *tool_version; /* [RS_VERSION_STRING of the library] */
    const char *git_commit;   /* ["unknown"] */
    rs_kleval_event_fn on_event; /* NULL: no events */
    void *user;               /* passed to on_event */
    /* stop on request (a signal handler sets it; NULL: never): rs_kleval_run reads it before
     * every chunk, so the chunk in flight is finished, committed and flushed; then the log is
     * marked status "interrupted" and closed, rs_kleval_run returns RS_OK with result
     * complete == 0, interrupted == 1, and RS_KLEVAL_OUT_RESUME continues it bit for bit. */
    const volatile sig_atomic_t *cancel;
} rs_kleval_config;

/* Which step of an evaluation failed (rs_kleval_failed_stage). */
typedef enum rs_kleval_stage {
    RS_KLEVAL_STAGE_NONE = 0,
    RS_KLEVAL_STAGE_CONFIG,    /* the configuration contradicts itself (a book listed twice) */
    RS_KLEVAL_STAGE_OUTPUT,    /* output exists (RS_KLEVAL_OUT_NEW) / is missing (RESUME) */
    RS_KLEVAL_STAGE_MODEL_DIR, /* no config.json in model_dir */
    RS_KLEVAL_STAGE_DATA_DIR,  /* data_dir does not exist */
    RS_KLEVAL_STAGE_MODEL,     /* model config, tokenizer, weights */
    RS_KLEVAL_STAGE_BOOKS,     /* metadata, selection, a book, tokenizing, none left */
    RS_KLEVAL_STAGE_SETUP,     /* backend, runner, creating / resuming the log */
    RS_KLEVAL_STAGE_EVAL,      /* the positions (committed chunks are kept; resume continues) */
    RS_KLEVAL_STAGE_FINISH,    /* summaries, finishing and closing the log */
    RS_KLEVAL_STAGE_TOKENIZER, /* the model's tokenizer refused: missing or malformed files, ids >=
                                  vocab_size, a BPE beside a byte model (the CLI exits 2) */
    RS_KLEVAL_STAGE_INPUT      /* a token-id file refused: malformed raw / .npy, an id outside
                                  [0, vocab_size) (the CLI exits 2; unreadable files: BOOKS) */
} rs_kleval_stage;

/* A book of the plan (evaluated or skipped). */
typedef struct rs_kleval_book {
    const char *id, *title; /* title "" without a metadata row */
    size_t available;       /* tokens the book encodes to */
    size_t positions;       /* positions evaluated (< tokens: truncated); 0 when skipped */
    const char *reason;     /* skipped books: why ("fewer than tokens + 1 tokens"); else NULL */
} rs_kleval_book;

typedef struct rs_kleval_result {
    int complete;                 /* 1 once every position is committed and the log finished */
    const char *model_type;       /* after prepare: config.json's model_type */
    size_t n_books;               /* evaluated books, in log order */
    const rs_kleval_book *books;
    size_t n_skipped;             /* books left out as too short, in the order given */
    const rs_kleval_book *skipped;
    size_t n_runs;
    const rs_run_spec *runs;      /* [n_runs] the runs (name: the canonical policy string) */
    const rs_kl_summary *summaries; /* [n_runs] once complete (from the stored arrays) */
    rs_h5log_ref_summary reference; /* the fp32 reference's NLL once complete */
    /* cost: the one runner carries the reference and every run */
    size_t runner_runs;           /* runs forwarded per position: n_runs + 1 (the reference) */
    size_t runner_steps;          /* forward chunks (rs_runner_step calls), resume replays included */
    size_t reference_positions;   /* positions the fp32 reference was forwarded for */
    const char *device;           /* after prepare: the scorer's description (rs_scorer ops->describe) */
    rs_scorer_stats stats;        /* the scorer's cost counters: stage seconds, peak device bytes */
    int interrupted;              /* 1: stopped by cfg.cancel (log closed as status "interrupted") */
} rs_kleval_result;

typedef struct rs_kleval rs_kleval;

/*! rs_kleval_config_default() : PG-19 input, split "test", first_books 1, tokens 8192, chunk 64,
 *  threads 0, batch 1, skip short books, RS_KLEVAL_OUT_NEW; paths, runs and callback NULL. */
rs_kleval_config rs_kleval_config_default(void);

/*! rs_kleval_create() : copy and check cfg (paths given: data_dir for PG-19, input files for the
 *  other inputs; tokens / chunk in range, every run a spec as rs_run_spec_parse makes them
 *  (rs_run_spec_check), runs distinct). Touches no file. @return RS_OK, RS_E_INVAL (the message
 *  names the field or the run), RS_E_NOMEM. */
rs_status rs_kleval_create(const rs_kleval_config *cfg, rs_kleval **out);

/*! rs_kleval_prepare() : validate the inputs, plan the books, build the runner, create or
 *  resume the log (see the header comment). On failure nothing was written and
 *  rs_kleval_failed_stage() tells which step failed. @return RS_OK or that step's status;
 *  RS_E_STATE if called twice or after a failure. */
rs_status rs_kleval_prepare(rs_kleval *ev);

/*! rs_kleval_step() : prepare if needed, then compute, write and commit the next chunk;
 *  after the last one finish the log (*finished = 1; later calls do nothing). A failure is
 *  final (RS_E_STATE afterwards); the committed chunks stay valid. */
rs_status rs_kleval_step(rs_kleval *ev, int *finished);

/*! rs_kleval_run() : rs_kleval_step until finished, or until on_event returns non-zero after a
 *  PROGRESS event: then RS_OK with rs_kleval_get_result()->complete == 0. */
rs_status rs_kleval_run(rs_kleval *ev);

/*! rs_kleval_get_result() : the plan, cost counters and summaries so far (see the fields). */
const rs_kleval_result *rs_kleval_get_result(const rs_kleval *ev);

/*! rs_kleval_failed_stage() : the step whose failure stopped the evaluation, or
 *  RS_KLEVAL_STAGE_NONE. */
rs_kleval_stage rs_kleval_failed_stage(const rs_kleval *ev);

/*! rs_kleval_free() : close the log (if open) and release; accepts NULL. */
void rs_kleval_free(rs_kleval *ev);

#ifdef __cplusplus
}
#endif
#endif /* RS_KLEVAL_H */
