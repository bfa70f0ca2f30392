/* rs_runner.c — lifecycle of the lockstep runs (see rs_runner.h); their chunk scratch is sized
 * in rs_runner_ws.c. */
#include "model/rs_runner.h"
#include "model/rs_model_names.h"
#include "rs_check.h"
#include "rs_runner_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

rs_runner_config rs_runner_config_default(void)
{
    rs_runner_config c;
    memset(&c, 0, sizeof c);
    c.n_runs = 1;
    c.runs = NULL; /* NULL with n_runs == 1: the fp32 reference */
    c.chunk = 64;
    c.max_tokens = 8192;
    c.dt_mode = RS_DT_KERNEL;
    c.capture_hidden = 0;
    c.capture_routes = 0;
    return c;
}

static int is_ssm_(rs_layer_kind k)
{
    return k == RS_LAYER_GDN || k == RS_LAYER_MAMBA2;
}

/* heads and conv geometry of SSM layer kind k */
static void ssm_geom_(const rs_model_config *c, rs_layer_kind k, size_t *H, size_t *d_v,
                      size_t *d_k, size_t *conv_dim, size_t *K)
{
    if (k == RS_LAYER_GDN) {
        *H = (size_t)c->gdn.n_v_heads;
        *d_v = (size_t)c->gdn.v_head_dim;
        *d_k = (size_t)c->gdn.k_head_dim;
        *conv_dim = (size_t)c->gdn.conv_dim;
        *K = (size_t)c->gdn.conv_kernel;
    } else {
        *H = (size_t)c->mamba.n_heads;
        *d_v = (size_t)c->mamba.head_dim;
        *d_k = (size_t)c->mamba.d_state;
        *conv_dim = (size_t)c->mamba.conv_dim;
        *K = (size_t)c->mamba.conv_kernel;
    }
}

static void run_free_(rs_run *run, const rs_model_config *c)
{
    for (int l = 0; l < c->n_layers; l++) {
        if (run->conv_state) free(run->conv_state[l]);
        if (run->heads && run->heads[l]) {
            size_t H, dv, dk, cd, K;
            ssm_geom_(c, c->layer_kind[l], &H, &dv, &dk, &cd, &K);
            for (size_t h = 0; h < H; h++) rs_head_free(&run->heads[l][h]);
            free(run->heads[l]);
        }
        if (run->k_cache) free(run->k_cache[l]);
        if (run->v_cache) free(run->v_cache[l]);
    }
    free(run->conv_state);
    free(run->heads);
    free(run->k_cache);
    free(run->v_cache);
    free(run->moe_pos_diff);
    free(run->moe_slot_diff);
    memset(run, 0, sizeof *run);
}

static rs_status run_init_(rs_run *run, const rs_model_config *c, const rs_runner_config *rc,
                           const rs_run_spec *spec)
{
    const size_t n_layers = (size_t)c->n_layers;
    run->policy = spec->policy;
    run->conv_state = (float **)calloc(n_layers, sizeof(float *));
    run->heads = (rs_head **)calloc(n_layers, sizeof(rs_head *));
    run->k_cache = (float **)calloc(n_layers, sizeof(float *));
    run->v_cache = (float **)calloc(n_layers, sizeof(float *));
    RS_CHECK(run->conv_state && run->heads && run->k_cache && run->v_cache, RS_E_NOMEM,
             "runner: cannot allocate the per-layer tables");
    if (c->is_moe) {
        run->moe_pos_diff = (int64_t *)calloc(n_layers, sizeof(int64_t));
        run->moe_slot_diff = (int64_t *)calloc(n_layers, sizeof(int64_t));
        RS_CHECK(run->moe_pos_diff && run->moe_slot_diff, RS_E_NOMEM, "runner: cannot allocate the routing counts");
    }
    for (int l = 0; l < c->n_layers; l++) {
        const rs_layer_kind k = c->layer_kind[l];
        if (is_ssm_(k)) {
            size_t H, dv, dk, cd, K;
            ssm_geom_(c, k, &H, &dv, &dk, &cd, &K);
            RS_CHECK(K >= 1, RS_E_INVAL, "layer %d: conv kernel 0", l);
            RS_TRY(rs_runner_falloc(&run->conv_state[l], cd * (K - 1), "a conv state"));
            run->heads[l] = (rs_head *)calloc(H, sizeof(rs_head));
            RS_CHECK(run->heads[l] != NULL, RS_E_NOMEM, "runner: cannot allocate %zu heads", H);
            for (size_t h = 0; h < H; h++) {
                rs_head_config hc;
                memset(&hc, 0, sizeof hc);
                hc.kind = k == RS_LAYER_GDN ? RS_SSM_GDN : RS_SSM_MAMBA2;
                hc.d_v = dv;
                hc.d_k = dk;
                hc.policy = spec->policy;
                hc.window = spec->window;
                hc.max_drafts = 1;
                hc.seed = spec->seed;
                hc.layer = (uint32_t)l;
                hc.head = (uint32_t)h;
                RS_TRY(rs_head_init(&run->heads[l][h], &hc));
            }
        } else if (k == RS_LAYER_ATTENTION) {
            const size_t n = (size_t)c->attn.n_kv_heads * rc->max_tokens * (size_t)c->attn.head_dim;
            RS_TRY(rs_runner_falloc(&run->k_cache[l], n, "a key cache"));
            RS_TRY(rs_runner_falloc(&run->v_cache[l], n, "a value cache"));
        }
    }
    return RS_OK;
}

void rs_runner_free(rs_runner *r)
{
    if (!r) return;
    if (r->runs)
        for (size_t i = 0; i < r->cfg.n_runs; i++) run_free_(&r->runs[i], &r->m->cfg);
    free(r->runs);
    free(r->specs);
    rs_runner_ws_free(&r->ws);
    free(r->hidden);
    free(r->routes);
    free(r);
}

/* the runner's largest buffers, counted before any is allocated, with the model's weights: the KV
 * caches (R runs x attention layers x 2 x Hkv x head_dim x max_tokens floats) and a chunk's logits
 * ([R x chunk][V]); refused with the numbers when they exceed the machine's memory */
static rs_status check_memory_(const rs_model *m, const rs_runner_config *cfg)
{
    const rs_model_config *c = &m->cfg;
    const double kv = 4.0 * (double)cfg->n_runs * c->n_attn * 2.0 * c->attn.n_kv_heads * c->attn.head_dim *
                      (double)cfg->max_tokens;
    const double lg = 4.0 * (double)cfg->n_runs * (double)cfg->chunk * c->vocab;
    const double w = 4.0 * (double)m->w.slab_floats, need = kv + lg + w;
    const uint64_t have = rs_mn_physical_memory();
    RS_CHECK(have == 0 || need <= (double)have, RS_E_NOMEM,
             "runner: %zu runs x %zu positions need %.2f GB (KV caches %.2f, logits %.2f, fp32 weights %.2f), more "
             "than this machine's %.2f GB of memory", cfg->n_runs, cfg->max_tokens, need / 1e9, kv / 1e9, lg / 1e9,
             w / 1e9, (double)have / 1e9);
    return RS_OK;
}

rs_status rs_runner_create(const rs_model *m, rs_backend *be, const rs_runner_config *cfg,
                           rs_runner **out)
{
    RS_CHECK(out != NULL, RS_E_INVAL, "rs_runner_create: NULL out");
    *out = NULL;
    RS_CHECK(m && be && cfg, RS_E_INVAL, "rs_runner_create: NULL model, backend or config");
    RS_CHECK(cfg->n_runs >= 1 && cfg->chunk >= 1 && cfg->max_tokens >= 1, RS_E_INVAL,
             "rs_runner_create: n_runs (%zu), chunk (%zu) and max_tokens (%zu) must be >= 1",
             cfg->n_runs, cfg->chunk, cfg->max_tokens);
    RS_CHECK(cfg->runs != NULL || cfg->n_runs == 1, RS_E_INVAL,
             "rs_runner_create: %zu runs need %zu run specs", cfg->n_runs, cfg->n_runs);
    RS_CHECK(m->cfg.family == RS_FAMILY_QWEN35 || m->cfg.family == RS_FAMILY_NEMOTRONH,
             RS_E_UNSUPPORTED, "rs_runner_create: model family %d is not supported yet",
             (int)m->cfg.family);
    RS_CHECK(!m->weights_on_device, RS_E_UNSUPPORTED,
             "%s: this model's weight matrices are made on the GPU (random weights on the GPU): only the GPU scorer "
             "runs it", m->cfg.model_type);

    RS_TRY(check_memory_(m, cfg));

    rs_runner *r = (rs_runner *)calloc(1, sizeof *r);
    RS_CHECK(r != NULL, RS_E_NOMEM, "rs_runner_create: out of memory");
    r->m = m;
    r->be = be;
    r->cfg = *cfg;
    r->specs = (rs_run_spec *)calloc(cfg->n_runs, sizeof(rs_run_spec));
    r->runs = (rs_run *)calloc(cfg->n_runs, sizeof(rs_run));
    rs_status st = RS_OK;
    if (!r->specs || !r->runs) {
        st = rs_error_set(RS_E_NOMEM, "rs_runner_create: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < cfg->n_runs; i++) r->specs[i] = cfg->runs ? cfg->runs[i] : rs_run_spec_reference();
    r->cfg.runs = r->specs;
    for (size_t i = 0; i < cfg->n_runs && st == RS_OK; i++) st = run_init_(&r->runs[i], &m->cfg, cfg, &r->specs[i]);
    if (st == RS_OK) st = rs_runner_ws_init(&r->ws, &m->cfg, cfg, be->n_threads);
    if (st == RS_OK && cfg->capture_routes && m->cfg.is_moe) {
        const size_t n = (size_t)m->cfg.n_layers * r->ws.rows * (size_t)m->cfg.moe.top_k;
        r->routes = (int32_t *)calloc(n, sizeof(int32_t));
        if (!r->routes) st = rs_error_set(RS_E_NOMEM, "runner: cannot allocate the route capture (%zu entries)", n);
    }
    if (st == RS_OK && cfg->capture_hidden)
        st = rs_runner_falloc(&r->hidden, ((size_t)m->cfg.n_layers + 1) * r->ws.rows * (size_t)m->cfg.hidden,
                     "the hidden-state capture");
    if (st != RS_OK) goto fail;
    *out = r;
    return RS_OK;
fail:
    rs_runner_free(r);
    return st;
}

rs_status rs_runner_reset(rs_runner *r)
{
    RS_CHECK(r != NULL, RS_E_INVAL, "rs_runner_reset: NULL runner");
    const rs_model_config *c = &r->m->cfg;
    for (size_t i = 0; i < r->cfg.n_runs; i++) {
        rs_run *run = &r->runs[i];
        for (int l = 0; l < c->n_layers; l++) {
            if (!is_ssm_(c->layer_kind[l])) continue;
            size_t H, dv, dk, cd, K;
            ssm_geom_(c, c->layer_kind[l], &H, &dv, &dk, &cd, &K);
            memset(run->conv_state[l], 0, cd * (K - 1) * sizeof(float));
            for (size_t h = 0; h < H; h++) RS_TRY(rs_head_reset(&run->heads[l][h], NULL));
        }
        run->status = RS_OK;
        run->message[0] = '\0';
        run->nf_layer = run->nf_head = -1;
        run->nf_step = -1;
        if (run->moe_pos_diff) {
            memset(run->moe_pos_diff, 0, (size_t)c->n_layers * sizeof(int64_t));
            memset(run->moe_slot_diff, 0, (size_t)c->n_layers * sizeof(int64_t));
        }
    }
    r->pos = 0;
    r->last_n = 0;
    r->sticky = RS_OK;
    return RS_OK;
}

rs_status rs_runner_step(rs_runner *r, const int32_t *tokens, size_t n)
{
    RS_CHECK(r != NULL && tokens != NULL, RS_E_INVAL, "rs_runner_step: NULL runner or tokens");
    RS_CHECK(r->sticky == RS_OK, RS_E_STATE,
             "rs_runner_step: an earlier step failed (%d); reset the runner", (int)r->sticky);
    RS_CHECK(n >= 1 && n <= r->cfg.chunk, RS_E_INVAL,
             "rs_runner_step: %zu positions, this runner takes 1..%zu per step", n, r->cfg.chunk);
    RS_CHECK(r->pos + n <= r->cfg.max_tokens, RS_E_SHAPE,
             "rs_runner_step: position %zu would pass max_tokens = %zu", r->pos + n,
             r->cfg.max_tokens);
    for (size_t t = 0; t < n; t++) /* checked here so a bad token never half-advances a run */
        RS_CHECK(tokens[t] >= 0 && tokens[t] < r->m->cfg.vocab, RS_E_INVAL,
                 "rs_runner_step: token %ld at position %zu is outside the vocabulary [0, %d)",
                 (long)tokens[t], r->pos + t, r->m->cfg.vocab);
    rs_fwd_args a;
    a.m = r->m;
    a.be = r->be;
    a.runs = r->runs;
    a.R = r->cfg.n_runs;
    a.ws = &r->ws;
    a.pos = r->pos;
    a.n = n;
    a.tokens = tokens;
    a.dt_mode = r->cfg.dt_mode;
    a.hidden = r->hidden;
    a.routes = r->routes;
    const rs_status st = rs_forward_chunk(&a);
    if (st != RS_OK) { /* some heads or caches may have advanced: refuse to go on */
        r->sticky = st;
        return st;
    }
    r->pos += n;
    r->last_n = n;
    return RS_OK;
}

const float *rs_runner_logits(const rs_runner *r, size_t run)
{
    if (!r || run >= r->cfg.n_runs || r->last_n == 0) return NULL;
    return r->ws.logits + run * r->last_n * (size_t)r->m->cfg.vocab;
}

const int32_t *rs_runner_routes(const rs_runner *r, size_t layer, size_t run)
{
    if (!r || !r->routes || run >= r->cfg.n_runs || layer >= (size_t)r->m->cfg.n_layers || r->last_n == 0)
        return NULL;
    const rs_model_config *c = &r->m->cfg;
    const int moe = c->mlp_is_moe || c->layer_kind[layer] == RS_LAYER_MOE;
    if (!moe) return NULL;
    const size_t M = r->cfg.n_runs * r->last_n, k = (size_t)c->moe.top_k;
    return r->routes + layer * M * k + run * r->last_n * k;
}

const float *rs_runner_hidden(const rs_runner *r, size_t layer, size_t run)
{
    if (!r || !r->hidden || run >= r->cfg.n_runs || layer > (size_t)r->m->cfg.n_layers ||
        r->last_n == 0)
        return NULL;
    const size_t M = r->cfg.n_runs * r->last_n, d = (size_t)r->m->cfg.hidden;
    return r->hidden + layer * M * d + run * r->last_n * d;
}

rs_status rs_runner_run_nonfinite(const rs_runner *r, size_t run, int32_t *layer, int32_t *head,
                                  int64_t *step)
{
    RS_CHECK(r != NULL && run < r->cfg.n_runs && layer && head && step, RS_E_INVAL,
             "rs_runner_run_nonfinite: bad run %zu or NULL output", run);
    const rs_run *x = &r->runs[run];
    const int nf = x->status == RS_E_NONFINITE;
    *layer = nf ? x->nf_layer : -1;
    *head = nf ? x->nf_head : -1;
    *step = nf ? x->nf_step : -1;
    return RS_OK;
}

rs_status rs_runner_run_status(const rs_runner *r, size_t run, const char **msg)
{
    if (msg) *msg = "";
    RS_CHECK(r != NULL && run < r->cfg.n_runs, RS_E_INVAL, "rs_runner_run_status: bad run %zu", run);
    if (msg) *msg = r->runs[run].message;
    return r->runs[run].status;
}

rs_status rs_runner_moe_route_diff(const rs_runner *r, size_t run, int layer, int64_t *positions, int64_t *experts)
{
    RS_CHECK(r != NULL && run < r->cfg.n_runs && positions && experts, RS_E_INVAL,
             "rs_runner_moe_route_diff: bad run %zu or NULL output", run);
    RS_CHECK(layer >= 0 && layer < r->m->cfg.n_layers, RS_E_INVAL, "rs_runner_moe_route_diff: layer %d outside "
             "0..%d", layer, r->m->cfg.n_layers - 1);
    const rs_run *x = &r->runs[run];
    *positions = x->moe_pos_diff ? x->moe_pos_diff[layer] : 0;
    *experts = x->moe_slot_diff ? x->moe_slot_diff[layer] : 0;
    return RS_OK;
}
