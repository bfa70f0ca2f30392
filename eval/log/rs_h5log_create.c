/* rs_h5log_create.c — a new log, and where it goes (rs_h5log.h; docs/hdf5-layout.md "File
 * states"). The file is built at "<out>.tmp.<pid>" and placed only once its skeleton is complete:
 *  - no file at <out>: link() to <out> (fails if <out> appeared meanwhile);
 *  - a regular file at <out> and force: rename() to "<out>.partial"; <out> itself is replaced only
 *    by rs_h5log_finish, so a good log survives an interrupted --force run;
 *  - anything but a regular file at <out> or "<out>.partial": refused, with or without force. */
#include "rs_h5log_impl.h"
#include "rs_check.h"
#include "rs_h5attr.h"
#include "rs_h5place.h"
#include "rs_h5vfd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

rs_status rs_h5log_check_meta_(const rs_h5log_meta *m)
{
    /* n_runs == 0: a reference-only log (`kl --policy none`): /reference alone, /runs empty */
    RS_CHECK(m && m->n_books > 0 && m->book_ids && m->book_titles && m->book_len && (m->runs || m->n_runs == 0) &&
                 m->chunk > 0 && m->tokens > 0,
             RS_E_INVAL, "h5log: incomplete description (need books, run descriptions, chunk > 0, tokens > 0)");
    /* the bounds a reader enforces: a log this library writes can always be read back */
    RS_CHECK(m->n_books <= RS_H5LOG_MAX_BOOKS && m->n_runs <= RS_H5LOG_MAX_RUNS && m->tokens <= RS_H5LOG_MAX_TOKENS &&
                 m->chunk <= RS_H5LOG_MAX_TOKENS,
             RS_E_INVAL, "h5log: %zu books, %zu runs, %llu tokens, chunk %llu: at most %u, %u, %u, %u", m->n_books,
             m->n_runs, (unsigned long long)m->tokens, (unsigned long long)m->chunk, RS_H5LOG_MAX_BOOKS,
             RS_H5LOG_MAX_RUNS, RS_H5LOG_MAX_TOKENS, RS_H5LOG_MAX_TOKENS);
    for (size_t b = 0; b < m->n_books; b++)
        RS_CHECK(m->book_ids[b] && m->book_titles[b] && m->book_len[b] <= m->tokens, RS_E_INVAL,
                 "h5log: book %zu: missing id/title or length %llu > tokens", b, (unsigned long long)m->book_len[b]);
    for (size_t r = 0; r < m->n_runs; r++)
        RS_CHECK(m->runs[r].policy && m->runs[r].mode && m->runs[r].hp_format && m->runs[r].lp_format, RS_E_INVAL,
                 "h5log: run %zu: missing policy/mode/format", r);
    RS_CHECK(m->n_moe_layers <= RS_H5LOG_MAX_MOE_LAYERS && (m->moe_layers || m->n_moe_layers == 0), RS_E_INVAL,
             "h5log: %zu MoE layers (at most %u) or their indices missing", m->n_moe_layers, RS_H5LOG_MAX_MOE_LAYERS);
    for (size_t i = 0; i < m->n_moe_layers; i++)
        RS_CHECK(m->moe_layers[i] >= 0 && (i == 0 || m->moe_layers[i] > m->moe_layers[i - 1]), RS_E_INVAL,
                 "h5log: MoE layer indices must ascend from 0 (entry %zu is %d)", i, (int)m->moe_layers[i]);
    return RS_OK;
}

void rs_h5log_command_of_(const char *command_line, char *buf, size_t n)
{
    if (!n) return;
    buf[0] = '\0';
    const char *p = command_line ? command_line : "";
    while (*p == ' ') p++;
    const char *w = p; /* the program: "replayssm" or a path ending in it */
    while (*p && *p != ' ') p++;
    const size_t wl = (size_t)(p - w);
    const char *base = w;
    for (const char *q = w; q < p; q++)
        if (*q == '/') base = q + 1;
    if ((size_t)(p - base) < 9 || strncmp(base, "replayssm", 9) != 0 || wl == 0) return;
    while (*p == ' ') p++;
    size_t k = 0;
    while (p[k] && p[k] != ' ' && ((p[k] >= 'a' && p[k] <= 'z') || p[k] == '-') && k + 1 < n) k++;
    if (p[k] && p[k] != ' ') return; /* not a command word */
    memcpy(buf, p, k);
    buf[k] = '\0';
}

static rs_status fill_from_meta_(rs_h5log *lg, const rs_h5log_meta *m)
{
    lg->tokens = m->tokens;
    lg->chunk = m->chunk;
    for (size_t b = 0; b < m->n_books; b++) {
        lg->book_len[b] = m->book_len[b];
        lg->book_ids[b] = strdup(m->book_ids[b]);
        if (!lg->book_ids[b]) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    }
    for (size_t r = 0; r < m->n_runs; r++) {
        lg->policies[r] = strdup(m->runs[r].policy);
        lg->windows[r] = m->runs[r].window;
        if (!lg->policies[r]) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    }
    if (m->n_runs > 0 && m->n_moe_layers > 0) { /* a reference-only log has no run to count */
        lg->moe_layers = (int32_t *)malloc(m->n_moe_layers * sizeof(int32_t));
        if (!lg->moe_layers) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
        memcpy(lg->moe_layers, m->moe_layers, m->n_moe_layers * sizeof(int32_t));
        lg->n_moe = m->n_moe_layers;
    }
    return RS_OK;
}

rs_status rs_h5log_build_(const char *tmp, const rs_h5log_meta *meta, rs_h5log **out)
{
    unlink(tmp); /* a leftover of this very pid can only be ours */
    rs_h5log *lg = NULL;
    RS_TRY(rs_h5log_alloc_(meta->n_books, meta->n_runs, &lg));
    rs_status st = fill_from_meta_(lg, meta);
    if (st == RS_OK) st = rs_h5log_set_path_(lg, 0, tmp);
    if (st != RS_OK) {
        rs_h5log_free_(lg);
        return st;
    }
    /* larger chunk B-tree nodes (512 entries): fewer node splits while the log grows */
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_istore_k(fcpl, 256);
    /* the driver that reserves file space before HDF5 may use it and writes nothing after a
     * failure, so a full disk or a file-size limit leaves the last flushed state (rs_h5vfd.h) */
    const hid_t fapl = rs_h5_writer_fapl();
    if (fapl < 0) {
        H5Pclose(fcpl);
        rs_h5log_free_(lg);
        return RS_E_IO;
    }
    hid_t f = H5Fcreate(tmp, H5F_ACC_EXCL, fcpl, fapl);
    /* the cause is the driver's innermost message (the open's errno, or a reservation that the
     * disk refused), read before the closes clear HDF5's error stack */
    st = f < 0 ? rs_h5_fail(RS_E_IO, "cannot create %s", tmp) : RS_OK;
    H5Pclose(fcpl);
    H5Pclose(fapl);
    if (f < 0) {
        unlink(tmp); /* what the failed create left behind is ours (tmp was unlinked above) */
        rs_h5log_free_(lg);
        return st;
    }
    lg->file = f;
    lg->writable = 1;
    lg->width = 0;
    st = rs_h5log_write_skeleton_(f, meta);
    if (st == RS_OK) st = rs_h5log_flush_(lg);
    if (st != RS_OK) {
        rs_h5log_discard_(lg);
        return st;
    }
    *out = lg;
    return RS_OK;
}

void rs_h5log_discard_(rs_h5log *lg)
{
    if (!lg) return;
    if (lg->file >= 0) H5Fclose(lg->file);
    lg->file = -1;
    if (lg->path) unlink(lg->path);
    rs_h5log_free_(lg);
}

static const char *k_exists_hint = ": use --force to replace it or --resume to continue it";

rs_status rs_h5log_create(const char *path, const rs_h5log_meta *meta, int force, rs_h5log **out)
{
    rs_h5_quiet();
    RS_CHECK(path && path[0] && out, RS_E_INVAL, "h5log: NULL argument");
    *out = NULL;
    RS_TRY(rs_h5log_check_meta_(meta));
    char partial[4096], tmp[4096];
    RS_TRY(rs_h5log_partial_path(path, partial, sizeof partial));
    RS_TRY(rs_h5_temp_name(path, tmp, sizeof tmp));
    int exists = 0, partial_exists = 0;
    RS_TRY(rs_h5_target_state(path, &exists));
    RS_TRY(rs_h5_target_state(partial, &partial_exists));
    if (!force && exists && partial_exists)
        return rs_error_set(RS_E_IO, "%s exists%s (an interrupted --force run is at %s)", path, k_exists_hint, partial);
    if (!force && exists) return rs_error_set(RS_E_IO, "%s exists%s", path, k_exists_hint);
    if (!force && partial_exists)
        return rs_error_set(RS_E_IO, "%s exists (an interrupted --force run of %s): --resume continues it, --force "
                            "replaces it", partial, path);
    if (partial_exists && rs_h5_in_use(partial))
        return rs_error_set(RS_E_IO, "%s is being written by another process: not replacing it", partial);
    rs_h5_clean_stale(path);
    rs_h5log *lg = NULL;
    RS_TRY(rs_h5log_build_(tmp, meta, &lg));
    rs_status st;
    if (exists) { /* --force over a log: the old one stays until this one is finished */
        st = rs_h5_place(tmp, partial, 1, NULL);
        if (st == RS_OK) st = rs_h5log_set_path_(lg, 0, partial);
        if (st == RS_OK) st = rs_h5log_set_path_(lg, 1, path);
    } else {
        st = rs_h5_place(tmp, path, 0, k_exists_hint);
        if (st == RS_OK) st = rs_h5log_set_path_(lg, 0, path);
        /* a stale partial of an older --force run must not be resumed in place of this log */
        if (st == RS_OK && partial_exists) unlink(partial);
    }
    if (st != RS_OK) {
        rs_h5log_discard_(lg); /* lg->path is still tmp unless the placement succeeded */
        return st;
    }
    *out = lg;
    return RS_OK;
}
