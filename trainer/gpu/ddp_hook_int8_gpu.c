/* ddp_hook_int8_gpu.c: the int8 hook's GPU path (ddp_hook_int8_internal.h) for a model
 * on the GPU: start quantises the bucket into this rank's record with the residual
 * carried on the device (gpu_int8_quantize) and allgathers the records
 * (hv_allgather_cuda); finish sums the ranks' s q in rank order and divides by n
 * (gpu_int8_average). All on the default stream the layers run on; ddp_wait waits for
 * it. The host hook (ddp_hook_int8.c) is the reference: same record, same bits. */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "ddp_hook_int8_internal.h"
#include "hv_cuda.h"
#include "int8_quant_gpu.h"

_Static_assert(sizeof(real_t) == sizeof(float), "the GPU path is built into the float32 library only");

struct int8_gpu {
  size_t n, chunk, record;
  int size;
  float *error;  /* (n) the residual */
  uint8_t *mine; /* (record) this rank's record */
  uint8_t *wire; /* (size * record) every rank's record */
};

int int8_gpu_prepare(int8_gpu_t **gpu, ddp_bucket_t *b, size_t n, size_t chunk, size_t record) {
  int8_gpu_t *g = calloc(1, sizeof *g);
  if (!g) return ddp_bucket_fail(b, "out of memory");
  *gpu = g; /* int8_gpu_free releases it, also after a failure below */
  hv_comm_size(ddp_bucket_comm(b), &g->size);
  g->n = n, g->chunk = chunk, g->record = record;
  cudaError_t rc = cudaMalloc((void **)&g->error, (n + 1) * sizeof(float));
  if (rc == cudaSuccess) rc = cudaMalloc((void **)&g->mine, record + 1);
  if (rc == cudaSuccess) rc = cudaMalloc((void **)&g->wire, record * (size_t)g->size + 1);
  if (rc == cudaSuccess) rc = cudaMemset(g->error, 0, (n + 1) * sizeof(float));
  return rc == cudaSuccess ? 0 : ddp_bucket_fail(b, "int8 on the GPU: %s", cudaGetErrorString(rc));
}

int int8_gpu_start(int8_gpu_t *g, ddp_bucket_t *b) {
  size_t n;
  const float *grad = ddp_bucket_grads(b, &n);
  hv_comm_t *comm = ddp_bucket_comm(b);
  const int rc = gpu_int8_quantize(n, g->chunk, grad, g->error, g->mine, NULL);
  if (rc) return ddp_bucket_fail(b, "int8 on the GPU: quantize: %s", cudaGetErrorString((cudaError_t)rc));
  if (hv_allgather_cuda(comm, g->mine, g->wire, g->record, HV_UINT8, NULL) != HV_SUCCESS)
    return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
  return 0;
}

int int8_gpu_finish(int8_gpu_t *g, ddp_bucket_t *b) {
  size_t n;
  float *grad = ddp_bucket_grads(b, &n);
  const int rc = gpu_int8_average(n, g->chunk, g->size, g->wire, g->record, grad, NULL);
  if (rc) return ddp_bucket_fail(b, "int8 on the GPU: average: %s", cudaGetErrorString((cudaError_t)rc));
  return ddp_bucket_complete(b, g->record);
}

int int8_gpu_state_copy(int8_gpu_t *g, real_t *error, int load) {
  if (cudaDeviceSynchronize() != cudaSuccess) return -1; /* between steps: nothing may still write it */
  const cudaError_t rc = load ? cudaMemcpy(g->error, error, g->n * sizeof(float), cudaMemcpyHostToDevice)
                              : cudaMemcpy(error, g->error, g->n * sizeof(float), cudaMemcpyDeviceToHost);
  return rc == cudaSuccess ? 0 : -1;
}

void int8_gpu_free(int8_gpu_t *g) {
  if (!g) return;
  cudaFree(g->error);
  cudaFree(g->mine);
  cudaFree(g->wire);
  free(g);
}
