/* rs_moe.h — the mixture-of-experts FFN of a chunk (NemotronH 'E' blocks, the FFN of every
 * Qwen3.5-MoE layer), R runs stacked, on the forward's backend ops and rs_fwd_ws.moe scratch.
 */
#ifndef RS_MOE_H
#define RS_MOE_H

#include "model/rs_forward.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_moe_ffn() : x += MoE(RMSNorm(x; nw)) for the M = R * n rows of the chunk, layer l; kind: the
 *  family's norm weight. Counts each run's routing differences from run 0 into rs_run.moe_*_diff.
 *  @return RS_OK or a backend error. */
rs_status rs_moe_ffn(const rs_fwd_args *a, int l, const float *nw, rs_norm_weight kind);

#ifdef __cplusplus
}
#endif
#endif /* RS_MOE_H */
