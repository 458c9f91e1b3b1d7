/* test_util.h: helpers shared by the collectives tests: element access by dtype as
 * float64, exact comparison with the first mismatches printed, and (check.h) the failure count
 * that the multi-rank tests reduce across ranks before deciding the exit code. */
#ifndef HV_TEST_UTIL_H
#define HV_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hv.h"

/* test_comm: the communicator whose last error explains a failed call. */
static hv_comm_t *test_comm __attribute__((unused));
#define CHECK_RC(call)                                                                        \
  do {                                                                                        \
    hv_result_t rc_ = (call);                                                                 \
    CHECK(rc_ == HV_SUCCESS, "%s -> %s (%s)", #call, hv_strerror(rc_), hv_comm_last_error(test_comm)); \
  } while (0)

static inline double elem_get(const void *buf, hv_dtype_t t, size_t i) {
  switch (t) {
    case HV_UINT8: return ((const uint8_t *)buf)[i];
    case HV_INT8: return ((const int8_t *)buf)[i];
    case HV_INT32: return ((const int32_t *)buf)[i];
    case HV_INT64: return (double)((const int64_t *)buf)[i];
    case HV_FLOAT16: return hv_half_to_float(((const uint16_t *)buf)[i]);
    case HV_BFLOAT16: return hv_bfloat16_to_float(((const uint16_t *)buf)[i]);
    case HV_FLOAT32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
  }
}

static inline void elem_set(void *buf, hv_dtype_t t, size_t i, double v) {
  switch (t) {
    case HV_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case HV_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case HV_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case HV_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case HV_FLOAT16: ((uint16_t *)buf)[i] = hv_float_to_half((float)v); break;
    case HV_BFLOAT16: ((uint16_t *)buf)[i] = hv_float_to_bfloat16((float)v); break;
    case HV_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
  }
}

/* Compares buf against expected(i) exactly; prints the first 5 mismatches. */
#define CHECK_ELEMENTS(buf, dtype, n, expected_expr, ...)                              \
  do {                                                                                 \
    size_t bad_ = 0;                                                                   \
    for (size_t i = 0; i < (n); i++) {                                                 \
      double got_ = elem_get((buf), (dtype), i), want_ = (expected_expr);              \
      if (got_ != want_) {                                                             \
        if (bad_ < 5) {                                                                \
          fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                         \
          fprintf(stderr, __VA_ARGS__);                                                \
          fprintf(stderr, " [%zu]: got %.17g, expected %.17g\n", i, got_, want_);     \
        }                                                                              \
        bad_++;                                                                        \
      }                                                                                \
    }                                                                                  \
    check_count++;                                                                     \
    if (bad_) check_failures++;                                                         \
  } while (0)

/* A pseudo-random value in [-1, 1) for element i of rank `rank`, the same on every
 * run (a splitmix-style mix of both): the compression tests' inputs. */
static inline double test_unit_random(int rank, size_t i) {
  uint64_t s = (uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull;
  s ^= s >> 31;
  s *= 0x94d049bb133111ebull;
  s ^= s >> 29;
  return (double)(s >> 11) / 9007199254740992.0 * 2 - 1;
}

/* Rank r's input element i for op on n ranks: small integers (products of 1s and 2s
 * for PRODUCT, multiples of n for AVERAGE), so every reduction order gives the exact
 * test_expected value. */
static inline double test_input(hv_op_t op, int r, size_t i, int n) {
  switch (op) {
    case HV_PRODUCT: return ((i + (size_t)r) % 3 == 0) ? 2 : 1;
    case HV_MIN:
    case HV_MAX: return (double)((i * 3 + (size_t)r * 5) % 11);
    case HV_AVERAGE: return (double)n * (double)((i + (size_t)r) % 4);
    default: return (double)((i * 7 + (size_t)r * 3) % 5 + 1);
  }
}

static inline double test_expected(hv_op_t op, size_t i, int n) {
  double acc = op == HV_PRODUCT ? 1 : (op == HV_MIN ? 1e300 : (op == HV_MAX ? -1e300 : 0));
  for (int r = 0; r < n; r++) {
    double v = test_input(op, r, i, n);
    if (op == HV_PRODUCT) acc *= v;
    else if (op == HV_MIN) acc = v < acc ? v : acc;
    else if (op == HV_MAX) acc = v > acc ? v : acc;
    else acc += v;
  }
  return op == HV_AVERAGE ? acc / n : acc;
}

#endif
