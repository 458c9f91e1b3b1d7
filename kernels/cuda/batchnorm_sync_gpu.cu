/* batchnorm_sync_gpu.cu: SyncBatchNorm's kernels on the GPU (batchnorm_sync_gpu.h),
 * step for step the CPU's kernels/batchnorm_sync.c but for the per-channel sums: here
 * double sums (one block per channel, a tree in shared memory), where the CPU sums each
 * row as its BatchNorm does (batchnorm_rows.h) to agree with it within 1e-6; the GPU's
 * BatchNorm is cuDNN's, whose order no kernel here could follow, so the GPU keeps the
 * more precise sums. Then the reduction over the processes, per-channel statistics and
 * coefficients (one thread per channel, the CPU's formulas), the element-wise pass. */
#include <cuda_runtime.h>
#include <math.h>

#include "batchnorm_sync_gpu.h"

namespace {

const int kThreads = 256;

/* a[ch] = sum over the channel of (x - shift[ch]); b[ch] = sum of its square (square)
 * or of (x - shift) * q (q), when b. tail (block 0): tail[0] = count, tail[1] = flag. */
__global__ void channel_sums(int n, int c, int hw, const float *x, const float *shift, const float *q, int square,
                             double *a, double *b, double *tail, double count, double flag) {
  __shared__ double sa[kThreads], sb[kThreads];
  const int ch = blockIdx.x;
  const double s = shift ? (double)shift[ch] : 0.0;
  double ta = 0, tb = 0;
  const size_t total = (size_t)n * hw;
  for (size_t e = threadIdx.x; e < total; e += blockDim.x) {
    const size_t at = ((e / hw) * c + ch) * hw + e % hw;
    const double d = (double)x[at] - s;
    ta += d;
    if (b) tb += square ? d * d : d * (double)q[at];
  }
  sa[threadIdx.x] = ta;
  sb[threadIdx.x] = tb;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) sa[threadIdx.x] += sa[threadIdx.x + w], sb[threadIdx.x] += sb[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    a[ch] = sa[0];
    if (b) b[ch] = sb[0];
    if (tail && ch == 0) tail[0] = count, tail[1] = flag;
  }
}

__global__ void float_mean(int c, const double *stats, float *save_mean) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch < c) save_mean[ch] = (float)(stats[ch] / stats[c]);
}

__global__ void forward_coefficients(int c, const double *stats, const double *dev, const float *gamma,
                                     const float *beta, float eps, float momentum, float *running_mean,
                                     float *running_var, float *save_invstd, double *ca, double *cb) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double m = stats[c], mean = stats[ch] / m, delta = dev[ch] / m;
  double ss = dev[c + ch] - m * delta * delta;
  if (ss < 0) ss = 0;
  const double var = ss / m, invstd = 1.0 / sqrt(var + eps);
  save_invstd[ch] = (float)invstd;
  if (running_mean) {
    running_mean[ch] = (float)((1 - momentum) * running_mean[ch] + momentum * mean);
    const double unbiased = m > 1 ? ss / (m - 1) : var;
    running_var[ch] = (float)((1 - momentum) * running_var[ch] + momentum * unbiased);
  }
  ca[ch] = (float)(gamma[ch] * invstd);
  cb[ch] = (float)(beta[ch] - mean * gamma[ch] * invstd);
}

__global__ void affine(size_t total, int c, int hw, const float *x, const double *ca, const double *cb, float *y) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const int ch = (int)((e / hw) % c);
    y[e] = __fadd_rn(__fmul_rn((float)ca[ch], x[e]), (float)cb[ch]);
  }
}

__global__ void param_grads(int c, const double *g, const float *save_invstd, float *dgamma, float *dbeta) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  dgamma[ch] += (float)(g[c + ch] * save_invstd[ch]);
  dbeta[ch] += (float)g[ch];
}

__global__ void input_grad(size_t total, int c, int hw, const float *x, const float *dy, const float *gamma,
                           const float *save_mean, const float *save_invstd, const double *g, float *dx,
                           int dx_write) {
  const double m = g[2 * c];
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const int ch = (int)((e / hw) % c);
    const double invstd = save_invstd[ch], scale = gamma[ch] * invstd;
    const float ca = (float)scale, cb = (float)(-scale * (g[c + ch] * invstd * invstd / m)),
                cc = (float)(-scale * (g[ch] / m));
    const float v = __fadd_rn(__fadd_rn(__fmul_rn(ca, dy[e]), __fmul_rn(cb, __fsub_rn(x[e], save_mean[ch]))), cc);
    dx[e] = dx_write ? v : __fadd_rn(dx[e], v);
  }
}

unsigned grid_for(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b > 65535 ? 65535 : (b ? b : 1));
}

#define LAUNCHED() (cudaGetLastError() == cudaSuccess)

}  // namespace

extern "C" int gpu_batchnorm_forward_train_sync(int n, int c, int hw, const float *x, const float *gamma,
                                                const float *beta, float eps, float momentum, float *running_mean,
                                                float *running_var, float *save_mean, float *save_invstd, float *y,
                                                double *scratch, gpu_bn_reduce_fn reduce, void *ctx,
                                                int *ranks_with_one, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  double *stats = scratch, *dev = scratch + c + 2, *ca = dev + 2 * (size_t)c, *cb = ca + c;
  channel_sums<<<c, kThreads, 0, s>>>(n, c, hw, x, NULL, NULL, 0, stats, NULL, stats + c, (double)n * hw, n < 2);
  if (!LAUNCHED()) return -3;
  if (reduce(ctx, "stats", stats, (size_t)c + 2)) return -1;
  double flag = 0;
  if (cudaMemcpyAsync(&flag, stats + c + 1, sizeof flag, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess)
    return -3;
  if (flag > 0) {
    if (ranks_with_one) *ranks_with_one = (int)flag;
    return -2;
  }
  float_mean<<<grid_for((size_t)c), kThreads, 0, s>>>(c, stats, save_mean);
  channel_sums<<<c, kThreads, 0, s>>>(n, c, hw, x, save_mean, NULL, 1, dev, dev + c, NULL, 0, 0);
  if (!LAUNCHED()) return -3;
  if (reduce(ctx, "var", dev, 2 * (size_t)c)) return -1;
  forward_coefficients<<<grid_for((size_t)c), kThreads, 0, s>>>(c, stats, dev, gamma, beta, eps, momentum,
                                                                running_mean, running_var, save_invstd, ca, cb);
  const size_t total = (size_t)n * c * hw;
  affine<<<grid_for(total), kThreads, 0, s>>>(total, c, hw, x, ca, cb, y);
  return LAUNCHED() ? 0 : -3;
}

extern "C" int gpu_batchnorm_backward_sync(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                                           const float *save_mean, const float *save_invstd, float *dx, int dx_write,
                                           float *dgamma, float *dbeta, double *scratch, gpu_bn_reduce_fn reduce,
                                           void *ctx, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  double *g = scratch, *unused = g + 2 * (size_t)c + 2; /* tail: count, flag */
  /* sum dy; sum (x - fmean) * dy; the count after them */
  channel_sums<<<c, kThreads, 0, s>>>(n, c, hw, dy, NULL, NULL, 0, g, NULL, NULL, 0, 0);
  channel_sums<<<c, kThreads, 0, s>>>(n, c, hw, x, save_mean, dy, 0, unused, g + c, g + 2 * c, (double)n * hw, 0);
  param_grads<<<grid_for((size_t)c), kThreads, 0, s>>>(c, g, save_invstd, dgamma, dbeta);
  if (!LAUNCHED()) return -3;
  if (!dx) return 0;
  if (reduce(ctx, "grad", g, 2 * (size_t)c + 1)) return -1;
  const size_t total = (size_t)n * c * hw;
  input_grad<<<grid_for(total), kThreads, 0, s>>>(total, c, hw, x, dy, gamma, save_mean, save_invstd, g, dx,
                                                  dx_write);
  return LAUNCHED() ? 0 : -3;
}
