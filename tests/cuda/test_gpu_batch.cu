/* test_gpu_batch.cu — books batched on the GPU scorer (rs_scorer.h streams): one GPU scorer with
 * S = 3 streams evaluates 4 books of different lengths (slices of the bytes of PG-19 book 244,
 * data/pg19-sample; the bundled byte-level models data/models/gdn-tiny and mamba2-tiny), the slot
 * of the first book to end taken by the 4th (reset_stream), so streams run both in lockstep (one batch of
 * 3 streams: one GEMM of M = 3 x 4 x n rows, one scan launch) and at different positions
 * (separate batches, per-stream RoPE positions and KV caches). Each book is compared with
 *   - the CPU scorer (the reference implementation; one stream, book by book), and
 *   - the GPU scorer with one stream, book by book (the unbatched GPU path),
 * with the GPU-vs-CPU criteria of tests/cuda/compare_gpu_cpu.py:
 *   reference NLL per position, e = max |d| / (1e-5 max(|nll|, 1e-2)) (1e-5 relative;
 *     the floor keeps near-certain tokens' tiny NLLs from turning fp32 rounding into a large
 *     ratio). The unbatched GPU path itself does not meet e <= 1 against the CPU (docs/evaluator.md:
 *     two correct fp32 evaluations that round differently drift apart), so its e against the CPU is
 *     the yardstick: the
 *     batched GPU's e against the CPU and against the unbatched GPU must stay within 2x of it. A
 *     batching fault (another stream's tokens, positions, caches or states) moves NLLs by O(1)
 *     nats, e ~ 1e5;
 *   --policy fp32 run: KL exactly 0 and its NLL equal to the reference's bit for bit (the same
 *     rows of the same GEMMs in every batch);
 *   RTN policy run: the mean KL over every position of the 4 books within 3%;
 *   SR policy run: the mean KL within the 99% prediction interval of 5 CPU seeds ("within the
 *     spread of 5 seeds": |gpu - mean| <= t(4, 0.995) sd sqrt(1 + 1/5), t = 4.604). (The SR draws
 *     are the same counter-based streams on both sides, yet batched GPU and CPU seed 3 measured
 *     3.4% apart on gdn-tiny on the H200: rounding flips compound, so a fixed 3% is not a fair
 *     bound for SR.)
 * Then a memory plan that cannot fit (1024 streams x 4 runs x 65536-position chunks) must be
 * refused before any allocation, naming the largest consumer and --batch.
 * Exit 0 pass, 1 fail, 77 without a CUDA device. Usage: test_gpu_batch [REPO_ROOT] */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "kleval/rs_scorer_impl.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/eval/rs_scorer_cuda.h"

#define NB 4
#define NR 3
#define CH 64
static const size_t k_len[NB] = {700, 450, 900, 333}; /* positions per book */
static const size_t k_off[NB] = {0, 1000, 2000, 3500};

/* one book's scores: [len] reference, [NR][len] runs */
typedef struct book_scores {
    double nll_ref[1024];
    int32_t top[1024];
    double kl[NR][1024], nll[NR][1024], dp[NR][1024];
    uint8_t agree[NR][1024];
} book_scores;

static void out_at_(book_scores *b, size_t pos, rs_scorer_out *o, double **kl, double **nll, double **dp,
                    uint8_t **ag)
{
    for (int r = 0; r < NR; r++) {
        kl[r] = b->kl[r] + pos;
        nll[r] = b->nll[r] + pos;
        dp[r] = b->dp[r] + pos;
        ag[r] = b->agree[r] + pos;
    }
    o->nll_ref = b->nll_ref + pos;
    o->top1_ref = b->top + pos;
    o->kl = kl;
    o->nll = nll;
    o->dp = dp;
    o->agree = ag;
}

/* book by book on a one-stream scorer */
static int sequential_(rs_scorer *sc, int32_t *const toks[NB], book_scores *res)
{
    for (int b = 0; b < NB; b++) {
        if (sc->ops->reset(sc) != RS_OK) return 1;
        for (size_t p = 0; p < k_len[b]; p += CH) {
            const size_t n = k_len[b] - p < CH ? k_len[b] - p : CH;
            rs_scorer_out o;
            double *kl[NR], *nll[NR], *dp[NR];
            uint8_t *ag[NR];
            out_at_(&res[b], p, &o, kl, nll, dp, ag);
            if (sc->ops->step(sc, toks[b] + p, toks[b] + p + 1, n, &o) != RS_OK) {
                fprintf(stderr, "%s: book %d position %zu: %s\n", sc->ops->name, b, p, rs_last_error());
                return 1;
            }
        }
    }
    return 0;
}

/* books 0, 1, 2 in streams 0, 1, 2; the first to end (book 1) gives its stream to book 3 */
static int batched_(rs_scorer *sc, int32_t *const toks[NB], book_scores *res, size_t *steps, size_t *max_batch)
{
    enum { S = 3 };
    int book[S] = {0, 1, 2}, next = 3;
    size_t pos[S] = {0, 0, 0};
    if (sc->ops->reset(sc) != RS_OK) return 1;
    *steps = 0;
    *max_batch = 0;
    for (;;) {
        rs_scorer_stream in[S];
        rs_scorer_out out[S];
        double *kl[S][NR], *nll[S][NR], *dp[S][NR];
        uint8_t *ag[S][NR];
        int any = 0;
        for (int s = 0; s < S; s++) {
            memset(&in[s], 0, sizeof in[s]);
            memset(&out[s], 0, sizeof out[s]);
            if (book[s] < 0) continue;
            const int b = book[s];
            const size_t n = k_len[b] - pos[s] < CH ? k_len[b] - pos[s] : CH;
            in[s].tokens = toks[b] + pos[s];
            in[s].targets = toks[b] + pos[s] + 1;
            in[s].n = n;
            out_at_(&res[b], pos[s], &out[s], kl[s], nll[s], dp[s], ag[s]);
            any = 1;
        }
        if (!any) break;
        size_t lock = 0; /* streams sharing stream 0's (position, n): the lockstep batch */
        for (int s = 0; s < S && in[s].n && in[s].n == in[0].n && pos[s] == pos[0]; s++) lock++;
        if (lock > *max_batch) *max_batch = lock;
        if (sc->ops->step_streams(sc, in, out) != RS_OK) {
            fprintf(stderr, "batched: step %zu: %s\n", *steps, rs_last_error());
            return 1;
        }
        (*steps)++;
        for (int s = 0; s < S; s++) {
            if (book[s] < 0) continue;
            pos[s] += in[s].n;
            if (pos[s] >= k_len[book[s]]) { /* the book ended: the next one takes the stream */
                book[s] = next < NB ? next++ : -1;
                pos[s] = 0;
                if (book[s] >= 0 && sc->ops->reset_stream(sc, (size_t)s) != RS_OK) return 1;
            }
        }
    }
    return 0;
}

/* worst |d| / (1e-5 max(|nll|, 1e-2)) of the reference NLL over every position of the 4 books */
static double nll_err_(const book_scores *a, const book_scores *b)
{
    double w = 0.0;
    for (int k = 0; k < NB; k++)
        for (size_t t = 0; t < k_len[k]; t++) {
            const double d = fabs(a[k].nll_ref[t] - b[k].nll_ref[t]) / (1e-5 * fmax(fabs(b[k].nll_ref[t]), 1e-2));
            w = fmax(w, isnan(d) ? INFINITY : d);
        }
    return w;
}

static double mean_kl_(const book_scores *a, int r)
{
    double s = 0;
    size_t n = 0;
    for (int k = 0; k < NB; k++)
        for (size_t t = 0; t < k_len[k]; t++) s += a[k].kl[r][t], n++;
    return s / (double)n;
}

/* the reference NLL against the yardstick and the RTN run (r = 1) within 3% */
static void compare_(const char *what, const book_scores *a, const book_scores *b, double yard, const char *const *pol)
{
    const double e = nll_err_(a, b);
    ct_report(what, e <= 2.0 * yard, "reference NLL worst |d| / (1e-5 max(|nll|, 1e-2)) = %.3f (<= 2 x %.3f, the "
              "unbatched GPU's against the CPU)", e, yard);
    const double ma = mean_kl_(a, 1), mb = mean_kl_(b, 1), rel = fabs(ma - mb) / mb;
    ct_report(what, rel <= 0.03, "%s mean KL %.6e vs %.6e, relative difference %.4f (<= 0.03)", pol[1], ma, mb, rel);
}

/* the SR run (r = 2) of a GPU evaluation within the 99% prediction interval of the CPU seeds */
static void sr_spread_(const char *what, const book_scores *a, const book_scores *const *cpu, int n, const char *pol)
{
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += mean_kl_(cpu[i], 2) / n;
    for (int i = 0; i < n; i++) v += (mean_kl_(cpu[i], 2) - m) * (mean_kl_(cpu[i], 2) - m) / (n - 1);
    const double g = mean_kl_(a, 2), half = 4.604 * sqrt(v) * sqrt(1.0 + 1.0 / n); /* t(4, 0.995): n = 5 */
    ct_report(what, fabs(g - m) <= half, "%s mean KL %.6e, CPU seeds mean %.6e sd %.2e: |d| %.2e (<= %.2e, 99%% "
              "prediction interval of %d seeds)", pol, g, m, sqrt(v), fabs(g - m), half, n);
}

static int fp32_exact_(const book_scores *a)
{
    for (int k = 0; k < NB; k++)
        for (size_t t = 0; t < k_len[k]; t++)
            if (a[k].kl[0][t] != 0.0 || a[k].nll[0][t] != a[k].nll_ref[t] || !a[k].agree[0][t]) return 0;
    return 1;
}

static int model_(const char *root, const char *name, int32_t *const toks[NB])
{
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/data/models/%s", root, name);
    rs_model m;
    if (rs_model_load(dir, &m) != RS_OK) {
        fprintf(stderr, "test_gpu_batch: %s\n", rs_last_error());
        return 1;
    }
    static const char *const pol_s[NR] = {"fp32", "split:nvfp4-rtn/fp32", "shared:nvfp4-sr"};
    rs_run_spec runs[NR]; /* window 16, seed 3 */
    for (int r = 0; r < NR; r++)
        if (rs_run_spec_parse(pol_s[r], "16", 3, &runs[r]) != RS_OK) return 1;
    rs_scorer_config c;
    memset(&c, 0, sizeof c);
    c.n_runs = NR;
    c.runs = runs;
    c.chunk = CH;
    c.max_tokens = 1024;
    c.dt_mode = RS_DT_KERNEL;
    c.threads = 2;
    c.compute = RS_COMPUTE_FP32;
    enum { NSEED = 5 };
    book_scores *cpu[NSEED], *g1 = (book_scores *)calloc(NB, sizeof *g1), *gb = (book_scores *)calloc(NB, sizeof *gb);
    rs_scorer *sc_cpu = NULL, *sc_g1 = NULL, *sc_gb = NULL;
    int rc = !g1 || !gb;
    for (int i = 0; i < NSEED; i++) { /* CPU seeds 3 .. 7 (the GPU runs use seed 3) */
        cpu[i] = (book_scores *)calloc(NB, sizeof *cpu[i]);
        for (int r = 0; r < NR; r++) runs[r].seed = 3 + (uint64_t)i;
        rs_scorer *s1 = NULL;
        if (!rc) rc = !cpu[i] || rs_scorer_cpu_create(&m, &c, &s1) != RS_OK || sequential_(s1, toks, cpu[i]);
        rs_scorer_free(s1);
    }
    for (int r = 0; r < NR; r++) runs[r].seed = 3;
    if (!rc) rc = rs_scorer_cuda_create(&m, &c, &sc_g1) != RS_OK || sequential_(sc_g1, toks, g1);
    c.n_streams = 3;
    size_t steps = 0, maxb = 0;
    if (!rc) rc = rs_scorer_cuda_create(&m, &c, &sc_gb) != RS_OK || batched_(sc_gb, toks, gb, &steps, &maxb);
    if (rc) {
        ct_report(name, false, "the scorers: %s", rs_last_error());
    } else {
        printf("%s: %s\n", name, sc_gb->ops->describe(sc_gb));
        ct_report(name, maxb == 3, "%zu batched steps, a lockstep batch of %zu streams", steps, maxb);
        const double yard = nll_err_(g1, cpu[0]);
        printf("%s: the unbatched GPU's reference NLL against the CPU: worst |d| / (1e-5 max(|nll|, 1e-2)) = %.3f "
               "(information: the bound 1 is not met by the unbatched path either)\n", name, yard);
        char what[128];
        snprintf(what, sizeof what, "%s GPU batched vs CPU", name);
        compare_(what, gb, cpu[0], yard, pol_s);
        sr_spread_(what, gb, cpu, NSEED, pol_s[2]);
        snprintf(what, sizeof what, "%s GPU batched vs GPU one book at a time", name);
        compare_(what, gb, g1, yard, pol_s);
        snprintf(what, sizeof what, "%s GPU one book at a time vs CPU", name);
        sr_spread_(what, g1, cpu, NSEED, pol_s[2]);
        ct_report(name, fp32_exact_(gb) && fp32_exact_(g1),
                  "--policy fp32 KL exactly 0, NLL = the reference's, batched and not");
    }
    rs_scorer_free(sc_cpu);
    rs_scorer_free(sc_g1);
    rs_scorer_free(sc_gb);
    /* a plan that cannot fit: refused at create, naming the largest consumer and --batch */
    c.n_streams = 1024;
    c.chunk = 65536;
    c.max_tokens = 131072;
    rs_scorer *big = NULL;
    const rs_status st = rs_scorer_cuda_create(&m, &c, &big);
    const char *msg = rs_last_error();
    ct_report(name, st == RS_E_CUDA && !big && strstr(msg, "largest consumer") && strstr(msg, "--batch"),
              "1024 streams x 4 runs x chunk 65536 refused: %s", msg);
    rs_scorer_free(big);
    for (int i = 0; i < NSEED; i++) free(cpu[i]);
    free(g1);
    free(gb);
    rs_model_free(&m);
    return rc;
}

int main(int argc, char **argv)
{
    const int skip = ct_init(argc, argv, "test_gpu_batch");
    if (skip) return skip;
    const char *root = argc > 1 && strcmp(argv[1], "--quick") ? argv[1] : ".";
    char pg19[2048];
    snprintf(pg19, sizeof pg19, "%s/data/pg19-sample", root);
    char *text = NULL;
    size_t got = 0;
    RSK(rs_pg19_read_book(pg19, "test", "244", &text, &got));
    if (got < k_off[NB - 1] + k_len[NB - 1] + 1) {
        ct_report("the books' text", false, "PG-19 book 244 has %zu bytes, fewer than %zu", got,
                  k_off[NB - 1] + k_len[NB - 1] + 1);
        free(text);
        return ct_finish("test_gpu_batch");
    }
    int32_t *toks[NB];
    for (int b = 0; b < NB; b++) { /* the byte tokenizer: token = byte */
        toks[b] = (int32_t *)malloc((k_len[b] + 1) * sizeof(int32_t));
        for (size_t t = 0; t <= k_len[b]; t++) toks[b][t] = (unsigned char)text[k_off[b] + t];
    }
    free(text);
    model_(root, "gdn-tiny", toks);
    model_(root, "mamba2-tiny", toks);
    for (int b = 0; b < NB; b++) free(toks[b]);
    return ct_finish("test_gpu_batch");
}
