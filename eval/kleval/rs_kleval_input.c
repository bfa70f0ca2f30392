/* rs_kleval_input.c — the token streams ("books") of an evaluation, for each input kind
 * (rs_kleval_input; docs/evaluator.md "Inputs: PG-19, text files, token ids"):
 *   PG-19      a book of the layout (rs_pg19), its text tokenized by the model's tokenizer;
 *   text       a text file, one stream, its bytes tokenized exactly as a book's text is (bytes as
 *              stored: the byte tokenizer takes them as ids; for a BPE tokenizer the input room
 *              decodes them first, rs_text.h: invalid UTF-8 replaced by U+FFFD, read as Latin-1
 *              or refused, cfg.invalid_utf8);
 *   token ids  a raw little-endian uint32 file (one stream) or a .npy [tokens] / [streams,
 *              tokens] array (rs_npy.h), no tokenizer.
 * Planning reads each stream once (counts its tokens, records each file's SHA-256, checks every
 * id of a token-id file against the model's vocab_size); the position loop loads a stream's
 * first tokens again when it reaches it, and refuses a text file whose digest changed meanwhile.
 * A token-id file stays open from planning to the end (the digest is of what is read). */
#include "replayssm/eval/rs_sha256.h"
#include "rs_kleval_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rs_check.h"
#include "input/rs_input.h"
#include "input/rs_npy.h"

#define RS_KLEVAL_TEXT_MAX_BYTES ((size_t)1 << 30)  /* a text file, as a PG-19 book */
#define RS_KLEVAL_IDS_MAX_BYTES ((size_t)1 << 36)   /* a token-id file (read in blocks) */
#define RS_KLEVAL_IDS_BLOCK ((size_t)1 << 20)       /* bytes per read (a multiple of 8) */

const char *rs_kleval_input_name(rs_kleval_input k)
{
    switch (k) {
    case RS_KLEVAL_INPUT_PG19: return "pg19";
    case RS_KLEVAL_INPUT_TEXT: return "text";
    case RS_KLEVAL_INPUT_TOKEN_IDS: return "token-ids";
    }
    return "?";
}

static const char *what_read_(const rs_kleval *ev)
{
    return ev->cfg.input == RS_KLEVAL_INPUT_TEXT ? "cannot read a text file" : "cannot read a token-id file";
}

static size_t max_bytes_(const rs_kleval *ev)
{
    return ev->cfg.input == RS_KLEVAL_INPUT_TEXT ? RS_KLEVAL_TEXT_MAX_BYTES : RS_KLEVAL_IDS_MAX_BYTES;
}

rs_status rs_kleval_input_check(rs_kleval *ev)
{
    const rs_kleval_config *c = &ev->cfg;
    if (c->input == RS_KLEVAL_INPUT_PG19) return RS_OK;
    for (size_t i = 0; i < c->n_input_files; i++) {
        const char *p = c->input_files[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->input_files[j], p))
                return rs_kleval_fail(ev, RS_KLEVAL_STAGE_CONFIG,
                                      rs_error_set(RS_E_INVAL, "input file %s given twice", p), NULL);
        FILE *f = NULL; /* regular, bounded, and never blocking on a FIFO (rs_input.h) */
        const rs_status st = rs_input_fopen(p, max_bytes_(ev), &f, NULL);
        if (st != RS_OK) return rs_kleval_fail(ev, RS_KLEVAL_STAGE_BOOKS, st, what_read_(ev));
        fclose(f);
    }
    return RS_OK;
}

/* ---- token-id files ------------------------------------------------------------------------ */

/* element p of a token-id array: 1 and *id when it is in [0, vocab), else 0 and the value as
 * text in shown[32] */
static int id_of_(const unsigned char *p, const rs_kleval_file *fl, int vocab, int32_t *id, char shown[32])
{
    uint64_t u = 0;
    for (size_t b = 0; b < fl->itemsize; b++) u |= (uint64_t)p[b] << (8 * b);
    if (fl->dtype == RS_NPY_I4 && (u & 0x80000000u)) {
        snprintf(shown, 32, "%lld", (long long)(int32_t)(uint32_t)u);
        return 0;
    }
    if (fl->dtype == RS_NPY_I8 && (u >> 63)) {
        snprintf(shown, 32, "%lld", (long long)u);
        return 0;
    }
    if (u >= (uint64_t)vocab) {
        snprintf(shown, 32, "%llu", (unsigned long long)u);
        return 0;
    }
    *id = (int32_t)u;
    return 1;
}

static rs_status bad_id_(const rs_kleval_file *fl, const char *stream, uint64_t pos, const char *shown, int vocab)
{
    if (shown[0] == '-')
        return rs_error_set(RS_E_FORMAT, "%s: stream %s position %llu: token id %s is negative", fl->path, stream,
                            (unsigned long long)pos, shown);
    return rs_error_set(RS_E_FORMAT, "%s: stream %s position %llu: token id %s is >= the model's vocab_size %d", fl->path,
                        stream, (unsigned long long)pos, shown, vocab);
}

/* the id of stream row r of a file whose unique name is `name` into buf */
static void stream_id_(const rs_kleval_file *fl, const char *name, uint64_t r, char *buf, size_t n)
{
    if (fl->npy && fl->rows > 1) snprintf(buf, n, "%s[%llu]", name, (unsigned long long)r);
    else snprintf(buf, n, "%s", name);
}

/* open a token-id file: its layout (raw or .npy), then one pass over every byte: the SHA-256 and
 * every id checked against vocab. I/O failures are RS_E_IO (stage BOOKS), refusals RS_E_FORMAT. */
static rs_status open_ids_(rs_kleval_file *fl, const char *name, int vocab)
{
    size_t size = 0;
    RS_TRY(rs_input_fopen(fl->path, RS_KLEVAL_IDS_MAX_BYTES, &fl->f, &size));
    fl->size = size;
    unsigned char pre[12];
    const size_t got = fread(pre, 1, size < sizeof pre ? size : sizeof pre, fl->f);
    if (got != (size < sizeof pre ? size : sizeof pre)) return rs_error_set(RS_E_IO, "read error on %s", fl->path);
    const int magic = got >= RS_NPY_MAGIC_LEN && !memcmp(pre, RS_NPY_MAGIC, RS_NPY_MAGIC_LEN);
    unsigned char *hdr = NULL;
    if (magic || rs_input_ends_with(fl->path, ".npy")) {
        uint64_t total = 0;
        RS_TRY(rs_npy_header_size(pre, got, fl->path, &total));
        if (total > size)
            return rs_error_set(RS_E_FORMAT, "%s: truncated .npy header (%llu bytes announced, the file has %zu)", fl->path,
                                (unsigned long long)total, size);
        hdr = (unsigned char *)malloc((size_t)total);
        RS_CHECK(hdr != NULL, RS_E_NOMEM, "out of memory");
        rewind(fl->f);
        rs_status st = fread(hdr, 1, (size_t)total, fl->f) == (size_t)total ? RS_OK
                                                                           : rs_error_set(RS_E_IO, "read error on %s", fl->path);
        rs_npy_header h;
        if (st == RS_OK) st = rs_npy_parse(hdr, (size_t)total, size, fl->path, &h);
        if (st != RS_OK) {
            free(hdr);
            return st;
        }
        fl->npy = 1;
        fl->dtype = (int)h.dtype;
        fl->itemsize = h.itemsize;
        fl->rows = h.rows;
        fl->cols = h.cols;
        fl->data_off = h.data_offset;
    } else {
        RS_CHECK(size > 0, RS_E_FORMAT, "%s: empty token-id file", fl->path);
        RS_CHECK(size % 4 == 0, RS_E_FORMAT,
                 "%s: %zu bytes, not a multiple of 4 (a raw token-id file is little-endian uint32; name a NumPy file *.npy)",
                 fl->path, size);
        fl->npy = 0;
        fl->dtype = (int)RS_NPY_U4;
        fl->itemsize = 4;
        fl->rows = 1;
        fl->cols = size / 4;
        fl->data_off = 0;
    }
    rs_sha256_ctx sha;
    rs_sha256_init(&sha);
    if (hdr) rs_sha256_update(&sha, hdr, (size_t)fl->data_off);
    free(hdr);
    unsigned char *blk = (unsigned char *)malloc(RS_KLEVAL_IDS_BLOCK);
    RS_CHECK(blk != NULL, RS_E_NOMEM, "out of memory");
    rs_status st = fseeko(fl->f, (off_t)fl->data_off, SEEK_SET) == 0 ? RS_OK
                                                                     : rs_error_set(RS_E_IO, "cannot seek in %s", fl->path);
    const uint64_t count = fl->rows * fl->cols; /* rs_npy_parse checked the product against the file */
    uint64_t idx = 0;
    while (st == RS_OK && idx < count) {
        const uint64_t left = (count - idx) * fl->itemsize;
        const size_t want = left < RS_KLEVAL_IDS_BLOCK ? (size_t)left : RS_KLEVAL_IDS_BLOCK;
        if (fread(blk, 1, want, fl->f) != want) {
            st = rs_error_set(RS_E_IO, "read error on %s (did it shrink?)", fl->path);
            break;
        }
        rs_sha256_update(&sha, blk, want);
        for (size_t e = 0; e < want / fl->itemsize; e++, idx++) {
            int32_t id;
            char shown[32];
            if (!id_of_(blk + e * fl->itemsize, fl, vocab, &id, shown)) {
                char sid[600];
                stream_id_(fl, name, idx / fl->cols, sid, sizeof sid);
                st = bad_id_(fl, sid, idx % fl->cols, shown, vocab);
                break;
            }
        }
    }
    if (st == RS_OK && fgetc(fl->f) != EOF) st = rs_error_set(RS_E_IO, "%s grew while it was read", fl->path);
    free(blk);
    if (st == RS_OK) rs_sha256_final(&sha, fl->sha256);
    return st;
}

/* ---- the streams ----------------------------------------------------------------------------- */

/* each file's name in the log: its base name, "#2", "#3", ... appended to repeats */
static rs_status names_(rs_kleval *ev, char (*names)[512])
{
    const size_t n = ev->cfg.n_input_files;
    for (size_t i = 0; i < n; i++) {
        const char *p = ev->files[i].path, *b = strrchr(p, '/');
        b = b && b[1] ? b + 1 : p;
        snprintf(names[i], sizeof names[0], "%s", b);
        for (unsigned k = 2;; k++) {
            int clash = 0;
            for (size_t j = 0; j < i && !clash; j++) clash = !strcmp(names[j], names[i]);
            if (!clash) break;
            snprintf(names[i], sizeof names[0], "%.480s#%u", b, k);
        }
    }
    return RS_OK;
}

rs_status rs_kleval_input_list(rs_kleval *ev)
{
    const rs_kleval_config *c = &ev->cfg;
    const size_t nf = c->n_input_files;
    const rs_kleval_stage B = RS_KLEVAL_STAGE_BOOKS;
    ev->files = (rs_kleval_file *)calloc(nf, sizeof *ev->files);
    char (*names)[512] = calloc(nf, sizeof *names);
    if (!ev->files || !names) {
        free(names);
        return rs_kleval_fail(ev, B, rs_error_set(RS_E_NOMEM, "out of memory"), NULL);
    }
    for (size_t i = 0; i < nf; i++) ev->files[i].path = c->input_files[i];
    names_(ev, names);
    uint64_t ns = 0;
    for (size_t i = 0; i < nf; i++) {
        rs_kleval_file *fl = &ev->files[i];
        if (c->input == RS_KLEVAL_INPUT_TOKEN_IDS) {
            const rs_status st = open_ids_(fl, names[i], ev->model.cfg.vocab);
            if (st != RS_OK) {
                free(names);
                return rs_kleval_fail(ev, st == RS_E_FORMAT ? RS_KLEVAL_STAGE_INPUT : B, st,
                                      st == RS_E_FORMAT ? "token ids refused" : what_read_(ev));
            }
        } else {
            fl->rows = 1;
        }
        ns += fl->rows;
    }
    if (ns > RS_H5LOG_MAX_BOOKS) {
        free(names);
        return rs_kleval_fail(ev, RS_KLEVAL_STAGE_INPUT,
                              rs_error_set(RS_E_FORMAT, "%llu streams, more than the limit of %u per log",
                                           (unsigned long long)ns, RS_H5LOG_MAX_BOOKS),
                              "token ids refused");
    }
    ev->ids = (char **)calloc((size_t)ns, sizeof(char *));
    ev->streams = (rs_kleval_stream *)calloc((size_t)ns, sizeof *ev->streams);
    rs_status st = ev->ids && ev->streams ? RS_OK : rs_error_set(RS_E_NOMEM, "out of memory");
    if (ev->ids) {
        ev->n_ids = (size_t)ns;
        ev->ids_owned = 1; /* freed with rs_pg19_ids_free */
    }
    size_t s = 0;
    for (size_t i = 0; st == RS_OK && i < nf; i++)
        for (uint64_t r = 0; st == RS_OK && r < ev->files[i].rows; r++, s++) {
            char sid[600];
            stream_id_(&ev->files[i], names[i], r, sid, sizeof sid);
            ev->streams[s].file = i;
            ev->streams[s].row = r;
            if (!(ev->ids[s] = strdup(sid))) st = rs_error_set(RS_E_NOMEM, "out of memory");
        }
    free(names);
    if (st != RS_OK) return rs_kleval_fail(ev, B, st, NULL);
    return RS_OK;
}

/* text file k read whole (bounded), not empty, with its digest */
static rs_status read_text_(const rs_kleval_file *fl, char **text, size_t *len, char sha[65])
{
    RS_TRY(rs_input_read_all(fl->path, RS_KLEVAL_TEXT_MAX_BYTES, 0, text, len, NULL));
    if (*len == 0) {
        free(*text);
        *text = NULL;
        return rs_error_set(RS_E_FORMAT, "text file %s is empty", fl->path);
    }
    rs_sha256(*text, *len, sha);
    return RS_OK;
}

/* a book's or text file's bytes as a BPE tokenizer's Unicode input (rs_text.h; the byte tokenizer
 * takes bytes): *text replaced by the decoded copy when one was made; `warn` emits the INVALID_UTF8
 * event (planning; the position loop decodes the same bytes again, silently) */
static rs_status decode_(rs_kleval *ev, const char *label, const char *id, char **text, size_t *len, int warn)
{
    if (ev->tok.kind != RS_TOKENIZER_BPE) return RS_OK;
    char *dec = NULL;
    size_t dn = 0;
    rs_text_report rep;
    const rs_invalid_utf8 mode = ev->cfg.invalid_utf8;
    const rs_status st = rs_text_decode(*text, *len, mode, label, &dec, &dn, &rep);
    if (st != RS_OK) return st;
    if (!rep.n_invalid) return RS_OK;
    free(*text);
    *text = dec;
    *len = dn;
    if (warn && ev->cfg.on_event) {
        rs_kleval_event e;
        memset(&e, 0, sizeof e);
        e.kind = RS_KLEVAL_EVENT_INVALID_UTF8;
        e.book_id = id;
        e.position = rep.first;
        e.available = rep.n_invalid;
        e.message = mode == RS_INVALID_UTF8_LATIN1 ? "the whole text read as Latin-1 (--invalid-utf8 latin1)"
                                                   : "each replaced by U+FFFD (--invalid-utf8 replace)";
        (void)ev->cfg.on_event(&e, ev->cfg.user);
    }
    return RS_OK;
}

rs_status rs_kleval_input_count(rs_kleval *ev, size_t i, size_t *avail, const char **title)
{
    const rs_kleval_config *c = &ev->cfg;
    const rs_kleval_stage B = RS_KLEVAL_STAGE_BOOKS;
    char *text = NULL;
    size_t len = 0;
    rs_status st;
    *avail = 0;
    switch (c->input) {
    case RS_KLEVAL_INPUT_PG19: {
        st = rs_pg19_read_book(c->data_dir, c->split, ev->ids[i], &text, &len);
        if (st != RS_OK) return rs_kleval_fail(ev, B, st, "cannot read a book");
        const long mi = rs_pg19_meta_find(&ev->meta, ev->ids[i]);
        *title = mi >= 0 ? ev->meta.books[mi].title : "";
        break;
    }
    case RS_KLEVAL_INPUT_TEXT: {
        rs_kleval_file *fl = &ev->files[ev->streams[i].file];
        st = read_text_(fl, &text, &len, fl->sha256);
        if (st != RS_OK) return rs_kleval_fail(ev, B, st, "cannot read a text file");
        *title = fl->path;
        break;
    }
    default: { /* token ids: counted and checked when the file was opened */
        const rs_kleval_file *fl = &ev->files[ev->streams[i].file];
        *avail = (size_t)fl->cols;
        *title = fl->path;
        return RS_OK;
    }
    }
    st = decode_(ev, c->input == RS_KLEVAL_INPUT_PG19 ? ev->ids[i] : *title, ev->ids[i], &text, &len, 1);
    if (st != RS_OK) {
        free(text);
        return rs_kleval_fail(ev, B, st, "cannot read the text");
    }
    st = rs_tokenizer_count(&ev->tok, text, len, avail);
    free(text);
    if (st != RS_OK) return rs_kleval_fail(ev, B, st, "cannot tokenize");
    return RS_OK;
}

/* the first max ids of token-id stream i (re-checked: the file may have been edited in place) */
static rs_status load_ids_(rs_kleval *ev, size_t i, int32_t *toks, size_t max, size_t *n)
{
    const rs_kleval_file *fl = &ev->files[ev->streams[i].file];
    const uint64_t row = ev->streams[i].row;
    const size_t k = (uint64_t)max < fl->cols ? max : (size_t)fl->cols;
    struct stat sb;
    RS_CHECK(fstat(fileno(fl->f), &sb) == 0 && (uint64_t)sb.st_size == fl->size, RS_E_STATE,
             "%s changed size since it was planned", fl->path);
    unsigned char *buf = (unsigned char *)malloc(k * fl->itemsize + 1);
    RS_CHECK(buf != NULL, RS_E_NOMEM, "out of memory");
    rs_status st = fseeko(fl->f, (off_t)(fl->data_off + row * fl->cols * fl->itemsize), SEEK_SET) == 0 &&
                           fread(buf, 1, k * fl->itemsize, fl->f) == k * fl->itemsize
                       ? RS_OK
                       : rs_error_set(RS_E_IO, "read error on %s", fl->path);
    for (size_t t = 0; st == RS_OK && t < k; t++) {
        char shown[32];
        if (!id_of_(buf + t * fl->itemsize, fl, ev->model.cfg.vocab, &toks[t], shown))
            st = bad_id_(fl, ev->ids[i], t, shown, ev->model.cfg.vocab);
    }
    free(buf);
    if (st == RS_OK) *n = k;
    return st;
}

rs_status rs_kleval_input_tokens(rs_kleval *ev, size_t i, int32_t *toks, size_t max, size_t *n)
{
    const rs_kleval_config *c = &ev->cfg;
    char *text = NULL;
    size_t len = 0;
    rs_status st;
    *n = 0;
    if (c->input == RS_KLEVAL_INPUT_TOKEN_IDS) return load_ids_(ev, i, toks, max, n);
    if (c->input == RS_KLEVAL_INPUT_PG19) {
        st = rs_pg19_read_book(c->data_dir, c->split, ev->ids[i], &text, &len);
    } else {
        const rs_kleval_file *fl = &ev->files[ev->streams[i].file];
        char sha[65];
        st = read_text_(fl, &text, &len, sha);
        if (st == RS_OK && strcmp(sha, fl->sha256))
            st = rs_error_set(RS_E_STATE, "text file %s changed since it was planned (SHA-256 %s, was %s)", fl->path, sha,
                              fl->sha256);
    }
    if (st == RS_OK) st = decode_(ev, ev->ids[i], ev->ids[i], &text, &len, 0);
    if (st == RS_OK) st = rs_tokenizer_encode(&ev->tok, text, len, toks, max, n);
    free(text);
    return st;
}

void rs_kleval_input_free(rs_kleval *ev)
{
    if (ev->files)
        for (size_t i = 0; i < ev->cfg.n_input_files; i++)
            if (ev->files[i].f) fclose(ev->files[i].f);
    free(ev->files);
    free(ev->streams);
    ev->files = NULL;
    ev->streams = NULL;
}
