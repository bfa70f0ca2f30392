/* test_cli_progress.c — the progress report of `kl` / `sweep` (eval/cli/cli_progress.c, compiled in):
 *  - ETA: events of a run whose cost per position grows linearly with the position, c(t) = a + b t
 *    (attention), each chunk's time the exact integral of c over its positions; the ETA must be the
 *    exact integral of c over the positions left (this book and the later books), where a constant
 *    rate (positions so far / time so far) underestimates it; a cost that falls gives the mean;
 *  - the terminal line: as wide as $COLUMNS at most (no wrap), labelled with the policy names when
 *    they fit, abbreviated or numbered (with a legend) when not, "+N more" when even that is too wide;
 *  - plain lines: every `every` seconds, self-contained, and the last state at the end. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli_progress.h"
#include "rs_test_util.h"

static const char *const k_pol[] = {"shared:nvfp4-sr", "split:nvfp4-rtn/fp32", "split:nvfp4-rtn/fp16-sr", "conv:fp16-sr"};
static const size_t k_win[] = {16, 16, 16, 16};

/* seconds for positions [t0, t1) at cost a + b t per position */
static double cost_(double a, double b, double t0, double t1) { return a * (t1 - t0) + 0.5 * b * (t1 * t1 - t0 * t0); }

static void feed_(rs_cli_progress *p, size_t books, size_t P, size_t chunk, size_t upto_book, size_t upto_pos, double a,
                  double b, rs_kl_running *running, size_t n_runs)
{
    double t = 0;
    size_t done = 0;
    for (size_t bk = 0; bk <= upto_book; bk++)
        for (size_t pos = chunk; pos <= (bk == upto_book ? upto_pos : P); pos += chunk) {
            t += cost_(a, b, (double)(pos - chunk), (double)pos);
            done += chunk;
            rs_kleval_event e;
            memset(&e, 0, sizeof e);
            e.kind = RS_KLEVAL_EVENT_PROGRESS;
            e.book_id = "1023";
            e.book = bk;
            e.n_books = books;
            e.positions = P;
            e.position = pos;
            e.done = done;
            e.total = books * P;
            e.elapsed_s = t;
            e.n_runs = n_runs;
            e.running = running;
            rs_cli_progress_event(p, &e);
        }
}

static void test_eta_linear_cost(void **state)
{
    (void)state;
    const double a = 1e-3, b = 2e-6; /* the last position of a 4096 book costs 9x the first */
    const size_t P = 4096, C = 64, books = 3;
    rs_cli_progress p;
    rs_cli_progress_init(&p, "kl", k_pol, k_win, 0, 1 /* quiet: no output */, 30);
    feed_(&p, books, P, C, 0, 1024, a, b, NULL, 0);
    const double eta = rs_cli_progress_eta(&p, 1024, P, (books - 1) * P);
    const double want = cost_(a, b, 1024, (double)P) + (double)(books - 1) * cost_(a, b, 0, (double)P);
    /* exact up to rounding: the fit of a line to exact chunk means is exact (tolerance 1e-9
     * relative for the least-squares sums of 16 samples) */
    print_message("ETA %.6f s, integral %.6f s, constant rate %.6f s\n", eta, want,
                  cost_(a, b, 0, 1024) / 1024 * (double)(books * P - 1024));
    assert_true(fabs(eta - want) <= 1e-9 * want);
    /* a constant rate would be 40% off here: the test tells the two apart */
    const double constant = cost_(a, b, 0, 1024) / 1024 * (double)(books * P - 1024);
    assert_true(constant < 0.7 * want);
    /* later, in the second book: the window of the last 32 chunks spans the book boundary
     * (positions restart at 0), and the same line still fits exactly */
    rs_cli_progress q;
    rs_cli_progress_init(&q, "kl", k_pol, k_win, 0, 1, 30);
    feed_(&q, books, P, C, 1, 512, a, b, NULL, 0);
    const double eta2 = rs_cli_progress_eta(&q, 512, P, P);
    const double want2 = cost_(a, b, 512, (double)P) + cost_(a, b, 0, (double)P);
    assert_true(fabs(eta2 - want2) <= 1e-9 * want2);
    /* a falling cost is not extrapolated: the mean cost of the samples, times the positions left */
    rs_cli_progress r;
    rs_cli_progress_init(&r, "kl", k_pol, k_win, 0, 1, 30);
    feed_(&r, 1, P, C, 0, 1024, 2e-3, -1e-6, NULL, 0);
    double mean = 0;
    for (size_t k = 0; k < r.n_samples; k++) mean += r.cost_s[k];
    mean /= (double)r.n_samples;
    const double eta3 = rs_cli_progress_eta(&r, 1024, P, 0);
    assert_true(fabs(eta3 - mean * (double)(P - 1024)) <= 1e-9 * eta3);
}

/* stderr into a file for one call; the text written */
static char *capture_(void (*fn)(void *), void *arg)
{
    char path[] = "/tmp/rs_progress_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    const int saved = dup(2);
    assert_true(dup2(fd, 2) >= 0);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    size_t n = 0;
    char *t = (char *)rs_test_read_file(path, &n);
    unlink(path);
    assert_non_null(t);
    t = (char *)realloc(t, n + 1);
    t[n] = '\0';
    return t;
}

typedef struct draw_arg {
    size_t n_runs;
    int mode;
} draw_arg;

static void draw_(void *v)
{
    const draw_arg *d = (const draw_arg *)v;
    rs_cli_progress p;
    rs_cli_progress_init(&p, "kl", k_pol, k_win, d->n_runs, 0, 0.5);
    p.mode = d->mode; /* stderr is a file here: force the terminal line for mode 1 */
    rs_kl_running run[4] = {{10, 1.25e-2, 0}, {10, 3.5e-3, 0}, {10, 3.25e-3, 0}, {10, 1e-6, 0}};
    feed_(&p, 1, 1024, 64, 0, 1024, 1e-3, 0, run, d->n_runs);
    rs_cli_progress_end(&p);
}

/* the visible width of each redrawn segment ("\r...\033[K") */
static size_t max_segment_(const char *t)
{
    size_t mx = 0;
    for (const char *s = strchr(t, '\r'); s; s = strchr(s + 1, '\r')) {
        const char *e = strstr(s, "\033[K");
        assert_non_null(e);
        size_t w = 0;
        for (const char *c = s + 1; c < e; c++) w += ((unsigned char)*c & 0xC0u) != 0x80u;
        if (w > mx) mx = w;
    }
    return mx;
}

static void test_terminal_line_width(void **state)
{
    (void)state;
    draw_arg d = {4, 1};
    setenv("COLUMNS", "200", 1); /* wide: the full policy names */
    char *t = capture_(draw_, &d);
    assert_non_null(strstr(t, "shared:nvfp4-sr 1.25e-02 split:nvfp4-rtn/fp32 3.50e-03"));
    assert_true(max_segment_(t) <= 199);
    assert_non_null(strstr(t, "pos 1024/1024"));
    assert_non_null(strstr(t, "ETA "));
    free(t);
    setenv("COLUMNS", "140", 1); /* abbreviated names */
    t = capture_(draw_, &d);
    assert_non_null(strstr(t, "sh:nv4-sr 1.25e-02 sp:nv4-rtn/f32 3.50e-03"));
    assert_true(max_segment_(t) <= 139);
    free(t);
    setenv("COLUMNS", "100", 1); /* run numbers and their legend, once */
    t = capture_(draw_, &d);
    assert_non_null(strstr(t, "#0 1.25e-02 #1 3.50e-03 #2 3.25e-03 #3 1.00e-06"));
    const char *legend = strstr(t, "runs: #0 shared:nvfp4-sr #1 split:nvfp4-rtn/fp32");
    assert_non_null(legend);
    assert_null(strstr(legend + 1, "runs: #0"));
    assert_true(max_segment_(t) <= 99);
    free(t);
    setenv("COLUMNS", "60", 1); /* too narrow for all four: "+N more" */
    t = capture_(draw_, &d);
    assert_non_null(strstr(t, " more"));
    assert_true(max_segment_(t) <= 59);
    free(t);
    unsetenv("COLUMNS");
}

static void test_plain_lines(void **state)
{
    (void)state;
    draw_arg d = {2, 2};
    /* 16 chunks of 64 ms each (a = 1e-3 s per position): 1.024 s, lines every 0.5 s and the last */
    char *t = capture_(draw_, &d);
    size_t n = 0;
    for (const char *s = t; (s = strstr(s, "replayssm kl: progress: ")) != NULL; s++) n++;
    assert_true(n == 2); /* at 0.512 s (the first >= 0.5 s), then the final position (1.024 s) */
    assert_non_null(strstr(t, "book 1/1 (1023) position 1024/1024, 1024/1024 positions (100.0%)"));
    assert_non_null(strstr(t, "mean KL: 0 shared:nvfp4-sr 1.250e-02, 1 split:nvfp4-rtn/fp32 3.500e-03\n"));
    assert_null(strchr(t, '\r'));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eta_linear_cost),
        cmocka_unit_test(test_terminal_line_width),
        cmocka_unit_test(test_plain_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
