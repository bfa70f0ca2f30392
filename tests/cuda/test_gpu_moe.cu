/* test_gpu_moe.cu — the GPU scorer's mixture-of-experts FFN (eval/gpu/rs_gpu_moe.cu) on the MoE fixtures
 * made by transformers 5.17 (tests/fixtures/models: gdn-moe-tiny-random, qwen3_5_moe_text, 8 experts top 3;
 * mamba2-moe-tiny-random, nemotron_h with 16 experts in 4 groups, latent, shared expert;
 * mamba2-moe-flat-tiny-random, one group, no renormalisation, no latent) and on mamba2-moe-quant (NVFP4 /
 * FP8 weights, no transformers reference). Runs: the reference, `fp32`, `conv:bf16-rtn`; one chunk of all T
 * positions. Checks, with the reason of each bound:
 *   default compute (fp32: bf16x3 GEMMs, cuBLAS SGEMM for matrices that are not bf16-exact):
 *     - reference logits within 1e-4 x max |logit| of transformers' (the issue's bar; the CPU meets it
 *       by 10x and more, test_model_parity);
 *     - every MoE layer's experts of every reference position are transformers' (route_idx.{l}; the
 *       fixtures record their smallest top-k margin, 5.7e-6 and up, far above fp32 rounding here)
 *       and the CPU scorer's;
 *     - the `fp32` run's logits are the reference's bit for bit (the same rows of the same GEMMs);
 *     - the bf16 run's mean KL within 10 % of the CPU's: its state roundings differ with the fp32
 *       inputs' last bits, and a route flip on one of T = 200 positions moves a tiny model's mean
 *       by a few percent (information: the positions routed unlike the reference, GPU and CPU);
 *   --compute twin (the CPU's arithmetic, docs/gpu-evaluator.md): the reference and `fp32` logits
 *     and routes are the CPU scorer's bit for bit; with 2 streams (the tokens and their reverse,
 *     each stream's experts grouped apart) each stream's reference NLLs are the CPU's bit for bit;
 *   default compute with 2 streams: each stream's reference NLL within 1e-4 (relative, floor 1e-2)
 *     of the CPU's (rows of both books share the expert GEMMs).
 * Exit 0 pass, 1 fail, 77 without a CUDA device. Usage: test_gpu_moe [REPO_ROOT] */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "cuda_test_util.h"
#include "kleval/rs_scorer_impl.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/eval/rs_scorer_cuda.h"

#define NR 2
static const char *const k_pol[NR] = {"fp32", "conv:bf16-rtn"};

typedef struct result {
    std::vector<float> logits[NR + 1]; /* [T][V]: reference, runs */
    std::vector<int32_t> routes[NR + 1]; /* [n_layers][T][k] (dense layers stay 0) */
    std::vector<double> nll_ref, kl[NR];
} result;

static std::vector<float> ref_tensor_(const rs_st_set *ref, const char *name, size_t numel)
{
    const rs_st_tensor *t = rs_st_find(ref, name);
    std::vector<float> v;
    if (!t || (size_t)t->numel != numel) return v;
    v.resize(numel);
    rs_st_to_f32(t, v.data());
    return v;
}

static bool moe_layer_(const rs_model_config *c, int l) { return c->mlp_is_moe || c->layer_kind[l] == RS_LAYER_MOE; }

static rs_scorer_config config_(const rs_run_spec *runs, size_t T, rs_dt_mode dt, rs_compute_mode cm, size_t streams)
{
    rs_scorer_config c;
    memset(&c, 0, sizeof c);
    c.n_runs = NR;
    c.runs = runs;
    c.chunk = T;
    c.max_tokens = T;
    c.dt_mode = dt;
    c.threads = 2;
    c.compute = cm;
    c.n_streams = streams;
    return c;
}

/* one step of all T positions on a one-stream scorer: logits, routes, scores */
static int run_(rs_scorer *sc, const rs_model *m, const std::vector<int32_t> &tok, const std::vector<int32_t> &tgt,
                result *res)
{
    const size_t T = tok.size(), V = (size_t)m->cfg.vocab, k = (size_t)m->cfg.moe.top_k;
    const int L = m->cfg.n_layers;
    res->nll_ref.assign(T, 0.0);
    std::vector<int32_t> top(T);
    std::vector<double> nll[NR], dp[NR];
    std::vector<uint8_t> ag[NR];
    double *klp[NR], *nllp[NR], *dpp[NR];
    uint8_t *agp[NR];
    for (int r = 0; r < NR; r++) {
        res->kl[r].assign(T, 0.0);
        nll[r].assign(T, 0.0);
        dp[r].assign(T, 0.0);
        ag[r].assign(T, 0);
        klp[r] = res->kl[r].data(), nllp[r] = nll[r].data(), dpp[r] = dp[r].data(), agp[r] = ag[r].data();
    }
    rs_scorer_out o = {res->nll_ref.data(), top.data(), klp, nllp, dpp, agp};
    if (sc->ops->step(sc, tok.data(), tgt.data(), T, &o) != RS_OK) return 1;
    for (int r = 0; r <= NR; r++) {
        res->logits[r].resize(T * V);
        if (sc->ops->logits(sc, r - 1, res->logits[r].data()) != RS_OK) return 1;
        res->routes[r].assign((size_t)L * T * k, 0);
        for (int l = 0; l < L; l++)
            if (moe_layer_(&m->cfg, l) && sc->ops->routes(sc, r - 1, l, res->routes[r].data() + (size_t)l * T * k))
                return 1;
    }
    return 0;
}

static double max_abs_diff_(const std::vector<float> &a, const float *b, size_t n)
{
    double w = 0.0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - (double)b[i]));
    return w;
}

static size_t positions_routed_unlike_(const std::vector<int32_t> &a, const std::vector<int32_t> &b, size_t T,
                                       size_t k, const rs_model_config *c)
{
    size_t n = 0;
    for (int l = 0; l < c->n_layers; l++)
        if (moe_layer_(c, l))
            for (size_t t = 0; t < T; t++)
                n += memcmp(&a[((size_t)l * T + t) * k], &b[((size_t)l * T + t) * k], k * sizeof(int32_t)) != 0;
    return n;
}

static double mean_(const std::vector<double> &v)
{
    double s = 0.0;
    for (double x : v) s += x;
    return s / (double)v.size();
}

/* 2 streams (tok, reversed tok) in one batch: each stream's reference NLL against a one-stream CPU run */
static int streams_(const rs_model *m, const rs_run_spec *runs, const std::vector<int32_t> tok[2],
                    const std::vector<int32_t> tgt[2], rs_dt_mode dt, rs_compute_mode cm, double *worst, bool *bits)
{
    const size_t T = tok[0].size();
    rs_scorer_config c = config_(runs, T, dt, cm, 2);
    rs_scorer *g = NULL;
    if (rs_scorer_cuda_create(m, &c, &g) != RS_OK) return 1;
    std::vector<double> nll[2][NR + 1], dp[2][NR], kl[2][NR];
    std::vector<int32_t> top[2];
    std::vector<uint8_t> ag[2][NR];
    double *klp[2][NR], *nllp[2][NR], *dpp[2][NR];
    uint8_t *agp[2][NR];
    rs_scorer_out o[2];
    rs_scorer_stream in[2];
    for (int s = 0; s < 2; s++) {
        nll[s][NR].assign(T, 0.0);
        top[s].assign(T, 0);
        for (int r = 0; r < NR; r++) {
            nll[s][r].assign(T, 0.0), dp[s][r].assign(T, 0.0), kl[s][r].assign(T, 0.0), ag[s][r].assign(T, 0);
            klp[s][r] = kl[s][r].data(), nllp[s][r] = nll[s][r].data(), dpp[s][r] = dp[s][r].data();
            agp[s][r] = ag[s][r].data();
        }
        o[s] = {nll[s][NR].data(), top[s].data(), klp[s], nllp[s], dpp[s], agp[s]};
        in[s] = {tok[s].data(), tgt[s].data(), T, 0};
    }
    int rc = g->ops->step_streams(g, in, o) != RS_OK;
    rs_scorer_free(g);
    *worst = 0.0;
    *bits = true;
    c = config_(runs, T, dt, RS_COMPUTE_FP32, 1);
    for (int s = 0; s < 2 && !rc; s++) {
        rs_scorer *cpu = NULL;
        result r;
        rc = rs_scorer_cpu_create(m, &c, &cpu) != RS_OK || run_(cpu, m, tok[s], tgt[s], &r);
        rs_scorer_free(cpu);
        for (size_t t = 0; t < T && !rc; t++) {
            const double a = nll[s][NR][t], b = r.nll_ref[t];
            *worst = fmax(*worst, fabs(a - b) / fmax(fabs(b), 1e-2));
            *bits = *bits && a == b;
        }
    }
    return rc;
}

static void model_(const char *root, const char *name, rs_dt_mode dt, bool has_ref)
{
    char dir[2048], path[2200];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/models/%s", root, name);
    rs_model m;
    if (rs_model_load(dir, &m) != RS_OK) {
        ct_report(name, false, "load: %s", rs_last_error());
        return;
    }
    const rs_model_config *c = &m.cfg;
    const size_t V = (size_t)c->vocab, k = (size_t)c->moe.top_k;
    std::vector<int32_t> tok, tgt;
    rs_st_set ref;
    memset(&ref, 0, sizeof ref);
    std::vector<float> hf;
    size_t T = 200;
    if (has_ref) {
        snprintf(path, sizeof path, "%s/reference.safetensors", dir);
        RSK(rs_st_open_file(path, &ref));
        const rs_st_tensor *ids = rs_st_find(&ref, "input_ids");
        T = ids ? (size_t)ids->numel : 0;
        std::vector<float> idf = ref_tensor_(&ref, "input_ids", T);
        for (size_t t = 0; t < T; t++) tok.push_back((int32_t)idf[t]);
        hf = ref_tensor_(&ref, "logits", T * V);
    } else { /* no transformers reference: a fixed pseudo-random token sequence */
        uint64_t x = 0x9e3779b97f4a7c15ull;
        for (size_t t = 0; t < T; t++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            tok.push_back((int32_t)((x >> 33) % V));
        }
    }
    for (size_t t = 0; t < T; t++) tgt.push_back(tok[(t + 1) % T]);
    rs_run_spec runs[NR];
    for (int r = 0; r < NR; r++) RSK(rs_run_spec_parse(k_pol[r], "16", 7, &runs[r]));

    rs_scorer_config cf = config_(runs, T, dt, RS_COMPUTE_FP32, 1);
    rs_scorer *cpu = NULL, *gpu = NULL, *twin = NULL;
    result rc_, rg, rt;
    int bad = rs_scorer_cpu_create(&m, &cf, &cpu) != RS_OK || run_(cpu, &m, tok, tgt, &rc_);
    if (!bad) bad = rs_scorer_cuda_create(&m, &cf, &gpu) != RS_OK || run_(gpu, &m, tok, tgt, &rg);
    rs_scorer_config ct = config_(runs, T, dt, RS_COMPUTE_TWIN, 1);
    if (!bad) bad = rs_scorer_cuda_create(&m, &ct, &twin) != RS_OK || run_(twin, &m, tok, tgt, &rt);
    if (bad) {
        ct_report(name, false, "the scorers: %s", rs_last_error());
    } else {
        printf("%s: %s\n", name, gpu->ops->describe(gpu));
        double maxlogit = 0.0;
        for (float v : rc_.logits[0]) maxlogit = fmax(maxlogit, fabs(v));
        if (has_ref) {
            const double dh = max_abs_diff_(rg.logits[0], hf.data(), T * V);
            ct_report(name, dh <= 1e-4 * maxlogit, "GPU reference logits vs transformers: max |d| %.3e = %.2e x max |logit| "
                      "(bound 1e-4)", dh, dh / maxlogit);
            size_t same = 0, tot = 0;
            for (int l = 0; l < c->n_layers; l++) {
                if (!moe_layer_(c, l)) continue;
                char key[32];
                snprintf(key, sizeof key, "route_idx.%d", l);
                std::vector<float> ri = ref_tensor_(&ref, key, T * k);
                for (size_t t = 0; t < T && !ri.empty(); t++) {
                    bool eq = true;
                    for (size_t j = 0; j < k; j++) eq = eq && rg.routes[0][((size_t)l * T + t) * k + j] == (int32_t)ri[t * k + j];
                    same += eq;
                }
                tot += T;
            }
            ct_report(name, tot == (size_t)c->n_moe * T && same == tot,
                      "GPU reference experts = transformers' at %zu of %zu (position, MoE layer) pairs", same, tot);
        }
        const double dc = max_abs_diff_(rg.logits[0], rc_.logits[0].data(), T * V);
        printf("%s: GPU vs CPU reference logits: max |d| %.3e = %.2e x max |logit|\n", name, dc, dc / maxlogit);
        ct_report(name, dc <= 1e-4 * maxlogit, "GPU reference logits vs CPU within 1e-4 x max |logit|");
        ct_report(name, positions_routed_unlike_(rg.routes[0], rc_.routes[0], T, k, c) == 0 &&
                            positions_routed_unlike_(rg.routes[1], rc_.routes[1], T, k, c) == 0,
                  "GPU reference and fp32-run experts = the CPU's at every position and MoE layer");
        ct_report(name, ct_bits_differ(rg.logits[1].data(), rg.logits[0].data(), T * V) == 0,
                  "GPU fp32 run's logits = the reference's bit for bit");
        const double kg = mean_(rg.kl[1]), kc = mean_(rc_.kl[1]);
        ct_report(name, fabs(kg - kc) <= 0.10 * kc, "%s mean KL: GPU %.4e, CPU %.4e (%+.2f %%; bound 10 %%); positions x "
                  "layers routed unlike the reference: GPU %zu, CPU %zu", k_pol[1], kg, kc, 100.0 * (kg - kc) / kc,
                  positions_routed_unlike_(rg.routes[2], rg.routes[0], T, k, c),
                  positions_routed_unlike_(rc_.routes[2], rc_.routes[0], T, k, c));
        const size_t b0 = ct_bits_differ(rt.logits[0].data(), rc_.logits[0].data(), T * V);
        const size_t b1 = ct_bits_differ(rt.logits[1].data(), rc_.logits[1].data(), T * V);
        ct_report(name, b0 == 0 && b1 == 0,
                  "twin: reference and fp32-run logits = the CPU's bit for bit (%zu, %zu of %zu differ)", b0, b1, T * V);
        ct_report(name, positions_routed_unlike_(rt.routes[0], rc_.routes[0], T, k, c) == 0 &&
                            positions_routed_unlike_(rt.routes[1], rc_.routes[1], T, k, c) == 0,
                  "twin: reference and fp32-run experts = the CPU's");
        std::vector<int32_t> tk[2] = {tok, tok}, tg[2];
        for (size_t t = 0; t < T; t++) tk[1][t] = tok[T - 1 - t];
        for (int s = 0; s < 2; s++)
            for (size_t t = 0; t < T; t++) tg[s].push_back(tk[s][(t + 1) % T]);
        double worst = 0.0;
        bool bits = false;
        if (streams_(&m, runs, tk, tg, dt, RS_COMPUTE_TWIN, &worst, &bits))
            ct_report(name, false, "twin, 2 streams: %s", rs_last_error());
        else
            ct_report(name, bits, "twin, 2 streams: each stream's reference NLLs = the CPU's bit for bit (worst %.2e)",
                      worst);
        if (streams_(&m, runs, tk, tg, dt, RS_COMPUTE_FP32, &worst, &bits))
            ct_report(name, false, "fp32, 2 streams: %s", rs_last_error());
        else
            ct_report(name, worst <= 1e-4, "fp32, 2 streams: reference NLL vs the CPU's, worst |d| / max(|nll|, "
                      "1e-2) %.2e (bound 1e-4)", worst);
    }
    rs_scorer_free(cpu);
    rs_scorer_free(gpu);
    rs_scorer_free(twin);
    if (has_ref) rs_st_close(&ref);
    rs_model_free(&m);
}

int main(int argc, char **argv)
{
    const int skip = ct_init(argc, argv, "test_gpu_moe");
    if (skip) return skip;
    const char *root = argc > 1 && strcmp(argv[1], "--quick") ? argv[1] : ".";
    model_(root, "gdn-moe-tiny-random", RS_DT_KERNEL, true);
    model_(root, "mamba2-moe-tiny-random", RS_DT_CLAMP_MIN, true);
    model_(root, "mamba2-moe-flat-tiny-random", RS_DT_CLAMP_MIN, true);
    model_(root, "mamba2-moe-quant", RS_DT_CLAMP_MIN, false);
    return ct_finish("test_gpu_moe");
}
