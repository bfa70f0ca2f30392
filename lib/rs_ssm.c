/* rs_ssm.c — conventional Mamba-2 and GDN steps (fp32 CPU reference). */
#include "rs_ssm.h"

#include <math.h>

const char *rs_ssm_kind_name(rs_ssm_kind kind)
{
    return kind == RS_SSM_GDN ? "gdn" : "mamba2";
}

static float dot_(const float *a, const float *b, size_t n)
{
    float acc = 0.0f;
    for (size_t c = 0; c < n; c++) acc += a[c] * b[c];
    return acc;
}

void rs_ssm_output(const float *S, size_t d_v, size_t d_k, const float *q, float *o)
{
    for (size_t r = 0; r < d_v; r++) o[r] = dot_(S + r * d_k, q, d_k);
}

void rs_ssm_mamba2_step(float *S, size_t d_v, size_t d_k, float alpha, const float *v,
                        const float *k, const float *q, float *o)
{
    for (size_t r = 0; r < d_v; r++) {
        float *row = S + r * d_k;
        const float vr = v[r];
        for (size_t c = 0; c < d_k; c++) row[c] = alpha * row[c] + vr * k[c];
        if (o) o[r] = dot_(row, q, d_k);
    }
}

void rs_ssm_gdn_step(float *S, size_t d_v, size_t d_k, float alpha, float beta,
                     const float *v, const float *k, const float *q, float *u, float *o)
{
    for (size_t r = 0; r < d_v; r++) {
        float *row = S + r * d_k;
        const float w = dot_(row, k, d_k);               /* (S_{t-1} k)[r] */
        const float ur = beta * (v[r] - alpha * w);
        u[r] = ur;
        for (size_t c = 0; c < d_k; c++) row[c] = alpha * row[c] + ur * k[c];
        if (o) o[r] = dot_(row, q, d_k);
    }
}

size_t rs_ssm_first_nonfinite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}
