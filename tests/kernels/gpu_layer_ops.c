/* gpu_layer_ops.c: the GPU layers' compute (kernels/cuda/cudnn_ops.h: convolution,
 * batch norm, pooling, ReLU, add; cublas_linear.h: the linear layer) against the CPU
 * kernels on the same random data, on a GPU (exit 77, skipped, without a GPU or driver
 * at all: gpu_present.h; a CUDA error once one was found fails).
 * Convolutions: forward and the three gradients for the models' shapes (3x3 pad 1
 * stride 1 and 2, 1x1 stride 2, 5x5 pad 2 with bias), two batch sizes on one context;
 * batch norm: training forward (output, saved and running statistics), evaluation,
 * backward; max, average and global average pooling; ReLU; the residual add; linear
 * with and without bias. Bound: 1e-4 relative to the largest value (float32 sums in other orders;
 * TF32 is off: HV_CUDNN_TF32=0). Backward must accumulate into buffers holding 1. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "batchnorm.h"
#include "conv2d.h"
#include "cublas_linear.h"
#include "cudnn_ops.h"
#include "eltwise.h"
#include "linear.h"
#include "pool.h"
#include "gpu_present.h"

static unsigned seed = 7;
static float frand(void) {
  seed = seed * 1103515245u + 12345u;
  return (float)(((seed >> 8) & 0xffff) / 32768.0 - 1.0);
}

static float *rand_host(size_t n) {
  float *p = malloc(n * 4 + 4);
  for (size_t i = 0; i < n; i++) p[i] = frand();
  return p;
}

static float *dev(const float *h, size_t n) {
  float *d = NULL;
  cudaMalloc((void **)&d, n * 4 + 4);
  cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice);
  return d;
}

static double maxrel_dev(const float *d, const float *ref, size_t n) {
  float *h = malloc(n * 4 + 4);
  cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost);
  double diff = 0, top = 1e-30;
  for (size_t i = 0; i < n; i++) diff = fmax(diff, fabs((double)h[i] - ref[i])), top = fmax(top, fabs(ref[i]));
  free(h);
  return diff / top;
}

static float *filled(size_t n, float v) {
  float *p = malloc(n * 4 + 4);
  for (size_t i = 0; i < n; i++) p[i] = v;
  return p;
}

static void conv_case(cudnn_ctx_t *ctx, int n, int c, int h, int w, int k, int ks, int stride, int pad, int bias) {
  conv2d_shape_t s = {.n = n, .c = c, .h = h, .w = w, .k = k, .kh = ks, .kw = ks, .stride = stride, .pad = pad};
  CHECK(conv2d_shape_init(&s) == 0);
  const size_t nx = (size_t)n * c * h * w, nw = (size_t)k * c * ks * ks, ny = (size_t)n * k * s.ho * s.wo,
               nws = conv2d_workspace_per_image(&s) * n;
  float *x = rand_host(nx), *wt = rand_host(nw), *b = rand_host((size_t)k), *dy = rand_host(ny), *y = malloc(ny * 4),
        *dx = filled(nx, 1), *dw = filled(nw, 1), *db = filled((size_t)k, 1), *ws = malloc(nws * 4);
  conv2d_forward(&s, x, wt, bias ? b : NULL, y, ws, nws);
  conv2d_backward(&s, x, wt, dy, dx, dw, bias ? db : NULL, ws, nws);
  float *gx = dev(x, nx), *gw = dev(wt, nw), *gb = dev(b, (size_t)k), *gdy = dev(dy, ny), *gy = dev(y, ny);
  float *one_x = filled(nx, 1), *one_w = filled(nw, 1), *one_b = filled((size_t)k, 1);
  float *gdx = dev(one_x, nx), *gdw = dev(one_w, nw), *gdb = dev(one_b, (size_t)k);
  cudaMemset(gy, 0x7b, ny * 4); /* poison */
  CHECK(cudnn_conv2d_forward(ctx, &s, gx, gw, bias ? gb : NULL, gy, NULL) == 0);
  CHECK(cudnn_conv2d_backward(ctx, &s, gx, gw, gdy, gdx, gdw, bias ? gdb : NULL, NULL) == 0);
  const double e[4] = {maxrel_dev(gy, y, ny), maxrel_dev(gdx, dx, nx), maxrel_dev(gdw, dw, nw),
                       bias ? maxrel_dev(gdb, db, (size_t)k) : 0};
  for (int i = 0; i < 4; i++)
    if (!(e[i] <= 1e-4)) {
      fprintf(stderr, "conv n%d c%d %dx%d k%d ks%d s%d p%d: %s rel err %.3g (%s)\n", n, c, h, w, k, ks, stride, pad,
              (const char *[]){"y", "dx", "dw", "db"}[i], e[i], cudnn_ctx_error(ctx));
      check_failures++;
    }
  cudaFree(gx), cudaFree(gw), cudaFree(gb), cudaFree(gdy), cudaFree(gy), cudaFree(gdx), cudaFree(gdw), cudaFree(gdb);
  free(x), free(wt), free(b), free(dy), free(y), free(dx), free(dw), free(db), free(ws), free(one_x), free(one_w),
      free(one_b);
}

static void bn_case(int n, int c, int hw) {
  cudnn_ctx_t *ctx = cudnn_ctx_create();
  CHECK(ctx != NULL);
  if (!ctx) return;
  const size_t len = (size_t)n * c * hw;
  float *x = rand_host(len), *dy = rand_host(len), *g = rand_host((size_t)c), *b = rand_host((size_t)c);
  float *rm = filled((size_t)c, 0.25f), *rv = filled((size_t)c, 2), *sm = malloc((size_t)c * 4), *si = malloc((size_t)c * 4),
        *y = malloc(len * 4), *dx = filled(len, 1), *dg = filled((size_t)c, 1), *dbt = filled((size_t)c, 1);
  float *gx = dev(x, len), *gdy = dev(dy, len), *gg = dev(g, (size_t)c), *gb = dev(b, (size_t)c), *grm = dev(rm, (size_t)c),
        *grv = dev(rv, (size_t)c), *gsm = dev(sm, (size_t)c), *gsi = dev(si, (size_t)c), *gy = dev(y, len),
        *gdx = dev(dx, len), *gdg = dev(dg, (size_t)c), *gdb = dev(dbt, (size_t)c);
  batchnorm_forward_train(n, c, hw, x, g, b, 1e-5f, 0.1f, rm, rv, sm, si, y);
  batchnorm_backward(n, c, hw, 1, x, dy, g, sm, si, dx, 0, dg, dbt);
  CHECK(cudnn_batchnorm_forward_train(ctx, n, c, hw, gx, gg, gb, 1e-5f, 0.1f, grm, grv, gsm, gsi, gy, NULL) == 0);
  CHECK(cudnn_batchnorm_backward(ctx, n, c, hw, gx, gdy, gg, gsm, gsi, 1e-5f, gdx, gdg, gdb, NULL) == 0);
  CHECK(maxrel_dev(gy, y, len) <= 1e-4);
  CHECK(maxrel_dev(grm, rm, (size_t)c) <= 1e-4 && maxrel_dev(grv, rv, (size_t)c) <= 1e-4);
  CHECK(maxrel_dev(gsm, sm, (size_t)c) <= 1e-4 && maxrel_dev(gsi, si, (size_t)c) <= 1e-4);
  CHECK(maxrel_dev(gdx, dx, len) <= 1e-4);
  CHECK(maxrel_dev(gdg, dg, (size_t)c) <= 1e-4 && maxrel_dev(gdb, dbt, (size_t)c) <= 1e-4);
  batchnorm_forward_eval(n, c, hw, x, g, b, 1e-5f, rm, rv, sm, si, y);
  CHECK(cudnn_batchnorm_forward_eval(ctx, n, c, hw, gx, gg, gb, 1e-5f, grm, grv, gy, NULL) == 0);
  CHECK(maxrel_dev(gy, y, len) <= 1e-4);
  float *ds[] = {gx, gdy, gg, gb, grm, grv, gsm, gsi, gy, gdx, gdg, gdb};
  for (size_t i = 0; i < sizeof ds / sizeof *ds; i++) cudaFree(ds[i]);
  float *hs[] = {x, dy, g, b, rm, rv, sm, si, y, dx, dg, dbt};
  for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) free(hs[i]);
  cudnn_ctx_free(ctx);
}

static void pool_case(int max, int n, int c, int h, int w, int k, int stride) {
  cudnn_ctx_t *ctx = cudnn_ctx_create();
  pool_shape_t s = {.n = n, .c = c, .h = h, .w = w, .k = k, .stride = stride};
  CHECK(ctx && pool_shape_init(&s) == 0);
  if (!ctx) return;
  const size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * s.ho * s.wo;
  float *x = rand_host(nx), *dy = rand_host(ny), *y = malloc(ny * 4), *dx = filled(nx, 1);
  int32_t *arg = malloc(ny * 4);
  if (max) maxpool_forward(&s, x, y, arg), maxpool_backward(&s, dy, arg, dx, 0);
  else avgpool_forward(&s, x, y), avgpool_backward(&s, dy, dx);
  float *one = filled(nx, 1), *gx = dev(x, nx), *gdy = dev(dy, ny), *gy = dev(y, ny), *gdx = dev(one, nx);
  cudaMemset(gy, 0x7b, ny * 4);
  CHECK(cudnn_pool_forward(ctx, max, n, c, h, w, k, stride, gx, gy, NULL) == 0);
  CHECK(cudnn_pool_backward(ctx, max, n, c, h, w, k, stride, gx, gy, gdy, gdx, NULL) == 0);
  CHECK(maxrel_dev(gy, y, ny) <= 1e-4);
  CHECK(maxrel_dev(gdx, dx, nx) <= 1e-4);
  cudaFree(gx), cudaFree(gdy), cudaFree(gy), cudaFree(gdx);
  free(x), free(dy), free(y), free(dx), free(arg), free(one);
  cudnn_ctx_free(ctx);
}

static void eltwise_case(size_t count) {
  cudnn_ctx_t *ctx = cudnn_ctx_create();
  CHECK(ctx != NULL);
  if (!ctx) return;
  float *x = rand_host(count), *b = rand_host(count), *dy = rand_host(count), *y = malloc(count * 4),
        *dx = filled(count, 1), *sum = malloc(count * 4);
  relu_forward(count, x, y);
  relu_backward(count, y, dy, dx);
  add_forward(count, x, b, sum);
  float *one = filled(count, 1), *gx = dev(x, count), *gb = dev(b, count), *gdy = dev(dy, count), *gy = dev(y, count),
        *gdx = dev(one, count), *gsum = dev(y, count);
  CHECK(cudnn_relu_forward(ctx, count, gx, gy, NULL) == 0);
  CHECK(cudnn_relu_backward(ctx, count, gx, gy, gdy, gdx, NULL) == 0);
  CHECK(cudnn_add(ctx, count, gx, gb, gsum, NULL) == 0);
  CHECK(maxrel_dev(gy, y, count) == 0 && maxrel_dev(gdx, dx, count) <= 1e-6 && maxrel_dev(gsum, sum, count) == 0);
  CHECK(cudnn_accumulate(ctx, count, gdy, gdx, NULL) == 0); /* dx + dy */
  axpy_add(count, dy, dx);
  CHECK(maxrel_dev(gdx, dx, count) <= 1e-6);
  cudaFree(gx), cudaFree(gb), cudaFree(gdy), cudaFree(gy), cudaFree(gdx), cudaFree(gsum);
  free(x), free(b), free(dy), free(y), free(dx), free(sum), free(one);
  cudnn_ctx_free(ctx);
}

static void linear_case(int n, int in, int out, int bias) {
  cublas_linear_t *lin = cublas_linear_create();
  CHECK(lin != NULL);
  if (!lin) return;
  const size_t nx = (size_t)n * in, nw = (size_t)out * in, ny = (size_t)n * out;
  float *x = rand_host(nx), *w = rand_host(nw), *b = rand_host((size_t)out), *dy = rand_host(ny), *y = malloc(ny * 4),
        *dx = filled(nx, 1), *dw = filled(nw, 1), *db = filled((size_t)out, 1);
  linear_forward(n, in, out, x, w, bias ? b : NULL, y);
  linear_backward(n, in, out, x, w, dy, dx, dw, bias ? db : NULL);
  float *ox = filled(nx, 1), *ow = filled(nw, 1), *ob = filled((size_t)out, 1);
  float *gx = dev(x, nx), *gw = dev(w, nw), *gb = dev(b, (size_t)out), *gdy = dev(dy, ny), *gy = dev(y, ny),
        *gdx = dev(ox, nx), *gdw = dev(ow, nw), *gdb = dev(ob, (size_t)out);
  cudaMemset(gy, 0x7b, ny * 4);
  CHECK(cublas_linear_forward(lin, n, in, out, gx, gw, bias ? gb : NULL, gy, NULL) == 0);
  CHECK(cublas_linear_backward(lin, n, in, out, gx, gw, gdy, gdx, gdw, bias ? gdb : NULL, NULL) == 0);
  CHECK(maxrel_dev(gy, y, ny) <= 1e-4 && maxrel_dev(gdx, dx, nx) <= 1e-4 && maxrel_dev(gdw, dw, nw) <= 1e-4);
  CHECK(!bias || maxrel_dev(gdb, db, (size_t)out) <= 1e-4);
  float *ds[] = {gx, gw, gb, gdy, gy, gdx, gdw, gdb};
  for (size_t i = 0; i < sizeof ds / sizeof *ds; i++) cudaFree(ds[i]);
  float *hs[] = {x, w, b, dy, y, dx, dw, db, ox, ow, ob};
  for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) free(hs[i]);
  cublas_linear_free(lin);
}

int main(void) {
  char why[256];
  const int present = test_gpu_present(why, sizeof why);
  if (present < 0) {
    fprintf(stderr, "gpu_layer_ops: FAILED: %s\n", why);
    return 1;
  }
  if (present == 0) {
    printf("gpu_layer_ops: skipped (%s)\n", why);
    return 77;
  }
  setenv("HV_CUDNN_TF32", "0", 1);
  cudnn_ctx_t *ctx = cudnn_ctx_create();
  CHECK(ctx != NULL);
  if (!ctx) CHECK_RETURN();
  conv_case(ctx, 4, 16, 8, 8, 16, 3, 1, 1, 0);
  conv_case(ctx, 3, 16, 8, 8, 16, 3, 1, 1, 0); /* same layer, smaller batch: new algorithms */
  conv_case(ctx, 2, 16, 9, 9, 32, 3, 2, 1, 0);
  conv_case(ctx, 2, 16, 8, 8, 32, 1, 2, 0, 0);
  conv_case(ctx, 3, 1, 28, 28, 16, 5, 1, 2, 1);
  cudnn_ctx_free(ctx);
  bn_case(8, 16, 64);
  bn_case(3, 32, 49);
  pool_case(1, 4, 16, 28, 28, 2, 2);
  pool_case(0, 4, 16, 8, 8, 2, 2);
  pool_case(0, 4, 64, 8, 8, 8, 8); /* global average pooling of a WRN's last map */
  eltwise_case(100003);
  linear_case(64, 640, 10, 1);
  linear_case(7, 33, 5, 0);
  CHECK_RETURN();
}
