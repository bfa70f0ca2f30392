/* rs_kleval_step.c — one chunk of positions of every book in flight: the scorer (rs_scorer.h,
 * CPU or GPU) forwards the fp32 reference and every run in lockstep and scores each run against
 * the reference position by position (rs_kl's definitions), each book's chunk is written and
 * committed, and a PROGRESS event follows per book.
 *
 * Books in flight (batch B, docs/evaluator.md "Books batched"): the evaluated books are cut into
 * fixed waves of B consecutive books (books 0..B-1, B..2B-1, ...); the books of a wave are the
 * scorer's streams, longest first, all from position 0 in lockstep; a book whose positions end
 * sits the remaining steps of its wave out. Every book keeps its own chunk boundaries (0, C, 2C,
 * ..., the short last chunk), so each book's numbers are those of a sequential run (on the CPU
 * bit for bit); the lockstep keeps every stream of a step at the same position, so the GPU
 * forwards all of them as one batch (streams in their last, shorter chunk: one more batch per
 * distinct length). With B = 1 a wave is one book: the sequential evaluation of before.
 *
 * Resume: a wave whose books are all complete is skipped; otherwise every book of the wave is
 * run from position 0 and writes only past its committed position (the SSM states and KV caches
 * are not stored). Chunk boundaries, the waves' make-up and SR streams (counter-based, keyed by
 * layer, head, step) are the same, so the result equals an uninterrupted run. */
#include "rs_kleval_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_check.h"

#define RS_KLEVAL_EVAL_FAILED "evaluation failed (completed chunks are kept; --resume continues)"

void rs_kleval_slots_free(rs_kleval *ev)
{
    for (size_t i = 0; ev->slots && i < ev->n_slots; i++) {
        rs_kleval_slot *sl = &ev->slots[i];
        free(sl->toks);
        free(sl->buf);
        free(sl->agree);
        free(sl->tgt);
        free(sl->top);
        free(sl->rcs);
        free(sl->nf_done);
        free(sl->kl_v);
        free(sl->nll_v);
        free(sl->dp_v);
        free(sl->agree_v);
    }
    free(ev->slots);
    free(ev->sin);
    free(ev->sout);
    free(ev->moe_layers);
    free(ev->moe_cnt);
    ev->moe_layers = NULL;
    ev->moe_cnt = NULL;
    ev->n_moe = 0;
    ev->slots = NULL;
}

/* one stream (slot i) back to position 0; a single-stream scorer through its plain reset */
static rs_status reset_slot_(rs_kleval *ev, size_t i)
{
    if (ev->n_slots == 1) return ev->sc->ops->reset(ev->sc);
    return ev->sc->ops->reset_stream(ev->sc, i);
}

/* load book b's tokens into slot i (rs_kleval_input.c: any input kind), check them against what
 * the log holds, and put the slot's stream at position 0 */
static rs_status open_slot_(rs_kleval *ev, size_t i, size_t b)
{
    rs_kleval_slot *sl = &ev->slots[i];
    const rs_kleval_book *bk = &ev->books[b];
    const size_t len = bk->positions, start = (size_t)rs_h5log_completed(ev->lg, b);
    size_t n_tok = 0; /* the book's text tokenized, or a text file's, or a row of token ids */
    rs_status st = rs_kleval_input_tokens(ev, ev->book_stream[b], sl->toks, len + 1, &n_tok);
    if (st == RS_OK && n_tok != len + 1)
        st = rs_error_set(RS_E_STATE, "book %s now encodes to %zu tokens, %zu expected (changed on disk?)", bk->id,
                          n_tok, len + 1);
    if (st == RS_OK && start > 0) { /* the stored tokens must be the ones we are about to continue */
        int32_t *stored = (int32_t *)malloc(start * sizeof(int32_t));
        if (!stored) st = rs_error_set(RS_E_NOMEM, "out of memory");
        else st = rs_h5log_read_row(ev->lg, -1, "next_token", b, start, stored);
        for (size_t t = 0; st == RS_OK && t < start; t++)
            if (stored[t] != sl->toks[t + 1])
                st = rs_error_set(RS_E_STATE,
                                  "--resume: book %s position %zu: the log has next token %d, the book gives %d",
                                  bk->id, t, (int)stored[t], (int)sl->toks[t + 1]);
        free(stored);
    }
    if (st == RS_OK) st = reset_slot_(ev, i);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_EVAL, st, "cannot evaluate");
    for (size_t r = 0; r < ev->cfg.n_runs; r++) { /* reported before the interruption: not again */
        int64_t p;
        int32_t layer, head;
        sl->nf_done[r] = rs_h5log_get_nonfinite(ev->lg, r, b, &p, &layer, &head) == RS_OK && p >= 0;
    }
    sl->book = b;
    sl->len = len;
    sl->start = start;
    sl->pos = 0;
    sl->active = 1;
    return RS_OK;
}

/* books [first, first + k) of the wave starting at `first` */
static size_t wave_size_(const rs_kleval *ev, size_t first)
{
    const size_t left = ev->res.n_books - first;
    return left < ev->n_slots ? left : ev->n_slots;
}

/* move ev->book past the waves whose books are all complete; 1 if a wave with work is left */
static int find_wave_(rs_kleval *ev)
{
    while (ev->book < ev->res.n_books) {
        const size_t k = wave_size_(ev, ev->book);
        for (size_t j = 0; j < k; j++)
            if ((size_t)rs_h5log_completed(ev->lg, ev->book + j) < ev->books[ev->book + j].positions) return 1;
        ev->book += k;
    }
    return 0;
}

/* open the wave at ev->book: its books into the slots, longest first (ties: log order), so that
 * the streams still running at any step are slots 0 .. m-1 and those of one chunk length are
 * consecutive (the GPU forwards each such run of streams as one batch) */
static rs_status open_wave_(rs_kleval *ev)
{
    const size_t first = ev->book, k = wave_size_(ev, first);
    size_t order[RS_KLEVAL_MAX_BATCH];
    for (size_t j = 0; j < k; j++) order[j] = first + j;
    for (size_t j = 1; j < k; j++) /* stable insertion sort by length, descending */
        for (size_t q = j; q > 0 && ev->books[order[q]].positions > ev->books[order[q - 1]].positions; q--) {
            const size_t t = order[q];
            order[q] = order[q - 1];
            order[q - 1] = t;
        }
    for (size_t i = 0; i < k; i++) RS_TRY(open_slot_(ev, i, order[i]));
    ev->n_wave = k;
    return RS_OK;
}

/* run r of slot i went non-finite at position pos: record where, report it once per book */
static rs_status nonfinite_(rs_kleval *ev, size_t i, size_t r, size_t pos)
{
    rs_kleval_slot *sl = &ev->slots[i];
    const char *msg = NULL;
    rs_scorer_nonfinite nf = {-1, -1, -1};
    if (ev->n_slots == 1) RS_TRY(ev->sc->ops->run_nonfinite(ev->sc, r, &nf, &msg));
    else RS_TRY(ev->sc->ops->stream_nonfinite(ev->sc, i, r, &nf, &msg));
    RS_TRY(rs_h5log_set_nonfinite(ev->lg, r, sl->book, (int64_t)pos, nf.layer, nf.head));
    sl->nf_done[r] = 1;
    if (ev->cfg.on_event) {
        rs_kleval_event e;
        memset(&e, 0, sizeof e);
        e.kind = RS_KLEVAL_EVENT_NONFINITE;
        e.book_id = ev->books[sl->book].id;
        e.book = sl->book;
        e.n_books = ev->res.n_books;
        e.run = r;
        e.position = pos;
        e.message = msg ? msg : "";
        (void)ev->cfg.on_event(&e, ev->cfg.user);
    }
    return RS_OK;
}

/* after a scored chunk of slot i: targets for the log, running means, non-finite reports */
static rs_status account_(rs_kleval *ev, size_t i, size_t pos, size_t n)
{
    rs_kleval_slot *sl = &ev->slots[i];
    const size_t R = ev->cfg.n_runs, C = ev->cfg.chunk;
    const double *nll_ref = sl->buf + 3 * R * C;
    for (size_t t = 0; t < n; t++) {
        sl->tgt[t] = sl->toks[pos + t + 1];
        for (size_t r = 0; r < R; r++) {
            const double kl = sl->kl_v[r][t];
            if (!isnan(kl)) rs_kl_running_add(&ev->running[r], kl);
            else if (!sl->nf_done[r]) RS_TRY(nonfinite_(ev, i, r, pos + t));
        }
        ev->ref_nll_sum += nll_ref[t];
        ev->ref_nll_n++;
    }
    return RS_OK;
}

static void progress_(rs_kleval *ev, size_t b, size_t end)
{
    if (!ev->cfg.on_event) return;
    rs_kleval_event e;
    memset(&e, 0, sizeof e);
    e.kind = RS_KLEVAL_EVENT_PROGRESS;
    e.book_id = ev->books[b].id;
    e.book = b;
    e.n_books = ev->res.n_books;
    e.positions = ev->books[b].positions;
    e.position = end;
    e.done = ev->done;
    e.done_at_start = ev->done_at_start;
    e.total = ev->total;
    e.elapsed_s = rs_kleval_now() - ev->t0;
    e.n_runs = ev->cfg.n_runs;
    e.running = ev->running;
    e.ref_mean_nll = ev->ref_nll_sum / (double)ev->ref_nll_n;
    if (ev->sc && ev->sc->ops->stats) ev->sc->ops->stats(ev->sc, &e.stats);
    if (ev->cfg.on_event(&e, ev->cfg.user)) ev->stop = 1;
}

/* the ids of the wave's books whose reference went non-finite in this step, for the message */
static void bad_books_(const rs_kleval *ev, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ev->n_wave && o < n; i++)
        if (ev->sin[i].ref_nonfinite || ev->n_slots == 1) {
            const rs_kleval_slot *sl = &ev->slots[i];
            o += (size_t)snprintf(buf + o, n - o, "%sbook %s positions %zu..%zu", o ? ", " : "",
                                  ev->books[sl->book].id, sl->pos, sl->pos + ev->sin[i].n - 1);
        }
}

/* MoE models: every run's routing counts of stream i's book b (since its reset) into the log, before
   the chunk they include is committed (rs_h5log_set_route_diff) */
static rs_status route_counts_(rs_kleval *ev, size_t i, size_t b)
{
    const size_t L = ev->n_moe;
    for (size_t r = 0; r < ev->cfg.n_runs && L > 0; r++) {
        for (size_t j = 0; j < L; j++)
            RS_TRY(ev->sc->ops->route_diff(ev->sc, i, r, ev->moe_layers[j], &ev->moe_cnt[j], &ev->moe_cnt[L + j]));
        RS_TRY(rs_h5log_set_route_diff(ev->lg, r, b, ev->moe_cnt, ev->moe_cnt + L));
    }
    return RS_OK;
}

/* one scorer step of the open wave; *committed: some book wrote a chunk */
static rs_status wave_step_(rs_kleval *ev, int *committed)
{
    const size_t C = ev->cfg.chunk;
    size_t total_n = 0;
    for (size_t i = 0; i < ev->n_slots; i++) {
        rs_kleval_slot *sl = &ev->slots[i];
        rs_scorer_stream *in = &ev->sin[i];
        in->n = 0;
        in->ref_nonfinite = 0;
        if (i >= ev->n_wave || !sl->active) continue;
        in->n = sl->len - sl->pos < C ? sl->len - sl->pos : C;
        in->tokens = sl->toks + sl->pos;
        in->targets = sl->toks + sl->pos + 1;
        total_n += in->n;
    }
    rs_status st = ev->n_slots == 1
                       ? ev->sc->ops->step(ev->sc, ev->sin[0].tokens, ev->sin[0].targets, ev->sin[0].n, &ev->sout[0])
                       : ev->sc->ops->step_streams(ev->sc, ev->sin, ev->sout);
    if (st == RS_E_NONFINITE) {
        char books[1024];
        bad_books_(ev, books, sizeof books);
        st = rs_error_set(st, "%s: %s", books, rs_last_error());
    }
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_EVAL, st, RS_KLEVAL_EVAL_FAILED);
    ev->res.runner_steps++;
    ev->res.reference_positions += total_n;
    /* commit in log order (the slots are in length order) */
    *committed = 0;
    for (size_t b = ev->book; b < ev->book + ev->n_wave; b++) {
        size_t i = 0;
        while (ev->slots[i].book != b) i++;
        rs_kleval_slot *sl = &ev->slots[i];
        const size_t n = ev->sin[i].n, pos = sl->pos;
        if (n == 0) continue;
        sl->pos = pos + n;
        if (sl->pos >= sl->len) sl->active = 0;
        if (pos < sl->start) continue; /* a replay of committed positions (resume): scored and dropped */
        st = account_(ev, i, pos, n);
        if (st == RS_OK) st = route_counts_(ev, i, b);
        if (st == RS_OK)
            st = rs_h5log_write_chunk(ev->lg, b, pos, n, sl->tgt, sl->buf + 3 * ev->cfg.n_runs * C, sl->top, sl->rcs);
        if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_EVAL, st, RS_KLEVAL_EVAL_FAILED);
        ev->done += n;
        *committed = 1;
        progress_(ev, b, pos + n);
    }
    int any = 0;
    for (size_t i = 0; i < ev->n_wave; i++) any |= ev->slots[i].active;
    if (!any) { /* the wave is done */
        ev->book += ev->n_wave;
        ev->n_wave = 0;
    }
    return RS_OK;
}

rs_status rs_kleval_next_chunk(rs_kleval *ev, int *all_done)
{
    *all_done = 0;
    if (ev->n_slots > 1 && (!ev->sc->ops->step_streams || !ev->sc->ops->reset_stream || !ev->sc->ops->stream_nonfinite))
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_EVAL,
                              rs_error_set(RS_E_UNSUPPORTED, "the %s scorer does not batch books: use --batch 1",
                                           ev->sc->ops->name),
                              NULL);
    int committed = 0;
    while (!committed) { /* replayed steps (resume) commit nothing: go on to the first that does */
        if (ev->n_wave == 0) {
            if (!find_wave_(ev)) break;
            RS_TRY(open_wave_(ev));
        }
        RS_TRY(wave_step_(ev, &committed));
    }
    *all_done = ev->n_wave == 0 && !find_wave_(ev);
    return RS_OK;
}
