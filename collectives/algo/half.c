/* half.c: float32 <-> float16 / bfloat16 conversions with round-to-nearest-even,
 * done on the bits so results do not depend on the compiler's or CPU's support for
 * 16-bit floats. NaN stays NaN (quiet), overflow becomes infinity as IEEE says. */
#include <string.h>

#include "hv.h"

uint16_t hv_float_to_half(float value) {
  uint32_t x;
  memcpy(&x, &value, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((absx >> 13) & 0x3ffu)); /* NaN */
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
  if (absx < 0x38800000u) {
    /* Below the smallest normal half (2^-14): the result is round(|v| * 2^24). Adding
     * 0.5f, whose ulp is 2^-24, makes the FPU do exactly that rounding (to nearest
     * even), leaving the integer in the low mantissa bits. */
    float magnitude;
    memcpy(&magnitude, &absx, sizeof magnitude);
    float shifted = magnitude + 0.5f;
    uint32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    return (uint16_t)(sign | (bits - 0x3f000000u));
  }
  /* Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest,
   * ties to the even mantissa. A carry out of the mantissa correctly bumps the exponent. */
  uint32_t odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + odd;
  return (uint16_t)(sign | (absx >> 13));
}

float hv_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    float magnitude = (float)mantissa * 0x1p-24f; /* subnormal or zero: exact */
    memcpy(&bits, &magnitude, sizeof bits);
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

uint16_t hv_float_to_bfloat16(float value) {
  uint32_t x;
  memcpy(&x, &value, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest, ties to even */
  return (uint16_t)(x >> 16);
}

float hv_bfloat16_to_float(uint16_t value) {
  uint32_t bits = (uint32_t)value << 16;
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}
