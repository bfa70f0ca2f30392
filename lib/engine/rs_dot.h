/* rs_dot.h — the engine's fp32 dot product, acc = 0; acc += a[c] * b[c] for c = 0 .. n-1 in
 * this order (one rounding per multiply and per add; -ffp-contract=off), for one row and for
 * several rows at once.
 *
 * Why several rows: the single-row loop is one chain of dependent adds, so a d_k = 128 dot
 * costs ~128 add latencies. The state engine takes such dots for every row of a state
 * (S k, S q). rs_dot_rows() runs 8 rows' chains interleaved; each row still gets exactly
 * the single-row operations in the single-row order, so the results are bit-identical to
 * rs_dot_seq() (tests/test_engine_fast.c checks it) while the adds of different rows overlap.
 */
#ifndef RS_DOT_H
#define RS_DOT_H

#include <stddef.h>

#ifdef RS_ENGINE_F64_DIAG
/* Diagnostic build only (-DRS_ENGINE_F64_DIAG, never the default; docs/gpu-evaluator.md "Measured performance"):
 * every dot product of the state engine summed in double and rounded once, every y = a y + b x
 * as fl(a y + b x) from double (products exact), i.e. the recurrence's per-step results correctly
 * rounded (nearly always) instead of fp32's order-dependent roundings. Measures how far the fp32
 * recurrence's rounding moves the evaluator's NLL (the GPU's scan rounds it in another order). */
static inline float rs_dot_seq(const float *a, const float *b, size_t n)
{
    double acc = 0.0;
    for (size_t c = 0; c < n; c++) acc += (double)a[c] * (double)b[c];
    return (float)acc;
}
static inline void rs_dot_ptrs(const float *const *a, size_t m, const float *b, size_t n, float *out)
{
    for (size_t j = 0; j < m; j++) out[j] = rs_dot_seq(a[j], b, n);
}
static inline void rs_dot_rows(const float *A, size_t lda, size_t m, const float *b, size_t n, float *out)
{
    for (size_t i = 0; i < m; i++) out[i] = rs_dot_seq(A + i * lda, b, n);
}
typedef float rs_v4f __attribute__((vector_size(16)));
static inline void rs_axpby(float *y, float a, float b, const float *x, size_t n)
{
    for (size_t c = 0; c < n; c++) y[c] = (float)((double)a * (double)y[c] + (double)b * (double)x[c]);
}
static inline void rs_axpy(float *y, float b, const float *x, size_t n) { rs_axpby(y, 1.0f, b, x, n); }
#else

/* sum_c a[c] * b[c], sequentially */
static inline float rs_dot_seq(const float *a, const float *b, size_t n)
{
    float acc = 0.0f;
    for (size_t c = 0; c < n; c++) acc += a[c] * b[c];
    return acc;
}

/* out[j] = rs_dot_seq(a[j], b, n) for j < m (rows given by pointers, e.g. ring records):
 * 8 rows' chains interleaved, each in the single-row order. */
static inline void rs_dot_ptrs(const float *const *a, size_t m, const float *b, size_t n,
                               float *out)
{
    size_t j = 0;
    for (; j + 8 <= m; j += 8) {
        const float *a0 = a[j], *a1 = a[j + 1], *a2 = a[j + 2], *a3 = a[j + 3];
        const float *a4 = a[j + 4], *a5 = a[j + 5], *a6 = a[j + 6], *a7 = a[j + 7];
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;
        for (size_t c = 0; c < n; c++) {
            const float bc = b[c];
            s0 += a0[c] * bc;
            s1 += a1[c] * bc;
            s2 += a2[c] * bc;
            s3 += a3[c] * bc;
            s4 += a4[c] * bc;
            s5 += a5[c] * bc;
            s6 += a6[c] * bc;
            s7 += a7[c] * bc;
        }
        out[j] = s0;
        out[j + 1] = s1;
        out[j + 2] = s2;
        out[j + 3] = s3;
        out[j + 4] = s4;
        out[j + 5] = s5;
        out[j + 6] = s6;
        out[j + 7] = s7;
    }
    for (; j < m; j++) out[j] = rs_dot_seq(a[j], b, n);
}

/* out[i] = rs_dot_seq(A + i * lda, b, n) for i < m (A [m][lda], out [m]; out must not
 * alias A or b): rs_dot_ptrs over the row pointers, 8 rows at a time. */
static inline void rs_dot_rows(const float *A, size_t lda, size_t m, const float *b, size_t n,
                               float *out)
{
    const float *rows[8] = {0}; /* (initialised: silences a -Wmaybe-uninitialized false positive) */
    for (size_t i0 = 0; i0 < m; i0 += 8) {
        const size_t k = m - i0 < 8 ? m - i0 : 8;
        for (size_t i = 0; i < k; i++) rows[i] = A + (i0 + i) * lda;
        rs_dot_ptrs(rows, k, b, n, out + i0);
    }
}

/* y[c] = a * y[c] + b * x[c] for c < n: two roundings of products and one of the sum per
 * element, exactly the scalar expression; written with 4-lane vectors (lane-wise IEEE ops,
 * no contraction) because the compiler does not vectorise it by itself at -O2 (it cannot
 * prove y and x do not overlap). y must not partially overlap x. */
typedef float rs_v4f __attribute__((vector_size(16)));

static inline void rs_axpby(float *y, float a, float b, const float *x, size_t n)
{
    size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        rs_v4f y0, y1, x0, x1;
        __builtin_memcpy(&y0, y + c, 16);
        __builtin_memcpy(&y1, y + c + 4, 16);
        __builtin_memcpy(&x0, x + c, 16);
        __builtin_memcpy(&x1, x + c + 4, 16);
        y0 = a * y0 + b * x0;
        y1 = a * y1 + b * x1;
        __builtin_memcpy(y + c, &y0, 16);
        __builtin_memcpy(y + c + 4, &y1, 16);
    }
    for (; c < n; c++) y[c] = a * y[c] + b * x[c];
}

/* y[c] = y[c] + b * x[c] for c < n: rs_axpby with a = 1 (1 * y is exact, so the bits are those
 * of y + b * x, and gcc folds the multiply: the same machine code as a separate loop). */
static inline void rs_axpy(float *y, float b, const float *x, size_t n) { rs_axpby(y, 1.0f, b, x, n); }

#endif /* RS_ENGINE_F64_DIAG */
#endif /* RS_DOT_H */
