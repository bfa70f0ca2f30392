/* rs_gpu_twin.cu — the kernels of the twin compute mode (`--compute twin`, rs_gpu_ops.h): the CPU
 * evaluator's attention (eval/model/rs_backend_cpu.c cpu_attention_f64_) and the CPU engine's
 * conventional fp32 recurrence (engine/rs_ssm.c, engine/rs_dot.h) on the GPU, operation for
 * operation. Built like every eval/cuda/ file with --fmad=false (nothing contracted, double or float),
 * so each +, *, / is the IEEE operation the host's -ffp-contract=off code does, in the same order:
 * the same bits. Simple on purpose (one thread per state row; one block per attention row, double on
 * the CUDA cores): this mode checks the fast modes against the CPU, it is not one of them. */
#include "rs_gpu_common.cuh"

namespace {

/* ---- attention ---------------------------------------------------------------------------------- */

constexpr int TB = 256; /* threads of an attention block; also the key tile of the second pass */

/* sum_d (double)a[d] * (double)b[d] in d order: dotd_ of rs_backend_cpu.c */
__device__ __forceinline__ double dotd_(const float *a, const float *b, int n)
{
    double acc = 0.0;
    for (int i = 0; i < n; i++) acc += (double)a[i] * (double)b[i];
    return acc;
}

/* expd_ of rs_backend_cpu.c: rs_mathf.h's double exp, 0 below -700 */
__device__ __forceinline__ double expd_(double x) { return x < -700.0 ? 0.0 : rs_mathf_exp_d_(x); }

/* one block per (run r, position t, head h): blockIdx.x = (r * T + t) * H + h */
__global__ void __launch_bounds__(TB) attn_twin_k_(rsg_attn_args a)
{
    __shared__ float qs[256];
    __shared__ double es[TB];
    __shared__ double red[TB / 32];
    __shared__ double tot;
    const int tid = threadIdx.x, hd = a.hd, H = a.H;
    const size_t bid = blockIdx.x;
    const int h = (int)(bid % (size_t)H);
    const size_t rt = bid / (size_t)H; /* r * T + t */
    const int t = (int)(rt % (size_t)a.T), r = (int)(rt / (size_t)a.T), g = h / (H / a.Hkv);
    const int n = (int)a.pos0 + t + 1;
    const float *q = a.Q + rt * a.ldq + (size_t)h * a.q_hstride;
    const size_t head = ((size_t)r * a.Hkv + g) * a.cap * (size_t)hd;
    const float *Kh = a.Kc + head, *Vh = a.Vc + head;
    for (int d = tid; d < hd; d += TB) qs[d] = q[d];
    __syncthreads();
    const double scale = (double)a.scale;
    /* pass 1: the max of the scores (a max is exact in any order; `>` skips NaN as the CPU's loop does) */
    double mx = -INFINITY;
    for (int j = tid; j < n; j += TB) {
        const double sj = dotd_(qs, Kh + (size_t)j * hd, hd) * scale;
        if (sj > mx) mx = sj;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const double o = __shfl_xor_sync(0xFFFFFFFFu, mx, off);
        if (o > mx) mx = o;
    }
    if ((tid & 31) == 0) red[tid >> 5] = mx;
    __syncthreads();
    mx = red[0];
    for (int w = 1; w < TB / 32; w++)
        if (red[w] > mx) mx = red[w];
    /* pass 2, tiles of TB keys: the tile's e_j by one thread each (the CPU's expression, the same bits
       whichever thread), then sum and each o_d accumulated over the tile in key order by one thread */
    double acc = 0.0, sum = 0.0;
    for (int j0 = 0; j0 < n; j0 += TB) {
        const int j = j0 + tid;
        if (j < n) es[tid] = expd_(dotd_(qs, Kh + (size_t)j * hd, hd) * scale - mx);
        __syncthreads();
        const int m = n - j0 < TB ? n - j0 : TB;
        if (tid < hd)
            for (int i = 0; i < m; i++) acc += es[i] * (double)Vh[(size_t)(j0 + i) * hd + tid];
        if (tid == 0)
            for (int i = 0; i < m; i++) sum += es[i];
        __syncthreads();
    }
    if (tid == 0) tot = sum;
    __syncthreads();
    if (tid < hd) a.O[rt * a.ldo + (size_t)h * hd + tid] = (float)(acc / tot);
}

/* ---- the recurrence ------------------------------------------------------------------------------ */

constexpr int SB = 128; /* threads (state rows) per block */

/* grid (ceil(H dv / SB), n_streams * nt): thread = state row (h, r) of twin run (j, i) */
__global__ void __launch_bounds__(SB) ssm_twin_k_(rsg_twin_ssm_args a)
{
    const int e = blockIdx.x * SB + threadIdx.x;
    if (e >= a.H * a.dv) return;
    const int h = e / a.dv, rr = e % a.dv, j = blockIdx.y / a.nt, i = blockIdx.y % a.nt, dk = a.dk;
    const size_t g = (size_t)j * a.RS + (size_t)a.runs[i];
    float *row = a.S + (((size_t)blockIdx.y * a.H + h) * a.dv + rr) * dk;
    const int hk = h / a.rep;
    for (int t = 0; t < a.T; t++) {
        const size_t rw = g * a.T + t;
        const float alpha = a.alpha[rw * a.ld_a + h];
        const float *k = a.k + rw * a.ld_k + (size_t)hk * dk, *q = a.q + rw * a.ld_q + (size_t)hk * dk;
        const float vr = a.v[rw * a.ld_v + (size_t)h * a.dv + rr];
        if (a.gdn) { /* rs_ssm_gdn_step: w = dot(row, k); ur = beta (v[r] - alpha w); row = alpha row + ur k */
            const float beta = a.beta[rw * a.ld_a + h];
            float w = 0.0f;
            for (int c = 0; c < dk; c++) w += row[c] * k[c];
            const float ur = beta * (vr - alpha * w);
            for (int c = 0; c < dk; c++) row[c] = alpha * row[c] + ur * k[c];
        } else { /* rs_ssm_mamba2_step: row = alpha row + v[r] k */
            for (int c = 0; c < dk; c++) row[c] = alpha * row[c] + vr * k[c];
        }
        float o = 0.0f; /* rs_ssm_output: dot(row, q) */
        for (int c = 0; c < dk; c++) o += row[c] * q[c];
        a.o[rw * a.ld_o + (size_t)h * a.dv + rr] = o;
    }
}

} // namespace

rs_status rsg_attention_twin(const rsg_attn_args *a, rs_cuda_stream s)
{
    RSG_REQUIRE(a, "rsg_attention_twin: NULL arguments");
    RSG_REQUIRE(a->Q && a->Kc && a->Vc && a->O && a->R >= 0 && a->T >= 0 && a->H > 0 && a->Hkv > 0 &&
                    a->H % a->Hkv == 0 && a->hd > 0 && a->hd <= 256 && a->pos0 >= 0 &&
                    (size_t)a->pos0 + (size_t)a->T <= a->cap && a->pos0 + a->T <= 0x7fffffff &&
                    a->q_hstride >= a->hd && a->ldq >= (size_t)(a->H - 1) * a->q_hstride + a->hd &&
                    a->ldo >= (size_t)a->H * a->hd && (size_t)a->R * a->T * a->H <= 0x7fffffffu,
                "rsg_attention_twin: bad arguments (R %d, T %d, H %d, Hkv %d, hd %d (<= 256), pos0 %lld, cap %zu)",
                a->R, a->T, a->H, a->Hkv, a->hd, (long long)a->pos0, a->cap);
    if (a->R == 0 || a->T == 0) return RS_OK;
    attn_twin_k_<<<(unsigned)((size_t)a->R * a->T * a->H), TB, 0, rsg_stream(s)>>>(*a);
    return rsg_launched("rsg_attention_twin");
}

rs_status rsg_twin_ssm(const rsg_twin_ssm_args *a, rs_cuda_stream s)
{
    RSG_REQUIRE(a, "rsg_twin_ssm: NULL arguments");
    RSG_REQUIRE(a->runs && a->alpha && (a->beta || !a->gdn) && a->k && a->q && a->v && a->o && a->S && a->T >= 0 &&
                    a->H > 0 && a->rep > 0 && a->H % a->rep == 0 && a->dk > 0 && a->dv > 0 && a->RS > 0 &&
                    a->n_streams >= 0 && a->nt >= 0 && a->nt <= a->RS && (size_t)a->n_streams * a->nt <= 65535,
                "rsg_twin_ssm: bad arguments (T %d, H %d, rep %d, dk %d, dv %d, RS %d, streams %d, runs %d)", a->T,
                a->H, a->rep, a->dk, a->dv, a->RS, a->n_streams, a->nt);
    if (a->T == 0 || a->n_streams == 0 || a->nt == 0) return RS_OK;
    const dim3 grid((unsigned)((a->H * a->dv + SB - 1) / SB), (unsigned)(a->n_streams * a->nt));
    ssm_twin_k_<<<grid, SB, 0, rsg_stream(s)>>>(*a);
    return rsg_launched("rsg_twin_ssm");
}
