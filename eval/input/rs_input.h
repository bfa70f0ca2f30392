/* rs_input.h — the one way the eval layer opens a file it reads or hashes (private to eval/).
 *
 * Inputs come from folders a user may have been handed (checkpoints, tokenizers, data, logs), so
 * every file a command reads, hashes or hands to libhdf5 is opened here first: a regular file of
 * bounded size. A FIFO named config.json (or notes.json beside the weights) would block the program
 * at open(), a link to /dev/zero would never end, a device or a directory is not data, and a huge
 * file would exhaust memory before any parser sees it (docs/threat-model.md).
 */
#ifndef RS_INPUT_H
#define RS_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "replayssm/quant/rs_status.h"

/* rs_input_open() : THE bounded open. open(path) read-only and non-blocking (a FIFO without a
 * writer returns at once instead of waiting), then fstat on that descriptor: a regular file
 * (symbolic links are followed: the target must be one) of at most max_bytes bytes; the
 * descriptor is set back to blocking reads. *fd gets it (the caller closes it), *size (may be
 * NULL) its size. @return RS_OK, RS_E_IO ("cannot open P: Permission denied" / "No such file or
 * directory" / ..., strerror's words; "P: not a regular file (a FIFO)"), RS_E_FORMAT ("P: N bytes,
 * more than the limit of M MiB"). */
rs_status rs_input_open(const char *path, uint64_t max_bytes, int *fd, uint64_t *size);

/* rs_input_check() : rs_input_open and close, for a file another library opens by name (libhdf5):
 * the same refusals, with errno named, before that library can block on it or misname the cause
 * (an unreadable log is "Permission denied", not "not an HDF5 file"). */
rs_status rs_input_check(const char *path, uint64_t max_bytes, uint64_t *size);

/* rs_input_fopen() : rs_input_open as a stdio stream ("rb"); *size (may be NULL) its size. */
rs_status rs_input_fopen(const char *path, size_t max_bytes, FILE **out, size_t *size);

/* what rs_input_read_all does beyond reading */
#define RS_INPUT_GUNZIP 1u /* a name ending in ".gz" is gzip data: decompressed (magic required) */

/* rs_input_read_all() : the whole file into a malloc'd buffer with one NUL byte after the data
 * (*data, *len): exactly the size seen at open (a file that grows or shrinks meanwhile is an
 * error, never read past the limit). With RS_INPUT_GUNZIP and a name ending in ".gz" the content
 * is the gunzipped stream (gzip magic required: zlib would pass other bytes through unchanged;
 * one stream, nothing after it), at most max_bytes decompressed (a gzip bomb stops there).
 * sha_stored (NULL: not wanted) gets the hex SHA-256 of the bytes as stored. @return RS_OK, the
 * errors of rs_input_open, RS_E_IO (a read error, a file that changed size), RS_E_FORMAT ("not
 * gzip data", corrupt or truncated gzip data, more than the limit decompressed), RS_E_NOMEM. */
rs_status rs_input_read_all(const char *path, size_t max_bytes, unsigned flags, char **data, size_t *len,
                            char sha_stored[65]);

/* rs_input_ends_with() : 1 when s ends with suffix (both non-NULL), else 0. */
int rs_input_ends_with(const char *s, const char *suffix);

#endif /* RS_INPUT_H */
