/* test_minifloat_fast.c — the FP16/BF16 fast paths of rs_{fp16,bf16}_encode_{rtn,sr} make
 * exactly the decisions of the generic encoder rs_elem_encode (the reference that the CUDA
 * twin mirrors), on every input class: random bit patterns over the whole float32 range,
 * each fast path's boundaries and one ulp either side, ties, and SR with every k in 1..32. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "replayssm/quant/rs_minifloat.h"
#include "rs_test_util.h"

static uint32_t generic_(rs_elem t, float x, rs_rounding mode, uint32_t r, int k)
{
    uint32_t c = 0xFFFFFFFFu;
    assert_int_equal(rs_elem_encode(t, x, mode, r, k, &c), RS_OK);
    return c;
}

static void check_one_(float x, uint32_t r, int k)
{
    const uint32_t h = rs_fp16_encode_rtn(x), hg = generic_(RS_ELEM_FP16, x, RS_ROUND_RTN, 0, 32);
    const uint32_t b = rs_bf16_encode_rtn(x), bg = generic_(RS_ELEM_BF16, x, RS_ROUND_RTN, 0, 32);
    uint16_t hs16 = 0, bs16 = 0;
    if (rs_fp16_encode_sr(x, r, k, &hs16) != RS_OK || rs_bf16_encode_sr(x, r, k, &bs16) != RS_OK)
        fail_msg("sr wrapper failed for k = %d: %s", k, rs_last_error());
    const uint32_t hs = hs16, hsg = generic_(RS_ELEM_FP16, x, RS_ROUND_SR, r, k);
    const uint32_t bs = bs16, bsg = generic_(RS_ELEM_BF16, x, RS_ROUND_SR, r, k);
    if (h != hg || b != bg || hs != hsg || bs != bsg)
        fail_msg("x = %a (0x%08x), r = 0x%08x, k = %d: fp16 rtn %04x/%04x sr %04x/%04x, bf16 rtn %04x/%04x sr "
                 "%04x/%04x (fast/generic)",
                 (double)x, rs_test_f2u(x), r, k, h, hg, hs, hsg, b, bg, bs, bsg);
}

static void test_random_bits(void **state)
{
    (void)state;
    uint64_t s = 0xFA57u;
    for (int i = 0; i < 4000000; ++i) {
        const uint64_t z = rs_test_splitmix64(&s);
        const uint32_t bits = (uint32_t)z;
        float x = rs_test_u2f(bits);
        if (isnan(x)) continue; /* NaN payload handling is the generic path's, tested elsewhere */
        check_one_(x, (uint32_t)(z >> 32), 1 + (int)((z >> 27) % 32));
    }
}

static void test_ranges_and_boundaries(void **state)
{
    (void)state;
    /* dense sampling of the FP16 range and of the bf16 top binade, with 32-bit and short k */
    uint64_t s = 0xB0DEu;
    for (int i = 0; i < 2000000; ++i) {
        const uint64_t z = rs_test_splitmix64(&s);
        const float mag = (float)ldexp(1.0 + (double)(z & 0xFFFFFF) / 16777216.0, (int)((z >> 24) % 40) - 26);
        const float x = (z >> 63) ? -mag : mag;
        check_one_(x, (uint32_t)(z >> 32), (z >> 30) & 1 ? 32 : 13 + (int)((z >> 40) % 20));
    }
    /* every boundary of the fast paths and its neighbours, ties included, all k */
    const uint32_t edges[] = {0x38800000u, 0x477FE000u, 0x477FF000u, 0x477FEFFFu, 0x477FF001u, 0x7F7F0000u,
                              0x7F7F7FFFu, 0x7F7F8000u, 0x7F7FFFFFu, 0x387FFFFFu, 0x38801000u, 0x33800000u,
                              0x00000001u, 0x007FFFFFu, 0x00800000u, 0x3F801000u, 0x3F803000u, 0x3F808000u,
                              0x3F818000u, 0x00000000u, 0x7F800000u};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; ++e)
        for (int d = -2; d <= 2; ++d)
            for (int k = 1; k <= 32; ++k)
                for (uint32_t rr = 0; rr < 64; ++rr) {
                    const uint32_t u = edges[e] + (uint32_t)d;
                    if ((u & 0x7FFFFFFFu) > 0x7F800000u) continue;
                    const uint32_t r = rr * 0x04000001u + (rr << 26);
                    check_one_(rs_test_u2f(u), r, k);
                    check_one_(-rs_test_u2f(u), ~r, k);
                }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_bits),
        cmocka_unit_test(test_ranges_and_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
