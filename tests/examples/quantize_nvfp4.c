/* quantize_nvfp4.c: quantize a float array to NVFP4 with stochastic rounding and back.
 * Core library only (libreplayssm-core). Exit status 0 when every check holds. */
#include <math.h>
#include <stdio.h>

#include "replayssm/replayssm.h"

#define N 4096     /* one tensor of 256 blocks of 16 elements */
#define SEEDS 64   /* independent SR draws for the unbiasedness check */

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, rs_last_error());
    return 1;
}

int main(void) {
    static float x[N], y[N], mean[N];
    for (size_t i = 0; i < N; i++) /* test data in [-1, 1): Philox words as uniforms */
        x[i] = (float)(rs_rand_u32(2024, 0, i) >> 8) / 8388608.0f - 1.0f;

    const char *name = "nvfp4-sr";
    rs_format fmt;
    rs_qtensor q = {0};
    if (rs_format_parse(name, &fmt) != RS_OK) return fail(name);
    if (rs_qtensor_alloc(&q, &fmt, N, N) != RS_OK) return fail("alloc");

    /* Bound: SR rounds x to one of its two neighbours on the E2M1 grid {0, .5, 1, 1.5, 2, 3, 4, 6}
     * times the block's decode scale u = e4m3(block scale) * S_dec, so |y - x| <= 2u (the widest
     * gap). Averaging SEEDS independent draws shrinks the error by about sqrt(SEEDS) = 8, because
     * SR is unbiased; round-to-nearest would not shrink it at all. */
    size_t outside = 0;
    double err1 = 0.0, errmean = 0.0;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        if (rs_quantize(&q, x, seed, 0) != RS_OK || rs_dequantize(&q, y) != RS_OK) return fail("quantize");
        for (size_t i = 0; i < N; i++) {
            float u = rs_e4m3_decode(q.block_scale[i / RS_NVFP4_BLOCK]) * q.tensor_scale_dec[0];
            outside += fabsf(y[i] - x[i]) > 2.0f * u;
            if (seed == 0) err1 += (double)(y[i] - x[i]) * (y[i] - x[i]);
            mean[i] += y[i] / SEEDS;
        }
    }
    for (size_t i = 0; i < N; i++) errmean += (double)(mean[i] - x[i]) * (mean[i] - x[i]);
    double rms1 = sqrt(err1 / N), rmsmean = sqrt(errmean / N);

    printf("%s: %d floats in %zu bytes (%.3f bits each)\n", name, N, rs_qtensor_bytes(&q),
           8.0 * rs_qtensor_bytes(&q) / N);
    printf("rms error: one draw %.4f, mean of %d draws %.4f; %zu of %d values outside |y - x| <= 2u\n",
           rms1, SEEDS, rmsmean, outside, N * SEEDS);
    int ok = outside == 0 && rms1 > 0.0 && rmsmean < rms1 / 4.0 &&
             rs_qtensor_bytes(&q) == (size_t)(rs_format_bytes_per_element(&fmt, N) * N); /* 4.5 bits + 4 B */
    rs_qtensor_free(&q);
    puts(ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
