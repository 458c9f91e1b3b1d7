/* linear.c: nn.Linear forward/backward as three gemms. */
#include "linear.h"

#include "gemm.h"

void linear_forward(int n, int in, int out, const real_t *x, const real_t *w, const real_t *b,
                    real_t *y) {
  for (int i = 0; i < n; i++)
    for (int o = 0; o < out; o++) y[(size_t)i * out + o] = b ? b[o] : 0;
  gemm(0, 1, n, out, in, 1, x, in, w, in, 1, y, out);
}

void linear_backward(int n, int in, int out, const real_t *x, const real_t *w, const real_t *dy,
                     real_t *dx, real_t *dw, real_t *db) {
  gemm(1, 0, out, in, n, 1, dy, out, x, in, 1, dw, in);
  if (db) {
    for (int o = 0; o < out; o++) {
      double acc = 0;
      for (int i = 0; i < n; i++) acc += dy[(size_t)i * out + o];
      db[o] += (real_t)acc;
    }
  }
  if (dx) gemm(0, 0, n, in, out, 1, dy, out, w, in, 1, dx, in);
}
