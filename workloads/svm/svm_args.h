/* svm_args.h: command line of mnist_svm. Every value is checked; a bad one gives a
 * message naming the flag and the value. */
#ifndef HV_SVM_ARGS_H
#define HV_SVM_ARGS_H

#include <stddef.h>
#include <stdint.h>

typedef struct svm_args {
  const char *data_dir;   /* NULL: the dataset's default */
  const char *dataset;    /* "mnist" or "fashion-mnist" */
  const char *results;
  const char *device;     /* "cpu" or "cuda" */
  const char *multiclass; /* "ovr" or "ovo" */
  int folds;
  double log_c_min, log_c_max, log_gamma_min, log_gamma_max;
  int train_size, test_size; /* 0: all */
  uint64_t seed;
  double eps;
  double mem_mb;
  int refit, plots, verbose, help;
  int resume;             /* --resume: keep the units of the results folder's journal */
  int n_tuning;
} svm_args_t;

/* Returns 0, or -1 with a message in err. */
int svm_args_parse(int argc, char **argv, svm_args_t *a, char *err, size_t errlen);

/* The usage text. */
const char *svm_args_usage(void);

#endif /* HV_SVM_ARGS_H */
