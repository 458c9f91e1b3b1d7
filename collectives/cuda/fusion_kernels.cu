/* fusion_kernels.cu: batched fusion-buffer packing and unpacking on the GPU (see
 * fusion_kernels.h). One launch covers every tensor of a batch: blockIdx.y picks the
 * tensor, a grid-stride loop over blockIdx.x/threadIdx.x covers its elements, so
 * hundreds of small gradient tensors cost one kernel launch instead of hundreds of
 * cudaMemcpyAsync calls. The dtype pair is a template (no per-element switch) and
 * aligned tensors move four elements per load and store. Conversions round to nearest
 * even (__float2half_rn, __float2bfloat16_rn), like the CPU path. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fusion_kernels.h"

namespace {

/* Element access of each float type as float, with round-to-nearest-even stores. */
__device__ float to_float(float v) { return v; }
__device__ float to_float(__half v) { return __half2float(v); }
__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ T from_float(float v);
template <> __device__ float from_float<float>(float v) { return v; }
template <> __device__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/* Four elements moved as one aligned load or store (16 bytes of float, 8 of half). */
template <typename T> struct alignas(4 * sizeof(T)) quad { T v[4]; };

template <typename T> __device__ bool quad_aligned(const void *p) {
  return (reinterpret_cast<size_t>(p) & (4 * sizeof(T) - 1)) == 0;
}

/* dst[i] = D(S(src[i]) * scale) for i < count, as the CPU's hv__convert computes it:
 * four elements per thread and step when both sides are aligned for it (the usual
 * case: allocations and fused offsets of tensors with counts divisible by 4), one
 * otherwise. The pointers' alignment is the same for every thread of a tensor, so
 * the branch does not diverge. */
template <typename S, typename D>
__device__ void convert_range(const S *src, D *dst, size_t count, float scale) {
  const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  size_t done = 0;
  if (quad_aligned<S>(src) && quad_aligned<D>(dst)) {
    const size_t quads = count / 4;
    const quad<S> *sq = reinterpret_cast<const quad<S> *>(src);
    quad<D> *dq = reinterpret_cast<quad<D> *>(dst);
    for (size_t q = first; q < quads; q += stride) {
      const quad<S> in = sq[q];
      quad<D> out;
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const float v = to_float(in.v[k]);
        out.v[k] = from_float<D>(scale == 1.0f ? v : v * scale);
      }
      dq[q] = out;
    }
    done = quads * 4;
  }
  for (size_t i = done + first; i < count; i += stride) {
    const float v = to_float(src[i]);
    dst[i] = from_float<D>(scale == 1.0f ? v : v * scale);
  }
}

/* pack: fused[offset + i] = wire(tensor[i] * scale); unpack: the reverse. T is the
 * tensor's type, W the wire's. blockIdx.y picks the tensor. */
template <typename T, typename W>
__global__ void fusion_kernel(const hv__fusion_entry_t *entries, void *fused, int unpack) {
  const hv__fusion_entry_t e = entries[blockIdx.y];
  W *slot = static_cast<W *>(fused) + e.offset;
  if (!unpack) convert_range<T, W>(static_cast<const T *>(e.tensor), slot, e.count, e.scale);
  else convert_range<W, T>(slot, static_cast<T *>(e.tensor), e.count, e.scale);
}

/* Equal dtypes of any size, scale 1: a byte copy per tensor. */
__global__ void copy_kernel(const hv__fusion_entry_t *entries, char *fused, size_t elem_size, int unpack) {
  const hv__fusion_entry_t e = entries[blockIdx.y];
  size_t bytes = e.count * elem_size, stride = (size_t)gridDim.x * blockDim.x;
  char *tensor = static_cast<char *>(e.tensor);
  char *slot = fused + e.offset * elem_size;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += stride) {
    if (unpack) tensor[i] = slot[i];
    else slot[i] = tensor[i];
  }
}

bool is_float_type(hv_dtype_t t) { return t == HV_FLOAT32 || t == HV_FLOAT16 || t == HV_BFLOAT16; }

template <typename T>
void launch_wire(dim3 grid, int threads, cudaStream_t s, const hv__fusion_entry_t *entries, void *fused,
                 hv_dtype_t wire_t, int unpack) {
  switch (wire_t) {
    case HV_FLOAT16: fusion_kernel<T, __half><<<grid, threads, 0, s>>>(entries, fused, unpack); break;
    case HV_BFLOAT16: fusion_kernel<T, __nv_bfloat16><<<grid, threads, 0, s>>>(entries, fused, unpack); break;
    default: fusion_kernel<T, float><<<grid, threads, 0, s>>>(entries, fused, unpack); break;
  }
}

int launch(const hv__fusion_entry_t *entries, int n, void *fused, hv_dtype_t tensor_t, hv_dtype_t wire_t,
           size_t max_count, void *stream, int unpack) {
  if (n <= 0 || max_count == 0) return 0;
  if (n > 65535) return cudaErrorInvalidValue; /* gridDim.y limit: callers split batches */
  const int threads = 256;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (tensor_t == wire_t && !is_float_type(tensor_t)) {
    size_t blocks_x = (max_count * hv_dtype_size(tensor_t) + threads - 1) / threads;
    dim3 grid((unsigned)(blocks_x > 1024 ? 1024 : blocks_x), (unsigned)n);
    copy_kernel<<<grid, threads, 0, s>>>(entries, static_cast<char *>(fused), hv_dtype_size(tensor_t), unpack);
  } else if (is_float_type(tensor_t) && is_float_type(wire_t)) {
    /* A thread per four elements of the largest tensor, grid-stride beyond 1024 blocks. */
    size_t blocks_x = (max_count + 4 * threads - 1) / (4 * threads);
    dim3 grid((unsigned)(blocks_x > 1024 ? 1024 : blocks_x), (unsigned)n);
    switch (tensor_t) {
      case HV_FLOAT16: launch_wire<__half>(grid, threads, s, entries, fused, wire_t, unpack); break;
      case HV_BFLOAT16: launch_wire<__nv_bfloat16>(grid, threads, s, entries, fused, wire_t, unpack); break;
      default: launch_wire<float>(grid, threads, s, entries, fused, wire_t, unpack); break;
    }
  } else {
    return cudaErrorInvalidValue;
  }
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int hv__cuda_fusion_pack(const hv__fusion_entry_t *entries, int n, void *fused, hv_dtype_t tensor_dtype,
                                    hv_dtype_t wire_dtype, size_t max_count, void *stream) {
  return launch(entries, n, fused, tensor_dtype, wire_dtype, max_count, stream, 0);
}

extern "C" int hv__cuda_fusion_unpack(const hv__fusion_entry_t *entries, int n, const void *fused,
                                      hv_dtype_t wire_dtype, hv_dtype_t tensor_dtype, size_t max_count,
                                      void *stream) {
  return launch(entries, n, const_cast<void *>(fused), tensor_dtype, wire_dtype, max_count, stream, 1);
}
