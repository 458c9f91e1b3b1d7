/* evaluate.c: batched evaluation-mode forward passes with summed loss and accuracy. */
#include "evaluate.h"

#include <stdio.h>
#include <stdlib.h>

int model_evaluate(model_t *m, const dataset_t *ds, const int *indices, int count,
                   const batch_transform_t *t, eval_result_t *out) {
  out->loss_sum = out->correct = out->count = 0;
  if (m->device == DEVICE_GPU) {
    snprintf(m->err, sizeof m->err, "model_evaluate: the model is on the GPU, and evaluation of GPU models is not "
             "wired yet (model_gpu.h)");
    return -1;
  }
  const int b = m->max_batch;
  real_t *x = malloc(sizeof(real_t) * (size_t)b * ds->c * ds->h * ds->w);
  uint8_t *y = malloc((size_t)b);
  if (!x || !y) {
    free(x);
    free(y);
    return -1;
  }
  /* No augmentation in evaluation, whatever the caller's transform says. */
  batch_transform_t plain = {t ? t->mean : NULL, t ? t->std : NULL, 0, 0};
  for (int i = 0; i < count; i += b) {
    const int n = count - i < b ? count - i : b;
    batch_fill(ds, indices + i, n, &plain, NULL, x, y);
    model_forward(m, x, n, 0);
    int correct = 0;
    out->loss_sum += model_loss(m, y, 0, &correct);
    out->correct += correct;
    out->count += n;
  }
  free(x);
  free(y);
  return 0;
}
