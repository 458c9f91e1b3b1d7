/* test_svm_smo.c: the SMO solver (workloads/svm/smo.c) against LIBSVM, and KKT.
 *
 * Small two-class problems (overlapping Gaussian blobs, so the solution has free and
 * bounded support vectors) are solved by our solver and by LIBSVM's C-SVC with the same
 * C, gamma and eps. Checked, per problem:
 *  - dual objectives agree to 1e-5 relative (the kernel is single precision; at
 *    C = 1000 that alone moves the objective by 1e-6);
 *  - at eps 1e-7 the support-vector sets agree (alpha_i > 1e-6 C) and rho to 1e-4;
 *  - predictions on 500 held-out points agree on at least 99%;
 *  - our KKT violation (gradient recomputed from scratch) is at most eps;
 *  - the LRU kernel cache with room for only a few rows, and no shrinking, reach
 *    the same objective as the full matrix.
 * And one-vs-one (ovo.c, LIBSVM's own multi-class scheme) on a 4-class problem: class
 * predictions on held-out points agree with LIBSVM's on at least 99%.
 * Our kernel is single precision, LIBSVM's double: hence the tolerances. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <svm.h>

#include "kblock.h"
#include "kcache.h"
#include "ovo.h"
#include "rbf_kernel.h"
#include "smo.h"

#include "svm_test_util.h"

static uint64_t rng_state = 12345;
static double rng_uniform(void) { return test_uniform(&rng_state); }
static double rng_normal(void) {
  double u = rng_uniform(), v = rng_uniform();
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* n points of dimension d: label +1 around +sep/2 on every axis, -1 around -sep/2. */
static void make_blobs(int n, int d, double sep, float *x, signed char *y) {
  for (int i = 0; i < n; ++i) {
    y[i] = (i % 3 == 0 || i == 0) ? 1 : -1; /* unbalanced, first point +1 (LIBSVM order) */
    for (int k = 0; k < d; ++k)
      x[(size_t)i * d + k] = (float)(rng_normal() + y[i] * sep / 2.0 + (k % 2 ? 0.3 : -0.2));
  }
}

static char libsvm_log[4096];
static void libsvm_print(const char *s) {
  strncat(libsvm_log, s, sizeof libsvm_log - strlen(libsvm_log) - 1);
}

typedef struct ref {
  struct svm_model *model;
  struct svm_problem prob;
  struct svm_node *nodes;
  double obj, rho;
  double *alpha; /* (n) alpha_i >= 0 by training index */
} ref_t;

static struct svm_node *to_nodes(const float *x, int n, int d, struct svm_node **rows) {
  struct svm_node *nodes = malloc(sizeof(struct svm_node) * (size_t)n * (d + 1));
  for (int i = 0; i < n; ++i) {
    rows[i] = nodes + (size_t)i * (d + 1);
    for (int k = 0; k < d; ++k) {
      rows[i][k].index = k + 1;
      rows[i][k].value = x[(size_t)i * d + k];
    }
    rows[i][d].index = -1;
  }
  return nodes;
}

static void ref_train(ref_t *r, const float *x, const signed char *y, int n, int d, double C,
                      double gamma, double eps) {
  memset(r, 0, sizeof *r);
  r->prob.l = n;
  r->prob.y = malloc(sizeof(double) * n);
  r->prob.x = malloc(sizeof(struct svm_node *) * n);
  for (int i = 0; i < n; ++i) r->prob.y[i] = y[i];
  r->nodes = to_nodes(x, n, d, r->prob.x);
  struct svm_parameter p;
  memset(&p, 0, sizeof p);
  p.svm_type = C_SVC;
  p.kernel_type = RBF;
  p.gamma = gamma;
  p.C = C;
  p.eps = eps;
  p.cache_size = 64;
  p.shrinking = 1;
  libsvm_log[0] = 0;
  svm_set_print_string_function(libsvm_print);
  r->model = svm_train(&r->prob, &p);
  const char *o = strstr(libsvm_log, "obj = ");
  r->obj = o ? atof(o + 6) : NAN;
  r->rho = r->model->rho[0];
  r->alpha = calloc((size_t)n, sizeof(double));
  int nsv = svm_get_nr_sv(r->model);
  int *idx = malloc(sizeof(int) * (size_t)nsv);
  svm_get_sv_indices(r->model, idx);
  for (int s = 0; s < nsv; ++s) r->alpha[idx[s] - 1] = fabs(r->model->sv_coef[0][s]);
  free(idx);
}

static void ref_free(ref_t *r) {
  svm_free_and_destroy_model(&r->model);
  free(r->prob.y);
  free(r->prob.x);
  free(r->nodes);
  free(r->alpha);
}

/* Our decision value for one query point (exact double kernel, as LIBSVM). */
static double our_decision(const float *x, const signed char *y, const double *alpha, int n,
                           int d, double gamma, double rho, const float *q) {
  double f = -rho;
  for (int i = 0; i < n; ++i) {
    if (alpha[i] == 0.0) continue;
    double dist = 0.0;
    for (int k = 0; k < d; ++k) {
      double t = (double)x[(size_t)i * d + k] - q[k];
      dist += t * t;
    }
    f += alpha[i] * y[i] * exp(-gamma * dist);
  }
  return f;
}

static void run_case(int n, int d, double sep, double C, double gamma) {
  float *x = malloc(sizeof(float) * (size_t)n * d);
  signed char *y = malloc((size_t)n);
  make_blobs(n, d, sep, x, y);
  const int nq = 500;
  float *q = malloc(sizeof(float) * (size_t)nq * d);
  signed char *yq = malloc((size_t)nq);
  make_blobs(nq, d, sep, q, yq);

  float *sq = malloc(sizeof(float) * n);
  float *dist = malloc(sizeof(float) * (size_t)n * n);
  int *idx = malloc(sizeof(int) * n);
  for (int i = 0; i < n; ++i) idx[i] = i;
  rbf_sqnorms(x, n, d, sq);
  rbf_sqdist_self(x, sq, n, d, dist);
  kcache_t full;
  CHECK(kcache_init_full(&full, dist, (size_t)n, idx, n, gamma) == 0, "kcache_init_full");
  double *alpha = malloc(sizeof(double) * n);
  smo_result_t res;

  for (int strict = 0; strict <= 1; ++strict) {
    double eps = strict ? 1e-7 : 1e-3;
    smo_params_t p = SMO_PARAMS_INIT;
    p.C = C;
    p.eps = eps;
    CHECK(smo_solve(&full, y, &p, alpha, &res) == 0, "smo_solve");
    CHECK(res.converged, "n=%d C=%g gamma=%g: not converged", n, C, gamma);
    ref_t ref;
    ref_train(&ref, x, y, n, d, C, gamma, eps);
    double rel = fabs(res.obj - ref.obj) / fmax(1.0, fabs(ref.obj));
    double tol = 1e-5;
    printf("n=%d d=%d C=%g gamma=%g eps=%g: obj %.8f libsvm %.8f (rel %.2e) rho %.6f libsvm "
           "%.6f nSV %d libsvm %d iter %ld\n",
           n, d, C, gamma, eps, res.obj, ref.obj, rel, res.rho, ref.rho, res.n_sv,
           svm_get_nr_sv(ref.model), res.iter);
    CHECK(rel <= tol, "objective differs: %.10g vs libsvm %.10g (rel %.3g > %.1g)", res.obj,
          ref.obj, rel, tol);

    double kkt_obj;
    double viol = smo_kkt_violation(&full, y, alpha, C, &kkt_obj);
    CHECK(viol <= eps * 1.001 + 1e-9, "KKT violation %.3g > eps %.3g", viol, eps);
    CHECK(fabs(kkt_obj - res.obj) <= 1e-6 * fmax(1.0, fabs(res.obj)),
          "objective from scratch %.10g vs solver %.10g", kkt_obj, res.obj);

    if (strict) {
      int sv_diff = 0;
      for (int i = 0; i < n; ++i)
        sv_diff += (alpha[i] > 1e-6 * C) != (ref.alpha[i] > 1e-6 * C);
      CHECK(sv_diff == 0, "%d points differ in being a support vector", sv_diff);
      CHECK(fabs(res.rho - ref.rho) <= 1e-4 * fmax(1.0, fabs(ref.rho)), "rho %.8f vs %.8f",
            res.rho, ref.rho);
    } else {
      int agree = 0;
      struct svm_node *qrow[1];
      struct svm_node *qn = NULL;
      for (int t = 0; t < nq; ++t) {
        qn = to_nodes(q + (size_t)t * d, 1, d, qrow);
        double lib = svm_predict(ref.model, qrow[0]);
        free(qn);
        double ours = our_decision(x, y, alpha, n, d, gamma, res.rho, q + (size_t)t * d);
        agree += (ours > 0 ? 1.0 : -1.0) == lib;
      }
      CHECK(agree >= 0.99 * nq, "predictions agree on %d of %d", agree, nq);
      printf("  held-out predictions agree on %d of %d\n", agree, nq);

      /* LRU cache with room for 5 rows, with and without shrinking. */
      for (int shrink = 0; shrink <= 1; ++shrink) {
        kcache_t lru;
        CHECK(kcache_init_lru(&lru, x, sq, n, d, gamma, (size_t)5 * n * sizeof(float)) == 0,
              "kcache_init_lru");
        smo_result_t r2;
        double *a2 = malloc(sizeof(double) * n);
        p.shrinking = shrink;
        CHECK(smo_solve(&lru, y, &p, a2, &r2) == 0, "smo_solve lru");
        double rel2 = fabs(r2.obj - res.obj) / fmax(1.0, fabs(res.obj));
        CHECK(rel2 <= 1e-4, "lru (shrinking %d) objective %.10g vs full %.10g", shrink, r2.obj,
              res.obj);
        CHECK(lru.capacity == 5 && lru.rows_computed > 5, "lru did not evict (%ld rows)",
              lru.rows_computed);
        free(a2);
        kcache_free(&lru);
      }
    }
    ref_free(&ref);
  }
  kcache_free(&full);
  free(x); free(y); free(q); free(yq); free(sq); free(dist); free(idx); free(alpha);
}

/* 4 classes around the corners of a square in the first two of d dimensions. */
static void make_classes(int n, int d, float *x, uint8_t *y) {
  for (int i = 0; i < n; ++i) {
    y[i] = (uint8_t)(i % 4); /* classes appear in order 0..3, as LIBSVM numbers them */
    for (int k = 0; k < d; ++k) {
      double centre = k == 0 ? (y[i] & 1) * 2.0 : k == 1 ? (y[i] >> 1) * 2.0 : 0.0;
      x[(size_t)i * d + k] = (float)(centre + rng_normal());
    }
  }
}

static void run_ovo_case(double C, double gamma) {
  const int n = 400, nq = 500, d = 4;
  svm_set_t tr = {n, d, 4, malloc(sizeof(float) * n * d), malloc(sizeof(float) * n), malloc(n)};
  svm_set_t te = {nq, d, 4, malloc(sizeof(float) * nq * d), malloc(sizeof(float) * nq), malloc(nq)};
  make_classes(n, d, tr.x, tr.y);
  make_classes(nq, d, te.x, te.y);
  rbf_sqnorms(tr.x, n, d, tr.sq);
  rbf_sqnorms(te.x, nq, d, te.sq);
  kcache_t kc;
  CHECK(kcache_init_lru(&kc, tr.x, tr.sq, n, d, gamma, (size_t)n * n * sizeof(float)) == 0, "lru");
  smo_params_t p = SMO_PARAMS_INIT;
  p.C = C;
  ovr_model_t m;
  CHECK(ovo_fit(&kc, tr.y, 4, 0, 1, &p, (size_t)1 << 20, &m) == 0, "ovo_fit");
  uint8_t *pred = malloc(nq);
  kblock_gemm_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.q = &te;
  ctx.t = &tr;
  ctx.gamma = gamma;
  CHECK(ovr_predict(&m, nq, kblock_gemm, &ctx, pred, NULL) == 0, "ovr_predict");

  struct svm_problem prob = {n, malloc(sizeof(double) * n), malloc(sizeof(struct svm_node *) * n)};
  for (int i = 0; i < n; ++i) prob.y[i] = tr.y[i];
  struct svm_node *nodes = to_nodes(tr.x, n, d, prob.x);
  struct svm_parameter sp;
  memset(&sp, 0, sizeof sp);
  sp.svm_type = C_SVC;
  sp.kernel_type = RBF;
  sp.gamma = gamma;
  sp.C = C;
  sp.eps = 1e-3;
  sp.cache_size = 64;
  sp.shrinking = 1;
  struct svm_model *lib = svm_train(&prob, &sp);
  int agree = 0, correct = 0;
  for (int t = 0; t < nq; ++t) {
    struct svm_node *qrow[1];
    struct svm_node *qn = to_nodes(te.x + (size_t)t * d, 1, d, qrow);
    agree += (int)svm_predict(lib, qrow[0]) == pred[t];
    correct += pred[t] == te.y[t];
    free(qn);
  }
  printf("one-vs-one, 4 classes, C=%g gamma=%g: predictions agree with LIBSVM on %d of %d "
         "(accuracy %d of %d)\n", C, gamma, agree, nq, correct, nq);
  CHECK(agree >= 0.99 * nq, "one-vs-one predictions agree on %d of %d", agree, nq);
  svm_free_and_destroy_model(&lib);
  free(prob.y); free(prob.x); free(nodes); free(pred);
  kblock_gemm_free(&ctx);
  ovr_free(&m);
  kcache_free(&kc);
  svm_data_free(&tr);
  svm_data_free(&te);
}

int main(void) {
  run_case(200, 5, 1.0, 1.0, 0.2);
  run_case(300, 10, 0.6, 10.0, 0.05);
  run_case(250, 8, 0.8, 0.1, 0.5);
  run_case(150, 3, 2.0, 1000.0, 1.0);
  run_ovo_case(1.0, 0.5);
  run_ovo_case(100.0, 0.1);
  if (check_failures) {
    fprintf(stderr, "%d check(s) failed\n", check_failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
