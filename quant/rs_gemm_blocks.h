/* rs_gemm_blocks.h — how the CPU evaluator's double-summed GEMM (eval/model/rs_backend_cpu.c,
 * cpu_linear_f64_) partitions the N output columns: one slab per thread (ceil(N / threads) rounded
 * up to 16 columns), each slab walked in column blocks whose double copies (W rows, Y block) hold at
 * most `blk` doubles each (default 2^25: 256 MB; RS_CPU_F64_BLOCK, a power of two in [2^10, 2^30],
 * for tests). Each block is one cblas_dgemm call, and OpenBLAS picks its kernel, and with it each
 * output's summation order, by the call's shape: the GPU's `--compute twin` (kernels/dense/rs_dense_twin.cu)
 * walks the same partition to sum in the same order. Plain C, header only, also compiled by nvcc. */
#ifndef RS_GEMM_BLOCKS_H
#define RS_GEMM_BLOCKS_H

#include <stddef.h>
#include <stdlib.h>

#define RS_GEMM_F64_BLOCK_DEFAULT ((size_t)1 << 25)

/* columns per thread's slab */
static inline size_t rs_gemm_slab_cols(size_t N, size_t threads)
{
    const size_t s = (N + threads - 1) / threads;
    return (s + 15) / 16 * 16;
}

/* columns per block of a slab of sn columns, for M rows and K: at most blk / max(K, M), a multiple of
 * 16 (at least 16), at most sn */
static inline size_t rs_gemm_f64_block_cols(size_t M, size_t K, size_t sn, size_t blk)
{
    size_t nb = blk / K, mb = blk / M;
    nb = nb < mb ? nb : mb;
    nb = nb < 16 ? 16 : nb / 16 * 16;
    return nb < sn ? nb : sn;
}

/* the block bound from RS_CPU_F64_BLOCK's value v (NULL or "": the default) into *blk; 0 if v is not a
 * power of two in [2^10, 2^30] (*blk untouched) */
static inline int rs_gemm_f64_block_parse(const char *v, size_t *blk)
{
    if (!v || !*v) {
        *blk = RS_GEMM_F64_BLOCK_DEFAULT;
        return 1;
    }
    char *end = NULL;
    const unsigned long long x = strtoull(v, &end, 10);
    if (*end || x < 1024 || x > (1ull << 30) || (x & (x - 1))) return 0;
    *blk = (size_t)x;
    return 1;
}

#endif /* RS_GEMM_BLOCKS_H */
