/* gpu_fusion_kernels.c: the CUDA fusion kernels against their CPU reference
 * (hv__convert), bitwise, for every float dtype pair, with and without scaling, on
 * a batch of tensors of awkward sizes (0, 1, odd, large). Exits 77 (CTest: skipped)
 * only when no GPU is present (gpu_present.h); every CUDA error after that fails. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/fusion_kernels.h"
#include "gpu_present.h"
#include "reduce.h"
#include "test_util.h"

#define NT 7

/* A failed CUDA call is a failed check (never a silent skip or an early return). */
static int cuda_ok(cudaError_t rc, const char *what) {
  CHECK(rc == cudaSuccess, "%s: %s", what, cudaGetErrorString(rc));
  return rc == cudaSuccess;
}

static int run_case(hv_dtype_t tensor_t, hv_dtype_t wire_t, float scale) {
  size_t counts[NT] = {0, 1, 3, 1000, 4097, 65537, 300000};
  size_t offsets[NT], total = 0, max_count = 0;
  for (int k = 0; k < NT; k++) offsets[k] = total, total += counts[k], max_count = counts[k] > max_count ? counts[k] : max_count;
  size_t tes = hv_dtype_size(tensor_t), wes = hv_dtype_size(wire_t);
  char *host_t = malloc(total * tes), *want = malloc(total * wes), *got = malloc(total * wes);
  char *back_want = malloc(total * tes), *back_got = malloc(total * tes);
  uint64_t s = 1;
  for (size_t i = 0; i < total; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    elem_set(host_t, tensor_t, i, ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 300.0);
  }
  hv__fusion_entry_t entries[NT];
  void *dev_tensors[NT] = {0}, *dev_fused = NULL, *dev_entries = NULL;
  int ok = cuda_ok(cudaMalloc(&dev_fused, total * wes + 1), "cudaMalloc fused") &&
           cuda_ok(cudaMalloc(&dev_entries, sizeof entries), "cudaMalloc entries");
  for (int k = 0; ok && k < NT; k++) ok = cuda_ok(cudaMalloc(&dev_tensors[k], counts[k] * tes + 1), "cudaMalloc tensor");
  if (!ok) {
    for (int k = 0; k < NT; k++) cudaFree(dev_tensors[k]);
    cudaFree(dev_fused), cudaFree(dev_entries);
    free(host_t), free(want), free(got), free(back_want), free(back_got);
    return 1;
  }
  for (int k = 0; k < NT; k++) {
    cuda_ok(cudaMemcpy(dev_tensors[k], host_t + offsets[k] * tes, counts[k] * tes, cudaMemcpyHostToDevice), "copy in");
    entries[k] = (hv__fusion_entry_t){dev_tensors[k], counts[k], offsets[k], scale};
    hv__convert(want + offsets[k] * wes, wire_t, host_t + offsets[k] * tes, tensor_t, counts[k], scale);
  }
  cuda_ok(cudaMemcpy(dev_entries, entries, sizeof entries, cudaMemcpyHostToDevice), "copy entries");
  CHECK(hv__cuda_fusion_pack(dev_entries, NT, dev_fused, tensor_t, wire_t, max_count, NULL) == 0, "pack launch");
  cuda_ok(cudaMemcpy(got, dev_fused, total * wes, cudaMemcpyDeviceToHost), "copy packed out");
  size_t bad = 0;
  for (size_t i = 0; i < total * wes; i++) bad += got[i] != want[i];
  CHECK(bad == 0, "pack %s -> %s scale %g: %zu bytes differ from the CPU reference", hv_dtype_name(tensor_t),
        hv_dtype_name(wire_t), scale, bad);
  /* unpack the (reference) fused buffer back and compare with the CPU unpack */
  cuda_ok(cudaMemcpy(dev_fused, want, total * wes, cudaMemcpyHostToDevice), "copy fused in");
  CHECK(hv__cuda_fusion_unpack(dev_entries, NT, dev_fused, wire_t, tensor_t, max_count, NULL) == 0, "unpack launch");
  for (int k = 0; k < NT; k++) {
    cuda_ok(cudaMemcpy(back_got + offsets[k] * tes, dev_tensors[k], counts[k] * tes, cudaMemcpyDeviceToHost),
            "copy unpacked out");
    hv__convert(back_want + offsets[k] * tes, tensor_t, want + offsets[k] * wes, wire_t, counts[k], scale);
  }
  bad = 0;
  for (size_t i = 0; i < total * tes; i++) bad += back_got[i] != back_want[i];
  CHECK(bad == 0, "unpack %s -> %s scale %g: %zu bytes differ", hv_dtype_name(wire_t), hv_dtype_name(tensor_t), scale, bad);
  for (int k = 0; k < NT; k++) cudaFree(dev_tensors[k]);
  cudaFree(dev_fused);
  cudaFree(dev_entries);
  free(host_t), free(want), free(got), free(back_want), free(back_got);
  return 0;
}

int main(void) {
  char why[256];
  const int present = test_gpu_present(why, sizeof why);
  if (present == 0) {
    printf("gpu_fusion_kernels: skipped (%s)\n", why);
    return 77;
  }
  if (present < 0) {
    fprintf(stderr, "gpu_fusion_kernels: FAILED: %s\n", why);
    return 1;
  }
  const hv_dtype_t floats[] = {HV_FLOAT32, HV_FLOAT16, HV_BFLOAT16};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      CHECK(run_case(floats[a], floats[b], 1.0f) == 0, "case %d %d set-up", a, b);
      CHECK(run_case(floats[a], floats[b], 0.125f) == 0, "case %d %d set-up", a, b);
    }
  CHECK(run_case(HV_INT32, HV_INT32, 1.0f) == 0, "int32 case set-up");
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cuda_ok(cudaGetLastError(), "a kernel launch");
  printf("%d passed, %d failed\n", check_count - check_failures, check_failures);
  return check_failures ? 1 : 0;
}
