/* rs_h5log_read.c — reading an open log: committed rows, non-finite records, the summaries
 * computed from the stored arrays, string attributes, and the accessors. Every index is checked
 * against the handle's counts, which rs_h5log_open validated against the file. */
#include "rs_h5log_impl.h"
#include "rs_check.h"
#include "rs_h5attr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rs_status rs_h5log_read_row(const rs_h5log *lg, long run, const char *name, size_t book, size_t n, void *buf)
{
    rs_h5_quiet();
    RS_CHECK(lg && name && (buf || n == 0) && book < lg->n_books, RS_E_INVAL, "h5log: bad argument");
    RS_CHECK(n <= (uint64_t)lg->completed[book], RS_E_INVAL, "h5log: book %zu has %lld committed positions, %zu asked",
             book, (long long)lg->completed[book], n);
    char p[80];
    hid_t type;
    if (run < 0) {
        RS_CHECK(!strcmp(name, "next_token") || !strcmp(name, "top1") || !strcmp(name, "nll"), RS_E_INVAL,
                 "h5log: no reference dataset '%s'", name);
        snprintf(p, sizeof p, "/reference/%s", name);
        type = strcmp(name, "nll") ? H5T_NATIVE_INT32 : H5T_NATIVE_DOUBLE;
    } else {
        RS_CHECK((size_t)run < lg->n_runs, RS_E_INVAL, "h5log: run %ld of %zu", run, lg->n_runs);
        RS_CHECK(!strcmp(name, "kl") || !strcmp(name, "nll") || !strcmp(name, "dp") || !strcmp(name, "top1_agree"),
                 RS_E_INVAL, "h5log: no run dataset '%s'", name);
        snprintf(p, sizeof p, "/runs/run%02ld/%s", run, name);
        type = strcmp(name, "top1_agree") ? H5T_NATIVE_DOUBLE : H5T_NATIVE_UINT8;
    }
    return rs_h5_ds_read_at(lg->file, p, type, 2, book, 0, n, buf);
}

rs_status rs_h5log_get_nonfinite(const rs_h5log *lg, size_t run, size_t book, int64_t *pos, int32_t *layer,
                                 int32_t *head)
{
    rs_h5_quiet();
    RS_CHECK(lg && pos && layer && head && run < lg->n_runs && book < lg->n_books, RS_E_INVAL, "h5log: bad argument");
    char p[80];
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_position", run);
    RS_TRY(rs_h5_ds_read_at(lg->file, p, H5T_NATIVE_INT64, 1, 0, book, 1, pos));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_layer", run);
    RS_TRY(rs_h5_ds_read_at(lg->file, p, H5T_NATIVE_INT32, 1, 0, book, 1, layer));
    snprintf(p, sizeof p, "/runs/run%02zu/first_nonfinite_head", run);
    return rs_h5_ds_read_at(lg->file, p, H5T_NATIVE_INT32, 1, 0, book, 1, head);
}

rs_status rs_h5log_get_route_diff(const rs_h5log *lg, size_t run, size_t book, int64_t *positions,
                                  int64_t *experts)
{
    rs_h5_quiet();
    RS_CHECK(lg && positions && experts && run < lg->n_runs && book < lg->n_books, RS_E_INVAL, "h5log: bad argument");
    RS_CHECK(lg->n_moe > 0, RS_E_INVAL, "h5log: the log records no MoE layers");
    char p[80];
    snprintf(p, sizeof p, "/runs/run%02zu/moe_route_positions", run);
    RS_TRY(rs_h5_ds_read_at(lg->file, p, H5T_NATIVE_INT64, 2, book, 0, lg->n_moe, positions));
    snprintf(p, sizeof p, "/runs/run%02zu/moe_route_experts", run);
    return rs_h5_ds_read_at(lg->file, p, H5T_NATIVE_INT64, 2, book, 0, lg->n_moe, experts);
}

size_t rs_h5log_n_moe_layers(const rs_h5log *lg) { return lg ? lg->n_moe : 0; }

int32_t rs_h5log_moe_layer(const rs_h5log *lg, size_t i) { return lg && i < lg->n_moe ? lg->moe_layers[i] : -1; }

static size_t max_completed_(const rs_h5log *lg)
{
    size_t maxn = 1;
    for (size_t b = 0; b < lg->n_books; b++)
        if ((size_t)lg->completed[b] > maxn) maxn = (size_t)lg->completed[b];
    return maxn;
}

rs_status rs_h5log_summarize(const rs_h5log *lg, size_t run, rs_kl_summary *out)
{
    RS_CHECK(lg && out && run < lg->n_runs, RS_E_INVAL, "h5log: bad argument");
    const size_t maxn = max_completed_(lg);
    double *kl = (double *)malloc(maxn * sizeof(double)), *dp = (double *)malloc(maxn * sizeof(double));
    double *nr = (double *)malloc(maxn * sizeof(double)), *nq = (double *)malloc(maxn * sizeof(double));
    uint8_t *ag = (uint8_t *)malloc(maxn);
    rs_kl_acc acc;
    memset(&acc, 0, sizeof acc);
    rs_status st = (kl && dp && nr && nq && ag) ? RS_OK : rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    for (size_t b = 0; st == RS_OK && b < lg->n_books; b++) {
        const size_t n = (size_t)lg->completed[b];
        if (n == 0) continue;
        st = rs_h5log_read_row(lg, (long)run, "kl", b, n, kl);
        if (st == RS_OK) st = rs_h5log_read_row(lg, (long)run, "dp", b, n, dp);
        if (st == RS_OK) st = rs_h5log_read_row(lg, (long)run, "nll", b, n, nq);
        if (st == RS_OK) st = rs_h5log_read_row(lg, (long)run, "top1_agree", b, n, ag);
        if (st == RS_OK) st = rs_h5log_read_row(lg, -1, "nll", b, n, nr);
        if (st == RS_OK) st = rs_kl_acc_add(&acc, 0, n, kl, dp, ag, nr, nq);
    }
    if (st == RS_OK) st = rs_kl_acc_finish(&acc, out);
    rs_kl_acc_free(&acc);
    free(kl);
    free(dp);
    free(nr);
    free(nq);
    free(ag);
    return st;
}

rs_status rs_h5log_reference_summary(const rs_h5log *lg, rs_h5log_ref_summary *out)
{
    rs_h5_quiet();
    RS_CHECK(lg && out, RS_E_INVAL, "h5log: bad argument");
    memset(out, 0, sizeof *out);
    double sum = 0, wsum[RS_KL_N_WINDOWS] = {0};
    double *v = (double *)malloc(max_completed_(lg) * sizeof(double));
    RS_CHECK(v, RS_E_NOMEM, "h5log: out of memory");
    for (size_t b = 0; b < lg->n_books; b++) {
        const size_t n = (size_t)lg->completed[b];
        if (n == 0) continue;
        const rs_status st = rs_h5log_read_row(lg, -1, "nll", b, n, v);
        if (st != RS_OK) {
            free(v);
            return st;
        }
        for (size_t t = 0; t < n; t++) {
            const size_t w = rs_kl_window_of(t);
            sum += v[t];
            wsum[w] += v[t];
            out->window_n[w]++;
        }
        out->n += n;
    }
    free(v);
    out->mean_nll = out->n ? sum / (double)out->n : NAN;
    for (size_t w = 0; w < RS_KL_N_WINDOWS; w++)
        out->window_mean_nll[w] = out->window_n[w] ? wsum[w] / (double)out->window_n[w] : NAN;
    return RS_OK;
}

rs_status rs_h5log_get_attr_string(const rs_h5log *lg, const char *obj, const char *name, char *buf, size_t bufsize)
{
    rs_h5_quiet();
    RS_CHECK(lg && obj && name && buf && bufsize, RS_E_INVAL, "h5log: bad argument");
    hid_t o = H5Oopen(lg->file, obj, H5P_DEFAULT);
    if (o < 0) return rs_h5_fail(RS_E_FORMAT, "object %s missing", obj);
    rs_status st = rs_h5_attr_get_str(o, name, buf, bufsize);
    H5Oclose(o);
    return st;
}

rs_status rs_h5log_partial_path(const char *path, char *buf, size_t bufsize)
{
    RS_CHECK(path && buf && bufsize, RS_E_INVAL, "h5log: NULL argument");
    const int n = snprintf(buf, bufsize, "%s.partial", path);
    RS_CHECK(n >= 0 && (size_t)n < bufsize, RS_E_INVAL, "h5log: path too long: %s", path);
    return RS_OK;
}

const char *rs_h5log_file_path(const rs_h5log *lg) { return lg->path ? lg->path : ""; }
size_t rs_h5log_n_books(const rs_h5log *lg) { return lg->n_books; }
size_t rs_h5log_n_runs(const rs_h5log *lg) { return lg->n_runs; }
uint64_t rs_h5log_tokens(const rs_h5log *lg) { return lg->tokens; }
uint64_t rs_h5log_chunk(const rs_h5log *lg) { return lg->chunk; }
const char *rs_h5log_book_id(const rs_h5log *lg, size_t book) { return lg->book_ids[book]; }
uint64_t rs_h5log_book_len(const rs_h5log *lg, size_t book) { return lg->book_len[book]; }
int64_t rs_h5log_completed(const rs_h5log *lg, size_t book) { return lg->completed[book]; }
const char *rs_h5log_policy(const rs_h5log *lg, size_t run) { return lg->policies[run]; }
uint64_t rs_h5log_window(const rs_h5log *lg, size_t run) { return lg->windows[run]; }

void rs_h5log_no_atexit(void) { H5dont_atexit(); }
