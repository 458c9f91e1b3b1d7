/* half_simd.h: vectorised float16 loops (half_simd.c). Each returns 1 when it did the
 * work, 0 when this CPU lacks the instructions (the caller then runs its portable loop). */
#ifndef HV_HALF_SIMD_H
#define HV_HALF_SIMD_H

#include <stddef.h>
#include <stdint.h>

int hv__simd_f32_to_f16(uint16_t *d, const float *s, size_t n, float scale);
int hv__simd_f16_to_f32(float *d, const uint16_t *s, size_t n, float scale);
int hv__simd_sum_f16(uint16_t *d, const uint16_t *s, size_t n);

#endif
