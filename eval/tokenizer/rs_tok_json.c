/* rs_tok_json.c — the Hugging Face tokenizer.json loader (model type BPE), as tokenizers 0.2x
 * deserializes it (tokenizer/serialization.rs, models/bpe/serialization.rs, added_vocabulary.rs):
 *  - "version" must be "1.0" when present; truncation, padding, post_processor and decoder do not
 *    change ids of encode(text, add_special_tokens=False) and are ignored;
 *  - model: "vocab" {token: id} (a repeated key: the last wins) and "merges" (all "a b" strings,
 *    "#version" lines skipped, each split on one ' ' into exactly two parts; or all ["a", "b"]
 *    pairs); rank = list index; a repeated pair keeps the last rank; a merge whose parts or result
 *    are not in the vocabulary is refused (MergeTokenOutOfVocabulary); dropout null or 0;
 *    unk_token, fuse_unk, byte_fallback, ignore_merges; continuing_subword_prefix and
 *    end_of_word_suffix only null or "";
 *  - normalizer null, NFC, or a Sequence of those; pre_tokenizer null, Split, ByteLevel (the last
 *    step, at most once) or a Sequence of those; anything else is RS_E_UNSUPPORTED, named;
 *  - added_tokens get their ids as TokenizerImpl::add_tokens assigns them (the content's id in the
 *    added or model vocabulary, else the next id from the model vocabulary's size), not from the
 *    file's "id" field (HF only warns when they differ); empty contents are skipped.
 */
#include "rs_tok.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rs_check.h"

#define TK_MAX_ID (1 << 24) /* RS_MODEL_MAX_WIDTH: ids beyond any vocabulary are refused */

typedef struct jctx {
    const char *path;
    rs_tok_model *m;
    tk_strmap vstr; /* model vocabulary: string -> id */
} jctx;

static int utf8_ok_(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int l = tk_utf8_valid_at((const uint8_t *)s + i, n - i);
        if (l <= 0) return 0;
        i += (size_t)l;
    }
    return 1;
}

static const cJSON *get_(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* optional bool: 0/1, or -1 when missing / null; -2 when of another type */
static int opt_bool_(const cJSON *o, const char *k)
{
    const cJSON *v = get_(o, k);
    if (!v || cJSON_IsNull(v)) return -1;
    if (!cJSON_IsBool(v)) return -2;
    return cJSON_IsTrue(v) ? 1 : 0;
}

static rs_status bool_field_(jctx *c, const cJSON *o, const char *where, const char *k, int dflt, int *out)
{
    int b = opt_bool_(o, k);
    RS_CHECK(b != -2, RS_E_FORMAT, "%s: %s.%s must be true, false or null", c->path, where, k);
    *out = b < 0 ? dflt : b;
    return RS_OK;
}

static rs_status id_value_(jctx *c, const cJSON *v, const char *what, int32_t *id)
{
    RS_CHECK(cJSON_IsNumber(v), RS_E_FORMAT, "%s: %s: the id is not a number", c->path, what);
    const double d = v->valuedouble;
    RS_CHECK(d >= 0 && d == floor(d), RS_E_FORMAT, "%s: %s: id %g is not a non-negative integer", c->path, what, d);
    RS_CHECK(d < TK_MAX_ID, RS_E_FORMAT, "%s: %s: id %.0f is out of range (at most %d)", c->path, what, d, TK_MAX_ID - 1);
    *id = (int32_t)d;
    return RS_OK;
}

/* ---- normalizer and pre-tokenizer ------------------------------------------------------------ */

static rs_status normalizer_(jctx *c, const cJSON *n, int depth)
{
    if (!n || cJSON_IsNull(n)) return RS_OK;
    RS_CHECK(depth < 8, RS_E_UNSUPPORTED, "%s: normalizer Sequences nested too deep", c->path);
    RS_CHECK(cJSON_IsObject(n), RS_E_FORMAT, "%s: normalizer is not an object", c->path);
    const cJSON *t = get_(n, "type");
    RS_CHECK(cJSON_IsString(t), RS_E_FORMAT, "%s: normalizer without a string 'type'", c->path);
    if (!strcmp(t->valuestring, "NFC")) {
        c->m->nfc = 1;
        return RS_OK;
    }
    if (!strcmp(t->valuestring, "Sequence")) {
        const cJSON *a = get_(n, "normalizers");
        RS_CHECK(cJSON_IsArray(a), RS_E_FORMAT, "%s: normalizer Sequence without an array 'normalizers'", c->path);
        const cJSON *e;
        cJSON_ArrayForEach(e, a) RS_TRY(normalizer_(c, e, depth + 1));
        return RS_OK;
    }
    return rs_error_set(RS_E_UNSUPPORTED, "%s: normalizer '%.40s' is not supported (only NFC, a Sequence of NFC, or none)",
                        c->path, t->valuestring);
}

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static rs_status pretok_(jctx *c, const cJSON *p, int depth)
{
    rs_tok_model *m = c->m;
    if (!p || cJSON_IsNull(p)) return RS_OK;
    RS_CHECK(depth < 8, RS_E_UNSUPPORTED, "%s: pre_tokenizer Sequences nested too deep", c->path);
    RS_CHECK(cJSON_IsObject(p), RS_E_FORMAT, "%s: pre_tokenizer is not an object", c->path);
    const cJSON *t = get_(p, "type");
    RS_CHECK(cJSON_IsString(t), RS_E_FORMAT, "%s: pre_tokenizer without a string 'type'", c->path);
    const char *ty = t->valuestring;
    if (!strcmp(ty, "Sequence")) {
        const cJSON *a = get_(p, "pretokenizers");
        RS_CHECK(cJSON_IsArray(a), RS_E_FORMAT, "%s: pre_tokenizer Sequence without an array 'pretokenizers'", c->path);
        const cJSON *e;
        cJSON_ArrayForEach(e, a) RS_TRY(pretok_(c, e, depth + 1));
        return RS_OK;
    }
    RS_CHECK(!m->byte_level, RS_E_UNSUPPORTED,
             "%s: pre_tokenizer %s after ByteLevel is not supported (ByteLevel must be the last step)", c->path, ty);
    RS_CHECK(m->n_steps < TK_MAX_STEPS, RS_E_UNSUPPORTED, "%s: more than %d pre-tokenizer steps", c->path, TK_MAX_STEPS);
    tk_step *st = &m->steps[m->n_steps];
    memset(st, 0, sizeof *st);
    if (!strcmp(ty, "Split")) {
        st->type = TK_STEP_SPLIT;
        const cJSON *pat = get_(p, "pattern"), *beh = get_(p, "behavior"), *inv = get_(p, "invert");
        RS_CHECK(cJSON_IsObject(pat), RS_E_FORMAT, "%s: Split without a 'pattern' object", c->path);
        const cJSON *rx = get_(pat, "Regex"), *lit = get_(pat, "String");
        RS_CHECK((cJSON_IsString(rx) != 0) != (cJSON_IsString(lit) != 0), RS_E_FORMAT,
                 "%s: Split pattern must be {\"Regex\": ...} or {\"String\": ...}", c->path);
        RS_CHECK(cJSON_IsString(beh), RS_E_FORMAT, "%s: Split without a string 'behavior'", c->path);
        static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
        st->behavior = -1;
        for (int i = 0; i < 5; i++)
            if (!strcmp(beh->valuestring, names[i])) st->behavior = i;
        RS_CHECK(st->behavior >= 0, RS_E_FORMAT, "%s: Split behavior '%.40s' is not one of Removed, Isolated, "
                 "MergedWithPrevious, MergedWithNext, Contiguous", c->path, beh->valuestring);
        RS_CHECK(cJSON_IsBool(inv), RS_E_FORMAT, "%s: Split without a boolean 'invert'", c->path);
        st->invert = cJSON_IsTrue(inv) ? 1 : 0;
        const char *ps = rx ? rx->valuestring : lit->valuestring;
        RS_CHECK(utf8_ok_(ps, strlen(ps)), RS_E_FORMAT, "%s: Split pattern is not valid UTF-8", c->path);
        RS_TRY(tk_regex_compile(&st->re, ps, strlen(ps), lit != NULL, 1, c->path));
        m->n_steps++;
        return RS_OK;
    }
    if (!strcmp(ty, "ByteLevel")) {
        st->type = TK_STEP_BYTELEVEL;
        int aps = opt_bool_(p, "add_prefix_space");
        RS_CHECK(aps >= 0, RS_E_FORMAT, "%s: ByteLevel without a boolean 'add_prefix_space'", c->path);
        RS_TRY(bool_field_(c, p, "ByteLevel", "use_regex", 1, &st->use_regex));
        st->add_prefix_space = aps;
        if (st->use_regex) RS_TRY(tk_regex_compile(&st->re, GPT2_PATTERN, strlen(GPT2_PATTERN), 0, 1, c->path));
        m->byte_level = 1;
        m->n_steps++;
        return RS_OK;
    }
    return rs_error_set(RS_E_UNSUPPORTED,
                        "%s: pre_tokenizer '%.40s' is not supported (only Split, ByteLevel and Sequence)", c->path, ty);
}

/* ---- model ----------------------------------------------------------------------------------- */

static rs_status vocab_(jctx *c, const cJSON *vocab, int32_t *max_id)
{
    rs_tok_model *m = c->m;
    size_t n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) n++;
    if (tk_strmap_init(&c->vstr, n) != 0) return rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
    *max_id = -1;
    cJSON_ArrayForEach(e, vocab)
    {
        RS_CHECK(e->string, RS_E_FORMAT, "%s: model.vocab entry without a key", c->path);
        const size_t kl = strlen(e->string);
        RS_CHECK(utf8_ok_(e->string, kl), RS_E_FORMAT, "%s: model.vocab key is not valid UTF-8", c->path);
        int32_t id;
        char what[96];
        snprintf(what, sizeof what, "model.vocab['%.40s']", e->string);
        RS_TRY(id_value_(c, e, what, &id));
        if (tk_strmap_put(&c->vstr, e->string, kl, id) < 0) return rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
        if (id > *max_id) *max_id = id;
    }
    (void)m;
    return RS_OK;
}

/* per id: decode bytes, and the piece lookup (raw bytes for byte-level vocabularies) */
static rs_status vocab_tables_(jctx *c)
{
    rs_tok_model *m = c->m;
    if (tk_strmap_init(&m->piece, c->vstr.n) != 0) return rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
    uint8_t *seen = (uint8_t *)calloc((size_t)m->n_ids + 1, 1);
    tk_buf raw = {0};
    if (!seen) return rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
    rs_status st = RS_OK;
    for (size_t i = 0; i < c->vstr.cap && st == RS_OK; i++) {
        const struct tk_sm_entry *e = &c->vstr.e[i];
        if (!e->len1) continue;
        const int32_t id = e->val;
        const char *s = c->vstr.pool.p + e->off;
        const size_t slen = e->len1 - 1;
        if (seen[id]) {
            st = rs_error_set(RS_E_FORMAT, "%s: model.vocab gives id %d to two tokens", c->path, (int)id);
            break;
        }
        seen[id] = 1;
        const char *dec = s;
        size_t dn = slen;
        uint8_t byte = 0;
        int canonical = 1;
        if (m->byte_level) { /* unmap the byte-level chars; a token with other chars is unreachable */
            raw.n = 0;
            for (size_t k = 0; k < slen && canonical;) {
                int l = tk_utf8_valid_at((const uint8_t *)s + k, slen - k);
                uint32_t cp = (uint8_t)s[k] & (l == 1 ? 0x7F : l == 2 ? 0x1F : l == 3 ? 0x0F : 0x07);
                for (int q = 1; q < l; q++) cp = (cp << 6) | ((uint8_t)s[k + q] & 0x3F);
                const int bv = tk_cp_to_byte(cp);
                if (bv < 0) {
                    canonical = 0;
                    break;
                }
                byte = (uint8_t)bv;
                if (tk_buf_append(&raw, &byte, 1) != 0) {
                    st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
                    break;
                }
                k += (size_t)l;
            }
            if (st != RS_OK) break;
            if (canonical) dec = raw.p ? raw.p : "", dn = raw.n;
        } else if (slen == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>') {
            /* byte fallback token <0xXX> (uppercase hex, as format!("<{:#04X}>")): decodes to its byte */
            static const char hex[] = "0123456789ABCDEF";
            const char *h1 = s[3] ? memchr(hex, s[3], 16) : NULL, *h2 = s[4] ? memchr(hex, s[4], 16) : NULL;
            if (h1 && h2) {
                byte = (uint8_t)((h1 - hex) * 16 + (h2 - hex));
                dec = (const char *)&byte;
                dn = 1;
            }
        }
        /* lookup key: the raw bytes of a byte-level token (unreachable tokens get none), else the string */
        const char *key = m->byte_level ? dec : s;
        const size_t kn = m->byte_level ? dn : slen;
        if (tk_model_set_decode(m, id, dec, dn) != 0) st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
        else if (canonical && tk_strmap_put(&m->piece, key, kn, id) < 0)
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
    }
    free(seen);
    tk_buf_free(&raw);
    return st;
}

static rs_status merges_(jctx *c, const cJSON *merges)
{
    rs_tok_model *m = c->m;
    size_t n = 0;
    int n_str = 0, n_pair = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, merges)
    {
        n++;
        if (cJSON_IsString(e)) n_str++;
        else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
                 cJSON_IsString(cJSON_GetArrayItem(e, 1)))
            n_pair++;
        else
            return rs_error_set(RS_E_FORMAT, "%s: model.merges[%zu] is neither a string \"a b\" nor a pair [\"a\", \"b\"]",
                                c->path, n - 1);
    }
    RS_CHECK(n_str == 0 || n_pair == 0, RS_E_FORMAT,
             "%s: model.merges mixes \"a b\" strings and [\"a\", \"b\"] pairs", c->path);
    if (tk_pairmap_init(&m->merges, n) != 0) return rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
    tk_buf cat = {0};
    int32_t rank = 0;
    size_t idx = 0;
    rs_status st = RS_OK;
    cJSON_ArrayForEach(e, merges)
    {
        const char *a, *b;
        size_t al, bl;
        if (cJSON_IsString(e)) {
            const char *s = e->valuestring;
            if (!strncmp(s, "#version", 8)) {
                idx++;
                continue;
            }
            const char *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                st = rs_error_set(RS_E_FORMAT, "%s: model.merges[%zu] '%.60s' is not two tokens separated by one space",
                                  c->path, idx, s);
                break;
            }
            a = s, al = (size_t)(sp - s), b = sp + 1, bl = strlen(sp + 1);
        } else {
            a = cJSON_GetArrayItem(e, 0)->valuestring, al = strlen(a);
            b = cJSON_GetArrayItem(e, 1)->valuestring, bl = strlen(b);
        }
        int32_t ia, ib, iab;
        cat.n = 0;
        if (tk_buf_append(&cat, a, al) != 0 || tk_buf_append(&cat, b, bl) != 0) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
            break;
        }
        if (!tk_strmap_get(&c->vstr, a, al, &ia) || !tk_strmap_get(&c->vstr, b, bl, &ib) ||
            !tk_strmap_get(&c->vstr, cat.p, cat.n, &iab)) {
            st = rs_error_set(RS_E_FORMAT, "%s: model.merges[%zu] ('%.*s', '%.*s'): a part or the merged token is not in "
                              "model.vocab", c->path, idx, (int)(al > 40 ? 40 : al), a, (int)(bl > 40 ? 40 : bl), b);
            break;
        }
        if (tk_pairmap_put(&m->merges, ia, ib, rank, iab) != 0) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
            break;
        }
        rank++;
        idx++;
    }
    tk_buf_free(&cat);
    return st;
}

/* ---- added tokens ---------------------------------------------------------------------------- */

typedef struct added_rec {
    int32_t id;
    char *content; /* malloc'd */
    int single_word, lstrip, rstrip, normalized, special;
} added_rec;

static rs_status added_(jctx *c, const cJSON *arr, int model_size, int32_t *max_id)
{
    rs_tok_model *m = c->m;
    if (!arr || cJSON_IsNull(arr)) return RS_OK;
    RS_CHECK(cJSON_IsArray(arr), RS_E_FORMAT, "%s: added_tokens is not an array", c->path);
    const int n = cJSON_GetArraySize(arr);
    if (n == 0) return RS_OK;
    added_rec *recs = (added_rec *)calloc((size_t)n, sizeof *recs);
    tk_strmap amap = {0};   /* content -> index in recs */
    tk_strmap specials = {0}; /* contents ever added as special */
    tk_strmap ncache = {0}; /* id -> normalized content (key: the 4 id bytes) */
    tk_strmap slots = {0};  /* id -> index in recs (added_tokens_map_r) */
    tk_buf nbuf = {0};
    size_t nrec = 0;
    rs_status st = RS_OK;
    if (!recs || tk_strmap_init(&amap, (size_t)n) || tk_strmap_init(&specials, (size_t)n) ||
        tk_strmap_init(&ncache, (size_t)n) || tk_strmap_init(&slots, (size_t)n)) {
        st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
        goto done;
    }
    int32_t next_id = model_size;
    int idx = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsObject(e)) {
            st = rs_error_set(RS_E_FORMAT, "%s: added_tokens[%d] is not an object", c->path, idx);
            goto done;
        }
        const cJSON *cont = get_(e, "content"), *jid = get_(e, "id");
        if (!cJSON_IsString(cont)) {
            st = rs_error_set(RS_E_FORMAT, "%s: added_tokens[%d] without a string 'content'", c->path, idx);
            goto done;
        }
        int32_t file_id;
        char what[64];
        snprintf(what, sizeof what, "added_tokens[%d]", idx);
        if ((st = id_value_(c, jid, what, &file_id)) != RS_OK) goto done;
        added_rec r = {0};
        if ((st = bool_field_(c, e, what, "special", 0, &r.special)) != RS_OK ||
            (st = bool_field_(c, e, what, "single_word", 0, &r.single_word)) != RS_OK ||
            (st = bool_field_(c, e, what, "lstrip", 0, &r.lstrip)) != RS_OK ||
            (st = bool_field_(c, e, what, "rstrip", 0, &r.rstrip)) != RS_OK ||
            (st = bool_field_(c, e, what, "normalized", !r.special, &r.normalized)) != RS_OK)
            goto done;
        const char *s = cont->valuestring;
        const size_t sl = strlen(s);
        idx++;
        if (sl == 0) continue;
        if (!utf8_ok_(s, sl)) {
            st = rs_error_set(RS_E_FORMAT, "%s: %s content is not valid UTF-8", c->path, what);
            goto done;
        }
        int32_t k;
        if (tk_strmap_get(&amap, s, sl, &k)) {
            const added_rec *o = &recs[k];
            if (o->content && !strcmp(o->content, s) && o->single_word == r.single_word && o->lstrip == r.lstrip &&
                o->rstrip == r.rstrip && o->normalized == r.normalized && o->special == r.special)
                continue; /* identical: ignored */
            r.id = o->id;
        } else if (tk_strmap_get(&c->vstr, s, sl, &r.id)) {
            /* the model's id */
        } else {
            if (next_id >= TK_MAX_ID) {
                st = rs_error_set(RS_E_FORMAT, "%s: too many added tokens", c->path);
                goto done;
            }
            r.id = next_id++;
        }
        if (r.normalized && m->nfc) {
            nbuf.n = 0;
            if (tk_nfc(s, sl, &nbuf) != 0) {
                st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
                goto done;
            }
            if (nbuf.n != sl || memcmp(nbuf.p, s, sl) != 0) {
                /* stored as key = id bytes, value = offset into the pool of a second map */
                if (tk_strmap_put(&ncache, &r.id, sizeof r.id, (int32_t)m->added_pool.n) < 0 ||
                    tk_buf_append(&m->added_pool, nbuf.p, nbuf.n) != 0 ||
                    tk_buf_append(&m->added_pool, "", 1) != 0) {
                    st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
                    goto done;
                }
            }
        }
        r.content = (char *)malloc(sl + 1);
        if (!r.content) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
            goto done;
        }
        memcpy(r.content, s, sl + 1);
        if (r.special && tk_strmap_put(&specials, s, sl, 1) < 0) {
            free(r.content);
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
            goto done;
        }
        /* added_tokens_map_r[id] = token: one record per id (a later one replaces it) */
        int32_t slot;
        if (tk_strmap_get(&slots, &r.id, sizeof r.id, &slot)) {
            free(recs[slot].content);
        } else {
            slot = (int32_t)nrec++;
            if (tk_strmap_put(&slots, &r.id, sizeof r.id, slot) < 0) {
                free(r.content);
                st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
                goto done;
            }
        }
        recs[slot] = r;
        if (tk_strmap_put(&amap, s, sl, slot) < 0) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
            goto done;
        }
    }
    {
        /* the two matching sets (and the decode bytes of the added ids) */
        tk_added *raw = (tk_added *)calloc(nrec + 1, sizeof *raw), *nrm = (tk_added *)calloc(nrec + 1, sizeof *nrm);
        size_t nr = 0, nn = 0;
        if (!raw || !nrm) {
            free(raw);
            free(nrm);
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
            goto done;
        }
        for (size_t q = 0; q < nrec; q++) {
            added_rec *r = &recs[q];
            tk_added a = {0};
            a.id = r->id;
            int32_t one;
            a.special = (uint8_t)tk_strmap_get(&specials, r->content, strlen(r->content), &one);
            a.single_word = (uint8_t)r->single_word, a.lstrip = (uint8_t)r->lstrip, a.rstrip = (uint8_t)r->rstrip;
            int32_t noff;
            if (r->normalized && tk_strmap_get(&ncache, &r->id, sizeof r->id, &noff)) {
                a.off = (uint32_t)noff;
                a.len = (uint32_t)strlen(m->added_pool.p + noff);
            } else {
                a.off = (uint32_t)m->added_pool.n;
                a.len = (uint32_t)strlen(r->content);
                if (tk_buf_append(&m->added_pool, r->content, a.len + 1) != 0) {
                    st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
                    break;
                }
            }
            if (r->id > *max_id) *max_id = r->id;
            if (r->normalized) nrm[nn++] = a;
            else raw[nr++] = a;
        }
        if (st == RS_OK && (tk_addset_build(&m->added_raw, raw, nr) != 0 || tk_addset_build(&m->added_norm, nrm, nn) != 0))
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
        free(raw);
        free(nrm);
    }
done:
    if (recs)
        for (size_t q = 0; q < (size_t)n; q++) free(recs[q].content);
    free(recs);
    tk_strmap_free(&amap);
    tk_strmap_free(&specials);
    tk_strmap_free(&ncache);
    tk_strmap_free(&slots);
    tk_buf_free(&nbuf);
    return st;
}

/* decode bytes of the added ids (their matched content) once the id tables exist */
static rs_status added_decode_(jctx *c)
{
    rs_tok_model *m = c->m;
    const tk_addset *sets[2] = {&m->added_raw, &m->added_norm};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sets[k]->n; i++) {
            const tk_added *a = &sets[k]->tok[i];
            if (tk_model_set_decode(m, a->id, m->added_pool.p + a->off, a->len) != 0)
                return rs_error_set(RS_E_NOMEM, "%s: out of memory", c->path);
        }
    return RS_OK;
}

/* \u0000 in a JSON string: cJSON would cut the string there, so refuse it. The scans use memchr
 * (one call per backslash, not a compare per byte: ~30% of a fuzzed open's time before) */
static int has_escaped_nul_(const char *t, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *p = (const char *)memchr(t + i, '\\', n - i);
        if (!p) return 0;
        i = (size_t)(p - t);
        size_t k = i;
        while (k < n && t[k] == '\\') k++;
        if (((k - i) & 1) && k + 4 < n && memcmp(t + k, "u0000", 5) == 0) return 1; /* an unescaped \u0000 */
        i = k;
    }
    return 0;
}

rs_status tk_load_json(const char *path, const char *text, size_t len, rs_tok_model **out)
{
    *out = NULL;
    RS_CHECK(!has_escaped_nul_(text, len), RS_E_UNSUPPORTED, "%s: strings containing \\u0000 are not supported", path);
    const char *nul = (const char *)memchr(text, '\0', len);
    RS_CHECK(!nul, RS_E_FORMAT, "%s: not well-formed JSON (a NUL byte at offset %zu)", path, (size_t)(nul - text));
    cJSON *root = cJSON_ParseWithLength(text, len);
    RS_CHECK(root != NULL, RS_E_FORMAT, "%s: not well-formed JSON (error near byte %ld)", path,
             cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
    jctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    rs_status st = RS_OK;
    rs_tok_model *m = tk_model_new();
    c.m = m;
    if (!m) {
        st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    m->format = RS_TOKFMT_HF_JSON;
    if (!cJSON_IsObject(root)) {
        st = rs_error_set(RS_E_FORMAT, "%s: top level is not a JSON object", path);
        goto fail;
    }
    const cJSON *ver = get_(root, "version");
    if (ver && !(cJSON_IsString(ver) && !strcmp(ver->valuestring, "1.0"))) {
        st = rs_error_set(RS_E_UNSUPPORTED, "%s: unknown tokenizer.json version (only \"1.0\")", path);
        goto fail;
    }
    const cJSON *model = get_(root, "model");
    if (!cJSON_IsObject(model)) {
        st = rs_error_set(RS_E_FORMAT, "%s: no object 'model'", path);
        goto fail;
    }
    const cJSON *mt = get_(model, "type");
    if (mt && !(cJSON_IsString(mt) && !strcmp(mt->valuestring, "BPE"))) {
        st = rs_error_set(RS_E_UNSUPPORTED, "%s: model type '%.40s' is not supported (only BPE)", path,
                          cJSON_IsString(mt) ? mt->valuestring : "?");
        goto fail;
    }
    const cJSON *vocab = get_(model, "vocab"), *merges = get_(model, "merges");
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
        st = rs_error_set(RS_E_FORMAT, "%s: model without an object 'vocab' and an array 'merges'", path);
        goto fail;
    }
    const cJSON *drop = get_(model, "dropout");
    if (drop && !cJSON_IsNull(drop) && !(cJSON_IsNumber(drop) && drop->valuedouble == 0.0)) {
        st = cJSON_IsNumber(drop) && drop->valuedouble > 0 && drop->valuedouble <= 1
                 ? rs_error_set(RS_E_UNSUPPORTED, "%s: BPE dropout %g is random; only null or 0 is supported", path,
                                drop->valuedouble)
                 : rs_error_set(RS_E_FORMAT, "%s: model.dropout must be null or in [0, 1]", path);
        goto fail;
    }
    static const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *a = get_(model, affix[i]);
        if (a && !cJSON_IsNull(a) && !(cJSON_IsString(a) && a->valuestring[0] == '\0')) {
            st = cJSON_IsString(a) ? rs_error_set(RS_E_UNSUPPORTED, "%s: model.%s '%.20s' is not supported (only null or \"\")",
                                                  path, affix[i], a->valuestring)
                                   : rs_error_set(RS_E_FORMAT, "%s: model.%s must be a string or null", path, affix[i]);
            goto fail;
        }
    }
    if ((st = bool_field_(&c, model, "model", "fuse_unk", 0, &m->fuse_unk)) != RS_OK ||
        (st = bool_field_(&c, model, "model", "byte_fallback", 0, &m->byte_fallback)) != RS_OK ||
        (st = bool_field_(&c, model, "model", "ignore_merges", 0, &m->ignore_merges)) != RS_OK)
        goto fail;
    const cJSON *unk = get_(model, "unk_token");
    if (unk && !cJSON_IsNull(unk) && !cJSON_IsString(unk)) {
        st = rs_error_set(RS_E_FORMAT, "%s: model.unk_token must be a string or null", path);
        goto fail;
    }
    if ((st = normalizer_(&c, get_(root, "normalizer"), 0)) != RS_OK) goto fail;
    if ((st = pretok_(&c, get_(root, "pre_tokenizer"), 0)) != RS_OK) goto fail;
    int32_t max_id = -1;
    if ((st = vocab_(&c, vocab, &max_id)) != RS_OK) goto fail;
    const int model_size = (int)c.vstr.n;
    if ((st = merges_(&c, merges)) != RS_OK) goto fail;
    if ((st = added_(&c, get_(root, "added_tokens"), model_size, &max_id)) != RS_OK) goto fail;
    if (max_id < 0) {
        st = rs_error_set(RS_E_FORMAT, "%s: empty vocabulary", path);
        goto fail;
    }
    if (tk_model_set_ids(m, max_id + 1) != 0) {
        st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    if ((st = vocab_tables_(&c)) != RS_OK || (st = added_decode_(&c)) != RS_OK) goto fail;
    if (tk_addsets_finish(m) != 0) {
        st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    /* unk, byte fallback, initial symbols of byte-level pieces */
    if (cJSON_IsString(unk)) {
        if (!tk_strmap_get(&c.vstr, unk->valuestring, strlen(unk->valuestring), &m->unk_id)) m->unk_id = -2;
    }
    for (int b = 0; b < 256; b++) {
        char key[8];
        snprintf(key, sizeof key, "<0x%02X>", b);
        if (!tk_strmap_get(&c.vstr, key, 6, &m->fallback_id[b])) m->fallback_id[b] = -1;
        if (m->byte_level) {
            char u[4];
            size_t ul = tk_utf8_encode(tk_byte_to_cp((uint8_t)b), u);
            if (!tk_strmap_get(&c.vstr, u, ul, &m->byte_id[b])) m->byte_id[b] = -1;
        }
    }
    tk_strmap_free(&c.vstr);
    cJSON_Delete(root);
    *out = m;
    return RS_OK;
fail:
    tk_strmap_free(&c.vstr);
    tk_model_free(m);
    cJSON_Delete(root);
    return st;
}
