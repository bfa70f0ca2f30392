/* test_gpu_moe.cu — the GPU scorer's mixture-of-experts FFN (eval/gpu/rs_gpu_moe.cu) against the CPU scorer
 * (eval/model/rs_moe.c, which test_model_parity holds to transformers 5.17's logits and expert choices on the
 * MoE fixtures). The GPU's state kernels take d_k = 128, the fixtures have 32 / 64, so the models here are
 * the fixtures' configs with d_k = 128 and random weights (rs_model_init_random, made on the host and
 * uploaded: both scorers run the same fp32 weights):
 *   gdn-moe-tiny-random's qwen3_5_moe_text (8 experts top 3, SwiGLU, gated shared expert);
 *   mamba2-moe-tiny-random's nemotron_h (16 experts in 4 groups keep 2, top 4, latent 32, shared);
 *   mamba2-moe-flat-tiny-random's (one group, top 2, no renormalisation, no latent);
 *   mamba2-moe-quant's with its NVFP4 / FP8 (per tensor, 32 x 32 blocks) description: decoded weights.
 * Runs: the reference, `fp32`, `conv:bf16-rtn`; one chunk of all T positions. Checks, with the reason of
 * each bound:
 *   default compute (fp32: cuBLAS SGEMM, the weights not being bf16-exact):
 *     - reference logits within 1e-4 x max |logit| of the CPU's (the MoE parity bar of the issue; the two
 *       differ by fp32 rounding order) and every MoE layer's experts of the reference and the fp32 run
 *       equal to the CPU's at every position;
 *     - the `fp32` run's logits are the reference's bit for bit (the same rows of the same GEMMs);
 *     - the scorers' routing counts (route_diff) equal those recounted from the captured routes;
 *     - the bf16 run's mean KL within a factor 2 of the CPU's: its state roundings differ with the fp32
 *       inputs' last bits, and routing is discontinuous: one more (position, layer) routed unlike the
 *       reference among T = 200 positions moved gdn-moe's mean by 24 % on an H100 (7 against 6), so only
 *       a broken run (no rounding: KL 0; wrong experts or state: orders of magnitude) fails it
 *       (information: those counts, GPU and CPU);
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

#include <string>
#include <vector>
#include <unistd.h>

#include "cuda_test_util.h"
#include "kleval/rs_scorer_impl.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_scorer_cuda.h"

#define NR 2
static const char *const k_pol[NR] = {"fp32", "conv:bf16-rtn"};

typedef struct result {
    std::vector<float> logits[NR + 1]; /* [T][V]: reference, runs */
    std::vector<int32_t> routes[NR + 1]; /* [n_layers][T][k] (dense layers stay 0) */
    std::vector<double> nll_ref, kl[NR];
} result;

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

/* the scorer's routing counts of every run against the ones recounted from its captured routes (one step
   from a reset, so the counts cover exactly the captured positions) */
static bool counts_match_(rs_scorer *sc, const result *res, size_t T, size_t k, const rs_model_config *c)
{
    for (int r = 0; r < NR; r++)
        for (int l = 0; l < c->n_layers; l++) {
            int64_t pos = -1, ex = -1, want_pos = 0, want_ex = 0;
            if (sc->ops->route_diff(sc, 0, (size_t)r, l, &pos, &ex) != RS_OK) return false;
            if (moe_layer_(c, l))
                for (size_t t = 0; t < T; t++) {
                    const int32_t *a = &res->routes[r + 1][((size_t)l * T + t) * k], *b = &res->routes[0][((size_t)l * T + t) * k];
                    int common = 0;
                    for (size_t i = 0; i < k; i++)
                        for (size_t j = 0; j < k; j++) common += a[i] == b[j];
                    want_pos += common < (int)k;
                    want_ex += (int64_t)k - common;
                }
            if (pos != want_pos || ex != want_ex) {
                printf("  run %d layer %d: counted %lld positions / %lld experts, recounted %lld / %lld\n", r, l,
                       (long long)pos, (long long)ex, (long long)want_pos, (long long)want_ex);
                return false;
            }
        }
    return true;
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

/* fixture `name`'s config (and quantization description) with d_k = 128, in a temporary folder */
static bool folder_(const char *root, const char *name, char *dir)
{
    char p[2200];
    const std::string cfg = ct_fixture_config_dk128(root, name);
    if (cfg.empty()) return false;
    strcpy(dir, "/tmp/rs_gpu_moe_XXXXXX");
    if (!mkdtemp(dir)) return false;
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(cfg.data(), 1, cfg.size(), f) != cfg.size()) return false;
    fclose(f);
    snprintf(p, sizeof p, "%s/tests/fixtures/models/%s/hf_quant_config.json", root, name);
    FILE *q = fopen(p, "rb");
    if (q) {
        char buf[4096];
        size_t n;
        snprintf(p, sizeof p, "%s/hf_quant_config.json", dir);
        FILE *o = fopen(p, "wb");
        while (o && (n = fread(buf, 1, sizeof buf, q)) > 0) fwrite(buf, 1, n, o);
        if (o) fclose(o);
        fclose(q);
    }
    return true;
}

static void model_(const char *root, const char *name, rs_dt_mode dt)
{
    char dir[64], path[200];
    rs_model m;
    memset(&m, 0, sizeof m);
    if (!folder_(root, name, dir) || rs_model_init_random(dir, 5, &m) != RS_OK) {
        ct_report(name, false, "the model: %s", rs_last_error());
        return;
    }
    const rs_model_config *c = &m.cfg;
    const size_t V = (size_t)c->vocab, k = (size_t)c->moe.top_k, T = 200;
    std::vector<int32_t> tok, tgt;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t t = 0; t < T; t++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        tok.push_back((int32_t)((x >> 33) % V));
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
        const double dc = max_abs_diff_(rg.logits[0], rc_.logits[0].data(), T * V);
        printf("%s: GPU vs CPU reference logits: max |d| %.3e = %.2e x max |logit|\n", name, dc, dc / maxlogit);
        ct_report(name, dc <= 1e-4 * maxlogit, "GPU reference logits vs CPU within 1e-4 x max |logit|");
        ct_report(name, positions_routed_unlike_(rg.routes[0], rc_.routes[0], T, k, c) == 0 &&
                            positions_routed_unlike_(rg.routes[1], rc_.routes[1], T, k, c) == 0,
                  "GPU reference and fp32-run experts = the CPU's at every position and MoE layer");
        ct_report(name, ct_bits_differ(rg.logits[1].data(), rg.logits[0].data(), T * V) == 0,
                  "GPU fp32 run's logits = the reference's bit for bit");
        ct_report(name, counts_match_(gpu, &rg, T, k, c) && counts_match_(cpu, &rc_, T, k, c),
                  "routing counts per run and layer (GPU and CPU) = those recounted from the captured routes");
        const double kg = mean_(rg.kl[1]), kc = mean_(rc_.kl[1]);
        ct_report(name, kg > 0.5 * kc && kg < 2.0 * kc, "%s mean KL: GPU %.4e, CPU %.4e (%+.2f %%; bound a factor 2); positions x "
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
    rs_model_free(&m);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/hf_quant_config.json", dir);
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    const int skip = ct_init(argc, argv, "test_gpu_moe");
    if (skip) return skip;
    const char *root = argc > 1 && strcmp(argv[1], "--quick") ? argv[1] : ".";
    model_(root, "gdn-moe-tiny-random", RS_DT_KERNEL);
    model_(root, "mamba2-moe-tiny-random", RS_DT_CLAMP_MIN);
    model_(root, "mamba2-moe-flat-tiny-random", RS_DT_CLAMP_MIN);
    model_(root, "mamba2-moe-quant", RS_DT_CLAMP_MIN);
    return ct_finish("test_gpu_moe");
}
