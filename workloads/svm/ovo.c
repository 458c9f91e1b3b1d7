/* ovo.c: one-vs-one multi-class fit (LIBSVM's own scheme), into an ovr_model_t.
 *
 * Pair (a, b), a < b, trains on the points of classes a (+1) and b (-1) only; its kernel
 * rows are gathered from the fold's kcache (kcache_init_subset), so the kernel is still
 * computed once per (fold, gamma). Coefficients are stored in the fold's indexing, so
 * prediction is the same SGEMM as one-vs-rest, followed by votes. */
#include "ovo.h"

#include <stdlib.h>
#include <string.h>

int ovo_fit(kcache_t *kc, const uint8_t *labels, int ncls, int first, int stride,
            const smo_params_t *p, size_t budget_bytes, ovr_model_t *m) {
  const int n = kc->n, nf = ncls * (ncls - 1) / 2;
  memset(m, 0, sizeof *m);
  m->ncls = ncls;
  m->nfun = nf;
  m->n = n;
  m->coef = calloc((size_t)nf * n + 1, sizeof(double));
  m->rho = calloc((size_t)nf + 1, sizeof(double));
  m->stats = calloc((size_t)nf + 1, sizeof(smo_result_t));
  m->pair = malloc(sizeof(int) * 2 * (size_t)nf + 1);
  int *idx = malloc(sizeof(int) * (size_t)n + 1);
  signed char *y = malloc((size_t)n + 1);
  double *alpha = malloc(sizeof(double) * (size_t)n + 1);
  if (!m->coef || !m->rho || !m->stats || !m->pair || !idx || !y || !alpha) goto oom;
  int f = 0;
  for (int a = 0; a < ncls; ++a) {
    for (int b = a + 1; b < ncls; ++b, ++f) {
      m->pair[2 * f] = a;
      m->pair[2 * f + 1] = b;
      if (f < first || (f - first) % stride != 0) continue;
      int k = 0, npos = 0;
      for (int i = 0; i < n; ++i) {
        if (labels[i] != a && labels[i] != b) continue;
        idx[k] = i;
        y[k] = labels[i] == a ? 1 : -1;
        npos += y[k] > 0;
        k++;
      }
      if (npos == 0 || npos == k) {
        /* A class missing from this fold: the pair votes for the one present. */
        m->rho[f] = npos == 0 ? 1.0 : -1.0;
        continue;
      }
      kcache_t sub;
      if (kcache_init_subset(&sub, kc, idx, k, budget_bytes) != 0) goto oom;
      int rc = smo_solve(&sub, y, p, alpha, &m->stats[f]);
      kcache_free(&sub);
      if (rc != 0) goto oom;
      double *coef = m->coef + (size_t)f * n;
      for (int t = 0; t < k; ++t) coef[idx[t]] = alpha[t] * y[t];
      m->rho[f] = m->stats[f].rho;
    }
  }
  free(idx);
  free(y);
  free(alpha);
  return 0;
oom:
  free(idx);
  free(y);
  free(alpha);
  ovr_free(m);
  return -1;
}
