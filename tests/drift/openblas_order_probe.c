/* openblas_order_probe.c — the probe that found OpenBLAS's dgemm summation order, which the twin
 * compute mode's GEMM reproduces on the GPU (kernels/dense/rs_dense_twin.cu rsg_linear_twin; docs/evaluator.md
 * "The twin compute mode"): cblas_dgemm(RowMajor, NoTrans, Trans) on float-valued doubles against an
 * emulation (the small TN kernel's 8 lanes and reduction trees when M N K <= 1e6, M N <= 1200, K >= 32;
 * otherwise K blocks of 384 / halved remainders rounded to 16, each summed in k order) on 1080 shapes.
 * Prints the number of outputs that differ (0 on the development machine's OpenBLAS 0.3.21, Cooperlake).
 * A manual tool, not built by CMake (its answer depends on the machine's OpenBLAS):
 *   cc -O2 -ffp-contract=off tests/drift/openblas_order_probe.c -lopenblas && ./a.out */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static double rnd(void) { return (double)(float)((rand() / (double)RAND_MAX) * 2.0 - 1.0); }
static int split(int K, int *b) { int n = 0; for (int ls = 0; ls < K;) { int m = K - ls; if (m >= 768) m = 384; else if (m > 384) m = ((m / 2 + 15) / 16) * 16; b[n++] = m; ls += m; } return n; }
/* y[i][j] of row-major X[M][K] W[N][K]^T as OpenBLAS 0.3.21 SkylakeX computes it */
static double emu(const double *x, const double *w, int M, int N, int K, int i, int j) {
  const double *a = x + (size_t)i * K, *b = w + (size_t)j * K;
  const double mnk = (double)M * N * K;
  if (mnk <= 1e6 && !((long)M * N > 1200 || K < 32)) { /* small TN kernel: 8 lanes */
    double s[8] = {0,0,0,0,0,0,0,0};
    for (int k = 0; k < K; k++) s[k & 7] += a[k] * b[k];
    int m4 = N & ~3, n4 = M & ~3; /* column-major view: M' = N (i' = j), N' = M (j' = i) */
    if (j < m4 || i < n4) return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    return ((s[4] + s[0]) + (s[6] + s[2])) + ((s[5] + s[1]) + (s[7] + s[3]));
  }
  int bl[64], nb = split(K, bl), k0 = 0; double c = 0.0;
  for (int q = 0; q < nb; q++) { double acc = 0.0; for (int k = k0; k < k0 + bl[q]; k++) acc += a[k] * b[k]; c = c + acc; k0 += bl[q]; }
  return c;
}
int main(void) {
  openblas_set_num_threads(1);
  int Ms[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 33, 64, 128, 320, 600, 1280}, Ns[] = {1, 2, 3, 4, 5, 8, 16, 30, 128}, Ks[] = {8, 31, 32, 64, 100, 256, 300, 1000};
  long tot = 0, bad = 0;
  for (int a = 0; a < 15; a++) for (int b2 = 0; b2 < 9; b2++) for (int c = 0; c < 8; c++) {
    int M = Ms[a], N = Ns[b2], K = Ks[c];
    double *x = malloc(sizeof(double) * M * K), *w = malloc(sizeof(double) * N * K), *y = malloc(sizeof(double) * M * N);
    for (int i = 0; i < M * K; i++) x[i] = rnd();
    for (int i = 0; i < N * K; i++) w[i] = rnd();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0, x, K, w, K, 0.0, y, N);
    long bd = 0;
    for (int i = 0; i < M; i++) for (int j = 0; j < N; j++) { double e = emu(x, w, M, N, K, i, j); bd += memcmp(&e, &y[i * N + j], 8) != 0; }
    if (bd) printf("M %d N %d K %d: %ld of %d differ\n", M, N, K, bd, M * N);
    tot += M * N; bad += bd;
    free(x); free(w); free(y);
  }
  printf("total %ld of %ld differ\n", bad, tot);
}
