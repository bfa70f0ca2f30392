/* prov_hash_time.cu — what the model files' SHA-256 (the log's provenance, eval/rs_provenance.h)
 * costs on the wall-time path of `kl`, on a downloaded-size checkpoint. A device tool (host code
 * only; built with the GPU programs so it runs on the lent machine beside them), not a test:
 *
 *   prov_hash_time MODEL_DIR
 *
 * prints, each timed with a monotonic clock (the files are read from the page cache when the
 * folder was just written, as in run_gpu_4b.sh):
 *   1. this CPU's SHA-256 rate on one thread (512 MiB in memory), portable and with the x86 SHA
 *      extensions: the serial cost of the folder;
 *   2. the folder's digests on worker threads alone (rs_prov_hash_files);
 *   3. rs_model_load alone (what `kl` does first);
 *   4. hashing started, the model loaded, then joined (what rs_kleval_prepare does): the time the
 *      join waits after the load is what hashing still adds to the critical path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "replayssm/eval/rs_model.h"
#include "rs_provenance.h"

static double now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prov_hash_time MODEL_DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    const size_t nb = (size_t)512 << 20;
    unsigned char *buf = (unsigned char *)malloc(nb);
    if (!buf) return 1;
    for (size_t i = 0; i < nb; i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
    char hex[65], hex1[65];
    double t0 = now_();
    rs_prov_sha256_mem(buf, nb, 0, hex);
    const double rate0 = (double)nb / (now_() - t0);
    t0 = now_();
    rs_prov_sha256_mem(buf, nb, 1, hex1);
    const double rate1 = (double)nb / (now_() - t0);
    free(buf);
    const int acc = rs_prov_sha256_accelerated();
    const double rate = acc ? rate1 : rate0; /* what the file digests use */
    printf("prov_hash_time: SHA-256 on one thread: portable %.0f MB/s, SHA extensions %s%.0f MB/s (same digest: %s)\n",
           rate0 * 1e-6, acc ? "" : "not available, portable ", rate1 * 1e-6, strcmp(hex, hex1) ? "NO" : "yes");
    rs_prov_files pf;
    t0 = now_();
    if (rs_prov_hash_files(dir, NULL, 0, &pf) != RS_OK) {
        fprintf(stderr, "prov_hash_time: %s\n", rs_last_error());
        return 1;
    }
    const double t_hash = now_() - t0;
    double bytes = 0, big = 0;
    for (size_t i = 0; i < pf.n; i++) {
        bytes += (double)pf.files[i].size;
        if ((double)pf.files[i].size > big) big = (double)pf.files[i].size;
    }
    printf("prov_hash_time: %zu model files, %.2f GB (largest %.2f GB): %.1f s serially at %.0f MB/s\n", pf.n,
           bytes * 1e-9, big * 1e-9, bytes / rate, rate * 1e-6);
    printf("prov_hash_time: digests on worker threads alone: %.1f s (%s)\n", t_hash, pf.model_hash);
    rs_prov_files_free(&pf);
    rs_model m;
    t0 = now_();
    if (rs_model_load(dir, &m) != RS_OK) {
        fprintf(stderr, "prov_hash_time: %s\n", rs_last_error());
        return 1;
    }
    const double t_load = now_() - t0;
    rs_model_free(&m);
    printf("prov_hash_time: rs_model_load alone: %.1f s\n", t_load);
    t0 = now_();
    rs_prov_job *j = NULL;
    if (rs_prov_hash_start(dir, NULL, 0, 0, &j) != RS_OK || rs_model_load(dir, &m) != RS_OK) {
        fprintf(stderr, "prov_hash_time: %s\n", rs_last_error());
        return 1;
    }
    const double t_l2 = now_() - t0;
    if (rs_prov_hash_join(j, &pf) != RS_OK) {
        fprintf(stderr, "prov_hash_time: %s\n", rs_last_error());
        return 1;
    }
    const double t_all = now_() - t0;
    printf("prov_hash_time: hashing started, model loaded in %.1f s, joined at %.1f s: hashing adds %.1f s to the "
           "load's %.1f s alone (serial hashing would add %.1f s)\n",
           t_l2, t_all, t_all - t_load, t_load, bytes / rate);
    rs_prov_files_free(&pf);
    rs_model_free(&m);
    return 0;
}
