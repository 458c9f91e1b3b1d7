/* gpu_internal.h: what model_gpu.c and layer_gpu.c share and nothing else sees: the
 * GPU column of the layer ops, device memset, and the float16 parameter copies of
 * mixed precision. Only in builds with the GPU trainer. */
#ifndef HV_TRAINER_GPU_INTERNAL_H
#define HV_TRAINER_GPU_INTERNAL_H

#include <stddef.h>

#include "layer.h"
#include "model.h"

/* The GPU ops of a layer kind, or NULL (the GPU device table's layer_ops). */
const layer_ops_t *layer_gpu_ops(layer_kind_t kind);
/* memset 0 of device memory, queued on the default stream. */
void model_gpu_zero(void *dev, size_t bytes);
/* Mixed precision: the float16 counterpart of a master parameter or gradient pointer. */
real_t *model_gpu_half_of(const model_t *m, const real_t *p);

#endif /* HV_TRAINER_GPU_INTERNAL_H */
