/* half_layout.cu: float32 NCHW <-> float16 NHWC for mixed precision (half_layout.h).
 * One thread per element, indexed by the NHWC position so that the float16 side (the
 * one the next kernels read) is written or read contiguously. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "half_layout.h"

namespace {

const int kThreads = 256;

unsigned blocks_for(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b > 65535 ? 65535 : (b ? b : 1));
}

/* The NCHW index of NHWC element e. */
__device__ size_t nchw_of(size_t e, int c, int h, int w) {
  const int ch = (int)(e % c);
  const size_t pix = e / c; /* (i * h + y) * w + x */
  const size_t hw = (size_t)h * w, i = pix / hw, yx = pix % hw;
  return (i * c + ch) * hw + yx;
}

__global__ void to_half_kernel(size_t total, int c, int h, int w, const float *src, __half *dst) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x)
    dst[e] = __float2half_rn(src[nchw_of(e, c, h, w)]);
}

__global__ void add_half_kernel(size_t total, int c, int h, int w, const __half *src, float *dst) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    float *d = dst + nchw_of(e, c, h, w);
    *d = __fadd_rn(*d, __half2float(src[e]));
  }
}

}  // namespace

extern "C" int gpu_half_nhwc_from_float_nchw(int n, int c, int h, int w, const float *src, void *dst, void *stream) {
  const size_t total = (size_t)n * c * h * w;
  if (total == 0) return 0;
  to_half_kernel<<<blocks_for(total), kThreads, 0, (cudaStream_t)stream>>>(total, c, h, w, src, (__half *)dst);
  return (int)cudaGetLastError();
}

extern "C" int gpu_float_nchw_add_half_nhwc(int n, int c, int h, int w, const void *src, float *dst, void *stream) {
  const size_t total = (size_t)n * c * h * w;
  if (total == 0) return 0;
  add_half_kernel<<<blocks_for(total), kThreads, 0, (cudaStream_t)stream>>>(total, c, h, w, (const __half *)src, dst);
  return (int)cudaGetLastError();
}
