/* theory.h — the parts of `replayssm theory` (private to eval/cli/): cmd_theory.c parses the options
 * and owns the output file; theory_print.c prints the tables C.1-C.6, whose numbers come from the
 * theory library (replayssm/theory/rs_theory_tables.h), and, when the output file is open
 * (h != NULL), writes their curves there (layout: docs/theory.md). The file is written only
 * through rs_h5file, whose errors are sticky: cmd_theory.c checks rs_h5file_close and reports the
 * first failure of any write. Each table returns 0, or 1 after a failure it reported. */
#ifndef RS_CLI_THEORY_H
#define RS_CLI_THEORY_H

#include <stddef.h>

#include "replayssm/eval/rs_h5file.h"   /* rs_h5file */
#include "replayssm/theory/rs_theory.h" /* rs_model_shape */

#define TH_MAX_MODELS 4 /* the built-in shapes (rs_theory_model_count) */

int rs_th_table_c1(const rs_model_shape **ms, size_t nm, rs_h5file *h);
int rs_th_table_c2(const rs_model_shape **ms, size_t nm, rs_h5file *h);
int rs_th_table_c3(const rs_model_shape **ms, size_t nm, unsigned L, rs_h5file *h);
int rs_th_table_c4(const rs_model_shape **ms, size_t nm);
int rs_th_table_c5(const rs_model_shape **ms, size_t nm, double T, double A, rs_h5file *h);
int rs_th_table_c6(unsigned L, size_t mc_steps, unsigned long long seed, rs_h5file *h);

#endif /* RS_CLI_THEORY_H */
