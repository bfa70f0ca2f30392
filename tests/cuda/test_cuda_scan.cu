/* test_cuda_scan.cu — the GPU state engine for teacher-forced chunks (rs_cuda_scan.h) against the
 * lib engine (one rs_head per (run, layer, head), token by token with rs_head_decode) and a float64
 * conventional recurrence, for GDN and Mamba-2.
 *
 * Inputs shaped like the evaluator's: GDN k, q L2-normalised (q times d_k^-1/2), alpha in [0.6, 1)
 * on odd heads and 1 - 10^[-4, -2) on even ones, beta in (0.05, 0.95), v ~ N(0, 1); Mamba-2
 * alpha = exp(dt A) with dt = softplus(N(0, 1/4) + b_h), A_h = -exp(U(-2, 1)), v = dt x, k, q ~
 * N(0, 1) / sqrt(d_k). Every run gets its own stream of inputs; 2 layers (model ids 3 and 7, the
 * SR streams' `layer`), heads > key_heads, ~300 positions in chunks of uneven sizes, all layers
 * advancing together as in the evaluator; row strides padded past a row.
 *
 * Checks and tolerances (why: docs/kernels.md, "Chunked scan for the GPU evaluator"):
 *  - fp32 formats (fp32, shared:fp32, split:fp32/fp32): max |o_gpu - o_cpu| <= 1e-5 max |o_cpu| per
 *    run and layer (both fp32 evaluations of one contracting recurrence, different orders); vs
 *    float64: RMS error <= 2 x the engine's + 1e-7 RMS(o) (the GPU no noisier than the CPU);
 *  - rounded formats: RMS(o_gpu - o64) / RMS(o_cpu - o64) in [0.8, 1.25] (same error statistics);
 *    RMS(o_gpu - o_cpu) <= 0.1 RMS(o_cpu - o64) over the first 32 positions (the same decisions
 *    but for near-ties that fp32 noise flips) and <= 0.5 over the run (flips spread, GDN couples
 *    a row through u, but the GPU run stays far closer to the CPU's than an independent rounding,
 *    ~1.4);
 *  - first store keyed like the CPU: where the first stored state is bit-identical on both sides
 *    (conv: S_0 = u_0 k_0^T is one rounding on each; shared / split with L = 1 likewise), the
 *    output after it agrees to <= 1e-5 max|o| (a wrong stream, element index or scale would leave
 *    quantization-size differences);
 *  - first_nonfinite == the engine's everywhere; chunks of 1, 64 and uneven sizes give the same
 *    bits; a run launched alone gives the bits it gives among others;
 *  - non-finite: NaN v, NaN alpha, fp16 overflow of a conv state, fp16 overflow of a split HP
 *    checkpoint (reported at pos - 1 like rs_head) in four (run, layer, head)s: marks equal the
 *    engine's, that head's outputs NaN from the detecting step on in every later chunk, every
 *    other head bit-identical to the clean run; reset clears the marks and reproduces the clean bits;
 *  - API: every RS_E_INVAL / RS_E_UNSUPPORTED path of create and chunk (the host-only ones run
 *    even without a GPU, before the program exits 77).
 * d_v coverage: 128 (GDN) and 64 (Mamba-2) in the main cases; 16, 256 (GDN) and 80, 144 (Mamba-2)
 * with fewer runs. Exit 0 if every check passes, 1 otherwise, 77 without a GPU.
 * Usage: test_cuda_scan [--quick]; RS_SCAN_BENCH=1 test_cuda_scan: the timing benchmark instead
 * (test_cuda_scan_bench.h).
 */
#include "cuda_test_util.h"

#include <algorithm>
#include <string>

#include "replayssm/cuda/rs_cuda_scan.h"
#include "replayssm/engine/rs_head.h"
#include "replayssm/engine/rs_policy.h"

static const double k_tol_fp32 = 1e-5;  /* max |o_gpu - o_cpu| / max |o|, fp32 formats */
static const double k_ratio_lo = 0.8, k_ratio_hi = 1.25;
/* RMS(gpu - cpu) / RMS(cpu - f64), rounded formats: over the first k_early positions (before
 * near-tie flips have spread) and over the whole run (docs/kernels.md) */
static const int k_early = 32;
static const double k_follow_early = 0.1, k_follow_run = 0.5;

#include "test_cuda_scan_ref.h" /* inputs, references, the GPU driver */

/* ---- comparisons ------------------------------------------------------------------------------------ */

static bool fp32_only(const rs_policy &p) { return p.hp.kind == RS_FMT_FP32 && p.lp.kind == RS_FMT_FP32; }

/* the step whose output first depends on a stored state that is bit-identical on both sides; -1 */
static int first_store_step(const rs_policy &p, size_t L)
{
    if (p.hp.kind == RS_FMT_FP32) return -1;
    if (p.mode == RS_POLICY_CONV) return 1;
    if (L != 1) return -1;
    return p.mode == RS_POLICY_SHARED ? 1 : 2;
}

static void add_(std::string &why, const char *what) /* once per run, not per layer */
{
    if (why.find(what) == std::string::npos) why += what;
}

static void compare_runs(const char *cname, const Inputs &in, const std::vector<RunSpec> &runs,
                         const std::vector<float> &og, const std::vector<float> &oc, const std::vector<double> &o64)
{
    const Dims &d = in.d;
    const size_t per = (size_t)d.H * d.dv;
    for (int r = 0; r < d.R; ++r) {
        rs_policy pol;
        RSK(rs_policy_parse(runs[r].policy, &pol));
        char name[160];
        snprintf(name, sizeof name, "%s %s L=%zu", cname, runs[r].policy, runs[r].L);
        bool ok = true;
        double worst_maxd = 0, worst_ratio = 1, worst_follow = 0, worst_early = 0, s1 = 0;
        std::string why;
        const int p1 = first_store_step(pol, runs[r].L);
        for (int l = 0; l < d.nl; ++l) {
            double maxo = 0, maxd = 0, sc = 0, sg = 0, sgc = 0, s64 = 0, m1o = 0, m1d = 0, ec = 0, egc = 0;
            bool fin = true;
            for (int p = 0; p < d.P; ++p) {
                const size_t base = iv(d, r, l, p, 0);
                for (size_t i = 0; i < per; ++i) {
                    const double g = og[base + i], c = oc[base + i], e = o64[base + i];
                    if (!std::isfinite(g) || !std::isfinite(c)) fin = false;
                    maxo = std::max(maxo, fabs(c)), maxd = std::max(maxd, fabs(g - c));
                    sc += (c - e) * (c - e), sg += (g - e) * (g - e), sgc += (g - c) * (g - c), s64 += e * e;
                    if (p < k_early) ec += (c - e) * (c - e), egc += (g - c) * (g - c);
                    if (p == p1) m1o = std::max(m1o, fabs(c)), m1d = std::max(m1d, fabs(g - c));
                }
            }
            if (!fin) ok = false, add_(why, " non-finite output;");
            if (fp32_only(pol)) {
                worst_maxd = std::max(worst_maxd, maxd / (maxo > 0 ? maxo : 1));
                if (maxd > k_tol_fp32 * maxo) ok = false, add_(why, " max|gpu-cpu|;");
                if (sqrt(sg) > 2 * sqrt(sc) + 1e-7 * sqrt(s64)) ok = false, add_(why, " vs float64;");
                worst_ratio = std::max(worst_ratio, sc > 0 ? sqrt(sg / sc) : 1);
            } else {
                const double ratio = sc > 0 ? sqrt(sg / sc) : INFINITY, follow = sc > 0 ? sqrt(sgc / sc) : INFINITY;
                const double early = ec > 0 ? sqrt(egc / ec) : INFINITY;
                if (fabs(log(ratio)) > fabs(log(worst_ratio))) worst_ratio = ratio;
                worst_follow = std::max(worst_follow, follow), worst_early = std::max(worst_early, early);
                if (!(ratio >= k_ratio_lo && ratio <= k_ratio_hi)) ok = false, add_(why, " error ratio;");
                if (!(early <= k_follow_early)) ok = false, add_(why, " gpu-cpu vs quantization error (early);");
                if (!(follow <= k_follow_run)) ok = false, add_(why, " gpu-cpu vs quantization error (run);");
            }
            if (p1 >= 0 && p1 < d.P) {
                s1 = std::max(s1, m1d / (m1o > 0 ? m1o : 1));
                if (m1d > k_tol_fp32 * m1o) ok = false, add_(why, " first store keyed differently;");
            }
        }
        if (fp32_only(pol))
            ct_report(name, ok, "max|gpu-cpu|/max|o| %.2e (tol %.0e), rms err64 gpu/cpu %.2f%s", worst_maxd, k_tol_fp32,
                      worst_ratio, why.c_str());
        else
        {
            char extra[96] = "";
            if (p1 >= 0) snprintf(extra, sizeof extra, ", step %d after the first store %.2e", p1, s1);
            ct_report(name, ok, "err64 gpu/cpu %.3f, rms(gpu-cpu)/err64 %.1e (first %d: %.1e)%s%s", worst_ratio,
                      worst_follow, k_early, worst_early, extra, why.c_str());
        }
    }
}

/* ---- the cases ---------------------------------------------------------------------------------------- */

static std::vector<RunSpec> main_runs()
{
    return {{"fp32", 1},
            {"conv:fp16-rtn", 1},
            {"conv:bf16-sr", 1},
            {"conv:fp8-rtn", 1},
            {"conv:nvfp4-sr", 1},
            {"shared:fp32", 16},
            {"shared:fp8-sr", 1},
            {"shared:nvfp4-rtn", 4},
            {"split:nvfp4-rtn/fp32", 16},
            {"split:nvfp4-rtn/fp16-sr", 4},
            {"split:fp8-rtn/fp8-sr", 1},
            {"split-naive:nvfp4-rtn/fp32", 4},
            {"split:fp32/fp32", 4},
            {"split-naive:fp16-rtn/bf16-sr", 16}};
}

static int find_run(const std::vector<RunSpec> &runs, const char *pol)
{
    for (size_t r = 0; r < runs.size(); ++r)
        if (strcmp(runs[r].policy, pol) == 0) return (int)r;
    return -1;
}

/* Non-finite events planted in a copy of the inputs. */
struct Event {
    const char *policy;
    int layer, head, pos;
    int what;   /* 0 NaN v, 1 NaN alpha, 2 v * 1e9 (fp16 store overflow) */
    int detect; /* the step from which the GPU outputs NaN */
};

static void test_nonfinite(const char *cname, rs_ssm_kind kind, const Inputs &in, const std::vector<RunSpec> &runs,
                           const std::vector<float> &og_clean, const std::vector<int> &sched, cudaStream_t st)
{
    const Dims &d = in.d;
    const Event ev[4] = {{"fp32", d.nl - 1, 2 % d.H, 30, 0, 30},
                         {"shared:fp8-sr", 0, 1 % d.H, 17, 1, 17},
                         {"conv:fp16-rtn", 0, 3 % d.H, 10, 2, 10},
                         {"split:nvfp4-rtn/fp16-sr", 0, 0, 21, 2, 24}}; /* L = 4: flush at 24, mark 23 */
    Inputs bad = in;
    std::vector<int> heads, det((size_t)d.R * d.nl * d.H, -1), planted((size_t)d.R * d.nl * d.H, -1);
    for (const Event &e : ev) {
        const int r = find_run(runs, e.policy);
        if (r < 0 || e.pos >= d.P) continue;
        const size_t a = ia(d, r, e.layer, e.pos, e.head);
        if (e.what == 0) bad.v[a * d.dv] = NAN;
        if (e.what == 1) bad.alpha[a] = NAN;
        if (e.what == 2) {
            bad.beta[a] = 0.5f;
            for (int i = 0; i < d.dv; ++i) bad.v[a * d.dv + i] = (bad.v[a * d.dv + i] >= 0 ? 1e9f : -1e9f);
        }
        const int x = (r * d.nl + e.layer) * d.H + e.head;
        heads.push_back(x), det[x] = e.detect, planted[x] = e.pos;
    }
    std::vector<float> oc, og, og1;
    std::vector<int64_t> mc, mg, mg1;
    const bool eng = ref_engine(kind, bad, runs, oc, mc, heads);
    std::vector<int> all;
    for (int r = 0; r < d.R; ++r) all.push_back(r);
    rs_cuda_scan *s = make_scan(kind, d, runs, all);
    gpu_run(s, bad, all, sched, st, og, mg);
    bool marks_ok = eng, nan_ok = true, others_ok = true;
    std::string got;
    for (int x = 0; x < d.R * d.nl * d.H; ++x) {
        if (mg[x] != mc[x]) marks_ok = false;
        if (mc[x] >= 0) got += " " + std::to_string(mc[x]) + "/" + std::to_string(mg[x]);
        const int r = x / (d.nl * d.H), l = x / d.H % d.nl, h = x % d.H;
        for (int p = 0; p < d.P; ++p) {
            const size_t b = iv(d, r, l, p, h);
            for (int i = 0; i < d.dv; ++i) {
                const float g = og[b + i], c = og_clean[b + i];
                if (det[x] < 0 || p < planted[x]) {
                    if (ct_f2u(g) != ct_f2u(c)) others_ok = false;
                } else if (p >= det[x]) {
                    if (!std::isnan(g)) nan_ok = false;
                } else if (!std::isfinite(g)) {
                    nan_ok = false;
                }
            }
        }
    }
    char name[160];
    snprintf(name, sizeof name, "%s non-finite marks == engine", cname);
    ct_report(name, marks_ok, "engine/gpu:%s", got.c_str());
    snprintf(name, sizeof name, "%s non-finite: NaN from the detecting step", cname);
    ct_report(name, nan_ok, "sticky across chunks");
    snprintf(name, sizeof name, "%s non-finite: other heads and runs untouched", cname);
    ct_report(name, others_ok, "bit-identical to the clean run");
    /* chunks of one: every step a chunk boundary */
    RSK(rs_cuda_scan_reset(s, (rs_cuda_stream)st));
    gpu_run(s, bad, all, {1}, st, og1, mg1);
    snprintf(name, sizeof name, "%s non-finite, chunks of 1", cname);
    ct_report(name, same_bits(og1, og) && mg1 == mg, "same bits and marks as uneven chunks");
    /* reset clears */
    RSK(rs_cuda_scan_reset(s, (rs_cuda_stream)st));
    std::vector<int64_t> m0(mg.size(), -2);
    RSK(rs_cuda_scan_first_nonfinite(s, m0.data(), (rs_cuda_stream)st));
    gpu_run(s, in, all, sched, st, og1, mg1);
    const bool cleared = std::all_of(m0.begin(), m0.end(), [](int64_t m) { return m == -1; }) &&
                         std::all_of(mg1.begin(), mg1.end(), [](int64_t m) { return m == -1; });
    snprintf(name, sizeof name, "%s reset clears the marks", cname);
    ct_report(name, cleared && same_bits(og1, og_clean), "then the clean run's bits again");
    rs_cuda_scan_free(s);
}

static void run_case(const char *cname, rs_ssm_kind kind, int H, int G, int dv, int P, const std::vector<RunSpec> &runs,
                     bool full, cudaStream_t st)
{
    Inputs in;
    in.d = Dims{(int)runs.size(), 2, P, H, G, dv};
    const Dims &d = in.d;
    gen_inputs(kind, in);
    std::vector<double> o64;
    std::vector<float> oc, og;
    std::vector<int64_t> mc, mg;
    ref64(kind, in, o64);
    const bool eng = ref_engine(kind, in, runs, oc, mc);
    char name[160];
    snprintf(name, sizeof name, "%s engine reference", cname);
    ct_report(name, eng, "%d runs x %d layers x %d heads, %d positions", d.R, d.nl, d.H, d.P);

    const std::vector<int> uneven = {37, 1, 64, 5, 100, 13, 2, 64};
    std::vector<int> all;
    for (int r = 0; r < d.R; ++r) all.push_back(r);
    rs_cuda_scan *s = make_scan(kind, d, runs, all);
    gpu_run(s, in, all, uneven, st, og, mg);
    compare_runs(cname, in, runs, og, oc, o64);
    snprintf(name, sizeof name, "%s first_nonfinite", cname);
    ct_report(name, mg == mc && std::all_of(mg.begin(), mg.end(), [](int64_t m) { return m == -1; }),
              "all -1 on finite inputs (engine too)");
    if (full) {
        std::vector<float> o1;
        std::vector<int64_t> m1;
        RSK(rs_cuda_scan_reset(s, (rs_cuda_stream)st));
        gpu_run(s, in, all, {1}, st, o1, m1);
        const bool same1 = same_bits(o1, og);
        RSK(rs_cuda_scan_reset(s, (rs_cuda_stream)st));
        gpu_run(s, in, all, {64}, st, o1, m1);
        snprintf(name, sizeof name, "%s chunks of 1 / 64 / uneven", cname);
        ct_report(name, same1 && same_bits(o1, og), "bit-identical outputs (1: %s, 64: %s)", same1 ? "same" : "DIFFER",
                  same_bits(o1, og) ? "same" : "DIFFER");
        /* a run alone gives the bits it gives among others */
        const int pick[3] = {0, find_run(runs, "shared:nvfp4-rtn"), find_run(runs, "split:nvfp4-rtn/fp16-sr")};
        bool alone = true;
        std::string which;
        for (int j : pick) {
            if (j < 0) continue;
            rs_cuda_scan *s1 = make_scan(kind, d, runs, {j});
            gpu_run(s1, in, {j}, uneven, st, o1, m1);
            rs_cuda_scan_free(s1);
            const bool same = same_bits(o1, run_slice(d, og, j));
            alone = alone && same;
            which += std::string(" ") + runs[j].policy + (same ? " same" : " DIFFER");
        }
        snprintf(name, sizeof name, "%s runs launched alone", cname);
        ct_report(name, alone, "%s", which.c_str());
        test_nonfinite(cname, kind, in, runs, og, uneven, st);
    }
    rs_cuda_scan_free(s);
}

#include "test_cuda_scan_api.h" /* the argument checks */
#include "test_cuda_scan_bench.h" /* RS_SCAN_BENCH=1: the timing benchmark */
#include "test_cuda_scan_codec.h" /* the store's fast element coder vs the codec (host) */

int main(int argc, char **argv)
{
    api_host_checks(); /* no GPU needed */
    if (!getenv("RS_SCAN_BENCH")) codec_host_checks();
    const int rc = ct_init(argc, argv, "test_cuda_scan");
    if (rc) {
        ct_finish("test_cuda_scan");
        return rc;
    }
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    if (getenv("RS_SCAN_BENCH") && strcmp(getenv("RS_SCAN_BENCH"), "1") == 0) { /* timing only */
        bench_scan(st);
        CK(cudaStreamDestroy(st));
        return ct_finish("test_cuda_scan");
    }
    api_device_checks(st);
    const int P = ct_quick ? 40 : 300, P2 = ct_quick ? 30 : 120;
    run_case("gdn dv128", RS_SSM_GDN, 8, 2, 128, P, main_runs(), true, st);
    run_case("mamba2 dv64", RS_SSM_MAMBA2, 6, 2, 64, P, main_runs(), true, st);
    const std::vector<RunSpec> few = {{"fp32", 1},
                                      {"conv:nvfp4-sr", 1},
                                      {"conv:bf16-rtn", 1},
                                      {"shared:fp8-rtn", 4},
                                      {"split:nvfp4-rtn/fp16-sr", 4},
                                      {"split-naive:fp8-sr/fp32", 16}};
    run_case("gdn dv16", RS_SSM_GDN, 4, 1, 16, P2, few, false, st);
    run_case("gdn dv256", RS_SSM_GDN, 4, 2, 256, P2, few, false, st);
    run_case("mamba2 dv80", RS_SSM_MAMBA2, 4, 2, 80, P2, few, false, st);
    run_case("mamba2 dv144", RS_SSM_MAMBA2, 4, 1, 144, P2, few, false, st);
    CK(cudaStreamDestroy(st));
    return ct_finish("test_cuda_scan");
}
