/* rs_mathf.h — the model forward's transcendental functions, one source for the CPU and the GPU
 * (RS_HD_INLINE: the C compiler and nvcc compile the same code; built without contraction on both,
 * -ffp-contract=off / --fmad=false), so that the CPU reference and the GPU evaluator compute the same
 * bits where the libraries would not: glibc's expf / log1pf (<= 0.502 ulp) and CUDA's (a few ulps)
 * round differently, and the decays alpha = exp(..) of the recurrences carry every ulp into the
 * state along the whole sequence (tests/drift/exp_shim.c measures how far exp / log1p rounding
 * alone moves the reference NLL; docs/gpu-evaluator.md "Measured performance" the GPU-vs-CPU drift).
 *
 *   rs_expf(x)     e^x rounded to float: Cody-Waite reduction x = k ln2 + r (|r| <= ln2 / 2, ln2 in
 *                  two parts, k ln2_hi exact), e^r by its Taylor series to degree 13 in double
 *                  (truncation < 2^-56), times 2^k by exponent bits, then one rounding to float:
 *                  the double result is within a few 2^-53 of e^x, so the float is the correctly
 *                  rounded one unless e^x lies within ~2^-50 relative of a rounding boundary.
 *                  x > 89: +inf; x < -104: +0 (e^-104 < 2^-150); NaN stays NaN.
 *   rs_log1pf(x)   log(1 + x) rounded to float, x >= -1 (below: NaN; -1: -inf): u = 1 + x in double
 *                  with the correction (u - 1 - x) / u for its rounding, log u = e ln2 + 2 atanh(s),
 *                  s = (m - 1) / (m + 1), m in [sqrt(1/2), sqrt(2)), the series to s^23 (< 2^-58).
 *   rs_sigmoidf, rs_siluf, rs_softplusf  the formulas of rs_layers.c (torch's) on these two.
 *   rs_cossinf(a)  cos a and sin a of a float angle (RoPE: a = fl(inv_freq * position), torch's fp32
 *                  angle), each rounded once to float from double: Cody-Waite reduction by pi/2 in
 *                  three 33-bit parts (fdlibm's; k pi/2_1 exact for |k| <= 2^20, i.e. |a| <= 1.6e6:
 *                  RoPE angles are <= the position), the Taylor series of sin / cos on |r| <= pi/4 to
 *                  degree 21 / 20 (truncation < 1e-23). glibc's cosf / sinf and CUDA's round
 *                  differently (CUDA's by a few ulps); this one is the same bits on both.
 * Only +, -, *, / on doubles and integer bit operations: no library function, so nothing differs
 * between the two compilers' math libraries. tests/test_mathf.c checks them against glibc's double
 * functions and long double. */
#ifndef RS_MATHF_H
#define RS_MATHF_H

#include <math.h> /* INFINITY, NAN: constants only, no function of the library is called */
#include <stdint.h>
#include <string.h>

#include "replayssm/quant/rs_hostdev.h"

RS_HD_INLINE double rs_mathf_pow2_(int k) /* 2^k for -1022 <= k <= 1023 */
{
    const uint64_t b = (uint64_t)(k + 1023) << 52;
    double d;
#ifdef __CUDA_ARCH__
    d = __longlong_as_double((long long)b);
#else
    memcpy(&d, &b, sizeof d);
#endif
    return d;
}

RS_HD_INLINE uint64_t rs_mathf_bits_(double d)
{
    uint64_t b;
#ifdef __CUDA_ARCH__
    b = (uint64_t)__double_as_longlong(d);
#else
    memcpy(&b, &d, sizeof b);
#endif
    return b;
}

/* e^x in double for -104 <= x <= 89 (x a float) */
RS_HD_INLINE double rs_mathf_exp_d_(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01; /* fdlibm: 32 significant bits, k ln2_hi exact */
    const double ln2_lo = 1.90821492927058770002e-10;
    const double inv_ln2 = 1.44269504088896338700e+00;
    const double shift = 6755399441055744.0; /* 1.5 x 2^52: adding and subtracting rounds to an integer */
    const double kd = (x * inv_ln2 + shift) - shift;
    const int k = (int)kd;
    const double r = (x - kd * ln2_hi) - kd * ln2_lo; /* |r| <= ~0.347 */
    /* e^r = sum r^n / n!, n <= 13, Horner from the top */
    double p = 1.0 / 6227020800.0; /* 1/13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return p * rs_mathf_pow2_(k);
}

RS_HD_INLINE float rs_expf(float x)
{
    if (!(x == x)) return x + x; /* NaN, quietened */
    if (x > 89.0f) return INFINITY;
    if (x < -104.0f) return 0.0f;
    return (float)rs_mathf_exp_d_((double)x);
}

/* log u for a finite double u > 0 */
RS_HD_INLINE double rs_mathf_log_d_(double u)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double sqrt2 = 1.41421356237309514547e+00;
    const uint64_t b = rs_mathf_bits_(u);
    int e = (int)((b >> 52) & 0x7FF) - 1023; /* u is normal here (u >= 2^-126 / 2 for our callers) */
    double m = u * rs_mathf_pow2_(-e);       /* [1, 2) */
    if (m > sqrt2) m *= 0.5, e += 1;         /* [sqrt(1/2), sqrt(2)) */
    const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    /* 2 atanh(s) = 2 (s + s^3/3 + ... + s^23/23) */
    double q = 1.0 / 23.0;
    q = q * s2 + 1.0 / 21.0;
    q = q * s2 + 1.0 / 19.0;
    q = q * s2 + 1.0 / 17.0;
    q = q * s2 + 1.0 / 15.0;
    q = q * s2 + 1.0 / 13.0;
    q = q * s2 + 1.0 / 11.0;
    q = q * s2 + 1.0 / 9.0;
    q = q * s2 + 1.0 / 7.0;
    q = q * s2 + 1.0 / 5.0;
    q = q * s2 + 1.0 / 3.0;
    q = q * s2 + 1.0;
    const double lm = 2.0 * s * q;
    return ((double)e * ln2_hi + lm) + (double)e * ln2_lo;
}

RS_HD_INLINE float rs_log1pf(float x)
{
    if (!(x == x)) return x + x;
    if (x < -1.0f) return NAN;
    if (x == -1.0f) return -INFINITY;
    if (x == INFINITY) return x;
    if (x > 3.0e38f) return (float)rs_mathf_log_d_((double)x); /* 1 + x == x in double as well */
    const double y = (double)x;
    if (y > -0x1.0p-30 && y < 0x1.0p-30) return (float)(y - 0.5 * y * y); /* |error| < y^3 / 3 */
    const double u = 1.0 + y;
    /* log(1 + y) = log u - (u - 1 - y) / u: the rounding of 1 + y, to first order */
    return (float)(rs_mathf_log_d_(u) - ((u - 1.0) - y) / u);
}

RS_HD_INLINE float rs_sigmoidf(float x)
{
    /* split by sign so exp never overflows (rs_layers.c, torch) */
    if (x >= 0.0f) return 1.0f / (1.0f + rs_expf(-x));
    const float e = rs_expf(x);
    return e / (1.0f + e);
}

RS_HD_INLINE float rs_siluf(float x) { return x * rs_sigmoidf(x); }

/* torch.nn.functional.softplus(x, beta = 1, threshold = 20) */
RS_HD_INLINE float rs_softplusf(float x) { return x > 20.0f ? x : rs_log1pf(rs_expf(x)); }

/* sin x and cos x in double for |x| <= 2^20 pi / 2 (beyond: same bits on both compilers still, but
 * k pi/2_1 is no longer exact and the reduction loses accuracy) */
RS_HD_INLINE void rs_mathf_sincos_d_(double x, double *s, double *c)
{
    const double two_over_pi = 6.36619772367581382433e-01;
    const double p1 = 1.57079632673412561417e+00; /* pi / 2, first 33 bits (fdlibm pio2_1) */
    const double p2 = 6.07710050630396597660e-11; /* next 33 bits (pio2_2) */
    const double p3 = 2.02226624871116645580e-21; /* next 33 bits (pio2_3) */
    const double shift = 6755399441055744.0;
    const double kd = (x * two_over_pi + shift) - shift;
    const long long k = (long long)kd;
    const double r = ((x - kd * p1) - kd * p2) - kd * p3; /* |r| <= ~pi / 4 */
    const double r2 = r * r;
    /* sin r = r (1 - r^2/3! + r^4/5! - ... - r^20/21!), Horner from the top */
    double ps = -1.0 / 51090942171709440000.0; /* -1/21! */
    ps = ps * r2 + 1.0 / 121645100408832000.0; /* 1/19! */
    ps = ps * r2 - 1.0 / 355687428096000.0;    /* 1/17! */
    ps = ps * r2 + 1.0 / 1307674368000.0;      /* 1/15! */
    ps = ps * r2 - 1.0 / 6227020800.0;         /* 1/13! */
    ps = ps * r2 + 1.0 / 39916800.0;           /* 1/11! */
    ps = ps * r2 - 1.0 / 362880.0;             /* 1/9! */
    ps = ps * r2 + 1.0 / 5040.0;               /* 1/7! */
    ps = ps * r2 - 1.0 / 120.0;
    ps = ps * r2 + 1.0 / 6.0;
    ps = ps * r2;                              /* r^2/3! - ... */
    const double sr = r - r * ps;
    /* cos r = 1 - r^2/2! + r^4/4! - ... + r^20/20! */
    double pc = 1.0 / 2432902008176640000.0;   /* 1/20! */
    pc = pc * r2 - 1.0 / 6402373705728000.0;   /* 1/18! */
    pc = pc * r2 + 1.0 / 20922789888000.0;     /* 1/16! */
    pc = pc * r2 - 1.0 / 87178291200.0;        /* 1/14! */
    pc = pc * r2 + 1.0 / 479001600.0;          /* 1/12! */
    pc = pc * r2 - 1.0 / 3628800.0;            /* 1/10! */
    pc = pc * r2 + 1.0 / 40320.0;              /* 1/8! */
    pc = pc * r2 - 1.0 / 720.0;
    pc = pc * r2 + 1.0 / 24.0;
    pc = pc * r2 - 0.5;
    const double cr = 1.0 + pc * r2;
    switch ((int)(k & 3)) {
    case 0: *s = sr, *c = cr; break;
    case 1: *s = cr, *c = -sr; break;
    case 2: *s = -sr, *c = -cr; break;
    default: *s = -cr, *c = sr; break;
    }
}

RS_HD_INLINE void rs_cossinf(float a, float *c, float *s)
{
    if (!(a - a == 0.0f)) { /* inf or NaN */
        *c = *s = a - a;
        return;
    }
    double sd, cd;
    rs_mathf_sincos_d_((double)a, &sd, &cd);
    *c = (float)cd;
    *s = (float)sd;
}

#endif /* RS_MATHF_H */
