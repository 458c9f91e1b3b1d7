/* test_svm_kernel.c: RBF kernel rows through BLAS (workloads/svm/rbf_kernel.c) and
 * the kernel cache (kcache.c) against double-precision references.
 *  - rbf_exp_inplace: relative error <= 5e-7 against exp() for arguments in [0, 87),
 *    exactly 0 from 87 on and for NaN;
 *  - rbf_kernel_block and rbf_sqdist_self: kernel values within 2e-6 of a naive
 *    double computation on MNIST-like standardised, centred data; the distance matrix is
 *    symmetric with an exact zero diagonal;
 *  - kcache: LRU rows (SGEMV) equal full-matrix rows (SSYRK) within 2e-6, K_ii = 1,
 *    and the LRU keeps the previous row alive while fetching the next. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kcache.h"
#include "rbf_kernel.h"

#include "svm_test_util.h"

static uint64_t state = 99;
static double uniform(void) { return test_uniform(&state); }

static void test_exp(void) {
  enum { N = 200001 };
  float *v = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) v[i] = (float)(100.0 * i / (N - 1));
  rbf_exp_inplace(v, N, 1.0);
  double worst = 0.0;
  for (int i = 0; i < N; ++i) {
    float a = (float)(100.0 * i / (N - 1));
    if (a < 87.0f) {
      double ref = exp(-(double)a), rel = fabs(v[i] - ref) / ref;
      if (rel > worst) worst = rel;
    } else {
      CHECK(v[i] == 0.0f, "exp(-%g) = %g, expected 0 beyond 87", a, v[i]);
    }
  }
  printf("rbf_exp_inplace: worst relative error %.3g on [0, 87)\n", worst);
  CHECK(worst <= 5e-7, "exp relative error %.3g > 5e-7", worst);
  v[0] = NAN;
  v[1] = 0.0f;
  rbf_exp_inplace(v, 2, 0.5);
  CHECK(v[0] == 0.0f && v[1] == 1.0f, "exp(NaN) = %g (want 0), exp(0) = %g (want 1)", v[0], v[1]);
  free(v);
}

static void test_blocks(void) {
  const int n = 120, m = 37, d = 784;
  const double gamma = 1e-3;
  float *x = malloc(sizeof(float) * n * d), *q = malloc(sizeof(float) * m * d);
  /* Standardised MNIST-like rows: mostly background (-1.73), some ink. */
  for (int i = 0; i < n * d; ++i) x[i] = uniform() < 0.8 ? -1.732f : (float)(3.5 * uniform() - 1.7);
  for (int i = 0; i < m * d; ++i) q[i] = uniform() < 0.8 ? -1.732f : (float)(3.5 * uniform() - 1.7);
  /* Centred on x's mean, as svm_data_centre does before any kernel is computed. */
  for (int k = 0; k < d; ++k) {
    double mean = 0.0;
    for (int i = 0; i < n; ++i) mean += x[i * d + k];
    mean /= n;
    for (int i = 0; i < n; ++i) x[i * d + k] -= (float)mean;
    for (int i = 0; i < m; ++i) q[i * d + k] -= (float)mean;
  }
  float *sx = malloc(sizeof(float) * n), *sq = malloc(sizeof(float) * m);
  rbf_sqnorms(x, n, d, sx);
  rbf_sqnorms(q, m, d, sq);
  float *kb = malloc(sizeof(float) * m * n);
  rbf_kernel_block(q, sq, m, x, sx, n, d, gamma, kb, (size_t)n);
  double worst = 0.0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double dist = 0.0;
      for (int k = 0; k < d; ++k) {
        double t = (double)q[i * d + k] - x[j * d + k];
        dist += t * t;
      }
      worst = fmax(worst, fabs(kb[i * n + j] - exp(-gamma * dist)));
    }
  printf("rbf_kernel_block: worst absolute error %.3g\n", worst);
  CHECK(worst <= 2e-6, "kernel block error %.3g > 2e-6", worst);

  float *dist = malloc(sizeof(float) * n * n);
  rbf_sqdist_self(x, sx, n, d, dist);
  int asym = 0, diag = 0;
  for (int i = 0; i < n; ++i) {
    diag += dist[i * n + i] != 0.0f;
    for (int j = 0; j < n; ++j) asym += dist[i * n + j] != dist[j * n + i];
  }
  CHECK(asym == 0 && diag == 0, "distance matrix: %d asymmetric entries, %d nonzero diagonal", asym,
        diag);

  /* Full (SSYRK) vs LRU (SGEMV) rows, fetched in an order that forces evictions. */
  int *idx = malloc(sizeof(int) * n);
  for (int i = 0; i < n; ++i) idx[i] = i;
  kcache_t full, lru;
  CHECK(kcache_init_full(&full, dist, (size_t)n, idx, n, gamma) == 0, "init full");
  CHECK(kcache_init_lru(&lru, x, sx, n, d, gamma, (size_t)3 * n * sizeof(float)) == 0, "init lru");
  worst = 0.0;
  for (int t = 0; t < 3 * n; ++t) {
    int i = (t * 7) % n, j = (t * 13 + 5) % n;
    const float *ri = kcache_row(&lru, i);
    const float *rj = kcache_row(&lru, j);
    const float *fi = kcache_row(&full, i), *fj = kcache_row(&full, j);
    CHECK(ri[i] == 1.0f && fi[i] == 1.0f, "K_ii != 1 at %d", i);
    for (int c = 0; c < n; ++c) worst = fmax(worst, fmax(fabs(ri[c] - fi[c]), fabs(rj[c] - fj[c])));
  }
  printf("kcache: LRU vs full rows, worst difference %.3g, %ld rows computed in %d slots\n", worst,
         lru.rows_computed, lru.capacity);
  CHECK(worst <= 2e-6, "LRU vs full rows differ by %.3g", worst);
  CHECK(lru.capacity == 3 && lru.rows_computed > 3 * n / 2, "LRU did not evict");
  kcache_free(&full);
  kcache_free(&lru);
  free(x); free(q); free(sx); free(sq); free(kb); free(dist); free(idx);
}

int main(void) {
  test_exp();
  test_blocks();
  if (check_failures) {
    fprintf(stderr, "%d check(s) failed\n", check_failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
