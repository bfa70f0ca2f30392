/* rs_h5log_merge.c — rs_h5log_merge (rs_h5log_merge.h): the union of logs of one configuration.
 * Reads the inputs through the log reader (rs_h5log_open, rs_h5log_read_row, ...) and writes the
 * output through the log writer (rs_h5log_create, rs_h5log_write_chunk, rs_h5log_finish), so the
 * merged file has exactly the layout of an evaluation's log; only the attribute copy of what the
 * writer does not set itself works on the HDF5 handles. */
#include "rs_h5log_impl.h"
#include "replayssm/eval/rs_h5log_merge.h"
#include "rs_check.h"
#include "rs_h5attr.h"
#include "rs_log_arith.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STR_MAX 4096

/* the configuration attributes that must agree (strings; missing in both inputs is agreement),
 * with what a difference means */
static const struct {
    const char *name, *means;
} k_same_str[] = {
    {"model_config_hash", "a different model"},
    {"model_type", "a different model"},
    {"tokenizer", "a different tokenizer"},
    {"tokenizer_sha256", "a different tokenizer file"},
    {"split", "a different split"},
    {"short_books", "a different --short"},
    {"input", "a different input kind"},
    {"input_files", "different input files"},
    {"device_kind", "a different device kind"},
    {"compute", "a different GEMM precision"},
};

typedef struct src_log {
    const char *path;
    rs_h5log *lg;
} src_log;

typedef struct merge_state {
    src_log *in;
    size_t n_in;
    /* the union: books (by id) and runs (by policy, window, seed) in order of first appearance */
    size_t n_books, n_runs;
    char **book_ids, **book_titles;
    uint64_t *book_len;
    size_t *book_src;              /* [n_books] input holding the book (the first) */
    size_t **book_at;              /* [n_in][n_books] the book's index in input i, or SIZE_MAX */
    rs_h5log_run_info *runs;       /* strings owned (run_str) */
    char (*run_str)[4][256];       /* policy, mode, hp_format, lp_format */
    size_t **run_at;               /* [n_in][n_runs] the run's index in input i, or SIZE_MAX */
} merge_state;

/* a string attribute of `obj` in log lg into buf; *found 0 (buf "") where it does not exist */
static rs_status attr_str_(const rs_h5log *lg, const char *obj, const char *name, char *buf, size_t n, int *found)
{
    buf[0] = '\0';
    hid_t o = H5Oopen(lg->file, obj, H5P_DEFAULT);
    if (o < 0) return rs_h5_fail(RS_E_FORMAT, "no object %s", obj);
    const htri_t e = H5Aexists(o, name);
    rs_status st = RS_OK;
    if (e > 0) st = rs_h5_attr_get_str(o, name, buf, n);
    H5Oclose(o);
    if (found) *found = e > 0;
    return st;
}

static rs_status attr_u64_(const rs_h5log *lg, const char *obj, const char *name, uint64_t *v)
{
    hid_t o = H5Oopen(lg->file, obj, H5P_DEFAULT);
    if (o < 0) return rs_h5_fail(RS_E_FORMAT, "no object %s", obj);
    rs_status st = rs_h5_attr_get_u64(o, name, v);
    H5Oclose(o);
    return st;
}

/* ---- the configuration ---------------------------------------------------------------------- */

static rs_status same_str_(const src_log *a, const src_log *b, const char *name, const char *means)
{
    char va[STR_MAX], vb[STR_MAX];
    int fa = 0, fb = 0;
    RS_TRY(attr_str_(a->lg, "/", name, va, sizeof va, &fa));
    RS_TRY(attr_str_(b->lg, "/", name, vb, sizeof vb, &fb));
    RS_CHECK(fa == fb && !strcmp(va, vb), RS_E_INVAL,
             "cannot merge %s with %s: %s is '%s' there and %s here (%s): logs of different configurations "
             "are not merged", b->path, a->path, name, fb ? vb : "(none)", fa ? va : "(none)", means);
    return RS_OK;
}

/* the `arithmetic` of a log, or the one its `device` line names where it predates the attribute
 * (rs_log_arith.h); *found 0 where neither says (GPU logs: `compute` covers them) */
static rs_status arith_of_(const src_log *l, char *buf, size_t n, int *found)
{
    RS_TRY(attr_str_(l->lg, "/", "arithmetic", buf, n, found));
    if (*found) return RS_OK;
    char dev[STR_MAX];
    int fd = 0;
    RS_TRY(attr_str_(l->lg, "/", "device", dev, sizeof dev, &fd));
    *found = fd && rs_log_arith_from_device(dev, buf, n);
    return RS_OK;
}

static rs_status same_config_(const src_log *a, const src_log *b)
{
    for (size_t k = 0; k < sizeof k_same_str / sizeof k_same_str[0]; k++)
        RS_TRY(same_str_(a, b, k_same_str[k].name, k_same_str[k].means));
    RS_CHECK(rs_h5log_tokens(a->lg) == rs_h5log_tokens(b->lg), RS_E_INVAL,
             "cannot merge %s with %s: tokens is %llu there and %llu here (a different --tokens): logs of different "
             "configurations are not merged", b->path, a->path, (unsigned long long)rs_h5log_tokens(b->lg),
             (unsigned long long)rs_h5log_tokens(a->lg));
    RS_CHECK(rs_h5log_chunk(a->lg) == rs_h5log_chunk(b->lg), RS_E_INVAL,
             "cannot merge %s with %s: chunk is %llu there and %llu here (a different --chunk): logs of different "
             "configurations are not merged", b->path, a->path, (unsigned long long)rs_h5log_chunk(b->lg),
             (unsigned long long)rs_h5log_chunk(a->lg));
    char xa[STR_MAX], xb[STR_MAX];
    int fa = 0, fb = 0;
    RS_TRY(arith_of_(a, xa, sizeof xa, &fa));
    RS_TRY(arith_of_(b, xb, sizeof xb, &fb));
    RS_CHECK(fa == fb && !strcmp(xa, xb), RS_E_INVAL,
             "cannot merge %s with %s: arithmetic is '%s' there and '%s' here (other GEMM or attention sums): logs "
             "of different configurations are not merged", b->path, a->path, fb ? xb : "(none)", fa ? xa : "(none)");
    char nf[64];
    RS_TRY(attr_str_(a->lg, "/", "input_files", nf, sizeof nf, NULL));
    const long files = nf[0] ? strtol(nf, NULL, 10) : 0;
    for (long i = 0; i < files && i < 100000; i++) { /* the input files' digests (text / token-id inputs) */
        char key[48];
        snprintf(key, sizeof key, "input_sha256_%ld", i);
        RS_TRY(same_str_(a, b, key, "different input file contents"));
    }
    return RS_OK;
}

/* ---- the union ------------------------------------------------------------------------------- */

static size_t find_book_(const merge_state *m, const char *id)
{
    for (size_t b = 0; b < m->n_books; b++)
        if (!strcmp(m->book_ids[b], id)) return b;
    return SIZE_MAX;
}

static rs_status run_key_(const rs_h5log *lg, size_t r, char *policy, size_t n, uint64_t *window, uint64_t *seed)
{
    char obj[32];
    snprintf(obj, sizeof obj, "/runs/run%02zu", r);
    snprintf(policy, n, "%s", rs_h5log_policy(lg, r));
    *window = rs_h5log_window(lg, r);
    return attr_u64_(lg, obj, "seed", seed);
}

static rs_status build_union_(merge_state *m)
{
    size_t cap_b = 0, cap_r = 0;
    for (size_t i = 0; i < m->n_in; i++) {
        cap_b += rs_h5log_n_books(m->in[i].lg);
        cap_r += rs_h5log_n_runs(m->in[i].lg);
    }
    m->book_ids = (char **)calloc(cap_b, sizeof(char *));
    m->book_titles = (char **)calloc(cap_b, sizeof(char *));
    m->book_len = (uint64_t *)calloc(cap_b, sizeof(uint64_t));
    m->book_src = (size_t *)calloc(cap_b, sizeof(size_t));
    m->runs = (rs_h5log_run_info *)calloc(cap_r + 1, sizeof *m->runs);
    m->run_str = calloc(cap_r + 1, sizeof *m->run_str);
    m->book_at = (size_t **)calloc(m->n_in, sizeof(size_t *));
    m->run_at = (size_t **)calloc(m->n_in, sizeof(size_t *));
    RS_CHECK(m->book_ids && m->book_titles && m->book_len && m->book_src && m->runs && m->run_str && m->book_at &&
                 m->run_at, RS_E_NOMEM, "merge: out of memory");
    for (size_t i = 0; i < m->n_in; i++) {
        const rs_h5log *lg = m->in[i].lg;
        const size_t nb = rs_h5log_n_books(lg);
        char **titles = (char **)calloc(nb, sizeof(char *));
        RS_CHECK(titles, RS_E_NOMEM, "merge: out of memory");
        rs_status st = rs_h5_ds_read_vlen_strings(lg->file, "books/title", nb, titles);
        for (size_t b = 0; st == RS_OK && b < nb; b++) {
            const char *id = rs_h5log_book_id(lg, b);
            if (rs_h5log_completed(lg, b) != (int64_t)rs_h5log_book_len(lg, b))
                st = rs_error_set(RS_E_INVAL,
                                  "cannot merge %s: book %s has %lld of %llu positions committed (an interrupted run: "
                                  "finish it with --resume first)", m->in[i].path, id,
                                  (long long)rs_h5log_completed(lg, b), (unsigned long long)rs_h5log_book_len(lg, b));
            else if (find_book_(m, id) == SIZE_MAX) {
                const size_t k = m->n_books++;
                m->book_ids[k] = strdup(id);
                m->book_titles[k] = strdup(titles[b] ? titles[b] : "");
                m->book_len[k] = rs_h5log_book_len(lg, b);
                m->book_src[k] = i;
                if (!m->book_ids[k] || !m->book_titles[k]) st = rs_error_set(RS_E_NOMEM, "merge: out of memory");
            } else {
                const size_t k = find_book_(m, id);
                if (m->book_len[k] != rs_h5log_book_len(lg, b))
                    st = rs_error_set(RS_E_INVAL, "cannot merge %s with %s: book %s has %llu positions there and %llu here",
                                      m->in[i].path, m->in[m->book_src[k]].path, id,
                                      (unsigned long long)rs_h5log_book_len(lg, b), (unsigned long long)m->book_len[k]);
            }
        }
        for (size_t b = 0; b < nb; b++) free(titles[b]);
        free(titles);
        RS_TRY(st);
        const size_t nr = rs_h5log_n_runs(lg);
        for (size_t r = 0; r < nr; r++) {
            char pol[256];
            uint64_t w, s;
            RS_TRY(run_key_(lg, r, pol, sizeof pol, &w, &s));
            size_t k = 0;
            while (k < m->n_runs && !(m->runs[k].window == w && m->runs[k].seed == s && !strcmp(m->runs[k].policy, pol)))
                k++;
            if (k < m->n_runs) continue;
            char obj[32];
            snprintf(obj, sizeof obj, "/runs/run%02zu", r);
            snprintf(m->run_str[k][0], sizeof m->run_str[k][0], "%s", pol);
            RS_TRY(attr_str_(lg, obj, "mode", m->run_str[k][1], sizeof m->run_str[k][1], NULL));
            RS_TRY(attr_str_(lg, obj, "hp_format", m->run_str[k][2], sizeof m->run_str[k][2], NULL));
            RS_TRY(attr_str_(lg, obj, "lp_format", m->run_str[k][3], sizeof m->run_str[k][3], NULL));
            /* the formats' fields (hp_base, ...) are copied with the inputs' other run attributes */
            m->runs[k] = (rs_h5log_run_info){m->run_str[k][0], m->run_str[k][1], m->run_str[k][2], m->run_str[k][3], w, s,
                                             NULL, NULL};
            m->n_runs++;
        }
    }
    /* where each book and run is in each input */
    for (size_t i = 0; i < m->n_in; i++) {
        const rs_h5log *lg = m->in[i].lg;
        m->book_at[i] = (size_t *)malloc((m->n_books + 1) * sizeof(size_t));
        m->run_at[i] = (size_t *)malloc((m->n_runs + 1) * sizeof(size_t));
        RS_CHECK(m->book_at[i] && m->run_at[i], RS_E_NOMEM, "merge: out of memory");
        for (size_t b = 0; b < m->n_books; b++) m->book_at[i][b] = SIZE_MAX;
        for (size_t r = 0; r < m->n_runs; r++) m->run_at[i][r] = SIZE_MAX;
        for (size_t b = 0; b < rs_h5log_n_books(lg); b++) m->book_at[i][find_book_(m, rs_h5log_book_id(lg, b))] = b;
        for (size_t r = 0; r < rs_h5log_n_runs(lg); r++) {
            char pol[256];
            uint64_t w, s;
            RS_TRY(run_key_(lg, r, pol, sizeof pol, &w, &s));
            for (size_t k = 0; k < m->n_runs; k++)
                if (m->runs[k].window == w && m->runs[k].seed == s && !strcmp(m->runs[k].policy, pol)) m->run_at[i][k] = r;
        }
    }
    /* no holes */
    for (size_t b = 0; b < m->n_books; b++)
        for (size_t r = 0; r < m->n_runs; r++) {
            size_t i = 0;
            while (i < m->n_in && (m->book_at[i][b] == SIZE_MAX || m->run_at[i][r] == SIZE_MAX)) i++;
            RS_CHECK(i < m->n_in, RS_E_INVAL,
                     "cannot merge: no input has run %s (L=%llu, seed %llu) for book %s, so the merged log would have a "
                     "hole (every input's runs must cover every book it is merged with)",
                     m->runs[r].policy, (unsigned long long)m->runs[r].window, (unsigned long long)m->runs[r].seed,
                     m->book_ids[b]);
        }
    return RS_OK;
}

/* ---- attributes the writer does not set ------------------------------------------------------ */

typedef struct copy_ctx {
    hid_t dst;
    int run_group; /* skip summary_* (the merged log's summaries are its own) */
    rs_status st;
} copy_ctx;

static herr_t copy_attr_(hid_t loc, const char *name, const H5A_info_t *info, void *op)
{
    (void)info;
    copy_ctx *c = (copy_ctx *)op;
    if (!strcmp(name, "first_start_time") || (c->run_group && !strncmp(name, "summary_", 8))) return 0;
    if (H5Aexists(c->dst, name) > 0) return 0;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1, s = a >= 0 ? H5Aget_space(a) : -1;
    const hssize_t np = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
    const size_t sz = t >= 0 ? H5Tget_size(t) : 0;
    void *buf = NULL;
    int ok = a >= 0 && t >= 0 && s >= 0 && np >= 0 && sz > 0 && (uint64_t)np * sz <= (16u << 20) &&
             (buf = calloc((size_t)np + 1, sz)) != NULL && H5Aread(a, t, buf) >= 0;
    if (ok) {
        hid_t d = H5Acreate2(c->dst, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
        ok = d >= 0 && H5Awrite(d, t, buf) >= 0;
        if (d >= 0) H5Aclose(d);
        if (H5Tdetect_class(t, H5T_VLEN) > 0 || H5Tis_variable_str(t) > 0) H5Dvlen_reclaim(t, s, H5P_DEFAULT, buf);
    }
    free(buf);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    if (!ok) {
        c->st = rs_h5_fail(RS_E_IO, "merge: cannot copy attribute %s", name);
        return -1;
    }
    return 0;
}

static rs_status copy_attrs_(hid_t src_file, hid_t dst_file, const char *obj, int run_group)
{
    hid_t s = H5Oopen(src_file, obj, H5P_DEFAULT), d = H5Oopen(dst_file, obj, H5P_DEFAULT);
    copy_ctx c = {d, run_group, RS_OK};
    if (s < 0 || d < 0) c.st = rs_h5_fail(RS_E_IO, "merge: cannot open %s", obj);
    else if (H5Aiterate2(s, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_attr_, &c) < 0 && c.st == RS_OK)
        c.st = rs_h5_fail(RS_E_IO, "merge: cannot read the attributes of %s", obj);
    if (s >= 0) H5Oclose(s);
    if (d >= 0) H5Oclose(d);
    return c.st;
}

/* ---- the data -------------------------------------------------------------------------------- */

typedef struct book_buf {
    size_t n;
    int32_t *tok, *top, *tok2, *top2;
    double *nref, *nref2, *d, *d2; /* d: [R][3][n] kl, nll, dp */
    uint8_t *ag, *ag2;             /* [R][n] */
    int64_t *rd;                   /* [2][RS_H5LOG_MAX_MOE_LAYERS] one run's routing counts */
} book_buf;

static rs_status read_ref_(const rs_h5log *lg, size_t b, size_t n, int32_t *tok, int32_t *top, double *nll)
{
    RS_TRY(rs_h5log_read_row(lg, -1, "next_token", b, n, tok));
    RS_TRY(rs_h5log_read_row(lg, -1, "top1", b, n, top));
    return rs_h5log_read_row(lg, -1, "nll", b, n, nll);
}

static rs_status read_run_(const rs_h5log *lg, size_t r, size_t b, size_t n, double *d, uint8_t *ag)
{
    RS_TRY(rs_h5log_read_row(lg, (long)r, "kl", b, n, d));
    RS_TRY(rs_h5log_read_row(lg, (long)r, "nll", b, n, d + n));
    RS_TRY(rs_h5log_read_row(lg, (long)r, "dp", b, n, d + 2 * n));
    return rs_h5log_read_row(lg, (long)r, "top1_agree", b, n, ag);
}

/* first position where two arrays differ bit for bit (n if none) */
static size_t first_diff_(const void *a, const void *b, size_t n, size_t elem)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * elem, (const char *)b + i * elem, elem)) return i;
    return n;
}

/* book b of the union into the output (book index b), checking every duplicate */
static rs_status merge_book_(const merge_state *m, rs_h5log *out, size_t b, book_buf *w, rs_h5log_run_chunk *rc)
{
    const size_t n = (size_t)m->book_len[b], R = m->n_runs, s0 = m->book_src[b];
    RS_TRY(read_ref_(m->in[s0].lg, m->book_at[s0][b], n, w->tok, w->top, w->nref));
    for (size_t i = s0 + 1; i < m->n_in; i++) {
        if (m->book_at[i][b] == SIZE_MAX) continue;
        RS_TRY(read_ref_(m->in[i].lg, m->book_at[i][b], n, w->tok2, w->top2, w->nref2));
        size_t p = first_diff_(w->tok, w->tok2, n, sizeof(int32_t));
        RS_CHECK(p == n, RS_E_INVAL, "cannot merge %s with %s: book %s has other tokens (next token at position %zu differs)",
                 m->in[i].path, m->in[s0].path, m->book_ids[b], p);
        p = first_diff_(w->nref, w->nref2, n, sizeof(double));
        if (p == n) p = first_diff_(w->top, w->top2, n, sizeof(int32_t));
        RS_CHECK(p == n, RS_E_INVAL,
                 "cannot merge %s with %s: the fp32 reference of book %s differs at position %zu (another model with "
                 "the same config.json, or other arithmetic: threads, BLAS kernel, device)",
                 m->in[i].path, m->in[s0].path, m->book_ids[b], p);
    }
    for (size_t r = 0; r < R; r++) {
        size_t src = SIZE_MAX;
        for (size_t i = 0; i < m->n_in; i++) {
            if (m->book_at[i][b] == SIZE_MAX || m->run_at[i][r] == SIZE_MAX) continue;
            if (src == SIZE_MAX) {
                src = i;
                RS_TRY(read_run_(m->in[i].lg, m->run_at[i][r], m->book_at[i][b], n, w->d + 3 * r * n, w->ag + r * n));
                int64_t p;
                int32_t L, H;
                RS_TRY(rs_h5log_get_nonfinite(m->in[i].lg, m->run_at[i][r], m->book_at[i][b], &p, &L, &H));
                if (p >= 0) RS_TRY(rs_h5log_set_nonfinite(out, r, b, p, L, H));
                if (out->n_moe > 0 && m->in[i].lg->n_moe == out->n_moe) {
                    RS_TRY(rs_h5log_get_route_diff(m->in[i].lg, m->run_at[i][r], m->book_at[i][b], w->rd, w->rd + out->n_moe));
                    RS_TRY(rs_h5log_set_route_diff(out, r, b, w->rd, w->rd + out->n_moe));
                }
                continue;
            }
            RS_TRY(read_run_(m->in[i].lg, m->run_at[i][r], m->book_at[i][b], n, w->d2, w->ag2));
            size_t p = first_diff_(w->d + 3 * r * n, w->d2, 3 * n, sizeof(double)); /* kl, nll, dp */
            p = p < 3 * n ? p % n : first_diff_(w->ag + r * n, w->ag2, n, 1);
            RS_CHECK(p == n, RS_E_INVAL, "cannot merge %s with %s: run %s (L=%llu) of book %s differs at position %zu",
                     m->in[i].path, m->in[src].path, m->runs[r].policy, (unsigned long long)m->runs[r].window,
                     m->book_ids[b], p);
        }
    }
    const size_t C = (size_t)rs_h5log_chunk(out);
    for (size_t pos = 0; pos < n; pos += C) {
        const size_t k = n - pos < C ? n - pos : C;
        for (size_t r = 0; r < R; r++) {
            rc[r].kl = w->d + 3 * r * n + pos;
            rc[r].nll = w->d + (3 * r + 1) * n + pos;
            rc[r].dp = w->d + (3 * r + 2) * n + pos;
            rc[r].agree = w->ag + r * n + pos;
        }
        RS_TRY(rs_h5log_write_chunk(out, b, pos, k, w->tok + pos, w->nref + pos, w->top + pos, R ? rc : NULL));
    }
    return RS_OK;
}

static void book_buf_free_(book_buf *w)
{
    free(w->tok), free(w->top), free(w->tok2), free(w->top2), free(w->nref), free(w->nref2);
    free(w->d), free(w->d2), free(w->ag), free(w->ag2), free(w->rd);
}

static rs_status book_buf_alloc_(book_buf *w, size_t n, size_t R)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    w->tok = malloc(n * sizeof(int32_t)), w->top = malloc(n * sizeof(int32_t));
    w->tok2 = malloc(n * sizeof(int32_t)), w->top2 = malloc(n * sizeof(int32_t));
    w->nref = malloc(n * sizeof(double)), w->nref2 = malloc(n * sizeof(double));
    w->d = malloc((3 * R * n + 1) * sizeof(double)), w->d2 = malloc(3 * n * sizeof(double));
    w->ag = malloc(R * n + 1), w->ag2 = malloc(n);
    w->rd = malloc(2 * RS_H5LOG_MAX_MOE_LAYERS * sizeof(int64_t));
    RS_CHECK(w->tok && w->top && w->tok2 && w->top2 && w->nref && w->nref2 && w->d && w->d2 && w->ag && w->ag2 && w->rd,
             RS_E_NOMEM, "merge: out of memory (%zu positions x %zu runs)", n, R);
    return RS_OK;
}

/* ---- provenance: model files, /provenance attributes, the history ---------------------------- */

/* The inputs' histories, oldest input first, with entries of the same command line and host folded
 * into one (earliest start, latest end; a status other than "complete" wins, so a killed item of an
 * MPI job shows): an MPI job's shards, one per item, give one entry per host instead of one per
 * item. Strings point into the inputs' handles. At most RS_H5LOG_MAX_HISTORY - 1 entries (the
 * writer appends this merge): the newest are kept. */
static rs_status merged_history_(const merge_state *m, rs_h5log_history **out, size_t *n_out)
{
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < m->n_in; i++) cap += m->in[i].lg->n_hist;
    rs_h5log_history *h = (rs_h5log_history *)calloc(cap + 1, sizeof *h);
    RS_CHECK(h, RS_E_NOMEM, "merge: out of memory (%zu history entries)", cap);
    for (size_t i = 0; i < m->n_in; i++) {
        const rs_h5log *lg = m->in[i].lg;
        for (size_t e = 0; e < lg->n_hist; e++) {
            char *const *v = lg->hist[e];
            const char *cmd = v[0] ? v[0] : "", *host = v[4] ? v[4] : "";
            size_t k = 0;
            while (k < n && !(strcmp(h[k].command_line, cmd) == 0 && strcmp(h[k].host, host) == 0)) k++;
            const char *start = v[1] ? v[1] : "", *end = v[2] ? v[2] : "", *status = v[3] ? v[3] : "";
            if (k == n) {
                h[n++] = (rs_h5log_history){cmd, start, end, status, host};
                continue;
            }
            if (start[0] && (!h[k].start_time[0] || strcmp(start, h[k].start_time) < 0)) h[k].start_time = start;
            if (strcmp(end, h[k].end_time) > 0) h[k].end_time = end; /* ISO 8601 UTC sorts as text */
            if (strcmp(status, "complete") != 0) h[k].status = status;
        }
    }
    const size_t max = RS_H5LOG_MAX_HISTORY - 1;
    if (n > max) {
        memmove(h, h + (n - max), max * sizeof *h);
        n = max;
    }
    *out = h;
    *n_out = n;
    return RS_OK;
}

/* ---- the entry point ------------------------------------------------------------------------- */

static rs_status write_output_(merge_state *m, const char *out_path, const rs_h5log_merge_opts *o)
{
    const rs_h5log *f = m->in[0].lg;
    char s[13][STR_MAX];
    static const char *const names[13] = {"tool_version", "git_commit", "command_line", "start_time", "model_path",
                                          "data_path", "tokenizer_file", "tokenizer_sha256", "model_config_hash",
                                          "model_type", "tokenizer", "split", "short_books"};
    for (int k = 0; k < 13; k++) RS_TRY(attr_str_(f, "/", names[k], s[k], sizeof s[k], NULL));
    for (size_t i = 1; i < m->n_in; i++) { /* the earliest start (ISO 8601 UTC sorts as text) */
        char t[STR_MAX];
        RS_TRY(attr_str_(m->in[i].lg, "/", "start_time", t, sizeof t, NULL));
        if (t[0] && (!s[3][0] || strcmp(t, s[3]) < 0)) snprintf(s[3], sizeof s[3], "%s", t);
    }
    rs_h5log_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.tool_version = s[0], meta.git_commit = s[1];
    meta.command_line = o && o->command_line ? o->command_line : s[2];
    meta.start_time = s[3], meta.model_path = s[4], meta.data_path = s[5], meta.tokenizer_file = s[6];
    meta.tokenizer_sha256 = s[7], meta.model_config_hash = s[8], meta.model_type = s[9], meta.tokenizer = s[10];
    meta.split = s[11], meta.short_books = s[12];
    meta.tokens = rs_h5log_tokens(f), meta.chunk = rs_h5log_chunk(f);
    meta.n_books = m->n_books;
    meta.book_ids = (const char *const *)m->book_ids;
    meta.book_titles = (const char *const *)m->book_titles;
    meta.book_len = m->book_len;
    meta.n_runs = m->n_runs;
    meta.runs = m->runs;
    /* MoE routing counts: the layers of the inputs that record them (one model: the same layers) */
    for (size_t i = 0; i < m->n_in; i++) {
        const rs_h5log *x = m->in[i].lg;
        if (x->n_moe == 0) continue;
        if (meta.n_moe_layers == 0) {
            meta.n_moe_layers = x->n_moe;
            meta.moe_layers = x->moe_layers;
        }
        RS_CHECK(x->n_moe == meta.n_moe_layers &&
                     !memcmp(x->moe_layers, meta.moe_layers, x->n_moe * sizeof(int32_t)),
                 RS_E_INVAL, "cannot merge %s: it records routing for other MoE layers than the other inputs",
                 m->in[i].path);
    }
    /* the model files: equal in every input (model_config_hash, compared, is their manifest's
     * digest); /provenance's attributes (host, CPU, BLAS, compiler) from the first input below */
    meta.n_files = f->n_files;
    meta.files = f->files;
    rs_h5log_history *hist = NULL;
    RS_TRY(merged_history_(m, &hist, &meta.n_history));
    meta.history = hist;
    char host[256] = "unknown";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    meta.host = host;
    rs_h5log *out = NULL;
    rs_status st = rs_h5log_create(out_path, &meta, o ? o->force : 0, &out);
    free(hist);
    if (st != RS_OK) return st;
    /* written by merge, whatever command line it records (an MPI job passes its kl line): a
     * partial of an interrupted merge --force is never continued by kl --resume */
    st = rs_h5_attr_set_str(out->file, "command", "merge");
    if (st == RS_OK) st = copy_attrs_(f->file, out->file, "/", 0);
    if (st == RS_OK && H5Lexists(f->file, "provenance", H5P_DEFAULT) > 0) /* a version 1 input has none */
        st = copy_attrs_(f->file, out->file, "/provenance", 0);
    for (size_t r = 0; st == RS_OK && r < m->n_runs; r++) {
        char obj[32], src[32];
        size_t i = 0;
        while (m->run_at[i][r] == SIZE_MAX) i++; /* the first input with this run */
        snprintf(obj, sizeof obj, "/runs/run%02zu", r);
        snprintf(src, sizeof src, "/runs/run%02zu", m->run_at[i][r]);
        hid_t sg = H5Oopen(m->in[i].lg->file, src, H5P_DEFAULT), dg = H5Oopen(out->file, obj, H5P_DEFAULT);
        copy_ctx c = {dg, 1, RS_OK};
        if (sg < 0 || dg < 0) c.st = rs_h5_fail(RS_E_IO, "merge: cannot open %s", obj);
        else if (H5Aiterate2(sg, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_attr_, &c) < 0 && c.st == RS_OK)
            c.st = rs_h5_fail(RS_E_IO, "merge: cannot read the attributes of %s", src);
        if (sg >= 0) H5Oclose(sg);
        if (dg >= 0) H5Oclose(dg);
        st = c.st;
    }
    size_t maxn = 1;
    for (size_t b = 0; b < m->n_books; b++)
        if (m->book_len[b] > maxn) maxn = (size_t)m->book_len[b];
    book_buf w;
    rs_h5log_run_chunk *rc = (rs_h5log_run_chunk *)calloc(m->n_runs + 1, sizeof *rc);
    if (st == RS_OK) st = rc ? book_buf_alloc_(&w, maxn, m->n_runs) : rs_error_set(RS_E_NOMEM, "merge: out of memory");
    else memset(&w, 0, sizeof w);
    for (size_t b = 0; st == RS_OK && b < m->n_books; b++) st = merge_book_(m, out, b, &w, rc);
    book_buf_free_(&w);
    free(rc);
    rs_kl_summary *sums = (rs_kl_summary *)calloc(m->n_runs + 1, sizeof *sums);
    if (st == RS_OK && !sums) st = rs_error_set(RS_E_NOMEM, "merge: out of memory");
    for (size_t r = 0; st == RS_OK && r < m->n_runs; r++) st = rs_h5log_summarize(out, r, &sums[r]);
    char end[32];
    if (o && o->end_time) snprintf(end, sizeof end, "%s", o->end_time);
    else {
        const time_t now = time(NULL);
        struct tm tmv;
        gmtime_r(&now, &tmv);
        strftime(end, sizeof end, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    }
    if (st == RS_OK) st = rs_h5log_finish(out, end, m->n_runs ? sums : NULL);
    free(sums);
    if (st != RS_OK) {
        rs_h5log_discard_(out); /* nothing left at out_path (or at its .partial with force) */
        return st;
    }
    return rs_h5log_close(out);
}

rs_status rs_h5log_merge(const char *const *inputs, size_t n, const char *out_path, const rs_h5log_merge_opts *opts)
{
    rs_h5_quiet();
    RS_CHECK(inputs && n > 0 && out_path && out_path[0], RS_E_INVAL, "merge: no inputs or no output path");
    for (size_t i = 0; i < n; i++) {
        RS_CHECK(inputs[i] && inputs[i][0], RS_E_INVAL, "merge: input %zu has no path", i);
        RS_CHECK(strcmp(inputs[i], out_path), RS_E_INVAL, "merge: the output %s is also an input", out_path);
        for (size_t j = 0; j < i; j++)
            RS_CHECK(strcmp(inputs[i], inputs[j]), RS_E_INVAL, "merge: %s is given twice", inputs[i]);
    }
    merge_state m;
    memset(&m, 0, sizeof m);
    m.in = (src_log *)calloc(n, sizeof *m.in);
    RS_CHECK(m.in, RS_E_NOMEM, "merge: out of memory");
    m.n_in = n;
    rs_status st = RS_OK;
    for (size_t i = 0; st == RS_OK && i < n; i++) {
        m.in[i].path = inputs[i];
        st = rs_h5log_open(inputs[i], 0, NULL, &m.in[i].lg);
        if (st != RS_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", rs_last_error());
            st = rs_error_set(st, "cannot merge %s: %s", inputs[i], why);
        }
    }
    for (size_t i = 1; st == RS_OK && i < n; i++) st = same_config_(&m.in[0], &m.in[i]);
    if (st == RS_OK) st = build_union_(&m);
    if (st == RS_OK) st = write_output_(&m, out_path, opts);
    for (size_t i = 0; i < n; i++) {
        rs_h5log_close(m.in[i].lg);
        free(m.book_at ? m.book_at[i] : NULL);
        free(m.run_at ? m.run_at[i] : NULL);
    }
    for (size_t b = 0; b < m.n_books; b++) {
        free(m.book_ids[b]);
        free(m.book_titles[b]);
    }
    free(m.book_ids), free(m.book_titles), free(m.book_len), free(m.book_src), free(m.runs), free(m.run_str);
    free(m.book_at), free(m.run_at), free(m.in);
    return st;
}
