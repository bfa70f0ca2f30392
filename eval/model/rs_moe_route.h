/* rs_moe_route.h — the expert choice of one token: router logits -> top_k experts and weights.
 *
 * One scalar function per token, no allocation, no threads, compiled for host and device
 * (rs_hostdev.h): the CPU forward and the GPU path run these same lines, so both choose the same
 * experts from the same logits. The rules are transformers 5.17's (Qwen3_5MoeTopKRouter,
 * NemotronHTopkRouter) with the arithmetic torch does in fp32:
 *
 *   RS_ROUTER_SOFTMAX          p = softmax(logits) (exp(l - max) / sum, sum in fp32 in index
 *                              order); keep the top_k largest p; w_i = p_i / (sum of the kept p,
 *                              added largest first).
 *   RS_ROUTER_SIGMOID_GROUPED  s = sigmoid(logits); c = s + bias (selection only); group score =
 *                              c1 + c2, the group's two largest c; keep the topk_group best groups;
 *                              keep the top_k largest c of their experts; w_i = s_i, divided by
 *                              (sum of the kept s, largest c first, + 1e-20) when norm_topk_prob,
 *                              times routed_scaling_factor.
 *
 * Ties (equal scores) go to the lower index, group or expert; torch.topk leaves their order
 * unspecified, so on an exact tie the two may differ (the fixtures record how far from a tie
 * every choice of theirs is). idx lists the chosen experts in ascending index order with their
 * weights alongside in w: the set, whatever order the selection found it in. A NaN logit gives
 * NaN weights (the experts are then valid indices, otherwise unspecified).
 */
#ifndef RS_MOE_ROUTE_H
#define RS_MOE_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/eval/rs_model.h"
#include "replayssm/quant/rs_hostdev.h"
#include "replayssm/quant/rs_mathf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* floats of scratch rs_moe_route_row needs: the E scores, the E choice scores, the group scores */
#define RS_MOE_ROUTE_SCRATCH(E, n_group) (2 * (size_t)(E) + (size_t)(n_group))

/* a > b in the order "larger value first, then lower index"; NaN counts as smallest */
RS_HD_INLINE int rs_moe_before_(float a, int ia, float b, int ib)
{
    if (a != a) return 0;
    if (b != b) return 1;
    return a > b || (a == b && ia < ib);
}

/* indices of the k best of v[n] among those with keep[i] != 0 (keep NULL: all), best first */
RS_HD_INLINE void rs_moe_topk_(const float *v, int n, const float *keep, int k, int32_t *out)
{
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            if (keep && keep[i] == 0.0f) continue;
            int taken = 0;
            for (int q = 0; q < j; q++) taken |= out[q] == i;
            if (taken) continue;
            if (best < 0 || rs_moe_before_(v[i], i, v[best], best)) best = i;
        }
        out[j] = best < 0 ? 0 : best;
    }
}

/* sort idx[k] ascending, w alongside (k <= RS_MOE_MAX_TOP_K: insertion sort) */
RS_HD_INLINE void rs_moe_sort_set_(int32_t *idx, float *w, int k)
{
    for (int i = 1; i < k; i++) {
        const int32_t xi = idx[i];
        const float xw = w[i];
        int j = i - 1;
        while (j >= 0 && idx[j] > xi) {
            idx[j + 1] = idx[j];
            w[j + 1] = w[j];
            j--;
        }
        idx[j + 1] = xi;
        w[j + 1] = xw;
    }
}

/*! rs_moe_route_row() : route one token: logits[E] (the fp32 router output), bias[E] (selection bias of
 *  RS_ROUTER_SIGMOID_GROUPED, or NULL); idx[top_k] / w[top_k] get the set and its weights; scratch:
 *  RS_MOE_ROUTE_SCRATCH(E, n_group) floats. */
RS_HD_INLINE void rs_moe_route_row(const rs_moe_config *mo, const float *logits, const float *bias, int32_t *idx,
                                   float *w, float *scratch)
{
    const int E = mo->n_experts, k = mo->top_k;
    float *s = scratch, *c = scratch + E, *gs = scratch + 2 * E;
    if (mo->router == RS_ROUTER_SOFTMAX) {
        float mx = logits[0];
        for (int i = 1; i < E; i++)
            if (logits[i] > mx || mx != mx) mx = logits[i];
        float sum = 0.0f;
        for (int i = 0; i < E; i++) {
            s[i] = rs_expf(logits[i] - mx);
            sum += s[i];
        }
        for (int i = 0; i < E; i++) s[i] = s[i] / sum;
        rs_moe_topk_(s, E, NULL, k, idx);
        float kept = 0.0f;
        for (int j = 0; j < k; j++) kept += s[idx[j]];
        for (int j = 0; j < k; j++) w[j] = s[idx[j]] / kept;
    } else {
        const int G = mo->n_group, per = E / G;
        for (int i = 0; i < E; i++) {
            s[i] = rs_sigmoidf(logits[i]);
            c[i] = bias ? s[i] + bias[i] : s[i];
        }
        for (int g = 0; g < G; g++) { /* sum of the group's two largest choice scores */
            int32_t two[2];
            rs_moe_topk_(c + g * per, per, NULL, 2, two);
            gs[g] = c[g * per + two[0]] + c[g * per + two[1]];
        }
        /* keep the topk_group best groups (the config allows at most RS_MOE_MAX_TOP_K): the experts of
         * the others get a NaN choice score, which never wins (rs_moe_before_) */
        int32_t kept_g[RS_MOE_MAX_TOP_K];
        const int tg = mo->topk_group < RS_MOE_MAX_TOP_K ? mo->topk_group : RS_MOE_MAX_TOP_K;
        if (G > 1) {
            rs_moe_topk_(gs, G, NULL, tg, kept_g);
            for (int g = 0; g < G; g++) {
                int keep = 0;
                for (int q = 0; q < tg; q++) keep |= kept_g[q] == g;
                if (!keep)
                    for (int i = 0; i < per; i++) c[g * per + i] = NAN;
            }
        }
        rs_moe_topk_(c, E, NULL, k, idx);
        float sum = 0.0f;
        for (int j = 0; j < k; j++) {
            w[j] = s[idx[j]];
            sum += w[j];
        }
        if (mo->norm_topk_prob) {
            const float den = sum + 1e-20f;
            for (int j = 0; j < k; j++) w[j] = w[j] / den;
        }
        for (int j = 0; j < k; j++) w[j] = w[j] * mo->routed_scaling_factor;
    }
    rs_moe_sort_set_(idx, w, k);
}

/*! rs_moe_route_diff() : how many experts of set a[k] are not in set b[k] (both ascending, as
 *  rs_moe_route_row writes them): 0 when both tokens chose the same experts. */
RS_HD_INLINE int rs_moe_route_diff(const int32_t *a, const int32_t *b, int k)
{
    int i = 0, j = 0, common = 0;
    while (i < k && j < k) {
        if (a[i] == b[j]) {
            common++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    return k - common;
}

#ifdef __cplusplus
}
#endif
#endif /* RS_MOE_ROUTE_H */
