/* gpu_rbf.c: mnist_svm --device cuda's distance blocks (workloads/svm/rbf_gpu.h) against
 * the CPU's (rbf_kernel.h) on random MNIST-shaped data: a set against itself (exactly
 * symmetric, zero diagonal) and a block against another set written with a row stride
 * wider than the block, in output blocks small and large. Bound: 1e-5 of the largest
 * distance (the dot products are rounded in other orders). Without a GPU or driver at
 * all the test reports itself skipped (77, gpu_present.h); once a GPU is found, a
 * failed rbf_gpu_create (CUDA or cuBLAS) fails it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_present.h"
#include "rbf_gpu.h"
#include "rbf_kernel.h"
#include "svm_test_util.h"

static float *random_rows(int n, int d, uint64_t *s) {
  float *x = malloc((size_t)n * d * sizeof *x);
  for (size_t i = 0; i < (size_t)n * d; i++) x[i] = (float)(test_uniform(s) - 0.5);
  return x;
}

static double max_diff(const float *a, const float *b, int rows, int cols, size_t ld, double *top) {
  double d = 0;
  *top = 1e-30;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) {
      const size_t k = (size_t)i * ld + j;
      d = fmax(d, fabs((double)a[k] - b[k]));
      *top = fmax(*top, fabs(b[k]));
    }
  return d;
}

int main(void) {
  char err[256];
  const int present = test_gpu_present(err, sizeof err);
  if (present == 0) {
    printf("gpu_rbf: skipped (%s)\n", err);
    return 77;
  }
  if (present < 0) {
    fprintf(stderr, "gpu_rbf: FAILED: %s\n", err);
    return 1;
  }
  rbf_gpu_t *g = rbf_gpu_create(err, sizeof err);
  if (!g) {
    fprintf(stderr, "gpu_rbf: FAILED: a GPU is present, but %s\n", err);
    return 1;
  }
  uint64_t s = 11;
  const int n = 300, m = 37, d = 784;
  float *x = random_rows(n, d, &s), *q = random_rows(m, d, &s), *sx = malloc(n * sizeof(float)),
        *sq = malloc(m * sizeof(float));
  rbf_sqnorms(x, n, d, sx);
  rbf_sqnorms(q, m, d, sq);
  float *cpu = malloc((size_t)n * n * sizeof(float)), *gpu = malloc((size_t)n * n * sizeof(float));
  rbf_use_gpu(NULL);
  rbf_sqdist_self(x, sx, n, d, cpu);
  memset(gpu, 0x7b, (size_t)n * n * sizeof(float));
  CHECK(rbf_gpu_sqdist_self(g, x, sx, n, d, gpu, err, sizeof err) == 0, "self: %s", err);
  double top, diff = max_diff(gpu, cpu, n, n, (size_t)n, &top);
  CHECK(diff <= 1e-5 * top, "self: max difference %g of %g", diff, top);
  for (int i = 0; i < n; i++) {
    CHECK(gpu[(size_t)i * n + i] == 0.0f, "diagonal %d", i);
    for (int j = 0; j < i; j++) CHECK(gpu[(size_t)i * n + j] == gpu[(size_t)j * n + i], "symmetry %d %d", i, j);
  }
  const size_t ldo = (size_t)n + 5;
  float *cb = malloc((size_t)m * ldo * sizeof(float)), *gb = malloc((size_t)m * ldo * sizeof(float));
  rbf_sqdist_block(q, sq, m, x, sx, n, d, cb, ldo);
  memset(gb, 0x7b, (size_t)m * ldo * sizeof(float));
  CHECK(rbf_gpu_sqdist_block(g, q, sq, m, x, sx, n, d, gb, ldo, err, sizeof err) == 0, "block: %s", err);
  diff = max_diff(gb, cb, m, n, ldo, &top);
  CHECK(diff <= 1e-5 * top, "block: max difference %g of %g", diff, top);
  /* Through the dispatch of rbf_kernel.c, as mnist_svm --device cuda runs it. */
  rbf_use_gpu(g);
  memset(gb, 0x7b, (size_t)m * ldo * sizeof(float));
  rbf_sqdist_block(q, sq, m, x, sx, n, d, gb, ldo);
  diff = max_diff(gb, cb, m, n, ldo, &top);
  CHECK(diff <= 1e-5 * top, "dispatched block: max difference %g of %g", diff, top);
  rbf_use_gpu(NULL);
  rbf_gpu_free(g);
  free(x), free(q), free(sx), free(sq), free(cpu), free(gpu), free(cb), free(gb);
  if (check_failures) fprintf(stderr, "gpu_rbf: %d failures\n", check_failures);
  return check_failures ? 1 : 0;
}
