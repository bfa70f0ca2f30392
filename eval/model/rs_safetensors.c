/* rs_safetensors.c — validating, memory-mapped safetensors reader (see rs_safetensors.h). */
#define _POSIX_C_SOURCE 200809L
#include "replayssm/eval/rs_safetensors.h"
#include "rs_check.h"
#include "input/rs_input.h"
#include "replayssm/quant/rs_minifloat.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RS_ST_MAX_HEADER ((uint64_t)100000000) /* same bound as the reference Rust implementation */
#define RS_ST_MAX_INT 9007199254740992.0       /* 2^53: JSON integers beyond are not exact in cJSON */

size_t rs_st_dtype_size(rs_st_dtype dt) {
    switch (dt) {
    case RS_ST_F32: return 4u;
    case RS_ST_BF16:
    case RS_ST_F16: return 2u;
    case RS_ST_U8:
    case RS_ST_F8_E4M3: return 1u;
    }
    return 0u;
}

const char *rs_st_dtype_name(rs_st_dtype dt) {
    switch (dt) {
    case RS_ST_F32: return "F32";
    case RS_ST_BF16: return "BF16";
    case RS_ST_F16: return "F16";
    case RS_ST_U8: return "U8";
    case RS_ST_F8_E4M3: return "F8_E4M3";
    }
    return "?";
}

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void rs_st_close(rs_st_set *set) {
    if (!set) return;
    for (int i = 0; i < set->n_files; i++) {
        rs_st_file *f = &set->files[i];
        if (f->map) munmap(f->map, f->size);
        cJSON_Delete((cJSON *)f->metadata);
        free(f->path);
    }
    for (int i = 0; i < set->n_tensors; i++) free(set->tensors[i].name);
    free(set->files);
    free(set->tensors);
    memset(set, 0, sizeof *set);
}

/* A JSON number that is an exact non-negative integer below 2^53. */
static int json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0.0) || d >= RS_ST_MAX_INT || floor(d) != d) return 0;
    *out = (uint64_t)d;
    return 1;
}

/* one entry of the header, before ranges are cross-checked */
typedef struct st_entry {
    uint64_t begin, end;
    int tensor; /* index into set->tensors */
} st_entry;

static int cmp_entry(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int cmp_tensor(const void *a, const void *b) {
    return strcmp(((const rs_st_tensor *)a)->name, ((const rs_st_tensor *)b)->name);
}

/* Parse and validate the header of the mapped file set->files[fi], appending its tensors. */
static rs_status parse_header(rs_st_set *set, int fi) {
    rs_st_file *f = &set->files[fi];
    const char *path = f->path;
    RS_CHECK(f->size >= 8, RS_E_FORMAT, "%s: truncated safetensors file (%zu bytes, the 8-byte header length "
             "alone needs 8)", path, f->size);
    const unsigned char *p = f->map;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | p[i];
    RS_CHECK(n >= 2, RS_E_FORMAT, "%s: header length %llu is too small for a JSON object", path,
             (unsigned long long)n);
    RS_CHECK(n <= RS_ST_MAX_HEADER, RS_E_FORMAT, "%s: header length %llu exceeds the %llu-byte limit", path,
             (unsigned long long)n, (unsigned long long)RS_ST_MAX_HEADER);
    RS_CHECK(n <= (uint64_t)(f->size - 8), RS_E_FORMAT,
             "%s: header length %llu runs past the end of the file (%zu bytes; file truncated?)", path,
             (unsigned long long)n, f->size);
    RS_CHECK(p[8] == '{', RS_E_FORMAT, "%s: header does not start with '{' (not a safetensors file?)", path);
    f->data_off = 8 + (size_t)n;
    const size_t data_size = f->size - f->data_off;

    cJSON *root = cJSON_ParseWithLength((const char *)p + 8, (size_t)n);
    RS_CHECK(root != NULL, RS_E_FORMAT, "%s: header is not well-formed JSON (error near byte %ld of the header)",
             path, cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - (const char *)p - 8) : -1L);
    rs_status st = RS_OK;
    st_entry *ent = NULL;
    int n_ent = 0;
    if (!cJSON_IsObject(root)) {
        st = rs_error_set(RS_E_FORMAT, "%s: header JSON is not an object", path);
        goto done;
    }
    int count = cJSON_GetArraySize(root);
    ent = calloc((size_t)count + 1, sizeof *ent);
    rs_st_tensor *grown = realloc(set->tensors, ((size_t)set->n_tensors + (size_t)count + 1) * sizeof *grown);
    if (!ent || !grown) {
        if (grown) set->tensors = grown;
        st = rs_error_set(RS_E_NOMEM, "%s: out of memory for %d header entries", path, count);
        goto done;
    }
    set->tensors = grown;

    for (const cJSON *e = root->child; e; e = e->next) {
        const char *name = e->string ? e->string : "";
        if (strcmp(name, "__metadata__") == 0) {
            if (!cJSON_IsObject(e)) {
                st = rs_error_set(RS_E_FORMAT, "%s: __metadata__ is not an object", path);
                goto done;
            }
            for (const cJSON *m = e->child; m; m = m->next)
                if (!cJSON_IsString(m)) {
                    st = rs_error_set(RS_E_FORMAT, "%s: __metadata__[\"%s\"] is not a string", path,
                                      m->string ? m->string : "");
                    goto done;
                }
            if (f->metadata) {
                st = rs_error_set(RS_E_FORMAT, "%s: duplicate __metadata__", path);
                goto done;
            }
            f->metadata = cJSON_Duplicate(e, 1);
            if (!f->metadata) {
                st = rs_error_set(RS_E_NOMEM, "%s: out of memory copying __metadata__", path);
                goto done;
            }
            continue;
        }
        if (name[0] == '\0') {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor with an empty name", path);
            goto done;
        }
        if (!cJSON_IsObject(e)) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': entry is not an object", path, name);
            goto done;
        }
        const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
        const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        if (!cJSON_IsString(jd) || !cJSON_IsArray(js) || !cJSON_IsArray(jo)) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': needs string 'dtype', array 'shape' and array "
                              "'data_offsets'", path, name);
            goto done;
        }
        rs_st_tensor t;
        memset(&t, 0, sizeof t);
        t.file = fi;
        if (strcmp(jd->valuestring, "F32") == 0) t.dtype = RS_ST_F32;
        else if (strcmp(jd->valuestring, "BF16") == 0) t.dtype = RS_ST_BF16;
        else if (strcmp(jd->valuestring, "F16") == 0) t.dtype = RS_ST_F16;
        else if (strcmp(jd->valuestring, "U8") == 0) t.dtype = RS_ST_U8;
        else if (strcmp(jd->valuestring, "F8_E4M3") == 0) t.dtype = RS_ST_F8_E4M3;
        else {
            st = rs_error_set(RS_E_UNSUPPORTED, "%s: tensor '%s': dtype '%s' not supported (only F32, BF16, F16, U8, "
                              "F8_E4M3)", path, name, jd->valuestring);
            goto done;
        }
        int nd = cJSON_GetArraySize(js);
        if (nd > RS_ST_MAX_DIMS) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': %d dimensions (at most %d)", path, name, nd,
                              RS_ST_MAX_DIMS);
            goto done;
        }
        t.ndim = nd;
        uint64_t numel = 1;
        int overflow = 0, i = 0;
        for (const cJSON *d = js->child; d; d = d->next, i++) {
            uint64_t v;
            if (!json_uint(d, &v)) {
                st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative integer", path,
                                  name, i);
                goto done;
            }
            t.shape[i] = (int64_t)v;
            if (v != 0 && numel > UINT64_MAX / v) overflow = 1;
            else numel *= v;
        }
        if (overflow || numel > ((uint64_t)1 << 60)) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': element count overflows", path, name);
            goto done;
        }
        if (cJSON_GetArraySize(jo) != 2) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': data_offsets must hold 2 integers", path, name);
            goto done;
        }
        uint64_t b, en;
        if (!json_uint(jo->child, &b) || !json_uint(jo->child->next, &en)) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': data_offsets are not non-negative integers", path,
                              name);
            goto done;
        }
        if (en < b) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                              path, name, (unsigned long long)b, (unsigned long long)en);
            goto done;
        }
        const uint64_t nbytes = numel * rs_st_dtype_size(t.dtype);
        if (en - b != nbytes) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': shape gives %llu elements x %zu bytes = %llu bytes "
                              "but data_offsets [%llu, %llu] span %llu bytes", path, name,
                              (unsigned long long)numel, rs_st_dtype_size(t.dtype), (unsigned long long)nbytes,
                              (unsigned long long)b, (unsigned long long)en, (unsigned long long)(en - b));
            goto done;
        }
        if (en > data_size) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] run past the data section "
                              "(%zu bytes; file truncated?)", path, name, (unsigned long long)b,
                              (unsigned long long)en, data_size);
            goto done;
        }
        t.numel = (int64_t)numel;
        t.nbytes = (size_t)nbytes;
        t.data = p + f->data_off + b;
        t.name = dup_str(name);
        if (!t.name) {
            st = rs_error_set(RS_E_NOMEM, "%s: out of memory", path);
            goto done;
        }
        ent[n_ent].begin = b;
        ent[n_ent].end = en;
        ent[n_ent].tensor = set->n_tensors;
        n_ent++;
        set->tensors[set->n_tensors++] = t;
    }

    /* ranges: sorted by begin, each must start exactly where the previous ended (no overlap, no hole),
     * and the last must end at the end of the file */
    qsort(ent, (size_t)n_ent, sizeof *ent, cmp_entry);
    uint64_t prev_end = 0;
    const char *prev_name = NULL;
    for (int i = 0; i < n_ent; i++) {
        const char *nm = set->tensors[ent[i].tensor].name;
        if (ent[i].begin < prev_end) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' "
                              "(which ends at %llu)", path, nm, (unsigned long long)ent[i].begin,
                              (unsigned long long)ent[i].end, prev_name, (unsigned long long)prev_end);
            goto done;
        }
        if (ent[i].begin > prev_end) {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s': data_offsets start at %llu, leaving a hole after "
                              "byte %llu of the data section", path, nm, (unsigned long long)ent[i].begin,
                              (unsigned long long)prev_end);
            goto done;
        }
        prev_end = ent[i].end;
        prev_name = nm;
    }
    if (prev_end != data_size) {
        st = rs_error_set(RS_E_FORMAT, "%s: tensors cover %llu bytes but the data section has %zu (trailing or "
                          "missing bytes)", path, (unsigned long long)prev_end, data_size);
        goto done;
    }
done:
    free(ent);
    cJSON_Delete(root);
    return st;
}

/* Map `path` and append it (file + tensors) to the set. */
static rs_status open_append(rs_st_set *set, const char *path) {
    RS_CHECK(host_is_little_endian(), RS_E_UNSUPPORTED, "safetensors reader needs a little-endian host");
    rs_st_file *grown = realloc(set->files, ((size_t)set->n_files + 1) * sizeof *grown);
    RS_CHECK(grown != NULL, RS_E_NOMEM, "%s: out of memory", path);
    set->files = grown;
    rs_st_file *f = &set->files[set->n_files];
    memset(f, 0, sizeof *f);
    f->path = dup_str(path);
    RS_CHECK(f->path != NULL, RS_E_NOMEM, "%s: out of memory", path);
    set->n_files++;

    /* the input room's bounded open: a regular file (a FIFO is refused, not waited on) that can
     * be mapped whole */
    int fd = -1;
    uint64_t fsize = 0;
    RS_TRY(rs_input_open(path, (uint64_t)SIZE_MAX, &fd, &fsize));
    f->size = (size_t)fsize;
    if (f->size > 0) {
        void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int err = errno;
            close(fd);
            return rs_error_set(RS_E_IO, "%s: mmap failed: %s", path, strerror(err));
        }
        f->map = m;
    }
    close(fd);
    return parse_header(set, set->n_files - 1);
}

static rs_status finish(rs_st_set *set) {
    if (set->n_tensors > 1) qsort(set->tensors, (size_t)set->n_tensors, sizeof *set->tensors, cmp_tensor);
    for (int i = 1; i < set->n_tensors; i++)
        if (strcmp(set->tensors[i - 1].name, set->tensors[i].name) == 0)
            return rs_error_set(RS_E_FORMAT, "%s: tensor '%s' appears twice (also in %s)",
                                set->files[set->tensors[i].file].path, set->tensors[i].name,
                                set->files[set->tensors[i - 1].file].path);
    return RS_OK;
}

rs_status rs_st_open_file(const char *path, rs_st_set *set) {
    RS_CHECK(path && set, RS_E_INVAL, "rs_st_open_file: NULL argument");
    memset(set, 0, sizeof *set);
    rs_status st = open_append(set, path);
    if (st == RS_OK) st = finish(set);
    if (st != RS_OK) rs_st_close(set);
    return st;
}

static char *read_text(const char *path, size_t *len) {
    char *buf = NULL; /* regular, at most 64 MiB, exactly the size seen at open */
    return rs_input_read_all(path, (size_t)64 << 20, 0, &buf, len, NULL) == RS_OK ? buf : NULL; /* message set */
}

static rs_status open_index(rs_st_set *set, const char *dir, const char *index_path) {
    size_t len = 0;
    rs_error_clear();
    char *txt = read_text(index_path, &len);
    /* read_text fails with rs_input_read_all's message */
    RS_CHECK(txt != NULL, RS_E_IO, "%s", rs_last_error()[0] ? rs_last_error() : "out of memory reading the index");
    cJSON *root = cJSON_ParseWithLength(txt, len);
    free(txt);
    RS_CHECK(root != NULL, RS_E_FORMAT, "%s: not well-formed JSON", index_path);
    rs_status st = RS_OK;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm) || !wm->child) {
        st = rs_error_set(RS_E_FORMAT, "%s: missing or empty object 'weight_map'", index_path);
        goto done;
    }
    /* open each distinct shard once, in order of first appearance */
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (!cJSON_IsString(e)) {
            st = rs_error_set(RS_E_FORMAT, "%s: weight_map['%s'] is not a file name", index_path,
                              e->string ? e->string : "");
            goto done;
        }
        const char *fn = e->valuestring;
        if (fn[0] == '\0' || fn[0] == '.' || strchr(fn, '/') || strchr(fn, '\\')) {
            st = rs_error_set(RS_E_FORMAT, "%s: weight_map['%s'] = '%s' is not a plain file name in the "
                              "model directory", index_path, e->string ? e->string : "", fn);
            goto done;
        }
        char path[4096];
        int w = snprintf(path, sizeof path, "%s/%s", dir, fn);
        if (w < 0 || (size_t)w >= sizeof path) {
            st = rs_error_set(RS_E_INVAL, "%s: shard path too long", index_path);
            goto done;
        }
        int seen = 0;
        for (int i = 0; i < set->n_files; i++)
            if (strcmp(set->files[i].path, path) == 0) seen = 1;
        if (!seen && (st = open_append(set, path)) != RS_OK) goto done;
    }
    if ((st = finish(set)) != RS_OK) goto done;
    for (const cJSON *e = wm->child; e; e = e->next) {
        const rs_st_tensor *t = rs_st_find(set, e->string ? e->string : "");
        const char *fn = e->valuestring;
        size_t fl = strlen(fn);
        const char *tp = t ? set->files[t->file].path : "";
        size_t tl = strlen(tp);
        if (!t || tl < fl + 1 || strcmp(tp + tl - fl, fn) != 0 || tp[tl - fl - 1] != '/') {
            st = rs_error_set(RS_E_FORMAT, "%s: tensor '%s' listed in weight_map is not in shard %s", index_path,
                              e->string ? e->string : "", fn);
            goto done;
        }
    }
done:
    cJSON_Delete(root);
    return st;
}

rs_status rs_st_open_dir(const char *dir, rs_st_set *set) {
    RS_CHECK(dir && set, RS_E_INVAL, "rs_st_open_dir: NULL argument");
    memset(set, 0, sizeof *set);
    char path[4096];
    int w = snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    RS_CHECK(w > 0 && (size_t)w < sizeof path, RS_E_INVAL, "%s: directory path too long", dir);
    rs_status st;
    if (access(path, F_OK) == 0) {
        st = open_index(set, dir, path);
    } else {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (access(path, F_OK) != 0)
            return rs_error_set(RS_E_IO, "%s: neither model.safetensors nor model.safetensors.index.json found",
                                dir);
        st = open_append(set, path);
        if (st == RS_OK) st = finish(set);
    }
    if (st != RS_OK) rs_st_close(set);
    return st;
}

const rs_st_tensor *rs_st_find(const rs_st_set *set, const char *name) {
    if (!set || !name) return NULL;
    int lo = 0, hi = set->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(set->tensors[mid].name, name);
        if (c == 0) return &set->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *rs_st_metadata(const rs_st_set *set, const char *key) {
    if (!set || !key) return NULL;
    for (int i = 0; i < set->n_files; i++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive((const cJSON *)set->files[i].metadata, key);
        if (cJSON_IsString(m)) return m->valuestring;
    }
    return NULL;
}

/* binary16 -> binary32, exact (normals, subnormals, inf, NaN with payload). */
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0x1f) {
        u = sign | 0x7f800000u | (m << 13);
    } else if (e != 0) {
        u = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        u = sign;
    } else { /* subnormal: m * 2^-24, normalise */
        int sh = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            sh++;
        }
        m &= 0x3ffu;
        u = sign | ((uint32_t)(113 - sh) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void rs_st_to_f32(const rs_st_tensor *t, float *dst) {
    const unsigned char *src = t->data;
    const size_t n = (size_t)t->numel;
    if (t->dtype == RS_ST_F32) {
        memcpy(dst, src, n * 4);
    } else if (t->dtype == RS_ST_BF16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            uint32_t u = (uint32_t)h << 16;
            memcpy(&dst[i], &u, 4);
        }
    } else if (t->dtype == RS_ST_F16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = f16_to_f32(h);
        }
    } else if (t->dtype == RS_ST_U8) {
        for (size_t i = 0; i < n; i++) dst[i] = (float)src[i];
    } else {
        for (size_t i = 0; i < n; i++) dst[i] = rs_e4m3_decode(src[i]);
    }
}
