/* svm_args.c: parsing and checking of the mnist_svm command line (see svm_args.h). */
#include "svm_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

const char *svm_args_usage(void) {
  return "usage: mnist_svm [options] n_tuning\n"
         "Grid search over an n_tuning x n_tuning log-spaced (C, gamma) grid of a one-vs-rest\n"
         "RBF SVM with k-fold cross-validation, the grid split across the ranks; then a\n"
         "refit with the best pair and the test error.\n"
         "  --data-dir D          MNIST-format IDX files (default: the shipped MNIST subset,\n"
         "                        or /usr/share/datasets/fashion-mnist)\n"
         "  --dataset NAME        mnist | fashion-mnist (default mnist)\n"
         "  --results DIR         output folder (default mnist_svm_results)\n"
         "  --folds K             cross-validation folds, >= 2 (default 5)\n"
         "  --log-c-min X         log10 of the smallest C (default -3)\n"
         "  --log-c-max X         log10 of the largest C (default 6)\n"
         "  --log-gamma-min X     log10 of the smallest gamma (default -6)\n"
         "  --log-gamma-max X     log10 of the largest gamma (default -2)\n"
         "  --train-size N        use the first N training images (default all)\n"
         "  --test-size N         use the first N test images (default all)\n"
         "  --device cpu|cuda     where the kernel rows' SGEMMs run (default cpu; cuda:\n"
         "                        cuBLAS on the rank's GPU, the solver stays on the CPU)\n"
         "  --multiclass ovr|ovo  one-vs-rest (default) or one-vs-one\n"
         "  --seed S              fold shuffling seed (default 1)\n"
         "  --eps E               SMO stopping tolerance (default 1e-3, as LIBSVM)\n"
         "  --mem-mb M            memory for kernel matrices per rank (default 2048)\n"
         "  --no-refit            skip the refit and test error\n"
         "  --no-plots            skip the gnuplot figures\n"
         "  --verbose             one line per fit\n"
         "  --resume              keep the grid units that the journal in the results folder\n"
         "                        holds (a run killed part-way; hvrun --restarts resumes by\n"
         "                        itself), compute only the rest\n";
}

int svm_args_parse(int argc, char **argv, svm_args_t *a, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  a->dataset = "mnist";
  a->results = "mnist_svm_results";
  a->device = "cpu";
  a->multiclass = "ovr";
  a->folds = 5;
  a->log_c_min = -3;
  a->log_c_max = 6;
  a->log_gamma_min = -6;
  a->log_gamma_max = -2;
  a->seed = 1;
  a->eps = 1e-3;
  a->mem_mb = 2048;
  a->refit = 1;
  a->plots = 1;
  a->n_tuning = -1;
  for (int i = 1; i < argc; ++i) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long long n = 0;
    int rc = 0, takes = 1;
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
      a->help = 1;
      return 0;
    } else if (!strcmp(f, "--no-refit")) {
      a->refit = 0, takes = 0;
    } else if (!strcmp(f, "--no-plots")) {
      a->plots = 0, takes = 0;
    } else if (!strcmp(f, "--verbose")) {
      a->verbose = 1, takes = 0;
    } else if (!strcmp(f, "--resume")) {
      a->resume = 1, takes = 0;
    } else if (!strcmp(f, "--data-dir")) {
      a->data_dir = v;
    } else if (!strcmp(f, "--dataset")) {
      a->dataset = v;
      if (v && strcmp(v, "mnist") && strcmp(v, "fashion-mnist")) {
        snprintf(err, errlen, "--dataset: '%s' is neither mnist nor fashion-mnist", v);
        return -1;
      }
    } else if (!strcmp(f, "--results")) {
      a->results = v;
    } else if (!strcmp(f, "--device")) {
      a->device = v;
      if (v && strcmp(v, "cpu") && strcmp(v, "cuda")) {
        snprintf(err, errlen, "--device: '%s' is neither cpu nor cuda", v);
        return -1;
      }
    } else if (!strcmp(f, "--multiclass")) {
      a->multiclass = v;
      if (v && strcmp(v, "ovr") && strcmp(v, "ovo")) {
        snprintf(err, errlen, "--multiclass: '%s' is neither ovr nor ovo", v);
        return -1;
      }
    } else if (!strcmp(f, "--folds")) {
      rc = parse_int(f, v, 2, 1000, &n, err, errlen);
      a->folds = (int)n;
    } else if (!strcmp(f, "--log-c-min")) {
      rc = parse_double(f, v, -30, 30, &a->log_c_min, err, errlen);
    } else if (!strcmp(f, "--log-c-max")) {
      rc = parse_double(f, v, -30, 30, &a->log_c_max, err, errlen);
    } else if (!strcmp(f, "--log-gamma-min")) {
      rc = parse_double(f, v, -30, 30, &a->log_gamma_min, err, errlen);
    } else if (!strcmp(f, "--log-gamma-max")) {
      rc = parse_double(f, v, -30, 30, &a->log_gamma_max, err, errlen);
    } else if (!strcmp(f, "--train-size")) {
      rc = parse_int(f, v, 1, 1 << 30, &n, err, errlen);
      a->train_size = (int)n;
    } else if (!strcmp(f, "--test-size")) {
      rc = parse_int(f, v, 1, 1 << 30, &n, err, errlen);
      a->test_size = (int)n;
    } else if (!strcmp(f, "--seed")) {
      rc = parse_int(f, v, 0, 2147483647L, &n, err, errlen);
      a->seed = (uint64_t)n;
    } else if (!strcmp(f, "--eps")) {
      rc = parse_double(f, v, 1e-12, 1.0, &a->eps, err, errlen);
    } else if (!strcmp(f, "--mem-mb")) {
      rc = parse_double(f, v, 0.01, 1e9, &a->mem_mb, err, errlen);
    } else if (f[0] == '-' && f[1] != '\0' && !(f[1] >= '0' && f[1] <= '9')) {
      snprintf(err, errlen, "unknown option '%s' (see --help)", f);
      return -1;
    } else {
      takes = 0;
      if (a->n_tuning >= 0) {
        snprintf(err, errlen, "n_tuning given twice ('%s'); see --help", f);
        return -1;
      }
      /* An n_tuning x n_tuning grid: 1000 x 1000 points is already far beyond use. */
      rc = parse_int("n_tuning", f, 1, 1000, &n, err, errlen);
      a->n_tuning = (int)n;
    }
    if (rc) return -1;
    if (takes) {
      if (!v) {
        snprintf(err, errlen, "%s: missing value", f);
        return -1;
      }
      ++i;
    }
  }
  if (a->n_tuning < 0) {
    snprintf(err, errlen, "missing n_tuning (the grid is n_tuning x n_tuning); see --help");
    return -1;
  }
  if (a->log_c_min > a->log_c_max) {
    snprintf(err, errlen, "--log-c-min %g is larger than --log-c-max %g", a->log_c_min,
             a->log_c_max);
    return -1;
  }
  if (a->log_gamma_min > a->log_gamma_max) {
    snprintf(err, errlen, "--log-gamma-min %g is larger than --log-gamma-max %g",
             a->log_gamma_min, a->log_gamma_max);
    return -1;
  }
  return 0;
}
