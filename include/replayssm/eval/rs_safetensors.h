/* rs_safetensors.h — read-only, validating reader of safetensors checkpoints (single file or
 * sharded through model.safetensors.index.json), memory-mapped.
 *
 * Format (huggingface/safetensors): u64 little-endian header length N, then N bytes of UTF-8 JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {..}},
 * then the data section; offsets are relative to the data section start (8 + N).
 *
 * Before anything is used the whole header is validated: N >= 2 and 8 + N <= file size, JSON well
 * formed and an object, every entry an object with a known dtype (F32, BF16, F16, and U8 / F8_E4M3 for
 * the quantized checkpoints: the dtypes of the checkpoints replayssm evaluates), a shape of non-negative integers (at most
 * RS_ST_MAX_DIMS) whose element count x dtype size equals end - begin without overflow, 0 <= begin
 * <= end <= data section size, no two tensors overlapping, no duplicate names (also across shards),
 * `__metadata__` (optional) an object of strings. Every violation returns RS_E_FORMAT (RS_E_IO for
 * files that cannot be opened, RS_E_UNSUPPORTED for other dtypes) with a message naming the file and
 * the tensor. Little-endian hosts only (checked).
 */
#ifndef RS_SAFETENSORS_H
#define RS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_ST_MAX_DIMS 8

typedef enum rs_st_dtype {
    RS_ST_F32 = 0, /* IEEE binary32                         */
    RS_ST_BF16 = 1,/* bfloat16: upper 16 bits of a binary32 */
    RS_ST_F16 = 2, /* IEEE binary16                         */
    RS_ST_U8 = 3,  /* bytes: packed NVFP4 (E2M1 pairs) weights */
    RS_ST_F8_E4M3 = 4 /* OCP FP8 E4M3 (float8_e4m3fn): FP8 weights, NVFP4 block scales */
} rs_st_dtype;

typedef struct rs_st_tensor {
    char *name;                     /* owned, NUL-terminated                        */
    rs_st_dtype dtype;
    int ndim;                       /* 0 (scalar) .. RS_ST_MAX_DIMS                  */
    int64_t shape[RS_ST_MAX_DIMS];  /* [ndim]                                         */
    int64_t numel;                  /* product of shape (1 for a scalar)              */
    const void *data;               /* inside the mapping; little-endian elements     */
    size_t nbytes;                  /* numel * dtype size                             */
    int file;                       /* index into rs_st_set.files                     */
} rs_st_tensor;

typedef struct rs_st_file {
    char *path;       /* owned                                        */
    void *map;        /* mmap of the whole file (NULL for empty files) */
    size_t size;      /* file size in bytes                           */
    size_t data_off;  /* 8 + header length                            */
    void *metadata;   /* `__metadata__` as a cJSON object, or NULL; owned  */
} rs_st_file;

/* A checkpoint: one or more files; tensors sorted by name (binary search). */
typedef struct rs_st_set {
    int n_files;
    rs_st_file *files;   /* [n_files] */
    int n_tensors;
    rs_st_tensor *tensors; /* [n_tensors], sorted by strcmp(name) */
} rs_st_set;

/*! rs_st_dtype_size() : bytes per element (4, 2, 2, 1, 1). */
size_t rs_st_dtype_size(rs_st_dtype dt);

/*! rs_st_dtype_name() : "F32", "BF16", "F16", "U8", "F8_E4M3". */
const char *rs_st_dtype_name(rs_st_dtype dt);

/*! rs_st_open_file() : map and fully validate one .safetensors file into a fresh set.
 *  On error the set is left empty (nothing to close). */
rs_status rs_st_open_file(const char *path, rs_st_set *set);

/*! rs_st_open_dir() : open a Hugging Face model directory: `dir`/model.safetensors.index.json if it
 *  exists (every file of its weight_map is opened and validated; every weight_map entry must be found
 *  in the file it names), else `dir`/model.safetensors. */
rs_status rs_st_open_dir(const char *dir, rs_st_set *set);

/*! rs_st_find() : the tensor called `name`, or NULL. */
const rs_st_tensor *rs_st_find(const rs_st_set *set, const char *name);

/*! rs_st_metadata() : `__metadata__[key]` of the set's files (first file that has it), or NULL. The
 *  returned string is owned by the set. */
const char *rs_st_metadata(const rs_st_set *set, const char *key);

/*! rs_st_to_f32() : convert all t->numel elements to float32 into dst (exact for every dtype: U8 gives the
 *  byte's value, F8_E4M3 its E4M3 value, NaN for 0x7F / 0xFF). */
void rs_st_to_f32(const rs_st_tensor *t, float *dst);

/*! rs_st_close() : unmap and free; the set becomes empty. NULL-safe. */
void rs_st_close(rs_st_set *set);

#ifdef __cplusplus
}
#endif
#endif /* RS_SAFETENSORS_H */
