/* batchnorm_sync.h: batch norm whose statistics are those of a batch spread over
 * several processes (PyTorch's SyncBatchNorm), on the CPU. Each process passes its own
 * images; `reduce` sums a vector of doubles over the processes in place (an allreduce;
 * the trainer's DDP layer gives one through hv), so every process normalises with the
 * global mean and variance, updates the running statistics with them, and backward
 * differentiates through the global statistics: R processes x b images compute what
 * one process computes on the R*b images, up to the order of the sums.
 *
 * Activations are NCHW (block 1) or channel-blocked (block = CHANNEL_BLOCK,
 * layout_blocked.h), the model's two layouts. */
#ifndef HV_KERNELS_BATCHNORM_SYNC_H
#define HV_KERNELS_BATCHNORM_SYNC_H

#include <stddef.h>

#include "real.h"

/* Sums v[0..n) over the processes in place; 0, or -1 (the callback keeps its error).
 * what names the vector ("stats", "var", "grad") for the collective's name. */
typedef int (*batchnorm_reduce_fn)(void *ctx, const char *what, double *v, size_t n);

/* The doubles of scratch both calls need. */
size_t batchnorm_sync_scratch(int c);

/* Training forward with the global statistics (batchnorm_forward_train's semantics,
 * the unbiased running variance over all the processes' N*HW values). Two reductions:
 * the per-channel sums with the image count, then the sums of squares around the
 * global mean. Returns 0; -1 when reduce failed; -2 when a process (this or another:
 * every process sees it) has a batch of one image, which SyncBatchNorm refuses
 * (*ranks_with_one: how many), leaving y and the running statistics untouched. */
int batchnorm_forward_train_sync(int n, int c, int hw, int block, const real_t *x, const real_t *gamma,
                                 const real_t *beta, real_t eps, real_t momentum, real_t *running_mean,
                                 real_t *running_var, real_t *save_mean, real_t *save_invstd, real_t *y,
                                 double *scratch, batchnorm_reduce_fn reduce, void *ctx, int *ranks_with_one);

/* Backward after batchnorm_forward_train_sync: dgamma and dbeta get this process's
 * own sums (the data-parallel average of the gradients makes them the global batch's);
 * dx uses the sums of dy and dy*xhat reduced over the processes (one reduction),
 * divided by the global count. Accumulates into dx unless dx_write. 0, or -1 when
 * reduce failed. */
int batchnorm_backward_sync(int n, int c, int hw, int block, const real_t *x, const real_t *dy,
                            const real_t *gamma, const real_t *save_mean, const real_t *save_invstd, real_t *dx,
                            int dx_write, real_t *dgamma, real_t *dbeta, double *scratch, batchnorm_reduce_fn reduce,
                            void *ctx);

#endif /* HV_KERNELS_BATCHNORM_SYNC_H */
