/* rs_h5log.h — the HDF5 log of a KL evaluation (layout: docs/hdf5-layout.md).
 *
 * One file per evaluation: root attributes (provenance + configuration), /books (ids, titles,
 * planned lengths, the commit record completed_positions), /reference (next token, reference
 * NLL and top-1 per position), /runs/runNN (none in a reference-only log, n_runs 0; one group per policy run: attributes policy,
 * window, seed, formats; per-position kl, nll, dp, top1_agree; first non-finite position/layer/
 * head per book; summary attributes once finished), /windows (the position windows of the
 * summary), /provenance (model files' SHA-256, host, BLAS, compiler, the history of invocations).
 * Per-position datasets are [book, position] (position extent = the longest book), chunked
 * (1, chunk) with shuffle + deflate, NaN-filled, with netCDF-4 dimension scales; the root holds
 * coordinates (book, position, run = policy strings, window, seed) and virtual datasets stacking
 * the runs into (run, book, position), so xr.open_dataset(path, engine="h5netcdf") reads the log
 * as one xarray Dataset (format version 2; version 1 logs are still read and resumed).
 *
 * Crash safety (a process killed at any point, e.g. kill -9):
 *  - every HDF5 chunk of a per-position dataset is written once, whole (rs_h5log_write_chunk
 *    receives exactly one HDF5 chunk of positions; the chunk cache is off, so it reaches the file
 *    at H5Dwrite into newly allocated space and never overwrites bytes the last flush refers to);
 *  - then H5Fflush (the chunk index and extents), then the commit record
 *    /books/completed_positions[book] (contiguous, allocated at creation, updated in place), then
 *    H5Fflush again. A reader trusts positions < completed_positions; rows past it are NaN or
 *    stale from an uncommitted write and are rewritten identically by --resume.
 *  - --resume (rs_h5log_open writable) rebuilds: the committed positions are copied into a new
 *    file that replaces the old one atomically, so whatever an interrupted writer left past the
 *    commit record (even inside an interrupted metadata flush) is dropped.
 *  - A write the disk refuses (ENOSPC, EDQUOT, EFBIG of a file-size limit) leaves the file as its
 *    last complete flush left it: the log's file driver reserves space on disk before HDF5 may
 *    use it and writes nothing more after a failure (no close-time flush of a superblock past
 *    the file's end), so the file opens, every committed position is valid and --resume
 *    continues it (docs/hdf5-layout.md "Storage, flushing, crash safety" says what is not covered).
 *  - Residual risk: a kill landing inside HDF5's metadata flush (H5Fflush, a sub-millisecond
 *    window per chunk) could, if a chunk-index node split was being written, leave committed
 *    chunks unreachable; larger index nodes (istore_k 256) make splits rare. The crash test
 *    kills a writer that flushes continuously and checks every committed chunk.
 *  - A new log is built at "<path>.tmp.<pid>" and only its complete skeleton is moved to `path`
 *    with link() (fails if `path` appeared meanwhile). An existing file at `path` is never
 *    truncated or half-written: with force, the new log's skeleton goes to "<path>.partial"
 *    instead (rs_h5log_partial_path) and replaces `path` (rename(), atomic) only when
 *    rs_h5log_finish succeeds, so an interrupted --force run leaves the old log intact and a
 *    resumable partial beside it, which rs_h5log_open(path, writable) continues.
 *  - Only regular files are replaced or continued: a FIFO, device, directory or symbolic link at
 *    `path` (or at "<path>.partial") is refused before anything is opened. Temporaries of killed
 *    processes ("<path>.tmp.<pid>", pid gone) are removed by the next create or resume.
 *  - Every count, extent and string read from a file is validated against the datasets' real
 *    shapes and the RS_H5LOG_MAX_* bounds before anything is allocated (RS_E_FORMAT otherwise):
 *    a log is input like any other (docs/hdf5-layout.md "Reading untrusted logs").
 *
 * The library never prints: HDF5's automatic error printing is switched off for the process
 * by every entry point, and failures return a status whose message quotes HDF5's innermost
 * error description.
 */
#ifndef RS_H5LOG_H
#define RS_H5LOG_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/eval/rs_kl.h"
#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_H5LOG_FORMAT "replayssm-kl-log"
/* 2: netCDF-4 dimensions and root-level (run, book, position) variables, fixed position extent,
 * /provenance (weight-file digests, resume history, host, BLAS, compiler); version 1 logs are
 * still read and resumed (docs/hdf5-layout.md "Versions"). */
#define RS_H5LOG_FORMAT_VERSION 2
#define RS_H5LOG_FORMAT_VERSION_MIN 1 /* the oldest layout this build reads */
#define RS_H5LOG_MAX_FILES 4096u      /* weight files recorded per log */
#define RS_H5LOG_MAX_HISTORY 4096u    /* invocations recorded per log */

/* Bounds of what a log may describe; create refuses more, open refuses a file claiming more
 * (the CLI's own limits are far lower: 131072 tokens, 64 runs). */
#define RS_H5LOG_MAX_BOOKS (1u << 20)   /* books per log */
#define RS_H5LOG_MAX_RUNS 4096u         /* policy runs per log */
#define RS_H5LOG_MAX_MOE_LAYERS 1024u   /* MoE layers of a model whose routing a log records */
#define RS_H5LOG_MAX_TOKENS (1u << 24)  /* positions per book, and the chunk */

/* One policy run (attributes of /runs/runNN). */
typedef struct rs_h5log_run_info {
    const char *policy;    /* canonical policy string (rs_policy_print) */
    const char *mode;      /* "conv", "shared", "split", "split-naive" */
    const char *hp_format; /* recurrent copy's format */
    const char *lp_format; /* read-only copy's format (== hp for conv/shared) */
    uint64_t window;       /* L given to the state engine */
    uint64_t seed;         /* SR seed */
    /* the two copies' formats as fields (attributes <c>_base, <c>_rounding, <c>_sr_bits,
     * <c>_options for c = hp, lp), so a reader needs no format grammar; NULL: not written (merge
     * copies them from its inputs) */
    const rs_format *hp, *lp;
} rs_h5log_run_info;

/* Everything the root describes. The "config" part must match for --resume. */
/* A further root string attribute of the log (device, compute mode, input files and hashes, ...):
 * written at create; with compare = 1 also compared on resume where the log has it (a log
 * written before the attribute existed resumes as before). Keys must not be standard names. */
typedef struct rs_h5log_extra {
    const char *key, *value;
    int compare;
} rs_h5log_extra;

/* A model file's digest (/provenance/files): name relative to the model folder, size and
 * modification time (the cache key: --resume rehashes only files whose size or mtime changed). */
typedef struct rs_h5log_file_hash {
    const char *name;    /* "model.safetensors" */
    uint64_t size;       /* bytes */
    int64_t mtime_ns;    /* st_mtim in nanoseconds since the epoch */
    const char *sha256;  /* 64 hex digits of the file's bytes (== sha256sum) */
} rs_h5log_file_hash;

/* One invocation of the evaluation (/provenance/history, oldest first). */
typedef struct rs_h5log_history {
    const char *command_line, *start_time, *end_time; /* end_time "" while it runs */
    const char *status;                               /* "running", "complete", "interrupted" */
    const char *host;
} rs_h5log_history;

typedef struct rs_h5log_meta {
    /* provenance (not compared on resume) */
    const char *tool_version, *git_commit, *command_line, *start_time, *model_path, *data_path;
    const char *tokenizer_file;    /* the tokenizer file loaded ("" or NULL: byte tokenizer)      */
    const char *tokenizer_sha256;  /* hex SHA-256 of that file ("" or NULL: byte tokenizer); also
                                      compared on resume when the log has the attribute          */
    /* configuration (compared on resume) */
    const char *model_config_hash; /* e.g. "fnv1a64:" and 16 hex digits of config.json */
    const char *model_type, *tokenizer, *split, *short_books; /* short_books: "skip" | "truncate" */
    uint64_t tokens;               /* positions asked per book */
    uint64_t chunk;                /* positions per HDF5 chunk = per flush */
    size_t n_books;
    const char *const *book_ids;    /* [n_books] */
    const char *const *book_titles; /* [n_books] ("" if unknown) */
    const uint64_t *book_len;       /* [n_books] positions evaluated per book (<= tokens) */
    size_t n_runs;
    const rs_h5log_run_info *runs;  /* [n_runs] */
    size_t n_extra;                 /* further root attributes (rs_h5log_extra) */
    const rs_h5log_extra *extra;    /* [n_extra] */
    /* format version 2 (all optional: NULL / 0 leaves them out) */
    const char *model_config_hash_v1; /* "fnv1a64:<hex>" of config.json alone: what a version 1
                                         log recorded as model_config_hash; --resume of such a log
                                         compares this instead */
    size_t n_files;                   /* the model folder's files and digests (/provenance/files) */
    const rs_h5log_file_hash *files;  /* [n_files] */
    size_t n_provenance;              /* attributes of /provenance: host, cpu, blas, compiler, ... */
    const rs_h5log_extra *provenance; /* [n_provenance] (compare ignored) */
    const char *host;                 /* this invocation's host name (history) */
    size_t n_history;                 /* earlier invocations (set by --resume from the old log) */
    const rs_h5log_history *history;  /* [n_history]; this invocation is appended after them */
    size_t n_moe_layers;              /* MoE models: the layers whose routing each run records    */
    const int32_t *moe_layers;        /* [n_moe_layers] their model layer indices, ascending       */
} rs_h5log_meta;

/* Per-position values of one run for one chunk write, each [n]. */
typedef struct rs_h5log_run_chunk {
    const double *kl, *nll, *dp;
    const uint8_t *agree;
} rs_h5log_run_chunk;

/* An open log (opaque: the HDF5 handles stay inside the library). */
typedef struct rs_h5log rs_h5log;

/* Shape and progress of an open log (the accessors never fail on a valid handle; indices
 * must be < the counts). */
size_t rs_h5log_n_books(const rs_h5log *lg);
size_t rs_h5log_n_runs(const rs_h5log *lg);
uint64_t rs_h5log_tokens(const rs_h5log *lg);          /* positions asked per book */
uint64_t rs_h5log_chunk(const rs_h5log *lg);           /* positions per HDF5 chunk = per flush */
const char *rs_h5log_book_id(const rs_h5log *lg, size_t book);
uint64_t rs_h5log_book_len(const rs_h5log *lg, size_t book);  /* positions evaluated */
int64_t rs_h5log_completed(const rs_h5log *lg, size_t book);  /* committed positions */
const char *rs_h5log_policy(const rs_h5log *lg, size_t run);  /* canonical policy string */
uint64_t rs_h5log_window(const rs_h5log *lg, size_t run);

/*! rs_h5log_create() : build a new log for `meta` and place it at `path` (see the header
 *  comment). Without force an existing `path` (or "<path>.partial") is an error (RS_E_IO "...
 *  exists: use --force to replace it or --resume to continue it"); with force an existing
 *  regular `path` stays untouched until rs_h5log_finish: the new log lives at "<path>.partial"
 *  (replacing an earlier interrupted one) and rs_h5log_file_path says so. Anything but a regular
 *  file at either name is refused. @return RS_OK, RS_E_IO (exists, not a regular file, in use by
 *  another writer, unwritable folder, HDF5 failure), RS_E_INVAL, RS_E_NOMEM. */
rs_status rs_h5log_create(const char *path, const rs_h5log_meta *meta, int force, rs_h5log **out);

/*! rs_h5log_open() : open an existing log. writable != 0 for --resume (the log is rebuilt from
 *  its committed positions and replaces the old file atomically): `expect` (not NULL) must
 *  then match the stored configuration (model config hash, tokenizer and its file's SHA-256 when
 *  the log records one, split, short_books, tokens,
 *  chunk, books and their lengths, runs: policy, window, seed) or RS_E_INVAL names the first
 *  difference. When "<path>.partial" exists (an interrupted --force run) it is the log resumed,
 *  and rs_h5log_finish moves it to `path`. writable == 0: read-only, `expect` ignored. Every count
 *  and extent is validated (header comment). @return RS_OK, RS_E_IO (missing, not a regular
 *  file, in use), RS_E_FORMAT (not a replayssm log, unknown version, inconsistent or corrupted
 *  content), RS_E_INVAL, RS_E_NOMEM. */
rs_status rs_h5log_open(const char *path, int writable, const rs_h5log_meta *expect, rs_h5log **out);

/*! rs_h5log_write_chunk() : store positions [pos, pos + n) of `book` and commit them. pos must be
 *  the book's completed_positions (or, rewriting, any multiple of chunk below it), a multiple of
 *  chunk; n <= chunk, and n < chunk only for the book's last chunk. tokens, nll_ref, top1_ref
 *  are [n]; runs is [n_runs] (NULL allowed when n_runs == 0, a reference-only log). @return RS_OK, RS_E_INVAL, RS_E_IO (HDF5 failure, e.g. disk full:
 *  the positions committed before stay valid). */
rs_status rs_h5log_write_chunk(rs_h5log *lg, size_t book, uint64_t pos, size_t n,
                               const int32_t *next_token, const double *nll_ref,
                               const int32_t *top1_ref, const rs_h5log_run_chunk *runs);

/*! rs_h5log_set_nonfinite() : record the first non-finite position of run `run` in `book`, and
 *  where (layer, head; -1 if unknown). Flushed. */
rs_status rs_h5log_set_nonfinite(rs_h5log *lg, size_t run, size_t book, int64_t pos, int32_t layer,
                                 int32_t head);

/*! rs_h5log_get_nonfinite() : read it back (pos -1: none). */
rs_status rs_h5log_get_nonfinite(const rs_h5log *lg, size_t run, size_t book, int64_t *pos,
                                 int32_t *layer, int32_t *head);

/*! rs_h5log_set_route_diff() : MoE models: since book `book` began, at how many positions run `run`'s
 *  experts differed from the reference's (positions[i]) and how many of its experts were not the
 *  reference's (experts[i]), in MoE layer i of rs_h5log_moe_layer (both [n_moe_layers]); written
 *  before the chunk they count is committed (a crash between the two leaves them one chunk ahead
 *  of the commit record; --resume rewrites them). RS_E_INVAL on a log without MoE layers. */
rs_status rs_h5log_set_route_diff(rs_h5log *lg, size_t run, size_t book, const int64_t *positions,
                                  const int64_t *experts);

/*! rs_h5log_get_route_diff() : read them back; -1 where not recorded (a book completed by a
 *  version that did not count routing, then resumed). */
rs_status rs_h5log_get_route_diff(const rs_h5log *lg, size_t run, size_t book, int64_t *positions,
                                  int64_t *experts);

/*! rs_h5log_n_moe_layers() / rs_h5log_moe_layer() : the MoE layers a log records (0: none, a dense
 *  model or a log without routing counts) and the model layer index of the i-th. */
size_t rs_h5log_n_moe_layers(const rs_h5log *lg);
int32_t rs_h5log_moe_layer(const rs_h5log *lg, size_t i);

/*! rs_h5log_summarize() : summary of run `run` from its committed per-position arrays (read
 *  one book at a time). */
rs_status rs_h5log_summarize(const rs_h5log *lg, size_t run, rs_kl_summary *out);

/* The fp32 reference's NLL over a log's committed positions (bits per token = nats / ln 2;
 * with the byte tokenizer, bits per byte). */
typedef struct rs_h5log_ref_summary {
    size_t n;                                 /* committed positions, all books */
    double mean_nll;                          /* nats per token; NaN if n == 0 */
    double window_mean_nll[RS_KL_N_WINDOWS];  /* per position window (rs_kl_window_of); NaN if empty */
    size_t window_n[RS_KL_N_WINDOWS];
} rs_h5log_ref_summary;

/*! rs_h5log_reference_summary() : the reference's mean NLL, overall and per position window,
 *  from /reference/nll (read one book at a time). Works on every log, reference-only included. */
rs_status rs_h5log_reference_summary(const rs_h5log *lg, rs_h5log_ref_summary *out);

/*! rs_h5log_finish() : write the summaries ([n_runs]; NULL when n_runs == 0) as attributes of each run group, set root
 *  attributes end_time and status = "complete", flush; a --force run's "<path>.partial" then
 *  replaces `path` (atomic rename; refused if `path` became anything but a regular file). On
 *  failure the partial stays where rs_h5log_file_path says, resumable. */
rs_status rs_h5log_finish(rs_h5log *lg, const char *end_time, const rs_kl_summary *summaries);

/*! rs_h5log_read_row() : committed values of one dataset of one book: `name` is "kl", "nll",
 *  "dp" (run >= 0, doubles), "top1_agree" (run >= 0, uint8), "next_token" / "top1" (run < 0, int32),
 *  "nll" (run < 0: the reference, doubles). Reads positions [0, n) into buf (n <= the book's
 *  completed positions). */
rs_status rs_h5log_read_row(const rs_h5log *lg, long run, const char *name, size_t book, size_t n,
                            void *buf);

/*! rs_h5log_get_attr_string() : a string attribute of the root (obj "/") or of a run group
 *  ("/runs/run00") into buf. */
rs_status rs_h5log_get_attr_string(const rs_h5log *lg, const char *obj, const char *name, char *buf,
                                   size_t bufsize);

/*! rs_h5log_no_atexit() : switch off HDF5's atexit cleanup for this process. HDF5 1.10 crashes
 *  in that handler when a file's close failed (e.g. disk full), so a program that closes every
 *  log explicitly (the CLI) calls this once at start. */
void rs_h5log_no_atexit(void);

/*! rs_h5log_partial_path() : "<path>.partial" into buf (where a --force run builds its log
 *  until it completes). @return RS_OK, RS_E_INVAL (NULL or too long). */
rs_status rs_h5log_partial_path(const char *path, char *buf, size_t bufsize);

/*! rs_h5log_file_path() : where the open log's file is now: `path`, or "<path>.partial" for a
 *  --force run (or its --resume) until rs_h5log_finish has moved it. */
const char *rs_h5log_file_path(const rs_h5log *lg);

/*! rs_h5log_interrupt() : mark an unfinished log as stopped on request (a signal): root status
 *  = "interrupted", end_time, and the same in this invocation's history entry; flushed. The
 *  committed positions stay valid and --resume continues the log. */
rs_status rs_h5log_interrupt(rs_h5log *lg, const char *end_time);

/*! rs_h5log_history_count() / rs_h5log_get_history() : the invocations recorded in the log
 *  (/provenance/history; a version 1 log: one, from its root attributes). field is
 *  "command_line", "start_time", "end_time", "status" or "host". */
size_t rs_h5log_history_count(const rs_h5log *lg);
rs_status rs_h5log_get_history(const rs_h5log *lg, size_t i, const char *field, char *buf, size_t bufsize);

/*! rs_h5log_file_count() / rs_h5log_get_file() : the model files recorded with their digests
 *  (/provenance/files; none in a version 1 log). Strings point into the handle. */
size_t rs_h5log_file_count(const rs_h5log *lg);
rs_status rs_h5log_get_file(const rs_h5log *lg, size_t i, rs_h5log_file_hash *out);

/*! rs_h5log_read_files() : the recorded model files of the log at `path` (or of "<path>.partial"
 *  when that exists, the log --resume continues) without validating the rest, for the digest
 *  cache of --resume. *out / *n get a copy (free with rs_h5log_files_free); a missing or
 *  unreadable log gives n = 0 and RS_OK (the digests are then computed). */
rs_status rs_h5log_read_files(const char *path, rs_h5log_file_hash **out, size_t *n);
void rs_h5log_files_free(rs_h5log_file_hash *files, size_t n);

/*! rs_h5log_close() : flush and close; accepts NULL. */
rs_status rs_h5log_close(rs_h5log *lg);

#ifdef __cplusplus
}
#endif
#endif /* RS_H5LOG_H */
