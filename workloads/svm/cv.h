/* cv.h: k-fold cross-validation of the one-vs-rest RBF SVM over a rank's share of
 * the grid, and the final refit + test.
 *
 * A rank's units are grouped by (gamma, fold); each group builds its kernel once
 * (kcache) and then fits every C of the group on it, all classes each time. When the
 * whole training set's squared-distance matrix fits the memory budget it is computed
 * once (one SSYRK) and every (gamma, fold) kernel is an exp of a gather from it;
 * otherwise each fold's rows are computed on demand into an LRU cache. */
#ifndef HV_SVM_CV_H
#define HV_SVM_CV_H

#include <stddef.h>
#include <stdint.h>

#include "grid.h"
#include "ovr.h"
#include "svm_data.h"

typedef struct cv_opts {
  double eps;          /* SMO tolerance */
  int shrinking;
  size_t mem_bytes;    /* budget for kernel matrices / caches */
  int verbose;         /* 1: one line per fit on stderr */
  int rank;            /* for messages */
  int ovo;             /* 1: one-vs-one, else one-vs-rest */
  /* Called after each unit this rank finishes (the journal; may be NULL). */
  void (*unit_done)(void *ctx, int unit, int32_t errors, double cpu_s);
  void *unit_ctx;
} cv_opts_t;

typedef struct cv_stats {
  double kernel_s, solve_s, predict_s, total_s;
  long smo_iter, fits;
  int full_mode;       /* 1 when the distance matrix was kept */
  int units;
} cv_stats_t;

/* fold_of (n): shuffled k-fold assignment, fold sizes differ by at most one. */
int cv_assign_folds(int n, int folds, uint64_t seed, int *fold_of);

/* Runs the units u (= point * folds + fold) with owner[u] == rank; errors[u] gets the
 * misclassified validation points of each and unit_cpu[u] (when not NULL) the CPU
 * seconds of its fits and predictions, kernel excluded (others untouched). Returns 0,
 * or -1 with a message in err. */
int cv_run(const svm_set_t *tr, const int *fold_of, int folds, const grid_t *g,
           const int *owner, const cv_opts_t *o, int32_t *errors, double *unit_cpu,
           cv_stats_t *st, char *err, size_t errlen);

/* Refit on all of tr with (C, gamma): the one-vs-rest classes first, first + stride,
 * ... (ranks split the classes; their models add up). Returns 0, or -1 with err. */
int cv_refit(const svm_set_t *tr, double C, double gamma, const cv_opts_t *o, int first,
             int stride, ovr_model_t *m, char *err, size_t errlen);

/* Misclassified points of te under model m (fitted on tr). Returns 0, or -1 out of
 * memory. */
int cv_test_errors(const ovr_model_t *m, const svm_set_t *tr, const svm_set_t *te,
                   double gamma, int *test_errors);

#endif /* HV_SVM_CV_H */
