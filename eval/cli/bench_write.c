/* bench_write.c — the rows of `replayssm bench` in HDF5 (bench.h; layout: docs/kernels.md): root
 * attributes tool, command, device (strings), sms, l2_bytes, copy_us, copy_bytes, copy_gbps, reps
 * (doubles), read_us, read_bytes, read_gbps (the read-only ceiling, where measured), then the table
 * /rows of bn_columns through rs_h5file_write_table. Compiled in every build. */
#include <stddef.h>

#include "bench.h"

rs_status bn_write_file(rs_h5file *h, const rs_bench_row *rows, size_t n, const bn_meta *m)
{
    const char *sn[] = {"tool", "command", "device"};
    const char *sv[] = {m->tool, m->command, m->device};
    for (size_t i = 0; i < 3; ++i) {
        rs_status st = rs_h5file_attr_str(h, "/", sn[i], sv[i]);
        if (st != RS_OK) return st;
    }
    const char *dn[] = {"sms", "l2_bytes", "copy_us", "copy_bytes", "copy_gbps", "reps"};
    const double dv[] = {m->sms, (double)m->l2_bytes, m->copy_us, m->copy_bytes, m->copy_gbps, m->reps};
    for (size_t i = 0; i < 6; ++i) {
        rs_status st = rs_h5file_attr_f64(h, "/", dn[i], dv[i]);
        if (st != RS_OK) return st;
    }
    if (m->read_us > 0) { /* the read-only ceiling (optional: readers accept files without it) */
        const char *rn[] = {"read_us", "read_bytes", "read_gbps"};
        const double rv[] = {m->read_us, m->read_bytes, m->read_bytes / (m->read_us * 1e3)};
        for (size_t i = 0; i < 3; ++i) {
            rs_status st = rs_h5file_attr_f64(h, "/", rn[i], rv[i]);
            if (st != RS_OK) return st;
        }
    }
    size_t ncols = 0;
    const rs_h5file_column *cols = bn_columns(&ncols);
    return rs_h5file_write_table(h, "/rows", rows, n, sizeof *rows, cols, ncols);
}
