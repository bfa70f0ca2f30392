/* mamba2_split.c: one Mamba-2 head decoded STEPS tokens under the split policy next to the fp32
 * reference. split:nvfp4-rtn/fp32 is Algorithm 3: outputs between flushes read an NVFP4 copy of
 * the checkpoint, an fp32 copy carries the recurrence, so the output error stays at one NVFP4
 * rounding while the state does not drift. Core library only. Exit status 0 when both hold. */
#include <math.h>
#include <stdio.h>

#include "replayssm/replayssm.h"

#define DV 64       /* value dim (state rows) */
#define DK 128      /* key dim (state columns, contiguous) */
#define STEPS 512
#define WINDOW 16   /* L: tokens per flush */
#define OUT_TOL 0.10    /* relative RMS output error: NVFP4 keeps ~3 significant bits */
#define OUT_MIN 1e-3    /* ... and at least this much: an fp32 read copy would give ~1e-7 */
#define STATE_TOL 1e-5  /* relative state error: fp32 rounding differences only */

static float uniform(uint64_t stream, uint64_t i) { /* [-1, 1) from Philox */
    return (float)(rs_rand_u32(7, stream, i) >> 8) / 8388608.0f - 1.0f;
}

int main(void) {
    const char *policy[2] = {"fp32", "split:nvfp4-rtn/fp32"};
    rs_head head[2] = {0};
    for (int h = 0; h < 2; h++) {
        rs_head_config cfg = {.kind = RS_SSM_MAMBA2, .d_v = DV, .d_k = DK, .window = WINDOW,
                              .max_drafts = 1, .seed = 1};
        if (rs_policy_parse(policy[h], &cfg.policy) != RS_OK || rs_head_init(&head[h], &cfg) != RS_OK) {
            fprintf(stderr, "%s: %s\n", policy[h], rs_last_error());
            return 1;
        }
    }

    static float v[DV], k[DK], q[DK], o[2][DV], S[2][DV * DK];
    double err = 0.0, norm = 0.0;
    for (uint64_t t = 0; t < STEPS; t++) {
        for (size_t i = 0; i < DV; i++) v[i] = uniform(0, t * DV + i);
        for (size_t i = 0; i < DK; i++) k[i] = uniform(1, t * DK + i), q[i] = uniform(2, t * DK + i);
        rs_ssm_token x = {.alpha = 0.95f + 0.05f * uniform(3, t), .v = v, .k = k, .q = q};
        for (int h = 0; h < 2; h++)
            if (rs_head_decode(&head[h], &x, o[h]) != RS_OK) {
                fprintf(stderr, "%s, step %llu: %s\n", policy[h], (unsigned long long)t, rs_last_error());
                return 1;
            }
        for (size_t i = 0; i < DV; i++) err += (double)(o[1][i] - o[0][i]) * (o[1][i] - o[0][i]),
                                         norm += (double)o[0][i] * o[0][i];
    }
    double out_rel = sqrt(err / norm), st_err = 0.0, st_norm = 0.0;

    /* The state after STEPS tokens (split: the fp32 path, what the next flush folds). */
    for (int h = 0; h < 2; h++)
        if (rs_head_state(&head[h], S[h]) != RS_OK) {
            fprintf(stderr, "%s: %s\n", policy[h], rs_last_error());
            return 1;
        }
    for (size_t i = 0; i < DV * DK; i++) st_err += (double)(S[1][i] - S[0][i]) * (S[1][i] - S[0][i]),
                                         st_norm += (double)S[0][i] * S[0][i];
    double st_rel = sqrt(st_err / st_norm);

    printf("%s vs %s, %d steps, L = %d: output error %.4f (tolerance %.2f), state error %.2e (%.0e)\n",
           policy[1], policy[0], STEPS, WINDOW, out_rel, OUT_TOL, st_rel, STATE_TOL);
    for (int h = 0; h < 2; h++) rs_head_free(&head[h]);
    int ok = out_rel >= OUT_MIN && out_rel <= OUT_TOL && st_rel <= STATE_TOL;
    puts(ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
