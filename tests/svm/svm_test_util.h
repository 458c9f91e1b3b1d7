/* svm_test_util.h: what the mnist_svm unit tests share: a failure counter with a
 * CHECK macro that prints file:line, and a seeded uniform generator (LCG) so the
 * random problems are the same on every run. */
#ifndef HV_SVM_TEST_UTIL_H
#define HV_SVM_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>

static int failures = 0;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
      failures++;                                          \
    }                                                      \
  } while (0)

/* Uniform in (0, 1) from the 64-bit LCG state *s. */
static inline double test_uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((*s >> 11) + 0.5) / 9007199254740992.0;
}

#endif
