/* rs_h5check.c — a dataset of an untrusted HDF5 file checked before libhdf5 reads it
 * (rs_h5_ds_check, rs_h5_ds_check_read in rs_h5attr.h).
 *
 * libhdf5 1.10.8 trusts a chunked dataset's chunk dimensions: with one dimension enlarged by a
 * 4-byte edit of the layout message, H5Dread copies the new chunk size out of a buffer that holds
 * the chunk's real (decompressed) bytes, a heap over-read. No metadata check can see that, since
 * the stored chunks are what disagrees: so every chunk a read will touch is read raw
 * (H5Dread_chunk, which copies exactly the stored bytes) and its filters undone here, with our
 * own bounds, before H5Dread is allowed near it. Numeric chunked data are then read by our own code
 * (rs_h5_ds_read_chunked): chunks decoded here (fletcher32 checked, deflate, shuffle) and converted
 * with H5Tconvert, so libhdf5's chunk read path, which a corrupted chunk index can still lead past a
 * buffer (found by fuzzing on 1.10.8 and 1.14.5), is never taken for them. */
#include "rs_h5attr.h"

#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#define RS_H5_MAX_UNLIMITED ((hsize_t)1 << 24) /* chunk bound of an unlimited dimension */

/* what rs_h5_ds_check learned about a dataset */
typedef struct ds_info {
    int rank, chunked;
    hsize_t dims[H5S_MAX_RANK], chunk[H5S_MAX_RANK];
    size_t elem_bytes;    /* bytes of one element in the file */
    uint64_t chunk_bytes; /* chunked: bytes of one chunk as stored before filtering */
    int n_filters;
    H5Z_filter_t filter[3]; /* in pipeline order */
    hsize_t file_size;
} ds_info;

/* the file's size (the bound of any stored byte count), 0 when unknown */
static hsize_t file_size_(hid_t d)
{
    const hid_t f = H5Iget_file_id(d);
    hsize_t n = 0;
    if (f < 0 || H5Fget_filesize(f, &n) < 0) n = 0;
    if (f >= 0) H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
    return n;
}

/* the bytes of one element as stored in the file (a variable-length string: its global heap
 * reference, length + address + index); 0 when the type is not one a log holds */
static size_t elem_bytes_(hid_t t, hid_t d, const char *path, rs_status *st)
{
    const H5T_class_t c = H5Tget_class(t);
    const size_t sz = H5Tget_size(t);
    if (c == H5T_INTEGER) {
        if ((sz == 1 || sz == 2 || sz == 4 || sz == 8) && H5Tget_precision(t) == 8 * sz && H5Tget_offset(t) == 0)
            return sz;
        *st = rs_error_set(RS_E_FORMAT, "dataset %s: an integer type of %zu bytes with %zu bits at offset %d is not one "
                           "a log holds", path, sz, (size_t)H5Tget_precision(t), H5Tget_offset(t));
        return 0;
    }
    if (c == H5T_FLOAT) {
        if (H5Tequal(t, H5T_IEEE_F32LE) > 0 || H5Tequal(t, H5T_IEEE_F32BE) > 0 || H5Tequal(t, H5T_IEEE_F64LE) > 0 ||
            H5Tequal(t, H5T_IEEE_F64BE) > 0)
            return sz;
        *st = rs_error_set(RS_E_FORMAT, "dataset %s: a floating-point type of %zu bytes that is not IEEE binary32 / "
                           "binary64", path, sz);
        return 0;
    }
    if (c == H5T_STRING) {
        const htri_t var = H5Tis_variable_str(t);
        if (var == 0 && sz >= 1 && sz <= RS_H5_MAX_STRING) return sz;
        if (var > 0) {
            /* a global heap ID: 4-byte length, the file's address size, 4-byte index */
            const hid_t f = H5Iget_file_id(d), fcpl = f >= 0 ? H5Fget_create_plist(f) : -1;
            size_t addr = 0, len = 0;
            if (fcpl < 0 || H5Pget_sizes(fcpl, &addr, &len) < 0) addr = 0;
            if (fcpl >= 0) H5Pclose(fcpl);
            if (f >= 0) H5Fclose(f);
            if (addr == 4 || addr == 8) return 8 + addr;
        }
        *st = rs_error_set(RS_E_FORMAT, "dataset %s: a string type of %zu bytes is not one a log holds", path, sz);
        return 0;
    }
    *st = rs_error_set(RS_E_FORMAT, "dataset %s: type class %d is not one a log holds (integers, IEEE floats, strings)",
                       path, (int)c);
    return 0;
}

/* the filter pipeline: shuffle, deflate, fletcher32 only, each once, in that order */
static rs_status filters_(hid_t dcpl, const char *path, ds_info *di)
{
    const int nf = H5Pget_nfilters(dcpl);
    if (nf < 0) return rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its filters", path);
    if (nf > 3) return rs_error_set(RS_E_FORMAT, "dataset %s: %d filters (shuffle, deflate and fletcher32 at most)", path, nf);
    int last = -1;
    for (int i = 0; i < nf; i++) {
        unsigned flags = 0, cd[8] = {0}, conf = 0;
        size_t ncd = sizeof cd / sizeof cd[0];
        char name[64] = "";
        const H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof name, name, &conf);
        const int rank = id == H5Z_FILTER_SHUFFLE ? 0 : id == H5Z_FILTER_DEFLATE ? 1 : id == H5Z_FILTER_FLETCHER32 ? 2 : -1;
        if (rank < 0)
            return rs_error_set(RS_E_FORMAT, "dataset %s: filter %d (%s) is not allowed in a log or an input dataset "
                                "(shuffle, deflate and fletcher32 only)", path, (int)id, name[0] && !memchr(name, '\033', sizeof name) ? name : "?");
        if (rank <= last)
            return rs_error_set(RS_E_FORMAT, "dataset %s: filters out of order or repeated (shuffle, deflate, "
                                "fletcher32)", path);
        if (id == H5Z_FILTER_DEFLATE && (ncd < 1 || cd[0] > 9))
            return rs_error_set(RS_E_FORMAT, "dataset %s: deflate without a level in 0..9", path);
        last = rank;
        di->filter[di->n_filters++] = id;
    }
    return RS_OK;
}

static rs_status info_(hid_t d, const char *path, ds_info *di)
{
    memset(di, 0, sizeof *di);
    const hid_t dcpl = H5Dget_create_plist(d), t = H5Dget_type(d), s = H5Dget_space(d);
    rs_status st = dcpl < 0 || t < 0 || s < 0 ? rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its storage", path) : RS_OK;
    hsize_t maxd[H5S_MAX_RANK];
    if (st == RS_OK) {
        di->rank = H5Sget_simple_extent_ndims(s);
        if (di->rank < 0 || di->rank > H5S_MAX_RANK || H5Sget_simple_extent_dims(s, di->dims, maxd) < 0)
            st = rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its shape", path);
    }
    H5D_layout_t lay = H5D_LAYOUT_ERROR;
    if (st == RS_OK) {
        lay = H5Pget_layout(dcpl);
        if (lay != H5D_COMPACT && lay != H5D_CONTIGUOUS && lay != H5D_CHUNKED)
            st = rs_error_set(RS_E_FORMAT, "dataset %s: storage layout %d (virtual or unknown) is not allowed in a log or an input dataset", path, (int)lay);
        else if (H5Pget_external_count(dcpl) != 0)
            st = rs_error_set(RS_E_FORMAT, "dataset %s: raw data in external files is not allowed in a log or an input dataset", path);
    }
    size_t es = 0;
    if (st == RS_OK) es = elem_bytes_(t, d, path, &st);
    di->elem_bytes = es;
    if (st == RS_OK) st = filters_(dcpl, path, di);
    uint64_t npoints = 1;
    for (int k = 0; st == RS_OK && k < di->rank; k++) { /* each <= 2^32 (HDF5), the product checked */
        if (di->dims[k] && npoints > UINT64_MAX / di->dims[k])
            st = rs_error_set(RS_E_FORMAT, "dataset %s: its extent overflows", path);
        else npoints *= di->dims[k];
    }
    di->file_size = st == RS_OK ? file_size_(d) : 0;
    if (st == RS_OK && lay == H5D_CHUNKED) {
        di->chunked = 1;
        const int cr = H5Pget_chunk(dcpl, H5S_MAX_RANK, di->chunk);
        if (cr != di->rank)
            st = rs_error_set(RS_E_FORMAT, "dataset %s: chunk rank %d, dataset rank %d", path, cr, di->rank);
        uint64_t cb = es;
        for (int k = 0; st == RS_OK && k < di->rank; k++) {
            const hsize_t lim = maxd[k] == H5S_UNLIMITED ? RS_H5_MAX_UNLIMITED : maxd[k];
            if (di->chunk[k] < 1 || di->chunk[k] > lim)
                st = rs_error_set(RS_E_FORMAT, "dataset %s: chunk dimension %d is %llu, outside [1, %llu] (its extent)",
                                  path, k, (unsigned long long)di->chunk[k], (unsigned long long)lim);
            else if (di->chunk[k] > RS_H5_MAX_CHUNK_BYTES / cb)
                st = rs_error_set(RS_E_FORMAT, "dataset %s: chunks of more than %llu bytes", path,
                                  (unsigned long long)RS_H5_MAX_CHUNK_BYTES);
            else cb *= di->chunk[k];
        }
        di->chunk_bytes = cb;
    } else if (st == RS_OK) {
        if (di->n_filters) st = rs_error_set(RS_E_FORMAT, "dataset %s: filters on unchunked storage", path);
        /* stored whole: exactly the extent's bytes, inside the file */
        const hsize_t have = H5Dget_storage_size(d);
        const haddr_t off = lay == H5D_CONTIGUOUS ? H5Dget_offset(d) : HADDR_UNDEF;
        H5Eclear2(H5E_DEFAULT);
        const uint64_t want = npoints > UINT64_MAX / es ? UINT64_MAX : npoints * es;
        /* compact data always lie in the header: exactly the extent's bytes; contiguous ones too once
         * allocated (an address), else none and the fill value is read */
        if (st == RS_OK && (lay == H5D_COMPACT || off != HADDR_UNDEF || have != 0) && have != want)
            st = rs_error_set(RS_E_FORMAT, "dataset %s: %llu bytes stored for %llu elements of %zu bytes", path,
                              (unsigned long long)have, (unsigned long long)npoints, es);
        if (st == RS_OK && off != HADDR_UNDEF && di->file_size && (off > di->file_size || have > di->file_size - off))
            st = rs_error_set(RS_E_FORMAT, "dataset %s: its data lie past the end of the file", path);
    }
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (dcpl >= 0) H5Pclose(dcpl);
    return st;
}

rs_status rs_h5_ds_check(hid_t d, const char *path)
{
    ds_info di;
    return info_(d, path, &di);
}

/* inflate z[n] into out[want + 1]: 1 when it is one zlib stream of exactly `want` bytes */
static int inflates_to_(const unsigned char *z, size_t n, unsigned char *out, uint64_t want)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK) return 0;
    zs.next_in = (Bytef *)z;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)(want + 1); /* one byte more: a longer stream shows itself */
    const int r = inflate(&zs, Z_FINISH);
    const uint64_t got = zs.total_out;
    inflateEnd(&zs);
    return r == Z_STREAM_END && got == want;
}

/* HDF5's Fletcher-32 of n bytes (its H5_checksum_fletcher32: big-endian 16-bit words, sums folded
 * every 360 words, an odd last byte as the high half of a word) */
static uint32_t fletcher32_(const unsigned char *p, size_t n)
{
    uint32_t s1 = 0, s2 = 0;
    size_t words = n / 2;
    while (words) {
        size_t t = words > 360 ? 360 : words;
        words -= t;
        do {
            s1 += ((uint32_t)p[0] << 8) | p[1];
            p += 2;
            s2 += s1;
        } while (--t);
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    if (n % 2) {
        s1 += (uint32_t)p[0] << 8;
        s2 += s1;
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
    return (s2 << 16) | s1;
}

/* the chunk's checksum as HDF5's fletcher32 filter checks it: the last 4 bytes, little-endian, equal to
 * the sum of the rest, or to it with the bytes of each 16-bit half swapped (what some old writers stored) */
static int fletcher_ok_(const unsigned char *p, size_t n)
{
    const uint32_t stored = (uint32_t)p[n - 4] | ((uint32_t)p[n - 3] << 8) | ((uint32_t)p[n - 2] << 16) |
                            ((uint32_t)p[n - 1] << 24);
    const uint32_t f = fletcher32_(p, n - 4);
    const uint32_t rev = ((f & 0x00FF00FFu) << 8) | ((f & 0xFF00FF00u) >> 8);
    return stored == f || stored == rev;
}

/* the chunk at offset (if allocated): its stored size and address from the chunk index itself
 * (H5Dget_chunk_storage_size reports the size the dimensions imply for an unfiltered chunk, not
 * what is stored), then its stored bytes undone by our own code, bounded. With data non-NULL,
 * *data gets the chunk's element bytes in file order (in *raw, out or shuf; NULL when the chunk
 * is not allocated: the fill value) */
static rs_status chunk_ok_(hid_t d, const char *path, const ds_info *di, const hsize_t *offset, unsigned char **raw,
                           size_t *raw_cap, unsigned char *out, unsigned char *shuf, uint64_t *found,
                           const unsigned char **data)
{
    if (data) *data = NULL;
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t nbytes = 0;
    if (H5Dget_chunk_info_by_coord(d, offset, &mask, &addr, &nbytes) < 0)
        return rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its chunk index", path);
    if (addr == HADDR_UNDEF) return RS_OK; /* not allocated: the fill value, nothing read */
    *found += nbytes;
    /* deflate may store a little more than the chunk (incompressible data), fletcher32 4 bytes */
    const uint64_t bound = di->chunk_bytes + di->chunk_bytes / 100 + 64;
    /* a chunk inside the file's first 8 bytes (the signature; a corrupted index says 0) is none that
     * libhdf5 reads consistently: it read past a buffer there (found by fuzzing) */
    if (addr < 8) return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk at file address %llu", path, (unsigned long long)addr);
    if (nbytes > bound || (di->file_size && (addr > di->file_size || nbytes > di->file_size - addr)))
        return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk of %llu stored bytes for %llu bytes of data, or past the "
                            "end of the file", path, (unsigned long long)nbytes, (unsigned long long)di->chunk_bytes);
    int active = 0; /* filters applied to this chunk (a skipped one has its mask bit set) */
    for (int i = 0; i < di->n_filters; i++) active += !(mask & (1u << i));
    if (active == 0 && nbytes != di->chunk_bytes)
        return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk of %llu stored bytes where its dimensions make %llu "
                            "(chunk dimensions that do not match the stored chunks)", path, (unsigned long long)nbytes,
                            (unsigned long long)di->chunk_bytes);
    if (active == 0 && !data) return RS_OK;
    if (nbytes == 0 && active) return rs_error_set(RS_E_FORMAT, "dataset %s: an allocated chunk of 0 stored bytes", path);
    /* H5Dread_chunk copies the size its own lookup finds: the same as the index walk's, or the
     * index is corrupted (it wrote past a buffer sized by the walk: found by fuzzing) */
    hsize_t direct = 0;
    if (H5Dget_chunk_storage_size(d, offset, &direct) < 0 || direct != nbytes) {
        H5Eclear2(H5E_DEFAULT);
        return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk whose stored size the index gives as %llu and %llu (a "
                            "corrupted chunk index)", path, (unsigned long long)nbytes, (unsigned long long)direct);
    }
    if (*raw_cap < nbytes || !*raw) {
        unsigned char *g = (unsigned char *)realloc(*raw, (size_t)nbytes + 1);
        if (!g) return rs_error_set(RS_E_NOMEM, "dataset %s: out of memory", path);
        *raw = g;
        *raw_cap = (size_t)nbytes;
    }
    uint32_t rmask = 0;
    if (H5Dread_chunk(d, H5P_DEFAULT, offset, &rmask, *raw) < 0)
        return rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read a chunk", path);
    size_t n = (size_t)nbytes;
    const unsigned char *cur = *raw;
    for (int i = di->n_filters - 1; i >= 0; i--) { /* undone last filter first */
        if (mask & (1u << i)) continue;
        if (di->filter[i] == H5Z_FILTER_FLETCHER32) {
            if (n < 4) return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk shorter than its checksum", path);
            if (data && !fletcher_ok_(cur, n))
                return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk fails its Fletcher-32 checksum", path);
            n -= 4;
        } else if (di->filter[i] == H5Z_FILTER_DEFLATE) {
            if (!inflates_to_(cur, n, out, di->chunk_bytes))
                return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk does not inflate to its %llu bytes (corrupt data, or "
                                    "chunk dimensions that do not match the stored chunks)", path,
                                    (unsigned long long)di->chunk_bytes);
            cur = out;
            n = (size_t)di->chunk_bytes;
        } else if (di->filter[i] == H5Z_FILTER_SHUFFLE && data && n == di->chunk_bytes && di->elem_bytes > 1) {
            /* byte b of element e was stored at b * count + e */
            const size_t es = di->elem_bytes, cnt = n / es;
            for (size_t e = 0; e < cnt; e++)
                for (size_t b = 0; b < es; b++) shuf[e * es + b] = cur[b * cnt + e];
            cur = shuf;
        }
    }
    if (n != di->chunk_bytes)
        return rs_error_set(RS_E_FORMAT, "dataset %s: a chunk of %zu bytes where its dimensions make %llu", path, n,
                            (unsigned long long)di->chunk_bytes);
    if (data) *data = cur;
    return RS_OK;
}

rs_status rs_h5_ds_check_read(hid_t d, const char *path, const hsize_t *start, const hsize_t *count)
{
    ds_info di;
    rs_status st = info_(d, path, &di);
    if (st != RS_OK || !di.chunked) return st;
    hsize_t lo[H5S_MAX_RANK], hi[H5S_MAX_RANK], at[H5S_MAX_RANK];
    for (int k = 0; k < di.rank; k++) {
        const hsize_t a = start ? start[k] : 0, c = count ? count[k] : di.dims[k];
        if (c == 0 || a >= di.dims[k] || c > di.dims[k] - a) return RS_OK; /* an empty or outside selection: H5Dread refuses it */
        lo[k] = a / di.chunk[k];
        hi[k] = (a + c - 1) / di.chunk[k];
        at[k] = lo[k];
    }
    unsigned char *raw = NULL, *out = (unsigned char *)malloc((size_t)di.chunk_bytes + 1);
    size_t raw_cap = 0;
    if (!out) return rs_error_set(RS_E_NOMEM, "dataset %s: out of memory", path);
    uint64_t found = 0; /* stored bytes of the chunks the coordinate lookups find */
    for (;;) {
        hsize_t off[H5S_MAX_RANK];
        for (int k = 0; k < di.rank; k++) off[k] = at[k] * di.chunk[k];
        st = chunk_ok_(d, path, &di, off, &raw, &raw_cap, out, NULL, &found, NULL);
        if (st != RS_OK) break;
        int k = di.rank - 1; /* the next chunk, last dimension fastest */
        while (k >= 0 && at[k] == hi[k]) at[k] = lo[k], k--;
        if (k < 0) break;
        at[k]++;
    }
    free(raw);
    free(out);
    /* a whole-dataset read: the chunks found by their coordinates are all the index holds (libhdf5
     * walks the index itself to read, and a corrupted index whose walk and lookups disagree made
     * it read past a buffer, found by fuzzing) */
    if (st == RS_OK && !start && !count) {
        const hsize_t stored = H5Dget_storage_size(d);
        H5Eclear2(H5E_DEFAULT);
        if (stored != found)
            st = rs_error_set(RS_E_FORMAT, "dataset %s: its chunk index holds %llu stored bytes, its chunks %llu (a "
                              "corrupted chunk index)", path, (unsigned long long)stored, (unsigned long long)found);
    }
    return st;
}

/* ---- reading chunked datasets without H5Dread ------------------------------------------------- */

rs_status rs_h5_ds_read_chunked(hid_t d, const char *path, hid_t mem_type, const hsize_t *start, const hsize_t *count,
                                void *buf)
{
    ds_info di;
    rs_status st = info_(d, path, &di);
    if (st != RS_OK) return st;
    if (!di.chunked) return rs_error_set(RS_E_INVAL, "dataset %s: not chunked", path);
    hsize_t a0[H5S_MAX_RANK], cn[H5S_MAX_RANK], lo[H5S_MAX_RANK], hi[H5S_MAX_RANK], at[H5S_MAX_RANK];
    for (int k = 0; k < di.rank; k++) {
        a0[k] = start ? start[k] : 0;
        cn[k] = count ? count[k] : di.dims[k];
        if (cn[k] == 0 || a0[k] >= di.dims[k] || cn[k] > di.dims[k] - a0[k])
            return rs_error_set(RS_E_SHAPE, "dataset %s: selection outside its extent", path);
        lo[k] = a0[k] / di.chunk[k];
        hi[k] = (a0[k] + cn[k] - 1) / di.chunk[k];
        at[k] = lo[k];
    }
    const hid_t ft = H5Dget_type(d), dcpl = H5Dget_create_plist(d);
    const size_t ms = H5Tget_size(mem_type), es = di.elem_bytes, big = ms > es ? ms : es;
    const uint64_t chunk_n = di.chunk_bytes / es;
    unsigned char *raw = NULL, *out = (unsigned char *)malloc((size_t)di.chunk_bytes + 1);
    unsigned char *shuf = (unsigned char *)malloc((size_t)di.chunk_bytes + 1);
    unsigned char *conv = (unsigned char *)malloc((size_t)chunk_n * big + 1), *fill = (unsigned char *)calloc(1, big + 8);
    size_t raw_cap = 0;
    uint64_t found = 0;
    if (ft < 0 || dcpl < 0 || !ms) st = rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot read its type", path);
    else if (!out || !shuf || !conv || !fill) st = rs_error_set(RS_E_NOMEM, "dataset %s: out of memory", path);
    /* unallocated chunks read as the fill value, converted to the memory type (0 when none is set) */
    if (st == RS_OK && H5Pget_fill_value(dcpl, mem_type, fill) < 0) {
        H5Eclear2(H5E_DEFAULT);
        memset(fill, 0, big);
    }
    while (st == RS_OK) {
        hsize_t off[H5S_MAX_RANK];
        for (int k = 0; k < di.rank; k++) off[k] = at[k] * di.chunk[k];
        const unsigned char *bytes = NULL;
        st = chunk_ok_(d, path, &di, off, &raw, &raw_cap, out, shuf, &found, &bytes);
        if (st != RS_OK) break;
        if (bytes) { /* the chunk's elements in file order, converted in place to the memory type */
            memcpy(conv, bytes, (size_t)di.chunk_bytes);
            if (H5Tconvert(ft, mem_type, (size_t)chunk_n, conv, NULL, H5P_DEFAULT) < 0) {
                st = rs_h5_fail(RS_E_FORMAT, "dataset %s: cannot convert its elements", path);
                break;
            }
        }
        /* copy the chunk's part of the selection: every element of the chunk inside it */
        hsize_t c[H5S_MAX_RANK] = {0};
        for (;;) {
            int inside = 1;
            uint64_t src = 0, dst = 0;
            for (int k = 0; k < di.rank; k++) {
                const hsize_t g = off[k] + c[k];
                inside &= g >= a0[k] && g < a0[k] + cn[k];
                src = src * di.chunk[k] + c[k];
                dst = dst * cn[k] + (g - a0[k]);
            }
            if (inside) memcpy((unsigned char *)buf + dst * ms, bytes ? conv + src * ms : fill, ms);
            int k = di.rank - 1;
            while (k >= 0 && ++c[k] == di.chunk[k]) c[k--] = 0;
            if (k < 0) break;
        }
        int k = di.rank - 1; /* the next chunk, last dimension fastest */
        while (k >= 0 && at[k] == hi[k]) at[k] = lo[k], k--;
        if (k < 0) break;
        at[k]++;
    }
    if (st == RS_OK && !start && !count) { /* as rs_h5_ds_check_read: the index holds these chunks only */
        const hsize_t stored = H5Dget_storage_size(d);
        H5Eclear2(H5E_DEFAULT);
        if (stored != found)
            st = rs_error_set(RS_E_FORMAT, "dataset %s: its chunk index holds %llu stored bytes, its chunks %llu (a "
                              "corrupted chunk index)", path, (unsigned long long)stored, (unsigned long long)found);
    }
    free(raw);
    free(out);
    free(shuf);
    free(conv);
    free(fill);
    if (ft >= 0) H5Tclose(ft);
    if (dcpl >= 0) H5Pclose(dcpl);
    return st;
}

int rs_h5_ds_is_chunked(hid_t d)
{
    const hid_t dcpl = H5Dget_create_plist(d);
    const int c = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED;
    if (dcpl >= 0) H5Pclose(dcpl);
    return c;
}
