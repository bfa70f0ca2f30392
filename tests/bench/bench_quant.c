/* bench_quant.c — CPU throughput of the block quantizers (single thread).
 *
 * Usage: bench_quant [MiB = 64] [repetitions = 5]
 *
 * For each format: quantize (rs_quantize), dequantize (rs_dequantize) and the allocation-free
 * round trip (rs_quantize_roundtrip) over MiB of float32 Gaussian data, grouped as 128x128
 * tensors (E = 16384, one SSM state each). Throughput is GB/s of FP32 input (bytes of x
 * processed / time; for dequantize, the FP32 bytes produced), median of the repetitions.
 * Prints a Markdown table. Not a test: numbers depend on the machine and its load.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_philox.h"
#include "replayssm/quant/rs_qtensor.h"

#define TENSOR_EXTENT (128 * 128)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* splitmix64 + Box-Muller: deterministic Gaussian input */
static uint64_t sm64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    const size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 64;
    const int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (mib == 0 || reps <= 0 || reps > 100) {
        fprintf(stderr, "usage: %s [MiB > 0] [repetitions 1..100]\n", argv[0]);
        return 2;
    }
    size_t n = mib * 1024 * 1024 / 4;
    n -= n % TENSOR_EXTENT;
    if (n == 0) n = TENSOR_EXTENT;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint64_t s = 1;
    for (size_t i = 0; i < n; ++i) {
        const double u1 = ((double)(sm64(&s) >> 11) + 1.0) * 0x1.0p-53, u2 = (double)(sm64(&s) >> 11) * 0x1.0p-53;
        x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    static const char *names[] = {"fp32",    "fp16-rtn",     "fp16-sr",   "bf16-rtn", "bf16-sr",   "fp8-rtn",
                                  "fp8-sr",  "fp8-rtn+pow2", "nvfp4-rtn", "nvfp4-sr", "nvfp4-sr8", "nvfp4-rtn+floor"};
    const double gb = (double)n * 4.0 / 1e9;
    printf("CPU block-quantizer throughput: %zu MiB of FP32 (%zu elements, tensors of %d), single thread, "
           "median of %d; GB/s of FP32 data\n\n",
           n * 4 / (1024 * 1024), n, TENSOR_EXTENT, reps);
    printf("| format | bytes/elem | quantize GB/s | dequantize GB/s | round trip GB/s |\n");
    printf("|---|---:|---:|---:|---:|\n");
    for (size_t a = 0; a < sizeof names / sizeof names[0]; ++a) {
        rs_format f;
        rs_qtensor q;
        if (rs_format_parse(names[a], &f) != RS_OK || rs_qtensor_alloc(&q, &f, n, TENSOR_EXTENT) != RS_OK) {
            fprintf(stderr, "%s: %s\n", names[a], rs_last_error());
            return 1;
        }
        double tq[100], td[100], tr[100];
        for (int r = 0; r < reps; ++r) {
            double t0 = now_s();
            if (rs_quantize(&q, x, 7, (uint64_t)r) != RS_OK) goto fail;
            double t1 = now_s();
            if (rs_dequantize(&q, y) != RS_OK) goto fail;
            double t2 = now_s();
            if (rs_quantize_roundtrip(&f, x, n, TENSOR_EXTENT, 7, (uint64_t)r, y) != RS_OK) goto fail;
            double t3 = now_s();
            tq[r] = t1 - t0;
            td[r] = t2 - t1;
            tr[r] = t3 - t2;
        }
        printf("| %s | %.6g | %.2f | %.2f | %.2f |\n", names[a], rs_format_bytes_per_element(&f, TENSOR_EXTENT),
               gb / median(tq, reps), gb / median(td, reps), gb / median(tr, reps));
        fflush(stdout);
        rs_qtensor_free(&q);
        continue;
    fail:
        fprintf(stderr, "%s: %s\n", names[a], rs_last_error());
        return 1;
    }
    /* the SR random words: rs_rand_fill (lane-parallel blocks) against one scalar
     * rs_philox4x32_10 call per block of 4 words (what rs_rand_fill did before), same words */
    {
        uint32_t *w = (uint32_t *)y, *v = (uint32_t *)x;
        double tf[100], ts[100];
        int same = 1;
        for (int r = 0; r < reps; ++r) {
            double t0 = now_s();
            rs_rand_fill(7, (uint64_t)r, 0, n, w);
            double t1 = now_s();
            for (size_t i = 0; i + 4 <= n; i += 4) {
                const uint64_t blk = i >> 2;
                const uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)r, 0};
                const uint32_t key[2] = {7, 0};
                rs_philox4x32_10(ctr, key, v + i);
            }
            double t2 = now_s();
            tf[r] = t1 - t0;
            ts[r] = t2 - t1;
            same = same && memcmp(w, v, (n & ~(size_t)3) * 4) == 0;
        }
        const double mw = (double)n / 1e6;
        printf("\nPhilox4x32-10 words for SR: rs_rand_fill %.1f Mword/s, scalar block loop %.1f Mword/s (%.2fx), "
               "words %s\n", mw / median(tf, reps), mw / median(ts, reps), median(ts, reps) / median(tf, reps),
               same ? "identical" : "DIFFERENT");
        if (!same) return 1;
    }
    free(x);
    free(y);
    return 0;
}
