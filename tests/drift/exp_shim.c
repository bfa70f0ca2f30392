/* exp_shim.c — an LD_PRELOAD yardstick (docs/gpu-evaluator.md "Measured performance"): how
 * far does the CPU evaluator's reference NLL move when its expf / log1pf round differently, as
 * CUDA's (a few ulps, not glibc's) do on the GPU? Not linked into anything; build and run:
 *
 *   cc -O2 -shared -fPIC -o exp_shim.so tests/drift/exp_shim.c -ldl -lm
 *   RS_EXP_SHIM=ulp LD_PRELOAD=$PWD/exp_shim.so replayssm kl ... --policy none
 *
 * RS_EXP_SHIM=ulp: glibc's result moved by one ulp (up or down) for a fixed pseudo-random third of
 * the arguments (a hash of the argument's bits: the same argument always gets the same result,
 * like a deterministic library with its own rounding); RS_EXP_SHIM=double: (float) exp((double) x)
 * and (float) log1p((double) x), i.e. correctly rounded nearly always, where glibc's expf errs up
 * to 0.502 ulp; RS_EXP_SHIM=down: as ulp, but always one ulp down (a biased library: a decay
 * alpha near 1 a little too small at every step adds up along the sequence). Unset: glibc's own. Every expf of the process is affected (decays, softplus,
 * sigmoid / SiLU, softmax), so this measures the sensitivity to exp rounding anywhere. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int mode_(void)
{
    static int m = -1;
    if (m < 0) {
        const char *e = getenv("RS_EXP_SHIM");
        m = e && !strcmp(e, "ulp") ? 1 : e && !strcmp(e, "double") ? 2 : e && !strcmp(e, "down") ? 3 : 0;
    }
    return m;
}

static float nudge_(float x, float y, int down)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u ^= u >> 16, u *= 0x7feb352du, u ^= u >> 15, u *= 0x846ca68bu, u ^= u >> 16;
    if (!isfinite(y) || y == 0.0f || u % 3 != 0) return y; /* 0 stays 0: an exp never goes negative */
    return nextafterf(y, (u & 8) && !down ? INFINITY : -INFINITY);
}

float expf(float x)
{
    static float (*real)(float);
    if (!real) real = (float (*)(float))dlsym(RTLD_NEXT, "expf");
    switch (mode_()) {
    case 1:
    case 3: return nudge_(x, real(x), mode_() == 3);
    case 2: return (float)exp((double)x);
    default: return real(x);
    }
}

float log1pf(float x)
{
    static float (*real)(float);
    if (!real) real = (float (*)(float))dlsym(RTLD_NEXT, "log1pf");
    switch (mode_()) {
    case 1:
    case 3: return nudge_(x, real(x), mode_() == 3);
    case 2: return (float)log1p((double)x);
    default: return real(x);
    }
}
