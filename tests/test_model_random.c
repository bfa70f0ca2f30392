/* test_model_random.c — rs_model_init_random (eval/model/rs_model_random.c) against its documented
 * distribution and promises:
 *   1. the same seed gives the same weights, bit for bit (each element is a function of (seed, tensor,
 *      index) alone, so thread counts cannot matter); another
 *      seed other weights; the views cover every tensor the config implies (the loader's list);
 *   2. moments: linear weights mean 0 and variance 1/fan_in, embeddings variance 1, within 6 standard
 *      errors of the sample statistics; norms the identity; A_log in [0, log 16]; dt in [1e-3, 1e-1];
 *   3. deep models stay finite: an 88-block NemotronH-like MoE model and a 48-layer Qwen3.5-MoE-like one
 *      run 64 positions with fp32 and a quantized-state policy; logits finite and the residual stream's
 *      RMS below 10 x sqrt(layers);
 *   4. with an NVFP4 description, the declared weights hold at most 8 magnitudes per 16-element block
 *      times their scales (what E2M1 codes can give) and stay within NVFP4's error of the unquantized
 *      weights; excluded ones are untouched; a weight NVFP4 cannot hold is refused;
 *   5. errors: no config.json, an impossible MoE config. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/rs_backend.h"
#include "model/rs_runner.h"
#include "replayssm/eval/rs_model.h"
#include "rs_test_util.h"

static char g_tmp[64];

static int setup(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/rs_test_random_XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return rs_test_rmdir(g_tmp);
}

/* a model folder holding config.json (and hf_quant_config.json if hqc) */
static const char *folder_(const char *name, const char *cfg, const char *hqc) {
    static char dir[256];
    char p[512];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, name);
    mkdir(dir, 0700);
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(cfg, f);
    fclose(f);
    if (hqc) {
        snprintf(p, sizeof p, "%s/hf_quant_config.json", dir);
        f = fopen(p, "wb");
        assert_non_null(f);
        fputs(hqc, f);
        fclose(f);
    }
    return dir;
}

static const char *NEMO_MOE =
    "{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"ME*EM-\",\"hidden_size\":64,\"vocab_size\":256,"
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,\"intermediate_size\":96,"
    "\"mamba_num_heads\":4,\"mamba_head_dim\":16,\"n_groups\":2,\"ssm_state_size\":32,\"n_routed_experts\":8,"
    "\"num_experts_per_tok\":2,\"moe_intermediate_size\":32,\"moe_shared_expert_intermediate_size\":48,"
    "\"moe_latent_size\":32,\"n_group\":2,\"topk_group\":1,\"routed_scaling_factor\":2.5}";

static void test_deterministic_and_complete(void **state) {
    (void)state;
    const char *d = folder_("nemo", NEMO_MOE, NULL);
    rs_model a, b, c;
    rs_status st = rs_model_init_random(d, 7, &a);
    if (st != RS_OK) fail_msg("init: %s", rs_last_error());
    assert_int_equal(rs_model_init_random(d, 7, &b), RS_OK);
    assert_int_equal(rs_model_init_random(d, 8, &c), RS_OK);
    assert_true(a.random_weights && a.random_seed == 7);
    assert_null(a.st);
    assert_int_equal(a.w.slab_floats, b.w.slab_floats);
    assert_memory_equal(a.w.slab, b.w.slab, a.w.slab_floats * sizeof(float));
    size_t same = 0;
    for (size_t i = 0; i < a.w.slab_floats; i++) same += a.w.slab[i] == c.w.slab[i];
    assert_true(same < a.w.slab_floats / 4); /* identity norms, unit D, zero biases agree; the rest differ */
    /* every view the forward reads is set */
    for (int l = 0; l < a.cfg.n_layers; l++) {
        const rs_layer_weights *L = &a.w.layers[l];
        assert_non_null(L->norm);
        if (L->kind == RS_LAYER_MOE) {
            assert_true(L->moe.router && L->moe.router_bias && L->moe.latent_in && L->moe.latent_out);
            assert_true(L->moe.shared_up && L->moe.shared_down);
            for (int e = 0; e < a.cfg.moe.n_experts; e++) assert_true(L->moe.up[e] && L->moe.down[e]);
        }
    }
    assert_true(a.w.embed && a.w.final_norm && a.w.lm_head && a.w.lm_head != a.w.embed);
    rs_model_free(&a);
    rs_model_free(&b);
    rs_model_free(&c);
}

/* mean and variance of x[n] against 0 and var, within 6 standard errors */
static void moments_(const char *what, const float *x, size_t n, double var) {
    double s = 0, s2 = 0, s4 = 0;
    for (size_t i = 0; i < n; i++) {
        s += x[i];
        s2 += (double)x[i] * x[i];
        s4 += (double)x[i] * x[i] * x[i] * x[i];
    }
    const double mean = s / (double)n, v = s2 / (double)n, m4 = s4 / (double)n;
    const double se_mean = sqrt(var / (double)n), se_var = sqrt((m4 - v * v) / (double)n);
    printf("  %-32s n %7zu mean %+.4f (se %.4f) var %.5f vs %.5f (se %.5f)\n", what, n, mean, se_mean, v, var, se_var);
    assert_true(fabs(mean) <= 6 * se_mean);
    assert_true(fabs(v - var) <= 6 * se_var);
}

static void test_distribution(void **state) {
    (void)state;
    rs_model m;
    assert_int_equal(rs_model_init_random(folder_("nemo", NEMO_MOE, NULL), 11, &m), RS_OK);
    const rs_layer_weights *L0 = &m.w.layers[0], *L1 = &m.w.layers[1];
    const rs_model_config *c = &m.cfg;
    moments_("embeddings", m.w.embed, (size_t)c->vocab * 64, 1.0);
    moments_("Mamba-2 in_proj (fan-in 64)", L0->mamba.in_proj, (size_t)c->mamba.in_proj_dim * 64, 1.0 / 64);
    moments_("Mamba-2 out_proj (fan-in 64)", L0->mamba.out, 64 * (size_t)c->mamba.d_inner, 1.0 / c->mamba.d_inner);
    moments_("conv1d (fan-in K = 4)", L0->mamba.conv_w, (size_t)c->mamba.conv_dim * 4, 0.25);
    moments_("expert 3 down (fan-in 32)", L1->moe.down[3], 32 * 32, 1.0 / 32);
    moments_("router (fan-in 64)", L1->moe.router, 8 * 64, 1.0 / 64);
    for (int i = 0; i < 64; i++) assert_true(L0->norm[i] == 1.0f && m.w.final_norm[i] == 1.0f);
    for (int i = 0; i < c->mamba.d_inner; i++) assert_true(L0->mamba.norm[i] == 1.0f);
    for (int i = 0; i < c->mamba.conv_dim; i++) assert_true(L0->mamba.conv_b[i] == 0.0f);
    for (int i = 0; i < 8; i++) assert_true(L1->moe.router_bias[i] == 0.0f);
    for (int h = 0; h < c->mamba.n_heads; h++) {
        assert_true(L0->mamba.D[h] == 1.0f);
        assert_true(L0->mamba.A_log[h] >= 0.0f && L0->mamba.A_log[h] <= logf(16.0f) + 1e-6f);
        const double dt = log1p(exp((double)L0->mamba.dt_bias[h]));
        assert_true(dt >= 0.999e-3 && dt <= 1.001e-1);
    }
    rs_model_free(&m);
    /* Qwen3.5: (1 + w) norms are 0, the GDN gated norm 1 */
    const char *q = "{\"model_type\":\"qwen3_5_moe_text\",\"hidden_size\":32,\"vocab_size\":64,\"num_hidden_layers\":4,"
                    "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":16,\"linear_num_key_heads\":1,"
                    "\"linear_num_value_heads\":2,\"linear_key_head_dim\":16,\"linear_value_head_dim\":16,"
                    "\"num_experts\":4,\"num_experts_per_tok\":2,\"moe_intermediate_size\":16,"
                    "\"shared_expert_intermediate_size\":16}";
    assert_int_equal(rs_model_init_random(folder_("qwen", q, NULL), 11, &m), RS_OK);
    for (int i = 0; i < 32; i++) assert_true(m.w.layers[0].norm[i] == 0.0f && m.w.layers[0].post_norm[i] == 0.0f);
    for (int i = 0; i < 16; i++) assert_true(m.w.layers[0].gdn.norm[i] == 1.0f);
    for (int i = 0; i < 16; i++) assert_true(m.w.layers[3].attn.q_norm[i] == 0.0f);
    assert_non_null(m.w.layers[2].moe.gate[3]);
    assert_non_null(m.w.layers[2].moe.shared_scale);
    moments_("embeddings, untied", m.w.embed, 64 * 32, 1.0);
    rs_model_free(&m);
    /* tied to the lm_head: N(0, 1/d), so the logits are O(1) rather than O(sqrt(d)) */
    char qt[1024];
    snprintf(qt, sizeof qt, "%.*s,\"tie_word_embeddings\":true}", (int)strlen(q) - 1, q);
    assert_int_equal(rs_model_init_random(folder_("qwen-tied", qt, NULL), 11, &m), RS_OK);
    assert_true(m.cfg.tie_word_embeddings && m.w.lm_head == m.w.embed);
    moments_("embeddings, tied (d = 32)", m.w.embed, 64 * 32, 1.0 / 32);
    rs_model_free(&m);
}

/* R runs over 64 positions; logits finite and the residual RMS after the last layer bounded */
static void run_deep_(const char *name, const char *cfg, int layers) {
    rs_model m;
    rs_status st = rs_model_init_random(folder_(name, cfg, NULL), 3, &m);
    if (st != RS_OK) fail_msg("init %s: %s", name, rs_last_error());
    assert_int_equal(m.cfg.n_layers, layers);
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(2, &be), RS_OK);
    rs_run_spec p[2];
    assert_int_equal(rs_run_spec_parse("fp32", "16", 1, &p[0]), RS_OK);
    assert_int_equal(rs_run_spec_parse("split:nvfp4-rtn/fp32", "16", 1, &p[1]), RS_OK);
    rs_runner_config rc = rs_runner_config_default();
    rc.n_runs = 2;
    rc.runs = p;
    rc.chunk = 32;
    rc.max_tokens = 64;
    rc.capture_hidden = 1;
    rs_runner *r = NULL;
    assert_int_equal(rs_runner_create(&m, be, &rc, &r), RS_OK);
    int32_t ids[32];
    double rms = 0;
    for (int step = 0; step < 2; step++) {
        for (int i = 0; i < 32; i++) ids[i] = (int32_t)((step * 32 + i) * 7919 % m.cfg.vocab);
        assert_int_equal(rs_runner_step(r, ids, 32), RS_OK);
        for (size_t run = 0; run < 2; run++) {
            assert_int_equal(rs_runner_run_status(r, run, NULL), RS_OK);
            const float *lg = rs_runner_logits(r, run);
            for (size_t i = 0; i < 32 * (size_t)m.cfg.vocab; i++) assert_true(isfinite(lg[i]));
            const float *h = rs_runner_hidden(r, (size_t)layers, run);
            double s = 0;
            for (size_t i = 0; i < 32 * (size_t)m.cfg.hidden; i++) s += (double)h[i] * h[i];
            rms = fmax(rms, sqrt(s / (32.0 * m.cfg.hidden)));
        }
    }
    printf("  %s: %d layers, residual RMS after the last layer %.2f (bound %.1f)\n", name, layers, rms,
           10 * sqrt((double)layers));
    assert_true(rms < 10 * sqrt((double)layers));
    rs_runner_free(r);
    rs_backend_destroy(be);
    rs_model_free(&m);
}

static void test_deep_models_stay_finite(void **state) {
    (void)state;
    /* the 88-block schedule of Nemotron-3-Super (Mamba-2, latent MoE, attention), tiny widths */
    char pat[89];
    for (int i = 0; i < 88; i++) pat[i] = i % 8 == 3 ? '*' : (i % 2 ? 'E' : 'M');
    pat[88] = '\0';
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"%s\",\"hidden_size\":32,\"vocab_size\":64,"
             "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":16,\"mamba_num_heads\":2,"
             "\"mamba_head_dim\":16,\"n_groups\":1,\"ssm_state_size\":16,\"n_routed_experts\":16,\"num_experts_per_tok\":4,"
             "\"moe_intermediate_size\":16,\"moe_shared_expert_intermediate_size\":32,\"moe_latent_size\":16,"
             "\"n_group\":4,\"topk_group\":2,\"routed_scaling_factor\":5.0}", pat);
    run_deep_("nemotron-88", cfg, 88);
    run_deep_("qwen-moe-48",
              "{\"model_type\":\"qwen3_5_moe_text\",\"hidden_size\":32,\"vocab_size\":64,\"num_hidden_layers\":48,"
              "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":16,\"linear_num_key_heads\":1,"
              "\"linear_num_value_heads\":2,\"linear_key_head_dim\":16,\"linear_value_head_dim\":16,"
              "\"num_experts\":16,\"num_experts_per_tok\":4,\"moe_intermediate_size\":16,"
              "\"shared_expert_intermediate_size\":16}", 48);
}

static void test_quantized_variant(void **state) {
    (void)state;
    const char *hqc = "{\"quantization\":{\"quant_algo\":\"NVFP4\",\"group_size\":16,"
                      "\"exclude_modules\":[\"lm_head\",\"*.gate\",\"*latent_proj\",\"*.in_proj\",\"*.out_proj\"]}}";
    rs_model q, f;
    rs_status st = rs_model_init_random(folder_("nemo-nvfp4", NEMO_MOE, hqc), 5, &q);
    if (st != RS_OK) fail_msg("init: %s", rs_last_error());
    assert_int_equal(rs_model_init_random(folder_("nemo", NEMO_MOE, NULL), 5, &f), RS_OK);
    printf("  weights: nvfp4 %d, dense %d\n", q.n_weights_fmt[RS_WFMT_NVFP4], q.n_weights_fmt[RS_WFMT_DENSE]);
    assert_int_equal(q.n_weights_fmt[RS_WFMT_NVFP4], 2 * (2 * 8 + 2) + 4 + 2); /* experts, shared, attention, MLP */
    /* an NVFP4 weight: per 16-element block at most 8 magnitudes (E2M1), within 25% RMS of the fp32 one */
    const float *wq = q.w.layers[1].moe.up[5], *wf = f.w.layers[1].moe.up[5];
    double e2 = 0, n2 = 0;
    for (int b = 0; b < 32 * 32 / 16; b++) {
        float mags[16];
        int nm = 0;
        for (int j = 0; j < 16; j++) {
            const float a = fabsf(wq[b * 16 + j]);
            int seen = 0;
            for (int k = 0; k < nm; k++) seen |= mags[k] == a;
            if (!seen) mags[nm++] = a;
            e2 += ((double)wq[b * 16 + j] - wf[b * 16 + j]) * ((double)wq[b * 16 + j] - wf[b * 16 + j]);
            n2 += (double)wf[b * 16 + j] * wf[b * 16 + j];
        }
        assert_true(nm <= 8);
    }
    printf("  NVFP4 relative RMS error of an expert's up_proj: %.3f\n", sqrt(e2 / n2));
    assert_true(sqrt(e2 / n2) > 0.01 && sqrt(e2 / n2) < 0.25);
    /* excluded weights are the fp32 ones */
    assert_memory_equal(q.w.layers[1].moe.router, f.w.layers[1].moe.router, 8 * 64 * sizeof(float));
    assert_memory_equal(q.w.layers[0].mamba.in_proj, f.w.layers[0].mamba.in_proj,
                        (size_t)q.cfg.mamba.in_proj_dim * 64 * sizeof(float));
    rs_model_free(&q);
    rs_model_free(&f);
    /* a declared NVFP4 weight whose inputs are not a multiple of 16 is refused (MLP intermediate 100) */
    char cfg[1024];
    const char *at = strstr(NEMO_MOE, "\"intermediate_size\":96");
    assert_non_null(at);
    snprintf(cfg, sizeof cfg, "%.*s\"intermediate_size\":100%s", (int)(at - NEMO_MOE), NEMO_MOE,
             at + strlen("\"intermediate_size\":96"));
    assert_int_equal(rs_model_init_random(folder_("nemo-odd", cfg, hqc), 5, &q), RS_E_SHAPE);
    assert_non_null(strstr(rs_last_error(), "multiple of 16"));
    assert_null(q.w.slab);
}

/* rs_model_init_random_device: the host makes every tensor but the GEMM matrices exactly as
 * rs_model_init_random does; each matrix is a description (shape, format from the quantization
 * description, the random stream and scale of its values) behind a view that faults if read; the CPU
 * runner refuses the model; FP8 in blocks is refused (the GPU makes NVFP4 and FP8 per tensor) */
static void test_device_made_model(void **state) {
    (void)state;
    const char *hqc = "{\"quantization\":{\"quant_algo\":\"NVFP4\",\"group_size\":16,"
                      "\"exclude_modules\":[\"lm_head\",\"*.gate\"]}}";
    const char *d = folder_("nemo-dev", NEMO_MOE, hqc);
    rs_model h, g;
    rs_status st = rs_model_init_random_device(d, 9, &g);
    if (st != RS_OK) fail_msg("init: %s", rs_last_error());
    assert_int_equal(rs_model_init_random(d, 9, &h), RS_OK);
    assert_true(g.weights_on_device && !h.weights_on_device && g.random_weights && g.random_seed == 9);
    /* matrices: 2 Mamba (in, out) + 4 attention + 2 MLP + 2 MoE layers x (router, 2 latent, 8 x 2 experts,
       2 shared) + lm_head */
    assert_int_equal(g.n_dev_mats, 2 * 2 + 4 + 2 + 2 * (1 + 2 + 16 + 2) + 1);
    /* weight counts by format: the matrices and the embeddings (dense) */
    assert_int_equal(g.n_weights_fmt[RS_WFMT_NVFP4] + g.n_weights_fmt[RS_WFMT_DENSE], g.n_dev_mats + 1);
    assert_int_equal(g.n_weights_fmt[RS_WFMT_NVFP4], h.n_weights_fmt[RS_WFMT_NVFP4]);
    assert_int_equal(g.n_weights_fmt[RS_WFMT_DENSE], 2 + 1 + 1); /* the routers and lm_head (excluded), embeddings */
    size_t mat_floats = 0;
    for (int i = 0; i < g.n_dev_mats; i++) {
        const rs_model_matrix *x = &g.dev_mats[i];
        assert_true(i == 0 || g.dev_mats[i - 1].view < x->view); /* sorted, distinct */
        assert_true((const char *)x->view >= (const char *)g.dev_reserve &&
                    (const char *)(x->view + x->rows * x->cols) <= (const char *)g.dev_reserve + g.dev_reserve_bytes);
        assert_true(fabsf(x->sd - (float)(1.0 / sqrt((double)x->cols))) == 0.0f);
        mat_floats += (size_t)(x->rows * x->cols);
    }
    assert_ptr_equal(g.w.layers[1].moe.up[3] == NULL, 0);
    /* the host part: the same values as the host-made model's tensors */
    assert_int_equal(g.w.slab_floats + mat_floats, h.w.slab_floats);
    assert_memory_equal(g.w.embed, h.w.embed, (size_t)h.cfg.vocab * 64 * sizeof(float));
    assert_memory_equal(g.w.layers[0].mamba.A_log, h.w.layers[0].mamba.A_log, 4 * sizeof(float));
    assert_memory_equal(g.w.layers[0].mamba.conv_w, h.w.layers[0].mamba.conv_w,
                        (size_t)h.cfg.mamba.conv_dim * 4 * sizeof(float));
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(1, &be), RS_OK);
    rs_runner_config rc = rs_runner_config_default();
    rs_runner *r = NULL;
    assert_int_equal(rs_runner_create(&g, be, &rc, &r), RS_E_UNSUPPORTED);
    assert_non_null(strstr(rs_last_error(), "GPU"));
    assert_null(r);
    rs_backend_destroy(be);
    rs_model_free(&g);
    rs_model_free(&h);
    const char *blk = "{\"quantization\":{\"quant_algo\":\"FP8_PB_WO\",\"weight_block_size\":[32,32]}}";
    assert_int_equal(rs_model_init_random_device(folder_("nemo-blk", NEMO_MOE, blk), 9, &g), RS_E_UNSUPPORTED);
    assert_non_null(strstr(rs_last_error(), "blocks"));
    assert_null(g.dev_mats);
    assert_null(g.dev_reserve);
}

/* memory planned before it is allocated: a model whose fp32 weights exceed any machine (vocab 2^24 x
 * hidden 2^16, embeddings and head: 8.8 TB) is refused at once naming both sizes, nothing allocated; a runner whose KV caches
 * exceed the machine is refused before any buffer exists */
static void test_memory_refusals(void **state) {
    (void)state;
    rs_model m;
    const char *huge = "{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"*\",\"hidden_size\":65536,"
                       "\"vocab_size\":16777216,\"num_attention_heads\":4,\"num_key_value_heads\":1,\"head_dim\":16}";
    assert_int_equal(rs_model_init_random(folder_("huge", huge, NULL), 1, &m), RS_E_NOMEM);
    printf("  %s\n", rs_last_error());
    assert_non_null(strstr(rs_last_error(), "the fp32 weights need"));
    assert_non_null(strstr(rs_last_error(), "GB of memory"));
    assert_null(m.w.slab);
    assert_int_equal(rs_model_init_random(folder_("nemo", NEMO_MOE, NULL), 1, &m), RS_OK);
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(1, &be), RS_OK);
    rs_runner_config rc = rs_runner_config_default();
    rc.max_tokens = (size_t)1 << 40; /* KV caches of 2^40 positions */
    rs_runner *r = NULL;
    assert_int_equal(rs_runner_create(&m, be, &rc, &r), RS_E_NOMEM);
    printf("  %s\n", rs_last_error());
    assert_non_null(strstr(rs_last_error(), "KV caches"));
    assert_null(r);
    rs_backend_destroy(be);
    rs_model_free(&m);
}

/* the CPU memory plan from the config alone equals what loading allocates: the slab of a random model
 * and of every fixture checkpoint (dense, MoE, quantized), and the KV caches the runner would hold */
static void test_plan_matches_allocation(void **state) {
    (void)state;
    rs_model m;
    rs_model_plan p;
    assert_int_equal(rs_model_init_random(folder_("nemo", NEMO_MOE, NULL), 1, &m), RS_OK);
    assert_int_equal(rs_model_plan_cpu(&m.cfg, 3, 1000, 64, &p), RS_OK);
    assert_true(p.weights == 4.0 * (double)m.w.slab_floats);
    assert_true(p.kv_per_run == 4.0 * m.cfg.n_attn * 2 * m.cfg.attn.n_kv_heads * m.cfg.attn.head_dim * 1000.0);
    assert_true(p.logits == 4.0 * 3 * 64 * m.cfg.vocab);
    assert_true(p.total > p.weights + 3 * p.kv_per_run);
    rs_model_free(&m);
    static const char *fx[] = {"models/gdn-tiny-random", "models/mamba2-tiny-random", "models/gdn-moe-tiny-random",
                               "models/mamba2-moe-tiny-random", "models/mamba2-moe-flat-tiny-random",
                               "models/mamba2-moe-quant"};
    for (size_t i = 0; i < sizeof fx / sizeof *fx; i++) {
        char d[1024];
        rs_test_fixture_path(d, sizeof d, fx[i]);
        assert_int_equal(rs_model_load(d, &m), RS_OK);
        assert_int_equal(rs_model_plan_cpu(&m.cfg, 1, 10, 1, &p), RS_OK);
        /* a tied model's plan has no lm_head either; NemotronH with its own head: the loader adds it */
        const int own_head = m.w.lm_head != m.w.embed;
        const double head = own_head && m.cfg.tie_word_embeddings ? 4.0 * m.cfg.vocab * m.cfg.hidden : 0.0;
        printf("  %-36s slab %.0f bytes, plan %.0f\n", fx[i], 4.0 * (double)m.w.slab_floats, p.weights + head);
        assert_true(p.weights + head == 4.0 * (double)m.w.slab_floats);
        rs_model_free(&m);
    }
    assert_int_equal(rs_model_plan_cpu(NULL, 1, 1, 1, &p), RS_E_INVAL);
}

static void test_errors(void **state) {
    (void)state;
    rs_model m;
    char d[128];
    snprintf(d, sizeof d, "%s/none", g_tmp);
    assert_int_not_equal(rs_model_init_random(d, 1, &m), RS_OK);
    assert_null(m.w.slab);
    assert_int_equal(rs_model_init_random(folder_("bad", "{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":"
                                                         "\"E\",\"n_routed_experts\":6,\"n_group\":4}", NULL), 1, &m),
                     RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "n_group = 4 does not divide"));
    assert_null(m.w.slab);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_and_complete), cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_deep_models_stay_finite),    cmocka_unit_test(test_quantized_variant),
        cmocka_unit_test(test_memory_refusals),     cmocka_unit_test(test_plan_matches_allocation),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_device_made_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
