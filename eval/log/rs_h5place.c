/* rs_h5place.c — output placement of the eval layer (see rs_h5place.h). */
#include "rs_h5place.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static const char *kind_(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

rs_status rs_h5_target_state(const char *path, int *exists)
{
    struct stat sb;
    *exists = 0;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT) return RS_OK;
        return rs_error_set(RS_E_IO, "cannot inspect %s: %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode))
        return rs_error_set(RS_E_IO, "%s is %s: only a regular file is ever replaced or continued", path,
                            kind_(sb.st_mode));
    *exists = 1;
    return RS_OK;
}

rs_status rs_h5_temp_name(const char *path, char *buf, size_t size)
{
    const int n = snprintf(buf, size, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= size) return rs_error_set(RS_E_INVAL, "output path too long: %s", path);
    return RS_OK;
}

int rs_h5_in_use(const char *path)
{
    /* O_NONBLOCK: never wait on a FIFO put there meanwhile; O_NOFOLLOW: the name itself */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat sb;
    int busy = 0;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        /* HDF5 holds flock(LOCK_EX) on every file it has open for writing (LOCK_SH for reading):
         * a shared probe fails only against a writer and never disturbs a reader */
        if (flock(fd, LOCK_SH | LOCK_NB) != 0) busy = errno == EWOULDBLOCK;
        else flock(fd, LOCK_UN);
    }
    close(fd);
    return busy;
}

int rs_h5_clean_stale(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash) {
        const size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir) return 0;
        memcpy(dir, path, n);
        dir[n] = '\0';
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    char prefix[4096];
    if ((size_t)snprintf(prefix, sizeof prefix, "%s.tmp.", base) >= sizeof prefix) return 0;
    const size_t plen = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, plen) != 0) continue;
        const char *digits = e->d_name + plen;
        char *end = NULL;
        errno = 0;
        const long pid = strtol(digits, &end, 10);
        if (!digits[0] || *end || errno || pid <= 0 || pid == (long)getpid()) continue;
        /* the writer is gone: kill(pid, 0) fails with ESRCH (EPERM means it exists) */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[8192];
        if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= sizeof full) continue;
        struct stat sb;
        /* a pid from another pid namespace can look dead: a file held open is never removed */
        if (lstat(full, &sb) != 0 || !S_ISREG(sb.st_mode) || rs_h5_in_use(full)) continue;
        if (unlink(full) == 0) removed++;
    }
    closedir(d);
    return removed;
}

rs_status rs_h5_place(const char *tmp, const char *path, int replace, const char *exists_hint)
{
    if (!replace) {
        if (link(tmp, path) != 0) {
            const int err = errno;
            if (err == EEXIST)
                return rs_error_set(RS_E_IO, "%s exists%s", path, exists_hint ? exists_hint : "");
            return rs_error_set(RS_E_IO, "cannot create %s: %s", path, strerror(err));
        }
        unlink(tmp);
        return RS_OK;
    }
    int exists = 0;
    rs_status st = rs_h5_target_state(path, &exists);
    if (st != RS_OK) return st;
    if (rename(tmp, path) != 0) return rs_error_set(RS_E_IO, "cannot move %s to %s: %s", tmp, path, strerror(errno));
    return RS_OK;
}

int rs_h5_is_file(hid_t f, const char *path)
{
    void *h = NULL;
    struct stat a, b;
    /* the sec2 driver (the default) hands out its file descriptor */
    if (H5Fget_vfd_handle(f, H5P_DEFAULT, &h) < 0 || !h) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    if (fstat(*(int *)h, &a) != 0 || lstat(path, &b) != 0) return 0;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
