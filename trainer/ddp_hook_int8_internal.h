/* ddp_hook_int8_internal.h: the int8 hook's GPU path (gpu/ddp_hook_int8_gpu.c: the
 * kernels of kernels/cuda/int8_quant.cu and hv_allgather_cuda on device memory), which
 * ddp_hook_int8.c hands a GPU model's buckets to; in builds without the GPU trainer
 * gpu/ddp_hook_int8_gpu_stub.c, whose calls fail with a message. The wire record and
 * the arithmetic are the host path's, so the results are the same bits. */
#ifndef HV_TRAINER_DDP_HOOK_INT8_INTERNAL_H
#define HV_TRAINER_DDP_HOOK_INT8_INTERNAL_H

#include <stddef.h>

#include "ddp_hooks.h"

typedef struct int8_gpu int8_gpu_t;

/* Device arrays for a bucket of n gradients (chunk elements per scale, record bytes
 * per rank), made once (ddp_register_comm_hook). 0, or -1 after ddp_bucket_fail. */
int int8_gpu_prepare(int8_gpu_t **gpu, ddp_bucket_t *b, size_t n, size_t chunk, size_t record);
/* start: quantise and allgather; finish: the average into the gradients. On the
 * default stream; 0, or -1 after ddp_bucket_fail. */
int int8_gpu_start(int8_gpu_t *gpu, ddp_bucket_t *b);
int int8_gpu_finish(int8_gpu_t *gpu, ddp_bucket_t *b);
/* The residual (n values) to the host (load 0) or back (load 1), between steps. 0 or -1. */
int int8_gpu_state_copy(int8_gpu_t *gpu, real_t *error, int load);
void int8_gpu_free(int8_gpu_t *gpu);

#endif /* HV_TRAINER_DDP_HOOK_INT8_INTERNAL_H */
