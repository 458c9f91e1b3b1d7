/* ovr.c: one-vs-rest fit (ncls SMO solves sharing one kcache) and blocked prediction.
 *
 * Prediction gathers the union of support vectors of all classes once, then for each
 * block of queries computes the kernel block against them and multiplies it by the
 * (n_sv, nfun) coefficient matrix with one SGEMM: decision = K coef - rho. */
#include "ovr.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#define OVR_QUERY_BLOCK 256

int ovr_fit(kcache_t *kc, const uint8_t *labels, int ncls, int first, int stride,
            const smo_params_t *p, ovr_model_t *m) {
  const int n = kc->n;
  memset(m, 0, sizeof *m);
  m->ncls = ncls;
  m->nfun = ncls;
  m->n = n;
  m->coef = calloc((size_t)ncls * n + 1, sizeof(double));
  m->rho = calloc((size_t)ncls + 1, sizeof(double));
  m->stats = calloc((size_t)ncls + 1, sizeof(smo_result_t));
  signed char *y = malloc((size_t)n + 1);
  double *alpha = malloc((size_t)n * sizeof(double) + 1);
  if (!m->coef || !m->rho || !m->stats || !y || !alpha) {
    free(y);
    free(alpha);
    ovr_free(m);
    return -1;
  }
  for (int c = first; c < ncls; c += stride) {
    int npos = 0;
    for (int i = 0; i < n; ++i) {
      y[i] = labels[i] == c ? 1 : -1;
      npos += y[i] > 0;
    }
    if (npos == 0 || npos == n) {
      /* Degenerate (tiny folds): constant decision, +1 if every point is class c. */
      m->rho[c] = npos == n ? -1.0 : 1.0;
      continue;
    }
    if (smo_solve(kc, y, p, alpha, &m->stats[c]) != 0) {
      free(y);
      free(alpha);
      ovr_free(m);
      return -1;
    }
    double *coef = m->coef + (size_t)c * n;
    for (int i = 0; i < n; ++i) coef[i] = alpha[i] * y[i];
    m->rho[c] = m->stats[c].rho;
  }
  free(y);
  free(alpha);
  return 0;
}

/* The class of one query from its decision values d (nfun). */
static int model_decide(const ovr_model_t *m, const float *d) {
  int best = 0;
  if (!m->pair) {
    for (int c = 1; c < m->nfun; ++c)
      if (d[c] > d[best]) best = c; /* ties go to the lower class */
    return best;
  }
  int votes[256] = {0};
  for (int f = 0; f < m->nfun; ++f) votes[d[f] > 0.0f ? m->pair[2 * f] : m->pair[2 * f + 1]]++;
  for (int c = 1; c < m->ncls; ++c)
    if (votes[c] > votes[best]) best = c;
  return best;
}

int ovr_predict(const ovr_model_t *m, int nq, ovr_kblock_fn kblock, void *ctx,
                uint8_t *pred, float *dec) {
  const int n = m->n, nf = m->nfun; /* columns of the decision matrix */
  int *cols = malloc((size_t)n * sizeof(int) + 1);
  int ns = 0;
  if (!cols) return -1;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < nf; ++c) {
      if (m->coef[(size_t)c * n + i] != 0.0) {
        cols[ns++] = i;
        break;
      }
    }
  }
  float *coef = malloc((size_t)ns * nf * sizeof(float) + 1); /* (ns, nf) */
  float *kb = malloc((size_t)OVR_QUERY_BLOCK * ns * sizeof(float) + 1);
  float *db = malloc((size_t)OVR_QUERY_BLOCK * nf * sizeof(float) + 1);
  if (!coef || !kb || !db) {
    free(cols); free(coef); free(kb); free(db);
    return -1;
  }
  for (int s = 0; s < ns; ++s)
    for (int c = 0; c < nf; ++c) coef[(size_t)s * nf + c] = (float)m->coef[(size_t)c * n + cols[s]];

  for (int q0 = 0; q0 < nq; q0 += OVR_QUERY_BLOCK) {
    int nb = nq - q0 < OVR_QUERY_BLOCK ? nq - q0 : OVR_QUERY_BLOCK;
    if (ns > 0) {
      kblock(ctx, q0, nb, cols, ns, kb);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, nf, ns, 1.0f, kb, ns, coef,
                  nf, 0.0f, db, nf);
    } else {
      memset(db, 0, (size_t)nb * nf * sizeof(float));
    }
    for (int r = 0; r < nb; ++r) {
      float *d = db + (size_t)r * nf;
      for (int c = 0; c < nf; ++c) d[c] -= (float)m->rho[c];
      pred[q0 + r] = (uint8_t)model_decide(m, d);
      if (dec) memcpy(dec + (size_t)(q0 + r) * nf, d, (size_t)nf * sizeof(float));
    }
  }
  free(cols); free(coef); free(kb); free(db);
  return 0;
}

void ovr_free(ovr_model_t *m) {
  if (!m) return;
  free(m->coef);
  free(m->rho);
  free(m->stats);
  free(m->pair);
  memset(m, 0, sizeof *m);
}
