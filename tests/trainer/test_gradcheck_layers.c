/* test_gradcheck_layers.c: float64 finite-difference check of every layer kind's
 * backward (parameters and input gradient), each in a tiny model input -> layer(s) ->
 * linear -> softmax cross-entropy. Bound in gradcheck.h (rel 1e-5). */
#include <stdio.h>

#include "gradcheck.h"
#include "model.h"

static model_t *begin(int c, int h, int w) { return model_create(c, h, w); }

static void run(const char *name, model_t *m, int id, int n, int train) {
  if (id < 0 || model_add_linear(m, "head", id, 3, 1) < 0 ||
      model_finalize(m, n, INIT_PYTORCH_DEFAULT, 7) < 0) {
    fprintf(stderr, "%s: cannot build: %s\n", name, m->err);
    check_failures++;
    model_free(m);
    return;
  }
  gradcheck_model(name, m, n, train, 0, 11);
  model_free(m);
}

int main(void) {
  model_t *m;
  int id;

  m = begin(2, 6, 5);
  run("conv3x3 s1 p1 bias", m, model_add_conv2d(m, "c", -1, 3, 3, 1, 1, 1), 3, 1);
  m = begin(2, 7, 7);
  run("conv3x3 s2 p1", m, model_add_conv2d(m, "c", -1, 4, 3, 2, 1, 0), 2, 1);
  m = begin(1, 8, 8);
  run("conv5x5 s1 p2 bias", m, model_add_conv2d(m, "c", -1, 2, 5, 1, 2, 1), 2, 1);
  m = begin(3, 6, 6);
  run("conv1x1 s2", m, model_add_conv2d(m, "c", -1, 2, 1, 2, 0, 0), 2, 1);
  m = begin(2, 6, 6);
  run("conv4x4 s1 p0 bias", m, model_add_conv2d(m, "c", -1, 2, 4, 1, 0, 1), 2, 1);

  m = begin(3, 4, 4);
  run("batchnorm2d train", m, model_add_batchnorm2d(m, "bn", -1), 4, 1);
  m = begin(3, 4, 4);
  id = model_add_batchnorm2d(m, "bn", -1);
  run("batchnorm2d eval", m, id, 4, 0);

  m = begin(2, 4, 4);
  run("relu", m, model_add_relu(m, "r", -1), 2, 1);
  m = begin(2, 6, 6);
  run("maxpool 2/2", m, model_add_maxpool(m, "p", -1, 2, 2), 2, 1);
  m = begin(2, 7, 7);
  run("maxpool 3/2", m, model_add_maxpool(m, "p", -1, 3, 2), 2, 1);
  m = begin(2, 6, 6);
  run("avgpool 2/2", m, model_add_avgpool(m, "p", -1, 2, 2), 2, 1);
  m = begin(2, 5, 5);
  run("avgpool 3/1", m, model_add_avgpool(m, "p", -1, 3, 1), 2, 1);
  m = begin(3, 4, 4);
  run("global avgpool", m, model_add_global_avgpool(m, "p", -1), 2, 1);
  m = begin(5, 1, 1);
  run("linear", m, model_add_linear(m, "l", -1, 4, 1), 3, 1);
  m = begin(2, 3, 3);
  run("linear no bias (4-D input)", m, model_add_linear(m, "l", -1, 4, 0), 3, 1);
  m = begin(2, 4, 4);
  run("dropout p=0.3 train", m, model_add_dropout(m, "d", -1, (real_t)0.3), 3, 1);
  m = begin(2, 4, 4);
  run("dropout eval", m, model_add_dropout(m, "d", -1, (real_t)0.3), 3, 0);

  /* Residual add: the input feeds both the conv and the add (two consumers). */
  m = begin(2, 4, 4);
  id = model_add_conv2d(m, "c", -1, 2, 3, 1, 1, 1);
  run("residual add", m, model_add_add(m, "a", id, -1), 2, 1);
  m = begin(2, 4, 4);
  id = model_add_conv2d(m, "c", -1, 3, 3, 1, 1, 0);
  id = model_add_relu(m, "r", id);
  run("flatten", m, model_add_flatten(m, "f", id), 2, 1);

  /* Builder rejections name the layer and the problem. */
  m = begin(2, 4, 4);
  CHECK(model_add_conv2d(m, "big", -1, 2, 7, 1, 1, 0) == -1);
  CHECK_CONTAINS(m->err, "big");
  CHECK(model_add_add(m, "mismatch", model_add_maxpool(m, "p", -1, 2, 2), -1) == -1);
  CHECK_CONTAINS(m->err, "differ");
  CHECK(model_add_dropout(m, "d", -1, (real_t)1.0) == -1);
  model_free(m);
  CHECK_RETURN();
}
