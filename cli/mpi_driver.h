/* mpi_driver.h — `mpirun replayssm kl|sweep ...` (cli/mpi_driver.c; docs/evaluator.md "Scale-out
 * with MPI"). Built only with MPI (RS_MPI, RS_HAVE_MPI); the only code of the project that calls MPI. */
#ifndef RS_MPI_DRIVER_H
#define RS_MPI_DRIVER_H

#include "replayssm/eval/rs_kleval.h"

/* rs_mpi_launched() : 1 when this process was started by an MPI launcher (mpirun / mpiexec /
 * srun with PMI or PMIx: their environment variables), 0 otherwise (a plain `replayssm kl` never
 * initialises MPI). */
int rs_mpi_launched(void);

/* rs_mpi_kl_evaluate() : the evaluation of `c` (as rs_kl_evaluate built it) spread over the ranks:
 * MPI_Init, work items (book, group of runs) handed out by rank 0, one shard log per item under
 * "<out>.shards/", merged by rank 0 into c->out_path, MPI_Finalize. cmd is "kl" or "sweep" (for
 * messages), quiet suppresses the progress lines. Returns the exit status (the same on every rank). */
int rs_mpi_kl_evaluate(const rs_kleval_config *c, const char *cmd, int quiet);

#endif /* RS_MPI_DRIVER_H */
