/* rs_test_kleval.h — what the evaluator library's tests share: the runs as a test writes them
 * (policy string, window, seed) made into run specs by the library's parser, and the configuration
 * of test_kleval.c and test_kleval_plan.c: book 1023 of the pg19-mini fixture copy at `data`, 160
 * positions in chunks of 32, 1 thread. */
#ifndef RS_TEST_KLEVAL_H
#define RS_TEST_KLEVAL_H
#include <stdio.h>

#include "replayssm/eval/rs_kleval.h"

/* a run as a test writes it */
typedef struct rs_test_run {
    const char *policy;
    size_t window;
    uint64_t seed;
} rs_test_run;

/* out[i] = rs_run_spec_parse(runs[i]) for i < n (the window as its decimal string, as a user gives
 * it); RS_OK or the first failure's status (rs_last_error says why) */
static inline rs_status rs_test_specs(const rs_test_run *runs, size_t n, rs_run_spec *out)
{
    for (size_t i = 0; i < n; i++) {
        char w[32];
        snprintf(w, sizeof w, "%zu", runs[i].window);
        const rs_status st = rs_run_spec_parse(runs[i].policy, w, runs[i].seed, &out[i]);
        if (st != RS_OK) return st;
    }
    return RS_OK;
}

static inline rs_kleval_config rs_test_kleval_config(const char *model, const char *data, const char *out,
                                                     const rs_run_spec *runs, size_t n)
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
