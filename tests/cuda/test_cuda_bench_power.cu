/* test_cuda_bench_power.cu — the benchmark's clock and power probe (kernels/bench/rs_bench_power.h), the parts that
 * need no GPU: so it runs, and must pass, on CI's CPU-only machine as well as on the H200.
 *
 *   - rs_bench_power_window: the mean of the samples inside [t0, t1] (the edges included), samples outside ignored;
 *     with none inside, the newest sample before t0 (whatever the order the driver returns them in); NaN with
 *     neither; the expected values are small integers and their means, exact in double;
 *   - rs_bench_power_capped: violation ns / window us / 1000, capped at 1, NaN for an empty window or a counter that
 *     went back (the first version subtracted unsigned and would have reported a reset as 100 % capped);
 *   - the probe end to end: without a GPU or NVML every field is NaN and the reason is named; with them (the H200)
 *     the clock of a few ticks lies in (0, 5000) MHz, the capped fraction in [0, 1] and the power is positive or NaN
 *     (the driver may take no power sample inside a window this short and none before it: then NaN, by design).
 * The per-row columns against an independent reader (nvidia-smi) are compared on the device by
 * kernels/bench/check_clocks.py (docs/kernels.md).
 * Exit 0 if every check passes, 1 otherwise (never 77). Usage: test_cuda_bench_power
 */
#include <cmath>
#include <unistd.h>

#include "cuda_test_util.h"
#include "bench/rs_bench_power.h"
#include "replayssm/cuda/rs_cuda_bench.h" /* rs_cuda_bench_power_unavailable */

static void test_window()
{
    const rs_bench_sample in[] = {{90, 7}, {100, 1}, {150, 2}, {200, 6}, {260, 100}};
    double m = rs_bench_power_window(in, 5, 100, 200);
    ct_report("window: mean of the samples inside, edges included", m == 3.0, "%.17g (want 3)", m);
    m = rs_bench_power_window(in, 5, 151, 199);
    ct_report("window: none inside -> the newest before t0", m == 2.0, "%.17g (want 2, the sample at 150)", m);
    const rs_bench_sample shuffled[] = {{150, 2}, {40, 9}, {100, 1}, {90, 7}};
    m = rs_bench_power_window(shuffled, 4, 160, 170);
    ct_report("window: the newest before t0 in any order", m == 2.0, "%.17g (want 2)", m);
    m = rs_bench_power_window(in, 5, 10, 80);
    ct_report("window: nothing inside or before -> NaN", std::isnan(m), "%.17g", m);
    m = rs_bench_power_window(in, 0, 0, 1000);
    ct_report("window: no samples -> NaN", std::isnan(m), "%.17g", m);
    const rs_bench_sample zero_ts[] = {{0, 5}};
    m = rs_bench_power_window(zero_ts, 1, 10, 20);
    ct_report("window: a sample at time 0 still counts as before", m == 5.0, "%.17g (want 5)", m);
}

static void test_capped()
{
    double f = rs_bench_power_capped(1000, 1000 + 250000, 0, 1000); /* 250 us capped of 1000 us */
    ct_report("capped: 250 us of 1000", f == 0.25, "%.17g (want 0.25)", f);
    f = rs_bench_power_capped(5, 5, 100, 200);
    ct_report("capped: none", f == 0.0, "%.17g", f);
    f = rs_bench_power_capped(0, 2000000, 0, 1000); /* the counter ran ahead of our clock */
    ct_report("capped: at most 1", f == 1.0, "%.17g", f);
    f = rs_bench_power_capped(900, 100, 0, 1000);
    ct_report("capped: a counter that went back -> NaN", std::isnan(f), "%.17g", f);
    f = rs_bench_power_capped(0, 10, 500, 500);
    ct_report("capped: an empty window -> NaN", std::isnan(f), "%.17g", f);
}

static void test_probe()
{
    rs_bench_power p;
    rs_bench_power_begin(&p);
    for (int i = 0; i < 4; ++i) rs_bench_power_tick(&p), usleep(500); /* a window of ~2 ms */
    double mhz, w, cap;
    rs_bench_power_end(&p, &mhz, &w, &cap);
    const char *why = rs_cuda_bench_power_unavailable();
    if (why) {
        ct_report("probe: unavailable -> NaN fields and a reason", std::isnan(mhz) && std::isnan(w) && std::isnan(cap) &&
                                                                        *why,
                  "reason '%s'; %g MHz %g W %g", why, mhz, w, cap);
    } else {
        ct_report("probe: clock, power and capped fraction in range",
                  mhz > 0 && mhz < 5000 && (std::isnan(w) || w > 0) && cap >= 0 && cap <= 1,
                  "%.0f MHz, %.1f W, capped %.3f", mhz, w, cap);
    }
}

int main()
{
    printf("test_cuda_bench_power: the bench's clock and power probe (no device needed)\n");
    test_window();
    test_capped();
    test_probe();
    return ct_finish("test_cuda_bench_power");
}
