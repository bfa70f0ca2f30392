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
 * "conv:fp32" is accepted and prints as its canonical "fp32"; a bare base is RTN there as in
 * every format ("shared:nvfp4" is shared:nvfp4-rtn). Window L and draft length T are parameters
 * of a run, not of the policy.
 *
 * A run of an evaluation is a policy with its window L and SR seed: rs_run_spec, parsed once from
 * the user's strings by rs_run_spec_parse (the one place that parses a policy for the evaluator
 * and checks a window) and passed as parsed specs from there on (rs_kleval -> scorer -> runner
 * -> every head). The defaults of a run live here, once.
 */
#ifndef RS_POLICY_H
#define RS_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_status.h"

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

/*! rs_policy_mode_name() : "conv", "shared", "split", "split-naive" ("?" for another value). */
const char *rs_policy_mode_name(rs_policy_mode m);

/*! rs_policy_mode_parse() : the inverse (the mode word of a policy, e.g. a sweep's --modes item).
 *  @return RS_OK, or RS_E_INVAL naming the word and the modes. */
rs_status rs_policy_mode_parse(const char *s, rs_policy_mode *out);

/* ---- a run: policy, window, seed ------------------------------------------------------------ */

#define RS_RUN_WINDOW_DEFAULT 16  /* replay window L of a run when none is given */
#define RS_RUN_WINDOW_MAX 4096    /* largest window L */
#define RS_RUN_SEED_DEFAULT 0     /* SR seed of a run when none is given */
#define RS_RUN_NAME_MAX 64        /* bytes of a canonical policy string, NUL included */

typedef struct rs_run_spec {
    rs_policy policy;
    size_t window;              /* replay window L in [1, RS_RUN_WINDOW_MAX] (conv runs ignore it) */
    uint64_t seed;              /* SR seed of the run's heads */
    char name[RS_RUN_NAME_MAX]; /* the policy's canonical string (rs_policy_print) */
} rs_run_spec;

/*! rs_run_spec_parse() : a run from the user's strings: policy in the grammar above, window as
 *  rs_run_window_parse takes it (NULL: RS_RUN_WINDOW_DEFAULT), and the seed.
 *  @return RS_OK, or RS_E_INVAL with a message that names the bad part: "unknown policy: ..."
 *  (the policy parser's message) or "window L ...". */
rs_status rs_run_spec_parse(const char *policy, const char *window, uint64_t seed, rs_run_spec *out);

/*! rs_run_window_parse() : a window L from the user's string: decimal, in [1, RS_RUN_WINDOW_MAX]
 *  (NULL: RS_RUN_WINDOW_DEFAULT). @return RS_OK or RS_E_INVAL ("window L 'x' is not an integer in
 *  [1, 4096]"). */
rs_status rs_run_window_parse(const char *s, size_t *window);

/*! rs_run_spec_make() : a run of a policy in hand (e.g. a sweep's product of parsed formats), a
 *  window L (the one range check of a window) and a seed; name = the canonical policy string.
 *  @return RS_OK, or RS_E_INVAL (window out of range, invalid policy). */
rs_status rs_run_spec_make(const rs_policy *policy, size_t window, uint64_t seed, rs_run_spec *out);

/*! rs_run_spec_check() : s is a spec as rs_run_spec_parse makes them (window in range, a valid
 *  policy whose canonical string is name). @return RS_OK or RS_E_INVAL naming what is wrong. */
rs_status rs_run_spec_check(const rs_run_spec *s);

/*! rs_run_spec_reference() : the fp32 reference run (policy fp32, the default window and seed). */
rs_run_spec rs_run_spec_reference(void);

/*! rs_run_spec_equal() : same policy (rs_policy_equal), window and seed. */
int rs_run_spec_equal(const rs_run_spec *a, const rs_run_spec *b);

/*! rs_run_spec_find() : index of the first run of list[0..n) equal to s, or n if none. */
size_t rs_run_spec_find(const rs_run_spec *list, size_t n, const rs_run_spec *s);

/*! rs_run_spec_add() : append s to list[0..*n) unless an equal run is there (a run repeated on a
 *  command line runs once: the one de-duplication of runs). @return RS_OK, or RS_E_INVAL when a
 *  new run would pass max ("at most max runs"). */
rs_status rs_run_spec_add(rs_run_spec *list, size_t *n, size_t max, const rs_run_spec *s);

#ifdef __cplusplus
}
#endif
#endif /* RS_POLICY_H */
