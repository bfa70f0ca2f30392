/* rs_input.c — regular, bounded input files (see rs_input.h). */
#include "rs_input.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

rs_status rs_input_fopen(const char *path, size_t max_bytes, FILE **out, size_t *size)
{
    *out = NULL;
    if (size) *size = 0;
    /* O_NONBLOCK: open() of a FIFO without a writer returns at once instead of blocking */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return rs_error_set(RS_E_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return rs_error_set(RS_E_IO, "%s: not a regular file", path);
    }
    if ((unsigned long long)sb.st_size > (unsigned long long)max_bytes) {
        close(fd);
        return rs_error_set(RS_E_FORMAT, "%s: %lld bytes, more than the limit of %zu MiB", path, (long long)sb.st_size,
                            max_bytes >> 20);
    }
    /* back to blocking reads for the regular file (O_NONBLOCK has no effect on them, but stdio
     * should see a plain descriptor) */
    const int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        const int err = errno;
        close(fd);
        return rs_error_set(RS_E_IO, "cannot open %s: %s", path, strerror(err));
    }
    *out = f;
    if (size) *size = (size_t)sb.st_size;
    return RS_OK;
}

rs_status rs_input_read_all(const char *path, size_t max_bytes, char **data, size_t *len)
{
    FILE *f = NULL;
    rs_status st = rs_input_fopen(path, max_bytes, &f, NULL);
    if (st != RS_OK) return st;
    size_t cap = 1 << 16, n = 0;
    char *buf = (char *)malloc(cap + 1);
    st = buf ? RS_OK : rs_error_set(RS_E_NOMEM, "out of memory reading %s", path);
    while (st == RS_OK) {
        if (n == cap) {
            char *nb = (char *)realloc(buf, 2 * cap + 1);
            if (!nb) { st = rs_error_set(RS_E_NOMEM, "out of memory reading %s", path); break; }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) st = rs_error_set(RS_E_IO, "read error on %s", path);
            break;
        }
    }
    fclose(f);
    if (st != RS_OK) { free(buf); return st; }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return RS_OK;
}
