/* pool.c: pooling over (N, C, H, W) planes; each (n, c) plane is independent. */
#include "pool.h"

int pool_shape_init(pool_shape_t *s) {
  if (s->k < 1 || s->stride < 1 || s->k > s->h || s->k > s->w) return -1;
  s->ho = (s->h - s->k) / s->stride + 1;
  s->wo = (s->w - s->k) / s->stride + 1;
  return 0;
}

/* The 2x2 / stride 2 window of every CNN here, as selects instead of branches (the
 * maximum's position is data-dependent and mispredicts). Same tie and NaN rules. */
static void maxpool2_forward(const pool_shape_t *s, const real_t *x, real_t *y, int32_t *argmax) {
  const size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w, out = (size_t)s->ho * s->wo;
  const int W = s->w;
#pragma omp parallel for schedule(static) if (planes * in > 32768)
  for (size_t p = 0; p < planes; p++) {
    const real_t *xp = x + p * in;
    real_t *yp = y + p * out;
    int32_t *ap = argmax + p * out;
    for (int oy = 0; oy < s->ho; oy++) {
      for (int ox = 0; ox < s->wo; ox++) {
        const int i0 = 2 * oy * W + 2 * ox;
        const real_t v0 = xp[i0], v1 = xp[i0 + 1], v2 = xp[i0 + W], v3 = xp[i0 + W + 1];
        /* take: strictly greater, or a NaN replacing a number (NaN propagates). */
        int t = (v1 > v0) | ((v1 != v1) & (v0 == v0));
        real_t m = t ? v1 : v0;
        int32_t a = t ? i0 + 1 : i0;
        t = (v2 > m) | ((v2 != v2) & (m == m));
        m = t ? v2 : m;
        a = t ? i0 + W : a;
        t = (v3 > m) | ((v3 != v3) & (m == m));
        m = t ? v3 : m;
        a = t ? i0 + W + 1 : a;
        yp[oy * s->wo + ox] = m;
        ap[oy * s->wo + ox] = a;
      }
    }
  }
}

void maxpool_forward(const pool_shape_t *s, const real_t *x, real_t *y, int32_t *argmax) {
  if (s->k == 2 && s->stride == 2) {
    maxpool2_forward(s, x, y, argmax);
    return;
  }
  const size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w, out = (size_t)s->ho * s->wo;
  for (size_t p = 0; p < planes; p++) {
    const real_t *xp = x + p * in;
    for (int oy = 0; oy < s->ho; oy++) {
      for (int ox = 0; ox < s->wo; ox++) {
        int y0 = oy * s->stride, x0 = ox * s->stride, best = y0 * s->w + x0;
        real_t m = xp[best];
        for (int i = 0; i < s->k; i++) {
          for (int j = 0; j < s->k; j++) {
            int off = (y0 + i) * s->w + x0 + j;
            /* NaN propagates as in PyTorch: a NaN wins over any number. */
            if (xp[off] > m || (xp[off] != xp[off] && m == m)) m = xp[off], best = off;
          }
        }
        y[p * out + (size_t)oy * s->wo + ox] = m;
        argmax[p * out + (size_t)oy * s->wo + ox] = best;
      }
    }
  }
}

void maxpool_backward(const pool_shape_t *s, const real_t *dy, const int32_t *argmax,
                      real_t *dx) {
  const size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w, out = (size_t)s->ho * s->wo;
#pragma omp parallel for schedule(static) if (planes * in > 32768)
  for (size_t p = 0; p < planes; p++)
    for (size_t o = 0; o < out; o++) dx[p * in + (size_t)argmax[p * out + o]] += dy[p * out + o];
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
