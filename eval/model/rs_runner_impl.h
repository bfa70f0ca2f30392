/* rs_runner_impl.h — helpers shared by eval/model/rs_runner.c and rs_runner_ws.c (private). */
#ifndef RS_RUNNER_IMPL_H
#define RS_RUNNER_IMPL_H

#include <stddef.h>

#include "model/rs_runner.h"

/* calloc of count floats (at least one) with an overflow check; the message names `what`. */
rs_status rs_runner_falloc(float **p, size_t count, const char *what);

/* the chunk scratch for rc->n_runs * rc->chunk rows of model config c; free accepts a zeroed ws. */
rs_status rs_runner_ws_init(rs_fwd_ws *ws, const rs_model_config *c, const rs_runner_config *rc,
                            int n_threads);
void rs_runner_ws_free(rs_fwd_ws *ws);

#endif /* RS_RUNNER_IMPL_H */
