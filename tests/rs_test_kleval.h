/* rs_test_kleval.h — the configuration the evaluator library's tests share (test_kleval.c,
 * test_kleval_plan.c): book 1023 of the pg19-mini fixture copy at `data`, 160 positions in chunks of
 * 32, 1 thread. */
#ifndef RS_TEST_KLEVAL_H
#define RS_TEST_KLEVAL_H
#include "replayssm/eval/rs_kleval.h"

static inline rs_kleval_config rs_test_kleval_config(const char *model, const char *data, const char *out,
                                                     const rs_kleval_run_spec *runs, size_t n)
{
    static const char *const ids[] = {"1023"};
    rs_kleval_config c = rs_kleval_config_default();
    c.model_dir = model;
    c.data_dir = data;
    c.book_ids = ids;
    c.n_book_ids = 1;
    c.tokens = 160;
    c.chunk = 32;
    c.threads = 1;
    c.out_path = out;
    c.runs = runs;
    c.n_runs = n;
    return c;
}
#endif
