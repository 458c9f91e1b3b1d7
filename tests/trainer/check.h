/* check.h: minimal assertions for the trainer and kernel tests: print the file, line,
 * expression and values, count failures, and let main return the count. */
#ifndef HV_TESTS_CHECK_H
#define HV_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
      check_failures++;                                                             \
    }                                                                               \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                          \
  do {                                                                              \
    long long va_ = (long long)(a), vb_ = (long long)(b);                           \
    if (va_ != vb_) {                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", __FILE__,   \
              __LINE__, #a, #b, va_, vb_);                                          \
      check_failures++;                                                             \
    }                                                                               \
  } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol)                                                       \
  do {                                                                              \
    double va_ = (double)(a), vb_ = (double)(b);                                    \
    if (!(fabs(va_ - vb_) <= (tol) * fmax(1.0, fabs(vb_)))) {                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s ~ %s (%.17g vs %.17g, tol %g)\n",    \
              __FILE__, __LINE__, #a, #b, va_, vb_, (double)(tol));                 \
      check_failures++;                                                             \
    }                                                                               \
  } while (0)

#define CHECK_CONTAINS(text, sub)                                                   \
  do {                                                                              \
    if (!strstr((text), (sub))) {                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: \"%s\" does not contain \"%s\"\n",      \
              __FILE__, __LINE__, (text), (sub));                                   \
      check_failures++;                                                             \
    }                                                                               \
  } while (0)

#define CHECK_RETURN()                                                              \
  do {                                                                              \
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);    \
    return check_failures ? 1 : 0;                                                  \
  } while (0)

#endif /* HV_TESTS_CHECK_H */
