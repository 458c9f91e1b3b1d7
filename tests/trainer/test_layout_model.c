/* test_layout_model.c: a WideResNet whose activations stay in oneDNN's channel-blocked
 * layout between convolutions (model.c: assign_layouts) computes bit for bit what the
 * same model in NCHW computes (HV_LAYOUT=nchw): logits, loss, every parameter gradient,
 * the input gradient and the running statistics after a training step, and logits in
 * evaluation. The same holds when the convolutions take their im2col fallback (the
 * blocked tensors converted around it), and for the ConvNet, whose max poolings read
 * the blocked layout and the last of which writes NCHW for its linear layer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "models.h"

enum { BATCH = 6, SIDE = 16, MNIST_SIDE = 28 };

static model_t *make(const char *layout, int fallback, int convnet) {
  setenv("HV_LAYOUT", layout, 1);
  char err[256] = "";
  model_t *m = convnet ? model_convnet_create(10, 1, BATCH, 7, err, sizeof err)
                       : model_wrn_create(10, 2, 10, 0.0, 3, SIDE, SIDE, BATCH, 7, err, sizeof err);
  if (!m) fprintf(stderr, "model create: %s\n", err);
  CHECK(m != NULL);
  if (m) m->conv_fallback_test = fallback, m->want_input_grad = 1;
  return m;
}

static double train_step(model_t *m, const real_t *x, const uint8_t *y) {
  model_zero_grad(m);
  model_forward(m, x, BATCH, 1);
  double loss = model_loss(m, y, (real_t)1.0 / BATCH, NULL);
  model_backward(m, NULL, NULL);
  return loss;
}

static void compare(int fallback, int convnet, const real_t *x, const uint8_t *y) {
  model_t *plain = make("nchw", fallback, convnet), *blocked = make("auto", fallback, convnet);
  const size_t in_size = convnet ? (size_t)MNIST_SIDE * MNIST_SIDE : (size_t)3 * SIDE * SIDE;
  if (!plain || !blocked) return;
  CHECK(plain->blocked_layout == 0 && blocked->blocked_layout == 1);
  CHECK(memcmp(plain->params, blocked->params, plain->n_params * sizeof(real_t)) == 0);
  for (int step = 0; step < 2; step++) {
    double lp = train_step(plain, x, y), lb = train_step(blocked, x, y);
    CHECK(lp == lb);
    const size_t outs = (size_t)BATCH * model_output_size(plain);
    CHECK(memcmp(model_output(plain), model_output(blocked), outs * sizeof(real_t)) == 0);
    CHECK(memcmp(plain->grads, blocked->grads, plain->n_params * sizeof(real_t)) == 0);
    CHECK(memcmp(plain->buffers, blocked->buffers, plain->n_buffers * sizeof(real_t)) == 0);
    CHECK(memcmp(model_input_grad(plain), model_input_grad(blocked), (size_t)BATCH * in_size * sizeof(real_t)) == 0);
    /* Move the parameters on (the same way in both) so the second step differs. */
    for (size_t i = 0; i < plain->n_params; i++) {
      plain->params[i] -= (real_t)0.1 * plain->grads[i];
      blocked->params[i] -= (real_t)0.1 * blocked->grads[i];
    }
  }
  model_forward(plain, x, BATCH - 1, 0);
  model_forward(blocked, x, BATCH - 1, 0);
  CHECK(memcmp(model_output(plain), model_output(blocked), (size_t)(BATCH - 1) * 10 * sizeof(real_t)) == 0);
  model_free(plain);
  model_free(blocked);
}

int main(void) {
  const size_t n = (size_t)BATCH * MNIST_SIDE * MNIST_SIDE; /* enough for either model */
  real_t *x = malloc(n * sizeof *x);
  uint8_t y[BATCH];
  unsigned s = 1;
  for (size_t i = 0; i < n; i++) s = s * 1103515245u + 12345u, x[i] = (real_t)(((s >> 8) & 0xffff) / 16384.0 - 2.0);
  for (int i = 0; i < BATCH; i++) y[i] = (uint8_t)(i * 3 % 10);
  compare(0, 0, x, y); /* oneDNN convolutions */
  compare(1, 0, x, y); /* their im2col fallback */
  compare(0, 1, x, y); /* the ConvNet: blocked max pooling, NCHW into its linear layer */
  compare(1, 1, x, y);
  free(x);
  CHECK_RETURN();
}
