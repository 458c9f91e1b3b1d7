/* batchnorm.h: 2-D batch normalisation (PyTorch BatchNorm2d semantics) on the CPU. */
#ifndef HV_KERNELS_BATCHNORM_H
#define HV_KERNELS_BATCHNORM_H

#include <stddef.h>

#include "real.h"

/* Training: normalise with the batch statistics over (N, H, W); save mean and
 * 1/sqrt(var + eps) per channel for backward; update the running statistics as
 * PyTorch does: r = (1 - momentum) r + momentum * stat, with the unbiased variance
 * (divided by N*H*W - 1) for running_var and the biased one for normalising. */
void batchnorm_forward_train(int n, int c, int hw, const real_t *x /* (N, C, HW) */,
                             const real_t *gamma, const real_t *beta, real_t eps,
                             real_t momentum, real_t *running_mean, real_t *running_var,
                             real_t *save_mean /* (C) */, real_t *save_invstd /* (C) */,
                             real_t *y /* (N, C, HW) */);

/* Evaluation: normalise with the running statistics; saves invstd for backward. */
void batchnorm_forward_eval(int n, int c, int hw, const real_t *x, const real_t *gamma,
                            const real_t *beta, real_t eps, const real_t *running_mean,
                            const real_t *running_var, real_t *save_mean, real_t *save_invstd,
                            real_t *y);

/* Accumulates dgamma, dbeta and dx; dx_write: writes dx instead (the caller knows
 * nothing else contributes to it, and need not zero it). train: the statistics were
 * the batch's (their dependence on x is differentiated); else they were constants. */
void batchnorm_backward(int n, int c, int hw, int train, const real_t *x, const real_t *dy,
                        const real_t *gamma, const real_t *save_mean,
                        const real_t *save_invstd, real_t *dx /* or NULL */, int dx_write,
                        real_t *dgamma, real_t *dbeta);

/* The same three with the ReLU after batch norm in their passes (see relu below):
 * coef (2c) takes the forward's per-channel coefficients, and backward needs them
 * back; the same bits as the unfused pair (tests/kernels/test_batchnorm_relu.c). */
void batchnorm_forward_train_relu(int n, int c, int hw, const real_t *x, const real_t *gamma, const real_t *beta,
                                  real_t eps, real_t momentum, real_t *running_mean, real_t *running_var,
                                  real_t *save_mean, real_t *save_invstd, real_t *y, real_t *coef);
void batchnorm_forward_eval_relu(int n, int c, int hw, const real_t *x, const real_t *gamma, const real_t *beta,
                                 real_t eps, const real_t *running_mean, const real_t *running_var,
                                 real_t *save_mean, real_t *save_invstd, real_t *y, real_t *coef);
void batchnorm_backward_relu(int n, int c, int hw, int train, const real_t *x, const real_t *dy, const real_t *gamma,
                             const real_t *save_mean, const real_t *save_invstd, real_t *dx, int dx_write,
                             real_t *dgamma, real_t *dbeta, const real_t *coef);

/* The same three on activations in the channel-blocked layout (layout_blocked.h; c a
 * multiple of 16), with the same results bit for bit (batchnorm_blocked.c). scratch:
 * batchnorm_blocked_scratch(n, c) doubles, the same array from a forward to its
 * backward (it keeps the forward's per-channel coefficients).
 *
 * relu: batch norm followed by ReLU in one pass over memory (the ReLU layer after it
 * then does nothing). Forward writes y = max(0, BN(x)) instead of BN(x); backward
 * takes dy as the gradient of that ReLU's output, masks it where BN(x) <= 0 (the
 * mask recomputed from x with the forward's coefficients, so neither BN(x) nor the
 * ReLU's output is read) and differentiates the batch norm with the masked gradient.
 * The arithmetic is the unfused pair's, operation for operation: the same bits as
 * batch norm, relu_forward, relu_backward_write and batch norm's backward
 * (tests/kernels/test_batchnorm_relu.c), with two passes over the activation fewer
 * forward and three backward. */
size_t batchnorm_blocked_scratch(int n, int c);
void batchnorm_forward_train_blocked(int n, int c, int hw, const real_t *x, const real_t *gamma,
                                     const real_t *beta, real_t eps, real_t momentum,
                                     real_t *running_mean, real_t *running_var, real_t *save_mean,
                                     real_t *save_invstd, real_t *y, int relu, double *scratch);
void batchnorm_forward_eval_blocked(int n, int c, int hw, const real_t *x, const real_t *gamma,
                                    const real_t *beta, real_t eps, const real_t *running_mean,
                                    const real_t *running_var, real_t *save_mean, real_t *save_invstd,
                                    real_t *y, int relu, double *scratch);
void batchnorm_backward_blocked(int n, int c, int hw, int train, const real_t *x, const real_t *dy,
                                const real_t *gamma, const real_t *save_mean, const real_t *save_invstd,
                                real_t *dx, int dx_write, real_t *dgamma, real_t *dbeta, int relu,
                                double *scratch);

#endif /* HV_KERNELS_BATCHNORM_H */
