/* test_cuda_codec.cu — the GPU quantizers against quant/ on the CPU, bit for bit. Both sides run
 * the same integer codec (replayssm/quant/rs_codec.h), so any difference is a build or launch
 * defect (a flag that flushes denormals or contracts a product, a thread mapping that hands an
 * element the wrong Philox word), never a rounding tolerance:
 *   1. Philox: rs_cuda_rand_fill == rs_rand_fill (which is the CPU's vectorised 8-block path,
 *      itself checked against rs_rand_u32 by tests/test_philox.c).
 *   2. Scalar codecs: rs_cuda_elem_encode / _decode == rs_elem_encode / _decode on every code's
 *      value and its float32 neighbours, midpoints, overflow edges, specials, random bit
 *      patterns; RTN and SR with k in {32, 16, 8, 5, 1}.
 *   3. Block quantizers: rs_cuda_quantize (every stored byte), rs_cuda_dequantize and
 *      rs_cuda_quantize_roundtrip (bits; also in place) == quant/rs_qtensor.c, over every format
 *      and adversarial inputs (scale spread 2^-60..2^60, zero blocks, subnormals, FLT_MAX). The
 *      GPU fp16/bf16 kernels call the codec's bit paths, the CPU quantizer the wrappers of
 *      rs_minifloat.c around the same functions; E4M3/E2M1 and the scale formulas likewise.
 * Exit 0 if every check passes, 1 otherwise, 77 without a GPU. Usage: test_cuda_codec [--quick]
 */
#include <algorithm>
#include <cfloat>

#include "cuda_test_util.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"
#include "replayssm/quant/rs_qtensor.h"

/* ============================== 1. Philox ============================== */
static void test_philox(void)
{
    const size_t n = (size_t)1 << 20;
    uint32_t *d = dalloc<uint32_t>(n);
    std::vector<uint32_t> g(n), c(n);
    const uint64_t cases[4][3] = {{0, 0, 0}, {0x123456789ABCDEFull, 77, 3}, {~0ull, ~0ull, (1ull << 40) + 1}, {42, rs_stream_id(3, 17, 101, 123456), 5}};
    size_t bad = 0;
    for (auto &cs : cases) {
        RSK(rs_cuda_rand_fill(cs[0], cs[1], cs[2], n, d, nullptr));
        CK(cudaDeviceSynchronize());
        d2h(g, d);
        rs_rand_fill(cs[0], cs[1], cs[2], n, c.data());
        for (size_t i = 0; i < n; ++i) bad += g[i] != c[i];
        /* and the scalar keying (rs_rand_u32 is the shared codec on the host, the fill above the
         * CPU's own 8-block path) on a stretch, in case both CPU paths went wrong together */
        for (size_t i = 0; i < 4096; ++i) bad += g[i] != rs_rand_u32(cs[0], cs[1], cs[2] + i);
    }
    ct_report("philox rand_fill == CPU", bad == 0, "%zu mismatches of %zu words", bad, 4 * (n + 4096));
    cudaFree(d);
}

/* ============================== 2. scalar codecs ============================== */
static void codec_inputs(rs_elem t, std::vector<float> &x)
{
    const uint32_t ncodes = t == RS_ELEM_E4M3 ? 256u : t == RS_ELEM_E2M1 ? 16u : 65536u;
    std::vector<double> vals;
    for (uint32_t c = 0; c < ncodes; ++c) {
        const float v = rs_elem_decode(t, c);
        if (std::isfinite(v)) vals.push_back(v);
    }
    for (double v : vals) {
        const float f = (float)v;
        x.push_back(f);
        for (int d = 1; d <= 2; ++d) {
            x.push_back(nextafterf(f, INFINITY));
            x.push_back(nextafterf(f, -INFINITY));
        }
        x.push_back(nextafterf(nextafterf(f, INFINITY), INFINITY));
        x.push_back(nextafterf(nextafterf(f, -INFINITY), -INFINITY));
    }
    /* midpoints between consecutive representable values, and their neighbours */
    std::vector<double> pos;
    for (double v : vals) if (v >= 0) pos.push_back(v);
    std::sort(pos.begin(), pos.end());
    for (size_t i = 0; i + 1 < pos.size(); ++i) {
        const float m = (float)(0.5 * (pos[i] + pos[i + 1]));
        for (float s : {1.0f, -1.0f}) {
            x.push_back(s * m);
            x.push_back(s * nextafterf(m, INFINITY));
            x.push_back(s * nextafterf(m, 0.0f));
            x.push_back(s * (float)(pos[i] + 0.25 * (pos[i + 1] - pos[i])));
        }
    }
    /* overflow edges, specials, float32 subnormals, tiny values */
    const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f, -1e-45f,
                        448.0f, 464.0f, 463.99997f, 480.0f, 6.0f, 7.0f, 6.9999995f, 5.0f, 65504.0f, 65519.996f,
                        65520.0f, 65536.0f, 3.3895314e38f, 3.4028235e38f, 1e-7f, 5.9604645e-8f, 2.9802322e-8f,
                        1.953125e-3f, 9.765625e-4f, 0.25f, 0.75f};
    for (float f : sp) x.push_back(f);
    for (int i = 0; i < 4096; ++i) x.push_back(ct_u2f(ct_rnd32() & 0x807FFFFFu)); /* float32 subnormals */
    for (int i = 0; i < (ct_quick ? 5000 : 200000); ++i) x.push_back(ct_u2f(ct_rnd32()));              /* any bit pattern */
    for (int i = 0; i < 50000; ++i) x.push_back((float)(ct_normal() * ldexp(1.0, (int)(ct_rnd32() % 40) - 20)));
}

static void test_codecs(void)
{
    const rs_elem types[4] = {RS_ELEM_E4M3, RS_ELEM_E2M1, RS_ELEM_FP16, RS_ELEM_BF16};
    const int ks[5] = {32, 16, 8, 5, 1};
    for (rs_elem t : types) {
        std::vector<float> x;
        codec_inputs(t, x);
        const size_t n = x.size();
        std::vector<uint32_t> r(n), g(n);
        for (size_t i = 0; i < n; ++i) r[i] = ct_rnd32();
        r[0] = 0; r[1] = 0xFFFFFFFFu; r[2] = 0x80000000u; r[3] = 0x7FFFFFFFu;
        float *dx = dalloc<float>(n);
        uint32_t *dr = dalloc<uint32_t>(n), *dc = dalloc<uint32_t>(n);
        h2d(dx, x);
        h2d(dr, r);
        size_t bad = 0, total = 0;
        for (int mi = 0; mi < 6; ++mi) {
            const rs_rounding mode = mi == 0 ? RS_ROUND_RTN : RS_ROUND_SR;
            const int k = mi == 0 ? 32 : ks[mi - 1];
            RSK(rs_cuda_elem_encode(t, mode, k, dx, dr, n, dc, nullptr));
            CK(cudaDeviceSynchronize());
            d2h(g, dc);
            for (size_t i = 0; i < n; ++i) {
                uint32_t c = 0;
                const rs_status st = rs_elem_encode(t, x[i], mode, r[i], k, &c);
                const uint32_t want = st == RS_OK ? c : RS_CUDA_CODE_INVALID;
                if (g[i] != want) {
                    if (bad < 5)
                        fprintf(stderr, "  %s mode %d k %d x=%a r=%08x: gpu %x cpu %x\n", rs_elem_name(t), (int)mode, k,
                                x[i], r[i], g[i], want);
                    ++bad;
                }
                ++total;
            }
        }
        rs_error_clear();
        char name[64];
        snprintf(name, sizeof name, "encode %s RTN+SR(k=32,16,8,5,1) == CPU", rs_elem_name(t));
        ct_report(name, bad == 0, "%zu mismatches of %zu encodings", bad, total);

        /* decode: every code */
        const uint32_t ncodes = t == RS_ELEM_E4M3 ? 256u : t == RS_ELEM_E2M1 ? 16u : 65536u;
        std::vector<uint32_t> codes(ncodes);
        std::vector<float> y(ncodes);
        for (uint32_t c = 0; c < ncodes; ++c) codes[c] = c;
        h2d(dc, codes);
        RSK(rs_cuda_elem_decode(t, dc, ncodes, dx, nullptr));
        CK(cudaDeviceSynchronize());
        d2h(y, dx);
        size_t dbad = 0;
        for (uint32_t c = 0; c < ncodes; ++c) {
            const float w = rs_elem_decode(t, c);
            const bool same = (std::isnan(w) && std::isnan(y[c]) && (ct_f2u(w) >> 31) == (ct_f2u(y[c]) >> 31)) || ct_f2u(w) == ct_f2u(y[c]);
            dbad += !same;
        }
        snprintf(name, sizeof name, "decode %s all codes == CPU", rs_elem_name(t));
        ct_report(name, dbad == 0, "%zu mismatches of %u codes", dbad, ncodes);
        cudaFree(dx); cudaFree(dr); cudaFree(dc);
    }
}

/* ============================== 3. block quantizers ============================== */
static void qt_input(int kind, size_t n, std::vector<float> &x)
{
    x.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const size_t blk = i / 16;
        double v;
        switch (kind) {
        case 0: v = ct_normal(); break;                                                  /* plain */
        case 1: { /* every 16-block its own scale 2^-60..2^60, some zero blocks */
            const uint64_t hsh = (blk * 0x9E3779B97F4A7C15ull) >> 40;
            v = (hsh % 11 == 0) ? 0.0 : ct_normal() * ldexp(1.0, (int)(hsh % 121) - 60);
            break;
        }
        case 2: v = (double)ct_u2f(ct_rnd32() & 0x807FFFFFu); break;                       /* float32 subnormals */
        case 3: v = (double)((int)(ct_rnd32() % 17) - 8) * 0.125; break;                 /* on a coarse grid */
        default: v = (i % 97 == 0) ? (i % 2 ? FLT_MAX : -3e38) : ct_normal() * 1e30; break; /* near overflow */
        }
        x[i] = (float)v;
    }
}

static bool same_bits(const float *a, const float *b, size_t n, size_t *bad)
{
    *bad = 0;
    for (size_t i = 0; i < n; ++i) *bad += ct_f2u(a[i]) != ct_f2u(b[i]);
    return *bad == 0;
}

static void test_qtensor(void)
{
    const char *fmts[] = {"fp32", "fp16-rtn", "fp16-sr", "fp16-sr13", "bf16-rtn", "bf16-sr", "bf16-sr8",
                          "fp8-rtn", "fp8-sr", "fp8-sr20", "fp8-rtn+pow2", "fp8-sr+pow2",
                          "nvfp4-rtn", "nvfp4-sr", "nvfp4-sr8", "nvfp4-rtn+floor", "nvfp4-sr+floor"};
    const size_t E = 64 * 128, n = (ct_quick ? 1 : 3) * E; /* Nemotron-3-Super head states */
    float *dx = dalloc<float>(n), *dy = dalloc<float>(n);
    std::vector<float> x, y(n), yc(n);
    for (const char *fs : fmts) {
        rs_format f;
        RSK(rs_format_parse(fs, &f));
        size_t bad_q = 0, bad_d = 0, bad_r = 0, bad_ip = 0;
        for (int kind = 0; kind < 5; ++kind) {
            qt_input(kind, n, x);
            h2d(dx, x);
            const uint64_t seed = ct_rnd64(), stream = ct_rnd64();
            rs_qtensor hq, dq, gq;
            RSK(rs_qtensor_alloc(&hq, &f, n, E));
            RSK(rs_qtensor_alloc(&gq, &f, n, E));
            RSK(rs_cuda_qtensor_alloc(&dq, &f, n, E));
            RSK(rs_quantize(&hq, x.data(), seed, stream));
            RSK(rs_cuda_quantize(&dq, dx, seed, stream, nullptr));
            const size_t bytes = rs_qtensor_bytes(&hq);
            CK(cudaMemcpy(gq.codes, dq.codes, bytes, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < bytes; ++i) bad_q += hq.codes[i] != gq.codes[i];
            /* dequantize the CPU's codes on the GPU */
            CK(cudaMemcpy(dq.codes, hq.codes, bytes, cudaMemcpyHostToDevice));
            RSK(rs_cuda_dequantize(&dq, dy, nullptr));
            CK(cudaDeviceSynchronize());
            d2h(y, dy);
            RSK(rs_dequantize(&hq, yc.data()));
            size_t b;
            same_bits(y.data(), yc.data(), n, &b);
            bad_d += b;
            /* round trip, out of place and in place */
            RSK(rs_quantize_roundtrip(&f, x.data(), n, E, seed, stream, yc.data()));
            RSK(rs_cuda_quantize_roundtrip(&f, dx, n, E, seed, stream, dy, nullptr));
            CK(cudaDeviceSynchronize());
            d2h(y, dy);
            same_bits(y.data(), yc.data(), n, &b);
            bad_r += b;
            RSK(rs_cuda_quantize_roundtrip(&f, dx, n, E, seed, stream, dx, nullptr));
            CK(cudaDeviceSynchronize());
            d2h(y, dx);
            same_bits(y.data(), yc.data(), n, &b);
            bad_ip += b;
            rs_qtensor_free(&hq);
            rs_qtensor_free(&gq);
            rs_cuda_qtensor_free(&dq);
        }
        char name[64];
        snprintf(name, sizeof name, "qtensor %s == CPU (5 input kinds)", fs);
        ct_report(name, bad_q + bad_d + bad_r + bad_ip == 0, "byte/elem mismatches: quantize %zu, dequantize %zu, roundtrip %zu, in-place %zu",
               bad_q, bad_d, bad_r, bad_ip);
    }
    cudaFree(dx);
    cudaFree(dy);
}

int main(int argc, char **argv)
{
    const int rc = ct_init(argc, argv, "test_cuda_codec");
    if (rc) return rc;
    test_philox();
    test_codecs();
    test_qtensor();
    return ct_finish("test_cuda_codec");
}
