/* bench_main.c — `replayssm bench` as a standalone program (bench_kernels): the same code
 * (eval/cli/cmd_bench.c) without the rest of the CLI, so it can be linked statically
 * (kernels/build_bench_static.sh) and carried to a GPU machine that lacks the CLI's libraries. */
#include <stdio.h>

#include "rs_cli.h"
#include "replayssm/common/rs_status.h"

int rs_cli_fail(const char *cmd, const char *what, int status)
{
    const char *msg = rs_last_error();
    fprintf(stderr, "replayssm %s: %s: %s%s%s\n", cmd, what, rs_strerror((rs_status)status), msg[0] ? ": " : "", msg);
    return 1;
}

int main(int argc, char **argv) { return rs_cmd_bench(argc, argv); }
