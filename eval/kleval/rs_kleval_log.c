/* rs_kleval_log.c — the evaluation's HDF5 log: the root attributes (provenance and the
 * configuration that --resume compares), creating or resuming it, and at the end the
 * summaries computed from the stored per-position arrays (so quantiles are exact and a resumed
 * log is summarised over all its positions, not only over those computed in this process). */
#define _XOPEN_SOURCE 700 /* realpath (XSI), with the project's _POSIX_C_SOURCE 200809L */
#include "rs_kleval_impl.h"
#include "log/rs_log_arith.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/quant/rs_format.h"
#include "rs_check.h"
#include "input/rs_input.h"
#include "log/rs_provenance.h"

#define RS_KLEVAL_FMT_MAX 48
#define RS_KLEVAL_LOG_EXTRA 9 /* device_kind, compute, device, batch, arithmetic, input, invalid_utf8, input_files,
                                 model_weights; + 2 per input file */
#define RS_KLEVAL_KEY_MAX 40

/* FNV-1a 64 of a file's bytes ("fnv1a64:<16 hex>"); 0 if unreadable (or not a regular file of at
 * most 64 MiB, as config.json is loaded) */
static int hash_file_(const char *path, char *out, size_t n)
{
    FILE *f = NULL;
    if (rs_input_fopen(path, (size_t)64 << 20, &f, NULL) != RS_OK) {
        rs_error_clear();
        return 0;
    }
    uint64_t h = 1469598103934665603ULL;
    int c;
    while ((c = fgetc(f)) != EOF) {
        h ^= (uint64_t)(unsigned char)c;
        h *= 1099511628211ULL;
    }
    fclose(f);
    snprintf(out, n, "fnv1a64:%016llx", (unsigned long long)h);
    return 1;
}

/* the root description of the log; the arrays are allocated here, freed by meta_free_ */
typedef struct log_meta {
    rs_h5log_meta hm;
    const char **bid, **btitle;
    uint64_t *blen;
    rs_h5log_run_info *ri;
    char (*fmt)[2][RS_KLEVAL_FMT_MAX]; /* [R] hp, lp format strings */
    char cfg_hash[64];
    rs_h5log_extra *extra;             /* [RS_KLEVAL_LOG_EXTRA + 2 n_input_files] */
    char (*keys)[RS_KLEVAL_KEY_MAX];   /* [2 n_input_files] input_file_<i>, input_sha256_<i> */
    char n_files[24], batch[24];
    char weights[64];                  /* `model_weights` of a random-weight run */
    char arith[128];                   /* the `arithmetic` attribute (rs_log_arith.h) */
    rs_prov_files pf;                  /* the model folder's files and digests */
    rs_prov_env env;                   /* host, CPU, BLAS, compiler (and GPU) */
    char *abs_model, *abs_data, *abs_tok; /* absolute paths (realpath), NULL: as given */
    char **abs_in;                     /* [n_input_files] */
    size_t n_abs_in;
} log_meta;

/* realpath of p, or NULL (then the path is recorded as given) */
static char *abs_(const char *p)
{
    return p && p[0] ? realpath(p, NULL) : NULL;
}

static void meta_free_(log_meta *m)
{
    free(m->bid);
    free(m->btitle);
    free(m->blen);
    free(m->ri);
    free(m->fmt);
    free(m->extra);
    free(m->keys);
    rs_prov_files_free(&m->pf);
    free(m->abs_model);
    free(m->abs_data);
    free(m->abs_tok);
    for (size_t i = 0; m->abs_in && i < m->n_abs_in; i++) free(m->abs_in[i]);
    free(m->abs_in);
}

/* the model files' digests on worker threads (rs_prov_hash_start); --resume takes unchanged
 * files' digests (same size and mtime) from the log it continues instead of reading them again */
static rs_status hash_start_(const rs_kleval *ev, rs_prov_job **job)
{
    const rs_kleval_config *c = &ev->cfg;
    rs_h5log_file_hash *cache = NULL;
    size_t n_cache = 0;
    if (c->output == RS_KLEVAL_OUT_RESUME) (void)rs_h5log_read_files(c->out_path, &cache, &n_cache);
    /* the signal flag stops the workers between blocks, so Ctrl-C never waits for a checkpoint */
    const rs_status st = rs_prov_hash_start_stoppable(c->model_dir, cache, n_cache, 0, c->cancel, job);
    rs_h5log_files_free(cache, n_cache);
    return st;
}

rs_status rs_kleval_log_hash_start(rs_kleval *ev)
{
    if (ev->prov) return RS_OK;
    const rs_status st = hash_start_(ev, &ev->prov);
    if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, st, NULL);
    return RS_OK;
}

static rs_status meta_build_(const rs_kleval *ev, log_meta *m, rs_prov_files *pf)
{
    const rs_kleval_config *c = &ev->cfg;
    const size_t B = ev->res.n_books, R = c->n_runs;
    memset(m, 0, sizeof *m);
    snprintf(m->cfg_hash, sizeof m->cfg_hash, "unknown");
    char cfgp[4096];
    snprintf(cfgp, sizeof cfgp, "%s/config.json", c->model_dir);
    hash_file_(cfgp, m->cfg_hash, sizeof m->cfg_hash); /* format 1's model_config_hash (resume of such logs) */
    m->pf = *pf; /* every model file's SHA-256 (rs_kleval_log_open joined the hashing) */
    memset(pf, 0, sizeof *pf);
    rs_prov_env_get(&m->env, strcmp(c->device_kind, "cpu") ? ev->describe : NULL);
    m->abs_model = abs_(c->model_dir);
    m->abs_data = c->input == RS_KLEVAL_INPUT_PG19 ? abs_(c->data_dir) : NULL;
    m->abs_tok = abs_(ev->tok.path);
    m->bid = (const char **)calloc(B, sizeof(char *));
    m->btitle = (const char **)calloc(B, sizeof(char *));
    m->blen = (uint64_t *)calloc(B, sizeof(uint64_t));
    m->ri = (rs_h5log_run_info *)calloc(R + 1, sizeof *m->ri); /* + 1: R may be 0 */
    m->fmt = calloc(R + 1, sizeof *m->fmt);
    const size_t nf = c->input == RS_KLEVAL_INPUT_PG19 ? 0 : c->n_input_files;
    m->extra = (rs_h5log_extra *)calloc(RS_KLEVAL_LOG_EXTRA + 2 * nf, sizeof *m->extra);
    m->keys = calloc(2 * nf + 1, sizeof *m->keys);
    m->abs_in = (char **)calloc(nf + 1, sizeof(char *));
    RS_CHECK(m->bid && m->btitle && m->blen && m->ri && m->fmt && m->extra && m->keys && m->abs_in, RS_E_NOMEM,
             "out of memory");
    m->n_abs_in = nf;
    for (size_t i = 0; i < nf; i++) m->abs_in[i] = abs_(ev->files[i].path);
    for (size_t b = 0; b < B; b++) {
        m->bid[b] = ev->books[b].id;
        m->btitle[b] = ev->books[b].title;
        m->blen[b] = ev->books[b].positions;
    }
    for (size_t r = 0; r < R; r++) {
        const rs_run_spec *run = &ev->runs[r];
        if (rs_format_print(&run->policy.hp, m->fmt[r][0], RS_KLEVAL_FMT_MAX) != RS_OK)
            snprintf(m->fmt[r][0], RS_KLEVAL_FMT_MAX, "?");
        if (rs_format_print(&run->policy.lp, m->fmt[r][1], RS_KLEVAL_FMT_MAX) != RS_OK)
            snprintf(m->fmt[r][1], RS_KLEVAL_FMT_MAX, "?");
        m->ri[r].policy = run->name;
        m->ri[r].mode = rs_policy_mode_name(run->policy.mode);
        m->ri[r].hp_format = m->fmt[r][0];
        m->ri[r].lp_format = m->fmt[r][1];
        m->ri[r].window = run->window;
        m->ri[r].seed = run->seed;
        m->ri[r].hp = &run->policy.hp; /* the formats' fields as attributes (hp_base, hp_rounding, ...) */
        m->ri[r].lp = &run->policy.lp;
    }
    rs_h5log_meta *h = &m->hm;
    h->tool_version = c->tool_version;
    h->git_commit = c->git_commit;
    h->command_line = c->command_line;
    h->start_time = ev->start_time;
    h->model_path = m->abs_model ? m->abs_model : c->model_dir;
    const int pg19 = c->input == RS_KLEVAL_INPUT_PG19; /* other inputs have no data folder or split */
    h->data_path = pg19 ? (m->abs_data ? m->abs_data : c->data_dir) : "";
    /* the digest of every model file (weights, config, tokenizer): other weights, other hash */
    h->model_config_hash = m->pf.model_hash;
    h->model_config_hash_v1 = m->cfg_hash;
    h->n_files = m->pf.n;
    h->files = m->pf.files;
    h->n_provenance = m->env.n;
    h->provenance = m->env.attrs;
    h->host = m->env.host;
    h->model_type = ev->model.cfg.model_type;
    h->tokenizer = ev->tok.name ? ev->tok.name : "none"; /* token-id inputs: no tokenizer */
    h->tokenizer_file = m->abs_tok ? m->abs_tok : ev->tok.path;
    h->tokenizer_sha256 = ev->tok.sha256;
    h->split = pg19 ? c->split : "";
    h->short_books = c->short_books == RS_KLEVAL_SHORT_TRUNCATE ? "truncate" : "skip";
    h->tokens = c->tokens;
    h->chunk = c->chunk;
    h->n_books = B;
    h->book_ids = m->bid;
    h->book_titles = m->btitle;
    h->book_len = m->blen;
    h->n_runs = R;
    h->runs = m->ri;
    h->n_moe_layers = ev->n_moe; /* MoE models: routing counts per run, book and MoE layer */
    h->moe_layers = ev->moe_layers;
    /* where it ran: the kind and GEMM precision change the numbers (compared on resume), the
     * description (device name, driver, library versions, threads) is provenance */
    m->extra[0] = (rs_h5log_extra){"device_kind", c->device_kind, 1};
    m->extra[1] = (rs_h5log_extra){"compute", rs_compute_mode_name(c->compute), 1};
    m->extra[2] = (rs_h5log_extra){"device", ev->describe, 0};
    /* books in flight (rs_kleval_step.c): on the CPU every stream is its own runner, the numbers do
     * not depend on it (provenance); on a GPU the batch is the GEMMs' M, and cuBLAS picks its
     * kernels (reduction order) by shape, so it is compared on resume there */
    snprintf(m->batch, sizeof m->batch, "%zu", ev->n_slots);
    m->extra[3] = (rs_h5log_extra){"batch", m->batch, strcmp(c->device_kind, "cpu") != 0};
    /* the input (docs/hdf5-layout.md): its kind, and per file its path (provenance) and SHA-256
     * (compared on resume, with the number of files) */
    size_t ne = 4;
    /* what changes the numbers beyond the policies and `compute` (the CPU's GEMM and attention
     * summation; compared on resume, also against logs written before the attribute: log_resume_check_) */
    if (rs_log_arith_from_device(ev->describe, m->arith, sizeof m->arith))
        m->extra[ne++] = (rs_h5log_extra){"arithmetic", m->arith, 1};
    m->extra[ne++] = (rs_h5log_extra){"input", rs_kleval_input_name(c->input), 1};
    /* what the text's invalid UTF-8 became (rs_text.h): a BPE tokenizer's input is decoded by the
     * input room (replace / latin1 / error), the byte tokenizer takes the bytes as stored; token-id
     * inputs have no text. Compared on resume: another choice gives other ids. */
    if (c->input != RS_KLEVAL_INPUT_TOKEN_IDS)
        m->extra[ne++] = (rs_h5log_extra){"invalid_utf8",
                                          ev->tok.kind == RS_TOKENIZER_BPE ? rs_invalid_utf8_name(c->invalid_utf8) : "bytes", 1};
    if (!pg19) {
        snprintf(m->n_files, sizeof m->n_files, "%zu", nf);
        m->extra[ne++] = (rs_h5log_extra){"input_files", m->n_files, 1};
        for (size_t i = 0; i < nf; i++) {
            snprintf(m->keys[2 * i], RS_KLEVAL_KEY_MAX, "input_file_%zu", i);
            snprintf(m->keys[2 * i + 1], RS_KLEVAL_KEY_MAX, "input_sha256_%zu", i);
            m->extra[ne++] = (rs_h5log_extra){m->keys[2 * i], m->abs_in[i] ? m->abs_in[i] : ev->files[i].path, 0};
            m->extra[ne++] = (rs_h5log_extra){m->keys[2 * i + 1], ev->files[i].sha256, 1};
        }
    }
    /* random weights (rs_model_init_random): which, since no checkpoint file says it; compared on resume.
     * Checkpoint runs carry no such attribute (their files' digests say which weights) */
    if (c->random_weights) {
        snprintf(m->weights, sizeof m->weights, "random%s, seed %llu", rs_kleval_random_on_device(c) ? " (made on the GPU)" : "",
                 (unsigned long long)c->random_seed);
        m->extra[ne++] = (rs_h5log_extra){"model_weights", m->weights, 1};
    }
    h->n_extra = ne;
    h->extra = m->extra;
    return RS_OK;
}

/* --resume of a log whose `arithmetic` differs from this run's (arith: "" where this run names none),
 * also where the log predates the attribute: its `device` line says it (rs_log_arith.h). Read-only,
 * before the log is reopened for writing, so a refused log is left as it was. */
static rs_status log_resume_arith_(const rs_kleval *ev, const char *arith)
{
    rs_h5log *lg = NULL;
    rs_status st = rs_h5log_open(ev->cfg.out_path, 0, NULL, &lg);
    if (st != RS_OK) return RS_OK; /* the writable open reports what is wrong with the file */
    char have[256] = "", dev[512] = "";
    int found = rs_h5log_get_attr_string(lg, "/", "arithmetic", have, sizeof have) == RS_OK && have[0];
    rs_error_clear();
    if (!found && rs_h5log_get_attr_string(lg, "/", "device", dev, sizeof dev) == RS_OK)
        found = rs_log_arith_from_device(dev, have, sizeof have);
    rs_error_clear();
    st = rs_h5log_close(lg);
    if (st != RS_OK) return st;
    if (!found || !arith[0]) return RS_OK; /* not CPU logs / runs: device_kind and compute tell them apart */
    RS_CHECK(!strcmp(have, arith), RS_E_INVAL,
             "--resume: %s was written with arithmetic '%s', this command has '%s': its positions cannot be "
             "continued with other numbers (start a new log with --force or another --out; this one is kept "
             "as it is)",
             ev->cfg.out_path, have, arith);
    return RS_OK;
}

rs_status rs_kleval_log_open(rs_kleval *ev)
{
    log_meta m;
    memset(&m, 0, sizeof m);
    rs_prov_files pf; /* join the hashing started at prepare (or hash now, for a caller that did not) */
    memset(&pf, 0, sizeof pf);
    rs_prov_job *job = ev->prov;
    ev->prov = NULL;
    rs_status st = job ? RS_OK : hash_start_(ev, &job);
    if (st == RS_OK) st = rs_prov_hash_join(job, &pf);
    if (st == RS_OK) st = meta_build_(ev, &m, &pf);
    rs_prov_files_free(&pf); /* moved into m unless meta_build_ failed first */
    if (st != RS_OK) {
        meta_free_(&m);
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, st, NULL);
    }
    const int resume = ev->cfg.output == RS_KLEVAL_OUT_RESUME;
    if (resume) st = log_resume_arith_(ev, m.arith);
    if (st != RS_OK) {
        meta_free_(&m);
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, st, "cannot resume the log");
    }
    st = resume ? rs_h5log_open(ev->cfg.out_path, 1, &m.hm, &ev->lg)
                : rs_h5log_create(ev->cfg.out_path, &m.hm, ev->cfg.output == RS_KLEVAL_OUT_FORCE, &ev->lg);
    meta_free_(&m);
    if (st != RS_OK)
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_SETUP, st,
                              resume ? "cannot resume the log" : "cannot create the log");
    return RS_OK;
}

rs_status rs_kleval_log_finish(rs_kleval *ev)
{
    const rs_kleval_stage F = RS_KLEVAL_STAGE_FINISH;
    for (size_t r = 0; r < ev->cfg.n_runs; r++) {
        const rs_status st = rs_h5log_summarize(ev->lg, r, &ev->sums[r]);
        if (st != RS_OK) return rs_kleval_fail(ev, F, st, "cannot summarise");
    }
    char t_end[32];
    rs_kleval_iso_now(t_end, sizeof t_end);
    rs_status st = rs_h5log_finish(ev->lg, t_end, ev->sums);
    if (st != RS_OK) return rs_kleval_fail(ev, F, st, "cannot finish the log");
    st = rs_h5log_reference_summary(ev->lg, &ev->res.reference);
    if (st != RS_OK) return rs_kleval_fail(ev, F, st, "cannot summarise the reference");
    st = rs_h5log_close(ev->lg);
    ev->lg = NULL;
    if (st != RS_OK) return rs_kleval_fail(ev, F, st, "cannot close the log");
    return RS_OK;
}
