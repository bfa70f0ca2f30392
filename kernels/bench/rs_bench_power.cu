/* rs_bench_power.cu — SM clock, board power and power-cap time over a benchmark case's timed replays, read through
 * NVML loaded at run time (rs_bench_power.h says why). Host code only; plain C-style C++ like rs_cuda_bench.cu.
 *
 * NVML's declarations are restated here (the toolkit on the build machines ships no nvml.h; the driver's library
 * is the one dependency, found or not at run time). The few types and values used, as in nvml.h of CUDA 13 (and
 * NVIDIA's nvidia-ml-py 13.615): nvmlDevice_t an opaque pointer; nvmlSample_t {unsigned long long timeStamp (us,
 * CPU clock); nvmlValue_t sampleValue (an 8-byte union)}; nvmlViolationTime_t {referenceTime; violationTime (ns)};
 * NVML_TOTAL_POWER_SAMPLES 0 (mW); NVML_PERF_POLICY_POWER 0; NVML_CLOCK_SM 1; NVML_VALUE_TYPE_* 0 double .. 6
 * unsigned short. The driver's own SM-clock samples (NVML_PROCESSOR_CLK_SAMPLES) came back empty on an H200, so the
 * clock is read once a timed replay instead (nvmlDeviceGetClockInfo, the driver's current value, which it updates
 * about every 100 ms). */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/time.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "replayssm/cuda/rs_cuda_bench.h" /* rs_cuda_bench_power_unavailable */
#include "rs_bench_power.h"

typedef void *nv_device;
typedef union nv_value {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
} nv_value;
typedef struct nv_sample {
    unsigned long long ts;
    nv_value v;
} nv_sample;
typedef struct nv_violation {
    unsigned long long ref, viol_ns;
} nv_violation;
enum { NV_POWER_SAMPLES = 0, NV_POLICY_POWER = 0, NV_CLOCK_SM = 1 };

typedef int (*nv_init_fn)(void);
typedef int (*nv_by_pci_fn)(const char *, nv_device *);
typedef int (*nv_samples_fn)(nv_device, int, unsigned long long, int *, unsigned int *, nv_sample *);
typedef int (*nv_violation_fn)(nv_device, int, nv_violation *);
typedef int (*nv_clock_fn)(nv_device, int, unsigned int *);

static struct {
    int tried;
    const char *why; /* NULL: working */
    nv_samples_fn samples;
    nv_violation_fn violation;
    nv_clock_fn clock;
    nv_device dev;
    int cuda_dev;
} g_nv;

static unsigned long long now_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (unsigned long long)tv.tv_sec * 1000000ull + (unsigned long long)tv.tv_usec;
}

/* load NVML and find the current CUDA device (once a device: the bench runs on one) */
static int nv_ready(void)
{
    int cd = 0;
    const bool dev = cudaGetDevice(&cd) == cudaSuccess;
    if (dev && g_nv.tried && g_nv.cuda_dev == cd) return g_nv.why == NULL;
    g_nv.tried = 1, g_nv.cuda_dev = -1, g_nv.why = NULL;
    if (!dev || cudaFree(0) != cudaSuccess) { /* cudaFree(0): the device's context, or the error saying why not */
        cudaGetLastError();
        return g_nv.why = "no CUDA device", 0;
    }
    g_nv.cuda_dev = cd;
    static void *lib = NULL; /* kept loaded for the process */
    if (!lib) lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return g_nv.why = "libnvidia-ml.so.1 not found", 0;
    nv_init_fn init = (nv_init_fn)dlsym(lib, "nvmlInit_v2");
    nv_by_pci_fn by_pci = (nv_by_pci_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    g_nv.samples = (nv_samples_fn)dlsym(lib, "nvmlDeviceGetSamples");
    g_nv.violation = (nv_violation_fn)dlsym(lib, "nvmlDeviceGetViolationStatus");
    g_nv.clock = (nv_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
    if (!init || !by_pci || !g_nv.samples) return g_nv.why = "NVML lacks nvmlInit_v2 / GetHandleByPciBusId_v2 / GetSamples", 0;
    if (init() != 0) return g_nv.why = "nvmlInit_v2 failed", 0;
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, cd) != cudaSuccess) {
        cudaGetLastError();
        return g_nv.why = "cudaDeviceGetPCIBusId failed", 0;
    }
    if (by_pci(bus, &g_nv.dev) != 0) return g_nv.why = "NVML does not know the CUDA device's PCI bus id", 0;
    return 1;
}

extern "C" const char *rs_cuda_bench_power_unavailable(void) { return g_nv.tried ? g_nv.why : "not started"; }

void rs_bench_power_begin(rs_bench_power *p)
{
    memset(p, 0, sizeof *p);
    if (!nv_ready()) return;
    p->ok = 1;
    p->t0_us = now_us();
    nv_violation v;
    if (g_nv.violation && g_nv.violation(g_nv.dev, NV_POLICY_POWER, &v) == 0) p->viol0_ns = v.viol_ns, p->viol_ok = 1;
}

void rs_bench_power_tick(rs_bench_power *p)
{
    unsigned int mhz = 0;
    if (p->ok && g_nv.clock && g_nv.clock(g_nv.dev, NV_CLOCK_SM, &mhz) == 0 && mhz > 0) p->clk_sum += mhz, ++p->nclk;
}

static double value_of(const nv_value &v, int type)
{
    switch (type) {
    case 0: return v.d;
    case 1: return v.ui;
    case 2: return (double)v.ul;
    case 3: return (double)v.ull;
    case 4: return (double)v.sll;
    case 5: return v.si;
    case 6: return v.us;
    default: return NAN;
    }
}

double rs_bench_power_window(const rs_bench_sample *s, unsigned n, unsigned long long t0, unsigned long long t1)
{
    double sum = 0, before = NAN;
    unsigned long long before_ts = 0;
    unsigned in = 0;
    for (unsigned i = 0; i < n; ++i) {
        if (s[i].ts >= t0 && s[i].ts <= t1) sum += s[i].v, ++in;
        else if (s[i].ts < t0 && (before != before || s[i].ts >= before_ts)) before = s[i].v, before_ts = s[i].ts;
    }
    return in ? sum / in : before;
}

double rs_bench_power_capped(unsigned long long viol0_ns, unsigned long long viol1_ns, unsigned long long t0_us,
                             unsigned long long t1_us)
{
    if (t1_us <= t0_us || viol1_ns < viol0_ns) return NAN; /* an empty window, or the counter was reset */
    const double f = (double)(viol1_ns - viol0_ns) / (1e3 * (double)(t1_us - t0_us));
    return f > 1 ? 1 : f; /* the counter's own clock may run a little ahead of ours */
}

/* the driver's samples of `kind` from 2 s before t0 (for the value in force when the window opened), reduced by
 * rs_bench_power_window, times `scale` */
static double window_mean(int kind, unsigned long long t0, unsigned long long t1, double scale)
{
    const unsigned long long since = t0 > 2000000ull ? t0 - 2000000ull : 0;
    int type = 0;
    unsigned int n = 0;
    if (g_nv.samples(g_nv.dev, kind, since, &type, &n, NULL) != 0 || n == 0) return NAN;
    nv_sample *s = (nv_sample *)calloc(n, sizeof *s);
    rs_bench_sample *x = (rs_bench_sample *)calloc(n, sizeof *x);
    double m = NAN;
    if (s && x && g_nv.samples(g_nv.dev, kind, since, &type, &n, s) == 0) {
        for (unsigned int i = 0; i < n; ++i) x[i].ts = s[i].ts, x[i].v = value_of(s[i].v, type);
        m = rs_bench_power_window(x, n, t0, t1) * scale;
    }
    free(s);
    free(x);
    return m;
}

void rs_bench_power_end(const rs_bench_power *p, double *sm_mhz, double *power_w, double *pcap_frac)
{
    *sm_mhz = *power_w = *pcap_frac = NAN;
    if (!p->ok) return;
    const unsigned long long t1 = now_us();
    *sm_mhz = p->nclk ? p->clk_sum / p->nclk : NAN;
    *power_w = window_mean(NV_POWER_SAMPLES, p->t0_us, t1, 1e-3); /* mW */
    nv_violation v;
    if (p->viol_ok && g_nv.violation(g_nv.dev, NV_POLICY_POWER, &v) == 0)
        *pcap_frac = rs_bench_power_capped(p->viol0_ns, v.viol_ns, p->t0_us, t1);
}
