/* gpu_test_util.h: what the trainer's GPU tests compare with: the largest difference
 * relative to the largest reference value, and a host copy of a device array. */
#ifndef HV_TESTS_GPU_TEST_UTIL_H
#define HV_TESTS_GPU_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "model_gpu.h"

/* max |a - b| / max |b| */
static inline double maxrel(const real_t *a, const real_t *b, size_t n) {
  double d = 0, top = 1e-30;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i])), top = fmax(top, fabs(b[i]));
  return d / top;
}

/* A malloc'd host copy of n device values (the caller frees it). */
static inline real_t *host_copy(const real_t *dev, size_t n) {
  real_t *h = malloc(n * sizeof *h + sizeof *h);
  CHECK(h && model_gpu_download(h, dev, n * sizeof *h) == 0);
  return h;
}

#endif
