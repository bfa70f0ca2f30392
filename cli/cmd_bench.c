/* cmd_bench.c — `replayssm bench`: the GPU benchmark of the decode kernels (issue 8): the
 * device-to-device copy ceiling, conventional vs ReplaySSM standard decode over the batch,
 * the window sweep, speculative verification (snapshot baseline vs ReplaySSM, a = 1 and
 * a = T), and non-flush reads of fp32 / fp16 / fp8 / nvfp4 checkpoints, for the paper's four
 * model shapes. Prints one table per sweep and writes every row to HDF5 (layout:
 * docs/kernels.md "replayssm bench"). Needs a CUDA build (RS_HAVE_CUDA: -DRS_CUDA=ON) and a GPU;
 * otherwise it says so and exits 1. Timing method: kernels/rs_cuda_bench.h. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_cli.h" /* rs_cli_fail */

#ifndef RS_GIT_COMMIT
#define RS_GIT_COMMIT "unknown"
#endif

#define BN_DEFAULT_REPS 50
#define BN_DEFAULT_OUT "bench.h5"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: replayssm bench [--out FILE.h5] [--force] [--model NAME|all] [--sweep LIST]\n"
            "                       [--reps N] [--quick]\n\n"
            "GPU benchmark of the CUDA decode kernels (needs a CUDA build and a GPU):\n"
            "  copy     device-to-device copy ceiling (bytes read + written)\n"
            "  std      standard decode, fp32 state, L = 16: conventional vs ReplaySSM,\n"
            "           B in {1, 8, 32, 128, 256, 512}, flush cost amortised over the window\n"
            "  window   ReplaySSM, L in {4, 8, 16, 32, 64}, B = 256\n"
            "  verify   speculative verification, T in {1, 2, 4, 6, 8}, a = 1 and a = T, B = 256:\n"
            "           snapshot baseline (1R + T W) vs ReplaySSM output-only (+ UT solve, GDN)\n"
            "  lp       ReplaySSM non-flush step reading an fp32 / fp16 / fp8 / nvfp4 checkpoint\n"
            "Timing: CUDA graphs of consecutive steps over rotating input sets larger than the L2,\n"
            "CUDA events, warm-up, median of N replays. Every row reports achieved GB/s of the\n"
            "bytes that must move and %% of the measured copy bandwidth; std rows also carry the\n"
            "traffic model of lib/rs_theory.h (C.3).\n\n"
            "options:\n"
            "  --out FILE    HDF5 output (default %s); an existing FILE is kept unless --force\n"
            "  --force       overwrite --out\n"
            "  --model NAME  nemotron-3-nano-4b, nemotron-3-super, qwen3.5-4b, qwen3.5-122b, all (default)\n"
            "  --sweep LIST  comma-separated subset of copy,std,window,verify,lp (default all)\n"
            "  --reps N      timed graph replays per case, >= 1 (default %d)\n"
            "  --quick       B = 256 only in std, T in {1, 8} in verify (smoke test)\n",
            BN_DEFAULT_OUT, BN_DEFAULT_REPS);
}

#ifndef RS_HAVE_CUDA

int rs_cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    fprintf(stderr, "replayssm bench: built without CUDA: reconfigure with -DRS_CUDA=ON on a machine with nvcc "
                    "and run on a GPU\n");
    return 1;
}

#else /* RS_HAVE_CUDA */

#include <hdf5.h>

#include "replayssm/theory/rs_theory.h" /* model shapes, C.3 traffic; before rs_cuda.h (rs_ssm_kind) */
#include "replayssm/cuda/rs_cuda_bench.h"

typedef struct bn_row {
    char sweep[8], model[24], kernel[24], variant[24], fmt[8];
    int B, L, T, a;
    double median_us, p10_us, p90_us, bytes, gbps, pct_copy, flush_frac, mean_fill, theory_bytes;
    double speedup;  /* std/window: conv / replay at the same B; lp: fp32 read / this read */
    double norm;     /* verify: time / conventional standard step (same model, B) */
    double norm_own; /* verify: snapshot / conv step; ReplaySSM / ReplaySSM standard step (L = 16) */
} bn_row;

typedef struct bn_ctx {
    bn_row *rows;
    size_t n, cap;
    int reps;
    double copy_gbps;
} bn_ctx;

static bn_row *bn_add(bn_ctx *c)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 256;
        bn_row *r = (bn_row *)realloc(c->rows, nc * sizeof *r);
        if (!r) return NULL;
        c->rows = r, c->cap = nc;
    }
    bn_row *r = &c->rows[c->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static const char *kname(rs_bench_kernel k)
{
    switch (k) {
    case RS_BENCH_CONV: return "conv";
    case RS_BENCH_REPLAY: return "replay";
    case RS_BENCH_VERIFY_SNAPSHOT: return "verify-snapshot";
    default: return "verify-replay";
    }
}
static const char *fmtname(rs_format_kind k)
{
    static const char *n[] = {"fp32", "fp16", "bf16", "fp8", "nvfp4"};
    return (unsigned)k <= 4u ? n[k] : "?";
}

/* run one case and append its row; returns the row or NULL (error printed) */
static bn_row *bn_run(bn_ctx *c, const char *sweep, const rs_model_shape *m, const rs_bench_case *bc,
                      const char *variant)
{
    rs_bench_result r;
    rs_status st = rs_cuda_bench_run(bc, &r);
    if (st != RS_OK) {
        rs_cli_fail("bench", kname(bc->kernel), st);
        return NULL;
    }
    bn_row *row = bn_add(c);
    if (!row) return NULL;
    snprintf(row->sweep, sizeof row->sweep, "%s", sweep);
    snprintf(row->model, sizeof row->model, "%s", m->name);
    snprintf(row->kernel, sizeof row->kernel, "%s", kname(bc->kernel));
    snprintf(row->variant, sizeof row->variant, "%s", variant);
    snprintf(row->fmt, sizeof row->fmt, "%s", fmtname(bc->read_fmt));
    row->B = bc->dims.batch, row->L = bc->kernel == RS_BENCH_REPLAY || bc->kernel == RS_BENCH_VERIFY_REPLAY ? bc->L : 0;
    row->T = bc->kernel >= RS_BENCH_VERIFY_SNAPSHOT ? bc->T : 1;
    row->a = bc->kernel == RS_BENCH_VERIFY_REPLAY ? bc->accepted : 0;
    row->median_us = r.median_us, row->p10_us = r.p10_us, row->p90_us = r.p90_us, row->bytes = r.bytes;
    row->gbps = r.bytes / (r.median_us * 1e3);
    row->pct_copy = 100.0 * row->gbps / c->copy_gbps;
    row->flush_frac = r.flush_frac, row->mean_fill = r.mean_fill;
    const double per_head = (double)bc->dims.batch * bc->dims.heads;
    if (bc->kernel == RS_BENCH_CONV)
        row->theory_bytes = per_head * rs_theory_mconv(1, m->d_v, m->d_k, 4.0);
    else if (bc->kernel == RS_BENCH_REPLAY && bc->fill_mode == RS_BENCH_FILL_CYCLE && bc->read_fmt == RS_FMT_FP32)
        row->theory_bytes = per_head * rs_theory_mreplay((unsigned)bc->L, m->d_v, m->d_k, 4.0,
                                                         rs_theory_record_bytes(m->d_v, m->d_k)) / bc->L;
    fflush(stdout);
    return row;
}

static rs_bench_case bn_case(rs_bench_kernel k, const rs_model_shape *m, int B, int reps)
{
    rs_bench_case c;
    memset(&c, 0, sizeof c);
    c.kernel = k;
    c.fam = m->ssm;
    c.dims.batch = B, c.dims.heads = (int)m->value_heads, c.dims.key_heads = (int)m->key_heads;
    c.dims.d_v = (int)m->d_v, c.dims.d_k = (int)m->d_k;
    c.L = 16, c.T = 1, c.accepted = 1;
    c.fill_mode = RS_BENCH_FILL_CYCLE;
    c.ring_dtype = RS_CUDA_BF16;
    c.read_fmt = RS_FMT_FP32;
    c.reps = reps, c.warmup = 3;
    return c;
}

static void print_header(const char *title)
{
    printf("\n## %s\n", title);
    printf("%-18s %-16s %-20s %5s %3s %2s %2s %10s %8s %6s %7s %s\n", "model", "kernel", "variant", "B", "L", "T", "a",
           "median_us", "GB/s", "%copy", "flush", "x");
}
static void print_row(const bn_row *r, double x)
{
    printf("%-18s %-16s %-20s %5d %3d %2d %2d %10.1f %8.0f %5.1f%% %6.3f %s", r->model, r->kernel, r->variant, r->B, r->L,
           r->T, r->a, r->median_us, r->gbps, r->pct_copy, r->flush_frac, x > 0 ? "" : "-");
    if (x > 0) printf("%.2fx", x);
    printf("\n");
    fflush(stdout);
}

/* ---- HDF5 (layout: docs/kernels.md) ---------------------------------------------------------- */

static int h5_attr_str(hid_t obj, const char *name, const char *val)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(val) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int bad = a < 0 || H5Awrite(a, t, val) < 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    return bad;
}
static int h5_attr_num(hid_t obj, const char *name, double val)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int bad = a < 0 || H5Awrite(a, H5T_NATIVE_DOUBLE, &val) < 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return bad;
}
/* column `name` of the rows: a double (off into bn_row), int, or fixed-length string */
enum { COL_D, COL_I, COL_S };
static int h5_col(hid_t g, const char *name, const bn_ctx *c, size_t off, int kind, size_t slen, const char *units)
{
    hsize_t dim = c->n;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    hid_t t = kind == COL_D ? H5Tcopy(H5T_NATIVE_DOUBLE) : kind == COL_I ? H5Tcopy(H5T_NATIVE_INT) : H5Tcopy(H5T_C_S1);
    if (kind == COL_S) H5Tset_size(t, slen);
    size_t esz = kind == COL_D ? sizeof(double) : kind == COL_I ? sizeof(int) : slen;
    char *buf = (char *)calloc(c->n ? c->n : 1, esz);
    int bad = !buf;
    if (buf) {
        for (size_t i = 0; i < c->n; ++i) memcpy(buf + i * esz, (const char *)&c->rows[i] + off, esz);
        hid_t d = H5Dcreate2(g, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        bad = d < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0;
        if (d >= 0) {
            if (units) bad |= h5_attr_str(d, "units", units);
            H5Dclose(d);
        }
    }
    free(buf);
    H5Tclose(t);
    H5Sclose(sp);
    return bad;
}

static int write_h5(const char *path, int force, const bn_ctx *c, const char *device, int sms, size_t l2,
                    double copy_us, double copy_bytes, const char *cmdline)
{
    hid_t f;
    H5E_BEGIN_TRY { f = H5Fcreate(path, force ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT); }
    H5E_END_TRY;
    if (f < 0) {
        fprintf(stderr, "replayssm bench: cannot create '%s'%s\n", path, force ? "" : " (exists? pass --force)");
        return 1;
    }
    int bad = 0;
    hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
    bad |= h5_attr_str(root, "tool", "replayssm bench " RS_VERSION_STRING " (git " RS_GIT_COMMIT ")");
    bad |= h5_attr_str(root, "command", cmdline);
    bad |= h5_attr_str(root, "device", device);
    bad |= h5_attr_num(root, "sms", sms);
    bad |= h5_attr_num(root, "l2_bytes", (double)l2);
    bad |= h5_attr_num(root, "copy_us", copy_us);
    bad |= h5_attr_num(root, "copy_bytes", copy_bytes);
    bad |= h5_attr_num(root, "copy_gbps", c->copy_gbps);
    bad |= h5_attr_num(root, "reps", c->reps);
    H5Gclose(root);
    hid_t g = H5Gcreate2(f, "rows", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) bad = 1;
    else {
#define COLS(n, k, len, u) bad |= h5_col(g, #n, c, offsetof(bn_row, n), k, len, u)
        COLS(sweep, COL_S, sizeof(c->rows->sweep), NULL);
        COLS(model, COL_S, sizeof(c->rows->model), NULL);
        COLS(kernel, COL_S, sizeof(c->rows->kernel), NULL);
        COLS(variant, COL_S, sizeof(c->rows->variant), NULL);
        COLS(fmt, COL_S, sizeof(c->rows->fmt), NULL);
        COLS(B, COL_I, 0, "sequences");
        COLS(L, COL_I, 0, "window (0: not a ReplaySSM kernel)");
        COLS(T, COL_I, 0, "draft tokens (1: standard decode)");
        COLS(a, COL_I, 0, "accepted per verification (ReplaySSM verify only)");
        COLS(median_us, COL_D, 0, "us per step");
        COLS(p10_us, COL_D, 0, "us per step");
        COLS(p90_us, COL_D, 0, "us per step");
        COLS(bytes, COL_D, 0, "bytes that must move per step");
        COLS(gbps, COL_D, 0, "GB/s (1e9 B/s)");
        COLS(pct_copy, COL_D, 0, "% of copy bandwidth");
        COLS(flush_frac, COL_D, 0, "fraction of row-steps that flush");
        COLS(mean_fill, COL_D, 0, "mean committed records before the step");
        COLS(theory_bytes, COL_D, 0, "lib/rs_theory.h C.3 bytes per step (0: not modelled)");
        COLS(speedup, COL_D, 0, "x (see docs/kernels.md)");
        COLS(norm, COL_D, 0, "verify time / conventional standard step");
        COLS(norm_own, COL_D, 0, "verify time / own standard step");
#undef COLS
        H5Gclose(g);
    }
    if (H5Fclose(f) < 0) bad = 1;
    if (bad) fprintf(stderr, "replayssm bench: writing '%s' failed\n", path);
    return bad;
}

/* ---- sweeps ------------------------------------------------------------------------------------- */

static bn_row *find_row(bn_ctx *c, const char *sweep, const char *model, const char *kernel, const char *variant, int B)
{
    for (size_t i = 0; i < c->n; ++i) {
        bn_row *r = &c->rows[i];
        if (!strcmp(r->sweep, sweep) && !strcmp(r->model, model) && !strcmp(r->kernel, kernel) &&
            !strcmp(r->variant, variant) && r->B == B)
            return r;
    }
    return NULL;
}

static int has_sweep(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

static int sweep_std(bn_ctx *c, const rs_model_shape *m, int quick)
{
    static const int Bs[] = {1, 8, 32, 128, 256, 512};
    print_header("standard decode, fp32 state, L = 16 (ReplaySSM: bf16 ring, flush amortised)");
    for (size_t i = 0; i < sizeof Bs / sizeof Bs[0]; ++i) {
        const int B = Bs[i];
        if (quick && B != 256) continue;
        rs_bench_case k = bn_case(RS_BENCH_CONV, m, B, c->reps);
        bn_row *conv = bn_run(c, "std", m, &k, "fp32");
        if (!conv) return 1;
        print_row(conv, 0);
        double conv_us = conv->median_us;
        k = bn_case(RS_BENCH_REPLAY, m, B, c->reps);
        bn_row *r = bn_run(c, "std", m, &k, "cycle-bf16ring");
        if (!r) return 1;
        r->speedup = conv_us / r->median_us;
        print_row(r, r->speedup);
        if (B == 256) { /* the parts of the amortised step, and the fp32 ring */
            k.ring_dtype = RS_CUDA_F32;
            if (!(r = bn_run(c, "std", m, &k, "cycle-fp32ring"))) return 1;
            r->speedup = conv_us / r->median_us;
            print_row(r, r->speedup);
            k.ring_dtype = RS_CUDA_BF16;
            k.fill_mode = RS_BENCH_FILL_FIXED, k.fill = 7;
            if (!(r = bn_run(c, "std", m, &k, "nonflush-h7"))) return 1;
            r->speedup = conv_us / r->median_us;
            print_row(r, r->speedup);
            k.fill_mode = RS_BENCH_FILL_FLUSH;
            if (!(r = bn_run(c, "std", m, &k, "allflush"))) return 1;
            r->speedup = conv_us / r->median_us;
            print_row(r, r->speedup);
        }
    }
    return 0;
}

static double conv256(bn_ctx *c, const rs_model_shape *m)
{
    bn_row *r = find_row(c, "std", m->name, "conv", "fp32", 256);
    if (r) return r->median_us;
    rs_bench_case k = bn_case(RS_BENCH_CONV, m, 256, c->reps);
    r = bn_run(c, "ref", m, &k, "fp32");
    return r ? r->median_us : 0;
}

static int sweep_window(bn_ctx *c, const rs_model_shape *m)
{
    static const int Ls[] = {4, 8, 16, 32, 64};
    const double cu = conv256(c, m);
    if (cu <= 0) return 1;
    print_header("window sweep, B = 256 (ReplaySSM, bf16 ring, flush amortised; x = vs conventional)");
    for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; ++i) {
        rs_bench_case k = bn_case(RS_BENCH_REPLAY, m, 256, c->reps);
        k.L = Ls[i];
        char v[24];
        snprintf(v, sizeof v, "cycle-bf16ring-L%d", Ls[i]);
        bn_row *r = bn_run(c, "window", m, &k, v);
        if (!r) return 1;
        r->speedup = cu / r->median_us;
        print_row(r, r->speedup);
    }
    return 0;
}

static int sweep_verify(bn_ctx *c, const rs_model_shape *m, int quick)
{
    static const int Ts[] = {1, 2, 4, 6, 8};
    const double cu = conv256(c, m);
    if (cu <= 0) return 1;
    bn_row *rs = find_row(c, "std", m->name, "replay", "cycle-bf16ring", 256);
    double ru = rs ? rs->median_us : 0;
    if (!rs) {
        rs_bench_case k = bn_case(RS_BENCH_REPLAY, m, 256, c->reps);
        bn_row *r = bn_run(c, "ref", m, &k, "cycle-bf16ring");
        if (!r) return 1;
        ru = r->median_us;
    }
    print_header("speculative verification, B = 256, L = 16 (x = time / conventional standard step)");
    for (size_t i = 0; i < sizeof Ts / sizeof Ts[0]; ++i) {
        const int T = Ts[i];
        if (quick && T != 1 && T != 8) continue;
        rs_bench_case k = bn_case(RS_BENCH_VERIFY_SNAPSHOT, m, 256, c->reps);
        k.T = T;
        bn_row *r = bn_run(c, "verify", m, &k, "snapshot");
        if (!r) return 1;
        r->norm = r->median_us / cu, r->norm_own = r->norm;
        print_row(r, r->norm);
        for (int ai = 0; ai < 2; ++ai) {
            const int a = ai ? T : 1;
            if (ai && T == 1) break;
            k = bn_case(RS_BENCH_VERIFY_REPLAY, m, 256, c->reps);
            k.T = T, k.accepted = a;
            char v[24];
            snprintf(v, sizeof v, "bf16ring-a%d", a);
            if (!(r = bn_run(c, "verify", m, &k, v))) return 1;
            r->norm = r->median_us / cu, r->norm_own = r->median_us / ru;
            print_row(r, r->norm);
        }
    }
    return 0;
}

static int sweep_lp(bn_ctx *c, const rs_model_shape *m)
{
    static const rs_format_kind fs[] = {RS_FMT_FP32, RS_FMT_FP16, RS_FMT_FP8, RS_FMT_NVFP4};
    print_header("non-flush ReplaySSM step reading a low-precision checkpoint, B = 256, L = 16, h = 7 (x = vs fp32)");
    double base = 0;
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; ++i) {
        rs_bench_case k = bn_case(RS_BENCH_REPLAY, m, 256, c->reps);
        k.fill_mode = RS_BENCH_FILL_FIXED, k.fill = 7, k.read_fmt = fs[i];
        /* each format with its own chunk size (rs_cuda.h rows_per_warp) */
        char v[24];
        snprintf(v, sizeof v, "nonflush-h7-%s", fmtname(fs[i]));
        bn_row *r = bn_run(c, "lp", m, &k, v);
        if (!r) return 1;
        if (i == 0) base = r->median_us;
        r->speedup = base / r->median_us;
        print_row(r, r->speedup);
    }
    return 0;
}

int rs_cmd_bench(int argc, char **argv)
{
    const char *out = BN_DEFAULT_OUT, *model = "all", *sweeps = "copy,std,window,verify,lp";
    int force = 0, quick = 0;
    long reps = BN_DEFAULT_REPS;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--force")) { force = 1; continue; }
        if (!strcmp(a, "--quick")) { quick = 1; continue; }
        if (i + 1 >= argc) {
            fprintf(stderr, "replayssm bench: %s needs a value (or is unknown)\n", a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--sweep")) sweeps = v;
        else if (!strcmp(a, "--reps")) {
            char *end = NULL;
            reps = strtol(v, &end, 10);
            if (!end || *end || reps < 1 || reps > 100000) {
                fprintf(stderr, "replayssm bench: --reps needs an integer in 1..100000, not '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "replayssm bench: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    static const char *known[] = {"copy", "std", "window", "verify", "lp"};
    for (const char *p = sweeps; *p;) {
        size_t n = strcspn(p, ",");
        int ok = 0;
        for (size_t j = 0; j < 5; ++j) ok |= strlen(known[j]) == n && !strncmp(p, known[j], n);
        if (!ok) {
            fprintf(stderr, "replayssm bench: unknown sweep '%.*s' (copy,std,window,verify,lp)\n", (int)n, p);
            return 2;
        }
        p += n + (p[n] == ',');
    }
    const rs_model_shape *ms[4];
    size_t nm = 0;
    if (!strcmp(model, "all")) {
        for (size_t i = 0; i < rs_theory_model_count() && i < 4; ++i) ms[nm++] = rs_theory_model_at(i);
    } else {
        rs_status st = rs_theory_model_find(model, &ms[0]);
        if (st != RS_OK) return rs_cli_fail("bench", "--model", st) + 1;
        nm = 1;
    }

    char device[256];
    int sms = 0;
    size_t l2 = 0, mem = 0;
    rs_status st = rs_cuda_bench_device(device, sizeof device, &sms, &l2, &mem);
    if (st != RS_OK) {
        fprintf(stderr, "replayssm bench: no usable GPU: %s\n", rs_last_error());
        return 1;
    }
    {   /* refuse to clobber before spending GPU time */
        FILE *probe = fopen(out, "rb");
        if (probe) {
            fclose(probe);
            if (!force) {
                fprintf(stderr, "replayssm bench: '%s' exists; pass --force to overwrite it\n", out);
                return 1;
            }
        }
    }
    char cmdline[1024] = "replayssm bench";
    for (int i = 1; i < argc; ++i)
        if (strlen(cmdline) + strlen(argv[i]) + 2 < sizeof cmdline) strcat(cmdline, " "), strcat(cmdline, argv[i]);

    bn_ctx c;
    memset(&c, 0, sizeof c);
    c.reps = (int)reps;
    printf("# replayssm bench on %s: %d SMs, %.0f MB L2, %.1f GB; %d timed replays per case\n", device, sms,
           (double)l2 / 1e6, (double)mem / 1e9, c.reps);
    const size_t copy_bytes = (size_t)2 << 30;
    double copy_us = 0;
    if ((st = rs_cuda_bench_copy(copy_bytes, c.reps, &copy_us)) != RS_OK) return rs_cli_fail("bench", "copy", st);
    c.copy_gbps = 2.0 * (double)copy_bytes / (copy_us * 1e3);
    printf("copy ceiling: cudaMemcpy D2D of %.2f GiB in %.1f us = %.0f GB/s (read + write)\n",
           (double)copy_bytes / (1 << 30), copy_us, c.copy_gbps);
    int rc = 0;
    for (size_t i = 0; i < nm && !rc; ++i) {
        const rs_model_shape *m = ms[i];
        printf("\n# %s (%s): H = %u value heads, G = %u key heads, d_v = %u, d_k = %u\n", m->full_name,
               m->ssm == RS_SSM_MAMBA2 ? "Mamba-2" : "GDN", m->value_heads, m->key_heads, m->d_v, m->d_k);
        if (has_sweep(sweeps, "std")) rc |= sweep_std(&c, m, quick);
        if (!rc && has_sweep(sweeps, "window")) rc |= sweep_window(&c, m);
        if (!rc && has_sweep(sweeps, "verify")) rc |= sweep_verify(&c, m, quick);
        if (!rc && has_sweep(sweeps, "lp")) rc |= sweep_lp(&c, m);
    }
    if (c.n) { /* the summary against issue 8's targets */
        printf("\n## summary (B = 256)\n%-18s %9s %9s %8s %9s %9s %8s %8s %8s\n", "model", "conv_us", "%copy", "replay",
               "speedup", "verifyT8", "fp16", "fp8", "nvfp4");
        for (size_t i = 0; i < nm; ++i) {
            const rs_model_shape *m = ms[i];
            bn_row *cv = find_row(&c, "std", m->name, "conv", "fp32", 256);
            bn_row *rp = find_row(&c, "std", m->name, "replay", "cycle-bf16ring", 256);
            bn_row *v8 = find_row(&c, "verify", m->name, "verify-replay", "bf16ring-a8", 256);
            bn_row *f16 = find_row(&c, "lp", m->name, "replay", "nonflush-h7-fp16", 256);
            bn_row *f8 = find_row(&c, "lp", m->name, "replay", "nonflush-h7-fp8", 256);
            bn_row *f4 = find_row(&c, "lp", m->name, "replay", "nonflush-h7-nvfp4", 256);
            printf("%-18s %9.1f %8.1f%% %8.1f %8.2fx %8.2fx %7.2fx %7.2fx %7.2fx\n", m->name, cv ? cv->median_us : 0,
                   cv ? cv->pct_copy : 0, rp ? rp->median_us : 0, rp ? rp->speedup : 0, v8 ? v8->norm : 0,
                   f16 ? f16->speedup : 0, f8 ? f8->speedup : 0, f4 ? f4->speedup : 0);
        }
    }
    if (c.n && write_h5(out, force, &c, device, sms, l2, copy_us, (double)copy_bytes, cmdline)) rc = 1;
    else if (c.n) printf("\nwrote %s (%zu rows)\n", out, c.n);
    free(c.rows);
    return rc ? 1 : 0;
}

#endif /* RS_HAVE_CUDA */
