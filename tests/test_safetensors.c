/* test_safetensors.c — the validating safetensors reader (rs_safetensors.h).
 *
 * Every file is generated here (no fixtures): a valid file decodes to the exact values written
 * (F32 bit patterns, BF16 = top half of the float, F16 decoded by hand incl. subnormals/inf), its
 * metadata reads back; then each malformed variant — empty/truncated file, header length too small or
 * past the end, malformed JSON, unknown dtype, shape x dtype != byte range, ranges past the data,
 * overlapping ranges, holes, trailing bytes, bad field types — must fail with the right status and a
 * message naming the file (and the tensor where there is one). Sharded directories through
 * model.safetensors.index.json: found across shards, and wrong/missing shards or duplicate names are
 * errors. Finally every truncation length and 1000 random byte corruptions of a valid file must give
 * either a clean error or a consistent set (no crash; run under ASan/UBSan once).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "replayssm/eval/rs_safetensors.h"
#include "rs_test_util.h"

static char g_dir[64];

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_test_st_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_bytes(const char *path, const void *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
}

/* file = u64 LE header length | header | data; header_len_override < 0 means "the true length" */
static size_t make_st(unsigned char *out, size_t cap, const char *header, const void *data, size_t data_len,
                      long long header_len_override) {
    size_t hl = strlen(header);
    assert_true(8 + hl + data_len <= cap);
    uint64_t n = header_len_override < 0 ? (uint64_t)hl : (uint64_t)header_len_override;
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(n >> (8 * i));
    memcpy(out + 8, header, hl);
    if (data_len) memcpy(out + 8 + hl, data, data_len);
    return 8 + hl + data_len;
}

static char *path_of(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_dir, name);
    return buf;
}

/* Expect opening `bytes` (written to `name`) to fail with `code`; the message must name the file
 * and contain `needle` (e.g. the tensor name). */
static void expect_fail(const char *name, const unsigned char *bytes, size_t n, rs_status code, const char *needle) {
    char p[256];
    path_of(p, sizeof p, name);
    write_bytes(p, bytes, n);
    rs_st_set s;
    rs_status st = rs_st_open_file(p, &s);
    if (st != code) fprintf(stderr, "%s: got %d (%s), want %d\n", name, st, rs_last_error(), code);
    assert_int_equal(st, code);
    assert_int_equal(s.n_tensors, 0); /* left empty */
    assert_non_null(strstr(rs_last_error(), p));
    if (needle && !strstr(rs_last_error(), needle)) fprintf(stderr, "message lacks '%s': %s\n", needle, rs_last_error());
    if (needle) assert_non_null(strstr(rs_last_error(), needle));
}

/* the valid reference file: a F32 [2,3], b BF16 [4], c F16 [5], meta {"format":"pt","k":"v"} */
static const char *VALID_HEADER =
    "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"},"
    "\"c\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[32,42]},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}";

static size_t valid_data(unsigned char *d, float *a_vals, uint32_t *b_bits, uint16_t *c_half) {
    for (int i = 0; i < 6; i++) a_vals[i] = (float)(i * 1.25 - 3.0) / 7.0f;
    memcpy(d, a_vals, 24);
    const uint16_t b[4] = {0x3f80, 0xc040, 0x0001, 0x7f80}; /* 1, -3, smallest bf16 subnormal, +inf */
    for (int i = 0; i < 4; i++) {
        b_bits[i] = (uint32_t)b[i] << 16;
        memcpy(d + 24 + 2 * i, &b[i], 2);
    }
    const uint16_t c[5] = {0x3c00, 0xc000, 0x0001, 0x7c00, 0x3555}; /* 1, -2, 2^-24, inf, 0.333251953125 */
    memcpy(c_half, c, sizeof c);
    memcpy(d + 32, c, 10);
    return 42;
}

static void test_valid_file(void **state) {
    (void)state;
    unsigned char data[64], file[1024];
    float a[6];
    uint32_t bb[4];
    uint16_t ch[5];
    size_t dl = valid_data(data, a, bb, ch);
    size_t n = make_st(file, sizeof file, VALID_HEADER, data, dl, -1);
    char p[256];
    write_bytes(path_of(p, sizeof p, "valid.safetensors"), file, n);

    rs_st_set s;
    assert_int_equal(rs_st_open_file(p, &s), RS_OK);
    assert_int_equal(s.n_files, 1);
    assert_int_equal(s.n_tensors, 3);
    assert_string_equal(rs_st_metadata(&s, "format"), "pt");
    assert_string_equal(rs_st_metadata(&s, "k"), "v");
    assert_null(rs_st_metadata(&s, "missing"));
    assert_null(rs_st_find(&s, "__metadata__"));
    assert_null(rs_st_find(&s, "zz"));

    const rs_st_tensor *ta = rs_st_find(&s, "a"), *tb = rs_st_find(&s, "b"), *tc = rs_st_find(&s, "c");
    assert_non_null(ta);
    assert_non_null(tb);
    assert_non_null(tc);
    assert_int_equal(ta->dtype, RS_ST_F32);
    assert_int_equal(ta->ndim, 2);
    assert_int_equal(ta->shape[0], 2);
    assert_int_equal(ta->shape[1], 3);
    assert_int_equal(ta->numel, 6);
    assert_int_equal(ta->nbytes, 24);
    assert_int_equal(tb->dtype, RS_ST_BF16);
    assert_int_equal(tc->dtype, RS_ST_F16);
    assert_int_equal(tc->numel, 5);

    float out[6];
    rs_st_to_f32(ta, out);
    for (int i = 0; i < 6; i++) assert_int_equal(rs_test_f2u(out[i]), rs_test_f2u(a[i]));
    rs_st_to_f32(tb, out);
    for (int i = 0; i < 4; i++) assert_int_equal(rs_test_f2u(out[i]), bb[i]);
    rs_st_to_f32(tc, out);
    /* binary16 values written by hand: 1, -2, 2^-24 (smallest subnormal), +inf, 0x3555 = 1365/4096 */
    assert_true(out[0] == 1.0f);
    assert_true(out[1] == -2.0f);
    assert_true(out[2] == ldexpf(1.0f, -24));
    assert_true(isinf(out[3]) && out[3] > 0);
    assert_true(out[4] == 1365.0f / 4096.0f);
    rs_st_close(&s);
    assert_int_equal(s.n_tensors, 0);
    rs_st_close(&s); /* idempotent */

    /* all 2^16 binary16 codes: finite ones must equal the value rebuilt from the fields in double */
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t code = (uint16_t)h;
        unsigned char f2[128];
        const char *hdr = "{\"x\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[0,2]}}";
        size_t m = make_st(f2, sizeof f2, hdr, &code, 2, -1);
        (void)m;
        rs_st_tensor t;
        memset(&t, 0, sizeof t);
        t.dtype = RS_ST_F16;
        t.numel = 1;
        t.data = &code;
        float v;
        rs_st_to_f32(&t, &v);
        int e = (h >> 10) & 31, mant = h & 1023;
        double sign = (h & 0x8000) ? -1.0 : 1.0;
        if (e == 31) {
            if (mant == 0) assert_true(isinf(v) && (v > 0) == (sign > 0));
            else assert_true(isnan(v));
        } else {
            double ref = e == 0 ? sign * ldexp(mant, -24) : sign * ldexp(1024 + mant, e - 25);
            assert_true((double)v == ref);
            assert_true(!!signbit(v) == !!signbit(sign));
        }
    }
}

/* U8 and F8_E4M3 (quantized checkpoints): sizes and names, a parsed file, and every E4M3 code against
 * the value rebuilt from its fields in double (OCP E4M3: bias 7, no infinities, S.1111.111 NaN) */
static void test_byte_dtypes(void **state) {
    (void)state;
    assert_int_equal(rs_st_dtype_size(RS_ST_U8), 1);
    assert_int_equal(rs_st_dtype_size(RS_ST_F8_E4M3), 1);
    assert_string_equal(rs_st_dtype_name(RS_ST_U8), "U8");
    assert_string_equal(rs_st_dtype_name(RS_ST_F8_E4M3), "F8_E4M3");
    unsigned char data[8] = {0, 1, 200, 255, 0x38, 0xb8, 0x7e, 0x01}, file[512];
    const char *hdr = "{\"q\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[0,4]},"
                      "\"s\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[4,8]}}";
    size_t n = make_st(file, sizeof file, hdr, data, 8, -1);
    char p[256];
    write_bytes(path_of(p, sizeof p, "bytes.safetensors"), file, n);
    rs_st_set set;
    assert_int_equal(rs_st_open_file(p, &set), RS_OK);
    const rs_st_tensor *q = rs_st_find(&set, "q"), *sc = rs_st_find(&set, "s");
    assert_non_null(q);
    assert_non_null(sc);
    assert_int_equal(q->dtype, RS_ST_U8);
    assert_int_equal(q->nbytes, 4);
    assert_int_equal(sc->dtype, RS_ST_F8_E4M3);
    float out[4];
    rs_st_to_f32(q, out);
    assert_true(out[0] == 0.0f && out[1] == 1.0f && out[2] == 200.0f && out[3] == 255.0f);
    rs_st_to_f32(sc, out);
    assert_true(out[0] == 1.0f && out[1] == -1.0f && out[2] == 448.0f && out[3] == ldexpf(1.0f, -9));
    rs_st_close(&set);
    /* a U8 tensor whose byte count does not match its shape is refused like any other */
    hdr = "{\"q\":{\"dtype\":\"U8\",\"shape\":[3,2],\"data_offsets\":[0,4]}}";
    n = make_st(file, sizeof file, hdr, data, 4, -1);
    write_bytes(path_of(p, sizeof p, "bytes-bad.safetensors"), file, n);
    assert_int_equal(rs_st_open_file(p, &set), RS_E_FORMAT);
    for (uint32_t c = 0; c < 256; c++) {
        rs_st_tensor t;
        memset(&t, 0, sizeof t);
        uint8_t code = (uint8_t)c;
        t.dtype = RS_ST_F8_E4M3;
        t.numel = 1;
        t.data = &code;
        float v;
        rs_st_to_f32(&t, &v);
        const int e = (c >> 3) & 15, m = c & 7;
        const double sign = (c & 0x80) ? -1.0 : 1.0;
        if (e == 15 && m == 7) {
            assert_true(isnan(v));
        } else {
            const double ref = e == 0 ? sign * ldexp(m, -9) : sign * ldexp(8 + m, e - 10);
            assert_true((double)v == ref);
            assert_true(!!signbit(v) == !!signbit(sign));
        }
    }
}

static void test_truncated_and_length(void **state) {
    (void)state;
    unsigned char data[64], file[1024];
    float a[6];
    uint32_t bb[4];
    uint16_t ch[5];
    size_t dl = valid_data(data, a, bb, ch);
    size_t n = make_st(file, sizeof file, VALID_HEADER, data, dl, -1);
    size_t hl = strlen(VALID_HEADER);

    expect_fail("empty.safetensors", file, 0, RS_E_FORMAT, "truncated");
    expect_fail("short5.safetensors", file, 5, RS_E_FORMAT, "truncated");
    /* header cut: the declared length now runs past the end of the file */
    expect_fail("cut_header.safetensors", file, 8 + hl / 2, RS_E_FORMAT, "past the end");
    /* data cut: tensor 'c' (the last range) runs past the data section */
    expect_fail("cut_data.safetensors", file, n - 3, RS_E_FORMAT, "'c'");
    /* declared header length past the end of an intact file */
    unsigned char f2[1024];
    size_t n2 = make_st(f2, sizeof f2, VALID_HEADER, data, dl, (long long)(n));
    expect_fail("len_past_end.safetensors", f2, n2, RS_E_FORMAT, "past the end");
    n2 = make_st(f2, sizeof f2, VALID_HEADER, data, dl, (long long)1 << 62);
    expect_fail("len_huge.safetensors", f2, n2, RS_E_FORMAT, "limit");
    n2 = make_st(f2, sizeof f2, VALID_HEADER, data, dl, 1);
    expect_fail("len_one.safetensors", f2, n2, RS_E_FORMAT, "too small");
    /* a shorter declared length cuts the JSON: malformed */
    n2 = make_st(f2, sizeof f2, VALID_HEADER, data, dl, (long long)hl - 4);
    expect_fail("len_short.safetensors", f2, n2, RS_E_FORMAT, "JSON");
}

typedef struct bad_case {
    const char *name;
    const char *header;
    size_t data_len;
    rs_status code;
    const char *needle;
} bad_case;

static void test_malformed_headers(void **state) {
    (void)state;
    static const bad_case cases[] = {
        {"json1", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],", 4, RS_E_FORMAT, "JSON"},
        {"json2", "{\"a\" \"dtype\"}", 0, RS_E_FORMAT, "JSON"},
        {"notobj", "[1,2,3]", 0, RS_E_FORMAT, "'{'"},
        {"dtype_i64", "{\"w\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, RS_E_UNSUPPORTED, "'w'"},
        {"dtype_f64", "{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, RS_E_UNSUPPORTED, "F64"},
        {"dtype_num", "{\"w\":{\"dtype\":3,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, RS_E_FORMAT, "'w'"},
        {"shape_bytes", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16, RS_E_FORMAT, "'w'"},
        {"shape_bf16", "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 16, RS_E_FORMAT,
         "'w'"},
        {"shape_neg", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, RS_E_FORMAT, "'w'"},
        {"shape_frac", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, RS_E_FORMAT, "'w'"},
        {"shape_overflow",
         "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4, RS_E_FORMAT,
         "'w'"},
        {"ndim9", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, RS_E_FORMAT,
         "'w'"},
        {"offs_rev", "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, RS_E_FORMAT, "'w'"},
        {"offs_three", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4, RS_E_FORMAT, "'w'"},
        {"offs_str", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",4]}}", 4, RS_E_FORMAT, "'w'"},
        {"past_data", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, RS_E_FORMAT, "'w'"},
        {"overlap",
         "{\"p\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
         "\"q\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 24, RS_E_FORMAT, "overlap"},
        {"same_range",
         "{\"p\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"q\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8, RS_E_FORMAT, "overlap"},
        {"hole",
         "{\"p\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"q\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}", 24, RS_E_FORMAT, "'q'"},
        {"trailing", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12, RS_E_FORMAT,
         "trailing"},
        {"dup_name",
         "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, RS_E_FORMAT, "twice"},
        {"entry_num", "{\"w\":5}", 0, RS_E_FORMAT, "'w'"},
        {"no_offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, RS_E_FORMAT, "'w'"},
        {"meta_num", "{\"__metadata__\":{\"a\":1}}", 0, RS_E_FORMAT, "__metadata__"},
        {"meta_arr", "{\"__metadata__\":[]}", 0, RS_E_FORMAT, "__metadata__"},
        {"empty_name", "{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, RS_E_FORMAT, "empty"},
    };
    unsigned char zeros[64] = {0}, file[2048];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = make_st(file, sizeof file, cases[i].header, zeros, cases[i].data_len, -1);
        char name[64];
        snprintf(name, sizeof name, "%s.safetensors", cases[i].name);
        expect_fail(name, file, n, cases[i].code, cases[i].needle);
    }
    /* sanity: the format's corner cases that ARE valid: a scalar, a zero-size tensor, no tensors */
    static const char *ok[] = {
        "{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
        "{\"z\":{\"dtype\":\"BF16\",\"shape\":[0,7],\"data_offsets\":[0,0]},"
        "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
        "{}",
        "{\"__metadata__\":{}}",
    };
    static const size_t ok_len[] = {4, 4, 0, 0};
    for (size_t i = 0; i < 4; i++) {
        size_t n = make_st(file, sizeof file, ok[i], zeros, ok_len[i], -1);
        char p[256];
        write_bytes(path_of(p, sizeof p, "ok.safetensors"), file, n);
        rs_st_set s;
        rs_status st = rs_st_open_file(p, &s);
        if (st != RS_OK) fprintf(stderr, "ok[%zu]: %s\n", i, rs_last_error());
        assert_int_equal(st, RS_OK);
        if (i == 0) assert_int_equal(rs_st_find(&s, "s")->numel, 1);
        rs_st_close(&s);
    }
    rs_st_set s;
    char p[256];
    assert_int_equal(rs_st_open_file(path_of(p, sizeof p, "does-not-exist.safetensors"), &s), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "does-not-exist"));
}

/* a two-shard checkpoint directory */
static void write_shard(const char *dir, const char *file, const char *tname, float v) {
    char hdr[256], p[512];
    snprintf(hdr, sizeof hdr, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", tname);
    float d[2] = {v, -v};
    unsigned char buf[512];
    size_t n = make_st(buf, sizeof buf, hdr, d, 8, -1);
    snprintf(p, sizeof p, "%s/%s", dir, file);
    write_bytes(p, buf, n);
}

static void write_text(const char *dir, const char *file, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    write_bytes(p, text, strlen(text));
}

static void test_sharded(void **state) {
    (void)state;
    char d[256];
    snprintf(d, sizeof d, "%s/sharded", g_dir);
    assert_int_equal(mkdir(d, 0700), 0);
    write_shard(d, "model-00001-of-00002.safetensors", "x.weight", 1.5f);
    write_shard(d, "model-00002-of-00002.safetensors", "y.weight", 2.5f);
    write_text(d, "model.safetensors.index.json",
               "{\"metadata\":{\"total_size\":16},\"weight_map\":{\"x.weight\":\"model-00001-of-00002.safetensors\","
               "\"y.weight\":\"model-00002-of-00002.safetensors\"}}");
    rs_st_set s;
    rs_status st = rs_st_open_dir(d, &s);
    if (st) fprintf(stderr, "%s\n", rs_last_error());
    assert_int_equal(st, RS_OK);
    assert_int_equal(s.n_files, 2);
    assert_int_equal(s.n_tensors, 2);
    const rs_st_tensor *x = rs_st_find(&s, "x.weight"), *y = rs_st_find(&s, "y.weight");
    assert_non_null(x);
    assert_non_null(y);
    float v[2];
    rs_st_to_f32(y, v);
    assert_true(v[0] == 2.5f && v[1] == -2.5f);
    assert_non_null(strstr(s.files[y->file].path, "00002"));
    rs_st_close(&s);

    /* weight_map names the wrong shard for a tensor */
    write_text(d, "model.safetensors.index.json",
               "{\"weight_map\":{\"x.weight\":\"model-00002-of-00002.safetensors\","
               "\"y.weight\":\"model-00002-of-00002.safetensors\"}}");
    assert_int_equal(rs_st_open_dir(d, &s), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "x.weight"));
    /* a missing shard */
    write_text(d, "model.safetensors.index.json",
               "{\"weight_map\":{\"x.weight\":\"model-00001-of-00002.safetensors\","
               "\"y.weight\":\"model-00003-of-00003.safetensors\"}}");
    assert_int_equal(rs_st_open_dir(d, &s), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "model-00003-of-00003.safetensors"));
    /* path escapes are refused */
    write_text(d, "model.safetensors.index.json", "{\"weight_map\":{\"x.weight\":\"../valid.safetensors\"}}");
    assert_int_equal(rs_st_open_dir(d, &s), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "x.weight"));
    /* malformed index JSON */
    write_text(d, "model.safetensors.index.json", "{\"weight_map\":{\"x.weight\":");
    assert_int_equal(rs_st_open_dir(d, &s), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "index.json"));
    /* the same tensor name in two shards */
    write_shard(d, "model-00002-of-00002.safetensors", "x.weight", 2.5f);
    write_text(d, "model.safetensors.index.json",
               "{\"weight_map\":{\"x.weight\":\"model-00001-of-00002.safetensors\","
               "\"y.weight\":\"model-00002-of-00002.safetensors\"}}");
    assert_int_equal(rs_st_open_dir(d, &s), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "twice"));
    assert_int_equal(s.n_files, 0);

    /* neither file present */
    char e[256];
    snprintf(e, sizeof e, "%s/emptydir", g_dir);
    assert_int_equal(mkdir(e, 0700), 0);
    assert_int_equal(rs_st_open_dir(e, &s), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "emptydir"));
}

/* Every truncation and random corruptions of the valid file: clean error or a consistent set. */
static void test_corruption_never_crashes(void **state) {
    (void)state;
    unsigned char data[64], file[1024], mut[1024];
    float a[6];
    uint32_t bb[4];
    uint16_t ch[5];
    size_t dl = valid_data(data, a, bb, ch);
    size_t n = make_st(file, sizeof file, VALID_HEADER, data, dl, -1);
    char p[256];
    path_of(p, sizeof p, "mut.safetensors");
    int n_ok = 0, n_err = 0;
    for (size_t len = 0; len < n; len++) {
        write_bytes(p, file, len);
        rs_st_set s;
        assert_int_not_equal(rs_st_open_file(p, &s), RS_OK); /* every strict prefix is invalid */
        assert_non_null(strstr(rs_last_error(), p));
    }
    uint64_t rng = 12345;
    for (int it = 0; it < 1000; it++) {
        memcpy(mut, file, n);
        int flips = 1 + (int)(rs_test_splitmix64(&rng) % 4);
        for (int k = 0; k < flips; k++) {
            size_t pos = (size_t)(rs_test_splitmix64(&rng) % n);
            uint64_t r = rs_test_splitmix64(&rng);
            /* mostly JSON-ish characters inside the header, random bytes elsewhere */
            static const char js[] = "{}[]\",:0123456789-.eE \\FBI";
            mut[pos] = (pos >= 8 && pos < n - dl && (r & 1)) ? (unsigned char)js[(r >> 8) % (sizeof js - 1)]
                                                            : (unsigned char)(r >> 16);
        }
        write_bytes(p, mut, n);
        rs_st_set s;
        rs_status st = rs_st_open_file(p, &s);
        if (st == RS_OK) {
            n_ok++;
            /* a set that opened must be internally consistent: every tensor inside the mapping */
            for (int i = 0; i < s.n_tensors; i++) {
                const rs_st_tensor *t = &s.tensors[i];
                const unsigned char *base = s.files[t->file].map;
                assert_true((const unsigned char *)t->data >= base + s.files[t->file].data_off);
                assert_true((const unsigned char *)t->data + t->nbytes <= base + s.files[t->file].size);
                assert_int_equal((int64_t)t->nbytes, t->numel * (int64_t)rs_st_dtype_size(t->dtype));
            }
            rs_st_close(&s);
        } else {
            n_err++;
            assert_true(strlen(rs_last_error()) > 0);
            assert_int_equal(s.n_tensors, 0);
        }
    }
    assert_true(n_err > 0);
    (void)n_ok; /* corruptions in the data section or in metadata values stay valid files */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_byte_dtypes),
        cmocka_unit_test(test_truncated_and_length),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_corruption_never_crashes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
