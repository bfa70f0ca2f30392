/* rs_outfile.h — a plain (not HDF5) output file written under the rules of every replayssm output
 * (docs/threat-model.md "File-system effects"; the KL log and the result files follow the same):
 *  - <out> must be nothing, or a regular file and `force`: a FIFO, device, socket, directory or
 *    symbolic link at <out> is refused with or without force (never blocks, never writes through a
 *    link, never replaces /dev/null);
 *  - the data go to "<out>.tmp.<pid>", created with O_CREAT | O_EXCL | O_NOFOLLOW (never an existing
 *    file or a link), and reach <out> only at rs_outfile_commit: link() without force (never
 *    replaces anything), rename() with force (atomic); so <out> is never truncated before the
 *    inputs were read, and a failed or interrupted command leaves the old <out> as it was.
 * No function prints; failures return a status with the message set (rs_last_error).
 */
#ifndef RS_OUTFILE_H
#define RS_OUTFILE_H

#include <stdio.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rs_outfile rs_outfile;

/*! rs_outfile_open() : check <path> and create its temporary (stale temporaries of dead processes
 *  removed first). @return RS_OK, RS_E_IO ("P exists; pass --force to overwrite it", "P is a
 *  FIFO: only a regular file is ever replaced or continued", cannot create the temporary),
 *  RS_E_INVAL (no path, too long), RS_E_NOMEM. */
rs_status rs_outfile_open(const char *path, int force, rs_outfile **out);

/*! rs_outfile_stream() : where to write (binary, buffered); NULL for a NULL handle. */
FILE *rs_outfile_stream(rs_outfile *o);

/*! rs_outfile_commit() : flush, close and move the temporary to <path>; frees o. On failure
 *  (a write error, <path> created or replaced by something else meanwhile) the temporary is
 *  removed and <path> is as it was. @return RS_OK, RS_E_IO, RS_E_INVAL (NULL). */
rs_status rs_outfile_commit(rs_outfile *o);

/*! rs_outfile_discard() : close and remove the temporary, <path> untouched; frees o (NULL: nothing). */
void rs_outfile_discard(rs_outfile *o);

#ifdef __cplusplus
}
#endif
#endif /* RS_OUTFILE_H */
