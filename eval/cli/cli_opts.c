/* cli_opts.c — option lookup, value parsing with range checks, error messages and --help
 * rendering for every `replayssm` command (cli_opts.h). One implementation: a command that
 * declares --seed gets the same parse, the same message and the same help line as any other. */
#include "cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/theory/rs_theory.h" /* rs_theory_model_find */

int rs_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "replayssm %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

int rs_cli_parse_size(const char *s, size_t *out)
{
    if (!s || s[0] < '0' || s[0] > '9') return 0; /* no sign, no blank, no empty */
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > SIZE_MAX) return 0;
    *out = (size_t)v;
    return 1;
}

static int parse_u64_(const char *s, uint64_t *out)
{
    if (!s || s[0] < '0' || s[0] > '9') return 0;
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return 0;
    *out = (uint64_t)v;
    return 1;
}

/* the range message of an integer option: one wording per kind of range */
static int int_error_(const rs_cli_spec *s, const char *name, const char *val, double lo, double hi)
{
    if (hi == 0 && lo == 0) return rs_cli_usage_error(s->cmd, "%s needs a non-negative integer, not '%s'", name, val);
    if (hi == 0 && lo == 1) return rs_cli_usage_error(s->cmd, "%s needs a positive integer, not '%s'", name, val);
    if (hi == 0) return rs_cli_usage_error(s->cmd, "%s needs an integer >= %.0f, not '%s'", name, lo, val);
    return rs_cli_usage_error(s->cmd, "%s needs an integer in [%.0f, %.0f], not '%s'", name, lo, hi, val);
}

static int double_error_(const rs_cli_spec *s, const rs_cli_opt *o, const char *name, const char *val)
{
    const char open = (o->flags & RS_CLI_LO_OPEN) ? '(' : '[';
    if (o->hi == 0 && o->lo == 0 && open == '(')
        return rs_cli_usage_error(s->cmd, "%s needs a positive number, not '%s'", name, val);
    if (o->hi == 0) return rs_cli_usage_error(s->cmd, "%s needs a number %s %g, not '%s'", name, open == '(' ? ">" : ">=", o->lo, val);
    return rs_cli_usage_error(s->cmd, "%s needs a number in %c%g, %g], not '%s'", name, open, o->lo, o->hi, val);
}

/* "a|b|c" holds val as a whole item */
static int in_choices_(const char *choices, const char *val)
{
    const size_t n = strlen(val);
    for (const char *p = choices; *p;) {
        const size_t k = strcspn(p, "|");
        if (k == n && !strncmp(p, val, n)) return 1;
        p += k + (p[k] == '|');
    }
    return 0;
}

static int store_(const rs_cli_spec *s, const rs_cli_opt *o, const char *name, const char *val, rs_cli_ctx *c)
{
    switch (o->kind) {
    case RS_CLI_FLAG: *(int *)o->dst = 1; return 1;
    case RS_CLI_STR: *(const char **)o->dst = val; return 1;
    case RS_CLI_CHOICE:
        if (!in_choices_(o->choices, val)) {
            char list[256];
            size_t k = 0;
            for (const char *p = o->choices; *p && k + 3 < sizeof list; p++) {
                if (*p == '|') {
                    list[k++] = ',';
                    list[k++] = ' ';
                } else {
                    list[k++] = *p;
                }
            }
            list[k] = '\0';
            rs_cli_usage_error(s->cmd, "%s must be one of %s, not '%s'", name, list, val);
            return 0;
        }
        *(const char **)o->dst = val;
        return 1;
    case RS_CLI_SIZE: {
        size_t v = 0;
        if (!rs_cli_parse_size(val, &v) || (double)v < o->lo || (o->hi != 0 && (double)v > o->hi)) {
            int_error_(s, name, val, o->lo, o->hi);
            return 0;
        }
        *(size_t *)o->dst = v;
        return 1;
    }
    case RS_CLI_U64: {
        uint64_t v = 0;
        if (!parse_u64_(val, &v) || (double)v < o->lo || (o->hi != 0 && (double)v > o->hi)) {
            int_error_(s, name, val, o->lo, o->hi);
            return 0;
        }
        *(uint64_t *)o->dst = v;
        return 1;
    }
    case RS_CLI_INT: {
        size_t v = 0;
        if (!rs_cli_parse_size(val, &v) || (double)v < o->lo || (double)v > o->hi) {
            int_error_(s, name, val, o->lo, o->hi);
            return 0;
        }
        *(int *)o->dst = (int)v;
        return 1;
    }
    case RS_CLI_DOUBLE: {
        char *end = NULL;
        errno = 0;
        const double v = strtod(val, &end);
        const int lo_ok = (o->flags & RS_CLI_LO_OPEN) ? v > o->lo : v >= o->lo;
        if (!val[0] || errno || *end || !isfinite(v) || !lo_ok || (o->hi != 0 && v > o->hi)) {
            double_error_(s, o, name, val);
            return 0;
        }
        *(double *)o->dst = v;
        return 1;
    }
    case RS_CLI_CUSTOM: return o->fn(c, val);
    }
    return 0;
}

static const rs_cli_opt *find_(const rs_cli_spec *s, const char *name)
{
    for (size_t k = 0; k < s->n_opts; k++) {
        const rs_cli_opt *o = &s->opts[k];
        if (!strcmp(o->name, name) || (o->alias && !strcmp(o->alias, name))) return o;
    }
    return NULL;
}

int rs_cli_parse(const rs_cli_spec *s, int argc, char **argv, void *user, char **pos, size_t *n_pos)
{
    size_t np = 0;
    int rest = 0; /* after "--": every argument is positional */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (rest || a[0] != '-' || a[1] == '\0') {
            if (np >= s->max_positional) {
                if (s->max_positional == 0 || !pos)
                    return rs_cli_usage_error(s->cmd, "unexpected argument '%s' (see 'replayssm %s --help')", a, s->cmd);
                return rs_cli_usage_error(s->cmd, "too many arguments: '%s' (see 'replayssm %s --help')", a, s->cmd);
            }
            if (pos) pos[np] = argv[i];
            np++;
            continue;
        }
        if (!strcmp(a, "--")) {
            rest = 1;
            continue;
        }
        char name[64];
        const char *val = NULL, *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof name) { /* --name=value */
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        const rs_cli_opt *o = find_(s, name);
        if (!o && (!strcmp(name, "-h") || !strcmp(name, "--help"))) {
            rs_cli_help(s, stdout);
            return 1;
        }
        if (!o) return rs_cli_usage_error(s->cmd, "unknown option '%s' (see 'replayssm %s --help')", a, s->cmd);
        const int takes_value = o->kind != RS_CLI_FLAG && !(o->kind == RS_CLI_CUSTOM && (o->flags & RS_CLI_NOVAL));
        if (!takes_value && val) return rs_cli_usage_error(s->cmd, "%s takes no value", name);
        const int eq_form = val != NULL;
        if (takes_value && !val) {
            if (i + 1 >= argc) return rs_cli_usage_error(s->cmd, "%s needs a value", name);
            val = argv[++i];
        }
        rs_cli_ctx c = {s, name, argc, argv, &i, eq_form, user};
        if (!store_(s, o, name, val, &c)) return 2;
        if (o->given) *o->given = 1;
    }
    if (n_pos) *n_pos = np;
    return 0;
}

/* display width of the n bytes at s (code points; the help texts have no wide characters) */
static size_t width_n_(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t k = 0; k < n && s[k]; k++) w += ((unsigned char)s[k] & 0xC0u) != 0x80u;
    return w;
}

/* text with '\n' lines, each after `indent` blanks (the first line continues the current one at
 * column `indent` too); a line longer than RS_CLI_HELP_WIDTH - indent is wrapped at a blank */
static void lines_(FILE *f, const char *text, int indent, const char *tail)
{
    const size_t room = RS_CLI_HELP_WIDTH > indent + 20 ? (size_t)(RS_CLI_HELP_WIDTH - indent) : 20;
    const char *p = text;
    for (int first = 1;; first = 0) {
        size_t k = strcspn(p, "\n");
        const char *next = p + k + (p[k] == '\n');
        int more = p[k] != '\0';
        if (width_n_(p, k) > room) { /* the last blank that keeps the piece within room */
            size_t cut = 0;
            for (size_t j = 0; j < k; j++)
                if (p[j] == ' ' && width_n_(p, j) <= room) cut = j;
            if (cut > 0) {
                k = cut;
                next = p + cut + 1;
                more = 1;
            }
        }
        if (!first) fprintf(f, "%*s", indent, "");
        fprintf(f, "%.*s", (int)k, p);
        if (!more) break;
        fputc('\n', f);
        p = next;
    }
    if (tail) fputs(tail, f);
}

/* display width of a UTF-8 string (code points; the help texts have no wide characters) */
static size_t width_(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0u) != 0x80u;
    return w;
}

/* the width of the last line of text */
static size_t last_line_width_(const char *text)
{
    const char *nl = strrchr(text, '\n');
    return width_(nl ? nl + 1 : text);
}

static void opt_line_(FILE *f, const char *left, const char *help, const char *def)
{
    const size_t lw = width_(left);
    fprintf(f, "%s", left);
    if (lw + 2 > RS_CLI_HELP_COL) fprintf(f, "\n%*s", RS_CLI_HELP_COL, "");
    else fprintf(f, "%*s", (int)(RS_CLI_HELP_COL - lw), "");
    lines_(f, help, RS_CLI_HELP_COL, NULL);
    if (def) {
        if (RS_CLI_HELP_COL + last_line_width_(help) + 2 + width_(def) > RS_CLI_HELP_WIDTH)
            fprintf(f, "\n%*s%s", RS_CLI_HELP_COL, "", def);
        else fprintf(f, "  %s", def);
    }
    fputc('\n', f);
}

void rs_cli_help(const rs_cli_spec *s, FILE *f)
{
    char head[64];
    snprintf(head, sizeof head, "usage: replayssm %s ", s->cmd);
    fputs(head, f);
    lines_(f, s->synopsis, (int)strlen(head), "\n");
    if (s->about) {
        fputc('\n', f);
        lines_(f, s->about, 0, "\n");
    }
    fprintf(f, "\noptions:\n");
    for (size_t k = 0; k < s->n_opts; k++) {
        const rs_cli_opt *o = &s->opts[k];
        if (o->flags & RS_CLI_HIDDEN) continue;
        char left[128];
        snprintf(left, sizeof left, "  %s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name,
                 o->metavar ? " " : "", o->metavar ? o->metavar : "");
        opt_line_(f, left, o->help, o->def);
    }
    opt_line_(f, "  -h, --help", "this text", NULL);
    if (s->epilog) {
        fputc('\n', f);
        lines_(f, s->epilog, 0, "\n");
    }
}

int rs_cli_shape_name(const char *cmd, const char *shape, const char *model, const char **out)
{
    *out = shape ? shape : "all";
    if (!model) return 0;
    struct stat sb;
    if (stat(model, &sb) == 0 && S_ISDIR(sb.st_mode))
        return rs_cli_usage_error(cmd, "--model %s: a checkpoint folder; %s works on the built-in model shapes: "
                                  "pass --shape NAME (nemotron-3-nano-4b, nemotron-3-super, qwen3.5-4b, qwen3.5-122b, "
                                  "all)", model, cmd);
    if (shape) return rs_cli_usage_error(cmd, "--model names a checkpoint folder and '%s' is none; the shape is "
                                         "--shape %s", model, shape);
    const rs_model_shape *ms = NULL;
    if (strcmp(model, "all") && rs_theory_model_find(model, &ms) != RS_OK)
        return rs_cli_usage_error(cmd, "--model takes a checkpoint folder and '%s' is none; for a built-in model "
                                  "shape use --shape NAME (nemotron-3-nano-4b, nemotron-3-super, qwen3.5-4b, "
                                  "qwen3.5-122b, all)", model);
    /* the old spelling of a built-in shape, kept for scripts that use it (notebooks/reproduce.sh) */
    fprintf(stderr, "replayssm %s: note: --model %s is the old spelling of --shape %s\n", cmd, model, model);
    *out = model;
    return 0;
}
