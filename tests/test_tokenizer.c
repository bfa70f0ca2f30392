/* test_tokenizer.c — byte-level tokenizer and the refusal of unsupported tokenizers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_tokenizer.h"
#include "rs_test_util.h"

static void test_byte_roundtrip(void **state)
{
    (void)state;
    rs_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tokenizer = RS_TOKENIZER_BYTE;
    cfg.vocab = 256;
    rs_tokenizer tok;
    assert_int_equal(rs_tokenizer_for_model(&cfg, "m", &tok), RS_OK);
    assert_string_equal(tok.name, "byte");
    char text[256];
    for (int i = 0; i < 256; i++) text[i] = (char)i; /* every byte value, NUL and 0xff included */
    int32_t ids[300];
    size_t n = 0;
    assert_int_equal(rs_tokenizer_encode(&tok, text, 256, ids, 300, &n), RS_OK);
    assert_int_equal(n, 256);
    for (int i = 0; i < 256; i++) assert_int_equal(ids[i], i);
    /* max_ids truncates */
    assert_int_equal(rs_tokenizer_encode(&tok, text, 256, ids, 10, &n), RS_OK);
    assert_int_equal(n, 10);
    size_t c = 0;
    assert_int_equal(rs_tokenizer_count(&tok, text, 200, &c), RS_OK);
    assert_int_equal(c, 200);
}

static void test_refusals(void **state)
{
    (void)state;
    rs_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    rs_tokenizer tok;
    cfg.tokenizer = RS_TOKENIZER_UNSUPPORTED;
    cfg.vocab = 248320;
    assert_int_equal(rs_tokenizer_for_model(&cfg, "/models/qwen", &tok), RS_E_UNSUPPORTED);
    assert_non_null(strstr(rs_last_error(), "/models/qwen"));
    assert_non_null(strstr(rs_last_error(), "not supported yet"));
    assert_non_null(strstr(rs_last_error(), "248320"));
    /* a byte tokenizer claim with a wrong vocabulary */
    cfg.tokenizer = RS_TOKENIZER_BYTE;
    cfg.vocab = 300;
    assert_int_equal(rs_tokenizer_for_model(&cfg, "m", &tok), RS_E_UNSUPPORTED);
    /* a zeroed tokenizer never encodes */
    memset(&tok, 0, sizeof tok);
    int32_t ids[4];
    size_t n = 0;
    assert_int_equal(rs_tokenizer_encode(&tok, "abcd", 4, ids, 4, &n), RS_E_UNSUPPORTED);
}

/* the config parser decides the kind: the committed fixture models are byte-level (vocab 256) */
static void test_fixture_models(void **state)
{
    (void)state;
    const char *names[] = {"models/gdn-tiny-random/config.json", "models/mamba2-tiny-random/config.json"};
    for (int i = 0; i < 2; i++) {
        char p[1024];
        rs_test_fixture_path(p, sizeof p, names[i]);
        rs_model_config cfg;
        assert_int_equal(rs_hf_config_load(p, &cfg), RS_OK);
        rs_tokenizer tok;
        assert_int_equal(rs_tokenizer_for_model(&cfg, p, &tok), RS_OK);
        assert_int_equal(tok.vocab, cfg.vocab);
    }
    /* a real-vocabulary config is refused */
    const char *qwen = "{\"model_type\":\"qwen3_5_text\",\"vocab_size\":248320,\"hidden_size\":64,"
                       "\"num_hidden_layers\":1,\"layer_types\":[\"full_attention\"],\"num_attention_heads\":2,"
                       "\"num_key_value_heads\":1,\"head_dim\":32,\"intermediate_size\":64,"
                       "\"linear_num_key_heads\":1,\"linear_num_value_heads\":1,\"linear_key_head_dim\":32,"
                       "\"linear_value_head_dim\":32}";
    rs_model_config cfg;
    if (rs_hf_config_parse(qwen, strlen(qwen), "qwen.json", &cfg) == RS_OK) {
        rs_tokenizer tok;
        assert_int_equal(rs_tokenizer_for_model(&cfg, "qwen", &tok), RS_E_UNSUPPORTED);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_roundtrip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_fixture_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
