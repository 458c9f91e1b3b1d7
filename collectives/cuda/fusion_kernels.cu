/* fusion_kernels.cu: batched fusion-buffer packing and unpacking on the GPU (see
 * fusion_kernels.h). One launch covers every tensor of a batch: blockIdx.y picks the
 * tensor, a grid-stride loop over blockIdx.x/threadIdx.x covers its elements, so
 * hundreds of small gradient tensors cost one kernel launch instead of hundreds of
 * cudaMemcpyAsync calls. Conversions round to nearest even (__float2half_rn,
 * __float2bfloat16_rn), like the CPU path. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fusion_kernels.h"

namespace {

__device__ float load_as_float(const void *p, hv_dtype_t t, size_t i) {
  switch (t) {
    case HV_FLOAT16: return __half2float(static_cast<const __half *>(p)[i]);
    case HV_BFLOAT16: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    default: return static_cast<const float *>(p)[i];
  }
}

__device__ void store_from_float(void *p, hv_dtype_t t, size_t i, float v) {
  switch (t) {
    case HV_FLOAT16: static_cast<__half *>(p)[i] = __float2half_rn(v); break;
    case HV_BFLOAT16: static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<float *>(p)[i] = v; break;
  }
}

/* pack: fused[offset + i] = wire(tensor[i] * scale); unpack: the reverse. */
__global__ void fusion_kernel(const hv__fusion_entry_t *entries, void *fused, hv_dtype_t tensor_t,
                              hv_dtype_t wire_t, int unpack) {
  const hv__fusion_entry_t e = entries[blockIdx.y];
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < e.count; i += stride) {
    if (!unpack) {
      float v = load_as_float(e.tensor, tensor_t, i);
      store_from_float(fused, wire_t, e.offset + i, e.scale == 1.0f ? v : v * e.scale);
    } else {
      float v = load_as_float(fused, wire_t, e.offset + i);
      store_from_float(e.tensor, tensor_t, i, e.scale == 1.0f ? v : v * e.scale);
    }
  }
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

int launch(const hv__fusion_entry_t *entries, int n, void *fused, hv_dtype_t tensor_t, hv_dtype_t wire_t,
           size_t max_count, void *stream, int unpack) {
  if (n <= 0 || max_count == 0) return 0;
  if (n > 65535) return cudaErrorInvalidValue; /* gridDim.y limit: callers split batches */
  const int threads = 256;
  size_t blocks_x = (max_count + threads - 1) / threads;
  if (blocks_x > 1024) blocks_x = 1024; /* grid-stride beyond this */
  dim3 grid((unsigned)blocks_x, (unsigned)n);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (tensor_t == wire_t && !is_float_type(tensor_t)) {
    copy_kernel<<<grid, threads, 0, s>>>(entries, static_cast<char *>(fused), hv_dtype_size(tensor_t), unpack);
  } else if (is_float_type(tensor_t) && is_float_type(wire_t)) {
    fusion_kernel<<<grid, threads, 0, s>>>(entries, fused, tensor_t, wire_t, unpack);
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
