/* test_kleval_fixture.c — the evaluator library (replayssm/eval/rs_kleval.h, one runner for all
 * windows) gives the bits of an independent driver: tests/fixtures/kleval/ (README: how) holds
 * short runs of the CLI from before the evaluator was a library (one runner per window): both
 * bundled models with the default policies, and a two-window sweep. Every command of
 * commands.txt, rerun with this CLI, gives the fixture's kl, nll, dp, top1_agree of every run and
 * nll, next_token, top1 of the reference bit for bit and the same printed table; the first one
 * through the library API gives the CLI's bits. GEMM bits depend on the OpenBLAS kernel of the CPU
 * (openblas-core.txt: the fixture's): on another core the comparison says so and falls back to
 * tolerances (compare_); CI runs on the fixture's core. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cblas.h>
#include <cmocka.h>

#include "replayssm/eval/rs_kleval.h"
#include "rs_test_kleval.h"
#include "rs_test_util.h"

#define MAX_SETS 256
/* One log's committed datasets in a fixed order: per book the reference's next_token, top1,
 * nll, then per run kl, nll, dp, top1_agree (the order of make_fixture.py). */
typedef struct dataset {
    char name[64];
    size_t elem; /* 4: int32, 8: double, 1: uint8 */
    size_t n;
    unsigned char *data;
} dataset;

typedef struct logset {
    size_t n_books, n_runs, n_sets;
    size_t window[64];
    char policy[64][64];
    dataset set[MAX_SETS];
} logset;

static char g_dir[256];
static int g_exact; /* this machine's OpenBLAS core is the fixture's */

static void *add_(logset *s, const char *name, size_t b, long r, size_t elem, size_t n)
{
    assert_true(s->n_sets < MAX_SETS);
    dataset *d = &s->set[s->n_sets++];
    if (r < 0) snprintf(d->name, sizeof d->name, "book %zu reference %s", b, name);
    else snprintf(d->name, sizeof d->name, "book %zu run%ld %s", b, r, name);
    d->elem = elem;
    d->n = n;
    d->data = calloc(n ? n : 1, elem);
    assert_non_null(d->data);
    return d->data;
}

static const char *const k_ref[] = {"next_token", "top1", "nll"}, *const k_run[] = {"kl", "nll", "dp", "top1_agree"};
static const size_t k_ref_elem[] = {4, 4, 8}, k_run_elem[] = {8, 8, 8, 1};

static void load_log_(const char *path, logset *s)
{
    memset(s, 0, sizeof *s);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(path, 0, NULL, &lg), RS_OK);
    s->n_books = rs_h5log_n_books(lg);
    s->n_runs = rs_h5log_n_runs(lg);
    for (size_t r = 0; r < s->n_runs; r++) {
        s->window[r] = rs_h5log_window(lg, r);
        snprintf(s->policy[r], 64, "%s", rs_h5log_policy(lg, r));
    }
    for (size_t b = 0; b < s->n_books; b++) {
        const size_t n = (size_t)rs_h5log_completed(lg, b);
        for (long r = -1; r < (long)s->n_runs; r++)
            for (int k = 0; k < (r < 0 ? 3 : 4); k++) {
                const char *nm = r < 0 ? k_ref[k] : k_run[k];
                void *buf = add_(s, nm, b, r, r < 0 ? k_ref_elem[k] : k_run_elem[k], n);
                assert_int_equal(rs_h5log_read_row(lg, r, nm, b, n, buf), RS_OK);
            }
    }
    rs_h5log_close(lg);
}

static uint32_t u32_(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* the flat file of make_fixture.py (little-endian, as this x86-64 machine) */
static void load_bin_(const char *path, logset *s)
{
    memset(s, 0, sizeof *s);
    size_t size = 0, off = 16;
    unsigned char *p = rs_test_read_file(path, &size);
    assert_non_null(p);
    assert_true(size >= 16 && !memcmp(p, "RSKLFX01", 8));
    s->n_books = u32_(p + 8);
    s->n_runs = u32_(p + 12);
    assert_true(s->n_runs <= 64 && s->n_books <= 16);
    for (size_t r = 0; r < s->n_runs; r++, off += 68) {
        s->window[r] = u32_(p + off);
        memcpy(s->policy[r], p + off + 4, 63);
    }
    size_t n[16];
    for (size_t b = 0; b < s->n_books; b++, off += 4) n[b] = u32_(p + off);
    for (size_t b = 0; b < s->n_books; b++)
        for (long r = -1; r < (long)s->n_runs; r++)
            for (int k = 0; k < (r < 0 ? 3 : 4); k++) {
                const size_t e = r < 0 ? k_ref_elem[k] : k_run_elem[k];
                assert_true(off + e * n[b] <= size);
                memcpy(add_(s, r < 0 ? k_ref[k] : k_run[k], b, r, e, n[b]), p + off, e * n[b]);
                off += e * n[b];
            }
    assert_int_equal(off, size);
    free(p);
}

static void free_(logset *s) { for (size_t i = 0; i < s->n_sets; i++) free(s->set[i].data); }

/* mean and (rms not NULL) root mean square of a double or uint8 dataset */
static double mean_(const dataset *d, double *rms)
{
    double m = 0, q = 0;
    for (size_t i = 0; i < d->n; i++) {
        const double v = d->elem == 8 ? ((const double *)d->data)[i] : d->data[i];
        m += v;
        q += v * v;
    }
    if (rms) *rms = d->n ? sqrt(q / (double)d->n) : 0;
    return d->n ? m / (double)d->n : 0;
}

/* exact: every dataset bit for bit. Else (another OpenBLAS kernel: other last bits in every GEMM,
 * then other SR / RTN decisions, so runs drift): the tokens exactly, the reference per position
 * (NLL to 1e-4 relative, top-1 on 99 %), each run's datasets by their means, to 2-3x what the
 * Haswell and Prescott kernels gave against Cooperlake here (OPENBLAS_CORETYPE; worst: reference
 * NLL 1.8e-5, KL 9 %, NLL 0.35 %, dp 5 % of its RMS, top-1 agreement 1.5 points): loose, yet a
 * wrong window or policy (L = 4 vs 16 doubles the KL) fails. */
static void compare_(const logset *a, const logset *b, int exact)
{
    assert_int_equal(a->n_books, b->n_books);
    assert_int_equal(a->n_runs, b->n_runs);
    assert_int_equal(a->n_sets, b->n_sets);
    for (size_t r = 0; r < a->n_runs; r++) {
        assert_string_equal(a->policy[r], b->policy[r]);
        assert_int_equal(a->window[r], b->window[r]);
    }
    for (size_t i = 0; i < a->n_sets; i++) {
        const dataset *x = &a->set[i], *y = &b->set[i];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->n, y->n);
        if (exact || strstr(x->name, "next_token")) {
            if (memcmp(x->data, y->data, x->n * x->elem)) print_message("%s differs\n", x->name);
            assert_memory_equal(x->data, y->data, x->n * x->elem);
        } else if (strstr(x->name, "reference nll")) {
            for (size_t t = 0; t < x->n; t++) {
                const double p = ((const double *)x->data)[t], q = ((const double *)y->data)[t];
                assert_true(fabs(p - q) <= 1e-4 * fabs(p) + 1e-12);
            }
        } else if (x->elem == 4) { /* the reference's top-1: near-ties may flip */
            size_t diff = 0;
            for (size_t t = 0; t < x->n; t++) diff += ((const int32_t *)x->data)[t] != ((const int32_t *)y->data)[t];
            assert_true(diff <= x->n / 100);
        } else {
            double rx;
            const double mx = mean_(x, &rx), my = mean_(y, NULL);
            const char *kind = strrchr(x->name, ' ') + 1;
            const double tol = !strcmp(kind, "kl") ? 0.25 * mx : !strcmp(kind, "nll") ? 0.01 * mx
                             : !strcmp(kind, "dp") ? 0.15 * rx : 0.03; /* top1_agree */
            if (fabs(mx - my) > tol) print_message("%s: mean %.6g vs %.6g\n", x->name, mx, my);
            assert_true(fabs(mx - my) <= tol);
        }
    }
}

static int sh_(const char *cmd)
{
    const int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_klfx_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    char fx[1024];
    rs_test_fixture_path(fx, sizeof fx, "../.."); /* the commands run from the repository root */
    if (chdir(fx) != 0) return -1;
    rs_test_fixture_path(fx, sizeof fx, "kleval/openblas-core.txt");
    size_t n = 0;
    char *core = rs_test_read_file(fx, &n);
    if (!core) return -1;
    while (n && (core[n - 1] == '\n' || core[n - 1] == ' ')) n--;
    const char *here = openblas_get_corename();
    g_exact = strlen(here) == n && !strncmp(here, core, n);
    if (!g_exact)
        print_message("NOTE: OpenBLAS core %s, the fixture was made on %.*s: GEMM bits differ, comparing with "
                      "tolerances instead of bit for bit\n", here, (int)n, core);
    free(core);
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return sh_(cmd) == 0 ? 0 : -1;
}

/* the whitespace-separated words of the line after the line that starts with `head` whose first
 * word is run r (at most max words, each < 64 chars); the count, 0 if none */
static size_t row_words_(const char *text, const char *head, int r, char words[][64], size_t max)
{
    const char *h = strstr(text, head);
    if (!h) return 0;
    for (const char *l = strchr(h, '\n'); l && l[1] && l[1] != '\n'; l = strchr(l + 1, '\n')) {
        const char *line = l + 1;
        const size_t len = strcspn(line, "\n");
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        size_t n = 0;
        for (char *w = strtok(buf, " "); w && n < max; w = strtok(NULL, " ")) snprintf(words[n++], 64, "%s", w);
        if (n && atoi(words[0]) == r && words[0][0] >= '0' && words[0][0] <= '9') return n;
    }
    return 0;
}

/* The table of the old binary (one row per run: run policy L mean ±se median p90 p99 p99.9 max
 * RMS-Δp top1 n/f) against this build's summary (a legend of the runs, a KL table and a
 * Δp / top-1 table keyed by run, more statistics): the header line, every number the old table
 * printed (the same printf formats, so compared as text) and the blocks from "mean KL by position
 * window" on (unchanged) must agree. */
static void compare_table_(const char *name, const char *old, const char *now)
{
    const size_t l1 = strcspn(old, "\n");
    if (strncmp(old, now, l1 + 1)) fail_msg("%s: first line differs:\n%s\n%s", name, old, now);
    const char *wo = strstr(old, "\nmean KL by position window"), *wn = strstr(now, "\nmean KL by position window");
    if (!wo || !wn || strcmp(wo, wn)) fail_msg("%s: the window / reference blocks differ:\n%s\n---\n%s", name, old, now);
    for (int r = 0;; r++) {
        char o[16][64], lg[8][64], k[16][64], d[16][64];
        const size_t no = row_words_(old, "run policy", r, o, 16);
        if (no == 0) {
            if (r == 0) fail_msg("%s: no rows in the old table", name);
            if (row_words_(now, "run    mean KL", r, k, 16)) fail_msg("%s: run %d is new", name, r);
            break;
        }
        assert_int_equal(no, 13);
        assert_int_equal(row_words_(now, "run    L  policy", r, lg, 8), 3);
        assert_int_equal(row_words_(now, "run    mean KL", r, k, 16), 10);
        assert_int_equal(row_words_(now, "run    RMS", r, d, 16), 9);
        /* old: 0 r, 1 policy, 2 L, 3 mean, 4 se, 5 median, 6 p90, 7 p99, 8 p99.9, 9 max, 10 RMS, 11 top1, 12 n/f */
        const char *pairs[][2] = {{o[1], lg[2]}, {o[2], lg[1]}, {o[3], k[1]}, {o[4], k[2]}, {o[5], k[3]}, {o[6], k[4]},
                                  {o[7], k[6]}, {o[8], k[7]}, {o[9], k[8]}, {o[12], k[9]}, {o[10], d[1]}};
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
            if (strcmp(pairs[i][0], pairs[i][1])) fail_msg("%s run %d: old '%s', now '%s'", name, r, pairs[i][0], pairs[i][1]);
        char top1[72];
        snprintf(top1, sizeof top1, "%s%%", o[11]); /* now printed with its % sign */
        if (strcmp(top1, d[5])) fail_msg("%s run %d: top-1 old '%s', now '%s'", name, r, o[11], d[5]);
    }
}

static char *read_text_(const char *path)
{
    size_t n = 0;
    char *t = (char *)rs_test_read_file(path, &n);
    assert_non_null(t);
    t = (char *)realloc(t, n + 1);
    assert_non_null(t);
    t[n] = '\0';
    return t;
}

/* every command of commands.txt with this build's CLI vs the old binary's datasets and table */
static void test_cli_before_after(void **state)
{
    (void)state;
    char path[1200], name[1024], cmd[4096];
    rs_test_fixture_path(path, sizeof path, "kleval/commands.txt");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n_cmds = 0;
    while (fgets(name, sizeof name, f)) { /* name TAB arguments */
        char *tab = strchr(name, '\t');
        if (name[0] == '#' || !tab) continue;
        *tab = '\0';
        char *args = tab + 1;
        args[strcspn(args, "\n")] = '\0';
        assert_true(snprintf(cmd, sizeof cmd, "'%s' %s --out '%s/%s.h5' > '%s/%s.raw' && sed 's|-> .*$|-> OUT|' "
                             "'%s/%s.raw' > '%s/%s.stdout'", RS_CLI_PATH, args, g_dir, name, g_dir, name, g_dir,
                             name, g_dir, name) < (int)sizeof cmd);
        assert_int_equal(sh_(cmd), 0);
        logset now, before;
        assert_true(snprintf(path, sizeof path, "%s/%s.h5", g_dir, name) < (int)sizeof path);
        load_log_(path, &now);
        snprintf(cmd, sizeof cmd, "kleval/%s.bin", name);
        load_bin_(rs_test_fixture_path(path, sizeof path, cmd), &before);
        compare_(&before, &now, g_exact);
        print_message("%s: %zu runs, %s\n", name, now.n_runs, g_exact ? "bit-identical" : "within tolerance");
        free_(&now);
        free_(&before);
        if (g_exact) { /* the printed table: the same numbers (compare_table_) */
            assert_true(snprintf(path, sizeof path, "%s/%s.stdout", g_dir, name) < (int)sizeof path);
            char *now_t = read_text_(path);
            snprintf(path, sizeof path, "%s/kleval/%s.stdout", RS_FIXTURE_DIR, name);
            char *old_t = read_text_(path);
            compare_table_(name, old_t, now_t);
            free(now_t);
            free(old_t);
        }
        n_cmds++;
    }
    fclose(f);
    assert_int_equal(n_cmds, 3);
}

/* the first command through the library: the CLI's bits, and the fixture's */
static void test_api_equals_cli(void **state)
{
    (void)state;
    static const rs_test_run four[] = {{"shared:nvfp4-sr", 16, 0}, {"split:nvfp4-rtn/fp32", 16, 0},
                                       {"split:nvfp4-rtn/fp16-sr", 16, 0}, {"conv:fp16-sr", 16, 0}};
    rs_run_spec runs[4];
    assert_int_equal(rs_test_specs(four, 4, runs), RS_OK);
    char out[600], cli[600], cmd[4096];
    snprintf(out, sizeof out, "%s/api.h5", g_dir);
    snprintf(cli, sizeof cli, "%s/cli.h5", g_dir);
    snprintf(cmd, sizeof cmd, "'%s' kl --model data/models/gdn-tiny --data data/pg19-sample --tokens 512 --threads 2 "
             "--quiet --out '%s' > /dev/null", RS_CLI_PATH, cli);
    assert_int_equal(sh_(cmd), 0);
    rs_kleval_config c = rs_kleval_config_default();
    c.model_dir = "data/models/gdn-tiny";
    c.data_dir = "data/pg19-sample";
    c.tokens = 512;
    c.threads = 2;
    c.out_path = out;
    c.runs = runs;
    c.n_runs = 4;
    rs_kleval *ev = NULL;
    assert_int_equal(rs_kleval_create(&c, &ev), RS_OK);
    assert_int_equal(rs_kleval_run(ev), RS_OK);
    const rs_kleval_result *res = rs_kleval_get_result(ev);
    assert_true(res->complete);
    assert_string_equal(res->model_type, "qwen3_5_text");
    assert_int_equal(res->n_books, 1);
    assert_string_equal(res->books[0].id, "244");
    rs_kleval_free(ev);
    logset api, viacli, before;
    load_log_(out, &api);
    load_log_(cli, &viacli);
    rs_test_fixture_path(cmd, sizeof cmd, "kleval/kl-gdn-tiny-512.bin");
    load_bin_(cmd, &before);
    compare_(&viacli, &api, 1); /* same code, same machine: always bit for bit */
    compare_(&before, &api, g_exact);
    free_(&api);
    free_(&viacli);
    free_(&before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_before_after),
        cmocka_unit_test(test_api_equals_cli),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
