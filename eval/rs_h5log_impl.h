/* rs_h5log_impl.h — the log handle's layout, private to eval/rs_h5log*.c. */
#ifndef RS_H5LOG_IMPL_H
#define RS_H5LOG_IMPL_H

#include <hdf5.h>

#include "replayssm/eval/rs_h5log.h"

struct rs_h5log {
    hid_t file;
    int writable;
    size_t n_books, n_runs;
    uint64_t tokens, chunk;
    uint64_t *book_len;  /* [n_books] */
    int64_t *completed;  /* [n_books] committed positions (mirror of /books/completed_positions) */
    char **book_ids;     /* [n_books] */
    char **policies;     /* [n_runs] */
    uint64_t *windows;   /* [n_runs] */
    uint64_t width;      /* current extent of the position dimension */
};

#endif /* RS_H5LOG_IMPL_H */
