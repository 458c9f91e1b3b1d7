/* conv2d.c: convolution as im2col + gemm, batched over a chunk of g images so that
 * one large gemm keeps all BLAS threads busy even on 28x28 MNIST maps:
 *   col  (C*kh*kw, g*ho*wo)   image i's columns at offset i*ho*wo
 *   tmp  (K, g*ho*wo) = W (K, C*kh*kw) x col
 *   y[i] (K, ho*wo)   = tmp[:, i*ho*wo ...] + b
 * Backward recomputes col instead of keeping it from forward (memory is the scarcer
 * resource, and im2col is a small fraction of the gemm time):
 *   dW += dtmp x col^T,  dcol = W^T x dtmp,  dx += col2im(dcol).
 * g is whatever fits the caller's workspace, so memory stays bounded for any batch. */
#include "conv2d.h"

#include <string.h>

#include "gemm.h"

int conv2d_shape_init(conv2d_shape_t *s) {
  int hp = s->h + 2 * s->pad, wp = s->w + 2 * s->pad;
  if (s->stride < 1 || s->kh > hp || s->kw > wp || s->kh < 1 || s->kw < 1) return -1;
  s->ho = (hp - s->kh) / s->stride + 1;
  s->wo = (wp - s->kw) / s->stride + 1;
  return 0;
}

size_t conv2d_workspace_per_image(const conv2d_shape_t *s) {
  size_t ckk = (size_t)s->c * s->kh * s->kw, hw = (size_t)s->ho * s->wo;
  return (2 * ckk + (size_t)s->k) * hw;
}

/* Output columns ox whose input column ox*stride - pad + j lies inside [0, w). */
static void valid_range(int n_out, int stride, int pad, int j, int w, int *lo, int *hi) {
  int a = 0, b = n_out;
  while (a < b && a * stride - pad + j < 0) a++;
  while (b > a && (b - 1) * stride - pad + j >= w) b--;
  *lo = a;
  *hi = b;
}

void im2col(const conv2d_shape_t *s, const real_t *x, real_t *col, int ld) {
  const int ho = s->ho, wo = s->wo, st = s->stride, pad = s->pad;
  for (int c = 0; c < s->c; c++) {
    const real_t *xc = x + (size_t)c * s->h * s->w;
    for (int ki = 0; ki < s->kh; ki++) {
      int ylo, yhi;
      valid_range(ho, st, pad, ki, s->h, &ylo, &yhi);
      for (int kj = 0; kj < s->kw; kj++) {
        real_t *row = col + ((size_t)(c * s->kh + ki) * s->kw + kj) * ld;
        int xlo, xhi;
        valid_range(wo, st, pad, kj, s->w, &xlo, &xhi);
        if (ylo > 0) memset(row, 0, sizeof(real_t) * (size_t)ylo * wo);
        if (yhi < ho) memset(row + (size_t)yhi * wo, 0, sizeof(real_t) * (size_t)(ho - yhi) * wo);
        for (int oy = ylo; oy < yhi; oy++) {
          real_t *dst = row + (size_t)oy * wo;
          /* Indexes, not a pointer moved left of the row: ox*st + off >= 0 here. */
          const real_t *src = xc + (size_t)(oy * st - pad + ki) * s->w;
          const int off = kj - pad;
          for (int ox = 0; ox < xlo; ox++) dst[ox] = 0;
          if (st == 1) {
            memcpy(dst + xlo, src + xlo + off, sizeof(real_t) * (size_t)(xhi - xlo));
          } else {
            for (int ox = xlo; ox < xhi; ox++) dst[ox] = src[ox * st + off];
          }
          for (int ox = xhi; ox < wo; ox++) dst[ox] = 0;
        }
      }
    }
  }
}

void col2im_add(const conv2d_shape_t *s, const real_t *col, int ld, real_t *dx) {
  const int ho = s->ho, wo = s->wo, st = s->stride, pad = s->pad;
  for (int c = 0; c < s->c; c++) {
    real_t *dxc = dx + (size_t)c * s->h * s->w;
    for (int ki = 0; ki < s->kh; ki++) {
      int ylo, yhi;
      valid_range(ho, st, pad, ki, s->h, &ylo, &yhi);
      for (int kj = 0; kj < s->kw; kj++) {
        const real_t *row = col + ((size_t)(c * s->kh + ki) * s->kw + kj) * ld;
        int xlo, xhi;
        valid_range(wo, st, pad, kj, s->w, &xlo, &xhi);
        for (int oy = ylo; oy < yhi; oy++) {
          const real_t *src = row + (size_t)oy * wo;
          real_t *dst = dxc + (size_t)(oy * st - pad + ki) * s->w;
          const int off = kj - pad;
          for (int ox = xlo; ox < xhi; ox++) dst[ox * st + off] += src[ox];
        }
      }
    }
  }
}

static int chunk_images(const conv2d_shape_t *s, size_t ws_elems) {
  size_t per = conv2d_workspace_per_image(s);
  size_t g = per ? ws_elems / per : (size_t)s->n;
  if (g < 1) g = 1;
  if (g > (size_t)s->n) g = (size_t)s->n;
  return (int)g;
}

void conv2d_forward(const conv2d_shape_t *s, const real_t *x, const real_t *w, const real_t *b,
                    real_t *y, real_t *ws, size_t ws_elems) {
  const int ckk = s->c * s->kh * s->kw, hw = s->ho * s->wo, g = chunk_images(s, ws_elems);
  const size_t in_img = (size_t)s->c * s->h * s->w, out_img = (size_t)s->k * hw;
  for (int n0 = 0; n0 < s->n; n0 += g) {
    int gn = s->n - n0 < g ? s->n - n0 : g, ld = gn * hw;
    real_t *col = ws, *tmp = ws + (size_t)ckk * ld;
    for (int i = 0; i < gn; i++) im2col(s, x + (size_t)(n0 + i) * in_img, col + (size_t)i * hw, ld);
    if (gn == 1) {
      /* One image: the gemm writes the output in place, no reordering copy. */
      real_t *yi = y + (size_t)n0 * out_img;
      gemm(0, 0, s->k, hw, ckk, 1, w, ckk, col, hw, 0, yi, hw);
      if (b)
        for (int k = 0; k < s->k; k++)
          for (int j = 0; j < hw; j++) yi[(size_t)k * hw + j] += b[k];
      continue;
    }
    gemm(0, 0, s->k, ld, ckk, 1, w, ckk, col, ld, 0, tmp, ld);
    for (int i = 0; i < gn; i++) {
      real_t *yi = y + (size_t)(n0 + i) * out_img;
      for (int k = 0; k < s->k; k++) {
        const real_t *src = tmp + (size_t)k * ld + (size_t)i * hw;
        real_t *dst = yi + (size_t)k * hw, bk = b ? b[k] : 0;
        for (int j = 0; j < hw; j++) dst[j] = src[j] + bk;
      }
    }
  }
}

void conv2d_backward(const conv2d_shape_t *s, const real_t *x, const real_t *w, const real_t *dy,
                     real_t *dx, real_t *dw, real_t *db, real_t *ws, size_t ws_elems) {
  const int ckk = s->c * s->kh * s->kw, hw = s->ho * s->wo, g = chunk_images(s, ws_elems);
  const size_t in_img = (size_t)s->c * s->h * s->w, out_img = (size_t)s->k * hw;
  for (int n0 = 0; n0 < s->n; n0 += g) {
    int gn = s->n - n0 < g ? s->n - n0 : g, ld = gn * hw;
    real_t *col = ws, *gather = ws + (size_t)ckk * ld, *dcol = gather + (size_t)s->k * ld;
    const real_t *dtmp = gather;
    if (gn == 1) {
      /* One image: dy already has the (K, ho*wo) layout of dtmp; use it in place. */
      im2col(s, x + (size_t)n0 * in_img, col, ld);
      dtmp = dy + (size_t)n0 * out_img;
    } else {
      for (int i = 0; i < gn; i++) {
        im2col(s, x + (size_t)(n0 + i) * in_img, col + (size_t)i * hw, ld);
        const real_t *dyi = dy + (size_t)(n0 + i) * out_img;
        for (int k = 0; k < s->k; k++)
          memcpy(gather + (size_t)k * ld + (size_t)i * hw, dyi + (size_t)k * hw, sizeof(real_t) * hw);
      }
    }
    gemm(0, 1, s->k, ckk, ld, 1, dtmp, ld, col, ld, 1, dw, ckk);
    if (db) {
      for (int k = 0; k < s->k; k++) {
        const real_t *r = dtmp + (size_t)k * ld;
        /* Accumulate the bias gradient in double: ld can be 10^5 terms. */
        double acc = 0;
        for (int j = 0; j < ld; j++) acc += r[j];
        db[k] += (real_t)acc;
      }
    }
    if (dx) {
      gemm(1, 0, ckk, ld, s->k, 1, w, ckk, dtmp, ld, 0, dcol, ld);
      for (int i = 0; i < gn; i++)
        col2im_add(s, dcol + (size_t)i * hw, ld, dx + (size_t)(n0 + i) * in_img);
    }
  }
}
