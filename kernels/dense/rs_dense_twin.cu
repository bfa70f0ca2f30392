/* rs_dense_twin.cu — the kernels of the twin compute mode (`--compute twin`, rs_dense_ops.h): the CPU
 * evaluator's attention (eval/model/rs_backend_cpu.c cpu_attention_f64_) and the CPU engine's
 * conventional fp32 recurrence (engine/rs_ssm.c, engine/rs_dot.h) on the GPU, operation for
 * operation. Built like every kernels/ file with --fmad=false (nothing contracted, double or float),
 * so each +, *, / is the IEEE operation the host's -ffp-contract=off code does, in the same order:
 * the same bits. Simple on purpose (one thread per state row; one block per attention row, double on
 * the CUDA cores): this mode checks the fast modes against the CPU, it is not one of them. */
#include <math.h>
#include <stdint.h>

#include "replayssm/quant/rs_mathf.h"
#include "rs_cuda_common.cuh"
#include "rs_dense_ops.h"
#include "rs_gemm_blocks.h"

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

/* ---- the GEMM: OpenBLAS's dgemm order ----------------------------------------------------------- */
/* The CPU backend's GEMM (cpu_linear_f64_) splits the N output columns into one slab per CPU thread
 * (ceil(N / threads) rounded up to 16) and calls cblas_dgemm(RowMajor, NoTrans, Trans) per slab on
 * double copies of X and W. OpenBLAS 0.3.21's SkylakeX / Cooperlake dgemm (the development
 * machine's; the device host's gave the same bits) sums each output as follows, found by
 * comparing it with emulations on 1080 shapes (3.9M outputs, every one equal; the small kernel's
 * source: kernel/x86_64/dgemm_small_kernel_tn_skylakex.c):
 *   the small-matrix kernel (the column-major TN case: M' = slab width nn, N' = M rows), taken when
 *   M nn K <= 1e6 and M nn <= 1200 and K >= 32: 8 lane sums s_l = sum over k = l mod 8 in k order,
 *   then ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) when the output's slab column < (nn & ~3)
 *   or its row < (M & ~3) (the 4-wide REDUCE_4 paths), else ((s0 + s4) + (s2 + s6)) + ((s1 + s5) +
 *   (s3 + s7)) (GCC's _mm512_reduce_add_pd);
 *   otherwise the blocked kernel: K in blocks (GEMM_Q = 384: a remainder of >= 768 takes 384, one in
 *   (384, 768) is halved and rounded up to a multiple of GEMM_UNROLL_M = 16), each block's products
 *   summed in k order from 0, the block sums added into the output in order.
 * Every product of two floats is exact in double, so fma or not is the same. The twin does exactly
 * this per output (rows of M: the CPU's GEMM of one stream, Mc = (R + 1) n rows), then the CPU's
 * rounding (float)(beta y + acc). */
constexpr int GT = 64, GKT = 16; /* output tile, K tile of the blocked kernel (block boundaries are multiples of 16) */

__device__ __forceinline__ int kblock_(int rem) /* OpenBLAS level3.c's min_l for GEMM_Q 384, unroll 16 */
{
    if (rem >= 768) return 384;
    if (rem > 384) return ((rem / 2 + 15) / 16) * 16;
    return rem;
}

__device__ __forceinline__ float gemm_out_(double acc, float beta, const float *y)
{
    return beta == 0.0f ? (float)acc : (float)((double)beta * (double)*y + acc); /* cpu_linear_f64_ */
}

/* the blocked kernel's order; grid (ceil(nn / 64), ceil(M / 64)), 256 threads, 4 x 4 outputs each */
__global__ void __launch_bounds__(256) gemm_twin_k_(int M, int nn, int K, const float *X, size_t ldx, const float *W,
                                                    float beta, float *Y, size_t ldy)
{
    __shared__ double xs[GKT][GT + 1], ws[GKT][GT + 1];
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4, i0 = blockIdx.y * GT, j0 = blockIdx.x * GT;
    double acc[4][4], c[4][4];
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int b = 0; b < 4; b++) acc[a][b] = c[a][b] = 0.0;
    int bend = kblock_(K);
    for (int k0 = 0; k0 < K; k0 += GKT) {
        if (k0 == bend) { /* a block boundary: its sum into the output, a fresh sum for the next */
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    c[a][b] = c[a][b] + acc[a][b];
                    acc[a][b] = 0.0;
                }
            bend += kblock_(K - bend);
        }
        for (int e = threadIdx.x; e < GT * GKT; e += 256) {
            const int r = e / GKT, kk = e % GKT, k = k0 + kk;
            xs[kk][r] = i0 + r < M && k < K ? (double)X[(size_t)(i0 + r) * ldx + k] : 0.0;
            ws[kk][r] = j0 + r < nn && k < K ? (double)W[(size_t)(j0 + r) * K + k] : 0.0;
        }
        __syncthreads();
        const int km = K - k0 < GKT ? K - k0 : GKT;
        for (int kk = 0; kk < km; kk++) {
            double xv[4], wv[4];
#pragma unroll
            for (int a = 0; a < 4; a++) xv[a] = xs[kk][ty + 16 * a];
#pragma unroll
            for (int b = 0; b < 4; b++) wv[b] = ws[kk][tx + 16 * b];
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int b = 0; b < 4; b++) acc[a][b] = acc[a][b] + xv[a] * wv[b];
        }
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int b = 0; b < 4; b++) {
            const int i = i0 + ty + 16 * a, j = j0 + tx + 16 * b;
            if (i < M && j < nn) {
                float *y = Y + (size_t)i * ldy + j;
                *y = gemm_out_(c[a][b] + acc[a][b], beta, y);
            }
        }
}

/* the small kernel's order, one thread per output of the slab (M x nn); Mc: rows of one CPU GEMM */
__global__ void __launch_bounds__(256) gemm_twin_small_k_(int M, int nn, int K, int Mc, const float *X, size_t ldx,
                                                          const float *W, float beta, float *Y, size_t ldy)
{
    const size_t e = (size_t)blockIdx.x * 256 + threadIdx.x;
    if (e >= (size_t)M * nn) return;
    const int i = (int)(e / (size_t)nn), j = (int)(e % (size_t)nn), ic = i % Mc;
    const float *x = X + (size_t)i * ldx, *w = W + (size_t)j * K;
    double s[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int k = 0; k < K; k++) s[k & 7] = s[k & 7] + (double)x[k] * (double)w[k];
    const double acc = (j < (nn & ~3) || ic < (Mc & ~3)) ? ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
                                                        : ((s[4] + s[0]) + (s[6] + s[2])) + ((s[5] + s[1]) + (s[7] + s[3]));
    float *y = Y + (size_t)i * ldy + j;
    *y = gemm_out_(acc, beta, y);
}

} // namespace

rs_status rsg_linear_twin(size_t M, size_t N, size_t K, const float *X, size_t ldx, const float *W, float beta, float *Y,
                          size_t ldy, size_t Mc, int cpu_threads, size_t blk, rs_cuda_stream s)
{
    RS_CHECK(X && W && Y && K >= 1 && ldx >= K && ldy >= N && Mc >= 1 && cpu_threads >= 1 && blk >= 1024 && M < 0x7fffffff &&
                    N < 0x7fffffff && K < 0x7fffffff && (M == 0 || M % Mc == 0), RS_E_INVAL,
                "rsg_linear_twin: bad arguments (M %zu, N %zu, K %zu, ldx %zu, ldy %zu, Mc %zu, threads %d)", M, N, K,
                ldx, ldy, Mc, cpu_threads);
    if (M == 0 || N == 0) return RS_OK;
    /* cpu_linear_f64_'s partition (rs_gemm_blocks.h): a slab per CPU thread, each in column blocks of
     * at most blk doubles; every block is one dgemm call, whose shape picks OpenBLAS's kernel */
    const size_t slab = rs_gemm_slab_cols(N, (size_t)cpu_threads);
    for (size_t s0 = 0; s0 < N; s0 += slab)
    for (size_t n0 = s0, sn = s0 + slab <= N ? slab : N - s0, nb = rs_gemm_f64_block_cols(Mc, K, sn, blk); n0 < s0 + sn;
         n0 += nb) {
        const size_t nn = n0 + nb <= s0 + sn ? nb : s0 + sn - n0;
        const double mnk = (double)Mc * (double)nn * (double)K;
        const bool small = mnk <= 1e6 && Mc * nn <= 1200 && K >= 32; /* OpenBLAS's small-kernel permit (TN) */
        if (small) {
            const size_t n = M * nn;
            RS_CHECK((n + 255) / 256 <= 0x7fffffffu, RS_E_INVAL, "rsg_linear_twin: too many outputs");
            gemm_twin_small_k_<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(
                (int)M, (int)nn, (int)K, (int)Mc, X, ldx, W + n0 * K, beta, Y + n0, ldy);
        } else {
            RS_CHECK((M + GT - 1) / GT <= 65535, RS_E_INVAL, "rsg_linear_twin: %zu rows exceed the grid", M);
            const dim3 grid((unsigned)((nn + GT - 1) / GT), (unsigned)((M + GT - 1) / GT));
            gemm_twin_k_<<<grid, 256, 0, s>>>((int)M, (int)nn, (int)K, X, ldx, W + n0 * K, beta, Y + n0, ldy);
        }
        const rs_status st = rs_cuda_launch_status("rsg_linear_twin");
        if (st != RS_OK) return st;
    }
    return RS_OK;
}

rs_status rsg_attention_twin(const rsg_attn_args *a, rs_cuda_stream s)
{
    RS_CHECK(a, RS_E_INVAL, "rsg_attention_twin: NULL arguments");
    RS_CHECK(a->Q && a->Kc && a->Vc && a->O && a->R >= 0 && a->T >= 0 && a->H > 0 && a->Hkv > 0 &&
                    a->H % a->Hkv == 0 && a->hd > 0 && a->hd <= 256 && a->pos0 >= 0 &&
                    (size_t)a->pos0 + (size_t)a->T <= a->cap && a->pos0 + a->T <= 0x7fffffff &&
                    a->q_hstride >= a->hd && a->ldq >= (size_t)(a->H - 1) * a->q_hstride + a->hd &&
                    a->ldo >= (size_t)a->H * a->hd && (size_t)a->R * a->T * a->H <= 0x7fffffffu, RS_E_INVAL,
                "rsg_attention_twin: bad arguments (R %d, T %d, H %d, Hkv %d, hd %d (<= 256), pos0 %lld, cap %zu)",
                a->R, a->T, a->H, a->Hkv, a->hd, (long long)a->pos0, a->cap);
    if (a->R == 0 || a->T == 0) return RS_OK;
    attn_twin_k_<<<(unsigned)((size_t)a->R * a->T * a->H), TB, 0, s>>>(*a);
    return rs_cuda_launch_status("rsg_attention_twin");
}

rs_status rsg_twin_ssm(const rsg_twin_ssm_args *a, rs_cuda_stream s)
{
    RS_CHECK(a, RS_E_INVAL, "rsg_twin_ssm: NULL arguments");
    RS_CHECK(a->runs && a->alpha && (a->beta || !a->gdn) && a->k && a->q && a->v && a->o && a->S && a->T >= 0 &&
                    a->H > 0 && a->rep > 0 && a->H % a->rep == 0 && a->dk > 0 && a->dv > 0 && a->RS > 0 &&
                    a->n_streams >= 0 && a->nt >= 0 && a->nt <= a->RS && (size_t)a->n_streams * a->nt <= 65535, RS_E_INVAL,
                "rsg_twin_ssm: bad arguments (T %d, H %d, rep %d, dk %d, dv %d, RS %d, streams %d, runs %d)", a->T,
                a->H, a->rep, a->dk, a->dv, a->RS, a->n_streams, a->nt);
    if (a->T == 0 || a->n_streams == 0 || a->nt == 0) return RS_OK;
    const dim3 grid((unsigned)((a->H * a->dv + SB - 1) / SB), (unsigned)(a->n_streams * a->nt));
    ssm_twin_k_<<<grid, SB, 0, s>>>(*a);
    return rs_cuda_launch_status("rsg_twin_ssm");
}
