/* rs_status.h — the one status type of replayssm, and the per-thread error message.
 *
 * Every fallible library function returns an rs_status and writes results through
 * out-parameters. The library never prints and never exits: on failure it records a
 * human-readable message (naming the file, tensor, index, step or head involved) that
 * the caller fetches with rs_last_error(); the CLI shows it.
 *
 * Codes are pinned: new codes are only appended.
 */
#ifndef RS_STATUS_H
#define RS_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rs_status {
    RS_OK = 0,            /* success */
    RS_E_INVAL = 1,       /* invalid argument (bad value, NULL, unknown name) */
    RS_E_SHAPE = 2,       /* shapes or extents do not fit together */
    RS_E_NOMEM = 3,       /* allocation failed */
    RS_E_IO = 4,          /* file system or I/O failure */
    RS_E_FORMAT = 5,      /* malformed input file or string */
    RS_E_NONFINITE = 6,   /* NaN or Inf where a finite value was required */
    RS_E_UNSUPPORTED = 7, /* valid request that this build/version does not support */
    RS_E_CUDA = 8,        /* CUDA runtime failure */
    RS_E_STATE = 9        /* object used in the wrong state (e.g. before init) */
} rs_status;

/*! rs_strerror() : short fixed name of a status code ("invalid argument", ...). */
const char *rs_strerror(rs_status s);

/*! rs_last_error() : the detailed message recorded by the last failing call on this
 *  thread, or "" if none. The pointer stays valid until the next failing call. */
const char *rs_last_error(void);

/*! rs_error_clear() : forget the last message of this thread. */
void rs_error_clear(void);

/*! rs_error_set() : record a printf-style message and return `code` (internal use and
 *  for modules built on the library, e.g. `return rs_error_set(RS_E_INVAL, "...")`). */
rs_status rs_error_set(rs_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* RS_STATUS_H */
