/* rs_input.c — the bounded open of every input, whole-file reads and gunzip (see rs_input.h). */
#include "rs_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "replayssm/eval/rs_sha256.h"

int rs_input_ends_with(const char *s, const char *suffix)
{
    if (!s || !suffix) return 0;
    const size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* errno as every message of the library names it (strerror: "Permission denied", "No such file
 * or directory"), so an unreadable file is never reported as a malformed one */
static const char *why_(int err) { return strerror(err); }

static const char *kind_(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

rs_status rs_input_open(const char *path, uint64_t max_bytes, int *fd, uint64_t *size)
{
    *fd = -1;
    if (size) *size = 0;
    if (!path || !path[0]) return rs_error_set(RS_E_INVAL, "input: no file name");
    /* O_NONBLOCK: open() of a FIFO without a writer returns at once instead of blocking */
    const int d = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (d < 0) return rs_error_set(RS_E_IO, "cannot open %s: %s", path, why_(errno));
    struct stat sb;
    if (fstat(d, &sb) != 0) {
        const int err = errno;
        close(d);
        return rs_error_set(RS_E_IO, "cannot open %s: %s", path, why_(err));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(d);
        return rs_error_set(RS_E_IO, "%s: not a regular file (%s)", path, kind_(sb.st_mode));
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        close(d);
        return rs_error_set(RS_E_FORMAT, "%s: %lld bytes, more than the limit of %llu MiB", path, (long long)sb.st_size,
                            (unsigned long long)(max_bytes >> 20));
    }
    /* back to blocking reads (O_NONBLOCK does nothing on a regular file, but stdio, zlib and
     * libhdf5 should see a plain descriptor) */
    const int fl = fcntl(d, F_GETFL);
    if (fl >= 0) (void)fcntl(d, F_SETFL, fl & ~O_NONBLOCK);
    *fd = d;
    if (size) *size = (uint64_t)sb.st_size;
    return RS_OK;
}

rs_status rs_input_check(const char *path, uint64_t max_bytes, uint64_t *size)
{
    int fd = -1;
    const rs_status st = rs_input_open(path, max_bytes, &fd, size);
    if (fd >= 0) close(fd);
    return st;
}

rs_status rs_input_fopen(const char *path, size_t max_bytes, FILE **out, size_t *size)
{
    *out = NULL;
    if (size) *size = 0;
    int fd = -1;
    uint64_t sz = 0;
    const rs_status st = rs_input_open(path, (uint64_t)max_bytes, &fd, &sz);
    if (st != RS_OK) return st;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        const int err = errno;
        close(fd);
        return rs_error_set(RS_E_IO, "cannot open %s: %s", path, why_(err));
    }
    *out = f;
    if (size) *size = (size_t)sz;
    return RS_OK;
}

/* exactly n bytes of fd into buf (the size fstat gave), then nothing more */
static rs_status read_exact_(int fd, const char *path, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        const size_t want = n - got < ((size_t)1 << 30) ? n - got : (size_t)1 << 30;
        const ssize_t k = read(fd, buf + got, want);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return rs_error_set(RS_E_IO, "read error on %s: %s", path, why_(errno));
        if (k == 0) return rs_error_set(RS_E_IO, "%s shrank while it was read (%zu of %zu bytes)", path, got, n);
        got += (size_t)k;
    }
    char extra;
    ssize_t k;
    while ((k = read(fd, &extra, 1)) < 0 && errno == EINTR) {
    }
    if (k > 0) return rs_error_set(RS_E_IO, "%s grew while it was read (more than the %zu bytes seen at open)", path, n);
    return RS_OK;
}

/* raw[n], gzip data, decompressed into *out (at most max bytes; one stream, nothing after it) */
static rs_status gunzip_(const char *path, const unsigned char *raw, size_t n, size_t max, char **out, size_t *len)
{
    /* zlib's gzip reader passes input without the magic through unchanged ("transparent mode"),
     * so random bytes in a .gz would be read as text: require the magic */
    if (n < 2 || raw[0] != 0x1f || raw[1] != 0x8b)
        return rs_error_set(RS_E_FORMAT, "%s: not gzip data (the file does not start with the gzip magic 1f 8b)", path);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + 15) != Z_OK) return rs_error_set(RS_E_NOMEM, "%s: zlib init failed", path);
    size_t cap = n < ((size_t)1 << 20) ? (size_t)1 << 18 : n * 4;
    if (cap > max) cap = max;
    char *buf = (char *)malloc(cap + 1);
    size_t got = 0;
    rs_status st = buf ? RS_OK : rs_error_set(RS_E_NOMEM, "out of memory reading %s", path);
    zs.next_in = (Bytef *)raw;
    size_t in_left = n;
    while (st == RS_OK) {
        if (got == cap) {
            if (cap >= max) {
                st = rs_error_set(RS_E_FORMAT, "%s: more than %zu MiB uncompressed (the limit)", path, max >> 20);
                break;
            }
            const size_t nc = cap > max / 2 ? max : 2 * cap;
            char *nb = (char *)realloc(buf, nc + 1);
            if (!nb) {
                st = rs_error_set(RS_E_NOMEM, "out of memory reading %s", path);
                break;
            }
            buf = nb;
            cap = nc;
        }
        const size_t in_now = in_left < ((size_t)1 << 30) ? in_left : (size_t)1 << 30;
        const size_t room = cap - got < ((size_t)1 << 30) ? cap - got : (size_t)1 << 30;
        zs.avail_in = (uInt)in_now;
        zs.next_out = (Bytef *)buf + got;
        zs.avail_out = (uInt)room;
        const int zr = inflate(&zs, Z_NO_FLUSH);
        got += room - zs.avail_out;
        in_left -= in_now - zs.avail_in;
        if (zr == Z_STREAM_END) {
            if (in_left != 0) st = rs_error_set(RS_E_FORMAT, "%s: data after the gzip stream", path);
            break;
        }
        if (zr == Z_BUF_ERROR && in_left == 0) {
            st = rs_error_set(RS_E_FORMAT, "%s: corrupt or truncated gzip data: the stream ends early", path);
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            st = rs_error_set(RS_E_FORMAT, "%s: corrupt gzip data: %s", path, zs.msg ? zs.msg : "inflate failed");
            break;
        }
    }
    inflateEnd(&zs);
    if (st != RS_OK) {
        free(buf);
        return st;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return RS_OK;
}

rs_status rs_input_read_all(const char *path, size_t max_bytes, unsigned flags, char **data, size_t *len,
                            char sha_stored[65])
{
    *data = NULL;
    *len = 0;
    const int gz = (flags & RS_INPUT_GUNZIP) && rs_input_ends_with(path, ".gz");
    int fd = -1;
    uint64_t sz = 0;
    rs_status st = rs_input_open(path, (uint64_t)max_bytes, &fd, &sz);
    if (st != RS_OK) return st;
    char *raw = (char *)malloc((size_t)sz + 1);
    st = raw ? read_exact_(fd, path, raw, (size_t)sz) : rs_error_set(RS_E_NOMEM, "out of memory reading %s", path);
    close(fd);
    if (st != RS_OK) {
        free(raw);
        return st;
    }
    raw[sz] = '\0';
    if (sha_stored) rs_sha256(raw, (size_t)sz, sha_stored);
    if (!gz) {
        *data = raw;
        *len = (size_t)sz;
        return RS_OK;
    }
    st = gunzip_(path, (const unsigned char *)raw, (size_t)sz, max_bytes, data, len);
    free(raw);
    return st;
}
