/* gpu_kernels.cu: the trainer's own CUDA kernels (gpu_kernels.h). The SGD update and
 * the unscaling of mixed precision spell out each rounding (__fmul_rn, __fadd_rn: no contraction into fused
 * multiply-adds) so it matches the CPU bit for bit; softmax cross-entropy works in
 * double per row like the CPU; the batch kernel is a gather through the lookup table. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gpu_kernels.h"

namespace {

const int kThreads = 256;

unsigned blocks_for(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b > 65535 ? 65535 : (b ? b : 1));
}

__global__ void sgd_kernel(size_t n, float *param, const float *grad, float *buf, float lr, float momentum,
                           float wd, int nesterov, int first) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float g = grad[i];
    if (wd != 0.0f) g = __fadd_rn(g, __fmul_rn(wd, param[i]));
    if (momentum != 0.0f) {
      const float b = first ? g : __fadd_rn(__fmul_rn(momentum, buf[i]), g);
      buf[i] = b;
      g = nesterov ? __fadd_rn(g, __fmul_rn(momentum, b)) : b;
    }
    param[i] = __fsub_rn(param[i], __fmul_rn(lr, g));
  }
}

/* Logits of either precision read as double, gradients written back in theirs. */
__device__ double as_double(float v) { return v; }
__device__ double as_double(__half v) { return __half2float(v); }
__device__ void store(float *p, double v) { *p = (float)v; }
__device__ void store(__half *p, double v) { *p = __float2half_rn((float)v); }

/* One thread per row: rows are short (the classes), batches a few hundred rows. */
template <typename T>
__global__ void xent_kernel(int n, int k, const T *logits, const uint8_t *labels, float scale, T *dlogits,
                            double *loss, int *right) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const T *z = logits + (size_t)i * k;
  int arg = 0;
  for (int j = 1; j < k; j++)
    if (as_double(z[j]) > as_double(z[arg])) arg = j;
  right[i] = arg == labels[i];
  const double zmax = as_double(z[arg]);
  double sum = 0;
  for (int j = 0; j < k; j++) sum += exp(as_double(z[j]) - zmax);
  const double lse = zmax + log(sum);
  loss[i] = lse - as_double(z[labels[i]]);
  if (!dlogits) return;
  for (int j = 0; j < k; j++) {
    const double p = exp(as_double(z[j]) - lse);
    store(&dlogits[(size_t)i * k + j], (double)(float)(scale * (p - (j == labels[i]))));
  }
}

__global__ void pixels_kernel(int n, int c, int h, int w, const uint8_t *images, const float *lut, const int *aug,
                              float *x) {
  const size_t total = (size_t)n * c * h * w;
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const int col = (int)(e % w), row = (int)(e / w % h), ch = (int)(e / ((size_t)w * h) % c);
    const size_t img = e / ((size_t)w * h * c);
    const int dy = aug[3 * img], dx = aug[3 * img + 1], flip = aug[3 * img + 2];
    const int sr = row + dy, sc = (flip ? w - 1 - col : col) + dx;
    const int inside = sr >= 0 && sr < h && sc >= 0 && sc < w;
    const uint8_t v = inside ? images[((img * c + ch) * h + sr) * w + sc] : 0;
    x[e] = lut[(ch < 4 ? ch : 3) * 256 + v];
  }
}

__global__ void unscale_kernel(size_t n, float *g, float inv, int *found) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float v = g[i];
    if (!isfinite(v)) *found = 1; /* any writer's 1 is the answer: no atomic needed */
    g[i] = __fmul_rn(v, inv);
  }
}

}  // namespace

extern "C" int gpu_sgd_update(size_t n, float *param, const float *grad, float *momentum_buf, float lr,
                              float momentum, float weight_decay, int nesterov, int first, void *stream) {
  if (n == 0) return 0;
  sgd_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(n, param, grad, momentum_buf, lr, momentum,
                                                                   weight_decay, nesterov, first);
  return (int)cudaGetLastError();
}

extern "C" int gpu_softmax_xent(int n, int k, const float *logits, const uint8_t *labels, float grad_scale,
                                float *dlogits, double *loss, int *right, void *stream) {
  if (n <= 0) return 0;
  xent_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, (cudaStream_t)stream>>>(n, k, logits, labels, grad_scale,
                                                                                    dlogits, loss, right);
  return (int)cudaGetLastError();
}

extern "C" int gpu_softmax_xent_half(int n, int k, const void *logits, const uint8_t *labels, float grad_scale,
                                     void *dlogits, double *loss, int *right, void *stream) {
  if (n <= 0) return 0;
  xent_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, (cudaStream_t)stream>>>(
      n, k, (const __half *)logits, labels, grad_scale, (__half *)dlogits, loss, right);
  return (int)cudaGetLastError();
}

extern "C" int gpu_batch_pixels(int n, int c, int h, int w, const uint8_t *images, const float *lut, const int *aug,
                                float *x, void *stream) {
  const size_t total = (size_t)n * c * h * w;
  if (total == 0) return 0;
  pixels_kernel<<<blocks_for(total), kThreads, 0, (cudaStream_t)stream>>>(n, c, h, w, images, lut, aug, x);
  return (int)cudaGetLastError();
}

extern "C" int gpu_unscale_check(size_t n, float *grads, float inv_scale, int *found, void *stream) {
  if (n == 0) return 0;
  unscale_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(n, grads, inv_scale, found);
  return (int)cudaGetLastError();
}
