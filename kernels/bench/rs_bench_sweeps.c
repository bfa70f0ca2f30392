/* rs_bench_sweeps.c — the sweeps of `replayssm bench` (replayssm/cuda/rs_cuda_bench_sweeps.h): each
 * case of a sweep's list is timed by the harness (rs_cuda_bench.h), appended as a row with its derived
 * columns and reported through the caller's callbacks. Host code only, in libreplayssm-cuda. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_check.h"
#include "replayssm/theory/rs_theory.h" /* model shapes, C.3 traffic; before rs_cuda.h (rs_ssm_kind) */
#include "replayssm/cuda/rs_cuda_bench.h"
#include "replayssm/cuda/rs_cuda_bench_sweeps.h"

static rs_status bn_add(rs_bench_ctx *c, rs_bench_row **out)
{
    if (c->n == c->cap) {
        const size_t nc = c->cap ? 2 * c->cap : 256;
        rs_bench_row *r = (rs_bench_row *)realloc(c->rows, nc * sizeof *r);
        RS_CHECK(r, RS_E_NOMEM, "bench: out of memory for %zu rows", nc);
        c->rows = r, c->cap = nc;
    }
    rs_bench_row *r = &c->rows[c->n++];
    memset(r, 0, sizeof *r);
    *out = r;
    return RS_OK;
}

static void rep_heading(const rs_bench_ctx *c, const char *text)
{
    if (c->report.heading) c->report.heading(c->report.user, text);
}
static void rep_table(const rs_bench_ctx *c, const char *title)
{
    if (c->report.table) c->report.table(c->report.user, title);
}
static void rep_row(const rs_bench_ctx *c, const rs_bench_row *r, double x)
{
    if (c->report.row) c->report.row(c->report.user, r, x);
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

/* run one case and append its row (*out; valid until the next row is appended) */
static rs_status bn_run(rs_bench_ctx *c, const char *sweep, const rs_model_shape *m, const rs_bench_case *bc,
                        const char *variant, rs_bench_row **out)
{
    *out = NULL;
    /* the row's names are fixed-width fields: a longer name would be cut and two rows could share it */
    RS_CHECK(strlen(sweep) < sizeof c->rows->sweep && strlen(m->name) < sizeof c->rows->model &&
                 strlen(variant) < sizeof c->rows->variant,
             RS_E_INVAL, "bench: row name '%s' / '%s' / '%s' longer than %zu / %zu / %zu characters", sweep, m->name,
             variant, sizeof c->rows->sweep - 1, sizeof c->rows->model - 1, sizeof c->rows->variant - 1);
    char label[96]; /* the case: its NVTX range (rs_bench_case.label) and its name in an error */
    snprintf(label, sizeof label, "%s:%s:%s:%d", sweep, m->name, variant, bc->dims.batch);
    rs_bench_case lc = *bc;
    lc.label = label;
    rs_bench_result r;
    const rs_status st = rs_cuda_bench_run(&lc, &r);
    if (st != RS_OK) return rs_error_set(st, "case %s (%s): %s", label, kname(bc->kernel), rs_last_error());
    rs_bench_row *row = NULL;
    RS_TRY(bn_add(c, &row));
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
    row->sm_mhz = r.sm_mhz, row->power_w = r.power_w, row->pcap_frac = r.pcap_frac;
    const double per_head = (double)bc->dims.batch * bc->dims.heads;
    if (bc->kernel == RS_BENCH_CONV)
        row->theory_bytes = per_head * rs_theory_mconv(1, m->d_v, m->d_k, 4.0);
    else if (bc->kernel == RS_BENCH_REPLAY && bc->fill_mode == RS_BENCH_FILL_CYCLE && bc->read_fmt == RS_FMT_FP32)
        row->theory_bytes = per_head * rs_theory_mreplay((unsigned)bc->L, m->d_v, m->d_k, 4.0,
                                                         rs_theory_record_bytes(m->d_v, m->d_k)) / bc->L;
    *out = row;
    return RS_OK;
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

const rs_bench_row *rs_bench_find_row(const rs_bench_ctx *c, const char *sweep, const char *model, const char *kernel,
                                      const char *variant, int B)
{
    for (size_t i = 0; c && i < c->n; ++i) {
        const rs_bench_row *r = &c->rows[i];
        if (!strcmp(r->sweep, sweep) && !strcmp(r->model, model) && !strcmp(r->kernel, kernel) &&
            !strcmp(r->variant, variant) && r->B == B)
            return r;
    }
    return NULL;
}

void rs_bench_ctx_free(rs_bench_ctx *c)
{
    if (!c) return;
    free(c->rows);
    c->rows = NULL, c->n = c->cap = 0;
}

/* a replay row's speed-up over the conventional step, reported */
static rs_status replay_row(rs_bench_ctx *c, const rs_model_shape *m, const rs_bench_case *k, const char *variant,
                            double conv_us)
{
    rs_bench_row *r;
    RS_TRY(bn_run(c, "std", m, k, variant, &r));
    r->speedup = conv_us / r->median_us;
    rep_row(c, r, r->speedup);
    return RS_OK;
}

rs_status rs_bench_sweep_std(rs_bench_ctx *c, const rs_model_shape *m, int quick)
{
    static const int Bs[] = {1, 8, 32, 128, 256, 512};
    rep_table(c, "standard decode, fp32 state, L = 16 (ReplaySSM: bf16 ring, flush amortised)");
    for (size_t i = 0; i < sizeof Bs / sizeof Bs[0]; ++i) {
        const int B = Bs[i];
        if (quick && B != 256) continue;
        rs_bench_case k = bn_case(RS_BENCH_CONV, m, B, c->reps);
        rs_bench_row *conv;
        RS_TRY(bn_run(c, "std", m, &k, "fp32", &conv));
        rep_row(c, conv, 0);
        const double conv_us = conv->median_us;
        /* ReplaySSM with the default launch choice (RS_CUDA_LAUNCH_AUTO) and, side by side, forced to the
         * separate prologue (variant suffix -prep) and to the fused launch (suffix -fused) */
        /* at B = 1 also the fused launch without its early loads (-nospec: RS_CUDA_SPEC_OFF) and with the keys
         * among them (-spec2: RS_CUDA_SPEC_KEYS) */
        for (int lm = 0; lm < (B == 1 ? 5 : 3); ++lm) {
            static const char *sfx[] = {"", "-prep", "-fused", "-nospec", "-spec2"}; /* variant: 23 characters at most */
            const char *x = sfx[lm];
            char v[32];
            k = bn_case(RS_BENCH_REPLAY, m, B, c->reps);
            k.launch = lm == 0 ? RS_CUDA_LAUNCH_AUTO : lm == 1 ? RS_CUDA_LAUNCH_PROLOGUE : RS_CUDA_LAUNCH_FUSED;
            k.opts.replay_spec = lm < 3 ? RS_CUDA_SPEC_DEFAULT : lm == 3 ? RS_CUDA_SPEC_OFF : RS_CUDA_SPEC_KEYS;
            snprintf(v, sizeof v, "cycle-bf16ring%s", x);
            RS_TRY(replay_row(c, m, &k, v, conv_us));
            if (B == 256) { /* the parts of the amortised step, and the fp32 ring */
                k.ring_dtype = RS_CUDA_F32;
                snprintf(v, sizeof v, "cycle-fp32ring%s", x);
                RS_TRY(replay_row(c, m, &k, v, conv_us));
                k.ring_dtype = RS_CUDA_BF16;
                k.fill_mode = RS_BENCH_FILL_FIXED, k.fill = 7;
                snprintf(v, sizeof v, "nonflush-h7%s", x);
                RS_TRY(replay_row(c, m, &k, v, conv_us));
                k.fill_mode = RS_BENCH_FILL_FLUSH;
                snprintf(v, sizeof v, "allflush%s", x);
                RS_TRY(replay_row(c, m, &k, v, conv_us));
            }
        }
        /* at B >= 128 the default launch without the non-flush loop's L2 prefetch (-nol2pf: RS_CUDA_L2PF_OFF; the
         * default applies it there): the amortised step and, at B = 256, its non-flush part */
        for (int part = 0; B >= 128 && part < (B == 256 ? 2 : 1); ++part) {
            k = bn_case(RS_BENCH_REPLAY, m, B, c->reps);
            if (part) k.fill_mode = RS_BENCH_FILL_FIXED, k.fill = 7;
            k.opts.replay_l2pf = RS_CUDA_L2PF_OFF;
            RS_TRY(replay_row(c, m, &k, part ? "nonflush-h7-nol2pf" : "cycle-bf16ring-nol2pf", conv_us));
        }
    }
    return RS_OK;
}

/* the conventional fp32 step at batch B: the std sweep's row, else a `ref` row run now */
static rs_status conv_row(rs_bench_ctx *c, const rs_model_shape *m, int B, const rs_bench_row **out)
{
    *out = rs_bench_find_row(c, "std", m->name, "conv", "fp32", B);
    if (*out) return RS_OK;
    rs_bench_case k = bn_case(RS_BENCH_CONV, m, B, c->reps);
    rs_bench_row *r;
    RS_TRY(bn_run(c, "ref", m, &k, "fp32", &r));
    *out = r;
    return RS_OK;
}
static rs_status conv256(rs_bench_ctx *c, const rs_model_shape *m, double *us)
{
    const rs_bench_row *r;
    RS_TRY(conv_row(c, m, 256, &r));
    *us = r->median_us;
    return RS_OK;
}

/* One B = 1 verification variant: row-name suffix, main kernel (rs_cuda_verify_state.kernel) and GDN table sharing
 * (rs_cuda_launch_opts.verify_gshare: RS_CUDA_GSHARE_*) */
typedef struct {
    const char *sfx;
    int kernel, gshare;
} b1_var;
/* T = 8, L = 16 at B = 1, a = 1 then a = 8, each of the nv variants, against one conventional step at B = 1 (its row
 * reported first); rows named PREFIX a<a><sfx> */
static rs_status verify_b1_rows(rs_bench_ctx *c, const rs_model_shape *m, const char *sweep, const char *title,
                                const char *prefix, const b1_var *vs, int nv)
{
    const rs_bench_row *cr;
    RS_TRY(conv_row(c, m, 1, &cr));
    const double cu1 = cr->median_us;
    rep_table(c, title);
    rep_row(c, cr, 0);
    for (int ai = 0; ai < 2; ++ai)
        for (int i = 0; i < nv; ++i) {
            rs_bench_case k = bn_case(RS_BENCH_VERIFY_REPLAY, m, 1, c->reps);
            k.T = 8, k.accepted = ai ? 8 : 1, k.verify_kernel = vs[i].kernel;
            char v[32];
            snprintf(v, sizeof v, "%sa%d%s", prefix, k.accepted, vs[i].sfx);
            k.opts.verify_gshare = vs[i].gshare;
            rs_bench_row *r;
            RS_TRY(bn_run(c, sweep, m, &k, v, &r));
            r->norm = r->median_us / cu1, r->norm_own = r->norm;
            rep_row(c, r, r->norm);
        }
    return RS_OK;
}

rs_status rs_bench_sweep_window(rs_bench_ctx *c, const rs_model_shape *m)
{
    static const int Ls[] = {4, 8, 16, 32, 64};
    double cu;
    RS_TRY(conv256(c, m, &cu));
    rep_table(c, "window sweep, B = 256 (ReplaySSM, bf16 ring, flush amortised; x = vs conventional)");
    for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; ++i) {
        rs_bench_case k = bn_case(RS_BENCH_REPLAY, m, 256, c->reps);
        k.L = Ls[i];
        char v[24];
        snprintf(v, sizeof v, "cycle-bf16ring-L%d", Ls[i]);
        rs_bench_row *r;
        RS_TRY(bn_run(c, "window", m, &k, v, &r));
        r->speedup = cu / r->median_us;
        rep_row(c, r, r->speedup);
    }
    return RS_OK;
}

rs_status rs_bench_sweep_verify(rs_bench_ctx *c, const rs_model_shape *m, int quick)
{
    static const int Ts[] = {1, 2, 4, 6, 8, 12, 16};
    /* windows with L + T = 64 (ring capacity at its limit RS_CUDA_LMAX: lanes hold two records) */
    static const int LTs[][2] = {{48, 16}, {56, 8}};
    double cu;
    RS_TRY(conv256(c, m, &cu));
    const rs_bench_row *rs = rs_bench_find_row(c, "std", m->name, "replay", "cycle-bf16ring", 256);
    double ru = rs ? rs->median_us : 0;
    rs_bench_row *r;
    if (!rs) {
        rs_bench_case k = bn_case(RS_BENCH_REPLAY, m, 256, c->reps);
        RS_TRY(bn_run(c, "ref", m, &k, "cycle-bf16ring", &r));
        ru = r->median_us;
    }
    rep_table(c, "speculative verification, B = 256, L = 16 (x = time / conventional standard step)");
    for (size_t i = 0; i < sizeof Ts / sizeof Ts[0]; ++i) {
        const int T = Ts[i];
        if (quick && T != 1 && T != 8 && T != 16) continue;
        rs_bench_case k = bn_case(RS_BENCH_VERIFY_SNAPSHOT, m, 256, c->reps);
        k.T = T;
        RS_TRY(bn_run(c, "verify", m, &k, "snapshot", &r));
        r->norm = r->median_us / cu, r->norm_own = r->norm;
        rep_row(c, r, r->norm);
        for (int ai = 0; ai < 2; ++ai) {
            const int a = ai ? T : 1;
            if (ai && T == 1) break;
            /* the default main kernel choice, then the v3 CUDA-core kernel side by side (-cores) */
            for (int kc = 0; kc < 2; ++kc) {
                k = bn_case(RS_BENCH_VERIFY_REPLAY, m, 256, c->reps);
                k.T = T, k.accepted = a, k.verify_kernel = kc ? RS_CUDA_VERIFY_CORES : RS_CUDA_VERIFY_AUTO;
                char v[24];
                snprintf(v, sizeof v, "bf16ring-a%d%s", a, kc ? "-cores" : "");
                RS_TRY(bn_run(c, "verify", m, &k, v, &r));
                r->norm = r->median_us / cu, r->norm_own = r->median_us / ru;
                rep_row(c, r, r->norm);
            }
        }
    }
    for (size_t i = 0; i < sizeof LTs / sizeof LTs[0]; ++i) {
        const int L = LTs[i][0], T = LTs[i][1];
        if (quick && i > 0) break;
        for (int ai = 0; ai < 2; ++ai) {
            const int a = ai ? T : 1;
            for (int kc = 0; kc < 2; ++kc) {
                rs_bench_case k = bn_case(RS_BENCH_VERIFY_REPLAY, m, 256, c->reps);
                k.L = L, k.T = T, k.accepted = a, k.verify_kernel = kc ? RS_CUDA_VERIFY_CORES : RS_CUDA_VERIFY_AUTO;
                char v[32];
                snprintf(v, sizeof v, "bf16ring-L%d-a%d%s", L, a, kc ? "-cores" : "");
                RS_TRY(bn_run(c, "verify", m, &k, v, &r));
                r->norm = r->median_us / cu, r->norm_own = r->median_us / ru;
                rep_row(c, r, r->norm);
            }
        }
    }
    /* B = 1: T = 8 against one conventional step at B = 1, both main kernels */
    static const b1_var kv[] = {{"", RS_CUDA_VERIFY_AUTO, RS_CUDA_GSHARE_DEFAULT},
                                {"-cores", RS_CUDA_VERIFY_CORES, RS_CUDA_GSHARE_DEFAULT}};
    return verify_b1_rows(c, m, "verify",
                          "speculative verification, B = 1, L = 16, T = 8 (x = time / conventional step at B = 1)",
                          "bf16ring-", kv, 2);
}

/* `tcv`: T = 8, a = 1 and a = T, at B = 256 and B = 1 (L = 16), every main kernel side by side (the
 * default choice, the tensor-core versions -tc-v6a and -tc-v6b, the v3 CUDA-core kernel -cores), each
 * against one conventional step at the same B */
rs_status rs_bench_sweep_tcv(rs_bench_ctx *c, const rs_model_shape *m)
{
    static const int Bs[] = {256, 1};
    static const int ks[] = {RS_CUDA_VERIFY_AUTO, RS_CUDA_VERIFY_TC_V6A, RS_CUDA_VERIFY_TC_V6B, RS_CUDA_VERIFY_CORES};
    static const char *sfx[] = {"", "-tc-v6a", "-tc-v6b", "-cores"};
    for (size_t bi = 0; bi < 2; ++bi) {
        const int B = Bs[bi];
        const rs_bench_row *cr;
        RS_TRY(conv_row(c, m, B, &cr));
        const double cu = cr->median_us;
        char heading[128];
        snprintf(heading, sizeof heading,
                 "speculative verification T = 8, B = %d, L = 16 (x = time / conventional step at B = %d)", B, B);
        rep_heading(c, heading);
        rep_table(c, "main kernels side by side");
        rep_row(c, cr, 0);
        for (int ai = 0; ai < 2; ++ai)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ++ki) {
                rs_bench_case k = bn_case(RS_BENCH_VERIFY_REPLAY, m, B, c->reps);
                k.T = 8, k.accepted = ai ? 8 : 1, k.verify_kernel = ks[ki];
                char v[24];
                snprintf(v, sizeof v, "bf16ring-a%d%s", k.accepted, sfx[ki]);
                rs_bench_row *r;
                RS_TRY(bn_run(c, "tcv", m, &k, v, &r));
                r->norm = r->median_us / cu, r->norm_own = r->norm;
                rep_row(c, r, r->norm);
            }
    }
    return RS_OK;
}

/* `tcl`: the default main kernel alone over the verification sweep's T (L = 16) and its L + T = 64 windows,
 * a = 1 and a = T, B = 256, then T = 8 at B = 1: the rows a tensor-core kernel change moves, in a fraction of the
 * `verify` sweep's time (no CUDA-core or snapshot rows), for a quick A/B of two builds */
rs_status rs_bench_sweep_tcl(rs_bench_ctx *c, const rs_model_shape *m)
{
    static const int LTs[][2] = {{16, 4}, {16, 8}, {16, 12}, {16, 16}, {48, 16}, {56, 8}};
    double cu;
    RS_TRY(conv256(c, m, &cu));
    rep_table(c, "speculative verification, default main kernel, B = 256 (x = time / conventional standard step)");
    /* GDN at T <= 8 also with the tables a warp (-gs0: RS_CUDA_GSHARE_OFF) and without the widened geometry (-gs1:
     * RS_CUDA_GSHARE_BLOCK; the default widens) */
    const int ngs = m->ssm == RS_SSM_GDN ? 3 : 1;
    for (size_t i = 0; i < sizeof LTs / sizeof LTs[0]; ++i)
        for (int ai = 0; ai < 2; ++ai)
            for (int gi = 0; gi < (LTs[i][1] <= 8 ? ngs : 1); ++gi) {
                static const char *gsfx[] = {"", "-gs0", "-gs1"};
                const int L = LTs[i][0], T = LTs[i][1], a = ai ? T : 1;
                rs_bench_case k = bn_case(RS_BENCH_VERIFY_REPLAY, m, 256, c->reps);
                k.L = L, k.T = T, k.accepted = a;
                char v[32];
                snprintf(v, sizeof v, "bf16ring-L%d-a%d%s", L, a, gsfx[gi]);
                static const int gsv[] = {RS_CUDA_GSHARE_DEFAULT, RS_CUDA_GSHARE_OFF, RS_CUDA_GSHARE_BLOCK};
                k.opts.verify_gshare = gsv[gi];
                rs_bench_row *r;
                RS_TRY(bn_run(c, "tcl", m, &k, v, &r));
                r->norm = r->median_us / cu, r->norm_own = r->norm;
                rep_row(c, r, r->norm);
            }
    /* GDN: -gs0 too (B = 1 runs 8 warps a head: GS) */
    static const b1_var gv[] = {{"", RS_CUDA_VERIFY_AUTO, RS_CUDA_GSHARE_DEFAULT},
                                {"-gs0", RS_CUDA_VERIFY_AUTO, RS_CUDA_GSHARE_OFF}};
    return verify_b1_rows(c, m, "tcl",
                          "speculative verification, default main kernel, B = 1, L = 16, T = 8 (x = time / "
                          "conventional step)",
                          "bf16ring-L16-", gv, ngs > 1 ? 2 : 1);
}

rs_status rs_bench_sweep_lp(rs_bench_ctx *c, const rs_model_shape *m)
{
    static const rs_format_kind fs[] = {RS_FMT_FP32, RS_FMT_FP16, RS_FMT_FP8, RS_FMT_NVFP4};
    rep_table(c, "non-flush ReplaySSM step reading a low-precision checkpoint, B = 256, L = 16, h = 7 "
                 "(x = vs the default fp32 read)");
    double base = 0;
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; ++i) {
        /* every format with the default choices (lp_kernel and launch AUTO), then forced to the separate
         * prologue (suffix -prep) and to the fused launch (-fused), both with the v4 read for low-precision
         * formats (lp_kernel 4; -prep with one head, or a slice of one, a warp), v3 (suffix -v3, which keeps
         * the prologue), v7 (-tc: the dot products on tensor cores, with the prologue) and v4 with the prologue
         * and 4 heads a warp (-hpw4: rs_cuda_launch_opts.lp_heads_per_warp, one pipeline across the heads of a key
         * group; the default choice takes it for GDN and nvfp4) */
        for (int mode = 0; mode < 6; ++mode) {
            if (mode == 3 && fs[i] == RS_FMT_FP32) break;
            static const char *sfx[] = {"", "-prep", "-fused", "-v3", "-tc", "-hpw4"};
            rs_bench_case k = bn_case(RS_BENCH_REPLAY, m, 256, c->reps);
            k.fill_mode = RS_BENCH_FILL_FIXED, k.fill = 7, k.read_fmt = fs[i];
            k.lp_kernel = mode == 3 ? 3 : mode == 4 ? 7 : mode == 0 ? 0 : 4;
            k.launch = mode == 1 || mode == 5 ? RS_CUDA_LAUNCH_PROLOGUE
                       : mode == 2            ? RS_CUDA_LAUNCH_FUSED
                                              : RS_CUDA_LAUNCH_AUTO;
            /* each format with its own chunk size (rs_cuda.h rows_per_warp) */
            char v[24];
            snprintf(v, sizeof v, "nonflush-h7-%s%s", fmtname(fs[i]), sfx[mode]);
            /* -prep one head (or slice) a warp, -hpw4 four, else the automatic rule */
            k.opts.lp_heads_per_warp = mode == 1 ? 1 : mode == 5 ? 4 : 0;
            rs_bench_row *r;
            RS_TRY(bn_run(c, "lp", m, &k, v, &r));
            if (i == 0 && mode == 0) base = r->median_us;
            r->speedup = base / r->median_us;
            rep_row(c, r, r->speedup);
        }
    }
    return RS_OK;
}
