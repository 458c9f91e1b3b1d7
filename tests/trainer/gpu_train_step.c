/* gpu_train_step.c: a WideResNet training step on the GPU (model_to_gpu, model_gpu.h)
 * against the same step on the CPU: the same initial parameters (drawn on the host,
 * uploaded), then forward, loss, backward and an SGD step with momentum and weight
 * decay on the same batch, twice; loss and logits within 1e-4, gradients and
 * parameters within 1e-3 of the largest value (cuDNN's algorithms round in other
 * orders; TF32 off). Then mixed precision (model_gpu_enable_amp) against the same CPU
 * step, within float16's bounds: logits 3e-2 and parameters after the step 1e-2 of the
 * largest value, loss 1e-2; the gradients point the same way (cosine 0.99 overall,
 * 0.95 for each layer: at initialisation with 8 images they are small sums of large
 * terms, so float16's rounding of the terms moves them by up to 10% of the largest,
 * while a wrong layout or a lost term turns them); an overflowing loss scale makes inf
 * gradients that model_gpu_unscale reports. (Checkpoints, evaluation, DDP: gpu_ddp_step.c.)
 * Without a GPU or driver at all (gpu_present.h): model_to_gpu fails with a message
 * naming the cause and the model still trains on the CPU; the GPU part is then
 * reported skipped (exit 77). With a GPU present, a failed model_to_gpu fails. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device.h"
#include "gpu_present.h"
#include "gpu_test_util.h"
#include "hv.h"
#include "model_gpu.h"
#include "models.h"
#include "optim.h"

enum { BATCH = 8, SIDE = 16 };

static double cosine(const real_t *a, const real_t *b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1 : 0);
}

int main(void) {
  setenv("HV_CUDNN_TF32", "0", 1);
  char err[256];
  model_t *cpu = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, BATCH, 5, err, sizeof err);
  model_t *gpu = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, BATCH, 5, err, sizeof err);
  CHECK(cpu && gpu);
  if (!cpu || !gpu) CHECK_RETURN();
  const size_t nx = (size_t)BATCH * 3 * SIDE * SIDE;
  real_t *x = malloc(nx * sizeof *x);
  uint8_t y[BATCH];
  for (size_t i = 0; i < nx; i++) x[i] = (real_t)sin((double)i * 0.37);
  for (int i = 0; i < BATCH; i++) y[i] = (uint8_t)(i * 7 % 10);

  char why[256];
  const int present = test_gpu_present(why, sizeof why);
  if (present != 0 && model_to_gpu(gpu) != 0) {
    fprintf(stderr, "gpu_train_step: FAILED: %s; model_to_gpu: %s\n", present < 0 ? why : "a GPU is present", gpu->err);
    model_free(cpu), model_free(gpu), free(x);
    return 1;
  }
  if (present == 0) {
    /* No GPU here: the failure names why, and the model is still a working CPU model. */
    CHECK(model_to_gpu(gpu) != 0);
    CHECK(strstr(gpu->err, "no CUDA device") || strstr(gpu->err, "no GPU trainer"));
    CHECK(gpu->dev->kind == DEVICE_CPU);
    CHECK(model_forward(gpu, x, BATCH, 1) != NULL);
    CHECK(isfinite(model_loss(gpu, y, (real_t)1.0 / BATCH, NULL)));
    printf("gpu_train_step: GPU part skipped (%s)\n", gpu->err);
    model_free(cpu), model_free(gpu), free(x);
    return check_failures ? 1 : 77;
  }
  real_t *dx = NULL;
  cudaMalloc((void **)&dx, nx * sizeof *dx);
  cudaMemcpy(dx, x, nx * sizeof *dx, cudaMemcpyHostToDevice);
  sgd_t oc, og;
  CHECK(sgd_init(&oc, cpu, 0.1, 0.9, 5e-4, 0, err, sizeof err) == 0);
  CHECK(sgd_init(&og, gpu, 0.1, 0.9, 5e-4, 0, err, sizeof err) == 0);
  for (int step = 0; step < 2; step++) {
    model_zero_grad(cpu), model_zero_grad(gpu);
    CHECK(model_forward(cpu, x, BATCH, 1) != NULL);
    CHECK(model_forward(gpu, dx, BATCH, 1) != NULL);
    const double lc = model_loss(cpu, y, (real_t)1.0 / BATCH, NULL), lg = model_loss(gpu, y, (real_t)1.0 / BATCH, NULL);
    CHECK_NEAR(lg, lc, 1e-4);
    real_t *logits = host_copy(model_output(gpu), (size_t)BATCH * 10);
    CHECK(maxrel(logits, model_output(cpu), (size_t)BATCH * 10) <= 1e-4);
    model_backward(cpu, NULL, NULL);
    model_backward(gpu, NULL, NULL);
    real_t *grads = host_copy(gpu->grads, gpu->n_params);
    CHECK(maxrel(grads, cpu->grads, cpu->n_params) <= 1e-3);
    sgd_step(&oc, cpu);
    sgd_step(&og, gpu);
    real_t *params = host_copy(gpu->params, gpu->n_params);
    CHECK(maxrel(params, cpu->params, cpu->n_params) <= 1e-3);
    CHECK(!gpu->failed);
    free(logits), free(grads), free(params);
  }
  sgd_free(&oc), sgd_free(&og);
  model_free(cpu), model_free(gpu);

  /* Mixed precision: one step from fresh models, loss scaled by 1024. */
  cpu = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, BATCH, 5, err, sizeof err);
  gpu = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, BATCH, 5, err, sizeof err);
  CHECK(cpu && gpu && model_to_gpu(gpu) == 0);
  CHECK(model_gpu_enable_amp(gpu) == 0 && model_gpu_amp(gpu));
  CHECK(sgd_init(&oc, cpu, 0.1, 0.9, 5e-4, 0, err, sizeof err) == 0);
  CHECK(sgd_init(&og, gpu, 0.1, 0.9, 5e-4, 0, err, sizeof err) == 0);
  model_zero_grad(cpu), model_zero_grad(gpu);
  CHECK(model_forward(cpu, x, BATCH, 1) != NULL);
  CHECK(model_forward(gpu, dx, BATCH, 1) != NULL);
  const double lc = model_loss(cpu, y, (real_t)1.0 / BATCH, NULL);
  const double lg = model_loss(gpu, y, (real_t)(1024.0 / BATCH), NULL);
  CHECK_NEAR(lg, lc, 1e-2);
  uint16_t half_logits[BATCH * 10];
  real_t logits[BATCH * 10];
  CHECK(cudaMemcpy(half_logits, model_output(gpu), sizeof half_logits, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int i = 0; i < BATCH * 10; i++) logits[i] = hv_half_to_float(half_logits[i]);
  const double dl = maxrel(logits, model_output(cpu), (size_t)BATCH * 10);
  model_backward(cpu, NULL, NULL);
  model_backward(gpu, NULL, NULL);
  int found_inf = -1;
  CHECK(model_gpu_unscale(gpu, 1.0f / 1024, &found_inf) == 0 && found_inf == 0);
  real_t *grads = host_copy(gpu->grads, gpu->n_params);
  const double dg = maxrel(grads, cpu->grads, cpu->n_params), cg = cosine(grads, cpu->grads, cpu->n_params);
  double worst = 1;
  sgd_step(&oc, cpu);
  sgd_step(&og, gpu);
  real_t *params = host_copy(gpu->params, gpu->n_params);
  const double dp = maxrel(params, cpu->params, cpu->n_params);
  for (int i = 0; i < gpu->n_layers; i++) {
    const layer_t *l = &gpu->layers[i];
    if (!l->n_params) continue;
    const double c = cosine(grads + l->param_off, cpu->grads + l->param_off, l->n_params);
    if (c < 0.95)
      printf("  layer %-20s %-12s gradient cosine %.4f, %.3g of its largest\n", l->name, layer_kind_name(l->kind), c,
             maxrel(grads + l->param_off, cpu->grads + l->param_off, l->n_params));
    worst = fmin(worst, c);
  }
  printf("gpu_train_step: mixed precision against float32: loss %.6g vs %.6g, logits %.3g, parameters %.3g of the "
         "largest; gradients %.3g of the largest, cosine %.5f overall, %.5f for the worst layer\n",
         lg, lc, dl, dp, dg, cg, worst);
  CHECK(dl <= 3e-2);
  CHECK(cg >= 0.99 && worst >= 0.95);
  CHECK(dp <= 1e-2);
  /* Evaluation mode runs too, and a loss scale of 2^32 overflows float16 gradients. */
  CHECK(model_forward(gpu, dx, BATCH, 0) != NULL && isfinite(model_loss(gpu, y, 0, NULL)));
  model_zero_grad(gpu);
  CHECK(model_forward(gpu, dx, BATCH, 1) != NULL);
  model_loss(gpu, y, (real_t)(4294967296.0 / BATCH), NULL);
  model_backward(gpu, NULL, NULL);
  CHECK(model_gpu_unscale(gpu, 1.0f / 4294967296.0f, &found_inf) == 0 && found_inf == 1);
  CHECK(!gpu->failed);
  if (gpu->failed) fprintf(stderr, "%s\n", gpu->err);
  free(grads), free(params);
  sgd_free(&oc), sgd_free(&og);
  cudaFree(dx);
  model_free(cpu), model_free(gpu), free(x);
  CHECK_RETURN();
}
