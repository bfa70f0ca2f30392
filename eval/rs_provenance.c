/* rs_provenance.c — model files' digests (cached by size and mtime) and the machine / build a log
 * was written on (rs_provenance.h). The SHA-256 is the tokenizer module's (eval/tokenizer/
 * rs_tok_sha256.c, also used for the input files' digests). */
#include "rs_provenance.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "replayssm/eval/rs_tokenizer.h"

/* OpenBLAS's own queries (the eval library links OpenBLAS; cblas.h declares them too, but which
 * header a system installs varies) */
extern char *openblas_get_config(void);
extern char *openblas_get_corename(void);
extern int openblas_get_num_threads(void);

#ifndef RS_BUILD_C_FLAGS
#define RS_BUILD_C_FLAGS "unknown"
#endif

static int ends_with_(const char *s, const char *suf)
{
    const size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int rs_prov_model_file(const char *name)
{
    if (!name || name[0] == '.') return 0;
    return ends_with_(name, ".safetensors") || ends_with_(name, ".json") || ends_with_(name, ".tiktoken") ||
           ends_with_(name, ".model") || !strcmp(name, "merges.txt") || !strcmp(name, "vocab.txt");
}

rs_status rs_prov_sha256_file(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f) return rs_error_set(RS_E_IO, "cannot read %s: %s", path, strerror(errno));
    enum { BLK = 1 << 20 };
    unsigned char *buf = (unsigned char *)malloc(BLK);
    if (!buf) {
        fclose(f);
        return rs_error_set(RS_E_NOMEM, "out of memory");
    }
    rs_tokenizer_sha256_ctx c;
    rs_tokenizer_sha256_init(&c);
    size_t k;
    while ((k = fread(buf, 1, BLK, f)) > 0) rs_tokenizer_sha256_update(&c, buf, k);
    const int bad = ferror(f);
    free(buf);
    fclose(f);
    if (bad) return rs_error_set(RS_E_IO, "cannot read %s", path);
    rs_tokenizer_sha256_final(&c, hex);
    return RS_OK;
}

static int by_name_(const void *a, const void *b)
{
    return strcmp(((const rs_h5log_file_hash *)a)->name, ((const rs_h5log_file_hash *)b)->name);
}

void rs_prov_files_free(rs_prov_files *p)
{
    if (!p) return;
    for (size_t i = 0; p->files && i < p->n; i++) {
        free((char *)p->files[i].name);
        free((char *)p->files[i].sha256);
    }
    free(p->files);
    memset(p, 0, sizeof *p);
}

/* the names of the model files in dir, sorted */
static rs_status list_(const char *dir, rs_prov_files *out)
{
    DIR *d = opendir(dir);
    if (!d) return rs_error_set(RS_E_IO, "cannot list the model folder %s: %s", dir, strerror(errno));
    size_t cap = 0;
    rs_status st = RS_OK;
    struct dirent *e;
    while (st == RS_OK && (e = readdir(d)) != NULL) {
        if (!rs_prov_model_file(e->d_name)) continue;
        if (out->n == cap) {
            cap = cap ? 2 * cap : 16;
            rs_h5log_file_hash *g = (rs_h5log_file_hash *)realloc(out->files, cap * sizeof *g);
            if (!g) {
                st = rs_error_set(RS_E_NOMEM, "out of memory");
                break;
            }
            out->files = g;
        }
        if (out->n >= RS_H5LOG_MAX_FILES) {
            st = rs_error_set(RS_E_IO, "the model folder %s holds more than %u model files", dir, RS_H5LOG_MAX_FILES);
            break;
        }
        memset(&out->files[out->n], 0, sizeof out->files[0]);
        out->files[out->n].name = strdup(e->d_name);
        if (!out->files[out->n].name) st = rs_error_set(RS_E_NOMEM, "out of memory");
        else out->n++;
    }
    closedir(d);
    if (st == RS_OK && out->n) qsort(out->files, out->n, sizeof out->files[0], by_name_);
    return st;
}

rs_status rs_prov_hash_files(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, rs_prov_files *out)
{
    memset(out, 0, sizeof *out);
    rs_status st = list_(dir, out);
    rs_tokenizer_sha256_ctx all;
    rs_tokenizer_sha256_init(&all);
    for (size_t i = 0; st == RS_OK && i < out->n; i++) {
        rs_h5log_file_hash *fh = &out->files[i];
        char path[4096], hex[65];
        snprintf(path, sizeof path, "%s/%s", dir, fh->name);
        struct stat sb;
        if (stat(path, &sb) != 0) {
            st = rs_error_set(RS_E_IO, "cannot stat %s: %s", path, strerror(errno));
            break;
        }
        fh->size = (uint64_t)sb.st_size;
        fh->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + (int64_t)sb.st_mtim.tv_nsec;
        const char *hit = NULL; /* the cache: same name, size and modification time */
        for (size_t j = 0; j < n_cache && !hit; j++)
            if (cache[j].name && cache[j].sha256 && !strcmp(cache[j].name, fh->name) && cache[j].size == fh->size &&
                cache[j].mtime_ns == fh->mtime_ns && strlen(cache[j].sha256) == 64)
                hit = cache[j].sha256;
        if (hit) {
            snprintf(hex, sizeof hex, "%s", hit);
        } else {
            st = rs_prov_sha256_file(path, hex);
            out->rehashed++;
        }
        if (st == RS_OK && !(fh->sha256 = strdup(hex))) st = rs_error_set(RS_E_NOMEM, "out of memory");
        if (st == RS_OK) { /* the manifest line, as sha256sum prints it */
            rs_tokenizer_sha256_update(&all, hex, 64);
            rs_tokenizer_sha256_update(&all, "  ", 2);
            rs_tokenizer_sha256_update(&all, fh->name, strlen(fh->name));
            rs_tokenizer_sha256_update(&all, "\n", 1);
        }
    }
    if (st != RS_OK) {
        rs_prov_files_free(out);
        return st;
    }
    char hex[65];
    rs_tokenizer_sha256_final(&all, hex);
    snprintf(out->model_hash, sizeof out->model_hash, "sha256:%s", hex);
    return RS_OK;
}

/* the first "model name" line of /proc/cpuinfo (Linux x86; other systems: the machine name) */
static void cpu_model_(char *buf, size_t n, const char *machine)
{
    snprintf(buf, n, "%s", machine);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *c = strchr(line, ':');
        if (!c) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        snprintf(buf, n, "%s", c);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

void rs_prov_env_get(rs_prov_env *e, const char *gpu)
{
    memset(e, 0, sizeof *e);
    if (gethostname(e->host, sizeof e->host - 1) != 0) snprintf(e->host, sizeof e->host, "unknown");
    struct utsname u;
    const int have_u = uname(&u) == 0;
    snprintf(e->os, sizeof e->os, "%s %s %s", have_u ? u.sysname : "?", have_u ? u.release : "?",
             have_u ? u.machine : "?");
    cpu_model_(e->cpu, sizeof e->cpu, have_u ? u.machine : "unknown");
    snprintf(e->cpus, sizeof e->cpus, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    const char *cfg = openblas_get_config(), *core = openblas_get_corename();
    snprintf(e->blas, sizeof e->blas, "%s", cfg ? cfg : "?"); /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." */
    snprintf(e->blas_core, sizeof e->blas_core, "%s", core ? core : "?");
    snprintf(e->blas_threads, sizeof e->blas_threads, "%d", openblas_get_num_threads());
#if defined(__clang__)
    snprintf(e->compiler, sizeof e->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(e->compiler, sizeof e->compiler, "gcc %s", __VERSION__);
#else
    snprintf(e->compiler, sizeof e->compiler, "unknown");
#endif
    snprintf(e->flags, sizeof e->flags, "%s", RS_BUILD_C_FLAGS);
    const char *k[] = {"host", "cpu_model", "cpu_count", "os", "blas", "blas_core", "blas_threads", "compiler",
                       "compiler_flags"};
    const char *v[] = {e->host, e->cpu, e->cpus, e->os, e->blas, e->blas_core, e->blas_threads, e->compiler, e->flags};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) e->attrs[e->n++] = (rs_h5log_extra){k[i], v[i], 0};
    if (gpu && gpu[0]) e->attrs[e->n++] = (rs_h5log_extra){"gpu", gpu, 0};
}
