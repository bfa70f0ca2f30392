/* rs_h5place.h — where the eval layer's output files go, and how they get there (private).
 *
 * One policy for the KL log (rs_h5log*.c) and the result-file writer (rs_h5file.c), described in
 * docs/hdf5-layout.md "File states":
 *  - an output is built under a temporary name "<out>.tmp.<pid>" in the same folder and moved into
 *    place only when it is complete (link(): never replaces; rename(): atomic replace);
 *  - only a regular file is ever replaced: a FIFO, device, socket, directory or symbolic link at
 *    <out> is refused before anything is opened (no blocking on a FIFO, no writing through a link
 *    to somewhere else, no /dev/null replaced by a regular file);
 *  - temporaries left by killed processes ("<out>.tmp.<pid>" whose pid no longer exists and
 *    which no process has open for writing) are removed by the next writer of the same <out>.
 * No function here prints; failures return a status with the message set.
 */
#ifndef RS_H5PLACE_H
#define RS_H5PLACE_H

#include <stddef.h>

#include <hdf5.h>

#include "replayssm/quant/rs_status.h"

/* rs_h5_target_state() : what is at `path` (not following a symbolic link): *exists = 0 when
 * nothing, 1 for a regular file; RS_E_IO naming the kind for anything else. */
rs_status rs_h5_target_state(const char *path, int *exists);

/* rs_h5_temp_name() : "<path>.tmp.<pid>" into buf; RS_E_INVAL when it does not fit. */
rs_status rs_h5_temp_name(const char *path, char *buf, size_t size);

/* rs_h5_clean_stale() : remove "<path>.tmp.<pid>" files of processes that no longer exist and
 * that no process has open for writing (HDF5 keeps a lock on every file it has open). Best
 * effort, never fails; returns how many it removed. */
int rs_h5_clean_stale(const char *path);

/* rs_h5_in_use() : 1 when some process holds `path` open for writing through HDF5 (its file
 * lock), else 0. */
int rs_h5_in_use(const char *path);

/* rs_h5_place() : move the complete file `tmp` to `path`. replace == 0: link() (RS_E_IO if
 * `path` exists, message from `exists_hint`), then unlink(tmp). replace != 0: rename() over a
 * regular file or nothing (the target is checked again right before). On failure `tmp` stays. */
rs_status rs_h5_place(const char *tmp, const char *path, int replace, const char *exists_hint);

/* rs_h5_is_file() : 1 when the open HDF5 file `f` is the file at `path` (same device and inode),
 * so a rename never moves a file that another process put at `path` meanwhile. */
int rs_h5_is_file(hid_t f, const char *path);

#endif /* RS_H5PLACE_H */
