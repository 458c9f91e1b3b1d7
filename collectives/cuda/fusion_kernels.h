/* fusion_kernels.h: CUDA kernels of the fusion buffer for device tensors: batched
 * packing of many tensors into one fused buffer in a single launch, with prescaling
 * and float16/bfloat16 compression fused in, and the matching unpacking with
 * postscaling. The CPU reference is hv__convert (collectives/reduce.c): for each
 * element both compute (wire)(x * (float)factor) with round-to-nearest-even, so the
 * results are bitwise equal (tests/collectives/gpu_fusion_kernels.c checks it). */
#ifndef HV_FUSION_KERNELS_H
#define HV_FUSION_KERNELS_H

#include <stddef.h>

#include "hv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor of a batch: its device buffer, element count, offset (elements) in the
 * fused buffer and scale factor. */
typedef struct hv__fusion_entry {
  void *tensor;
  size_t count;
  size_t offset;
  float scale;
} hv__fusion_entry_t;

/* entries: a device array of n entries. tensor dtype -> wire dtype into fused. Both
 * dtypes among HV_FLOAT32, HV_FLOAT16, HV_BFLOAT16 (or equal dtypes of any kind with
 * scale 1, a plain copy). Enqueued on stream (a cudaStream_t); returns 0 or the CUDA
 * error code. */
int hv__cuda_fusion_pack(const hv__fusion_entry_t *entries, int n, void *fused, hv_dtype_t tensor_dtype,
                         hv_dtype_t wire_dtype, size_t max_count, void *stream);
int hv__cuda_fusion_unpack(const hv__fusion_entry_t *entries, int n, const void *fused,
                           hv_dtype_t wire_dtype, hv_dtype_t tensor_dtype, size_t max_count, void *stream);

#ifdef __cplusplus
}
#endif
#endif
