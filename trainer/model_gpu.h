/* model_gpu.h: a model on the GPU (gpu/model_gpu.c). model_to_gpu moves a finalized CPU
 * model to the current CUDA device: parameters, gradients, running statistics and
 * activations live in device memory from then on, and its layers run through cuDNN,
 * cuBLAS and the trainer's CUDA kernels (kernels/cuda/), through the GPU's device
 * table (device.h). For such a model:
 *   - model_forward takes a device pointer to the batch, and model_output and
 *     model_input_grad are device pointers;
 *   - model_loss takes host labels and returns the host sum, as on the CPU;
 *   - sgd_init / sgd_step keep the momentum on the device;
 *   - checkpoints copy through the host (the file is the CPU model's: a checkpoint
 *     written on the GPU loads on the CPU and back), model_evaluate uploads each
 *     batch, and DDP reduces the device gradients through hv_cuda.h.
 * Built when the CUDA toolkit has cuDNN; elsewhere gpu/model_gpu_stub.c implements
 * this header, and model_to_gpu and every other call that can fail fails with a
 * message. tests/trainer/gpu_train_step.c compares a training step with the CPU's,
 * and gpu_ddp_step.c a DDP step, wherever a GPU is. */
#ifndef HV_TRAINER_MODEL_GPU_H
#define HV_TRAINER_MODEL_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* 0, or -1 with m->err set (no GPU, a layer kind without a GPU version, no memory);
 * on failure the model is left as it was, on the CPU. */
int model_to_gpu(model_t *m);

/* Mixed precision (PyTorch's autocast to float16, for the layers here): activations
 * and their gradients are float16 in NHWC, convolutions and linear layers read a
 * float16 copy of the float32 master parameters (made again at every forward) and run
 * on tensor cores with float32 arithmetic; batch norm keeps float32 parameters and
 * statistics; the loss reads float16 logits in double; weight gradients are summed
 * into the float32 master gradients, so DDP, SGD and checkpoints see float32 alone.
 * Scale the loss (model_loss's grad_scale) and unscale with model_gpu_unscale before
 * the step, with grad_scaler.h's policy. model_output is then float16 NHWC data, and
 * there is no input gradient. 0, or -1 with m->err. */
int model_gpu_enable_amp(model_t *m);
int model_gpu_amp(const model_t *m);
/* grads *= inv_scale on the device; *found_inf = 1 when any was inf or NaN. 0 or -1. */
int model_gpu_unscale(model_t *m, float inv_scale, int *found_inf);

/* Device memory for callers' own arrays (a batch, copies of results): 0, or -1. */
int model_gpu_alloc(void **dev, size_t bytes);
void model_gpu_release(void *dev);
int model_gpu_upload(void *dev, const void *host, size_t bytes);
int model_gpu_download(void *host, const void *dev, size_t bytes);
/* Waits for everything queued on the device (timing, profiles). */
void model_gpu_sync(void);
/* Makes device (local_rank mod the device count) current for this thread; returns it,
 * or -1 with err set (no device, no GPU trainer in this build). */
int model_gpu_select(int local_rank, char *err, size_t errlen);
/* Mixed precision: the float16 batch and parameter copies made for a forward of n
 * images (model_forward makes them; a benchmark that runs the layers one by one calls
 * it), NULL with m->err on failure. */
const real_t *model_gpu_amp_input(model_t *m, const real_t *x, int n);

#endif
