/* test_h5log_corrupt.c — a corrupted or hostile log is refused with an error, never a crash
 * (docs/threat-model.md): rs_h5log_open (read-only and --resume) and `replayssm info` on copies of a
 * valid log whose counts, types, shapes and bytes were changed:
 *  - attributes rewritten through HDF5 (n_runs / n_books = 2^64-1, too few / too many for the
 *    datasets, as strings, doubles, negative integers, arrays; format as an array), datasets
 *    replaced by others of the wrong extent, rank or type, commit records out of range;
 *  - truncated files at fixed lengths;
 *  - bytes flipped at fixed offsets: the datatype, dataspace and value bytes of every numeric root
 *    attribute (located by the attribute's name in the file) and the raw bytes of /books/length and
 *    /books/completed_positions (located with H5Dget_offset).
 * Each check runs in a forked child, so a crash is reported with the case that caused it.
 * Not covered, on purpose: corrupting the heap that holds variable-length strings (their
 * descriptors in the file); HDF5 1.10's own reader (H5HG_read) can crash on those before any of
 * our code sees a value (docs/hdf5-layout.md "Reading untrusted logs"). */
#include <setjmp.h>
#include <signal.h>
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

#include "replayssm/eval/rs_h5log.h"
#include "rs_test_util.h"

#define NB 2
#define NR 2
#define CH 8

static char g_dir[256], g_base[512], g_copy[512];
static const char *g_ids[NB] = {"1023", "105"};
static const char *g_titles[NB] = {"A", "B"};
static uint64_t g_len[NB] = {40, 17};
static rs_h5log_run_info g_runs[NR] = {{"fp32", "conv", "fp32", "fp32", 16, 0, NULL, NULL},
                                       {"split:nvfp4-rtn/fp32", "split", "fp32", "nvfp4-rtn", 16, 42, NULL, NULL}};

static rs_h5log_meta meta_(void)
{
    rs_h5log_meta m;
    memset(&m, 0, sizeof m);
    m.tool_version = m.git_commit = m.command_line = m.start_time = m.model_path = m.data_path = "t";
    m.model_config_hash = "fnv1a64:0000000000000001";
    m.model_type = "qwen3_5_text";
    m.tokenizer = "byte";
    m.split = "test";
    m.short_books = "skip";
    m.tokens = 40;
    m.chunk = CH;
    m.n_books = NB;
    m.book_ids = g_ids;
    m.book_titles = g_titles;
    m.book_len = g_len;
    m.n_runs = NR;
    m.runs = g_runs;
    return m;
}

/* a complete log of m at path, with one non-finite record (run 1, book 0, position 9) */
static void make_log_(const char *path, const rs_h5log_meta *mp)
{
    rs_h5log_meta m = *mp;
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_OK);
    for (size_t b = 0; b < NB; b++)
        for (uint64_t pos = 0; pos < g_len[b]; pos += CH) {
            const size_t n = g_len[b] - pos < CH ? (size_t)(g_len[b] - pos) : CH;
            double d[CH];
            int32_t t[CH];
            uint8_t a[CH];
            for (size_t i = 0; i < n; i++) d[i] = 1e-3 * (double)(pos + i), t[i] = (int32_t)i, a[i] = 1;
            rs_h5log_run_chunk rc[NR] = {{d, d, d, a}, {d, d, d, a}};
            assert_int_equal(rs_h5log_write_chunk(lg, b, pos, n, t, d, t, rc), RS_OK);
        }
    assert_int_equal(rs_h5log_set_nonfinite(lg, 1, 0, 9, 1, 2), RS_OK);
    rs_kl_summary s[NR];
    for (size_t r = 0; r < NR; r++) assert_int_equal(rs_h5log_summarize(lg, r, &s[r]), RS_OK);
    assert_int_equal(rs_h5log_finish(lg, "e", s), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
}

/* the valid log every case starts from: complete, one non-finite record */
static void make_base_(void)
{
    rs_h5log_meta m = meta_();
    make_log_(g_base, &m);
}

static unsigned char *slurp_(const char *p, size_t *n)
{
    unsigned char *d = (unsigned char *)rs_test_read_file(p, n);
    assert_non_null(d);
    return d;
}

static void spit_(const char *p, const unsigned char *d, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void copy_base_(void)
{
    size_t n = 0;
    unsigned char *d = slurp_(g_base, &n);
    spit_(g_copy, d, n);
    free(d);
}

/* ---- what a reader must do with any file: succeed cleanly or refuse; never crash ----------- */

/* everything `replayssm info` and --resume touch; 0 when every call returned a documented code */
static int read_everything_(const char *path, int *accepted)
{
    rs_h5log *lg = NULL;
    rs_status st = rs_h5log_open(path, 0, NULL, &lg);
    *accepted = st == RS_OK;
    if (st != RS_OK) return (st == RS_E_FORMAT || st == RS_E_IO || st == RS_E_NOMEM) && rs_last_error()[0] ? 0 : 10;
    char buf[256];
    (void)rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf);
    int bad = 0;
    for (size_t b = 0; b < rs_h5log_n_books(lg); b++) {
        if ((uint64_t)rs_h5log_completed(lg, b) > rs_h5log_book_len(lg, b)) bad = 11; /* promised by open */
        (void)rs_h5log_book_id(lg, b);
    }
    rs_h5log_ref_summary rs;
    (void)rs_h5log_reference_summary(lg, &rs);
    for (size_t r = 0; r < rs_h5log_n_runs(lg); r++) {
        rs_kl_summary s;
        (void)rs_h5log_summarize(lg, r, &s);
        (void)rs_h5log_policy(lg, r);
        for (size_t b = 0; b < rs_h5log_n_books(lg); b++) {
            int64_t p;
            int32_t L, H;
            (void)rs_h5log_get_nonfinite(lg, r, b, &p, &L, &H);
        }
    }
    rs_h5log_close(lg);
    /* --resume of the same file with the configuration it was made with */
    rs_h5log_meta m = meta_();
    if (rs_h5log_open(path, 1, &m, &lg) == RS_OK) rs_h5log_close(lg);
    return bad;
}

/* run read_everything_ in a child; returns 1 if the reader accepted the file, 0 if it refused */
static int survives_(const char *path, const char *what)
{
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pipefd[0]);
        /* cmocka turns signals into test failures: the child must die of them instead */
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
        alarm(60); /* a hang is a failure too */
        int accepted = 0;
        const int rc = read_everything_(path, &accepted);
        const char c = accepted ? 'A' : 'R';
        if (write(pipefd[1], &c, 1) != 1) _exit(12);
        _exit(rc);
    }
    close(pipefd[1]);
    int wst = 0;
    waitpid(pid, &wst, 0);
    char c = 0;
    const ssize_t got = read(pipefd[0], &c, 1);
    close(pipefd[0]);
    if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0 || got != 1)
        fail_msg("%s: the reader %s (%d)", what, WIFSIGNALED(wst) ? "crashed, signal" : "broke a promise, code",
                 WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
    return c == 'A';
}

/* ---- edits through HDF5 --------------------------------------------------------------------- */

static hid_t open_copy_(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(g_copy, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    return f;
}

static void set_attr_(hid_t f, const char *obj, const char *name, hid_t type, int n, const void *v)
{
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
    assert_true(o >= 0);
    if (H5Aexists(o, name) > 0) assert_true(H5Adelete(o, name) >= 0);
    hsize_t d = (hsize_t)n;
    hid_t sp = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &d, NULL);
    hid_t a = H5Acreate2(o, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, type, v) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Oclose(o);
}

static void del_(hid_t f, const char *obj, const char *attr)
{
    if (attr) {
        hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
        assert_true(o >= 0 && H5Adelete(o, attr) >= 0);
        H5Oclose(o);
    } else {
        assert_true(H5Ldelete(f, obj, H5P_DEFAULT) >= 0);
    }
}

/* replace dataset `path` by a new one of `type`, rank 1 or 2, filled with zeros */
static void redo_ds_(hid_t f, const char *path, hid_t type, int rank, hsize_t d0, hsize_t d1)
{
    del_(f, path, NULL);
    hsize_t dims[2] = {d0, d1};
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, path, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    void *zero = calloc((size_t)(d0 * (rank == 2 ? d1 : 1)) + 1, 16);
    if (H5Tget_class(type) != H5T_STRING || !H5Tis_variable_str(type)) assert_true(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, zero) >= 0);
    free(zero);
    H5Dclose(d);
    H5Sclose(sp);
}

static void write_i64_(hid_t f, const char *path, int64_t v0, int64_t v1)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    assert_true(d >= 0);
    const int64_t v[2] = {v0, v1};
    assert_true(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
}

static hid_t vlen_(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    return t;
}

/* one case: edit the copy, then every reader refuses it with RS_E_FORMAT, and `info` exits 1 */
typedef void (*edit_fn)(hid_t f);
static const uint64_t k_max = UINT64_MAX;

static void e_nruns_max(hid_t f) { set_attr_(f, "/", "n_runs", H5T_NATIVE_UINT64, 1, &k_max); }
static void e_nbooks_max(hid_t f) { set_attr_(f, "/", "n_books", H5T_NATIVE_UINT64, 1, &k_max); }
static void e_nbooks_1(hid_t f) { const uint64_t v = 1; set_attr_(f, "/", "n_books", H5T_NATIVE_UINT64, 1, &v); }
static void e_nbooks_3(hid_t f) { const uint64_t v = 3; set_attr_(f, "/", "n_books", H5T_NATIVE_UINT64, 1, &v); }
static void e_nbooks_big(hid_t f) { const uint64_t v = 0x80000002ull; set_attr_(f, "/", "n_books", H5T_NATIVE_UINT64, 1, &v); }
static void e_nruns_1(hid_t f) { const uint64_t v = 1; set_attr_(f, "/", "n_runs", H5T_NATIVE_UINT64, 1, &v); }
static void e_nruns_3(hid_t f) { const uint64_t v = 3; set_attr_(f, "/", "n_runs", H5T_NATIVE_UINT64, 1, &v); }
static void e_tokens_max(hid_t f) { set_attr_(f, "/", "tokens", H5T_NATIVE_UINT64, 1, &k_max); }
static void e_tokens_0(hid_t f) { const uint64_t v = 0; set_attr_(f, "/", "tokens", H5T_NATIVE_UINT64, 1, &v); }
static void e_chunk_max(hid_t f) { set_attr_(f, "/", "chunk", H5T_NATIVE_UINT64, 1, &k_max); }
static void e_nbooks_str(hid_t f) { hid_t t = vlen_(); const char *v = "2"; set_attr_(f, "/", "n_books", t, 1, &v); H5Tclose(t); }
static void e_nbooks_f64(hid_t f) { const double v = 2.0; set_attr_(f, "/", "n_books", H5T_NATIVE_DOUBLE, 1, &v); }
static void e_nbooks_neg(hid_t f) { const int64_t v = -1; set_attr_(f, "/", "n_books", H5T_NATIVE_INT64, 1, &v); }
static void e_nbooks_arr(hid_t f) { const uint64_t v[4] = {2, 2, 2, 2}; set_attr_(f, "/", "n_books", H5T_NATIVE_UINT64, 4, v); }
static void e_nruns_arr(hid_t f) { const uint64_t v[4] = {2, 2, 2, 2}; set_attr_(f, "/", "n_runs", H5T_NATIVE_UINT64, 4, v); }
static void e_format_arr(hid_t f) { hid_t t = vlen_(); const char *v[3] = {RS_H5LOG_FORMAT, "x", "y"}; set_attr_(f, "/", "format", t, 3, v); H5Tclose(t); }
static void e_version_str(hid_t f) { hid_t t = vlen_(); const char *v = "1"; set_attr_(f, "/", "format_version", t, 1, &v); H5Tclose(t); }
static void e_window_str(hid_t f) { hid_t t = vlen_(); const char *v = "16"; set_attr_(f, "/runs/run01", "window", t, 1, &v); H5Tclose(t); }
static void e_policy_missing(hid_t f) { del_(f, "/runs/run00", "policy"); }
static void e_completed_neg(hid_t f) { write_i64_(f, "/books/completed_positions", -1, 17); }
static void e_completed_big(hid_t f) { write_i64_(f, "/books/completed_positions", 40, INT64_MAX); }
static void e_length_big(hid_t f) { const uint64_t v[2] = {40, UINT64_MAX}; hid_t d = H5Dopen2(f, "/books/length", H5P_DEFAULT); H5Dwrite(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v); H5Dclose(d); }
static void e_ids_3(hid_t f) { hid_t t = vlen_(); redo_ds_(f, "/books/id", t, 1, 3, 0); H5Tclose(t); }
static void e_length_3(hid_t f) { redo_ds_(f, "/books/length", H5T_NATIVE_UINT64, 1, 3, 0); }
static void e_completed_1(hid_t f) { redo_ds_(f, "/books/completed_positions", H5T_NATIVE_INT64, 1, 1, 0); }
static void e_completed_f64(hid_t f) { redo_ds_(f, "/books/completed_positions", H5T_NATIVE_DOUBLE, 1, 2, 0); }
static void e_ref_rank1(hid_t f) { redo_ds_(f, "/reference/nll", H5T_NATIVE_DOUBLE, 1, 2, 0); }
static void e_ref_short(hid_t f) { redo_ds_(f, "/reference/nll", H5T_NATIVE_DOUBLE, 2, 2, 8); }
static void e_kl_rows(hid_t f) { redo_ds_(f, "/runs/run00/kl", H5T_NATIVE_DOUBLE, 2, 1, 40); }
static void e_nf_missing(hid_t f) { del_(f, "/runs/run01/first_nonfinite_position", NULL); }
static void e_extra_run(hid_t f) { hid_t g = H5Gcreate2(f, "/runs/run99", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); H5Gclose(g); }

typedef struct edit_case {
    const char *name;
    edit_fn fn;
    const char *says; /* a word the message must contain */
} edit_case;

static const edit_case k_cases[] = {
    {"n_runs = 2^64-1", e_nruns_max, "n_runs"},
    {"n_books = 2^64-1", e_nbooks_max, "n_books"},
    {"n_books = 1 (2 rows)", e_nbooks_1, "/books/id"},
    {"n_books = 3 (2 rows)", e_nbooks_3, "/books/id"},
    {"n_books = 2^31 + 2", e_nbooks_big, "n_books"},
    {"n_runs = 1 (2 groups)", e_nruns_1, "/runs"},
    {"n_runs = 3 (2 groups)", e_nruns_3, "/runs"},
    {"tokens = 2^64-1", e_tokens_max, "tokens"},
    {"tokens = 0", e_tokens_0, "tokens"},
    {"chunk = 2^64-1", e_chunk_max, "chunk"},
    {"n_books a string", e_nbooks_str, "n_books"},
    {"n_books a double", e_nbooks_f64, "n_books"},
    {"n_books = -1", e_nbooks_neg, "n_books"},
    {"n_books an array of 4", e_nbooks_arr, "n_books"},
    {"n_runs an array of 4", e_nruns_arr, "n_runs"},
    {"format an array of 3", e_format_arr, "format"},
    {"format_version a string", e_version_str, "format_version"},
    {"run01 window a string", e_window_str, "window"},
    {"run00 policy missing", e_policy_missing, "policy"},
    {"completed_positions -1", e_completed_neg, "completed_positions"},
    {"completed_positions 2^63-1", e_completed_big, "completed_positions"},
    {"length 2^64-1", e_length_big, "length"},
    {"/books/id of 3", e_ids_3, "/books/id"},
    {"/books/length of 3", e_length_3, "/books/length"},
    {"/books/completed_positions of 1", e_completed_1, "completed_positions"},
    {"/books/completed_positions doubles", e_completed_f64, "completed_positions"},
    {"/reference/nll rank 1", e_ref_rank1, "/reference/nll"},
    {"/reference/nll shorter than committed", e_ref_short, "/reference/nll"},
    {"/runs/run00/kl of 1 row", e_kl_rows, "/runs/run00/kl"},
    {"first_nonfinite_position missing", e_nf_missing, "first_nonfinite_position"},
    {"an extra /runs/run99", e_extra_run, "/runs"},
};

static int info_status_(const char *path)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' info '%s' >/dev/null 2>&1", RS_CLI_PATH, path);
    const int w = system(cmd);
    return WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
}

static void test_edited_attributes_and_datasets(void **state)
{
    (void)state;
    copy_base_(); /* a copy: an accepted file is also resumed (rebuilt) by the reader */
    assert_true(survives_(g_copy, "the base log"));
    assert_int_equal(info_status_(g_copy), 0);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        const edit_case *c = &k_cases[i];
        copy_base_();
        hid_t f = open_copy_();
        c->fn(f);
        assert_true(H5Fclose(f) >= 0);
        if (survives_(g_copy, c->name)) fail_msg("%s: accepted", c->name);
        rs_h5log *lg = NULL;
        assert_int_equal(rs_h5log_open(g_copy, 0, NULL, &lg), RS_E_FORMAT);
        if (!strstr(rs_last_error(), c->says)) fail_msg("%s: message '%s' does not name %s", c->name, rs_last_error(), c->says);
        rs_h5log_meta m = meta_();
        assert_int_not_equal(rs_h5log_open(g_copy, 1, &m, &lg), RS_OK);
        const int rc = info_status_(g_copy);
        if (rc != 1) fail_msg("%s: replayssm info exited %d, not 1", c->name, rc);
    }
    print_message("%zu edited logs refused by open, --resume and info\n", sizeof k_cases / sizeof k_cases[0]);
}

static void test_truncated(void **state)
{
    (void)state;
    size_t n = 0;
    unsigned char *d = slurp_(g_base, &n);
    const size_t cuts[] = {0, 8, 96, 512, 2048, n / 4, n / 2, n - 8, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spit_(g_copy, d, cuts[i]);
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cuts[i], n);
        if (survives_(g_copy, what)) fail_msg("%s: accepted", what);
        assert_int_equal(info_status_(g_copy), 1);
    }
    free(d);
}

/* offset of the first occurrence of s (with its NUL) in d */
static size_t find_(const unsigned char *d, size_t n, const char *s)
{
    const size_t k = strlen(s) + 1;
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(d + i, s, k)) return i;
    fail_msg("'%s' not found in the log", s);
    return 0;
}

static haddr_t raw_offset_(const char *ds)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(g_base, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, ds, H5P_DEFAULT);
    const haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    assert_true(off != HADDR_UNDEF);
    return off;
}

static void test_byte_flips(void **state)
{
    (void)state;
    size_t n = 0;
    unsigned char *d = slurp_(g_base, &n);
    unsigned char *m = (unsigned char *)malloc(n);
    assert_non_null(m);
    /* [start, len) ranges: each numeric root attribute's type, space and value (the message
     * after its NUL-terminated name, padded to 8), and the raw bytes of two [2] datasets */
    size_t starts[8], lens[8], nr = 0;
    static const char *names[] = {"n_books", "n_runs", "tokens", "chunk", "format_version"};
    for (size_t i = 0; i < 5; i++) {
        starts[nr] = find_(d, n, names[i]) + ((strlen(names[i]) + 1 + 7) / 8) * 8;
        lens[nr++] = 32;
    }
    starts[nr] = (size_t)raw_offset_("/books/length"), lens[nr++] = 16;
    starts[nr] = (size_t)raw_offset_("/books/completed_positions"), lens[nr++] = 16;
    size_t accepted = 0, refused = 0;
    for (size_t r = 0; r < nr; r++)
        for (size_t o = starts[r]; o < starts[r] + lens[r] && o < n; o++)
            for (int v = 0; v < 3; v++) {
                memcpy(m, d, n);
                m[o] = v == 0 ? (unsigned char)(m[o] ^ 0x01) : v == 1 ? 0xFF : (unsigned char)(m[o] ^ 0x80);
                spit_(g_copy, m, n);
                char what[96];
                snprintf(what, sizeof what, "byte %zu (range %zu) set to 0x%02x", o, r, m[o]);
                if (survives_(g_copy, what)) accepted++;
                else refused++;
            }
    print_message("byte flips: %zu mutants accepted (harmless bytes), %zu refused, none crashed\n", accepted, refused);
    assert_true(refused > 0); /* the mutations reach the validation */
    assert_true(accepted > 0);
    free(m);
    free(d);
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_h5corrupt_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_base, sizeof g_base, "%s/base.h5", g_dir);
    snprintf(g_copy, sizeof g_copy, "%s/copy.h5", g_dir);
    make_base_();
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* replace the copy's /runs/run00/kl ([NB, 40] doubles) by one stored through dcpl, zeros written */
static void redo_kl_with_(hid_t dcpl)
{
    hid_t f = open_copy_();
    del_(f, "/runs/run00/kl", NULL);
    hsize_t dims[2] = {NB, 40};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "/runs/run00/kl", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(d >= 0);
    static double zero[NB * 40];
    assert_true(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zero) >= 0);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
}

static void expect_refused_(const char *path, const char *says)
{
    rs_h5log *lg = NULL;
    const rs_status st = rs_h5log_open(path, 0, NULL, &lg);
    if (st != RS_E_FORMAT || !strstr(rs_last_error(), says))
        fail_msg("%s: status %d, message '%s' (want RS_E_FORMAT with '%s')", path, (int)st, rs_last_error(), says);
    assert_int_equal(info_status_(path), 1);
}

/* threat model, work for info and --resume: the committed positions must fit the file.
 * A log of a few KiB that extends its datasets to 2 x 2^24 positions without writing a chunk (read
 * as fill values) and commits all of them would make info / --resume read 2^25 positions per
 * dataset; it is refused at open. Storage that reads more than the file holds
 * (external raw-data files, which name any path; the scale-offset filter, a constant chunk in a few
 * bytes) is refused too; shuffle + deflate (what the writer uses) and plain storage are fine. */
static void test_work_bound(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/forged.h5", g_dir);
    static uint64_t len[NB] = {1u << 24, 1u << 24};
    rs_h5log_meta m = meta_();
    m.tokens = 1u << 24;
    m.chunk = 4096;
    m.book_len = len;
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_OK);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    static const char *ds[] = {"/reference/next_token", "/reference/nll", "/reference/top1", "/runs/run00/kl",
                               "/runs/run00/nll", "/runs/run00/dp", "/runs/run00/top1_agree", "/runs/run01/kl",
                               "/runs/run01/nll", "/runs/run01/dp", "/runs/run01/top1_agree"};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        hid_t d = H5Dopen2(f, ds[i], H5P_DEFAULT);
        assert_true(d >= 0);
        const hsize_t dims[2] = {NB, 1u << 24};
        assert_true(H5Dset_extent(d, dims) >= 0);
        H5Dclose(d);
    }
    write_i64_(f, "/books/completed_positions", 1 << 24, 1 << 24);
    H5Fclose(f);
    size_t n = 0;
    free(slurp_(path, &n));
    print_message("forged log: %zu bytes claiming 2 x 2^24 committed positions\n", n);
    assert_true(n < 1u << 20);
    expect_refused_(path, "cannot be stored in a file of");
    /* storage that reads more than the file holds */
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    char ext[600];
    snprintf(ext, sizeof ext, "%s/raw.bin", g_dir);
    assert_true(H5Pset_external(dcpl, ext, 0, (hsize_t)NB * 40 * 8) >= 0);
    copy_base_();
    redo_kl_with_(dcpl);
    H5Pclose(dcpl);
    expect_refused_(g_copy, "external files");
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t ch[2] = {1, 8};
    assert_true(H5Pset_chunk(dcpl, 2, ch) >= 0 && H5Pset_scaleoffset(dcpl, H5Z_SO_FLOAT_DSCALE, 2) >= 0);
    copy_base_();
    redo_kl_with_(dcpl);
    H5Pclose(dcpl);
    expect_refused_(g_copy, "is not allowed in a log");
    /* allowed: contiguous unfiltered, chunked shuffle + deflate + fletcher32 */
    copy_base_();
    redo_kl_with_(H5P_DEFAULT);
    assert_int_equal(rs_h5log_open(g_copy, 0, NULL, &lg), RS_OK);
    rs_h5log_close(lg);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    assert_true(H5Pset_chunk(dcpl, 2, ch) >= 0 && H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, 9) >= 0 &&
                H5Pset_fletcher32(dcpl) >= 0);
    copy_base_();
    redo_kl_with_(dcpl);
    H5Pclose(dcpl);
    if (rs_h5log_open(g_copy, 0, NULL, &lg) != RS_OK) fail_msg("deflate log refused: %s", rs_last_error());
    rs_h5log_close(lg);
}

/* threat model: strings of a log reach the terminal escaped. A log whose attributes, book ids and
 * policies hold ESC sequences (colour, OSC title with BEL, clear screen), a raw C1 CSI byte (0x9B,
 * invalid UTF-8) and a UTF-8-encoded C1 CSI (U+009B) is shown by `info` with none of those bytes,
 * as \xHH / \u00HH text; valid UTF-8 passes unchanged. */
static void test_hostile_strings(void **state)
{
    (void)state;
    char path[600], outp[700];
    snprintf(path, sizeof path, "%s/hostile.h5", g_dir);
    snprintf(outp, sizeof outp, "%s/hostile.txt", g_dir);
    static const char *ids[NB] = {"10\x1b[31m23", "1\x9b" "05"};
    rs_h5log_run_info runs[NR] = {g_runs[0], g_runs[1]};
    runs[1].policy = "split:\x1b[1mnvfp4";
    rs_h5log_meta m = meta_();
    m.command_line = "replayssm kl \x1b[31mRED\x1b]0;title\x07 \xc2\x9b" "2J caf\xc3\xa9";
    m.model_path = "/m\x1b[2J\x7f";
    m.book_ids = ids;
    m.runs = runs;
    /* the device and input attributes (kl --text) are printed escaped too; the file count is
     * larger than the files named, which info reports without looking up the rest */
    const rs_h5log_extra extra[] = {{"device_kind", "cpu", 1},
                                    {"compute", "fp32", 1},
                                    {"device", "cpu\x1b]0;owned\x07: 2 threads", 0},
                                    {"input", "text", 1},
                                    {"input_files", "4000000000", 1},
                                    {"input_file_0", "/t/a\x1b[31m.txt", 0},
                                    {"input_sha256_0", "ab\x9b" "cd", 1}};
    m.n_extra = sizeof extra / sizeof extra[0];
    m.extra = extra;
    make_log_(path, &m);
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "'%s' info '%s' > '%s' 2>&1", RS_CLI_PATH, path, outp);
    assert_int_equal(system(cmd), 0);
    size_t n = 0;
    unsigned char *o = slurp_(outp, &n);
    for (size_t i = 0; i < n; i++)
        if (o[i] == 0x1b || o[i] == 0x07 || o[i] == 0x7f || o[i] == 0x9b || (o[i] == 0xc2 && i + 1 < n && o[i + 1] == 0x9b))
            fail_msg("info printed the raw control byte 0x%02x at offset %zu:\n%.*s", o[i], i, (int)n, (const char *)o);
    char *t = realloc(o, n + 1);
    assert_non_null(t);
    t[n] = '\0';
    static const char *want[] = {"replayssm kl \\x1B[31mRED\\x1B]0;title\\x07 \\u009B2J caf\xc3\xa9",
                                 "/m\\x1B[2J\\x7F", "10\\x1B[31m23", "1\\x9B05", "split:\\x1B[1mnvfp4",
                                 "run 1 (split:\\x1B[1mnvfp4, L=16) book 10\\x1B[31m23: non-finite at position 9 "
                                 "(layer 1, head 2); summary over 9 finite positions",
                                 "device             cpu\\x1B]0;owned\\x07: 2 threads\n",
                                 "input_files        4000000000\n  input_file_0     /t/a\\x1B[31m.txt\n"
                                 "  input_sha256_0   ab\\x9Bcd\n  (the log names 1 of 4000000000 input files)\n"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(t, want[i])) fail_msg("info output lacks \"%s\":\n%s", want[i], t);
    free(t);
}

/* a log written before the device and input attributes existed (g_base has none) and one with a
 * count that is not a number: info prints what there is, and exits 0 */
static void test_info_older_log(void **state)
{
    (void)state;
    char outp[700], cmd[2000];
    snprintf(outp, sizeof outp, "%s/older.txt", g_dir);
    snprintf(cmd, sizeof cmd, "'%s' info '%s' > '%s' 2>&1", RS_CLI_PATH, g_base, outp);
    assert_int_equal(system(cmd), 0);
    size_t n = 0;
    char *t = (char *)slurp_(outp, &n), *z = realloc(t, n + 1);
    assert_non_null(z);
    z[n] = '\0';
    assert_non_null(strstr(z, "tokenizer_sha256"));
    assert_non_null(strstr(z, "committed"));
    assert_null(strstr(z, "device_kind"));
    assert_null(strstr(z, "\ninput"));
    free(z);
    char path[600];
    snprintf(path, sizeof path, "%s/badcount.h5", g_dir);
    rs_h5log_meta m = meta_();
    const rs_h5log_extra extra[] = {{"input", "token-ids", 1}, {"input_files", "-1x", 1}, {"input_file_0", "ids.bin", 0}};
    m.n_extra = 3;
    m.extra = extra;
    make_log_(path, &m);
    snprintf(cmd, sizeof cmd, "'%s' info '%s' > '%s' 2>&1", RS_CLI_PATH, path, outp);
    assert_int_equal(system(cmd), 0);
    t = (char *)slurp_(outp, &n);
    z = realloc(t, n + 1);
    assert_non_null(z);
    z[n] = '\0';
    assert_non_null(strstr(z, "input              token-ids\ninput_files        -1x\ndata_path"));
    free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edited_attributes_and_datasets),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_byte_flips),
        cmocka_unit_test(test_hostile_strings),
        cmocka_unit_test(test_info_older_log),
        cmocka_unit_test(test_work_bound),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
