/* nn_report.h: mnist_nn's outputs, written by rank 0 from the gathered results:
 * models.csv (each bootstrap's chosen parameters, CV, train and test error),
 * search.csv (every setting tried), timing.csv (who ran what, how long),
 * predictions.csv (the ensemble's majority vote per test image), summary.json,
 * per-image certainty data and gnuplot box plots, and report.md linking them. */
#ifndef HV_NN_REPORT_H
#define HV_NN_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "nn_plan.h"

typedef struct nn_results {
  int n_bootstrap, n_tuning, folds, nranks;
  int n_train, n_test;
  const char *dataset, *data_dir, *ood_name;
  uint64_t seed;
  int max_epochs, batch;
  double tolerance;
  nn_space_t space;
  /* per bootstrap b */
  const nn_hparams_t *settings;  /* (n_bootstrap, n_tuning) */
  const double *cv_error;        /* (n_bootstrap, n_tuning) */
  const int *best, *epochs, *rank_of;  /* (n_bootstrap) */
  const double *train_error, *test_error, *seconds;  /* (n_bootstrap) */
  const float *test_prob;        /* (n_bootstrap, n_test, 10) */
  const uint8_t *test_labels;    /* (n_test) */
  /* the plotted images: the first n_plot test digits, then the OOD image */
  int n_plot;
  const float *extra_prob;       /* (n_bootstrap, n_plot + 1, 10) */
  const uint8_t *extra_pixels;   /* (n_plot + 1, 28*28) raw bytes */
  double total_seconds;
} nn_results_t;

/* Ensemble vote of test image i: the class most models predict; ties go to the
 * class with the larger summed probability, then the lower class. *votes: its votes. */
int nn_ensemble_vote(const nn_results_t *r, const float *prob_all, int n_items, int i,
                     int *votes);

/* Writes every output into dir (which exists); draws the figures when plots and
 * gnuplot is on PATH. Returns 0, 1 when figures were skipped for lack of gnuplot, or
 * -1 with a message. *ensemble_error: the majority vote's test error (fraction). */
int nn_report_write(const char *dir, const nn_results_t *r, int plots, double *ensemble_error,
                    char *err, size_t errlen);

/* Creates dir and its parents. 0, or -1 with a message. */
int nn_report_make_dir(const char *dir, char *err, size_t errlen);

#endif /* HV_NN_REPORT_H */
