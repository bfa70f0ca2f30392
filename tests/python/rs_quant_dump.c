/* rs_quant_dump.c — a reference for tests/python/test_replayssm.py that does not go through the
 * Python module or quant/rs_qflat.c: it quantizes a raw float32 file with the descriptor API
 * (rs_format_parse, rs_qtensor_alloc, rs_quantize, rs_quantize_roundtrip) and writes the
 * codes, the scales and the round-tripped values as raw files, which the test compares with
 * what `replayssm.quantize` / `roundtrip` return through ctypes.
 *
 *   rs_quant_dump FORMAT TENSOR_EXTENT SEED STREAM IN.f32 OUT_PREFIX
 *
 * writes OUT_PREFIX.codes, .scale_inv, .block_scale, .tensor_scale_dec (empty where the format
 * has none) and .roundtrip (float32). Exit 0, or 1 with the library's message on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm/replayssm.h"

static int put(const char *prefix, const char *ext, const void *p, size_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", prefix, ext);
    FILE *fp = fopen(path, "wb");
    if (!fp || (bytes && fwrite(p, 1, bytes, fp) != bytes)) {
        fprintf(stderr, "rs_quant_dump: cannot write %s\n", path);
        if (fp) fclose(fp);
        return 1;
    }
    return fclose(fp) != 0;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: rs_quant_dump FORMAT TENSOR_EXTENT SEED STREAM IN.f32 OUT_PREFIX\n");
        return 2;
    }
    rs_format f;
    if (rs_format_parse(argv[1], &f) != RS_OK) {
        fprintf(stderr, "rs_quant_dump: %s\n", rs_last_error());
        return 1;
    }
    const size_t E = strtoull(argv[2], NULL, 10);
    const uint64_t seed = strtoull(argv[3], NULL, 10), stream = strtoull(argv[4], NULL, 10);
    FILE *fp = fopen(argv[5], "rb");
    if (!fp) { fprintf(stderr, "rs_quant_dump: cannot open %s\n", argv[5]); return 1; }
    fseek(fp, 0, SEEK_END);
    const size_t n = (size_t)ftell(fp) / sizeof(float);
    fseek(fp, 0, SEEK_SET);
    float *x = malloc(n * sizeof *x + 1), *y = malloc(n * sizeof *y + 1);
    if (!x || !y || fread(x, sizeof *x, n, fp) != n) { fprintf(stderr, "rs_quant_dump: cannot read input\n"); return 1; }
    fclose(fp);
    rs_qtensor q;
    if (rs_qtensor_alloc(&q, &f, n, E) != RS_OK || rs_quantize(&q, x, seed, stream) != RS_OK ||
        rs_quantize_roundtrip(&f, x, n, E, seed, stream, y) != RS_OK) {
        fprintf(stderr, "rs_quant_dump: %s\n", rs_last_error());
        return 1;
    }
    /* array sizes from the pointers of the one allocation (rs_qtensor.h's table) */
    const size_t total = rs_qtensor_bytes(&q);
    const uint8_t *base = q.codes;
    const size_t codes = q.scale_inv          ? (size_t)((uint8_t *)q.scale_inv - base)
                         : q.tensor_scale_dec ? (size_t)((uint8_t *)q.tensor_scale_dec - base)
                         : q.block_scale      ? (size_t)(q.block_scale - base) /* MX: codes, then E8M0 scales */
                                              : total;
    const size_t si = q.scale_inv ? total - codes : 0;
    const size_t ts = q.tensor_scale_dec ? (size_t)(q.block_scale - (uint8_t *)q.tensor_scale_dec) : 0;
    const size_t bs = q.block_scale ? total - (size_t)(q.block_scale - base) : 0;
    int bad = put(argv[6], "codes", q.codes, codes) | put(argv[6], "scale_inv", q.scale_inv, si) |
              put(argv[6], "block_scale", q.block_scale, bs) | put(argv[6], "tensor_scale_dec", q.tensor_scale_dec, ts) |
              put(argv[6], "roundtrip", y, n * sizeof *y);
    rs_qtensor_free(&q);
    free(x);
    free(y);
    return bad;
}
