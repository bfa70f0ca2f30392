/* mpi_driver.h — `mpirun replayssm kl|sweep ...` (eval/cli/mpi_driver.c; docs/evaluator.md "Scale-out
 * with MPI"). rs_mpi_kl_evaluate is built only with MPI (RS_MPI, RS_HAVE_MPI; the only code of the project that calls
 * MPI); the launch checks below are built always. */
#ifndef RS_MPI_DRIVER_H
#define RS_MPI_DRIVER_H

#include "replayssm/eval/rs_kleval.h"

/* rs_mpi_launched() : 1 when this process was started by an MPI launcher (mpirun / mpiexec /
 * srun with PMI or PMIx: their environment variables), 0 otherwise (a plain `replayssm kl` never
 * initialises MPI). */
int rs_mpi_launched(void);

/* rs_mpi_launch_size() : the number of ranks the launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
 * MPI_LOCALNRANKS, or SLURM_STEP_NUM_TASKS inside a Slurm task), 0 when none says so. Both
 * functions live in eval/cli/mpi_launch.c, built with and without MPI. */
long rs_mpi_launch_size(void);

/* rs_mpi_kl_evaluate() : the evaluation of `c` (as rs_kl_evaluate built it) spread over the ranks:
 * MPI_Init, work items (book, group of runs) handed out by rank 0, one shard log per item under
 * "<out>.shards/", merged by rank 0 into c->out_path, MPI_Finalize. cmd is "kl" or "sweep" (for
 * messages), quiet suppresses the progress lines. Returns the exit status (the same on every rank). */
int rs_mpi_kl_evaluate(const rs_kleval_config *c, const char *cmd, int quiet);

#endif /* RS_MPI_DRIVER_H */
