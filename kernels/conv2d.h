/* conv2d.h: 2-D convolution (cross-correlation, as PyTorch's Conv2d) on the CPU by
 * im2col + one BLAS gemm over a chunk of images. */
#ifndef HV_KERNELS_CONV2D_H
#define HV_KERNELS_CONV2D_H

#include <stddef.h>

#include "real.h"

typedef struct conv2d_shape {
  int n, c, h, w;    /* input (N, C, H, W) */
  int k, kh, kw;     /* output channels, kernel rows, kernel columns */
  int stride, pad;   /* same in both dimensions */
  int ho, wo;        /* output rows and columns (conv2d_shape_init computes them) */
} conv2d_shape_t;

/* Fills ho and wo; returns -1 if the kernel does not fit the padded input. */
int conv2d_shape_init(conv2d_shape_t *s);

/* Elements of scratch memory the kernels need for one image; they process
 * floor(ws_elems / this) images per gemm (at least one). */
size_t conv2d_workspace_per_image(const conv2d_shape_t *s);

/* y = conv(x, w) + b. b may be NULL. ws holds ws_elems elements, at least
 * conv2d_workspace_per_image(). */
void conv2d_forward(const conv2d_shape_t *s, const real_t *x /* (N, C, H, W) */,
                    const real_t *w /* (K, C, kh, kw) */, const real_t *b /* (K) */,
                    real_t *y /* (N, K, ho, wo) */, real_t *ws, size_t ws_elems);

/* Accumulates: dw += dL/dw, db += dL/db (when db), dx += dL/dx (when dx). */
void conv2d_backward(const conv2d_shape_t *s, const real_t *x /* (N, C, H, W) */,
                     const real_t *w /* (K, C, kh, kw) */, const real_t *dy /* (N, K, ho, wo) */,
                     real_t *dx /* (N, C, H, W) or NULL */, real_t *dw /* (K, C, kh, kw) */,
                     real_t *db /* (K) or NULL */, real_t *ws, size_t ws_elems);

/* The column matrix of one image: col (C*kh*kw, ld) from x (C, H, W), rows in
 * (c, i, j) order and ho*wo columns starting at col; zero where the window reads
 * padding. col2im adds a column matrix back into dx (C, H, W). */
void im2col(const conv2d_shape_t *s, const real_t *x, real_t *col, int ld);
void col2im_add(const conv2d_shape_t *s, const real_t *col, int ld, real_t *dx);

#endif /* HV_KERNELS_CONV2D_H */
