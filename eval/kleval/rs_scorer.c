/* rs_scorer.c — what every scorer shares (rs_scorer.h): compute-mode names, the config copy, the
 * host scoring of a chunk (rs_scorer_score), rs_scorer_free. The CPU scorer is rs_scorer_cpu.c; the
 * GPU one lives in eval/gpu/. */
#include "rs_scorer_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/eval/rs_kl.h"
#include "rs_check.h"

static const char *const mode_names_[] = {"fp32", "tf32", "bf16", "tf32x3", "twin"}; /* rs_compute_mode order */

const char *rs_compute_mode_name(rs_compute_mode m)
{
    return (unsigned)m < sizeof mode_names_ / sizeof mode_names_[0] ? mode_names_[m] : "?";
}

rs_status rs_compute_mode_parse(const char *s, rs_compute_mode *out)
{
    RS_CHECK(s && out, RS_E_INVAL, "compute mode: NULL argument");
    for (unsigned i = 0; i < sizeof mode_names_ / sizeof mode_names_[0]; i++)
        if (strcmp(s, mode_names_[i]) == 0) {
            *out = (rs_compute_mode)i;
            return RS_OK;
        }
    return rs_error_set(RS_E_INVAL, "unknown compute mode '%s' (choose fp32, tf32x3, tf32, bf16 or twin)", s);
}

rs_status rs_scorer_config_copy(rs_scorer *sc, const rs_scorer_config *cfg, void **mem)
{
    RS_CHECK(sc && cfg && mem, RS_E_INVAL, "rs_scorer_config_copy: NULL argument");
    const size_t R = cfg->n_runs;
    RS_CHECK(R == 0 || cfg->runs, RS_E_INVAL, "scorer: %zu runs but NULL run specs", R);
    RS_CHECK(cfg->chunk >= 1 && cfg->max_tokens >= 1, RS_E_INVAL, "scorer: chunk %zu, max_tokens %zu must be >= 1",
             cfg->chunk, cfg->max_tokens);
    RS_CHECK(cfg->n_streams <= RS_SCORER_MAX_STREAMS, RS_E_INVAL, "scorer: %zu streams (at most %d)", cfg->n_streams,
             RS_SCORER_MAX_STREAMS);
    rs_run_spec *runs = (rs_run_spec *)malloc(R * sizeof *runs + 1); /* + 1: R may be 0 */
    if (!runs) return rs_error_set(RS_E_NOMEM, "scorer: out of memory");
    if (R) memcpy(runs, cfg->runs, R * sizeof *runs);
    sc->cfg = *cfg;
    if (sc->cfg.n_streams == 0) sc->cfg.n_streams = 1;
    sc->cfg.runs = runs;
    *mem = runs;
    return RS_OK;
}

rs_status rs_scorer_score(const float *logits, size_t R, size_t n, size_t V, const int32_t *targets, double *lp,
                          double *lq, const rs_scorer_out *out, uint8_t *ref_bad)
{
    for (size_t t = 0; t < n; t++) {
        const int32_t y = targets[t];
        if (rs_kl_log_softmax(logits + t * V, V, lp) != RS_OK) {
            if (!ref_bad)
                return rs_error_set(RS_E_NONFINITE, "chunk offset %zu: the fp32 reference logits are not finite", t);
            ref_bad[t] = 1; /* the caller reports it */
            out->nll_ref[t] = NAN;
            out->top1_ref[t] = -1;
            for (size_t r = 0; r < R; r++) {
                out->kl[r][t] = out->nll[r][t] = out->dp[r][t] = NAN;
                out->agree[r][t] = 0;
            }
            continue;
        }
        if (ref_bad) ref_bad[t] = 0;
        rs_kl_point pt;
        if (R == 0) { /* the reference alone: its NLL and top-1, by the same definitions */
            RS_TRY(rs_kl_compare_lp(lp, lp, V, y, &pt));
            out->nll_ref[t] = pt.nll_ref;
            out->top1_ref[t] = pt.top1_ref;
        }
        for (size_t r = 0; r < R; r++) {
            const rs_status s2 = rs_kl_log_softmax(logits + ((r + 1) * n + t) * V, V, lq);
            if (s2 != RS_OK && s2 != RS_E_NONFINITE) return s2; /* non-finite: NaN entries below */
            RS_TRY(rs_kl_compare_lp(lp, lq, V, y, &pt));
            if (r == 0) {
                out->nll_ref[t] = pt.nll_ref;
                out->top1_ref[t] = pt.top1_ref;
            }
            out->kl[r][t] = pt.kl;
            out->nll[r][t] = pt.nll_run;
            out->dp[r][t] = pt.dp;
            out->agree[r][t] = (uint8_t)pt.agree;
        }
    }
    rs_error_clear(); /* a run's non-finite log_softmax left its message; it is not an error */
    return RS_OK;
}

size_t rs_scorer_n_streams(const rs_scorer *sc)
{
    return sc && sc->cfg.n_streams > 1 ? sc->cfg.n_streams : 1;
}

void rs_scorer_free(rs_scorer *sc)
{
    if (sc && sc->ops && sc->ops->destroy) sc->ops->destroy(sc);
}
