/* cv.c: cross-validation over a rank's grid units (see cv.h), and the refit.
 *
 * Order of work on a rank: for each (gamma, fold) group it holds, build the kernel
 * once, then for each C of the group fit all classes and predict the validation fold.
 * The result of a unit depends only on (C, gamma, fold) and the data, never on which
 * rank ran it or what ran before: there is no warm start, and kernel values are
 * computed the same way in every group. That is what makes 1, 2 and 3 ranks agree. */
#include "cv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kblock.h"
#include "kcache.h"
#include "ovo.h"
#include "ovr.h"
#include "rbf_kernel.h"
#include "rng.h"

int cv_assign_folds(int n, int folds, uint64_t seed, int *fold_of) {
  int *perm = malloc(sizeof(int) * (size_t)n + 1);
  if (!perm) return -1;
  for (int i = 0; i < n; ++i) perm[i] = i;
  rng_t r;
  rng_seed(&r, seed);
  rng_shuffle(&r, perm, n);
  for (int t = 0; t < n; ++t) fold_of[perm[t]] = (int)((int64_t)t * folds / n);
  free(perm);
  return 0;
}

/* One-vs-rest or one-vs-one, as the options say; pair subsets get a quarter of the
 * kernel budget for their gathered rows. */
static int model_fit(kcache_t *kc, const uint8_t *y, int ncls, int first, int stride,
                     const smo_params_t *p, const cv_opts_t *o, ovr_model_t *m) {
  if (o->ovo) return ovo_fit(kc, y, ncls, first, stride, p, o->mem_bytes / 4, m);
  return ovr_fit(kc, y, ncls, first, stride, p, m);
}

/* Fits one unit's model set (all classes) on kc and counts validation errors. */
static int unit_fit_predict(kcache_t *kc, const uint8_t *ytr, int ncls, double C,
                            const cv_opts_t *o, int nval, const uint8_t *yval,
                            ovr_kblock_fn kb, void *kctx, uint8_t *pred, int32_t *nerr,
                            cv_stats_t *st) {
  smo_params_t p = SMO_PARAMS_INIT;
  p.C = C;
  p.eps = o->eps;
  p.shrinking = o->shrinking;
  ovr_model_t m;
  double t0 = now_s();
  if (model_fit(kc, ytr, ncls, 0, 1, &p, o, &m) != 0) return -1;
  double t1 = now_s();
  if (ovr_predict(&m, nval, kb, kctx, pred, NULL) != 0) {
    ovr_free(&m);
    return -1;
  }
  st->solve_s += t1 - t0;
  st->predict_s += now_s() - t1;
  int32_t e = 0;
  for (int i = 0; i < nval; ++i) e += pred[i] != yval[i];
  *nerr = e;
  for (int c = 0; c < m.nfun; ++c) st->smo_iter += m.stats[c].iter;
  st->fits++;
  ovr_free(&m);
  return 0;
}

int cv_run(const svm_set_t *tr, const int *fold_of, int folds, const grid_t *g,
           const int *owner, const cv_opts_t *o, int32_t *errors, double *unit_cpu,
           cv_stats_t *st, char *err, size_t errlen) {
  const int n = tr->n, nc = g->n_c;
  double t_start = now_s();
  memset(st, 0, sizeof *st);
  int rc = -1;
  int *tidx = malloc(sizeof(int) * (size_t)n + 1), *vidx = malloc(sizeof(int) * (size_t)n + 1);
  uint8_t *ytr = malloc((size_t)n + 1), *yval = malloc((size_t)n + 1), *pred = malloc((size_t)n + 1);
  float *dist = NULL;
  if (!tidx || !vidx || !ytr || !yval || !pred) goto oom;

  /* Does this rank hold any unit at all? Then decide the kernel mode. */
  int mine = 0, max_tr = 0;
  for (int u = 0; u < nc * g->n_gamma * folds; ++u) mine += owner[u] == o->rank;
  for (int f = 0; f < folds; ++f) {
    int m = 0;
    for (int i = 0; i < n; ++i) m += fold_of[i] != f;
    if (m > max_tr) max_tr = m;
  }
  double full_bytes = 4.0 * n * n + 4.0 * max_tr * max_tr;
  st->full_mode = mine > 0 && full_bytes <= (double)o->mem_bytes;
  if (st->full_mode) {
    double t0 = now_s();
    dist = malloc(sizeof(float) * (size_t)n * n);
    if (!dist) goto oom;
    rbf_sqdist_self(tr->x, tr->sq, n, tr->d, dist);
    st->kernel_s += now_s() - t0;
  }

  for (int gi = 0; gi < g->n_gamma; ++gi) {
    const double gamma = pow(10.0, g->log_gamma[gi]);
    for (int f = 0; f < folds; ++f) {
      int any = 0;
      for (int ci = 0; ci < nc; ++ci) any |= owner[(gi * nc + ci) * folds + f] == o->rank;
      if (!any) continue;
      int ntr = 0, nval = 0;
      for (int i = 0; i < n; ++i) {
        if (fold_of[i] == f) {
          vidx[nval] = i;
          yval[nval++] = tr->y[i];
        } else {
          tidx[ntr] = i;
          ytr[ntr++] = tr->y[i];
        }
      }
      if (ntr < 2) {
        snprintf(err, errlen, "fold %d leaves %d training point(s): use fewer folds or more data",
                 f, ntr);
        goto fail;
      }
      double t0 = now_s();
      kcache_t kc;
      svm_set_t trf = {0}, valf = {0};
      kblock_dist_ctx_t dctx = {dist, (size_t)n, vidx, tidx, gamma};
      kblock_gemm_ctx_t gctx;
      memset(&gctx, 0, sizeof gctx);
      ovr_kblock_fn kb;
      void *kctx;
      if (st->full_mode) {
        if (kcache_init_full(&kc, dist, (size_t)n, tidx, ntr, gamma) != 0) goto oom;
        kb = kblock_dist;
        kctx = &dctx;
      } else {
        if (svm_data_subset(tr, tidx, ntr, &trf) != 0 || svm_data_subset(tr, vidx, nval, &valf) != 0 ||
            kcache_init_lru(&kc, trf.x, trf.sq, ntr, tr->d, gamma, o->mem_bytes) != 0) {
          svm_data_free(&trf);
          svm_data_free(&valf);
          goto oom;
        }
        gctx.q = &valf;
        gctx.t = &trf;
        gctx.gamma = gamma;
        kb = kblock_gemm;
        kctx = &gctx;
      }
      st->kernel_s += now_s() - t0;
      int bad = 0;
      for (int ci = 0; ci < nc && !bad; ++ci) {
        int u = (gi * nc + ci) * folds + f;
        if (owner[u] != o->rank) continue;
        const double C = pow(10.0, g->log_c[ci]);
        double tu = now_s(), cu = cpu_now_s();
        bad = unit_fit_predict(&kc, ytr, tr->ncls, C, o, nval, yval, kb, kctx, pred, &errors[u],
                               st) != 0;
        if (unit_cpu) unit_cpu[u] = cpu_now_s() - cu;
        st->units++;
        if (o->unit_done && !bad) o->unit_done(o->unit_ctx, u, errors[u], unit_cpu ? unit_cpu[u] : 0.0);
        if (o->verbose && !bad)
          fprintf(stderr, "rank %d: gamma 1e%+.2f C 1e%+.2f fold %d: %d/%d errors, %.2f s\n",
                  o->rank, g->log_gamma[gi], g->log_c[ci], f, errors[u], nval, now_s() - tu);
      }
      kcache_free(&kc);
      kblock_gemm_free(&gctx);
      svm_data_free(&trf);
      svm_data_free(&valf);
      if (bad) goto oom;
    }
  }
  rc = 0;
  goto done;
oom:
  snprintf(err, errlen, "out of memory for the kernel of %d training points (lower --train-size "
           "or --mem-mb)", n);
fail:
done:
  st->total_s = now_s() - t_start;
  free(tidx); free(vidx); free(ytr); free(yval); free(pred); free(dist);
  return rc;
}

int cv_refit(const svm_set_t *tr, double C, double gamma, const cv_opts_t *o, int first,
             int stride, ovr_model_t *m, char *err, size_t errlen) {
  const int n = tr->n;
  kcache_t kc;
  memset(&kc, 0, sizeof kc);
  if (4.0 * n * n <= (double)o->mem_bytes) {
    /* The full matrix: distances via SSYRK, exponentiated in place. */
    float *k = malloc(sizeof(float) * (size_t)n * n);
    if (!k) goto oom;
    rbf_sqdist_self(tr->x, tr->sq, n, tr->d, k);
    rbf_exp_inplace(k, (size_t)n * n, gamma);
    kc.n = n;
    kc.gamma = gamma;
    kc.full = k;
  } else if (kcache_init_lru(&kc, tr->x, tr->sq, n, tr->d, gamma, o->mem_bytes) != 0) {
    goto oom;
  }
  smo_params_t p = SMO_PARAMS_INIT;
  p.C = C;
  p.eps = o->eps;
  p.shrinking = o->shrinking;
  int rc = model_fit(&kc, tr->y, tr->ncls, first, stride, &p, o, m);
  kcache_free(&kc);
  if (rc == 0) return 0;
oom:
  kcache_free(&kc);
  snprintf(err, errlen, "out of memory refitting on %d training points (lower --mem-mb)", n);
  return -1;
}

int cv_test_errors(const ovr_model_t *m, const svm_set_t *tr, const svm_set_t *te,
                   double gamma, int *test_errors) {
  uint8_t *pred = malloc((size_t)te->n + 1);
  if (!pred) return -1;
  kblock_gemm_ctx_t gctx;
  memset(&gctx, 0, sizeof gctx);
  gctx.q = te;
  gctx.t = tr;
  gctx.gamma = gamma;
  int rc = ovr_predict(m, te->n, kblock_gemm, &gctx, pred, NULL);
  kblock_gemm_free(&gctx);
  int e = 0;
  for (int i = 0; i < te->n; ++i) e += pred[i] != te->y[i];
  *test_errors = e;
  free(pred);
  return rc;
}
