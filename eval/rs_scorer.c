/* rs_scorer.c — what every scorer shares (rs_scorer.h): compute-mode names, the config copy,
 * rs_scorer_free. The CPU scorer is rs_scorer_cpu.c; the GPU one lives in eval/cuda/. */
#include "replayssm/eval/rs_scorer.h"

#include <stdlib.h>
#include <string.h>

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
    RS_CHECK(R == 0 || (cfg->policies && cfg->windows && cfg->seeds), RS_E_INVAL,
             "scorer: %zu runs but NULL policies, windows or seeds", R);
    RS_CHECK(cfg->chunk >= 1 && cfg->max_tokens >= 1, RS_E_INVAL, "scorer: chunk %zu, max_tokens %zu must be >= 1",
             cfg->chunk, cfg->max_tokens);
    RS_CHECK(cfg->n_streams <= RS_SCORER_MAX_STREAMS, RS_E_INVAL, "scorer: %zu streams (at most %d)", cfg->n_streams,
             RS_SCORER_MAX_STREAMS);
    const size_t bytes = R * (sizeof(rs_policy) + sizeof(size_t) + sizeof(uint64_t)) + 1;
    unsigned char *p = (unsigned char *)malloc(bytes);
    if (!p) return rs_error_set(RS_E_NOMEM, "scorer: out of memory");
    /* 8-byte members first: malloc's alignment holds for each array */
    uint64_t *seeds = (uint64_t *)p;
    size_t *wins = (size_t *)(p + R * sizeof(uint64_t));
    rs_policy *pol = (rs_policy *)(p + R * (sizeof(uint64_t) + sizeof(size_t)));
    if (R) {
        memcpy(pol, cfg->policies, R * sizeof *pol);
        memcpy(seeds, cfg->seeds, R * sizeof *seeds);
        memcpy(wins, cfg->windows, R * sizeof *wins);
    }
    sc->cfg = *cfg;
    if (sc->cfg.n_streams == 0) sc->cfg.n_streams = 1;
    sc->cfg.policies = pol;
    sc->cfg.seeds = seeds;
    sc->cfg.windows = wins;
    *mem = p;
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
