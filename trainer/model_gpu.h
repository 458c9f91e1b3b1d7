/* model_gpu.h: a model on the GPU (model_gpu.c). model_to_gpu moves a finalized CPU
 * model to the current CUDA device: parameters, gradients, running statistics and
 * activations live in device memory from then on, and its layers run through cuDNN,
 * cuBLAS and the trainer's CUDA kernels (kernels/cuda/). For such a model:
 *   - model_forward takes a device pointer to the batch, and model_output and
 *     model_input_grad are device pointers;
 *   - model_loss takes host labels and returns the host sum, as on the CPU;
 *   - sgd_init / sgd_step keep the momentum on the device;
 *   - checkpoints, DDP and model_evaluate refuse it with a message (not wired yet).
 * Built when the CUDA toolkit has cuDNN (HV_TRAINER_CUDA); elsewhere model_to_gpu
 * fails with a message. Not run on a GPU yet: tests/trainer/gpu_train_step.c compares
 * a training step with the CPU's wherever a GPU is. */
#ifndef HV_TRAINER_MODEL_GPU_H
#define HV_TRAINER_MODEL_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* 0, or -1 with m->err set (no GPU, a layer kind without a GPU version, no memory);
 * on failure the model is left as it was, on the CPU. */
int model_to_gpu(model_t *m);

/* Used by model.c and optim.c for a model on the GPU. */
void model_gpu_free(model_t *m);
void model_gpu_zero(void *dev, size_t bytes);
double model_gpu_loss(model_t *m, const uint8_t *labels, real_t grad_scale, int *correct);
int model_gpu_alloc(void **dev, size_t bytes);
void model_gpu_release(void *dev);
int model_gpu_upload(void *dev, const void *host, size_t bytes);
void model_gpu_sgd(size_t n, real_t *param, const real_t *grad, real_t *buf, real_t lr, real_t momentum,
                   real_t weight_decay, int nesterov, int first);
/* The GPU ops of a layer kind, or NULL (model.c's ops table, GPU column). */
const layer_ops_t *layer_gpu_ops(layer_kind_t kind);

#endif
