/* unit_half.c: float32 -> float16 / bfloat16 conversion rounds to nearest even,
 * checked against independent references: the compiler's _Float16 conversion (IEEE
 * arithmetic, round to nearest even) and, for bfloat16, the nearest of the two
 * candidate neighbours computed in float64. Covers every 16-bit value, the exact
 * midpoints between neighbours (the ties), one ulp either side, and random floats;
 * and the 16 -> 32 direction exhaustively. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "test_util.h"

static float bits_to_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static uint16_t ref_half(float f) {
  _Float16 h = (_Float16)f;
  uint16_t b;
  memcpy(&b, &h, sizeof b);
  return b;
}

/* bfloat16 reference: truncate, then pick the nearer of the two neighbours (ties to
 * the even one), distances in float64 which are exact here. */
static uint16_t ref_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if (isnan(f)) return (uint16_t)((x >> 16) | 0x40);
  uint16_t lo = (uint16_t)(x >> 16), hi = (uint16_t)(lo + 1);
  double dlo = fabs((double)f - (double)hv_bfloat16_to_float(lo));
  double vhi = (double)hv_bfloat16_to_float(hi);
  if ((hi & 0x7f80) == 0x7f80 && (lo & 0x7fff) == 0x7f7f) vhi = copysign(ldexp(1.0, 128), f); /* overflow to inf */
  double dhi = fabs(vhi - (double)f);
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1) ? hi : lo;
}

static int same_half(uint16_t a, uint16_t b) {
  int anan = (a & 0x7c00) == 0x7c00 && (a & 0x3ff), bnan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
  return anan || bnan ? anan == bnan : a == b;
}

static void check_half(float f) {
  uint16_t got = hv_float_to_half(f), want = ref_half(f);
  if (!same_half(got, want)) CHECK(0, "float_to_half(%a): got 0x%04x want 0x%04x", (double)f, got, want);
  else check_count++;
}

static void check_bf16(float f) {
  uint16_t got = hv_float_to_bfloat16(f), want = ref_bf16(f);
  if (got != want) CHECK(0, "float_to_bfloat16(%a): got 0x%04x want 0x%04x", (double)f, got, want);
  else check_count++;
}

int main(void) {
  /* 16 -> 32 exhaustively, and back (round trip is exact for non-NaN). */
  for (uint32_t h = 0; h < 65536; h++) {
    float f = hv_half_to_float((uint16_t)h);
    _Float16 ref;
    uint16_t hb = (uint16_t)h;
    memcpy(&ref, &hb, sizeof ref);
    if (!(isnan(f) && isnan((float)ref))) CHECK(f == (float)ref || (f == 0 && (float)ref == 0), "half_to_float(0x%04x)", h);
    if (!isnan(f)) CHECK(hv_float_to_half(f) == h, "half round trip 0x%04x", h);
    float g = hv_bfloat16_to_float((uint16_t)h);
    if (!isnan(g)) CHECK(hv_float_to_bfloat16(g) == h, "bf16 round trip 0x%04x", h);
  }
  /* Every neighbour pair's midpoint (the ties) and one float ulp either side. */
  for (uint32_t h = 0; h < 0x7c00; h++) {
    for (int s = 0; s < 2; s++) {
      uint16_t a = (uint16_t)(h | (s ? 0x8000 : 0)), b = (uint16_t)(a + 1);
      double mid = ((double)hv_half_to_float(a) + (double)hv_half_to_float(b)) / 2;
      float m = (float)mid;
      uint32_t mb;
      memcpy(&mb, &m, sizeof mb);
      check_half(m);
      check_half(bits_to_float(mb + 1));
      check_half(bits_to_float(mb - 1));
    }
  }
  for (uint32_t hb = 0; hb < 0x7f80; hb++) {
    uint32_t mid = (hb << 16) | 0x8000u; /* exactly between hb and hb+1 */
    check_bf16(bits_to_float(mid));
    check_bf16(bits_to_float(mid + 1));
    check_bf16(bits_to_float(mid - 1));
    check_bf16(-bits_to_float(mid));
  }
  /* Random bit patterns, including NaN, infinities and subnormals. */
  uint64_t state = 88172645463325252ull;
  for (int i = 0; i < 2000000; i++) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    float f = bits_to_float((uint32_t)state);
    check_half(f);
    check_bf16(f);
  }
  /* Documented edge cases. */
  CHECK(hv_float_to_half(65504.0f) == 0x7bff, "max half");
  CHECK(hv_float_to_half(65520.0f) == 0x7c00, "65520 rounds to inf");
  CHECK(hv_float_to_half(1e9f) == 0x7c00 && hv_float_to_half(-1e9f) == 0xfc00, "overflow gives inf");
  CHECK(isnan(hv_half_to_float(hv_float_to_half(NAN))), "NaN stays NaN");
  CHECK(hv_float_to_bfloat16(INFINITY) == 0x7f80, "bf16 inf");
  printf("%d passed, %d failed\n", check_count - check_failures, check_failures);
  return check_failures ? 1 : 0;
}
