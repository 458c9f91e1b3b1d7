/* ddp_hook_half.c: the fp16 and bf16 hooks (torch's fp16_compress_hook and
 * bf16_compress_hook): the bucket's allreduce with hv's 16-bit wire compression, so
 * the values are rounded once when packed and every partial sum once per hop (the
 * bound in the README's Compression section), then unpacked to float32. */
#include <stdio.h>

#include "ddp_hooks.h"

static int half_start(void *state, ddp_bucket_t *b) {
  const hv_compression_t wire = *(const hv_compression_t *)state;
  if (!ddp_bucket_on_host(b)) return ddp_bucket_fail(b, "runs on CPU models only (use HV_COMPRESSION on the GPU)");
  size_t n;
  real_t *g = ddp_bucket_grads(b, &n);
  char name[48];
  snprintf(name, sizeof name, "%s.half", ddp_bucket_name(b));
  hv_allreduce_opts_t o = HV_ALLREDUCE_OPTS_INIT;
  o.compression = wire;
  hv_comm_t *comm = ddp_bucket_comm(b);
  const hv_dtype_t dt = sizeof(real_t) == 4 ? HV_FLOAT32 : HV_FLOAT64; /* float64 builds: not compressed */
  if (hv_allreduce_async(comm, name, g, g, n, dt, HV_AVERAGE, &o, ddp_bucket_handle(b)) != HV_SUCCESS)
    return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
  return 0;
}

static int half_finish(void *state, ddp_bucket_t *b) {
  (void)state;
  size_t n;
  ddp_bucket_grads(b, &n);
  if (hv_wait(*ddp_bucket_handle(b)) != HV_SUCCESS) return ddp_bucket_fail(b, "%s", hv_comm_last_error(ddp_bucket_comm(b)));
  return ddp_bucket_complete(b, n * (sizeof(real_t) == 4 ? 2 : sizeof(real_t)));
}

static const hv_compression_t fp16_wire = HV_COMPRESSION_FP16, bf16_wire = HV_COMPRESSION_BF16;

int ddp_hook_half_make(ddp_comm_hook_t *hook, int bf16) {
  *hook = (ddp_comm_hook_t){.name = bf16 ? "bf16" : "fp16",
                            .state = (void *)(bf16 ? &bf16_wire : &fp16_wire),
                            .start = half_start,
                            .finish = half_finish};
  return 0;
}
