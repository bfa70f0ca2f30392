/* rs_h5dims.c — HDF5 dimension scales in the H5DS layout, written with the core API (rs_h5dims.h).
 * The layout (HDF5 "Dimension Scale Specification", what H5DSset_scale / H5DSattach_scale write):
 *   scale:   CLASS = "DIMENSION_SCALE" (fixed string), NAME (fixed string),
 *            REFERENCE_LIST = [{dataset: object reference, dimension: int}] of the datasets using it;
 *   dataset: DIMENSION_LIST = [rank] variable-length arrays of object references (one scale each). */
#include "rs_h5dims.h"
#include "rs_h5attr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one REFERENCE_LIST entry, as H5DS lays it out */
typedef struct ds_ref_ {
    hobj_ref_t ref;
    int dim_idx;
} ds_ref_;

static hid_t ref_list_type_(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ds_ref_));
    if (t < 0) return -1;
    if (H5Tinsert(t, "dataset", HOFFSET(ds_ref_, ref), H5T_STD_REF_OBJ) < 0 ||
        H5Tinsert(t, "dimension", HOFFSET(ds_ref_, dim_idx), H5T_NATIVE_INT) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

rs_status rs_h5_dim_only(hid_t g, const char *name, hsize_t n)
{
    /* netCDF-C writes such a dimension as a float dataset of length n whose values are never
     * written; contiguous + late allocation: no raw data in the file */
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl >= 0) H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hid_t d = sp >= 0 && dcpl >= 0 ? H5Dcreate2(g, name, H5T_IEEE_F32BE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    if (d < 0) return rs_h5_fail(RS_E_IO, "cannot create dimension %s", name);
    char nm[96];
    snprintf(nm, sizeof nm, "This is a netCDF dimension but not a netCDF variable.%10llu", (unsigned long long)n);
    rs_status st = rs_h5_attr_set_fixed_str(d, "CLASS", "DIMENSION_SCALE");
    if (st == RS_OK) st = rs_h5_attr_set_fixed_str(d, "NAME", nm);
    H5Dclose(d);
    return st;
}

rs_status rs_h5_make_scale(hid_t loc, const char *path)
{
    hid_t d = H5Dopen2(loc, path, H5P_DEFAULT);
    if (d < 0) return rs_h5_fail(RS_E_IO, "cannot open %s", path);
    const char *base = strrchr(path, '/');
    rs_status st = rs_h5_attr_set_fixed_str(d, "CLASS", "DIMENSION_SCALE");
    if (st == RS_OK) st = rs_h5_attr_set_fixed_str(d, "NAME", base ? base + 1 : path);
    H5Dclose(d);
    return st;
}

/* append {ref, dim} to the REFERENCE_LIST of the scale at `scale` */
static rs_status add_reference_(hid_t loc, const char *scale, const hobj_ref_t *ref, int dim)
{
    hid_t s = H5Dopen2(loc, scale, H5P_DEFAULT);
    if (s < 0) return rs_h5_fail(RS_E_IO, "cannot open the dimension scale %s", scale);
    hid_t t = ref_list_type_();
    rs_status st = t >= 0 ? RS_OK : rs_h5_fail(RS_E_IO, "cannot make the REFERENCE_LIST type");
    ds_ref_ *list = NULL;
    hsize_t n = 0;
    if (st == RS_OK && H5Aexists(s, "REFERENCE_LIST") > 0) {
        hid_t a = H5Aopen(s, "REFERENCE_LIST", H5P_DEFAULT);
        hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
        if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, &n, NULL) < 0)
            st = rs_h5_fail(RS_E_IO, "%s: cannot read its REFERENCE_LIST", scale);
        if (st == RS_OK && !(list = (ds_ref_ *)calloc((size_t)n + 1, sizeof *list)))
            st = rs_error_set(RS_E_NOMEM, "out of memory");
        if (st == RS_OK && H5Aread(a, t, list) < 0) st = rs_h5_fail(RS_E_IO, "%s: cannot read its REFERENCE_LIST", scale);
        if (sp >= 0) H5Sclose(sp);
        if (a >= 0) H5Aclose(a);
        if (st == RS_OK && H5Adelete(s, "REFERENCE_LIST") < 0)
            st = rs_h5_fail(RS_E_IO, "%s: cannot replace its REFERENCE_LIST", scale);
    } else if (st == RS_OK && !(list = (ds_ref_ *)calloc(1, sizeof *list))) {
        st = rs_error_set(RS_E_NOMEM, "out of memory");
    }
    if (st == RS_OK) {
        list[n].ref = *ref;
        list[n].dim_idx = dim;
        n++;
        hid_t sp = H5Screate_simple(1, &n, NULL);
        hid_t a = sp >= 0 ? H5Acreate2(s, "REFERENCE_LIST", t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
        if (a < 0 || H5Awrite(a, t, list) < 0) st = rs_h5_fail(RS_E_IO, "%s: cannot write its REFERENCE_LIST", scale);
        if (a >= 0) H5Aclose(a);
        if (sp >= 0) H5Sclose(sp);
    }
    free(list);
    if (t >= 0) H5Tclose(t);
    H5Dclose(s);
    return st;
}

rs_status rs_h5_attach_dims(hid_t loc, const char *path, int rank, const char *const *scales)
{
    if (rank < 1 || rank > 4) return rs_error_set(RS_E_INVAL, "%s: %d dimensions", path, rank);
    hobj_ref_t refs[4], self;
    hvl_t vl[4];
    for (int i = 0; i < rank; i++) {
        if (H5Rcreate(&refs[i], loc, scales[i], H5R_OBJECT, -1) < 0)
            return rs_h5_fail(RS_E_IO, "cannot reference the dimension scale %s", scales[i]);
        vl[i].len = 1;
        vl[i].p = &refs[i];
    }
    if (H5Rcreate(&self, loc, path, H5R_OBJECT, -1) < 0) return rs_h5_fail(RS_E_IO, "cannot reference %s", path);
    hid_t d = H5Dopen2(loc, path, H5P_DEFAULT);
    if (d < 0) return rs_h5_fail(RS_E_IO, "cannot open %s", path);
    const hsize_t n = (hsize_t)rank;
    hid_t t = H5Tvlen_create(H5T_STD_REF_OBJ);
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t a = t >= 0 && sp >= 0 ? H5Acreate2(d, "DIMENSION_LIST", t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    rs_status st = a >= 0 && H5Awrite(a, t, vl) >= 0 ? RS_OK : rs_h5_fail(RS_E_IO, "%s: cannot write its DIMENSION_LIST", path);
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    H5Dclose(d);
    for (int i = 0; st == RS_OK && i < rank; i++) st = add_reference_(loc, scales[i], &self, i);
    return st;
}
