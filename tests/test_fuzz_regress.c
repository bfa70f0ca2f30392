/* test_fuzz_regress.c — the parser fuzz targets (tests/fuzz/rs_fuzz.h) on every build, without
 * libFuzzer: each target gets
 *  1. its valid seeds, which must be accepted (so the targets reach the parsers' success paths);
 *  2. every file of tests/fuzz/corpus/<target>/ (inputs that once crashed or were interesting:
 *     every parser bug found by fuzzing stays here as a regression input);
 *  3. RS_FUZZ_ITERS (default 1500) mutants of each seed from a deterministic, counter-based
 *     mutator (splitmix64 of target, seed and iteration: the same inputs on every machine):
 *     bit flips, bytes set to structural characters or 0x00/0xFF, truncation, deleted,
 *     duplicated and inserted ranges, planted decimal and little-endian integers (lengths,
 *     offsets, 2^31, 2^63, 2^64-1, ...).
 * The raw-log target h5raw gets its seeds and corpus only: random bytes in a log's HDF5 metadata
 * reach libhdf5 1.10.8's own parser, which crashes on some of them (H5HG_read on a corrupted
 * global heap, docs/threat-model.md) before our code sees a value; its mutants are libFuzzer's
 * (tests/fuzz/libfuzzer.sh, crashes triaged into ours and libhdf5's, docs/fuzzing.md).
 * A target aborts on a broken promise (rs_fuzz.h), so a failure here is a crash with the
 * target's message. Both accepted and refused mutants must occur for every target (the mutator
 * reaches both paths). The `_asan` build of this program (tests/CMakeLists.txt) runs the same
 * inputs under AddressSanitizer + UndefinedBehaviorSanitizer.
 * Reproduce one mutant: RS_FUZZ_ONLY=<target> RS_FUZZ_DUMP=<iteration> writes it to
 * fuzz-<target>-<seed>-<iteration>.bin (a corpus file to commit once the bug is fixed). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fuzz/rs_fuzz.h"
#include "rs_test_util.h"

#ifndef RS_FUZZ_CORPUS_DIR
#define RS_FUZZ_CORPUS_DIR "tests/fuzz/corpus"
#endif

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static uint64_t splitmix64_(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

typedef struct rng {
    uint64_t key, ctr;
} rng;

static uint64_t next_(rng *r) { return splitmix64_(r->key ^ splitmix64_(r->ctr++)); }
static size_t below_(rng *r, size_t n) { return n ? (size_t)(next_(r) % n) : 0; }

static void ensure_(buf *b, size_t cap)
{
    if (cap <= b->cap) return;
    b->p = (uint8_t *)realloc(b->p, cap);
    assert_non_null(b->p);
    b->cap = cap;
}

static void insert_(buf *b, size_t at, const uint8_t *src, size_t k)
{
    ensure_(b, b->n + k + 1);
    memmove(b->p + at + k, b->p + at, b->n - at);
    memcpy(b->p + at, src, k);
    b->n += k;
}

/* one to four mutations of b in place */
static void mutate_(buf *b, rng *r, int binary)
{
    static const uint8_t special[] = {0x00, 0xFF, 0x7F, 0x80, '"', '{', '}', '[', ']', ',', ':', '\\',
                                      '0',  '9',  '-',  '.',  'e', '\n', '\r', ' ', '/', '+', 'x'};
    static const char *numbers[] = {"0", "-1", "1", "2147483648", "4294967296", "9223372036854775807",
                                    "18446744073709551615", "1e308", "-0", "1.5", "NaN", "99999999999999999999"};
    const int nm = 1 + (int)below_(r, 4);
    for (int m = 0; m < nm; m++) {
        const size_t pos = below_(r, b->n + 1);
        switch (below_(r, binary ? 8 : 7)) {
        case 0: /* flip a bit */
            if (b->n) b->p[below_(r, b->n)] ^= (uint8_t)(1u << below_(r, 8));
            break;
        case 1: /* a structural or extreme byte */
            if (b->n) b->p[below_(r, b->n)] = special[below_(r, sizeof special)];
            break;
        case 2: /* truncate */
            b->n = below_(r, b->n + 1);
            break;
        case 3: { /* delete a range */
            const size_t k = 1 + below_(r, 16);
            if (pos < b->n) {
                const size_t kk = pos + k > b->n ? b->n - pos : k;
                memmove(b->p + pos, b->p + pos + kk, b->n - pos - kk);
                b->n -= kk;
            }
            break;
        }
        case 4: { /* duplicate a range somewhere */
            if (!b->n) break;
            const size_t from = below_(r, b->n), k0 = 1 + below_(r, 64);
            const size_t k = from + k0 > b->n ? b->n - from : k0;
            uint8_t tmp[64];
            memcpy(tmp, b->p + from, k);
            insert_(b, pos, tmp, k);
            break;
        }
        case 5: { /* insert random bytes */
            uint8_t tmp[8];
            const size_t k = 1 + below_(r, 8);
            for (size_t i = 0; i < k; i++) tmp[i] = (uint8_t)next_(r);
            insert_(b, pos, tmp, k);
            break;
        }
        case 6: { /* overwrite with a decimal number (lengths, offsets, shapes in text formats) */
            const char *s = numbers[below_(r, sizeof numbers / sizeof numbers[0])];
            const size_t k = strlen(s);
            if (pos + k <= b->n) memcpy(b->p + pos, s, k);
            else insert_(b, pos, (const uint8_t *)s, k);
            break;
        }
        case 7: { /* a little-endian u64 (binary formats: header lengths) */
            const uint64_t vals[] = {0, 1, 2, 7, 8, (uint64_t)b->n, (uint64_t)b->n - 8, (uint64_t)b->n + 1,
                                     1ULL << 31, 1ULL << 32, 1ULL << 63, ~0ULL};
            const uint64_t v = vals[below_(r, sizeof vals / sizeof vals[0])];
            const size_t at = below_(r, 2) ? 0 : pos; /* often the first 8 bytes: a length field */
            uint8_t le[8];
            for (int i = 0; i < 8; i++) le[i] = (uint8_t)(v >> (8 * i));
            if (at + 8 <= b->n) memcpy(b->p + at, le, 8);
            break;
        }
        }
    }
}

/* ---- seeds ----------------------------------------------------------------------------------- */

#define MAX_SEEDS 6
typedef struct seeds {
    buf s[MAX_SEEDS];
    int n;
} seeds;

static void add_bytes_(seeds *sd, const void *p, size_t n)
{
    assert_true(sd->n < MAX_SEEDS);
    buf *b = &sd->s[sd->n++];
    memset(b, 0, sizeof *b);
    ensure_(b, n + 1);
    memcpy(b->p, p, n);
    b->n = n;
}

static void add_file_(seeds *sd, const char *rel)
{
    char path[1024];
    rs_test_fixture_path(path, sizeof path, rel);
    size_t n = 0;
    char *s = rs_test_read_file(path, &n);
    if (!s) fail_msg("cannot read the seed %s", path);
    add_bytes_(sd, s, n);
    free(s);
}

/* a small valid safetensors file: F32 [2,3], BF16 [4], F16 scalar, metadata */
static void add_safetensors_seed_(seeds *sd)
{
    char hdr[512];
    int h = snprintf(hdr, sizeof hdr,
                     "{\"__metadata__\":{\"format\":\"pt\"},\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                     "\"data_offsets\":[0,24]},\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
                     "\"c\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[32,34]}}");
    while (h % 8) hdr[h++] = ' ';
    uint8_t file[600];
    for (int i = 0; i < 8; i++) file[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(file + 8, hdr, (size_t)h);
    for (int i = 0; i < 34; i++) file[8 + h + i] = (uint8_t)(0x3F + i);
    add_bytes_(sd, file, 8 + (size_t)h + 34);
}

/* a .npy file as numpy writes it: version major.0, dict padded to a multiple of 64 bytes with
 * the preamble and ending in '\n', then n data bytes (a counter) */
static void add_npy_seed_(seeds *sd, int major, const char *dict, size_t n)
{
    const size_t pre = major == 1 ? 10 : 12;
    size_t hl = strlen(dict);
    while ((pre + hl + 1) % 64) hl++;
    hl++;
    uint8_t *f = (uint8_t *)calloc(pre + hl + n, 1);
    assert_non_null(f);
    memcpy(f, "\x93NUMPY", 6);
    f[6] = (uint8_t)major;
    for (size_t b = 0; b < pre - 8; b++) f[8 + b] = (uint8_t)(hl >> (8 * b));
    memset(f + pre, ' ', hl - 1);
    memcpy(f + pre, dict, strlen(dict));
    f[pre + hl - 1] = '\n';
    for (size_t i = 0; i < n; i++) f[pre + hl + i] = (uint8_t)(i * 7 + 1);
    add_bytes_(sd, f, pre + hl + n);
    free(f);
}

/* every valid-* file of the target's committed corpus (the raw-file targets' seeds: real files) */
static void add_corpus_valid_(seeds *sd, const char *target)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", RS_FUZZ_CORPUS_DIR, target);
    DIR *d = opendir(dir);
    if (!d) fail_msg("no corpus folder %s", dir);
    char names[MAX_SEEDS][256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (!strncmp(e->d_name, "valid-", 6) && n < MAX_SEEDS) snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp); /* the same order everywhere */
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len = 0;
        char *b = rs_test_read_file(path, &len);
        if (!b) fail_msg("cannot read the seed %s", path);
        add_bytes_(sd, b, len);
        free(b);
    }
}

static void seeds_for_(const char *target, seeds *sd)
{
    memset(sd, 0, sizeof *sd);
    if (!strcmp(target, "safetensors")) {
        add_safetensors_seed_(sd);
        /* a real checkpoint as transformers wrote it (the random-init fixture, 1.2 MB) */
        add_file_(sd, "models/mamba2-tiny-random/model.safetensors");
    } else if (!strcmp(target, "st_index")) { /* the shards are written by the target itself */
        static const char idx[] = "{\"metadata\":{\"total_size\":34},\"weight_map\":{"
                                  "\"a.weight\":\"model-00001-of-00002.safetensors\","
                                  "\"b\":\"model-00001-of-00002.safetensors\","
                                  "\"c\":\"model-00002-of-00002.safetensors\"}}";
        add_bytes_(sd, idx, sizeof idx - 1);
    } else if (!strcmp(target, "hf_config")) {
        add_file_(sd, "models/gdn-tiny-random/config.json");
        add_file_(sd, "models/mamba2-tiny-random/config.json");
        add_file_(sd, "models/gdn-moe-tiny-random/config.json");
        add_file_(sd, "models/mamba2-moe-tiny-random/config.json");
    } else if (!strcmp(target, "quant_config")) { /* first byte: 0 hf_quant_config.json, 1 config.json */
        static const char nv[] = "\x00{\"quantization\":{\"quant_algo\":\"NVFP4\",\"group_size\":16,"
                                 "\"exclude_modules\":[\"lm_head\",\"*.gate\"]}}";
        static const char cj[] = "\x01{\"model_type\":\"nemotron_h\",\"quantization_config\":{\"quant_method\":"
                                 "\"modelopt\",\"quant_algo\":\"FP8\",\"weight_block_size\":[128,128]}}";
        add_bytes_(sd, nv, sizeof nv - 1);
        add_bytes_(sd, cj, sizeof cj - 1);
        char path[1024];
        snprintf(path, sizeof path, "%s/models/mamba2-moe-quant/hf_quant_config.json", RS_FIXTURE_DIR);
        size_t len;
        char *b = rs_test_read_file(path, &len);
        if (!b) fail_msg("cannot read the seed %s", path);
        char *z = (char *)malloc(len + 1);
        z[0] = 0;
        memcpy(z + 1, b, len);
        add_bytes_(sd, z, len + 1);
        free(z);
        free(b);
    } else if (!strcmp(target, "qmodel")) {
        add_file_(sd, "models/qmodel-tiny/model.safetensors");
    } else if (!strcmp(target, "pg19_meta")) {
        add_file_(sd, "pg19-mini/metadata.csv");
        static const char csv[] = "id,short_book_title,publication_date,book_link\r\n"
                                  "1,\"A \"\"quoted\"\", title, with commas\",1900,http://x/1\r\n\r\n"
                                  "2_b,Plain,,\n";
        add_bytes_(sd, csv, sizeof csv - 1);
    } else if (!strcmp(target, "pg19_book")) {
        add_file_(sd, "pg19-mini/test/1023.txt.gz");
    } else if (!strcmp(target, "h5log")) { /* edit programs (rs_fuzz_targets.c): valid logs */
        add_bytes_(sd, "", 0);
        /* tokens = 24 (unchanged); /reference/nll grown to 100 positions; /books/length[1] = 13 */
        static const uint8_t prog[30] = {0, 2, 24, 0, 0, 0, 0, 0, 0, 0, 7, 3, 100, 0, 0, 0, 0, 0, 0, 0,
                                         5, 1, 13, 0, 0, 0, 0, 0, 0, 0};
        add_bytes_(sd, prog, 10);
        add_bytes_(sd, prog + 10, 10);
        add_bytes_(sd, prog, sizeof prog);
    } else if (!strcmp(target, "npy")) { /* the dtypes, ranks and versions kl --token-ids takes */
        add_npy_seed_(sd, 1, "{'descr': '<u4', 'fortran_order': False, 'shape': (3, 16), }", 3 * 16 * 4);
        add_npy_seed_(sd, 2, "{'descr': '<i8', 'fortran_order': False, 'shape': (20,), }", 20 * 8);
        add_npy_seed_(sd, 3, "{\"shape\": (2, 24), \"descr\": \"<u2\", \"fortran_order\": False}", 2 * 24 * 2);
    } else if (!strcmp(target, "tok_json")) {
        add_file_(sd, "tokenizers/fuzz/bytelevel.json");
        add_file_(sd, "tokenizers/fuzz/fallback.json");
    } else if (!strcmp(target, "tok_tiktoken")) {
        add_file_(sd, "tokenizers/fuzz/small.tiktoken");
    } else if (!strcmp(target, "tok_encode")) {
        /* first byte: tokenizer (% 3) and modes (rs_fuzz_tokenizer.c); 6 = refuse invalid UTF-8 */
        static const char t0[] = "\x00Hello, world! It's caf\xc3\xa9 and na\xc3\xafve.\r\n\r\n  x";
        static const char t1[] = "\x01<|endoftext|>Qwen: \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x91\x8d e\xcc\x81 \xff\xfe";
        static const char t2[] = "\x02" "e\xcc\x81 \xea\xb0\x80\xe1\x86\xa8 <s>x</s> \xe2\x82";
        static const char t3[] = "\x06plain text for the refuse mode, 12345";
        add_bytes_(sd, t0, sizeof t0 - 1);
        add_bytes_(sd, t1, sizeof t1 - 1);
        add_bytes_(sd, t2, sizeof t2 - 1);
        add_bytes_(sd, t3, sizeof t3 - 1);
    } else if (!strcmp(target, "h5raw") || !strcmp(target, "h5floats")) { /* HDF5 files as written */
        add_corpus_valid_(sd, target);
    } else if (!strcmp(target, "policy")) {
        static const char *pol[] = {"split:nvfp4-rtn/fp32", "shared:fp8-sr+pow2", "conv:bf16-rtn",
                                    "split-naive:nvfp4-sr8+floor/fp16-sr", "fp16-sr", "fp32"};
        for (size_t i = 0; i < sizeof pol / sizeof pol[0]; i++) add_bytes_(sd, pol[i], strlen(pol[i]));
    }
    assert_true(sd->n > 0);
}

static void seeds_free_(seeds *sd)
{
    for (int i = 0; i < sd->n; i++) free(sd->s[i].p);
}

/* ---- the test -------------------------------------------------------------------------------- */



static size_t iters_(void)
{
    const char *e = getenv("RS_FUZZ_ITERS");
    return e && atol(e) > 0 ? (size_t)atol(e) : 1500;
}

/* the raw HDF5 targets' corpus files and mutants (whole files) reach libhdf5 1.10.8's own parser,
 * which leaks on some of its failed opens of hostile metadata (H5Dopen2, H5G_mkroot: allocations it
 * never frees): the leak checker ignores what those calls allocate, while AddressSanitizer and UBSan
 * stay on (a read past a buffer still fails the test); the valid seeds run with it */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
static void lsan_off_(void) { __lsan_disable(); }
static void lsan_on_(void) { __lsan_enable(); }
#else
static void lsan_off_(void) {}
static void lsan_on_(void) {}
#endif

static void run_corpus_(const rs_fuzz_target *t)
{
    const int raw_hdf5 = !strcmp(t->name, "h5floats") || !strcmp(t->name, "h5raw");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", RS_FUZZ_CORPUS_DIR, t->name);
    DIR *d = opendir(dir);
    if (!d) return;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        char *s = rs_test_read_file(path, &len);
        if (!s) continue;
        /* a corpus file named valid-* must be accepted and bad-* refused (the others: no crash) */
        if (raw_hdf5) lsan_off_();
        const int got = t->fn((const uint8_t *)s, len);
        if (raw_hdf5) lsan_on_();
        free(s);
        if (!strncmp(e->d_name, "valid-", 6) && got != 1) fail_msg("%s: corpus file %s refused", t->name, e->d_name);
        if (!strncmp(e->d_name, "bad-", 4) && got != 0) fail_msg("%s: corpus file %s accepted", t->name, e->d_name);
        n++;
    }
    closedir(d);
    print_message("  %s: %zu corpus input(s) replayed\n", t->name, n);
}

static void test_targets(void **state)
{
    (void)state;
    char scratch[64];
    snprintf(scratch, sizeof scratch, "/tmp/rs_fuzzreg_%ld", (long)getpid());
    assert_int_equal(rs_fuzz_set_scratch(scratch), 0);
    const char *only = getenv("RS_FUZZ_ONLY"), *dump = getenv("RS_FUZZ_DUMP");
    const size_t iters = iters_();
    for (size_t ti = 0; rs_fuzz_targets[ti].name; ti++) {
        const rs_fuzz_target *t = &rs_fuzz_targets[ti];
        if (only && strcmp(only, t->name)) continue;
        seeds sd;
        seeds_for_(t->name, &sd);
        for (int i = 0; i < sd.n; i++)
            if (t->fn(sd.s[i].p, sd.s[i].n) != 1) fail_msg("%s: valid seed %d refused", t->name, i);
        run_corpus_(t);
        if (!strcmp(t->name, "h5raw")) { /* no mutants: see the header comment */
            print_message("  %s: %d seed(s), no mutants (libhdf5's own parser, docs/fuzzing.md)\n", t->name, sd.n);
            seeds_free_(&sd);
            continue;
        }
        size_t accepted = 0, refused = 0;
        const int raw_hdf5 = !strcmp(t->name, "h5floats");
        buf m = {0};
        for (int i = 0; i < sd.n; i++) {
            /* the large checkpoint seed costs ~1 ms per mutant, a log-reader mutant (a log copied,
             * edited or written raw, and read) ~3 ms: fewer of those */
            const int log = !strcmp(t->name, "h5log") || !strcmp(t->name, "h5raw") || !strcmp(t->name, "h5floats");
            const size_t n_it = sd.s[i].n > 65536 ? iters / 10 + 1 : log ? iters / 6 + 1 : iters;
            for (size_t it = 0; it < n_it; it++) {
                rng r = {splitmix64_(((uint64_t)ti << 48) ^ ((uint64_t)i << 40) ^ 0x5EEDULL), it << 8};
                m.n = 0;
                ensure_(&m, sd.s[i].n + 1);
                memcpy(m.p, sd.s[i].p, sd.s[i].n);
                m.n = sd.s[i].n;
                mutate_(&m, &r, t->binary);
                if (dump && (size_t)atol(dump) == it) {
                    char out[128];
                    snprintf(out, sizeof out, "fuzz-%s-%d-%zu.bin", t->name, i, it);
                    FILE *f = fopen(out, "wb");
                    if (f) {
                        fwrite(m.p, 1, m.n, f);
                        fclose(f);
                    }
                }
                if (raw_hdf5) lsan_off_();
                if (t->fn(m.p, m.n)) accepted++;
                else refused++;
                if (raw_hdf5) lsan_on_();
            }
        }
        free(m.p);
        print_message("  %s: %d seed(s), %zu mutants accepted, %zu refused\n", t->name, sd.n, accepted, refused);
        assert_true(refused > 0);
        assert_true(accepted > 0);
        seeds_free_(&sd);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_targets)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
