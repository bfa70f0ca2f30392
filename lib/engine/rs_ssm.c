/* rs_ssm.c — conventional Mamba-2 and GDN steps (fp32 CPU reference). */
#include "replayssm/engine/rs_ssm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rs_dot.h"

const char *rs_ssm_kind_name(rs_ssm_kind kind)
{
    return kind == RS_SSM_GDN ? "gdn" : "mamba2";
}

/* Rows are processed 8 at a time so that their dot products (rs_dot_rows) overlap; every
 * row gets exactly the operations, in the order, of the one-row loop
 *   w = dot(row, k); u = beta (v - alpha w); row = alpha row + u k; o = dot(row, q)
 * and rows do not interact, so the results are bit-identical to that loop. */
#define RS_SSM_RB 8

void rs_ssm_output(const float *S, size_t d_v, size_t d_k, const float *q, float *o)
{
    rs_dot_rows(S, d_k, d_v, q, d_k, o);
}

void rs_ssm_mamba2_step(float *S, size_t d_v, size_t d_k, float alpha, const float *v,
                        const float *k, const float *q, float *o)
{
    for (size_t r0 = 0; r0 < d_v; r0 += RS_SSM_RB) {
        const size_t m = d_v - r0 < RS_SSM_RB ? d_v - r0 : RS_SSM_RB;
        for (size_t r = r0; r < r0 + m; r++) {
            float *row = S + r * d_k;
            rs_axpby(row, alpha, v[r], k, d_k); /* row = alpha row + v[r] k */
        }
        if (o) rs_dot_rows(S + r0 * d_k, d_k, m, q, d_k, o + r0);
    }
}

void rs_ssm_gdn_step(float *S, size_t d_v, size_t d_k, float alpha, float beta,
                     const float *v, const float *k, const float *q, float *u, float *o)
{
    float w[RS_SSM_RB];
    for (size_t r0 = 0; r0 < d_v; r0 += RS_SSM_RB) {
        const size_t m = d_v - r0 < RS_SSM_RB ? d_v - r0 : RS_SSM_RB;
        rs_dot_rows(S + r0 * d_k, d_k, m, k, d_k, w); /* (S_{t-1} k)[r] */
        for (size_t i = 0; i < m; i++) {
            const size_t r = r0 + i;
            float *row = S + r * d_k;
            const float ur = beta * (v[r] - alpha * w[i]);
            u[r] = ur;
            rs_axpby(row, alpha, ur, k, d_k); /* row = alpha row + ur k */
        }
        if (o) rs_dot_rows(S + r0 * d_k, d_k, m, q, d_k, o + r0);
    }
}

/* Blocks of 64: a branch-free OR of "not finite" flags (vectorisable), then the exact index
 * only in a block that has one. Same answer as the element-by-element scan. */
size_t rs_ssm_first_nonfinite(const float *x, size_t n)
{
    for (size_t i0 = 0; i0 < n; i0 += 64) {
        const size_t m = n - i0 < 64 ? n - i0 : 64;
        uint32_t bad = 0;
        for (size_t j = 0; j < m; j++) { /* exponent all ones: Inf or NaN (integer test) */
            uint32_t u;
            memcpy(&u, x + i0 + j, sizeof u);
            bad |= (u & 0x7F800000u) == 0x7F800000u;
        }
        if (!bad) continue;
        for (size_t j = 0; j < m; j++)
            if (!isfinite(x[i0 + j])) return i0 + j;
    }
    return n;
}
