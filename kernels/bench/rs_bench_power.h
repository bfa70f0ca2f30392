/* rs_bench_power.h — the GPU's clocks and power over one benchmark case's timed replays (private to kernels/bench/).
 *
 * Why: the H200 holds its board power at 700 W by lowering the SM clock (NVML's software power cap, clock event
 * reason 0x4). The ReplaySSM steps at B >= 128 draw ~700 W, so their rows are timed at 1.5-1.98 GHz depending on
 * where the power controller stands, and the latency-bound fp32 read follows the clock: two rows of the same kernel
 * measured 5-7 % apart in one run (docs/kernels.md). Each row therefore records the mean SM
 * clock, the mean board power and the fraction of its timed window spent power-capped, so a reader can tell a
 * kernel's difference from the controller's.
 *
 * Read through NVML (libnvidia-ml.so.1, the driver's library), loaded with dlopen at the first case: no build
 * dependency, and a machine without it (or a driver that refuses a query) gives NaN fields, not an error. */
#ifndef RS_BENCH_POWER_H
#define RS_BENCH_POWER_H

typedef struct rs_bench_power {
    unsigned long long t0_us;    /* window start, microseconds since the epoch (NVML's sample clock) */
    unsigned long long viol0_ns; /* cumulative power-cap time at the start */
    int ok;                      /* the device was found and the start read */
    int viol_ok;                 /* the power-cap counter was read at the start */
    double clk_sum;              /* SM clock readings (MHz) of rs_bench_power_tick, summed */
    int nclk;
} rs_bench_power;

/* Start a window on the current CUDA device (after the warm-up, before the timed replays). */
void rs_bench_power_begin(rs_bench_power *p);

/* Read the SM clock once (after each timed replay has completed). */
void rs_bench_power_tick(rs_bench_power *p);

/* End it (after the last timed replay has completed): the mean of the ticks' SM clock (MHz), the mean of NVML's
 * board-power samples (W) taken inside the window, and the fraction of the window under the power cap; NaN where
 * unavailable. */
void rs_bench_power_end(const rs_bench_power *p, double *sm_mhz, double *power_w, double *pcap_frac);

/* Why the fields are NaN: rs_cuda_bench_power_unavailable (rs_cuda_bench.h), defined with the probe. */

/* The reductions, apart from NVML (tests/cuda/test_cuda_bench_power.cu checks them without a GPU). */
typedef struct rs_bench_sample {
    unsigned long long ts; /* us, NVML's CPU time stamp */
    double v;
} rs_bench_sample;
/* The mean of the samples with t0 <= ts <= t1; where none lies inside (the driver's sampling period can exceed a
 * short case), the newest one before t0, the value in force when the window opened; NaN if there is neither. */
double rs_bench_power_window(const rs_bench_sample *s, unsigned n, unsigned long long t0, unsigned long long t1);
/* The fraction of [t0_us, t1_us] under the power cap from the violation counter's readings (ns) at its ends, at
 * most 1; NaN for an empty window or a counter that went back (a reset). */
double rs_bench_power_capped(unsigned long long viol0_ns, unsigned long long viol1_ns, unsigned long long t0_us,
                             unsigned long long t1_us);

#endif /* RS_BENCH_POWER_H */
