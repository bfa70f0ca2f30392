/* test_h5_untrusted.c — a dataset whose stored chunks disagree with its chunk dimensions is refused
 * before libhdf5 reads it (eval/log/rs_h5check.c, docs/threat-model.md): libhdf5 1.10.8 copies the
 * chunk size its layout message declares out of a buffer holding the chunk's real bytes, a heap
 * over-read (ASan: H5Dread via rs_h5log_read_row), and returns whatever lies beyond as data.
 * Cases, each a 4-byte edit of a chunk dimension in the file's bytes (located from the dataset's
 * object header address):
 *  - a KL log's /reference/nll chunk (1, 8) -> (1, 16): refused by rs_h5log_open (a log stores at
 *    most `chunk` positions per HDF5 chunk) and by `replayssm info` (exit 1; it printed a changed
 *    summary with exit 0);
 *  - the same edit with the root `chunk` attribute raised to 16 too, so the layout rule holds: the
 *    log opens, but every read of the edited dataset (rows, summaries, --resume's copy of the
 *    committed rows) is refused, the stored chunks inflating to 64 bytes, not 128; `info` exit 1
 *    and `--resume` refused, the log left as it was;
 *  - (1, 8) -> (1, 4): a chunk that inflates to more than its dimensions say, refused the same way;
 *  - `quant-error --input` on a [16] dataset with chunks of 8 (deflated or not) edited to 32
 *    (larger than the extent) or 12: exit 1 naming the chunk, where it read past the buffer and
 *    exited 0. The unedited files read as before.
 * Each call runs in a forked child: a crash is reported with its case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <hdf5.h>

#include "replayssm/eval/rs_h5io.h"
#include "replayssm/eval/rs_h5log.h"
#include "rs_test_util.h"

#define NB 2
#define NR 1
#define CH 8

static char g_dir[256], g_cli[1024], g_base[600];
static const char *g_ids[NB] = {"1023", "105"};
static const char *g_titles[NB] = {"A", "B"};
static uint64_t g_len[NB] = {40, 17};
static rs_h5log_run_info g_runs[NR] = {{.policy = "fp32", .mode = "conv", .hp_format = "fp32", .lp_format = "fp32", .window = 16, .seed = 0}};

static rs_h5log_meta meta_(uint64_t chunk)
{
    rs_h5log_meta m;
    memset(&m, 0, sizeof m);
    m.tool_version = m.git_commit = m.start_time = m.model_path = m.data_path = "t";
    m.command_line = "replayssm kl --test";
    m.model_config_hash = "fnv1a64:0000000000000001";
    m.model_type = "qwen3_5_text";
    m.tokenizer = "byte";
    m.split = "test";
    m.short_books = "skip";
    m.tokens = 40;
    m.chunk = chunk;
    m.n_books = NB;
    m.book_ids = g_ids;
    m.book_titles = g_titles;
    m.book_len = g_len;
    m.n_runs = NR;
    m.runs = g_runs;
    return m;
}

/* a complete log with CH positions per chunk, NLL values 1 + position / 8 */
static void make_log_(const char *path)
{
    rs_h5log_meta m = meta_(CH);
    rs_h5log *lg = NULL;
    unlink(path);
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_OK);
    for (size_t b = 0; b < NB; b++)
        for (uint64_t pos = 0; pos < g_len[b]; pos += CH) {
            const size_t n = g_len[b] - pos < CH ? (size_t)(g_len[b] - pos) : CH;
            double d[CH];
            int32_t t[CH];
            uint8_t a[CH];
            for (size_t i = 0; i < n; i++) d[i] = 1.0 + (double)(pos + i) / 8.0, t[i] = (int32_t)i, a[i] = 1;
            rs_h5log_run_chunk rc[NR] = {{d, d, d, a}};
            assert_int_equal(rs_h5log_write_chunk(lg, b, pos, n, t, d, t, rc), RS_OK);
        }
    rs_kl_summary s[NR];
    assert_int_equal(rs_h5log_summarize(lg, 0, &s[0]), RS_OK);
    assert_int_equal(rs_h5log_finish(lg, "e", s), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_h5untr_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    const char *e = getenv("RS_KL_CLI");
    snprintf(g_cli, sizeof g_cli, "%s", e && e[0] ? e : RS_CLI_PATH);
    snprintf(g_base, sizeof g_base, "%s/base.h5", g_dir);
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    return rs_test_rmdir(g_dir);
}

/* the byte offset of the chunk dimension `which` in the layout message of dataset ds: the first
 * run of its chunk dimensions and element size (4-byte little-endian each) after its object header */
static size_t chunk_dim_offset_(const char *path, const char *ds, const uint32_t *dims, int n, int which)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    H5O_info_t oi;
    assert_true(H5Oget_info_by_name2(f, ds, &oi, H5O_INFO_BASIC, H5P_DEFAULT) >= 0);
    H5Fclose(f);
    size_t sz = 0;
    unsigned char *b = rs_test_read_file(path, &sz);
    assert_non_null(b);
    unsigned char pat[16];
    for (int k = 0; k < n; k++)
        for (int j = 0; j < 4; j++) pat[4 * k + j] = (unsigned char)(dims[k] >> (8 * j));
    for (size_t i = (size_t)oi.addr; i + 4 * (size_t)n <= sz; i++)
        if (!memcmp(b + i, pat, 4 * (size_t)n)) {
            free(b);
            return i + 4 * (size_t)which;
        }
    free(b);
    fail_msg("no chunk dimensions of %s found", ds);
    return 0;
}

static void poke_u32_(const char *path, size_t off, uint32_t v)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    assert_int_equal(fseek(f, (long)off, SEEK_SET), 0);
    assert_int_equal(fwrite(le, 1, 4, f), 4);
    assert_int_equal(fclose(f), 0);
}

/* run fn(path) in a child; its exit status (a crash fails the test) */
static int child_(int (*fn)(const char *), const char *path)
{
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(fn(path));
    int wst = 0;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    if (!WIFEXITED(wst)) fail_msg("%s: the reader crashed (wait status 0x%x)", path, wst);
    return WEXITSTATUS(wst);
}

/* 0: refused at open (RS_E_FORMAT); 1: opened and every read of /reference/nll refused (RS_E_FORMAT);
 * 2: something read the edited dataset */
static int read_log_(const char *path)
{
    rs_h5log *lg = NULL;
    const rs_status st = rs_h5log_open(path, 0, NULL, &lg);
    if (st != RS_OK) return st == RS_E_FORMAT ? 0 : 3;
    double v[40];
    rs_h5log_ref_summary rs;
    int ok = rs_h5log_read_row(lg, -1, "nll", 0, 40, v) == RS_E_FORMAT && strstr(rs_last_error(), "reference/nll");
    ok = ok && rs_h5log_read_row(lg, -1, "nll", 1, 17, v) == RS_E_FORMAT;
    ok = ok && rs_h5log_reference_summary(lg, &rs) == RS_E_FORMAT;
    rs_h5log_close(lg);
    return ok ? 1 : 2;
}

/* --resume of the edited log: refused (the committed rows are copied through the checked reader) */
static int resume_log_(const char *path)
{
    rs_h5log_meta m = meta_(16);
    rs_h5log *lg = NULL;
    const rs_status st = rs_h5log_open(path, 1, &m, &lg);
    if (st == RS_OK) rs_h5log_close(lg);
    return st == RS_E_FORMAT ? 0 : 1;
}

static const uint32_t k_log_dims[3] = {1, CH, 8}; /* /reference/nll: (1, chunk) doubles */

static void copy_(const char *from, const char *to)
{
    assert_int_equal(rs_test_sh(g_dir, "cp '%s' '%s'", from, to), 0);
}

static void test_log_chunk_dim_over_chunk(void **state)
{
    (void)state;
    make_log_(g_base);
    assert_int_equal(child_(read_log_, g_base), 2); /* the valid log reads (2: rows came back) */
    char p[700];
    snprintf(p, sizeof p, "%s/wide.h5", g_dir);
    copy_(g_base, p);
    poke_u32_(p, chunk_dim_offset_(p, "/reference/nll", k_log_dims, 3, 1), 16);
    assert_int_equal(child_(read_log_, p), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, p), 1);
    assert_true(rs_test_out_has(g_dir, "reference/nll"));
}

static void set_root_chunk_(const char *path, uint64_t v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t a = H5Aopen(f, "chunk", H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_UINT64, &v) >= 0);
    H5Aclose(a);
    H5Fclose(f);
}

static void test_log_chunk_dim_with_attribute(void **state)
{
    (void)state;
    make_log_(g_base);
    char p[700];
    const uint32_t edits[2] = {16, 4};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/edit%u.h5", g_dir, edits[k]);
        copy_(g_base, p);
        if (edits[k] > CH) set_root_chunk_(p, edits[k]); /* the layout rule holds: only the chunks disagree */
        poke_u32_(p, chunk_dim_offset_(p, "/reference/nll", k_log_dims, 3, 1), edits[k]);
        assert_int_equal(child_(read_log_, p), 1);
        assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, p), 1);
        assert_true(rs_test_out_has(g_dir, "reference/nll"));
        if (edits[k] > CH) {
            size_t n0 = 0, n1 = 0;
            unsigned char *before = rs_test_read_file(p, &n0);
            assert_int_equal(child_(resume_log_, p), 0);
            unsigned char *after = rs_test_read_file(p, &n1);
            assert_int_equal(n0, n1); /* refused: the log is as it was */
            assert_memory_equal(before, after, n0);
            free(before);
            free(after);
        }
    }
}

/* ---- quant-error --input: any HDF5 file ------------------------------------------------------ */

static void make_floats_(const char *path, int deflate)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    const hsize_t n = 16, ch = 8;
    hid_t sp = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &ch);
    if (deflate) H5Pset_shuffle(dcpl), H5Pset_deflate(dcpl, 4);
    hid_t d = H5Dcreate2(f, "x", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = 0.5f + (float)i;
    assert_true(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(f);
}

static int read_floats_(const char *path)
{
    float *x = NULL;
    size_t n = 0, last = 0;
    const rs_status st = rs_h5_read_floats(path, "x", 1000, &x, &n, &last);
    free(x);
    if (st == RS_OK) return n == 16 ? 1 : 2;
    return st == RS_E_FORMAT && strstr(rs_last_error(), "chunk") ? 0 : 3;
}

static void test_quant_error_chunk_dims(void **state)
{
    (void)state;
    static const uint32_t dims[2] = {8, 4}; /* chunk (8) of 4-byte floats */
    char p[700];
    for (int deflate = 0; deflate < 2; deflate++) {
        snprintf(p, sizeof p, "%s/x%d.h5", g_dir, deflate);
        make_floats_(p, deflate);
        assert_int_equal(child_(read_floats_, p), 1);
        assert_int_equal(rs_test_sh(g_dir, "'%s' quant-error --input '%s' --dataset x --format fp16", g_cli, p), 0);
        const uint32_t edits[2] = {32, 12}; /* larger than the extent; within it but not the stored chunks */
        for (int k = 0; k < 2; k++) {
            char q[720];
            snprintf(q, sizeof q, "%s/x%d-%u.h5", g_dir, deflate, edits[k]);
            copy_(p, q);
            poke_u32_(q, chunk_dim_offset_(q, "/x", dims, 2, 0), edits[k]);
            assert_int_equal(child_(read_floats_, q), 0);
            assert_int_equal(rs_test_sh(g_dir, "'%s' quant-error --input '%s' --dataset x --format fp16", g_cli, q), 1);
            assert_true(rs_test_out_has(g_dir, "chunk"));
        }
    }
}

/* rs_h5_read_floats reads chunked data with its own chunk reader (rs_h5_ds_read_chunked), never
 * H5Dread: every value equals what HDF5 was given, for 2-D datasets with partial edge chunks, every
 * filter combination (shuffle, deflate, fletcher32), big- and little-endian float64 / float32 / int16,
 * an unwritten chunk (the fill value) ; a flipped stored byte fails the checksum. Independent reference:
 * the values written through H5Dwrite. */
static void write_2d_(const char *path, hid_t ftype, int shuffle, int deflate, int fletcher, int hole, double fillv)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    const hsize_t dims[2] = {7, 13}, ch[2] = {3, 5};
    hid_t sp = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, ch);
    H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fillv);
    if (shuffle) H5Pset_shuffle(dcpl);
    if (deflate) H5Pset_deflate(dcpl, 6);
    if (fletcher) H5Pset_fletcher32(dcpl);
    hid_t d = H5Dcreate2(f, "x", ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(d >= 0);
    double v[7 * 13];
    for (int i = 0; i < 7 * 13; i++) v[i] = (double)(i * 37 % 101) - 50.25;
    if (hole) { /* rows 3..5 (the middle chunk row) left unwritten: those chunks are never allocated */
        hsize_t st[2] = {0, 0}, cn[2] = {3, 13};
        hid_t ms = H5Screate_simple(2, cn, NULL);
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, st, NULL, cn, NULL);
        assert_true(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, v) >= 0);
        st[0] = 6, cn[0] = 1;
        H5Sclose(ms);
        ms = H5Screate_simple(2, cn, NULL);
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, st, NULL, cn, NULL);
        assert_true(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, v + 6 * 13) >= 0);
        H5Sclose(ms);
    } else {
        assert_true(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    }
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(f);
}

static void test_chunk_reader_values(void **state)
{
    (void)state;
    const hid_t types[5] = {H5T_IEEE_F64BE, H5T_IEEE_F64LE, H5T_IEEE_F32BE, H5T_IEEE_F32LE, H5T_STD_I16BE};
    char p[700];
    int files = 0;
    for (int t = 0; t < 5; t++)
        for (int filt = 0; filt < 8; filt++)
            for (int hole = 0; hole < 2; hole++) {
                const int sh = filt & 1, de = (filt >> 1) & 1, fl = (filt >> 2) & 1;
                snprintf(p, sizeof p, "%s/c%d-%d-%d.h5", g_dir, t, filt, hole);
                write_2d_(p, types[t], sh, de, fl, hole, t == 4 ? 7.0 : -3.5);
                float *x = NULL;
                size_t n = 0, last = 0;
                const rs_status st = rs_h5_read_floats(p, "x", 1000, &x, &n, &last);
                if (st != RS_OK) fail_msg("%s: %s", p, rs_last_error());
                assert_int_equal(n, 7 * 13);
                assert_int_equal(last, 13);
                for (int i = 0; i < 7 * 13; i++) {
                    const int row = i / 13;
                    double want = (double)(i * 37 % 101) - 50.25;
                    if (t == 4) want = (double)(int16_t)want; /* int16: the writer's conversion truncates */
                    if (hole && row >= 3 && row < 6) want = t == 4 ? 7.0 : -3.5;
                    if ((double)x[i] != (double)(float)want) fail_msg("%s element %d: %g, expected %g", p, i, x[i], want);
                }
                free(x);
                files++;
            }
    assert_int_equal(files, 80);
    /* a stored byte flipped in a checksummed chunk: refused, naming the checksum */
    snprintf(p, sizeof p, "%s/sum.h5", g_dir);
    write_2d_(p, H5T_IEEE_F64LE, 0, 0, 1, 0, 0.0);
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "x", H5P_DEFAULT);
    const hsize_t off[2] = {3, 5};
    haddr_t addr = HADDR_UNDEF;
    hsize_t sz = 0;
    unsigned mask = 0;
    assert_true(H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &sz) >= 0 && addr != HADDR_UNDEF);
    H5Dclose(d);
    H5Fclose(f);
    FILE *fp = fopen(p, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, (long)addr + 9, SEEK_SET), 0);
    const int c = fgetc(fp);
    assert_int_equal(fseek(fp, (long)addr + 9, SEEK_SET), 0);
    fputc(c ^ 0x10, fp);
    fclose(fp);
    float *x = NULL;
    size_t n = 0, last = 0;
    assert_int_equal(rs_h5_read_floats(p, "x", 1000, &x, &n, &last), RS_E_FORMAT);
    assert_non_null(strstr(rs_last_error(), "Fletcher-32"));
    assert_null(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_chunk_dim_over_chunk),
        cmocka_unit_test(test_log_chunk_dim_with_attribute),
        cmocka_unit_test(test_quant_error_chunk_dims),
        cmocka_unit_test(test_chunk_reader_values),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
