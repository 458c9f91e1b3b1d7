/* evaluate.c: batched evaluation-mode forward passes with summed loss and accuracy.
 * Each batch reaches the model through device_batch (device.h): as it is on the CPU,
 * uploaded into one device buffer for a model on the GPU. */
#include "evaluate.h"

#include <stdio.h>
#include <stdlib.h>

#include "device.h"

int model_evaluate(model_t *m, const dataset_t *ds, const int *indices, int count,
                   const batch_transform_t *t, eval_result_t *out) {
  out->loss_sum = out->correct = out->count = 0;
  const int b = m->max_batch;
  real_t *x = malloc(sizeof(real_t) * (size_t)b * ds->c * ds->h * ds->w);
  uint8_t *y = malloc((size_t)b);
  device_batch_t staged;
  if (!x || !y || device_batch_init(&staged, m, b)) {
    snprintf(m->err, sizeof m->err, "model_evaluate: out of %s memory for a batch of %d", x && y ? "device" : "host",
             b);
    free(x);
    free(y);
    return -1;
  }
  int rc = 0;
  /* No augmentation in evaluation, whatever the caller's transform says. */
  batch_transform_t plain = {t ? t->mean : NULL, t ? t->std : NULL, 0, 0};
  for (int i = 0; i < count; i += b) {
    const int n = count - i < b ? count - i : b;
    batch_fill(ds, indices + i, n, &plain, NULL, x, y);
    const real_t *in = device_batch_put(&staged, x, n);
    if (!in) {
      snprintf(m->err, sizeof m->err, "model_evaluate: copying a batch to the GPU failed");
      rc = -1;
      break;
    }
    if (!model_forward(m, in, n, 0)) {
      rc = -1;
      break;
    }
    int correct = 0;
    out->loss_sum += model_loss(m, y, 0, &correct);
    out->correct += correct;
    out->count += n;
  }
  device_batch_free(&staged);
  free(x);
  free(y);
  return rc;
}
