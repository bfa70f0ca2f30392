/* rs_policy.c — the state precision policy grammar (see rs_policy.h). */
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
    if (strcmp(mode, "conv") == 0 || strcmp(mode, "shared") == 0) {
        p.mode = mode[0] == 'c' ? RS_POLICY_CONV : RS_POLICY_SHARED;
        RS_CHECK(strchr(rest, '/') == NULL, RS_E_INVAL,
                 "policy \"%s\": %s takes one format (only split takes <lp>/<hp>); valid "
                 "policies: %s", s, mode, rs_policy_forms());
        RS_TRY(fmt_(s, "state", rest, &p.hp));
        p.lp = p.hp;
    } else if (strcmp(mode, "split") == 0 || strcmp(mode, "split-naive") == 0) {
        p.mode = strcmp(mode, "split") == 0 ? RS_POLICY_SPLIT : RS_POLICY_SPLIT_NAIVE;
        char *slash = strchr(rest, '/');
        RS_CHECK(slash != NULL, RS_E_INVAL,
                 "policy \"%s\": %s needs two formats <lp>/<hp> (read copy / recurrent copy); "
                 "valid policies: %s", s, mode, rs_policy_forms());
        *slash = '\0';
        RS_CHECK(strchr(slash + 1, '/') == NULL, RS_E_INVAL,
                 "policy \"%s\": more than two formats; valid policies: %s", s, rs_policy_forms());
        RS_TRY(fmt_(s, "LP (read)", rest, &p.lp));
        RS_TRY(fmt_(s, "HP (recurrent)", slash + 1, &p.hp));
    } else {
        return rs_error_set(RS_E_INVAL, "policy \"%s\": unknown mode \"%s\"; valid policies: %s",
                            s, mode, rs_policy_forms());
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
    int n;
    switch (p->mode) {
    case RS_POLICY_CONV:
        n = p->hp.kind == RS_FMT_FP32 ? snprintf(buf, bufsize, "fp32")
                                      : snprintf(buf, bufsize, "conv:%s", hp);
        break;
    case RS_POLICY_SHARED: n = snprintf(buf, bufsize, "shared:%s", hp); break;
    case RS_POLICY_SPLIT: n = snprintf(buf, bufsize, "split:%s/%s", lp, hp); break;
    case RS_POLICY_SPLIT_NAIVE: n = snprintf(buf, bufsize, "split-naive:%s/%s", lp, hp); break;
    default: return rs_error_set(RS_E_INVAL, "rs_policy_print: invalid mode %d", (int)p->mode);
    }
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
