/* test_hf_config.c — config.json parsing (rs_hf_config.h) against transformers 5.17 semantics.
 *
 * Expected values are written from the transformers configuration classes and the published configs
 * (docs/model-formats.md), not from the parser: class defaults, the full_attention_interval rule,
 * qwen3_5's text_config nesting and top-level tie flag, NemotronH's legacy aliases (mamba_n_groups,
 * mamba_d_conv, mamba_dt_*, mamba_conv_bias), hybrid_override_pattern vs layers_block_type
 * precedence, the tagged-infinity time_step_limit, derived Mamba-2/GDN sizes, and the published
 * Nemotron-3-Nano-4B pattern (21 M, 17 '-', 4 '*' at 12, 17, 24, 32). Unsupported inputs (unknown
 * model_type, MoE, biases, RoPE scaling) must say "not supported yet"; malformed JSON and fields of the
 * wrong type give RS_E_FORMAT naming the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/eval/rs_hf_config.h"

static rs_status parse(const char *json, rs_model_config *c) {
    return rs_hf_config_parse(json, strlen(json), "test-config.json", c);
}

static void expect_err(const char *json, rs_status code, const char *needle) {
    rs_model_config c;
    rs_status st = parse(json, &c);
    if (st != code || !strstr(rs_last_error(), needle))
        fprintf(stderr, "json %s\n -> %d: %s (want %d, '%s')\n", json, st, rs_last_error(), code, needle);
    assert_int_equal(st, code);
    assert_non_null(strstr(rs_last_error(), "test-config.json"));
    assert_non_null(strstr(rs_last_error(), needle));
    assert_int_equal(c.n_layers, 0); /* zeroed on failure */
}

static void test_qwen35_text_defaults(void **state) {
    (void)state;
    rs_model_config c;
    /* everything else from Qwen3_5TextConfig's class defaults */
    assert_int_equal(parse("{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":8}", &c), RS_OK);
    assert_int_equal(c.family, RS_FAMILY_QWEN35);
    assert_string_equal(c.model_type, "qwen3_5_text");
    assert_int_equal(c.n_layers, 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(c.layer_kind[i], (i + 1) % 4 ? RS_LAYER_GDN : RS_LAYER_ATTENTION);
    assert_int_equal(c.n_gdn, 6);
    assert_int_equal(c.n_attn, 2);
    assert_int_equal(c.layer_has_mlp, 1);
    assert_int_equal(c.vocab, 248320);
    assert_int_equal(c.hidden, 4096);
    assert_int_equal(c.mlp.intermediate, 12288);
    assert_int_equal(c.mlp.activation, RS_ACT_SILU);
    assert_true(c.rms_eps == 1e-6f);
    assert_int_equal(c.tie_word_embeddings, 0);
    assert_int_equal(c.attn.n_heads, 16);
    assert_int_equal(c.attn.n_kv_heads, 4);
    assert_int_equal(c.attn.head_dim, 256);
    assert_int_equal(c.attn.output_gate, 1);
    assert_int_equal(c.attn.qk_norm, 1);
    assert_int_equal(c.attn.use_rope, 1);
    assert_true(c.attn.partial_rotary_factor == 0.25);
    assert_int_equal(c.attn.rotary_dim, 64);
    assert_true(c.attn.rope_theta == 10000.0);
    assert_int_equal(c.gdn.n_k_heads, 16);
    assert_int_equal(c.gdn.n_v_heads, 32);
    assert_int_equal(c.gdn.k_head_dim, 128);
    assert_int_equal(c.gdn.v_head_dim, 128);
    assert_int_equal(c.gdn.conv_kernel, 4);
    assert_int_equal(c.gdn.key_dim, 2048);
    assert_int_equal(c.gdn.value_dim, 4096);
    assert_int_equal(c.gdn.conv_dim, 8192);
    assert_int_equal(c.tokenizer, RS_TOKENIZER_UNSUPPORTED);

    /* interval 2, explicit null head_dim -> hidden / heads */
    assert_int_equal(parse("{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":4,\"full_attention_interval\":2,"
                           "\"hidden_size\":64,\"num_attention_heads\":4,\"head_dim\":null,\"vocab_size\":256}",
                           &c),
                     RS_OK);
    assert_int_equal(c.layer_kind[0], RS_LAYER_GDN);
    assert_int_equal(c.layer_kind[1], RS_LAYER_ATTENTION);
    assert_int_equal(c.attn.head_dim, 16);
    assert_int_equal(c.tokenizer, RS_TOKENIZER_BYTE);
}

/* The published Qwen3.5-4B text parameters, nested as in the multimodal checkpoint. */
static const char *QWEN35_4B =
    "{\"model_type\":\"qwen3_5\",\"tie_word_embeddings\":true,\"architectures\":[\"Qwen3_5ForConditionalGeneration\"],"
    "\"vision_config\":{\"depth\":24,\"hidden_size\":1024},"
    "\"text_config\":{\"model_type\":\"qwen3_5_text\",\"hidden_size\":2560,\"num_hidden_layers\":32,"
    "\"num_attention_heads\":16,\"num_key_value_heads\":4,\"head_dim\":256,\"intermediate_size\":9216,"
    "\"vocab_size\":248320,\"rms_norm_eps\":1e-06,\"linear_num_key_heads\":16,\"linear_key_head_dim\":128,"
    "\"linear_num_value_heads\":32,\"linear_value_head_dim\":128,\"linear_conv_kernel_dim\":4,"
    "\"tie_word_embeddings\":false,\"attn_output_gate\":true,"
    "\"layer_types\":[\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\","
    "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\","
    "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\","
    "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\","
    "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\","
    "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\","
    "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\","
    "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\"],"
    "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":10000000,\"partial_rotary_factor\":0.25,"
    "\"mrope_section\":[11,11,10],\"mrope_interleaved\":true}}}";

static void test_qwen35_nested(void **state) {
    (void)state;
    rs_model_config c;
    assert_int_equal(parse(QWEN35_4B, &c), RS_OK);
    assert_string_equal(c.model_type, "qwen3_5");
    assert_int_equal(c.family, RS_FAMILY_QWEN35);
    assert_int_equal(c.n_layers, 32);
    assert_int_equal(c.n_gdn, 24);
    assert_int_equal(c.n_attn, 8);
    assert_int_equal(c.layer_kind[3], RS_LAYER_ATTENTION);
    assert_int_equal(c.layer_kind[30], RS_LAYER_GDN);
    assert_int_equal(c.hidden, 2560);
    assert_int_equal(c.mlp.intermediate, 9216);
    assert_int_equal(c.tie_word_embeddings, 1); /* top-level key wins over text_config's */
    assert_true(c.attn.rope_theta == 1e7);
    assert_int_equal(c.attn.rotary_dim, 64);
    assert_int_equal(c.gdn.conv_dim, 8192);

    /* legacy layer names ("linear"/"full") are remapped like remap_legacy_layer_types */
    assert_int_equal(parse("{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":2,"
                           "\"layer_types\":[\"linear\",\"full\"]}", &c), RS_OK);
    assert_int_equal(c.layer_kind[0], RS_LAYER_GDN);
    assert_int_equal(c.layer_kind[1], RS_LAYER_ATTENTION);
    /* top-level rope keys (no rope_parameters) */
    assert_int_equal(parse("{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":4,\"rope_theta\":500000,"
                           "\"partial_rotary_factor\":0.5}", &c), RS_OK);
    assert_true(c.attn.rope_theta == 500000.0);
    assert_int_equal(c.attn.rotary_dim, 128);

    expect_err("{\"model_type\":\"qwen3_5\"}", RS_E_FORMAT, "text_config");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":3,\"layer_types\":[\"linear_attention\"]}",
               RS_E_FORMAT, "num_hidden_layers");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":1,\"layer_types\":[\"mlp\"]}",
               RS_E_UNSUPPORTED, "not supported yet");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"rope_parameters\":{\"rope_type\":\"yarn\",\"factor\":4}}",
               RS_E_UNSUPPORTED, "not supported yet");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"attention_bias\":true}", RS_E_UNSUPPORTED, "not supported yet");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"hidden_act\":\"gelu\"}", RS_E_UNSUPPORTED, "gelu");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"linear_num_key_heads\":3}", RS_E_FORMAT, "multiple");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"hidden_size\":\"64\"}", RS_E_FORMAT, "hidden_size");
    expect_err("{\"model_type\":\"qwen3_5\",\"text_config\":{\"hidden_size\":64.5}}", RS_E_FORMAT,
               "text_config.hidden_size");
}

static void test_nemotronh(void **state) {
    (void)state;
    rs_model_config c;
    /* published Nemotron-3-Nano-4B (legacy spelling, as on the hub) */
    const char *nano4b =
        "{\"model_type\":\"nemotron_h\",\"hidden_size\":3136,\"num_hidden_layers\":42,\"vocab_size\":131072,"
        "\"hybrid_override_pattern\":\"M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-\","
        "\"mamba_num_heads\":96,\"mamba_head_dim\":80,\"n_groups\":8,\"ssm_state_size\":128,\"conv_kernel\":4,"
        "\"chunk_size\":256,\"use_conv_bias\":true,\"num_attention_heads\":40,\"num_key_value_heads\":8,"
        "\"head_dim\":128,\"intermediate_size\":12544,\"mlp_hidden_act\":\"relu2\",\"layer_norm_epsilon\":1e-05,"
        "\"rms_norm_eps\":1e-03,\"mamba_proj_bias\":false,\"time_step_min\":0.001,\"time_step_max\":0.1,"
        "\"time_step_limit\":[0.0,{\"__float__\":\"Infinity\"}],\"tie_word_embeddings\":false}";
    assert_int_equal(parse(nano4b, &c), RS_OK);
    assert_int_equal(c.family, RS_FAMILY_NEMOTRONH);
    assert_int_equal(c.n_layers, 42);
    assert_int_equal(c.n_mamba, 21);
    assert_int_equal(c.n_mlp, 17);
    assert_int_equal(c.n_attn, 4);
    static const int attn_at[4] = {12, 17, 24, 32};
    for (int k = 0; k < 4; k++) assert_int_equal(c.layer_kind[attn_at[k]], RS_LAYER_ATTENTION);
    assert_int_equal(c.layer_has_mlp, 0);
    assert_true(c.rms_eps == 1e-5f); /* layer_norm_epsilon; the stray rms_norm_eps is ignored as in HF */
    assert_int_equal(c.mamba.d_inner, 7680);
    assert_int_equal(c.mamba.conv_dim, 9728);
    assert_int_equal(c.mamba.in_proj_dim, 17504);
    assert_int_equal(c.mamba.n_groups, 8);
    assert_int_equal(c.mamba.chunk_size, 256);
    assert_true(c.mamba.time_step_limit[0] == 0.0 && isinf(c.mamba.time_step_limit[1]));
    assert_true(c.mamba.time_step_min == 0.001);
    assert_int_equal(c.attn.n_heads, 40);
    assert_int_equal(c.attn.n_kv_heads, 8);
    assert_int_equal(c.attn.use_rope, 0);
    assert_int_equal(c.attn.output_gate, 0);
    assert_int_equal(c.attn.qk_norm, 0);
    assert_int_equal(c.mlp.activation, RS_ACT_RELU2);
    assert_int_equal(c.mlp.intermediate, 12544);
    assert_int_equal(c.tie_word_embeddings, 0);

    /* legacy aliases override, layers_block_type beats hybrid_override_pattern, class defaults */
    assert_int_equal(parse("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"***\","
                           "\"layers_block_type\":[\"mamba\",\"attention\",\"mlp\",\"linear_attention\","
                           "\"full_attention\"],\"n_groups\":8,\"mamba_n_groups\":4,\"mamba_d_conv\":3,"
                           "\"mamba_dt_min\":0.01,\"mamba_dt_max\":0.2,\"mamba_conv_bias\":false,"
                           "\"mamba_chunk_size\":32,\"mamba_dt_limit\":[0.001,50],\"num_key_value_heads\":null,"
                           "\"attention_head_dim\":64}", &c), RS_OK);
    assert_int_equal(c.n_layers, 5);
    static const rs_layer_kind k5[5] = {RS_LAYER_MAMBA2, RS_LAYER_ATTENTION, RS_LAYER_MLP, RS_LAYER_MAMBA2,
                                        RS_LAYER_ATTENTION};
    for (int i = 0; i < 5; i++) assert_int_equal(c.layer_kind[i], k5[i]);
    assert_int_equal(c.mamba.n_groups, 4);
    assert_int_equal(c.mamba.conv_kernel, 3);
    assert_true(c.mamba.time_step_min == 0.01);
    assert_true(c.mamba.time_step_max == 0.2);
    assert_int_equal(c.mamba.use_conv_bias, 0);
    assert_int_equal(c.mamba.chunk_size, 32);
    assert_true(c.mamba.time_step_limit[0] == 0.001 && c.mamba.time_step_limit[1] == 50.0);
    assert_int_equal(c.attn.n_kv_heads, 32); /* null -> num_attention_heads (default 32) */
    assert_int_equal(c.attn.head_dim, 64);   /* attention_head_dim when head_dim is absent */
    /* class defaults */
    assert_int_equal(c.hidden, 4096);
    assert_int_equal(c.vocab, 131072);
    assert_int_equal(c.mamba.n_heads, 128);
    assert_int_equal(c.mamba.head_dim, 64);
    assert_int_equal(c.mamba.d_state, 128);
    assert_int_equal(c.mlp.intermediate, 21504);
    assert_true(c.rms_eps == 1e-5f);
    assert_true(c.mamba.time_step_floor == 1e-4);

    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M-X\"}", RS_E_FORMAT, "'X'");
    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M\",\"use_bias\":true}",
               RS_E_UNSUPPORTED, "not supported yet");
    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M\",\"mamba_num_heads\":6,"
               "\"n_groups\":4}", RS_E_FORMAT, "multiple");
    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M\",\"time_step_limit\":[0]}",
               RS_E_FORMAT, "time_step_limit");
    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M\",\"use_conv_bias\":1}",
               RS_E_FORMAT, "use_conv_bias");
    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M\",\"mlp_hidden_act\":\"silu\"}",
               RS_E_UNSUPPORTED, "relu2");
}

static void test_unknown_and_malformed(void **state) {
    (void)state;
    expect_err("{\"model_type\":\"llama\",\"hidden_size\":64}", RS_E_UNSUPPORTED, "'llama' is not supported yet");
    expect_err("{\"model_type\":\"qwen3_next\"}", RS_E_UNSUPPORTED, "not supported yet");
    expect_err("{\"model_type\":\"qwen3_5_moe_vision\"}", RS_E_UNSUPPORTED, "not supported yet");
    expect_err("{\"hidden_size\":64}", RS_E_FORMAT, "model_type");
    expect_err("{\"model_type\":7}", RS_E_FORMAT, "model_type");
    expect_err("{\"model_type\":\"nemotron_h\",", RS_E_FORMAT, "JSON");
    expect_err("", RS_E_FORMAT, "JSON");
    expect_err("[1,2]", RS_E_FORMAT, "object");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"hidden_size\":64,}", RS_E_FORMAT, "JSON");
    /* widths whose products overflow int (found by fuzzing: tests/fuzz/corpus/hf_config) */
    expect_err("{\"model_type\":\"qwen3_5_text\",\"linear_num_key_heads\":16,\"linear_key_head_dim\":551616728}",
               RS_E_FORMAT, "linear_num_key_heads x linear_key_head_dim = 8825867648 is out of range");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"linear_num_value_heads\":65536,\"linear_value_head_dim\":65536,"
               "\"linear_num_key_heads\":1}", RS_E_FORMAT, "linear_num_value_heads x linear_value_head_dim");
    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M*\",\"mamba_num_heads\":2097152,\"mamba_head_dim\":1024,\"n_groups\":1}",
               RS_E_FORMAT, "mamba_num_heads x mamba_head_dim");
    expect_err("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M*\",\"n_groups\":8,\"mamba_num_heads\":8,"
               "\"mamba_head_dim\":1,\"ssm_state_size\":1073741824}", RS_E_FORMAT, "conv width");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"vocab_size\":2000000000}", RS_E_FORMAT, "vocab_size = 2000000000");
    /* integers that do not fit an int are out of range, not "not an integer" */
    expect_err("{\"model_type\":\"qwen3_5_text\",\"hidden_size\":4294967296}", RS_E_FORMAT,
               "hidden_size = 4294967296 is out of range");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"hidden_size\":-2147483648}", RS_E_FORMAT, "is out of range");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"hidden_size\":64.5}", RS_E_FORMAT, "hidden_size must be an integer");
    rs_model_config c;
    assert_int_equal(rs_hf_config_load("/nonexistent/dir/config.json", &c), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "/nonexistent/dir/config.json"));
}

/* float fields must be finite and in sane ranges; transformers' tagged "Infinity" / "NaN" and huge
 * numbers would pass a sign check alone (rms_eps = inf, rope_theta = inf) */
static void test_float_ranges(void **state) {
    (void)state;
#define Q_ "{\"model_type\":\"qwen3_5_text\","
#define N_ "{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M\","
#define INF_ "{\"__float__\":\"Infinity\"}"
#define NAN_ "{\"__float__\":\"NaN\"}"
    rs_model_config c;
    assert_int_equal(parse(Q_ "\"rms_norm_eps\":1e-6,\"rope_theta\":1e7}", &c), RS_OK);
    assert_int_equal(parse(N_ "\"layer_norm_epsilon\":1e-5,\"time_step_limit\":[0.0," INF_ "]}", &c), RS_OK);
    assert_true(isinf(c.mamba.time_step_limit[1])); /* +Infinity stays allowed where it means "no limit" */
    expect_err(Q_ "\"rms_norm_eps\":" INF_ "}", RS_E_FORMAT, "rms_norm_eps = inf is out of range (a finite number in (0, 1])");
    expect_err(Q_ "\"rms_norm_eps\":" NAN_ "}", RS_E_FORMAT, "rms_norm_eps = nan is out of range");
    expect_err(Q_ "\"rms_norm_eps\":1e308}", RS_E_FORMAT, "rms_norm_eps = 1e+308 is out of range");
    expect_err(Q_ "\"rms_norm_eps\":0}", RS_E_FORMAT, "rms_norm_eps = 0 is out of range");
    expect_err(Q_ "\"rms_norm_eps\":-1e-6}", RS_E_FORMAT, "rms_norm_eps");
    expect_err(Q_ "\"rope_theta\":" INF_ "}", RS_E_FORMAT, "rope_theta = inf is out of range (a finite number in (1, 1e+12])");
    expect_err(Q_ "\"rope_parameters\":{\"rope_theta\":1e300}}", RS_E_FORMAT, "rope_theta = 1e+300 is out of range");
    expect_err(Q_ "\"rope_theta\":" NAN_ "}", RS_E_FORMAT, "rope_theta = nan");
    expect_err(Q_ "\"rope_theta\":0.5}", RS_E_FORMAT, "rope_theta = 0.5");
    expect_err(Q_ "\"partial_rotary_factor\":" INF_ "}", RS_E_FORMAT, "partial_rotary_factor = inf is out of range");
    expect_err(Q_ "\"partial_rotary_factor\":" NAN_ "}", RS_E_FORMAT, "partial_rotary_factor = nan");
    expect_err(Q_ "\"partial_rotary_factor\":0}", RS_E_FORMAT, "partial_rotary_factor = 0");
    expect_err(N_ "\"layer_norm_epsilon\":" INF_ "}", RS_E_FORMAT, "layer_norm_epsilon = inf is out of range");
    expect_err(N_ "\"layer_norm_epsilon\":" NAN_ "}", RS_E_FORMAT, "layer_norm_epsilon = nan");
    expect_err(N_ "\"time_step_min\":" INF_ "}", RS_E_FORMAT, "time_step_min = inf is out of range");
    expect_err(N_ "\"mamba_dt_min\":" NAN_ "}", RS_E_FORMAT, "mamba_dt_min = nan"); /* the alias is named */
    expect_err(N_ "\"time_step_max\":1e308}", RS_E_FORMAT, "time_step_max = 1e+308");
    expect_err(N_ "\"time_step_floor\":-1}", RS_E_FORMAT, "time_step_floor = -1");
    expect_err(N_ "\"time_step_min\":0.5,\"time_step_max\":0.1}", RS_E_FORMAT, "time_step_min = 0.5 is above time_step_max = 0.1");
    expect_err(N_ "\"time_step_limit\":[" INF_ "," INF_ "]}", RS_E_FORMAT, "time_step_limit[0] = inf is out of range");
    expect_err(N_ "\"time_step_limit\":[0.0," NAN_ "]}", RS_E_FORMAT, "time_step_limit[1] = nan must be above");
    expect_err(N_ "\"mamba_dt_limit\":[1.0,0.5]}", RS_E_FORMAT, "mamba_dt_limit[1] = 0.5 must be above mamba_dt_limit[0] = 1");
#undef Q_
#undef N_
#undef INF_
#undef NAN_
}

/* MoE: both families' keys with transformers 5.17's defaults, the schedule letters / names, and the
 * configurations whose routing cannot be done (one-line errors naming the key) */
/* data/models/paper: the four models of the paper parse into the shapes of the paper's model table
 * (SSM / attention layers, key and value heads, d_k, d_v) and the published MoE sizes */
static void test_paper_models(void **state) {
    (void)state;
    static const struct {
        const char *dir;
        int ssm, attn, kh, vh, dk, dv, experts, topk, layers;
    } k[] = {
        {"nemotron-3-nano-4b", 21, 4, 8, 96, 128, 80, 0, 0, 42},
        {"nemotron-3-super-120b-a12b", 40, 8, 8, 128, 128, 64, 512, 22, 88},
        {"qwen3.5-4b", 24, 8, 16, 32, 128, 128, 0, 0, 32},
        {"qwen3.5-122b-a10b", 36, 12, 16, 64, 128, 128, 256, 8, 48},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/../../data/models/paper/%s/config.json", RS_FIXTURE_DIR, k[i].dir);
        rs_model_config c;
        if (rs_hf_config_load(p, &c) != RS_OK) fail_msg("%s: %s", k[i].dir, rs_last_error());
        const int mamba = c.family == RS_FAMILY_NEMOTRONH;
        assert_int_equal(mamba ? c.n_mamba : c.n_gdn, k[i].ssm);
        assert_int_equal(c.n_attn, k[i].attn);
        assert_int_equal(c.n_layers, k[i].layers);
        assert_int_equal(mamba ? c.mamba.n_groups : c.gdn.n_k_heads, k[i].kh);
        assert_int_equal(mamba ? c.mamba.n_heads : c.gdn.n_v_heads, k[i].vh);
        assert_int_equal(mamba ? c.mamba.d_state : c.gdn.k_head_dim, k[i].dk);
        assert_int_equal(mamba ? c.mamba.head_dim : c.gdn.v_head_dim, k[i].dv);
        assert_int_equal(c.is_moe ? c.moe.n_experts : 0, k[i].experts);
        assert_int_equal(c.is_moe ? c.moe.top_k : 0, k[i].topk);
    }
}

static void test_moe(void **state) {
    (void)state;
    rs_model_config c;
    /* NemotronH: 'E' in the legacy pattern, the keys of a Super-like config */
    assert_int_equal(parse("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"ME*EM-\",\"hidden_size\":64,"
                           "\"n_routed_experts\":16,\"num_experts_per_tok\":4,\"moe_intermediate_size\":48,"
                           "\"moe_shared_expert_intermediate_size\":96,\"moe_latent_size\":32,\"n_group\":4,"
                           "\"topk_group\":2,\"norm_topk_prob\":true,\"routed_scaling_factor\":2.5}", &c), RS_OK);
    assert_int_equal(c.n_layers, 6);
    assert_int_equal(c.layer_kind[1], RS_LAYER_MOE);
    assert_int_equal(c.layer_kind[3], RS_LAYER_MOE);
    assert_int_equal(c.n_moe, 2);
    assert_int_equal(c.n_mamba, 2);
    assert_true(c.is_moe && !c.mlp_is_moe);
    assert_int_equal(c.moe.router, RS_ROUTER_SIGMOID_GROUPED);
    assert_int_equal(c.moe.n_experts, 16);
    assert_int_equal(c.moe.top_k, 4);
    assert_int_equal(c.moe.intermediate, 48);
    assert_int_equal(c.moe.shared_intermediate, 96);
    assert_int_equal(c.moe.latent, 32);
    assert_int_equal(c.moe.expert_in, 32);
    assert_int_equal(c.moe.n_group, 4);
    assert_int_equal(c.moe.topk_group, 2);
    assert_int_equal(c.moe.norm_topk_prob, 1);
    assert_true(c.moe.routed_scaling_factor == 2.5f);
    assert_int_equal(c.moe.activation, RS_ACT_RELU2);
    assert_int_equal(c.moe.shared_gate, 0);
    /* layers_block_type "moe", num_local_experts (the attribute alias), defaults, no latent */
    assert_int_equal(parse("{\"model_type\":\"nemotron_h\",\"layers_block_type\":[\"moe\",\"mamba\"],"
                           "\"hidden_size\":64,\"num_local_experts\":6,\"moe_latent_size\":null}", &c), RS_OK);
    assert_int_equal(c.moe.n_experts, 6);
    assert_int_equal(c.moe.top_k, 2);
    assert_int_equal(c.moe.intermediate, 7688);
    assert_int_equal(c.moe.latent, 0);
    assert_int_equal(c.moe.expert_in, 64);
    assert_true(c.moe.routed_scaling_factor == 1.0f);
    /* no schedule: transformers' default [mamba, moe, attention, mlp] */
    assert_int_equal(parse("{\"model_type\":\"nemotron_h\"}", &c), RS_OK);
    assert_int_equal(c.n_layers, 4);
    assert_int_equal(c.layer_kind[1], RS_LAYER_MOE);
    assert_int_equal(c.moe.n_experts, 8);
    /* a dense NemotronH config ignores the MoE keys entirely */
    assert_int_equal(parse("{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"M-\",\"n_group\":3}", &c), RS_OK);
    assert_false(c.is_moe);
    assert_int_equal(c.moe.n_experts, 0);

    /* Qwen3.5-MoE, flat and nested */
    assert_int_equal(parse("{\"model_type\":\"qwen3_5_moe_text\",\"hidden_size\":64,\"num_hidden_layers\":4,"
                           "\"num_experts\":8,\"num_experts_per_tok\":3,\"moe_intermediate_size\":48,"
                           "\"shared_expert_intermediate_size\":96}", &c), RS_OK);
    assert_true(c.is_moe && c.mlp_is_moe && c.layer_has_mlp);
    assert_int_equal(c.n_moe, 4);
    assert_int_equal(c.moe.router, RS_ROUTER_SOFTMAX);
    assert_int_equal(c.moe.n_experts, 8);
    assert_int_equal(c.moe.top_k, 3);
    assert_int_equal(c.moe.expert_in, 64);
    assert_int_equal(c.moe.shared_gate, 1);
    assert_int_equal(c.moe.norm_topk_prob, 1);
    assert_int_equal(c.moe.activation, RS_ACT_SILU);
    assert_int_equal(parse("{\"model_type\":\"qwen3_5_moe\",\"text_config\":{\"num_hidden_layers\":48,"
                           "\"hidden_size\":3072,\"num_experts\":256,\"num_experts_per_tok\":8,"
                           "\"moe_intermediate_size\":1024,\"shared_expert_intermediate_size\":1024}}", &c), RS_OK);
    assert_int_equal(c.n_layers, 48);
    assert_int_equal(c.n_gdn, 36);
    assert_int_equal(c.n_attn, 12);
    assert_int_equal(c.moe.n_experts, 256);
    assert_int_equal(c.moe.intermediate, 1024);
    assert_string_equal(c.model_type, "qwen3_5_moe");
    /* transformers' Qwen3.5-MoE defaults (256 experts, 8 per token, 512 wide) */
    assert_int_equal(parse("{\"model_type\":\"qwen3_5_moe_text\"}", &c), RS_OK);
    assert_int_equal(c.moe.n_experts, 256);
    assert_int_equal(c.moe.top_k, 8);
    assert_int_equal(c.moe.intermediate, 512);
    assert_int_equal(c.hidden, 2048);

    /* impossible routings and widths */
#define NE_ "{\"model_type\":\"nemotron_h\",\"hybrid_override_pattern\":\"ME\","
#define QM_ "{\"model_type\":\"qwen3_5_moe_text\","
    expect_err(NE_ "\"n_routed_experts\":0}", RS_E_FORMAT, "n_routed_experts = 0 is out of range (1..4096)");
    expect_err(NE_ "\"n_routed_experts\":5000}", RS_E_FORMAT, "n_routed_experts = 5000 is out of range");
    expect_err(NE_ "\"n_routed_experts\":4,\"num_experts_per_tok\":5}", RS_E_FORMAT,
               "num_experts_per_tok = 5 is out of range (1..4");
    expect_err(NE_ "\"num_experts_per_tok\":0}", RS_E_FORMAT, "num_experts_per_tok = 0");
    expect_err(NE_ "\"n_routed_experts\":128,\"num_experts_per_tok\":65}", RS_E_FORMAT, "num_experts_per_tok = 65");
    expect_err(NE_ "\"n_routed_experts\":10,\"n_group\":4}", RS_E_FORMAT, "n_group = 4 does not divide");
    expect_err(NE_ "\"n_routed_experts\":8,\"n_group\":0}", RS_E_FORMAT, "n_group = 0");
    expect_err(NE_ "\"n_routed_experts\":8,\"n_group\":8,\"topk_group\":8,\"num_experts_per_tok\":1}",
               RS_E_FORMAT, "each group needs at least 2");
    expect_err(NE_ "\"n_routed_experts\":1,\"num_experts_per_tok\":1}", RS_E_FORMAT, "each group needs at least 2");
    expect_err(NE_ "\"n_routed_experts\":16,\"n_group\":4,\"topk_group\":5}", RS_E_FORMAT,
               "topk_group = 5 is out of range (1..n_group = 4");
    expect_err(NE_ "\"n_routed_experts\":16,\"n_group\":4,\"topk_group\":0}", RS_E_FORMAT, "topk_group = 0");
    expect_err(NE_ "\"n_routed_experts\":16,\"n_group\":4,\"topk_group\":1,\"num_experts_per_tok\":5}",
               RS_E_FORMAT, "num_experts_per_tok = 5 but the 1 kept groups (topk_group) hold only 4 experts");
    expect_err(NE_ "\"routed_scaling_factor\":0}", RS_E_FORMAT, "routed_scaling_factor = 0 is out of range");
    expect_err(NE_ "\"routed_scaling_factor\":{\"__float__\":\"Infinity\"}}", RS_E_FORMAT, "routed_scaling_factor = inf");
    expect_err(NE_ "\"routed_scaling_factor\":-1}", RS_E_FORMAT, "routed_scaling_factor = -1");
    expect_err(NE_ "\"moe_latent_size\":-3}", RS_E_FORMAT, "moe_latent_size must be positive or null");
    expect_err(NE_ "\"moe_intermediate_size\":0}", RS_E_FORMAT, "moe_intermediate_size must be positive");
    expect_err(NE_ "\"moe_shared_expert_intermediate_size\":0}", RS_E_FORMAT,
               "moe_shared_expert_intermediate_size must be positive");
    expect_err(NE_ "\"moe_intermediate_size\":20000000}", RS_E_FORMAT, "moe_intermediate_size = 20000000 is out of range");
    expect_err(NE_ "\"norm_topk_prob\":1}", RS_E_FORMAT, "norm_topk_prob must be true or false");
    expect_err(QM_ "\"num_experts\":-1}", RS_E_FORMAT, "num_experts = -1 is out of range");
    expect_err(QM_ "\"num_experts\":4,\"num_experts_per_tok\":8}", RS_E_FORMAT, "num_experts_per_tok = 8 is out of range");
    expect_err(QM_ "\"shared_expert_intermediate_size\":0}", RS_E_FORMAT, "shared_expert_intermediate_size must be positive");
    expect_err("{\"model_type\":\"qwen3_5_moe\",\"text_config\":{\"num_experts\":2.5}}", RS_E_FORMAT,
               "text_config.num_experts must be an integer");
    expect_err("{\"model_type\":\"qwen3_5_text\",\"num_experts\":8}", RS_E_FORMAT, "qwen3_5_moe");
    expect_err("{\"model_type\":\"qwen3_5_moe_text\",\"layer_types\":[\"moe\"],\"num_hidden_layers\":1}",
               RS_E_UNSUPPORTED, "'moe'");
#undef NE_
#undef QM_
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_paper_models),
        cmocka_unit_test(test_qwen35_text_defaults),
        cmocka_unit_test(test_qwen35_nested),
        cmocka_unit_test(test_nemotronh),
        cmocka_unit_test(test_unknown_and_malformed),
        cmocka_unit_test(test_float_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
