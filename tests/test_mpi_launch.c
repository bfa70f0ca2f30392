/* test_mpi_launch.c — the MPI launch checks of the CLI (eval/cli/mpi_launch.c): which environment says
 * "started by mpirun / srun, N ranks", and, in a build without MPI, that `replayssm kl` started as
 * one of several ranks refuses before writing anything (N copies would race for one --out). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/mpi_driver.h"
#include "rs_test_util.h"

static const char *const k_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                                     "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID"};

static int clear_(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_vars / sizeof k_vars[0]; i++) unsetenv(k_vars[i]);
    return 0;
}

static void test_no_launcher(void **state)
{
    (void)state;
    assert_int_equal(rs_mpi_launched(), 0);
    assert_int_equal(rs_mpi_launch_size(), 0);
    setenv("SLURM_STEP_NUM_TASKS", "4", 1); /* a Slurm step, but not inside one of its tasks */
    assert_int_equal(rs_mpi_launched(), 0);
    assert_int_equal(rs_mpi_launch_size(), 0);
}

static void test_each_launcher(void **state)
{
    (void)state;
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1); /* OpenMPI's mpirun */
    assert_int_equal(rs_mpi_launched(), 1);
    assert_int_equal(rs_mpi_launch_size(), 3);
    clear_(NULL);
    setenv("PMI_RANK", "0", 1); /* MPICH / Hydra, PMI-1 */
    setenv("PMI_SIZE", "2", 1);
    assert_int_equal(rs_mpi_launched(), 1);
    assert_int_equal(rs_mpi_launch_size(), 2);
    clear_(NULL);
    setenv("PMIX_RANK", "1", 1); /* PMIx (srun --mpi=pmix) names no size */
    assert_int_equal(rs_mpi_launched(), 1);
    assert_int_equal(rs_mpi_launch_size(), 0);
    clear_(NULL);
    setenv("SLURM_STEP_NUM_TASKS", "8", 1); /* srun without PMI: one task of 8 */
    setenv("SLURM_PROCID", "5", 1);
    assert_int_equal(rs_mpi_launched(), 1);
    assert_int_equal(rs_mpi_launch_size(), 8);
}

static void test_malformed_sizes(void **state)
{
    (void)state;
    const char *bad[] = {"", "0", "-2", "3x", "x", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("OMPI_COMM_WORLD_SIZE", bad[i], 1);
        assert_int_equal(rs_mpi_launch_size(), 0); /* unknown, not a wrong count */
        assert_int_equal(rs_mpi_launched(), 1);    /* the variable is there: a launcher started us */
    }
}

/* a CLI built without MPI, started as one of 3 ranks: exit 2, the message, no log */
static void test_cli_without_mpi_refuses(void **state)
{
    (void)state;
#if RS_TEST_CLI_HAS_MPI
    skip(); /* this build's CLI has the MPI driver: tests/mpi/test_mpi.sh runs it under mpirun */
#else
    char dir[] = "/tmp/rs_mpilaunch_XXXXXX", cmd[4096], log[600], out[600];
    assert_non_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/kl.h5", dir);
    snprintf(out, sizeof out, "%s/err.txt", dir);
    char model[1200], data[1200];
    rs_test_fixture_path(model, sizeof model, "models/gdn-tiny-random");
    rs_test_fixture_path(data, sizeof data, "pg19-mini");
    snprintf(cmd, sizeof cmd,
             "OMPI_COMM_WORLD_SIZE=3 '%s' kl --model '%s' --data '%s' --tokens 16 --quiet --out '%s' 2> '%s'",
             RS_CLI_PATH, model, data, log, out);
    const int rc = system(cmd);
    assert_true(WIFEXITED(rc));
    assert_int_equal(WEXITSTATUS(rc), 2);
    size_t n = 0;
    char *msg = (char *)rs_test_read_file(out, &n);
    assert_non_null(msg);
    msg = (char *)realloc(msg, n + 1);
    msg[n] = '\0';
    assert_non_null(strstr(msg, "one of 3 ranks"));
    assert_non_null(strstr(msg, "built without MPI"));
    free(msg);
    assert_int_not_equal(access(log, F_OK), 0); /* nothing written */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_no_launcher, clear_),
        cmocka_unit_test_setup(test_each_launcher, clear_),
        cmocka_unit_test_setup(test_malformed_sizes, clear_),
        cmocka_unit_test_setup(test_cli_without_mpi_refuses, clear_),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
