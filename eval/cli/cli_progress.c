/* cli_progress.c — the progress report of `kl` / `sweep` (cli_progress.h). */
#include "cli_progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "rs_cli.h" /* rs_cli_esc, RS_CLI_LN2 */

void rs_cli_progress_init(rs_cli_progress *p, const char *cmd, const char *const *policy, const size_t *window,
                          size_t n_runs, int quiet, double every)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->policy = policy;
    p->window = window;
    p->n_runs = n_runs;
    p->mode = quiet ? 0 : isatty(2) ? 1 : 2;
    p->every = every;
    p->last_print = p->mode == 1 ? -1.0 : 0.0;
    p->last_printed = 1; /* nothing to print before the first event */
}

double rs_cli_progress_eta(const rs_cli_progress *p, size_t position, size_t positions, size_t rest)
{
    const size_t n = p->n_samples;
    if (n == 0) return -1.0;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        sx += p->pos_s[i];
        sy += p->cost_s[i];
        sxx += p->pos_s[i] * p->pos_s[i];
        sxy += p->pos_s[i] * p->cost_s[i];
    }
    const double dn = (double)n, var = sxx - sx * sx / dn;
    double b = 0.0, a = sy / dn; /* the mean cost */
    if (n >= 3 && var > 1e-9 * (sxx + 1.0)) {
        b = (sxy - sx * sy / dn) / var;
        a = (sy - b * sx) / dn;
        if (b < 0 || a + b * (double)position <= 0) { /* a decreasing fit: no trend to extrapolate */
            b = 0.0;
            a = sy / dn;
        }
    }
    /* integral of a + b t dt over the positions left in this book, then over whole books */
    const double P = (double)positions, t = (double)(position < positions ? position : positions);
    double left = a * (P - t) + 0.5 * b * (P * P - t * t);
    if (rest > 0 && positions > 0) left += ((double)rest / P) * (a * P + 0.5 * b * P * P);
    return left;
}

static void add_sample_(rs_cli_progress *p, const rs_kleval_event *e)
{
    const size_t done0 = p->have_last ? p->last_done : e->done_at_start;
    const double t0 = p->have_last ? p->last_t : 0.0;
    p->have_last = 1;
    p->last_done = e->done;
    p->last_t = e->elapsed_s;
    if (e->done <= done0 || e->elapsed_s <= t0) return;
    const double dn = (double)(e->done - done0);
    double mid = (double)e->position - 0.5 * dn; /* the chunk's middle position in its book */
    if (mid < 0) mid = 0.5 * (double)e->position;
    p->pos_s[p->next_sample] = mid;
    p->cost_s[p->next_sample] = (e->elapsed_s - t0) / dn;
    p->next_sample = (p->next_sample + 1) % RS_CLI_PROGRESS_SAMPLES;
    if (p->n_samples < RS_CLI_PROGRESS_SAMPLES) p->n_samples++;
}

static void fmt_time_(double s, char *buf, size_t n)
{
    if (s < 0 || !isfinite(s)) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static double eta_of_(const rs_cli_progress *p, const rs_kleval_event *e)
{
    const size_t in_book_left = e->positions > e->position ? e->positions - e->position : 0;
    const size_t left = e->total > e->done ? e->total - e->done : 0;
    const size_t rest = left > in_book_left ? left - in_book_left : 0;
    return rs_cli_progress_eta(p, e->position, e->positions, rest);
}

/* the policy abbreviated: mode and format names shortened ("shared:nvfp4-sr" -> "sh:nv4-sr") */
static void abbrev_(const char *pol, char *out, size_t n)
{
    static const char *const from[] = {"split-naive:", "shared:", "split:", "conv:", "nvfp4", "fp16", "bf16", "fp32", "fp8"};
    static const char *const to[] = {"spn:", "sh:", "sp:", "cv:", "nv4", "f16", "b16", "f32", "f8"};
    size_t o = 0;
    for (const char *s = pol; *s && o + 1 < n;) {
        size_t k = 0;
        for (; k < sizeof from / sizeof from[0]; k++)
            if (!strncmp(s, from[k], strlen(from[k]))) break;
        if (k < sizeof from / sizeof from[0]) {
            const size_t m = strlen(to[k]);
            if (o + m + 1 > n) break;
            memcpy(out + o, to[k], m);
            o += m;
            s += strlen(from[k]);
        } else {
            out[o++] = *s++;
        }
    }
    out[o] = '\0';
}

static int terminal_width_(void)
{
    struct winsize ws;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    const char *c = getenv("COLUMNS");
    const int v = c ? atoi(c) : 0;
    return v >= 20 ? v : 80;
}

/* do the runs differ in window (then a label carries "@L") */
static int windows_differ_(const rs_cli_progress *p)
{
    for (size_t r = 1; r < p->n_runs; r++)
        if (p->window[r] != p->window[0]) return 1;
    return 0;
}

/* label of run r at abbreviation level lvl: 0 the policy, 1 abbreviated, 2 the run number */
static void label_(const rs_cli_progress *p, size_t r, int lvl, char *buf, size_t n)
{
    char esc[4 * 64 + 1], ab[128];
    const char *pol = rs_cli_esc(p->policy[r], esc, sizeof esc);
    if (lvl == 2) {
        snprintf(buf, n, "#%zu", r);
        return;
    }
    if (lvl == 1) {
        abbrev_(pol, ab, sizeof ab);
        pol = ab;
    }
    if (windows_differ_(p)) snprintf(buf, n, "%s@%zu", pol, p->window[r]);
    else snprintf(buf, n, "%s", pol);
}

static void draw_terminal_(rs_cli_progress *p, const rs_kleval_event *e)
{
    char id[64], eta[32], head[256], line[4096];
    rs_cli_esc(e->book_id, id, 20); /* a long id is cut ("...") */
    fmt_time_(eta_of_(p, e), eta, sizeof eta);
    const double rate = (double)(e->done - e->done_at_start) / (e->elapsed_s + 1e-9);
    snprintf(head, sizeof head, "[book %zu/%zu %s] pos %zu/%zu %.0f tok/s ETA %s |", e->book + 1, e->n_books, id,
             e->position, e->positions, rate, eta);
    const size_t width = (size_t)terminal_width_() - 1; /* never the last column: no wrap */
    size_t len = (size_t)snprintf(line, sizeof line, "%s", head);
    if (e->n_runs == 0) {
        snprintf(line + len, sizeof line - len, " reference %.4f bits/token", e->ref_mean_nll / RS_CLI_LN2);
    } else {
        int lvl = 0;
        for (; lvl < 2; lvl++) { /* the least abbreviation at which every run fits */
            size_t need = len;
            for (size_t r = 0; r < e->n_runs; r++) {
                char lab[160];
                label_(p, r, lvl, lab, sizeof lab);
                need += 1 + strlen(lab) + 1 + 8; /* " LABEL 1.23e-03" */
            }
            if (need <= width) break;
        }
        if (lvl == 2 && !p->legend) { /* the run numbers' legend, once, above the line */
            size_t col = (size_t)fprintf(stderr, "%sruns:", p->drawn ? "\r\033[K" : "");
            for (size_t r = 0; r < e->n_runs; r++) {
                char lab[160];
                label_(p, r, 0, lab, sizeof lab);
                const size_t w = strlen(lab) + 6 + (r >= 10) + (r >= 100);
                if (col + w > width) col = (size_t)fprintf(stderr, "\n     ");
                col += (size_t)fprintf(stderr, " #%zu %s", r, lab);
            }
            fprintf(stderr, "\n");
            p->legend = 1;
        }
        for (size_t r = 0; r < e->n_runs; r++) {
            char lab[160], piece[200], more[32];
            label_(p, r, lvl, lab, sizeof lab);
            const int k = snprintf(piece, sizeof piece, " %s %.2e", lab, e->running[r].mean);
            snprintf(more, sizeof more, " +%zu more", e->n_runs - r);
            const size_t tail = r + 1 < e->n_runs ? strlen(more) + 1 : 0; /* room for " +N more" after it */
            if (len + (size_t)k + tail > width) {
                if (len + strlen(more) <= width) len += (size_t)snprintf(line + len, sizeof line - len, "%s", more);
                break;
            }
            len += (size_t)snprintf(line + len, sizeof line - len, "%s", piece);
        }
    }
    if (strlen(line) > width) line[width] = '\0'; /* a terminal narrower than the head */
    fprintf(stderr, "\r%s\033[K", line);
    p->drawn = 1;
}

static void print_plain_(rs_cli_progress *p, const rs_kleval_event *e, const double *means)
{
    char id[4 * 256 + 1], eta[32], el[32];
    fmt_time_(eta_of_(p, e), eta, sizeof eta);
    fmt_time_(e->elapsed_s, el, sizeof el);
    const double rate = (double)(e->done - e->done_at_start) / (e->elapsed_s + 1e-9);
    fprintf(stderr, "replayssm %s: progress: book %zu/%zu (%s) position %zu/%zu, %zu/%zu positions (%.1f%%), "
            "%.0f tok/s, elapsed %s, ETA %s", p->cmd, e->book + 1, e->n_books, rs_cli_esc(e->book_id, id, sizeof id),
            e->position, e->positions, e->done, e->total, e->total ? 100.0 * (double)e->done / (double)e->total : 0.0,
            rate, el, eta);
    if (e->n_runs == 0) {
        fprintf(stderr, "; reference %.4f bits/token\n", e->ref_mean_nll / RS_CLI_LN2);
        return;
    }
    fprintf(stderr, "; mean KL:");
    for (size_t r = 0; r < e->n_runs; r++) {
        char lab[160];
        label_(p, r, 0, lab, sizeof lab);
        fprintf(stderr, "%s %zu %s %.3e", r ? "," : "", r, lab, means[r]);
    }
    fprintf(stderr, "\n");
}

void rs_cli_progress_event(rs_cli_progress *p, const rs_kleval_event *e)
{
    if (e->kind != RS_KLEVAL_EVENT_PROGRESS) return;
    add_sample_(p, e);
    if (p->mode == 0) return;
    const size_t nr = e->n_runs < RS_CLI_PROGRESS_MAX_RUNS ? e->n_runs : RS_CLI_PROGRESS_MAX_RUNS;
    p->last = *e;
    snprintf(p->last_id, sizeof p->last_id, "%s", e->book_id ? e->book_id : "");
    p->last.book_id = p->last_id; /* the event's pointers die with the callback */
    p->last.running = NULL;
    p->last.n_runs = nr;
    for (size_t r = 0; r < nr; r++) p->means[r] = e->running[r].mean;
    const int final = e->done >= e->total;
    if (p->mode == 1) {
        if (e->elapsed_s - p->last_print <= 0.5 && !final) return;
        p->last_print = e->elapsed_s;
        draw_terminal_(p, e);
        return;
    }
    p->last_printed = 0;
    if (e->elapsed_s - p->last_print < p->every && !final) return;
    p->last_print = e->elapsed_s;
    print_plain_(p, e, p->means);
    p->last_printed = 1;
}

void rs_cli_progress_end(rs_cli_progress *p)
{
    if (p->mode == 1 && p->drawn) fprintf(stderr, "\n");
    if (p->mode == 2 && !p->last_printed) { /* stopped before the end: the last state reached */
        print_plain_(p, &p->last, p->means);
        p->last_printed = 1;
    }
}
