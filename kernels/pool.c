/* pool.c: pooling over (N, C, H, W) planes; each (n, c) plane is independent. */
#include "pool.h"

#include <string.h>

#include "layout_blocked.h"

int pool_shape_init(pool_shape_t *s) {
  if (s->k < 1 || s->stride < 1 || s->k > s->h || s->k > s->w) return -1;
  s->ho = (s->h - s->k) / s->stride + 1;
  s->wo = (s->w - s->k) / s->stride + 1;
  return 0;
}

/* One (n, c) plane, any window: the reference rules. The first maximum wins a tie,
 * and NaN propagates as in PyTorch: a NaN wins over any number. Plane element off is
 * xp[off * xs]; output o is yp[o * ys] and ap[o * ys] (strides 1 in NCHW; the blocked
 * layout interleaves 16 planes). */
static void maxpool_plane(const pool_shape_t *s, const real_t *xp, size_t xs, real_t *yp,
                          int32_t *ap, size_t ys) {
  for (int oy = 0; oy < s->ho; oy++) {
    for (int ox = 0; ox < s->wo; ox++) {
      int y0 = oy * s->stride, x0 = ox * s->stride, best = y0 * s->w + x0;
      real_t m = xp[(size_t)best * xs];
      for (int i = 0; i < s->k; i++) {
        for (int j = 0; j < s->k; j++) {
          int off = (y0 + i) * s->w + x0 + j;
          const real_t v = xp[(size_t)off * xs];
          if (v > m || (v != v && m == m)) m = v, best = off;
        }
      }
      yp[(size_t)(oy * s->wo + ox) * ys] = m;
      ap[(size_t)(oy * s->wo + ox) * ys] = best;
    }
  }
}

/* The maximum of a 2x2 window (v0 v1 / v2 v3, v0 at plane offset i0 in rows of W) and
 * its offset in *arg, the first on ties, with selects instead of branches so that the
 * callers' loops vectorise. No NaN handling: the callers redo a plane that has one. */
static inline real_t max2x2_first(real_t v0, real_t v1, real_t v2, real_t v3, int32_t i0, int W,
                                  int32_t *arg) {
  real_t m = v0;
  int32_t a = i0;
  a = v1 > m ? i0 + 1 : a;
  m = v1 > m ? v1 : m;
  a = v2 > m ? i0 + W : a;
  m = v2 > m ? v2 : m;
  a = v3 > m ? i0 + W + 1 : a;
  m = v3 > m ? v3 : m;
  *arg = a;
  return m;
}

/* The 2x2 / stride 2 window of every CNN here, one output row at a time in a loop the
 * compiler vectorises (selects, no branches: the maximum's position is
 * data-dependent and a branch mispredicts; measured 3.95 ms for the ConvNet's first
 * pool at batch 100, 18% of a training step). Without NaNs, "strictly greater"
 * selects give the same values and positions as the reference; a plane that holds a
 * NaN (returns 1) is redone by maxpool_plane. */
static int maxpool2_plane(const pool_shape_t *s, const real_t *restrict xp, real_t *restrict yp,
                          int32_t *restrict ap) {
  const int W = s->w, wo = s->wo;
  int nan = 0;
  for (int oy = 0; oy < s->ho; oy++) {
    const real_t *restrict r0 = xp + (size_t)2 * oy * W, *restrict r1 = r0 + W;
    real_t *restrict yr = yp + (size_t)oy * wo;
    int32_t *restrict ar = ap + (size_t)oy * wo;
    const int32_t base = 2 * oy * W;
    for (int ox = 0; ox < wo; ox++) {
      const real_t v0 = r0[2 * ox], v1 = r0[2 * ox + 1], v2 = r1[2 * ox], v3 = r1[2 * ox + 1];
      nan |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);
      yr[ox] = max2x2_first(v0, v1, v2, v3, base + 2 * ox, W, &ar[ox]);
    }
  }
  return nan;
}

void maxpool_forward(const pool_shape_t *s, const real_t *x, real_t *y, int32_t *argmax) {
  const size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w, out = (size_t)s->ho * s->wo;
  const int two = s->k == 2 && s->stride == 2;
#pragma omp parallel for schedule(static) if (planes * in > 32768)
  for (size_t p = 0; p < planes; p++) {
    if (!two || maxpool2_plane(s, x + p * in, y + p * out, argmax + p * out))
      maxpool_plane(s, x + p * in, 1, y + p * out, argmax + p * out, 1);
  }
}

void maxpool_backward(const pool_shape_t *s, const real_t *dy, const int32_t *argmax,
                      real_t *dx, int dx_write) {
  const size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w, out = (size_t)s->ho * s->wo;
#pragma omp parallel for schedule(static) if (planes * in > 32768)
  for (size_t p = 0; p < planes; p++) {
    if (dx_write) memset(dx + p * in, 0, in * sizeof *dx);
    for (size_t o = 0; o < out; o++) dx[p * in + (size_t)argmax[p * out + o]] += dy[p * out + o];
  }
}

/* The 2x2 / stride 2 window over one (n, 16-channel block) of the blocked layout: the
 * 16 planes' elements lie side by side, so the loop over them vectorises with the
 * selects of maxpool2_plane (the same values and positions). Output o of lane l goes
 * to yb[o * ps + l * ls] (blocked: ps 16, ls 1; NCHW: ps 1, ls ho*wo). Returns 1 when
 * the block holds a NaN (redone by maxpool_plane). */
static int maxpool2_block(const pool_shape_t *s, const real_t *restrict xb, real_t *restrict yb,
                          int32_t *restrict ab, size_t ls, size_t ps) {
  const int W = s->w, wo = s->wo;
  int nan = 0;
  for (int oy = 0; oy < s->ho; oy++) {
    for (int ox = 0; ox < wo; ox++) {
      const int32_t i0 = 2 * oy * W + 2 * ox;
      const real_t *restrict p0 = xb + (size_t)i0 * CHANNEL_BLOCK, *restrict p2 =
          p0 + (size_t)W * CHANNEL_BLOCK;
      const size_t o = (size_t)(oy * wo + ox) * ps;
      for (int l = 0; l < CHANNEL_BLOCK; l++) {
        const real_t v0 = p0[l], v1 = p0[CHANNEL_BLOCK + l], v2 = p2[l], v3 = p2[CHANNEL_BLOCK + l];
        nan |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);
        yb[o + l * ls] = max2x2_first(v0, v1, v2, v3, i0, W, &ab[o + l * ls]);
      }
    }
  }
  return nan;
}

/* Block b = (n, c/16) of x starts at b * 16 * h*w, and its output at b * 16 * ho*wo in
 * both output layouts; only the strides inside differ. */
void maxpool_forward_blocked(const pool_shape_t *s, const real_t *x, real_t *y, int y_blocked,
                             int32_t *argmax) {
  const size_t blocks = (size_t)s->n * (s->c / CHANNEL_BLOCK), in = (size_t)s->h * s->w,
               out = (size_t)s->ho * s->wo;
  const size_t ls = y_blocked ? 1 : out, ps = y_blocked ? CHANNEL_BLOCK : 1;
  const int two = s->k == 2 && s->stride == 2;
#pragma omp parallel for schedule(static) if (blocks * in * CHANNEL_BLOCK > 32768)
  for (size_t b = 0; b < blocks; b++) {
    const real_t *xb = x + b * in * CHANNEL_BLOCK;
    real_t *yb = y + b * out * CHANNEL_BLOCK;
    int32_t *ab = argmax + b * out * CHANNEL_BLOCK;
    if (!two || maxpool2_block(s, xb, yb, ab, ls, ps))
      for (int l = 0; l < CHANNEL_BLOCK; l++)
        maxpool_plane(s, xb + l, CHANNEL_BLOCK, yb + l * ls, ab + l * ls, ps);
  }
}

/* Each plane's outputs are visited in the order maxpool_backward visits them, so an
 * element of dx that several windows choose receives its additions in the same order. */
void maxpool_backward_blocked(const pool_shape_t *s, const real_t *dy, int dy_blocked,
                              const int32_t *argmax, real_t *dx, int dx_write) {
  const size_t blocks = (size_t)s->n * (s->c / CHANNEL_BLOCK), in = (size_t)s->h * s->w,
               out = (size_t)s->ho * s->wo;
  const size_t ls = dy_blocked ? 1 : out, ps = dy_blocked ? CHANNEL_BLOCK : 1;
#pragma omp parallel for schedule(static) if (blocks * in * CHANNEL_BLOCK > 32768)
  for (size_t b = 0; b < blocks; b++) {
    real_t *dxb = dx + b * in * CHANNEL_BLOCK;
    const real_t *dyb = dy + b * out * CHANNEL_BLOCK;
    const int32_t *ab = argmax + b * out * CHANNEL_BLOCK;
    if (dx_write) memset(dxb, 0, in * CHANNEL_BLOCK * sizeof *dxb);
    for (size_t o = 0; o < out; o++)
      for (int l = 0; l < CHANNEL_BLOCK; l++)
        dxb[(size_t)ab[o * ps + l * ls] * CHANNEL_BLOCK + l] += dyb[o * ps + l * ls];
  }
}

void avgpool_forward(const pool_shape_t *s, const real_t *x, real_t *y) {
  const size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w, out = (size_t)s->ho * s->wo;
  const real_t inv = (real_t)1 / (real_t)(s->k * s->k);
  for (size_t p = 0; p < planes; p++) {
    const real_t *xp = x + p * in;
    for (int oy = 0; oy < s->ho; oy++) {
      for (int ox = 0; ox < s->wo; ox++) {
        real_t acc = 0;
        for (int i = 0; i < s->k; i++)
          for (int j = 0; j < s->k; j++) acc += xp[(oy * s->stride + i) * s->w + ox * s->stride + j];
        y[p * out + (size_t)oy * s->wo + ox] = acc * inv;
      }
    }
  }
}

void avgpool_backward(const pool_shape_t *s, const real_t *dy, real_t *dx) {
  const size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w, out = (size_t)s->ho * s->wo;
  const real_t inv = (real_t)1 / (real_t)(s->k * s->k);
  for (size_t p = 0; p < planes; p++) {
    real_t *dp = dx + p * in;
    for (int oy = 0; oy < s->ho; oy++) {
      for (int ox = 0; ox < s->wo; ox++) {
        real_t g = dy[p * out + (size_t)oy * s->wo + ox] * inv;
        for (int i = 0; i < s->k; i++)
          for (int j = 0; j < s->k; j++) dp[(oy * s->stride + i) * s->w + ox * s->stride + j] += g;
      }
    }
  }
}

void global_avgpool_forward(int n, int c, int hw, const real_t *x, real_t *y) {
  for (size_t p = 0; p < (size_t)n * c; p++) {
    double acc = 0;
    for (int j = 0; j < hw; j++) acc += x[p * hw + j];
    y[p] = (real_t)(acc / hw);
  }
}

void global_avgpool_backward(int n, int c, int hw, const real_t *dy, real_t *dx) {
  for (size_t p = 0; p < (size_t)n * c; p++) {
    real_t g = dy[p] / (real_t)hw;
    for (int j = 0; j < hw; j++) dx[p * hw + j] += g;
  }
}

void global_avgpool_forward_blocked(int n, int c, int hw, const real_t *x, real_t *y) {
  for (int i = 0; i < n; i++)
    for (int cb = 0; cb < c; cb += CHANNEL_BLOCK) {
      double acc[CHANNEL_BLOCK] = {0};
      const real_t *p = x + blocked_index(c, hw, i, cb, 0);
      for (int j = 0; j < hw; j++)
        for (int k = 0; k < CHANNEL_BLOCK; k++) acc[k] += p[(size_t)j * CHANNEL_BLOCK + k];
      for (int k = 0; k < CHANNEL_BLOCK; k++) y[(size_t)i * c + cb + k] = (real_t)(acc[k] / hw);
    }
}

void global_avgpool_backward_blocked(int n, int c, int hw, const real_t *dy, real_t *dx) {
  for (int i = 0; i < n; i++)
    for (int cb = 0; cb < c; cb += CHANNEL_BLOCK) {
      real_t g[CHANNEL_BLOCK];
      for (int k = 0; k < CHANNEL_BLOCK; k++) g[k] = dy[(size_t)i * c + cb + k] / (real_t)hw;
      real_t *q = dx + blocked_index(c, hw, i, cb, 0);
      for (int j = 0; j < hw; j++)
        for (int k = 0; k < CHANNEL_BLOCK; k++) q[(size_t)j * CHANNEL_BLOCK + k] += g[k];
    }
}
