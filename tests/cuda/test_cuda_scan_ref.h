/* test_cuda_scan_ref.h — part of test_cuda_scan.cu (included once; not a library header): the
 * inputs of a case (runs x layers x positions x heads, shaped like the evaluator's), the float64
 * conventional recurrence, the engine reference (one rs_head per (run, layer, head), token by
 * token) and the GPU driver (chunks of given sizes over every layer, padded row strides). */
#ifndef TEST_CUDA_SCAN_REF_H
#define TEST_CUDA_SCAN_REF_H

#include "cuda_test_util.h"

#include <algorithm>
#include <string>

#include "replayssm/cuda/rs_cuda_scan.h"
#include "replayssm/engine/rs_head.h"
#include "replayssm/engine/rs_policy.h"

static const int k_max_chunk = 100;

struct RunSpec {
    const char *policy;
    size_t L;
};
struct Dims {
    int R, nl, P, H, G, dv;
};
static size_t ia(const Dims &d, int r, int l, int p, int h) { return (((size_t)r * d.nl + l) * d.P + p) * d.H + h; }
static size_t iv(const Dims &d, int r, int l, int p, int h) { return ia(d, r, l, p, h) * d.dv; }
static size_t ik(const Dims &d, int r, int l, int p, int g)
{
    return ((((size_t)r * d.nl + l) * d.P + p) * d.G + g) * DK;
}
static size_t nout(const Dims &d) { return (size_t)d.R * d.nl * d.P * d.H * d.dv; }

struct Inputs {
    Dims d;
    std::vector<float> alpha, beta, v, k, q;
};

static const uint32_t k_layer_ids[2] = {3, 7};
static uint64_t seed_of(int r) { return 0x5EED0000ull + 0x9E37ull * (uint64_t)r; }

static void gen_inputs(rs_ssm_kind kind, Inputs &in)
{
    const Dims &d = in.d;
    const size_t na = (size_t)d.R * d.nl * d.P * d.H, nk = (size_t)d.R * d.nl * d.P * d.G * DK;
    in.alpha.resize(na), in.beta.resize(na), in.v.resize(na * d.dv), in.k.resize(nk), in.q.resize(nk);
    for (int r = 0; r < d.R; ++r)
        for (int l = 0; l < d.nl; ++l) {
            std::vector<double> A(d.H), b(d.H);
            for (int h = 0; h < d.H; ++h) A[h] = -exp(-2.0 + 3.0 * ct_unif()), b[h] = -4.0 + 2.0 * (h % 3);
            for (int p = 0; p < d.P; ++p) {
                for (int h = 0; h < d.H; ++h) {
                    const size_t i = ia(d, r, l, p, h);
                    double dt = 1.0;
                    if (kind == RS_SSM_GDN) {
                        double a = h % 2 == 0 ? 1.0 - pow(10.0, -4.0 + 2.0 * ct_unif()) : 0.6 + 0.4 * ct_unif();
                        in.alpha[i] = (float)std::min(a, 0.9999999);
                        in.beta[i] = (float)(0.05 + 0.9 * ct_unif());
                    } else {
                        const double z = 0.5 * ct_normal() + b[h];
                        dt = z > 20 ? z : log1p(exp(z));
                        in.alpha[i] = (float)exp(dt * A[h]);
                        in.beta[i] = 0.5f;
                    }
                    for (int j = 0; j < d.dv; ++j) in.v[i * d.dv + j] = (float)(dt * ct_normal());
                }
                for (int g = 0; g < d.G; ++g) {
                    double kk[DK], qq[DK], nk2 = 0, nq2 = 0;
                    for (int c = 0; c < DK; ++c) {
                        kk[c] = ct_normal(), qq[c] = ct_normal();
                        nk2 += kk[c] * kk[c], nq2 += qq[c] * qq[c];
                    }
                    const size_t o = ik(d, r, l, p, g);
                    for (int c = 0; c < DK; ++c) {
                        if (kind == RS_SSM_GDN) {
                            in.k[o + c] = (float)(kk[c] / sqrt(nk2));
                            in.q[o + c] = (float)(qq[c] / sqrt(nq2) / sqrt((double)DK));
                        } else {
                            in.k[o + c] = (float)(kk[c] / sqrt((double)DK));
                            in.q[o + c] = (float)(qq[c] / sqrt((double)DK));
                        }
                    }
                }
            }
        }
}

/* float64 conventional recurrence, o64 shaped like v */
static void ref64(rs_ssm_kind kind, const Inputs &in, std::vector<double> &o64)
{
    const Dims &d = in.d;
    o64.assign(nout(d), 0.0);
#pragma omp parallel for schedule(dynamic)
    for (int x = 0; x < d.R * d.nl * d.H; ++x) {
        const int r = x / (d.nl * d.H), l = x / d.H % d.nl, h = x % d.H, g = h / (d.H / d.G);
        std::vector<double> S((size_t)d.dv * DK, 0.0);
        for (int p = 0; p < d.P; ++p) {
            const size_t a = ia(d, r, l, p, h);
            const double al = in.alpha[a], be = in.beta[a];
            const float *k = &in.k[ik(d, r, l, p, g)], *q = &in.q[ik(d, r, l, p, g)];
            for (int i = 0; i < d.dv; ++i) {
                double *row = &S[(size_t)i * DK];
                double u = in.v[a * d.dv + i];
                if (kind == RS_SSM_GDN) {
                    double sk = 0;
                    for (int c = 0; c < DK; ++c) sk += row[c] * k[c];
                    u = be * (u - al * sk);
                }
                double oo = 0;
                for (int c = 0; c < DK; ++c) {
                    row[c] = al * row[c] + u * k[c];
                    oo += row[c] * q[c];
                }
                o64[a * d.dv + i] = oo;
            }
        }
    }
}

/* The engine, one head per (run, layer, head) (heads: (r * nl + l) * H + h to run; empty: all);
 * outputs into oc (shaped like v), first_nonfinite into marks [R][nl][H]. */
static bool ref_engine(rs_ssm_kind kind, const Inputs &in, const std::vector<RunSpec> &runs, std::vector<float> &oc,
                       std::vector<int64_t> &marks, const std::vector<int> &heads = {})
{
    const Dims &d = in.d;
    oc.resize(nout(d));
    marks.assign((size_t)d.R * d.nl * d.H, -1);
    std::vector<int> todo = heads;
    if (todo.empty())
        for (int x = 0; x < d.R * d.nl * d.H; ++x) todo.push_back(x);
    int bad = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : bad)
    for (int j = 0; j < (int)todo.size(); ++j) {
        const int x = todo[j], r = x / (d.nl * d.H), l = x / d.H % d.nl, h = x % d.H, g = h / (d.H / d.G);
        rs_head hd;
        memset(&hd, 0, sizeof hd);
        rs_head_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.kind = kind, cfg.d_v = (size_t)d.dv, cfg.d_k = DK, cfg.window = runs[r].L, cfg.max_drafts = 1;
        cfg.seed = seed_of(r), cfg.layer = k_layer_ids[l], cfg.head = (uint32_t)h;
        if (rs_policy_parse(runs[r].policy, &cfg.policy) != RS_OK || rs_head_init(&hd, &cfg) != RS_OK ||
            rs_head_reset(&hd, nullptr) != RS_OK) {
            ++bad;
            rs_head_free(&hd);
            continue;
        }
        for (int p = 0; p < d.P; ++p) {
            const size_t a = ia(d, r, l, p, h);
            rs_ssm_token tk;
            tk.alpha = in.alpha[a], tk.beta = in.beta[a];
            tk.v = &in.v[a * d.dv], tk.k = &in.k[ik(d, r, l, p, g)], tk.q = &in.q[ik(d, r, l, p, g)];
            const rs_status st = rs_head_decode(&hd, &tk, &oc[a * d.dv]);
            if (st != RS_OK && st != RS_E_NONFINITE) ++bad;
        }
        marks[x] = rs_head_first_nonfinite(&hd);
        rs_head_free(&hd);
    }
    return bad == 0;
}

/* ---- the GPU side -------------------------------------------------------------------------------- */

/* the engine of runs sel (global run indices: their policies, windows and seeds) for nl layers of
 * H value heads over G key heads, chunks of up to max_chunk positions */
static rs_cuda_scan *make_scan_of(rs_ssm_kind kind, int nl, const uint32_t *layer_ids, int H, int G, int dv,
                                  int max_chunk, const std::vector<RunSpec> &runs, const std::vector<int> &sel)
{
    std::vector<rs_policy> pol(sel.size());
    std::vector<size_t> win(sel.size());
    std::vector<uint64_t> seeds(sel.size());
    for (size_t j = 0; j < sel.size(); ++j) {
        RSK(rs_policy_parse(runs[sel[j]].policy, &pol[j]));
        win[j] = runs[sel[j]].L, seeds[j] = seed_of(sel[j]);
    }
    rs_cuda_scan_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind, c.n_runs = (int)sel.size(), c.n_layers = nl, c.layer_ids = layer_ids, c.heads = H;
    c.key_heads = G, c.d_v = dv, c.d_k = DK, c.policies = pol.data(), c.windows = win.data();
    c.seeds = seeds.data(), c.max_chunk = max_chunk;
    rs_cuda_scan *s = nullptr;
    RSK(rs_cuda_scan_create(&c, &s));
    return s;
}

static rs_cuda_scan *make_scan(rs_ssm_kind kind, const Dims &d, const std::vector<RunSpec> &runs,
                               const std::vector<int> &sel)
{
    return make_scan_of(kind, d.nl, k_layer_ids, d.H, d.G, d.dv, k_max_chunk, runs, sel);
}

/* Feed positions 0..P-1 of runs sel (global run indices) in chunks sched (cycled), every layer per
 * chunk; og shaped like v for R = sel.size(); marks [sel][nl][H]. */
static void gpu_run(rs_cuda_scan *s, const Inputs &in, const std::vector<int> &sel, const std::vector<int> &sched,
                    cudaStream_t st, std::vector<float> &og, std::vector<int64_t> &marks)
{
    const Dims &d = in.d;
    Dims dl = d;
    dl.R = (int)sel.size();
    const int R = dl.R, H = d.H, G = d.G, dv = d.dv, TM = k_max_chunk;
    const size_t ld_a = H + 3, ld_v = (size_t)H * dv + 4, ld_k = (size_t)G * DK + 8, ld_q = (size_t)G * DK + 4,
                 ld_o = (size_t)H * dv + 5;
    const size_t rows = (size_t)R * TM;
    std::vector<float> ha(rows * ld_a, 0.f), hb(rows * ld_a, 0.f), hv(rows * ld_v, 0.f), hk(rows * ld_k, 0.f),
        hq(rows * ld_q, 0.f), ho(rows * ld_o);
    float *da = dalloc<float>(ha.size()), *db = dalloc<float>(hb.size()), *dvv = dalloc<float>(hv.size());
    float *dk = dalloc<float>(hk.size()), *dq = dalloc<float>(hq.size()), *dout = dalloc<float>(ho.size());
    og.assign(nout(dl), 0.f);
    int idx = 0;
    for (int p0 = 0; p0 < d.P;) {
        const int T = std::min(sched[idx++ % sched.size()], d.P - p0);
        for (int l = 0; l < d.nl; ++l) {
            for (int rr = 0; rr < R; ++rr)
                for (int t = 0; t < T; ++t) {
                    const size_t row = (size_t)rr * T + t, a = ia(d, sel[rr], l, p0 + t, 0);
                    memcpy(&ha[row * ld_a], &in.alpha[a], H * sizeof(float));
                    memcpy(&hb[row * ld_a], &in.beta[a], H * sizeof(float));
                    memcpy(&hv[row * ld_v], &in.v[a * dv], (size_t)H * dv * sizeof(float));
                    memcpy(&hk[row * ld_k], &in.k[ik(d, sel[rr], l, p0 + t, 0)], (size_t)G * DK * sizeof(float));
                    memcpy(&hq[row * ld_q], &in.q[ik(d, sel[rr], l, p0 + t, 0)], (size_t)G * DK * sizeof(float));
                }
            h2d(da, ha), h2d(db, hb), h2d(dvv, hv), h2d(dk, hk), h2d(dq, hq);
            CK(cudaMemset(dout, 0xFF, ho.size() * sizeof(float))); /* NaN: an unwritten output shows */
            rs_cuda_scan_io io;
            io.T = T, io.alpha = da, io.beta = db, io.ld_a = ld_a, io.v = dvv, io.ld_v = ld_v, io.k = dk;
            io.ld_k = ld_k, io.q = dq, io.ld_q = ld_q, io.o = dout, io.ld_o = ld_o;
            RSK(rs_cuda_scan_chunk(s, l, &io, (rs_cuda_stream)st));
            CK(cudaStreamSynchronize(st));
            d2h(ho, dout);
            for (int rr = 0; rr < R; ++rr)
                for (int t = 0; t < T; ++t)
                    memcpy(&og[iv(dl, rr, l, p0 + t, 0)], &ho[((size_t)rr * T + t) * ld_o], (size_t)H * dv * sizeof(float));
        }
        p0 += T;
    }
    marks.assign((size_t)R * d.nl * H, -2);
    RSK(rs_cuda_scan_first_nonfinite(s, marks.data(), (rs_cuda_stream)st));
    CK(cudaGetLastError());
    cudaFree(da), cudaFree(db), cudaFree(dvv), cudaFree(dk), cudaFree(dq), cudaFree(dout);
}

static bool same_bits(const std::vector<float> &a, const std::vector<float> &b)
{
    return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/* one run's slice (all layers) of an array shaped like v */
static std::vector<float> run_slice(const Dims &d, const std::vector<float> &x, int r)
{
    const size_t n = (size_t)d.nl * d.P * d.H * d.dv;
    return std::vector<float>(x.begin() + (size_t)r * n, x.begin() + (size_t)(r + 1) * n);
}

#endif /* TEST_CUDA_SCAN_REF_H */
