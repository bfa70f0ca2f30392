/* rs_provenance.c — model files' digests (cached by size and mtime) and the machine / build a log
 * was written on (rs_provenance.h). The SHA-256 is the input room's (eval/input/rs_sha256.c). */
#include "rs_provenance.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "replayssm/eval/rs_sha256.h"
#include "input/rs_input.h"
#include "rs_check.h"

/* OpenBLAS's own queries (the eval library links OpenBLAS; cblas.h declares them too, but which
 * header a system installs varies) */
extern char *openblas_get_config(void);
extern char *openblas_get_corename(void);
extern int openblas_get_num_threads(void);

#ifndef RS_BUILD_C_FLAGS
#define RS_BUILD_C_FLAGS "unknown"
#endif

int rs_prov_model_file(const char *name)
{
    if (!name || name[0] == '.') return 0;
    return rs_input_ends_with(name, ".safetensors") || rs_input_ends_with(name, ".json") || rs_input_ends_with(name, ".tiktoken") ||
           rs_input_ends_with(name, ".model") || !strcmp(name, "merges.txt") || !strcmp(name, "vocab.txt");
}

/* ---- SHA-256 of whole blocks with the x86 SHA extensions ------------------------------------
 * The model files are GBs: the portable SHA-256 (eval/input/rs_sha256.c) runs at ~200 MB/s
 * on an H200 host's CPU (docs/evaluator.md), ~20 s for a 4 GB shard. Where the CPU has the SHA
 * extensions (cpuid 7: EBX bit 29; AMD Zen, Intel Ice Lake and later), whole 64-byte blocks go
 * through sha256rnds2 / sha256msg1 / sha256msg2 (the usual ABEF / CDGH state layout), the tail and
 * the padding through the portable code: the same digest (tests/test_prov_hash.c compares both
 * paths with sha256sum). RS_SHA256_PORTABLE=1 in the environment disables the fast path. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define RS_PROV_HAVE_SHANI 1

static const uint32_t k_sha_k_[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static int have_shani_(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19))) return 0; /* SSSE3, SSE4.1 */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 29) & 1u; /* SHA */
}

/* state h[8] (a..h) advanced over nb whole blocks of p */
__attribute__((target("sha,sse4.1,ssse3"))) static void shani_blocks_(uint32_t h[8], const uint8_t *p, size_t nb)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_loadu_si128((const __m128i *)(const void *)&h[0]);
    __m128i s1 = _mm_loadu_si128((const __m128i *)(const void *)&h[4]);
    t = _mm_shuffle_epi32(t, 0xB1);             /* CDAB */
    s1 = _mm_shuffle_epi32(s1, 0x1B);           /* EFGH */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);     /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);          /* CDGH */
    for (; nb > 0; nb--, p += 64) {
        const __m128i abef = s0, cdgh = s1;
        __m128i w0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 0)), bswap);
        __m128i w1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)), bswap);
        __m128i w2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 32)), bswap);
        __m128i w3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 48)), bswap);
        /* four rounds with the words in w (words 4j .. 4j + 3) */
#define RS_SHA4_(w, j)                                                                                  \
    do {                                                                                                \
        __m128i m_ = _mm_add_epi32((w), _mm_loadu_si128((const __m128i *)(const void *)&k_sha_k_[4 * (j)])); \
        s1 = _mm_sha256rnds2_epu32(s1, s0, m_);                                                         \
        s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m_, 0x0E));                                \
    } while (0)
        /* the next words: W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], 4 at a time: x (the
           words 16 earlier) from x, y, z, w = the four vectors before it, oldest first */
#define RS_SHAW_(x, y, z, w) (x) = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32((x), (y)), _mm_alignr_epi8((w), (z), 4)), (w))
        RS_SHA4_(w0, 0);
        RS_SHA4_(w1, 1);
        RS_SHA4_(w2, 2);
        RS_SHA4_(w3, 3);
        for (int j = 4; j < 16; j += 4) {
            RS_SHAW_(w0, w1, w2, w3);
            RS_SHA4_(w0, j);
            RS_SHAW_(w1, w2, w3, w0);
            RS_SHA4_(w1, j + 1);
            RS_SHAW_(w2, w3, w0, w1);
            RS_SHA4_(w2, j + 2);
            RS_SHAW_(w3, w0, w1, w2);
            RS_SHA4_(w3, j + 3);
        }
#undef RS_SHA4_
#undef RS_SHAW_
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);            /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);           /* DCHG */
    s0 = _mm_blend_epi16(t, s1, 0xF0);          /* DCBA */
    s1 = _mm_alignr_epi8(s1, t, 8);             /* stored below as a b c d, e f g h */
    _mm_storeu_si128((__m128i *)(void *)&h[0], s0);
    _mm_storeu_si128((__m128i *)(void *)&h[4], s1);
}
#endif

int rs_prov_sha256_accelerated(void)
{
#ifdef RS_PROV_HAVE_SHANI
    static atomic_int cached = -1; /* the CPU does not change; the environment is read once too */
    int v = atomic_load(&cached);
    if (v < 0) {
        const char *e = getenv("RS_SHA256_PORTABLE");
        v = (e && e[0] == '1') ? 0 : have_shani_();
        atomic_store(&cached, v);
    }
    return v;
#else
    return 0;
#endif
}

/* c advanced over n bytes: whole blocks through the SHA extensions when there are any and no
 * partial block is pending (then c's state and count are all there is), the rest portably */
static void update_(rs_sha256_ctx *c, const unsigned char *p, size_t n, int fast)
{
#ifdef RS_PROV_HAVE_SHANI
    if (fast && c->n % 64 == 0 && n >= 64) {
        const size_t nb = n / 64;
        shani_blocks_(c->h, p, nb);
        c->n += (uint64_t)nb * 64;
        p += nb * 64;
        n -= nb * 64;
    }
#else
    (void)fast;
#endif
    rs_sha256_update(c, p, n);
}

void rs_prov_sha256_mem(const void *p, size_t n, int fast, char hex[65])
{
    rs_sha256_ctx c;
    rs_sha256_init(&c);
    update_(&c, (const unsigned char *)p, n, fast && rs_prov_sha256_accelerated());
    rs_sha256_final(&c, hex);
}

/* the digest of path's bytes, opened by the input room's bounded open (a regular file: a FIFO or
 * a link to /dev/zero is refused at once, never waited on or read forever); stops early
 * (RS_E_STATE) once *cancel or *stop is set, checked after every block (NULL: never) */
static rs_status sha256_file_(const char *path, char hex[65], const atomic_int *cancel,
                              const volatile sig_atomic_t *stop)
{
    int fd = -1;
    RS_TRY(rs_input_open(path, RS_PROV_MAX_FILE_BYTES, &fd, NULL));
    enum { BLK = 1 << 20 };
    unsigned char *buf = (unsigned char *)malloc(BLK);
    if (!buf) {
        close(fd);
        return rs_error_set(RS_E_NOMEM, "out of memory");
    }
    const int fast = rs_prov_sha256_accelerated();
    rs_sha256_ctx c;
    rs_sha256_init(&c);
    int stopped = 0, err = 0;
    for (;;) {
        const ssize_t k = read(fd, buf, BLK);
        if (k < 0 && errno == EINTR) {
            if (stop && *stop) break; /* a signal: the flag is checked below */
            continue;
        }
        if (k < 0) err = errno;
        if (k <= 0) break;
        update_(&c, buf, (size_t)k, fast);
        if ((cancel && atomic_load(cancel)) || (stop && *stop)) {
            stopped = 1;
            break;
        }
    }
    if (stop && *stop) stopped = 1;
    free(buf);
    close(fd);
    if (stopped) return rs_error_set(RS_E_STATE, "hashing %s was stopped", path);
    if (err) return rs_error_set(RS_E_IO, "cannot read %s: %s", path, strerror(err));
    rs_sha256_final(&c, hex);
    return RS_OK;
}

rs_status rs_prov_sha256_file(const char *path, char hex[65]) { return sha256_file_(path, hex, NULL, NULL); }

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

/* ---- hashing on worker threads ------------------------------------------------------------ */

/* one file of the job: its digest from the cache, or computed by a worker */
typedef struct prov_item {
    char path[4096];
    char hex[65];
    int todo;          /* not in the cache: a worker hashes it */
    rs_status st;
    char msg[1024];    /* the worker's rs_last_error() (a per-thread message) */
} prov_item;

typedef struct prov_order {
    uint64_t size;
    size_t i; /* index into items */
} prov_order;

struct rs_prov_job {
    rs_prov_files pf;  /* the listing: names, sizes, mtimes (digests filled at join) */
    rs_status st;      /* of listing / stat: reported at join, as rs_prov_hash_files would */
    char msg[1024];
    prov_item *items;  /* [pf.n] */
    prov_order *order; /* the files to hash, largest first */
    size_t n_todo;
    atomic_size_t next;
    atomic_int cancel;
    const volatile sig_atomic_t *stop; /* the caller's stop flag (a signal handler's), or NULL */
    pthread_t th[RS_PROV_MAX_THREADS];
    int n_threads;
};

static void *worker_(void *arg)
{
    rs_prov_job *j = (rs_prov_job *)arg;
    for (;;) {
        const size_t t = atomic_fetch_add(&j->next, 1);
        if (t >= j->n_todo || atomic_load(&j->cancel) || (j->stop && *j->stop)) break;
        prov_item *it = &j->items[j->order[t].i];
        it->st = sha256_file_(it->path, it->hex, &j->cancel, j->stop);
        if (it->st != RS_OK) snprintf(it->msg, sizeof it->msg, "%s", rs_last_error());
    }
    return NULL;
}

static int by_size_desc_(const void *a, const void *b)
{
    const prov_order *x = (const prov_order *)a, *y = (const prov_order *)b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->i < y->i ? -1 : x->i > y->i; /* equal sizes: name order (deterministic) */
}

/* list, stat, take cached digests; st / msg keep the first failure (no thread started then) */
static rs_status prepare_(rs_prov_job *j, const char *dir, const rs_h5log_file_hash *cache, size_t n_cache)
{
    RS_TRY(list_(dir, &j->pf));
    j->items = (prov_item *)calloc(j->pf.n + 1, sizeof *j->items);
    j->order = (prov_order *)calloc(j->pf.n + 1, sizeof *j->order);
    if (!j->items || !j->order) return rs_error_set(RS_E_NOMEM, "out of memory");
    for (size_t i = 0; i < j->pf.n; i++) {
        rs_h5log_file_hash *fh = &j->pf.files[i];
        prov_item *it = &j->items[i];
        snprintf(it->path, sizeof it->path, "%s/%s", dir, fh->name);
        /* a name that looks like a model file but is a FIFO, a device or a folder is refused
         * here, by the bounded open every reader uses (the worker opens it the same way) */
        RS_TRY(rs_input_check(it->path, RS_PROV_MAX_FILE_BYTES, NULL));
        struct stat sb;
        if (stat(it->path, &sb) != 0) return rs_error_set(RS_E_IO, "cannot stat %s: %s", it->path, strerror(errno));
        fh->size = (uint64_t)sb.st_size;
        fh->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + (int64_t)sb.st_mtim.tv_nsec;
        const char *hit = NULL; /* the cache: same name, size and modification time */
        for (size_t k = 0; k < n_cache && !hit; k++)
            if (cache[k].name && cache[k].sha256 && !strcmp(cache[k].name, fh->name) && cache[k].size == fh->size &&
                cache[k].mtime_ns == fh->mtime_ns && strlen(cache[k].sha256) == 64)
                hit = cache[k].sha256;
        if (hit) {
            snprintf(it->hex, sizeof it->hex, "%s", hit);
        } else {
            it->todo = 1;
            j->order[j->n_todo].size = fh->size;
            j->order[j->n_todo++].i = i;
        }
    }
    if (j->n_todo > 1) qsort(j->order, j->n_todo, sizeof *j->order, by_size_desc_);
    return RS_OK;
}

rs_status rs_prov_hash_start(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, int threads,
                             rs_prov_job **out)
{
    return rs_prov_hash_start_stoppable(dir, cache, n_cache, threads, NULL, out);
}

rs_status rs_prov_hash_start_stoppable(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, int threads,
                                       const volatile sig_atomic_t *stop, rs_prov_job **out)
{
    *out = NULL;
    rs_prov_job *j = (rs_prov_job *)calloc(1, sizeof *j);
    if (!j) return rs_error_set(RS_E_NOMEM, "out of memory");
    atomic_init(&j->next, 0);
    atomic_init(&j->cancel, 0);
    j->stop = stop;
    j->st = dir ? prepare_(j, dir, cache, n_cache) : rs_error_set(RS_E_INVAL, "rs_prov_hash_start: NULL folder");
    if (j->st != RS_OK) {
        snprintf(j->msg, sizeof j->msg, "%s", rs_last_error());
        *out = j;
        return RS_OK;
    }
    if (threads <= 0) { /* one per file to hash, at most the CPUs and RS_PROV_MAX_THREADS */
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (int)cpus : 1;
    }
    if (threads > RS_PROV_MAX_THREADS) threads = RS_PROV_MAX_THREADS;
    if ((size_t)threads > j->n_todo) threads = (int)j->n_todo;
    for (int t = 0; t < threads; t++) {
        if (pthread_create(&j->th[t], NULL, worker_, j) != 0) break; /* fewer workers; join hashes the rest */
        j->n_threads++;
    }
    *out = j;
    return RS_OK;
}

/* wait for the workers (after setting cancel, they stop within a block of 1 MiB) */
static void wait_(rs_prov_job *j)
{
    for (int t = 0; t < j->n_threads; t++) pthread_join(j->th[t], NULL);
    j->n_threads = 0;
}

static void job_free_(rs_prov_job *j)
{
    rs_prov_files_free(&j->pf);
    free(j->items);
    free(j->order);
    free(j);
}

void rs_prov_hash_cancel(rs_prov_job *j)
{
    if (!j) return;
    atomic_store(&j->cancel, 1);
    wait_(j);
    job_free_(j);
}

rs_status rs_prov_hash_join(rs_prov_job *j, rs_prov_files *out)
{
    memset(out, 0, sizeof *out);
    RS_CHECK(j, RS_E_INVAL, "rs_prov_hash_join: NULL job");
    wait_(j);
    if (j->st == RS_OK) worker_(j); /* what no worker took (none started, or pthread_create failed) */
    rs_status st = j->st;
    if (st != RS_OK) rs_error_set(st, "%s", j->msg);
    else if (j->stop && *j->stop) st = rs_error_set(RS_E_STATE, "hashing the model files was stopped by a signal");
    for (size_t i = 0; st == RS_OK && i < j->pf.n; i++) /* the first failure in name order, as a serial pass */
        if (j->items[i].todo && j->items[i].st != RS_OK) st = rs_error_set(j->items[i].st, "%s", j->items[i].msg);
    rs_sha256_ctx all;
    rs_sha256_init(&all);
    for (size_t i = 0; st == RS_OK && i < j->pf.n; i++) {
        rs_h5log_file_hash *fh = &j->pf.files[i];
        if (!(fh->sha256 = strdup(j->items[i].hex))) {
            st = rs_error_set(RS_E_NOMEM, "out of memory");
            break;
        }
        j->pf.rehashed += (size_t)j->items[i].todo;
        /* the manifest line, as sha256sum prints it */
        rs_sha256_update(&all, j->items[i].hex, 64);
        rs_sha256_update(&all, "  ", 2);
        rs_sha256_update(&all, fh->name, strlen(fh->name));
        rs_sha256_update(&all, "\n", 1);
    }
    if (st != RS_OK) {
        job_free_(j);
        return st;
    }
    char hex[65];
    rs_sha256_final(&all, hex);
    *out = j->pf;
    snprintf(out->model_hash, sizeof out->model_hash, "sha256:%s", hex);
    memset(&j->pf, 0, sizeof j->pf); /* moved to *out */
    job_free_(j);
    return RS_OK;
}

rs_status rs_prov_hash_files(const char *dir, const rs_h5log_file_hash *cache, size_t n_cache, rs_prov_files *out)
{
    memset(out, 0, sizeof *out);
    rs_prov_job *j = NULL;
    RS_TRY(rs_prov_hash_start(dir, cache, n_cache, 0, &j));
    return rs_prov_hash_join(j, out);
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
