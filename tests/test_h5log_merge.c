/* test_h5log_merge.c — rs_h5log_merge (eval/log/rs_h5log_merge.c, behind `replayssm merge` and the MPI
 * driver's final step). Logs are written through rs_h5log_create / write_chunk with values that
 * are a closed-form function of (book id, run, position), so every check of the merged log
 * compares with an independent expectation: the union of books and runs in first-appearance
 * order, every value bit for bit, the non-finite record, titles, a further root attribute copied,
 * summaries recomputed over the merged books (against a long-double sum of the closed form), and
 * the refusals (model hash, tokens, chunk, device kind, a hole, disagreeing duplicates of a run or
 * of the reference, an unfinished input, an existing output without force) with their messages
 * and no output left behind. The end-to-end MPI and CLI checks are tests/mpi/test_mpi.sh. */
#include <math.h>
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

#include <hdf5.h> /* only to read /books/title, which the log API does not expose */

#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_h5log_merge.h"

#define CH 8

static char g_dir[256];

/* books: id, title, length (20 and 17 end in a partial chunk) */
static const struct {
    const char *id, *title;
    uint64_t len;
} k_books[3] = {{"10", "Ten", 20}, {"20", "Twenty, \"quoted\"", 13}, {"30", "Thirty", 17}};
static const rs_h5log_run_info k_runs[3] = {
    {"shared:nvfp4-sr", "shared", "nvfp4-sr", "nvfp4-sr", 4, 0, NULL, NULL},
    {"split:nvfp4-rtn/fp32", "split", "fp32", "nvfp4-rtn", 16, 0, NULL, NULL},
    {"shared:nvfp4-sr", "shared", "nvfp4-sr", "nvfp4-sr", 16, 7, NULL, NULL},
};

/* closed form by book (index into k_books), run (index into k_runs), position; run 2 of book 1 is
 * non-finite from position 5 on (NaN KL / NLL / dp, as the evaluator stores them) */
static int nonfinite_(size_t b, size_t r, uint64_t t) { return b == 1 && r == 2 && t >= 5; }
static double v_kl(size_t b, size_t r, uint64_t t) { return nonfinite_(b, r, t) ? NAN : 1e-3 * (double)(b + 1) + 1e-5 * (double)r + 1e-7 * (double)((t * 13) % 29); }
static double v_nll(size_t b, size_t r, uint64_t t) { return nonfinite_(b, r, t) ? NAN : 1.0 + 0.25 * (double)r + 1e-4 * (double)((t * 31 + b) % 97); }
static double v_dp(size_t b, size_t r, uint64_t t) { return nonfinite_(b, r, t) ? NAN : 1e-5 * (double)((t + b + r) % 11) - 5e-5; }
static uint8_t v_ag(size_t b, size_t r, uint64_t t) { return nonfinite_(b, r, t) ? 0 : (uint8_t)((t + b + r) % 3 != 0); }
static int32_t v_tok(size_t b, uint64_t t) { return (int32_t)((t * 7 + b * 13) % 256); }
static double v_ref(size_t b, uint64_t t) { return 2.0 + 1e-3 * (double)((t * 17 + b) % 101); }
static int32_t v_top(size_t b, uint64_t t) { return (int32_t)((t * 5 + b) % 256); }

typedef struct spec {
    const char *hash;    /* model_config_hash [NULL: the writer's default, an fnv1a64 string] */
    uint64_t tokens;     /* [20] */
    uint64_t chunk;      /* [CH] */
    const char *device_kind; /* ["cpu"] */
    int bad_kl;          /* change one KL value of the first (book, run) by one ulp */
    int bad_ref;         /* change one reference NLL of the first book by one ulp */
    int partial;         /* commit only the first chunk of the last book */
    const char *custom;  /* a further root attribute "custom_note" (NULL: none) */
} spec;

static void path_(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", g_dir, name); }

/* a log of books bs[0..nb) and runs rs[0..nr) (indices into k_books / k_runs) at dir/name */
static void make_log_(const char *name, const size_t *bs, size_t nb, const size_t *rs, size_t nr, spec s)
{
    char path[512];
    path_(path, sizeof path, name);
    const char *ids[3], *titles[3];
    uint64_t len[3];
    rs_h5log_run_info runs[3];
    for (size_t i = 0; i < nb; i++) ids[i] = k_books[bs[i]].id, titles[i] = k_books[bs[i]].title, len[i] = k_books[bs[i]].len;
    for (size_t j = 0; j < nr; j++) runs[j] = k_runs[rs[j]];
    rs_h5log_extra ex[2] = {{"device_kind", s.device_kind ? s.device_kind : "cpu", 1}, {"custom_note", s.custom, 0}};
    rs_h5log_meta m;
    memset(&m, 0, sizeof m);
    m.tool_version = "test", m.git_commit = "abc", m.command_line = "replayssm sweep --test", m.model_path = "/m";
    m.start_time = name[0] == 'b' ? "2026-01-01T00:00:00Z" : "2026-01-02T00:00:00Z";
    m.data_path = "/d", m.model_config_hash = s.hash ? s.hash : "fnv1a64:00000000000000aa";
    m.model_type = "qwen3_5_text", m.tokenizer = "byte", m.split = "test", m.short_books = "skip";
    m.tokens = s.tokens ? s.tokens : 20, m.chunk = s.chunk ? s.chunk : CH;
    m.n_books = nb, m.book_ids = ids, m.book_titles = titles, m.book_len = len, m.n_runs = nr, m.runs = runs;
    m.n_extra = s.custom ? 2 : 1, m.extra = ex;
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_create(path, &m, 0, &lg), RS_OK);
    const size_t C = (size_t)m.chunk;
    double kl[3][32], nll[3][32], dp[3][32], ref[32];
    uint8_t ag[3][32];
    int32_t tok[32], top[32];
    for (size_t i = 0; i < nb; i++) {
        const size_t b = bs[i];
        for (uint64_t t = 0; t < len[i]; t++) {
            tok[t] = v_tok(b, t), top[t] = v_top(b, t), ref[t] = v_ref(b, t);
            for (size_t j = 0; j < nr; j++) {
                kl[j][t] = v_kl(b, rs[j], t), nll[j][t] = v_nll(b, rs[j], t), dp[j][t] = v_dp(b, rs[j], t);
                ag[j][t] = v_ag(b, rs[j], t);
            }
        }
        if (s.bad_kl && i == 0) kl[0][3] = nextafter(kl[0][3], 1.0);
        if (s.bad_ref && i == 0) ref[6] = nextafter(ref[6], 10.0);
        for (size_t j = 0; j < nr; j++)
            if (b == 1 && rs[j] == 2) assert_int_equal(rs_h5log_set_nonfinite(lg, j, i, 5, 1, 2), RS_OK);
        const uint64_t end = s.partial && i + 1 == nb ? C : len[i];
        for (uint64_t pos = 0; pos < end; pos += C) {
            const size_t k = len[i] - pos < C ? (size_t)(len[i] - pos) : C;
            rs_h5log_run_chunk rc[3];
            for (size_t j = 0; j < nr; j++) rc[j] = (rs_h5log_run_chunk){kl[j] + pos, nll[j] + pos, dp[j] + pos, ag[j] + pos};
            assert_int_equal(rs_h5log_write_chunk(lg, i, pos, k, tok + pos, ref + pos, top + pos, nr ? rc : NULL), RS_OK);
        }
    }
    assert_int_equal(rs_h5log_close(lg), RS_OK);
}

static int exists_(const char *name)
{
    char p[512];
    struct stat sb;
    path_(p, sizeof p, name);
    return stat(p, &sb) == 0;
}

static rs_status merge_(const char *out, int force, size_t n, ...)
{
    const char *in[8];
    char buf[8][512], o[512];
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++) {
        path_(buf[i], sizeof buf[i], va_arg(ap, const char *));
        in[i] = buf[i];
    }
    va_end(ap);
    path_(o, sizeof o, out);
    rs_h5log_merge_opts opts = {force, "replayssm merge --test", "2026-01-03T00:00:00Z"};
    return rs_h5log_merge(in, n, o, &opts);
}

/* the merged log holds books 10, 20, 30 and runs 0, 1, 2 of the closed form, bit for bit */
static void check_full_(const char *name, const char *start)
{
    char p[512];
    path_(p, sizeof p, name);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(p, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_books(lg), 3);
    assert_int_equal(rs_h5log_n_runs(lg), 3);
    char s[256];
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", s, sizeof s), RS_OK);
    assert_string_equal(s, "complete");
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "start_time", s, sizeof s), RS_OK);
    assert_string_equal(s, start); /* the earliest input's */
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "command_line", s, sizeof s), RS_OK);
    assert_string_equal(s, "replayssm merge --test");
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "device_kind", s, sizeof s), RS_OK);
    assert_string_equal(s, "cpu");
    for (size_t r = 0; r < 3; r++) {
        assert_string_equal(rs_h5log_policy(lg, r), k_runs[r].policy);
        assert_int_equal(rs_h5log_window(lg, r), k_runs[r].window);
        char obj[32];
        snprintf(obj, sizeof obj, "/runs/run%02zu", r);
        assert_int_equal(rs_h5log_get_attr_string(lg, obj, "mode", s, sizeof s), RS_OK);
        assert_string_equal(s, k_runs[r].mode);
    }
    for (size_t b = 0; b < 3; b++) {
        assert_string_equal(rs_h5log_book_id(lg, b), k_books[b].id);
        const size_t n = (size_t)k_books[b].len;
        assert_int_equal(rs_h5log_completed(lg, b), (int64_t)n);
        int32_t tok[32], top[32];
        double ref[32], d[32];
        uint8_t ag[32];
        assert_int_equal(rs_h5log_read_row(lg, -1, "next_token", b, n, tok), RS_OK);
        assert_int_equal(rs_h5log_read_row(lg, -1, "top1", b, n, top), RS_OK);
        assert_int_equal(rs_h5log_read_row(lg, -1, "nll", b, n, ref), RS_OK);
        for (uint64_t t = 0; t < n; t++) {
            assert_int_equal(tok[t], v_tok(b, t));
            assert_int_equal(top[t], v_top(b, t));
            const double e = v_ref(b, t);
            assert_memory_equal(&ref[t], &e, sizeof e);
        }
        for (size_t r = 0; r < 3; r++) {
            static const char *const names[3] = {"kl", "nll", "dp"};
            double (*const f[3])(size_t, size_t, uint64_t) = {v_kl, v_nll, v_dp};
            for (int k = 0; k < 3; k++) {
                assert_int_equal(rs_h5log_read_row(lg, (long)r, names[k], b, n, d), RS_OK);
                for (uint64_t t = 0; t < n; t++) {
                    const double e = f[k](b, r, t);
                    assert_memory_equal(&d[t], &e, sizeof e); /* bitwise, NaN included */
                }
            }
            assert_int_equal(rs_h5log_read_row(lg, (long)r, "top1_agree", b, n, ag), RS_OK);
            for (uint64_t t = 0; t < n; t++) assert_int_equal(ag[t], v_ag(b, r, t));
            int64_t pos;
            int32_t L, H;
            assert_int_equal(rs_h5log_get_nonfinite(lg, r, b, &pos, &L, &H), RS_OK);
            if (b == 1 && r == 2) {
                assert_int_equal(pos, 5);
                assert_int_equal(L, 1);
                assert_int_equal(H, 2);
            } else {
                assert_int_equal(pos, -1);
            }
        }
    }
    /* summaries over the three books, against a long-double sum of the closed form; the library
     * sums in double (in another order), so 1e-13 relative: far below any change of a value */
    for (size_t r = 0; r < 3; r++) {
        long double sum = 0;
        size_t cnt = 0;
        for (size_t b = 0; b < 3; b++)
            for (uint64_t t = 0; t < k_books[b].len; t++)
                if (!nonfinite_(b, r, t)) sum += v_kl(b, r, t), cnt++;
        rs_kl_summary sm;
        assert_int_equal(rs_h5log_summarize(lg, r, &sm), RS_OK);
        assert_int_equal(sm.n, cnt);
        assert_true(fabs(sm.mean_kl - (double)(sum / cnt)) <= 1e-13 * (double)(sum / cnt));
    }
    rs_h5log_close(lg);
    /* titles (no log accessor: read with HDF5 directly) */
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t dset = H5Dopen2(f, "books/title", H5P_DEFAULT), t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8); /* the log's strings are UTF-8 (HDF5 >= 1.12 converts no other charset) */
    char *titles[3] = {0};
    assert_true(H5Dread(dset, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, titles) >= 0);
    for (size_t b = 0; b < 3; b++) assert_string_equal(titles[b], k_books[b].title);
    hid_t sp = H5Dget_space(dset);
    H5Dvlen_reclaim(t, sp, H5P_DEFAULT, titles);
    H5Sclose(sp), H5Tclose(t), H5Dclose(dset), H5Fclose(f);
}

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_test_merge_%d", (int)getpid());
    mkdir(g_dir, 0700);
    static const size_t b01[] = {0, 1}, b2[] = {2}, b012[] = {0, 1, 2}, b0[] = {0};
    static const size_t r012[] = {0, 1, 2}, r0[] = {0}, r12[] = {1, 2};
    spec d = {0};
    spec custom = d;
    custom.custom = "hello";
    make_log_("books01.h5", b01, 2, r012, 3, custom); /* 'b': the earlier start_time */
    make_log_("l_book2.h5", b2, 1, r012, 3, d);
    make_log_("l_run0.h5", b012, 3, r0, 1, d);
    make_log_("l_run12.h5", b012, 3, r12, 2, d);
    spec s = d;
    s.hash = "fnv1a64:00000000000000bb";
    make_log_("l_hash.h5", b2, 1, r012, 3, s);
    s = d, s.tokens = 24;
    make_log_("l_tokens.h5", b2, 1, r012, 3, s);
    s = d, s.chunk = 4;
    make_log_("l_chunk.h5", b2, 1, r012, 3, s);
    s = d, s.device_kind = "cuda";
    make_log_("l_device.h5", b2, 1, r012, 3, s);
    make_log_("l_hole.h5", b2, 1, r0, 1, d); /* book 30 with run 0 only */
    s = d, s.bad_kl = 1;
    make_log_("l_badkl.h5", b0, 1, r0, 1, s);
    s = d, s.bad_ref = 1;
    make_log_("l_badref.h5", b0, 1, r0, 1, s);
    s = d, s.partial = 1;
    make_log_("l_partial.h5", b2, 1, r012, 3, s);
    return 0;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* books split between two logs, and runs split between two logs, give the same full log */
static void test_union(void **state)
{
    (void)state;
    assert_int_equal(merge_("m_books.h5", 0, 2, "books01.h5", "l_book2.h5"), RS_OK);
    check_full_("m_books.h5", "2026-01-01T00:00:00Z");
    char p[512], s[64];
    path_(p, sizeof p, "m_books.h5");
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(p, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "custom_note", s, sizeof s), RS_OK);
    assert_string_equal(s, "hello"); /* a root attribute the writer does not set, copied */
    rs_h5log_close(lg);
    assert_int_equal(merge_("m_runs.h5", 0, 2, "l_run0.h5", "l_run12.h5"), RS_OK);
    check_full_("m_runs.h5", "2026-01-02T00:00:00Z");
    /* overlapping inputs that agree (every book and run twice) */
    assert_int_equal(merge_("m_overlap.h5", 0, 4, "books01.h5", "l_book2.h5", "l_run0.h5", "l_run12.h5"), RS_OK);
    check_full_("m_overlap.h5", "2026-01-01T00:00:00Z");
}

static void refused_(const char *what, const char *want, const char *a, const char *b)
{
    const rs_status st = merge_("refused.h5", 0, 2, a, b);
    if (st == RS_OK || !strstr(rs_last_error(), want))
        fail_msg("%s: status %d, message '%s', wanted '%s'", what, (int)st, rs_last_error(), want);
    assert_false(exists_("refused.h5"));
    assert_false(exists_("refused.h5.partial"));
}

static void test_refusals(void **state)
{
    (void)state;
    refused_("model", "model_config_hash is 'fnv1a64:00000000000000bb' there and fnv1a64:00000000000000aa here (a different model)",
             "books01.h5", "l_hash.h5");
    refused_("tokens", "tokens is 24 there and 20 here (a different --tokens)", "books01.h5", "l_tokens.h5");
    refused_("chunk", "chunk is 4 there and 8 here (a different --chunk)", "books01.h5", "l_chunk.h5");
    refused_("device", "device_kind is 'cuda' there and cpu here", "books01.h5", "l_device.h5");
    refused_("hole", "no input has run split:nvfp4-rtn/fp32 (L=16, seed 0) for book 30", "books01.h5", "l_hole.h5");
    refused_("kl differs", "run shared:nvfp4-sr (L=4) of book 10 differs at position 3", "books01.h5", "l_badkl.h5");
    refused_("reference differs", "the fp32 reference of book 10 differs at position 6", "books01.h5", "l_badref.h5");
    refused_("unfinished", "book 30 has 8 of 17 positions committed", "books01.h5", "l_partial.h5");
    refused_("same input twice", "is given twice", "books01.h5", "books01.h5");
}

/* an existing output: refused and untouched without force, replaced with force */
static void test_existing_output(void **state)
{
    (void)state;
    char p[512];
    path_(p, sizeof p, "existing.h5");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("precious", f);
    fclose(f);
    assert_int_not_equal(merge_("existing.h5", 0, 2, "books01.h5", "l_book2.h5"), RS_OK);
    assert_non_null(strstr(rs_last_error(), "exists"));
    char buf[16] = "";
    f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "precious");
    /* a failed merge with force leaves the old file too */
    assert_int_not_equal(merge_("existing.h5", 1, 2, "books01.h5", "l_hole.h5"), RS_OK);
    f = fopen(p, "r");
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "precious");
    assert_int_equal(merge_("existing.h5", 1, 2, "books01.h5", "l_book2.h5"), RS_OK);
    check_full_("existing.h5", "2026-01-01T00:00:00Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_union),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_existing_output),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
