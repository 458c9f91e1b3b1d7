/* half_simd.c: the float16 hot loops (fusion packing, unpacking and the reduction of
 * fp16 wire data) with the x86 F16C instructions, 8 elements at a time, chosen at run
 * time when the CPU has them; elsewhere the portable loops of reduce.c run. F16C's
 * conversion with _MM_FROUND_TO_NEAREST_INT rounds to nearest even like half.c, so
 * results are the same bits either way (NaN payloads aside). */
#include <stddef.h>
#include <stdint.h>

#include "half_simd.h"
#include "hv.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#define F16C_TARGET __attribute__((target("avx,f16c")))

F16C_TARGET static void f32_to_f16_f16c(uint16_t *d, const float *s, size_t n, float scale) {
  size_t i = 0;
  __m256 k = _mm256_set1_ps(scale);
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(s + i), k);
    _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; i++) d[i] = hv_float_to_half(s[i] * scale);
}

F16C_TARGET static void f16_to_f32_f16c(float *d, const uint16_t *s, size_t n, float scale) {
  size_t i = 0;
  __m256 k = _mm256_set1_ps(scale);
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))), k));
  for (; i < n; i++) d[i] = hv_half_to_float(s[i]) * scale;
}

F16C_TARGET static void sum_f16_f16c(uint16_t *d, const uint16_t *s, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + i)));
    __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i)));
    _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; i++) d[i] = hv_float_to_half(hv_half_to_float(d[i]) + hv_half_to_float(s[i]));
}

static int have_f16c(void) {
  static int cached = -1;
  /* F16C from CPUID leaf 1 rather than __builtin_cpu_supports("f16c"), which clang
   * before 16 rejects at compile time (the clang fuzz build compiles this file). */
  unsigned a, b, c, d;
  if (cached < 0)
    cached = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  return cached;
}

int hv__simd_f32_to_f16(uint16_t *d, const float *s, size_t n, float scale) {
  if (!have_f16c()) return 0;
  f32_to_f16_f16c(d, s, n, scale);
  return 1;
}

int hv__simd_f16_to_f32(float *d, const uint16_t *s, size_t n, float scale) {
  if (!have_f16c()) return 0;
  f16_to_f32_f16c(d, s, n, scale);
  return 1;
}

int hv__simd_sum_f16(uint16_t *d, const uint16_t *s, size_t n) {
  if (!have_f16c()) return 0;
  sum_f16_f16c(d, s, n);
  return 1;
}

#else

int hv__simd_f32_to_f16(uint16_t *d, const float *s, size_t n, float scale) { return 0; }
int hv__simd_f16_to_f32(float *d, const uint16_t *s, size_t n, float scale) { return 0; }
int hv__simd_sum_f16(uint16_t *d, const uint16_t *s, size_t n) { return 0; }

#endif
