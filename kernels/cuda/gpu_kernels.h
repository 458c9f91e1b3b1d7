/* gpu_kernels.h: the trainer's own CUDA kernels, for what cuDNN and cuBLAS do not do:
 * the SGD update, softmax cross-entropy, and turning a batch of uint8 images into
 * normalised, augmented floats. Each has its CPU reference, the CPU path's own code
 * (kernels/sgd.c, kernels/softmax_xent.c, trainer/batch.c), and tests/kernels/
 * gpu_kernels.c compares them on random data. float32, and float16 logits for the
 * loss. Every call enqueues on stream (a cudaStream_t) and returns 0 or the CUDA
 * error code of the launch. */
#ifndef HV_KERNELS_GPU_KERNELS_H
#define HV_KERNELS_GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sgd_update (kernels/sgd.h) on device arrays, with the same operations in the same
 * order and no fused multiply-add: the same bits as the CPU. */
int gpu_sgd_update(size_t n, float *param, const float *grad, float *momentum_buf, float lr, float momentum,
                   float weight_decay, int nesterov, int first, void *stream);

/* softmax_xent (kernels/softmax_xent.h) row by row: loss[i] (double) is row i's loss,
 * right[i] is 1 when its largest logit (first on ties) is the label; dlogits may be
 * NULL. The caller sums the rows (in order, for the CPU's sum). */
int gpu_softmax_xent(int n, int k, const float *logits, const uint8_t *labels, float grad_scale, float *dlogits,
                     double *loss, int *right, void *stream);

/* The same on float16 logits (mixed precision), read exactly and computed in double;
 * the gradient (float32 as above) is rounded to float16 (nearest even). */
int gpu_softmax_xent_half(int n, int k, const void *logits, const uint8_t *labels, float grad_scale, void *dlogits,
                          double *loss, int *right, void *stream);

/* batch_fill's pixels (trainer/batch.h) for n images of (c, h, w) bytes at images:
 * x = lut[channel][pixel] of the crop shifted by (aug[3i], aug[3i+1]) and flipped
 * when aug[3i+2], zero pixels outside. lut: min(c, 4) x 256 values, channels past the
 * fourth use the fourth's (batch_build_lut). */
int gpu_batch_pixels(int n, int c, int h, int w, const uint8_t *images, const float *lut, const int *aug, float *x,
                     void *stream);

/* Mixed precision's check-and-unscale (trainer/grad_scaler.h): grads *= inv_scale, and
 * *found (device memory) is set to 1 when any gradient was inf or NaN (it is left
 * alone otherwise: the caller zeroes it once per step, over all its arrays). */
int gpu_unscale_check(size_t n, float *grads, float inv_scale, int *found, void *stream);

#ifdef __cplusplus
}
#endif
#endif
