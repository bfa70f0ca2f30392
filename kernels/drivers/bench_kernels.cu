/* bench_kernels.cu — first GPU benchmark of the decode kernels (phase 1 of issue 8).
 *
 * Method (device README METHOD.md): CUDA events around each launch, 10 warm-ups, median of
 * 50 repetitions; 4 rotating input sets; every state is ~0.5-1 GB, far larger than the 60 MB
 * L2, so no repetition reads its state from cache. The copy ceiling is a 2 GiB device-to-device
 * cudaMemcpyAsync, counting bytes read plus bytes written.
 *
 * Cases at B = 256 (digest section 7 shapes): Nemotron-3-Super (Mamba-2, H = 128, G = 8,
 * d_v = 64) and Qwen3.5-4B (GDN, H = 32, G = 16, d_v = 128), d_k = 128:
 *   conv fp32 / fp16-rtn / fp16-sr state;
 *   replay L = 16, fp32 checkpoint, bf16 or fp32 ring: rows staggered (fill[b] = b mod L, the
 *   steady state of continuous batching: each step 1/L of the rows flush), all rows at the
 *   mean non-flush fill (7), all rows flushing (fill 15).
 * Bytes model ("model GB/s" column): state bytes that must move (conv: read + write the
 * state; replay non-flush: read the checkpoint; flush: read + write) plus the ring bytes read
 * once from DRAM (values of the h records; k once per key head), plus step inputs/outputs.
 * Usage: bench_kernels [reps]
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rs_cuda.h"

#define CK(call)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)
#define RSK(call)                                                                                \
    do {                                                                                         \
        rs_status s_ = (call);                                                                   \
        if (s_ != RS_OK) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, rs_last_error());      \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

#define NSETS 4
#define WARM 10
static int g_reps = 50;

/* Fill with hashed uniforms in [lo, hi) (never zeros: METHOD.md). */
__global__ void k_fill(float *x, size_t n, uint64_t salt, float lo, float hi)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ salt;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((z >> 40) * (1.0 / 16777216.0));
    }
}
static void fill(float *x, size_t n, uint64_t salt, float lo, float hi)
{
    k_fill<<<1024, 256>>>(x, n, salt, lo, hi);
    CK(cudaGetLastError());
}

template <typename F> static double median_us(F &&launch)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < WARM; ++i) launch(i);
    std::vector<float> t(g_reps);
    for (int i = 0; i < g_reps; ++i) {
        CK(cudaEventRecord(a));
        launch(i);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&t[i], a, b));
    }
    CK(cudaGetLastError());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return 1e3 * (g_reps % 2 ? t[g_reps / 2] : 0.5 * (t[g_reps / 2 - 1] + t[g_reps / 2]));
}

static double g_copy_gbs = 0;
static void row(const char *model, const char *kernel, double us, double bytes, double ref_us)
{
    const double gbs = bytes / (us * 1e3);
    printf("%-22s %-34s %9.1f us %8.0f GB/s %6.1f%% copy %7.2fx\n", model, kernel, us, gbs, 100 * gbs / g_copy_gbs,
           ref_us / us);
    fflush(stdout);
}

struct Inputs {
    float *alpha, *beta, *v, *k, *q, *o;
};

static void bench_model(const char *model, rs_ssm_family fam, int B, int H, int G, int dv, int L)
{
    const int dk = RS_CUDA_DK;
    const size_t nS = (size_t)B * H * dv * dk;
    rs_ssm_dims dims = {B, H, G, dv, dk};
    Inputs in[NSETS];
    for (int s = 0; s < NSETS; ++s) {
        CK(cudaMalloc(&in[s].alpha, sizeof(float) * B * H));
        CK(cudaMalloc(&in[s].beta, sizeof(float) * B * H));
        CK(cudaMalloc(&in[s].v, sizeof(float) * B * H * dv));
        CK(cudaMalloc(&in[s].k, sizeof(float) * B * G * dk));
        CK(cudaMalloc(&in[s].q, sizeof(float) * B * G * dk));
        CK(cudaMalloc(&in[s].o, sizeof(float) * B * H * dv));
        fill(in[s].alpha, (size_t)B * H, 11 + s, 0.9f, 0.999f);
        fill(in[s].beta, (size_t)B * H, 21 + s, 0.1f, 0.9f);
        fill(in[s].v, (size_t)B * H * dv, 31 + s, -1.f, 1.f);
        fill(in[s].k, (size_t)B * G * dk, 41 + s, -0.09f, 0.09f);
        fill(in[s].q, (size_t)B * G * dk, 51 + s, -0.09f, 0.09f);
    }
    const double io_bytes = 4.0 * ((double)B * H * (2 + 2 * dv) + 2.0 * B * G * dk);
    float *S;
    CK(cudaMalloc(&S, 4 * nS));
    fill(S, nS, 7, -1.f, 1.f);
    auto io = [&](int i) {
        const Inputs &x = in[i % NSETS];
        rs_ssm_step_io r = {x.alpha, x.beta, x.v, x.k, x.q, x.o};
        return r;
    };
    const double Sb = 4.0 * nS;
    printf("\n%s: B=%d H=%d G=%d d_v=%d d_k=%d, fp32 state %.3f GB\n", model, B, H, G, dv, dk, Sb / 1e9);

    /* conventional */
    rs_cuda_conv_state cs = {S, RS_CUDA_F32, RS_ROUND_RTN, 32, 0, 0, nullptr, nullptr};
    const double t_conv = median_us([&](int i) { rs_ssm_step_io x = io(i); RSK(rs_cuda_conv_decode(fam, &dims, &x, &cs, nullptr)); });
    row(model, "conv fp32", t_conv, 2 * Sb + io_bytes, t_conv);
    uint64_t *seeds;
    int64_t *steps;
    CK(cudaMalloc(&seeds, 8 * B));
    CK(cudaMalloc(&steps, 8 * B));
    CK(cudaMemset(seeds, 1, 8 * B));
    CK(cudaMemset(steps, 0, 8 * B));
    fill(S, nS / 2, 8, -1.f, 1.f); /* as fp16 bits: arbitrary finite-ish values; overwritten by the first store */
    for (int sr = 0; sr < 2; ++sr) {
        rs_cuda_conv_state hs = {S, RS_CUDA_F16, sr ? RS_ROUND_SR : RS_ROUND_RTN, 32, 0, 0, seeds, steps};
        const double t = median_us([&](int i) { rs_ssm_step_io x = io(i); RSK(rs_cuda_conv_decode(fam, &dims, &x, &hs, nullptr)); });
        row(model, sr ? "conv fp16-sr state" : "conv fp16-rtn state", t, Sb + io_bytes, t_conv);
    }
    fill(S, nS, 7, -1.f, 1.f);

    /* ReplaySSM */
    for (int rdt = 0; rdt < 2; ++rdt) {
        const rs_cuda_dtype rt = rdt == 0 ? RS_CUDA_BF16 : RS_CUDA_F32;
        const size_t rb = rs_cuda_dtype_bytes(rt);
        void *rv, *rk;
        float *ra;
        int32_t *fl;
        CK(cudaMalloc(&rv, rb * B * H * L * dv));
        CK(cudaMalloc(&rk, rb * B * G * L * dk));
        CK(cudaMalloc(&ra, 4 * B * H * L));
        CK(cudaMalloc(&fl, 4 * B));
        CK(cudaMemset(rv, 0x3c, rb * B * H * L * dv)); /* bf16 0x3c3c ~ 0.0115, fp32 ~ 0.0115: finite, nonzero */
        CK(cudaMemset(rk, 0x3c, rb * B * G * L * dk));
        fill(ra, (size_t)B * H * L, 61, 0.9f, 0.999f);
        rs_cuda_replay_state st = {S, rv, rk, ra, rt, L, fl, 0};
        const char *rn = rdt == 0 ? "bf16 ring" : "fp32 ring";
        /* ring bytes read per step at fill h: values B*H*h*dv + keys B*G*h*dk (+ decays) */
        auto ring_bytes = [&](double h) { return h * ((double)B * H * dv * rb + (double)B * G * dk * rb + 4.0 * B * H); };
        const double rec_bytes = (double)B * H * dv * rb + (double)B * G * dk * rb + 4.0 * B * H;
        double t_mode[3];
        for (int mode = 0; mode < 3; ++mode) {
            std::vector<int32_t> f(B);
            for (int b = 0; b < B; ++b) f[b] = mode == 0 ? b % L : mode == 1 ? (L - 2) / 2 : L - 1;
            CK(cudaMemcpy(fl, f.data(), 4 * B, cudaMemcpyHostToDevice));
            const double t = median_us([&](int i) { rs_ssm_step_io x = io(i); RSK(rs_cuda_replay_decode(fam, &dims, &x, &st, nullptr)); });
            t_mode[mode] = t;
            double bytes;
            char name[64];
            if (mode == 0) {
                /* mean over fills 0..L-1: (L-1)/L rows read only, 1/L read + write */
                bytes = Sb * (1.0 + 1.0 / L) + ring_bytes((L - 1) / 2.0) + rec_bytes * (L - 1) / L + io_bytes;
                snprintf(name, sizeof name, "replay L=%d %s staggered", L, rn);
            } else if (mode == 1) {
                bytes = Sb + ring_bytes((L - 2) / 2) + rec_bytes + io_bytes;
                snprintf(name, sizeof name, "replay L=%d %s non-flush h=%d", L, rn, (L - 2) / 2);
            } else {
                bytes = 2 * Sb + ring_bytes(L - 1) + io_bytes;
                snprintf(name, sizeof name, "replay L=%d %s all flush", L, rn);
            }
            row(model, name, t, bytes, t_conv);
        }
        if (rdt == 1)
            for (int R : {32, 16}) { /* replay block size sweep, non-flush mid fill */
                std::vector<int32_t> f(B, (L - 2) / 2);
                CK(cudaMemcpy(fl, f.data(), 4 * B, cudaMemcpyHostToDevice));
                st.rows_per_block = R;
                const double t = median_us([&](int i) { rs_ssm_step_io x = io(i); RSK(rs_cuda_replay_decode(fam, &dims, &x, &st, nullptr)); });
                char name[64];
                snprintf(name, sizeof name, "replay %s non-flush h=%d R=%d", rn, (L - 2) / 2, R);
                row(model, name, t, Sb + ring_bytes((L - 2) / 2) + rec_bytes + io_bytes, t_conv);
                for (int b = 0; b < B; ++b) f[b] = b % L;
                CK(cudaMemcpy(fl, f.data(), 4 * B, cudaMemcpyHostToDevice));
                const double t2 = median_us([&](int i) { rs_ssm_step_io x = io(i); RSK(rs_cuda_replay_decode(fam, &dims, &x, &st, nullptr)); });
                snprintf(name, sizeof name, "replay %s staggered R=%d", rn, R);
                row(model, name, t2, Sb * (1.0 + 1.0 / L) + ring_bytes((L - 1) / 2.0) + rec_bytes * (L - 1) / L + io_bytes, t_conv);
                st.rows_per_block = 0;
            }
        printf("%-22s replay %s: (L-1)/L * non-flush(mid) + 1/L * flush = %.1f us -> %.2fx over conv\n", model, rn,
               ((L - 1) * t_mode[1] + t_mode[2]) / L, t_conv * L / ((L - 1) * t_mode[1] + t_mode[2]));
        cudaFree(rv); cudaFree(rk); cudaFree(ra); cudaFree(fl);
    }
    cudaFree(S); cudaFree(seeds); cudaFree(steps);
    for (int s = 0; s < NSETS; ++s) {
        cudaFree(in[s].alpha); cudaFree(in[s].beta); cudaFree(in[s].v); cudaFree(in[s].k); cudaFree(in[s].q); cudaFree(in[s].o);
    }
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("bench_kernels: no CUDA device\n");
        return 77;
    }
    if (argc > 1) g_reps = std::max(5, atoi(argv[1]));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device: %s, %d SMs, L2 %d MB, reps %d (median), warm-up %d\n", p.name, p.multiProcessorCount,
           p.l2CacheSize >> 20, g_reps, WARM);
    /* copy ceiling */
    const size_t cb = (size_t)2 << 30;
    float *a, *b;
    CK(cudaMalloc(&a, cb));
    CK(cudaMalloc(&b, cb));
    fill(a, cb / 4, 3, -1.f, 1.f);
    const double t_copy = median_us([&](int) { CK(cudaMemcpyAsync(b, a, cb, cudaMemcpyDeviceToDevice)); });
    g_copy_gbs = 2.0 * cb / (t_copy * 1e3);
    printf("copy 2 GiB d2d: %.1f us, %.0f GB/s (read + write)\n", t_copy, g_copy_gbs);
    cudaFree(a);
    cudaFree(b);
    printf("%-22s %-34s %12s %13s %11s %8s\n", "model", "kernel", "median", "model BW", "of copy", "vs conv");
    bench_model("Nemotron-3-Super", RS_SSM_MAMBA2, 256, 128, 8, 64, 16);
    bench_model("Qwen3.5-4B", RS_SSM_GDN, 256, 32, 16, 128, 16);
    return 0;
}
