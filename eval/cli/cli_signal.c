/* cli_signal.c — SIGINT / SIGTERM during `replayssm kl` and `sweep` (rs_cli.h): the first signal
 * only sets a flag (async-signal-safe); the evaluator reads it between chunks (rs_kleval_config
 * cancel), finishes the chunk in flight, flushes and closes the log with status "interrupted",
 * and the command exits 128 + the signal (130 for SIGINT, 143 for SIGTERM) with a line saying
 * how to resume. The evaluator's other threads see the same flag: the model files' hashing
 * workers stop after their current block (rs_provenance.h), so a signal while a checkpoint is
 * hashed ends the command within milliseconds ("nothing was written"). The handler puts the
 * default action back (sigaction is async-signal-safe), so a second Ctrl-C ends the process at
 * once (the committed chunks are still valid). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "rs_cli.h"

static volatile sig_atomic_t g_stop = 0;

static void on_signal_(int sig)
{
    g_stop = sig;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl); /* memset is async-signal-safe since POSIX.1-2016 */
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
}

const volatile sig_atomic_t *rs_cli_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal_;
    sigemptyset(&sa.sa_mask);
    g_stop = 0;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return &g_stop;
}

int rs_cli_interrupted(const char *cmd, const char *out, FILE *f)
{
    const int sig = (int)g_stop;
    struct stat sb;
    if (out && lstat(out, &sb) != 0) { /* stopped while preparing (hashing, loading): nothing written */
        fprintf(f, "replayssm %s: interrupted by %s before %s was written; nothing was written\n", cmd,
                sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal", out);
        return 128 + (sig > 0 ? sig : SIGINT);
    }
    fprintf(f, "replayssm %s: interrupted by %s: %s keeps the committed positions (status interrupted); continue "
               "it with the same command and --resume\n",
            cmd, sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal", out ? out : "the log");
    return 128 + (sig > 0 ? sig : SIGINT);
}
