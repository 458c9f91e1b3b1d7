/* test_conv2d_dnnl.c: the oneDNN convolution (float32) against the im2col + gemm one
 * on the same random data, forward and all three gradients, for the shapes of the
 * models (3x3 pad 1 stride 1/2, 1x1 stride 2, 5x5 pad 2, no padding, odd sizes; 32 to
 * 256 channels, where the directions run Winograd) and two batch sizes on one context
 * (primitives rebuilt). Bound: 1e-4 relative to the largest value (float32 sums of up
 * to 10^4 products in different orders; measured: direct 8e-7, Winograd 3.3e-6).
 * Backward must accumulate: it is called on buffers already holding 1. The same
 * convolutions on channel-blocked inputs and outputs (layout_blocked.h) give the same
 * bits, and backward told to write dx (not add to it) gives what adding to zeros
 * gives. Each direction runs the algorithm conv2d_dnnl.c chooses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conv2d.h"
#include "conv2d_dnnl.h"
#include "layout_blocked.h"

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)(((*s >> 8) & 0xffff) / 32768.0 - 1.0);
}

static double maxrel(const float *a, const float *b, size_t n) {
  double d = 0, m = 1e-30;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i])), m = fmax(m, fabs(b[i]));
  return d / m;
}

static void run(conv2d_dnnl_t *ctx, int n, int c, int h, int w, int k, int ks, int stride,
                int pad, int bias) {
  conv2d_shape_t s = {.n = n, .c = c, .h = h, .w = w, .k = k, .kh = ks, .kw = ks,
                      .stride = stride, .pad = pad};
  CHECK(conv2d_shape_init(&s) == 0);
  const size_t nx = (size_t)n * c * h * w, nw = (size_t)k * c * ks * ks,
               ny = (size_t)n * k * s.ho * s.wo, nws = conv2d_workspace_per_image(&s) * n;
  float *x = malloc(nx * 4), *wt = malloc(nw * 4), *b = malloc((size_t)k * 4),
        *dy = malloc(ny * 4), *ws = malloc(nws * 4), *y[2], *dx[2], *dw[2], *db[2];
  unsigned seed = (unsigned)(n * 7 + c * 3 + ks);
  for (size_t i = 0; i < nx; i++) x[i] = frand(&seed);
  for (size_t i = 0; i < nw; i++) wt[i] = frand(&seed);
  for (int i = 0; i < k; i++) b[i] = frand(&seed);
  for (size_t i = 0; i < ny; i++) dy[i] = frand(&seed);
  for (int v = 0; v < 2; v++) {
    y[v] = malloc(ny * 4), dx[v] = malloc(nx * 4), dw[v] = malloc(nw * 4), db[v] = malloc((size_t)k * 4);
    for (size_t i = 0; i < nx; i++) dx[v][i] = 1;
    for (size_t i = 0; i < nw; i++) dw[v][i] = 1;
    for (int i = 0; i < k; i++) db[v][i] = 1;
  }
  conv2d_forward(&s, x, wt, bias ? b : NULL, y[0], ws, nws);
  conv2d_backward(&s, x, wt, dy, dx[0], dw[0], bias ? db[0] : NULL, ws, nws);
  CHECK(conv2d_dnnl_forward(ctx, &s, x, wt, bias ? b : NULL, y[1]) == 0);
  CHECK(conv2d_dnnl_backward(ctx, &s, x, wt, dy, dx[1], dw[1], bias ? db[1] : NULL) == 0);
  double e[4] = {maxrel(y[1], y[0], ny), maxrel(dx[1], dx[0], nx), maxrel(dw[1], dw[0], nw),
                 bias ? maxrel(db[1], db[0], (size_t)k) : 0};
  for (int i = 0; i < 4; i++) {
    if (!(e[i] <= 1e-4)) {
      fprintf(stderr, "n%d c%d %dx%d k%d ks%d s%d p%d: %s rel err %.3g\n", n, c, h, w, k, ks,
              stride, pad, (const char *[]){"y", "dx", "dw", "db"}[i], e[i]);
      check_failures++;
    }
  }
  CHECK(db[0][0] != 1 || !bias); /* accumulated something */
  /* Told that it is dx's only contributor, backward writes dx over whatever it held:
   * the values of accumulating onto zeros. */
  {
    conv2d_dnnl_t *wctx = conv2d_dnnl_create(CONV2D_DNNL_DX_OVERWRITE);
    float *dx0 = calloc(nx, 4), *dxw = malloc(nx * 4), *dw0 = calloc(nw, 4), *db0 = calloc((size_t)k, 4);
    for (size_t i = 0; i < nx; i++) dxw[i] = 7;
    CHECK(wctx && conv2d_dnnl_backward(ctx, &s, x, wt, dy, dx0, dw0, bias ? db0 : NULL) == 0);
    CHECK(wctx && conv2d_dnnl_backward(wctx, &s, x, wt, dy, dxw, dw0, bias ? db0 : NULL) == 0);
    size_t differ = 0;
    for (size_t i = 0; i < nx; i++) differ += dxw[i] != dx0[i];
    CHECK(differ == 0);
    conv2d_dnnl_free(wctx);
    free(dx0), free(dxw), free(dw0), free(db0);
  }
  /* The same convolution on channel-blocked tensors (for whichever side has a multiple
   * of 16 channels) gives the same bits: the same primitives, minus the reorders. */
  const int src_blocked = c % CHANNEL_BLOCK == 0, dst_blocked = k % CHANNEL_BLOCK == 0;
  if (src_blocked || dst_blocked) {
    conv2d_dnnl_t *bctx = conv2d_dnnl_create((src_blocked ? CONV2D_DNNL_SRC_BLOCKED : 0) |
                                             (dst_blocked ? CONV2D_DNNL_DST_BLOCKED : 0));
    float *xb = malloc(nx * 4), *dyb = malloc(ny * 4), *yb = malloc(ny * 4), *dxb = malloc(nx * 4),
          *back_x = malloc(nx * 4), *back_y = malloc(ny * 4), *dwb = malloc(nw * 4), *dbb = malloc((size_t)k * 4);
    for (size_t i = 0; i < nx; i++) dxb[i] = 1;
    for (size_t i = 0; i < nw; i++) dwb[i] = 1;
    for (int i = 0; i < k; i++) dbb[i] = 1;
    if (src_blocked) layout_to_blocked(n, c, h * w, x, xb);
    else memcpy(xb, x, nx * 4);
    if (dst_blocked) layout_to_blocked(n, k, s.ho * s.wo, dy, dyb);
    else memcpy(dyb, dy, ny * 4);
    CHECK(bctx && conv2d_dnnl_forward(bctx, &s, xb, wt, bias ? b : NULL, yb) == 0);
    CHECK(bctx && conv2d_dnnl_backward(bctx, &s, xb, wt, dyb, dxb, dwb, bias ? dbb : NULL) == 0);
    if (src_blocked) layout_from_blocked(n, c, h * w, dxb, back_x);
    else memcpy(back_x, dxb, nx * 4);
    if (dst_blocked) layout_from_blocked(n, k, s.ho * s.wo, yb, back_y);
    else memcpy(back_y, yb, ny * 4);
    CHECK(memcmp(back_y, y[1], ny * 4) == 0);
    CHECK(memcmp(back_x, dx[1], nx * 4) == 0);
    CHECK(memcmp(dwb, dw[1], nw * 4) == 0);
    CHECK(!bias || memcmp(dbb, db[1], (size_t)k * 4) == 0);
    conv2d_dnnl_free(bctx);
    free(xb), free(dyb), free(yb), free(dxb), free(back_x), free(back_y), free(dwb), free(dbb);
  }
  for (int v = 0; v < 2; v++) free(y[v]), free(dx[v]), free(dw[v]), free(db[v]);
  free(x), free(wt), free(b), free(dy), free(ws);
}

/* oneDNN's kernel names for the three directions of one small convolution. */
static void kernels_of(int flags, int c, int k, int stride, char names[3][64]) {
  conv2d_shape_t s = {.n = 2, .c = c, .h = 8, .w = 8, .k = k, .kh = 3, .kw = 3, .stride = stride, .pad = 1};
  CHECK(conv2d_shape_init(&s) == 0);
  const size_t nx = (size_t)s.n * c * 64, nw = (size_t)k * c * 9, ny = (size_t)s.n * k * s.ho * s.wo;
  float *x = calloc(nx, 4), *w = calloc(nw, 4), *y = calloc(ny, 4), *dx = calloc(nx, 4), *dw = calloc(nw, 4);
  conv2d_dnnl_t *ctx = conv2d_dnnl_create(flags);
  CHECK(ctx && conv2d_dnnl_forward(ctx, &s, x, w, NULL, y) == 0);
  CHECK(ctx && conv2d_dnnl_backward(ctx, &s, x, w, y, dx, dw, NULL) == 0);
  for (int d = 0; d < 3; d++) {
    const char *impl = conv2d_dnnl_impl(ctx, d); /* NULL without a context */
    snprintf(names[d], 64, "%s", impl ? impl : "none");
  }
  conv2d_dnnl_free(ctx);
  free(x), free(w), free(y), free(dx), free(dw);
}

static int is_winograd(const char *name) { return strstr(name, "wino") != NULL; }

/* Forced direct never runs Winograd. Where oneDNN has Winograd for a shape on this
 * machine (forced Winograd gets it; it needs AVX-512), the default takes it from 32
 * channels in every direction and at 16 channels for backward weights only; stride 2
 * stays direct. On a machine without it every direction runs direct. */
static void algorithm_choice(void) {
  char forced[3][64], direct[3][64], dflt[3][64];
  int available = 0;
  const int shapes[3][3] = {{16, 16, 1}, {32, 32, 1}, {32, 64, 2}};
  for (int i = 0; i < 3; i++) {
    const int c = shapes[i][0], k = shapes[i][1], stride = shapes[i][2];
    kernels_of(CONV2D_DNNL_WINOGRAD, c, k, stride, forced);
    kernels_of(CONV2D_DNNL_DIRECT, c, k, stride, direct);
    kernels_of(0, c, k, stride, dflt);
    available |= is_winograd(forced[0]);
    for (int d = 0; d < 3; d++) {
      const int want = is_winograd(forced[d]) && stride == 1 && (c >= 32 || d == 2);
      if (is_winograd(direct[d]) || is_winograd(dflt[d]) != want) {
        fprintf(stderr, "c%d k%d stride %d direction %d: default runs %s, forced direct %s, forced Winograd %s\n",
                c, k, stride, d, dflt[d], direct[d], forced[d]);
        check_failures++;
      }
    }
  }
  printf("oneDNN's Winograd on this machine: %s\n", available ? "yes" : "no (all direct)");
}

int main(void) {
  conv2d_dnnl_t *ctx = conv2d_dnnl_create(0);
  CHECK(ctx != NULL);
  if (!ctx) CHECK_RETURN();
  run(ctx, 4, 16, 8, 8, 16, 3, 1, 1, 0);
  run(ctx, 3, 16, 8, 8, 16, 3, 1, 1, 0); /* same layer, smaller batch: rebuilt */
  run(ctx, 2, 16, 9, 9, 32, 3, 2, 1, 0);
  run(ctx, 2, 16, 8, 8, 32, 1, 2, 0, 0);
  run(ctx, 3, 1, 28, 28, 16, 5, 1, 2, 1);
  run(ctx, 2, 3, 10, 7, 5, 4, 1, 0, 1);
  run(ctx, 2, 32, 8, 8, 32, 3, 1, 1, 1);
  run(ctx, 4, 64, 8, 8, 64, 3, 1, 1, 0);
  run(ctx, 2, 128, 16, 16, 128, 3, 1, 1, 0);
  run(ctx, 2, 256, 8, 8, 256, 3, 1, 1, 0);
  conv2d_dnnl_free(ctx);
  algorithm_choice();
  CHECK_RETURN();
}
