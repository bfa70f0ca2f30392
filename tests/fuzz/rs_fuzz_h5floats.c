/* rs_fuzz_h5floats.c — the reader of `quant-error --input` (rs_h5_read_floats, eval/log/rs_h5io.c)
 * on raw HDF5 file bytes (seeds: tests/fuzz/corpus/h5floats/valid-*, a dataset "x" stored every way
 * the reader accepts). A refusal must be a documented code with a message; an accepted dataset has
 * between 1 and the element limit elements, a last dimension that divides them, and every element
 * readable (the sanitizers see any read past the buffer). */
#include "rs_fuzz.h"

#include <stdio.h>
#include <stdlib.h>

#include <hdf5.h>

#include "replayssm/eval/rs_h5io.h"
#include "replayssm/quant/rs_status.h"

#define FZ_MAX_ELEMENTS ((size_t)1 << 20)

int rs_fuzz_h5floats(const uint8_t *data, size_t size)
{
    static const char *T = "h5floats";
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    static int fresh;
    if (!fresh) {
        /* no recycling of libhdf5's internal blocks (the log targets turn it on for speed): a block
         * libhdf5 leaks on a hostile file is then one it allocated for that file, which the leak
         * checker can attribute (tests/test_fuzz_regress.c ignores those of the raw targets) */
        H5garbage_collect();
        H5set_free_list_limits(0, 0, 0, 0, 0, 0);
        fresh = 1;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/h5floats.h5", rs_fuzz_scratch());
    rs_fuzz_write_file(T, path, data, size);
    float *x = NULL;
    size_t n = 0, last = 0;
    const rs_status st = rs_h5_read_floats(path, "x", FZ_MAX_ELEMENTS, &x, &n, &last);
    if (st != RS_OK) {
        rs_fuzz_check_error(T, st, 1u << RS_E_FORMAT | 1u << RS_E_IO | 1u << RS_E_SHAPE | 1u << RS_E_NOMEM);
        if (x) rs_fuzz_fail(T, "a refusal left data behind");
        return 0;
    }
    if (!x || n < 1 || n > FZ_MAX_ELEMENTS || last < 1 || n % last) rs_fuzz_fail(T, "accepted with a wrong count");
    volatile float sink = 0.0f;
    for (size_t i = 0; i < n; i++) sink += x[i]; /* every element: a short buffer shows itself */
    (void)sink;
    free(x);
    return 1;
}
