/* kl_args.c — option parsing shared by `replayssm kl` and `replayssm sweep` (kl_args.h).
 * Every usage error is printed here ("replayssm <cmd>: ...") and ends with exit status 2. */
#include "kl_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/common/rs_status.h"
#include "replayssm/eval/rs_kleval.h"

void rs_kl_opts_init(rs_kl_opts *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->model = RS_KL_DEFAULT_MODEL;
    o->data = RS_KL_DEFAULT_DATA;
    o->split = "test";
    o->short_mode = "skip";
    o->books = 1;
    o->tokens = RS_KL_DEFAULT_TOKENS;
    o->chunk = RS_KL_DEFAULT_CHUNK;
    o->window = RS_KL_DEFAULT_WINDOW;
    o->device = "cpu";
    o->compute = "fp32";
}

void rs_kl_opts_free(rs_kl_opts *o)
{
    for (size_t i = 0; i < o->n_book_ids; i++) free(o->book_ids[i]);
    free(o->book_ids);
    o->book_ids = NULL;
    o->n_book_ids = 0;
    free(o->inputs);
    o->inputs = NULL;
    o->n_inputs = 0;
}

int rs_kl_parse_size(const char *s, size_t *out)
{
    if (!s || !*s) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-') return 0;
    *out = (size_t)v;
    return 1;
}

size_t rs_kl_split_list(const char *cmd, const char *what, char *s, char **items, size_t max)
{
    /* strtok would skip empty items: "--policy ''" or "--policy ," ran the reference alone, and
     * items past max were dropped without a word */
    const size_t len = strlen(s);
    if (!len || s[0] == ',' || s[len - 1] == ',' || strstr(s, ",,")) {
        fprintf(stderr, "replayssm %s: %s: empty item in '%s'\n", cmd, what, s);
        return 0;
    }
    size_t n = 1;
    for (const char *c = s; *c; c++) n += *c == ',';
    if (n > max) {
        fprintf(stderr, "replayssm %s: %s: %zu items in '%s', at most %zu\n", cmd, what, n, s, max);
        return 0;
    }
    n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

int rs_kl_add_run(rs_kl_opts *o, const char *policy, size_t window)
{
    if (o->n_runs >= RS_KL_MAX_RUNS) {
        fprintf(stderr, "replayssm %s: at most %d runs\n", o->cmd, RS_KL_MAX_RUNS);
        return 0;
    }
    rs_policy p;
    if (rs_policy_parse(policy, &p) != RS_OK) {
        fprintf(stderr, "replayssm %s: unknown policy: %s\n", o->cmd, rs_last_error());
        return 0;
    }
    char canon[64];
    if (rs_policy_print(&p, canon, sizeof canon) != RS_OK) snprintf(canon, sizeof canon, "%s", policy);
    for (size_t i = 0; i < o->n_runs; i++)
        if (rs_policy_equal(&o->pol[i], &p) && o->win[i] == window) return 1; /* a repeat runs once */
    o->pol[o->n_runs] = p;
    snprintf(o->pol_str[o->n_runs], sizeof o->pol_str[0], "%s", canon);
    o->win[o->n_runs] = window;
    o->n_runs++;
    return 1;
}

/* --book-ids L: append the ids of the comma list (repeatable) */
static int add_book_ids_(rs_kl_opts *o, const char *val)
{
    char *copy = strdup(val);
    if (!copy) return 0;
    char *items[1024];
    const size_t k = rs_kl_split_list(o->cmd, "--book-ids", copy, items, 1024);
    if (!k) {
        free(copy);
        return 0;
    }
    for (size_t j = 0; j < k; j++) {
        char **nb = (char **)realloc(o->book_ids, (o->n_book_ids + 1) * sizeof(char *));
        if (!nb) {
            free(copy);
            return 0;
        }
        o->book_ids = nb;
        if (!(o->book_ids[o->n_book_ids] = strdup(items[j]))) {
            free(copy);
            return 0;
        }
        o->n_book_ids++;
    }
    free(copy);
    return 1;
}

/* --text / --token-ids (kind 1 / 2): the value and every following argument that is not an
 * option (--text a.txt b.txt); repeatable; the two exclude each other */
static int add_inputs_(rs_kl_opts *o, int kind, const char *name, const char *val, int *i, int argc, char **argv)
{
    if (o->input_kind && o->input_kind != kind) {
        fprintf(stderr, "replayssm %s: --text and --token-ids exclude each other\n", o->cmd);
        return 0;
    }
    o->input_kind = kind;
    for (;;) {
        if (!val[0]) {
            fprintf(stderr, "replayssm %s: %s: empty file name\n", o->cmd, name);
            return 0;
        }
        const char **ni = (const char **)realloc(o->inputs, (o->n_inputs + 1) * sizeof *ni);
        if (!ni) {
            fprintf(stderr, "replayssm %s: out of memory\n", o->cmd);
            return 0;
        }
        o->inputs = ni;
        o->inputs[o->n_inputs++] = val;
        if (*i + 1 >= argc || argv[*i + 1][0] == '-') return 1;
        val = argv[++*i];
    }
}

/* --device cpu | cuda | cuda:N */
static int device_opt_(rs_kl_opts *o, const char *val)
{
    if (!strcmp(val, "cpu") || !strcmp(val, "cuda")) {
        o->device = val;
        o->device_ordinal = 0;
        return 1;
    }
    if (!strncmp(val, "cuda:", 5) && val[5] >= '0' && val[5] <= '9') {
        char *end = NULL;
        const long n = strtol(val + 5, &end, 10);
        if (*end == '\0' && n >= 0 && n < 64) {
            o->device = "cuda";
            o->device_ordinal = (int)n;
            return 1;
        }
    }
    fprintf(stderr, "replayssm %s: --device must be cpu, cuda or cuda:N, not '%s'\n", o->cmd, val);
    return 0;
}

/* a numeric option in [lo, hi]; prints "--name <what>, not 'val'" otherwise */
static int size_opt_(const rs_kl_opts *o, const char *name, const char *val, size_t lo, size_t hi, const char *what,
                     size_t *out)
{
    size_t v = 0;
    if (rs_kl_parse_size(val, &v) && v >= lo && v <= hi) {
        *out = v;
        return 1;
    }
    fprintf(stderr, "replayssm %s: %s %s, not '%s'\n", o->cmd, name, what, val);
    return 0;
}

int rs_kl_parse(int argc, char **argv, rs_kl_opts *o, int sweep, void (*usage)(FILE *))
{
    char what[64];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char name[64];
        const char *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof name) { /* --name=value */
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
#define FLAG(s) (!strcmp(name, s))
#define NEEDVAL()                                                                                   \
    do {                                                                                            \
        if (!val) {                                                                                 \
            if (i + 1 >= argc) {                                                                    \
                fprintf(stderr, "replayssm %s: %s needs a value\n", o->cmd, name);                  \
                return 2;                                                                           \
            }                                                                                       \
            val = argv[++i];                                                                        \
        }                                                                                           \
    } while (0)
        size_t v = 0;
        if (FLAG("-h") || FLAG("--help")) {
            usage(stdout);
            return 1;
        } else if (FLAG("--model")) { NEEDVAL(); o->model = val; }
        else if (FLAG("--data")) { NEEDVAL(); o->data = val; o->pg19_given = 1; }
        else if (FLAG("--split")) { NEEDVAL(); o->split = val; o->pg19_given = 1; }
        else if (FLAG("--text") || FLAG("--token-ids")) {
            const int eq_form = val != NULL; /* --text=a.txt: that one file */
            NEEDVAL();
            if (!add_inputs_(o, FLAG("--text") ? 1 : 2, name, val, &i, eq_form ? i + 1 : argc, argv)) return 2;
        }
        else if (FLAG("--out")) { NEEDVAL(); o->out = val; }
        else if (FLAG("--short")) {
            NEEDVAL();
            if (strcmp(val, "skip") && strcmp(val, "truncate")) {
                fprintf(stderr, "replayssm %s: --short must be skip or truncate, not '%s'\n", o->cmd, val);
                return 2;
            }
            o->short_mode = val;
        } else if (FLAG("--books")) {
            NEEDVAL();
            if (!size_opt_(o, name, val, 1, SIZE_MAX, "needs a positive integer", &o->books)) return 2;
            o->pg19_given = 1;
        } else if (FLAG("--book-ids")) {
            NEEDVAL();
            o->pg19_given = 1;
            if (!add_book_ids_(o, val)) return 2;
        } else if (FLAG("--tokens")) {
            NEEDVAL();
            snprintf(what, sizeof what, "must be in [1, %d]", RS_KLEVAL_MAX_TOKENS);
            if (!size_opt_(o, name, val, 1, RS_KLEVAL_MAX_TOKENS, what, &o->tokens)) return 2;
        } else if (FLAG("--chunk")) {
            NEEDVAL();
            snprintf(what, sizeof what, "must be in [1, %d]", RS_KLEVAL_MAX_CHUNK);
            if (!size_opt_(o, name, val, 1, RS_KLEVAL_MAX_CHUNK, what, &o->chunk)) return 2;
        } else if (FLAG("--seed")) {
            NEEDVAL();
            if (!size_opt_(o, name, val, 0, SIZE_MAX, "needs a non-negative integer", &v)) return 2;
            o->seed = (uint64_t)v;
        } else if (FLAG("--threads")) {
            NEEDVAL();
            if (!size_opt_(o, name, val, 1, 4096, "needs a positive integer", &v)) return 2;
            o->threads = (int)v;
        } else if (FLAG("--device")) {
            NEEDVAL();
            if (!device_opt_(o, val)) return 2;
        } else if (FLAG("--compute")) {
            NEEDVAL();
            rs_compute_mode cm;
            if (rs_compute_mode_parse(val, &cm) != RS_OK) {
                fprintf(stderr, "replayssm %s: --compute: %s\n", o->cmd, rs_last_error());
                return 2;
            }
            o->compute = val;
        } else if (FLAG("--resume")) o->resume = 1;
        else if (FLAG("--force")) o->force = 1;
        else if (FLAG("--quiet") || FLAG("-q")) o->quiet = 1;
        else if (!sweep && FLAG("--policy")) {
            NEEDVAL();
            if (o->n_policies >= RS_KL_MAX_RUNS) {
                fprintf(stderr, "replayssm %s: too many policies\n", o->cmd);
                return 2;
            }
            o->policies[o->n_policies++] = val;
        } else if (!sweep && FLAG("--window")) {
            NEEDVAL();
            snprintf(what, sizeof what, "must be in [1, %d]", RS_KLEVAL_MAX_WINDOW);
            if (!size_opt_(o, name, val, 1, RS_KLEVAL_MAX_WINDOW, what, &o->window)) return 2;
        } else if (sweep && FLAG("--modes")) { NEEDVAL(); o->modes = val; }
        else if (sweep && FLAG("--formats")) { NEEDVAL(); o->formats = val; }
        else if (sweep && FLAG("--rounding")) { NEEDVAL(); o->rounding = val; }
        else if (sweep && FLAG("--hp")) { NEEDVAL(); o->hp = val; }
        else if (sweep && FLAG("--windows")) { NEEDVAL(); o->windows = val; }
        else {
            fprintf(stderr, "replayssm %s: unknown option '%s' (see 'replayssm %s --help')\n", o->cmd, a, o->cmd);
            return 2;
        }
#undef FLAG
#undef NEEDVAL
    }
    if (o->input_kind && o->pg19_given) {
        fprintf(stderr, "replayssm %s: %s replaces the PG-19 books: it excludes --data, --split, --books and --book-ids\n",
                o->cmd, o->input_kind == 1 ? "--text" : "--token-ids");
        return 2;
    }
    return 0;
}
