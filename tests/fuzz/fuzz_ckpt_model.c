/* fuzz_ckpt_model.c: the model of the checkpoint target and of its seeds, in one place
 * so that the committed seeds always match the architecture the target loads into
 * (a checkpoint of another model stops at the parameter-count check). Small on
 * purpose: every seed stays near 1 KB, and conv, batch norm (buffers) and linear
 * layers all have parameters in it. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "model.h"

struct model *fuzz_ckpt_model(void) {
  model_t *m = model_create(1, 4, 4);
  if (!m) abort();
  int id = model_add_conv2d(m, "conv", -1, 2, 3, 1, 1, 1);
  id = model_add_batchnorm2d(m, "bn", id);
  id = model_add_relu(m, "relu", id);
  model_add_linear(m, "out", id, 3, 1);
  if (model_finalize(m, 2, INIT_PYTORCH_DEFAULT, 7)) {
    fprintf(stderr, "fuzz_ckpt_model: %s\n", m->err);
    abort();
  }
  return m;
}
