/* rs_h5vfd.h — the file driver of logs written in place (private to eval/; docs/hdf5-layout.md
 * "Storage, flushing, crash safety").
 *
 * A KL log is written over many flushes, and with HDF5's own drivers a write that fails part-way
 * (a file-size limit, a full disk) lets HDF5 go on: the close flushes a superblock whose
 * end-of-allocation lies past what the disk accepted, and the file no longer opens ("truncated file").
 * This driver is POSIX I/O like HDF5's sec2, with two rules:
 *  - reserve before allocate: when HDF5 moves the end of allocation (every new chunk, B-tree
 *    node, heap or header block goes through set_eoa first), the bytes up to it are reserved on
 *    disk (posix_fallocate, or zeros written where the file system has no fallocate) before
 *    the new end is accepted. Every later write lies below it, in space the disk already gave,
 *    so an EFBIG / ENOSPC / EDQUOT can only come from the reservation, before anything of the
 *    new space is referenced on disk;
 *  - freeze on failure: after the first failed reservation, write or truncate nothing more
 *    reaches the file (the close's flush included), so the file stays as its last complete
 *    H5Fflush left it, plus unreferenced bytes past that flush's end of allocation.
 * The file format is the default one (no driver information is stored): any HDF5 reader opens
 * the files with its default driver. */
#ifndef RS_H5VFD_H
#define RS_H5VFD_H

#include <hdf5.h>

/* rs_h5_writer_fapl() : a new file-access property list (caller closes) with this driver and
 * a metadata cache that writes nothing between flushes (evictions off: dirty metadata reaches
 * the file only in H5Fflush / H5Fclose, in one piece, superblock last), or -1 on failure with
 * the message set. */
hid_t rs_h5_writer_fapl(void);

#endif /* RS_H5VFD_H */
