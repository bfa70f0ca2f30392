/* rs_input.h — opening an input file the eval layer reads whole (private to eval/).
 *
 * Inputs come from folders a user may have been handed (checkpoints, tokenizers, data), so an
 * input must be a regular file of bounded size: a FIFO named config.json would block the
 * program at open(), a device or a directory is not data, and a huge file would exhaust
 * memory before any parser sees it (docs/threat-model.md).
 */
#ifndef RS_INPUT_H
#define RS_INPUT_H

#include <stddef.h>
#include <stdio.h>

#include "replayssm/common/rs_status.h"

/* rs_input_fopen() : open path for reading ("rb") only if it is a regular file of at most
 * max_bytes bytes (opened non-blocking, so a FIFO is refused instead of waited on); *size gets
 * its size. @return RS_OK, RS_E_IO ("cannot open P: <errno text>", "P: not a regular file"),
 * RS_E_FORMAT ("P: N bytes, more than the limit of M MiB"). */
rs_status rs_input_fopen(const char *path, size_t max_bytes, FILE **out, size_t *size);

/* rs_input_read_all() : the whole file (rs_input_fopen's checks, at most max_bytes) into a
 * malloc'd buffer with one NUL byte after the data (*data, *len). @return RS_OK, the errors of
 * rs_input_fopen, RS_E_IO ("read error on P"), RS_E_NOMEM ("out of memory reading P"). */
rs_status rs_input_read_all(const char *path, size_t max_bytes, char **data, size_t *len);

#endif /* RS_INPUT_H */
