/* rs_policy.h — state precision policies: in what format each stored copy of a head's
 * state lives and when it is rounded. One grammar, parsed here, used by the CLI.
 *
 *   policy := "fp32"                      conventional decode, fp32 state (the reference)
 *           | "conv:" fmt                 conventional decode, S_t stored in fmt every step
 *           | "shared:" fmt               ReplaySSM, one checkpoint stored in fmt at each
 *                                         flush, read by outputs and by the recurrence
 *           | "split:" lp "/" hp          ReplaySSM, two checkpoints (Algorithm 3): LP read
 *                                         by non-flush outputs, HP carries the recurrence;
 *                                         GDN recomputes u along the HP path at each flush
 *           | "split-naive:" lp "/" hp    as split, but GDN folds the cached u (computed
 *                                         from LP, i.e. contaminated); same as split for
 *                                         Mamba-2, whose records do not depend on the state
 *   fmt, lp, hp := a format string of rs_format.h (fp32, fp16-sr, fp8-rtn, nvfp4-rtn, ...)
 *
 * e.g. fp32, conv:bf16-rtn, shared:fp8-sr, shared:fp32 (fp32 ReplaySSM),
 * split:nvfp4-rtn/fp32, split:nvfp4-rtn/fp16-sr, split:fp8-rtn/fp8-sr.
 * "conv:fp32" is accepted and prints as its canonical "fp32". Window L and draft length T
 * are parameters of a run, not of the policy.
 */
#ifndef RS_POLICY_H
#define RS_POLICY_H

#include <stddef.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/common/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rs_policy_mode {
    RS_POLICY_CONV = 0,       /* conventional decode */
    RS_POLICY_SHARED = 1,     /* ReplaySSM, single checkpoint */
    RS_POLICY_SPLIT = 2,      /* ReplaySSM, LP + HP checkpoints, GDN HP recompute */
    RS_POLICY_SPLIT_NAIVE = 3 /* ReplaySSM, LP + HP checkpoints, GDN folds cached u */
} rs_policy_mode;

typedef struct rs_policy {
    rs_policy_mode mode;
    rs_format hp; /* the recurrent copy: conv state, shared checkpoint, split HP checkpoint */
    rs_format lp; /* split: the read-only copy; conv/shared: equal to hp */
} rs_policy;

/*! rs_policy_parse() : parse a policy string.
 *  @return RS_OK, or RS_E_INVAL with a message quoting the string, saying what is wrong
 *  and listing the forms (and, for a bad format, the valid formats). */
rs_status rs_policy_parse(const char *s, rs_policy *out);

/*! rs_policy_print() : canonical string into buf (NUL-terminated); parses back equal.
 *  @return RS_OK, or RS_E_INVAL if buf is too small or p is invalid. */
rs_status rs_policy_print(const rs_policy *p, char *buf, size_t bufsize);

/*! rs_policy_equal() : same mode and formats. */
int rs_policy_equal(const rs_policy *a, const rs_policy *b);

/*! rs_policy_is_replay() : shared or split (a ring buffer and checkpoints). */
int rs_policy_is_replay(const rs_policy *p);

/*! rs_policy_is_split() : split or split-naive (two checkpoints). */
int rs_policy_is_split(const rs_policy *p);

/*! rs_policy_forms() : the accepted forms, for messages and --help. */
const char *rs_policy_forms(void);

/*! rs_policy_fp32() : the reference policy "fp32". */
rs_policy rs_policy_fp32(void);

#ifdef __cplusplus
}
#endif
#endif /* RS_POLICY_H */
