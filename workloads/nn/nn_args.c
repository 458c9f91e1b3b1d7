/* nn_args.c: parsing and checking mnist_nn's flags (see nn_args.h). Every error
 * names the flag and the value, so a bad command line is fixed from one line. */
#include "nn_args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

const char *nn_args_usage(void) {
  return "usage: mnist_nn [options] n_bootstrap n_tuning\n"
         "Bagging + random search of a small CNN on MNIST, bootstraps spread over hv ranks.\n"
         "  --data-dir D          MNIST-format IDX files (default: the shipped 8k/2k subset)\n"
         "  --dataset mnist|fashion-mnist\n"
         "  --results DIR         outputs (default nn-results)\n"
         "  --seed S              one seed for everything (default 1)\n"
         "  --max-epochs N        (default 20)   --tolerance T  early stop (default 0.8)\n"
         "  --batch N             (default 10)   --folds K      CV folds (default 5)\n"
         "  --device cpu|cuda     (cpu only in this build)\n"
         "  --train-size N --test-size N   use the first N images (default all)\n"
         "  --conv-min/--conv-max A B      n_conv_layer in [A, B)   (default 1 1000)\n"
         "  --kernel-min/--kernel-max      kernel_size in [A, B)    (default 2 11)\n"
         "  --hidden-min/--hidden-max      n_hidden_layer in [A, B) (default 1 2000)\n"
         "  --log-lr-min/--log-lr-max      lr = 10^U(A, B)          (default -5 -1)\n"
         "  --log-momentum-min/--log-momentum-max  momentum = 10^U  (default -2 0)\n"
         "  --plot-first N        box plots for the first N test digits (default 100)\n"
         "  --ood-image F.pgm     the out-of-distribution image (default: a shipped letter)\n"
         "  --no-plots            skip gnuplot   --write-plan  write each bootstrap's sample\n"
         "  --poll-ms MS          scheduler tick interval of busy ranks (default 50)\n"
         "  --resume              keep the bootstraps that the journal in the results folder\n"
         "                        holds (a run killed part-way; hvrun --restarts resumes by\n"
         "                        itself), compute only the rest\n"
         "  --verbose, --help\n";
}

/* An int flag of at least lo; at most 1e9 so that sizes and products stay in int. */
static int int_flag(const char *flag, const char *v, int lo, int *out, char *err, size_t n) {
  long long x = 0;
  if (parse_int(flag, v, lo, 1000000000, &x, err, n)) return -1;
  *out = (int)x;
  return 0;
}

int nn_args_parse(int argc, char **argv, nn_args_t *a, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  a->dataset = "mnist";
  a->results = "nn-results";
  a->device = "cpu";
  a->seed = 1;
  a->max_epochs = 20;
  a->tolerance = 0.8;
  a->batch = 10;
  a->folds = 5;
  a->plot_first = 100;
  a->plots = 1;
  a->poll_ms = 50;
  nn_space_default(&a->space);
  nn_space_t *sp = &a->space;
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  for (int i = 1; i < argc; ++i) {
    const char *f = argv[i];
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
      a->help = 1;
      return 0;
    }
    if (!strcmp(f, "--no-plots")) { a->plots = 0; continue; }
    if (!strcmp(f, "--write-plan")) { a->write_plan = 1; continue; }
    if (!strcmp(f, "--verbose")) { a->verbose = 1; continue; }
    if (!strcmp(f, "--resume")) { a->resume = 1; continue; }
    if (strncmp(f, "--", 2) != 0) {
      if (npos == 2) {
        snprintf(err, errlen, "unexpected argument '%s' (n_bootstrap and n_tuning are given)", f);
        return -1;
      }
      pos[npos++] = f;
      continue;
    }
    if (i + 1 >= argc) {
      snprintf(err, errlen, "%s needs a value", f);
      return -1;
    }
    const char *v = argv[++i];
    int rc = 0;
    if (!strcmp(f, "--data-dir")) a->data_dir = v;
    else if (!strcmp(f, "--dataset")) {
      if (strcmp(v, "mnist") && strcmp(v, "fashion-mnist")) {
        snprintf(err, errlen, "--dataset: '%s' is not mnist or fashion-mnist", v);
        return -1;
      }
      a->dataset = v;
    } else if (!strcmp(f, "--results")) a->results = v;
    else if (!strcmp(f, "--device")) {
      if (strcmp(v, "cpu") && strcmp(v, "cuda")) {
        snprintf(err, errlen, "--device: '%s' is not cpu or cuda", v);
        return -1;
      }
      a->device = v;
    } else if (!strcmp(f, "--ood-image")) a->ood_image = v;
    else if (!strcmp(f, "--seed")) {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(v, &end, 10);
      if (!*v || *end || errno || *v == '-') {
        snprintf(err, errlen, "--seed: '%s' is not a non-negative integer", v);
        return -1;
      }
      a->seed = (uint64_t)s;
    } else if (!strcmp(f, "--max-epochs")) rc = int_flag(f, v, 1, &a->max_epochs, err, errlen);
    else if (!strcmp(f, "--batch")) rc = int_flag(f, v, 1, &a->batch, err, errlen);
    else if (!strcmp(f, "--folds")) rc = int_flag(f, v, 2, &a->folds, err, errlen);
    else if (!strcmp(f, "--train-size")) rc = int_flag(f, v, 1, &a->train_size, err, errlen);
    else if (!strcmp(f, "--test-size")) rc = int_flag(f, v, 1, &a->test_size, err, errlen);
    else if (!strcmp(f, "--plot-first")) rc = int_flag(f, v, 0, &a->plot_first, err, errlen);
    else if (!strcmp(f, "--tolerance")) {
      rc = parse_double(f, v, -HUGE_VAL, HUGE_VAL, &a->tolerance, err, errlen);
      if (!rc && a->tolerance <= 0) {
        snprintf(err, errlen, "--tolerance: %s must be positive", v);
        return -1;
      }
    } else if (!strcmp(f, "--poll-ms")) {
      rc = parse_double(f, v, -HUGE_VAL, HUGE_VAL, &a->poll_ms, err, errlen);
      if (!rc && a->poll_ms < 0) {
        snprintf(err, errlen, "--poll-ms: %s must not be negative", v);
        return -1;
      }
    } else if (!strcmp(f, "--conv-min")) rc = int_flag(f, v, -1000000000, &sp->conv_min, err, errlen);
    else if (!strcmp(f, "--conv-max")) rc = int_flag(f, v, -1000000000, &sp->conv_max, err, errlen);
    else if (!strcmp(f, "--kernel-min")) rc = int_flag(f, v, -1000000000, &sp->kernel_min, err, errlen);
    else if (!strcmp(f, "--kernel-max")) rc = int_flag(f, v, -1000000000, &sp->kernel_max, err, errlen);
    else if (!strcmp(f, "--hidden-min")) rc = int_flag(f, v, -1000000000, &sp->hidden_min, err, errlen);
    else if (!strcmp(f, "--hidden-max")) rc = int_flag(f, v, -1000000000, &sp->hidden_max, err, errlen);
    else if (!strcmp(f, "--log-lr-min")) rc = parse_double(f, v, -HUGE_VAL, HUGE_VAL, &sp->log_lr_min, err, errlen);
    else if (!strcmp(f, "--log-lr-max")) rc = parse_double(f, v, -HUGE_VAL, HUGE_VAL, &sp->log_lr_max, err, errlen);
    else if (!strcmp(f, "--log-momentum-min")) rc = parse_double(f, v, -HUGE_VAL, HUGE_VAL, &sp->log_mom_min, err, errlen);
    else if (!strcmp(f, "--log-momentum-max")) rc = parse_double(f, v, -HUGE_VAL, HUGE_VAL, &sp->log_mom_max, err, errlen);
    else {
      snprintf(err, errlen, "unknown option '%s' (see --help)", f);
      return -1;
    }
    if (rc) return -1;
  }
  if (npos < 1) {
    snprintf(err, errlen, "missing n_bootstrap and n_tuning (see --help)");
    return -1;
  }
  if (npos < 2) {
    snprintf(err, errlen, "missing n_tuning (see --help)");
    return -1;
  }
  if (int_flag("n_bootstrap", pos[0], 1, &a->n_bootstrap, err, errlen) ||
      int_flag("n_tuning", pos[1], 1, &a->n_tuning, err, errlen))
    return -1;
  return nn_space_check(sp, err, errlen);
}
