/* report.h: the outputs of mnist_svm, written by rank 0 into the results folder:
 *   cv_errors.csv  one row per (gamma, C, fold): validation errors and percent
 *   grid.csv       one row per (gamma, C): mean / std / min / max over folds
 *   results.json   everything above plus timings, ranks, best pair and test error
 *   folds.csv      the fold of every training image (lets other tools use the same
 *                  folds: tools/ scripts comparing against scikit-learn do)
 *   boxplot_gamma_<i>.png  fold errors against log10(C), one figure per gamma
 *   heatmap.png    mean validation error over the grid
 * The CSV files hold no timing, so runs on different rank counts compare byte for
 * byte. Figures are drawn by gnuplot; its scripts (.gp) are kept next to them. */
#ifndef HV_SVM_REPORT_H
#define HV_SVM_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "grid.h"

typedef struct svm_results {
  const char *dataset;
  const char *multiclass;  /* "one-vs-rest" or "one-vs-one" */
  int n_train, n_test, folds, ncls;
  const grid_t *g;
  const int32_t *errors;   /* (n_gamma * n_c * folds), unit u = p * folds + fold */
  const int *fold_size;    /* (folds) validation points per fold */
  const int *fold_of;      /* (n_train) */
  int nranks;
  const double *rank_seconds; /* (nranks) wall time of each rank's share */
  const double *rank_cpu_seconds; /* (nranks) CPU time of each rank's share */
  const double *unit_cpu_seconds; /* (units) CPU time of each unit's fits, or NULL */
  const double *rank_load;    /* (nranks) expected cost of each rank's share */
  double cv_seconds;       /* wall time of the cross-validation (slowest rank) */
  int best_p;              /* grid point with the lowest mean validation error */
  int refit_done;
  int test_errors;
  double refit_seconds;
  double eps;
  uint64_t seed;
} svm_results_t;

/* Mean validation error in percent of grid point p. */
double report_mean_error(const svm_results_t *r, int p);

/* The grid point with the lowest mean error; ties go to the smaller gamma, then the
 * smaller C (the simpler model). */
int report_best_point(const svm_results_t *r);

/* Creates dir and its parents; checks it is a folder. 0, or -1 with err. */
int report_make_dir(const char *dir, char *err, size_t errlen);

/* Creates dir (and parents) and writes the CSV and JSON files. 0, or -1 with err. */
int report_write(const char *dir, const svm_results_t *r, char *err, size_t errlen);

/* Writes the gnuplot scripts and data and runs gnuplot on them. Returns 0, 1 when
 * gnuplot is not installed (scripts are still written), -1 with err on failure. */
int report_plot(const char *dir, const svm_results_t *r, char *err, size_t errlen);

#endif /* HV_SVM_REPORT_H */
