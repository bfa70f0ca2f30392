/* rs_log_arith.h — a log's `arithmetic` root attribute: the part of the evaluator's arithmetic that
 * changes the numbers beyond the policies and `compute` (the CPU evaluator's GEMM and attention
 * summation). For CPU logs without it (written by older builds) it is derived from their `device`
 * line, so `--resume` and `replayssm merge` never continue or join logs of another arithmetic
 * (docs/evaluator.md "Resuming a log"). Pure string code, no HDF5. */
#ifndef RS_LOG_ARITH_H
#define RS_LOG_ARITH_H

#include <stddef.h>

/* what a log written before the CPU evaluator's double-summed default and the rs_mathf twins
 * (2026-12-01) gets: never equal to a value a current build writes */
#define RS_LOG_ARITH_CPU_OLD "cpu: before 2026-12-01 (fp32 GEMM and attention sums, libm exp)"

/* The arithmetic named by a scorer's device line (the log's `device` attribute) into buf[n]:
 * "cpu: gemm f64|sgemm|loop, attention f64|fp32" for a CPU line (RS_LOG_ARITH_CPU_OLD for a CPU
 * line that names no GEMM: written before 2026-12-01); returns 1 where it names one, 0 where the
 * line says nothing (NULL, or not a CPU line: a GPU log's `compute` covers its arithmetic). */
int rs_log_arith_from_device(const char *device, char *buf, size_t n);

#endif /* RS_LOG_ARITH_H */
