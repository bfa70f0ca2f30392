/* rs_h5log_merge.h — several KL logs of one configuration into one (docs/evaluator.md, "Scale-out
 * with MPI"; `replayssm merge`, and the MPI driver's final step over its per-item shards).
 *
 * The inputs are logs written by `kl` / `sweep` (or by this function) with the same
 * configuration: model (model_config_hash, model_type), tokenizer (and its file's SHA-256), input
 * kind and input files' digests, split, short_books, tokens, chunk, device kind and compute mode.
 * Each may hold any subset of the books and of the runs; the output holds the union:
 *   - books in the order of their first appearance (input order, then each input's book order),
 *     runs likewise, a run being (policy, window, seed);
 *   - every (book, run) must come from at least one input that has both, and every book from
 *     at least one input (its reference): a hole is refused, the log format has no "missing" cell;
 *   - a book or a (book, run) found in several inputs must agree bit for bit (next tokens,
 *     reference NLL and top-1; KL, NLL, dp, agreement; book length): logs computed differently
 *     (another model with the same config.json, other tokens, other arithmetic) are refused;
 *   - every input must be complete (every book's positions committed; `--resume` it first).
 * The merged log is written through rs_h5log_create / rs_h5log_write_chunk like an evaluation's,
 * its summaries computed by rs_h5log_summarize from the merged arrays (so they equal a single
 * run's over the same books), and finished with rs_h5log_finish. Root attributes come from the
 * first input (start_time: the earliest input's; command_line: opts->command_line if given),
 * further root and run attributes the first input has and the writer does not set are copied.
 * On any refusal or failure nothing is left at out_path (an existing file stays as it was).
 */
#ifndef RS_H5LOG_MERGE_H
#define RS_H5LOG_MERGE_H

#include <stddef.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rs_h5log_merge_opts {
    int force;                /* replace an existing out_path (atomically, once the merge succeeded) */
    const char *command_line; /* root attribute command_line of the output; NULL: the first input's */
    const char *end_time;     /* root attribute end_time; NULL: now (ISO 8601 UTC) */
} rs_h5log_merge_opts;

/*! rs_h5log_merge() : merge logs inputs[0..n) into a new log at out_path (see the header comment).
 *  opts may be NULL (no force, the first input's command line, now). @return RS_OK; RS_E_INVAL with
 *  a message naming the input and what differs (configuration, a hole, a disagreement, an
 *  incomplete input); RS_E_IO / RS_E_FORMAT of a failed open, read or write; RS_E_NOMEM. */
rs_status rs_h5log_merge(const char *const *inputs, size_t n, const char *out_path, const rs_h5log_merge_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* RS_H5LOG_MERGE_H */
