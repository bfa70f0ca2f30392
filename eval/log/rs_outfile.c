/* rs_outfile.c — plain output files on the eval layer's placement rules (replayssm/eval/rs_outfile.h,
 * rs_h5place.h): the temporary name, the target check and link() / rename() are the log's own. */
#include "replayssm/eval/rs_outfile.h"
#include "rs_h5place.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct rs_outfile {
    FILE *f;
    int force;
    char path[4096], tmp[4096];
};

static const char *k_exists = "; pass --force to overwrite it";

rs_status rs_outfile_open(const char *path, int force, rs_outfile **out)
{
    if (!out) return rs_error_set(RS_E_INVAL, "rs_outfile_open: NULL argument");
    *out = NULL;
    if (!path || !path[0]) return rs_error_set(RS_E_INVAL, "output: no file name");
    rs_outfile *o = (rs_outfile *)calloc(1, sizeof *o);
    if (!o) return rs_error_set(RS_E_NOMEM, "output: out of memory");
    const int n = snprintf(o->path, sizeof o->path, "%s", path);
    rs_status st = n < 0 || (size_t)n >= sizeof o->path ? rs_error_set(RS_E_INVAL, "output path too long: %s", path)
                                                        : RS_OK;
    int exists = 0;
    if (st == RS_OK) st = rs_h5_target_state(path, &exists);
    if (st == RS_OK && exists && !force) st = rs_error_set(RS_E_IO, "%s exists%s", path, k_exists);
    if (st == RS_OK) st = rs_h5_temp_name(path, o->tmp, sizeof o->tmp);
    if (st != RS_OK) {
        free(o);
        return st;
    }
    rs_h5_clean_stale(path);
    unlink(o->tmp); /* a leftover of this very pid can only be ours */
    const int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        st = rs_error_set(RS_E_IO, "cannot create %s (for %s): %s", o->tmp, path, strerror(errno));
        free(o);
        return st;
    }
    (void)flock(fd, LOCK_EX | LOCK_NB); /* "being written": rs_h5_clean_stale leaves it alone */
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        st = rs_error_set(RS_E_IO, "cannot create %s (for %s): %s", o->tmp, path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o);
        return st;
    }
    o->force = force;
    *out = o;
    return RS_OK;
}

FILE *rs_outfile_stream(rs_outfile *o) { return o ? o->f : NULL; }

void rs_outfile_discard(rs_outfile *o)
{
    if (!o) return;
    if (o->f) fclose(o->f);
    unlink(o->tmp);
    free(o);
}

rs_status rs_outfile_commit(rs_outfile *o)
{
    if (!o) return rs_error_set(RS_E_INVAL, "rs_outfile_commit: NULL handle");
    errno = 0;
    const int bad = fflush(o->f) != 0 || ferror(o->f);
    const int werr = errno;
    const int cerr = fclose(o->f) != 0 ? errno : 0;
    o->f = NULL;
    rs_status st = RS_OK;
    if (bad || cerr)
        st = rs_error_set(RS_E_IO, "cannot write %s: %s", o->path, strerror(bad && werr ? werr : cerr ? cerr : EIO));
    if (st == RS_OK) st = rs_h5_place(o->tmp, o->path, o->force, k_exists);
    if (st != RS_OK) unlink(o->tmp);
    free(o);
    return st;
}
