/* test_gpu_plan.cu — the GPU scorer's memory plan made on the host (rs_scorer_cuda_plan on a shapes-only
 * model, rs_model_init_shapes), checked against an independent count from the config: it needs no GPU
 * (it runs, and must pass, on CI's CPU-only machine as well as on a GPU machine) and allocates nothing on
 * a device.
 *   - weights = the host tensors' floats x 4 + per GEMM matrix its format's bytes (NVFP4: cols / 2 codes
 *     + cols / 16 scales per row, FP8: one byte, fp32: four; each rounded up to 256 bytes plus 256 for a
 *     quantized matrix's two scalars), the matrices and formats from the model's own description;
 *   - KV = attention layers x 2 x runs x kv heads x positions x head dim x 4; logits = runs x chunk x
 *     vocab x 4; total = the five consumers' sum;
 *   - the plan grows with the positions only through KV and the recurrent rings; --compute tf32 on GPU-made
 *     weights is refused; a shapes-only model is never run (rs_scorer_cuda_create refuses it).
 * Models: data/models/paper's Qwen3.5-122B-A10B (NVFP4 experts, its description committed) and
 * Nemotron-3-Nano-4B (dense). Exit 0 pass, 1 fail (never 77). Usage: test_gpu_plan REPO_ROOT */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_test_util.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_scorer_cuda.h"

static double align256_(double b) { return ceil(b / 256.0) * 256.0; }

static double weights_of_(const rs_model *m)
{
    double w = (double)m->w.slab_floats * 4.0;
    for (int i = 0; i < m->n_dev_mats; i++) {
        const rs_model_matrix *x = &m->dev_mats[i];
        const double n = (double)x->rows * (double)x->cols;
        if (x->fmt == RS_WFMT_NVFP4) w += align256_(n / 2) + align256_(n / 16) + 256;
        else if (x->fmt == RS_WFMT_FP8) w += align256_(n) + 256;
        else w += align256_(4 * n);
    }
    return w;
}

static void model_(const char *root, const char *name, size_t chunk)
{
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/data/models/paper/%s", root, name);
    rs_model m;
    if (rs_model_init_shapes(dir, &m) != RS_OK) {
        ct_report(name, false, "shapes: %s", rs_last_error());
        return;
    }
    const rs_model_config *c = &m.cfg;
    rs_run_spec runs[2];
    RSK(rs_run_spec_parse("shared:nvfp4-sr", "16", 0, &runs[0]));
    RSK(rs_run_spec_parse("split:nvfp4-rtn/fp32", "16", 0, &runs[1]));
    rs_gpu_plan_report a, b;
    RSK(rs_scorer_cuda_plan(&m, 2, runs, chunk, 16384, RS_COMPUTE_FP32, 0, &a));
    RSK(rs_scorer_cuda_plan(&m, 2, runs, chunk, 131072, RS_COMPUTE_FP32, 0, &b));
    const double W = weights_of_(&m);
    const double kv = (double)c->n_attn * 2 * 3 * c->attn.n_kv_heads * 131072.0 * c->attn.head_dim * 4;
    const double lg = 3.0 * (double)chunk * c->vocab * 4;
    const double sum = b.weights + b.kv + b.state + b.act + b.logits;
    const double G = 1073741824.0;
    ct_report(name, b.weights == W && a.weights == W,
              "weights %.4f GiB = host tensors %.4f + %d GPU-made matrices (%d NVFP4, %d FP8)", b.weights / G,
              (double)m.w.slab_floats * 4 / G, m.n_dev_mats, m.n_weights_fmt[RS_WFMT_NVFP4],
              m.n_weights_fmt[RS_WFMT_FP8]);
    ct_report(name, b.kv == kv && fabs(a.kv * 8 - kv) < 1, "KV %.4f GiB at 131072 (8x the 16384 plan's)", b.kv / G);
    ct_report(name, b.logits == lg && a.logits == lg, "logits %.4f GiB (3 runs x chunk %zu x vocab %d)", b.logits / G,
              chunk, c->vocab);
    ct_report(name, fabs(sum - b.total) < 1 && b.act == a.act && b.state >= a.state,
              "total %.2f GiB = the consumers' sum; activations independent of the positions", b.total / G);
    rs_gpu_plan_report t;
    const rs_status st = rs_scorer_cuda_plan(&m, 2, runs, chunk, 16384, RS_COMPUTE_TF32, 0, &t);
    ct_report(name, st == RS_E_UNSUPPORTED && strstr(rs_last_error(), "made on the GPU"), "--compute tf32 refused: %s",
              rs_last_error());
    rs_model_free(&m);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_gpu_plan REPO_ROOT\n");
        return 2;
    }
    printf("test_gpu_plan: host-side plans (no device needed)\n");
    model_(argv[1], "qwen3.5-122b-a10b", 1024);
    model_(argv[1], "nemotron-3-nano-4b", 512);
    return ct_finish("test_gpu_plan");
}
