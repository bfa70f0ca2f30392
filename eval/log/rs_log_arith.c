/* rs_log_arith.c — the `arithmetic` a CPU device line names (rs_log_arith.h). The CPU scorer's
 * line (eval/kleval/rs_scorer_cpu.c) is "cpu: N threads[, S streams], GEMM <g>, attention <a>" with <g> one
 * of "f64", "RS_CPU_GEMM=loop (fp32)", "RS_CPU_GEMM=sgemm (fp32)" and <a> "f64" or
 * "RS_CPU_ATTN=fp32"; the thread and stream counts do not change the numbers, so they are left out. */
#include "rs_log_arith.h"

#include <stdio.h>
#include <string.h>

int rs_log_arith_from_device(const char *device, char *buf, size_t n)
{
    if (n) buf[0] = '\0';
    if (!device || strncmp(device, "cpu:", 4)) return 0;
    const char *g = strstr(device, ", GEMM ");
    if (!g) {
        snprintf(buf, n, "%s", RS_LOG_ARITH_CPU_OLD);
        return 1;
    }
    g += strlen(", GEMM ");
    const char *gemm = !strncmp(g, "RS_CPU_GEMM=loop", 16) ? "loop" : !strncmp(g, "RS_CPU_GEMM=sgemm", 17) ? "sgemm" : "f64";
    const char *a = strstr(g, ", attention ");
    const char *attn = a && !strncmp(a + strlen(", attention "), "RS_CPU_ATTN=fp32", 16) ? "fp32" : "f64";
    snprintf(buf, n, "cpu: gemm %s, attention %s", gemm, attn);
    return 1;
}
