/* rs_random_weights.h — the values of a random-weight model (rs_model_init_random), one pure function
 * of (seed, tensor, element), compiled for host and device (rs_hostdev.h): any element of any tensor
 * can be made where it is needed, in any order, by any thread. The uniforms are the same bits
 * everywhere; a normal deviate goes through log and cos, whose last bits differ between the host's
 * libm and CUDA's, so host and device values may differ in the last place of a float.
 *
 * Stream: h = splitmix64(seed ^ splitmix64(tensor + 1)); element i draws u = splitmix64(h + i), whose
 * two 32-bit halves give two uniforms in (0, 1) (24-bit mantissas, never 0 or 1); a normal deviate is
 * Box-Muller's cos branch of them, in double, rounded once to float.
 */
#ifndef RS_RANDOM_WEIGHTS_H
#define RS_RANDOM_WEIGHTS_H

#include <math.h>
#include <stdint.h>

#include "replayssm/quant/rs_hostdev.h"

#ifdef __cplusplus
extern "C" {
#endif

RS_HD_INLINE uint64_t rs_rw_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* the stream key of tensor `tensor` (its index in the model's tensor list) */
RS_HD_INLINE uint64_t rs_rw_key(uint64_t seed, uint64_t tensor)
{
    return rs_rw_mix(seed ^ rs_rw_mix(tensor + 1));
}

/* two uniforms in (0, 1) of element i */
RS_HD_INLINE void rs_rw_uniform2(uint64_t key, uint64_t i, double *u0, double *u1)
{
    const uint64_t u = rs_rw_mix(key + i);
    *u0 = ((double)(u >> 40) + 0.5) * (1.0 / 16777216.0);
    *u1 = ((double)((u >> 8) & 0xFFFFFFull) + 0.5) * (1.0 / 16777216.0);
}

/* N(0, 1) of element i */
RS_HD_INLINE float rs_rw_normal(uint64_t key, uint64_t i)
{
    double u0, u1;
    rs_rw_uniform2(key, i, &u0, &u1);
    return (float)(sqrt(-2.0 * log(u0)) * cos(6.283185307179586 * u1));
}

#ifdef __cplusplus
}
#endif
#endif /* RS_RANDOM_WEIGHTS_H */
