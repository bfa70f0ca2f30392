/* rs_layers.c — scalar building blocks of the hybrid forward (see rs_layers.h). */
#include "model/rs_layers.h"

#include "replayssm/quant/rs_mathf.h"

#include <math.h>

/* the formulas on rs_mathf.h's exp / log1p, the GPU's twins (kernels/dense/rs_dense_ops.cu): the
 * same bits on both where glibc's and CUDA's libraries would round differently */
float rs_sigmoid(float x) { return rs_sigmoidf(x); }

float rs_silu(float x) { return rs_siluf(x); }

float rs_softplus(float x) { return rs_softplusf(x); }

/* 1 / sqrt(mean(x^2) + eps) for x[n] (mean in double, then fp32 like torch) */
static float inv_rms_(const float *x, size_t n, float eps)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    const float var = (float)(ss / (double)n);
    return 1.0f / sqrtf(var + eps);
}

void rs_rmsnorm(const float *x, size_t n, const float *w, float eps, rs_norm_weight kind, float *y)
{
    const float r = inv_rms_(x, n, eps);
    if (kind == RS_NORM_ONE_PLUS) {
        for (size_t i = 0; i < n; i++) y[i] = (x[i] * r) * (1.0f + w[i]);
    } else {
        for (size_t i = 0; i < n; i++) y[i] = w[i] * (x[i] * r);
    }
}

void rs_rmsnorm_gated(const float *x, const float *z, size_t n, size_t gs, const float *w,
                      size_t w_len, float eps, rs_gate_order order, float *y)
{
    for (size_t g0 = 0; g0 < n; g0 += gs) {
        const float *xg = x + g0, *zg = z + g0;
        const float *wg = (w_len == n) ? w + g0 : w;
        float *yg = y + g0;
        if (order == RS_GATE_BEFORE_NORM) {
            /* Zamba2RMSNormGated: t = x * silu(z); y = w * (t * rsqrt(mean(t^2) + eps)) */
            for (size_t i = 0; i < gs; i++) yg[i] = xg[i] * rs_silu(zg[i]);
            const float r = inv_rms_(yg, gs, eps);
            for (size_t i = 0; i < gs; i++) yg[i] = wg[i] * (yg[i] * r);
        } else {
            /* Qwen3_5RMSNormGated: y = (w * (x * rsqrt(mean(x^2) + eps))) * silu(z) */
            const float r = inv_rms_(xg, gs, eps);
            for (size_t i = 0; i < gs; i++) yg[i] = (wg[i] * (xg[i] * r)) * rs_silu(zg[i]);
        }
    }
}

void rs_l2norm(float *x, size_t n, float eps)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    const float r = 1.0f / sqrtf((float)ss + eps);
    for (size_t i = 0; i < n; i++) x[i] *= r;
}

void rs_conv1d_causal(const float *x, size_t ldx, size_t T, float *state, const float *w,
                      const float *bias, size_t K, size_t c0, size_t c1, int silu, float *out,
                      size_t ldo)
{
    const size_t km1 = K - 1;
    for (size_t c = c0; c < c1; c++) {
        float *st = state + c * km1; /* [K-1] previous inputs, oldest first */
        const float *wc = w + c * K;
        for (size_t t = 0; t < T; t++) {
            const float xt = x[t * ldx + c];
            float acc = 0.0f;
            for (size_t i = 0; i < km1; i++) acc += wc[i] * st[i];
            acc += wc[km1] * xt;
            if (bias) acc += bias[c];
            out[t * ldo + c] = silu ? rs_silu(acc) : acc;
            for (size_t i = 0; i + 1 < km1; i++) st[i] = st[i + 1]; /* shift the window */
            if (km1 > 0) st[km1 - 1] = xt;
        }
    }
}

void rs_rope_inv_freq(double theta, size_t rot, float *inv_freq)
{
    const float base = (float)theta;
    for (size_t i = 0; i < rot / 2; i++) {
        const float e = (float)(2 * i) / (float)rot;       /* arange(0, rot, 2).float() / rot */
        inv_freq[i] = 1.0f / powf(base, e);                 /* 1.0 / (base ** e) in fp32 */
    }
}

void rs_rope_cos_sin(const float *inv_freq, size_t rot, size_t pos, float *cos_, float *sin_)
{
    const float p = (float)pos;
    for (size_t i = 0; i < rot / 2; i++) {
        const float a = inv_freq[i] * p; /* torch's fp32 angle */
        rs_cossinf(a, &cos_[i], &sin_[i]); /* rs_mathf.h: the GPU's rope_k_ computes the same bits */
    }
}

void rs_rope_apply(float *x, size_t rot, const float *cos_, const float *sin_)
{
    const size_t h = rot / 2;
    for (size_t i = 0; i < h; i++) {
        const float a = x[i], b = x[i + h];
        x[i] = a * cos_[i] - b * sin_[i];     /* q*cos + rotate_half(q)*sin, rotate_half = (-x2, x1) */
        x[i + h] = b * cos_[i] + a * sin_[i];
    }
}

void rs_softmax_inplace(float *s, size_t n)
{
    float mx = s[0];
    for (size_t i = 1; i < n; i++)
        if (s[i] > mx) mx = s[i];
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        s[i] = rs_expf(s[i] - mx); /* rs_mathf.h: correctly rounded (glibc's expf: <= 0.502 ulp) */
        sum += s[i];
    }
    const float inv = (float)(1.0 / sum);
    for (size_t i = 0; i < n; i++) s[i] *= inv;
}

void rs_attention_row_ref(const float *q, const float *K, const float *V, size_t n, size_t hd,
                          float scale, float *scores, float *out)
{
    for (size_t j = 0; j < n; j++) {
        float acc = 0.0f;
        for (size_t d = 0; d < hd; d++) acc += q[d] * K[j * hd + d];
        scores[j] = acc * scale;
    }
    rs_softmax_inplace(scores, n);
    for (size_t d = 0; d < hd; d++) out[d] = 0.0f;
    for (size_t j = 0; j < n; j++)
        for (size_t d = 0; d < hd; d++) out[d] += scores[j] * V[j * hd + d];
}
