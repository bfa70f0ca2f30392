/* cmd_quant_error.c — `replayssm quant-error`: what does storing a matrix in each format
 * cost? Prints relative Frobenius error, max error, mean signed error (bias) and bytes per
 * element for synthetic Gaussian / heavy-tailed / one-signed matrices or an HDF5 dataset. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_cli.h"         /* rs_cli_fail */
#include "replayssm/quant/rs_format.h"      /* rs_format_parse / print */
#include "replayssm/eval/rs_h5io.h"          /* rs_h5_read_floats */
#include "replayssm/theory/rs_quant_error.h" /* rs_quant_error_measure, rs_synth_matrix */

#define QE_DEFAULT_ROWS 128   /* one SSM state: d_v x d_k */
#define QE_DEFAULT_COLS 128
#define QE_DEFAULT_TENSORS 64 /* matrices per distribution: 1M elements */
#define QE_DEFAULT_SEED 0x5EEDull
/* Synthetic elements per distribution without --max-elements: 2^26 (two float buffers of
 * 256 MiB, about a minute of work per format on one core). A typo such as --rows 100000
 * --tensors 64 (819M elements, hours) is refused with the product instead of started. */
#define QE_DEFAULT_MAX_ELEMENTS ((size_t)1 << 26)

static const char *k_all_formats[] = {"bf16-rtn", "bf16-sr", "fp16-rtn", "fp16-sr", "fp8-rtn",
                                      "fp8-sr",   "nvfp4-rtn", "nvfp4-sr", "nvfp4-sr8"};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: replayssm quant-error [--format F|all] [--rounding rtn|sr] [--rows R --cols C]\n"
            "                             [--tensors N] [--dist gaussian|student-t3|positive|all]\n"
            "                             [--seed S] [--input FILE.h5 --dataset NAME] [--max-elements N]\n\n"
            "Quantizes matrices with each storage format and prints, per format:\n"
            "  rel_fro   ||Q(x)-x||_F / ||x||_F\n"
            "  max_abs   max |Q(x)-x|;  max_rel = max_abs / max|x|\n"
            "  bias      mean (Q(x)-x);  bias_rel = bias / mean|x|\n"
            "  B/elem    storage bytes per element, scales included\n\n"
            "options:\n"
            "  --format F      a format string (%s), or 'all' (default)\n"
            "  --rounding M    override the rounding of --format (rtn or sr)\n"
            "  --rows R --cols C  one tensor (one NVFP4 tensor scale) is R x C (default %dx%d)\n"
            "  --tensors N     synthetic tensors per distribution (default %d)\n"
            "  --dist D        synthetic distribution (default all)\n"
            "  --seed S        seed of the synthetic data and of SR (default %llu)\n"
            "  --input F --dataset D  quantize an HDF5 dataset instead (tensor = R x C if given,\n"
            "                  else the whole dataset)\n"
            "  --max-elements N  refuse more synthetic elements per distribution than N (default %zu)\n",
            rs_format_valid_list(), QE_DEFAULT_ROWS, QE_DEFAULT_COLS, QE_DEFAULT_TENSORS,
            (unsigned long long)QE_DEFAULT_SEED, QE_DEFAULT_MAX_ELEMENTS);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v == 0 || s[0] == '-') return -1;
    *out = (size_t)v;
    return 0;
}

static void print_header(void)
{
    printf("| data       | format       |    rel_fro |    max_abs |    max_rel |        bias |    bias_rel |  B/elem |\n"
           "|------------|--------------|------------|------------|------------|-------------|-------------|---------|\n");
}

static int report(const char *what, const char *fmt_str, const char *rounding, const float *x, size_t n,
                  size_t extent, unsigned long long seed, float *work)
{
    rs_format f;
    rs_status st = rs_format_parse(fmt_str, &f);
    if (st != RS_OK) return rs_cli_fail("quant-error", "--format", st);
    if (rounding) {
        if (f.kind == RS_FMT_FP32) {
            fprintf(stderr, "replayssm quant-error: fp32 has no rounding to override\n");
            return 2;
        }
        f.rounding = !strcmp(rounding, "sr") ? RS_ROUND_SR : RS_ROUND_RTN;
    }
    char name[64];
    rs_format_print(&f, name, sizeof name);
    rs_quant_error_stats s;
    st = rs_quant_error_measure(&f, x, n, extent, seed, work, &s);
    if (st != RS_OK) {
        printf("| %-10s | %-12s | %s: %s |\n", what, name, rs_strerror(st), rs_last_error());
        return 0;
    }
    printf("| %-10s | %-12s | %10.3e | %10.3e | %10.3e | %+11.3e | %+11.3e | %7.4f |\n", what, name,
           s.rel_fro, s.max_abs, s.max_rel, s.mean_signed, s.bias_rel, s.bytes_per_elem);
    return 0;
}

int rs_cmd_quant_error(int argc, char **argv)
{
    const char *format = "all", *rounding = NULL, *dist = "all", *input = NULL, *dataset = NULL;
    size_t rows = QE_DEFAULT_ROWS, cols = QE_DEFAULT_COLS, tensors = QE_DEFAULT_TENSORS;
    size_t max_elements = QE_DEFAULT_MAX_ELEMENTS;
    int shape_given = 0;
    unsigned long long seed = QE_DEFAULT_SEED;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "replayssm quant-error: '%s' needs a value (or is unknown)\n", a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--format")) format = v;
        else if (!strcmp(a, "--rounding")) {
            if (strcmp(v, "rtn") && strcmp(v, "sr")) {
                fprintf(stderr, "replayssm quant-error: --rounding must be rtn or sr, not '%s'\n", v);
                return 2;
            }
            rounding = v;
        } else if (!strcmp(a, "--rows") || !strcmp(a, "--cols") || !strcmp(a, "--tensors") ||
                   !strcmp(a, "--max-elements")) {
            size_t val;
            if (parse_size(v, &val)) {
                fprintf(stderr, "replayssm quant-error: %s needs a positive integer, not '%s'\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--rows")) rows = val, shape_given = 1;
            else if (!strcmp(a, "--cols")) cols = val, shape_given = 1;
            else if (!strcmp(a, "--tensors")) tensors = val;
            else max_elements = val;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 0);
            if (errno || *end) {
                fprintf(stderr, "replayssm quant-error: bad --seed '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--dist")) dist = v;
        else if (!strcmp(a, "--input")) input = v;
        else if (!strcmp(a, "--dataset")) dataset = v;
        else {
            fprintf(stderr, "replayssm quant-error: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if ((input != NULL) != (dataset != NULL)) {
        fprintf(stderr, "replayssm quant-error: --input and --dataset go together\n");
        return 2;
    }
    const char **formats = &format;
    size_t nformats = 1;
    if (!strcmp(format, "all")) {
        formats = k_all_formats;
        nformats = sizeof k_all_formats / sizeof k_all_formats[0];
    } else {
        rs_format probe;
        rs_status st = rs_format_parse(format, &probe);
        if (st != RS_OK) {
            rs_cli_fail("quant-error", "--format", st);
            return 2; /* a usage error */
        }
    }

    int rc = 0;
    if (input) {
        float *x = NULL;
        size_t n = 0, last = 0;
        rs_status st = rs_h5_read_floats(input, dataset, &x, &n, &last);
        if (st != RS_OK) return rs_cli_fail("quant-error", "--input", st);
        size_t extent = shape_given ? rows * cols : n;
        if (n % extent) {
            fprintf(stderr, "replayssm quant-error: %zu elements are not a whole number of %zux%zu tensors\n",
                    n, rows, cols);
            free(x);
            return 2;
        }
        float *work = malloc(n * sizeof(float));
        if (work) print_header();
        if (!work) {
            free(x);
            fprintf(stderr, "replayssm quant-error: out of memory\n");
            return 1;
        }
        for (size_t k = 0; k < nformats && !rc; ++k)
            rc = report(dataset, formats[k], rounding, x, n, extent, seed, work);
        free(work);
        free(x);
        return rc;
    }

    /* checked by division: rows x cols x tensors may not even fit size_t */
    if (cols > max_elements / rows || tensors > max_elements / (rows * cols)) {
        const double want = (double)rows * (double)cols * (double)tensors;
        fprintf(stderr,
                "replayssm quant-error: --rows %zu x --cols %zu x --tensors %zu = %.4g elements per distribution, "
                "more than the limit %zu; pass --max-elements N to allow it\n",
                rows, cols, tensors, (double)want, max_elements);
        return 2;
    }
    const size_t extent = rows * cols, n = extent * tensors;
    float *x = malloc(n * sizeof(float)), *work = malloc(n * sizeof(float));
    if (!x || !work) {
        free(x);
        free(work);
        fprintf(stderr, "replayssm quant-error: out of memory for %zu elements\n", n);
        return 1;
    }
    print_header();
    int matched = 0;
    for (int kind = RS_SYNTH_GAUSSIAN; kind <= RS_SYNTH_POSITIVE && !rc; ++kind) {
        if (strcmp(dist, "all") && strcmp(dist, rs_synth_name((rs_synth_kind)kind))) continue;
        matched = 1;
        rs_status st = rs_synth_matrix((rs_synth_kind)kind, seed, n, x);
        if (st != RS_OK) {
            rc = rs_cli_fail("quant-error", "synthetic data", st);
            break;
        }
        for (size_t k = 0; k < nformats && !rc; ++k)
            rc = report(rs_synth_name((rs_synth_kind)kind), formats[k], rounding, x, n, extent, seed, work);
    }
    free(x);
    free(work);
    if (!matched) {
        fprintf(stderr, "replayssm quant-error: unknown --dist '%s' (gaussian, student-t3, positive, all)\n", dist);
        return 2;
    }
    return rc;
}
