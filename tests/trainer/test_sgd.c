/* test_sgd.c: SGD against torch.optim.SGD's update rule, hand-computed, and one
 * training step of a softmax-regression model (float32 build) against the closed-
 * form gradient and update computed here in double; LR schedules at known points. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "model.h"
#include "optim.h"
#include "sgd.h"

static void test_rule(void) {
  /* p = 1, grad 0.5 twice, lr 0.1, momentum 0.9, weight decay 0.01, Nesterov:
   * step 1: g = 0.5 + 0.01*1 = 0.51; buf = 0.51; g = 0.51 + 0.9*0.51 = 0.969;
   *         p = 1 - 0.0969 = 0.9031
   * step 2: g = 0.5 + 0.01*0.9031 = 0.509031; buf = 0.9*0.51 + 0.509031 = 0.968031;
   *         g = 0.509031 + 0.9*0.968031 = 1.3802589; p = 0.9031 - 0.13802589 = 0.76507411 */
  real_t p = 1, g = (real_t)0.5, buf = 0;
  sgd_update(1, &p, &g, &buf, (real_t)0.1, (real_t)0.9, (real_t)0.01, 1, 1);
  CHECK_NEAR(p, 0.9031, 1e-6);
  CHECK_NEAR(buf, 0.51, 1e-6);
  sgd_update(1, &p, &g, &buf, (real_t)0.1, (real_t)0.9, (real_t)0.01, 1, 0);
  CHECK_NEAR(buf, 0.968031, 1e-6);
  CHECK_NEAR(p, 0.76507411, 1e-6);
  /* Classic momentum (no Nesterov), no decay: buf = g, then 0.9*g + g. */
  p = 1, buf = 0;
  sgd_update(1, &p, &g, &buf, (real_t)0.1, (real_t)0.9, 0, 0, 1);
  CHECK_NEAR(p, 0.95, 1e-7);
  sgd_update(1, &p, &g, &buf, (real_t)0.1, (real_t)0.9, 0, 0, 0);
  CHECK_NEAR(p, 0.95 - 0.1 * 0.95, 1e-7);
  /* Plain SGD leaves the buffer alone. */
  p = 2, buf = 7;
  sgd_update(1, &p, &g, &buf, (real_t)0.5, 0, 0, 0, 1);
  CHECK(p == (real_t)1.75 && buf == 7);
  /* In the float32 build the update is bit-identical to the same float operations in
   * PyTorch's order: g + wd*p, m*buf + g, g + m*buf, p - lr*g. */
  real_t pf = (real_t)0.3, gf = (real_t)-0.7, bf = (real_t)0.2;
  real_t e = gf + (real_t)0.0005 * pf, b = (real_t)0.9 * bf + e;
  real_t want = pf - (real_t)0.05 * (e + (real_t)0.9 * b);
  sgd_update(1, &pf, &gf, &bf, (real_t)0.05, (real_t)0.9, (real_t)0.0005, 1, 0);
  CHECK(pf == want && bf == b);
}

static void test_model_step(void) {
  /* Softmax regression: 4 inputs -> 3 classes, batch 5. */
  model_t *m = model_create(4, 1, 1);
  CHECK(model_add_linear(m, "fc", -1, 3, 1) == 0);
  CHECK(model_finalize(m, 5, INIT_PYTORCH_DEFAULT, 3) == 0);
  const int n = 5, k = 3, d = 4;
  real_t x[20];
  uint8_t y[5] = {0, 2, 1, 2, 0};
  for (int i = 0; i < 20; i++) x[i] = (real_t)((i * 37 % 11) - 5) / 4;
  double w[15], dw[15] = {0};
  for (int i = 0; i < 15; i++) w[i] = m->params[i]; /* W (3,4) then b (3) */
  double loss = 0;
  for (int i = 0; i < n; i++) {
    double z[3], mx = -1e300, s = 0;
    for (int c = 0; c < k; c++) {
      z[c] = w[12 + c];
      for (int j = 0; j < d; j++) z[c] += w[c * d + j] * x[i * d + j];
      if (z[c] > mx) mx = z[c];
    }
    for (int c = 0; c < k; c++) s += exp(z[c] - mx);
    loss += -(z[y[i]] - mx - log(s)) / n;
    for (int c = 0; c < k; c++) {
      double gz = (exp(z[c] - mx) / s - (c == y[i])) / n;
      for (int j = 0; j < d; j++) dw[c * d + j] += gz * x[i * d + j];
      dw[12 + c] += gz;
    }
  }
  model_forward(m, x, n, 1);
  double got = model_loss(m, y, (real_t)1.0 / n, NULL) / n;
  CHECK_NEAR(got, loss, 1e-6);
  model_zero_grad(m);
  model_backward(m, NULL, NULL);
  sgd_t opt;
  char err[128];
  CHECK(sgd_init(&opt, m, 0.1, 0.9, 1e-4, 1, err, sizeof err) == 0);
  sgd_step(&opt, m);
  for (int i = 0; i < 15; i++) {
    CHECK_NEAR(m->grads[i], dw[i], 1e-6);
    double g = dw[i] + 1e-4 * w[i], want = w[i] - 0.1 * (g + 0.9 * g);
    CHECK_NEAR(m->params[i], want, 1e-6);
  }
  CHECK(opt.steps == 1 && opt.has_buf == 1);
  sgd_free(&opt);
  CHECK(sgd_init(&opt, m, 0.1, 0, 0, 1, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "Nesterov");
  model_free(m);
}

static void test_schedule(void) {
  lr_schedule_t s = {.kind = LR_COSINE, .base_lr = 0.1, .base_batch = 256, .global_batch = 1024,
                     .warmup_epochs = 5, .total_epochs = 25};
  CHECK_NEAR(lr_peak(&s), 0.4, 1e-15);
  CHECK_NEAR(lr_at(&s, 0), 0.1, 1e-15);
  CHECK_NEAR(lr_at(&s, 2.5), 0.25, 1e-15);
  CHECK_NEAR(lr_at(&s, 5), 0.4, 1e-15);
  CHECK_NEAR(lr_at(&s, 15), 0.2, 1e-15);
  CHECK_NEAR(lr_at(&s, 25), 0.0, 1e-15);
  lr_schedule_t st = {.kind = LR_STEP, .base_lr = 0.1, .step_gamma = 0.2, .n_milestones = 3,
                      .milestones = {60, 120, 160}};
  CHECK_NEAR(lr_at(&st, 59.9), 0.1, 1e-15);
  CHECK_NEAR(lr_at(&st, 60), 0.02, 1e-15);
  CHECK_NEAR(lr_at(&st, 170), 0.1 * 0.2 * 0.2 * 0.2, 1e-15);
  lr_schedule_t c = {.kind = LR_CONSTANT, .base_lr = 0.05};
  CHECK_NEAR(lr_at(&c, 3), 0.05, 1e-15);
  lr_kind_t k;
  CHECK(lr_kind_parse("cosine", &k) == 0 && k == LR_COSINE);
  CHECK(lr_kind_parse("linear", &k) == -1);
}

int main(void) {
  test_rule();
  test_model_step();
  test_schedule();
  CHECK_RETURN();
}
