/* test_link_blas.c — regression: the CBLAS symbols must come from OpenBLAS.
 *
 * GSL's CMake target GSL::gsl links GSL's reference gslcblas; listed before OpenBLAS it won
 * the dynamic symbol lookup, and every GEMM of the model forward ran on the unoptimised
 * reference (measured: `replayssm kl` 1.2-2.1x slower). The build now links libgsl without
 * gslcblas; this test fails if cblas_sgemm resolves anywhere but libopenblas. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cblas.h>
#include <cmocka.h>

static void test_sgemm_is_openblas(void **state)
{
    (void)state;
    Dl_info info;
    memset(&info, 0, sizeof info);
    /* dladdr takes an object pointer; POSIX guarantees function pointers convert (memcpy
     * avoids the -Wpedantic diagnostic for the ISO C cast) */
    void (*fn)(void) = (void (*)(void))&cblas_sgemm;
    void *addr;
    memcpy(&addr, &fn, sizeof addr);
    assert_true(dladdr(addr, &info) != 0);
    assert_non_null(info.dli_fname);
    print_message("cblas_sgemm from %s\n", info.dli_fname);
    assert_non_null(strstr(info.dli_fname, "openblas"));
    /* and it computes: [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50] */
    const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    float c[4] = {0};
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    assert_true(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sgemm_is_openblas)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
