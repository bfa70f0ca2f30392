/* rs_status.c — status names and the per-thread last-error message. */
#include "replayssm/quant/rs_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One message buffer per thread: no global mutable state shared between threads. */
static _Thread_local char rs_msg_[1024];

const char *rs_strerror(rs_status s)
{
    switch (s) {
    case RS_OK: return "ok";
    case RS_E_INVAL: return "invalid argument";
    case RS_E_SHAPE: return "shape mismatch";
    case RS_E_NOMEM: return "out of memory";
    case RS_E_IO: return "I/O error";
    case RS_E_FORMAT: return "malformed input";
    case RS_E_NONFINITE: return "non-finite value";
    case RS_E_UNSUPPORTED: return "not supported";
    case RS_E_CUDA: return "CUDA error";
    case RS_E_STATE: return "invalid state";
    }
    return "unknown status";
}

const char *rs_last_error(void) { return rs_msg_; }

void rs_error_clear(void) { rs_msg_[0] = '\0'; }

rs_status rs_error_set(rs_status code, const char *fmt, ...)
{
    /* Format into a local buffer first: callers may pass rs_last_error() (this thread's
     * buffer) as an argument to wrap the cause in context; formatting a buffer into itself
     * is undefined behaviour (the context would print twice and the cause be lost). */
    char tmp[sizeof rs_msg_];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(rs_msg_, tmp, sizeof tmp);
    return code;
}
