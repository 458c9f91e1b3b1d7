/* linear.h: fully connected layer y = x W^T + b (PyTorch nn.Linear layout). */
#ifndef HV_KERNELS_LINEAR_H
#define HV_KERNELS_LINEAR_H

#include "real.h"

void linear_forward(int n, int in, int out, const real_t *x /* (N, in) */,
                    const real_t *w /* (out, in) */, const real_t *b /* (out) or NULL */,
                    real_t *y /* (N, out) */);
/* Accumulates dw += dy^T x, db += sum_n dy, dx += dy W (dx may be NULL). */
void linear_backward(int n, int in, int out, const real_t *x, const real_t *w, const real_t *dy,
                     real_t *dx, real_t *dw, real_t *db);

#endif /* HV_KERNELS_LINEAR_H */
