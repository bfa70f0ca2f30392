/* model_window.c: the three CPU layers through find_package(replayssm). Reads a checkpoint's
 * config.json (eval), parses a policy (core), and asks Appendix C (theory) for the replay window
 * that minimises one SSM head's traffic and what the policy then moves per token.
 * Usage: model_window MODEL_DIR POLICY. Exit status 0 when the split policy at that window moves
 * fewer state bytes per token than conventional fp32 decode (paper C.3, C.5). */
#include <stdio.h>

#include "replayssm/replayssm.h"
#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/theory/rs_theory.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL_DIR POLICY\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", argv[1]);
    static rs_model_config cfg; /* large: one entry per possible layer */
    rs_policy pol;
    if (rs_hf_config_load(path, &cfg) != RS_OK || rs_policy_parse(argv[2], &pol) != RS_OK) {
        fprintf(stderr, "%s\n", rs_last_error());
        return 1;
    }
    unsigned dv, dk, heads, layers;
    if (cfg.n_mamba > 0) {
        dv = cfg.mamba.head_dim, dk = cfg.mamba.d_state, heads = cfg.mamba.n_heads, layers = cfg.n_mamba;
    } else if (cfg.n_gdn > 0) {
        dv = cfg.gdn.v_head_dim, dk = cfg.gdn.k_head_dim, heads = cfg.gdn.n_v_heads, layers = cfg.n_gdn;
    } else {
        fprintf(stderr, "%s: no SSM layer\n", path);
        return 1;
    }
    size_t n = (size_t)dv * dk;
    double b_lp = rs_format_bytes_per_element(&pol.lp, n), b_hp = rs_format_bytes_per_element(&pol.hp, n);
    double r = rs_theory_record_bytes(dv, dk), L_star;
    if (rs_theory_optimal_window(b_hp * n, r, 1.0, 1.0, &L_star) != RS_OK) {
        fprintf(stderr, "%s\n", rs_last_error());
        return 1;
    }
    unsigned L = (unsigned)(L_star + 0.5);
    double conv = rs_theory_mconv(1, dv, dk, 4.0);                     /* fp32, per token */
    double split = rs_theory_msplit(L, dv, dk, b_lp, b_hp, r) / L;      /* per token */
    printf("%s: %s, %u SSM layers x %u heads, state %u x %u\n", argv[1], cfg.model_type, layers, heads, dv, dk);
    printf("%s: L* = %.2f; bytes per token and head: %.0f conventional fp32, %.0f at L = %u\n", argv[2],
           L_star, conv, split, L);
    return split < conv ? 0 : 1;
}
