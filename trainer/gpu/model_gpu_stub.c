/* model_gpu_stub.c: model_gpu.h in builds without the GPU trainer (no CUDA toolkit
 * with cuDNN, and the float64 library). No model ever reaches the GPU here, so there
 * is no GPU device table: every call that can fail fails, saying the build has no
 * GPU trainer, and never fakes a result. */
#include <stdio.h>

#include "model_gpu.h"

#define NO_GPU_TRAINER "this build has no GPU trainer"
#define HOW_TO_GET_ONE " (configure with the CUDA toolkit and cuDNN)"

int model_to_gpu(model_t *m) {
  snprintf(m->err, sizeof m->err, "model_to_gpu: " NO_GPU_TRAINER HOW_TO_GET_ONE);
  return -1;
}

int model_gpu_select(int local_rank, char *err, size_t errlen) {
  (void)local_rank;
  snprintf(err, errlen, NO_GPU_TRAINER HOW_TO_GET_ONE);
  return -1;
}

int model_gpu_enable_amp(model_t *m) {
  snprintf(m->err, sizeof m->err, "model_gpu_enable_amp: " NO_GPU_TRAINER);
  return -1;
}

/* A true answer, not a failure: no model here runs in mixed precision. */
int model_gpu_amp(const model_t *m) {
  (void)m;
  return 0;
}

int model_gpu_unscale(model_t *m, float inv_scale, int *found_inf) {
  (void)inv_scale, (void)found_inf;
  snprintf(m->err, sizeof m->err, "model_gpu_unscale: " NO_GPU_TRAINER);
  return -1;
}

const real_t *model_gpu_amp_input(model_t *m, const real_t *x, int n) {
  (void)x, (void)n;
  snprintf(m->err, sizeof m->err, "model_gpu_amp_input: " NO_GPU_TRAINER);
  m->failed = 1;
  return NULL;
}

/* Device memory: none to give, so nothing to copy to or from. These calls have no
 * message channel; their callers report a failed allocation or copy. */
int model_gpu_alloc(void **dev, size_t bytes) {
  (void)bytes;
  *dev = NULL;
  return -1;
}

int model_gpu_upload(void *dev, const void *host, size_t bytes) {
  (void)dev, (void)host, (void)bytes;
  return -1;
}

int model_gpu_download(void *host, const void *dev, size_t bytes) {
  (void)host, (void)dev, (void)bytes;
  return -1;
}

/* Nothing was allocated and nothing is queued: nothing to release or wait for. */
void model_gpu_release(void *dev) { (void)dev; }
void model_gpu_sync(void) {}
