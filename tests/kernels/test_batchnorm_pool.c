/* test_batchnorm_pool.c: batch norm's running statistics follow PyTorch's update
 * (momentum 0.1, unbiased variance for running_var, biased for normalising), training
 * output has per-channel mean 0 and biased variance 1/(1+eps/var); evaluation uses the
 * running statistics; pooling matches hand-worked values (ties go to the first
 * maximum); softmax cross-entropy matches log-sum-exp in double (float64 build). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "batchnorm.h"
#include "pool.h"
#include "softmax_xent.h"

static void test_bn(void) {
  /* N=2, C=2, HW=3; channel 0 values 1..6, channel 1 constant 5 except one 8. */
  const double x[12] = {1, 2, 3, 5, 5, 5, 4, 5, 6, 5, 5, 8};
  double g[2] = {2, 1}, b[2] = {0.5, -1}, rm[2] = {0, 0}, rv[2] = {1, 1}, sm[2], si[2], y[12];
  batchnorm_forward_train(2, 2, 3, x, g, b, 1e-5, 0.1, rm, rv, sm, si, y);
  /* channel 0: mean 3.5, biased var 17.5/6, unbiased 17.5/5 */
  CHECK_NEAR(sm[0], 3.5, 1e-15);
  CHECK_NEAR(si[0], 1 / sqrt(17.5 / 6 + 1e-5), 1e-15);
  CHECK_NEAR(rm[0], 0.35, 1e-15);
  CHECK_NEAR(rv[0], 0.9 + 0.1 * 3.5, 1e-15);
  /* channel 1: mean 5.5, squares of deviations 0.25*5 + 6.25 = 7.5 */
  CHECK_NEAR(rm[1], 0.55, 1e-15);
  CHECK_NEAR(rv[1], 0.9 + 0.1 * 7.5 / 5, 1e-15);
  CHECK_NEAR(y[0], 2 * (1 - 3.5) / sqrt(17.5 / 6 + 1e-5) + 0.5, 1e-14);
  double mean = 0;
  for (int i = 0; i < 3; i++) mean += y[i] + y[6 + i];
  CHECK_NEAR(mean / 6, 0.5, 1e-14); /* beta */
  batchnorm_forward_eval(2, 2, 3, x, g, b, 1e-5, rm, rv, sm, si, y);
  CHECK_NEAR(y[3], 1 * (5 - 0.55) / sqrt(rv[1] + 1e-5) - 1, 1e-14);
}

static void test_pool(void) {
  /* One 4x4 plane 0..15 with a three-way tie of 5s in the first window. */
  double x[16];
  for (int i = 0; i < 16; i++) x[i] = i;
  x[0] = 5, x[1] = 5;
  pool_shape_t s = {.n = 1, .c = 1, .h = 4, .w = 4, .k = 2, .stride = 2};
  CHECK(pool_shape_init(&s) == 0 && s.ho == 2 && s.wo == 2);
  double y[4], dx[16] = {0}, dy[4] = {1, 2, 3, 4};
  int32_t am[4];
  maxpool_forward(&s, x, y, am);
  CHECK(y[0] == 5 && y[1] == 7 && y[2] == 13 && y[3] == 15);
  /* 5 at offsets 0, 1 and 5 of the first window: the first (0) wins, as PyTorch */
  CHECK(am[0] == 0 && am[1] == 7 && am[2] == 13 && am[3] == 15);
  maxpool_backward(&s, dy, am, dx, 0);
  CHECK(dx[0] == 1 && dx[1] == 0 && dx[7] == 2 && dx[15] == 4);
  avgpool_forward(&s, x, y);
  CHECK_NEAR(y[3], (10 + 11 + 14 + 15) / 4.0, 1e-15);
  double g[2];
  global_avgpool_forward(1, 2, 8, x, g);
  CHECK_NEAR(g[1], (8 + 9 + 10 + 11 + 12 + 13 + 14 + 15) / 8.0, 1e-15);
  /* A NaN wins its window, and only its window, as in PyTorch. */
  x[6] = NAN;
  maxpool_forward(&s, x, y, am);
  CHECK(y[0] == 5 && isnan(y[1]) && am[1] == 6 && y[2] == 13 && am[2] == 13 && y[3] == 15);
}

/* The vectorised 2x2 path against a plain reference on planes full of ties (values
 * 0..2), odd sizes (a row and a column left over): values and positions exact. */
static void test_pool_ties(void) {
  enum { N = 2, C = 3, H = 7, W = 9 };
  static double x[N * C * H * W], y[N * C * 3 * 4];
  static int32_t am[N * C * 3 * 4];
  unsigned seed = 12345;
  for (int i = 0; i < N * C * H * W; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (double)((seed >> 16) % 3);
  }
  pool_shape_t s = {.n = N, .c = C, .h = H, .w = W, .k = 2, .stride = 2};
  CHECK(pool_shape_init(&s) == 0 && s.ho == 3 && s.wo == 4);
  maxpool_forward(&s, x, y, am);
  int wrong = 0;
  for (int p = 0; p < N * C; p++)
    for (int oy = 0; oy < 3; oy++)
      for (int ox = 0; ox < 4; ox++) {
        const double *xp = x + p * H * W;
        int best = 2 * oy * W + 2 * ox;
        const int cand[3] = {best + 1, best + W, best + W + 1};
        for (int k = 0; k < 3; k++)
          if (xp[cand[k]] > xp[best]) best = cand[k];
        const int o = p * 12 + oy * 4 + ox;
        wrong += y[o] != xp[best] || am[o] != best;
      }
  CHECK(wrong == 0);
}

static void test_xent(void) {
  const double z[6] = {1, 2, 3, 1000, 0, -1000};
  const uint8_t lab[2] = {0, 0};
  double d[6];
  int correct;
  double loss = softmax_xent(2, 3, z, lab, 0.5, d, NULL, &correct);
  double lse = 3 + log(exp(-2.0) + exp(-1.0) + 1);
  CHECK_NEAR(loss, lse - 1 + 0.0, 1e-14); /* second row: loss ~ 0, no overflow */
  CHECK(correct == 1);
  CHECK_NEAR(d[0], 0.5 * (exp(1 - lse) - 1), 1e-15);
  CHECK_NEAR(d[2], 0.5 * exp(3 - lse), 1e-15);
  CHECK_NEAR(d[3], 0.0, 1e-15);
}

int main(void) {
  test_bn();
  test_pool();
  test_pool_ties();
  test_xent();
  CHECK_RETURN();
}
