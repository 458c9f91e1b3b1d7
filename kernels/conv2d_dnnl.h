/* conv2d_dnnl.h: 2-D convolution through oneDNN (the CPU library PyTorch's own
 * convolutions use), float32 only, same contract as conv2d.h: forward writes y,
 * backward *accumulates* dx (unless CONV2D_DNNL_DX_OVERWRITE), dw, db. Built when libdnnl-dev is found
 * (HV_HAVE_DNNL); layer_conv2d picks it or im2col + gemm (HV_CONV=im2col|dnnl). */
#ifndef HV_KERNELS_CONV2D_DNNL_H
#define HV_KERNELS_CONV2D_DNNL_H

#include "conv2d.h"

typedef struct conv2d_dnnl conv2d_dnnl_t;

/* How the caller keeps its tensors (flags of conv2d_dnnl_create). */
enum {
  CONV2D_DNNL_SRC_BLOCKED = 1, /* x and dx in the channel-blocked layout (layout_blocked.h), else NCHW */
  CONV2D_DNNL_DST_BLOCKED = 2, /* y and dy likewise */
  CONV2D_DNNL_DX_OVERWRITE = 4, /* backward writes dx instead of adding to it (no other
                                   layer contributes to it: one pass less, and no zeroing) */
  /* The algorithm: by default each direction takes Winograd where it measures faster
   * (conv2d_dnnl.c, preferred_algorithm) and direct elsewhere. These force one: */
  CONV2D_DNNL_DIRECT = 8,   /* direct everywhere */
  CONV2D_DNNL_WINOGRAD = 16 /* Winograd wherever oneDNN implements it (3x3, stride 1) */
};

/* A per-layer context: primitives for one shape, rebuilt when the shape (the batch)
 * changes. NULL when out of memory. flags: CONV2D_DNNL_*. */
conv2d_dnnl_t *conv2d_dnnl_create(int flags);
void conv2d_dnnl_free(conv2d_dnnl_t *c);

/* 0, or -1 when oneDNN refused (the caller falls back to im2col). */
int conv2d_dnnl_forward(conv2d_dnnl_t *c, const conv2d_shape_t *s, const float *x,
                        const float *w, const float *b, float *y);
int conv2d_dnnl_backward(conv2d_dnnl_t *c, const conv2d_shape_t *s, const float *x,
                         const float *w, const float *dy, float *dx, float *dw, float *db);

/* oneDNN's name for the kernel a direction runs (0 forward, 1 backward data, 2 backward
 * weights), e.g. "jit_wino_4x3:avx512_core" or "jit:avx512_core"; NULL before the
 * context's first call. */
const char *conv2d_dnnl_impl(const conv2d_dnnl_t *c, int direction);

#endif /* HV_KERNELS_CONV2D_DNNL_H */
