/* test_cuda_scan_codec.h — part of test_cuda_scan.cu (included once; not a library header): the
 * scan store's fast element coder (rs_cuda_scan_dev.cuh rs_scan_e2m1, __host__ __device__) against
 * the codec it replaces (rs_codec.h rs_codec_nvfp4_elem, which the CPU quantizers use too), on the
 * CPU, so no GPU is needed. Exact: every code must be equal. Inputs: a strided sweep over every
 * float32 bit pattern from 0 to past 6 (both signs, stride 61: ~36M values, every binade, the
 * grid points and midpoints hit by the exact-value list below), multipliers 1 and random ones
 * (incl. FLT_MAX: a zero block scale), each with RTN and with SR under random k in 1..32 and
 * random words, plus the words 0, 2^32 - 1 and those next to the SR threshold; and a list of
 * special values (+-0, subnormals, the E2M1 grid and its midpoints, 6, 7, Inf, NaN). */
#ifndef TEST_CUDA_SCAN_CODEC_H
#define TEST_CUDA_SCAN_CODEC_H

#include "rs_cuda_scan_dev.cuh" /* private to kernels/: the fast coders under test */

/* the checks' own random words (splitmix64), so that the cases after them see the same ct_rnd
   stream of inputs as without them */
static uint32_t codec_rnd32(void)
{
    static uint64_t x = 0xC0DEC0DE12345678ull;
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static bool e2m1_one(float x, float mult, uint32_t r, int k, long &bad)
{
    const uint32_t want_rtn = rs_codec_nvfp4_elem(x, mult, 0, 0u, 32) & 15u;
    const uint32_t want_sr = rs_codec_nvfp4_elem(x, mult, 1, r, k) & 15u;
    const uint32_t got_rtn = rs_scan_e2m1<false>(x, mult, 0u, 32), got_sr = rs_scan_e2m1<true>(x, mult, r, k);
    const bool ok = want_rtn == got_rtn && want_sr == got_sr;
    if (!ok && bad++ < 5)
        fprintf(stderr, "e2m1 x %a mult %a r %08x k %d: rtn %u/%u sr %u/%u (codec/fast)\n", x, mult, r, k, want_rtn,
                got_rtn, want_sr, got_sr);
    return ok;
}

/* the FP16 / BF16 element as the store computes it vs the codec's coder and decoder */
template <bool BF, bool SR> static uint32_t half_ref(float x, uint32_t r, int k)
{
    const uint32_t c = BF ? (SR ? rs_codec_bf16_sr(x, r, k) : rs_codec_bf16_rtn(x))
                          : (SR ? rs_codec_fp16_sr(x, r, k) : rs_codec_fp16_rtn(x));
    return ct_f2u(BF ? rs_codec_bf16_value(c) : rs_codec_fp16_value(c));
}
template <bool BF, bool SR> static void half_one(float x, uint32_t r, int k, long &bad)
{
    const uint32_t want = half_ref<BF, SR>(x, r, k), got = ct_f2u(rs_scan_half_rt<BF, SR>(x, r, k));
    if (want != got && bad++ < 5)
        fprintf(stderr, "%s-%s x %a r %08x k %d: %08x/%08x (codec/fast)\n", BF ? "bf16" : "fp16", SR ? "sr" : "rtn", x,
                r, k, want, got);
}

static void codec_host_checks(void)
{
    {
        /* every 31st float32 bit pattern (all signs, binades, subnormals, Inf, NaN payloads), each
           coder, SR with random words and k (1..32: both sides of the fast paths' k >= 13 / 16) */
        long bad = 0, n = 0;
        for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 31) {
            const float x = ct_u2f((uint32_t)b);
            const uint32_t r = codec_rnd32();
            const int k = (b / 31) % 4 == 0 ? 1 + (int)(codec_rnd32() % 32u) : 32;
            half_one<false, false>(x, r, k, bad), half_one<false, true>(x, r, k, bad);
            half_one<true, false>(x, r, k, bad), half_one<true, true>(x, r, k, bad);
            ++n;
        }
        ct_report("host: FP16/BF16 store coders == rs_codec", bad == 0, "%ld inputs x 4 coders, %ld differ", n, bad);
    }
    long bad = 0, n = 0;
    const float mults[4] = {1.0f, FLT_MAX, 0x1.8p-3f, 3.7f};
    for (uint64_t b = 0; b <= 0x40E00000ull; b += 61) {
        const uint32_t r = codec_rnd32();
        const int k = 1 + (int)(codec_rnd32() % 32u);
        for (int sg = 0; sg < 2; ++sg) {
            const float x = ct_u2f((uint32_t)b | (sg ? 0x80000000u : 0u));
            e2m1_one(x, mults[(b / 61) & 3], r, k, bad), ++n;
        }
    }
    const float special[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1p-41f, 0x1p-40f, 0.25f, 0.5f, 0.75f,
                             1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f, 7.0f, -5.0f, -0.75f,
                             INFINITY, -INFINITY, NAN};
    for (float x : special)
        for (int k = 1; k <= 32; ++k) {
            const uint32_t th = k == 32 ? 0u : 1u << (32 - k); /* one step of r >> (32 - k) */
            const uint32_t rs[6] = {0u, 0xFFFFFFFFu, 0x80000000u, 0x80000000u - th, 0x80000000u + th, codec_rnd32()};
            for (uint32_t r : rs)
                for (float m : mults) e2m1_one(x, m, r, k, bad), ++n;
        }
    ct_report("host: E2M1 fast coder == rs_codec_nvfp4_elem", bad == 0, "%ld inputs x (RTN, SR), %ld differ", n, bad);
}

#endif /* TEST_CUDA_SCAN_CODEC_H */
