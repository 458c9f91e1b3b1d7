/* svm_test_util.h: what the mnist_svm unit tests share: check.h's CHECK macros,
 * and a seeded uniform generator (LCG) so the
 * random problems are the same on every run. */
#ifndef HV_SVM_TEST_UTIL_H
#define HV_SVM_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "check.h"

/* Uniform in (0, 1) from the 64-bit LCG state *s. */
static inline double test_uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((*s >> 11) + 0.5) / 9007199254740992.0;
}

#endif
