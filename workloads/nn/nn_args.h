/* nn_args.h: the command line of mnist_nn. */
#ifndef HV_NN_ARGS_H
#define HV_NN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "nn_plan.h"

typedef struct nn_args {
  const char *data_dir;     /* NULL: the embedded MNIST subset (or Fashion-MNIST's dir) */
  const char *dataset;      /* "mnist" or "fashion-mnist" */
  const char *results;      /* output folder */
  const char *device;       /* "cpu" or "cuda" */
  const char *ood_image;    /* PGM file, NULL: the shipped letter */
  uint64_t seed;
  int max_epochs, batch, folds;
  double tolerance;
  int train_size, test_size;  /* 0: all images */
  int plot_first;           /* test digits drawn as box plots */
  int plots;                /* 0: no gnuplot */
  int write_plan;           /* write each bootstrap's sample (for the PyTorch port) */
  double poll_ms;           /* tick interval of the scheduler */
  int verbose, help;
  int resume;               /* --resume: keep the bootstraps of the results folder's journal */
  nn_space_t space;
  int n_bootstrap, n_tuning;
} nn_args_t;

/* 0, or -1 with one line in err naming the flag and the value at fault. */
int nn_args_parse(int argc, char **argv, nn_args_t *a, char *err, size_t errlen);
const char *nn_args_usage(void);

#endif /* HV_NN_ARGS_H */
