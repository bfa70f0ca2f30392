/* test_policy.c — every policy string round-trips through the parser
 * (print(parse(s)) is canonical and parses back to the same policy); bad strings fail with
 * RS_E_INVAL and a message that quotes the input and lists the valid forms; a bare base is RTN in
 * a policy as in every format; the run spec (rs_run_spec_parse / _make / _check / _add): the window
 * parsed and range-checked once with the defaults of rs_policy.h, the canonical name, repeats
 * dropped once; the mode words. */
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
    bad_("fp16", "bare format");            /* a bare base is a format (fp16-rtn) */
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
    bad_("split:nvfp4-rt/fp32", "nvfp4-rt/fp32"); /* a bad rounding: quotes the policy */
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

/* a bare base in a policy is the base's RTN format, as quant-error and sweep take it */
static void test_bare_base(void **st)
{
    (void)st;
    roundtrip_("conv:nvfp4", "conv:nvfp4-rtn");
    roundtrip_("shared:fp8+pow2", "shared:fp8-rtn+pow2");
    roundtrip_("split:nvfp4/fp16", "split:nvfp4-rtn/fp16-rtn");
    rs_policy a, b;
    assert_int_equal(rs_policy_parse("split:nvfp4/fp32", &a), RS_OK);
    assert_int_equal(rs_policy_parse("split:nvfp4-rtn/fp32", &b), RS_OK);
    assert_true(rs_policy_equal(&a, &b));
}

static void test_mode_words(void **st)
{
    (void)st;
    static const char *const words[] = {"conv", "shared", "split", "split-naive"};
    for (int m = 0; m < 4; m++) {
        rs_policy_mode got;
        assert_string_equal(rs_policy_mode_name((rs_policy_mode)m), words[m]);
        assert_int_equal(rs_policy_mode_parse(words[m], &got), RS_OK);
        assert_int_equal(got, m);
    }
    assert_string_equal(rs_policy_mode_name((rs_policy_mode)7), "?");
    rs_policy_mode got = RS_POLICY_SPLIT;
    assert_int_equal(rs_policy_mode_parse("Split", &got), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "split-naive"));
    assert_int_equal(got, RS_POLICY_SPLIT);
}

/* rs_run_spec_parse: the policy's canonical name, the window string (default 16 when absent), the
 * seed as given; a bad policy or window refused with a message naming it, the output untouched */
static void test_run_spec_parse(void **st)
{
    (void)st;
    rs_run_spec s;
    assert_int_equal(rs_run_spec_parse("split:nvfp4/fp16-sr", "64", 7, &s), RS_OK);
    assert_string_equal(s.name, "split:nvfp4-rtn/fp16-sr");
    assert_int_equal(s.window, 64);
    assert_int_equal(s.seed, 7);
    assert_int_equal(s.policy.mode, RS_POLICY_SPLIT);
    assert_int_equal(s.policy.hp.kind, RS_FMT_FP16);
    assert_int_equal(rs_run_spec_parse("conv:fp32", NULL, 0, &s), RS_OK);
    assert_string_equal(s.name, "fp32");
    assert_int_equal(s.window, 16); /* the documented default, written out */
    assert_int_equal(RS_RUN_WINDOW_DEFAULT, 16);
    assert_int_equal(rs_run_spec_parse("shared:fp8-sr", "1", 0, &s), RS_OK);
    assert_int_equal(s.window, 1);
    assert_int_equal(rs_run_spec_parse("shared:fp8-sr", "4096", 0, &s), RS_OK);
    assert_int_equal(s.window, 4096);
    assert_int_equal(rs_run_spec_parse("shared:fp8-sr", "0016", 0, &s), RS_OK);
    assert_int_equal(s.window, 16);
    static const char *const bad_w[] = {"0", "4097", "", "-4", "+4", " 4", "4 ", "4x", "1e3", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_w / sizeof bad_w[0]; i++) {
        memset(&s, 0x5a, sizeof s);
        assert_int_equal(rs_run_spec_parse("shared:fp8-sr", bad_w[i], 0, &s), RS_E_INVAL);
        char want[64];
        snprintf(want, sizeof want, "window L '%s' is not an integer in [1, 4096]", bad_w[i]);
        if (!strstr(rs_last_error(), want)) fail_msg("window '%s': message \"%s\"", bad_w[i], rs_last_error());
        assert_int_equal(s.window, 0x5a5a5a5a5a5a5a5aull);
    }
    assert_int_equal(rs_run_spec_parse("shared:fp9-sr", "16", 0, &s), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "unknown policy: policy \"shared:fp9-sr\""));
    assert_non_null(strstr(rs_last_error(), "valid formats"));
    assert_int_equal(rs_run_spec_parse(NULL, "16", 0, &s), RS_E_INVAL);
}

/* rs_run_spec_make and _check: the one window range; a name that is not the policy's is refused */
static void test_run_spec_make_check(void **st)
{
    (void)st;
    rs_policy p;
    rs_run_spec s;
    assert_int_equal(rs_policy_parse("shared:nvfp4-sr", &p), RS_OK);
    assert_int_equal(rs_run_spec_make(&p, 4096, 3, &s), RS_OK);
    assert_string_equal(s.name, "shared:nvfp4-sr");
    assert_int_equal(rs_run_spec_check(&s), RS_OK);
    assert_int_equal(rs_run_spec_make(&p, 0, 3, &s), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "window L 0 is not in [1, 4096]"));
    assert_int_equal(rs_run_spec_make(&p, 4097, 3, &s), RS_E_INVAL);
    assert_int_equal(rs_run_spec_make(&p, 16, 3, &s), RS_OK);
    s.window = 5000;
    assert_int_equal(rs_run_spec_check(&s), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "window L 5000"));
    s.window = 16;
    snprintf(s.name, sizeof s.name, "shared:nvfp4-rtn");
    assert_int_equal(rs_run_spec_check(&s), RS_E_INVAL);
    assert_non_null(strstr(rs_last_error(), "canonical"));
    const rs_run_spec ref = rs_run_spec_reference();
    assert_string_equal(ref.name, "fp32");
    assert_int_equal(ref.window, 16);
    assert_int_equal(ref.seed, 0);
    assert_int_equal(ref.policy.mode, RS_POLICY_CONV);
    assert_int_equal(ref.policy.hp.kind, RS_FMT_FP32);
    assert_int_equal(rs_run_spec_check(&ref), RS_OK);
}

/* rs_run_spec_add: a run equal in policy (canonically), window and seed is not added again; one
 * differing in any of them is; max is the limit */
static void test_run_spec_add(void **st)
{
    (void)st;
    rs_run_spec list[4], s;
    size_t n = 0;
    static const struct {
        const char *policy, *window;
        uint64_t seed;
        size_t n_after;
    } steps[] = {
        {"shared:nvfp4-sr", "16", 0, 1}, {"shared:nvfp4-sr32", NULL, 0, 1}, /* the same run */
        {"shared:nvfp4-sr", "8", 0, 2},  {"shared:nvfp4-sr", "16", 1, 3},   /* other window, seed */
        {"split:nvfp4/fp32", "8", 0, 4}, {"split:nvfp4-rtn/fp32", "8", 0, 4},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        assert_int_equal(rs_run_spec_parse(steps[i].policy, steps[i].window, steps[i].seed, &s), RS_OK);
        assert_int_equal(rs_run_spec_add(list, &n, 4, &s), RS_OK);
        assert_int_equal(n, steps[i].n_after);
        assert_true(rs_run_spec_find(list, n, &s) < n); /* present once, whether just added or not */
    }
    assert_int_equal(rs_run_spec_find(list, n, &list[2]), 2);
    assert_int_equal(rs_run_spec_parse("conv:fp16-sr", NULL, 0, &s), RS_OK);
    assert_int_equal(rs_run_spec_find(list, n, &s), n);
    assert_int_equal(rs_run_spec_add(list, &n, 4, &s), RS_E_INVAL); /* a fifth run */
    assert_non_null(strstr(rs_last_error(), "at most 4 runs"));
    assert_int_equal(n, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_policy_roundtrips),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_bad_strings),
        cmocka_unit_test(test_bare_base),
        cmocka_unit_test(test_mode_words),
        cmocka_unit_test(test_run_spec_parse),
        cmocka_unit_test(test_run_spec_make_check),
        cmocka_unit_test(test_run_spec_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
