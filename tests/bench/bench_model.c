/* bench_model.c — CPU throughput of the teacher-forced hybrid forward (eval/model).
 *
 * Usage: bench_model [model_dir ...]   (default: the two committed fixture models)
 * Environment: RS_BENCH_TOKENS (8192), RS_BENCH_CHUNK (64), RS_BENCH_THREADS (2).
 *
 * For each model: one run (fp32) and 1 + 4 lockstep runs (fp32 reference + shared:fp32,
 * conv:bf16-rtn, shared:fp8-rtn, split:nvfp4-rtn/fp32; window 16) over the same random byte
 * tokens, chunks of C. Reports wall seconds and tokens/s of the stream (positions per second,
 * all runs advancing together) and run-tokens/s (stream tokens/s x runs). The KV caches are
 * sized for the whole stream; logits exist for one chunk only. Prints a Markdown table.
 * Not a test: numbers depend on the machine and its load.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/rs_backend.h"
#include "replayssm/eval/rs_model.h"
#include "model/rs_runner.h"

#ifndef RS_BENCH_FIXTURES
#define RS_BENCH_FIXTURES "tests/fixtures/models"
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t env_size_(const char *name, size_t dflt)
{
    const char *s = getenv(name);
    return (s && atol(s) > 0) ? (size_t)atol(s) : dflt;
}

/* one timed pass: returns seconds, or a negative value on error (message printed) */
static double pass_(const rs_model *m, rs_backend *be, const rs_run_spec *runs, size_t R,
                    const int32_t *tok, size_t T, size_t C, double *checksum)
{
    rs_runner_config rc = rs_runner_config_default();
    rc.n_runs = R;
    rc.runs = runs;
    rc.chunk = C;
    rc.max_tokens = T;
    rs_runner *r = NULL;
    if (rs_runner_create(m, be, &rc, &r) != RS_OK) {
        fprintf(stderr, "bench_model: %s\n", rs_last_error());
        return -1.0;
    }
    const size_t V = (size_t)m->cfg.vocab;
    double cs = 0.0;
    const double t0 = now_s();
    for (size_t p = 0; p < T; p += C) {
        const size_t n = p + C <= T ? C : T - p;
        if (rs_runner_step(r, tok + p, n) != RS_OK) {
            fprintf(stderr, "bench_model: %s\n", rs_last_error());
            rs_runner_free(r);
            return -1.0;
        }
        cs += rs_runner_logits(r, R - 1)[(n - 1) * V]; /* keep the work observable */
    }
    const double dt = now_s() - t0;
    *checksum = cs;
    rs_runner_free(r);
    return dt;
}

int main(int argc, char **argv)
{
    const size_t T = env_size_("RS_BENCH_TOKENS", 8192), C = env_size_("RS_BENCH_CHUNK", 64);
    const int threads = (int)env_size_("RS_BENCH_THREADS", 2);
    const char *dflt[] = {RS_BENCH_FIXTURES "/gdn-tiny-random", RS_BENCH_FIXTURES "/mamba2-tiny-random"};
    const char **dirs = argc > 1 ? (const char **)(argv + 1) : dflt;
    const int ndirs = argc > 1 ? argc - 1 : 2;
    const char *names[5] = {"fp32", "shared:fp32", "conv:bf16-rtn", "shared:fp8-rtn", "split:nvfp4-rtn/fp32"};
    rs_run_spec pols[5]; /* window 16, seed 1 */
    for (int i = 0; i < 5; i++)
        if (rs_run_spec_parse(names[i], "16", 1, &pols[i]) != RS_OK) {
            fprintf(stderr, "bench_model: %s\n", rs_last_error());
            return 1;
        }
    rs_backend *be = NULL;
    if (rs_backend_cpu_create(threads, &be) != RS_OK) return 1;
    int32_t *tok = (int32_t *)malloc(T * sizeof(int32_t));
    uint64_t s = 12345;
    printf("| model | layers | runs | chunk | tokens | threads | seconds | stream tok/s | run-tok/s |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (int i = 0; i < ndirs; i++) {
        rs_model m;
        if (rs_model_load(dirs[i], &m) != RS_OK) {
            fprintf(stderr, "bench_model: %s\n", rs_last_error());
            rc = 1;
            continue;
        }
        for (size_t t = 0; t < T; t++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            tok[t] = (int32_t)((s >> 33) % (uint64_t)m.cfg.vocab);
        }
        char layers[64];
        if (m.cfg.layer_has_mlp) /* Qwen3.5: every decoder layer also has a SwiGLU MLP */
            snprintf(layers, sizeof layers, "%d GDN, %d attn (+ %d SwiGLU MLP)", m.cfg.n_gdn,
                     m.cfg.n_attn, m.cfg.n_layers);
        else
            snprintf(layers, sizeof layers, "%d M2, %d attn, %d MLP", m.cfg.n_mamba, m.cfg.n_attn,
                     m.cfg.n_mlp);
        const char *base = strrchr(dirs[i], '/') ? strrchr(dirs[i], '/') + 1 : dirs[i];
        const size_t Rs[2] = {1, 5};
        for (int k = 0; k < 2; k++) {
            double cs = 0;
            const double sec = pass_(&m, be, pols, Rs[k], tok, T, C, &cs);
            if (sec < 0) {
                rc = 1;
                continue;
            }
            printf("| %s | %s | %zu | %zu | %zu | %d | %.2f | %.0f | %.0f |\n", base, layers, Rs[k], C,
                   T, be->n_threads, sec, (double)T / sec, (double)(T * Rs[k]) / sec);
            fflush(stdout);
        }
        rs_model_free(&m);
    }
    free(tok);
    rs_backend_destroy(be);
    return rc;
}
