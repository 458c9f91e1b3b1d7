/* int8_quant.cu: the int8 comm hook's device kernels (int8_quant_gpu.h). One block per
 * chunk finds the chunk's largest |x| (a shared-memory reduction; the maximum is the
 * same whatever the order) and quantises it; the average is one thread per element
 * summing the ranks in rank order. Roundings are spelled out (__fadd_rn, __fmul_rn,
 * __fdiv_rn: no contraction into fused multiply-adds) and the scale is computed in
 * double with frexp/ldexp as on the host, for the CPU's bits. */
#include <cuda_runtime.h>
#include <math.h>

#include "int8_quant_gpu.h"

namespace {

const int kThreads = 256;

__global__ void quantize_kernel(size_t n, size_t chunk, const float *grad, float *error, uint8_t *record) {
  __shared__ float most[kThreads];
  __shared__ int finite[kThreads];
  const size_t c = blockIdx.x, lo = c * chunk, hi = n - lo < chunk ? n : lo + chunk;
  const size_t chunks = (n + chunk - 1) / chunk;
  float m = 0;
  int ok = 1;
  for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    const float x = __fadd_rn(error[i], grad[i]);
    error[i] = x;
    if (!isfinite(x)) ok = 0;
    else m = fmaxf(m, fabsf(x));
  }
  most[threadIdx.x] = m;
  finite[threadIdx.x] = ok;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      most[threadIdx.x] = fmaxf(most[threadIdx.x], most[threadIdx.x + s]);
      finite[threadIdx.x] &= finite[threadIdx.x + s];
    }
    __syncthreads();
  }
  float scale;
  if (!finite[0]) scale = nanf("");
  else if (most[0] == 0) scale = 0;
  else {
    int k;
    frexp((double)most[0] / 127.0, &k); /* most / 127 = f 2^k, f in [0.5, 1): 2^k >= most / 127 */
    scale = (float)ldexp(1.0, k < -149 ? -149 : k);
  }
  int8_t *q = (int8_t *)(record + chunks * sizeof(float));
  for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    if (!finite[0] || most[0] == 0) { /* the host's memsets: q = 0; a non-finite chunk keeps no residual */
      q[i] = 0;
      if (!finite[0]) error[i] = 0;
      continue;
    }
    double v = rint((double)__fdiv_rn(error[i], scale));
    v = v > 127 ? 127 : v < -127 ? -127 : v;
    q[i] = (int8_t)v;
    error[i] = __fsub_rn(error[i], __fmul_rn(scale, (float)q[i]));
  }
  if (threadIdx.x == 0) ((float *)record)[c] = scale;
}

__global__ void average_kernel(size_t n, size_t chunk, int size, const uint8_t *wire, size_t record_bytes,
                               float *grad) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const size_t chunks = (n + chunk - 1) / chunk, c = i / chunk;
  float acc = 0;
  for (int r = 0; r < size; r++) {
    const uint8_t *rec = wire + (size_t)r * record_bytes;
    const float scale = ((const float *)rec)[c];
    acc = __fadd_rn(acc, __fmul_rn(scale, (float)((const int8_t *)(rec + chunks * sizeof(float)))[i]));
  }
  grad[i] = __fdiv_rn(acc, (float)size);
}

}  // namespace

extern "C" int gpu_int8_quantize(size_t n, size_t chunk, const float *grad, float *error, uint8_t *record,
                                 void *stream) {
  if (n == 0) return 0;
  quantize_kernel<<<(unsigned)((n + chunk - 1) / chunk), kThreads, 0, (cudaStream_t)stream>>>(n, chunk, grad, error,
                                                                                               record);
  return (int)cudaGetLastError();
}

extern "C" int gpu_int8_average(size_t n, size_t chunk, int size, const uint8_t *wire, size_t record_bytes,
                                float *grad, void *stream) {
  if (n == 0) return 0;
  average_kernel<<<(unsigned)((n + kThreads - 1) / kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      n, chunk, size, wire, record_bytes, grad);
  return (int)cudaGetLastError();
}
