/* rand_real.h: the kernels tests' deterministic random real_t data (an LCG, so every
 * run and machine sees the same inputs). Define RAND_REAL_SEED before including it to
 * pick the sequence; include it after a header that defines real_t (kernels/real.h). */
#ifndef HV_TESTS_RAND_REAL_H
#define HV_TESTS_RAND_REAL_H
#include <stdlib.h>

#ifndef RAND_REAL_SEED
#define RAND_REAL_SEED 1u
#endif

static unsigned seed = RAND_REAL_SEED;

/* A value in [offset - 1, offset + 1). */
static real_t frand(double offset) {
  seed = seed * 1103515245u + 12345u;
  return (real_t)(offset + ((seed >> 8) & 0xffff) / 32768.0 - 1.0);
}

/* n such values, malloc'd (NULL when out of memory). */
static real_t *rand_array(size_t n, double offset) {
  real_t *p = malloc(n * sizeof *p);
  for (size_t i = 0; p && i < n; i++) p[i] = frand(offset);
  return p;
}

#endif
