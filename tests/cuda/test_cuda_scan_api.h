/* test_cuda_scan_api.h — part of test_cuda_scan.cu (included once; not a library header): the
 * argument checks of rs_cuda_scan.h (host-only ones first, which run without a GPU). */
#ifndef TEST_CUDA_SCAN_API_H
#define TEST_CUDA_SCAN_API_H

#include "test_cuda_scan_ref.h"

/* ---- API checks ---------------------------------------------------------------------------------------- */

struct CfgStore {
    std::vector<rs_policy> pol;
    std::vector<size_t> win;
    std::vector<uint64_t> seeds;
    rs_cuda_scan_config c;
    CfgStore(rs_ssm_kind kind, int dv)
    {
        pol.resize(2), win = {4, 4}, seeds = {1, 2};
        RSK(rs_policy_parse("shared:fp8-rtn", &pol[0]));
        RSK(rs_policy_parse("split:nvfp4-sr/fp16-rtn", &pol[1]));
        memset(&c, 0, sizeof c);
        c.kind = kind, c.n_runs = 2, c.n_layers = 2, c.layer_ids = k_layer_ids, c.heads = 4, c.key_heads = 2;
        c.d_v = dv, c.d_k = DK, c.policies = pol.data(), c.windows = win.data(), c.seeds = seeds.data();
        c.max_chunk = 8;
    }
};

/* host-only: no CUDA call is reached on these paths */
static void api_host_checks(void)
{
    bool ok = rs_cuda_scan_bytes(nullptr) == 0;
    rs_cuda_scan *s = (rs_cuda_scan *)(uintptr_t)1;
    ok = ok && rs_cuda_scan_create(nullptr, &s) == RS_E_INVAL && s == nullptr;
    CfgStore good(RS_SSM_GDN, 32);
    ok = ok && rs_cuda_scan_create(&good.c, nullptr) == RS_E_INVAL;
    const size_t b = rs_cuda_scan_bytes(&good.c);
    const size_t states = (size_t)(1 + 2) * 2 * 4 * 32 * DK * 4, marks = (size_t)2 * 2 * 4 * 8;
    const bool bytes_ok = b >= states + marks && b <= states + marks + 3 * 256 + 2 * 128;
    struct Bad {
        const char *what;
        rs_status want;
        void (*edit)(CfgStore &);
    };
    const Bad bad[] = {
        {"kind", RS_E_INVAL, [](CfgStore &x) { x.c.kind = (rs_ssm_kind)7; }},
        {"n_runs 0", RS_E_INVAL, [](CfgStore &x) { x.c.n_runs = 0; }},
        {"n_layers 0", RS_E_INVAL, [](CfgStore &x) { x.c.n_layers = 0; }},
        {"heads % key_heads", RS_E_INVAL, [](CfgStore &x) { x.c.key_heads = 3; }},
        {"d_v 0", RS_E_INVAL, [](CfgStore &x) { x.c.d_v = 0; }},
        {"max_chunk 0", RS_E_INVAL, [](CfgStore &x) { x.c.max_chunk = 0; }},
        {"NULL policies", RS_E_INVAL, [](CfgStore &x) { x.c.policies = nullptr; }},
        {"NULL windows", RS_E_INVAL, [](CfgStore &x) { x.c.windows = nullptr; }},
        {"NULL seeds", RS_E_INVAL, [](CfgStore &x) { x.c.seeds = nullptr; }},
        {"NULL layer_ids", RS_E_INVAL, [](CfgStore &x) { x.c.layer_ids = nullptr; }},
        {"window 0 (shared)", RS_E_INVAL, [](CfgStore &x) { x.win[0] = 0; }},
        {"bad policy mode", RS_E_INVAL, [](CfgStore &x) { x.pol[1].mode = (rs_policy_mode)9; }},
        {"d_k 64", RS_E_UNSUPPORTED, [](CfgStore &x) { x.c.d_k = 64; }},
        {"d_v 24", RS_E_UNSUPPORTED, [](CfgStore &x) { x.c.d_v = 24; }},
        {"d_v 272", RS_E_UNSUPPORTED, [](CfgStore &x) { x.c.d_v = 272; }},
    };
    std::string fails;
    for (const Bad &x : bad) {
        CfgStore c(RS_SSM_GDN, 32);
        x.edit(c);
        rs_cuda_scan *o = (rs_cuda_scan *)(uintptr_t)1;
        const rs_status st = rs_cuda_scan_create(&c.c, &o);
        if (st != x.want || o != nullptr || rs_cuda_scan_bytes(&c.c) != 0) fails += std::string(" ") + x.what;
    }
    CfgStore conv0(RS_SSM_MAMBA2, 64);
    RSK(rs_policy_parse("conv:bf16-sr", &conv0.pol[0]));
    conv0.win[0] = 0; /* conv ignores its window */
    const bool conv_ok = rs_cuda_scan_bytes(&conv0.c) > 0;
    rs_cuda_scan_io io;
    memset(&io, 0, sizeof io);
    int64_t m[1];
    const bool null_ok = rs_cuda_scan_chunk(nullptr, 0, &io, nullptr) == RS_E_INVAL &&
                         rs_cuda_scan_reset(nullptr, nullptr) == RS_E_INVAL &&
                         rs_cuda_scan_first_nonfinite(nullptr, m, nullptr) == RS_E_INVAL;
    rs_cuda_scan_free(nullptr);
    ct_report("api: config checks (host)", ok && bytes_ok && fails.empty() && conv_ok && null_ok,
              "bytes %zu (states+marks %zu)%s%s", b, states + marks, fails.empty() ? "" : "; wrong:", fails.c_str());
}

static void api_device_checks(cudaStream_t st)
{
    for (int kind = 0; kind < 2; ++kind) {
        const bool gdn = kind == 1;
        CfgStore c(gdn ? RS_SSM_GDN : RS_SSM_MAMBA2, 32);
        rs_cuda_scan *s = nullptr;
        RSK(rs_cuda_scan_create(&c.c, &s));
        const int R = 2, T = 8, H = 4, G = 2, dv = 32;
        float *a = dalloc<float>((size_t)R * T * H), *v = dalloc<float>((size_t)R * T * H * dv + 4);
        float *k = dalloc<float>((size_t)R * T * G * DK + 4), *o = dalloc<float>((size_t)R * T * H * dv);
        CK(cudaMemset(a, 0, (size_t)R * T * H * 4));
        CK(cudaMemset(v, 0, ((size_t)R * T * H * dv + 4) * 4));
        CK(cudaMemset(k, 0, ((size_t)R * T * G * DK + 4) * 4));
        rs_cuda_scan_io io;
        io.T = T, io.alpha = a, io.beta = a, io.ld_a = H, io.v = v, io.ld_v = (size_t)H * dv, io.k = k;
        io.ld_k = (size_t)G * DK, io.q = k, io.ld_q = (size_t)G * DK, io.o = o, io.ld_o = (size_t)H * dv;
        bool ok = true;
        std::string fails;
        auto expect = [&](const char *what, int layer, rs_cuda_scan_io x, rs_status want) {
            if (rs_cuda_scan_chunk(s, layer, &x, (rs_cuda_stream)st) != want) ok = false, fails += std::string(" ") + what;
        };
        rs_cuda_scan_io x = io;
        expect("layer -1", -1, io, RS_E_INVAL);
        expect("layer 2", 2, io, RS_E_INVAL);
        x = io, x.T = 0, expect("T 0", 0, x, RS_E_INVAL);
        x = io, x.T = 9, expect("T > max_chunk", 0, x, RS_E_INVAL);
        if (rs_cuda_scan_chunk(s, 0, nullptr, (rs_cuda_stream)st) != RS_E_INVAL) ok = false, fails += " NULL io";
        x = io, x.alpha = nullptr, expect("NULL alpha", 0, x, RS_E_INVAL);
        x = io, x.o = nullptr, expect("NULL o", 0, x, RS_E_INVAL);
        x = io, x.k = k + 1, expect("misaligned k", 0, x, RS_E_INVAL);
        x = io, x.v = v + 2, expect("misaligned v", 0, x, RS_E_INVAL);
        x = io, x.ld_v = (size_t)H * dv + 2, expect("ld_v % 4", 0, x, RS_E_INVAL);
        x = io, x.ld_k = 4, expect("ld_k < row", 0, x, RS_E_INVAL);
        x = io, x.ld_o = 1, expect("ld_o < row", 0, x, RS_E_INVAL);
        x = io, x.beta = nullptr, expect(gdn ? "NULL beta (GDN)" : "NULL beta (Mamba-2: allowed)", 0, x,
                                         gdn ? RS_E_INVAL : RS_OK);
        expect("valid", 1, io, RS_OK);
        CK(cudaStreamSynchronize(st));
        std::vector<int64_t> m((size_t)R * 2 * H, -2);
        RSK(rs_cuda_scan_first_nonfinite(s, m.data(), (rs_cuda_stream)st));
        for (int64_t mm : m) ok = ok && mm == -1;
        rs_cuda_scan_free(s);
        cudaFree(a), cudaFree(v), cudaFree(k), cudaFree(o);
        ct_report(gdn ? "api: chunk checks (gdn)" : "api: chunk checks (mamba2)", ok, "%s",
                  fails.empty() ? "every bad call refused, valid calls run" : fails.c_str());
    }
}

#endif /* TEST_CUDA_SCAN_API_H */
