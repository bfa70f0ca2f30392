/* rs_provenance.h — what a log records about the model files and the machine (private to eval/;
 * docs/hdf5-layout.md "Provenance"). The evaluator calls these when it builds the log's
 * description; nothing here prints. */
#ifndef RS_PROVENANCE_H
#define RS_PROVENANCE_H

#include <stddef.h>

#include "replayssm/common/rs_status.h"
#include "replayssm/eval/rs_h5log.h"

#define RS_PROV_MAX_ENV 12 /* attributes of rs_prov_env */

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
 * all match, else compute it. @return RS_OK, RS_E_IO (unreadable folder or file, too many
 * files), RS_E_NOMEM. */
rs_status rs_prov_hash_files(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, rs_prov_files *out);
void rs_prov_files_free(rs_prov_files *p);

/* rs_prov_sha256_file() : hex SHA-256 of a file's bytes (== sha256sum). */
rs_status rs_prov_sha256_file(const char *path, char hex[65]);

/* The machine and build (attributes of /provenance). */
typedef struct rs_prov_env {
    char host[256], cpu[256], os[256], blas[512], blas_core[64], blas_threads[16], compiler[128], flags[512], cpus[16];
    size_t n;
    rs_h5log_extra attrs[RS_PROV_MAX_ENV]; /* {key, value} views into the fields (and gpu) */
} rs_prov_env;

/* rs_prov_env_get() : host name, CPU model and count, OS, OpenBLAS configuration / core / threads,
 * compiler and flags; gpu (NULL or "" on the CPU: left out) the GPU scorer's description. */
void rs_prov_env_get(rs_prov_env *e, const char *gpu);

#endif /* RS_PROVENANCE_H */
