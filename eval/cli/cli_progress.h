/* cli_progress.h — the progress report of `kl` / `sweep` on stderr, from the evaluator's
 * PROGRESS events (replayssm/eval/rs_kleval.h), in cli_progress.c:
 *   - stderr a terminal: one line redrawn in place (at most twice a second), labelled and as wide
 *     as the terminal (TIOCGWINSZ, else $COLUMNS, else 80): book, position, tok/s, ETA and the
 *     running mean KL of every run, the policy names abbreviated (then run numbers "#r", with a
 *     legend "#r = policy" printed once above the line, then "+N more") until the line fits;
 *   - stderr not a terminal (a batch job, nohup, a file): one plain self-contained line every
 *     `every` seconds ("replayssm kl: progress: ..."), and a last one when the evaluation ends;
 *   - quiet: nothing.
 * The ETA comes from the measured cost per position, fitted as a line in the position within the
 * book (attention makes a position's cost grow with its index) over the recent chunks, and
 * integrated over the positions left (rs_cli_progress_eta). */
#ifndef RS_CLI_PROGRESS_H
#define RS_CLI_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include "replayssm/eval/rs_kleval.h"

#define RS_CLI_PROGRESS_SAMPLES 32 /* chunks in the cost fit */
#define RS_CLI_PROGRESS_MAX_RUNS 64

typedef struct rs_cli_progress {
    const char *cmd;
    const char *const *policy; /* [n_runs] canonical policy strings */
    const size_t *window;      /* [n_runs] */
    size_t n_runs;
    int mode;      /* 0 off, 1 terminal line, 2 plain lines */
    double every;  /* plain: seconds between lines */
    int drawn;     /* terminal: a line is on the screen */
    int legend;    /* terminal: the run-number legend was printed */
    double last_print;
    /* the cost fit: (mid position of a chunk within its book, seconds per position) */
    double pos_s[RS_CLI_PROGRESS_SAMPLES], cost_s[RS_CLI_PROGRESS_SAMPLES];
    size_t n_samples, next_sample;
    double last_t;
    size_t last_done;
    int have_last;
    /* the last event, for the final plain line */
    rs_kleval_event last;
    char last_id[256];
    double means[RS_CLI_PROGRESS_MAX_RUNS];
    int last_printed;
} rs_cli_progress;

/* rs_cli_progress_init() : mode from quiet and isatty(2); every: plain-line interval (s). */
void rs_cli_progress_init(rs_cli_progress *p, const char *cmd, const char *const *policy, const size_t *window,
                          size_t n_runs, int quiet, double every);
/* rs_cli_progress_event() : one PROGRESS event (other kinds are ignored). */
void rs_cli_progress_event(rs_cli_progress *p, const rs_kleval_event *e);
/* rs_cli_progress_end() : end the terminal line; the last plain line if not printed yet. */
void rs_cli_progress_end(rs_cli_progress *p);

/* rs_cli_progress_eta() : seconds left for the positions after `position` of a book of
 * `positions`, and `rest` more positions in later books of that length, at the cost per position
 * c(t) = a + b t fitted to the samples (b >= 0; with fewer than 3 samples, or a fit that
 * decreases, the mean cost). Negative when there is nothing to estimate from. */
double rs_cli_progress_eta(const rs_cli_progress *p, size_t position, size_t positions, size_t rest);

#endif /* RS_CLI_PROGRESS_H */
