/* rs_fuzz.h — fuzz targets of replayssm's input parsers, one function per parser, shared by
 * the libFuzzer programs (tests/fuzz/fuzz_libfuzzer.c, -DRS_FUZZ=ON with clang) and the
 * deterministic regression driver that CTest runs on every build (tests/test_fuzz_regress.c,
 * also built with AddressSanitizer + UndefinedBehaviorSanitizer when the compiler has them).
 *
 * A target takes arbitrary bytes, returns 1 if the parser accepted them and 0 if it refused them,
 * and must never crash, hang, leak or read out of bounds.
 * Beyond "no crash" every target checks what the parser promises (rs_fuzz_fail aborts):
 *  - an error is one of the documented codes and comes with a non-empty message;
 *  - an accepted input satisfies the parser's documented invariants (safetensors: every tensor
 *    inside the data section, sizes consistent, names sorted and unique, no overlap, all bytes
 *    readable; metadata.csv: every id valid; policy / format strings: the canonical string
 *    parses back to itself; KL log: counts within bounds, completed <= length <= tokens, every
 *    committed row and summary readable, --resume keeps the committed positions; .npy: header
 *    + data exactly the file, the shape's size without overflow, every element readable).
 * Path-based parsers get the bytes through a file in a per-process scratch folder
 * (rs_fuzz_scratch).
 */
#ifndef RS_FUZZ_H
#define RS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

typedef int (*rs_fuzz_fn)(const uint8_t *data, size_t size);

typedef struct rs_fuzz_target {
    const char *name;  /* "safetensors", ... */
    rs_fuzz_fn fn;
    int binary;        /* 1: binary format (the mutator also plants little-endian integers) */
} rs_fuzz_target;

int rs_fuzz_safetensors(const uint8_t *data, size_t size); /* rs_st_open_file on the bytes as a file */
int rs_fuzz_st_index(const uint8_t *data, size_t size);    /* rs_st_open_dir with the bytes as model.safetensors.index.json */
int rs_fuzz_hf_config(const uint8_t *data, size_t size);   /* rs_hf_config_parse + rs_tokenizer_for_model */
int rs_fuzz_pg19_meta(const uint8_t *data, size_t size);   /* rs_pg19_meta_parse */
int rs_fuzz_pg19_book(const uint8_t *data, size_t size);   /* rs_pg19_read_book of <id>.txt.gz */
int rs_fuzz_policy(const uint8_t *data, size_t size);      /* rs_policy_parse / rs_format_parse round trips */
int rs_fuzz_h5log(const uint8_t *data, size_t size);       /* rs_h5log_open (+ --resume) of a valid log edited by the bytes */
int rs_fuzz_tok_json(const uint8_t *data, size_t size);    /* rs_tokenizer_open on the bytes as tokenizer.json (rs_fuzz_tokenizer.c) */
int rs_fuzz_tok_tiktoken(const uint8_t *data, size_t size); /* rs_tokenizer_open on the bytes as a *.tiktoken rank file */
int rs_fuzz_tok_encode(const uint8_t *data, size_t size);  /* rs_tokenizer_encode / decode of random bytes, fixed tokenizers */
int rs_fuzz_npy(const uint8_t *data, size_t size);         /* rs_npy_header_size + rs_npy_parse of a .npy file (rs_fuzz_npy.c) */
int rs_fuzz_h5raw(const uint8_t *data, size_t size);       /* rs_h5log_open (+ --resume) of the bytes as a log file */
int rs_fuzz_h5floats(const uint8_t *data, size_t size);    /* rs_h5_read_floats (quant-error --input) of the bytes as an HDF5 file (rs_fuzz_h5floats.c) */
int rs_fuzz_quant_config(const uint8_t *data, size_t size); /* rs_quant_config_parse (hf_quant_config.json / config.json) (rs_fuzz_quant.c) */
int rs_fuzz_qmodel(const uint8_t *data, size_t size);      /* rs_model_load of a quantized checkpoint with the bytes as model.safetensors */

/* every target, NULL-terminated */
extern const rs_fuzz_target rs_fuzz_targets[];

/* scratch folder for the path-based targets (created if missing); returns 0 on success */
int rs_fuzz_set_scratch(const char *dir);

/* that folder: rs_fuzz_set_scratch's, else /dev/shm/rs_fuzz_<pid> (memory) where the machine has
 * /dev/shm, else /tmp/rs_fuzz_<pid> (RS_FUZZ_SCRATCH=DIR: DIR/rs_fuzz_<pid>), made on first use and
 * removed at exit */
const char *rs_fuzz_scratch(void);

/* print "rs_fuzz <target>: <what>" to stderr and abort() (a fuzzer records the input) */
void rs_fuzz_fail(const char *target, const char *what);

/* for the targets in other files: write a scratch file (fails the target when it cannot), and
 * require an error to be one of the documented codes (allowed_mask: bit per rs_status) with a
 * message */
void rs_fuzz_write_file(const char *target, const char *path, const uint8_t *data, size_t size);
void rs_fuzz_check_error(const char *target, int status, unsigned allowed_mask);

#endif
