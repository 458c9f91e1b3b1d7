/* gpu_kernels.c: the trainer's CUDA kernels (kernels/cuda/gpu_kernels.h) against their
 * CPU references on random data, outputs poisoned before each run so that unwritten
 * elements show: the SGD update bit for bit (plain, momentum, Nesterov, weight decay,
 * first step); softmax cross-entropy per row within 1e-12 (loss, double) and 1e-6 of
 * the largest gradient (float), predictions equal; batch normalisation with random
 * crop and flip bit for bit, the augmentation drawn from the same generator as
 * batch_fill; mixed precision's check-and-unscale bit for bit, with the same verdict on a
 * NaN as grad_scaler_unscale; its layout changes (half_layout.h) exact on values that
 * float16 holds exactly, in odd shapes; softmax cross-entropy of float16 logits as the
 * float32 kernel's on the same values, its gradient within float16's rounding. Without
 * a GPU or driver at all (gpu_present.h), the test reports itself skipped (exit 77);
 * a CUDA error once a GPU was found fails it. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "batch.h"
#include "gpu_kernels.h"
#include "grad_scaler.h"
#include "half_layout.h"
#include "hv.h"
#include "rng.h"
#include "sgd.h"
#include "softmax_xent.h"
#include "gpu_present.h"

#define SKIP 77

static rng_t rng;

static float frand(float scale) { return (float)((2 * rng_uniform(&rng) - 1) * scale); }

/* A device copy of host bytes; poison fills it instead when src is NULL. */
static void *to_device(const void *src, size_t bytes) {
  void *d = NULL;
  if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) return NULL;
  if (src) cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice);
  else cudaMemset(d, 0x7b, bytes);
  return d;
}

static void from_device(void *dst, const void *src, size_t bytes) {
  CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
}

static void test_sgd(float momentum, float wd, int nesterov, int first) {
  const size_t n = 100003;
  float *p = malloc(n * 4), *g = malloc(n * 4), *b = malloc(n * 4), *gp = malloc(n * 4), *gb = malloc(n * 4);
  for (size_t i = 0; i < n; i++) p[i] = frand(1), g[i] = frand(0.1f), b[i] = frand(0.5f);
  float *dp = to_device(p, n * 4), *dg = to_device(g, n * 4), *db = to_device(b, n * 4);
  CHECK(gpu_sgd_update(n, dp, dg, db, 0.05f, momentum, wd, nesterov, first, NULL) == 0);
  sgd_update(n, p, g, b, 0.05f, momentum, wd, nesterov, first);
  from_device(gp, dp, n * 4);
  from_device(gb, db, n * 4);
  CHECK(memcmp(gp, p, n * 4) == 0);
  CHECK(momentum == 0 || memcmp(gb, b, n * 4) == 0);
  cudaFree(dp), cudaFree(dg), cudaFree(db);
  free(p), free(g), free(b), free(gp), free(gb);
}

static void test_softmax_xent(int n, int k) {
  float *z = malloc((size_t)n * k * 4), *dz = malloc((size_t)n * k * 4), *gdz = malloc((size_t)n * k * 4);
  uint8_t *y = malloc((size_t)n);
  for (size_t i = 0; i < (size_t)n * k; i++) z[i] = frand(5);
  for (int i = 0; i < n; i++) y[i] = (uint8_t)rng_below(&rng, (uint64_t)k);
  int right = 0;
  const double loss = softmax_xent(n, k, z, y, 1.0f / n, dz, NULL, &right);
  float *dzd = to_device(z, (size_t)n * k * 4), *ddz = to_device(NULL, (size_t)n * k * 4);
  uint8_t *dy = to_device(y, (size_t)n);
  double *dloss = to_device(NULL, (size_t)n * 8), *gloss = malloc((size_t)n * 8);
  int *dright = to_device(NULL, (size_t)n * 4), *gright = malloc((size_t)n * 4);
  CHECK(gpu_softmax_xent(n, k, dzd, dy, 1.0f / n, ddz, dloss, dright, NULL) == 0);
  from_device(gdz, ddz, (size_t)n * k * 4);
  from_device(gloss, dloss, (size_t)n * 8);
  from_device(gright, dright, (size_t)n * 4);
  double sum = 0, worst = 0, top = 0;
  int gsum = 0;
  for (int i = 0; i < n; i++) sum += gloss[i], gsum += gright[i];
  for (size_t i = 0; i < (size_t)n * k; i++) worst = fmax(worst, fabs((double)gdz[i] - dz[i])), top = fmax(top, fabs(dz[i]));
  CHECK_NEAR(sum, loss, 1e-12);
  CHECK(worst <= 1e-6 * top);
  CHECK_EQ_INT(gsum, right);
  cudaFree(dzd), cudaFree(ddz), cudaFree(dy), cudaFree(dloss), cudaFree(dright);
  free(z), free(dz), free(gdz), free(y), free(gloss), free(gright);
}

static void test_batch_pixels(void) {
  const int n = 17, C = 3, H = 32, W = 32;
  dataset_t ds = {n, C, H, W, 10, malloc((size_t)n * C * H * W), malloc((size_t)n)};
  for (size_t i = 0; i < (size_t)n * C * H * W; i++) ds.pixels[i] = (uint8_t)rng_below(&rng, 256);
  for (int i = 0; i < n; i++) ds.labels[i] = (uint8_t)(i % 10);
  int idx[17];
  for (int i = 0; i < n; i++) idx[i] = (i * 7) % n;
  const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, std[3] = {0.2470f, 0.2435f, 0.2616f};
  batch_transform_t t = {mean, std, 4, 1};
  const size_t len = (size_t)n * C * H * W;
  float *x = malloc(len * 4), *gx = malloc(len * 4);
  uint8_t y[17], *gathered = malloc(len);
  rng_t r;
  rng_seed(&r, 99);
  batch_fill(&ds, idx, n, &t, &r, x, y);
  /* The device's way: the same draws, the images gathered, the table uploaded. */
  rng_seed(&r, 99);
  int aug[3 * 17];
  for (int i = 0; i < n; i++) {
    batch_draw_augment(&t, &r, aug + 3 * i);
    memcpy(gathered + (size_t)i * C * H * W, dataset_image(&ds, idx[i]), (size_t)C * H * W);
  }
  float lut[4][256];
  batch_build_lut(&t, C, lut);
  uint8_t *dimg = to_device(gathered, len);
  float *dlut = to_device(lut, sizeof lut), *dx = to_device(NULL, len * 4);
  int *daug = to_device(aug, sizeof aug);
  CHECK(gpu_batch_pixels(n, C, H, W, dimg, dlut, daug, dx, NULL) == 0);
  from_device(gx, dx, len * 4);
  CHECK(memcmp(gx, x, len * 4) == 0);
  cudaFree(dimg), cudaFree(dlut), cudaFree(dx), cudaFree(daug);
  free(x), free(gx), free(gathered), dataset_free(&ds);
}

/* Check-and-unscale against grad_scaler_unscale: the same bits, the same verdict. */
static void test_unscale(int poison) {
  const size_t n = 50001;
  float *g = malloc(n * 4), *gg = malloc(n * 4);
  for (size_t i = 0; i < n; i++) g[i] = frand(60000);
  if (poison) g[n / 2] = NAN;
  float *dg = to_device(g, n * 4);
  int zero = 0, found = -1, *dfound = to_device(&zero, sizeof zero);
  grad_scaler_t s;
  grad_scaler_init(&s);
  CHECK(gpu_unscale_check(n, dg, (float)(1.0 / (double)s.scale), dfound, NULL) == 0);
  const int cpu_found = grad_scaler_unscale(&s, g, n);
  from_device(gg, dg, n * 4);
  from_device(&found, dfound, sizeof found);
  CHECK_EQ_INT(found, cpu_found);
  CHECK_EQ_INT(found, poison);
  size_t differ = 0;
  /* NaN payloads differ between the CPU and the GPU: a NaN matches any NaN. */
  for (size_t i = 0; i < n; i++) differ += isnan(g[i]) ? !isnan(gg[i]) : memcmp(&gg[i], &g[i], 4) != 0;
  CHECK(differ == 0);
  cudaFree(dg), cudaFree(dfound);
  free(g), free(gg);
}

/* A value float16 holds exactly: a multiple of 1/8 below 256 in magnitude. */
static float half_exact(void) { return (float)((int)rng_below(&rng, 4096) - 2048) / 8; }

static void test_half_layout(int n, int c, int h, int w) {
  const size_t len = (size_t)n * c * h * w;
  float *src = malloc(len * 4), *dst = malloc(len * 4), *got = malloc(len * 4);
  uint16_t *half = malloc(len * 2);
  for (size_t i = 0; i < len; i++) src[i] = half_exact(), dst[i] = half_exact();
  float *dsrc = to_device(src, len * 4), *ddst = to_device(dst, len * 4);
  void *dhalf = to_device(NULL, len * 2);
  CHECK(gpu_half_nhwc_from_float_nchw(n, c, h, w, dsrc, dhalf, NULL) == 0);
  CHECK(gpu_float_nchw_add_half_nhwc(n, c, h, w, dhalf, ddst, NULL) == 0);
  from_device(half, dhalf, len * 2);
  from_device(got, ddst, len * 4);
  size_t wrong = 0;
  for (int i = 0; i < n; i++)
    for (int ch = 0; ch < c; ch++)
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          const size_t nchw = (((size_t)i * c + ch) * h + y) * w + x, nhwc = (((size_t)i * h + y) * w + x) * c + ch;
          wrong += hv_half_to_float(half[nhwc]) != src[nchw] || got[nchw] != dst[nchw] + src[nchw];
        }
  CHECK(wrong == 0);
  cudaFree(dsrc), cudaFree(ddst), cudaFree(dhalf);
  free(src), free(dst), free(got), free(half);
}

static void test_softmax_xent_half(int n, int k) {
  const size_t len = (size_t)n * k;
  float *z = malloc(len * 4), *dz = malloc(len * 4);
  uint16_t *gdz = malloc(len * 2);
  uint8_t *y = malloc((size_t)n);
  for (size_t i = 0; i < len; i++) z[i] = half_exact() / 32; /* within +-8 */
  for (int i = 0; i < n; i++) y[i] = (uint8_t)rng_below(&rng, (uint64_t)k);
  int right = 0;
  const double loss = softmax_xent(n, k, z, y, 64.0f / n, dz, NULL, &right);
  float *dzd = to_device(z, len * 4);
  void *dzhalf = to_device(NULL, len * 2), *ddz = to_device(NULL, len * 2);
  CHECK(gpu_half_nhwc_from_float_nchw(1, (int)len, 1, 1, dzd, dzhalf, NULL) == 0);
  uint8_t *dy = to_device(y, (size_t)n);
  double *dloss = to_device(NULL, (size_t)n * 8), *gloss = malloc((size_t)n * 8);
  int *dright = to_device(NULL, (size_t)n * 4), *gright = malloc((size_t)n * 4);
  CHECK(gpu_softmax_xent_half(n, k, dzhalf, dy, 64.0f / n, ddz, dloss, dright, NULL) == 0);
  from_device(gdz, ddz, len * 2);
  from_device(gloss, dloss, (size_t)n * 8);
  from_device(gright, dright, (size_t)n * 4);
  double sum = 0, worst = 0, top = 0;
  int gsum = 0;
  for (int i = 0; i < n; i++) sum += gloss[i], gsum += gright[i];
  for (size_t i = 0; i < len; i++)
    worst = fmax(worst, fabs((double)hv_half_to_float(gdz[i]) - dz[i])), top = fmax(top, fabs(dz[i]));
  CHECK_NEAR(sum, loss, 1e-12);
  CHECK(worst <= 1e-3 * top); /* float16 keeps 11 significant bits: 4.9e-4 relative */
  CHECK_EQ_INT(gsum, right);
  cudaFree(dzd), cudaFree(dzhalf), cudaFree(ddz), cudaFree(dy), cudaFree(dloss), cudaFree(dright);
  free(z), free(dz), free(gdz), free(y), free(gloss), free(gright);
}

int main(void) {
  char why[256];
  const int present = test_gpu_present(why, sizeof why);
  if (present < 0) {
    fprintf(stderr, "gpu_kernels: FAILED: %s\n", why);
    return 1;
  }
  if (present == 0) {
    printf("gpu_kernels: skipped (%s)\n", why);
    return SKIP;
  }
  rng_seed(&rng, 2026);
  test_sgd(0, 0, 0, 0);
  test_sgd(0.9f, 5e-4f, 0, 1);
  test_sgd(0.9f, 5e-4f, 0, 0);
  test_sgd(0.9f, 5e-4f, 1, 0);
  test_softmax_xent(257, 10);
  test_softmax_xent(64, 100);
  test_batch_pixels();
  test_unscale(0);
  test_unscale(1);
  test_half_layout(3, 5, 7, 9);
  test_half_layout(2, 64, 3, 3);
  test_half_layout(1, 1000, 1, 1);
  test_softmax_xent_half(257, 10);
  test_softmax_xent_half(64, 100);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK_RETURN();
}
