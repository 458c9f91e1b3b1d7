/* compare_ckpt.c: compares the parameters of two cifar_ddp checkpoints of the same
 * WideResNet, for the "1 rank == 4 ranks" test. Prints the largest difference
 * relative to max(1, max |p|) - the bound of tests/trainer/test_ddp.c - and exits 0
 * when it is <= TOL, 1 when above (--expect-differ inverts that: the negative control
 * that shows the comparison can fail), 2 on bad input.
 * Usage: compare_ckpt DEPTH WIDEN CLASSES CHANNELS A.hvckpt B.hvckpt TOL [--expect-differ] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "models.h"

static model_t *load(const char *path, int depth, int widen, int classes, int channels) {
  char err[512];
  model_t *m = model_wrn_create(depth, widen, classes, 0, channels, 32, 32, 1, 1, err, sizeof err);
  checkpoint_meta_t meta;
  if (!m || checkpoint_load(path, m, NULL, &meta, err, sizeof err)) {
    fprintf(stderr, "compare_ckpt: %s\n", err);
    exit(2);
  }
  return m;
}

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: compare_ckpt DEPTH WIDEN CLASSES CHANNELS A B TOL [--expect-differ]\n");
    return 2;
  }
  const int depth = atoi(argv[1]), widen = atoi(argv[2]), classes = atoi(argv[3]),
            channels = atoi(argv[4]);
  const double tol = atof(argv[7]);
  const int expect_differ = argc > 8 && !strcmp(argv[8], "--expect-differ");
  model_t *a = load(argv[5], depth, widen, classes, channels);
  model_t *b = load(argv[6], depth, widen, classes, channels);
  double d = 0, mx = 1;
  for (size_t i = 0; i < a->n_params; i++) {
    d = fmax(d, fabs((double)a->params[i] - (double)b->params[i]));
    mx = fmax(mx, fabs((double)b->params[i]));
  }
  const double rel = d / mx;
  const int within = rel <= tol;
  printf("compare_ckpt: %zu parameters, max rel diff %.3g (bound %.1e): %s\n", a->n_params, rel,
         tol, within ? "equal within the bound" : "different");
  model_free(a);
  model_free(b);
  return within == !expect_differ ? 0 : 1;
}
