/* rs_cli.h — subcommands of the `replayssm` CLI. Each returns a process exit status
 * (0 ok, 1 runtime failure, 2 usage error) and prints its own --help. The CLI includes
 * only public library headers; library errors are shown with rs_last_error(). */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <signal.h>
#include <stdio.h>

#include "replayssm/eval/rs_h5log.h" /* defines: rs_h5log_ref_summary */

int rs_cmd_quant_error(int argc, char **argv); /* cmd_quant_error.c */
int rs_cmd_theory(int argc, char **argv);      /* cmd_theory.c */
int rs_cmd_bench(int argc, char **argv);       /* cmd_bench.c (GPU; RS_HAVE_CUDA) */
int rs_cmd_kl(int argc, char **argv);          /* cmd_kl.c: teacher-forced KL -> HDF5 (rs_kleval) */
int rs_cmd_sweep(int argc, char **argv);       /* cmd_sweep.c: formats x rounding x modes x windows */
int rs_cmd_merge(int argc, char **argv);       /* cmd_merge.c: KL logs into one (rs_h5log_merge) */
int rs_cmd_info(int argc, char **argv);        /* cmd_info.c: summary of a KL log or a model */
int rs_cmd_tokenize(int argc, char **argv);    /* cmd_tokenize.c: text -> ids (and back) of a model */

/* rs_cli_fail() : print "replayssm <cmd>: <what>: <rs_last_error()>" to stderr, return 1. */
int rs_cli_fail(const char *cmd, const char *what, int status);

/* rs_cli_print_reference() : the fp32 reference's NLL, bits per token and PPL, overall and per
 * position window (cmd_info.c; used by `kl` and `info`). */
#define RS_CLI_LN2 0.69314718055994530942 /* bits = nats / ln 2 */
void rs_cli_print_reference(const rs_h5log_ref_summary *rs, FILE *f);
/* rs_cli_print_window_header() : the position-window labels "0K-1K ... 64K-128K" and a newline. */
void rs_cli_print_window_header(FILE *f);

/* rs_cli_print_summary() : the summary of n_runs runs (legend, KL table, Δp / top-1 / PPL table,
 * with all_stats the low KL and the Δp quantiles, mean KL by window) and then the reference's
 * (ref may be NULL); `kl` / `sweep` at their end and `info LOG` print it (cli_summary.c). */
void rs_cli_print_summary(FILE *f, size_t n_runs, const char *const *policy, const size_t *window,
                          const rs_kl_summary *s, const rs_h5log_ref_summary *ref, int all_stats);

/* rs_cli_esc() : s made safe for a terminal into buf[n] (cli_print.c): control bytes, DEL,
 * C1 controls and invalid UTF-8 escaped as \xHH / \u00HH, "..." when buf is too small
 * (4 * strlen(s) + 1 always suffices). Returns buf. Every string read from a log or a model
 * folder, or quoted by a library message, is printed through it. */
const char *rs_cli_esc(const char *s, char *buf, size_t n);

/* rs_cli_print_nonfinite() : for run `run` of log lg (NULL: the summary alone), one line per book
 * that went non-finite, "run R (POLICY, L=W) book B: non-finite at position P (layer l, head h);
 * summary over P finite positions", and with several books (or no per-book record) the run's
 * total "summary over N finite positions ... (M non-finite positions left out)". `kl` and `info`
 * print it before their tables. Returns the lines printed (0: the run stayed finite). */
size_t rs_cli_print_nonfinite(FILE *f, const rs_h5log *lg, size_t run, const char *policy, size_t window,
                              const rs_kl_summary *s);

/* cli_signal.c: rs_cli_signals_install() makes SIGINT / SIGTERM set the returned flag (give
 * it to rs_kleval_config.cancel; a second signal ends the process at once); rs_cli_interrupted()
 * prints the one-line "interrupted ... --resume" message to f and returns the exit status
 * 128 + signal (130 SIGINT, 143 SIGTERM). */
const volatile sig_atomic_t *rs_cli_signals_install(void);
int rs_cli_interrupted(const char *cmd, const char *out, FILE *f);

#endif
