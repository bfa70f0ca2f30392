/* bench_write.c — the rows of `replayssm bench` in HDF5 (bench.h; layout: docs/kernels.md):
 * root attributes tool, command, device (strings), sms, l2_bytes, copy_us, copy_bytes,
 * copy_gbps, reps (doubles), read_us, read_bytes, read_gbps (the read-only ceiling, where measured), and one 1-D
 * column per bn_row field under /rows: fixed-length strings as wide as the field, int32, or double, each number
 * column with a `units` attribute. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* int columns are written as int32 (the file's type since the first H200 run) */
_Static_assert(sizeof(int) == sizeof(int32_t), "bn_row ints are the int32 columns");

enum { COL_D, COL_I, COL_S };

typedef struct bn_col {
    const char *name;
    size_t off;
    int kind;
    size_t width; /* COL_S: bytes per string */
    const char *units;
} bn_col;

#define S_(f) {#f, offsetof(bn_row, f), COL_S, sizeof(((bn_row *)0)->f), NULL}
#define I_(f, u) {#f, offsetof(bn_row, f), COL_I, 0, u}
#define D_(f, u) {#f, offsetof(bn_row, f), COL_D, 0, u}
static const bn_col k_cols[] = {
    S_(sweep), S_(model), S_(kernel), S_(variant), S_(fmt),
    I_(B, "sequences"),
    I_(L, "window (0: not a ReplaySSM kernel)"),
    I_(T, "draft tokens (1: standard decode)"),
    I_(a, "accepted per verification (ReplaySSM verify only)"),
    D_(median_us, "us per step"),
    D_(p10_us, "us per step"),
    D_(p90_us, "us per step"),
    D_(bytes, "bytes that must move per step"),
    D_(gbps, "GB/s (1e9 B/s)"),
    D_(pct_copy, "% of copy bandwidth"),
    D_(flush_frac, "fraction of row-steps that flush"),
    D_(mean_fill, "mean committed records before the step"),
    D_(theory_bytes, "lib/rs_theory.h C.3 bytes per step (0: not modelled)"),
    D_(speedup, "x (see docs/kernels.md)"),
    D_(norm, "verify time / conventional standard step"),
    D_(norm_own, "verify time / own standard step"),
    D_(sm_mhz, "MHz, mean SM clock over the timed replays (NVML samples; NaN: not measured)"),
    D_(power_w, "W, mean board power over the timed replays (NVML samples; NaN: not measured)"),
    D_(pcap_frac, "fraction of the timed replays under the board power cap (NVML; NaN: not measured)"),
};
#undef S_
#undef I_
#undef D_

/* one column: the field of every row gathered into a contiguous array */
static rs_status column_(rs_h5file *h, const bn_ctx *c, const bn_col *col)
{
    const size_t esz = col->kind == COL_D ? sizeof(double) : col->kind == COL_I ? sizeof(int32_t) : col->width;
    char *buf = (char *)calloc(c->n ? c->n : 1, esz);
    if (!buf) return rs_error_set(RS_E_NOMEM, "bench: out of memory for column %s", col->name);
    for (size_t i = 0; i < c->n; ++i) memcpy(buf + i * esz, (const char *)&c->rows[i] + col->off, esz);
    char path[64];
    snprintf(path, sizeof path, "/rows/%s", col->name);
    const size_t dims[1] = {c->n};
    rs_status st = col->kind == COL_S   ? rs_h5file_write_str(h, path, c->n, col->width, buf)
                   : col->kind == COL_I ? rs_h5file_write_i32(h, path, 1, dims, (const int32_t *)(const void *)buf)
                                        : rs_h5file_write_f64(h, path, 1, dims, (const double *)(const void *)buf);
    free(buf);
    if (st == RS_OK && col->units) st = rs_h5file_attr_str(h, path, "units", col->units);
    return st;
}

rs_status rs_bench_write(rs_h5file *h, const bn_ctx *c, const bn_meta *m)
{
    const char *sn[] = {"tool", "command", "device"};
    const char *sv[] = {m->tool, m->command, m->device};
    for (size_t i = 0; i < 3; ++i) {
        rs_status st = rs_h5file_attr_str(h, "/", sn[i], sv[i]);
        if (st != RS_OK) return st;
    }
    const char *dn[] = {"sms", "l2_bytes", "copy_us", "copy_bytes", "copy_gbps", "reps"};
    const double dv[] = {m->sms, (double)m->l2_bytes, m->copy_us, m->copy_bytes, c->copy_gbps, c->reps};
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
    rs_status st = rs_h5file_group(h, "/rows");
    for (size_t i = 0; st == RS_OK && i < sizeof k_cols / sizeof k_cols[0]; ++i) st = column_(h, c, &k_cols[i]);
    return st;
}
