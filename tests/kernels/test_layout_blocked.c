/* test_layout_blocked.c: the channel-blocked layout (layout_blocked.h). Conversions
 * round-trip and put each element where blocked_index says; batch norm (training and
 * evaluation forward, backward in both modes, accumulating into dx, dgamma, dbeta, or
 * writing dx: what accumulating onto zeros gives) and
 * global and max pooling (blocked or NCHW output; 2x2 windows with ties and NaNs,
 * overlapping 3x3 windows; argmax positions, dx accumulated or written) give bit for bit
 * the results of the NCHW kernels on the same
 * data, with 1 and 2 threads, for maps with and without a tail of fewer than 8
 * positions and with one or several channel blocks. float32, as the models run them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "check.h"
#include "batchnorm.h"
#include "layout_blocked.h"
#include "pool.h"
#define RAND_REAL_SEED 12345u
#include "rand_real.h"


static real_t *blocked_copy(int n, int c, int hw, const real_t *plain) {
  real_t *b = malloc((size_t)n * c * hw * sizeof *b);
  layout_to_blocked(n, c, hw, plain, b);
  return b;
}

/* The blocked tensor, back in NCHW, equals the plain one bit for bit. */
static int same_as_plain(int n, int c, int hw, const real_t *blocked, const real_t *plain) {
  size_t len = (size_t)n * c * hw;
  real_t *back = malloc(len * sizeof *back);
  layout_from_blocked(n, c, hw, blocked, back);
  int same = memcmp(back, plain, len * sizeof *back) == 0;
  free(back);
  return same;
}

static int same(const real_t *a, const real_t *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

static void test_conversions(void) {
  const int n = 2, c = 32, hw = 6;
  real_t *x = rand_array((size_t)n * c * hw, 0), *b = blocked_copy(n, c, hw, x);
  for (int i = 0; i < n; i++)
    for (int ch = 0; ch < c; ch++)
      for (int j = 0; j < hw; j++) CHECK(b[blocked_index(c, hw, i, ch, j)] == x[((size_t)i * c + ch) * hw + j]);
  CHECK(same_as_plain(n, c, hw, b, x));
  free(x), free(b);
}

static void test_batchnorm(int n, int c, int hw, double offset) {
  const size_t len = (size_t)n * c * hw;
  real_t *x = rand_array(len, offset), *dy = rand_array(len, 0), *gamma = rand_array((size_t)c, 1),
         *beta = rand_array((size_t)c, 0), *xb = blocked_copy(n, c, hw, x), *dyb = blocked_copy(n, c, hw, dy);
  double *scratch = malloc(batchnorm_blocked_scratch(n, c) * sizeof *scratch);
  real_t *y = malloc(len * sizeof *y), *yb = malloc(len * sizeof *yb);
  real_t *st = malloc(12 * (size_t)c * sizeof *st); /* running mean/var, saved mean/invstd: plain then blocked */
  for (int train = 1; train >= 0; train--) {
    for (int ch = 0; ch < c; ch++) st[ch] = st[6 * c + ch] = (real_t)0.25, st[c + ch] = st[7 * c + ch] = 2;
    if (train) {
      batchnorm_forward_train(n, c, hw, x, gamma, beta, (real_t)1e-5, (real_t)0.1, st, st + c, st + 2 * c,
                              st + 3 * c, y);
      batchnorm_forward_train_blocked(n, c, hw, xb, gamma, beta, (real_t)1e-5, (real_t)0.1, st + 6 * c,
                                      st + 7 * c, st + 8 * c, st + 9 * c, yb, 0, scratch);
    } else {
      batchnorm_forward_eval(n, c, hw, x, gamma, beta, (real_t)1e-5, st, st + c, st + 2 * c, st + 3 * c, y);
      batchnorm_forward_eval_blocked(n, c, hw, xb, gamma, beta, (real_t)1e-5, st + 6 * c, st + 7 * c, st + 8 * c,
                                     st + 9 * c, yb, 0, scratch);
    }
    CHECK(same_as_plain(n, c, hw, yb, y));
    CHECK(same(st, st + 6 * (size_t)c, 4 * (size_t)c)); /* running and saved statistics */
    /* Backward accumulates: start dx, dgamma, dbeta from the same non-zero values. */
    real_t *dx = rand_array(len, 0), *dxb = blocked_copy(n, c, hw, dx);
    for (int ch = 0; ch < c; ch++) st[4 * c + ch] = st[10 * c + ch] = 1, st[5 * c + ch] = st[11 * c + ch] = -1;
    batchnorm_backward(n, c, hw, train, x, dy, gamma, st + 2 * c, st + 3 * c, dx, 0, st + 4 * c, st + 5 * c);
    batchnorm_backward_blocked(n, c, hw, train, xb, dyb, gamma, st + 8 * c, st + 9 * c, dxb, 0, st + 10 * c,
                               st + 11 * c, 0, scratch);
    CHECK(same_as_plain(n, c, hw, dxb, dx));
    CHECK(same(st + 4 * c, st + 10 * c, 2 * (size_t)c)); /* dgamma, dbeta */
    CHECK(st[4 * c] != 1);                                /* accumulated something */
    /* Told to write dx, both write over whatever dx held: the values of adding to zeros. */
    real_t *dx0 = calloc(len, sizeof *dx0), *dxw = rand_array(len, 7), *dxwb = rand_array(len, 7), *gb = malloc(4 * (size_t)c * sizeof *gb);
    batchnorm_backward(n, c, hw, train, x, dy, gamma, st + 2 * c, st + 3 * c, dx0, 0, gb, gb + c);
    batchnorm_backward(n, c, hw, train, x, dy, gamma, st + 2 * c, st + 3 * c, dxw, 1, gb, gb + c);
    batchnorm_backward_blocked(n, c, hw, train, xb, dyb, gamma, st + 8 * c, st + 9 * c, dxwb, 1, gb + 2 * c,
                               gb + 3 * c, 0, scratch);
    size_t differ = 0;
    for (size_t i = 0; i < len; i++) differ += dxw[i] != dx0[i];
    CHECK(differ == 0);
    CHECK(same_as_plain(n, c, hw, dxwb, dxw));
    free(dx), free(dxb), free(dx0), free(dxw), free(dxwb), free(gb);
  }
  free(x), free(dy), free(gamma), free(beta), free(xb), free(dyb), free(scratch), free(y), free(yb), free(st);
}

static void test_global_avgpool(int n, int c, int hw) {
  const size_t len = (size_t)n * c * hw;
  real_t *x = rand_array(len, 3), *xb = blocked_copy(n, c, hw, x), *y = malloc((size_t)n * c * sizeof *y),
         *yb = malloc((size_t)n * c * sizeof *yb), *dx = rand_array(len, 0), *dxb = blocked_copy(n, c, hw, dx);
  global_avgpool_forward(n, c, hw, x, y);
  global_avgpool_forward_blocked(n, c, hw, xb, yb);
  CHECK(same(y, yb, (size_t)n * c));
  global_avgpool_backward(n, c, hw, y, dx);
  global_avgpool_backward_blocked(n, c, hw, y, dxb);
  CHECK(same_as_plain(n, c, hw, dxb, dx));
  free(x), free(xb), free(y), free(yb), free(dx), free(dxb);
}

/* x with ties (values rounded to a few levels) and, if nan, NaNs in some planes. */
static void test_maxpool(int n, int c, int h, int w, int k, int stride, int nan) {
  pool_shape_t s = {.n = n, .c = c, .h = h, .w = w, .k = k, .stride = stride};
  CHECK(pool_shape_init(&s) == 0);
  const int hw = h * w, out = s.ho * s.wo;
  const size_t len = (size_t)n * c * hw, olen = (size_t)n * c * out;
  real_t *x = rand_array(len, 3);
  for (size_t i = 0; i < len; i++) x[i] = (real_t)(int)(x[i] * 2);
  if (nan)
    for (size_t i = 5; i < len; i += 97) x[i] = (real_t)NAN;
  real_t *xb = blocked_copy(n, c, hw, x), *y = malloc(olen * sizeof *y), *yo = malloc(olen * sizeof *yo),
         *dy = rand_array(olen, 1), *dyb = blocked_copy(n, c, out, dy);
  int32_t *a = malloc(olen * sizeof *a), *ao = malloc(olen * sizeof *ao);
  maxpool_forward(&s, x, y, a);
  for (int y_blocked = 0; y_blocked <= 1; y_blocked++) {
    maxpool_forward_blocked(&s, xb, yo, y_blocked, ao);
    if (y_blocked) {
      CHECK(same_as_plain(n, c, out, yo, y));
      int32_t *back = malloc(olen * sizeof *back);
      for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
          for (int j = 0; j < out; j++) back[((size_t)i * c + ch) * out + j] = ao[blocked_index(c, out, i, ch, j)];
      CHECK(memcmp(back, a, olen * sizeof *a) == 0);
      free(back);
    } else {
      CHECK(same(yo, y, olen));
      CHECK(memcmp(ao, a, olen * sizeof *a) == 0);
    }
    real_t *dx = rand_array(len, 2), *dxb = blocked_copy(n, c, hw, dx);
    maxpool_backward(&s, dy, a, dx, 0);
    maxpool_backward_blocked(&s, y_blocked ? dyb : dy, y_blocked, ao, dxb, 0);
    CHECK(same_as_plain(n, c, hw, dxb, dx));
    /* Writing over old contents (dx, dxb) = accumulating onto zeros, in both layouts. */
    real_t *dx0 = calloc(len, sizeof *dx0);
    maxpool_backward(&s, dy, a, dx0, 0);
    maxpool_backward(&s, dy, a, dx, 1);
    CHECK(same(dx, dx0, len));
    maxpool_backward_blocked(&s, y_blocked ? dyb : dy, y_blocked, ao, dxb, 1);
    CHECK(same_as_plain(n, c, hw, dxb, dx0));
    free(dx), free(dxb), free(dx0);
  }
  free(x), free(xb), free(y), free(yo), free(dy), free(dyb), free(a), free(ao);
}

int main(void) {
  test_conversions();
  for (int threads = 1; threads <= 2; threads++) {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    test_batchnorm(3, 32, 49, 0);   /* 7x7: 6 groups of 8 and a tail of 1; two blocks */
    test_batchnorm(2, 16, 64, 100); /* no tail; a large mean */
    test_batchnorm(5, 48, 5, -3);   /* only a tail */
    test_batchnorm(64, 16, 1024, 0.5); /* a WRN-10-1 first-group layer: past the threading threshold */
    test_global_avgpool(3, 32, 49);
    test_maxpool(3, 32, 14, 14, 2, 2, 0); /* the ConvNet's second pooling */
    test_maxpool(2, 16, 28, 28, 2, 2, 1); /* NaNs: the reference rules */
    test_maxpool(40, 16, 28, 28, 2, 2, 0); /* past the threading threshold */
    test_maxpool(2, 32, 9, 7, 3, 2, 1);    /* overlapping windows, odd sides */
  }
  CHECK_RETURN();
}
