/* cmd_quant_error.c — `replayssm quant-error`: what does storing a matrix in each format
 * cost? Prints relative Frobenius error, max error, mean signed error (bias) and bytes per
 * element for synthetic Gaussian / heavy-tailed / one-signed matrices or an HDF5 dataset. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_opts.h"       /* the option grammar */
#include "rs_cli.h"         /* rs_cli_fail */
#include "replayssm/eval/rs_outfile.h"
#include "replayssm/quant/rs_format.h"      /* rs_format_parse / set_rounding / print */
#include "replayssm/eval/rs_h5io.h"          /* rs_h5_read_floats */
#include "replayssm/theory/rs_quant_error.h" /* rs_quant_error_measure, rs_synth_matrix */

#define QE_DEFAULT_ROWS 128   /* one SSM state: d_v x d_k */
#define QE_DEFAULT_COLS 128
#define QE_DEFAULT_TENSORS 64 /* matrices per distribution: 1M elements */
/* Synthetic elements per distribution without --max-elements: 2^26 (two float buffers of
 * 256 MiB, about a minute of work per format on one core). A typo such as --rows 100000
 * --tensors 64 (819M elements, hours) is refused with the product instead of started; so is an
 * --input dataset of more elements (a small file can declare a huge one over unallocated chunks). */
#define QE_DEFAULT_MAX_ELEMENTS ((size_t)1 << 26)

static const char *k_all_formats[] = {"bf16-rtn", "bf16-sr", "fp16-rtn", "fp16-sr",  "fp8-rtn",  "fp8-sr",
                                      "e5m2-rtn", "e5m2-sr", "nvfp4-rtn", "nvfp4-sr", "nvfp4-sr8",
                                      "mxfp8-rtn", "mxfp8-sr", "mxfp4-rtn", "mxfp4-sr"};

static const char k_about[] =
    "Quantizes matrices with each storage format and prints, per format:\n"
    "  rel_fro   ||Q(x)-x||_F / ||x||_F\n"
    "  max_abs   max |Q(x)-x|;  max_rel = max_abs / max|x|\n"
    "  bias      mean (Q(x)-x);  bias_rel = bias / mean|x|\n"
    "  B/elem    storage bytes per element, scales included";
static const char k_epilog[] =
    "--out FILE writes the table as CSV (comma-separated, one header line: data,format,rel_fro,max_abs,\n"
    "max_rel,bias,bias_rel,bytes_per_elem; values with 9 significant digits); without --out no file.\n"
    "Formats are the grammar of every command: a bare base (fp16, bf16, fp8, nvfp4) is <base>-rtn,\n"
    "the default rounding; --rounding M replaces the rounding of each format (also of 'all').";

/* the CSV of --out: written to rs_outfile's temporary, placed at FILE at the end (never a partial table) */
static FILE *g_csv;

/* the formats of --format (a format string or 'all') with --rounding applied, by the library's
 * grammar; 0, or 2 after printing the library's message (a usage error: nothing printed yet) */
static int resolve_formats_(const char *format, const char *rounding, rs_format *out, size_t *n)
{
    const int all = !strcmp(format, "all");
    *n = all ? sizeof k_all_formats / sizeof k_all_formats[0] : 1;
    for (size_t k = 0; k < *n; k++) {
        if (rs_format_parse(all ? k_all_formats[k] : format, &out[k]) != RS_OK) {
            rs_cli_fail("quant-error", "--format", RS_E_INVAL);
            return 2;
        }
        if (rounding && rs_format_set_rounding(&out[k], rounding) != RS_OK) {
            rs_cli_fail("quant-error", "--rounding", RS_E_INVAL);
            return 2;
        }
    }
    return 0;
}

static void print_header(void)
{
    printf("| data       | format       |    rel_fro |    max_abs |    max_rel |        bias |    bias_rel |  B/elem |\n"
           "|------------|--------------|------------|------------|------------|-------------|-------------|---------|\n");
}

static int report(const char *what, const rs_format *f, const float *x, size_t n, size_t extent,
                  unsigned long long seed, float *work)
{
    char name[64];
    rs_format_print(f, name, sizeof name);
    rs_quant_error_stats s;
    const rs_status st = rs_quant_error_measure(f, x, n, extent, seed, work, &s);
    if (st != RS_OK) {
        printf("| %-10s | %-12s | %s: %s |\n", what, name, rs_strerror(st), rs_last_error());
        return 0;
    }
    printf("| %-10s | %-12s | %10.3e | %10.3e | %10.3e | %+11.3e | %+11.3e | %7.4f |\n", what, name,
           s.rel_fro, s.max_abs, s.max_rel, s.mean_signed, s.bias_rel, s.bytes_per_elem);
    if (g_csv)
        fprintf(g_csv, "%s,%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", what, name, s.rel_fro, s.max_abs, s.max_rel,
                s.mean_signed, s.bias_rel, s.bytes_per_elem);
    return 0;
}

static int run_(const rs_format *formats, size_t nformats, const char *dist, const char *input, const char *dataset,
                size_t rows, size_t cols, size_t tensors, size_t max_elements, int shape_given, unsigned long long seed,
                const char *out, int force);

int rs_cmd_quant_error(int argc, char **argv)
{
    const char *format = "all", *rounding = NULL, *dist = "all", *input = NULL, *dataset = NULL, *out = NULL;
    size_t rows = QE_DEFAULT_ROWS, cols = QE_DEFAULT_COLS, tensors = QE_DEFAULT_TENSORS;
    size_t max_elements = QE_DEFAULT_MAX_ELEMENTS;
    int rows_given = 0, cols_given = 0, force = 0;
    uint64_t seed64 = RS_CLI_DEFAULT_SEED;
    char fmt_help[1024];
    snprintf(fmt_help, sizeof fmt_help, "a format string (%s), or 'all'", rs_format_valid_list());
    const rs_cli_opt opts[] = {
        {"--format", NULL, RS_CLI_STR, "F", fmt_help, "[all]", &format, 0, 0, NULL, NULL, NULL, 0},
        {"--rounding", NULL, RS_CLI_CHOICE, "M", "override the rounding of --format (rtn or sr)", NULL, &rounding, 0, 0,
         "rtn|sr", NULL, NULL, 0},
        {"--rows", NULL, RS_CLI_SIZE, "R", "rows of one tensor (one NVFP4 tensor scale)", "[128]", &rows, 1, 0, NULL,
         NULL, &rows_given, 0},
        {"--cols", NULL, RS_CLI_SIZE, "C", "columns of one tensor", "[128]", &cols, 1, 0, NULL, NULL, &cols_given, 0},
        {"--tensors", NULL, RS_CLI_SIZE, "N", "synthetic tensors per distribution", "[64]", &tensors, 1, 0, NULL, NULL,
         NULL, 0},
        {"--dist", NULL, RS_CLI_CHOICE, "D", "synthetic distribution", "[all]", &dist, 0, 0,
         "gaussian|student-t3|positive|all", NULL, NULL, 0},
        RS_CLI_OPT_SEED(&seed64),
        {"--input", NULL, RS_CLI_STR, "FILE.h5", "quantize an HDF5 dataset instead (with --dataset; tensor =\n"
         "R x C if given, else the whole dataset)", NULL, &input, 0, 0, NULL, NULL, NULL, 0},
        {"--dataset", NULL, RS_CLI_STR, "NAME", "the dataset of --input", NULL, &dataset, 0, 0, NULL, NULL, NULL, 0},
        {"--max-elements", NULL, RS_CLI_SIZE, "N", "refuse more elements per distribution (synthetic) or\nin the --input dataset than N",
         "[67108864]", &max_elements, 1, 0, NULL, NULL, NULL, 0},
        RS_CLI_OPT_OUT(&out, "also write the table as CSV (see below)", "[none: stdout only]"),
        RS_CLI_OPT_FORCE(&force),
    };
    const rs_cli_spec spec = {"quant-error", "[--format F|all] [--rounding rtn|sr] [--rows R --cols C]\n"
                              "[--tensors N] [--dist gaussian|student-t3|positive|all]\n"
                              "[--seed S] [--input FILE.h5 --dataset NAME] [--max-elements N]\n"
                              "[--out FILE.csv [--force]]", k_about, opts, sizeof opts / sizeof opts[0], k_epilog, 0};
    const int pr = rs_cli_parse(&spec, argc, argv, NULL, NULL, NULL);
    if (pr) return pr == 1 ? 0 : 2;
    const int shape_given = rows_given || cols_given;
    const unsigned long long seed = (unsigned long long)seed64;
    rs_format formats[sizeof k_all_formats / sizeof k_all_formats[0]];
    size_t nformats = 0;
    if ((input != NULL) != (dataset != NULL)) {
        fprintf(stderr, "replayssm quant-error: --input and --dataset go together\n");
        return 2;
    }
    if (resolve_formats_(format, rounding, formats, &nformats)) return 2;
    return run_(formats, nformats, dist, input, dataset, rows, cols, tensors, max_elements, shape_given, seed, out, force);
}

static int run_body_(const rs_format *formats, size_t nformats, const char *dist, const char *input,
                     const char *dataset, size_t rows, size_t cols, size_t tensors, size_t max_elements,
                     int shape_given, unsigned long long seed)
{

    int rc = 0;
    if (input) {
        float *x = NULL;
        size_t n = 0, last = 0;
        rs_status st = rs_h5_read_floats(input, dataset, max_elements, &x, &n, &last);
        if (st != RS_OK) return rs_cli_fail("quant-error", "--input", st);
        /* the error of quantizing NaN or Inf is undefined (and a float64 value past the fp32 range
         * reads as Inf): refused, naming the first such element, before any table row */
        for (size_t i = 0; i < n; i++) {
            if (isfinite(x[i])) continue;
            const int nan = isnan(x[i]);
            free(x);
            return rs_cli_fail("quant-error", "--input",
                               rs_error_set(RS_E_NONFINITE, "%s: dataset %s element %zu (row %zu, column %zu) is %s: the "
                                            "error of quantizing it is undefined", input, dataset, i, last ? i / last : 0,
                                            last ? i % last : i, nan ? "NaN" : "Inf (or a value beyond the fp32 range)"));
        }
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
            rc = report(dataset, &formats[k], x, n, extent, seed, work);
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
            rc = report(rs_synth_name((rs_synth_kind)kind), &formats[k], x, n, extent, seed, work);
    }
    free(x);
    free(work);
    if (!matched) {
        fprintf(stderr, "replayssm quant-error: unknown --dist '%s' (gaussian, student-t3, positive, all)\n", dist);
        return 2;
    }
    return rc;
}

static int run_(const rs_format *formats, size_t nformats, const char *dist, const char *input, const char *dataset,
                size_t rows, size_t cols, size_t tensors, size_t max_elements, int shape_given, unsigned long long seed,
                const char *out, int force)
{
    rs_outfile *of = NULL;
    if (out) {
        /* an existing FILE without --force is a usage error, checked before any work */
        struct stat sb;
        if (!force && lstat(out, &sb) == 0)
            return rs_cli_usage_error("quant-error", "--out %s exists (--force replaces it)", out);
        rs_status st = rs_outfile_open(out, force, &of); /* never a link, FIFO or device (rs_outfile.h) */
        if (st != RS_OK) return rs_cli_fail("quant-error", "--out", st);
        g_csv = rs_outfile_stream(of);
        fprintf(g_csv, "data,format,rel_fro,max_abs,max_rel,bias,bias_rel,bytes_per_elem\n");
    }
    int rc = run_body_(formats, nformats, dist, input, dataset, rows, cols, tensors, max_elements, shape_given, seed);
    g_csv = NULL;
    if (of && rc == 0) {
        rs_status st = rs_outfile_commit(of);
        if (st != RS_OK) rc = rs_cli_fail("quant-error", "--out", st);
    } else if (of) {
        rs_outfile_discard(of); /* a failed run leaves no table (and an old FILE as it was) */
    }
    return rc;
}
