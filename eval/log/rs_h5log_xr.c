/* rs_h5log_xr.c — the root of a log as one netCDF-4 dataset (format version 2): coordinates
 * book (ids), position (0 .. P-1), run (policy strings) with window and seed along run, and
 * virtual datasets that stack the run groups' per-position arrays into (run, book, position), so
 *     xr.open_dataset("run.h5", engine="h5netcdf")
 * is the whole log as an xarray Dataset (docs/hdf5-layout.md "Dimensions (netCDF-4 / xarray)").
 * The virtual datasets hold no data: each maps /runs/runNN/<name> of this same file ("."), so the
 * run groups stay the one stored copy that info, --resume and the notebooks read. */
#include "rs_h5log_impl.h"
#include "rs_h5attr.h"
#include "rs_h5dims.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY_(x)                                                                                            \
    do {                                                                                                   \
        if (st == RS_OK) st = (x);                                                                         \
    } while (0)

static rs_status attrs_(hid_t f, const char *path, const char *long_name, const char *units, const char *coords)
{
    hid_t o = H5Oopen(f, path, H5P_DEFAULT);
    if (o < 0) return rs_h5_fail(RS_E_IO, "cannot open %s", path);
    rs_status st = rs_h5_attr_set_str(o, "long_name", long_name);
    if (st == RS_OK && units) st = rs_h5_attr_set_str(o, "units", units);
    if (st == RS_OK && coords) st = rs_h5_attr_set_str(o, "coordinates", coords);
    H5Oclose(o);
    return st;
}

/* A virtual dataset `name` at the root of rank 3 [R, B, P] (runs: src = "/runs/runNN/<src>") or
 * rank 2 [B, P] / 1 [B] (src is the one source's path). */
static rs_status virtual_(hid_t f, const char *name, hid_t type, const void *fill, int rank, const hsize_t *dims,
                          const char *src)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t vs = H5Screate_simple(rank, dims, NULL);
    hid_t ss = H5Screate_simple(rank == 3 ? 2 : rank, rank == 3 ? dims + 1 : dims, NULL);
    rs_status st = dcpl >= 0 && vs >= 0 && ss >= 0 && H5Pset_fill_value(dcpl, type, fill) >= 0
                       ? RS_OK
                       : rs_h5_fail(RS_E_IO, "cannot describe the virtual dataset %s", name);
    if (rank == 3) {
        const hsize_t count[3] = {1, dims[1], dims[2]};
        for (hsize_t r = 0; st == RS_OK && r < dims[0]; r++) {
            const hsize_t start[3] = {r, 0, 0};
            char p[64];
            snprintf(p, sizeof p, "/runs/run%02llu/%s", (unsigned long long)r, src);
            if (H5Sselect_hyperslab(vs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
                H5Pset_virtual(dcpl, vs, ".", p, ss) < 0)
                st = rs_h5_fail(RS_E_IO, "cannot map %s into the virtual dataset %s", p, name);
        }
        if (st == RS_OK && H5Sselect_all(vs) < 0) st = rs_h5_fail(RS_E_IO, "cannot select %s", name);
    } else if (st == RS_OK && H5Pset_virtual(dcpl, vs, ".", src, ss) < 0) {
        st = rs_h5_fail(RS_E_IO, "cannot map %s into the virtual dataset %s", src, name);
    }
    hid_t d = st == RS_OK ? H5Dcreate2(f, name, type, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    if (st == RS_OK && d < 0) st = rs_h5_fail(RS_E_IO, "cannot create the virtual dataset %s", name);
    if (d >= 0) H5Dclose(d);
    if (ss >= 0) H5Sclose(ss);
    if (vs >= 0) H5Sclose(vs);
    if (dcpl >= 0) H5Pclose(dcpl);
    return st;
}

/* position [P] = 0 .. P-1 as int64, chunked, shuffled + deflated (a few KiB for 2^24) */
static rs_status positions_(hid_t f, hsize_t P)
{
    int64_t *v = (int64_t *)malloc((size_t)P * sizeof(int64_t));
    if (!v) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    for (hsize_t i = 0; i < P; i++) v[i] = (int64_t)i;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t ch = P < 65536 ? P : 65536;
    if (dcpl >= 0) {
        H5Pset_chunk(dcpl, 1, &ch);
        if (H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0) H5Pset_shuffle(dcpl);
        if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) H5Pset_deflate(dcpl, 4);
    }
    hid_t sp = H5Screate_simple(1, &P, NULL);
    hid_t d = dcpl >= 0 && sp >= 0 ? H5Dcreate2(f, "position", H5T_NATIVE_INT64, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    rs_status st = d >= 0 && H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0
                       ? RS_OK
                       : rs_h5_fail(RS_E_IO, "cannot write /position");
    if (d >= 0 && H5Dclose(d) < 0 && st == RS_OK) st = rs_h5_fail(RS_E_IO, "cannot write /position");
    if (sp >= 0) H5Sclose(sp);
    if (dcpl >= 0) H5Pclose(dcpl);
    free(v);
    return st;
}

rs_status rs_h5log_write_xr_(hid_t f, const rs_h5log_meta *m)
{
    const hsize_t B = m->n_books, P = rs_h5log_width_of_(m), R = m->n_runs;
    static const char *const dB[1] = {"/book"}, *const dR[1] = {"/run"};
    static const char *const dBP[2] = {"/book", "/position"}, *const dRBP[3] = {"/run", "/book", "/position"};
    hid_t t = rs_h5_vlen_str_type();
    if (t < 0) return rs_h5_fail(RS_E_IO, "cannot make a string type");
    rs_status st = rs_h5_ds_create_write(f, "book", H5P_DEFAULT, t, 1, &B, m->book_ids);
    TRY_(rs_h5_make_scale(f, "book"));
    TRY_(attrs_(f, "book", "book or stream id (/books/id)", NULL, NULL));
    TRY_(positions_(f, P));
    TRY_(rs_h5_make_scale(f, "position"));
    TRY_(attrs_(f, "position", "position t in the book (0-based; the model predicts token t+1)", NULL, NULL));
    /* completed_positions: readers trust positions below it (the commit record) */
    const int64_t zero = 0;
    TRY_(virtual_(f, "completed_positions", H5T_NATIVE_INT64, &zero, 1, &B, "/books/completed_positions"));
    TRY_(attrs_(f, "completed_positions", "positions of each book committed; values at or past it are not valid", NULL,
                NULL));
    TRY_(rs_h5_attach_dims(f, "completed_positions", 1, dB));
    const double nan = NAN;
    const int32_t m1 = -1;
    const hsize_t bp[2] = {B, P};
    TRY_(virtual_(f, "reference_nll", H5T_NATIVE_DOUBLE, &nan, 2, bp, "/reference/nll"));
    TRY_(attrs_(f, "reference_nll", "-log p_ref(y_t) of the fp32 reference", "nats", NULL));
    TRY_(virtual_(f, "next_token", H5T_NATIVE_INT32, &m1, 2, bp, "/reference/next_token"));
    TRY_(attrs_(f, "next_token", "true next token y_t (the input at position t+1)", NULL, NULL));
    TRY_(virtual_(f, "reference_top1", H5T_NATIVE_INT32, &m1, 2, bp, "/reference/top1"));
    TRY_(attrs_(f, "reference_top1", "argmax of the reference distribution", NULL, NULL));
    TRY_(rs_h5_attach_dims(f, "reference_nll", 2, dBP));
    TRY_(rs_h5_attach_dims(f, "next_token", 2, dBP));
    TRY_(rs_h5_attach_dims(f, "reference_top1", 2, dBP));
    if (R > 0 && st == RS_OK) {
        const char **pol = (const char **)calloc((size_t)R, sizeof(char *));
        uint64_t *win = (uint64_t *)calloc((size_t)R, sizeof(uint64_t)), *seed = (uint64_t *)calloc((size_t)R, sizeof(uint64_t));
        if (!pol || !win || !seed) st = rs_error_set(RS_E_NOMEM, "h5log: out of memory");
        for (size_t r = 0; st == RS_OK && r < R; r++) {
            pol[r] = m->runs[r].policy;
            win[r] = m->runs[r].window;
            seed[r] = m->runs[r].seed;
        }
        TRY_(rs_h5_ds_create_write(f, "run", H5P_DEFAULT, t, 1, &R, pol));
        TRY_(rs_h5_ds_create_write(f, "window", H5P_DEFAULT, H5T_NATIVE_UINT64, 1, &R, win));
        TRY_(rs_h5_ds_create_write(f, "seed", H5P_DEFAULT, H5T_NATIVE_UINT64, 1, &R, seed));
        free(pol);
        free(win);
        free(seed);
        TRY_(rs_h5_make_scale(f, "run"));
        TRY_(attrs_(f, "run", "policy of the run (/runs/runNN attribute policy; NN = the run's index)", NULL, NULL));
        TRY_(attrs_(f, "window", "replay window L of the run", NULL, NULL));
        TRY_(attrs_(f, "seed", "stochastic-rounding seed of the run", NULL, NULL));
        TRY_(rs_h5_attach_dims(f, "window", 1, dR));
        TRY_(rs_h5_attach_dims(f, "seed", 1, dR));
        const hsize_t rbp[3] = {R, B, P};
        const uint8_t z = 0;
        static const char *const names[4] = {"kl", "nll", "dp", "top1_agree"};
        static const char *const longs[4] = {"KL(p_ref || p_run) at each position", "-log p_run(y_t)",
                                             "p_run(y_t) - p_ref(y_t)", "1 if argmax p_run == argmax p_ref"};
        static const char *const units[4] = {"nats", "nats", "1", "1"};
        for (int i = 0; i < 4 && st == RS_OK; i++) {
            TRY_(virtual_(f, names[i], i == 3 ? H5T_NATIVE_UINT8 : H5T_NATIVE_DOUBLE, i == 3 ? (const void *)&z : &nan, 3,
                          rbp, names[i]));
            TRY_(attrs_(f, names[i], longs[i], units[i], "window seed"));
            TRY_(rs_h5_attach_dims(f, names[i], 3, dRBP));
        }
    }
    H5Tclose(t);
    return st;
}

#undef TRY_
