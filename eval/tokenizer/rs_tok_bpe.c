/* rs_tok_bpe.c — vocabulary tables, the BPE merge loop and the word cache (rs_tok.h).
 *
 * Merge rule (both references): repeatedly merge the adjacent pair of lowest rank, the leftmost
 * one among equal ranks, until no adjacent pair has a rank. HF `tokenizers` ranks a pair (a, b)
 * by its index in the merges list (Word::merge_all, a heap on (rank, position)); tiktoken ranks
 * it by the rank of the concatenated bytes (_byte_pair_merge, a scan with a strict <). One heap
 * on (rank, left symbol index) serves both: only the pair-rank lookup differs. Stale heap entries
 * are recognised by the symbol ids they were made from.
 */
#include "rs_tok.h"

#include <stdlib.h>
#include <string.h>

#include "rs_check.h"

/* ---- containers ------------------------------------------------------------------------------ */

int tk_buf_reserve(tk_buf *b, size_t cap)
{
    if (cap <= b->cap) return 0;
    size_t c = b->cap ? b->cap : 64;
    while (c < cap) {
        if (c > SIZE_MAX / 2) return -1;
        c *= 2;
    }
    char *p = (char *)realloc(b->p, c);
    if (!p) return -1;
    b->p = p;
    b->cap = c;
    return 0;
}

int tk_buf_append(tk_buf *b, const void *src, size_t n)
{
    if (n > SIZE_MAX - b->n - 1 || tk_buf_reserve(b, b->n + n + 1) != 0) return -1;
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
    return 0;
}

void tk_buf_free(tk_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

int tk_ids_push(tk_ids *v, int32_t id)
{
    if (v->n == v->cap) {
        size_t c = v->cap ? 2 * v->cap : 256;
        int32_t *p = (int32_t *)realloc(v->p, c * sizeof *p);
        if (!p) return -1;
        v->p = p;
        v->cap = c;
    }
    v->p[v->n++] = id;
    return 0;
}

static inline uint64_t mix64_(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

uint64_t tk_hash(const void *p, size_t n)
{
    const uint8_t *s = (const uint8_t *)p;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)n * 0xff51afd7ed558ccdULL);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h ^= v * 0xbf58476d1ce4e5b9ULL;
        h = ((h << 27) | (h >> 37)) * 0x94d049bb133111ebULL;
        s += 8;
        n -= 8;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)s[i] << (8 * i);
    h ^= v * 0xbf58476d1ce4e5b9ULL;
    return mix64_(h);
}

static size_t pow2_at_least_(size_t n)
{
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

int tk_strmap_init(tk_strmap *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    m->cap = pow2_at_least_(expected * 2 + 1);
    m->e = (struct tk_sm_entry *)calloc(m->cap, sizeof *m->e);
    return m->e ? 0 : -1;
}

static int strmap_grow_(tk_strmap *m)
{
    size_t nc = m->cap * 2;
    struct tk_sm_entry *ne = (struct tk_sm_entry *)calloc(nc, sizeof *ne);
    if (!ne) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->e[i].len1) continue;
        uint64_t h = tk_hash(m->pool.p + m->e[i].off, m->e[i].len1 - 1);
        size_t j = (size_t)h & (nc - 1);
        while (ne[j].len1) j = (j + 1) & (nc - 1);
        ne[j] = m->e[i];
    }
    free(m->e);
    m->e = ne;
    m->cap = nc;
    return 0;
}

int tk_strmap_put(tk_strmap *m, const void *key, size_t len, int32_t val)
{
    if (len >= UINT32_MAX - 1 || m->pool.n + len >= UINT32_MAX) return -1;
    if ((m->n + 1) * 2 > m->cap && strmap_grow_(m) != 0) return -1;
    const uint64_t h = tk_hash(key, len);
    size_t j = (size_t)h & (m->cap - 1);
    for (;;) {
        struct tk_sm_entry *e = &m->e[j];
        if (!e->len1) break;
        if (e->tag == (uint32_t)h && e->len1 == len + 1 && memcmp(m->pool.p + e->off, key, len) == 0) {
            e->val = val;
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    const size_t off = m->pool.n;
    if (tk_buf_append(&m->pool, key, len) != 0) return -1;
    m->e[j].off = (uint32_t)off;
    m->e[j].len1 = (uint32_t)len + 1;
    m->e[j].val = val;
    m->e[j].tag = (uint32_t)h;
    m->n++;
    return 1;
}

int tk_strmap_get(const tk_strmap *m, const void *key, size_t len, int32_t *val)
{
    return tk_strmap_get_h(m, key, len, tk_hash(key, len), val);
}

int tk_strmap_get_h(const tk_strmap *m, const void *key, size_t len, uint64_t h, int32_t *val)
{
    if (!m->cap) return 0;
    size_t j = (size_t)h & (m->cap - 1);
    for (;;) {
        const struct tk_sm_entry *e = &m->e[j];
        if (!e->len1) return 0;
        if (e->tag == (uint32_t)h && e->len1 == len + 1 && memcmp(m->pool.p + e->off, key, len) == 0) {
            *val = e->val;
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
}

void tk_strmap_free(tk_strmap *m)
{
    free(m->e);
    tk_buf_free(&m->pool);
    memset(m, 0, sizeof *m);
}

int tk_pairmap_init(tk_pairmap *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    m->cap = pow2_at_least_(expected * 2 + 1);
    m->e = (struct tk_pm_entry *)calloc(m->cap, sizeof *m->e);
    return m->e ? 0 : -1;
}

static int pairmap_grow_(tk_pairmap *m)
{
    size_t nc = m->cap * 2;
    struct tk_pm_entry *ne = (struct tk_pm_entry *)calloc(nc, sizeof *ne);
    if (!ne) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->e[i].key1) continue;
        size_t j = (size_t)mix64_(m->e[i].key1 - 1) & (nc - 1);
        while (ne[j].key1) j = (j + 1) & (nc - 1);
        ne[j] = m->e[i];
    }
    free(m->e);
    m->e = ne;
    m->cap = nc;
    return 0;
}

int tk_pairmap_put(tk_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t nid)
{
    if ((m->n + 1) * 2 > m->cap && pairmap_grow_(m) != 0) return -1;
    const uint64_t k = tk_pair_key(a, b);
    size_t j = (size_t)mix64_(k) & (m->cap - 1);
    while (m->e[j].key1 && m->e[j].key1 != k + 1) j = (j + 1) & (m->cap - 1);
    if (!m->e[j].key1) m->n++;
    m->e[j].key1 = k + 1;
    m->e[j].rank = rank;
    m->e[j].nid = nid;
    return 0;
}

static inline int pairmap_get_(const tk_pairmap *m, int32_t a, int32_t b, int32_t *rank, int32_t *nid)
{
    if (!m->cap) return 0;
    const uint64_t k = tk_pair_key(a, b);
    size_t j = (size_t)mix64_(k) & (m->cap - 1);
    for (;;) {
        const struct tk_pm_entry *e = &m->e[j];
        if (e->key1 == k + 1) {
            *rank = e->rank;
            *nid = e->nid;
            return 1;
        }
        if (!e->key1) return 0;
        j = (j + 1) & (m->cap - 1);
    }
}

void tk_pairmap_free(tk_pairmap *m)
{
    free(m->e);
    memset(m, 0, sizeof *m);
}

/* ---- word cache ------------------------------------------------------------------------------ */

#define TK_CACHE_CAP ((size_t)1 << 18)
#define TK_CACHE_MAX_KEY 255
#define TK_CACHE_MAX_POOL ((size_t)64 << 20)

/* first level: direct-mapped, key and ids inline (one cache line per probe) */
static inline int l1_get_(const tk_cache *c, uint64_t h, const uint8_t *key, size_t n, tk_ids *out, int *ok)
{
    if (!c->l1 || n > TK_L1_KEY) return 0;
    const struct tk_l1_entry *e = &c->l1[h & (TK_L1_SLOTS - 1)];
    if (e->key_len != n || e->tag != (uint16_t)(h >> 48)) return 0;
    for (size_t i = 0; i < n; i++) /* n <= 16: inline, no call */
        if (e->key[i] != key[i]) return 0;
    for (int i = 0; i < e->n_ids; i++)
        if (tk_ids_push(out, e->ids[i]) != 0) {
            *ok = 0;
            return 1;
        }
    return 1;
}

static inline void l1_put_(tk_cache *c, uint64_t h, const uint8_t *key, size_t n, const int32_t *ids, size_t n_ids)
{
    if (n > TK_L1_KEY || n_ids > TK_L1_IDS || n == 0) return;
    if (!c->l1) {
        c->l1 = (struct tk_l1_entry *)calloc(TK_L1_SLOTS, sizeof *c->l1);
        if (!c->l1) return;
    }
    struct tk_l1_entry *e = &c->l1[h & (TK_L1_SLOTS - 1)];
    e->key_len = (uint8_t)n;
    e->n_ids = (uint8_t)n_ids;
    e->tag = (uint16_t)(h >> 48);
    memcpy(e->key, key, n);
    memcpy(e->ids, ids, n_ids * sizeof *ids);
}

static void cache_clear_(tk_cache *c)
{
    if (c->e) memset(c->e, 0, c->cap * sizeof *c->e);
    c->n = 0;
    c->keys.n = 0;
    c->ids.n = 0;
}

static int cache_get_(const tk_cache *c, uint64_t h, const uint8_t *key, size_t n, const int32_t **ids,
                      size_t *n_ids)
{
    if (!c->e) return 0;
    size_t j = (size_t)h & (c->cap - 1);
    for (;;) {
        const struct tk_cache_entry *e = &c->e[j];
        if (!e->h) return 0;
        if (e->h == h && e->key_len == n && memcmp(c->keys.p + e->key_off, key, n) == 0) {
            *ids = (const int32_t *)(const void *)(c->ids.p + e->ids_off);
            *n_ids = e->n_ids;
            return 1;
        }
        j = (j + 1) & (c->cap - 1);
    }
}

static void cache_put_(tk_cache *c, uint64_t h, const uint8_t *key, size_t n, const int32_t *ids, size_t n_ids)
{
    if (n > TK_CACHE_MAX_KEY || n_ids > 0xFFFF) return;
    if (!c->e) {
        c->e = (struct tk_cache_entry *)calloc(1024, sizeof *c->e);
        if (!c->e) return; /* the cache is an optimisation: without memory, go without */
        c->cap = 1024;
    }
    if ((c->n + 1) * 2 > c->cap && c->cap < TK_CACHE_CAP) { /* grow (rehash) up to TK_CACHE_CAP */
        const size_t nc = c->cap * 2;
        struct tk_cache_entry *ne = (struct tk_cache_entry *)calloc(nc, sizeof *ne);
        if (ne) {
            for (size_t i = 0; i < c->cap; i++) {
                if (!c->e[i].h) continue;
                size_t j = (size_t)c->e[i].h & (nc - 1);
                while (ne[j].h) j = (j + 1) & (nc - 1);
                ne[j] = c->e[i];
            }
            free(c->e);
            c->e = ne;
            c->cap = nc;
        }
    }
    if ((c->n + 1) * 2 > c->cap || c->keys.n + n > TK_CACHE_MAX_POOL || c->ids.n + 4 * n_ids > TK_CACHE_MAX_POOL)
        cache_clear_(c);
    /* ids pool aligned to 4 bytes */
    const size_t ids_off = (c->ids.n + 3) & ~(size_t)3;
    if (tk_buf_reserve(&c->ids, ids_off + 4 * n_ids + 1) != 0) return;
    const size_t key_off = c->keys.n;
    if (tk_buf_append(&c->keys, key, n) != 0) return;
    memcpy(c->ids.p + ids_off, ids, 4 * n_ids);
    c->ids.n = ids_off + 4 * n_ids;
    size_t j = (size_t)h & (c->cap - 1);
    while (c->e[j].h) j = (j + 1) & (c->cap - 1);
    c->e[j].h = h;
    c->e[j].key_off = (uint32_t)key_off;
    c->e[j].key_len = (uint16_t)n;
    c->e[j].ids_off = (uint32_t)ids_off;
    c->e[j].n_ids = (uint16_t)n_ids;
    c->n++;
}

/* ---- model ----------------------------------------------------------------------------------- */

rs_tok_model *tk_model_new(void)
{
    rs_tok_model *m = (rs_tok_model *)calloc(1, sizeof *m);
    if (!m) return NULL;
    m->unk_id = -1;
    for (int b = 0; b < 256; b++) m->fallback_id[b] = m->byte_id[b] = -1;
    return m;
}

void tk_model_free(rs_tok_model *m)
{
    if (!m) return;
    free(m->dec_off);
    free(m->dec_len1);
    tk_buf_free(&m->dec_pool);
    tk_strmap_free(&m->piece);
    tk_pairmap_free(&m->merges);
    for (int i = 0; i < m->n_steps; i++) tk_regex_free(&m->steps[i].re);
    tk_regex_free(&m->tiktoken_re);
    tk_buf_free(&m->added_pool);
    tk_addset_free(&m->added_raw);
    tk_addset_free(&m->added_norm);
    free(m->cache.e);
    free(m->cache.l1);
    tk_buf_free(&m->cache.keys);
    tk_buf_free(&m->cache.ids);
    free(m->sym);
    free(m->heap);
#ifdef RS_HAVE_PCRE2
    if (m->md) pcre2_match_data_free(m->md);
    if (m->mctx) pcre2_match_context_free(m->mctx);
#endif
    for (int i = 0; i < 4; i++) tk_buf_free(&m->work[i]);
    free(m->tmp_ids);
    free(m);
}

int tk_model_set_ids(rs_tok_model *m, int n_ids)
{
    m->n_ids = n_ids;
    m->dec_off = (uint32_t *)calloc((size_t)(n_ids ? n_ids : 1), sizeof(uint32_t));
    m->dec_len1 = (uint32_t *)calloc((size_t)(n_ids ? n_ids : 1), sizeof(uint32_t));
    return m->dec_off && m->dec_len1 ? 0 : -1;
}

int tk_model_set_decode(rs_tok_model *m, int32_t id, const void *bytes, size_t n)
{
    if (id < 0 || id >= m->n_ids || m->dec_pool.n + n >= UINT32_MAX) return -1;
    m->dec_off[id] = (uint32_t)m->dec_pool.n;
    m->dec_len1[id] = (uint32_t)n + 1;
    return tk_buf_append(&m->dec_pool, bytes, n);
}

/* ---- BPE of one piece ------------------------------------------------------------------------ */

static inline int heap_less_(const tk_heap_e *a, const tk_heap_e *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push_(tk_heap_e *h, size_t *n, tk_heap_e x)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less_(&x, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static tk_heap_e heap_pop_(tk_heap_e *h, size_t *n)
{
    tk_heap_e top = h[0], x = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less_(&h[c + 1], &h[c])) c++;
        if (!heap_less_(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = x;
    return top;
}

/* rank and result of merging symbols l and r; 0 when the pair does not merge */
static inline int pair_rank_(const rs_tok_model *m, const uint8_t *piece, const tk_sym *s, int32_t l, int32_t r,
                             int32_t *rank, int32_t *nid)
{
    if (m->merge_by_bytes) {
        int32_t id;
        if (!tk_strmap_get(&m->piece, piece + s[l].start, (size_t)(s[r].start + s[r].len - s[l].start), &id)) return 0;
        *rank = id;
        *nid = id;
        return 1;
    }
    return pairmap_get_(&m->merges, s[l].id, s[r].id, rank, nid);
}

static int sym_reserve_(rs_tok_model *m, size_t n)
{
    if (n <= m->sym_cap) return 0;
    size_t c = m->sym_cap ? m->sym_cap : 64;
    while (c < n) c *= 2;
    tk_sym *s = (tk_sym *)realloc(m->sym, c * sizeof *s);
    if (!s) return -1;
    m->sym = s;
    tk_heap_e *h = (tk_heap_e *)realloc(m->heap, 2 * c * sizeof *h);
    if (!h) return -1;
    m->heap = h;
    m->sym_cap = c;
    return 0;
}

typedef struct sym_builder {
    rs_tok_model *m;
    size_t n;
    int32_t unk_id; /* pending unknown: id, or -1 */
    uint32_t unk_start, unk_len;
} sym_builder;

static int sb_add_(sym_builder *b, int32_t id, uint32_t start, uint32_t len)
{
    if (sym_reserve_(b->m, b->n + 1) != 0) return -1;
    tk_sym *s = &b->m->sym[b->n];
    s->id = id;
    s->start = start;
    s->len = len;
    s->prev = (int32_t)b->n - 1;
    s->next = (int32_t)b->n + 1;
    b->n++;
    return 0;
}

/* HF BPE::merge_word for one character: `key` is the vocabulary string of the character
 * (the byte-mapped char for byte-level vocabularies), [start, start+len) its bytes in the piece */
static rs_status sb_char_(sym_builder *b, int32_t id, const uint8_t *key, size_t key_len, uint32_t start, uint32_t len)
{
    rs_tok_model *m = b->m;
    if (id >= 0) {
        if (b->unk_id >= 0) {
            if (sb_add_(b, b->unk_id, b->unk_start, b->unk_len) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
            b->unk_id = -1;
        }
        if (sb_add_(b, id, start, len) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
        return RS_OK;
    }
    if (m->byte_fallback) {
        int all = 1;
        for (size_t i = 0; i < key_len; i++)
            if (m->fallback_id[key[i]] < 0) all = 0;
        if (all) {
            for (size_t i = 0; i < key_len; i++)
                if (sb_add_(b, m->fallback_id[key[i]], start, 1) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
            return RS_OK; /* a pending unknown stays pending (as HF's merge_word) */
        }
    }
    if (m->unk_id == -2) return rs_error_set(RS_E_FORMAT, "tokenizer: unk_token is needed but not in the vocabulary");
    if (m->unk_id >= 0) {
        if (b->unk_id >= 0 && m->fuse_unk) {
            b->unk_len += len;
        } else {
            if (b->unk_id >= 0 && sb_add_(b, b->unk_id, b->unk_start, b->unk_len) != 0)
                return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
            b->unk_id = m->unk_id;
            b->unk_start = start;
            b->unk_len = len;
        }
    }
    return RS_OK; /* no unk token: the character is dropped (as HF) */
}

rs_status tk_bpe_piece(rs_tok_model *m, const uint8_t *piece, size_t n, tk_ids *out)
{
    if (n == 0) return RS_OK;
    if (n >= UINT32_MAX / 2) return rs_error_set(RS_E_UNSUPPORTED, "tokenizer: a pre-token of %zu bytes", n);
    /* the cache holds final results (whole-piece hits included), so it comes first */
    const uint64_t h0 = tk_hash(piece, n), h = h0 | 1;
    int ok = 1;
    if (l1_get_(&m->cache, h, piece, n, out, &ok)) return ok ? RS_OK : rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
    const int32_t *hit;
    size_t n_hit;
    if (cache_get_(&m->cache, h, piece, n, &hit, &n_hit)) {
        for (size_t i = 0; i < n_hit; i++)
            if (tk_ids_push(out, hit[i]) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
        l1_put_(&m->cache, h, piece, n, hit, n_hit);
        return RS_OK;
    }
    int32_t id;
    if (m->ignore_merges && tk_strmap_get_h(&m->piece, piece, n, h0, &id)) {
        if (tk_ids_push(out, id) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
        l1_put_(&m->cache, h, piece, n, &id, 1);
        cache_put_(&m->cache, h, piece, n, &id, 1);
        return RS_OK;
    }
    /* initial symbols */
    sym_builder b = {m, 0, -1, 0, 0};
    if (m->byte_level || m->merge_by_bytes) {
        for (size_t i = 0; i < n; i++) {
            char key[4];
            size_t kl = m->merge_by_bytes ? (key[0] = (char)piece[i], 1) : tk_utf8_encode(tk_byte_to_cp(piece[i]), key);
            RS_TRY(sb_char_(&b, m->byte_id[piece[i]], (const uint8_t *)key, kl, (uint32_t)i, 1));
        }
    } else {
        for (size_t i = 0; i < n;) {
            int cl = tk_utf8_valid_at(piece + i, n - i);
            if (cl <= 0) cl = 1; /* cannot happen: pieces are valid UTF-8 */
            int32_t cid = -1;
            if (!tk_strmap_get(&m->piece, piece + i, (size_t)cl, &cid)) cid = -1;
            RS_TRY(sb_char_(&b, cid, piece + i, (size_t)cl, (uint32_t)i, (uint32_t)cl));
            i += (size_t)cl;
        }
    }
    if (b.unk_id >= 0 && sb_add_(&b, b.unk_id, b.unk_start, b.unk_len) != 0)
        return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
    const size_t ns = b.n;
    if (ns == 0) return RS_OK;
    tk_sym *s = m->sym;
    s[ns - 1].next = -1;
    /* merges */
    size_t nh = 0;
    tk_heap_e *heap = m->heap;
    for (size_t i = 0; i + 1 < ns; i++) {
        int32_t rank, nid;
        if (pair_rank_(m, piece, s, (int32_t)i, (int32_t)i + 1, &rank, &nid))
            heap_push_(heap, &nh, (tk_heap_e){rank, (int32_t)i, (int32_t)i + 1, nid, s[i].id, s[i + 1].id});
    }
    while (nh) {
        const tk_heap_e top = heap_pop_(heap, &nh);
        tk_sym *l = &s[top.left];
        if (l->len == 0 || l->next != top.right || l->id != top.id_l || s[top.right].id != top.id_r ||
            s[top.right].len == 0)
            continue; /* stale */
        tk_sym *r = &s[top.right];
        l->id = top.nid;
        l->len += r->len;
        l->next = r->next;
        r->len = 0;
        if (l->next >= 0) s[l->next].prev = top.left;
        int32_t rank, nid;
        if (l->prev >= 0 && pair_rank_(m, piece, s, l->prev, top.left, &rank, &nid)) {
            if (nh + 1 > 2 * m->sym_cap) break; /* cannot happen: at most 2 pushes per merge */
            heap_push_(heap, &nh, (tk_heap_e){rank, l->prev, top.left, nid, s[l->prev].id, l->id});
        }
        if (l->next >= 0 && pair_rank_(m, piece, s, top.left, l->next, &rank, &nid)) {
            if (nh + 1 > 2 * m->sym_cap) break;
            heap_push_(heap, &nh, (tk_heap_e){rank, top.left, l->next, nid, l->id, s[l->next].id});
        }
    }
    const size_t first = out->n;
    for (int32_t i = 0; i >= 0; i = s[i].next)
        if (tk_ids_push(out, s[i].id) != 0) return rs_error_set(RS_E_NOMEM, "tokenizer: out of memory");
    l1_put_(&m->cache, h, piece, n, out->p + first, out->n - first);
    cache_put_(&m->cache, h, piece, n, out->p + first, out->n - first);
    return RS_OK;
}
