/* test_gpu_devweights.cu — random weights made on the GPU (rs_model_init_random_device, eval/gpu/
 * rs_gpu_devweights.cu) against the host-made model of the same seed (rs_model_init_random), on two MoE
 * configs of the fixtures with a quantization description written beside them:
 *   nemotron_h (mamba2-moe-tiny-random's config), NVFP4 for every matrix but lm_head and the routers;
 *   qwen3_5_moe_text (gdn-moe-tiny-random's config), FP8 per tensor but lm_head.
 * Checks, with the reason of each bound:
 *   - every GEMM matrix decoded from the GPU equals the host's decoded matrix at >= 99.9 % of its
 *     elements, bit for bit: both make the same deviates by the same function, whose double log and cos
 *     may round differently in the last place on the device (rs_random_weights.h); such a difference
 *     reaches a quantized value only where it crosses a rounding boundary of a code or a block scale
 *     (information: the worst relative difference);
 *   - the GPU scorer on the GPU-made model against the CPU scorer on the host-made one: reference logits
 *     within 1e-4 x max |logit| (the MoE parity bar; the weights differ as above) and the same experts at
 *     every position and MoE layer (the fixtures' routes have top-k margins far above such perturbations);
 *   - --compute tf32 on such a model is refused (only fp32 and twin run its GEMMs).
 * Exit 0 pass, 1 fail, 77 without a CUDA device. Usage: test_gpu_devweights [REPO_ROOT] */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "gpu/rs_gpu_scorer_impl.h"
#include "kleval/rs_scorer_impl.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_scorer_cuda.h"

/* every GEMM matrix view of a model, in one fixed order (NULL where a layer has none) */
static void mats_of_(const rs_model *m, std::vector<const float *> &v)
{
    const rs_model_config *c = &m->cfg;
    for (int l = 0; l < c->n_layers; l++) {
        const rs_layer_weights *w = &m->w.layers[l];
        const float *one[] = {w->gdn.in_qkv, w->gdn.in_z, w->gdn.in_a, w->gdn.in_b, w->gdn.out, w->mamba.in_proj,
                              w->mamba.out, w->attn.q, w->attn.k, w->attn.v, w->attn.o, w->mlp.gate, w->mlp.up,
                              w->mlp.down, w->moe.router, w->moe.latent_in, w->moe.latent_out, w->moe.shared_gate,
                              w->moe.shared_up, w->moe.shared_down, w->moe.shared_scale};
        v.insert(v.end(), one, one + sizeof one / sizeof one[0]);
        for (int e = 0; w->moe.up && e < c->moe.n_experts; e++) {
            v.push_back(w->moe.gate ? w->moe.gate[e] : NULL);
            v.push_back(w->moe.up[e]);
            v.push_back(w->moe.down[e]);
        }
    }
    v.push_back(m->w.lm_head);
}

static bool write_(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return false;
    const bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static void case_(const char *root, const char *name, const char *fixture, const char *quant, rs_dt_mode dt)
{
    char dir[] = "/tmp/rs_devw_XXXXXX", p[2200];
    if (!mkdtemp(dir)) {
        ct_report(name, false, "mkdtemp");
        return;
    }
    const std::string cfg = ct_fixture_config_dk128(root, fixture);
    snprintf(p, sizeof p, "%s/config.json", dir);
    bool ok = !cfg.empty() && write_(p, cfg.c_str());
    snprintf(p, sizeof p, "%s/hf_quant_config.json", dir);
    ok = ok && write_(p, quant);
    rs_model host, dev;
    memset(&host, 0, sizeof host);
    memset(&dev, 0, sizeof dev);
    if (!ok || rs_model_init_random(dir, 11, &host) != RS_OK || rs_model_init_random_device(dir, 11, &dev) != RS_OK) {
        ct_report(name, false, "the models: %s", rs_last_error());
        return;
    }
    const size_t T = 160, V = (size_t)host.cfg.vocab, k = (size_t)host.cfg.moe.top_k;
    std::vector<int32_t> tok(T), tgt(T);
    uint64_t x = 0x243f6a8885a308d3ull;
    for (size_t t = 0; t < T; t++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        tok[t] = (int32_t)((x >> 33) % V);
    }
    for (size_t t = 0; t < T; t++) tgt[t] = tok[(t + 1) % T];
    rs_run_spec run;
    RSK(rs_run_spec_parse("split:nvfp4-rtn/fp32", "16", 3, &run));
    rs_scorer_config c;
    memset(&c, 0, sizeof c);
    c.n_runs = 1;
    c.runs = &run;
    c.chunk = T;
    c.max_tokens = T;
    c.dt_mode = dt;
    c.threads = 2;
    c.compute = RS_COMPUTE_FP32;
    rs_scorer *cpu = NULL, *gpu = NULL;
    if (rs_scorer_cpu_create(&host, &c, &cpu) != RS_OK || rs_scorer_cuda_create(&dev, &c, &gpu) != RS_OK) {
        ct_report(name, false, "the scorers: %s", rs_last_error());
    } else {
        printf("%s: %s\n", name, gpu->ops->describe(gpu));
        /* the matrices */
        std::vector<const float *> hv, dv;
        mats_of_(&host, hv);
        mats_of_(&dev, dv);
        size_t n_el = 0, same = 0, n_mat = 0, quantized = 0;
        double worst = 0.0;
        for (size_t i = 0; i < dv.size() && i < hv.size(); i++) {
            if (!dv[i]) continue;
            const rs_model_matrix *mm = NULL;
            for (int j = 0; j < dev.n_dev_mats; j++)
                if (dev.dev_mats[j].view == dv[i]) mm = &dev.dev_mats[j];
            if (!mm) continue; /* the tied embedding: a host tensor in both */
            const size_t n = (size_t)(mm->rows * mm->cols);
            std::vector<float> got(n);
            RSK(rs_gpu_devw_decode((gpu_impl *)gpu->impl, dv[i], got.data()));
            for (size_t e = 0; e < n; e++) {
                same += ct_f2u(got[e]) == ct_f2u(hv[i][e]);
                if (hv[i][e] != 0.0f) worst = fmax(worst, fabs((double)got[e] - hv[i][e]) / fabs(hv[i][e]));
            }
            n_el += n;
            n_mat++;
            quantized += mm->fmt != RS_WFMT_DENSE;
        }
        ct_report(name, n_mat == (size_t)dev.n_dev_mats && same >= 0.999 * (double)n_el,
                  "%zu GPU-made matrices (%zu quantized): %zu of %zu values = the host's bit for bit (bound 99.9 %%), "
                  "worst relative difference %.2e", n_mat, quantized, same, n_el, worst);
        /* the forward */
        std::vector<double> nll(T), kl(T), nl1(T), dp(T);
        std::vector<int32_t> top(T);
        std::vector<uint8_t> ag(T);
        double *klp = kl.data(), *nlp = nl1.data(), *dpp = dp.data();
        uint8_t *agp = ag.data();
        rs_scorer_out o = {nll.data(), top.data(), &klp, &nlp, &dpp, &agp};
        std::vector<float> lc(T * V), lg(T * V);
        RSK(cpu->ops->step(cpu, tok.data(), tgt.data(), T, &o));
        RSK(cpu->ops->logits(cpu, -1, lc.data()));
        RSK(gpu->ops->step(gpu, tok.data(), tgt.data(), T, &o));
        RSK(gpu->ops->logits(gpu, -1, lg.data()));
        double mx = 0.0, d = 0.0;
        for (size_t i = 0; i < T * V; i++) {
            mx = fmax(mx, fabs(lc[i]));
            d = fmax(d, fabs((double)lg[i] - lc[i]));
        }
        ct_report(name, d <= 1e-4 * mx, "reference logits, GPU-made vs host-made model: max |d| %.3e = %.2e x max "
                  "|logit| (bound 1e-4)", d, d / mx);
        size_t diff = 0, tot = 0;
        std::vector<int32_t> rc(T * k), rg(T * k);
        for (int l = 0; l < dev.cfg.n_layers; l++) {
            if (!(dev.cfg.mlp_is_moe || dev.cfg.layer_kind[l] == RS_LAYER_MOE)) continue;
            RSK(cpu->ops->routes(cpu, -1, l, rc.data()));
            RSK(gpu->ops->routes(gpu, -1, l, rg.data()));
            for (size_t t = 0; t < T; t++) diff += memcmp(&rc[t * k], &rg[t * k], k * sizeof(int32_t)) != 0;
            tot += T;
        }
        ct_report(name, tot > 0 && diff == 0, "reference experts: %zu of %zu (position, MoE layer) pairs differ", diff,
                  tot);
    }
    rs_scorer_free(cpu);
    rs_scorer_free(gpu);
    c.compute = RS_COMPUTE_TF32;
    rs_scorer *tf = NULL;
    const rs_status st = rs_scorer_cuda_create(&dev, &c, &tf);
    ct_report(name, st == RS_E_UNSUPPORTED && !tf && strstr(rs_last_error(), "made on the GPU"),
              "--compute tf32 refused: %s", rs_last_error());
    rs_scorer_free(tf);
    rs_model_free(&host);
    rs_model_free(&dev);
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/hf_quant_config.json", dir);
    unlink(p);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    const int skip = ct_init(argc, argv, "test_gpu_devweights");
    if (skip) return skip;
    const char *root = argc > 1 && strcmp(argv[1], "--quick") ? argv[1] : ".";
    case_(root, "nemotron_h MoE, NVFP4", "mamba2-moe-tiny-random",
          "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"group_size\": 16, \"exclude_modules\": [\"lm_head\", "
          "\"*.gate\"]}}",
          RS_DT_CLAMP_MIN);
    case_(root, "qwen3_5_moe MoE, FP8", "gdn-moe-tiny-random",
          "{\"quantization\": {\"quant_algo\": \"FP8\", \"exclude_modules\": [\"lm_head\"]}}", RS_DT_KERNEL);
    return ct_finish("test_gpu_devweights");
}
