/* batchnorm_sync_gpu.h: SyncBatchNorm on the GPU (float32, NCHW device arrays): the
 * same steps as kernels/batchnorm_sync.h on the CPU, with the per-channel sums made by
 * CUDA kernels in double and the reductions over the processes done by `reduce` on
 * device doubles (the trainer's DDP passes hv_allreduce_cuda), all on one stream.
 * scratch: batchnorm_sync_scratch(c) device doubles. Each call returns 0; -1 when
 * reduce failed; -2 when some process has a batch of one image (*ranks_with_one: how
 * many; the flag is the one value copied back to the host); -3 on a CUDA error. */
#ifndef HV_KERNELS_BATCHNORM_SYNC_GPU_H
#define HV_KERNELS_BATCHNORM_SYNC_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sums v[0..n) (device doubles) over the processes in place: 0 or -1. */
typedef int (*gpu_bn_reduce_fn)(void *ctx, const char *what, double *v, size_t n);

int gpu_batchnorm_forward_train_sync(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                                     float eps, float momentum, float *running_mean, float *running_var,
                                     float *save_mean, float *save_invstd, float *y, double *scratch,
                                     gpu_bn_reduce_fn reduce, void *ctx, int *ranks_with_one, void *stream);

/* dgamma, dbeta += this process's sums; dx (may be NULL) from the reduced ones,
 * accumulated unless dx_write. */
int gpu_batchnorm_backward_sync(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                                const float *save_mean, const float *save_invstd, float *dx, int dx_write,
                                float *dgamma, float *dbeta, double *scratch, gpu_bn_reduce_fn reduce, void *ctx,
                                void *stream);

#ifdef __cplusplus
}
#endif
#endif
