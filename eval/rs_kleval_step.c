/* rs_kleval_step.c — one chunk of positions: the scorer (rs_scorer.h, CPU or GPU) forwards the
 * fp32 reference and every run in lockstep and scores each run against the reference position
 * by position (rs_kl's definitions), the chunk is written and committed, and a PROGRESS event
 * follows.
 *
 * Resume: completed books are skipped; the book in progress is re-run from position 0 without
 * writing up to its committed position (the SSM states and KV caches are not stored), then
 * continues. Chunk boundaries and SR streams (counter-based, keyed by layer, head, step) are the
 * same, so the result equals an uninterrupted run. */
#include "rs_kleval_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rs_check.h"

#define RS_KLEVAL_EVAL_FAILED "evaluation failed (completed chunks are kept; --resume continues)"

/* forward n tokens from toks + pos through the scorer (the reference and every run), scored
 * against the next tokens into the chunk buffers (out NULL: a replay of committed positions,
 * scored into the same buffers and dropped) */
static rs_status forward_(rs_kleval *ev, size_t pos, size_t n)
{
    const size_t R = ev->cfg.n_runs, C = ev->cfg.chunk;
    rs_scorer_out o;
    o.nll_ref = ev->buf + 3 * R * C;
    o.top1_ref = ev->top;
    o.kl = ev->kl_v;
    o.nll = ev->nll_v;
    o.dp = ev->dp_v;
    o.agree = ev->agree_v;
    rs_status st = ev->sc->ops->step(ev->sc, ev->toks + pos, ev->toks + pos + 1, n, &o);
    if (st == RS_E_NONFINITE)
        st = rs_error_set(st, "book %s positions %zu..%zu: %s", ev->books[ev->book].id, pos, pos + n - 1,
                          rs_last_error());
    RS_TRY(st);
    ev->res.runner_steps++;
    ev->res.reference_positions += n;
    return RS_OK;
}

/* load book b's tokens (rs_kleval_input.c: any input kind), check them against what the log
 * holds, and bring the runner to the book's committed position */
static rs_status open_book_(rs_kleval *ev, size_t start)
{
    const rs_kleval_book *bk = &ev->books[ev->book];
    const size_t len = bk->positions;
    size_t n_tok = 0; /* the book's text tokenized, or a text file's, or a row of token ids */
    rs_status st = rs_kleval_input_tokens(ev, ev->book_stream[ev->book], ev->toks, len + 1, &n_tok);
    if (st == RS_OK && n_tok != len + 1)
        st = rs_error_set(RS_E_STATE, "book %s now encodes to %zu tokens, %zu expected (changed on disk?)", bk->id,
                          n_tok, len + 1);
    if (st == RS_OK && start > 0) { /* the stored tokens must be the ones we are about to continue */
        int32_t *stored = (int32_t *)malloc(start * sizeof(int32_t));
        if (!stored) st = rs_error_set(RS_E_NOMEM, "out of memory");
        else st = rs_h5log_read_row(ev->lg, -1, "next_token", ev->book, start, stored);
        for (size_t t = 0; st == RS_OK && t < start; t++)
            if (stored[t] != ev->toks[t + 1])
                st = rs_error_set(RS_E_STATE,
                                  "--resume: book %s position %zu: the log has next token %d, the book gives %d",
                                  bk->id, t, (int)stored[t], (int)ev->toks[t + 1]);
        free(stored);
    }
    if (st == RS_OK) st = ev->sc->ops->reset(ev->sc);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_EVAL, st, "cannot evaluate");
    for (size_t r = 0; r < ev->cfg.n_runs; r++) { /* reported before the interruption: not again */
        int64_t p;
        int32_t L, H;
        ev->nf_done[r] = rs_h5log_get_nonfinite(ev->lg, r, ev->book, &p, &L, &H) == RS_OK && p >= 0;
    }
    for (size_t pos = 0; pos < start; pos += ev->cfg.chunk) { /* replay the committed prefix */
        const size_t n = start - pos < ev->cfg.chunk ? start - pos : ev->cfg.chunk;
        st = forward_(ev, pos, n);
        if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_EVAL, st, RS_KLEVAL_EVAL_FAILED);
    }
    ev->pos = start;
    ev->book_open = 1;
    return RS_OK;
}

/* run r's logits went non-finite at position pos: record where, report it once per book */
static rs_status nonfinite_(rs_kleval *ev, size_t r, size_t pos)
{
    const char *msg = NULL;
    rs_scorer_nonfinite nf = {-1, -1, -1};
    RS_TRY(ev->sc->ops->run_nonfinite(ev->sc, r, &nf, &msg));
    RS_TRY(rs_h5log_set_nonfinite(ev->lg, r, ev->book, (int64_t)pos, nf.layer, nf.head));
    ev->nf_done[r] = 1;
    if (ev->cfg.on_event) {
        rs_kleval_event e;
        memset(&e, 0, sizeof e);
        e.kind = RS_KLEVAL_EVENT_NONFINITE;
        e.book_id = ev->books[ev->book].id;
        e.book = ev->book;
        e.n_books = ev->res.n_books;
        e.run = r;
        e.position = pos;
        e.message = msg ? msg : "";
        (void)ev->cfg.on_event(&e, ev->cfg.user);
    }
    return RS_OK;
}

/* after a scored chunk: targets for the log, running means, non-finite reports */
static rs_status account_(rs_kleval *ev, size_t pos, size_t n)
{
    const size_t R = ev->cfg.n_runs, C = ev->cfg.chunk;
    const double *nll_ref = ev->buf + 3 * R * C;
    for (size_t t = 0; t < n; t++) {
        ev->tgt[t] = ev->toks[pos + t + 1];
        for (size_t r = 0; r < R; r++) {
            const double kl = ev->kl_v[r][t];
            if (!isnan(kl)) rs_kl_running_add(&ev->running[r], kl);
            else if (!ev->nf_done[r]) RS_TRY(nonfinite_(ev, r, pos + t));
        }
        ev->ref_nll_sum += nll_ref[t];
        ev->ref_nll_n++;
    }
    return RS_OK;
}

static void progress_(rs_kleval *ev, size_t end)
{
    if (!ev->cfg.on_event) return;
    rs_kleval_event e;
    memset(&e, 0, sizeof e);
    e.kind = RS_KLEVAL_EVENT_PROGRESS;
    e.book_id = ev->books[ev->book].id;
    e.book = ev->book;
    e.n_books = ev->res.n_books;
    e.positions = ev->books[ev->book].positions;
    e.position = end;
    e.done = ev->done;
    e.done_at_start = ev->done_at_start;
    e.total = ev->total;
    e.elapsed_s = rs_kleval_now() - ev->t0;
    e.n_runs = ev->cfg.n_runs;
    e.running = ev->running;
    e.ref_mean_nll = ev->ref_nll_sum / (double)ev->ref_nll_n;
    if (ev->cfg.on_event(&e, ev->cfg.user)) ev->stop = 1;
}

rs_status rs_kleval_next_chunk(rs_kleval *ev)
{
    while (!ev->book_open && ev->book < ev->res.n_books) { /* the next book with work left */
        const size_t start = (size_t)rs_h5log_completed(ev->lg, ev->book);
        if (start >= ev->books[ev->book].positions) ev->book++;
        else RS_TRY(open_book_(ev, start));
    }
    if (ev->book >= ev->res.n_books) return RS_OK;
    const size_t len = ev->books[ev->book].positions, pos = ev->pos;
    const size_t n = len - pos < ev->cfg.chunk ? len - pos : ev->cfg.chunk;
    rs_status st = forward_(ev, pos, n);
    if (st == RS_OK) st = account_(ev, pos, n);
    if (st == RS_OK)
        st = rs_h5log_write_chunk(ev->lg, ev->book, pos, n, ev->tgt, ev->buf + 3 * ev->cfg.n_runs * ev->cfg.chunk,
                                  ev->top, ev->rcs);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_EVAL, st, RS_KLEVAL_EVAL_FAILED);
    ev->done += n;
    ev->pos = pos + n;
    progress_(ev, pos + n);
    if (ev->pos >= len) { /* book done */
        ev->book++;
        ev->book_open = 0;
    }
    return RS_OK;
}
