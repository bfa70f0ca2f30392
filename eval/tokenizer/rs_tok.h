/* rs_tok.h — private internals of the BPE tokenizers (eval/tokenizer/; docs/tokenizers.md).
 *
 * One model struct serves both loaders: rs_tok_json.c (HF tokenizer.json) and rs_tok_tiktoken.c
 * (tiktoken ranks) fill it; rs_tok_encode.c runs the pipeline
 *   input bytes -> valid UTF-8 (Latin-1 / replace / refuse) -> added tokens (raw) -> normalizer
 *   (NFC) -> added tokens (normalized) -> pre-tokenizer steps (Split regexes, ByteLevel) -> BPE
 * and rs_tok_bpe.c holds the vocabulary tables, the merge loop and the word cache.
 */
#ifndef RS_TOK_H
#define RS_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_tokenizer.h"

#ifdef RS_HAVE_PCRE2
#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#endif

/* ---- small containers ------------------------------------------------------------------------ */

typedef struct tk_buf {
    char *p;
    size_t n, cap;
} tk_buf;

int tk_buf_reserve(tk_buf *b, size_t cap);               /* 0 ok, -1 out of memory */
int tk_buf_append(tk_buf *b, const void *src, size_t n); /* 0 ok, -1 out of memory */
void tk_buf_free(tk_buf *b);

uint64_t tk_hash(const void *p, size_t n);

/* byte string -> int32 (keys copied into the map's own pool); last insert of a key wins */
typedef struct tk_strmap {
    struct tk_sm_entry {
        uint32_t off, len1; /* len1 = key length + 1; 0 = empty slot (so tables start from calloc) */
        int32_t val;
        uint32_t tag; /* low 32 bits of the hash */
    } *e;
    size_t cap, n; /* cap: power of two, 0 = empty map */
    tk_buf pool;
} tk_strmap;

int tk_strmap_init(tk_strmap *m, size_t expected);                     /* 0 ok */
int tk_strmap_put(tk_strmap *m, const void *key, size_t len, int32_t val); /* 1 new, 0 replaced, -1 nomem */
int tk_strmap_get(const tk_strmap *m, const void *key, size_t len, int32_t *val); /* 1 found */
int tk_strmap_get_h(const tk_strmap *m, const void *key, size_t len, uint64_t h, int32_t *val); /* h = tk_hash(key) */
void tk_strmap_free(tk_strmap *m);

/* (id, id) -> (rank, new id); last insert of a pair wins (HF's HashMap collect) */
typedef struct tk_pairmap {
    struct tk_pm_entry {
        uint64_t key1; /* key + 1; 0 = empty */
        int32_t rank, nid;
    } *e;
    size_t cap, n;
} tk_pairmap;

int tk_pairmap_init(tk_pairmap *m, size_t expected);
int tk_pairmap_put(tk_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t nid); /* 0 ok, -1 nomem */
static inline uint64_t tk_pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }
void tk_pairmap_free(tk_pairmap *m);

/* ---- the model ------------------------------------------------------------------------------- */

enum { TK_SPLIT_REMOVED = 0, TK_SPLIT_ISOLATED, TK_SPLIT_MERGED_PREV, TK_SPLIT_MERGED_NEXT, TK_SPLIT_CONTIGUOUS };
enum { TK_STEP_SPLIT = 1, TK_STEP_BYTELEVEL = 2 };
#define TK_MAX_STEPS 16

/* Limits of one split-regex match call (rs_tok_regex.c), set by replayssm rather than left to the
 * PCRE2 build's defaults (10^7 / 10^7 / 20 GB): a catastrophically backtracking pattern from a
 * hostile tokenizer.json stops the encode with RS_E_UNSUPPORTED after at most this much work on
 * one pre-token. The published split patterns need at most a few match() calls per token (the
 * bundled books: test_bpe_tokenizer measures the margin). JIT code ignores the depth and heap
 * limits; its stack is PCRE2's default 32 KiB (PCRE2_ERROR_JIT_STACKLIMIT gives the same error). */
#ifndef TK_RE_MATCH_LIMIT
#define TK_RE_MATCH_LIMIT 1000000u /* match() calls (backtracking points) per match */
#endif
#define TK_RE_DEPTH_LIMIT 100000u      /* nested backtracking depth (interpreter only) */
#define TK_RE_HEAP_LIMIT_KIB 65536u    /* 64 MiB of backtracking frames (interpreter only) */

typedef struct tk_regex {
#ifdef RS_HAVE_PCRE2
    pcre2_code *code;
    int jit;
#else
    void *code;
#endif
} tk_regex;

typedef struct tk_step {
    int type;
    tk_regex re;          /* Split: the pattern; ByteLevel with use_regex: the GPT-2 pattern */
    int behavior, invert; /* Split */
    int add_prefix_space, use_regex; /* ByteLevel */
} tk_step;

typedef struct tk_added {
    int32_t id;
    uint32_t off, len; /* match bytes in model->added_pool */
    uint8_t special, single_word, lstrip, rstrip;
} tk_added;

/* leftmost-longest matcher over one set of added tokens */
typedef struct tk_addset {
    tk_added *tok;   /* sorted by first byte, then length descending */
    size_t n;
    uint32_t first[257]; /* tokens with first byte b: tok[first[b] .. first[b+1]) */
} tk_addset;

/* word cache: piece bytes -> ids; a small direct-mapped first level with the key and ids inline,
 * then an open-addressing second level (cleared when full) */
#define TK_L1_SLOTS 8192
#define TK_L1_KEY 16
#define TK_L1_IDS 3
typedef struct tk_cache {
    struct tk_l1_entry {
        uint8_t key_len, n_ids; /* key_len 0: empty */
        uint16_t tag;           /* top bits of the hash */
        int32_t ids[TK_L1_IDS];
        uint8_t key[TK_L1_KEY];
    } *l1;
    struct tk_cache_entry {
        uint64_t h;    /* 0 = empty */
        uint32_t key_off, ids_off;
        uint16_t key_len, n_ids;
    } *e;
    size_t cap, n;
    tk_buf keys, ids;
} tk_cache;

typedef struct tk_sym {
    int32_t id;
    int32_t prev, next; /* -1 at the ends */
    uint32_t start, len; /* bytes of the piece; len 0 = merged away */
} tk_sym;

typedef struct tk_heap_e {
    int32_t rank, left, right, nid;
    int32_t id_l, id_r;
} tk_heap_e;

struct rs_tok_model {
    int format; /* RS_TOKFMT_HF_JSON or RS_TOKFMT_TIKTOKEN */
    int n_ids;  /* largest id + 1 */
    /* per id: decode bytes (dec_len1 = length + 1; 0 = unassigned id) */
    uint32_t *dec_off, *dec_len1;
    tk_buf dec_pool;
    /* whole-piece lookup and initial symbols: match bytes -> id (raw bytes for byte-level) */
    tk_strmap piece;
    tk_pairmap merges;   /* HF: (a, b) -> (rank = merge index, id(a b)) */
    int merge_by_bytes;  /* tiktoken: a pair's rank is the rank of its concatenated bytes */
    int byte_level;      /* a ByteLevel pre-tokenizer: pieces are raw bytes (vocab unmapped) */
    int ignore_merges;   /* whole pre-token lookup first (tiktoken: always) */
    int byte_fallback, fuse_unk;
    int32_t unk_id;      /* -1: none */
    int32_t fallback_id[256];  /* <0xXX> ids, -1 if absent */
    int32_t byte_id[256];      /* byte-level: id of the single byte's char, -1 if absent */
    int nfc;
    int n_steps;
    tk_step steps[TK_MAX_STEPS];
    int drop_gaps;       /* tiktoken: text the split regex does not match is dropped */
    tk_regex tiktoken_re;
    tk_buf added_pool;
    tk_addset added_raw, added_norm; /* HF normalized=false / normalized=true sets (tiktoken: raw) */
    /* scratch (not thread-safe) */
    tk_cache cache;
    tk_sym *sym;
    size_t sym_cap;
    tk_heap_e *heap;
    size_t heap_cap;
#ifdef RS_HAVE_PCRE2
    pcre2_match_data *md;
    pcre2_match_context *mctx; /* the TK_RE_* limits */
#endif
    tk_buf work[4]; /* utf-8 input, normalized gap, step pieces, byte-level prefix */
    int32_t *tmp_ids;
    size_t tmp_cap;
};
typedef struct rs_tok_model rs_tok_model;

/* rs_tok_bpe.c */
rs_tok_model *tk_model_new(void);
void tk_model_free(rs_tok_model *m);
int tk_model_set_ids(rs_tok_model *m, int n_ids);                    /* allocate per-id tables; 0 ok */
int tk_model_set_decode(rs_tok_model *m, int32_t id, const void *bytes, size_t n); /* 0 ok */
/* BPE of one piece (bytes after pre-tokenization, raw for byte-level): appends ids to *out */
typedef struct tk_ids {
    int32_t *p;
    size_t n, cap;
} tk_ids;
int tk_ids_push(tk_ids *v, int32_t id);
rs_status tk_bpe_piece(rs_tok_model *m, const uint8_t *piece, size_t n, tk_ids *out);

/* rs_tok_regex.c */
rs_status tk_regex_compile(tk_regex *re, const char *pattern, size_t len, int literal, int multiline,
                           const char *label);
void tk_regex_free(tk_regex *re);
/* next match at or after `from` in s[0..n): 1 and [*ms, *me), 0 none, <0 error (message set) */
int tk_regex_next(rs_tok_model *m, const tk_regex *re, const char *s, size_t n, size_t from, size_t *ms, size_t *me);

/* rs_tok_nfc.c: NFC of valid UTF-8 s[0..n) appended to out; returns 0, -1 on out of memory */
int tk_nfc(const char *s, size_t n, tk_buf *out);
int tk_nfc_is_quick(const char *s, size_t n); /* 1: s is certainly NFC already */

/* rs_tok_encode.c */
rs_status tk_encode(rs_tok_model *m, const rs_tokenizer *tok, const char *text, size_t len, int32_t *ids,
                    size_t max_ids, size_t *n_out);
int tk_addset_build(tk_addset *s, const tk_added *toks, size_t n);
void tk_addset_free(tk_addset *s);
int tk_addsets_finish(rs_tok_model *m); /* sort both sets once added_pool is final; 0 ok */
/* UTF-8: length of the valid sequence at s[0..n) (1..4), or 0 when invalid there */
int tk_utf8_valid_at(const uint8_t *s, size_t n);
size_t tk_utf8_encode(uint32_t cp, char *out);

/* loaders */
rs_status tk_load_json(const char *path, const char *text, size_t len, rs_tok_model **out);
rs_status tk_load_tiktoken(const char *path, const char *text, size_t len, const char *pat_str,
                           const char *specials_json, int nfc, const char *file_sha256, rs_tok_model **out);

/* GPT-2 byte <-> unicode map (tokenizers' bytes_char) */
uint32_t tk_byte_to_cp(uint8_t b);
int tk_cp_to_byte(uint32_t cp); /* -1 when cp is not in the map */

#endif /* RS_TOK_H */
