/* rs_provenance.h — what a log records about the model files and the machine (private to eval/;
 * docs/hdf5-layout.md "Provenance"). The evaluator calls these when it builds the log's
 * description; nothing here prints. */
#ifndef RS_PROVENANCE_H
#define RS_PROVENANCE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_h5log.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_PROV_MAX_ENV 12 /* attributes of rs_prov_env */
/* the largest model file hashed (rs_input_open's cap): 1 TiB, beyond any shard */
#define RS_PROV_MAX_FILE_BYTES ((uint64_t)1 << 40)

/* The model folder's files (weights, config, tokenizer) with their digests, and the digest of
 * them all. Strings owned (rs_prov_files_free). */
typedef struct rs_prov_files {
    size_t n;
    rs_h5log_file_hash *files; /* [n], sorted by name (byte order) */
    size_t rehashed;           /* files whose digest was computed (not taken from the cache) */
    char model_hash[80];       /* "sha256:<hex>" of the manifest "<sha256>  <name>\n" per file */
} rs_prov_files;

/* rs_prov_model_file() : 1 if a file of a model folder named `name` is recorded: *.safetensors,
 * *.json (config, index, tokenizer), *.tiktoken, *.model, merges.txt, vocab.txt. */
int rs_prov_model_file(const char *name);

/* rs_prov_hash_files() : list the model files of dir (not recursive), stat them and take the
 * digest from `cache` ([n_cache], e.g. the log --resume continues) where name, size and mtime
 * all match, else compute it (the files in parallel: rs_prov_hash_start + join). Every file is
 * opened by rs_input_open (eval/input/rs_input.h): a name that looks like a model file but is a
 * FIFO, a device or a link to one is refused with its kind, never waited on. @return RS_OK,
 * RS_E_IO (unreadable folder or file, not a regular file, too many files), RS_E_NOMEM. */
rs_status rs_prov_hash_files(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, rs_prov_files *out);
void rs_prov_files_free(rs_prov_files *p);

/* The same, in the background (an 8 GB checkpoint takes ~30 s of SHA-256 on one core): start
 * lists and stats the files and takes cached digests now, then hashes the others on up to
 * `threads` worker threads (<= 0: one per file, at most the CPUs; never more than
 * RS_PROV_MAX_THREADS), one file per thread at a time, the largest first, and returns at once.
 * join waits and gives exactly what rs_prov_hash_files gives (digests per file, the manifest's
 * digest in name order, rehashed; a listing / stat / read failure as its status and message):
 * the timing and thread count change nothing recorded. cancel stops the workers (within 1 MiB
 * each) and frees the job. start fails only for want of memory; a job is joined or cancelled
 * exactly once. */
#define RS_PROV_MAX_THREADS 16
typedef struct rs_prov_job rs_prov_job;
rs_status rs_prov_hash_start(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, int threads,
                             rs_prov_job **out);
/* the same, stopped by the caller's flag as by cancel: a signal handler sets *stop, every worker
 * sees it after its current block of 1 MiB (milliseconds), and join returns RS_E_STATE ("stopped
 * by a signal") at once instead of after the whole checkpoint */
rs_status rs_prov_hash_start_stoppable(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, int threads,
                                       const volatile sig_atomic_t *stop, rs_prov_job **out);
rs_status rs_prov_hash_join(rs_prov_job *job, rs_prov_files *out);
void rs_prov_hash_cancel(rs_prov_job *job);

/* rs_prov_sha256_file() : hex SHA-256 of a file's bytes (== sha256sum); whole blocks through the
 * x86 SHA extensions where the CPU has them (rs_prov_sha256_accelerated). */
rs_status rs_prov_sha256_file(const char *path, char hex[65]);

/* rs_prov_sha256_accelerated() : 1 if file digests use the CPU's SHA extensions (x86 SHA-NI; not
 * when the environment has RS_SHA256_PORTABLE=1, read once), else 0.
 * rs_prov_sha256_mem() : hex SHA-256 of n bytes at p, through the SHA extensions if fast and
 * accelerated, else portably (the same digest: tests/test_prov_hash.c compares the two). */
int rs_prov_sha256_accelerated(void);
void rs_prov_sha256_mem(const void *p, size_t n, int fast, char hex[65]);

/* The machine and build (attributes of /provenance). */
typedef struct rs_prov_env {
    char host[256], cpu[256], os[256], blas[512], blas_core[64], blas_threads[16], compiler[128], flags[512], cpus[16];
    size_t n;
    rs_h5log_extra attrs[RS_PROV_MAX_ENV]; /* {key, value} views into the fields (and gpu) */
} rs_prov_env;

/* rs_prov_env_get() : host name, CPU model and count, OS, OpenBLAS configuration / core / threads,
 * compiler and flags; gpu (NULL or "" on the CPU: left out) the GPU scorer's description. */
void rs_prov_env_get(rs_prov_env *e, const char *gpu);

#ifdef __cplusplus
}
#endif
#endif /* RS_PROVENANCE_H */
