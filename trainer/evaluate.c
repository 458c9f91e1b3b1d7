/* evaluate.c: batched evaluation-mode forward passes with summed loss and accuracy.
 * For a model on the GPU each batch is uploaded into one device buffer first. */
#include "evaluate.h"

#include <stdio.h>
#include <stdlib.h>

#include "model_gpu.h"

int model_evaluate(model_t *m, const dataset_t *ds, const int *indices, int count,
                   const batch_transform_t *t, eval_result_t *out) {
  out->loss_sum = out->correct = out->count = 0;
  const int b = m->max_batch;
  const size_t xbytes = sizeof(real_t) * (size_t)b * ds->c * ds->h * ds->w;
  real_t *x = malloc(xbytes);
  uint8_t *y = malloc((size_t)b);
  void *dev = NULL;
  if (!x || !y || (m->device == DEVICE_GPU && model_gpu_alloc(&dev, xbytes))) {
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
    if (dev && model_gpu_upload(dev, x, (size_t)n * (xbytes / (size_t)b))) {
      snprintf(m->err, sizeof m->err, "model_evaluate: copying a batch to the GPU failed");
      rc = -1;
      break;
    }
    if (!model_forward(m, dev ? dev : x, n, 0)) {
      rc = -1;
      break;
    }
    int correct = 0;
    out->loss_sum += model_loss(m, y, 0, &correct);
    out->correct += correct;
    out->count += n;
  }
  if (dev) model_gpu_release(dev);
  free(x);
  free(y);
  return rc;
}
