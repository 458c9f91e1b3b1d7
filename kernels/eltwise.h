/* eltwise.h: element-wise kernels: ReLU, residual add, dropout by mask, scaling. */
#ifndef HV_KERNELS_ELTWISE_H
#define HV_KERNELS_ELTWISE_H

#include <stddef.h>

#include "real.h"

void relu_forward(size_t n, const real_t *x, real_t *y);
/* dx += dy where the output was positive (the gradient at 0 is 0, as PyTorch). */
void relu_backward(size_t n, const real_t *y, const real_t *dy, real_t *dx);
/* The same, writing dx instead of adding to it (dx has no other contribution). */
void relu_backward_write(size_t n, const real_t *y, const real_t *dy, real_t *dx);

/* y = a + b */
void add_forward(size_t n, const real_t *a, const real_t *b, real_t *y);
/* dst += src */
void axpy_add(size_t n, const real_t *src, real_t *dst);
/* dst = 0 + src: what axpy_add gives on a zeroed dst, bit for bit (a -0.0 in src
 * becomes +0.0, as it does there), in one pass instead of zeroing and adding. */
void axpy_write(size_t n, const real_t *src, real_t *dst);

/* y = x * mask, where mask holds 0 or 1/(1-p) (inverted dropout); dx += dy * mask. */
void mask_forward(size_t n, const real_t *x, const real_t *mask, real_t *y);
void mask_backward(size_t n, const real_t *dy, const real_t *mask, real_t *dx);

#endif /* HV_KERNELS_ELTWISE_H */
