/* rs_format.c — format descriptors: the config-string grammar (parse/print), block sizes and
 * exact storage bytes per element. The grammar is documented in rs_format.h.
 *
 * Parsing is strict so that every format has exactly one spelling after printing:
 *   - a bare base ("nvfp4", "fp8+pow2") is RTN, and prints with its rounding ("nvfp4-rtn");
 *   - K in "srK" is a decimal number 1..32 without sign or leading zeros; "sr32" is accepted
 *     and prints back as "sr" (32 is the default);
 *   - each option may appear at most once and only on the base it belongs to;
 *   - nothing else (no spaces, no upper case, no "fp32-rtn").
 * Under RTN the struct's sr_bits is unused; parse sets it to RS_SR_BITS_DEFAULT.
 */
#include "replayssm/quant/rs_format.h"

#include <stdio.h>
#include <string.h>

static const char k_valid_list[] =
    "fp32, fp16-rtn, fp16-sr[K], bf16-rtn, bf16-sr[K], fp8-rtn[+pow2], fp8-sr[K][+pow2], "
    "nvfp4-rtn[+floor], nvfp4-sr[K][+floor], e5m2-rtn[+pow2], e5m2-sr[K][+pow2], mxfp8-rtn, mxfp8-sr[K], "
    "mxfp4-rtn, mxfp4-sr[K] (K = SR random bits 1..32, default 32; a bare base fp16, bf16, fp8, nvfp4, e5m2, "
    "mxfp8, mxfp4 is its -rtn; e.g. fp8-rtn, fp16-sr, nvfp4-sr8, fp8-sr+pow2, nvfp4-rtn+floor, e5m2-sr, mxfp4)";

const char *rs_format_valid_list(void) { return k_valid_list; }

rs_format rs_format_fp32(void)
{
    rs_format f;
    memset(&f, 0, sizeof f);
    f.kind = RS_FMT_FP32;
    f.rounding = RS_ROUND_RTN;
    f.sr_bits = RS_SR_BITS_DEFAULT;
    return f;
}

static const struct {
    const char *name;
    rs_format_kind kind;
} k_bases[] = {
    {"fp16", RS_FMT_FP16},
    {"bf16", RS_FMT_BF16},
    {"fp8", RS_FMT_FP8},
    {"nvfp4", RS_FMT_NVFP4},
    {"e5m2", RS_FMT_E5M2},
    {"mxfp8", RS_FMT_MXFP8},
    {"mxfp4", RS_FMT_MXFP4},
};

const char *rs_format_kind_name(rs_format_kind k)
{
    if (k == RS_FMT_FP32) return "fp32";
    for (size_t i = 0; i < sizeof k_bases / sizeof k_bases[0]; ++i)
        if (k_bases[i].kind == k) return k_bases[i].name;
    return NULL;
}

const char *rs_format_rounding_name(const rs_format *f)
{
    return !f || f->kind == RS_FMT_FP32 ? "none" : f->rounding == RS_ROUND_SR ? "sr" : "rtn";
}

const char *rs_format_option_name(const rs_format *f)
{
    return f && f->fp8_pow2 ? "pow2" : f && f->nvfp4_floor ? "floor" : "";
}

static rs_status bad(const char *s, const char *why)
{
    return rs_error_set(RS_E_INVAL, "unknown format '%s' (%s); valid formats: %s", s, why, k_valid_list);
}

/* the rounding word at *p ("rtn", "sr", "srK") into f, *p moved past it; NULL, or why it is not one */
static const char *rounding_(const char **p, rs_format *f)
{
    const char *q = *p;
    if (strncmp(q, "rtn", 3) == 0) {
        f->rounding = RS_ROUND_RTN;
        q += 3;
    } else if (strncmp(q, "sr", 2) == 0) {
        f->rounding = RS_ROUND_SR;
        f->sr_bits = RS_SR_BITS_DEFAULT;
        q += 2;
        if (*q >= '0' && *q <= '9') {
            if (*q == '0') return "SR bits must be 1..32 without leading zeros";
            int k = 0;
            while (*q >= '0' && *q <= '9') {
                k = k * 10 + (*q - '0');
                if (k > 32) return "SR bits must be 1..32";
                ++q;
            }
            f->sr_bits = k;
        }
    } else {
        return "rounding must be rtn, sr or srK";
    }
    *p = q;
    return NULL;
}

rs_status rs_format_set_rounding(rs_format *f, const char *rounding)
{
    if (!f || !rounding) return rs_error_set(RS_E_INVAL, "rs_format_set_rounding: NULL argument");
    if (f->kind == RS_FMT_FP32)
        return rs_error_set(RS_E_INVAL, "fp32 has no rounding to set to '%s' (rounding applies to %s)", rounding,
                            "fp16, bf16, fp8, nvfp4, e5m2, mxfp8, mxfp4");
    rs_format g = *f;
    const char *p = rounding, *why = rounding_(&p, &g);
    if (!why && *p) why = "unexpected trailing text";
    if (why) return rs_error_set(RS_E_INVAL, "unknown rounding '%s' (%s); choose rtn, sr or srK (K = SR random bits "
                                             "1..32)", rounding, why);
    if (f->rounding == RS_ROUND_SR && !strcmp(rounding, "sr")) g.sr_bits = f->sr_bits; /* "sr" keeps an SR format's K */
    *f = g;
    return RS_OK;
}

rs_status rs_format_parse(const char *s, rs_format *out)
{
    if (!out) return rs_error_set(RS_E_INVAL, "rs_format_parse: NULL output");
    if (!s) return rs_error_set(RS_E_INVAL, "rs_format_parse: NULL string; valid formats: %s", k_valid_list);

    rs_format f = rs_format_fp32();
    if (strcmp(s, "fp32") == 0) {
        *out = f;
        return RS_OK;
    }

    /* base: up to the rounding's "-" or the first option's "+" */
    const size_t blen = strcspn(s, "-+");
    int found = 0;
    for (size_t i = 0; i < sizeof k_bases / sizeof k_bases[0]; ++i) {
        if (strlen(k_bases[i].name) == blen && strncmp(s, k_bases[i].name, blen) == 0) {
            f.kind = k_bases[i].kind;
            found = 1;
        }
    }
    if (!found) return bad(s, blen == 4 && !strncmp(s, "fp32", 4) ? "fp32 takes no rounding or options" : "unknown base");

    /* rounding: RTN unless spelled */
    const char *p = s + blen;
    f.rounding = RS_ROUND_RTN;
    if (*p == '-') {
        ++p;
        const char *why = rounding_(&p, &f);
        if (why) return bad(s, why);
    }

    /* options */
    while (*p) {
        if (strncmp(p, "+pow2", 5) == 0) {
            if (f.kind != RS_FMT_FP8 && f.kind != RS_FMT_E5M2) return bad(s, "+pow2 applies to fp8 and e5m2 only");
            if (f.fp8_pow2) return bad(s, "+pow2 given twice");
            f.fp8_pow2 = 1;
            p += 5;
        } else if (strncmp(p, "+floor", 6) == 0) {
            if (f.kind != RS_FMT_NVFP4) return bad(s, "+floor applies to nvfp4 only");
            if (f.nvfp4_floor) return bad(s, "+floor given twice");
            f.nvfp4_floor = 1;
            p += 6;
        } else {
            return bad(s, "unexpected trailing text");
        }
    }
    *out = f;
    return RS_OK;
}

rs_status rs_format_print(const rs_format *f, char *buf, size_t bufsize)
{
    if (buf && bufsize > 0) buf[0] = '\0';
    if (!f || !buf || bufsize == 0) return rs_error_set(RS_E_INVAL, "rs_format_print: NULL argument or empty buffer");
    if (f->kind == RS_FMT_FP32) {
        if (f->fp8_pow2 || f->nvfp4_floor)
            return rs_error_set(RS_E_INVAL, "invalid format: fp32 takes no options");
        if (bufsize < 5) return rs_error_set(RS_E_INVAL, "rs_format_print: buffer of %zu bytes too small", bufsize);
        memcpy(buf, "fp32", 5);
        return RS_OK;
    }
    const char *base = f->kind == RS_FMT_FP32 ? NULL : rs_format_kind_name(f->kind);
    if (!base) return rs_error_set(RS_E_INVAL, "invalid format: unknown kind %d", (int)f->kind);
    if (f->rounding != RS_ROUND_RTN && f->rounding != RS_ROUND_SR)
        return rs_error_set(RS_E_INVAL, "invalid format: unknown rounding %d", (int)f->rounding);
    if (f->rounding == RS_ROUND_SR && (f->sr_bits < 1 || f->sr_bits > 32))
        return rs_error_set(RS_E_INVAL, "invalid format: SR bits %d outside 1..32", f->sr_bits);
    if (f->fp8_pow2 && f->kind != RS_FMT_FP8 && f->kind != RS_FMT_E5M2)
        return rs_error_set(RS_E_INVAL, "invalid format: pow2 scales apply to fp8 and e5m2 only");
    if (f->nvfp4_floor && f->kind != RS_FMT_NVFP4)
        return rs_error_set(RS_E_INVAL, "invalid format: the scale floor applies to nvfp4 only");

    char rnd[8];
    if (f->rounding == RS_ROUND_RTN) snprintf(rnd, sizeof rnd, "rtn");
    else if (f->sr_bits == RS_SR_BITS_DEFAULT) snprintf(rnd, sizeof rnd, "sr");
    else snprintf(rnd, sizeof rnd, "sr%d", f->sr_bits);
    const char *opt = f->fp8_pow2 ? "+pow2" : f->nvfp4_floor ? "+floor" : "";

    const int len = snprintf(buf, bufsize, "%s-%s%s", base, rnd, opt);
    if (len < 0 || (size_t)len >= bufsize) {
        buf[0] = '\0';
        return rs_error_set(RS_E_INVAL, "rs_format_print: buffer of %zu bytes too small (need %d)", bufsize,
                            len + 1);
    }
    return RS_OK;
}

int rs_format_on_gpu(const rs_format *f) { return f && (unsigned)f->kind <= (unsigned)RS_FMT_NVFP4; }

size_t rs_format_block(const rs_format *f)
{
    if (!f) return 0;
    switch (f->kind) {
    case RS_FMT_FP8:
    case RS_FMT_E5M2: return RS_FP8_BLOCK;
    case RS_FMT_NVFP4: return RS_NVFP4_BLOCK;
    case RS_FMT_MXFP8:
    case RS_FMT_MXFP4: return RS_MX_BLOCK;
    default: return 0;
    }
}

double rs_format_bytes_per_element(const rs_format *f, size_t tensor_extent)
{
    if (!f) return 0.0;
    switch (f->kind) {
    case RS_FMT_FP32: return 4.0;
    case RS_FMT_FP16:
    case RS_FMT_BF16: return 2.0;
    case RS_FMT_FP8:
    case RS_FMT_E5M2: return 1.0 + 4.0 / RS_FP8_BLOCK;
    case RS_FMT_MXFP8: return 1.0 + 1.0 / RS_MX_BLOCK;
    case RS_FMT_MXFP4: return 0.5 + 1.0 / RS_MX_BLOCK;
    case RS_FMT_NVFP4:
        /* tensor_extent 0: the per-tensor scale is left out (an unbounded tensor) */
        return 0.5 + 1.0 / RS_NVFP4_BLOCK + (tensor_extent ? 4.0 / (double)tensor_extent : 0.0);
    }
    return 0.0;
}
