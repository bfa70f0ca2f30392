/* cmd_tokenize.c — `replayssm tokenize --model DIR [--out ids.bin] [--decode] FILE...`: the ids the
 * evaluator gives a text (rs_tokenizer_open on DIR, the same choice and checks as `kl`), for
 * checking against other tools (HF tokenizers, tiktoken). Without --out: one line per FILE, its
 * ids space-separated; with --out: the ids of every FILE, in order, as little-endian uint32.
 * --decode: each FILE is such a uint32 file, and its ids' bytes go to stdout (or --out). Every FILE
 * is read by rs_tokenizer_read_input: a regular file of at most 1 GiB, or a one-line error.
 * Exit status as `kl`: a refused tokenizer (rs_tokenizer_open: missing or malformed files, ids >=
 * vocab_size, a BPE beside a byte model) is a usage error, 2; I/O and input failures 1. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_opts.h"
#include "rs_cli.h"
#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/eval/rs_outfile.h"
#include "replayssm/eval/rs_text.h"
#include "replayssm/eval/rs_tokenizer.h"

static const char k_epilog[] =
    "Without --out: one line per FILE, ids separated by spaces. With --out the ids reach FILE only when\n"
    "every input was read and encoded (an existing FILE needs --force and stays as it was on failure).\n"
    "Bytes that are not valid UTF-8 (a BPE tokenizer's input) are handled by --invalid-utf8: each invalid\n"
    "sequence becomes U+FFFD (replace, the default: one stray byte changes one character), the file is read\n"
    "as Latin-1 (latin1), or refused (error); a warning names the first invalid byte offset\n"
    "(docs/tokenizers.md). Each FILE must be a regular file of at most 1024 MiB.\n"
    "Exit status: 0 ok, 1 failure (I/O, a missing model folder or FILE, a bad FILE), 2 usage error or a\n"
    "refused tokenizer (missing or malformed tokenizer files, ids >= the model's vocab_size), as `kl`.";

/* text[*len] as a BPE tokenizer's Unicode input (rs_text.h; the byte tokenizer takes the bytes): a
 * warning naming the first invalid offset; *text replaced by the decoded copy when one was made */
static rs_status decode_text_(const rs_tokenizer *tok, rs_invalid_utf8 mode, const char *path, char **text, size_t *len)
{
    if (tok->kind != RS_TOKENIZER_BPE) return RS_OK;
    char *dec = NULL;
    size_t dn = 0;
    rs_text_report rep;
    const rs_status st = rs_text_decode(*text, *len, mode, path, &dec, &dn, &rep);
    if (st != RS_OK) return st;
    if (rep.n_invalid) {
        char esc[4 * 1024 + 1];
        fprintf(stderr, "replayssm tokenize: warning: %s is not valid UTF-8: byte 0x%02X at offset %zu (%zu invalid "
                        "sequence%s): %s (--invalid-utf8 %s)\n",
                rs_cli_esc(path, esc, sizeof esc), rep.first_byte, rep.first, rep.n_invalid, rep.n_invalid == 1 ? "" : "s",
                mode == RS_INVALID_UTF8_LATIN1 ? "the whole file read as Latin-1" : "each replaced by U+FFFD",
                rs_invalid_utf8_name(mode));
        free(*text);
        *text = dec;
        *len = dn;
    }
    return RS_OK;
}

static int encode_one_(const rs_tokenizer *tok, rs_invalid_utf8 mode, const char *path, FILE *out, int binary)
{
    size_t len = 0, n = 0;
    char *text = NULL; /* a regular file of at most RS_TOKENIZER_INPUT_MAX_BYTES (the message names path) */
    rs_status st = rs_tokenizer_read_input(path, &text, &len);
    if (st != RS_OK) return rs_cli_fail("tokenize", "cannot read the input", st);
    st = decode_text_(tok, mode, path, &text, &len);
    if (st != RS_OK) {
        free(text);
        return rs_cli_fail("tokenize", "cannot decode the input", st);
    }
    st = rs_tokenizer_count(tok, text, len, &n);
    int32_t *ids = st == RS_OK ? (int32_t *)malloc((n ? n : 1) * sizeof *ids) : NULL;
    if (st == RS_OK && !ids) st = rs_error_set(RS_E_NOMEM, "out of memory for %zu ids", n);
    size_t got = 0;
    if (st == RS_OK) st = rs_tokenizer_encode(tok, text, len, ids, n, &got);
    free(text);
    if (st != RS_OK) {
        free(ids);
        return rs_cli_fail("tokenize", path, st);
    }
    int ok = 1;
    for (size_t i = 0; i < got && ok; i++) {
        if (binary) {
            const uint32_t v = (uint32_t)ids[i];
            const unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                                         (unsigned char)(v >> 24)};
            ok = fwrite(le, 1, 4, out) == 4;
        } else {
            ok = fprintf(out, i ? " %d" : "%d", (int)ids[i]) > 0;
        }
    }
    if (!binary && ok) ok = fputc('\n', out) != EOF;
    free(ids);
    if (!ok) return rs_cli_fail("tokenize", "cannot write the ids", rs_error_set(RS_E_IO, "write failed"));
    return 0;
}

static int decode_one_(const rs_tokenizer *tok, const char *path, FILE *out)
{
    size_t len = 0, blen = 0;
    char *raw = NULL;
    const rs_status rst = rs_tokenizer_read_input(path, &raw, &len);
    if (rst != RS_OK) return rs_cli_fail("tokenize", "cannot read the ids", rst);
    if (len % 4) {
        free(raw);
        return rs_cli_fail("tokenize", "cannot decode",
                           rs_error_set(RS_E_FORMAT, "%s: %zu bytes is not a whole number of uint32 ids", path, len));
    }
    const size_t n = len / 4;
    int32_t *ids = (int32_t *)malloc((n ? n : 1) * sizeof *ids);
    rs_status st = ids ? RS_OK : rs_error_set(RS_E_NOMEM, "out of memory");
    for (size_t i = 0; st == RS_OK && i < n; i++) {
        const unsigned char *p = (const unsigned char *)raw + 4 * i;
        const uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (v > INT32_MAX) st = rs_error_set(RS_E_FORMAT, "%s: id %lu at index %zu is out of range", path, (unsigned long)v, i);
        else ids[i] = (int32_t)v;
    }
    free(raw);
    char *bytes = NULL;
    if (st == RS_OK) st = rs_tokenizer_decode(tok, ids, n, NULL, 0, &blen);
    if (st == RS_E_SHAPE) st = RS_OK; /* sizing call */
    if (st == RS_OK && !(bytes = (char *)malloc(blen ? blen : 1))) st = rs_error_set(RS_E_NOMEM, "out of memory");
    if (st == RS_OK) st = rs_tokenizer_decode(tok, ids, n, bytes, blen, &blen);
    free(ids);
    if (st != RS_OK) {
        free(bytes);
        return rs_cli_fail("tokenize", path, st);
    }
    const int ok = fwrite(bytes, 1, blen, out) == blen;
    free(bytes);
    if (!ok) return rs_cli_fail("tokenize", "cannot write the bytes", rs_error_set(RS_E_IO, "write failed"));
    return 0;
}

static int tokenize_(const char *model, const char *out_path, int force, rs_invalid_utf8 mode, int decode, char **files,
                     size_t n_files);

int rs_cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *out_path = NULL, *invalid = "replace";
    int decode = 0, force = 0;
    const rs_cli_opt opts[] = {
        {"--model", NULL, RS_CLI_STR, "DIR", "a checkpoint folder: its tokenizer.json(.gz) or *.tiktoken(.gz), or the\n"
         "byte tokenizer of a vocab-256 config.json (the tokenizer `kl` would use)", "[required]", &model, 0, 0, NULL,
         NULL, NULL, 0},
        RS_CLI_OPT_OUT(&out_path, "write the ids of every FILE, in order, as little-endian uint32", "[none: stdout]"),
        RS_CLI_OPT_FORCE(&force),
        {"--invalid-utf8", NULL, RS_CLI_CHOICE, "M", "bytes that are not valid UTF-8: replace (U+FFFD), latin1\n"
         "(the whole file as Latin-1) or error", "[replace]", &invalid, 0, 0, RS_INVALID_UTF8_CHOICES, NULL, NULL, 0},
        {"--decode", NULL, RS_CLI_FLAG, NULL, "each FILE holds little-endian uint32 ids: write their bytes (to stdout\n"
         "or --out)", NULL, &decode, 0, 0, NULL, NULL, NULL, 0},
    };
    const rs_cli_spec spec = {"tokenize", "--model DIR [--out FILE [--force]] [--invalid-utf8 M] [--decode] FILE...", NULL, opts,
                              sizeof opts / sizeof opts[0], k_epilog, (size_t)(argc > 0 ? argc : 1)};
    char **files = (char **)calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    size_t n_files = 0;
    if (!files) {
        fprintf(stderr, "replayssm tokenize: out of memory\n");
        return 1;
    }
    const int pr = rs_cli_parse(&spec, argc, argv, NULL, files, &n_files);
    if (pr) {
        free(files);
        return pr == 1 ? 0 : 2;
    }
    if (!model || n_files == 0) {
        fprintf(stderr, "replayssm tokenize: %s\n", !model ? "--model DIR is required" : "no input FILE");
        rs_cli_help(&spec, stderr);
        free(files);
        return 2;
    }
    rs_invalid_utf8 mode = RS_INVALID_UTF8_REPLACE;
    (void)rs_invalid_utf8_parse(invalid, &mode); /* one of the choices: checked while parsing */
    const int rc0 = tokenize_(model, out_path, force, mode, decode, files, n_files);
    free(files);
    return rc0;
}

static int tokenize_(const char *model, const char *out_path, int force, rs_invalid_utf8 mode, int decode, char **files,
                     size_t n_files)
{
    /* a model folder that is not there is an I/O failure (1), as `kl`'s "no model at" */
    struct stat sb;
    const int sst = stat(model, &sb), err = errno;
    if (sst != 0 || !S_ISDIR(sb.st_mode))
        return rs_cli_fail("tokenize", "no model folder",
                           rs_error_set(RS_E_IO, "%s: %s", model, sst != 0 ? strerror(err) : "not a directory"));
    /* the config, when there is one, gives the vocabulary check of `kl` */
    char cfgp[4096];
    snprintf(cfgp, sizeof cfgp, "%s/config.json", model);
    rs_model_config mc;
    const int have_cfg = stat(cfgp, &sb) == 0;
    if (have_cfg) {
        const rs_status st = rs_hf_config_load(cfgp, &mc);
        if (st != RS_OK) return rs_cli_fail("tokenize", "cannot read the model config", st);
    }
    rs_tokenizer tok;
    rs_status st = rs_tokenizer_open(model, have_cfg ? mc.vocab : 0, &tok);
    if (st != RS_OK) { /* a refused tokenizer is a usage error, as in `kl` */
        rs_cli_fail("tokenize", "no tokenizer", st);
        return 2;
    }
    /* --out: the temporary of rs_outfile.h (never a link, FIFO or device; an existing FILE only
     * with --force), placed only once every input was read and encoded */
    FILE *out = stdout;
    rs_outfile *of = NULL;
    if (out_path) {
        st = rs_outfile_open(out_path, force, &of);
        if (st != RS_OK) {
            rs_tokenizer_free(&tok);
            return rs_cli_fail("tokenize", "cannot create the output", st);
        }
        out = rs_outfile_stream(of);
    }
    int rc = 0;
    for (size_t i = 0; i < n_files && rc == 0; i++)
        rc = decode ? decode_one_(&tok, files[i], out) : encode_one_(&tok, mode, files[i], out, out_path != NULL);
    if (of && rc == 0) {
        st = rs_outfile_commit(of);
        if (st != RS_OK) rc = rs_cli_fail("tokenize", "cannot write the output", st);
    } else if (of) {
        rs_outfile_discard(of); /* a failed input leaves no FILE (and an old FILE as it was) */
    }
    if (out == stdout && fflush(stdout) != 0 && rc == 0)
        rc = rs_cli_fail("tokenize", "cannot write", rs_error_set(RS_E_IO, "stdout: %s", strerror(errno)));
    rs_tokenizer_free(&tok);
    return rc;
}
