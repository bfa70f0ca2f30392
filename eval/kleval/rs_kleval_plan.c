/* rs_kleval_plan.c — rs_kleval_prepare: everything that can fail before the output is touched
 * (output path, model folder, data folder, model config and tokenizer, weights, books), then the
 * runner and the loop buffers, then the log. The checks run in the order of rs_kleval.h, cheap
 * ones first, so a wrong path fails in milliseconds and a wrong book before anything long. */
#include "rs_kleval_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "replayssm/eval/rs_hf_config.h"
#include "rs_check.h"

/* the output path, the model folder and the data folder exist as asked */
static rs_status check_paths_(rs_kleval *ev)
{
    const rs_kleval_config *c = &ev->cfg;
    struct stat sb;
    const int exists = stat(c->out_path, &sb) == 0;
    if (c->output == RS_KLEVAL_OUT_RESUME && !exists)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_OUTPUT,
                              rs_error_set(RS_E_IO, "--resume: %s does not exist", c->out_path), NULL);
    if (c->output == RS_KLEVAL_OUT_NEW && exists)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_OUTPUT,
                              rs_error_set(RS_E_IO, "%s exists: use --force to replace it or --resume to continue it",
                                           c->out_path),
                              NULL);
    char cfgp[4096];
    snprintf(cfgp, sizeof cfgp, "%s/config.json", c->model_dir);
    if (stat(cfgp, &sb) != 0)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_MODEL_DIR,
                              rs_error_set(RS_E_IO, "no model at %s (missing %s)", c->model_dir, cfgp), NULL);
    if (c->input != RS_KLEVAL_INPUT_PG19) return rs_kleval_input_check(ev); /* the files, not a folder */
    if (stat(c->data_dir, &sb) != 0)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_DATA_DIR, rs_error_set(RS_E_IO, "no data at %s", c->data_dir),
                              NULL);
    return RS_OK;
}

/* the tokenizer comes from the checkpoint directory (tokenizer.json / *.tiktoken, or the byte
 * tokenizer of a vocab-256 model); one whose ids reach vocab_size is refused, all before loading
 * any weight (stage TOKENIZER). Token-id inputs need no tokenizer: none is opened. */
static rs_status load_model_(rs_kleval *ev)
{
    char cfgp[4096];
    snprintf(cfgp, sizeof cfgp, "%s/config.json", ev->cfg.model_dir);
    rs_model_config mc;
    rs_status st = rs_hf_config_load(cfgp, &mc);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_MODEL, st, "cannot read the model config");
    if (ev->cfg.input != RS_KLEVAL_INPUT_TOKEN_IDS) {
        st = rs_tokenizer_open(ev->cfg.model_dir, mc.vocab, &ev->tok);
        if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_TOKENIZER, st, "cannot evaluate this model");
    }
    if (ev->cfg.input != RS_KLEVAL_INPUT_TOKEN_IDS && ev->tok.vocab > mc.vocab) /* rs_tokenizer_open checks it too */
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_TOKENIZER,
                              rs_error_set(RS_E_FORMAT, "%s: tokenizer ids reach %d, the model's vocab_size is %d: refusing",
                                           ev->cfg.model_dir, ev->tok.vocab - 1, mc.vocab),
                              NULL);
    /* random weights on the GPU scorer: its matrices made on the device (the host holds the small tensors) */
    if (ev->cfg.random_weights)
        st = rs_kleval_random_on_device(&ev->cfg)
                 ? rs_model_init_random_device(ev->cfg.model_dir, ev->cfg.random_seed, &ev->model)
                 : rs_model_init_random(ev->cfg.model_dir, ev->cfg.random_seed, &ev->model);
    else
        st = rs_model_load(ev->cfg.model_dir, &ev->model);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_MODEL, st, "cannot load the model");
    ev->model_loaded = 1;
    ev->res.model_type = ev->model.cfg.model_type;
    return RS_OK;
}

/* event of a book left out or truncated at planning */
static void emit_book_(rs_kleval *ev, rs_kleval_event_kind kind, const char *id, size_t avail, size_t kept)
{
    if (!ev->cfg.on_event) return;
    rs_kleval_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.book_id = id;
    e.available = avail;
    e.truncatable = avail >= 2;
    e.positions = kept;
    (void)ev->cfg.on_event(&e, ev->cfg.user);
}

/* the PG-19 books asked for: metadata.csv, then the ids given or the first N of the split */
static rs_status list_books_(rs_kleval *ev)
{
    const rs_kleval_config *c = &ev->cfg;
    rs_status st = rs_pg19_meta_load(c->data_dir, &ev->meta);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_BOOKS, st, "cannot read the book list");
    if (c->n_book_ids) {
        ev->ids = ev->book_ids;
        ev->n_ids = c->n_book_ids;
    } else {
        st = rs_pg19_select_first(c->data_dir, c->split, &ev->meta, c->first_books, &ev->ids);
        if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_BOOKS, st, "cannot choose books");
        ev->n_ids = c->first_books;
        ev->ids_owned = 1;
    }
    return RS_OK;
}

/* read each stream (book, text file, token-id row) once now (a missing or empty book or file
 * fails before any output), decide its positions, and report the too-short ones */
static rs_status plan_books_(rs_kleval *ev)
{
    const rs_kleval_config *c = &ev->cfg;
    rs_status st = c->input == RS_KLEVAL_INPUT_PG19 ? list_books_(ev) : rs_kleval_input_list(ev);
    if (st != RS_OK) return st;
    ev->books = (rs_kleval_book *)calloc(ev->n_ids, sizeof *ev->books);
    ev->skipped = (rs_kleval_book *)calloc(ev->n_ids, sizeof *ev->skipped);
    ev->book_stream = (size_t *)calloc(ev->n_ids, sizeof *ev->book_stream);
    if (!ev->books || !ev->skipped || !ev->book_stream)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_BOOKS, rs_error_set(RS_E_NOMEM, "out of memory"), NULL);
    size_t nb = 0, ns = 0;
    for (size_t i = 0; i < ev->n_ids; i++) {
        const char *id = ev->ids[i];
        for (size_t j = 0; c->input == RS_KLEVAL_INPUT_PG19 && j < i; j++) /* stream ids are unique as made */
            if (!strcmp(ev->ids[j], id))
                return rs_kleval_fail(ev, RS_KLEVAL_STAGE_CONFIG,
                                      rs_error_set(RS_E_INVAL, "book %s listed twice", id), NULL);
        size_t avail = 0;
        const char *title = "";
        RS_TRY(rs_kleval_input_count(ev, i, &avail, &title));
        rs_kleval_book bk = {id, title, avail, c->tokens, NULL};
        if (avail < c->tokens + 1) {
            if (c->short_books == RS_KLEVAL_SHORT_SKIP || avail < 2) {
                bk.positions = 0;
                bk.reason = avail < 2 ? "fewer than 2 tokens" : "fewer than tokens + 1 tokens";
                ev->skipped[ns++] = bk;
                emit_book_(ev, RS_KLEVAL_EVENT_BOOK_SKIPPED, id, avail, 0);
                continue;
            }
            bk.positions = avail - 1;
            emit_book_(ev, RS_KLEVAL_EVENT_BOOK_TRUNCATED, id, avail, bk.positions);
        }
        ev->book_stream[nb] = i;
        ev->books[nb++] = bk;
        if (bk.positions > ev->max_len) ev->max_len = bk.positions;
        ev->total += bk.positions;
    }
    ev->res.n_books = nb;
    ev->res.books = ev->books;
    ev->res.n_skipped = ns;
    ev->res.skipped = ev->skipped;
    if (nb == 0)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_BOOKS,
                              rs_error_set(RS_E_INVAL,
                                           "no book left to evaluate (all shorter than --tokens %zu + 1; see --short)",
                                           c->tokens),
                              NULL);
    return RS_OK;
}

/* ONE scorer for the reference and every run, whatever their windows (rs_scorer.h): the CPU
 * one unless the config names another (the GPU scorer) */
static rs_status build_scorer_(rs_kleval *ev)
{
    const size_t R = ev->cfg.n_runs;
    rs_scorer_config sc;
    memset(&sc, 0, sizeof sc);
    sc.n_runs = R;
    sc.runs = ev->runs;
    sc.chunk = ev->cfg.chunk;
    sc.max_tokens = ev->max_len;
    sc.dt_mode = RS_DT_KERNEL;
    sc.threads = ev->cfg.threads;
    sc.compute = ev->cfg.compute;
    sc.device = ev->cfg.device;
    sc.n_streams = ev->n_slots;
    const rs_scorer_factory make = ev->cfg.scorer ? ev->cfg.scorer : rs_scorer_cpu_create;
    const rs_status st = make(&ev->model, &sc, &ev->sc);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, st, "cannot set up the runs");
    snprintf(ev->describe, sizeof ev->describe, "%s", ev->sc->ops->describe(ev->sc));
    ev->res.runner_runs = R + 1;
    return RS_OK;
}

/* the buffers of the position loop: per slot (book in flight) its tokens and one chunk of every
 * run; the running means and summaries */
static rs_status alloc_loop_(rs_kleval *ev)
{
    const size_t R = ev->cfg.n_runs, C = ev->cfg.chunk, B = ev->n_slots;
    ev->slots = (rs_kleval_slot *)calloc(B, sizeof *ev->slots);
    ev->sin = (rs_scorer_stream *)calloc(B, sizeof *ev->sin);
    ev->sout = (rs_scorer_out *)calloc(B, sizeof *ev->sout);
    ev->running = (rs_kl_running *)calloc(R + 1, sizeof *ev->running);
    ev->sums = (rs_kl_summary *)calloc(R + 1, sizeof *ev->sums);
    if (!ev->slots || !ev->sin || !ev->sout || !ev->running || !ev->sums)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, rs_error_set(RS_E_NOMEM, "out of memory"), NULL);
    const rs_model_config *mc = &ev->model.cfg;
    if (mc->is_moe && R > 0) { /* the layers whose routing the log counts (rs_h5log_set_route_diff) */
        ev->moe_layers = (int32_t *)malloc((size_t)mc->n_layers * sizeof(int32_t));
        ev->moe_cnt = (int64_t *)malloc(2 * (size_t)mc->n_layers * sizeof(int64_t));
        if (!ev->moe_layers || !ev->moe_cnt)
            return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, rs_error_set(RS_E_NOMEM, "out of memory"), NULL);
        for (int l = 0; l < mc->n_layers; l++)
            if (mc->mlp_is_moe || mc->layer_kind[l] == RS_LAYER_MOE) ev->moe_layers[ev->n_moe++] = l;
    }
    for (size_t i = 0; i < B; i++) {
        rs_kleval_slot *sl = &ev->slots[i];
        sl->toks = (int32_t *)malloc((ev->max_len + 1) * sizeof(int32_t));
        sl->buf = (double *)malloc((3 * R + 1) * C * sizeof(double));
        sl->agree = (uint8_t *)malloc(R * C + 1);
        sl->tgt = (int32_t *)malloc(C * sizeof(int32_t));
        sl->top = (int32_t *)malloc(C * sizeof(int32_t));
        sl->rcs = (rs_h5log_run_chunk *)calloc(R + 1, sizeof *sl->rcs);
        sl->nf_done = (uint8_t *)calloc(R + 1, 1);
        sl->kl_v = (double **)calloc(R + 1, sizeof(double *));
        sl->nll_v = (double **)calloc(R + 1, sizeof(double *));
        sl->dp_v = (double **)calloc(R + 1, sizeof(double *));
        sl->agree_v = (uint8_t **)calloc(R + 1, sizeof(uint8_t *));
        if (!sl->kl_v || !sl->nll_v || !sl->dp_v || !sl->agree_v || !sl->toks || !sl->buf || !sl->agree || !sl->tgt ||
            !sl->top || !sl->rcs || !sl->nf_done)
            return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, rs_error_set(RS_E_NOMEM, "out of memory"), NULL);
        for (size_t r = 0; r < R; r++) {
            sl->rcs[r].kl = sl->kl_v[r] = sl->buf + (3 * r + 0) * C;
            sl->rcs[r].nll = sl->nll_v[r] = sl->buf + (3 * r + 1) * C;
            sl->rcs[r].dp = sl->dp_v[r] = sl->buf + (3 * r + 2) * C;
            sl->rcs[r].agree = sl->agree_v[r] = sl->agree + r * C;
        }
        rs_scorer_out *o = &ev->sout[i];
        o->nll_ref = sl->buf + 3 * R * C;
        o->top1_ref = sl->top;
        o->kl = sl->kl_v;
        o->nll = sl->nll_v;
        o->dp = sl->dp_v;
        o->agree = sl->agree_v;
    }
    return RS_OK;
}

rs_status rs_kleval_plan(rs_kleval *ev)
{
    rs_kleval_iso_now(ev->start_time, sizeof ev->start_time);
    RS_TRY(check_paths_(ev));
    /* the model files' SHA-256 (seconds per GB) on worker threads while the model loads and the
       scorer is built; rs_kleval_log_open joins it (a failure is reported there, as before) */
    RS_TRY(rs_kleval_log_hash_start(ev));
    RS_TRY(load_model_(ev));
    RS_TRY(plan_books_(ev));
    /* books in flight: the batch, but no more streams than books */
    ev->n_slots = ev->cfg.batch > 1 ? ev->cfg.batch : 1;
    if (ev->n_slots > ev->res.n_books) ev->n_slots = ev->res.n_books;
    RS_TRY(build_scorer_(ev));
    RS_TRY(alloc_loop_(ev));
    RS_TRY(rs_kleval_log_open(ev));
    for (size_t b = 0; b < ev->res.n_books; b++) ev->done += (size_t)rs_h5log_completed(ev->lg, b);
    ev->done_at_start = ev->done;
    ev->t0 = rs_kleval_now();
    return RS_OK;
}
