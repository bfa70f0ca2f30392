/* bench_attention.c — CPU attention at long context: the backend op (blocked over query rows
 * and key tiles) against the row-at-a-time loop it replaced, on one chunk of T queries at
 * n_past = 4K .. 128K cached positions. Outputs are compared bitwise (they must be equal).
 *
 * Usage: bench_attention [threads (2)] [max_n_past (131072)]
 * Shape: H = 4 query heads, Hkv = 2 KV heads, head_dim 64 (both bundled models), T = 64.
 * Prints ms per chunk and chunk positions/s of one attention layer of one run, for both.
 * Not a test: numbers depend on the machine and its load.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/rs_backend.h"
#include "model/rs_layers.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float dot8_(const float *a, const float *b, size_t n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* the baseline kernel: one (t, h) task at a time over the whole cache */
static void old_attention_(const rs_attn_args *a, int nt)
{
    const size_t rep = a->H / a->Hkv, hd = a->hd;
    long ntask = (long)(a->T * a->H);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (long task = 0; task < ntask; task++) {
        const size_t t = (size_t)task / a->H, h = (size_t)task % a->H, g = h / rep;
        const size_t n = a->n_past + t + 1;
        const float *q = a->Q + t * a->ldq + h * a->q_hstride;
        const float *Kh = a->Kc + g * a->cap * hd, *Vh = a->Vc + g * a->cap * hd;
        float *s = a->scratch + (size_t)omp_get_thread_num() * a->cap;
        float *o = a->O + t * a->ldo + h * hd;
        for (size_t j = 0; j < n; j++) s[j] = dot8_(q, Kh + j * hd, hd) * a->scale;
        rs_softmax_inplace(s, n);
        for (size_t d = 0; d < hd; d++) o[d] = 0.0f;
        for (size_t j = 0; j < n; j++)
            for (size_t d = 0; d < hd; d++) o[d] += s[j] * Vh[j * hd + d];
    }
}

int main(int argc, char **argv)
{
    const int nt = argc > 1 ? atoi(argv[1]) : 2;
    const size_t maxn = argc > 2 ? (size_t)atol(argv[2]) : 131072;
    const size_t H = 4, Hkv = 2, hd = 64, T = 64, cap = maxn + T;
    float *Q = malloc(T * H * hd * sizeof(float)), *Kc = malloc(Hkv * cap * hd * sizeof(float));
    float *Vc = malloc(Hkv * cap * hd * sizeof(float)), *O1 = malloc(T * H * hd * sizeof(float));
    float *O2 = malloc(T * H * hd * sizeof(float));
    float *scratch = malloc((size_t)nt * RS_ATTN_BLOCK_ROWS * cap * sizeof(float));
    rs_backend *be = NULL;
    if (!Q || !Kc || !Vc || !O1 || !O2 || !scratch || rs_backend_cpu_create(nt, &be) != RS_OK) {
        fprintf(stderr, "bench_attention: out of memory\n");
        return 1;
    }
    uint64_t s = 1;
    for (size_t i = 0; i < Hkv * cap * hd; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        Kc[i] = (float)((double)(s >> 40) / 16777216.0 - 0.5);
        Vc[i] = (float)((double)((s >> 16) & 0xFFFFFF) / 16777216.0 - 0.5);
    }
    for (size_t i = 0; i < T * H * hd; i++) Q[i] = Kc[i * 7 % (Hkv * cap * hd)] * 4.0f;
    printf("| n_past | old ms/chunk | new ms/chunk | old pos/s | new pos/s | speed-up | identical |\n");
    printf("|---:|---:|---:|---:|---:|---:|:---:|\n");
    for (size_t n_past = 4096; n_past <= maxn; n_past *= 2) {
        rs_attn_args a = {T, n_past, H, Hkv, hd, Q, H * hd, hd, Kc, Vc, cap, 0.125f, O1, H * hd, scratch,
                          RS_ATTN_BLOCK_ROWS};
        double t0 = now_s();
        if (be->ops->attention(be, &a) != RS_OK) return 1;
        const double tn = now_s() - t0;
        a.O = O2;
        t0 = now_s();
        old_attention_(&a, nt);
        const double to = now_s() - t0;
        const int same = memcmp(O1, O2, T * H * hd * sizeof(float)) == 0;
        printf("| %zu | %.1f | %.1f | %.0f | %.0f | %.2fx | %s |\n", n_past, 1e3 * to, 1e3 * tn, (double)T / to,
               (double)T / tn, to / tn, same ? "yes" : "NO");
        fflush(stdout);
    }
    rs_backend_destroy(be);
    free(Q), free(Kc), free(Vc), free(O1), free(O2), free(scratch);
    return 0;
}
