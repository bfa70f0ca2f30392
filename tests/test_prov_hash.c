/* test_prov_hash.c — the model files' digests computed on worker threads (eval/log/rs_provenance.h:
 * rs_prov_hash_start / join / cancel, and rs_prov_hash_files built on them), on a folder of model
 * files of different sizes (0 B to 6 MiB, several 1 MiB read blocks):
 *  - every digest equals sha256sum's and model_hash equals sha256sum of sha256sum's manifest (an
 *    independent reference); other files (notes.txt, hidden ones) are not listed;
 *  - 1, 2, 3, 8 and "0" (one per file) worker threads give the same listing, digests, manifest
 *    digest and rehashed count as rs_prov_hash_files: the thread count and timing change nothing;
 *  - the cache: a digest given for the same name, size and mtime is taken (not recomputed: a
 *    planted fake digest comes back), one with another mtime is not;
 *  - failures surface at join, never at start, as rs_prov_hash_files reports them: a missing folder
 *    and a dangling weight file give RS_E_IO naming the path;
 *  - both SHA-256 paths (the x86 SHA extensions where the CPU has them, and the portable code) on
 *    lengths around the block size and the padding limit, and rs_prov_sha256_file, equal sha256sum;
 *  - cancel stops a job with files still to hash and frees it (no thread left running: the
 *    folder is removed right after). */
#define _XOPEN_SOURCE 700 /* mkdtemp, symlink */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "log/rs_provenance.h"
#include "rs_test_util.h"

static char g_dir[256];
static const char *const k_files[] = {"config.json", "empty.safetensors", "model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors", "tokenizer.json"};
static const size_t k_sizes[] = {321, 0, (6u << 20) + 17, (3u << 20) + 5, 70001};
enum { NF = 5 };

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_provhash_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    uint64_t s = 20261201;
    for (int i = 0; i < NF; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", g_dir, k_files[i]);
        FILE *f = fopen(p, "wb");
        if (!f) return -1;
        for (size_t k = 0; k < k_sizes[i]; k++) fputc((int)(rs_test_splitmix64(&s) & 0xFF), f);
        fclose(f);
    }
    /* not model files: never listed */
    return rs_test_sh(g_dir, "cd '%s' && echo hi > notes.txt && echo '{}' > .hidden.json", g_dir);
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_sh("/tmp", "rm -rf '%s'", g_dir);
}

static void sha_of_(const char *cmd, char out[65])
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, 65, p));
    pclose(p);
    assert_int_equal(strlen(out), 64);
}

static void same_(const rs_prov_files *a, const rs_prov_files *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->rehashed, b->rehashed);
    assert_string_equal(a->model_hash, b->model_hash);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->files[i].name, b->files[i].name);
        assert_string_equal(a->files[i].sha256, b->files[i].sha256);
        assert_int_equal(a->files[i].size, b->files[i].size);
        assert_int_equal(a->files[i].mtime_ns, b->files[i].mtime_ns);
    }
}

static void test_matches_sha256sum_any_threads(void **state)
{
    (void)state;
    rs_prov_files ref;
    assert_int_equal(rs_prov_hash_files(g_dir, NULL, 0, &ref), RS_OK);
    assert_int_equal(ref.n, NF);
    assert_int_equal(ref.rehashed, NF);
    for (int i = 0; i < NF; i++) { /* sorted by name, as k_files */
        assert_string_equal(ref.files[i].name, k_files[i]);
        assert_int_equal(ref.files[i].size, k_sizes[i]);
        char cmd[700], want[65];
        snprintf(cmd, sizeof cmd, "sha256sum '%s/%s'", g_dir, k_files[i]);
        sha_of_(cmd, want);
        assert_string_equal(ref.files[i].sha256, want);
    }
    char cmd[900], want[65];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && sha256sum config.json empty.safetensors model-00001-of-00002.safetensors "
             "model-00002-of-00002.safetensors tokenizer.json | sha256sum",
             g_dir);
    sha_of_(cmd, want);
    assert_string_equal(ref.model_hash + 7, want); /* "sha256:" + hex */
    const int threads[] = {1, 2, 3, 8, 0};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        rs_prov_job *j = NULL;
        assert_int_equal(rs_prov_hash_start(g_dir, NULL, 0, threads[t], &j), RS_OK);
        assert_non_null(j);
        rs_prov_files got;
        assert_int_equal(rs_prov_hash_join(j, &got), RS_OK);
        same_(&ref, &got);
        rs_prov_files_free(&got);
    }
    rs_prov_files_free(&ref);
}

static void test_cache(void **state)
{
    (void)state;
    rs_prov_files ref;
    assert_int_equal(rs_prov_hash_files(g_dir, NULL, 0, &ref), RS_OK);
    /* a fake digest for the big shard, with its true size and mtime: taken as is */
    char fake[65];
    memset(fake, 'a', 64);
    fake[64] = '\0';
    rs_h5log_file_hash c[2] = {ref.files[2], ref.files[3]};
    c[0].sha256 = fake;
    c[1].sha256 = fake;
    c[1].mtime_ns += 1; /* another modification time: not taken */
    rs_prov_job *j = NULL;
    assert_int_equal(rs_prov_hash_start(g_dir, c, 2, 4, &j), RS_OK);
    rs_prov_files got;
    assert_int_equal(rs_prov_hash_join(j, &got), RS_OK);
    assert_int_equal(got.rehashed, NF - 1);
    assert_string_equal(got.files[2].sha256, fake);
    assert_string_equal(got.files[3].sha256, ref.files[3].sha256);
    assert_string_not_equal(got.model_hash, ref.model_hash);
    rs_prov_files_free(&got);
    rs_prov_files_free(&ref);
}

static void test_failures_at_join(void **state)
{
    (void)state;
    char missing[400];
    snprintf(missing, sizeof missing, "%s/no-such-folder", g_dir);
    rs_prov_job *j = NULL;
    assert_int_equal(rs_prov_hash_start(missing, NULL, 0, 0, &j), RS_OK);
    rs_prov_files got;
    assert_int_equal(rs_prov_hash_join(j, &got), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "no-such-folder"));
    assert_int_equal(got.n, 0);
    assert_int_equal(rs_prov_hash_files(missing, NULL, 0, &got), RS_E_IO);
    /* a weight file that cannot be read (a dangling link): the same error from both */
    char bad[400];
    snprintf(bad, sizeof bad, "%s/zz-dangling.safetensors", g_dir);
    assert_int_equal(symlink("/nonexistent/replayssm-target", bad), 0);
    assert_int_equal(rs_prov_hash_start(g_dir, NULL, 0, 3, &j), RS_OK);
    assert_int_equal(rs_prov_hash_join(j, &got), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "zz-dangling.safetensors"));
    assert_int_equal(rs_prov_hash_files(g_dir, NULL, 0, &got), RS_E_IO);
    assert_non_null(strstr(rs_last_error(), "zz-dangling.safetensors"));
    assert_int_equal(unlink(bad), 0);
}

/* both SHA-256 paths (the x86 SHA extensions, where this CPU has them, and the portable code) on
 * lengths around the 64-byte block and the 56-byte padding limit, each against sha256sum */
static void test_both_sha_paths(void **state)
{
    (void)state;
    const size_t lens[] = {0, 1, 55, 56, 63, 64, 65, 119, 127, 128, 129, 1000, 4096 + 17, (1u << 20) + 3};
    uint64_t sd = 99;
    unsigned char *b = (unsigned char *)malloc((1u << 20) + 3);
    assert_non_null(b);
    for (size_t i = 0; i < (1u << 20) + 3; i++) b[i] = (unsigned char)(rs_test_splitmix64(&sd) & 0xFF);
    fprintf(stderr, "test_prov_hash: SHA extensions %s\n", rs_prov_sha256_accelerated() ? "used" : "not available");
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char p[400], cmd[500], want[65], got0[65], got1[65];
        snprintf(p, sizeof p, "%s/len.bin", g_dir);
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(b, 1, lens[i], f), lens[i]);
        fclose(f);
        snprintf(cmd, sizeof cmd, "sha256sum '%s'", p);
        sha_of_(cmd, want);
        rs_prov_sha256_mem(b, lens[i], 0, got0);
        rs_prov_sha256_mem(b, lens[i], 1, got1);
        assert_string_equal(got0, want);
        assert_string_equal(got1, want);
        char fh[65];
        assert_int_equal(rs_prov_sha256_file(p, fh), RS_OK);
        assert_string_equal(fh, want);
        unlink(p);
    }
    free(b);
}

static void test_cancel(void **state)
{
    (void)state;
    for (int t = 1; t <= 4; t++) {
        rs_prov_job *j = NULL;
        assert_int_equal(rs_prov_hash_start(g_dir, NULL, 0, t, &j), RS_OK);
        rs_prov_hash_cancel(j); /* joins the workers before it returns */
    }
    rs_prov_hash_cancel(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_sha256sum_any_threads),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_failures_at_join),
        cmocka_unit_test(test_both_sha_paths),
        cmocka_unit_test(test_cancel),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
