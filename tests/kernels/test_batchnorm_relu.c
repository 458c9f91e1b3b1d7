/* test_batchnorm_relu.c: batch norm with the ReLU after it fused into its passes
 * (batchnorm.h: relu = 1 in the channel-blocked layout, the _relu variants in NCHW) gives bit for bit what the unfused
 * pair gives: batch norm then relu_forward forward; relu_backward_write then batch
 * norm's backward. Training and evaluation, dx added to or written, 1 and 2 threads,
 * maps with and without a tail of fewer than 8 positions, one and several channel
 * blocks, inputs centred so that about half the outputs are cut by the ReLU (and a
 * run where the ReLU cuts most). float32, as
 * the models run them. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "batchnorm.h"
#include "check.h"
#include "eltwise.h"
#define RAND_REAL_SEED 4242u
#include "rand_real.h"


static int same(const real_t *a, const real_t *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

/* beta_offset shifts beta: 0 cuts about half, -3 nearly everything. */
static void test_fused(int n, int c, int hw, double beta_offset) {
  const size_t len = (size_t)n * c * hw;
  real_t *x = rand_array(len, 0.3), *dy = rand_array(len, 0), *gamma = rand_array((size_t)c, 1),
         *beta = rand_array((size_t)c, beta_offset);
  double *sa = malloc(batchnorm_blocked_scratch(n, c) * sizeof *sa),
         *sb = malloc(batchnorm_blocked_scratch(n, c) * sizeof *sb);
  real_t *bn = malloc(len * sizeof *bn), *ref = malloc(len * sizeof *ref), *fused = malloc(len * sizeof *fused),
         *g = malloc(len * sizeof *g);
  real_t *st = malloc(16 * (size_t)c * sizeof *st); /* running mean/var, saved mean/invstd, dgamma/dbeta: x2 */
  for (int train = 1; train >= 0; train--) {
    for (int ch = 0; ch < c; ch++) st[ch] = st[8 * c + ch] = (real_t)0.25, st[c + ch] = st[9 * c + ch] = 2;
    if (train) {
      batchnorm_forward_train_blocked(n, c, hw, x, gamma, beta, (real_t)1e-5, (real_t)0.1, st, st + c, st + 2 * c,
                                      st + 3 * c, bn, 0, sa);
      batchnorm_forward_train_blocked(n, c, hw, x, gamma, beta, (real_t)1e-5, (real_t)0.1, st + 8 * c, st + 9 * c,
                                      st + 10 * c, st + 11 * c, fused, 1, sb);
    } else {
      batchnorm_forward_eval_blocked(n, c, hw, x, gamma, beta, (real_t)1e-5, st, st + c, st + 2 * c, st + 3 * c, bn,
                                     0, sa);
      batchnorm_forward_eval_blocked(n, c, hw, x, gamma, beta, (real_t)1e-5, st + 8 * c, st + 9 * c, st + 10 * c,
                                     st + 11 * c, fused, 1, sb);
    }
    relu_forward(len, bn, ref);
    CHECK(same(ref, fused, len), "forward differs (train %d, n %d c %d hw %d)", train, n, c, hw);
    CHECK(same(st, st + 8 * (size_t)c, 4 * (size_t)c)); /* running and saved statistics */
    size_t cut = 0;
    for (size_t i = 0; i < len; i++) cut += fused[i] == 0;
    CHECK(cut > 0 && cut < len); /* the mask is neither all nor nothing */
    for (int write = 0; write <= 1; write++) {
      /* Backward accumulates into dx, dgamma, dbeta: start both from the same values. */
      real_t *dx_ref = rand_array(len, 0), *dx_fused = malloc(len * sizeof *dx_fused);
      memcpy(dx_fused, dx_ref, len * sizeof *dx_ref);
      for (int ch = 0; ch < c; ch++) st[4 * c + ch] = st[12 * c + ch] = 1, st[5 * c + ch] = st[13 * c + ch] = -1;
      relu_backward_write(len, ref, dy, g);
      batchnorm_backward_blocked(n, c, hw, train, x, g, gamma, st + 2 * c, st + 3 * c, dx_ref, write, st + 4 * c,
                                 st + 5 * c, 0, sa);
      batchnorm_backward_blocked(n, c, hw, train, x, dy, gamma, st + 10 * c, st + 11 * c, dx_fused, write,
                                 st + 12 * c, st + 13 * c, 1, sb);
      CHECK(same(dx_ref, dx_fused, len), "dx differs (train %d, write %d, n %d c %d hw %d)", train, write, n, c, hw);
      CHECK(same(st + 4 * c, st + 12 * c, 2 * (size_t)c), "dgamma/dbeta differ (train %d)", train);
      int moved = 0; /* accumulated something into dgamma */
      for (int ch = 0; ch < c; ch++) moved += st[4 * c + ch] != 1;
      CHECK(moved > 0);
      free(dx_ref), free(dx_fused);
    }
  }
  free(x), free(dy), free(gamma), free(beta), free(sa), free(sb), free(bn), free(ref), free(fused), free(g), free(st);
}

/* The NCHW kernels (batchnorm.c) likewise: the _relu variants against batch norm,
 * relu_forward, relu_backward_write and batch norm's backward. */
static void test_fused_nchw(int n, int c, int hw, double beta_offset) {
  const size_t len = (size_t)n * c * hw;
  real_t *x = rand_array(len, 0.3), *dy = rand_array(len, 0), *gamma = rand_array((size_t)c, 1),
         *beta = rand_array((size_t)c, beta_offset), *coef = malloc(2 * (size_t)c * sizeof *coef);
  real_t *bn = malloc(len * sizeof *bn), *ref = malloc(len * sizeof *ref), *fused = malloc(len * sizeof *fused),
         *g = malloc(len * sizeof *g);
  real_t *st = malloc(16 * (size_t)c * sizeof *st);
  for (int train = 1; train >= 0; train--) {
    for (int ch = 0; ch < c; ch++) st[ch] = st[8 * c + ch] = (real_t)0.25, st[c + ch] = st[9 * c + ch] = 2;
    if (train) {
      batchnorm_forward_train(n, c, hw, x, gamma, beta, (real_t)1e-5, (real_t)0.1, st, st + c, st + 2 * c, st + 3 * c,
                              bn);
      batchnorm_forward_train_relu(n, c, hw, x, gamma, beta, (real_t)1e-5, (real_t)0.1, st + 8 * c, st + 9 * c,
                                   st + 10 * c, st + 11 * c, fused, coef);
    } else {
      batchnorm_forward_eval(n, c, hw, x, gamma, beta, (real_t)1e-5, st, st + c, st + 2 * c, st + 3 * c, bn);
      batchnorm_forward_eval_relu(n, c, hw, x, gamma, beta, (real_t)1e-5, st + 8 * c, st + 9 * c, st + 10 * c,
                                  st + 11 * c, fused, coef);
    }
    relu_forward(len, bn, ref);
    CHECK(same(ref, fused, len), "NCHW forward differs (train %d, n %d c %d hw %d)", train, n, c, hw);
    CHECK(same(st, st + 8 * (size_t)c, 4 * (size_t)c));
    for (int write = 0; write <= 1; write++) {
      real_t *dx_ref = rand_array(len, 0), *dx_fused = malloc(len * sizeof *dx_fused);
      memcpy(dx_fused, dx_ref, len * sizeof *dx_ref);
      for (int ch = 0; ch < c; ch++) st[4 * c + ch] = st[12 * c + ch] = 1, st[5 * c + ch] = st[13 * c + ch] = -1;
      relu_backward_write(len, ref, dy, g);
      batchnorm_backward(n, c, hw, train, x, g, gamma, st + 2 * c, st + 3 * c, dx_ref, write, st + 4 * c, st + 5 * c);
      batchnorm_backward_relu(n, c, hw, train, x, dy, gamma, st + 10 * c, st + 11 * c, dx_fused, write, st + 12 * c,
                              st + 13 * c, coef);
      CHECK(same(dx_ref, dx_fused, len), "NCHW dx differs (train %d, write %d, n %d c %d hw %d)", train, write, n, c,
            hw);
      CHECK(same(st + 4 * c, st + 12 * c, 2 * (size_t)c), "NCHW dgamma/dbeta differ (train %d)", train);
      free(dx_ref), free(dx_fused);
    }
  }
  free(x), free(dy), free(gamma), free(beta), free(coef), free(bn), free(ref), free(fused), free(g), free(st);
}

int main(void) {
  for (int threads = 1; threads <= 2; threads++) {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    test_fused(3, 16, 37, 0);    /* one block, a tail of 5 */
    test_fused(4, 48, 64, 0);    /* three blocks, no tail */
    test_fused(64, 16, 1024, 0); /* WRN-10-1's first group: threads share the rows */
    test_fused(2, 32, 9, -1.5);  /* most cut */
    test_fused_nchw(3, 5, 37, 0);     /* rows with a tail */
    test_fused_nchw(100, 16, 784, 0); /* the ConvNet's first batch norm: rows longer than the dx chunk */
    test_fused_nchw(4, 3, 600, -1.5);
  }
  CHECK_RETURN();
}
