/* rs_h5log_write.c — the handle's life and everything a writer does to an open log: chunks and
 * their commit record, non-finite records, finish (summaries, status, and for a --force run the
 * move of "<out>.partial" over <out>), close. Crash-safety order: rs_h5log.h header comment. */
#include "rs_h5log_impl.h"
#include "rs_check.h"
#include "rs_h5attr.h"
#include "rs_h5place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rs_h5log_ref_ds_[3] = {"/reference/next_token", "/reference/nll", "/reference/top1"};
const char *const rs_h5log_run_ds_[4] = {"kl", "nll", "dp", "top1_agree"};

/* ---- the handle --------------------------------------------------------------------------- */

void rs_h5log_free_(rs_h5log *lg)
{
    if (!lg) return;
    rs_h5log_free_prov_(lg);
    for (size_t i = 0; lg->book_ids && i < lg->n_books; i++) free(lg->book_ids[i]);
    for (size_t i = 0; lg->policies && i < lg->n_runs; i++) free(lg->policies[i]);
    free(lg->book_ids);
    free(lg->policies);
    free(lg->windows);
    free(lg->moe_layers);
    free(lg->book_len);
    free(lg->completed);
    free(lg->path);
    free(lg->final_path);
    free(lg);
}

rs_status rs_h5log_alloc_(size_t n_books, size_t n_runs, rs_h5log **out)
{
    /* callers pass validated counts; the bound here keeps n + 1 and n * size from wrapping */
    RS_CHECK(n_books <= RS_H5LOG_MAX_BOOKS && n_runs <= RS_H5LOG_MAX_RUNS, RS_E_FORMAT,
             "h5log: %zu books / %zu runs exceed the bounds %u / %u", n_books, n_runs, RS_H5LOG_MAX_BOOKS,
             RS_H5LOG_MAX_RUNS);
    rs_h5log *lg = (rs_h5log *)calloc(1, sizeof *lg);
    if (lg) {
        lg->file = -1;
        lg->n_books = n_books;
        lg->n_runs = n_runs;
        /* + 1: a reference-only log has n_runs == 0, and calloc(0) may return NULL */
        lg->book_len = (uint64_t *)calloc(n_books + 1, sizeof(uint64_t));
        lg->completed = (int64_t *)calloc(n_books + 1, sizeof(int64_t));
        lg->book_ids = (char **)calloc(n_books + 1, sizeof(char *));
        lg->policies = (char **)calloc(n_runs + 1, sizeof(char *));
        lg->windows = (uint64_t *)calloc(n_runs + 1, sizeof(uint64_t));
    }
    if (!lg || !lg->book_len || !lg->completed || !lg->book_ids || !lg->policies || !lg->windows) {
        rs_h5log_free_(lg);
        return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    }
    *out = lg;
    return RS_OK;
}

rs_status rs_h5log_set_path_(rs_h5log *lg, int final, const char *p)
{
    char *c = p ? strdup(p) : NULL;
    if (p && !c) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    char **slot = final ? &lg->final_path : &lg->path;
    free(*slot);
    *slot = c;
    return RS_OK;
}

rs_status rs_h5log_flush_(rs_h5log *lg)
{
    if (H5Fflush(lg->file, H5F_SCOPE_LOCAL) < 0) return rs_h5_fail(RS_E_IO, "cannot flush the log");
    return RS_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

rs_status rs_h5log_write_chunk(rs_h5log *lg, size_t book, uint64_t pos, size_t n,
                               const int32_t *next_token, const double *nll_ref,
                               const int32_t *top1_ref, const rs_h5log_run_chunk *runs)
{
    rs_h5_quiet();
    RS_CHECK(lg && lg->writable && next_token && nll_ref && top1_ref && (runs || lg->n_runs == 0), RS_E_INVAL,
             "h5log: NULL argument or read-only log");
    RS_CHECK(book < lg->n_books, RS_E_INVAL, "h5log: book %zu of %zu", book, lg->n_books);
    RS_CHECK(n >= 1 && n <= lg->chunk && pos % lg->chunk == 0 && pos + n <= lg->book_len[book] &&
                 (n == lg->chunk || pos + n == lg->book_len[book]) && pos <= (uint64_t)lg->completed[book],
             RS_E_INVAL,
             "h5log: book %zu: write of positions [%llu, %llu) breaks the chunk rule (chunk %llu, length %llu, "
             "completed %lld)",
             book, (unsigned long long)pos, (unsigned long long)(pos + n), (unsigned long long)lg->chunk,
             (unsigned long long)lg->book_len[book], (long long)lg->completed[book]);
    for (size_t r = 0; r < lg->n_runs; r++)
        RS_CHECK(runs[r].kl && runs[r].nll && runs[r].dp && runs[r].agree, RS_E_INVAL, "h5log: run %zu: NULL values", r);
    /* 1. extents: per dataset, in rs_h5_ds_write_at */
    if (pos + n > lg->width) lg->width = pos + n;
    /* 2. raw data, each HDF5 chunk whole */
    RS_TRY(rs_h5_ds_write_at(lg->file, rs_h5log_ref_ds_[0], H5T_NATIVE_INT32, 2, book, pos, n, next_token));
    RS_TRY(rs_h5_ds_write_at(lg->file, rs_h5log_ref_ds_[1], H5T_NATIVE_DOUBLE, 2, book, pos, n, nll_ref));
    RS_TRY(rs_h5_ds_write_at(lg->file, rs_h5log_ref_ds_[2], H5T_NATIVE_INT32, 2, book, pos, n, top1_ref));
    for (size_t r = 0; r < lg->n_runs; r++) {
        char p[64];
        const void *bufs[4] = {runs[r].kl, runs[r].nll, runs[r].dp, runs[r].agree};
        const hid_t types[4] = {H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, H5T_NATIVE_UINT8};
        for (int i = 0; i < 4; i++) {
            snprintf(p, sizeof p, "/runs/run%02zu/%s", r, rs_h5log_run_ds_[i]);
            RS_TRY(rs_h5_ds_write_at(lg->file, p, types[i], 2, book, pos, n, bufs[i]));
        }
    }
    /* 3. chunk index and extents on disk */
    RS_TRY(rs_h5log_flush_(lg));
    /* 4. the commit record, then 5. flush it */
    const int64_t done = (int64_t)(pos + n);
    if (done > lg->completed[book]) {
        RS_TRY(rs_h5_ds_write_at(lg->file, "/books/completed_positions", H5T_NATIVE_INT64, 1, 0, book, 1, &done));
        RS_TRY(rs_h5log_flush_(lg));
        lg->completed[book] = done;
    }
    return RS_OK;
}

rs_status rs_h5log_set_nonfinite(rs_h5log *lg, size_t run, size_t book, int64_t pos, int32_t layer, int32_t head)
{
    rs_h5_quiet();
    RS_CHECK(lg && lg->writable && run < lg->n_runs && book < lg->n_books, RS_E_INVAL,
             "h5log: bad run/book or read-only log");
    char p[80];
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_layer", run);
    RS_TRY(rs_h5_ds_write_at(lg->file, p, H5T_NATIVE_INT32, 1, 0, book, 1, &layer));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_head", run);
    RS_TRY(rs_h5_ds_write_at(lg->file, p, H5T_NATIVE_INT32, 1, 0, book, 1, &head));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_position", run);
    RS_TRY(rs_h5_ds_write_at(lg->file, p, H5T_NATIVE_INT64, 1, 0, book, 1, &pos));
    return rs_h5log_flush_(lg);
}

rs_status rs_h5log_set_route_diff(rs_h5log *lg, size_t run, size_t book, const int64_t *positions,
                                  const int64_t *experts)
{
    rs_h5_quiet();
    RS_CHECK(lg && lg->writable && positions && experts && run < lg->n_runs && book < lg->n_books, RS_E_INVAL,
             "h5log: bad run/book, NULL counts or read-only log");
    RS_CHECK(lg->n_moe > 0, RS_E_INVAL, "h5log: the log records no MoE layers");
    char p[80];
    snprintf(p, sizeof p, "/runs/run%02zu/moe_route_positions", run);
    RS_TRY(rs_h5_ds_write_at(lg->file, p, H5T_NATIVE_INT64, 2, book, 0, lg->n_moe, positions));
    snprintf(p, sizeof p, "/runs/run%02zu/moe_route_experts", run);
    return rs_h5_ds_write_at(lg->file, p, H5T_NATIVE_INT64, 2, book, 0, lg->n_moe, experts);
}

static rs_status summary_attrs_(hid_t g, const rs_kl_summary *x)
{
    const double vals[] = {x->mean_kl, x->mean_kl_se, x->median_kl, x->p90_kl, x->p99_kl, x->p999_kl,
                           x->max_kl, x->min_kl, x->rms_dp, x->mean_dp, x->same_top1_pct,
                           x->same_top1_se_pct, x->mean_nll_ref, x->mean_nll_run};
    const char *names[] = {"mean_kl", "mean_kl_se", "median_kl", "p90_kl", "p99_kl", "p999_kl", "max_kl",
                           "min_kl", "rms_dp", "mean_dp", "same_top1_pct", "same_top1_se_pct",
                           "mean_nll_ref", "mean_nll_run"};
    rs_status st = RS_OK;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0] && st == RS_OK; i++) {
        char an[64];
        snprintf(an, sizeof an, "summary_%s", names[i]);
        st = rs_h5_attr_set_f64(g, an, vals[i]);
    }
    if (st == RS_OK) st = rs_h5_attr_set_u64(g, "summary_n", x->n);
    if (st == RS_OK) st = rs_h5_attr_set_u64(g, "summary_n_nonfinite", x->n_nonfinite);
    if (st == RS_OK) st = rs_h5_attr_set_f64v(g, "summary_window_mean_kl", x->window_mean_kl, RS_KL_N_WINDOWS);
    return st;
}

rs_status rs_h5log_finish(rs_h5log *lg, const char *end_time, const rs_kl_summary *s)
{
    rs_h5_quiet();
    RS_CHECK(lg && lg->writable && (s || lg->n_runs == 0), RS_E_INVAL, "h5log: bad argument");
    rs_status st = RS_OK;
    for (size_t r = 0; r < lg->n_runs && st == RS_OK; r++) {
        char grp[64];
        snprintf(grp, sizeof grp, "/runs/run%02zu", r);
        hid_t g = H5Gopen2(lg->file, grp, H5P_DEFAULT);
        if (g < 0) return rs_h5_fail(RS_E_FORMAT, "group %s missing", grp);
        st = summary_attrs_(g, &s[r]);
        H5Gclose(g);
    }
    if (st == RS_OK) st = rs_h5_attr_set_str(lg->file, "end_time", end_time);
    if (st == RS_OK) st = rs_h5_attr_set_str(lg->file, "status", "complete");
    if (st == RS_OK) st = rs_h5log_end_history_(lg, end_time, "complete");
    if (st == RS_OK) st = rs_h5log_flush_(lg);
    if (st != RS_OK || !lg->final_path) return st;
    /* a --force run: the complete log now replaces the old one. Never move a file another
     * process put at our partial's name meanwhile. */
    if (!rs_h5_is_file(lg->file, lg->path))
        return rs_error_set(RS_E_IO, "%s is no longer this run's log (replaced by another process?): %s left as it is",
                            lg->path, lg->final_path);
    RS_TRY(rs_h5_place(lg->path, lg->final_path, 1, NULL));
    char *moved = lg->final_path;
    lg->final_path = NULL;
    free(lg->path);
    lg->path = moved;
    return RS_OK;
}

rs_status rs_h5log_close(rs_h5log *lg)
{
    rs_h5_quiet();
    if (!lg) return RS_OK;
    rs_status st = RS_OK;
    if (lg->file >= 0 && H5Fclose(lg->file) < 0) st = rs_h5_fail(RS_E_IO, "cannot close the log %s", lg->path ? lg->path : "");
    lg->file = -1;
    rs_h5log_free_(lg);
    return st;
}
