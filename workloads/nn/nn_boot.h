/* nn_boot.h: one bootstrap of the study, start to end: draw the sample within folds,
 * score each random-search setting by k-fold CV on the sample, refit the best on the
 * whole sample, and predict the test set, the plotted digits and the
 * out-of-distribution image. Everything is seeded from the bootstrap's own seed, so
 * the result does not depend on the rank that computes it. */
#ifndef HV_NN_BOOT_H
#define HV_NN_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "nn_plan.h"
#include "nn_train.h"

typedef struct nn_boot_cfg {
  const nn_images_t *train, *test;
  const int *fold_of;         /* (train->n) */
  int folds, n_tuning;
  nn_space_t space;
  uint64_t seed;              /* the run's seed */
  nn_train_opts_t train_opts;
  const float *extra_x;       /* (n_extra, 1, 28, 28): plotted digits, then the OOD image */
  int n_extra;
  int verbose;
} nn_boot_cfg_t;

/* The numbers one bootstrap contributes to the outputs. Plain arrays in doubles and
 * floats so that ranks can sum them into the whole run's tables (each bootstrap is
 * computed by exactly one rank; the others contribute zeros). */
typedef struct nn_boot_out {
  nn_hparams_t *settings;  /* (n_tuning) drawn settings */
  double *cv_error;        /* (n_tuning) mean validation error, fraction */
  int best;                /* index of the chosen setting */
  int epochs;              /* epochs of the refit */
  double train_error;      /* refit model on its bootstrap sample, fraction */
  double test_error;       /* refit model on the test set, fraction */
  float *test_prob;        /* (test->n, 10) */
  float *extra_prob;       /* (n_extra, 10) */
  double seconds;
} nn_boot_out_t;

/* Runs bootstrap b. out's arrays are the caller's (sizes above). 0, or -1 with a
 * message. */
int nn_boot_run(const nn_boot_cfg_t *c, int b, nn_boot_out_t *out, char *err, size_t errlen);

#endif /* HV_NN_BOOT_H */
