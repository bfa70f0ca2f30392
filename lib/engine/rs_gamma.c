/* rs_gamma.c — suffix products of decays (see rs_gamma.h for the convention). */
#include "rs_gamma.h"

void rs_gamma_suffix(const float *alpha, size_t n, float *g)
{
    double acc = 1.0; /* each step exact to 2^-53; one rounding to fp32 per output */
    g[n] = 1.0f;
    for (size_t j = n; j-- > 0;) {
        acc = acc * (double)alpha[j];
        g[j] = (float)acc;
    }
}
