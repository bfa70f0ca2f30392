/* test_cuda_scan_bench.h — part of test_cuda_scan.cu (included once; not a library header): the
 * scan's timing benchmark, `RS_SCAN_BENCH=1 test_cuda_scan` (then nothing else runs).
 *
 * The Qwen3.5-4B GDN shape (32 value heads, 16 key heads, d_v = d_k = 128), one layer, chunks of
 * T = 512 positions, the evaluator's layout (q | k | v of a row in one buffer of row stride 8192,
 * alpha / beta of stride 32), inputs as test_cuda_scan's (gen_inputs: unit k, q / sqrt(d_k),
 * alpha near 1 on even heads), `kl`'s default policies: reference fp32 + shared:nvfp4-sr,
 * split:nvfp4-rtn/fp32, split:nvfp4-rtn/fp16-sr, conv:fp16-sr, window L = 16 (the kl default).
 * Sets timed: all five runs in one object (as the evaluator launches them), then each run alone
 * (its own object, 32 CTAs) to see which run sets the pace. Each set: RS_SCAN_BENCH_WARM (2)
 * chunks, then RS_SCAN_BENCH_REPS (10) chunks each timed by events on the stream (the states and
 * positions advance as in a real run); the median and the minimum per chunk, and the median in us
 * per position and layer (= chunk time / T: the number that, times positions x GDN layers, gives
 * the evaluator's recurrence stage). RS_SCAN_BENCH_SETS: a comma list out of all5, alone (default
 * both). RS_CUDA_SCAN_SERIAL=1 (rs_cuda_scan.cu) serialises the two launches of a set.
 * RS_SCAN_BENCH_HASH=1: instead of timing, hashes of the outputs (bench_hash, below).
 */
#ifndef TEST_CUDA_SCAN_BENCH_H
#define TEST_CUDA_SCAN_BENCH_H

#include "test_cuda_scan_ref.h"

static int bench_env_int(const char *name, int dflt)
{
    const char *e = getenv(name);
    return e && *e ? atoi(e) : dflt;
}

struct BenchBufs {
    float *ab, *bb, *conv, *o;
    size_t ld_a, ld_c, ld_o;
};

/* One set of runs (indices into the policy list): create, WARM + REPS chunks, report; the last
 * chunk's outputs are copied to last (rows r * T + t, ld_o). */
static double bench_set(const char *name, const std::vector<RunSpec> &runs, const std::vector<int> &sel,
                        const BenchBufs &b, int H, int G, int dv, int T, cudaStream_t st, std::vector<float> *last)
{
    static const uint32_t layer_id = 0;
    rs_cuda_scan *s = make_scan_of(RS_SSM_GDN, 1, &layer_id, H, G, dv, T, runs, sel);
    /* the set's runs read rows sel[j] * T .. of the shared buffers: offset by the first run (the
       sets are single runs or all of them) */
    const size_t r0 = (size_t)sel[0] * T;
    rs_cuda_scan_io io;
    memset(&io, 0, sizeof io);
    io.T = T, io.alpha = b.ab + r0 * b.ld_a, io.beta = b.bb + r0 * b.ld_a, io.ld_a = b.ld_a;
    io.q = b.conv + r0 * b.ld_c, io.k = io.q + (size_t)G * DK, io.v = io.k + (size_t)G * DK;
    io.ld_q = io.ld_k = io.ld_v = b.ld_c;
    io.o = b.o + r0 * b.ld_o, io.ld_o = b.ld_o;
    const int warm = bench_env_int("RS_SCAN_BENCH_WARM", 2), reps = bench_env_int("RS_SCAN_BENCH_REPS", 10);
    std::vector<cudaEvent_t> ev(2 * (size_t)reps);
    for (auto &e : ev) CK(cudaEventCreate(&e));
    for (int i = 0; i < warm; ++i) RSK(rs_cuda_scan_chunk(s, 0, &io, (rs_cuda_stream)st));
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(ev[2 * i], st));
        RSK(rs_cuda_scan_chunk(s, 0, &io, (rs_cuda_stream)st));
        CK(cudaEventRecord(ev[2 * i + 1], st));
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    std::vector<float> ms((size_t)reps);
    for (int i = 0; i < reps; ++i) CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
    for (auto &e : ev) CK(cudaEventDestroy(e));
    std::vector<int64_t> marks((size_t)sel.size() * H);
    RSK(rs_cuda_scan_first_nonfinite(s, marks.data(), (rs_cuda_stream)st));
    const bool finite = std::all_of(marks.begin(), marks.end(), [](int64_t m) { return m == -1; });
    rs_cuda_scan_free(s);
    if (last) {
        last->resize(sel.size() * (size_t)T * b.ld_o);
        CK(cudaMemcpy(last->data(), io.o, last->size() * sizeof(float), cudaMemcpyDeviceToHost));
    }
    std::vector<float> srt = ms;
    std::sort(srt.begin(), srt.end());
    const double med = reps ? srt[(size_t)reps / 2] : 0, mn = reps ? srt[0] : 0;
    printf("bench scan %-26s %d runs x %d heads, T %d: median %8.3f ms, min %8.3f ms per chunk, %7.2f us per "
           "position-layer%s\n",
           name, (int)sel.size(), H, T, med, mn, 1e3 * med / T, finite ? "" : " (NON-FINITE marks)");
    fflush(stdout);
    return med;
}

/* ---- bits: RS_SCAN_BENCH_HASH=1 -----------------------------------------------------------------
 * For comparing two builds of the kernel (the same bits, or not): from reset, NC chunks of T of
 * every run of a policy list (the five above plus every FP16 / BF16 coder: RTN, SR with 32 and with
 * 8 bits, and split-naive), the FNV-1a hash of all outputs and of the marks, printed per set; GDN
 * at the Qwen shape, Mamba-2 at a Nemotron-H-like one (d_v 64). */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 0x100000001B3ull;
    return h;
}

static void bench_hash(rs_ssm_kind kind, int H, int G, int dv, int T, int NC, cudaStream_t st)
{
    const std::vector<RunSpec> runs = {{"fp32", 16},          {"shared:nvfp4-sr", 16},   {"split:nvfp4-rtn/fp32", 16},
                                       {"split:nvfp4-rtn/fp16-sr", 16}, {"conv:fp16-sr", 16}, {"conv:fp16-rtn", 1},
                                       {"conv:bf16-sr", 1},   {"conv:bf16-rtn", 1},      {"conv:fp16-sr8", 1},
                                       {"shared:bf16-sr8", 4}, {"split-naive:bf16-sr/fp16-rtn", 4}};
    const int R = (int)runs.size();
    Inputs in;
    in.d = Dims{R, 1, T * NC, H, G, dv};
    gen_inputs(kind, in);
    const size_t ld_a = H, ld_c = 2 * (size_t)G * DK + (size_t)H * dv, ld_o = (size_t)H * dv, rows = (size_t)R * T;
    std::vector<float> ha(rows * ld_a), hb(rows * ld_a), hc(rows * ld_c), ho(rows * ld_o);
    float *da = dalloc<float>(ha.size()), *db = dalloc<float>(hb.size()), *dc = dalloc<float>(hc.size());
    float *dout = dalloc<float>(ho.size());
    std::vector<int> all;
    for (int r = 0; r < R; ++r) all.push_back(r);
    rs_cuda_scan_config c;
    std::vector<rs_policy> pol(R);
    std::vector<size_t> win(R);
    std::vector<uint64_t> seeds(R);
    for (int r = 0; r < R; ++r) {
        RSK(rs_policy_parse(runs[r].policy, &pol[r]));
        win[r] = runs[r].L, seeds[r] = seed_of(r);
    }
    const uint32_t layer_id = 5;
    memset(&c, 0, sizeof c);
    c.kind = kind, c.n_runs = R, c.n_layers = 1, c.layer_ids = &layer_id, c.heads = H, c.key_heads = G, c.d_v = dv;
    c.d_k = DK, c.policies = pol.data(), c.windows = win.data(), c.seeds = seeds.data(), c.max_chunk = T;
    rs_cuda_scan *s = nullptr;
    RSK(rs_cuda_scan_create(&c, &s));
    uint64_t h = 0xCBF29CE484222325ull;
    for (int ch = 0; ch < NC; ++ch) {
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) {
                const size_t row = (size_t)r * T + t, a = ia(in.d, r, 0, ch * T + t, 0);
                memcpy(&ha[row * ld_a], &in.alpha[a], H * sizeof(float));
                memcpy(&hb[row * ld_a], &in.beta[a], H * sizeof(float));
                float *cc = &hc[row * ld_c];
                memcpy(cc, &in.q[ik(in.d, r, 0, ch * T + t, 0)], (size_t)G * DK * sizeof(float));
                memcpy(cc + (size_t)G * DK, &in.k[ik(in.d, r, 0, ch * T + t, 0)], (size_t)G * DK * sizeof(float));
                memcpy(cc + 2 * (size_t)G * DK, &in.v[a * dv], (size_t)H * dv * sizeof(float));
            }
        h2d(da, ha), h2d(db, hb), h2d(dc, hc);
        CK(cudaMemset(dout, 0xFF, ho.size() * sizeof(float)));
        rs_cuda_scan_io io;
        memset(&io, 0, sizeof io);
        io.T = T, io.alpha = da, io.beta = kind == RS_SSM_GDN ? db : nullptr, io.ld_a = ld_a;
        io.q = dc, io.k = dc + (size_t)G * DK, io.v = dc + 2 * (size_t)G * DK, io.ld_q = io.ld_k = io.ld_v = ld_c;
        io.o = dout, io.ld_o = ld_o;
        RSK(rs_cuda_scan_chunk(s, 0, &io, (rs_cuda_stream)st));
        CK(cudaStreamSynchronize(st));
        d2h(ho, dout);
        h = fnv1a(h, ho.data(), ho.size() * sizeof(float));
    }
    std::vector<int64_t> marks((size_t)R * H);
    RSK(rs_cuda_scan_first_nonfinite(s, marks.data(), (rs_cuda_stream)st));
    const uint64_t hm = fnv1a(0xCBF29CE484222325ull, marks.data(), marks.size() * sizeof(int64_t));
    size_t nan = 0;
    for (float x : ho) nan += std::isnan(x);
    printf("bench bits %s H %d G %d d_v %d, %d runs x %d chunks of %d: outputs %016llx marks %016llx (last chunk: %zu NaN)\n",
           kind == RS_SSM_GDN ? "gdn" : "mamba2", H, G, dv, R, NC, T, (unsigned long long)h, (unsigned long long)hm, nan);
    fflush(stdout);
    rs_cuda_scan_free(s);
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dout);
}

static void bench_scan(cudaStream_t st)
{
    if (bench_env_int("RS_SCAN_BENCH_HASH", 0)) {
        bench_hash(RS_SSM_GDN, 32, 16, 128, 512, 3, st);
        bench_hash(RS_SSM_MAMBA2, 24, 8, 64, 512, 3, st);
        return;
    }
    const int H = 32, G = 16, dv = 128, T = 512;
    const std::vector<RunSpec> runs = {{"fp32", 16},
                                       {"shared:nvfp4-sr", 16},
                                       {"split:nvfp4-rtn/fp32", 16},
                                       {"split:nvfp4-rtn/fp16-sr", 16},
                                       {"conv:fp16-sr", 16}};
    const int R = (int)runs.size();
    Inputs in;
    in.d = Dims{R, 1, T, H, G, dv};
    gen_inputs(RS_SSM_GDN, in);
    BenchBufs b;
    b.ld_a = H, b.ld_c = 2 * (size_t)G * DK + (size_t)H * dv, b.ld_o = (size_t)H * dv;
    const size_t rows = (size_t)R * T;
    std::vector<float> ha(rows * b.ld_a), hb(rows * b.ld_a), hc(rows * b.ld_c);
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            const size_t row = (size_t)r * T + t, a = ia(in.d, r, 0, t, 0);
            memcpy(&ha[row * b.ld_a], &in.alpha[a], H * sizeof(float));
            memcpy(&hb[row * b.ld_a], &in.beta[a], H * sizeof(float));
            float *c = &hc[row * b.ld_c];
            memcpy(c, &in.q[ik(in.d, r, 0, t, 0)], (size_t)G * DK * sizeof(float));
            memcpy(c + (size_t)G * DK, &in.k[ik(in.d, r, 0, t, 0)], (size_t)G * DK * sizeof(float));
            memcpy(c + 2 * (size_t)G * DK, &in.v[a * dv], (size_t)H * dv * sizeof(float));
        }
    b.ab = dalloc<float>(ha.size()), b.bb = dalloc<float>(hb.size()), b.conv = dalloc<float>(hc.size());
    b.o = dalloc<float>(rows * b.ld_o);
    h2d(b.ab, ha), h2d(b.bb, hb), h2d(b.conv, hc);
    const char *sets = getenv("RS_SCAN_BENCH_SETS");
    const std::string ss = sets && *sets ? sets : "all5,alone";
    printf("bench scan: Qwen3.5-4B GDN shape (H %d, G %d, d_v %d), chunk %d, window 16, serial launches %s\n", H, G,
           dv, T, getenv("RS_CUDA_SCAN_SERIAL") ? getenv("RS_CUDA_SCAN_SERIAL") : "0");
    std::vector<int> all;
    for (int r = 0; r < R; ++r) all.push_back(r);
    if (ss.find("all5") != std::string::npos) bench_set("all five", runs, all, b, H, G, dv, T, st, nullptr);
    if (ss.find("alone") != std::string::npos)
        for (int r = 0; r < R; ++r) bench_set(runs[r].policy, runs, {r}, b, H, G, dv, T, st, nullptr);
    cudaFree(b.ab), cudaFree(b.bb), cudaFree(b.conv), cudaFree(b.o);
}

#endif /* TEST_CUDA_SCAN_BENCH_H */
