/* main.c — the `replayssm` command line: dispatches to one subcommand per file in
 * eval/cli/. The CLI is kept apart from the library: it only includes public headers,
 * prints what the library returns, and decides the exit status. */
#include <stdio.h>
#include <string.h>

#include "rs_cli.h"    /* rs_cmd_* subcommands */
#include "replayssm/quant/rs_status.h" /* rs_last_error, rs_strerror */

#ifndef RS_GIT_COMMIT
#define RS_GIT_COMMIT "unknown"
#endif

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} rs_cli_command;

static const rs_cli_command k_commands[] = {
    {"kl", rs_cmd_kl, "teacher-forced KL(p_fp32 || p_policy) of PG-19 books -> HDF5"},
    {"sweep", rs_cmd_sweep, "formats x rounding x modes x windows in one KL log"},
    {"merge", rs_cmd_merge, "KL logs of one configuration (job arrays, half-sweeps) into one log"},
    {"info", rs_cmd_info, "summary of a KL log or a model directory"},
    {"tokenize", rs_cmd_tokenize, "a model's token ids of text files (or --decode ids to bytes)"},
    {"quant-error", rs_cmd_quant_error, "quantize synthetic or HDF5 matrices and report the error of each format"},
    {"bench", rs_cmd_bench, "GPU decode-kernel benchmark sweeps -> HDF5 (CUDA builds, needs a GPU)"},
    {"theory", rs_cmd_theory, "Appendix C: intensities, traffic, optimal window, error-growth curves (HDF5)"},
};

static void usage(FILE *out)
{
    fprintf(out,
            "replayssm %s (git %s) — low-precision SSM state research toolkit\n\n"
            "usage: replayssm <command> [options]\n"
            "       replayssm <command> --help\n\n"
            "commands:\n",
            RS_VERSION_STRING, RS_GIT_COMMIT);
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; ++i)
        fprintf(out, "  %-12s %s\n", k_commands[i].name, k_commands[i].summary);
    fprintf(out, "\noptions:\n  -h, --help     this text\n  -V, --version  print the version\n");
}

int rs_cli_fail(const char *cmd, const char *what, int status)
{
    const char *msg = rs_last_error(); /* may quote a hostile file: escaped for the terminal */
    char esc[4 * 1024 + 1];
    fprintf(stderr, "replayssm %s: %s: %s%s%s\n", cmd, what, rs_strerror((rs_status)status),
            msg[0] ? ": " : "", rs_cli_esc(msg, esc, sizeof esc));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        printf("replayssm %s (git %s)\n", RS_VERSION_STRING, RS_GIT_COMMIT);
        return 0;
    }
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; ++i)
        if (!strcmp(argv[1], k_commands[i].name)) return k_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "replayssm: unknown command '%s' (see 'replayssm --help')\n", argv[1]);
    return 2;
}
