/* rs_scorer_cpu.c — the CPU scorer (rs_scorer.h): per stream ONE rs_runner for the fp32 reference
 * (runner run 0) and every policy run (runner run r + 1), whatever their windows, so the reference
 * is computed once per position and every GEMM of a chunk is shared; each run's logits are
 * compared with the reference's position by position on the host (rs_kl). Several streams
 * (n_streams > 1, books batched) are one runner each, stepped one after another: every stream's
 * numbers are those of a single-stream scorer bit for bit (the CPU is the batched GPU's
 * reference, and a batched CPU evaluation's log equals the sequential one). */
#include "rs_scorer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/rs_backend.h"
#include "model/rs_runner.h"
#include "rs_check.h"

typedef struct cpu_impl {
    rs_backend *be;
    size_t S;
    rs_runner **runner; /* [S] */
    double *lp, *lq;    /* [V] log-probabilities of the reference and of a run */
    void *cfg_mem;
    char describe[96];
    rs_scorer_stats st;
} cpu_impl;

static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static rs_status cpu_reset_stream_(rs_scorer *sc, size_t s)
{
    cpu_impl *im = (cpu_impl *)sc->impl;
    RS_CHECK(s < im->S, RS_E_INVAL, "scorer: stream %zu of %zu", s, im->S);
    return rs_runner_reset(im->runner[s]);
}

static rs_status cpu_reset_(rs_scorer *sc)
{
    cpu_impl *im = (cpu_impl *)sc->impl;
    for (size_t s = 0; s < im->S; s++) RS_TRY(rs_runner_reset(im->runner[s]));
    return RS_OK;
}

/* forward n tokens of stream s and score them into out */
static rs_status stream_step_(rs_scorer *sc, size_t s, const int32_t *tokens, const int32_t *targets, size_t n,
                              const rs_scorer_out *out)
{
    cpu_impl *im = (cpu_impl *)sc->impl;
    RS_CHECK(tokens && targets && out && n >= 1 && n <= sc->cfg.chunk, RS_E_INVAL,
             "scorer step: %zu positions (1..%zu) or NULL arguments", n, sc->cfg.chunk);
    const size_t R = sc->cfg.n_runs, V = (size_t)sc->m->cfg.vocab;
    rs_runner *rn = im->runner[s];
    const double t0 = now_();
    RS_TRY(rs_runner_step(rn, tokens, n));
    const double t1 = now_();
    /* the runner's logits are [R + 1][n][V], the reference first: scored as rs_scorer_score lays out */
    RS_TRY(rs_scorer_score(rs_runner_logits(rn, 0), R, n, V, targets, im->lp, im->lq, out, NULL));
    const double t2 = now_();
    im->st.other_s += t1 - t0; /* the CPU forward is not split into stages here */
    im->st.score_s += t2 - t1;
    im->st.total_s += t2 - t0;
    im->st.steps++;
    im->st.positions += n;
    return RS_OK;
}

static rs_status cpu_step_(rs_scorer *sc, const int32_t *tokens, const int32_t *targets, size_t n,
                           const rs_scorer_out *out)
{
    return stream_step_(sc, 0, tokens, targets, n, out);
}

static rs_status cpu_step_streams_(rs_scorer *sc, rs_scorer_stream *in, const rs_scorer_out *out)
{
    cpu_impl *im = (cpu_impl *)sc->impl;
    RS_CHECK(in && out, RS_E_INVAL, "scorer step_streams: NULL arguments");
    rs_status bad = RS_OK;
    char msg[512] = "";
    for (size_t s = 0; s < im->S; s++) {
        in[s].ref_nonfinite = 0;
        if (in[s].n == 0) continue;
        const rs_status st = stream_step_(sc, s, in[s].tokens, in[s].targets, in[s].n, &out[s]);
        if (st == RS_E_NONFINITE) { /* the other streams go on; the first such stream is reported */
            in[s].ref_nonfinite = 1;
            if (bad == RS_OK) snprintf(msg, sizeof msg, "stream %zu: %s", s, rs_last_error());
            bad = st;
        } else if (st != RS_OK) {
            return st;
        }
    }
    return bad == RS_OK ? RS_OK : rs_error_set(bad, "%s", msg);
}

static rs_status cpu_stream_nonfinite_(const rs_scorer *sc, size_t s, size_t r, rs_scorer_nonfinite *nf,
                                       const char **msg)
{
    const cpu_impl *im = (const cpu_impl *)sc->impl;
    RS_CHECK(s < im->S && r < sc->cfg.n_runs && nf, RS_E_INVAL, "scorer: stream %zu of %zu, run %zu of %zu", s, im->S,
             r, sc->cfg.n_runs);
    nf->layer = nf->head = -1;
    nf->step = -1;
    const char *m = NULL;
    if (rs_runner_run_status(im->runner[s], r + 1, &m) != RS_OK)
        rs_runner_run_nonfinite(im->runner[s], r + 1, &nf->layer, &nf->head, &nf->step);
    if (msg) *msg = m ? m : "";
    return RS_OK;
}

static rs_status cpu_run_nonfinite_(const rs_scorer *sc, size_t r, rs_scorer_nonfinite *nf, const char **msg)
{
    return cpu_stream_nonfinite_(sc, 0, r, nf, msg);
}

static const char *cpu_describe_(const rs_scorer *sc) { return ((const cpu_impl *)sc->impl)->describe; }

static void cpu_stats_(const rs_scorer *sc, rs_scorer_stats *out) { *out = ((const cpu_impl *)sc->impl)->st; }

static rs_status cpu_logits_(const rs_scorer *sc, long r, float *out)
{
    const cpu_impl *im = (const cpu_impl *)sc->impl;
    RS_CHECK(out && r >= -1 && r < (long)sc->cfg.n_runs, RS_E_INVAL, "scorer logits: run %ld of %zu", r,
             sc->cfg.n_runs);
    RS_CHECK(im->runner[0]->last_n > 0, RS_E_STATE, "scorer logits: no step taken yet");
    memcpy(out, rs_runner_logits(im->runner[0], (size_t)(r + 1)),
           im->runner[0]->last_n * (size_t)sc->m->cfg.vocab * sizeof(float));
    return RS_OK;
}

static rs_status cpu_routes_(const rs_scorer *sc, long r, int layer, int32_t *out)
{
    const cpu_impl *im = (const cpu_impl *)sc->impl;
    RS_CHECK(out && r >= -1 && r < (long)sc->cfg.n_runs && layer >= 0 && layer < sc->m->cfg.n_layers, RS_E_INVAL,
             "scorer routes: run %ld of %zu, layer %d of %d", r, sc->cfg.n_runs, layer, sc->m->cfg.n_layers);
    RS_CHECK(im->runner[0]->last_n > 0, RS_E_STATE, "scorer routes: no step taken yet");
    const int32_t *src = rs_runner_routes(im->runner[0], (size_t)layer, (size_t)(r + 1));
    RS_CHECK(src, RS_E_INVAL, "scorer routes: layer %d has no experts", layer);
    memcpy(out, src, im->runner[0]->last_n * (size_t)sc->m->cfg.moe.top_k * sizeof(int32_t));
    return RS_OK;
}

static rs_status cpu_route_diff_(const rs_scorer *sc, size_t s, size_t r, int layer, int64_t *positions,
                                 int64_t *experts)
{
    const cpu_impl *im = (const cpu_impl *)sc->impl;
    RS_CHECK(s < im->S && r < sc->cfg.n_runs, RS_E_INVAL, "scorer: stream %zu of %zu, run %zu of %zu", s, im->S, r,
             sc->cfg.n_runs);
    return rs_runner_moe_route_diff(im->runner[s], r + 1, layer, positions, experts);
}

static void cpu_destroy_(rs_scorer *sc)
{
    cpu_impl *im = (cpu_impl *)sc->impl;
    if (im) {
        for (size_t s = 0; im->runner && s < im->S; s++) rs_runner_free(im->runner[s]);
        free(im->runner);
        rs_backend_destroy(im->be);
        free(im->lp);
        free(im->lq);
        free(im->cfg_mem);
        free(im);
    }
    free(sc);
}

static const rs_scorer_ops cpu_ops_ = {"cpu",          cpu_reset_,        cpu_step_,         cpu_run_nonfinite_,
                                       cpu_describe_,  cpu_stats_,        cpu_logits_,       cpu_destroy_,
                                       cpu_reset_stream_, cpu_step_streams_, cpu_stream_nonfinite_, cpu_routes_,
                                       cpu_route_diff_};

/* runner run 0 = the fp32 reference (rs_run_spec_reference), run r + 1 = policy run r */
static rs_status build_runner_(rs_scorer *sc, cpu_impl *im, rs_runner **out)
{
    const size_t R = sc->cfg.n_runs;
    rs_run_spec *runs = (rs_run_spec *)malloc((R + 1) * sizeof *runs);
    if (!runs) return rs_error_set(RS_E_NOMEM, "out of memory");
    runs[0] = rs_run_spec_reference();
    if (R) memcpy(runs + 1, sc->cfg.runs, R * sizeof *runs);
    rs_runner_config rc = rs_runner_config_default();
    rc.capture_routes = sc->m->cfg.is_moe; /* the routes op */
    rc.n_runs = R + 1;
    rc.runs = runs;
    rc.chunk = sc->cfg.chunk;
    rc.max_tokens = sc->cfg.max_tokens;
    rc.dt_mode = sc->cfg.dt_mode;
    const rs_status st = rs_runner_create(sc->m, im->be, &rc, out);
    free(runs);
    return st;
}

rs_status rs_scorer_cpu_create(const rs_model *m, const rs_scorer_config *cfg, rs_scorer **out)
{
    RS_CHECK(m && cfg && out, RS_E_INVAL, "rs_scorer_cpu_create: NULL argument");
    *out = NULL;
    RS_CHECK(cfg->compute != RS_COMPUTE_TWIN, RS_E_UNSUPPORTED,
             "compute mode twin is the GPU evaluator doing this CPU evaluator's arithmetic: use it with "
             "--device cuda (the CPU computes so by default)");
    RS_CHECK(cfg->compute == RS_COMPUTE_FP32, RS_E_UNSUPPORTED,
             "the CPU scorer computes in fp32 only (compute mode %s is for --device cuda)",
             rs_compute_mode_name(cfg->compute));
    rs_scorer *sc = (rs_scorer *)calloc(1, sizeof *sc);
    cpu_impl *im = (cpu_impl *)calloc(1, sizeof *im);
    if (!sc || !im) {
        free(sc);
        free(im);
        return rs_error_set(RS_E_NOMEM, "out of memory");
    }
    sc->ops = &cpu_ops_;
    sc->m = m;
    sc->impl = im;
    rs_status st = rs_scorer_config_copy(sc, cfg, &im->cfg_mem);
    if (st == RS_OK) {
        im->S = rs_scorer_n_streams(sc);
        im->runner = (rs_runner **)calloc(im->S, sizeof *im->runner);
        if (!im->runner) st = rs_error_set(RS_E_NOMEM, "out of memory");
    }
    if (st == RS_OK) {
        st = rs_backend_cpu_create(cfg->threads, &im->be);
        if (st != RS_OK) st = rs_error_set(st, "cannot start the CPU backend: %s", rs_last_error());
    }
    for (size_t s = 0; st == RS_OK && s < im->S; s++) st = build_runner_(sc, im, &im->runner[s]);
    if (st == RS_OK) {
        const size_t V = (size_t)m->cfg.vocab;
        im->lp = (double *)malloc(V * sizeof(double));
        im->lq = (double *)malloc(V * sizeof(double));
        if (!im->lp || !im->lq) st = rs_error_set(RS_E_NOMEM, "out of memory");
    }
    if (st != RS_OK) {
        cpu_destroy_(sc);
        return st;
    }
    const char *gemm = getenv("RS_CPU_GEMM"), *attn = getenv("RS_CPU_ATTN"); /* the backend refused others */
    char streams[48] = "";
    if (im->S > 1) snprintf(streams, sizeof streams, ", %zu streams", im->S);
    snprintf(im->describe, sizeof im->describe, "cpu: %d threads%s%s%s", im->be->n_threads, streams,
             gemm && *gemm && strcmp(gemm, "f64") ? (!strcmp(gemm, "loop") ? ", GEMM RS_CPU_GEMM=loop (fp32)" : ", GEMM RS_CPU_GEMM=sgemm (fp32)")
                                               : ", GEMM f64",
             attn && !strcmp(attn, "fp32") ? ", attention RS_CPU_ATTN=fp32" : ", attention f64");
    *out = sc;
    return RS_OK;
}
