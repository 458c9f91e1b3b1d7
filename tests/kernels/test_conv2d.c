/* test_conv2d.c: the im2col + gemm convolution (float64 build) against a direct
 * six-loop convolution and its hand-derived gradients, for strides, paddings, kernel
 * sizes and every chunking of the batch (one image per gemm, two, all). Bound 1e-12
 * relative: both sides are float64 sums of the same products in different order. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "conv2d.h"

static double frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return ((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

static void direct(const conv2d_shape_t *s, const double *x, const double *w, const double *b,
                   const double *dy, double *y, double *dx, double *dw, double *db) {
  for (int n = 0; n < s->n; n++)
    for (int k = 0; k < s->k; k++)
      for (int oy = 0; oy < s->ho; oy++)
        for (int ox = 0; ox < s->wo; ox++) {
          const size_t o = (((size_t)n * s->k + k) * s->ho + oy) * s->wo + ox;
          double acc = b[k];
          db[k] += dy[o];
          for (int c = 0; c < s->c; c++)
            for (int i = 0; i < s->kh; i++)
              for (int j = 0; j < s->kw; j++) {
                int iy = oy * s->stride - s->pad + i, ix = ox * s->stride - s->pad + j;
                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
                size_t xi = (((size_t)n * s->c + c) * s->h + iy) * s->w + ix;
                size_t wi = (((size_t)k * s->c + c) * s->kh + i) * s->kw + j;
                acc += w[wi] * x[xi];
                dw[wi] += dy[o] * x[xi];
                dx[xi] += dy[o] * w[wi];
              }
          y[o] = acc;
        }
}

static double maxrel(const double *a, const double *b, size_t n) {
  double d = 0, m = 1e-30;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), m = fmax(m, fabs(b[i]));
  return d / m;
}

static void run(int n, int c, int h, int w, int k, int ks, int stride, int pad) {
  conv2d_shape_t s = {.n = n, .c = c, .h = h, .w = w, .k = k, .kh = ks, .kw = ks,
                      .stride = stride, .pad = pad};
  CHECK(conv2d_shape_init(&s) == 0);
  const size_t nx = (size_t)n * c * h * w, nw = (size_t)k * c * ks * ks,
               ny = (size_t)n * k * s.ho * s.wo;
  double *x = malloc(nx * 8), *wt = malloc(nw * 8), *b = malloc((size_t)k * 8),
         *dy = malloc(ny * 8), *y0 = malloc(ny * 8), *dx0 = calloc(nx, 8), *dw0 = calloc(nw, 8),
         *db0 = calloc((size_t)k, 8), *y1 = malloc(ny * 8), *dx1 = malloc(nx * 8),
         *dw1 = malloc(nw * 8), *db1 = malloc((size_t)k * 8);
  unsigned seed = (unsigned)(n * 131 + c * 17 + ks);
  for (size_t i = 0; i < nx; i++) x[i] = frand(&seed);
  for (size_t i = 0; i < nw; i++) wt[i] = frand(&seed);
  for (int i = 0; i < k; i++) b[i] = frand(&seed);
  for (size_t i = 0; i < ny; i++) dy[i] = frand(&seed);
  direct(&s, x, wt, b, dy, y0, dx0, dw0, db0);
  const size_t per = conv2d_workspace_per_image(&s);
  const size_t sizes[3] = {per, 2 * per + 1, per * (size_t)n * 4};
  for (int t = 0; t < 3; t++) {
    double *ws = malloc(sizes[t] * 8);
    /* Backward accumulates: start from 1 and subtract it afterwards. */
    for (size_t i = 0; i < nx; i++) dx1[i] = 1;
    for (size_t i = 0; i < nw; i++) dw1[i] = 1;
    for (int i = 0; i < k; i++) db1[i] = 1;
    conv2d_forward(&s, x, wt, b, y1, ws, sizes[t]);
    conv2d_backward(&s, x, wt, dy, dx1, dw1, db1, ws, sizes[t]);
    for (size_t i = 0; i < nx; i++) dx1[i] -= 1;
    for (size_t i = 0; i < nw; i++) dw1[i] -= 1;
    for (int i = 0; i < k; i++) db1[i] -= 1;
    double ey = maxrel(y1, y0, ny), ex = maxrel(dx1, dx0, nx), ew = maxrel(dw1, dw0, nw),
           eb = maxrel(db1, db0, (size_t)k);
    if (ey > 1e-12 || ex > 1e-12 || ew > 1e-12 || eb > 1e-12) {
      fprintf(stderr, "conv n%d c%d %dx%d k%d ks%d s%d p%d ws%zu: y %.2g dx %.2g dw %.2g db %.2g\n",
              n, c, h, w, k, ks, stride, pad, sizes[t], ey, ex, ew, eb);
      check_failures++;
    }
    free(ws);
  }
  free(x), free(wt), free(b), free(dy), free(y0), free(dx0), free(dw0), free(db0);
  free(y1), free(dx1), free(dw1), free(db1);
}

int main(void) {
  run(3, 2, 7, 6, 4, 3, 1, 1);
  run(3, 3, 8, 8, 5, 3, 2, 1);
  run(2, 1, 9, 9, 3, 5, 1, 2);
  run(4, 4, 6, 6, 3, 1, 2, 0);
  run(2, 2, 5, 7, 2, 4, 1, 0);
  run(2, 3, 9, 9, 2, 3, 3, 2);
  conv2d_shape_t bad = {.n = 1, .c = 1, .h = 3, .w = 3, .k = 1, .kh = 5, .kw = 5, .stride = 1};
  CHECK(conv2d_shape_init(&bad) == -1);
  CHECK_RETURN();
}
