/* test_gradcheck_models.c: float64 finite-difference check of the whole models
 * (WideResNet with dropout, the MNIST bagging net, the DDP-tutorial ConvNet with
 * batch norm) on a random subset of parameters and input entries, and their output
 * shapes and parameter counts against PyTorch's (sum of p.numel()). */
#include <stdio.h>

#include "gradcheck.h"
#include "models.h"

int main(void) {
  char err[256];
  /* WRN-10-1 on small 3x8x8 images keeps the check fast; the graph is the CIFAR one. */
  model_t *m = model_wrn_create(10, 1, 10, 0.3, 3, 8, 8, 2, 5, err, sizeof err);
  CHECK(m != NULL);
  if (m) {
    gradcheck_model("WRN-10-1 (dropout 0.3)", m, 2, 1, 60, 21);
    model_free(m);
  }
  m = model_wrn_create(16, 2, 10, 0, 3, 8, 8, 2, 5, err, sizeof err);
  CHECK(m != NULL);
  if (m) {
    gradcheck_model("WRN-16-2", m, 2, 1, 40, 22);
    model_free(m);
  }
  m = model_mnist_net_create(3, 5, 8, 2, 3, err, sizeof err);
  CHECK(m != NULL);
  if (m) {
    CHECK_EQ_INT(m->n_params, 3 * 25 + 3 + 3 * 24 * 24 * 8 + 8 + 8 * 10 + 10);
    gradcheck_model("MNIST net 3x5x5, 8 hidden", m, 2, 1, 100, 23);
    model_free(m);
  }
  m = model_convnet_create(10, 1, 3, 4, err, sizeof err);
  CHECK(m != NULL);
  if (m) {
    /* PyTorch: 416 + 32 + 12832 + 64 + 15690 = 29034 */
    CHECK_EQ_INT(m->n_params, 29034);
    CHECK_EQ_INT(m->n_buffers, 2 * (16 + 32));
    gradcheck_model("DDP ConvNet (BN)", m, 3, 1, 80, 24);
    model_free(m);
  }
  /* Parameter counts of the CIFAR models as PyTorch's WideResNet reports them. */
  m = model_wrn_create(16, 4, 10, 0, 3, 32, 32, 1, 1, err, sizeof err);
  CHECK(m != NULL);
  if (m) {
    CHECK_EQ_INT(m->n_params, 2748890);
    model_free(m);
  }
  m = model_wrn_create(10, 1, 10, 0, 3, 32, 32, 1, 1, err, sizeof err);
  if (m) {
    CHECK_EQ_INT(m->n_params, 77850);
    model_free(m);
  }
  CHECK(model_wrn_create(12, 1, 10, 0, 3, 32, 32, 1, 1, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "6n+4");
  CHECK_RETURN();
}
