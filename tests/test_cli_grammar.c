/* test_cli_grammar.c — one CLI grammar across the `replayssm` commands and the progress report
 * of `kl`:
 *  - the same bad option value (--seed -3, --threads abc, an unknown option, a missing value, a
 *    value given to a flag) gives the same message, byte for byte but for the command name, and
 *    exit status 2 in every command that has (or lacks) the option;
 *  - every command's --help has the layout of the one renderer (eval/cli/cli_opts.c): "usage:
 *    replayssm CMD", an "options:" section whose every option starts at column 2 with its text
 *    at column 24 (or on the next line there), continuation lines at column 24, the "-h, --help"
 *    line last, nothing wider than 100 columns, the default seed "[0]" wherever --seed is;
 *  - theory/bench: --shape, --model NAME-not-a-folder refused with a pointer to --shape, a
 *    folder refused, the old --model SHAPE spelling kept;
 *  - quant-error: --format nvfp4 is nvfp4-rtn, --out writes the printed table as CSV;
 *  - one format grammar (rs_format.h) in kl, sweep and quant-error: a bare base is RTN in each
 *    (kl --policy shared:nvfp4 == sweep --formats nvfp4 --rounding rtn, bit for bit, both named
 *    shared:nvfp4-rtn; quant-error nvfp4 == nvfp4-rtn), and a bad format or window gives the
 *    library's one message in each;
 *  - kl: stderr to a file with --progress-every 0.5: progress lines appear while the process
 *    runs, with increasing positions and a last line at 100%; --quiet prints none;
 *  - sweep without --out writes its documented default name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "rs_test_util.h"

static char g_dir[256];
static const char *g_cli = RS_CLI_PATH;
#define GDN RS_FIXTURE_DIR "/models/gdn-tiny-random"
#define DATA RS_FIXTURE_DIR "/pg19-mini"

static const char *const k_cmds[] = {"kl", "sweep", "info", "tokenize", "quant-error", "bench", "theory"};
#define N_CMDS (sizeof k_cmds / sizeof k_cmds[0])

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_cli_grammar_%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* the output of the last rs_test_sh (stdout + stderr), malloc'd */
static char *out_text_(void)
{
    char p[600];
    snprintf(p, sizeof p, "%s/out.txt", g_dir);
    size_t n = 0;
    char *t = (char *)rs_test_read_file(p, &n);
    assert_non_null(t);
    char *s = (char *)realloc(t, n + 1);
    assert_non_null(s);
    s[n] = '\0';
    return s;
}

/* `cli cmd args` exits 2 and prints exactly "replayssm <cmd>: <msg>\n" (msg with %s = cmd) */
static void same_error_(const char *cmd, const char *args, const char *msg_fmt)
{
    char want[512], msg[400];
    snprintf(msg, sizeof msg, msg_fmt, cmd);
    snprintf(want, sizeof want, "replayssm %s: %s\n", cmd, msg);
    const int rc = rs_test_sh(g_dir, "'%s' %s %s", g_cli, cmd, args);
    char *out = out_text_();
    if (rc != 2 || strcmp(out, want)) fail_msg("%s %s: exit %d, output\n%s\nwanted exit 2 and\n%s", cmd, args, rc, out, want);
    free(out);
}

static void test_same_errors(void **state)
{
    (void)state;
    /* commands with --seed: one message */
    static const char *const seeded[] = {"kl", "sweep", "quant-error", "theory"};
    for (size_t i = 0; i < 4; i++) {
        same_error_(seeded[i], "--seed -3", "--seed needs a non-negative integer, not '-3'");
        same_error_(seeded[i], "--seed=1x", "--seed needs a non-negative integer, not '1x'");
        same_error_(seeded[i], "--seed", "--seed needs a value");
    }
    static const char *const threaded[] = {"kl", "sweep"};
    for (size_t i = 0; i < 2; i++) {
        same_error_(threaded[i], "--threads abc", "--threads needs an integer in [1, 4096], not 'abc'");
        same_error_(threaded[i], "--threads 0", "--threads needs an integer in [1, 4096], not '0'");
    }
    /* every command: an unknown option, and --threads where it has none */
    for (size_t i = 0; i < N_CMDS; i++) {
        same_error_(k_cmds[i], "--no-such-option", "unknown option '--no-such-option' (see 'replayssm %s --help')");
        if (strcmp(k_cmds[i], "kl") && strcmp(k_cmds[i], "sweep"))
            same_error_(k_cmds[i], "--threads abc", "unknown option '--threads' (see 'replayssm %s --help')");
    }
    /* --out and --force where they exist: the same checks */
    static const char *const with_out[] = {"kl", "sweep", "tokenize", "quant-error", "bench", "theory"};
    for (size_t i = 0; i < 6; i++) same_error_(with_out[i], "--out", "--out needs a value");
    static const char *const with_force[] = {"kl", "sweep", "quant-error", "bench", "theory"};
    for (size_t i = 0; i < 5; i++) same_error_(with_force[i], "--force=yes", "--force takes no value");
}

/* display columns of a line (UTF-8 code points) */
static size_t cols_(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += ((unsigned char)s[i] & 0xC0u) != 0x80u;
    return w;
}

static void test_help_layout(void **state)
{
    (void)state;
    for (size_t c = 0; c < N_CMDS; c++) {
        const char *cmd = k_cmds[c];
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --help", g_cli, cmd), 0);
        char *out = out_text_(), head[64];
        snprintf(head, sizeof head, "usage: replayssm %s ", cmd);
        if (strncmp(out, head, strlen(head))) fail_msg("%s --help does not start with \"%s\":\n%s", cmd, head, out);
        char *opts = strstr(out, "\n\noptions:\n");
        if (!opts) fail_msg("%s --help has no options section:\n%s", cmd, out);
        /* every line within 100 columns */
        for (char *l = out; *l;) {
            const size_t n = strcspn(l, "\n");
            if (cols_(l, n) > 100) fail_msg("%s --help: a line of %zu columns: %.*s", cmd, cols_(l, n), (int)n, l);
            l += n + (l[n] == '\n');
        }
        /* the options section: "  -..." option lines, text at column 24, continuations at 24 */
        size_t n_opts = 0;
        int last_was_help = 0, pending = 0; /* pending: an option whose text is on the next line */
        for (char *l = opts + strlen("\n\noptions:\n"); *l && *l != '\n';) {
            const size_t n = strcspn(l, "\n");
            if (!strncmp(l, "  -", 3)) {
                if (pending) fail_msg("%s --help: option without text before: %.*s", cmd, (int)n, l);
                n_opts++;
                last_was_help = !strncmp(l, "  -h, --help", 12);
                if (n < 24) {
                    pending = 1; /* the name reaches column 22: the text follows at 24 */
                } else {
                    /* the name, two or more blanks, the text from exactly column 24 */
                    if (l[22] != ' ' || l[23] != ' ' || l[24] == ' ')
                        fail_msg("%s --help: option text not at column 24: %.*s", cmd, (int)n, l);
                }
            } else {
                size_t k = 0;
                while (k < n && l[k] == ' ') k++;
                if (k != 24) fail_msg("%s --help: continuation not at column 24: %.*s", cmd, (int)n, l);
                pending = 0;
            }
            l += n + (l[n] == '\n');
        }
        if (!last_was_help) fail_msg("%s --help: the -h, --help line is not the last option", cmd);
        if (n_opts < 2) fail_msg("%s --help: %zu options", cmd, n_opts);
        /* the rendered help line of -h itself */
        if (!strstr(opts, "\n  -h, --help            this text\n")) fail_msg("%s --help: no shared -h line", cmd);
        /* one default seed */
        const char *seed = strstr(opts, "\n  --seed S ");
        if (seed && !strstr(seed, "[0]")) fail_msg("%s --help: --seed default is not [0]", cmd);
        free(out);
    }
}

static void test_shape_and_model(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        const char *cmd = k ? "bench" : "theory";
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --model no-such-model-name", g_cli, cmd), 2);
        assert_true(rs_test_out_has(g_dir, "--shape NAME"));
        assert_true(rs_test_out_has(g_dir, "'no-such-model-name' is none"));
        assert_int_equal(rs_test_sh(g_dir, "'%s' %s --model '%s'", g_cli, cmd, GDN), 2); /* a folder */
        assert_true(rs_test_out_has(g_dir, "pass --shape NAME"));
    }
    /* --shape and the old spelling give the same tables */
    /* (rs_test_sh redirects the whole line: the inner redirections go in a subshell) */
    assert_int_equal(rs_test_sh(g_dir, "('%s' theory --shape qwen3.5-4b --mc-steps 0 > '%s/a.txt')", g_cli, g_dir), 0);
    assert_int_equal(rs_test_sh(g_dir, "('%s' theory --model qwen3.5-4b --mc-steps 0 > '%s/b.txt') && cmp '%s/a.txt' '%s/b.txt'",
                                g_cli, g_dir, g_dir, g_dir), 0);
    assert_int_equal(rs_test_sh(g_dir, "test -s '%s/a.txt' && grep -q 'qwen3.5-4b' '%s/a.txt'", g_dir, g_dir), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' theory --model qwen3.5-4b --mc-steps 0", g_cli), 0);
    assert_true(rs_test_out_has(g_dir, "old spelling of --shape qwen3.5-4b"));
}

static void test_quant_error_out(void **state)
{
    (void)state;
    char csv[600];
    snprintf(csv, sizeof csv, "%s/q.csv", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' quant-error --format nvfp4 --dist gaussian --tensors 2 --out '%s'", g_cli, csv), 0);
    char *table = out_text_();
    const char *row = strstr(table, "| gaussian   | nvfp4-rtn    | ");
    if (!row) fail_msg("no nvfp4-rtn row for --format nvfp4:\n%s", table);
    double rel = 0, mx = 0;
    assert_int_equal(sscanf(row + strlen("| gaussian   | nvfp4-rtn    | "), "%lf | %lf", &rel, &mx), 2);
    size_t n = 0;
    char *text = (char *)rs_test_read_file(csv, &n);
    assert_non_null(text);
    text = (char *)realloc(text, n + 1);
    text[n] = '\0';
    const char *hdr = "data,format,rel_fro,max_abs,max_rel,bias,bias_rel,bytes_per_elem\n";
    assert_memory_equal(text, hdr, strlen(hdr));
    double crel = 0, cmx = 0;
    assert_int_equal(sscanf(text + strlen(hdr), "gaussian,nvfp4-rtn,%lf,%lf,", &crel, &cmx), 2);
    /* the table prints %.3e: the CSV's 9 digits agree within half a unit of the 4th */
    assert_true(fabs(crel - rel) <= 5e-4 * rel && fabs(cmx - mx) <= 5e-4 * mx);
    free(text);
    free(table);
    /* an existing file is kept without --force */
    assert_int_equal(rs_test_sh(g_dir, "'%s' quant-error --format nvfp4 --dist gaussian --tensors 1 --out '%s'", g_cli, csv), 2);
    assert_true(rs_test_out_has(g_dir, "exists"));
}

/* "N/M positions" of every progress line in text, in order; the count */
static size_t progress_positions_(const char *text, long *pos, size_t max)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, "replayssm kl: progress: ")) != NULL && n < max; p++) {
        const char *q = strstr(p, " positions (");
        const char *eol = strchr(p, '\n');
        if (!q || !eol || q > eol) continue;
        const char *s = q;
        while (s > p && s[-1] != ' ') s--;
        long done = -1, total = -1;
        if (sscanf(s, "%ld/%ld", &done, &total) == 2) pos[n++] = done;
    }
    return n;
}

static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_progress_lines(void **state)
{
    (void)state;
    char err[600], log[600], cmd[2048];
    snprintf(err, sizeof err, "%s/progress.err", g_dir);
    snprintf(log, sizeof log, "%s/progress.h5", g_dir);
    /* 2 books x 2048 positions, 2 policies, one thread: several seconds (about 6 s on an idle
     * core), so lines every 0.5 s come while it runs */
    snprintf(cmd, sizeof cmd, "exec '%s' kl --model '%s' --data '%s' --books 2 --tokens 2048 --chunk 64 --threads 1 "
             "--policy shared:nvfp4-sr,split:nvfp4-rtn/fp32 --progress-every 0.5 --out '%s' > /dev/null 2> '%s'",
             g_cli, GDN, DATA, log, err);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* read the file while the process is alive: the lines seen before it exits */
    long seen[4096];
    size_t n_live = 0;
    int status = 0;
    const double t0 = now_();
    for (;;) {
        const pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        size_t n = 0;
        char *t = (char *)rs_test_read_file(err, &n);
        if (t) {
            t = (char *)realloc(t, n + 1);
            t[n] = '\0';
            long pos[4096];
            const size_t k = progress_positions_(t, pos, 4096);
            if (waitpid(pid, &status, WNOHANG) == 0 && k > n_live) { /* still running after the read */
                memcpy(seen, pos, k * sizeof *pos);
                n_live = k;
            } else if (k > n_live) {
                free(t);
                break; /* it ended meanwhile: those lines do not count as live */
            }
            free(t);
        }
        assert_true(now_() - t0 < 240); /* a hung process fails, not blocks */
        const struct timespec tick = {0, 100 * 1000 * 1000}; /* 0.1 s */
        nanosleep(&tick, NULL);
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    print_message("progress: %zu lines seen while the process ran\n", n_live);
    if (n_live < 2) fail_msg("only %zu progress lines appeared during the run", n_live);
    for (size_t i = 1; i < n_live; i++)
        if (seen[i] <= seen[i - 1]) fail_msg("positions do not increase: %ld then %ld", seen[i - 1], seen[i]);
    size_t n = 0;
    char *t = (char *)rs_test_read_file(err, &n);
    t = (char *)realloc(t, n + 1);
    t[n] = '\0';
    long pos[4096];
    const size_t k = progress_positions_(t, pos, 4096);
    assert_true(k >= n_live && pos[k - 1] == 4096); /* the last line: every position */
    /* self-contained lines: labelled runs, rate and ETA */
    assert_non_null(strstr(t, "mean KL: 0 shared:nvfp4-sr "));
    assert_non_null(strstr(t, ", 1 split:nvfp4-rtn/fp32 "));
    assert_non_null(strstr(t, " tok/s, elapsed "));
    assert_non_null(strstr(t, ", ETA "));
    assert_null(strchr(t, '\r')); /* no terminal redraws in a file */
    free(t);
    /* --quiet: none */
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --tokens 256 --chunk 32 --threads 1 "
                                "--policy shared:nvfp4-sr --progress-every 0.01 --quiet --force --out '%s'",
                                g_cli, GDN, DATA, log), 0);
    assert_false(rs_test_out_has(g_dir, "progress:"));
    /* the default interval (30 s) on a short run: the last line alone */
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --tokens 256 --chunk 32 --threads 1 "
                                "--policy shared:nvfp4-sr --force --out '%s'", g_cli, GDN, DATA, log), 0);
    /* (rs_test_sh's own redirection comes last: the command's stderr is in out.txt, read below) */
    t = out_text_();
    assert_int_equal(progress_positions_(t, pos, 4096), 1);
    assert_int_equal(pos[0], 256);
    free(t);
}

/* the runs' names and KL rows of two logs: the same names in order, the same bits */
static void same_runs_(const char *a, const char *b, const char *const *names, size_t n)
{
    rs_h5log *x = NULL, *y = NULL;
    assert_int_equal(rs_h5log_open(a, 0, NULL, &x), RS_OK);
    assert_int_equal(rs_h5log_open(b, 0, NULL, &y), RS_OK);
    assert_int_equal(rs_h5log_n_runs(x), n);
    assert_int_equal(rs_h5log_n_runs(y), n);
    for (size_t r = 0; r < n; r++) {
        assert_string_equal(rs_h5log_policy(x, r), names[r]);
        assert_string_equal(rs_h5log_policy(y, r), names[r]);
        assert_int_equal(rs_h5log_window(x, r), rs_h5log_window(y, r));
        double kx[32], ky[32];
        assert_int_equal(rs_h5log_read_row(x, (long)r, "kl", 0, 32, kx), RS_OK);
        assert_int_equal(rs_h5log_read_row(y, (long)r, "kl", 0, 32, ky), RS_OK);
        assert_memory_equal(kx, ky, sizeof kx);
    }
    rs_h5log_close(x);
    rs_h5log_close(y);
}

/* `cli args` exits 2 and its output has the library's message `msg` */
static void refused_(const char *args, const char *msg)
{
    const int rc = rs_test_sh(g_dir, "'%s' %s", g_cli, args);
    if (rc != 2 || !rs_test_out_has(g_dir, msg)) fail_msg("%s: exit %d, wanted 2 and \"%s\"", args, rc, msg);
}

static void test_one_format_grammar(void **state)
{
    (void)state;
    char kl[600], spelled[600], sw[600], a[600], b[600], args[2048];
    const char *common = "--book-ids 1023 --tokens 32 --chunk 32 --threads 1 --quiet --seed 3";
    snprintf(kl, sizeof kl, "%s/bare-kl.h5", g_dir);
    snprintf(spelled, sizeof spelled, "%s/spelled-kl.h5", g_dir);
    snprintf(sw, sizeof sw, "%s/bare-sweep.h5", g_dir);
    /* a bare base in kl's policies, in sweep's formats and hp, and spelled out: the same runs */
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --policy shared:nvfp4,split:nvfp4/fp16 "
                                "--window 8 --out '%s'", g_cli, GDN, DATA, common, kl), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --policy shared:nvfp4-rtn "
                                "--policy split:nvfp4-rtn/fp16-rtn --window 8 --out '%s'", g_cli, GDN, DATA, common,
                                spelled), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' sweep --model '%s' --data '%s' %s --modes shared,split --formats nvfp4 "
                                "--rounding rtn --hp fp16 --windows 8 --out '%s'", g_cli, GDN, DATA, common, sw), 0);
    static const char *const names[] = {"shared:nvfp4-rtn", "split:nvfp4-rtn/fp16-rtn"};
    same_runs_(kl, spelled, names, 2);
    same_runs_(kl, sw, names, 2);
    /* quant-error: nvfp4 is nvfp4-rtn, and --rounding sr over it is nvfp4-sr, row for row */
    static const char *const pairs[][3] = {{"--format nvfp4", "--format nvfp4-rtn", "nvfp4-rtn   "},
                                           {"--format nvfp4 --rounding sr", "--format nvfp4-sr", "nvfp4-sr    "},
                                           {"--format fp8+pow2", "--format fp8-rtn+pow2", "fp8-rtn+pow2"}};
    snprintf(a, sizeof a, "%s/qa.txt", g_dir);
    snprintf(b, sizeof b, "%s/qb.txt", g_dir);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(rs_test_sh(g_dir, "('%s' quant-error %s --dist gaussian --tensors 1 > '%s') && "
                                    "('%s' quant-error %s --dist gaussian --tensors 1 > '%s') && cmp '%s' '%s' && "
                                    "grep -q '| gaussian   | %s |' '%s'",
                                    g_cli, pairs[i][0], a, g_cli, pairs[i][1], b, a, b, pairs[i][2], a), 0);
    /* a bad format: the format parser's message in all three */
    const char *bad = "unknown format 'nvfp5' (unknown base); valid formats: fp32, fp16-rtn";
    snprintf(args, sizeof args, "kl --model '%s' --data '%s' %s --policy shared:nvfp5 --out '%s/x.h5'", GDN, DATA, common,
             g_dir);
    refused_(args, bad);
    snprintf(args, sizeof args, "sweep --model '%s' --data '%s' %s --formats fp8,nvfp5 --out '%s/x.h5'", GDN, DATA,
             common, g_dir);
    refused_(args, bad);
    refused_("quant-error --format nvfp5", bad);
    refused_("quant-error --format fp32-rtn", "unknown format 'fp32-rtn' (fp32 takes no rounding or options)");
    snprintf(args, sizeof args, "kl --model '%s' --data '%s' %s --policy shared:fp32-rtn --out '%s/x.h5'", GDN, DATA,
             common, g_dir);
    refused_(args, "unknown format 'fp32-rtn' (fp32 takes no rounding or options)");
    /* a bad rounding word: the same message in sweep and quant-error */
    snprintf(args, sizeof args, "sweep --model '%s' --data '%s' %s --rounding sr0 --out '%s/x.h5'", GDN, DATA, common,
             g_dir);
    refused_(args, "unknown rounding 'sr0'");
    refused_("quant-error --format fp32 --rounding sr", "fp32 has no rounding to set to 'sr'");
    /* a bad window: the run spec parser's one message in kl and sweep */
    const char *win = "window L '0' is not an integer in [1, 4096]";
    snprintf(args, sizeof args, "kl --model '%s' --data '%s' %s --policy shared:nvfp4 --window 0 --out '%s/x.h5'", GDN,
             DATA, common, g_dir);
    refused_(args, win);
    snprintf(args, sizeof args, "sweep --model '%s' --data '%s' %s --windows 16,0 --out '%s/x.h5'", GDN, DATA, common,
             g_dir);
    refused_(args, win);
    struct stat sb;
    snprintf(a, sizeof a, "%s/x.h5", g_dir);
    assert_int_not_equal(stat(a, &sb), 0); /* nothing written by a refused command */
}

static void test_sweep_default_out(void **state)
{
    (void)state;
    assert_int_equal(rs_test_sh(g_dir, "cd '%s' && '%s' sweep --model '%s' --data '%s' --tokens 64 --chunk 32 --threads 1 "
                                "--quiet --modes shared --formats nvfp4 --rounding rtn", g_dir, g_cli, GDN, DATA), 0);
    char p[600];
    struct stat sb;
    snprintf(p, sizeof p, "%s/sweep-default.h5", g_dir);
    assert_int_equal(stat(p, &sb), 0);
    assert_true(rs_test_out_has(g_dir, "-> sweep-default.h5"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_errors),      cmocka_unit_test(test_help_layout),
        cmocka_unit_test(test_shape_and_model),  cmocka_unit_test(test_quant_error_out),
        cmocka_unit_test(test_progress_lines),   cmocka_unit_test(test_sweep_default_out),
        cmocka_unit_test(test_one_format_grammar),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
