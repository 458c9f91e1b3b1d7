/* reduce.c: element-wise reduction, scaling and conversion loops, one simple loop per
 * dtype/op pair so the compiler vectorises each. 16-bit floats go through float32:
 * one rounding per element-wise operation, as the wire format forces. */
#include "reduce.h"

#include "half_simd.h"

#include <stdint.h>
#include <string.h>

#if HV_SIMULATED
#include "algo.h" /* hv__sim_timing_only */
/* A simulated timing run (sim_memory.c) reduces buffers every rank shares: their
 * values mean nothing, so the arithmetic is skipped. */
#define SKIP_IN_TIMING_RUNS() \
  if (hv__sim_timing_only()) return
#else
#define SKIP_IN_TIMING_RUNS() (void)0
#endif

int hv__dtype_is_float(hv_dtype_t dtype) {
  return dtype == HV_FLOAT16 || dtype == HV_BFLOAT16 || dtype == HV_FLOAT32 || dtype == HV_FLOAT64;
}

#define HV_MIN_(a, b) ((b) < (a) ? (b) : (a))
#define HV_MAX_(a, b) ((b) > (a) ? (b) : (a))

/* Native types: T is the element type, U the type arithmetic is done in (unsigned for
 * signed integers, so overflow wraps instead of being undefined). d[i] = a[i] op b[i]. */
#define REDUCE_LOOPS(T, U, d, a, b, n, op)                                            \
  switch (op) {                                                                       \
    case HV_SUM:                                                                      \
    case HV_AVERAGE:                                                                  \
      for (size_t i = 0; i < (n); i++) d[i] = (T)((U)a[i] + (U)b[i]);                 \
      break;                                                                          \
    case HV_PRODUCT:                                                                  \
      for (size_t i = 0; i < (n); i++) d[i] = (T)((U)a[i] * (U)b[i]);                 \
      break;                                                                          \
    case HV_MIN:                                                                      \
      for (size_t i = 0; i < (n); i++) d[i] = HV_MIN_(a[i], b[i]);                    \
      break;                                                                          \
    case HV_MAX:                                                                      \
      for (size_t i = 0; i < (n); i++) d[i] = HV_MAX_(a[i], b[i]);                    \
      break;                                                                          \
    default:                                                                          \
      break;                                                                          \
  }

/* In place (d op= s), and into a third buffer (d = a op b: one pass where a copy and
 * an in-place reduction would make two). */
#define DEFINE_REDUCE(suffix, T, U)                                                   \
  static void reduce_##suffix(T *restrict d, const T *restrict s, size_t n, hv_op_t op) { \
    REDUCE_LOOPS(T, U, d, d, s, n, op)                                                \
  }                                                                                   \
  static void reduce_to_##suffix(T *restrict d, const T *restrict a, const T *restrict b, size_t n, \
                                 hv_op_t op) {                                        \
    REDUCE_LOOPS(T, U, d, a, b, n, op)                                                \
  }

DEFINE_REDUCE(u8, uint8_t, uint32_t)
DEFINE_REDUCE(i8, int8_t, uint32_t)
DEFINE_REDUCE(i32, int32_t, uint32_t)
DEFINE_REDUCE(i64, int64_t, uint64_t)
DEFINE_REDUCE(f32, float, float)
DEFINE_REDUCE(f64, double, double)

#define DEFINE_REDUCE_16(suffix, to_f, from_f)                                        \
  static void reduce_##suffix(uint16_t *restrict d, const uint16_t *restrict s, size_t n, \
                              hv_op_t op) {                                           \
    for (size_t i = 0; i < n; i++) {                                                  \
      float a = to_f(d[i]), b = to_f(s[i]), r;                                        \
      switch (op) {                                                                   \
        case HV_PRODUCT: r = a * b; break;                                            \
        case HV_MIN: r = HV_MIN_(a, b); break;                                        \
        case HV_MAX: r = HV_MAX_(a, b); break;                                        \
        default: r = a + b; break;                                                    \
      }                                                                               \
      d[i] = from_f(r);                                                               \
    }                                                                                 \
  }

DEFINE_REDUCE_16(f16, hv_half_to_float, hv_float_to_half)
DEFINE_REDUCE_16(bf16, hv_bfloat16_to_float, hv_float_to_bfloat16)

void hv__reduce(void *dst, const void *src, size_t n, hv_dtype_t dtype, hv_op_t op) {
  SKIP_IN_TIMING_RUNS();
  switch (dtype) {
    case HV_UINT8: reduce_u8(dst, src, n, op); break;
    case HV_INT8: reduce_i8(dst, src, n, op); break;
    case HV_INT32: reduce_i32(dst, src, n, op); break;
    case HV_INT64: reduce_i64(dst, src, n, op); break;
    case HV_FLOAT16:
      if (!((op == HV_SUM || op == HV_AVERAGE) && hv__simd_sum_f16(dst, src, n))) reduce_f16(dst, src, n, op);
      break;
    case HV_BFLOAT16: reduce_bf16(dst, src, n, op); break;
    case HV_FLOAT32: reduce_f32(dst, src, n, op); break;
    case HV_FLOAT64: reduce_f64(dst, src, n, op); break;
    default: break;
  }
}

void hv__reduce_to(void *dst, const void *a, const void *b, size_t n, hv_dtype_t dtype, hv_op_t op) {
  SKIP_IN_TIMING_RUNS();
  if (dst == a) {
    hv__reduce(dst, b, n, dtype, op);
    return;
  }
  switch (dtype) {
    case HV_UINT8: reduce_to_u8(dst, a, b, n, op); break;
    case HV_INT8: reduce_to_i8(dst, a, b, n, op); break;
    case HV_INT32: reduce_to_i32(dst, a, b, n, op); break;
    case HV_INT64: reduce_to_i64(dst, a, b, n, op); break;
    case HV_FLOAT32: reduce_to_f32(dst, a, b, n, op); break;
    case HV_FLOAT64: reduce_to_f64(dst, a, b, n, op); break;
    default: /* 16-bit floats: through float32 either way */
      if (n) memcpy(dst, a, n * hv_dtype_size(dtype));
      hv__reduce(dst, b, n, dtype, op);
      break;
  }
}

void hv__scale(void *buf, size_t n, hv_dtype_t dtype, double factor) {
  if (factor == 1.0 || !hv__dtype_is_float(dtype)) return;
  hv__convert(buf, dtype, buf, dtype, n, factor);
}

/* Reads element i of a float buffer as float64 / writes one, for the generic path. */
static double load_float(const void *p, hv_dtype_t t, size_t i) {
  switch (t) {
    case HV_FLOAT16: return hv_half_to_float(((const uint16_t *)p)[i]);
    case HV_BFLOAT16: return hv_bfloat16_to_float(((const uint16_t *)p)[i]);
    case HV_FLOAT32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
  }
}

static void store_float(void *p, hv_dtype_t t, size_t i, double v) {
  switch (t) {
    case HV_FLOAT16: ((uint16_t *)p)[i] = hv_float_to_half((float)v); break;
    case HV_BFLOAT16: ((uint16_t *)p)[i] = hv_float_to_bfloat16((float)v); break;
    case HV_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
  }
}

void hv__convert(void *dst, hv_dtype_t dst_dtype, const void *src, hv_dtype_t src_dtype,
                 size_t n, double factor) {
  if (dst_dtype == src_dtype && factor == 1.0) {
    if (n && dst != src) memmove(dst, src, n * hv_dtype_size(dst_dtype));
    return;
  }
  float f = (float)factor;
  /* The hot cases of fusion packing get their own loops. */
  if (src_dtype == HV_FLOAT32 && dst_dtype == HV_FLOAT32) {
    float *d = dst;
    const float *s = src;
    for (size_t i = 0; i < n; i++) d[i] = s[i] * f;
  } else if (src_dtype == HV_FLOAT32 && dst_dtype == HV_FLOAT16) {
    uint16_t *d = dst;
    const float *s = src;
    if (hv__simd_f32_to_f16(d, s, n, f)) return;
    if (factor == 1.0)
      for (size_t i = 0; i < n; i++) d[i] = hv_float_to_half(s[i]);
    else
      for (size_t i = 0; i < n; i++) d[i] = hv_float_to_half(s[i] * f);
  } else if (src_dtype == HV_FLOAT16 && dst_dtype == HV_FLOAT32) {
    float *d = dst;
    const uint16_t *s = src;
    if (hv__simd_f16_to_f32(d, s, n, f)) return;
    for (size_t i = 0; i < n; i++) d[i] = hv_half_to_float(s[i]) * f;
  } else if (src_dtype == HV_FLOAT32 && dst_dtype == HV_BFLOAT16) {
    uint16_t *d = dst;
    const float *s = src;
    for (size_t i = 0; i < n; i++) d[i] = hv_float_to_bfloat16(s[i] * f);
  } else if (src_dtype == HV_BFLOAT16 && dst_dtype == HV_FLOAT32) {
    float *d = dst;
    const uint16_t *s = src;
    for (size_t i = 0; i < n; i++) d[i] = hv_bfloat16_to_float(s[i]) * f;
  } else if (src_dtype == HV_FLOAT64 && dst_dtype == HV_FLOAT64) {
    double *d = dst;
    const double *s = src;
    for (size_t i = 0; i < n; i++) d[i] = s[i] * factor;
  } else {
    /* 16-bit scaled in place: scaling in float32 keeps one rounding, like the GPU path. */
    for (size_t i = 0; i < n; i++) {
      double v = load_float(src, src_dtype, i);
      if (src_dtype == HV_FLOAT16 || src_dtype == HV_BFLOAT16) v = (float)v * f;
      else v *= factor;
      store_float(dst, dst_dtype, i, v);
    }
  }
}

void hv__divide(void *buf, size_t n, hv_dtype_t dtype, double divisor) {
  if (divisor == 1.0) return;
  switch (dtype) {
    case HV_FLOAT32: {
      float *d = buf, q = (float)divisor;
      for (size_t i = 0; i < n; i++) d[i] /= q;
      break;
    }
    case HV_FLOAT64: {
      double *d = buf;
      for (size_t i = 0; i < n; i++) d[i] /= divisor;
      break;
    }
    case HV_FLOAT16:
    case HV_BFLOAT16:
      for (size_t i = 0; i < n; i++) store_float(buf, dtype, i, (float)load_float(buf, dtype, i) / (float)divisor);
      break;
    default:
      break;
  }
}
