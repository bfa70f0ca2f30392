/* rs_check.h — private control-flow macros of the library's C sources (not installed).
 *
 * They return from the enclosing function, which must return rs_status; kept out of the
 * public headers so that a user's code never inherits macros that hide a return.
 */
#ifndef RS_CHECK_H
#define RS_CHECK_H

#include "replayssm/quant/rs_status.h"

/* RS_TRY(expr) : forward any non-OK status. */
#define RS_TRY(expr)                                                                      \
    do {                                                                                  \
        rs_status rs_try_s_ = (expr);                                                     \
        if (rs_try_s_ != RS_OK) return rs_try_s_;                                         \
    } while (0)

/* RS_CHECK(cond, code, ...) : if cond is false, record the message and return code. */
#define RS_CHECK(cond, code, ...)                                                         \
    do {                                                                                  \
        if (!(cond)) return rs_error_set((code), __VA_ARGS__);                            \
    } while (0)

#endif /* RS_CHECK_H */
