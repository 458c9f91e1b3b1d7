/* test_fusion_model.c: a WideResNet with the CPU's fused passes (model.c: fuse_layers,
 * HV_FUSE unset) computes bit for bit what the same model computes with every layer's
 * own passes (HV_FUSE=off): logits, loss, every parameter gradient, the input gradient
 * and the running statistics after each of two training steps, and logits in
 * evaluation; with 1 and 2 threads. Widths 1 and 2 cover the identity and projection
 * shortcuts of the residual blocks; the ConvNet the batch norm + ReLU in the blocked
 * layout and, with HV_LAYOUT=nchw, in NCHW (the adds' gradients shared with or written into
 * their inputs, the shortcut convolution writing the gradient its block's first
 * convolution then adds to). It also checks that fusion happened (else the
 * comparison would be vacuous), that HV_FUSE=off turns it off, and that a bad
 * HV_FUSE value fails the model's build. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "check.h"
#include "model.h"
#include "models.h"

enum { BATCH = 6, SIDE = 16 };

static model_t *make(const char *fuse, int widen) {
  setenv("HV_FUSE", fuse, 1);
  char err[256] = "";
  model_t *m = model_wrn_create(10, widen, 10, 0.0, 3, SIDE, SIDE, BATCH, 7, err, sizeof err);
  if (!m) fprintf(stderr, "model_wrn_create: %s\n", err);
  CHECK(m != NULL);
  if (m) m->want_input_grad = 1;
  return m;
}

static int fused_layers(const model_t *m) {
  int n = 0;
  for (int i = 0; i < m->n_layers; i++) n += m->layers[i].fused_relu + m->layers[i].fused_into_producer;
  return n;
}

/* Inputs of adds that share the add's gradient, and that it writes. */
static int shared_grads(const model_t *m) {
  int n = 0;
  for (int i = 0; i < m->n_layers; i++) n += m->layers[i].dout_shared;
  return n;
}

static int overwriting(const model_t *m) {
  int n = 0;
  for (int i = 0; i < m->n_layers; i++) n += m->layers[i].dx_overwrite;
  return n;
}

static int written_grads(const model_t *m) {
  int n = 0;
  for (int i = 0; i < m->n_layers; i++) n += (m->layers[i].add_grad_write & 1) + (m->layers[i].add_grad_write >> 1 & 1);
  return n;
}

static double train_step(model_t *m, const real_t *x, const uint8_t *y) {
  model_zero_grad(m);
  model_forward(m, x, BATCH, 1);
  double loss = model_loss(m, y, (real_t)1.0 / BATCH, NULL);
  model_backward(m, NULL, NULL);
  return loss;
}

static void compare(int widen, const real_t *x, const uint8_t *y) {
  model_t *ref = make("off", widen), *fused = make("auto", widen);
  if (!ref || !fused) return;
  CHECK(ref->blocked_layout == 1 && fused->blocked_layout == 1);
  CHECK(fused_layers(ref) == 0 && shared_grads(ref) == 0 && written_grads(ref) == 0);
  CHECK(fused_layers(fused) >= 2 * 7, "WRN-10-%d: %d fused layers, expected every batch norm + ReLU pair", widen,
        fused_layers(fused));
  /* Widen 1: an identity block (conv2 shares, the block input's gradient is written)
   * and two projection blocks (conv2 and the shortcut share); widen 2: three
   * projection blocks. */
  CHECK(shared_grads(fused) == (widen == 1 ? 5 : 6), "WRN-10-%d: %d shared gradients", widen, shared_grads(fused));
  CHECK(written_grads(fused) == (widen == 1 ? 1 : 0), "WRN-10-%d: %d written gradients", widen, written_grads(fused));
  /* The shortcut convolution of each projection block writes the gradient it shares
   * with the block's first convolution. */
  CHECK(overwriting(fused) - overwriting(ref) == (widen == 1 ? 2 : 3), "WRN-10-%d: %d more layers write their input "
        "gradient", widen, overwriting(fused) - overwriting(ref));
  CHECK(memcmp(ref->params, fused->params, ref->n_params * sizeof(real_t)) == 0);
  for (int step = 0; step < 2; step++) {
    double lr = train_step(ref, x, y), lf = train_step(fused, x, y);
    CHECK(lr == lf, "WRN-10-%d step %d: loss %.17g fused %.17g", widen, step, lr, lf);
    const size_t outs = (size_t)BATCH * model_output_size(ref);
    CHECK(memcmp(model_output(ref), model_output(fused), outs * sizeof(real_t)) == 0);
    CHECK(memcmp(ref->grads, fused->grads, ref->n_params * sizeof(real_t)) == 0, "WRN-10-%d step %d: gradients differ",
          widen, step);
    CHECK(memcmp(ref->buffers, fused->buffers, ref->n_buffers * sizeof(real_t)) == 0);
    CHECK(memcmp(model_input_grad(ref), model_input_grad(fused), (size_t)BATCH * 3 * SIDE * SIDE * sizeof(real_t)) ==
          0);
    /* Move the parameters on (the same way in both) so the second step differs. */
    for (size_t i = 0; i < ref->n_params; i++) {
      ref->params[i] -= (real_t)0.1 * ref->grads[i];
      fused->params[i] -= (real_t)0.1 * fused->grads[i];
    }
  }
  model_forward(ref, x, BATCH - 1, 0);
  model_forward(fused, x, BATCH - 1, 0);
  CHECK(memcmp(model_output(ref), model_output(fused), (size_t)(BATCH - 1) * 10 * sizeof(real_t)) == 0);
  model_free(ref);
  model_free(fused);
}

/* The ConvNet, blocked (layout "auto") or NCHW ("nchw"): batch norm + ReLU fused in
 * batchnorm.c's or batchnorm_blocked.c's passes, the same bits as apart. */
static void compare_convnet(const char *layout) {
  enum { N = 5 };
  char err[256] = "";
  setenv("HV_LAYOUT", layout, 1);
  setenv("HV_FUSE", "off", 1);
  model_t *ref = model_convnet_create(10, 1, N, 3, err, sizeof err);
  setenv("HV_FUSE", "auto", 1);
  model_t *fused = model_convnet_create(10, 1, N, 3, err, sizeof err);
  CHECK(ref && fused);
  if (!ref || !fused) return;
  const int blocked = strcmp(layout, "nchw") != 0;
  CHECK(ref->blocked_layout == blocked && fused->blocked_layout == blocked);
  CHECK(fused_layers(fused) == 4 && fused_layers(ref) == 0);
  real_t x[N * 28 * 28];
  uint8_t y[N];
  unsigned s = 11;
  for (int i = 0; i < N * 28 * 28; i++) s = s * 1103515245u + 12345u, x[i] = (real_t)(((s >> 8) & 0xffff) / 16384.0 - 2.0);
  for (int i = 0; i < N; i++) y[i] = (uint8_t)(i * 3 % 10);
  for (int step = 0; step < 2; step++) {
    model_zero_grad(ref), model_zero_grad(fused);
    model_forward(ref, x, N, 1), model_forward(fused, x, N, 1);
    CHECK(model_loss(ref, y, (real_t)1.0 / N, NULL) == model_loss(fused, y, (real_t)1.0 / N, NULL));
    model_backward(ref, NULL, NULL), model_backward(fused, NULL, NULL);
    CHECK(memcmp(ref->grads, fused->grads, ref->n_params * sizeof(real_t)) == 0, "ConvNet step %d: gradients differ",
          step);
    CHECK(memcmp(ref->buffers, fused->buffers, ref->n_buffers * sizeof(real_t)) == 0);
    for (size_t i = 0; i < ref->n_params; i++) {
      ref->params[i] -= (real_t)0.1 * ref->grads[i];
      fused->params[i] -= (real_t)0.1 * fused->grads[i];
    }
  }
  model_forward(ref, x, N, 0), model_forward(fused, x, N, 0);
  CHECK(memcmp(model_output(ref), model_output(fused), (size_t)N * 10 * sizeof(real_t)) == 0);
  model_free(ref);
  model_free(fused);
  unsetenv("HV_LAYOUT");
}

int main(void) {
  const size_t n = (size_t)BATCH * 3 * SIDE * SIDE;
  real_t *x = malloc(n * sizeof *x);
  uint8_t y[BATCH];
  unsigned s = 7;
  for (size_t i = 0; i < n; i++) s = s * 1103515245u + 12345u, x[i] = (real_t)(((s >> 8) & 0xffff) / 16384.0 - 2.0);
  for (int i = 0; i < BATCH; i++) y[i] = (uint8_t)(i * 7 % 10);
  for (int threads = 1; threads <= 2; threads++) {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    compare(1, x, y);
    compare(2, x, y);
    compare_convnet("auto");
    compare_convnet("nchw");
  }
  setenv("HV_FUSE", "maybe", 1);
  char err[256] = "";
  model_t *bad = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, BATCH, 7, err, sizeof err);
  CHECK(bad == NULL);
  CHECK_CONTAINS(err, "HV_FUSE='maybe' is not valid");
  model_free(bad);
  free(x);
  CHECK_RETURN();
}
