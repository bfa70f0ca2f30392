/* rs_h5log_skeleton.c — the layout of a new log: root attributes, /windows, /books, /reference,
 * /runs (docs/hdf5-layout.md). Everything a writer later fills is created here, so the file that
 * is moved into place is complete except for the per-position values. */
#include "rs_h5log_impl.h"
#include "rs_h5attr.h"
#include "rs_h5dims.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a string attribute on the object at `path` below loc */
static rs_status describe_(hid_t loc, const char *path, const char *name, const char *text)
{
    hid_t o = H5Oopen(loc, path, H5P_DEFAULT);
    if (o < 0) return rs_h5_fail(RS_E_IO, "cannot open %s", path);
    rs_status st = rs_h5_attr_set_str(o, name, text);
    if (H5Oclose(o) < 0 && st == RS_OK) st = rs_h5_fail(RS_E_IO, "cannot close %s", path);
    return st;
}

/* the position extent of every per-position dataset: the longest book (format version 2; version
 * 1 grew it as positions arrived, maximum dims [B, unlimited]). Fixed, so the netCDF dimension
 * `position` has one length and no HDF5 chunk is ever allocated before it is written. */
hsize_t rs_h5log_width_of_(const rs_h5log_meta *m)
{
    hsize_t w = 1;
    for (size_t b = 0; b < m->n_books; b++)
        if (m->book_len[b] > w) w = m->book_len[b];
    return w;
}

/* [n_books, width] per-position dataset, chunk (1, chunk), shuffle + deflate, with the
 * netCDF / CF attributes long_name and units (units "1": dimensionless; none for token ids). */
static rs_status make_pos_ds_(hid_t g, const char *name, hid_t type, const void *fill, const rs_h5log_meta *m,
                              const char *desc, const char *units)
{
    const size_t n_books = m->n_books;
    const hsize_t width = rs_h5log_width_of_(m), chunk = m->chunk < width ? m->chunk : width;
    hsize_t dims[2] = {n_books, width}, maxd[2] = {n_books, width}, ch[2] = {1, chunk};
    hid_t sp = H5Screate_simple(2, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, ch);
    H5Pset_fill_value(dcpl, type, fill);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_IFSET);
    if (H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0) H5Pset_shuffle(dcpl);
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) H5Pset_deflate(dcpl, 4);
    hid_t d = H5Dcreate2(g, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(sp);
    if (d < 0) return rs_h5_fail(RS_E_IO, "cannot create dataset %s", name);
    rs_status st = rs_h5_attr_set_str(d, "dims", "book,position");
    if (st == RS_OK) st = rs_h5_attr_set_str(d, "description", desc);
    if (st == RS_OK) st = rs_h5_attr_set_str(d, "long_name", desc);
    if (st == RS_OK && units) st = rs_h5_attr_set_str(d, "units", units);
    H5Dclose(d);
    static const char *const bp[2] = {"book", "position"};
    if (st == RS_OK) st = rs_h5_attach_dims(g, name, 2, bp);
    return st;
}

/* the group's own netCDF dimensions book [n_books] and (width != 0) position [width], so each
 * group opens in xarray with named dimensions (and datasets of several groups concatenate) */
static rs_status group_dims_(hid_t g, size_t n_books, hsize_t width)
{
    rs_status st = rs_h5_dim_only(g, "book", n_books);
    if (st == RS_OK && width) st = rs_h5_dim_only(g, "position", width);
    return st;
}

/* a contiguous dataset of rank 1 or 2 allocated at creation (updated in place), filled with *fill,
 * its netCDF dimensions dim_names[rank] (scales of group g; "dims" = them comma-joined) */
static rs_status make_fixed_ds_(hid_t g, const char *name, hid_t type, const void *fill, int rank, const hsize_t *dims,
                                const char *const *dim_names, const char *desc, const char *units)
{
    hsize_t d1[2] = {dims[0] ? dims[0] : 1, rank > 1 ? dims[1] : 1};
    hid_t sp = H5Screate_simple(rank, d1, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
    H5Pset_fill_value(dcpl, type, fill);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC);
    hid_t d = H5Dcreate2(g, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(sp);
    if (d < 0) return rs_h5_fail(RS_E_IO, "cannot create dataset %s", name);
    char joined[64];
    snprintf(joined, sizeof joined, "%s%s%s", dim_names[0], rank > 1 ? "," : "", rank > 1 ? dim_names[1] : "");
    rs_status st = rs_h5_attr_set_str(d, "dims", joined);
    if (st == RS_OK) st = rs_h5_attr_set_str(d, "description", desc);
    if (st == RS_OK) st = rs_h5_attr_set_str(d, "long_name", desc);
    if (st == RS_OK && units) st = rs_h5_attr_set_str(d, "units", units);
    H5Dclose(d);
    if (st == RS_OK) st = rs_h5_attach_dims(g, name, rank, dim_names);
    return st;
}

/* [n] over book, filled with *fill */
static rs_status make_small_ds_(hid_t g, const char *name, hid_t type, const void *fill, size_t n, const char *desc)
{
    static const char *const b1[1] = {"book"};
    const hsize_t dims[1] = {n};
    return make_fixed_ds_(g, name, type, fill, 1, dims, b1, desc, NULL);
}

#define TRY_(x)                                                                                            \
    do {                                                                                                   \
        if (st == RS_OK) st = (x);                                                                         \
    } while (0)

static rs_status root_attrs_(hid_t f, const rs_h5log_meta *m)
{
    rs_status st = RS_OK;
    TRY_(rs_h5_attr_set_str(f, "format", RS_H5LOG_FORMAT));
    TRY_(rs_h5_attr_set_u64(f, "format_version", RS_H5LOG_FORMAT_VERSION));
    TRY_(rs_h5_attr_set_str(f, "tool_version", m->tool_version));
    TRY_(rs_h5_attr_set_str(f, "git_commit", m->git_commit));
    TRY_(rs_h5_attr_set_str(f, "command_line", m->command_line));
    char cmd[32]; /* the command that wrote it (rs_h5log_command_of_): --resume refuses another's partial */
    rs_h5log_command_of_(m->command_line, cmd, sizeof cmd);
    TRY_(rs_h5_attr_set_str(f, "command", cmd));
    TRY_(rs_h5_attr_set_str(f, "model_path", m->model_path));
    TRY_(rs_h5_attr_set_str(f, "model_config_hash", m->model_config_hash));
    TRY_(rs_h5_attr_set_str(f, "model_type", m->model_type));
    TRY_(rs_h5_attr_set_str(f, "tokenizer", m->tokenizer));
    TRY_(rs_h5_attr_set_str(f, "tokenizer_file", m->tokenizer_file ? m->tokenizer_file : ""));
    TRY_(rs_h5_attr_set_str(f, "tokenizer_sha256", m->tokenizer_sha256 ? m->tokenizer_sha256 : ""));
    TRY_(rs_h5_attr_set_str(f, "data_path", m->data_path));
    TRY_(rs_h5_attr_set_str(f, "split", m->split));
    TRY_(rs_h5_attr_set_str(f, "short_books", m->short_books));
    TRY_(rs_h5_attr_set_u64(f, "tokens", m->tokens));
    TRY_(rs_h5_attr_set_u64(f, "chunk", m->chunk));
    TRY_(rs_h5_attr_set_u64(f, "n_books", m->n_books));
    TRY_(rs_h5_attr_set_u64(f, "n_runs", m->n_runs));
    TRY_(rs_h5_attr_set_str(f, "start_time", m->start_time));
    TRY_(rs_h5_attr_set_str(f, "end_time", ""));
    TRY_(rs_h5_attr_set_str(f, "status", "running"));
    for (size_t i = 0; st == RS_OK && i < m->n_extra; i++) {
        if (H5Aexists(f, m->extra[i].key) > 0) {
            st = rs_error_set(RS_E_INVAL, "log attribute '%s' given twice (an extra attribute may not reuse a standard name)",
                              m->extra[i].key);
            break;
        }
        TRY_(rs_h5_attr_set_str(f, m->extra[i].key, m->extra[i].value ? m->extra[i].value : ""));
    }
    TRY_(rs_h5_attr_set_str(f, "kl_definition", "KL(p_ref || p_run) = sum_i p_ref,i (log p_ref,i - log p_run,i), nats, double precision"));
    if (st != RS_OK) return st;
    /* book_ids as one comma-separated string too, for quick reading */
    size_t len = 1;
    for (size_t b = 0; b < m->n_books; b++) len += strlen(m->book_ids[b]) + 1;
    char *s = (char *)calloc(len, 1);
    if (!s) return rs_error_set(RS_E_NOMEM, "h5log: out of memory");
    for (size_t b = 0; b < m->n_books; b++) {
        if (b) strcat(s, ",");
        strcat(s, m->book_ids[b]);
    }
    st = rs_h5_attr_set_str(f, "book_ids", s);
    free(s);
    return st;
}

static rs_status windows_(hid_t f)
{
    uint64_t lo[RS_KL_N_WINDOWS], hi[RS_KL_N_WINDOWS];
    for (size_t w = 0; w < RS_KL_N_WINDOWS; w++) {
        size_t a, b;
        rs_kl_window_bounds(w, &a, &b);
        lo[w] = a;
        hi[w] = b;
    }
    const hsize_t d = RS_KL_N_WINDOWS;
    hid_t g = H5Gcreate2(f, "windows", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return rs_h5_fail(RS_E_IO, "cannot create group /windows");
    rs_status st = rs_h5_ds_create_write(g, "start", H5P_DEFAULT, H5T_NATIVE_UINT64, 1, &d, lo);
    TRY_(rs_h5_ds_create_write(g, "end", H5P_DEFAULT, H5T_NATIVE_UINT64, 1, &d, hi));
    TRY_(describe_(g, "start", "description", "first position of each summary window"));
    TRY_(describe_(g, "end", "description", "end (exclusive) of each summary window"));
    static const char *const w1[1] = {"summary_window"};
    TRY_(rs_h5_dim_only(g, "summary_window", d));
    TRY_(rs_h5_attach_dims(g, "start", 1, w1));
    TRY_(rs_h5_attach_dims(g, "end", 1, w1));
    H5Gclose(g);
    return st;
}

static rs_status books_(hid_t f, const rs_h5log_meta *m)
{
    hid_t g = H5Gcreate2(f, "books", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return rs_h5_fail(RS_E_IO, "cannot create group /books");
    const hsize_t d = m->n_books;
    hid_t t = rs_h5_vlen_str_type();
    rs_status st = t >= 0 ? RS_OK : rs_h5_fail(RS_E_IO, "cannot make a string type");
    TRY_(group_dims_(g, m->n_books, 0));
    TRY_(rs_h5_ds_create_write(g, "id", H5P_DEFAULT, t, 1, &d, m->book_ids));
    TRY_(rs_h5_ds_create_write(g, "title", H5P_DEFAULT, t, 1, &d, m->book_titles));
    TRY_(rs_h5_ds_create_write(g, "length", H5P_DEFAULT, H5T_NATIVE_UINT64, 1, &d, m->book_len));
    TRY_(describe_(g, "length", "description", "positions evaluated in this book (<= tokens)"));
    static const char *const b1[1] = {"book"};
    TRY_(rs_h5_attach_dims(g, "id", 1, b1));
    TRY_(rs_h5_attach_dims(g, "title", 1, b1));
    TRY_(rs_h5_attach_dims(g, "length", 1, b1));
    const int64_t zero = 0;
    TRY_(make_small_ds_(g, "completed_positions", H5T_NATIVE_INT64, &zero, m->n_books,
                        "positions of this book written and committed; values past it are not valid"));
    if (t >= 0) H5Tclose(t);
    H5Gclose(g);
    return st;
}

static rs_status reference_(hid_t f, const rs_h5log_meta *m)
{
    const double nan = NAN;
    const int32_t m1 = -1;
    hid_t g = H5Gcreate2(f, "reference", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return rs_h5_fail(RS_E_IO, "cannot create group /reference");
    rs_status st = group_dims_(g, m->n_books, rs_h5log_width_of_(m));
    TRY_(make_pos_ds_(g, "next_token", H5T_NATIVE_INT32, &m1, m, "true next token y_t (the input at position t+1)",
                      NULL));
    TRY_(make_pos_ds_(g, "nll", H5T_NATIVE_DOUBLE, &nan, m, "-log p_ref(y_t) of the fp32 reference", "nats"));
    TRY_(make_pos_ds_(g, "top1", H5T_NATIVE_INT32, &m1, m, "argmax of the reference distribution", NULL));
    TRY_(rs_h5_attr_set_str(g, "policy", "fp32"));
    H5Gclose(g);
    return st;
}

/* a copy's format as fields: <c>_base (fp32 fp16 bf16 fp8 nvfp4), <c>_rounding (none rtn sr),
 * <c>_sr_bits (K under SR, else 0), <c>_options ("", pow2, floor) */
static rs_status format_fields_(hid_t rg, const char *c, const rs_format *f)
{
    char k_base[32], k_round[32], k_bits[32], k_opt[32];
    snprintf(k_base, sizeof k_base, "%s_base", c);
    snprintf(k_round, sizeof k_round, "%s_rounding", c);
    snprintf(k_bits, sizeof k_bits, "%s_sr_bits", c);
    snprintf(k_opt, sizeof k_opt, "%s_options", c);
    const char *base = rs_format_kind_name(f->kind), *rounding = rs_format_rounding_name(f);
    rs_status st = RS_OK;
    TRY_(rs_h5_attr_set_str(rg, k_base, base ? base : "?"));
    TRY_(rs_h5_attr_set_str(rg, k_round, rounding));
    TRY_(rs_h5_attr_set_u64(rg, k_bits, !strcmp(rounding, "sr") ? (uint64_t)f->sr_bits : 0));
    TRY_(rs_h5_attr_set_str(rg, k_opt, rs_format_option_name(f)));
    return st;
}

/* [n_books][n_moe_layers] int64 over (book, moe_layer), filled with -1 (not recorded) */
static rs_status moe_count_ds_(hid_t g, const char *name, const rs_h5log_meta *m, const char *desc)
{
    static const char *const bl[2] = {"book", "moe_layer"};
    const hsize_t dims[2] = {m->n_books, m->n_moe_layers};
    const int64_t fill = -1;
    return make_fixed_ds_(g, name, H5T_NATIVE_INT64, &fill, 2, dims, bl, desc, "1");
}

/* MoE models: the coordinate moe_layer (the model layer of each MoE layer) and the run's routing
   counts against the reference per book and MoE layer (docs/hdf5-layout.md) */
static rs_status moe_ds_(hid_t rg, const rs_h5log_meta *m)
{
    const hsize_t n = m->n_moe_layers;
    rs_status st = rs_h5_ds_create_write(rg, "moe_layer", H5P_DEFAULT, H5T_NATIVE_INT32, 1, &n, m->moe_layers);
    hid_t d = st == RS_OK ? H5Dopen2(rg, "moe_layer", H5P_DEFAULT) : -1;
    if (st == RS_OK && d < 0) st = rs_h5_fail(RS_E_IO, "cannot open dataset moe_layer");
    if (st == RS_OK) st = rs_h5_attr_set_str(d, "long_name", "model layer index of each MoE layer");
    if (d >= 0) H5Dclose(d);
    if (st == RS_OK) st = rs_h5_make_scale(rg, "moe_layer");
    if (st == RS_OK)
        st = moe_count_ds_(rg, "moe_route_positions", m,
                           "positions of the book (committed ones) whose experts in this layer differ from the "
                           "reference's (-1: not recorded)");
    if (st == RS_OK)
        st = moe_count_ds_(rg, "moe_route_experts", m,
                           "experts chosen in this layer that the reference did not choose, summed over the book's "
                           "committed positions (-1: not recorded)");
    return st;
}

static rs_status run_group_(hid_t g, size_t r, const rs_h5log_meta *m)
{
    char name[32];
    snprintf(name, sizeof name, "run%02zu", r);
    hid_t rg = H5Gcreate2(g, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (rg < 0) return rs_h5_fail(RS_E_IO, "cannot create group /runs/%s", name);
    const rs_h5log_run_info *ri = &m->runs[r];
    const double nan = NAN;
    const uint8_t z = 0;
    const int32_t m1 = -1;
    const int64_t mone = -1;
    rs_status st = RS_OK;
    TRY_(rs_h5_attr_set_str(rg, "policy", ri->policy));
    TRY_(rs_h5_attr_set_str(rg, "mode", ri->mode));
    TRY_(rs_h5_attr_set_str(rg, "hp_format", ri->hp_format));
    TRY_(rs_h5_attr_set_str(rg, "lp_format", ri->lp_format));
    TRY_(rs_h5_attr_set_u64(rg, "window", ri->window));
    TRY_(rs_h5_attr_set_u64(rg, "seed", ri->seed));
    TRY_(rs_h5_attr_set_u64(rg, "index", r));
    if (ri->hp) TRY_(format_fields_(rg, "hp", ri->hp));
    if (ri->lp) TRY_(format_fields_(rg, "lp", ri->lp));
    TRY_(group_dims_(rg, m->n_books, rs_h5log_width_of_(m)));
    TRY_(make_pos_ds_(rg, "kl", H5T_NATIVE_DOUBLE, &nan, m, "KL(p_ref || p_run) at each position", "nats"));
    TRY_(make_pos_ds_(rg, "nll", H5T_NATIVE_DOUBLE, &nan, m, "-log p_run(y_t)", "nats"));
    TRY_(make_pos_ds_(rg, "dp", H5T_NATIVE_DOUBLE, &nan, m, "p_run(y_t) - p_ref(y_t)", "1"));
    TRY_(make_pos_ds_(rg, "top1_agree", H5T_NATIVE_UINT8, &z, m, "1 if argmax p_run == argmax p_ref", "1"));
    TRY_(make_small_ds_(rg, "first_nonfinite_position", H5T_NATIVE_INT64, &mone, m->n_books,
                        "first position whose run logits were NaN/Inf (-1: none)"));
    TRY_(make_small_ds_(rg, "first_nonfinite_layer", H5T_NATIVE_INT32, &m1, m->n_books,
                        "model layer of the first non-finite SSM value (-1: none/unknown)"));
    TRY_(make_small_ds_(rg, "first_nonfinite_head", H5T_NATIVE_INT32, &m1, m->n_books,
                        "head of the first non-finite SSM value (-1: none/unknown)"));
    if (m->n_moe_layers > 0) TRY_(moe_ds_(rg, m));
    H5Gclose(rg);
    return st;
}

rs_status rs_h5log_write_skeleton_(hid_t f, const rs_h5log_meta *m)
{
    rs_status st = root_attrs_(f, m);
    TRY_(windows_(f));
    TRY_(books_(f, m));
    TRY_(reference_(f, m));
    if (st != RS_OK) return st;
    hid_t g = H5Gcreate2(f, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return rs_h5_fail(RS_E_IO, "cannot create group /runs");
    for (size_t r = 0; r < m->n_runs && st == RS_OK; r++) st = run_group_(g, r, m);
    H5Gclose(g);
    TRY_(rs_h5log_write_xr_(f, m));
    TRY_(rs_h5log_write_prov_(f, m));
    return st;
}

#undef TRY_
