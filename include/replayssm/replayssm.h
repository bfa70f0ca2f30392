/* replayssm.h — umbrella header of the core layer (libreplayssm-core: quant/ + lib/engine/).
 *
 * One include for everything libreplayssm-core exports, which links libm only:
 *   status codes and the per-thread error message   replayssm/quant/rs_status.h
 *   scalar codecs E4M3 / E2M1 / FP16 / BF16         replayssm/quant/rs_minifloat.h
 *   storage formats and their string grammar        replayssm/quant/rs_format.h
 *   block quantizers with packed storage            replayssm/quant/rs_qtensor.h
 *   Philox4x32-10, the random bits of every SR      replayssm/quant/rs_philox.h
 *   NVFP4 / FP8 checkpoint-weight decoders          replayssm/quant/rs_wdecode.h
 *   one head's recurrences (Mamba-2, GDN)           replayssm/engine/rs_ssm.h
 *   state precision policies                        replayssm/engine/rs_policy.h
 *   the state engine object (rs_head)               replayssm/engine/rs_head.h
 * i.e. every public header of quant/ and engine/ (tests/layering checks that it stays so). The
 * engine's record ring and replay operators are private (lib/engine/rs_ring.h, rs_replay.h).
 *
 * The other layers are not included here, because each brings a library with heavier
 * dependencies; include their headers one by one:
 *   replayssm/theory/rs_*.h   libreplayssm-theory (GSL): Appendix C closed forms (rs_theory.h),
 *                             Monte Carlo checks (rs_theory_mc.h), synthetic data (rs_quant_error.h),
 *                             the tables of `replayssm theory` (rs_theory_tables.h)
 *   replayssm/eval/rs_*.h     libreplayssm-eval (HDF5, zlib, cJSON, OpenBLAS, OpenMP): models,
 *                             CPU forward, runner, tokenizer, PG-19, KL metrics, HDF5 log
 *   replayssm/cuda/rs_*.h     libreplayssm_cuda (CUDA runtime), when built: GPU twins
 * docs/architecture.md describes the modules and what each depends on.
 */
#ifndef REPLAYSSM_H
#define REPLAYSSM_H

#include "replayssm/quant/rs_mathf.h"
#include "replayssm/quant/rs_status.h"
#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"
#include "replayssm/quant/rs_qflat.h"
#include "replayssm/quant/rs_qtensor.h"
#include "replayssm/quant/rs_wdecode.h"
#include "replayssm/engine/rs_head.h"
#include "replayssm/engine/rs_policy.h"
#include "replayssm/engine/rs_ssm.h"

#endif /* REPLAYSSM_H */
