/* gpu_parity.cu — the GPU evaluator's forward against transformers' logits
 * and its step-by-step path against its chunked path. A device tool, not a CTest (the references
 * are 2 GB per model, made on the GPU machine by make_parity_models.py):
 *
 *   gpu_parity MODEL_DIR IDS.i32 REF_LOGITS.f32 [--chunk C] [--step-positions S] [--device cpu|cuda]
 *
 * Reads P ids (raw int32) and transformers' fp32 logits [P][V] (raw float32), runs the reference
 * forward of the scorer (R = 0) over the ids in chunks of C, and prints per model:
 *   err_t = max_i |logit_gpu - logit_hf| / max_i |logit_hf| per position t; max and mean over t;
 *   PASS if max_t err_t <= 1e-4 (fp32 everywhere, but a different summation order
 *   in every GEMM, norm and attention, and transformers' chunked GDN / SSD forms against our
 *   recurrence: 1e-4 of the logit range leaves ~100x the ~1e-6 observed at the tiny shapes);
 * then the first S positions again one position per step (decode-like, M = 1 row per GEMM) against
 * the chunked logits: PASS if max |diff| / max |logit| <= 1e-5 (the same arithmetic up to the GEMMs'
 * blocking, which cuBLAS chooses by shape: ~1e-6 relative); and (GPU only) once more with every GEMM
 * padded to the chunk's C rows (RS_GPU_GEMM_PAD_ROWS, eval/gpu/rs_gpu_weights.h) so that cuBLAS runs the chunked
 * path's GEMM shapes: PASS only if those logits equal the chunked ones bit for bit (then the chunked
 * scan, conv, attention and KV cache are the step-by-step arithmetic exactly and the unpadded
 * difference is the GEMMs' shape-dependent blocking alone). Exit 0 if all pass.
 * --compute M[,M...] (default fp32): each compute mode in turn on the one loaded model (fp32 is cuBLAS
 * SGEMM, tf32x3 the split-TF32 GEMM, tf32 one TF32 GEMM: kernels/dense/rs_dense_gemm.h); every mode after the
 * first is also compared with the first one's chunked logits (max |diff| / max |logit|, printed:
 * how far two GEMM methods move the logits, next to their distance from transformers).
 * --routes ROUTES.i32 (MoE models): transformers' experts of every MoE layer, raw int32 [MoE layers][P][k]
 * ascending per position (make_parity_models.py writes route_idx.i32): PASS only if the chunked
 * reference chose the same experts at every position of every MoE layer (the parity bar of the routes).
 * --step-positions 0 skips the step-by-step checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "replayssm/eval/rs_model.h"
#include "kleval/rs_scorer_impl.h"
#include "replayssm/eval/rs_scorer_cuda.h"

static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *slurp_(const char *path, size_t *bytes)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *bytes = p ? (size_t)n : 0;
    return p;
}

/* MoE layers of the model, ascending; their count */
static int moe_layers_(const rs_model *m, int *out)
{
    int n = 0;
    for (int l = 0; l < m->cfg.n_layers; l++)
        if (m->cfg.mlp_is_moe || m->cfg.layer_kind[l] == RS_LAYER_MOE) out[n++] = l;
    return n;
}

/* run the reference over ids[0..P) in steps of `step` positions; logits into out[P][V]; with routes (not
   NULL) every MoE layer's experts into routes[li][P][k] */
static int forward_(rs_scorer *sc, const int32_t *ids, size_t P, size_t step, size_t V, float *out, double *secs,
                    const int *moe, int n_moe, size_t k, int32_t *routes)
{
    int32_t *tg = (int32_t *)malloc(step * sizeof(int32_t));
    double *nll = (double *)malloc(step * sizeof(double));
    int32_t *top = (int32_t *)malloc(step * sizeof(int32_t));
    rs_scorer_out o;
    memset(&o, 0, sizeof o);
    o.nll_ref = nll;
    o.top1_ref = top;
    if (sc->ops->reset(sc) != RS_OK) return 1;
    const double t0 = now_();
    for (size_t p = 0; p < P; p += step) {
        const size_t n = P - p < step ? P - p : step;
        for (size_t t = 0; t < n; t++) tg[t] = p + t + 1 < P ? ids[p + t + 1] : 0;
        if (sc->ops->step(sc, ids + p, tg, n, &o) != RS_OK || sc->ops->logits(sc, -1, out + p * V) != RS_OK) {
            fprintf(stderr, "gpu_parity: position %zu: %s\n", p, rs_last_error());
            return 1;
        }
        for (int li = 0; routes && li < n_moe; li++)
            if (sc->ops->routes(sc, -1, moe[li], routes + ((size_t)li * P + p) * k) != RS_OK) {
                fprintf(stderr, "gpu_parity: routes of layer %d: %s\n", moe[li], rs_last_error());
                return 1;
            }
    }
    *secs = now_() - t0;
    free(tg);
    free(nll);
    free(top);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gpu_parity MODEL_DIR IDS.i32 REF_LOGITS.f32 [--chunk C] [--step-positions S] "
                        "[--device cpu|cuda] [--compute M[,M...]] [--routes ROUTES.i32]\n");
        return 2;
    }
    size_t C = 256, S = 256;
    int cpu = 0;
    char modes_arg[256] = "fp32";
    const char *routes_path = NULL;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--chunk")) C = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--step-positions")) S = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--device")) cpu = !strcmp(argv[i + 1], "cpu");
        else if (!strcmp(argv[i], "--compute")) snprintf(modes_arg, sizeof modes_arg, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--routes")) routes_path = argv[i + 1];
    }
    rs_compute_mode modes[8];
    int n_modes = 0;
    for (char *tok = strtok(modes_arg, ","); tok && n_modes < 8; tok = strtok(NULL, ","))
        if (rs_compute_mode_parse(tok, &modes[n_modes++]) != RS_OK) {
            fprintf(stderr, "gpu_parity: %s\n", rs_last_error());
            return 2;
        }
    rs_model m;
    double t0 = now_();
    if (rs_model_load(argv[1], &m) != RS_OK) {
        fprintf(stderr, "gpu_parity: %s\n", rs_last_error());
        return 1;
    }
    const size_t V = (size_t)m.cfg.vocab;
    printf("model %s (%s): %d layers, hidden %d, vocab %zu, loaded in %.1f s\n", argv[1], m.cfg.model_type,
           m.cfg.n_layers, m.cfg.hidden, V, now_() - t0);
    size_t bi = 0, br = 0;
    int32_t *ids = (int32_t *)slurp_(argv[2], &bi);
    float *ref = (float *)slurp_(argv[3], &br);
    const size_t P = bi / sizeof(int32_t);
    if (!ids || !ref || br != P * V * sizeof(float)) {
        fprintf(stderr, "gpu_parity: cannot read %s / %s (or %zu bytes for %zu positions x %zu)\n", argv[2], argv[3],
                br, P, V);
        return 1;
    }
    if (S > P) S = P;
    int moe[256];
    const int n_moe = moe_layers_(&m, moe);
    const size_t k = (size_t)m.cfg.moe.top_k;
    int32_t *hf_routes = NULL, *routes = NULL;
    if (routes_path) {
        size_t bq = 0;
        hf_routes = (int32_t *)slurp_(routes_path, &bq);
        routes = (int32_t *)malloc((size_t)n_moe * P * k * sizeof(int32_t) + 1);
        if (n_moe == 0 || !hf_routes || !routes || bq != (size_t)n_moe * P * k * sizeof(int32_t)) {
            fprintf(stderr, "gpu_parity: %s: expected %d MoE layers x %zu positions x %zu experts (int32), %zu bytes\n",
                    routes_path, n_moe, P, k, bq);
            return 1;
        }
    }
    float *got = (float *)malloc(P * V * sizeof(float));
    float *first = n_modes > 1 ? (float *)malloc(P * V * sizeof(float)) : NULL;
    float *stp = (float *)malloc((S ? S : 1) * V * sizeof(float));
    if (!got || !stp || (n_modes > 1 && !first)) return 1;
    int all_ok = 1;
    for (int mi = 0; mi < n_modes; mi++) {
        rs_scorer_config sc;
        memset(&sc, 0, sizeof sc);
        sc.chunk = C;
        sc.max_tokens = P;
        sc.compute = modes[mi];
        rs_scorer *s = NULL;
        if ((cpu ? rs_scorer_cpu_create(&m, &sc, &s) : rs_scorer_cuda_create(&m, &sc, &s)) != RS_OK) {
            fprintf(stderr, "gpu_parity: %s\n", rs_last_error());
            return 1;
        }
        const char *mn = rs_compute_mode_name(modes[mi]);
        printf("[%s] %s\n", mn, s->ops->describe(s));
        double secs = 0, secs1 = 0;
        if (forward_(s, ids, P, C, V, got, &secs, moe, n_moe, k, routes)) return 1;
        int ok0 = 1;
        if (routes) {
            size_t bad = 0, first_l = 0, first_t = 0;
            for (int li = 0; li < n_moe; li++)
                for (size_t t = 0; t < P; t++)
                    if (memcmp(routes + ((size_t)li * P + t) * k, hf_routes + ((size_t)li * P + t) * k,
                               k * sizeof(int32_t)) != 0 && bad++ == 0)
                        first_l = (size_t)moe[li], first_t = t;
            ok0 = bad == 0;
            printf("%s [%s] experts vs transformers: %zu of %zu (position, MoE layer) pairs differ (first: layer %zu, "
                   "position %zu) (bound: none)\n",
                   ok0 ? "PASS" : "FAIL", rs_compute_mode_name(modes[mi]), bad, P * (size_t)n_moe, first_l, first_t);
        }
        double emax = 0, esum = 0;
        size_t tmax = 0;
        for (size_t t = 0; t < P; t++) {
            double dm = 0, rm = 0;
            for (size_t i = 0; i < V; i++) {
                const double d = fabs((double)got[t * V + i] - (double)ref[t * V + i]);
                if (!(d <= dm)) dm = d; /* NaN propagates */
                if (fabs((double)ref[t * V + i]) > rm) rm = fabs((double)ref[t * V + i]);
            }
            const double e = dm / rm;
            esum += e;
            if (!(e <= emax)) emax = e, tmax = t;
        }
        const int ok1 = emax <= 1e-4;
        printf("%s [%s] logits vs transformers, %zu positions (chunk %zu, %.2f s): max_t max_i|diff|/max_i|ref| = %.3e "
               "at position %zu, mean %.3e (bound 1e-4)\n",
               ok1 ? "PASS" : "FAIL", mn, P, C, secs, emax, tmax, esum / (double)P);
        if (mi == 0 && first) memcpy(first, got, P * V * sizeof(float));
        if (mi > 0) { /* against the first mode: the same model and ids, another GEMM method */
            double fmax = 0, fsum = 0;
            for (size_t t = 0; t < P; t++) {
                double dm = 0, rm = 0;
                for (size_t i = 0; i < V; i++) {
                    const double d = fabs((double)got[t * V + i] - (double)first[t * V + i]);
                    if (!(d <= dm)) dm = d;
                    if (fabs((double)first[t * V + i]) > rm) rm = fabs((double)first[t * V + i]);
                }
                fsum += dm / rm;
                if (!(dm / rm <= fmax)) fmax = dm / rm;
            }
            printf("info [%s] vs [%s] logits, %zu positions: max_t max_i|diff|/max_i|logit| = %.3e, mean %.3e\n", mn,
                   rs_compute_mode_name(modes[0]), P, fmax, fsum / (double)P);
        }
        if (S == 0) { /* --step-positions 0 */
            rs_scorer_free(s);
            all_ok &= ok0 && ok1;
            continue;
        }
        if (forward_(s, ids, S, 1, V, stp, &secs1, moe, n_moe, k, NULL)) return 1;
        double dm = 0, rm = 0;
        for (size_t i = 0; i < S * V; i++) {
            const double d = fabs((double)stp[i] - (double)got[i]);
            if (!(d <= dm)) dm = d;
            if (fabs((double)got[i]) > rm) rm = fabs((double)got[i]);
        }
        const int ok2 = dm / rm <= 1e-5;
        printf("%s [%s] step-by-step vs chunked, %zu positions (%.2f s, %.1f positions/s): max|diff|/max|logit| = "
               "%.3e (bound 1e-5)\n",
               ok2 ? "PASS" : "FAIL", mn, S, secs1, (double)S / secs1, dm / rm);
        rs_scorer_free(s);
        int ok3 = 1;
        if (!cpu) { /* the step path again with the chunk's GEMM shapes: bit-identical expected */
            char rows[32];
            snprintf(rows, sizeof rows, "%zu", C);
            setenv("RS_GPU_GEMM_PAD_ROWS", rows, 1);
            const rs_status st = rs_scorer_cuda_create(&m, &sc, &s);
            unsetenv("RS_GPU_GEMM_PAD_ROWS");
            if (st != RS_OK) {
                fprintf(stderr, "gpu_parity: %s\n", rs_last_error());
                return 1;
            }
            printf("[%s] %s\n", mn, s->ops->describe(s));
            if (forward_(s, ids, S, 1, V, stp, &secs1, moe, n_moe, k, NULL)) return 1;
            size_t ndiff = 0;
            double pm = 0;
            for (size_t i = 0; i < S * V; i++) {
                if (memcmp(&stp[i], &got[i], sizeof(float)) != 0) ndiff++;
                const double d = fabs((double)stp[i] - (double)got[i]);
                if (!(d <= pm)) pm = d;
            }
            ok3 = ndiff == 0;
            printf("%s [%s] step-by-step with the GEMMs padded to %zu rows vs chunked, %zu positions (%.2f s): "
                   "%zu of %zu logits differ in their bits, max|diff|/max|logit| = %.3e (bound: bit-identical)\n",
                   ok3 ? "PASS" : "FAIL", mn, C, S, secs1, ndiff, S * V, pm / rm);
            rs_scorer_free(s);
        }
        all_ok &= ok0 && ok1 && ok2 && ok3;
    }
    rs_model_free(&m);
    free(got);
    free(first);
    free(stp);
    free(ids);
    free(ref);
    free(routes);
    free(hf_routes);
    return all_ok ? 0 : 1;
}
