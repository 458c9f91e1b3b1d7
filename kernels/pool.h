/* pool.h: max, average and global average pooling on (N, C, H, W), no padding
 * (the models here pool 2x2/stride 2, 8x8 at the end of a WRN, or globally). */
#ifndef HV_KERNELS_POOL_H
#define HV_KERNELS_POOL_H

#include <stdint.h>

#include "real.h"

typedef struct pool_shape {
  int n, c, h, w;  /* input */
  int k, stride;   /* window and step, square */
  int ho, wo;      /* output: (h - k) / stride + 1 (pool_shape_init) */
} pool_shape_t;

int pool_shape_init(pool_shape_t *s);

/* y = max over each window; argmax (N, C, ho, wo) keeps the input offset within the
 * image plane of the maximum (first one on ties, as PyTorch) for backward. */
void maxpool_forward(const pool_shape_t *s, const real_t *x, real_t *y, int32_t *argmax);
/* dx is accumulated into, or with dx_write overwritten: each plane is zeroed just
 * before its gradients are added (the bits of adding into a zeroed buffer, with the
 * plane still in cache: the caller need not zero it beforehand). */
void maxpool_backward(const pool_shape_t *s, const real_t *dy, const int32_t *argmax,
                      real_t *dx, int dx_write);

/* The same with x / dx in the channel-blocked layout (layout_blocked.h; c a multiple of
 * 16) and y / dy blocked (y_blocked, dy_blocked) or NCHW, so that a model's last
 * pooling can hand a linear layer NCHW; argmax is stored at y's index. The same values,
 * positions and bits as maxpool_forward / maxpool_backward. */
void maxpool_forward_blocked(const pool_shape_t *s, const real_t *x, real_t *y, int y_blocked,
                             int32_t *argmax);
void maxpool_backward_blocked(const pool_shape_t *s, const real_t *dy, int dy_blocked,
                              const int32_t *argmax, real_t *dx, int dx_write);

void avgpool_forward(const pool_shape_t *s, const real_t *x, real_t *y);
void avgpool_backward(const pool_shape_t *s, const real_t *dy, real_t *dx /* accumulated */);

/* Global average pooling: (N, C, HW) -> (N, C). */
void global_avgpool_forward(int n, int c, int hw, const real_t *x, real_t *y);
void global_avgpool_backward(int n, int c, int hw, const real_t *dy, real_t *dx);
/* The same with x / dx in the channel-blocked layout (layout_blocked.h), summed in the
 * same order: the same bits. y / dy are (N, C) either way. */
void global_avgpool_forward_blocked(int n, int c, int hw, const real_t *x, real_t *y);
void global_avgpool_backward_blocked(int n, int c, int hw, const real_t *dy, real_t *dx);

#endif /* HV_KERNELS_POOL_H */
