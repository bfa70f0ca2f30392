/* rs_input.c — regular, bounded input files (see rs_input.h). */
#include "rs_input.h"

#include <errno.h>
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
