/* ddp_hook_int8_gpu_stub.c: the int8 hook's GPU path (ddp_hook_int8_internal.h) in
 * builds without the GPU trainer (no CUDA toolkit with cuDNN, and the float64
 * library): no model reaches the GPU there, and each call fails with a message. */
#include "ddp_hook_int8_internal.h"

#define NO_GPU_PATH "int8: this build has no GPU path (configure with the CUDA toolkit and cuDNN)"

int int8_gpu_prepare(int8_gpu_t **gpu, ddp_bucket_t *b, size_t n, size_t chunk, size_t record) {
  (void)n, (void)chunk, (void)record;
  *gpu = NULL;
  return ddp_bucket_fail(b, NO_GPU_PATH);
}

int int8_gpu_start(int8_gpu_t *gpu, ddp_bucket_t *b) {
  (void)gpu;
  return ddp_bucket_fail(b, NO_GPU_PATH);
}

int int8_gpu_finish(int8_gpu_t *gpu, ddp_bucket_t *b) {
  (void)gpu;
  return ddp_bucket_fail(b, NO_GPU_PATH);
}

int int8_gpu_state_copy(int8_gpu_t *gpu, real_t *error, int load) {
  (void)gpu, (void)error, (void)load;
  return -1;
}

void int8_gpu_free(int8_gpu_t *gpu) { (void)gpu; }
