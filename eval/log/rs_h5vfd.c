/* rs_h5vfd.c — "rs_reserve", the file driver of logs written in place (see rs_h5vfd.h).
 *
 * POSIX I/O as in HDF5's sec2 driver (pread / pwrite, ftruncate at flush, flock), plus the
 * reservation in set_eoa and the freeze after the first failure. `phys` is the file's size as
 * this driver made it: >= eoa at every moment, so no write can extend the file. */
#include "rs_h5vfd.h"

#include "replayssm/quant/rs_status.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

typedef struct {
    H5FD_t pub;    /* public fields, filled by HDF5 after open */
    int fd;
    haddr_t eoa;   /* end of allocation */
    haddr_t phys;  /* bytes the file holds (reserved or written), >= eoa */
    dev_t dev;
    ino_t ino;
    int rw;        /* opened for writing: reservations on */
    int frozen;    /* a reservation, write or truncate failed: nothing more reaches the file */
} rs_vfd_t;

/* the largest address: off_t's range, as sec2 */
#define RS_VFD_MAXADDR ((haddr_t)(((uint64_t)1 << 62) - 1))

static herr_t push_(const char *func, int line, hid_t min, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static herr_t push_(const char *func, int line, hid_t min, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    H5Epush2(H5E_DEFAULT, __FILE__, func, (unsigned)line, H5E_ERR_CLS, H5E_VFL, min, "%s", msg);
    return -1;
}
#define FAIL_(min, ...) push_(__func__, __LINE__, (min), __VA_ARGS__)

static const char *k_frozen = "an earlier write to this file failed: nothing more is written to it (its last flushed state stays)";

/* ---- open / close ------------------------------------------------------------------------- */

static H5FD_t *vfd_open_(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
    (void)fapl;
    if (!name || !name[0] || maxaddr == 0 || maxaddr == HADDR_UNDEF || maxaddr > RS_VFD_MAXADDR) {
        FAIL_(H5E_BADVALUE, "rs_reserve: bad file name or address range");
        return NULL;
    }
    int o = (flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY;
    if (flags & H5F_ACC_TRUNC) o |= O_TRUNC;
    if (flags & H5F_ACC_CREAT) o |= O_CREAT;
    if (flags & H5F_ACC_EXCL) o |= O_EXCL;
    const int fd = open(name, o | O_CLOEXEC, 0666);
    if (fd < 0) {
        FAIL_(H5E_CANTOPENFILE, "%s", strerror(errno));
        return NULL;
    }
    struct stat sb;
    const int st = fstat(fd, &sb), err = errno;
    if (st != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        FAIL_(H5E_CANTOPENFILE, "%s: %s", name, st != 0 ? strerror(err) : "not a regular file");
        return NULL;
    }
    rs_vfd_t *f = (rs_vfd_t *)calloc(1, sizeof *f);
    if (!f) {
        close(fd);
        FAIL_(H5E_CANTALLOC, "rs_reserve: out of memory");
        return NULL;
    }
    f->fd = fd;
    f->phys = (haddr_t)sb.st_size;
    f->eoa = 0;
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
    f->rw = (flags & H5F_ACC_RDWR) != 0;
    return &f->pub;
}

static herr_t vfd_close_(H5FD_t *file)
{
    rs_vfd_t *f = (rs_vfd_t *)file;
    const int e = close(f->fd);
    free(f);
    return e == 0 ? 0 : FAIL_(H5E_CANTCLOSEFILE, "cannot close the file: %s", strerror(errno));
}

static int vfd_cmp_(const H5FD_t *a, const H5FD_t *b)
{
    const rs_vfd_t *x = (const rs_vfd_t *)a, *y = (const rs_vfd_t *)b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return 0;
}

static herr_t vfd_query_(const H5FD_t *file, unsigned long *flags)
{
    (void)file;
    /* sec2's features but SWMR: metadata and small raw data aggregated, metadata accumulated,
     * data sieving, a POSIX handle, files the default driver opens */
    if (flags)
        *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
                 H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
    return 0;
}

/* ---- the reservation ---------------------------------------------------------------------- */

/* make the file hold [phys, end): allocated blocks, not a hole, so that writes below end need no
 * more space from the file system (and pass a file-size limit); 0 or an errno */
static int reserve_(rs_vfd_t *f, haddr_t end)
{
    const off_t from = (off_t)f->phys, len = (off_t)(end - f->phys);
    int err = posix_fallocate(f->fd, from, len);
    if (err == EOPNOTSUPP || err == ENOSYS || err == EINVAL) {
        /* no fallocate here (some network file systems, older libcs): write zeros */
        static const char zeros[65536];
        err = 0;
        for (off_t at = from; at < from + len && !err;) {
            const size_t n = (size_t)(from + len - at < (off_t)sizeof zeros ? from + len - at : (off_t)sizeof zeros);
            const ssize_t w = pwrite(f->fd, zeros, n, at);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) err = w < 0 ? errno : EIO;
            else at += w;
        }
    }
    if (err) {
        /* give the partial reservation back; the file's HDF5 content ends at eoa <= phys */
        if (ftruncate(f->fd, (off_t)f->phys) != 0) { /* nothing to do: phys stays the bound */ }
        return err;
    }
    f->phys = end;
    return 0;
}

static haddr_t vfd_get_eoa_(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const rs_vfd_t *)file)->eoa;
}

static herr_t vfd_set_eoa_(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
    (void)type;
    rs_vfd_t *f = (rs_vfd_t *)file;
    if (addr > RS_VFD_MAXADDR) return FAIL_(H5E_OVERFLOW, "rs_reserve: address %llu out of range", (unsigned long long)addr);
    if (addr > f->eoa && f->frozen) return FAIL_(H5E_CANTALLOC, "%s", k_frozen);
    if (addr > f->phys && f->rw) {
        const int err = reserve_(f, addr);
        if (err) {
            f->frozen = 1;
            return FAIL_(H5E_CANTALLOC, "cannot reserve bytes [%llu, %llu) of the file: %s", (unsigned long long)f->phys,
                         (unsigned long long)addr, strerror(err));
        }
    }
    f->eoa = addr;
    return 0;
}

static haddr_t vfd_get_eof_(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const rs_vfd_t *)file)->phys;
}

static herr_t vfd_get_handle_(H5FD_t *file, hid_t fapl, void **handle)
{
    (void)fapl;
    if (!handle) return FAIL_(H5E_BADVALUE, "rs_reserve: NULL handle pointer");
    *handle = &((rs_vfd_t *)file)->fd;
    return 0;
}

/* ---- I/O ---------------------------------------------------------------------------------- */

static herr_t vfd_read_(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    (void)type, (void)dxpl;
    rs_vfd_t *f = (rs_vfd_t *)file;
    if (addr == HADDR_UNDEF || addr > RS_VFD_MAXADDR || size > RS_VFD_MAXADDR - addr)
        return FAIL_(H5E_OVERFLOW, "rs_reserve: read at %llu + %zu out of range", (unsigned long long)addr, size);
    char *p = (char *)buf;
    while (size > 0) {
        const ssize_t r = pread(f->fd, p, size, (off_t)addr);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return FAIL_(H5E_READERROR, "read of %zu bytes at %llu failed: %s", size, (unsigned long long)addr, strerror(errno));
        if (r == 0) { /* past the end of the file: zeros, as sec2 */
            memset(p, 0, size);
            break;
        }
        p += r;
        addr += (haddr_t)r;
        size -= (size_t)r;
    }
    return 0;
}

static herr_t vfd_write_(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf)
{
    (void)type, (void)dxpl;
    rs_vfd_t *f = (rs_vfd_t *)file;
    if (f->frozen) return FAIL_(H5E_WRITEERROR, "%s", k_frozen);
    if (addr == HADDR_UNDEF || addr > RS_VFD_MAXADDR || size > RS_VFD_MAXADDR - addr)
        return FAIL_(H5E_OVERFLOW, "rs_reserve: write at %llu + %zu out of range", (unsigned long long)addr, size);
    const char *p = (const char *)buf;
    while (size > 0) {
        const ssize_t w = pwrite(f->fd, p, size, (off_t)addr);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            const int err = w < 0 ? errno : EIO;
            f->frozen = 1;
            return FAIL_(H5E_WRITEERROR, "write of %zu bytes at %llu failed: %s", size, (unsigned long long)addr,
                         strerror(err));
        }
        p += w;
        addr += (haddr_t)w;
        size -= (size_t)w;
    }
    if (addr > f->phys) f->phys = addr; /* HDF5 writes below eoa <= phys: not expected */
    return 0;
}

static herr_t vfd_truncate_(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
    (void)dxpl, (void)closing;
    rs_vfd_t *f = (rs_vfd_t *)file;
    if (f->frozen) return FAIL_(H5E_WRITEERROR, "%s", k_frozen);
    if (f->phys == f->eoa) return 0;
    /* the file ends where its HDF5 content does (as sec2 leaves it after a flush); a reservation
     * past eoa is given back. eoa > phys cannot happen (set_eoa reserves first) */
    if (ftruncate(f->fd, (off_t)f->eoa) != 0) {
        f->frozen = 1;
        return FAIL_(H5E_WRITEERROR, "cannot set the file's size to %llu: %s", (unsigned long long)f->eoa, strerror(errno));
    }
    f->phys = f->eoa;
    return 0;
}

static herr_t vfd_lock_(H5FD_t *file, hbool_t rw)
{
    rs_vfd_t *f = (rs_vfd_t *)file;
    /* as sec2: exclusive for a writer, shared for a reader, never waiting (rs_h5_in_use probes it) */
    if (flock(f->fd, (rw ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        if (errno == ENOSYS) return 0; /* a file system without locks: as HDF5's ignore-disabled-locks */
        return FAIL_(H5E_CANTLOCKFILE, "unable to lock the file: %s", strerror(errno));
    }
    return 0;
}

static herr_t vfd_unlock_(H5FD_t *file)
{
    rs_vfd_t *f = (rs_vfd_t *)file;
    if (flock(f->fd, LOCK_UN) != 0 && errno != ENOSYS)
        return FAIL_(H5E_CANTUNLOCKFILE, "unable to unlock the file: %s", strerror(errno));
    return 0;
}

/* designated fields: the class struct of HDF5 1.10 and that of 1.14 (which adds a version, a driver
 * value and vector / selection / ctl callbacks, left NULL: HDF5 falls back to read / write) */
static const H5FD_class_t k_class = {
#if H5_VERSION_GE(1, 13, 2)
    .version = H5FD_CLASS_VERSION,
    .value = 300,                        /* in the range HDF5 leaves to unregistered drivers */
#endif
    .name = "rs_reserve",
    .maxaddr = RS_VFD_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    /* no driver information in the file (sb_*), no fapl / dxpl properties of its own */
    .open = vfd_open_,
    .close = vfd_close_,
    .cmp = vfd_cmp_,
    .query = vfd_query_,
    /* alloc, free: HDF5's own allocation, through set_eoa */
    .get_eoa = vfd_get_eoa_,
    .set_eoa = vfd_set_eoa_,
    .get_eof = vfd_get_eof_,
    .get_handle = vfd_get_handle_,
    .read = vfd_read_,
    .write = vfd_write_,
    /* flush: nothing buffered here */
    .truncate = vfd_truncate_,
    .lock = vfd_lock_,
    .unlock = vfd_unlock_,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

/* the driver's id, registered on first use (and again after an H5close invalidated it) */
static hid_t g_driver = -1;
static pthread_mutex_t g_driver_lock = PTHREAD_MUTEX_INITIALIZER;

static hid_t driver_(void)
{
    pthread_mutex_lock(&g_driver_lock);
    if (g_driver < 0 || H5Iis_valid(g_driver) <= 0 || H5Iget_type(g_driver) != H5I_VFL) g_driver = H5FDregister(&k_class);
    const hid_t id = g_driver;
    pthread_mutex_unlock(&g_driver_lock);
    return id;
}

hid_t rs_h5_writer_fapl(void)
{
    const hid_t drv = driver_();
    hid_t fapl = drv >= 0 ? H5Pcreate(H5P_FILE_ACCESS) : -1;
    int ok = fapl >= 0 && H5Pset_driver(fapl, drv, NULL) >= 0;
    if (ok) {
        /* evictions off: between flushes no dirty metadata is written (a cache that makes room
         * writes entries of the step in progress, which a failure would then leave half done);
         * the cache grows to the metadata touched, about 1/8 of the log's size */
        H5AC_cache_config_t c;
        memset(&c, 0, sizeof c);
        c.version = H5AC__CURR_CACHE_CONFIG_VERSION;
        ok = H5Pget_mdc_config(fapl, &c) >= 0;
        c.evictions_enabled = 0;
        c.incr_mode = H5C_incr__off;
        c.flash_incr_mode = H5C_flash_incr__off;
        c.decr_mode = H5C_decr__off;
        ok = ok && H5Pset_mdc_config(fapl, &c) >= 0;
    }
    if (!ok) {
        if (fapl >= 0) H5Pclose(fapl);
        H5Eclear2(H5E_DEFAULT);
        rs_error_set(RS_E_IO, "h5log: cannot set up the log's file driver");
        return -1;
    }
    return fapl;
}
