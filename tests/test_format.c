/* test_format.c — the format config-string grammar (rs_format.h): every valid string
 * parses, prints canonically and parses back to the same format; a bare base is its RTN format;
 * malformed strings give RS_E_INVAL with a message that lists the valid ones; a rounding word over
 * a format (rs_format_set_rounding); the field names of a format; block sizes and exact bytes per
 * element. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/quant/rs_format.h"

static int same_format(const rs_format *a, const rs_format *b)
{
    if (a->kind != b->kind || a->fp8_pow2 != b->fp8_pow2 || a->nvfp4_floor != b->nvfp4_floor) return 0;
    if (a->kind == RS_FMT_FP32) return 1;
    if (a->rounding != b->rounding) return 0;
    return a->rounding == RS_ROUND_RTN || a->sr_bits == b->sr_bits;
}

/* Build every valid string from the grammar, independently of the parser:
 * fp32, and base x {rtn, sr, sr1..sr32} x {no option, the base's option}. */
static void test_all_valid_roundtrip(void **state)
{
    (void)state;
    static const char *bases[] = {"fp16", "bf16", "fp8", "nvfp4"};
    static const rs_format_kind kinds[] = {RS_FMT_FP16, RS_FMT_BF16, RS_FMT_FP8, RS_FMT_NVFP4};
    int count = 0;

    rs_format f, g;
    char buf[64];
    assert_int_equal(rs_format_parse("fp32", &f), RS_OK);
    assert_int_equal(f.kind, RS_FMT_FP32);
    assert_int_equal(rs_format_print(&f, buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "fp32");
    rs_format fp32 = rs_format_fp32();
    assert_true(same_format(&f, &fp32));
    ++count;

    for (int b = 0; b < 4; ++b) {
        for (int r = -1; r <= 32; ++r) { /* -1 = rtn, 0 = plain sr, 1..32 = srK */
            for (int opt = 0; opt < 2; ++opt) {
                const char *optname = opt == 0 ? "" : kinds[b] == RS_FMT_FP8 ? "+pow2"
                                                    : kinds[b] == RS_FMT_NVFP4 ? "+floor" : NULL;
                if (!optname) continue;
                char s[64], canon[64];
                if (r < 0) snprintf(s, sizeof s, "%s-rtn%s", bases[b], optname);
                else if (r == 0) snprintf(s, sizeof s, "%s-sr%s", bases[b], optname);
                else snprintf(s, sizeof s, "%s-sr%d%s", bases[b], r, optname);
                /* canonical: sr32 prints as sr */
                if (r == 32) snprintf(canon, sizeof canon, "%s-sr%s", bases[b], optname);
                else snprintf(canon, sizeof canon, "%s", s);

                assert_int_equal(rs_format_parse(s, &f), RS_OK);
                assert_int_equal(f.kind, kinds[b]);
                assert_int_equal(f.rounding, r < 0 ? RS_ROUND_RTN : RS_ROUND_SR);
                if (r >= 0) assert_int_equal(f.sr_bits, r == 0 ? 32 : r);
                assert_int_equal(f.fp8_pow2, opt && kinds[b] == RS_FMT_FP8);
                assert_int_equal(f.nvfp4_floor, opt && kinds[b] == RS_FMT_NVFP4);

                assert_int_equal(rs_format_print(&f, buf, sizeof buf), RS_OK);
                assert_string_equal(buf, canon);
                assert_int_equal(rs_format_parse(buf, &g), RS_OK);
                assert_true(same_format(&f, &g));
                ++count;
            }
        }
    }
    /* 1 + (fp16, bf16: 34 each) + (fp8, nvfp4: 68 each) */
    assert_int_equal(count, 1 + 34 * 2 + 68 * 2);
}

static void test_examples_from_header(void **state)
{
    (void)state;
    static const char *ex[] = {"fp32",     "fp16-sr",   "bf16-rtn",      "fp8-rtn",
                               "fp8-sr+pow2", "nvfp4-sr", "nvfp4-sr8", "nvfp4-rtn+floor"};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; ++i) {
        rs_format f;
        char buf[32];
        assert_int_equal(rs_format_parse(ex[i], &f), RS_OK);
        assert_int_equal(rs_format_print(&f, buf, sizeof buf), RS_OK);
        assert_string_equal(buf, ex[i]);
    }
    rs_format f;
    assert_int_equal(rs_format_parse("nvfp4-sr8", &f), RS_OK);
    assert_int_equal(f.sr_bits, 8);
    assert_int_equal(rs_format_parse("fp16-sr", &f), RS_OK);
    assert_int_equal(f.sr_bits, RS_SR_BITS_DEFAULT);
}

static void test_bad_strings(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",          "fp64",          "fp16+",          "fp16-",         "fp16-rn",       "fp16-sr0",
        "fp16-sr33", "fp16-sr08",     "fp16-sr100",     "fp16-sr-1",     "fp16-srx",      "FP8-rtn",
        "fp8-RTN",   "fp32-rtn",      "fp32-sr",        " fp8-rtn",      "fp8-rtn ",      "fp8-rtn+",
        "fp8-rtn+pow2+pow2", "fp8-rtn+floor", "nvfp4-rtn+pow2", "fp16-rtn+pow2", "bf16-sr+floor",
        "nvfp4-rtn+floor+floor", "fp8rtn", "fp8--rtn", "nvfp4-sr8+", "fp8-rtn+pow", "e4m3", "nvfp4-sr 8",
        "fp8-sr+pow2-rtn", "fp8-rtnsr", "nvfp4+floor-rtn", "fp8+pow2+pow2", "nvfp4+pow2", "fp32+floor",
        "fp16sr",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        rs_format f = rs_format_fp32();
        f.kind = RS_FMT_NVFP4; /* sentinel: must be left untouched on failure */
        rs_status st = rs_format_parse(bad[i], &f);
        if (st != RS_E_INVAL) fail_msg("'%s' parsed (status %d)", bad[i], (int)st);
        assert_int_equal(f.kind, RS_FMT_NVFP4);
        const char *msg = rs_last_error();
        /* the message names the offending string and lists the valid ones */
        assert_non_null(strstr(msg, "fp8-rtn"));
        assert_non_null(strstr(msg, "nvfp4-sr"));
        assert_non_null(strstr(msg, "bf16-rtn"));
        assert_non_null(strstr(msg, "fp32"));
        if (bad[i][0]) {
            char quoted[80];
            snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
            assert_non_null(strstr(msg, quoted));
        }
    }
    rs_format f;
    assert_int_equal(rs_format_parse(NULL, &f), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "fp8-rtn"));
    assert_int_equal(rs_format_parse("fp32", NULL), RS_E_INVAL);
    /* the list itself */
    const char *list = rs_format_valid_list();
    assert_non_null(strstr(list, "fp16-sr"));
    assert_non_null(strstr(list, "+pow2"));
    assert_non_null(strstr(list, "+floor"));
}

/* A bare base, alone or with its option, is the base's RTN format, written out by hand here:
 * the one rule of every command (quant-error --format nvfp4, sweep --formats nvfp4, kl --policy
 * conv:nvfp4) and of the Python module, which call this parser. */
static void test_bare_base_is_rtn(void **state)
{
    (void)state;
    static const struct {
        const char *bare, *canonical;
        rs_format_kind kind;
    } tab[] = {
        {"fp16", "fp16-rtn", RS_FMT_FP16},          {"bf16", "bf16-rtn", RS_FMT_BF16},
        {"fp8", "fp8-rtn", RS_FMT_FP8},             {"nvfp4", "nvfp4-rtn", RS_FMT_NVFP4},
        {"fp8+pow2", "fp8-rtn+pow2", RS_FMT_FP8},   {"nvfp4+floor", "nvfp4-rtn+floor", RS_FMT_NVFP4},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; ++i) {
        rs_format f, g;
        char buf[32];
        assert_int_equal(rs_format_parse(tab[i].bare, &f), RS_OK);
        assert_int_equal(f.kind, tab[i].kind);
        assert_int_equal(f.rounding, RS_ROUND_RTN);
        assert_int_equal(rs_format_print(&f, buf, sizeof buf), RS_OK);
        assert_string_equal(buf, tab[i].canonical);
        assert_int_equal(rs_format_parse(tab[i].canonical, &g), RS_OK);
        assert_int_equal(memcmp(&f, &g, sizeof f), 0); /* the same format, field for field */
    }
}

/* a rounding word over a format: replaces its rounding (sr keeps an SR format's K); fp32 and bad
 * words are refused with the choices named, the format left as it was */
static void test_set_rounding(void **state)
{
    (void)state;
    static const struct {
        const char *fmt, *rounding, *want;
    } tab[] = {
        {"nvfp4", "sr", "nvfp4-sr"},       {"nvfp4-sr", "rtn", "nvfp4-rtn"},   {"fp8+pow2", "sr8", "fp8-sr8+pow2"},
        {"nvfp4-sr8", "sr", "nvfp4-sr8"},  {"nvfp4-sr8", "sr4", "nvfp4-sr4"},  {"nvfp4-rtn", "sr32", "nvfp4-sr"},
        {"bf16-sr", "rtn", "bf16-rtn"},    {"fp16", "rtn", "fp16-rtn"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; ++i) {
        rs_format f;
        assert_int_equal(rs_format_parse(tab[i].fmt, &f), RS_OK);
        assert_int_equal(rs_format_set_rounding(&f, tab[i].rounding), RS_OK);
        assert_int_equal(rs_format_print(&f, buf, sizeof buf), RS_OK);
        assert_string_equal(buf, tab[i].want);
    }
    static const char *const bad[] = {"", "RTN", "sr0", "sr33", "rtn8", "sr+pow2", "s", "nearest"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        rs_format f, keep;
        assert_int_equal(rs_format_parse("fp8-sr8", &f), RS_OK);
        keep = f;
        assert_int_equal(rs_format_set_rounding(&f, bad[i]), RS_E_INVAL);
        assert_int_equal(memcmp(&f, &keep, sizeof f), 0);
        assert_non_null(strstr(rs_last_error(), "rtn, sr or srK"));
    }
    rs_format f = rs_format_fp32();
    assert_int_equal(rs_format_set_rounding(&f, "sr"), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "fp32 has no rounding"));
    assert_int_equal(f.kind, RS_FMT_FP32);
}

/* the words a log stores for a format (hp_base, hp_rounding, hp_options) */
static void test_field_names(void **state)
{
    (void)state;
    rs_format f;
    assert_string_equal(rs_format_kind_name(RS_FMT_FP32), "fp32");
    assert_string_equal(rs_format_kind_name(RS_FMT_NVFP4), "nvfp4");
    assert_null(rs_format_kind_name((rs_format_kind)9));
    f = rs_format_fp32();
    assert_string_equal(rs_format_rounding_name(&f), "none");
    assert_string_equal(rs_format_option_name(&f), "");
    assert_int_equal(rs_format_parse("fp8-sr8+pow2", &f), RS_OK);
    assert_string_equal(rs_format_kind_name(f.kind), "fp8");
    assert_string_equal(rs_format_rounding_name(&f), "sr");
    assert_string_equal(rs_format_option_name(&f), "pow2");
    assert_int_equal(rs_format_parse("nvfp4-rtn+floor", &f), RS_OK);
    assert_string_equal(rs_format_rounding_name(&f), "rtn");
    assert_string_equal(rs_format_option_name(&f), "floor");
}

static void test_print_errors(void **state)
{
    (void)state;
    rs_format f;
    char buf[32];
    assert_int_equal(rs_format_parse("nvfp4-sr8+floor", &f), RS_OK);
    /* needs 16 bytes ("nvfp4-sr8+floor" + NUL) */
    memset(buf, 'x', sizeof buf);
    assert_int_equal(rs_format_print(&f, buf, 15), RS_E_INVAL);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(rs_format_print(&f, buf, 16), RS_OK);
    assert_string_equal(buf, "nvfp4-sr8+floor");
    assert_int_equal(rs_format_print(&f, buf, 0), RS_E_INVAL);
    assert_int_equal(rs_format_print(NULL, buf, sizeof buf), RS_E_INVAL);

    rs_format g = f;
    g.sr_bits = 0;
    assert_int_equal(rs_format_print(&g, buf, sizeof buf), RS_E_INVAL);
    g.sr_bits = 33;
    assert_int_equal(rs_format_print(&g, buf, sizeof buf), RS_E_INVAL);
    g = f;
    g.kind = (rs_format_kind)9;
    assert_int_equal(rs_format_print(&g, buf, sizeof buf), RS_E_INVAL);
    g = f;
    g.fp8_pow2 = 1; /* pow2 on nvfp4 */
    assert_int_equal(rs_format_print(&g, buf, sizeof buf), RS_E_INVAL);
    g = f;
    g.rounding = (rs_rounding)7;
    assert_int_equal(rs_format_print(&g, buf, sizeof buf), RS_E_INVAL);
    assert_int_equal(rs_format_parse("fp8-rtn", &g), RS_OK);
    g.nvfp4_floor = 1; /* floor on fp8 */
    assert_int_equal(rs_format_print(&g, buf, sizeof buf), RS_E_INVAL);
    /* under RTN the SR bit count is unused and not checked */
    g.nvfp4_floor = 0;
    g.sr_bits = 0;
    assert_int_equal(rs_format_print(&g, buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "fp8-rtn");
}

static void test_block_and_bytes(void **state)
{
    (void)state;
    rs_format f;
    /* values written out by hand from the storage layout, all exact in binary */
    struct {
        const char *s;
        size_t block;
        size_t E;
        double bpe;
    } tab[] = {
        {"fp32", 0, 16384, 4.0},
        {"fp16-rtn", 0, 16384, 2.0},
        {"bf16-sr", 0, 16384, 2.0},
        {"fp8-rtn", 128, 16384, 1.03125},             /* 1 + 4/128 */
        {"fp8-sr+pow2", 128, 128, 1.03125},
        {"nvfp4-rtn", 16, 16384, 0.562744140625},     /* 0.5 + 1/16 + 4/16384 */
        {"nvfp4-sr8", 16, 16, 0.8125},                /* 0.5 + 1/16 + 4/16 */
        {"nvfp4-rtn+floor", 16, 4096, 0.5634765625},  /* 0.5 + 1/16 + 4/4096 */
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; ++i) {
        assert_int_equal(rs_format_parse(tab[i].s, &f), RS_OK);
        assert_int_equal(rs_format_block(&f), tab[i].block);
        assert_true(rs_format_bytes_per_element(&f, tab[i].E) == tab[i].bpe);
    }
    /* non-power-of-two extent: 0.5 + 0.0625 + 4/48, to double rounding */
    assert_int_equal(rs_format_parse("nvfp4-sr", &f), RS_OK);
    assert_true(fabs(rs_format_bytes_per_element(&f, 48) - (0.5625 + 1.0 / 12.0)) < 1e-15);
    /* extent 0: the per-tensor scale is left out */
    assert_true(rs_format_bytes_per_element(&f, 0) == 0.5625);
    assert_int_equal(rs_format_block(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_valid_roundtrip), cmocka_unit_test(test_examples_from_header),
        cmocka_unit_test(test_bad_strings),         cmocka_unit_test(test_print_errors),
        cmocka_unit_test(test_block_and_bytes),     cmocka_unit_test(test_bare_base_is_rtn),
        cmocka_unit_test(test_set_rounding),        cmocka_unit_test(test_field_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
