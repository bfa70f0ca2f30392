/* rs_h5log_impl.h — the log handle's layout and the functions the rs_h5log*.c files share
 * (private to eval/). One file per job: rs_h5log_create.c (new logs and the placement rules),
 * rs_h5log_skeleton.c (the layout of a new file), rs_h5log_open.c (reading a log, validated, and
 * --resume), rs_h5log_write.c (chunks, commit record, finish), rs_h5log_read.c (rows, summaries,
 * accessors). The hid_t helpers are rs_h5attr.h, the file placement rs_h5place.h. */
#ifndef RS_H5LOG_IMPL_H
#define RS_H5LOG_IMPL_H

#include <hdf5.h>

#include "replayssm/eval/rs_h5log.h"

/* the largest log a reader opens (rs_input_check's cap): 1 TiB */
#define RS_H5LOG_MAX_FILE_BYTES ((uint64_t)1 << 40)

struct rs_h5log {
    hid_t file;
    int writable;
    size_t n_books, n_runs;
    uint64_t tokens, chunk;
    uint64_t *book_len;  /* [n_books] */
    int64_t *completed;  /* [n_books] committed positions (mirror of /books/completed_positions) */
    char **book_ids;     /* [n_books] */
    char **policies;     /* [n_runs] */
    uint64_t *windows;   /* [n_runs] */
    uint64_t width;      /* current extent of the position dimension */
    size_t n_moe;        /* MoE layers with routing counts (/runs/runNN/moe_layer); 0: none */
    int32_t *moe_layers; /* [n_moe] their model layer indices */
    char *path;          /* where the file is now */
    char *final_path;    /* where rs_h5log_finish moves it (a --force run's "<out>.partial"); NULL: in place */
    /* /provenance (rs_h5log_prov.c) */
    size_t n_hist;
    char *(*hist)[5];    /* [n_hist] command_line, start_time, end_time, status, host */
    size_t n_files;
    rs_h5log_file_hash *files; /* [n_files] (strings owned) */
};

/* the per-position datasets of the reference, and of each run group (/runs/runNN/<name>) */
extern const char *const rs_h5log_ref_ds_[3];
extern const char *const rs_h5log_run_ds_[4];

/* rs_h5log_alloc_() : a handle for n_books x n_runs (both within the RS_H5LOG_MAX_* bounds),
 * file -1, every array zeroed. rs_h5log_free_() frees it without touching the file. */
rs_status rs_h5log_alloc_(size_t n_books, size_t n_runs, rs_h5log **out);
void rs_h5log_free_(rs_h5log *lg);

/* rs_h5log_set_path_() : replace lg->path (or lg->final_path when final != 0) by a copy of p
 * (NULL clears). */
rs_status rs_h5log_set_path_(rs_h5log *lg, int final, const char *p);

/* rs_h5log_check_meta_() : a description a log can be built from (and read back: the counts
 * within the RS_H5LOG_MAX_* bounds). */
rs_status rs_h5log_check_meta_(const rs_h5log_meta *m);

/* rs_h5log_command_of_() : the replayssm command that wrote a log, from its command line
 * ("replayssm kl ..." -> "kl"; "" when the line does not say) into buf[n]. A log records it as
 * the root attribute `command`, so --resume can refuse a "<out>.partial" left by another command
 * (an interrupted `merge --force` is not a KL run's partial). */
void rs_h5log_command_of_(const char *command_line, char *buf, size_t n);

/* rs_h5log_write_skeleton_() : every group, dataset and root attribute of a new log. */
rs_status rs_h5log_write_skeleton_(hid_t f, const rs_h5log_meta *m);

/* rs_h5log_width_of_() : the position extent of a new log (the longest book, at least 1). */
hsize_t rs_h5log_width_of_(const rs_h5log_meta *m);

/* rs_h5log_write_xr_() (rs_h5log_xr.c) : the root-level netCDF coordinates (book, position, run,
 * window, seed) and the virtual (run, book, position) variables over the run groups. */
rs_status rs_h5log_write_xr_(hid_t f, const rs_h5log_meta *m);

/* rs_h5log_write_prov_() (rs_h5log_prov.c) : /provenance: its attributes, the model files'
 * digests, the history (m->history, then this invocation, status "running"). */
rs_status rs_h5log_write_prov_(hid_t f, const rs_h5log_meta *m);

/* rs_h5log_load_prov_() (rs_h5log_prov.c) : the history and file digests of an opened log into
 * the handle (version 1: one history entry from the root attributes, no files); validated. */
rs_status rs_h5log_load_prov_(rs_h5log *lg, uint64_t version);

/* rs_h5log_free_prov_() : release what rs_h5log_load_prov_ loaded. */
void rs_h5log_free_prov_(rs_h5log *lg);

/* rs_h5log_end_history_() (rs_h5log_prov.c) : this invocation's history entry (the last) gets
 * end_time and status. */
rs_status rs_h5log_end_history_(rs_h5log *lg, const char *end_time, const char *status);

/* rs_h5log_build_() : a new log for `meta` at tmp ("<out>.tmp.<pid>", replaced if it is this
 * process's own leftover), skeleton written and flushed, opened writable; the caller places it.
 * On failure nothing is left at tmp. */
rs_status rs_h5log_build_(const char *tmp, const rs_h5log_meta *meta, rs_h5log **out);

/* rs_h5log_discard_() : close a handle whose file is not to be kept and unlink it. */
void rs_h5log_discard_(rs_h5log *lg);

/* rs_h5log_open_valid_() : open `path` read-only and validate every count, extent and type
 * against the file's real content (docs/hdf5-layout.md "Reading untrusted logs"); with expect
 * != NULL also compare the configuration (--resume). */
rs_status rs_h5log_open_valid_(const char *path, const rs_h5log_meta *expect, rs_h5log **out);

/* rs_h5log_copy_committed_() : every committed position (and non-finite record) of src into dst. */
rs_status rs_h5log_copy_committed_(const rs_h5log *src, rs_h5log *dst);

/* rs_h5log_flush_() : H5Fflush with the message set. */
rs_status rs_h5log_flush_(rs_h5log *lg);

#endif /* RS_H5LOG_IMPL_H */
