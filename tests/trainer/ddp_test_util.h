/* ddp_test_util.h: what the DDP equivalence tests (test_ddp, test_ddp_join,
 * test_sync_bn) share: hv_init with this rank and size, the first n MNIST training
 * images normalised, their SGD (momentum 0.9, weight decay 1e-3, Nesterov), and the
 * largest parameter difference relative to the reference's largest parameter. */
#ifndef HV_TESTS_DDP_TEST_UTIL_H
#define HV_TESTS_DDP_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "batch.h"
#include "data_cifar.h"
#include "data_mnist.h"
#include "hv.h"
#include "model.h"
#include "optim.h"

/* 0, or 2 (the tests' exit code for a set-up failure) with a line on stderr. */
static inline int ddp_test_init(int *argc, char ***argv, hv_comm_t **comm, int *rank, int *size) {
  if (hv_init(argc, argv, comm) != HV_SUCCESS) {
    fprintf(stderr, "hv_init failed: %s\n", hv_comm_last_error(NULL));
    return 2;
  }
  hv_comm_rank(*comm, rank);
  hv_comm_size(*comm, size);
  return 0;
}

/* The first n MNIST training images (n x 784, normalised) and labels, malloc'd. */
static inline int ddp_test_mnist(int n, real_t **xs, uint8_t **ys) {
  dataset_t ds;
  char err[512];
  if (dataset_load_mnist(dataset_default_mnist_dir(), "train", &ds, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  *xs = malloc(sizeof(real_t) * (size_t)n * 784);
  *ys = malloc((size_t)n);
  int *idx = malloc(sizeof(int) * (size_t)n);
  if (!*xs || !*ys || !idx) {
    fprintf(stderr, "out of memory for %d images\n", n);
    return 2;
  }
  for (int i = 0; i < n; i++) idx[i] = i;
  const batch_transform_t t = {.mean = mnist_mean, .std = mnist_std};
  batch_fill(&ds, idx, n, &t, NULL, *xs, *ys);
  free(idx);
  dataset_free(&ds);
  return 0;
}

static inline void ddp_test_sgd(sgd_t *o, model_t *m) {
  char err[128];
  sgd_init(o, m, 0.05, 0.9, 1e-3, 1, err, sizeof err);
}

/* max |a - b| / max(1, max |b|) over the parameters. */
static inline double ddp_test_max_diff(const model_t *a, const model_t *b) {
  double d = 0, mx = 1;
  for (size_t i = 0; i < a->n_params; i++) {
    d = fmax(d, fabs((double)a->params[i] - b->params[i]));
    mx = fmax(mx, fabs((double)b->params[i]));
  }
  return d / mx;
}

#endif
