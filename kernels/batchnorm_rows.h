/* batchnorm_rows.h: the per-row sums every CPU batch norm is built on (batchnorm.c,
 * batchnorm_blocked.c, batchnorm_sync.c). A row is one image's positions of one
 * channel (NCHW) or of one block of 16 channels (layout_blocked.h); it is summed in
 * eight float lanes (lane l takes the positions j = l mod 8 of the whole groups of
 * eight, in order, vectorised), then the leftover positions and the lanes are added
 * in double. The callers add the rows in double in image order. Because every batch
 * norm sums a row the same way, a row's sums do not depend on which batch (or which
 * process's share of it) the image is in: SyncBatchNorm over R processes differs from
 * BatchNorm on the whole batch only in how the rows' double sums are associated. */
#ifndef HV_KERNELS_BATCHNORM_ROWS_H
#define HV_KERNELS_BATCHNORM_ROWS_H

#include <stdint.h>
#include <string.h>

#include "layout_blocked.h"
#include "real.h"
#include "simd_clones.h"

/* Sum of (p[j] - shift) over an NCHW row p[0..n); into *second, when not NULL, the
 * sum of its square (square) or of (p[j] - shift) * q[j] (q; 0 without either). */
HV_SIMD_CLONES static inline double batchnorm_row_sum(const real_t *p, int n, real_t shift, const real_t *q, int square,
                                       double *second) {
  real_t a[8] = {0}, b[8] = {0};
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; l++) {
      const real_t d = p[j + l] - shift;
      a[l] += d;
      b[l] += square ? d * d : (q ? d * q[j + l] : 0);
    }
  }
  double sa = 0, sb = 0;
  for (; j < n; j++) {
    const double d = (double)p[j] - shift;
    sa += d;
    sb += square ? d * d : (q ? d * q[j] : 0);
  }
  for (int l = 0; l < 8; l++) sa += a[l], sb += b[l];
  if (second) *second = sb;
  return sa;
}

/* The same sums for a row of the blocked layout (hw positions x CHANNEL_BLOCK
 * channels), per channel, with the bits batchnorm_row_sum gives each channel alone:
 * (p - shift[k]) into sa[k] and, with square, its square, or, with q, (p - shift) * q
 * into sb[k]. shift may be NULL (0); sa or sb may be NULL. */
HV_SIMD_CLONES static inline void batchnorm_block_row_sums(const real_t *p, int hw, const real_t *shift, const real_t *q,
                                            int square, double *sa, double *sb) {
  enum { B = CHANNEL_BLOCK };
  const int full = hw / 8 * 8;
  /* One pass over the row, eight positions (cache lines) at a time, position l of each
   * eight into lane l: lane l adds the same values in the same order as a pass of its
   * own over j = l, l + 8, ... would, and the row is read once, in order, with the
   * 2 x 8 lanes of 16 channels in vector registers. */
  real_t a[8][B] = {{0}}, b[8][B] = {{0}};
  for (int j0 = 0; j0 < full; j0 += 8)
    for (int l = 0; l < 8; l++) {
      const real_t *pj = p + (size_t)(j0 + l) * B, *qj = q ? q + (size_t)(j0 + l) * B : NULL;
      for (int k = 0; k < B; k++) {
        const real_t d = pj[k] - (shift ? shift[k] : 0);
        a[l][k] += d;
        b[l][k] += square ? d * d : (q ? d * qj[k] : 0);
      }
    }
  double da[B] = {0}, db[B] = {0};
  for (int j = full; j < hw; j++)
    for (int k = 0; k < B; k++) {
      const double d = (double)p[(size_t)j * B + k] - (shift ? shift[k] : 0);
      da[k] += d;
      db[k] += square ? d * d : (q ? d * q[(size_t)j * B + k] : 0);
    }
  for (int l = 0; l < 8; l++)
    for (int k = 0; k < B; k++) da[k] += a[l][k], db[k] += b[l][k];
  if (sa) memcpy(sa, da, sizeof da);
  if (sb) memcpy(sb, db, sizeof db);
}

/* ReLU's backward folded into batch norm's (batchnorm.h, relu): the gradient that
 * reaches batch norm's output, dy where the forward's output ca * x + cb was positive
 * (as relu_backward_write gives it: same comparison, same float expression), else 0. */
static inline real_t batchnorm_relu_grad(real_t ca, real_t x, real_t cb, real_t dy) {
  /* A bit mask rather than a select: GCC vectorises this in every loop that calls it,
   * where it compiled the select in some to a branch per element (a third of them
   * mispredicted: the ConvNet's backward 3x slower). dy's bits or all zeros, which are
   * +0.0: exactly what the select gives, NaN included. */
#if HV_REAL_F64
  uint64_t bits, keep = (uint64_t)0 - (uint64_t)(ca * x + cb > 0);
#else
  uint32_t bits, keep = (uint32_t)0 - (uint32_t)(ca * x + cb > 0);
#endif
  memcpy(&bits, &dy, sizeof bits);
  bits &= keep;
  memcpy(&dy, &bits, sizeof dy);
  return dy;
}

/* The two sums of batch norm's backward over an NCHW row when the gradient is ReLU's,
 * masked on the fly (g = batchnorm_relu_grad(a, x, b, q)): returns the sum of g and
 * puts that of (x - shift) * g into *second, with the bits of
 * batchnorm_row_sum(g, n, 0, NULL, 0, NULL) and batchnorm_row_sum(x, n, shift, g, 0,
 * second) on a masked copy g of q. */
HV_SIMD_CLONES static inline double batchnorm_row_sum_relu(const real_t *x, const real_t *q, int n, real_t shift, real_t a, real_t b,
                                            double *second) {
  real_t la[8] = {0}, lb[8] = {0};
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; l++) {
      const real_t g = batchnorm_relu_grad(a, x[j + l], b, q[j + l]);
      la[l] += g;
      lb[l] += (x[j + l] - shift) * g;
    }
  }
  double sa = 0, sb = 0;
  for (; j < n; j++) {
    const real_t g = batchnorm_relu_grad(a, x[j], b, q[j]);
    sa += (double)g;
    sb += ((double)x[j] - shift) * g;
  }
  for (int l = 0; l < 8; l++) sa += la[l], sb += lb[l];
  *second = sb;
  return sa;
}

/* The two sums of batch norm's backward over a blocked row when the gradient is
 * ReLU's, masked on the fly (g = batchnorm_relu_grad(ca[k], x, cb[k], q)): the sum of
 * g into sa[k], of (x - shift[k]) * g into sb[k], in one pass over x and q. The bits
 * are those of batchnorm_block_row_sums(g, hw, NULL, NULL, 0, sa, NULL) and
 * batchnorm_block_row_sums(x, hw, shift, g, 0, NULL, sb) on a masked copy g of q: the
 * same lanes, the same order, the same leftover and lane additions in double. */
HV_SIMD_CLONES static inline void batchnorm_block_row_sums_relu(const real_t *x, const real_t *q, int hw, const real_t *shift,
                                                 const real_t *ca, const real_t *cb, double *sa, double *sb) {
  enum { B = CHANNEL_BLOCK };
  const int full = hw / 8 * 8;
  real_t a[8][B] = {{0}}, b[8][B] = {{0}};
  for (int j0 = 0; j0 < full; j0 += 8)
    for (int l = 0; l < 8; l++) {
      const real_t *xj = x + (size_t)(j0 + l) * B, *qj = q + (size_t)(j0 + l) * B;
      for (int k = 0; k < B; k++) {
        const real_t g = batchnorm_relu_grad(ca[k], xj[k], cb[k], qj[k]);
        a[l][k] += g;
        b[l][k] += (xj[k] - shift[k]) * g;
      }
    }
  double da[B] = {0}, db[B] = {0};
  for (int j = full; j < hw; j++)
    for (int k = 0; k < B; k++) {
      const real_t xv = x[(size_t)j * B + k], g = batchnorm_relu_grad(ca[k], xv, cb[k], q[(size_t)j * B + k]);
      da[k] += (double)g;
      db[k] += ((double)xv - shift[k]) * g;
    }
  for (int l = 0; l < 8; l++)
    for (int k = 0; k < B; k++) da[k] += a[l][k], db[k] += b[l][k];
  memcpy(sa, da, sizeof da);
  memcpy(sb, db, sizeof db);
}

#endif /* HV_KERNELS_BATCHNORM_ROWS_H */
