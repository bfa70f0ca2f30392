/* rs_cuda_bench.cu — timing harness of the decode kernels (rs_cuda_bench.h): rotating input
 * sets larger than the L2, CUDA graphs of consecutive steps, CUDA events, median of reps.
 * The benchmark sub-module of kernels/ (kernels/bench/): it drives the kernels through the
 * public launchers of rs_cuda.h only, and `replayssm bench` (eval/cli/cmd_bench.c) is its caller.
 * Host code is plain C-style C++ (no C++ library), so the C CLI links it without libstdc++.
 */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h> /* header-only (NVTX 3): the cases' ranges for Nsight Compute */

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "replayssm/cuda/rs_cuda.h"
#include "replayssm/cuda/rs_cuda_bench.h"
#include "rs_cuda_common.cuh"
#include "rs_check.h"
#include "rs_bench_power.h" /* clocks, power and power-cap time of the timed window */

/* inside a routine with a local `rs_status st` and a `done:` clean-up: a failed call jumps there */
#define BENCH_TRY(call)                                                                            \
    do {                                                                                           \
        st = (call);                                                                               \
        if (st != RS_OK) goto done;                                                                \
    } while (0)
#define BENCH_CK(call, what) BENCH_TRY(rs_cuda_call_status((call), (what))) /* a CUDA runtime call */

/* hashed uniforms in [lo, hi) (never zeros: METHOD.md) */
__global__ void rs_k_bench_fill(float *x, size_t n, uint64_t salt, float lo, float hi)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ salt;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((z >> 40) * (1.0 / 16777216.0));
    }
}
/* bf16 ring values from the same hash (bit patterns of values in [lo, hi)) */
__global__ void rs_k_bench_fill16(uint16_t *x, size_t n, uint64_t salt, float lo, float hi)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ salt;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z ^= z >> 31;
        const float f = lo + (hi - lo) * (float)((z >> 40) * (1.0 / 16777216.0));
        x[i] = (uint16_t)(__float_as_uint(f) >> 16);
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double pct(const double *sorted, int n, double p)
{
    const int i = (int)(p * (n - 1) + 0.5);
    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

extern "C" rs_status rs_cuda_bench_device(char *name, size_t name_size, int *sms, size_t *l2_bytes, size_t *mem_bytes)
{
    int dev = 0, n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        return rs_error_set(RS_E_CUDA, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
    cudaDeviceProp p;
    RS_CUDA_TRY(cudaGetDevice(&dev), "rs_cuda_bench_device: cudaGetDevice");
    RS_CUDA_TRY(cudaGetDeviceProperties(&p, dev), "rs_cuda_bench_device: cudaGetDeviceProperties");
    if (name && name_size) snprintf(name, name_size, "%s (sm_%d%d)", p.name, p.major, p.minor);
    if (sms) *sms = p.multiProcessorCount;
    if (l2_bytes) *l2_bytes = (size_t)p.l2CacheSize;
    if (mem_bytes) *mem_bytes = p.totalGlobalMem;
    return RS_OK;
}

/* The two ceilings' timing: 5 untimed then `reps` timed calls of op(i, bufs) on the default stream (i counts from 0
 * over both; the calls alternate between two buffers of `bytes`, filled with non-zero values, each far larger than
 * the L2), CUDA events around each timed call, the median. */
typedef cudaError_t (*bench_op)(int i, void *a, void *b, size_t bytes, unsigned *o, int sms);
static rs_status bench_ceiling(const char *who, bench_op op, size_t bytes, int reps, double *median_us)
{
    rs_status st = RS_OK;
    void *a = NULL, *b = NULL;
    unsigned *o = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int sms = 0, dev = 0;
    double *t = (double *)calloc((size_t)(reps > 0 ? reps : 1), sizeof(double));
    if (!t) return rs_error_set(RS_E_NOMEM, "rs_cuda_bench: %s ceiling: no memory", who);
    BENCH_CK(cudaGetDevice(&dev), "cudaGetDevice");
    BENCH_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
    BENCH_CK(cudaMalloc(&a, bytes), "cudaMalloc");
    BENCH_CK(cudaMalloc(&b, bytes), "cudaMalloc");
    BENCH_CK(cudaMalloc(&o, sizeof(unsigned)), "cudaMalloc");
    rs_k_bench_fill<<<2048, 256>>>((float *)a, bytes / 4, 7, 0.5f, 1.5f);
    rs_k_bench_fill<<<2048, 256>>>((float *)b, bytes / 4, 8, 0.5f, 1.5f);
    BENCH_CK(cudaGetLastError(), "fill");
    BENCH_CK(cudaEventCreate(&e0), "event");
    BENCH_CK(cudaEventCreate(&e1), "event");
    for (int i = 0; i < 5 + reps; ++i) {
        float ms = 0;
        BENCH_CK(cudaEventRecord(e0, 0), "record");
        BENCH_CK(op(i, a, b, bytes, o, sms), who);
        BENCH_CK(cudaEventRecord(e1, 0), "record");
        BENCH_CK(cudaEventSynchronize(e1), "sync");
        BENCH_CK(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        if (i >= 5) t[i - 5] = 1e3 * ms;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    *median_us = pct(t, reps, 0.5);
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(o);
    free(t);
    return st;
}

static cudaError_t copy_op(int i, void *a, void *b, size_t bytes, unsigned *, int)
{
    return cudaMemcpyAsync(i & 1 ? a : b, i & 1 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0);
}
extern "C" rs_status rs_cuda_bench_copy(size_t bytes, int reps, double *median_us)
{
    return bench_ceiling("copy", copy_op, bytes, reps, median_us);
}

/* The read-only ceiling: every 16-byte word of x read once (4 independent loads a thread in flight, a grid of 16
 * blocks an SM striding over the buffer), folded by XOR so that the loads are not dead code (out is written only on
 * an impossible value). The non-flush ReplaySSM steps only read the checkpoint: this, not the copy, is their floor. */
__global__ void __launch_bounds__(256) rs_k_bench_read(const uint4 *__restrict__ x, size_t n, unsigned *out)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        const uint4 a = x[i];
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9E3779B9u) out[0] = acc;
}
static cudaError_t read_op(int i, void *a, void *b, size_t bytes, unsigned *o, int sms)
{
    rs_k_bench_read<<<16 * sms, 256>>>((const uint4 *)(i & 1 ? b : a), bytes / 16, o);
    return cudaGetLastError();
}
extern "C" rs_status rs_cuda_bench_read(size_t bytes, int reps, double *median_us)
{
    return bench_ceiling("read", read_op, bytes, reps, median_us);
}

/* ---- one case ---------------------------------------------------------------------------------- */

#define BENCH_MAX_SETS 64
#define BENCH_MAX_PHASES 64

struct bench_set {
    float *S, *ring_alpha, *alpha, *beta, *v, *k, *q;
    void *ring_v, *ring_k;
    float *snap;
    rs_qtensor rq;
};

static double fmt_bpe(rs_format_kind k, size_t extent)
{
    switch (k) {
    case RS_FMT_FP16:
    case RS_FMT_BF16: return 2.0;
    case RS_FMT_FP8:
    case RS_FMT_E5M2: return 1.0 + 4.0 / 128.0;
    case RS_FMT_NVFP4: return 0.5 + 1.0 / 16.0 + 4.0 / (double)extent;
    default: return 4.0;
    }
}

/* steady-state cycle of the committed fill h under verification with a accepted per step */
static int verify_cycle(int L, int T, int a, int *h_out)
{
    int h = 0, n = 0;
    int seen[RS_CUDA_LMAX + RS_CUDA_TMAX + 2];
    for (int i = 0; i < (int)(sizeof seen / sizeof seen[0]); ++i) seen[i] = -1;
    /* iterate until the sequence repeats; record the cycle */
    int seq[4 * (RS_CUDA_LMAX + RS_CUDA_TMAX)];
    int len = 0;
    while (seen[h] < 0 && len < (int)(sizeof seq / sizeof seq[0])) {
        seen[h] = len;
        seq[len++] = h;
        h = h + T > L ? a : h + a;
    }
    const int first = seen[h] >= 0 ? seen[h] : 0;
    for (int i = first; i < len && n < BENCH_MAX_PHASES; ++i) h_out[n++] = seq[i];
    return n;
}

static rs_status bench_run(const rs_bench_case *c, rs_bench_result *r);
extern "C" rs_status rs_cuda_bench_run(const rs_bench_case *c, rs_bench_result *r)
{
    if (c->label) nvtxRangePushA(c->label);
    const rs_status st = bench_run(c, r);
    if (c->label) nvtxRangePop();
    return st;
}

static rs_status bench_run(const rs_bench_case *c, rs_bench_result *r)
{
    rs_status st = RS_OK;
    const rs_ssm_dims d = c->dims;
    const size_t B = (size_t)d.batch, H = (size_t)d.heads, G = (size_t)d.key_heads, dv = (size_t)d.d_v,
                 dk = (size_t)d.d_k;
    const size_t nS = B * H * dv * dk;
    const int T = c->kernel >= RS_BENCH_VERIFY_SNAPSHOT ? c->T : 1;
    const int L = c->L > 0 ? c->L : 1;
    const int C = c->kernel == RS_BENCH_VERIFY_REPLAY ? L + T : L;
    const size_t rb = rs_cuda_dtype_bytes(c->ring_dtype);
    const bool replay = c->kernel == RS_BENCH_REPLAY || c->kernel == RS_BENCH_VERIFY_REPLAY;
    const bool lp = c->kernel == RS_BENCH_REPLAY && c->read_fmt != RS_FMT_FP32;
    bench_set sets[BENCH_MAX_SETS];
    memset(sets, 0, sizeof sets);
    int nsets = 0, nph = 1, steps = 0;
    int phase_h[BENCH_MAX_PHASES];
    int32_t *hfill = NULL, *dfill = NULL, *dstart = NULL;
    float *o = NULL, *work = NULL;
    double *times = NULL;
    cudaStream_t s = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    size_t l2 = 0;
    rs_bench_power pw = {};
    memset(r, 0, sizeof *r);
    RS_CHECK(c->reps >= 1 && T >= 1 && T <= RS_CUDA_TMAX, RS_E_INVAL, "rs_cuda_bench_run: reps %d, T %d", c->reps, T);
    RS_TRY(rs_cuda_bench_device(NULL, 0, NULL, &l2, NULL));

    /* fill phases: phase p has per-row fills; rows start at staggered phases */
    if (c->kernel == RS_BENCH_REPLAY) {
        if (c->fill_mode == RS_BENCH_FILL_CYCLE) {
            nph = L;
            for (int p = 0; p < L; ++p) phase_h[p] = p;
        } else {
            nph = 1;
            phase_h[0] = c->fill_mode == RS_BENCH_FILL_FLUSH ? L - 1 : c->fill;
        }
    } else if (c->kernel == RS_BENCH_VERIFY_REPLAY) {
        nph = verify_cycle(L, T, c->accepted, phase_h);
    }

    {
        /* bytes of one input set */
        size_t set_bytes = 4 * nS + 4 * (T * (B * H * (dv + 2) + 2 * B * G * dk));
        if (replay) set_bytes += B * H * C * dv * rb + B * G * C * dk * rb + 4 * B * H * C;
        if (c->kernel == RS_BENCH_VERIFY_SNAPSHOT) set_bytes += 4 * nS * T;
        nsets = (int)((2 * l2 + set_bytes - 1) / set_bytes);
        if (nsets < 2) nsets = 2;
        if (nsets > BENCH_MAX_SETS) nsets = BENCH_MAX_SETS;
    }
    steps = nph;
    while (steps < nsets || steps < 4) steps += nph;

    for (int i = 0; i < nsets; ++i) {
        bench_set *x = &sets[i];
        const uint64_t salt = 0x1234567ull * (uint64_t)(i + 1);
        BENCH_CK(cudaMalloc((void **)&x->S, 4 * nS), "cudaMalloc state");
        BENCH_CK(cudaMalloc((void **)&x->alpha, 4 * T * B * H), "cudaMalloc");
        BENCH_CK(cudaMalloc((void **)&x->beta, 4 * T * B * H), "cudaMalloc");
        BENCH_CK(cudaMalloc((void **)&x->v, 4 * T * B * H * dv), "cudaMalloc");
        BENCH_CK(cudaMalloc((void **)&x->k, 4 * T * B * G * dk), "cudaMalloc");
        BENCH_CK(cudaMalloc((void **)&x->q, 4 * T * B * G * dk), "cudaMalloc");
        rs_k_bench_fill<<<1024, 256>>>(x->S, nS, salt, -0.5f, 0.5f);
        rs_k_bench_fill<<<256, 256>>>(x->alpha, T * B * H, salt + 1, 0.90f, 0.999f);
        rs_k_bench_fill<<<256, 256>>>(x->beta, T * B * H, salt + 2, 0.1f, 0.9f);
        rs_k_bench_fill<<<256, 256>>>(x->v, T * B * H * dv, salt + 3, -1.f, 1.f);
        rs_k_bench_fill<<<256, 256>>>(x->k, T * B * G * dk, salt + 4, -0.09f, 0.09f);
        rs_k_bench_fill<<<256, 256>>>(x->q, T * B * G * dk, salt + 5, -0.09f, 0.09f);
        if (replay) {
            const size_t nrv = B * H * C * dv, nrk = B * G * C * dk;
            BENCH_CK(cudaMalloc(&x->ring_v, nrv * rb), "cudaMalloc ring");
            BENCH_CK(cudaMalloc(&x->ring_k, nrk * rb), "cudaMalloc ring");
            BENCH_CK(cudaMalloc((void **)&x->ring_alpha, 4 * B * H * C), "cudaMalloc ring");
            if (rb == 4) {
                rs_k_bench_fill<<<512, 256>>>((float *)x->ring_v, nrv, salt + 6, -1.f, 1.f);
                rs_k_bench_fill<<<512, 256>>>((float *)x->ring_k, nrk, salt + 7, -0.09f, 0.09f);
            } else {
                rs_k_bench_fill16<<<512, 256>>>((uint16_t *)x->ring_v, nrv, salt + 6, -1.f, 1.f);
                rs_k_bench_fill16<<<512, 256>>>((uint16_t *)x->ring_k, nrk, salt + 7, -0.09f, 0.09f);
            }
            rs_k_bench_fill<<<256, 256>>>(x->ring_alpha, B * H * C, salt + 8, 0.90f, 0.999f);
        }
        if (c->kernel == RS_BENCH_VERIFY_SNAPSHOT) BENCH_CK(cudaMalloc((void **)&x->snap, 4 * nS * T), "cudaMalloc snapshots");
        if (lp) {
            rs_format f;
            memset(&f, 0, sizeof f);
            f.kind = c->read_fmt;
            f.rounding = RS_ROUND_RTN;
            f.sr_bits = 32;
            BENCH_TRY(rs_cuda_qtensor_alloc(&x->rq, &f, nS, dv * dk));
            BENCH_TRY(rs_cuda_quantize(&x->rq, x->S, 0, 0, NULL));
        }
        BENCH_CK(cudaGetLastError(), "fill");
    }
    BENCH_CK(cudaMalloc((void **)&o, 4 * T * B * H * dv), "cudaMalloc output");
    if (replay) {
        BENCH_CK(cudaMalloc((void **)&work, rs_cuda_replay_work_bytes(&d, L, c->kernel == RS_BENCH_VERIFY_REPLAY ? T : 0)),
                 "cudaMalloc work");
        hfill = (int32_t *)malloc(sizeof(int32_t) * B * nph);
        if (!hfill) {
            st = rs_error_set(RS_E_NOMEM, "rs_cuda_bench_run: no memory");
            goto done;
        }
        for (int p = 0; p < nph; ++p)
            for (size_t b = 0; b < B; ++b) hfill[p * B + b] = phase_h[(b + p) % nph];
        BENCH_CK(cudaMalloc((void **)&dfill, sizeof(int32_t) * B * nph), "cudaMalloc fill");
        BENCH_CK(cudaMalloc((void **)&dstart, sizeof(int32_t) * B), "cudaMalloc start");
        BENCH_CK(cudaMemcpy(dfill, hfill, sizeof(int32_t) * B * nph, cudaMemcpyHostToDevice), "copy fill");
        BENCH_CK(cudaMemset(dstart, 0, sizeof(int32_t) * B), "memset");
    }
    BENCH_CK(cudaDeviceSynchronize(), "setup");

    /* bytes that must move, averaged over the graph's steps */
    {
        const double sb = 4.0 * (double)(H * dv * dk); /* fp32 state of one row */
        const double io = (double)T * (4.0 * (double)(H * (dv + 2) + 2 * G * dk) + 4.0 * (double)(H * dv));
        const double rec = (double)(H * dv * rb + G * dk * rb + 4 * H); /* one record of a row */
        double total = 0, nfl = 0, hsum = 0;
        for (int p = 0; p < steps; ++p)
            for (size_t b = 0; b < B; ++b) {
                double x = io;
                if (c->kernel == RS_BENCH_CONV) x += 2 * sb;
                else if (c->kernel == RS_BENCH_VERIFY_SNAPSHOT) x += sb * (1 + T);
                else {
                    const int h = hfill[(p % nph) * B + b];
                    const bool fl = c->kernel == RS_BENCH_REPLAY ? h + 1 == L : h + T > L;
                    hsum += h;
                    nfl += fl;
                    x += h * rec; /* ring records read */
                    if (c->kernel == RS_BENCH_REPLAY) {
                        x += fl ? 2 * sb : sb * fmt_bpe(c->read_fmt, dv * dk) / 4.0 + rec;
                    } else {
                        x += sb * (fl ? 2 : 1) + T * rec;
                    }
                }
                total += x;
            }
        r->bytes = total / steps;
        r->flush_frac = replay ? nfl / ((double)steps * B) : 0;
        r->mean_fill = replay ? hsum / ((double)steps * B) : 0;
        r->sets = nsets;
        r->steps = steps;
    }

    /* capture the graph */
    BENCH_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    BENCH_CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
    for (int p = 0; p < steps; ++p) {
        bench_set *x = &sets[p % nsets];
        rs_ssm_step_io io = {x->alpha, x->beta, x->v, x->k, x->q, o};
        rs_status ls = RS_OK;
        switch (c->kernel) {
        case RS_BENCH_CONV: {
            rs_cuda_conv_state cs;
            memset(&cs, 0, sizeof cs);
            cs.S = x->S;
            cs.dtype = RS_CUDA_F32;
            ls = rs_cuda_conv_decode(c->fam, &d, &io, &cs, s);
            break;
        }
        case RS_BENCH_REPLAY: {
            rs_cuda_replay_state rs;
            memset(&rs, 0, sizeof rs);
            rs.S_ckpt = x->S, rs.ring_v = x->ring_v, rs.ring_k = x->ring_k, rs.ring_alpha = x->ring_alpha;
            rs.ring_dtype = c->ring_dtype, rs.L = L, rs.fill = dfill + (p % nph) * B, rs.work = work;
            rs.ckpt_read = lp ? &x->rq : NULL, rs.rows_per_warp = c->rows_per_warp;
            rs.lp_kernel = c->lp_kernel, rs.launch = c->launch;
            ls = rs_cuda_replay_decode(c->fam, &d, &io, &rs, &c->opts, s);
            break;
        }
        case RS_BENCH_VERIFY_SNAPSHOT: ls = rs_cuda_snapshot_verify(c->fam, &d, T, &io, x->S, x->snap, s); break;
        case RS_BENCH_VERIFY_REPLAY: {
            rs_cuda_verify_state vs;
            memset(&vs, 0, sizeof vs); /* fields this harness does not set (ckpt_round) stay off */
            vs.S_ckpt = x->S, vs.ring_v = x->ring_v, vs.ring_k = x->ring_k, vs.ring_alpha = x->ring_alpha;
            vs.ring_dtype = c->ring_dtype, vs.L = L, vs.cap = C, vs.fill = dfill + (p % nph) * B, vs.start = dstart;
            vs.work = work, vs.kernel = c->verify_kernel;
            ls = rs_cuda_replay_verify(c->fam, &d, T, &io, &vs, &c->opts, s);
            break;
        }
        }
        if (ls != RS_OK) {
            cudaGraph_t g = NULL;
            cudaStreamEndCapture(s, &g);
            if (g) cudaGraphDestroy(g);
            st = ls;
            goto done;
        }
    }
    BENCH_CK(cudaStreamEndCapture(s, &graph), "end capture");
    BENCH_CK(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    BENCH_CK(cudaEventCreate(&e0), "event");
    BENCH_CK(cudaEventCreate(&e1), "event");
    for (int i = 0; i < (c->warmup > 0 ? c->warmup : 1); ++i) BENCH_CK(cudaGraphLaunch(exec, s), "warm-up");
    BENCH_CK(cudaStreamSynchronize(s), "warm-up");
    times = (double *)calloc((size_t)c->reps, sizeof(double));
    if (!times) {
        st = rs_error_set(RS_E_NOMEM, "rs_cuda_bench_run: no memory");
        goto done;
    }
    rs_bench_power_begin(&pw);
    for (int i = 0; i < c->reps; ++i) {
        float ms = 0;
        BENCH_CK(cudaEventRecord(e0, s), "record");
        BENCH_CK(cudaGraphLaunch(exec, s), "graph launch");
        BENCH_CK(cudaEventRecord(e1, s), "record");
        BENCH_CK(cudaEventSynchronize(e1), "kernel execution");
        BENCH_CK(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        times[i] = 1e3 * ms / steps;
        rs_bench_power_tick(&pw); /* between replays: the GPU is idle for the few us this takes, outside e0..e1 */
    }
    rs_bench_power_end(&pw, &r->sm_mhz, &r->power_w, &r->pcap_frac);
    qsort(times, (size_t)c->reps, sizeof(double), cmp_double);
    r->median_us = pct(times, c->reps, 0.5);
    r->p10_us = pct(times, c->reps, 0.1);
    r->p90_us = pct(times, c->reps, 0.9);
done:
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s) cudaStreamDestroy(s);
    for (int i = 0; i < nsets; ++i) {
        bench_set *x = &sets[i];
        cudaFree(x->S), cudaFree(x->alpha), cudaFree(x->beta), cudaFree(x->v), cudaFree(x->k), cudaFree(x->q);
        cudaFree(x->ring_v), cudaFree(x->ring_k), cudaFree(x->ring_alpha), cudaFree(x->snap);
        rs_cuda_qtensor_free(&x->rq);
    }
    cudaFree(o), cudaFree(work), cudaFree(dfill), cudaFree(dstart);
    free(hfill);
    free(times);
    if (st != RS_OK) cudaGetLastError(); /* clear a sticky launch error for the next case */
    return st;
}
