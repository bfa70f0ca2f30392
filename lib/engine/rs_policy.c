/* rs_policy.c — the state precision policy grammar and the run spec built on it (see rs_policy.h). */
#include "replayssm/engine/rs_policy.h"
#include "rs_check.h"

#include <stdio.h>
#include <string.h>

#define RS_POLICY_MAX 128

const char *rs_policy_forms(void)
{
    return "fp32 | conv:<fmt> | shared:<fmt> | split:<lp>/<hp> | split-naive:<lp>/<hp> "
           "(e.g. conv:bf16-rtn, shared:fp8-sr, split:nvfp4-rtn/fp32, split:nvfp4-rtn/fp16-sr)";
}

/* the mode words of the grammar, in rs_policy_mode order */
static const char *const k_modes[] = {"conv", "shared", "split", "split-naive"};

const char *rs_policy_mode_name(rs_policy_mode m)
{
    return (unsigned)m < sizeof k_modes / sizeof k_modes[0] ? k_modes[m] : "?";
}

rs_status rs_policy_mode_parse(const char *s, rs_policy_mode *out)
{
    RS_CHECK(s != NULL && out != NULL, RS_E_INVAL, "rs_policy_mode_parse: NULL argument");
    for (size_t m = 0; m < sizeof k_modes / sizeof k_modes[0]; m++)
        if (strcmp(s, k_modes[m]) == 0) {
            *out = (rs_policy_mode)m;
            return RS_OK;
        }
    return rs_error_set(RS_E_INVAL, "unknown mode \"%s\" (conv, shared, split, split-naive)", s);
}

rs_policy rs_policy_fp32(void)
{
    rs_policy p;
    memset(&p, 0, sizeof p);
    p.mode = RS_POLICY_CONV;
    p.hp = rs_format_fp32();
    p.lp = p.hp;
    return p;
}

/* Parse one format token; on error wrap the format parser's message. */
static rs_status fmt_(const char *policy, const char *what, const char *tok, rs_format *f)
{
    if (tok[0] == '\0')
        return rs_error_set(RS_E_INVAL, "policy \"%s\": empty %s format; valid policies: %s",
                            policy, what, rs_policy_forms());
    if (rs_format_parse(tok, f) != RS_OK) {
        char inner[512]; /* the format parser's reason (it lists the valid formats) */
        snprintf(inner, sizeof inner, "%s", rs_last_error());
        return rs_error_set(RS_E_INVAL, "policy \"%s\": bad %s format \"%s\": %s; valid "
                            "policies: %s", policy, what, tok, inner, rs_policy_forms());
    }
    return RS_OK;
}

rs_status rs_policy_parse(const char *s, rs_policy *out)
{
    RS_CHECK(s != NULL && out != NULL, RS_E_INVAL, "rs_policy_parse: NULL argument");
    const size_t len = strlen(s);
    RS_CHECK(len > 0, RS_E_INVAL, "empty policy string; valid policies: %s", rs_policy_forms());
    RS_CHECK(len < RS_POLICY_MAX, RS_E_INVAL, "policy string of %zu characters is too long; "
             "valid policies: %s", len, rs_policy_forms());
    char buf[RS_POLICY_MAX];
    memcpy(buf, s, len + 1);
    rs_policy p;
    memset(&p, 0, sizeof p);

    if (strcmp(buf, "fp32") == 0) {
        *out = rs_policy_fp32();
        return RS_OK;
    }
    char *colon = strchr(buf, ':');
    if (!colon) {
        rs_format f;
        if (rs_format_parse(buf, &f) == RS_OK)
            return rs_error_set(RS_E_INVAL,
                                "policy \"%s\": a bare format is only accepted as \"fp32\"; "
                                "say conv:%s or shared:%s; valid policies: %s",
                                s, buf, buf, rs_policy_forms());
        return rs_error_set(RS_E_INVAL, "policy \"%s\": unknown policy; valid policies: %s", s,
                            rs_policy_forms());
    }
    *colon = '\0';
    const char *mode = buf, *rest = colon + 1;
    if (rs_policy_mode_parse(mode, &p.mode) != RS_OK)
        return rs_error_set(RS_E_INVAL, "policy \"%s\": unknown mode \"%s\"; valid policies: %s", s, mode,
                            rs_policy_forms());
    if (!rs_policy_is_split(&p)) {
        RS_CHECK(strchr(rest, '/') == NULL, RS_E_INVAL,
                 "policy \"%s\": %s takes one format (only split takes <lp>/<hp>); valid "
                 "policies: %s", s, mode, rs_policy_forms());
        RS_TRY(fmt_(s, "state", rest, &p.hp));
        p.lp = p.hp;
    } else {
        char *slash = strchr(rest, '/');
        RS_CHECK(slash != NULL, RS_E_INVAL,
                 "policy \"%s\": %s needs two formats <lp>/<hp> (read copy / recurrent copy); "
                 "valid policies: %s", s, mode, rs_policy_forms());
        *slash = '\0';
        RS_CHECK(strchr(slash + 1, '/') == NULL, RS_E_INVAL,
                 "policy \"%s\": more than two formats; valid policies: %s", s, rs_policy_forms());
        RS_TRY(fmt_(s, "LP (read)", rest, &p.lp));
        RS_TRY(fmt_(s, "HP (recurrent)", slash + 1, &p.hp));
    }
    *out = p;
    return RS_OK;
}

rs_status rs_policy_print(const rs_policy *p, char *buf, size_t bufsize)
{
    RS_CHECK(p != NULL && buf != NULL && bufsize > 0, RS_E_INVAL, "rs_policy_print: NULL argument");
    buf[0] = '\0';
    char hp[64], lp[64];
    RS_TRY(rs_format_print(&p->hp, hp, sizeof hp));
    RS_TRY(rs_format_print(&p->lp, lp, sizeof lp));
    if ((unsigned)p->mode >= sizeof k_modes / sizeof k_modes[0])
        return rs_error_set(RS_E_INVAL, "rs_policy_print: invalid mode %d", (int)p->mode);
    const char *mode = k_modes[p->mode];
    int n;
    if (p->mode == RS_POLICY_CONV && p->hp.kind == RS_FMT_FP32) n = snprintf(buf, bufsize, "fp32");
    else if (rs_policy_is_split(p)) n = snprintf(buf, bufsize, "%s:%s/%s", mode, lp, hp);
    else n = snprintf(buf, bufsize, "%s:%s", mode, hp);
    if (n < 0 || (size_t)n >= bufsize) {
        buf[bufsize - 1] = '\0';
        return rs_error_set(RS_E_INVAL, "rs_policy_print: buffer of %zu bytes too small", bufsize);
    }
    return RS_OK;
}

static int fmt_equal_(const rs_format *a, const rs_format *b)
{
    if (a->kind != b->kind) return 0;
    if (a->kind == RS_FMT_FP32) return 1;
    return a->rounding == b->rounding && a->fp8_pow2 == b->fp8_pow2 &&
           a->nvfp4_floor == b->nvfp4_floor &&
           (a->rounding != RS_ROUND_SR || a->sr_bits == b->sr_bits);
}

int rs_policy_equal(const rs_policy *a, const rs_policy *b)
{
    return a->mode == b->mode && fmt_equal_(&a->hp, &b->hp) && fmt_equal_(&a->lp, &b->lp);
}

int rs_policy_is_replay(const rs_policy *p) { return p->mode != RS_POLICY_CONV; }

int rs_policy_is_split(const rs_policy *p)
{
    return p->mode == RS_POLICY_SPLIT || p->mode == RS_POLICY_SPLIT_NAIVE;
}

/* ---- the run spec ---------------------------------------------------------------------------- */

/* the one range of a window L */
static int window_ok_(size_t L) { return L >= 1 && L <= RS_RUN_WINDOW_MAX; }

rs_status rs_run_window_parse(const char *s, size_t *window)
{
    RS_CHECK(window != NULL, RS_E_INVAL, "rs_run_window_parse: NULL argument");
    if (!s) {
        *window = RS_RUN_WINDOW_DEFAULT;
        return RS_OK;
    }
    size_t L = 0; /* decimal digits only: no sign, blank or exponent */
    int ok = s[0] != '\0';
    for (const char *c = s; ok && *c; c++) {
        ok = *c >= '0' && *c <= '9';
        if (ok && L <= RS_RUN_WINDOW_MAX) L = L * 10 + (size_t)(*c - '0'); /* past the range it stays past */
    }
    RS_CHECK(ok && window_ok_(L), RS_E_INVAL, "window L '%s' is not an integer in [1, %d]", s, RS_RUN_WINDOW_MAX);
    *window = L;
    return RS_OK;
}

rs_status rs_run_spec_make(const rs_policy *policy, size_t window, uint64_t seed, rs_run_spec *out)
{
    RS_CHECK(policy != NULL && out != NULL, RS_E_INVAL, "rs_run_spec_make: NULL argument");
    rs_run_spec s;
    memset(&s, 0, sizeof s);
    s.policy = *policy;
    s.window = window;
    s.seed = seed;
    RS_TRY(rs_policy_print(&s.policy, s.name, sizeof s.name));
    RS_CHECK(window_ok_(window), RS_E_INVAL, "run %s: window L %zu is not in [1, %d]", s.name, window,
             RS_RUN_WINDOW_MAX);
    *out = s;
    return RS_OK;
}

rs_status rs_run_spec_parse(const char *policy, const char *window, uint64_t seed, rs_run_spec *out)
{
    RS_CHECK(policy != NULL && out != NULL, RS_E_INVAL, "rs_run_spec_parse: NULL argument");
    rs_policy p;
    if (rs_policy_parse(policy, &p) != RS_OK) {
        char inner[1024]; /* rs_error_set formats into the buffer rs_last_error returns */
        snprintf(inner, sizeof inner, "%s", rs_last_error());
        return rs_error_set(RS_E_INVAL, "unknown policy: %s", inner);
    }
    size_t L;
    RS_TRY(rs_run_window_parse(window, &L));
    return rs_run_spec_make(&p, L, seed, out);
}

rs_status rs_run_spec_check(const rs_run_spec *s)
{
    RS_CHECK(s != NULL, RS_E_INVAL, "run spec: NULL");
    char canon[RS_RUN_NAME_MAX];
    if (rs_policy_print(&s->policy, canon, sizeof canon) != RS_OK) {
        char inner[512];
        snprintf(inner, sizeof inner, "%s", rs_last_error());
        return rs_error_set(RS_E_INVAL, "run spec: invalid policy (%s)", inner);
    }
    RS_CHECK(memchr(s->name, '\0', sizeof s->name) && !strcmp(s->name, canon), RS_E_INVAL,
             "run spec %s: its name is not the policy's canonical string (make specs with rs_run_spec_parse)",
             canon);
    rs_run_spec again; /* the window as rs_run_spec_make checks it */
    return rs_run_spec_make(&s->policy, s->window, s->seed, &again);
}

rs_run_spec rs_run_spec_reference(void)
{
    rs_run_spec s;
    memset(&s, 0, sizeof s);
    s.policy = rs_policy_fp32();
    s.window = RS_RUN_WINDOW_DEFAULT;
    s.seed = RS_RUN_SEED_DEFAULT;
    memcpy(s.name, "fp32", 5);
    return s;
}

int rs_run_spec_equal(const rs_run_spec *a, const rs_run_spec *b)
{
    return rs_policy_equal(&a->policy, &b->policy) && a->window == b->window && a->seed == b->seed;
}

size_t rs_run_spec_find(const rs_run_spec *list, size_t n, const rs_run_spec *s)
{
    size_t i = 0;
    while (i < n && !rs_run_spec_equal(&list[i], s)) i++;
    return i;
}

rs_status rs_run_spec_add(rs_run_spec *list, size_t *n, size_t max, const rs_run_spec *s)
{
    RS_CHECK(list != NULL && n != NULL && s != NULL, RS_E_INVAL, "rs_run_spec_add: NULL argument");
    if (rs_run_spec_find(list, *n, s) < *n) return RS_OK; /* a repeat runs once */
    RS_CHECK(*n < max, RS_E_INVAL, "at most %zu runs", max);
    list[(*n)++] = *s;
    return RS_OK;
}
