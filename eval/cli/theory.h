/* theory.h — the parts of `replayssm theory` (private to eval/cli/): cmd_theory.c parses the options
 * and owns the output file, theory_tables.c prints C.1-C.5, theory_c6.c runs C.6 (closed forms
 * next to the Monte Carlo). Each table prints to stdout and, when the output file is open
 * (h != NULL), writes its curves there (layout: docs/theory.md). The file is written only
 * through rs_h5file, whose errors are sticky: cmd_theory.c checks rs_h5file_close and reports
 * the first failure of any write. */
#ifndef RS_CLI_THEORY_H
#define RS_CLI_THEORY_H

#include <stddef.h>

#include "replayssm/eval/rs_h5file.h"    /* rs_h5file */
#include "replayssm/theory/rs_theory.h"  /* rs_model_shape */

#define TH_MAX_OBS 64    /* observation steps per Monte Carlo curve */
#define TH_MAX_L 128u    /* curves over L = 1 .. TH_MAX_L */

/* rs_th_vec() : 1-D double dataset `path` with a `units` attribute (nothing when h == NULL). */
void rs_th_vec(rs_h5file *h, const char *path, const double *v, size_t n, const char *units);

void rs_th_table_c1(const rs_model_shape **ms, size_t nm, rs_h5file *h);
void rs_th_table_c2(const rs_model_shape **ms, size_t nm, rs_h5file *h);
void rs_th_table_c3(const rs_model_shape **ms, size_t nm, unsigned Lw, rs_h5file *h);
void rs_th_table_c4(const rs_model_shape **ms, size_t nm);
void rs_th_table_c5(const rs_model_shape **ms, size_t nm, double T, double A, rs_h5file *h);
/* returns the exit status (0, or 1 after a failed Monte Carlo, reported) */
int rs_th_table_c6(unsigned L, size_t mc_steps, unsigned long long seed, rs_h5file *h);

#endif /* RS_CLI_THEORY_H */
