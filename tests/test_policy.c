/* test_policy.c — acceptance item 6: every policy string round-trips through the parser
 * (print(parse(s)) is canonical and parses back to the same policy); bad strings fail with
 * RS_E_INVAL and a message that quotes the input and lists the valid forms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "replayssm/engine/rs_policy.h"

static const char *const k_formats[] = {"fp32",     "fp16-rtn", "fp16-sr",  "fp16-sr8", "bf16-rtn",
                                        "bf16-sr",  "fp8-rtn",  "fp8-sr",   "fp8-rtn+pow2",
                                        "fp8-sr+pow2", "nvfp4-rtn", "nvfp4-sr", "nvfp4-sr8",
                                        "nvfp4-rtn+floor"};
#define NF (sizeof k_formats / sizeof k_formats[0])

static void roundtrip_(const char *s, const char *canonical)
{
    rs_policy p, q;
    char buf[160];
    assert_int_equal(rs_policy_parse(s, &p), RS_OK);
    assert_int_equal(rs_policy_print(&p, buf, sizeof buf), RS_OK);
    if (canonical) assert_string_equal(buf, canonical);
    assert_int_equal(rs_policy_parse(buf, &q), RS_OK);
    assert_true(rs_policy_equal(&p, &q));
    char buf2[160];
    assert_int_equal(rs_policy_print(&q, buf2, sizeof buf2), RS_OK);
    assert_string_equal(buf, buf2);
}

static void test_every_policy_roundtrips(void **st)
{
    (void)st;
    char s[160];
    int n = 0;
    roundtrip_("fp32", "fp32");
    roundtrip_("conv:fp32", "fp32"); /* canonical spelling of the conventional fp32 state */
    for (size_t i = 0; i < NF; i++) {
        /* the format parser's canonical form of each format string */
        rs_format f;
        char fc[64];
        assert_int_equal(rs_format_parse(k_formats[i], &f), RS_OK);
        assert_int_equal(rs_format_print(&f, fc, sizeof fc), RS_OK);
        char want[160];
        if (f.kind != RS_FMT_FP32) {
            snprintf(s, sizeof s, "conv:%s", k_formats[i]);
            snprintf(want, sizeof want, "conv:%s", fc);
            roundtrip_(s, want);
            n++;
        }
        snprintf(s, sizeof s, "shared:%s", k_formats[i]);
        snprintf(want, sizeof want, "shared:%s", fc);
        roundtrip_(s, want);
        n++;
        for (size_t j = 0; j < NF; j++) {
            rs_format g;
            char gc[64];
            assert_int_equal(rs_format_parse(k_formats[j], &g), RS_OK);
            assert_int_equal(rs_format_print(&g, gc, sizeof gc), RS_OK);
            snprintf(s, sizeof s, "split:%s/%s", k_formats[i], k_formats[j]);
            snprintf(want, sizeof want, "split:%s/%s", fc, gc);
            roundtrip_(s, want);
            snprintf(s, sizeof s, "split-naive:%s/%s", k_formats[i], k_formats[j]);
            snprintf(want, sizeof want, "split-naive:%s/%s", fc, gc);
            roundtrip_(s, want);
            n += 2;
        }
    }
    assert_true(n > 400);
}

static void test_fields(void **st)
{
    (void)st;
    rs_policy p;
    assert_int_equal(rs_policy_parse("split:nvfp4-rtn/fp16-sr", &p), RS_OK);
    assert_int_equal(p.mode, RS_POLICY_SPLIT);
    assert_int_equal(p.lp.kind, RS_FMT_NVFP4);
    assert_int_equal(p.lp.rounding, RS_ROUND_RTN);
    assert_int_equal(p.hp.kind, RS_FMT_FP16);
    assert_int_equal(p.hp.rounding, RS_ROUND_SR);
    assert_true(rs_policy_is_split(&p) && rs_policy_is_replay(&p));
    assert_int_equal(rs_policy_parse("shared:fp8-sr", &p), RS_OK);
    assert_int_equal(p.mode, RS_POLICY_SHARED);
    assert_int_equal(p.hp.kind, RS_FMT_FP8);
    assert_false(rs_policy_is_split(&p));
    assert_int_equal(rs_policy_parse("fp32", &p), RS_OK);
    assert_int_equal(p.mode, RS_POLICY_CONV);
    assert_false(rs_policy_is_replay(&p));
    assert_int_equal(rs_policy_parse("split-naive:fp8-rtn/fp8-sr", &p), RS_OK);
    assert_int_equal(p.mode, RS_POLICY_SPLIT_NAIVE);
}

static void bad_(const char *s, const char *must_contain)
{
    rs_policy p;
    rs_error_clear();
    assert_int_equal(rs_policy_parse(s, &p), RS_E_INVAL);
    const char *msg = rs_last_error();
    if (!strstr(msg, must_contain) || !strstr(msg, "split:<lp>/<hp>")) {
        print_error("policy \"%s\": message \"%s\" lacks \"%s\" or the forms\n", s, msg, must_contain);
        fail();
    }
}

static void test_bad_strings(void **st)
{
    (void)st;
    bad_("", "empty");
    bad_("fp16-rtn", "bare format");        /* a format without a mode */
    bad_("fp16", "unknown policy");
    bad_("nvfp4-rtn", "bare format");
    bad_("bogus", "unknown policy");
    bad_("conv:", "empty");
    bad_("conv:fp9", "fp9");                /* the bad format is quoted */
    bad_("conv:fp9", "valid formats");      /* and the valid formats listed */
    bad_("shared:nvfp4-rtn/fp32", "one format");
    bad_("split:nvfp4-rtn", "two formats");
    bad_("split:nvfp4-rtn/", "empty");
    bad_("split:/fp32", "empty");
    bad_("split:a/b/c", "more than two");
    bad_("split:nvfp4/fp32", "nvfp4/fp32"); /* missing rounding: quotes the policy */
    bad_("Split:fp32/fp32", "unknown mode");
    bad_("spilt:fp8-rtn/fp32", "unknown mode");
    bad_("split-naive:fp8-rtn/fp32x", "fp32x");
    bad_(" fp32", "unknown policy");
    bad_("shared:FP32", "FP32");
    char longs[300];
    memset(longs, 'x', sizeof longs - 1);
    longs[sizeof longs - 1] = '\0';
    bad_(longs, "too long");
    rs_policy p;
    assert_int_equal(rs_policy_parse(NULL, &p), RS_E_INVAL);
    char small[4];
    p = rs_policy_fp32();
    assert_int_equal(rs_policy_print(&p, small, 4), RS_E_INVAL); /* "fp32" needs 5 bytes */
    assert_int_equal(small[3], '\0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_policy_roundtrips),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_bad_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
