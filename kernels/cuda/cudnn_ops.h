/* cudnn_ops.h: the trainer's convolution, batch norm, pooling, ReLU and residual add on
 * the GPU through cuDNN, with the contracts of their CPU counterparts (conv2d.h,
 * batchnorm.h, pool.h, eltwise.h) on device pointers:
 * forward writes its output; backward *accumulates* into dx, dw, db (cuDNN's beta = 1),
 * as the CPU layers do. float32, NCHW. Built when cuDNN is found (HV_ENABLE_CUDNN);
 * tests/kernels/gpu_cudnn_ops.c compares them with the CPU kernels on a GPU.
 *
 * Every call takes the caller's stream (a cudaStream_t) and returns 0, or -1 with the
 * cuDNN or CUDA error in the context's err. Convolutions use cuDNN's heuristic choice
 * of algorithm for the shape (HV_CUDNN_BENCHMARK=1: the one its Find timed fastest)
 * within a grow-only workspace; TF32 tensor cores are
 * allowed, as PyTorch allows them for cuDNN convolutions, unless HV_CUDNN_TF32=0 (the
 * test sets it, to compare with the CPU at float32 precision). */
#ifndef HV_KERNELS_CUDNN_OPS_H
#define HV_KERNELS_CUDNN_OPS_H

#include <stddef.h>

#include "conv2d.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cudnn_ctx cudnn_ctx_t;

/* One per layer (its descriptors and workspace); NULL when cuDNN cannot start. */
cudnn_ctx_t *cudnn_ctx_create(void);
/* Mixed precision: from now on every data tensor (x, y, w, their gradients, the bias)
 * is float16 in NHWC (a filter KRSC) behind the float pointers of the calls below;
 * batch norm's per-channel arrays stay float32; arithmetic is float32 on tensor cores. */
void cudnn_ctx_set_half(cudnn_ctx_t *c, int half);
void cudnn_ctx_free(cudnn_ctx_t *c);
const char *cudnn_ctx_error(const cudnn_ctx_t *c);

int cudnn_conv2d_forward(cudnn_ctx_t *c, const conv2d_shape_t *s, const float *x, const float *w, const float *b,
                         float *y, void *stream);
int cudnn_conv2d_backward(cudnn_ctx_t *c, const conv2d_shape_t *s, const float *x, const float *w, const float *dy,
                          float *dx /* or NULL */, float *dw, float *db /* or NULL */, void *stream);

/* Batch norm over (n, c, hw) as batchnorm.h: training (batch statistics, running ones
 * updated with momentum and the unbiased variance, mean and 1/sqrt(var + eps) saved),
 * evaluation (running statistics), and backward after training. */
int cudnn_batchnorm_forward_train(cudnn_ctx_t *ctx, int n, int c, int hw, const float *x, const float *gamma,
                                  const float *beta, float eps, float momentum, float *running_mean,
                                  float *running_var, float *save_mean, float *save_invstd, float *y, void *stream);
int cudnn_batchnorm_forward_eval(cudnn_ctx_t *ctx, int n, int c, int hw, const float *x, const float *gamma,
                                 const float *beta, float eps, const float *running_mean, const float *running_var,
                                 float *y, void *stream);
int cudnn_batchnorm_backward(cudnn_ctx_t *ctx, int n, int c, int hw, const float *x, const float *dy,
                             const float *gamma, const float *save_mean, const float *save_invstd, float eps,
                             float *dx /* or NULL */, float *dgamma, float *dbeta, void *stream);

/* Pooling as pool.h (window k, stride, no padding; max or average) on (n, c, h, w):
 * forward, and backward accumulating into dx (it needs the forward's x and y). The
 * global average pool is the window h x w. */
int cudnn_pool_forward(cudnn_ctx_t *ctx, int max, int n, int c, int h, int w, int k, int stride, const float *x,
                       float *y, void *stream);
int cudnn_pool_backward(cudnn_ctx_t *ctx, int max, int n, int c, int h, int w, int k, int stride, const float *x,
                        const float *y, const float *dy, float *dx, void *stream);

/* ReLU on count elements: y = max(x, 0); backward dx += dy where x > 0. */
int cudnn_relu_forward(cudnn_ctx_t *ctx, size_t count, const float *x, float *y, void *stream);
int cudnn_relu_backward(cudnn_ctx_t *ctx, size_t count, const float *x, const float *y, const float *dy, float *dx,
                        void *stream);
/* y = a + b (the residual add), and dst += src (its backward, into each input). */
int cudnn_add(cudnn_ctx_t *ctx, size_t count, const float *a, const float *b, float *y, void *stream);
int cudnn_accumulate(cudnn_ctx_t *ctx, size_t count, const float *src, float *dst, void *stream);

#ifdef __cplusplus
}
#endif
#endif
