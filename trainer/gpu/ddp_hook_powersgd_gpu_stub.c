/* ddp_hook_powersgd_gpu_stub.c: the PowerSGD hook's GPU path
 * (ddp_hook_powersgd_internal.h) in builds without the GPU trainer (no CUDA toolkit
 * with cuDNN, and the float64 library). No model reaches the GPU in such a build, so
 * these run only if one somehow did: each fails the bucket with a message and fakes
 * nothing. */
#include "ddp_hook_powersgd_internal.h"

#define NO_GPU_PATH "powersgd: this build has no GPU path (configure with the CUDA toolkit and cuDNN)"

int psgd_gpu_prepare(psgd_bucket_t *pb, ddp_bucket_t *b) {
  (void)pb;
  return ddp_bucket_fail(b, NO_GPU_PATH);
}

int psgd_gpu_start(const ddp_powersgd_config_t *cfg, psgd_bucket_t *pb, ddp_bucket_t *b, int upload_q) {
  (void)cfg, (void)pb, (void)upload_q;
  return ddp_bucket_fail(b, NO_GPU_PATH);
}

int psgd_gpu_finish(const ddp_powersgd_config_t *cfg, psgd_bucket_t *pb, ddp_bucket_t *b) {
  (void)cfg, (void)pb;
  return ddp_bucket_fail(b, NO_GPU_PATH);
}

int psgd_gpu_state_copy(psgd_bucket_t *pb, real_t *error, real_t *q, int load) {
  (void)pb, (void)error, (void)q, (void)load;
  return -1;
}

void psgd_gpu_free(psgd_bucket_t *pb) { (void)pb; }
