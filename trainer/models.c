/* models.c: builders of WideResNet, the MNIST bagging net and the DDP-tutorial
 * ConvNet on top of model.h. Layer names follow the PyTorch modules' attribute
 * names (block1.layer.0.conv1 ...) so logs and checkpoints read alike. */
#include "models.h"

#include <stdio.h>
#include <string.h>

/* Stops a builder at the first failed add: the model's err says why. */
#define ADD(expr)            \
  do {                       \
    if ((id = (expr)) < 0) { \
      goto fail;             \
    }                        \
  } while (0)

static model_t *finish(model_t *m, int max_batch, init_mode_t init, uint64_t seed, char *err,
                       size_t errlen) {
  if (model_finalize(m, max_batch, init, seed) == 0) return m;
  snprintf(err, errlen, "%s", m->err);
  model_free(m);
  return NULL;
}

/* One pre-activation basic block; returns the id of its output (the add). */
static int wrn_block(model_t *m, const char *pfx, int x, int in_ch, int out_ch, int stride,
                     double dropout) {
  char n[64];
  int id, act, shortcut;
  snprintf(n, sizeof n, "%s.bn1", pfx);
  ADD(model_add_batchnorm2d(m, n, x));
  snprintf(n, sizeof n, "%s.relu1", pfx);
  ADD(act = model_add_relu(m, n, id));
  snprintf(n, sizeof n, "%s.conv1", pfx);
  ADD(model_add_conv2d(m, n, act, out_ch, 3, stride, 1, 0));
  snprintf(n, sizeof n, "%s.bn2", pfx);
  ADD(model_add_batchnorm2d(m, n, id));
  snprintf(n, sizeof n, "%s.relu2", pfx);
  ADD(model_add_relu(m, n, id));
  if (dropout > 0) {
    snprintf(n, sizeof n, "%s.dropout", pfx);
    ADD(model_add_dropout(m, n, id, (real_t)dropout));
  }
  snprintf(n, sizeof n, "%s.conv2", pfx);
  int body;
  ADD(body = model_add_conv2d(m, n, id, out_ch, 3, 1, 1, 0));
  if (in_ch == out_ch && stride == 1) {
    shortcut = x; /* identity on the raw (not activated) input */
  } else {
    /* The projection reads the activated input, as in the reference code. */
    snprintf(n, sizeof n, "%s.convShortcut", pfx);
    ADD(shortcut = model_add_conv2d(m, n, act, out_ch, 1, stride, 0, 0));
  }
  snprintf(n, sizeof n, "%s.add", pfx);
  ADD(model_add_add(m, n, body, shortcut));
  return id;
fail:
  return -1;
}

model_t *model_wrn_create(int depth, int widen, int num_classes, double dropout, int c, int h,
                          int w, int max_batch, uint64_t seed, char *err, size_t errlen) {
  if (depth < 10 || (depth - 4) % 6 != 0 || widen < 1 || num_classes < 2) {
    snprintf(err, errlen, "WideResNet: depth %d must be 6n+4 (10, 16, 22, 28, ...) and width %d >= 1",
             depth, widen);
    return NULL;
  }
  model_t *m = model_create(c, h, w);
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  const int n = (depth - 4) / 6, widths[4] = {16, 16 * widen, 32 * widen, 64 * widen};
  int id;
  ADD(model_add_conv2d(m, "conv1", -1, widths[0], 3, 1, 1, 0));
  int x = id, in_ch = widths[0];
  for (int g = 0; g < 3; g++) {
    for (int b = 0; b < n; b++) {
      char pfx[24];
      snprintf(pfx, sizeof pfx, "block%d.layer.%d", g + 1, b);
      x = wrn_block(m, pfx, x, in_ch, widths[g + 1], b == 0 && g > 0 ? 2 : 1, dropout);
      if (x < 0) goto fail;
      in_ch = widths[g + 1];
    }
  }
  ADD(model_add_batchnorm2d(m, "bn1", x));
  ADD(model_add_relu(m, "relu", id));
  ADD(model_add_global_avgpool(m, "avgpool", id));
  ADD(model_add_linear(m, "fc", id, num_classes, 1));
  return finish(m, max_batch, INIT_KAIMING_NORMAL_FAN_OUT, seed, err, errlen);
fail:
  snprintf(err, errlen, "WideResNet-%d-%d: %s", depth, widen, m->err);
  model_free(m);
  return NULL;
}

model_t *model_mnist_net_create(int n_conv, int kernel, int n_hidden, int max_batch,
                                uint64_t seed, char *err, size_t errlen) {
  if (n_conv < 1 || kernel < 1 || kernel > 28 || n_hidden < 1) {
    snprintf(err, errlen, "MNIST net: n_conv %d, kernel %d (1..28), n_hidden %d must be positive",
             n_conv, kernel, n_hidden);
    return NULL;
  }
  model_t *m = model_create(1, 28, 28);
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  int id;
  ADD(model_add_conv2d(m, "conv", -1, n_conv, kernel, 1, 0, 1));
  ADD(model_add_relu(m, "relu1", id));
  ADD(model_add_linear(m, "hidden", id, n_hidden, 1));
  ADD(model_add_relu(m, "relu2", id));
  ADD(model_add_linear(m, "out", id, 10, 1));
  return finish(m, max_batch, INIT_PYTORCH_DEFAULT, seed, err, errlen);
fail:
  snprintf(err, errlen, "MNIST net: %s", m->err);
  model_free(m);
  return NULL;
}

model_t *model_convnet_create(int num_classes, int with_bn, int max_batch, uint64_t seed,
                              char *err, size_t errlen) {
  model_t *m = model_create(1, 28, 28);
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  int id;
  ADD(model_add_conv2d(m, "layer1.0", -1, 16, 5, 1, 2, 1));
  if (with_bn) ADD(model_add_batchnorm2d(m, "layer1.1", id));
  ADD(model_add_relu(m, "layer1.2", id));
  ADD(model_add_maxpool(m, "layer1.3", id, 2, 2));
  ADD(model_add_conv2d(m, "layer2.0", id, 32, 5, 1, 2, 1));
  if (with_bn) ADD(model_add_batchnorm2d(m, "layer2.1", id));
  ADD(model_add_relu(m, "layer2.2", id));
  ADD(model_add_maxpool(m, "layer2.3", id, 2, 2));
  ADD(model_add_linear(m, "fc", id, num_classes, 1));
  return finish(m, max_batch, INIT_PYTORCH_DEFAULT, seed, err, errlen);
fail:
  snprintf(err, errlen, "ConvNet: %s", m->err);
  model_free(m);
  return NULL;
}
