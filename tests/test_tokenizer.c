/* test_tokenizer.c — the byte-level tokenizer, the config-only path (rs_tokenizer_for_model) and
 * its refusals, rs_tokenizer_open on byte-level checkpoints, decode, and the SHA-256 of the
 * tokenizer files (FIPS 180-2 test vectors). The BPE tokenizers: tests/test_bpe_tokenizer.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "replayssm/eval/rs_sha256.h"
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
    assert_int_equal(rs_tokenizer_for_model(cfg.tokenizer, cfg.vocab, "m", &tok), RS_OK);
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
    assert_int_equal(rs_tokenizer_for_model(cfg.tokenizer, cfg.vocab, "/models/qwen", &tok), RS_E_UNSUPPORTED);
    assert_non_null(strstr(rs_last_error(), "/models/qwen"));
    assert_non_null(strstr(rs_last_error(), "not supported yet"));
    assert_non_null(strstr(rs_last_error(), "248320"));
    /* a byte tokenizer claim with a wrong vocabulary */
    cfg.tokenizer = RS_TOKENIZER_BYTE;
    cfg.vocab = 300;
    assert_int_equal(rs_tokenizer_for_model(cfg.tokenizer, cfg.vocab, "m", &tok), RS_E_UNSUPPORTED);
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
        assert_int_equal(rs_tokenizer_for_model(cfg.tokenizer, cfg.vocab, p, &tok), RS_OK);
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
        assert_int_equal(rs_tokenizer_for_model(cfg.tokenizer, cfg.vocab, "qwen", &tok), RS_E_UNSUPPORTED);
    }
}

static void test_byte_decode(void **state)
{
    (void)state;
    rs_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tokenizer = RS_TOKENIZER_BYTE;
    cfg.vocab = 256;
    rs_tokenizer tok;
    assert_int_equal(rs_tokenizer_for_model(cfg.tokenizer, cfg.vocab, "m", &tok), RS_OK);
    int32_t ids[256];
    for (int i = 0; i < 256; i++) ids[i] = 255 - i;
    char out[256];
    size_t n = 0;
    assert_int_equal(rs_tokenizer_decode(&tok, ids, 256, out, sizeof out, &n), RS_OK);
    assert_int_equal(n, 256);
    for (int i = 0; i < 256; i++) assert_int_equal((unsigned char)out[i], 255 - i);
    /* a short buffer: RS_E_SHAPE with the length needed */
    assert_int_equal(rs_tokenizer_decode(&tok, ids, 256, out, 10, &n), RS_E_SHAPE);
    assert_int_equal(n, 256);
    /* an id outside the vocabulary */
    ids[7] = 256;
    assert_int_equal(rs_tokenizer_decode(&tok, ids, 256, out, sizeof out, &n), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "position 7"));
    rs_tokenizer_free(&tok); /* harmless on a byte tokenizer */
    assert_int_equal(tok.vocab, 0);
}

/* rs_tokenizer_open on the byte-level fixture checkpoints (no tokenizer files) */
static void test_open_byte_models(void **state)
{
    (void)state;
    char dir[1024], p[1100];
    rs_test_fixture_path(dir, sizeof dir, "models/gdn-tiny-random");
    snprintf(p, sizeof p, "%s/config.json", dir);
    rs_model_config cfg;
    assert_int_equal(rs_hf_config_load(p, &cfg), RS_OK);
    assert_int_equal(cfg.tokenizer, RS_TOKENIZER_BYTE); /* no tokenizer files beside config.json */
    assert_int_equal(rs_tokenizer_probe(dir, p, sizeof p), RS_TOKFMT_NONE);
    rs_tokenizer tok;
    assert_int_equal(rs_tokenizer_open(dir, cfg.vocab, &tok), RS_OK);
    assert_int_equal(tok.format, RS_TOKFMT_BYTE);
    assert_string_equal(tok.name, "byte");
    int32_t ids[4];
    size_t n;
    assert_int_equal(rs_tokenizer_encode(&tok, "\xff\x00" "ab", 4, ids, 4, &n), RS_OK);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 255);
    assert_int_equal(ids[1], 0);
    rs_tokenizer_free(&tok);
    /* without a config nothing says the model is byte-level */
    assert_int_equal(rs_tokenizer_open(dir, 0, &tok), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "no tokenizer.json"));
    /* a real vocabulary without tokenizer files */
    cfg.vocab = 248320;
    assert_int_equal(rs_tokenizer_open(dir, cfg.vocab, &tok), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "248320"));
    assert_int_equal(rs_tokenizer_open("/nonexistent/model", cfg.vocab, &tok), RS_E_IO);
    assert_null(tok.model);
}

static void test_sha256(void **state)
{
    (void)state;
    char hex[65];
    rs_sha256("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    rs_sha256("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 448 bits: two blocks */
    rs_sha256(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *a = (char *)malloc(1000000);
    assert_non_null(a);
    memset(a, 'a', 1000000);
    rs_sha256(a, 1000000, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_roundtrip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_fixture_models),
        cmocka_unit_test(test_byte_decode),
        cmocka_unit_test(test_open_byte_models),
        cmocka_unit_test(test_sha256),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
