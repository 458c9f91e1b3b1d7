/* check.h: the assertions of the C tests (tests/): each failed check prints one line
 * with its file and line to stderr and is counted; main returns CHECK_RETURN() or
 * decides from check_failures (the MPI tests reduce it across ranks first).
 *  CHECK(cond)              "file:line: CHECK failed: cond"
 *  CHECK(cond, fmt, ...)    "FAIL file:line: <printf(fmt, ...)>"
 *  CHECK_EQ_INT, CHECK_NEAR, CHECK_CONTAINS: the values as well; CHECK_RETURN.
 * check_count counts the checks made (mpi_soak reports it). */
#ifndef HV_TESTS_CHECK_H
#define HV_TESTS_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int check_failures __attribute__((unused));
static int check_count __attribute__((unused));

/* One failed check as one write: stderr is unbuffered, and in pieces the lines of
 * several ranks interleave in mpirun's output (a test counting them then miscounts). */
__attribute__((format(printf, 3, 4), unused)) static void check_fail_line_(
    const char *file, int line, const char *fmt, ...) {
  char text[2048];
  int used = snprintf(text, sizeof text, "FAIL %s:%d: ", file, line);
  if (used < 0 || (size_t)used >= sizeof text) used = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text + used, sizeof text - (size_t)used, fmt, ap);
  va_end(ap);
  size_t len = strlen(text);
  if (len == sizeof text - 1) len--; /* truncated: keep room for the newline */
  text[len] = '\n';
  fwrite(text, 1, len + 1, stderr);
}

/* CHECK with one argument is CHECK_BARE_, with 2 to 16 CHECK_MSG_. */
#define CHECK(...)                                                                  \
  CHECK_PICK_(__VA_ARGS__, CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, CHECK_MSG_,          \
              CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, \
              CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, CHECK_MSG_, CHECK_BARE_, \
              unused)(__VA_ARGS__)
#define CHECK_PICK_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, \
                    name, ...)                                                       \
  name

#define CHECK_BARE_(cond)                                                           \
  do {                                                                              \
    check_count++;                                                                  \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
      check_failures++;                                                             \
    }                                                                               \
  } while (0)

#define CHECK_MSG_(cond, ...)                                                       \
  do {                                                                              \
    check_count++;                                                                  \
    if (!(cond)) {                                                                  \
      check_fail_line_(__FILE__, __LINE__, __VA_ARGS__);                            \
      check_failures++;                                                             \
    }                                                                               \
  } while (0)

/* For tests whose ranks are threads: the counters are the caller's atomics (it
 * includes <stdatomic.h>); the failed check's line is one write, as CHECK's. */
#define CHECK_ATOMIC(checks, failures, cond, ...)                                     \
  do {                                                                              \
    atomic_fetch_add(&(checks), 1);                                                 \
    if (!(cond)) {                                                                  \
      atomic_fetch_add(&(failures), 1);                                             \
      check_fail_line_(__FILE__, __LINE__, __VA_ARGS__);                            \
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
