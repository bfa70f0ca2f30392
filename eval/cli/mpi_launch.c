/* mpi_launch.c — was this process started by an MPI launcher, and for how many ranks (mpi_driver.h)?
 * Read from the launchers' environment variables only, so it is built with and without MPI: a
 * replayssm built without MPI that mpirun starts N times must refuse (every copy would run the whole
 * job into the same --out) instead of racing N identical evaluations. */
#include "mpi_driver.h"

#include <errno.h>
#include <stdlib.h>

/* a positive decimal integer environment variable, else 0 */
static long env_count_(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    const long n = strtol(v, &end, 10);
    return errno == 0 && end && *end == '\0' && n > 0 ? n : 0;
}

int rs_mpi_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    /* a Slurm step of several tasks without PMI: MPI would see one rank per task (mpi_driver.c checks) */
    return env_count_("SLURM_STEP_NUM_TASKS") > 1 && getenv("SLURM_PROCID") != NULL;
}

long rs_mpi_launch_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const long n = env_count_(vars[i]);
        if (n > 0) return n;
    }
    return getenv("SLURM_PROCID") ? env_count_("SLURM_STEP_NUM_TASKS") : 0;
}
